"""A fast, deterministic stand-in embedder for measuring Pinakes' own overhead.

``bench-fake`` turns each text into a hash-seeded random unit vector (384-d,
float32, like the default embedder) and counts tokens as words x 4/3. It costs
microseconds per text, so a sync or search timed with it measures what
Pinakes does around the embedder: walking, hashing, parsing, SQLite, NumPy.

It is registered for a benchmark run only, never installed:

    from pinakes.plugins import pm
    pm.register(fake_embedder, name="bench-fake")

and selected with ``[embedding] model = "bench-fake"`` in ``pinakes.toml``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pinakes import hookimpl

FAKE_ID = "bench-fake"


def fake_vector(text: str, dim: int = 384) -> np.ndarray:
    """A unit vector seeded by the text's hash: the same text always maps to the same vector."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class FakeEmbedder:
    """Hash-seeded random unit vectors; ``count_tokens`` ~ words x 4/3."""

    id = FAKE_ID
    dim = 384
    max_tokens = 256

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) * 4 // 3 + 2 for t in texts]

    def embed(self, texts: Sequence[str], *, batch_size: int = 32,
              progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = fake_vector(t, self.dim)
        if progress is not None and texts:
            progress(len(texts))
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return fake_vector(text, self.dim)


@hookimpl
def register_embedders(register: Callable[[type[Any]], Any]) -> None:
    register(FakeEmbedder)


def install() -> None:
    """Register this module as the ``bench-fake`` plugin (idempotent)."""
    import sys

    from pinakes.plugins import pm

    if not pm.has_plugin(FAKE_ID):
        pm.register(sys.modules[__name__], name=FAKE_ID)
