"""What every embedder shares: input checks and the batch loop that restores input order.

Embedders (the built-in MiniLM, the optional e5 plugin) embed texts in batches of similar
length, so a batch pads, or keeps its threads busy, only as long as its longest text, and
then put each row back where its text was. That loop lives here once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def check_texts(texts: Sequence[str]) -> None:
    """Reject a bare string, which is a Sequence[str] of its characters.

    ``embed("hello")`` would otherwise quietly embed five one-letter texts.
    """
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, got a single str; wrap it in a list")


def check_batch_size(batch_size: int) -> None:
    """A batch holds at least one text."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")


def embed_in_order(n: int, dim: int, order: np.ndarray, batch_size: int,
                   embed_batch: Callable[[np.ndarray], np.ndarray],
                   progress: Callable[[int], None] | None = None) -> np.ndarray:
    """``(n, dim)`` float32 rows: ``embed_batch(idx)`` for consecutive slices of ``order``.

    ``order`` lists the text indices in the order to embed them (by length);
    ``embed_batch`` returns the rows of the texts at ``idx``, which land at
    ``idx``, so the result is in input order. ``progress(k)`` is called after
    each batch with how many texts it embedded.
    """
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        out[idx] = embed_batch(idx)
        if progress is not None:
            progress(len(idx))
    return out
