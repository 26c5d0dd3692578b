"""Quantised chunk vectors (pinakes.quant): codes, the integer kernel and the stored blobs."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from pinakes import KB, quant
from pinakes.search import DenseIndex


def _unit_rows(n: int, d: int, seed: int) -> np.ndarray:
    m = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_codes_round_trip_within_half_a_step() -> None:
    m = _unit_rows(200, 384, 0)
    codes, scale = quant.quantise(m)
    assert codes.dtype == np.uint8 and scale.dtype == np.float32
    back = quant.dequantise(codes, scale)
    assert np.all(np.abs(back - m) <= scale[:, None] / 2 + 1e-7)


def test_zero_vector_scores_zero() -> None:
    codes, scale = quant.quantise(np.zeros((1, 8), np.float32))
    assert scale[0] == 0.0
    assert quant.scores(codes, scale, np.ones(8, np.float32))[0] == 0.0


def test_kernel_and_fallback_agree_with_float_cosines(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _unit_rows(3000, 384, 1)
    q = m[7] + 0.5 * _unit_rows(1, 384, 2)[0]
    q /= np.linalg.norm(q)
    codes, scale = quant.quantise(m)
    assert quant._kernel() is not None  # onnxruntime is a core dependency
    fast = quant.scores(codes, scale, q)
    assert np.abs(fast - m @ q).max() < 5e-3
    monkeypatch.setattr(quant, "_session", quant._UNAVAILABLE)
    slow = quant.scores(codes, scale, q)
    np.testing.assert_allclose(fast, slow, atol=1e-6)


def test_rescored_top_matches_float_order() -> None:
    m = _unit_rows(5000, 384, 3)
    q = m[11] * 0.6 + m[12] * 0.4
    q /= np.linalg.norm(q)
    codes, scale = quant.quantise(m)
    dense = DenseIndex(1, np.arange(len(m), dtype=np.int64), codes, scale)
    cos = dense.cosines(q, rescore=50)
    exact = m @ q
    top = np.argsort(-exact)[:20]
    got = np.argsort(-cos)[:20]
    assert list(got[:2]) == [11, 12]
    # Any swap further down is between near-ties: the exact cosines in our order
    # are the best ones up to the rows' rounding.
    assert np.abs(exact[got] - exact[top]).max() < 1e-3
    assert np.abs(cos[top] - exact[top]).max() < 1e-3
    assert dense.nbytes == codes.nbytes + scale.nbytes + dense.ids.nbytes
    np.testing.assert_allclose(dense.matrix, quant.dequantise(codes, scale))


def test_store_holds_codes_and_scale(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nLate interaction scores tokens.\n", encoding="utf-8")
    (root / "b.md").write_text("# Beta\n\nA metronome keeps time.\n", encoding="utf-8")
    kb = KB.init(root)
    kb.sync()
    store = kb.reader()
    cid, h, blob = store.conn.execute("SELECT id, hash, vec FROM chunks LIMIT 1").fetchone()
    assert len(blob) == kb.embedder.dim + 8  # codes, scale, then the CRC-32 of both
    assert zlib.crc32(blob[:-4]) == int.from_bytes(blob[-4:], "little")
    # The embedding cache keeps the float32 vector; the index holds its codes.
    exact = np.frombuffer(store.cached_vectors(kb.embedder.id, [h])[h], dtype="<f4")
    dense = kb.dense_index(store)
    row = int(dense.row_of(np.array([cid]))[0])
    assert np.abs(dense.vectors(np.array([row]))[0] - exact).max() <= dense.scale[row] / 2 + 1e-7
    assert int(np.argmax(dense.cosines(exact))) == row
    assert kb.search("late interaction").hits[0].path == "a.md"
