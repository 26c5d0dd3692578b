"""Hybrid search, the free path: lexical (FTS5 BM25) + dense (one NumPy matrix) + fusion.

Fusion is reciprocal-rank fusion weighted by each list's evidence. Plain RRF
lets a lexical list of weak matches (one stray common word) drag a confident
dense hit down; here a lexical hit contributes in proportion to the share of
the query's information (IDF-weighted terms) it actually contains, and a dense
hit below a cosine floor contributes less. An optional graph channel (a
plugin) adds a third list seeded from the fused top hits.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .channel_choice import channel_in_force
from .config import GRAPH_FUSIONS
from .errors import QueryError
from .fsutil import matches_any
from .links import NO_HUB
from .quant import dequantise
from .quant import scores as quant_scores
from .text import CJK_RE, fts_phrase, fts_query, query_terms, term_pattern

if TYPE_CHECKING:
    from .kb import KB

MAX_K = 50
BM25_WEIGHTS = (4.0, 2.0, 1.0)  # title, heading path, body


@dataclass
class Hit:
    """One ranked chunk, with where it came from."""

    doc_id: str
    title: str
    path: str
    heading_path: list[str]
    text: str
    snippet: str
    highlights: list[tuple[int, int]]
    score: float
    ranks: dict[str, int | None]
    chunk_id: int
    ordinal: int
    start_line: int
    kb: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["highlights"] = [list(h) for h in self.highlights]
        return d


@dataclass
class SearchResult:
    """A ranked answer to a query, with the confidence that it holds the evidence."""

    query: str
    kb: str
    hits: list[Hit]
    confidence: float | None  # None: uncalibrated, shown as "unknown"
    abstained: bool
    channel: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: While a sync is still embedding: {"embedded": n, "total": m, "lexical_only": bool}.
    embedding: dict[str, Any] | None = None
    #: Why it abstained, naming the part of the question nothing supports (pinakes.support).
    reason: str | None = None
    #: What the question is about and asks, and which asked words no top hit holds
    #: (``pinakes.support.Support.to_dict``); None when the search is uncalibrated.
    support: dict[str, Any] | None = None
    #: Why this channel, in one line starting with it (pinakes.channel_choice).
    channel_reason: str = ""

    @property
    def notice(self) -> str | None:
        """One line for the user when the dense half is missing or partial."""
        e = self.embedding
        if not e:
            return None
        got = f"{e['embedded']:,} of {e['total']:,} chunks embedded"
        if e["lexical_only"]:
            return f"lexical-only results: the last sync is still embedding ({got})"
        return f"dense results cover only part of the KB: the last sync is still embedding ({got})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "kb": self.kb,
            "channel": self.channel,
            "channel_reason": self.channel_reason,
            "embedding": self.embedding,
            "confidence": "unknown" if self.confidence is None else round(self.confidence, 4),
            "abstained": self.abstained,
            "reason": self.reason,
            "support": self.support,
            "hits": [h.to_dict() for h in self.hits],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


@dataclass
class DenseIndex:
    """Every chunk vector of one store generation, quantised (``pinakes.quant``).

    ``codes`` holds one byte per dimension and ``scale`` one float per row:
    19.2 MB of codes at 50k 384-d chunks instead of 77 MB of float32, scored by
    an integer kernel in 1-2 ms (docs/performance.md).
    """

    generation: int
    ids: np.ndarray  # int64 chunk ids, ascending
    codes: np.ndarray  # uint8 (n, dim), offset codes
    scale: np.ndarray  # float32 (n,)

    def row_of(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Matrix rows of the given chunk ids (ids are sorted, so this is a binary search)."""
        return np.searchsorted(self.ids, chunk_ids)

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """Float32 vectors of some rows (dequantised): for re-scoring a few rows."""
        rows = np.asarray(rows, dtype=np.intp)
        return dequantise(self.codes[rows], self.scale[rows])

    @property
    def matrix(self) -> np.ndarray:
        """Every vector as float32 (n, dim): 4x the memory, built on each access (tools, tests)."""
        return dequantise(self.codes, self.scale)

    @property
    def nbytes(self) -> int:
        """Bytes held: codes, scales and ids."""
        return int(self.codes.nbytes + self.scale.nbytes + self.ids.nbytes)

    def cosines(self, query: np.ndarray, rescore: int = 0) -> np.ndarray:
        """Cosine of every row with ``query``; the best ``rescore`` rows re-scored exactly.

        The integer kernel also rounds the query to int8; re-scoring the top
        candidates with the float query leaves only the rows' own rounding in
        the part of the ranking that fuses (max error ~3e-4 against float32).
        """
        cos = quant_scores(self.codes, self.scale, query)
        m = min(int(rescore), len(cos))
        if m > 0:
            top = np.argpartition(-cos, m - 1)[:m]
            cos[top] = self.vectors(top) @ np.asarray(query, dtype=np.float32)
        return cos


@dataclass
class ChannelContext:
    """What a graph channel receives (see ``register_graph_channels``)."""

    kb: KB
    store: Any
    query: str
    query_vector: np.ndarray
    cosines: np.ndarray  # cosine of every chunk, aligned with dense.ids
    dense: DenseIndex
    roots: list[int]  # fused top chunk ids, best first
    config: dict[str, Any]
    #: The hybrid's whole fused list ``(chunk id, score)``, best first: a channel that
    #: returns a final ranking blends its evidence with these scores.
    fused: list[tuple[int, float]] | None = None


class _Lists:
    """The ranked candidate lists of one query, by channel name."""

    def __init__(self) -> None:
        self.ranked: dict[str, list[int]] = {}
        self.weight: dict[str, dict[int, float]] = {}
        self.coverage: dict[int, float] = {}  # lexical hit -> share of the query's IDF mass it holds
        self.hybrid_top: float | None = None  # top score of the two-list fusion, before any graph
        self.channel = "off"  # the graph channel in use (calibration checks it)
        self.query = ""  # the query and the store generation it ran on (pinakes.support reads them)
        self.generation: int | None = None
        self.support: Any = None  # pinakes.support.Support, once the confidence has assessed it


def _chunk_count(kb: KB, conn: Any, generation: int, held: int) -> int:
    """Chunks in the store (for IDF), cached per generation.

    Not the number of vectors: while a first sync is still embedding, chunks
    without one are searchable lexically and count for IDF all the same.
    """
    cache = kb._idf_cache
    if cache.get("generation") != generation:
        cache.clear()
        cache["generation"] = generation
    n = cache.get("_chunks")
    if n is None:
        n = cache["_chunks"] = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    return max(1, n, held)


def _idf(kb: KB, conn: Any, generation: int, terms: list[str], total: int) -> dict[str, float]:
    """IDF of each term over chunks, cached per store generation."""
    cache = kb._idf_cache
    if cache.get("generation") != generation:
        cache.clear()
        cache["generation"] = generation
    # Document frequencies by term, in their own table: a term such as "generation"
    # must not collide with the cache's own keys.
    dfs = cache.setdefault("_df", {})
    out = {}
    for t in terms:
        df = dfs.get(t)
        if df is None:
            match = _fts_terms([t], kb)
            # A term the tokenizer cannot match (trigram: under 3 characters) has no df.
            df = int(conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
            ).fetchone()[0]) if match else 0
            dfs[t] = df
        out[t] = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
    return out


def _utf8(text: str) -> str:
    """``text`` with anything UTF-8 cannot encode (lone surrogates) replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


#: ``[retrieval] lexical_common_share``: a term in more than this share of the
#: chunks is left out of the FTS5 MATCH (it still counts in the coverage weights).
#: Off (1.0) by default: at 0.05 it cut lexical CPU at 50k synthetic chunks from
#: 5.3 to 1.5 ms p50 (p95 19 -> 3 ms), but cost docs-dev 1.4 points of R@2 (hybrid)
#: and 3.2 of R@5 (BM25 alone), beyond the 0.5-point gate (docs/performance.md).
LEXICAL_COMMON_SHARE = 1.0
#: ... and in more than this many chunks (below it a term costs little to score).
LEXICAL_COMMON_MIN_DF = 500


def _selective_terms(kb: KB, terms: list[str], total: int, cfg: dict[str, Any]) -> list[str]:
    """The query terms worth a MATCH: those in at most ``lexical_common_share`` of chunks.

    FTS5 computes ``bm25()`` for every row matching any term before it sorts, so
    one very common term ("build", "use") makes the query score thousands of
    rows for a top 100 its rarer terms decide anyway. Common terms keep their
    weight in fusion through the IDF coverage of each hit. When every term is
    common, the rarest one still matches (never an empty list for a real query).
    Document frequencies come from ``_idf``'s per-generation cache.
    """
    share = float(cfg.get("lexical_common_share", LEXICAL_COMMON_SHARE))
    if share >= 1.0 or len(terms) < 2:
        return terms
    dfs = kb._idf_cache.get("_df", {})
    # Both a share and an absolute floor: scoring a few hundred rows is cheap, so
    # a small KB keeps every term (and its exact BM25 ranking).
    limit = max(share * total, float(cfg.get("lexical_common_min_df", LEXICAL_COMMON_MIN_DF)))
    df = {t: dfs.get(t, 0) for t in terms}
    keep = [t for t in terms if df[t] <= limit]
    if len(keep) < len(terms) and not any(df[t] > 0 for t in keep):
        # Every term that occurs is common: the rarest of them still matches.
        keep.append(min((t for t in terms if t not in keep), key=lambda t: df[t]))
    return keep


def _fts_terms(terms: list[str], kb: KB) -> str:
    if kb.config.retrieval["tokenizer"] == "trigram":
        return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms if len(t) >= 3)
    return fts_query(terms)


def hybrid_search(
    kb: KB,
    query: str,
    k: int | None = None,
    entities: Sequence[str] = (),
    concepts: Sequence[str] = (),
    channel: str | None = None,
    channels: Sequence[str] | None = None,
    graph_roots: int | None = None,
) -> SearchResult:
    """Search one KB. See the module docstring for the pipeline.

    ``channels`` restricts which of the ``lexical`` and ``dense`` lists fuse
    (default both): ``pnk eval`` compares BM25-only and dense-only this way
    through the very same code path. ``graph_roots`` is how many fused hits
    seed the graph channel (default ``k``), so a caller can ask for a longer
    list without changing what the channel is given.
    """
    if not isinstance(query, str) or not query.strip():
        raise QueryError("the query is empty")
    # A lone surrogate (a non-UTF-8 byte in argv, "\ud800" in an agent's JSON) would make the
    # tokenizer raise; it cannot be a word anyway.
    query, entities, concepts = _utf8(query), [_utf8(e) for e in entities], [_utf8(c) for c in concepts]
    cfg = kb.config.retrieval
    k = int(k or cfg["k"])
    if k < 1:
        raise QueryError("k must be at least 1")
    k = min(k, MAX_K)
    requested = channel if channel is not None else str(cfg["graph_channel"])
    # One collection of the channel table per search ("auto" reads the same), none when off.
    installed = kb.graph_channels() if requested not in ("", "off", "none") else {}
    # Which channel, and why (auto: this KB's golden-set verdict, read from a cached file).
    channel_name, channel_reason = channel_in_force(kb, channel, installed)
    graph = None
    if channel_name not in ("", "off", "none"):
        if channel_name not in installed:
            from .extras import not_installed

            known = ", ".join(sorted(installed)) or "none installed"
            raise QueryError(not_installed("graph channel", channel_name)
                             or f"unknown graph channel {channel_name!r} (available: {known})")
        graph = installed[channel_name]
    else:
        channel_name = "off"
    fuse_lists = ("lexical", "dense") if channels is None else tuple(dict.fromkeys(channels))
    if not fuse_lists or any(c not in ("lexical", "dense") for c in fuse_lists):
        raise QueryError(f"channels must be a non-empty subset of lexical, dense (got {channels!r})")
    roots_k = min(int(graph_roots or k), MAX_K)
    fusion = str(cfg.get("graph_fusion", "auto"))
    if fusion not in GRAPH_FUSIONS:
        raise QueryError(f"graph_fusion must be one of {', '.join(GRAPH_FUSIONS)} (got {fusion!r})")
    if fusion == "auto":
        # The channel knows which combination its numbers favour (ppr: final).
        fusion = str(getattr(graph, "fusion", "rrf")) if graph is not None else "rrf"
    if fusion == "blend":
        fusion = "final"  # a blending channel returns its final, already blended, ranking
    n_cand = max(int(cfg["candidates"]), k)
    rrf_k = float(cfg["rrf_k"])
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    embedder = kb.embedder

    def embed() -> np.ndarray:
        te = time.perf_counter()
        qv = embedder.embed_query(query)
        if concepts:
            cv = np.mean([embedder.embed_query(c) for c in concepts], axis=0)
            qv = qv + float(cfg["concept_weight"]) * cv
            qv = (qv / (np.linalg.norm(qv) or 1.0)).astype(np.float32)
        timings["embed"] = (time.perf_counter() - te) * 1000
        return qv

    # The query embedding (ONNX Runtime) and the FTS5 query (SQLite) both release
    # the GIL, so a thread-safe embedder embeds while the lexical list is built.
    pending = _embed_in_background(embedder, embed)
    qv = None if pending is not None else embed()

    store = kb.reader()
    with store.snapshot() as conn:
        dense = kb.dense_index(store)
        generation = dense.generation
        embedding = _embedding_progress(store, len(dense.ids))
        total = _chunk_count(kb, conn, generation, len(dense.ids))
        lists = _Lists()
        lists.query, lists.generation = query, generation

        # 1. Lexical.
        t1 = time.perf_counter()
        terms = query_terms(query, cjk_bigrams=cfg["tokenizer"] != "trigram")
        texts: dict[int, tuple[str, str, str]] = {}
        if terms and "lexical" in fuse_lists:
            idf = _idf(kb, conn, generation, terms, total)
            match = _fts_terms(_selective_terms(kb, terms, total, cfg), kb)
            rows = (
                conn.execute(
                    "SELECT rowid, bm25(chunks_fts, ?, ?, ?) AS s FROM chunks_fts "
                    "WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?",
                    (*BM25_WEIGHTS, match, n_cand),
                ).fetchall()
                if match
                else []
            )
            lex_ids = [int(r[0]) for r in rows]
            ent_count: dict[int, int] = {}
            for ent in entities:
                phrase = fts_phrase(ent)
                if not phrase:
                    continue
                for r in conn.execute(
                    "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
                    "ORDER BY bm25(chunks_fts, ?, ?, ?) LIMIT ?",
                    (phrase, *BM25_WEIGHTS, n_cand),
                ):
                    ent_count[int(r[0])] = ent_count.get(int(r[0]), 0) + 1
            if ent_count:
                order = {cid: i for i, cid in enumerate(lex_ids)}
                pool = set(lex_ids) | set(ent_count)
                lex_ids = sorted(pool, key=lambda c: (-ent_count.get(c, 0), order.get(c, n_cand)))
                lex_ids = lex_ids[:n_cand]
            texts = _chunk_texts(conn, lex_ids)
            mass = sum(idf.values()) or 1.0
            patterns = {t: term_pattern(t) for t in terms}
            for cid in lex_ids:
                title, heading, body = texts.get(cid, ("", "", ""))
                hay = f"{title}\n{heading}\n{body}"
                covered = sum(idf[t] for t, p in patterns.items() if p.search(hay))
                lists.coverage[cid] = covered / mass
            weights = _lexical_weights(lists.coverage, lex_ids, str(cfg.get("lexical_coverage", "hit")),
                                       float(cfg.get("lexical_coverage_power", 1.0)))
            for cid, n in ent_count.items():
                if cid in weights:
                    # The caller named this exact phrase: an explicit, strong signal.
                    weights[cid] = 1.0 + n
            lists.ranked["lexical"] = lex_ids
            lists.weight["lexical"] = weights
        timings["lexical"] = (time.perf_counter() - t1) * 1000

        if pending is not None:
            tw = time.perf_counter()
            qv = pending.result()
            timings["embed_wait"] = (time.perf_counter() - tw) * 1000
        assert qv is not None

        # 2. Dense.
        t2 = time.perf_counter()
        if len(dense.ids):
            # Kept even when dense does not fuse: channels need it. Integer kernel over
            # the quantised matrix, the top 2 x candidates re-scored with the float query.
            cosines = dense.cosines(qv, rescore=2 * n_cand)
            n = min(n_cand, len(cosines))
            top = np.argpartition(-cosines, n - 1)[:n]
            top = top[np.argsort(-cosines[top], kind="stable")]
            lists.ranked["dense"] = [int(x) for x in dense.ids[top]]
            lists.weight["dense"] = _dense_weights(
                dense.ids[top], cosines[top], float(cfg["dense_floor"]),
                float(cfg["dense_temperature"]),
            )
        else:
            cosines = np.zeros(0, dtype=np.float32)
        if "dense" not in fuse_lists:
            lists.ranked.pop("dense", None)
            lists.weight.pop("dense", None)
        timings["dense"] = (time.perf_counter() - t2) * 1000

        # 3. Fusion, then the optional graph channel seeded from the fused top.
        channel_weights = {
            "lexical": float(cfg["lexical_weight"]),
            "dense": float(cfg["dense_weight"]),
            "graph": float(cfg["graph_weight"]),
        }
        fused = _fuse(lists, channel_weights, rrf_k)
        if float(cfg.get("doc_evidence", 0.0)) > 0:
            fused = _doc_evidence(conn, fused, lists, float(cfg["doc_evidence"]))
        lists.hybrid_top = fused[0][1] if fused else None
        lists.channel = channel_name
        if graph is not None:
            t3 = time.perf_counter()
            ctx = ChannelContext(
                kb=kb, store=store, query=query, query_vector=qv, cosines=cosines, dense=dense,
                roots=[cid for cid, _ in fused[:roots_k]], config=dict(cfg),
                fused=list(fused[:n_cand]),
            )
            graph_hits = (graph.search(ctx) or [])[:n_cand]
            # An empty list (a sparse graph, nothing to add) leaves the two-list search
            # exactly as it was: no "graph" list, so the calibration still applies.
            if graph_hits:
                lists.ranked["graph"] = [int(cid) for cid, _ in graph_hits]
                # Evidence weighting again: a chunk the channel scores far below its best
                # (a weak hub spoke next to an authored link) counts for less.
                top_score = max((float(sc) for _, sc in graph_hits), default=0.0)
                lists.weight["graph"] = {
                    int(cid): (max(float(sc), 0.0) / top_score if top_score > 0 else 1.0)
                    for cid, sc in graph_hits
                }
                fused = _fuse(lists, channel_weights, rrf_k)
                if fusion == "final":
                    fused = _final_ranking(graph_hits, fused)
            timings["graph"] = (time.perf_counter() - t3) * 1000
        if float(cfg["salience_prior"]) or float(cfg["link_distance_rerank"]) or \
                float(cfg["index_prior"]):
            fused = _apply_priors(kb, conn, generation, fused[:n_cand], cfg, rrf_k)

        top_hits = fused[:k]
        missing = [cid for cid, _ in top_hits if cid not in texts]
        texts.update(_chunk_texts(conn, missing))
        details = _chunk_details(conn, [cid for cid, _ in top_hits])
    rank_of = {name: {cid: i + 1 for i, cid in enumerate(ids)} for name, ids in lists.ranked.items()}
    snippet_terms = terms + [t for e in entities for t in query_terms(e, keep_stopwords=True)]
    hits = []
    for cid, score in top_hits:
        d = details[cid]
        body = texts[cid][2]
        snippet, spans = make_snippet(body, snippet_terms)
        hits.append(
            Hit(
                doc_id=d["ulid"], title=d["title"], path=d["path"],
                heading_path=json.loads(d["heading_path"]), text=body, snippet=snippet,
                highlights=spans, score=round(score, 6),
                ranks={name: rank_of[name].get(cid) for name in lists.ranked},
                chunk_id=cid, ordinal=d["ordinal"], start_line=d["start_line"], kb=kb.name,
            )
        )
    confidence = kb.confidence(hits, lists, cosines) if hits else None
    abstain_below = float(cfg["abstain_below"])
    abstained = confidence is not None and confidence < abstain_below
    support = lists.support
    reason = support.reason() if abstained and support is not None else None
    timings["total"] = (time.perf_counter() - t0) * 1000
    return SearchResult(query, kb.name, hits, confidence, abstained, channel_name, timings,
                        embedding=embedding, channel_reason=channel_reason, reason=reason,
                        support=support.to_dict() if support is not None else None)


def _embedding_progress(store: Any, held: int) -> dict[str, Any] | None:
    """How far a running (or interrupted) sync's embedding phase got; None when done."""
    pending = int(store.get_meta("embedding_pending") or 0)
    if pending <= 0:
        return None
    total = int(store.get_meta("embedding_total") or pending)
    return {"embedded": max(0, total - pending), "total": total, "pending": pending,
            "lexical_only": held == 0}


_POOL: Any = None


def _embed_in_background(embedder: Any, fn: Any) -> Any:
    """Start ``fn`` (the query embedding) on a worker thread; None to run it inline.

    Only for embedders that declare ``thread_safe = True`` (the hookspec does
    not promise it). One worker, created once; the hand-off costs ~0.1 ms.
    """
    global _POOL
    if not getattr(embedder, "thread_safe", False):
        return None
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pinakes-embed")
    return _POOL.submit(fn)


def _lexical_weights(coverage: dict[int, float], ids: list[int], mode: str, power: float
                     ) -> dict[int, float]:
    """How much each lexical hit's rank counts in fusion (``[retrieval] lexical_coverage``).

    ``hit``: each hit by its own share of the query's IDF mass (raised to
    ``power``): a hit holding only a stray common word counts little.
    ``list``: every hit by the best share in the list, so BM25's own order is
    kept and only a list of stray matches as a whole is discounted.
    ``off``: plain RRF.
    """
    if mode == "off":
        return dict.fromkeys(ids, 1.0)
    if mode == "list":
        best = max((coverage.get(c, 0.0) for c in ids), default=0.0) ** power
        return dict.fromkeys(ids, best)
    return {c: coverage.get(c, 0.0) ** power for c in ids}


def _dense_weights(ids: np.ndarray, cos: np.ndarray, floor: float, temperature: float) -> dict[int, float]:
    """How much each dense hit's rank counts in fusion: its evidence, not just its rank.

    A hit far below the best cosine (by more than ``temperature``) is a weak
    runner-up, not a near-tie, and a cosine under ``floor`` is barely evidence at
    all; both shrink the hit's RRF contribution.
    """
    if len(cos) == 0:
        return {}
    w = np.ones(len(cos), dtype=np.float64)
    if temperature > 0:
        w *= np.exp(-(float(cos[0]) - cos.astype(np.float64)) / temperature)
    if floor > 0:
        w *= np.clip(cos / floor, 0.0, 1.0)
    return {int(i): float(x) for i, x in zip(ids, w, strict=True)}


def _link_stats(kb: KB, conn: Any, generation: int) -> tuple[dict[int, float], dict[int, set[int]]]:
    """Per-document in-degree salience and the undirected authored-link adjacency.

    Both are cached per store generation: they change only when a sync does.
    """
    cache = kb._idf_cache.setdefault("_links", {})
    if cache.get("generation") == generation:
        return cache["salience"], cache["adjacent"]
    adjacent: dict[int, set[int]] = {}
    indegree: dict[int, set[int]] = {}
    try:
        rows = conn.execute(
            "SELECT l.src_doc, d.doc FROM links l JOIN documents d ON d.ulid = l.dst_ulid "
            "WHERE l.dst_ulid IS NOT NULL AND l.dst_kb = '' AND d.doc != l.src_doc "
            "AND l.provenance != ?", (NO_HUB,),  # a change log's mentions are not salience
        ).fetchall()
    except Exception:  # a store without a links table: no priors
        rows = []
    for src, dst in rows:
        adjacent.setdefault(src, set()).add(dst)
        adjacent.setdefault(dst, set()).add(src)
        indegree.setdefault(dst, set()).add(src)
    top = max((len(v) for v in indegree.values()), default=0)
    salience = {d: math.log1p(len(v)) / math.log1p(top) for d, v in indegree.items()} if top else {}
    cache.update(generation=generation, salience=salience, adjacent=adjacent)
    return salience, adjacent


def _catalogued(kb: KB, conn: Any, generation: int, pages: list[str]) -> set[int]:
    """Documents that an index page (a path glob in ``pages``) links to, cached per generation.

    Left out: the index pages themselves (a catalog is a way in, rarely the answer)
    and ``[kb] no_link_hub`` pages such as a change log, which a catalog lists for
    navigation and which are no more likely to answer a question for it.
    """
    cache = kb._idf_cache.setdefault("_index", {})
    no_hub = [str(p) for p in kb.config.kb.get("no_link_hub") or []]
    key = (generation, tuple(pages), tuple(no_hub))
    if cache.get("key") == key:
        return cache["docs"]
    index_docs: list[int] = []
    skip: list[int] = []
    for doc, path in conn.execute("SELECT doc, path FROM documents"):
        if pages and matches_any(path, pages):
            index_docs.append(int(doc))
        elif no_hub and matches_any(path, no_hub):
            skip.append(int(doc))
    found: set[int] = set()
    for start in range(0, len(index_docs), 500):
        part = index_docs[start:start + 500]
        marks = ",".join("?" * len(part))
        found.update(int(r[0]) for r in conn.execute(
            "SELECT DISTINCT d.doc FROM links l JOIN documents d ON d.ulid = l.dst_ulid "
            f"WHERE l.src_doc IN ({marks}) AND l.dst_ulid IS NOT NULL AND l.dst_kb = ''", part))
    found.difference_update(index_docs, skip)
    cache.update(key=key, docs=found)
    return found


def _apply_priors(kb: KB, conn: Any, generation: int, fused: list[tuple[int, float]],
                  cfg: dict[str, Any], rrf_k: float) -> list[tuple[int, float]]:
    """The cheap priors, off by default, for the eval matrix.

    * in-degree salience: a document many others link to is a little more likely
      to be what is asked for; its chunks inherit the prior;
    * link-distance rerank: documents close (over authored links) to the top
      hit's document are lifted, 1/(1 + distance), up to two hops;
    * index prior: documents a curated catalog (``index_pages``, e.g. a ClaudeKB's
      ``docs/index.md``) links to were picked by a person as entry points, so
      they win near-ties against pages nobody catalogued (a log, a stray note).

    Each is scaled so that a weight of 1.0 equals one list's rank-1 RRF term.
    """
    if not fused:
        return fused
    salience, adjacent = _link_stats(kb, conn, generation)
    marks = ",".join("?" * len(fused))
    doc_of = {int(r[0]): int(r[1]) for r in conn.execute(
        f"SELECT id, doc FROM chunks WHERE id IN ({marks})", [cid for cid, _ in fused])}
    unit = 1.0 / (rrf_k + 1.0)
    w_sal = float(cfg["salience_prior"])
    w_dist = float(cfg["link_distance_rerank"])
    w_idx = float(cfg["index_prior"])
    catalogued = _catalogued(kb, conn, generation, list(cfg["index_pages"])) if w_idx else set()
    distance: dict[int, int] = {}
    if w_dist:
        start = doc_of.get(fused[0][0])
        if start is not None:
            distance[start] = 0
            frontier = [start]
            for d in (1, 2):
                nxt = []
                for doc in frontier:
                    for other in sorted(adjacent.get(doc, ())):
                        if other not in distance:
                            distance[other] = d
                            nxt.append(other)
                frontier = nxt
    out = []
    for cid, score in fused:
        doc = doc_of.get(cid)
        score += w_sal * unit * salience.get(doc, 0.0)
        if doc in distance:
            score += w_dist * unit / (1 + distance[doc])
        if doc in catalogued:
            score += w_idx * unit
        out.append((cid, score))
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))


def _final_ranking(graph_hits: Sequence[tuple[int, float]],
                   fused: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """``graph_fusion = "final"``: the channel's own list becomes the ranking.

    A channel seeded from the hybrid (PPR) can rank better alone than as one
    more RRF list: equal-weight RRF cost a prototype ~18 points of multi-hop
    R@5 against PPR's own ranking (a reference prototype measured it). Scores are put
    on the fused scale (the hybrid's top score times each hit's share of the
    channel's top score) because priors and the confidence calibration read
    fused scores; fused hits the channel left out follow in fused order, so a
    short channel list never shortens the result. Per-list ranks stay reported.
    """
    top_fused = fused[0][1] if fused else 1.0
    top_graph = max(float(sc) for _, sc in graph_hits)
    if top_graph <= 0:
        return fused
    out = [(int(cid), top_fused * max(float(sc), 0.0) / top_graph) for cid, sc in graph_hits]
    seen = {cid for cid, _ in out}
    floor = out[-1][1]
    out += [(cid, floor * sc / top_fused if top_fused > 0 else 0.0)
            for cid, sc in fused if cid not in seen]
    return out


def _doc_evidence(conn: Any, fused: list[tuple[int, float]], lists: _Lists, weight: float
                  ) -> list[tuple[int, float]]:
    """Lift each document's best chunk by ``weight`` times its second-best chunk's score.

    A document two of whose sections match the query is better evidence than
    one with a single matching section next to unrelated ones: the README's
    own question about fusing rankings found one stray paragraph of the
    PageRank page above the RRF page whose every section answers it. The
    second section counts only when *every* fused list found it (lexically and
    densely): with one list, any long document's stray matches would add up,
    which cost BM25 alone 15 points of R@2 on 2Wiki. Only the best chunk moves;
    the others keep their scores (``[retrieval] doc_evidence``; 0 switches it off).
    """
    present = [set(ids) for ids in lists.ranked.values() if ids]
    if not fused or len(present) < 2:
        return fused
    doc_of: dict[int, int] = {}
    ids = [cid for cid, _ in fused]
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        doc_of.update((int(r[0]), int(r[1])) for r in conn.execute(
            f"SELECT id, doc FROM chunks WHERE id IN ({marks})", part))
    best: dict[int, int] = {}
    second: dict[int, float] = {}
    for cid, score in fused:  # best first
        doc = doc_of.get(cid, -cid)
        if doc not in best:
            best[doc] = cid
        elif doc not in second and all(cid in ids for ids in present):
            second[doc] = score
    lift = {best[d]: weight * sc for d, sc in second.items()}
    out = [(cid, score + lift.get(cid, 0.0)) for cid, score in fused]
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))


def _fuse(lists: _Lists, channel_weights: dict[str, float], rrf_k: float) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for name, ids in lists.ranked.items():
        cw = channel_weights.get(name, 1.0)
        ws = lists.weight.get(name, {})
        for rank, cid in enumerate(ids, 1):
            scores[cid] = scores.get(cid, 0.0) + cw * ws.get(cid, 1.0) / (rrf_k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _chunk_texts(conn: Any, ids: list[int]) -> dict[int, tuple[str, str, str]]:
    out: dict[int, tuple[str, str, str]] = {}
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        if not part:
            continue
        marks = ",".join("?" * len(part))
        for r in conn.execute(
            f"SELECT c.id, d.title, c.heading_path, c.text FROM chunks c "
            f"JOIN documents d ON d.doc = c.doc WHERE c.id IN ({marks})",
            part,
        ):
            out[int(r[0])] = (r[1], " > ".join(json.loads(r[2])), r[3])
    return out


def _chunk_details(conn: Any, ids: list[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {
        int(r["id"]): dict(r)
        for r in conn.execute(
            f"SELECT c.id, c.ordinal, c.heading_path, c.start_line, d.ulid, d.title, d.path "
            f"FROM chunks c JOIN documents d ON d.doc = c.doc WHERE c.id IN ({marks})",
            ids,
        )
    }


def make_snippet(text: str, terms: Sequence[str], width: int = 240) -> tuple[str, list[tuple[int, int]]]:
    """A window of ``text`` around the first query term, with the term spans to highlight."""
    flat = re.sub(r"\s+", " ", text).strip()
    spans: list[tuple[int, int]] = []
    for t in terms:
        pat = term_pattern(t)
        for m in pat.finditer(flat):
            end = m.end()
            if not CJK_RE.match(t):
                while end < len(flat) and (flat[end].isalnum()):
                    end += 1
            spans.append((m.start(), end))
    spans.sort()
    start = 0
    if spans and spans[0][0] > width // 3:
        start = flat.rfind(" ", 0, spans[0][0] - width // 4) + 1
    end = min(len(flat), start + width)
    if end < len(flat):
        cut = flat.rfind(" ", start, end)
        end = cut if cut > start else end
    window = flat[start:end]
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    shift = len(prefix) - start
    inside = []
    last = -1
    for a, b in spans:
        if a >= start and b <= end and a >= last:
            inside.append((a + shift, b + shift))
            last = b
    return prefix + window + suffix, inside


# --- results grouped by document (what `pnk search` shows a person) --------------------

#: Chunks retrieved to fill k documents: the engine's cap, as ``pnk eval`` retrieves
#: (its ``CHUNKS``), so the documents a person sees are the ones eval scores.
DOCUMENT_CHUNKS = MAX_K


@dataclass
class DocumentHit:
    """One document of a grouped result: its best chunk, then its other matching chunks.

    A document ranks by its best chunk (its first appearance in the chunk
    ranking), the same collapse ``pnk eval`` applies before it counts recall, so
    the order a person reads is the order that is measured.
    """

    kb: str
    doc_id: str
    title: str
    path: str
    score: float
    best: Hit
    more: list[Hit] = field(default_factory=list)  # other matching chunks, best first

    def to_dict(self) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "doc_id": self.doc_id,
            "title": self.title,
            "path": self.path,
            "score": self.score,
            "best": self.best.to_dict(),
            "more": [
                {"chunk_id": h.chunk_id, "ordinal": h.ordinal, "heading_path": list(h.heading_path),
                 "start_line": h.start_line, "score": h.score, "ranks": dict(h.ranks)}
                for h in self.more
            ],
        }


def group_by_document(hits: Sequence[Hit], k: int | None = None) -> list[DocumentHit]:
    """Group ranked chunks by document (per KB), best first; at most ``k`` documents.

    Only the chunks given are grouped: to fill ``k`` documents, search for
    :data:`DOCUMENT_CHUNKS` chunks first (see :func:`documents_result`).
    """
    groups: dict[tuple[str, str], DocumentHit] = {}
    for h in hits:
        key = (h.kb, h.doc_id)
        group = groups.get(key)
        if group is None:
            if k is not None and len(groups) >= k:
                continue  # a later document: beyond the k asked for
            groups[key] = DocumentHit(h.kb, h.doc_id, h.title, h.path, h.score, h)
        else:
            group.more.append(h)
    return list(groups.values())


@dataclass
class DocumentResult:
    """A search grouped by document, and the ``k`` best chunks it came from.

    ``chunks`` is exactly what a chunk search for ``k`` returns (and what the
    MCP tool returns): the graph channel is seeded from the same ``k`` roots
    and the confidence reads the same top hit, so asking for more chunks to
    fill the documents changes neither.
    """

    chunks: SearchResult
    documents: list[DocumentHit]

    def to_dict(self) -> dict[str, Any]:
        """``SearchResult.to_dict()`` (``hits``: the k best chunks) plus ``documents``."""
        out = self.chunks.to_dict()
        out["documents"] = [d.to_dict() for d in self.documents]
        return out


def documents_result(result: SearchResult, k: int) -> DocumentResult:
    """Turn a search for :data:`DOCUMENT_CHUNKS` chunks (with ``graph_roots=k``) into k documents.

    The chunk list is cut back to ``k`` for :attr:`DocumentResult.chunks`;
    the documents are grouped from the whole longer list.
    """
    import copy

    k = max(1, min(int(k), MAX_K))
    chunks = copy.copy(result)  # keeps a subclass's fields (a fleet search's ``skipped``)
    chunks.hits = list(result.hits[:k])
    chunks.timings_ms = dict(result.timings_ms)
    return DocumentResult(chunks, group_by_document(result.hits, k))
