"""Quantised chunk vectors: one byte per dimension plus a per-row scale.

Why: the dense channel scans every chunk vector on every query. As float32 that
is 77 MB at 50k 384-d chunks, a memory-bound scan of 6-15 ms on a shared 2-core
machine; as bytes it is 19 MB, and ONNX Runtime's integer matrix product
(``MatMulInteger``, the MLAS kernels the int8 embedder already runs on) scores
them in about 1-2 ms (docs/performance.md).

The code of a row ``v`` is symmetric and per row: ``scale = max|v| / 127``,
``q = round(v / scale)`` in [-127, 127], stored offset by 128 as ``uint8``
(``MatMulInteger`` wants an unsigned left operand). The query is quantised the
same way, so a score is ``scale_row * scale_q * (codes . q_int - 128 * sum(q_int))``.
Its error against the float32 cosine is ~1e-3; ``DenseIndex`` re-scores its top
candidates with the float query to take the query's own rounding out of the
ranking that matters.

A stored vector is the blob ``codes (dim bytes) + scale (float32, little-endian) +
CRC-32 of both (4 bytes, little-endian)``: SQLite checks its pages' structure, not
what a blob holds, and one flipped scale byte could rank a chunk first for every
query; a search checks the rows it re-scores (pinakes/health.py).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

#: Offset that turns the signed codes into MatMulInteger's unsigned operand.
OFFSET = 128


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes uint8 (n, d), scale float32 (n,))`` of float vectors ``(n, d)``."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    peak = np.abs(v).max(axis=1) if v.shape[1] else np.zeros(len(v), np.float32)
    scale = (peak / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(v / safe[:, None]), -127, 127).astype(np.int16)
    return (q + OFFSET).astype(np.uint8), scale


def pack(vector: np.ndarray) -> bytes:
    """The stored blob of one float vector (see the module docstring)."""
    return pack_many(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]


def pack_many(vectors: np.ndarray) -> list[bytes]:
    """``pack`` over the rows of a matrix, quantised in one vectorised pass."""
    from .health import seal

    codes, scale = quantise(vectors)
    sb = scale.astype("<f4")
    return [seal(codes[i].tobytes() + sb[i : i + 1].tobytes()) for i in range(len(codes))]


def dequantise(codes: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Float32 rows back from their codes (for re-scoring a few rows, or tools)."""
    return (codes.astype(np.float32) - OFFSET) * scale[:, None]


# --- the kernel ------------------------------------------------------------------

_session: Any = None
_session_lock = threading.Lock()
_UNAVAILABLE = object()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint (int) or a length-delimited payload (bytes)."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _tensor_info(name: str, elem_type: int, dims: list[str | int]) -> bytes:
    shape = b"".join(
        _field(1, _field(2, d.encode()) if isinstance(d, str) else _field(1, d)) for d in dims
    )
    tensor_type = _field(1, elem_type) + _field(2, shape)
    return _field(1, name.encode()) + _field(2, _field(1, tensor_type))


def matmul_integer_model() -> bytes:
    """A one-node ONNX model: ``Y (int32 [n, 1]) = MatMulInteger(A uint8 [n, d], B int8 [d, 1])``.

    Written out as protobuf by hand (~200 bytes) so the core needs no ``onnx``
    package; the field numbers are those of onnx.proto3 (ModelProto.graph = 7,
    GraphProto.input = 11, ...).
    """
    uint8, int8, int32 = 2, 3, 6
    node = _field(1, b"A") + _field(1, b"B") + _field(2, b"Y") + _field(4, b"MatMulInteger")
    graph = (
        _field(1, node)
        + _field(2, b"pinakes_dense")
        + _field(11, _tensor_info("A", uint8, ["n", "d"]))
        + _field(11, _tensor_info("B", int8, ["d", 1]))
        + _field(12, _tensor_info("Y", int32, ["n", 1]))
    )
    opset = _field(1, b"") + _field(2, 13)
    return _field(1, 8) + _field(7, graph) + _field(8, opset)


def _kernel() -> Any:
    """The ONNX Runtime session of ``matmul_integer_model``, or None without ONNX Runtime."""
    global _session
    if _session is None:
        with _session_lock:
            if _session is None:
                try:
                    import onnxruntime

                    opts = onnxruntime.SessionOptions()
                    # One thread: a 19 MB scan is memory-bound, and a second thread
                    # only contends with the rest of the search on a 2-core box.
                    opts.intra_op_num_threads = 1
                    opts.inter_op_num_threads = 1
                    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    _session = onnxruntime.InferenceSession(
                        matmul_integer_model(), sess_options=opts,
                        providers=["CPUExecutionProvider"],
                    )
                except Exception:  # no onnxruntime, or one without the kernel
                    _session = _UNAVAILABLE
    return None if _session is _UNAVAILABLE else _session


def scores(codes: np.ndarray, scale: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Approximate cosines ``(n,)`` float32 of every row against a float query."""
    n = len(codes)
    if n == 0:
        return np.zeros(0, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    q_scale = float(np.abs(q).max()) / 127.0
    if q_scale == 0.0:
        return np.zeros(n, dtype=np.float32)
    qi = np.clip(np.rint(q / q_scale), -127, 127).astype(np.int8)
    session = _kernel()
    if session is not None:
        raw = session.run(None, {"A": codes, "B": qi.reshape(-1, 1)})[0].reshape(n)
    else:  # NumPy fallback: blocks of float32 so the temporary stays small
        raw = np.empty(n, dtype=np.int64)
        qf = qi.astype(np.float32)
        for s in range(0, n, 4096):
            raw[s : s + 4096] = np.rint(np.einsum("ij,j->i", codes[s : s + 4096].astype(np.float32), qf))
    raw = raw.astype(np.float32) - np.float32(OFFSET * int(qi.astype(np.int32).sum()))
    return raw * scale * np.float32(q_scale)
