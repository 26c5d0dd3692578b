"""Term statistics of one store generation: chunk count, document frequencies, IDF.

Shared by the lexical stage of search (:mod:`pinakes.search`) and by the
confidence's reading of what a question asks (:mod:`pinakes.support`), both
through one per-generation memo (the KB's), so a term's document frequency is
counted once per sync generation whoever asks first.
"""

from __future__ import annotations

import math
from typing import Any

from .text import fts_query, other_forms


def generation_memo(memo: dict[str, Any], generation: int) -> dict[str, Any]:
    """``memo``, emptied when the store moved to another generation (a sync happened)."""
    if memo.get("generation") != generation:
        memo.clear()
        memo["generation"] = generation
    return memo


def chunk_count(memo: dict[str, Any], conn: Any, generation: int, held: int) -> int:
    """Chunks in the store (for IDF), cached per generation.

    Not the number of vectors: while a first sync is still embedding, chunks
    without one are searchable lexically and count for IDF all the same.
    """
    cache = generation_memo(memo, generation)
    n = cache.get("_chunks")
    if n is None:
        n = cache["_chunks"] = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    return max(1, n, held)


def idf(memo: dict[str, Any], conn: Any, generation: int, terms: list[str], total: int,
         tokenizer: str) -> dict[str, float]:
    """IDF of each term over chunks, cached per store generation.

    A term's chunks are those holding any of its forms, the irregular ones included
    (:func:`pinakes.text.other_forms`), as the patterns this IDF weighs find them
    (:func:`pinakes.text.term_pattern`): "take" is as common as "take", "took" and
    "taken" together, not the rarest word of a question whose notes say "took". The
    lexical query itself searches the forms as typed (``fts_terms``).
    """
    cache = generation_memo(memo, generation)
    # Document frequencies by term, in their own table: a term such as "generation"
    # must not collide with the cache's own keys.
    dfs = cache.setdefault("_df", {})
    out = {}
    for t in terms:
        df = dfs.get(t)
        if df is None:
            match = fts_terms([t, *other_forms(t)], tokenizer)
            # A term the tokenizer cannot match (trigram: under 3 characters) has no df.
            df = int(conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
            ).fetchone()[0]) if match else 0
            dfs[t] = df
        out[t] = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
    return out


def fts_terms(terms: list[str], tokenizer: str) -> str:
    """The FTS5 MATCH expression of ``terms`` (an OR of quoted terms: never syntax)."""
    if tokenizer == "trigram":
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms if len(t) >= 3)
    return fts_query(terms)
