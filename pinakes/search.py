"""Hybrid search, the free path: lexical (FTS5 BM25) + dense (one NumPy matrix) + fusion.

Fusion is reciprocal-rank fusion weighted by each list's evidence. Plain RRF
lets a lexical list of weak matches (one stray common word) drag a confident
dense hit down; here a lexical hit contributes in proportion to the share of
the query's information (IDF-weighted terms) it actually contains, and a dense
hit below a cosine floor contributes less. An optional graph channel (a
plugin) adds a third list seeded from the fused top hits.

:func:`hybrid_search` is the pipeline, one small function per stage, each
taking and returning plain data: :func:`plan_search` (the validated request),
the query's embedding, :func:`lexical_stage`, :func:`dense_stage`,
:func:`fusion_stage`, :func:`graph_stage`, :func:`priors_stage`,
:func:`hits_stage` and :func:`confidence_stage`. With ``explain`` the stages
keep what they computed (a :class:`Trace`) and :mod:`pinakes.explain` lays it
out per hit: the explanation is the computation's own numbers. The stages
read only what :class:`SearchInputs` hands them, never the KB object.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .config import GRAPH_FUSIONS
from .errors import QueryError
from .fsutil import matches_any
from .links import NO_HUB
from .quant import dequantise
from .quant import scores as quant_scores
from .scope import Scope, ScopedDocs, resolve_scope, scope_clause
from .sqlin import marks as sqlmarks
from .sqlin import rows as sqlrows
from .termstats import chunk_count as _chunk_count
from .termstats import fts_terms as _fts_terms
from .termstats import idf as _idf
from .text import CJK_RE, fts_phrase, query_terms, term_pattern

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
    #: With ``explain``: what each stage of the pipeline gave this chunk (pinakes.explain).
    explain: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["highlights"] = [list(h) for h in self.highlights]
        if self.explain is None:
            del d["explain"]
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
    #: With ``explain``: the stages' records for the whole query (pinakes.explain).
    explain: dict[str, Any] | None = None
    #: When the search was scoped: the folders and tags asked, and how many documents
    #: they hold (``pinakes.scope.ScopedDocs.to_dict``).
    scope: dict[str, Any] | None = None

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
            **({"scope": self.scope} if self.scope is not None else {}),
            **({"explain": self.explain} if self.explain is not None else {}),
        }


#: How many of its best rows a dense search checks against their stored CRC-32.
CHECKED_ROWS = 32


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
    crc: np.ndarray | None = None  # uint32 (n,): each stored row's CRC-32, checked when re-scored

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

    def cosines(self, query: np.ndarray, rescore: int = 0, mask: np.ndarray | None = None) -> np.ndarray:
        """Cosine of every row with ``query``; the best ``rescore`` rows re-scored exactly.

        The integer kernel also rounds the query to int8; re-scoring the top
        candidates with the float query leaves only the rows' own rounding in
        the part of the ranking that fuses (max error ~3e-4 against float32).
        ``mask`` (a scoped search, :mod:`pinakes.scope`): the rows out of scope read -1,
        and the best rows in scope are the ones re-scored.
        """
        cos = quant_scores(self.codes, self.scale, query)
        if mask is not None:
            cos[~mask] = -1.0
        m = min(int(rescore), len(cos) if mask is None else int(mask.sum()))
        if m > 0:
            top = np.argpartition(-cos, m - 1)[:m]
            cos[top] = self.vectors(top) @ np.asarray(query, dtype=np.float32)
            best = top[np.argsort(-cos[top], kind="stable")[:CHECKED_ROWS]]
            self.check(best)
        return cos

    def check(self, rows: np.ndarray) -> None:
        """Raise IndexDamaged when a row's codes and scale no longer match their stored CRC-32.

        Only the rows a search ranks best are checked (:data:`CHECKED_ROWS`): a
        damaged scale byte could put one chunk first for every query, and SQLite
        never looks inside a blob. ~2 us per row.
        """
        if self.crc is None or not len(rows):
            return
        from .health import crc_of

        for r in np.asarray(rows, dtype=np.intp).tolist():
            if crc_of(self.codes[r].tobytes() + self.scale[r : r + 1].astype("<f4").tobytes()) \
                    != int(self.crc[r]):
                from .store import damage_error

                raise damage_error(f"chunk {int(self.ids[r])}'s vector does not match its checksum")


@dataclass
class ChannelContext:
    """What a graph channel receives (see ``register_graph_channels``)."""

    kb: Any  # the KB searched (channels ask it for ``graph_index(store)``)
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
    #: True when the caller asked why each hit is there (``pnk search --explain``): a
    #: channel may then keep what its optional ``explain(context, chunk_ids)`` reads.
    explain: bool = False
    #: Free for the channel: what its search kept for ``explain`` (per search, not shared).
    record: dict[str, Any] = field(default_factory=dict)
    #: The query's terms and their IDF over chunks, as the lexical stage computed them
    #: (None when it did not run): a channel need not count them again.
    term_idf: dict[str, float] | None = None


class Lists:
    """The ranked candidate lists of one query, by channel name (what fusion and calibration read)."""

    def __init__(self) -> None:
        self.ranked: dict[str, list[int]] = {}
        self.weight: dict[str, dict[int, float]] = {}
        self.coverage: dict[int, float] = {}  # lexical hit -> share of the query's IDF mass it holds
        self.hybrid_top: float | None = None  # top score of the two-list fusion, before any graph
        self.channel = "off"  # the graph channel in use (calibration checks it)
        self.query = ""  # the query and the store generation it ran on (pinakes.support reads them)
        self.generation: int | None = None
        self.support: Any = None  # pinakes.support.Support, once the confidence has assessed it
        self.later: list[int] = []  # the fused candidates past the hits, up to MAX_K (chunk ids)


@dataclass
class SearchInputs:
    """What one search reads, handed over by its KB (:meth:`pinakes.kb.KB.search`).

    The pipeline below reaches for nothing else: a store, an embedder, a config
    mapping and a few callables, so it can be read (and tested) without the KB
    object, and the KB stays the one place that knows how they are made.
    """

    name: str  # the KB's name, put on every hit
    retrieval: Mapping[str, Any]  # [retrieval]
    no_link_hub: Sequence[str]  # [kb] no_link_hub: pages the index prior skips
    embedder: Any
    reader: Callable[[], Any]  # the read Store (reopened by the KB after a rebuild)
    dense_index: Callable[[Any], DenseIndex]  # the store's vectors, per generation
    memo: dict[str, Any]  # per-generation caches: IDF, link statistics, index pages
    channels: Callable[[], Mapping[str, Any]]  # installed graph channels
    #: (asked, installed) -> (channel, why): the search's own channel (None: the KB's
    #: setting) to the one in force, "auto" decided (pinakes.channel_choice).
    choose_channel: Callable[[str | None, Mapping[str, Any]], tuple[str, str]]
    confidence: Callable[..., float | None]  # (hits, lists, cosines[, record]) -> P(covered)
    owner: Any = None  # what a channel sees as ``context.kb``


@dataclass
class Plan:
    """Stage 0's record: the validated request and the settings every later stage runs with."""

    query: str
    k: int
    entities: list[str]
    concepts: list[str]
    requested: str  # the channel asked for ("auto", "off", a name)
    channel: str  # the channel in force, or "off"
    channel_reason: str  # why, in one line starting with the channel
    graph: Any  # its object, None when off
    fuse_lists: tuple[str, ...]  # which of lexical, dense fuse
    roots_k: int  # fused hits that seed the channel
    fusion: str  # how a channel's list joins: "rrf" or "final"
    n_cand: int  # candidates per list
    rrf_k: float
    weights: dict[str, float]  # each list's weight in fusion
    cfg: Mapping[str, Any]
    explain: bool = False

    @property
    def tokenizer(self) -> str:
        return str(self.cfg["tokenizer"])


@dataclass
class LexicalList:
    """The lexical stage's record: BM25 candidates, each weighed by the query terms it holds."""

    terms: list[str]  # the query's terms (stop words dropped)
    ids: list[int] | None = None  # ranked chunk ids; None when the stage did not run
    weights: dict[int, float] = field(default_factory=dict)  # what each rank counts in fusion
    coverage: dict[int, float] = field(default_factory=dict)  # share of the query's IDF mass held
    texts: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # title, heading, body
    idf: dict[str, float] = field(default_factory=dict)  # every term's (channels read it too)
    # Kept for --explain only:
    kept: list[str] = field(default_factory=list)  # the terms FTS5 matched (the selective ones)
    bm25: dict[int, float] = field(default_factory=dict)  # FTS5's bm25() (lower is better)
    entity_hits: dict[int, int] = field(default_factory=dict)  # entity phrases each chunk holds


@dataclass
class DenseList:
    """The dense stage's record: every chunk's cosine, and the best candidates weighed."""

    cosines: np.ndarray  # aligned with ``row_ids`` (graph channels start from it)
    ids: list[int] | None = None  # ranked chunk ids; None without vectors
    weights: dict[int, float] = field(default_factory=dict)
    row_ids: np.ndarray | None = None  # the dense index's chunk ids (sorted), for lookups


@dataclass
class Trace:
    """What the fusion, graph and priors stages did per chunk; kept only for ``--explain``."""

    terms: dict[int, dict[str, float]] = field(default_factory=dict)  # chunk -> list -> RRF term
    lift: dict[int, float] = field(default_factory=dict)  # document-evidence lift
    fused: dict[int, float] = field(default_factory=dict)  # score after fusion (+ lift)
    context: ChannelContext | None = None
    graph_hits: list[tuple[int, float]] = field(default_factory=list)
    refused: dict[int, dict[str, float]] = field(default_factory=dict)  # the 3-list RRF terms
    final: dict[str, float] = field(default_factory=dict)  # "final" fusion's scale
    after_graph: dict[int, float] = field(default_factory=dict)
    priors: dict[int, dict[str, float]] = field(default_factory=dict)


def hybrid_search(src: SearchInputs, query: str, k: int | None = None,
                  entities: Sequence[str] = (), concepts: Sequence[str] = (),
                  channel: str | None = None, channels: Sequence[str] | None = None,
                  graph_roots: int | None = None, explain: bool = False,
                  scope: Scope | None = None) -> SearchResult:
    """Search one KB: the pipeline below, stage by stage (docs/design.md, "Retrieval").

    ``channels`` restricts which of the ``lexical`` and ``dense`` lists fuse
    (default both): ``pnk eval`` compares BM25-only and dense-only this way
    through the very same code path. ``graph_roots`` is how many fused hits
    seed the graph channel (default ``k``), so a caller can ask for a longer
    list without changing what the channel is given. ``explain`` keeps each
    stage's record and puts it on the result and its hits (:mod:`pinakes.explain`).
    ``scope`` ranks only the chunks of the documents it names (:mod:`pinakes.scope`): each
    list keeps its own best candidates in scope, the graph's list is cut to it.
    """
    plan = plan_search(src, query, k, entities, concepts, channel, channels, graph_roots, explain)
    trace = Trace() if plan.explain else None
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    pending = start_query_embedding(src.embedder, plan, timings)
    store = src.reader()
    with store.snapshot() as conn:
        dense = src.dense_index(store)
        embedding = _embedding_progress(store, len(dense.ids))
        total = _chunk_count(src.memo, conn, dense.generation, len(dense.ids))
        scoped = resolve_scope(conn, scope, src.memo, dense.generation) if scope else None
        lexical = _timed(timings, "lexical", lexical_stage, conn, plan, src.memo, dense.generation,
                         total, scoped)
        qv = query_vector(pending, timings)
        semantic = _timed(timings, "dense", dense_stage, dense, qv, plan, scoped)
        lists = candidate_lists(lexical, semantic, plan)
        lists.query, lists.generation = plan.query, dense.generation
        fused = fusion_stage(conn, lists, plan, trace)
        if plan.graph is not None:
            ctx = ChannelContext(
                kb=src.owner, store=store, query=plan.query, query_vector=qv,
                cosines=semantic.cosines, dense=dense, roots=[c for c, _ in fused[:plan.roots_k]],
                config=dict(plan.cfg), fused=list(fused[:plan.n_cand]), explain=plan.explain,
                term_idf=lexical.idf or None)
            fused = _timed(timings, "graph", graph_stage, ctx, fused, lists, plan, trace, scoped)
        fused = priors_stage(conn, fused, plan, src, dense.generation, trace)
        hits = hits_stage(conn, fused[:plan.k], lexical, lists, plan, src.name)
        # The candidates past the hits: the reader (pinakes.support) looks for a missing name
        # among the first few, so a search for 5 hits reads a question as one for 50 does.
        lists.later = [c for c, _ in fused[plan.k:MAX_K]]
        report = explain_report(plan, lexical, semantic, lists, trace, hits, src.memo)
        if report is not None and scoped is not None:
            report["scope"] = scoped.to_dict()
    confidence = confidence_stage(src, hits, lists, semantic.cosines, report)
    abstained = confidence is not None and confidence < float(plan.cfg["abstain_below"])
    support = lists.support  # what the confidence found the question asks (pinakes.support)
    reason = support.reason() if abstained and support is not None else None
    if report is not None and "confidence" in report:
        report["confidence"].update(abstained=abstained, reason=reason)
    timings["total"] = (time.perf_counter() - t0) * 1000
    return SearchResult(plan.query, src.name, hits, confidence, abstained, plan.channel, timings,
                        embedding=embedding, channel_reason=plan.channel_reason, reason=reason,
                        support=support.to_dict() if support is not None else None,
                        explain=report, scope=scoped.to_dict() if scoped is not None else None)


def _timed(timings: dict[str, float], key: str, stage: Callable[..., Any], *args: Any) -> Any:
    """Run one stage and record its wall time (ms) under ``key``."""
    t = time.perf_counter()
    out = stage(*args)
    timings[key] = (time.perf_counter() - t) * 1000
    return out


# --- stage 0: the plan ------------------------------------------------------------------


def plan_search(src: SearchInputs, query: str, k: int | None, entities: Sequence[str],
                concepts: Sequence[str], channel: str | None, channels: Sequence[str] | None,
                graph_roots: int | None, explain: bool = False) -> Plan:
    """Validate the request and fix every setting the search runs with (one clear error each)."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("the query is empty")
    # A lone surrogate (a non-UTF-8 byte in argv, "\ud800" in an agent's JSON) would make the
    # tokenizer raise; it cannot be a word anyway.
    query = _utf8(query)
    cfg = src.retrieval
    k = int(k or cfg["k"])
    if k < 1:
        raise QueryError("k must be at least 1")
    k = min(k, MAX_K)
    requested = channel if channel is not None else str(cfg["graph_channel"])
    name, graph, reason = resolve_channel(src, requested, channel)
    fuse_lists = ("lexical", "dense") if channels is None else tuple(dict.fromkeys(channels))
    if not fuse_lists or any(c not in ("lexical", "dense") for c in fuse_lists):
        raise QueryError(f"channels must be a non-empty subset of lexical, dense (got {channels!r})")
    weights = {"lexical": float(cfg["lexical_weight"]), "dense": float(cfg["dense_weight"]),
               "graph": float(cfg["graph_weight"])}
    return Plan(query=query, k=k, entities=[_utf8(e) for e in entities],
                concepts=[_utf8(c) for c in concepts], requested=requested, channel=name,
                channel_reason=reason, graph=graph, fuse_lists=fuse_lists, roots_k=min(int(graph_roots or k), MAX_K),
                fusion=_fusion_mode(cfg, graph), n_cand=max(int(cfg["candidates"]), k),
                rrf_k=float(cfg["rrf_k"]), weights=weights, cfg=cfg, explain=bool(explain))


def resolve_channel(src: SearchInputs, requested: str, asked: str | None = None
                    ) -> tuple[str, Any, str]:
    """``(name, channel object, why)`` of the graph channel in force; ``("off", None, why)``.

    ``requested``: the channel asked for, or the KB's setting; ``asked``: the
    search's own (None when it asked for none), which says why.
    """
    # One collection of the channel table per search ("auto" reads the same), none when off.
    installed = src.channels() if requested not in ("", "off", "none") else {}
    name, reason = src.choose_channel(asked, installed)
    if name in ("", "off", "none"):
        return "off", None, reason
    if name not in installed:
        from .extras import not_installed

        known = ", ".join(sorted(installed)) or "none installed"
        raise QueryError(not_installed("graph channel", name)
                         or f"unknown graph channel {name!r} (available: {known})")
    return name, installed[name], reason


def _fusion_mode(cfg: Mapping[str, Any], graph: Any) -> str:
    """How the channel's list joins the ranking: ``"rrf"`` (a third list) or ``"final"``."""
    fusion = str(cfg.get("graph_fusion", "auto"))
    if fusion not in GRAPH_FUSIONS:
        raise QueryError(f"graph_fusion must be one of {', '.join(GRAPH_FUSIONS)} (got {fusion!r})")
    if fusion == "auto":
        # The channel knows which combination its numbers favour (ppr: final).
        fusion = str(getattr(graph, "fusion", "rrf")) if graph is not None else "rrf"
    return "final" if fusion == "blend" else fusion  # a blending channel returns its final ranking


# --- stage 1: the query's embedding (in the background while FTS5 runs) ----------------


def embed_query(embedder: Any, plan: Plan, timings: dict[str, float]) -> np.ndarray:
    """The query's vector, ``--concept`` phrases blended in; its time goes to ``embed``."""
    te = time.perf_counter()
    qv = embedder.embed_query(plan.query)
    if plan.concepts:
        cv = np.mean([embedder.embed_query(c) for c in plan.concepts], axis=0)
        qv = qv + float(plan.cfg["concept_weight"]) * cv
        qv = (qv / (np.linalg.norm(qv) or 1.0)).astype(np.float32)
    timings["embed"] = (time.perf_counter() - te) * 1000
    return qv


def start_query_embedding(embedder: Any, plan: Plan, timings: dict[str, float]) -> Any:
    """A future of the query's vector, or the vector itself for an embedder not thread-safe.

    The query embedding (ONNX Runtime) and the FTS5 query (SQLite) both release
    the GIL, so a thread-safe embedder embeds while the lexical list is built.
    """
    pending = _embed_in_background(embedder, lambda: embed_query(embedder, plan, timings))
    return pending if pending is not None else embed_query(embedder, plan, timings)


def query_vector(pending: Any, timings: dict[str, float]) -> np.ndarray:
    """The vector :func:`start_query_embedding` started; the wait goes to ``embed_wait``."""
    if isinstance(pending, np.ndarray):
        return pending
    tw = time.perf_counter()
    qv = pending.result()
    timings["embed_wait"] = (time.perf_counter() - tw) * 1000
    return qv


# --- stage 2: lexical ------------------------------------------------------------------


def lexical_stage(conn: Any, plan: Plan, memo: dict[str, Any], generation: int,
                  total: int, scoped: ScopedDocs | None = None) -> LexicalList:
    """FTS5 BM25 candidates, ``--entity`` phrases first, each weighed by its query-term coverage
    (only chunks in ``scoped``, when the search is scoped)."""
    cfg = plan.cfg
    out = LexicalList(query_terms(plan.query, cjk_bigrams=plan.tokenizer != "trigram"))
    if not out.terms or "lexical" not in plan.fuse_lists:
        return out
    idf = _idf(memo, conn, generation, out.terms, total, plan.tokenizer)
    kept = _selective_terms(memo, out.terms, total, cfg)
    match = _fts_terms(kept, plan.tokenizer)
    within, params = _in_scope(scoped)
    rows = conn.execute(
        "SELECT rowid, bm25(chunks_fts, ?, ?, ?) AS s FROM chunks_fts "
        f"WHERE chunks_fts MATCH ?{within} ORDER BY s LIMIT ?",
        (*BM25_WEIGHTS, match, *params, plan.n_cand),
    ).fetchall() if match else []
    ids = [int(r[0]) for r in rows]
    ent_count = _entity_matches(conn, plan.entities, plan.n_cand, scoped)
    if ent_count:
        order = {cid: i for i, cid in enumerate(ids)}
        pool = set(ids) | set(ent_count)
        ids = sorted(pool, key=lambda c: (-ent_count.get(c, 0), order.get(c, plan.n_cand)))
        ids = ids[:plan.n_cand]
    out.texts = _chunk_texts(conn, ids)
    out.coverage = _coverage(ids, out.texts, out.terms, idf)
    weights = _lexical_weights(out.coverage, ids, str(cfg.get("lexical_coverage", "hit")),
                               float(cfg.get("lexical_coverage_power", 1.0)))
    for cid, n in ent_count.items():
        if cid in weights:
            # The caller named this exact phrase: an explicit, strong signal.
            weights[cid] = 1.0 + n
    out.ids, out.weights, out.idf = ids, weights, idf
    if plan.explain:
        out.kept, out.entity_hits = kept, ent_count
        out.bm25 = {int(r[0]): float(r[1]) for r in rows}
    return out


def _in_scope(scoped: ScopedDocs | None) -> tuple[str, tuple[str, ...]]:
    """The lexical query's scope condition (`` AND rowid IN ...``) and its parameter, or nothing."""
    if scoped is None:
        return "", ()
    # "+rowid": the IN set is a filter on what MATCH found, not a list of rowids for FTS5 to
    # look up one by one with the MATCH re-run (2.3 s instead of 7 ms at 10k chunks).
    return f" AND {scope_clause('+rowid')}", (scoped.docs_json,)


def _entity_matches(conn: Any, entities: Sequence[str], limit: int,
                    scoped: ScopedDocs | None = None) -> dict[int, int]:
    """How many of the ``--entity`` phrases each chunk holds (exact phrases, best BM25 first)."""
    count: dict[int, int] = {}
    within, params = _in_scope(scoped)
    for ent in entities:
        phrase = fts_phrase(ent)
        if not phrase:
            continue
        for r in conn.execute(
            f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?{within} "
            "ORDER BY bm25(chunks_fts, ?, ?, ?) LIMIT ?",
            (phrase, *params, *BM25_WEIGHTS, limit),
        ):
            count[int(r[0])] = count.get(int(r[0]), 0) + 1
    return count


def _coverage(ids: list[int], texts: dict[int, tuple[str, str, str]], terms: list[str],
              idf: dict[str, float]) -> dict[int, float]:
    """Each candidate's share of the query's IDF mass: the IDF of the terms its text holds."""
    mass = sum(idf.values()) or 1.0
    patterns = {t: term_pattern(t) for t in terms}
    out: dict[int, float] = {}
    for cid in ids:
        title, heading, body = texts.get(cid, ("", "", ""))
        hay = f"{title}\n{heading}\n{body}"
        out[cid] = sum(idf[t] for t, p in patterns.items() if p.search(hay)) / mass
    return out


# --- stage 3: dense --------------------------------------------------------------------


def dense_stage(dense: DenseIndex, qv: np.ndarray, plan: Plan,
                scoped: ScopedDocs | None = None) -> DenseList:
    """Every chunk's cosine (kept whole: channels start from it), and the best candidates weighed.

    Scoped, a chunk out of scope reads -1 and is never a candidate.
    """
    if not len(dense.ids):
        return DenseList(np.zeros(0, dtype=np.float32), row_ids=dense.ids)
    # Integer kernel over the quantised matrix, the top 2 x candidates re-scored with
    # the float query.
    mask = scoped.contains(dense.ids) if scoped is not None else None
    cosines = dense.cosines(qv, rescore=2 * plan.n_cand, mask=mask)
    if mask is None:
        n = min(plan.n_cand, len(cosines))
        top = np.argpartition(-cosines, n - 1)[:n]
    else:
        pool = np.flatnonzero(mask)
        n = min(plan.n_cand, len(pool))
        if n == 0:  # nothing in scope has a vector yet (a first sync still embedding)
            return DenseList(cosines, [], {}, dense.ids)
        top = pool[np.argpartition(-cosines[pool], n - 1)[:n]]
    top = top[np.argsort(-cosines[top], kind="stable")]
    weights = _dense_weights(dense.ids[top], cosines[top], float(plan.cfg["dense_floor"]),
                             float(plan.cfg["dense_temperature"]))
    return DenseList(cosines, [int(x) for x in dense.ids[top]], weights, dense.ids)


def candidate_lists(lexical: LexicalList, dense: DenseList, plan: Plan) -> Lists:
    """The lists that fuse: lexical and dense unless ``channels`` left one out."""
    lists = Lists()
    if lexical.ids is not None:
        lists.coverage = lexical.coverage
        lists.ranked["lexical"] = lexical.ids
        lists.weight["lexical"] = lexical.weights
    if dense.ids is not None and "dense" in plan.fuse_lists:
        lists.ranked["dense"] = dense.ids
        lists.weight["dense"] = dense.weights
    return lists


# --- stage 4: fusion -------------------------------------------------------------------


def fusion_stage(conn: Any, lists: Lists, plan: Plan, trace: Trace | None) -> list[tuple[int, float]]:
    """Weighted reciprocal-rank fusion of the lists, then the document-evidence lift."""
    fused = _fuse(lists, plan.weights, plan.rrf_k, trace.terms if trace else None)
    weight = float(plan.cfg.get("doc_evidence", 0.0))
    if weight > 0:
        fused = _doc_evidence(conn, fused, lists, weight, trace.lift if trace else None)
    lists.hybrid_top = fused[0][1] if fused else None
    lists.channel = plan.channel
    if trace is not None:
        trace.fused = dict(fused)
    return fused


# --- stage 5: the graph channel --------------------------------------------------------


def graph_stage(ctx: ChannelContext, fused: list[tuple[int, float]], lists: Lists, plan: Plan,
                trace: Trace | None, scoped: ScopedDocs | None = None) -> list[tuple[int, float]]:
    """The channel's list, seeded from the fused top: a third RRF list, or the final ranking.

    An empty list (a sparse graph, nothing to add) leaves the two-list search
    exactly as it was: no "graph" list, so the calibration still applies. Scoped, the
    channel may walk through any document, but only the chunks in scope are listed.
    """
    graph_hits = plan.graph.search(ctx) or []
    if scoped is not None and graph_hits:
        keep = scoped.contains(np.array([int(c) for c, _ in graph_hits], dtype=np.int64))
        graph_hits = [h for h, ok in zip(graph_hits, keep.tolist(), strict=True) if ok]
    graph_hits = graph_hits[:plan.n_cand]
    if trace is not None:
        trace.context, trace.graph_hits = ctx, list(graph_hits)
    if not graph_hits:
        return fused
    lists.ranked["graph"] = [int(cid) for cid, _ in graph_hits]
    # Evidence weighting again: a chunk the channel scores far below its best
    # (a weak hub spoke next to an authored link) counts for less.
    top_score = max((float(sc) for _, sc in graph_hits), default=0.0)
    lists.weight["graph"] = {
        int(cid): (max(float(sc), 0.0) / top_score if top_score > 0 else 1.0)
        for cid, sc in graph_hits
    }
    fused = _fuse(lists, plan.weights, plan.rrf_k, trace.refused if trace else None)
    if plan.fusion == "final":
        fused = _final_ranking(graph_hits, fused, trace.final if trace else None)
    return fused


# --- stage 6: priors -------------------------------------------------------------------


def priors_stage(conn: Any, fused: list[tuple[int, float]], plan: Plan, src: SearchInputs,
                 generation: int, trace: Trace | None) -> list[tuple[int, float]]:
    """The cheap document priors (salience, link distance, index pages), when any is on."""
    if trace is not None:
        trace.after_graph = dict(fused)
    cfg = plan.cfg
    if not (float(cfg["salience_prior"]) or float(cfg["link_distance_rerank"])
            or float(cfg["index_prior"])):
        return fused
    return _apply_priors(src.memo, conn, generation, fused[:plan.n_cand], cfg, plan.rrf_k,
                         list(src.no_link_hub), trace.priors if trace else None)


# --- stage 7: hits ---------------------------------------------------------------------


def hits_stage(conn: Any, top: list[tuple[int, float]], lexical: LexicalList, lists: Lists,
               plan: Plan, kb_name: str) -> list[Hit]:
    """The top chunks as :class:`Hit` objects: text, snippet, highlights and every list's rank."""
    texts = lexical.texts
    missing = [cid for cid, _ in top if cid not in texts]
    texts.update(_chunk_texts(conn, missing))
    details = _chunk_details(conn, [cid for cid, _ in top])
    _check_hits(top, texts, details)  # no answer from damaged rows (pinakes/health.py)
    rank_of = {name: {cid: i + 1 for i, cid in enumerate(ids)} for name, ids in lists.ranked.items()}
    snippet_terms = lexical.terms + [t for e in plan.entities
                                     for t in query_terms(e, keep_stopwords=True)]
    hits = []
    for cid, score in top:
        d = details[cid]
        body = texts[cid][2]
        snippet, spans = make_snippet(body, snippet_terms)
        hits.append(Hit(
            doc_id=d["ulid"], title=d["title"], path=d["path"],
            heading_path=json.loads(d["heading_path"]), text=body, snippet=snippet,
            highlights=spans, score=round(score, 6),
            ranks={name: rank_of[name].get(cid) for name in lists.ranked},
            chunk_id=cid, ordinal=d["ordinal"], start_line=d["start_line"], kb=kb_name,
        ))
    return hits


# --- stage 8: confidence ---------------------------------------------------------------


def confidence_stage(src: SearchInputs, hits: list[Hit], lists: Lists, cosines: np.ndarray,
                     report: dict[str, Any] | None) -> float | None:
    """The calibrated probability that the hits hold the evidence (None: uncalibrated)."""
    if not hits:
        return None
    if report is None:
        return src.confidence(hits, lists, cosines)
    record: dict[str, Any] = {}
    value = src.confidence(hits, lists, cosines, record=record)
    report["confidence"] = {"value": value, "abstain_below": float(src.retrieval["abstain_below"]),
                            **record}
    return value


def explain_report(plan: Plan, lexical: LexicalList, dense: DenseList, lists: Lists,
                   trace: Trace | None, hits: list[Hit], memo: dict[str, Any]
                   ) -> dict[str, Any] | None:
    """With ``explain``: the stages' records, per query and on each hit (:mod:`pinakes.explain`)."""
    if trace is None:
        return None
    from .explain import assemble

    return assemble(plan, lexical, dense, lists, trace, hits, memo.get("_df", {}))


# --- helpers of the stages -------------------------------------------------------------


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


def _selective_terms(memo: dict[str, Any], terms: list[str], total: int,
                     cfg: Mapping[str, Any]) -> list[str]:
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
    dfs = memo.get("_df", {})
    # Both a share and an absolute floor: scoring a few hundred rows is cheap, so
    # a small KB keeps every term (and its exact BM25 ranking).
    limit = max(share * total, float(cfg.get("lexical_common_min_df", LEXICAL_COMMON_MIN_DF)))
    df = {t: dfs.get(t, 0) for t in terms}
    keep = [t for t in terms if df[t] <= limit]
    if len(keep) < len(terms) and not any(df[t] > 0 for t in keep):
        # Every term that occurs is common: the rarest of them still matches.
        keep.append(min((t for t in terms if t not in keep), key=lambda t: df[t]))
    return keep


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


def _link_stats(memo: dict[str, Any], conn: Any, generation: int
                ) -> tuple[dict[int, float], dict[int, set[int]]]:
    """Per-document in-degree salience and the undirected authored-link adjacency.

    Both are cached per store generation: they change only when a sync does.
    """
    cache = memo.setdefault("_links", {})
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


def _catalogued(memo: dict[str, Any], conn: Any, generation: int, pages: list[str],
                no_hub: list[str]) -> set[int]:
    """Documents that an index page (a path glob in ``pages``) links to, cached per generation.

    Left out: the index pages themselves (a catalog is a way in, rarely the answer)
    and ``[kb] no_link_hub`` pages such as a change log, which a catalog lists for
    navigation and which are no more likely to answer a question for it.
    """
    cache = memo.setdefault("_index", {})
    no_hub = [str(p) for p in no_hub]
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
    found = {int(r[0]) for r in sqlrows(
        conn, "SELECT DISTINCT d.doc FROM links l JOIN documents d ON d.ulid = l.dst_ulid "
        "WHERE l.src_doc IN ({}) AND l.dst_ulid IS NOT NULL AND l.dst_kb = ''", index_docs)}
    found.difference_update(index_docs, skip)
    cache.update(key=key, docs=found)
    return found


def _apply_priors(memo: dict[str, Any], conn: Any, generation: int,
                  fused: list[tuple[int, float]], cfg: Mapping[str, Any], rrf_k: float,
                  no_hub: list[str], record: dict[int, dict[str, float]] | None = None,
                  ) -> list[tuple[int, float]]:
    """The cheap priors, off by default, for the eval matrix.

    * in-degree salience: a document many others link to is a little more likely
      to be what is asked for; its chunks inherit the prior;
    * link-distance rerank: documents close (over authored links) to the top
      hit's document are lifted, 1/(1 + distance), up to two hops;
    * index prior: documents a curated catalog (``index_pages``, e.g. a ClaudeKB's
      ``docs/index.md``) links to were picked by a person as entry points, so
      they win near-ties against pages nobody catalogued (a log, a stray note).

    Each is scaled so that a weight of 1.0 equals one list's rank-1 RRF term.
    ``record`` (``--explain``) receives each chunk's three additions.
    """
    if not fused:
        return fused
    salience, adjacent = _link_stats(memo, conn, generation)
    marks = sqlmarks(fused)
    doc_of = {int(r[0]): int(r[1]) for r in conn.execute(
        f"SELECT id, doc FROM chunks WHERE id IN ({marks})", [cid for cid, _ in fused])}
    unit = 1.0 / (rrf_k + 1.0)
    w_sal = float(cfg["salience_prior"])
    w_dist = float(cfg["link_distance_rerank"])
    w_idx = float(cfg["index_prior"])
    catalogued = (_catalogued(memo, conn, generation, list(cfg["index_pages"]), no_hub)
                  if w_idx else set())
    distance = _link_distance(adjacent, doc_of.get(fused[0][0])) if w_dist else {}
    out = []
    for cid, score in fused:
        doc = doc_of.get(cid)
        add = {"salience": w_sal * unit * salience.get(doc, 0.0),
               "distance": w_dist * unit / (1 + distance[doc]) if doc in distance else 0.0,
               "index": w_idx * unit if doc in catalogued else 0.0}
        score += add["salience"]
        score += add["distance"]
        score += add["index"]
        out.append((cid, score))
        if record is not None:
            record[cid] = add
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))


def _link_distance(adjacent: dict[int, set[int]], start: int | None) -> dict[int, int]:
    """Documents within two authored-link hops of ``start``, by distance (``start``: 0)."""
    distance: dict[int, int] = {}
    if start is None:
        return distance
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
    return distance


def _final_ranking(graph_hits: Sequence[tuple[int, float]], fused: list[tuple[int, float]],
                   record: dict[str, float] | None = None) -> list[tuple[int, float]]:
    """``graph_fusion = "final"``: the channel's own list becomes the ranking.

    A channel seeded from the hybrid (PPR) can rank better alone than as one
    more RRF list: equal-weight RRF cost a prototype ~18 points of multi-hop
    R@5 against PPR's own ranking (a reference prototype measured it). Scores are put
    on the fused scale (the hybrid's top score times each hit's share of the
    channel's top score) because priors and the confidence calibration read
    fused scores; fused hits the channel left out follow in fused order, so a
    short channel list never shortens the result. Per-list ranks stay reported.
    ``record`` (``--explain``) receives the two tops and the floor.
    """
    top_fused = fused[0][1] if fused else 1.0
    top_graph = max(float(sc) for _, sc in graph_hits)
    if top_graph <= 0:
        return fused
    out = [(int(cid), top_fused * max(float(sc), 0.0) / top_graph) for cid, sc in graph_hits]
    seen = {cid for cid, _ in out}
    floor = out[-1][1]
    if record is not None:
        record.update(top_fused=top_fused, top_graph=top_graph, floor=floor)
    out += [(cid, floor * sc / top_fused if top_fused > 0 else 0.0)
            for cid, sc in fused if cid not in seen]
    return out


def _doc_evidence(conn: Any, fused: list[tuple[int, float]], lists: Lists, weight: float,
                  record: dict[int, float] | None = None) -> list[tuple[int, float]]:
    """Lift each document's best chunk by ``weight`` times its second-best chunk's score.

    A document two of whose sections match the query is better evidence than
    one with a single matching section next to unrelated ones: the README's
    own question about fusing rankings found one stray paragraph of the
    PageRank page above the RRF page whose every section answers it. The
    second section counts only when *every* fused list found it (lexically and
    densely): with one list, any long document's stray matches would add up,
    which cost BM25 alone 15 points of R@2 on 2Wiki. Only the best chunk moves;
    the others keep their scores (``[retrieval] doc_evidence``; 0 switches it off).
    ``record`` (``--explain``) receives each lifted chunk's lift.
    """
    present = [set(ids) for ids in lists.ranked.values() if ids]
    if not fused or len(present) < 2:
        return fused
    doc_of = {int(r[0]): int(r[1]) for r in sqlrows(
        conn, "SELECT id, doc FROM chunks WHERE id IN ({})", (cid for cid, _ in fused))}
    best: dict[int, int] = {}
    second: dict[int, float] = {}
    for cid, score in fused:  # best first
        doc = doc_of.get(cid, -cid)
        if doc not in best:
            best[doc] = cid
        elif doc not in second and all(cid in ids for ids in present):
            second[doc] = score
    lift = {best[d]: weight * sc for d, sc in second.items()}
    if record is not None:
        record.update(lift)
    out = [(cid, score + lift.get(cid, 0.0)) for cid, score in fused]
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))


def _fuse(lists: Lists, channel_weights: dict[str, float], rrf_k: float,
          record: dict[int, dict[str, float]] | None = None) -> list[tuple[int, float]]:
    """Weighted RRF: each list adds ``list weight x hit weight / (rrf_k + rank)`` per hit.

    ``record`` (``--explain``) receives every chunk's term per list: the very
    numbers summed here.
    """
    scores: dict[int, float] = {}
    for name, ids in lists.ranked.items():
        cw = channel_weights.get(name, 1.0)
        ws = lists.weight.get(name, {})
        for rank, cid in enumerate(ids, 1):
            term = cw * ws.get(cid, 1.0) / (rrf_k + rank)
            scores[cid] = scores.get(cid, 0.0) + term
            if record is not None:
                record.setdefault(cid, {})[name] = term
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _chunk_texts(conn: Any, ids: list[int]) -> dict[int, tuple[str, str, str]]:
    return {int(r[0]): (r[1], " > ".join(json.loads(r[2])), r[3]) for r in sqlrows(
        conn, "SELECT c.id, d.title, c.heading_path, c.text FROM chunks c "
        "JOIN documents d ON d.doc = c.doc WHERE c.id IN ({})", ids)}


def _check_hits(top_hits: list[tuple[int, float]], texts: dict[int, tuple[str, str, str]],
                details: dict[int, dict[str, Any]]) -> None:
    """No answer from damaged rows: each hit's title, heading and text must match its content hash.

    The hash is what the chunk was embedded (and its vector cached) under, so a
    flipped byte in the text SQLite keeps for us is caught before it is shown;
    one SHA-1 per hit.
    """
    from .health import chunk_hash, row_checksum
    from .text import embed_text

    for cid, _ in top_hits:
        d = details.get(cid)
        if d is None or cid not in texts:
            continue  # gone in a race with a sync: reported as it always was
        title, _, body = texts[cid]
        why = ""
        if chunk_hash(embed_text(title, json.loads(d["heading_path"]), body)) != d["hash"]:
            why = "text does not match its content hash"
        elif row_checksum(d["ulid"], d["path"], d["ordinal"], d["start_line"], d["end_line"],
                          d["hash"]) != d["checksum"]:
            why = "document, place or hash does not match its checksum"
        if why:
            from .store import damage_error

            raise damage_error(f"chunk {cid}'s {why}")


def _chunk_details(conn: Any, ids: list[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    marks = sqlmarks(ids)
    return {
        int(r["id"]): dict(r)
        for r in conn.execute(
            f"SELECT c.id, c.ordinal, c.heading_path, c.start_line, c.end_line, c.hash, c.checksum,"
            f" d.ulid, d.title, d.path "
            f"FROM chunks c JOIN documents d ON d.doc = c.doc WHERE c.id IN ({marks})",
            ids,
        )
    }


#: An outliner's bookkeeping line under a block: Logseq's ``id:: 6f1c…`` (what a block
#: reference points at) and ``collapsed:: true``. It says nothing a reader wants to see.
_BLOCK_STATE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?(?:id|collapsed)::[ \t]*\S*[ \t]*$", re.MULTILINE)

#: Obsidian's block id, at the end of a block's line or on a line of its own ("... sink under
#: the window ^a1b2"): what a ``[[note#^a1b2]]`` link points at, no words of the note.
_BLOCK_ID = re.compile(r"(?:^|[ \t]+)\^[A-Za-z0-9-]+[ \t]*$", re.MULTILINE)


def make_snippet(text: str, terms: Sequence[str], width: int = 240) -> tuple[str, list[tuple[int, int]]]:
    """A window of ``text`` around the first query term, with the term spans to highlight.

    An outliner's bookkeeping lines (:data:`_BLOCK_STATE`) and Obsidian's block ids
    (:data:`_BLOCK_ID`) are left out of the window; the hit's ``text`` keeps them, as the
    file does.
    """
    if "::" in text:
        text = _BLOCK_STATE.sub("", text)
    if "^" in text:
        text = _BLOCK_ID.sub("", text)
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
