"""Bridges: lift the documents the hybrid's best documents link to, when the link fits the question.

The walk (the rest of this plugin) starts from the names a question *writes*:
"Who directed Polish Easter?" seeds the page titled "Polish Easter". Notes are
asked about differently. "Which theme does the editor I write LaTeX in use?"
names no title; the hybrid finds the LaTeX note (it matches the description)
and, lower down, perhaps the editor's note (it matches "theme"). The evidence
that joins them is the link between them, and a named-seed walk never sees it.
Measured on the dev sets, 14 of the 15 second hops the hybrid left below rank 5
on a personal wiki were linked to one of its top 3 documents, and all 4 on a
documentation KB (docs/benchmarks.md, "Bridges").

So, after the hybrid (and the walk, when it ran), each of the ``roots`` best
documents A passes a *lift* to every document B it is joined to, by a link in
either direction (a sidecar link or a link in the text, whatever its dialect)
or by naming B's title (a title mention, from the mentions plugin's tables):

    lift(B) = weight × Σ_A share(A) × kind × fit(A, B) / (deg A × deg B) ** (power / 2) × gate(B)

* ``share(A)``: A's score over the top score: a weak root passes little;
* ``fit(A, B)``: how much of what the question asks *beyond A* the link's
  context holds (the sentence around the link, its label and the heading
  above it; for a title mention, the words next to the name): the IDF share
  of the question's stems, less the stems of A's own title, found there (IDF
  over chunks, the lexical stage's; ``ppr_bridge_context_floor`` is the share
  a link with no matching context still counts). This is the
  relation the question asks about, read off the link: "which editor do I write
  LaTeX in" follows "I write LaTeX in [Sublime Text](...)" and not the LaTeX
  note's list of bookmarks;
* ``deg``: distinct documents each end is joined to. An index note linking
  everything passes a sliver to each of its targets, and a changelog or a long
  note that names every title receives a sliver from each root: out-degree and
  in-degree both damp, so neither can collect what the question does not ask;
* ``gate(B)``: ``exp(-(best cosine - B's best cosine) / temperature)``: B must
  itself look like part of the answer (query-gated spreading). A linked page
  about something else stays where the hybrid put it. One link stands in for
  that resemblance: the *best* document's link to B (a link its author wrote,
  not a title it happens to name), as far as it fits (the lift's own fit, which
  reads every word joining the two, a mention's too). The
  best document is the one the question describes, so where its link's context
  holds what the question asks beyond it, that link is the relation asked
  about, and B answers what the question asks, not what it describes ("the app
  that auto-commits my lists: what else did I use it for?" describes the file
  system note, whose sentence "... committed with [Hazel]" holds "commits" and
  "lists"; the Hazel note resembles none of it). Either is evidence that B
  belongs, so the gate is their noisy-or:
  ``1 - (1 - gate) × (1 - trust × fit(best, B))``. A lower root's fitting link
  does not vouch: below the best document, a context sharing the question's
  words is as often its subject said again ("my personal site") as the
  relation; measured, the vouching of every root lifted a vault's index note
  over a simple lookup's answer. Nor does a title mention: "money" near the
  title of a book on money lifted the book into the answer's top three, and
  the confidence's reader, reading the book's sentence, abstained
  (docs/benchmarks.md, "The best note's link").

The lift is added to B's best chunk on the base ranking's own scale, and two
rules keep the ranking's head: a root lifts only documents ranked below it,
and no lift takes B above ``cap`` (0.9) times the best root that lifted it (the
second hop comes after the first, never before it, and below documents nearly
as good as the first); two lifts that both reach that ceiling keep the order
of their evidence. A question whose roots link nowhere
that fits is left exactly as the hybrid ranked it.

Everything per graph generation (the document adjacency, the contexts and
their IDF) is built once and cached on the graph index, like the operator.
"""

from __future__ import annotations

import json
import re
import sqlite3
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinakes.graph import GraphIndex
from pinakes.sqlin import marks

#: Weight of each way two documents are joined (a link's own weight is 2.0 in the graph).
LINK_KIND = "link"
MENTION_KIND = "mention"



@dataclass(eq=False)
class DocGraph:
    """The documents of one graph generation and how they are joined, as arrays.

    Rows are documents (in graph node order). ``nbr`` lists each row's joined
    documents (CSR by ``ptr``) with the strength of the link and of the title
    mention joining them (0 when absent). Built from the graph index's own
    arrays and one read of the title vocabulary: cheap enough to build per
    generation; the contexts of the links are read per query, for the few
    documents a query's roots are joined to (:func:`pair_contexts`).
    """

    doc_nodes: np.ndarray  # graph node index per row
    doc_key: np.ndarray  # documents.doc per row
    chunk_doc: np.ndarray  # per graph node: the row of its document (-1: not a chunk)
    chunk_ptr: np.ndarray  # row -> its chunk nodes (CSR)
    chunk_nodes: np.ndarray
    ptr: np.ndarray  # row -> neighbour entries (CSR)
    nbr: np.ndarray  # neighbour row per entry
    link_w: np.ndarray  # link strength per entry (0..1)
    mention_w: np.ndarray  # title-mention strength per entry (0..1)
    degree: np.ndarray  # distinct neighbours per row (at least 1)
    row_of_key: dict[int, int] = field(default_factory=dict)  # documents.doc -> row
    #: documents.doc -> its title and alias keys (the mentions plugin's vocabulary)
    names_of: dict[int, list[str]] = field(default_factory=dict)
    titles: dict[int, str] = field(default_factory=dict)  # documents.doc -> title

    @property
    def size(self) -> int:
        return len(self.doc_nodes)


def _doc_rows(graph: GraphIndex) -> tuple[np.ndarray, np.ndarray]:
    """Graph node of each document row, and per graph node its row (-1: not a document)."""
    dcode = graph.code("doc")
    doc_nodes = (np.nonzero(graph.kind_code == dcode)[0].astype(np.int64) if dcode >= 0
                 else np.zeros(0, np.int64))
    row_of = np.full(graph.n, -1, dtype=np.int64)
    row_of[doc_nodes] = np.arange(len(doc_nodes))
    return doc_nodes, row_of


def _chunk_docs(graph: GraphIndex, row_of: np.ndarray, src: np.ndarray,
                nbr: np.ndarray) -> np.ndarray:
    """Per graph node, the row of the document a chunk belongs to (its membership edge)."""
    out = np.full(graph.n, -1, dtype=np.int64)
    memb, ccode = graph.ecode("membership"), graph.code("chunk")
    if memb < 0 or ccode < 0:
        return out
    m = (graph.edge_kind == memb) & (graph.kind_code[src] == ccode) & (row_of[nbr] >= 0)
    out[src[m]] = row_of[nbr[m]]
    return out


def _link_pairs(graph: GraphIndex, row_of: np.ndarray, src: np.ndarray,
                nbr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, strength)`` arrays: every authored edge between two documents (both halves)."""
    code = graph.ecode("authored")
    z = np.zeros(0, np.int64)
    if code < 0:
        return z, z, np.zeros(0)
    m = (graph.edge_kind == code) & (row_of[src] >= 0) & (row_of[nbr] >= 0)
    a, b = row_of[src[m]], row_of[nbr[m]]
    w = np.minimum(graph.weight[m].astype(np.float64) / 2.0, 1.0)  # an authored edge weighs 2.0
    keep = a != b
    return a[keep], b[keep], w[keep]


def _title_names(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """``(key, doc)``: every title and alias of the mentions plugin's vocabulary ([] without it)."""
    try:
        return [(k, int(d)) for k, d in conn.execute(
            "SELECT key, doc FROM entity_names WHERE source IN ('title', 'alias')")]
    except sqlite3.OperationalError:
        return []  # no mentions plugin: documents are joined by links only


def _entity_owners(rows: list[tuple[str, int]], graph: GraphIndex, row_of: np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(entity node, owner row)`` pairs: the documents whose title or alias each entity is."""
    z = np.zeros(0, np.int64)
    ecode = graph.code("entity")
    if ecode < 0 or not rows:
        return z, z
    dcode = graph.code("doc")
    doc_row = {int(graph.keys[i]): int(row_of[i]) for i in np.nonzero(graph.kind_code == dcode)[0]}
    node_of = {graph.keys[i]: int(i) for i in np.nonzero(graph.kind_code == ecode)[0]}
    pairs = {(node_of[k], doc_row[int(d)]) for k, d in rows
             if k in node_of and int(d) in doc_row}
    if not pairs:
        return z, z
    arr = np.array(sorted(pairs), dtype=np.int64)
    return arr[:, 0], arr[:, 1]


def _mention_pairs(graph: GraphIndex, owners: tuple[np.ndarray, np.ndarray], chunk_doc: np.ndarray,
                   src: np.ndarray, nbr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, strength)``: a chunk of A names B's title, both directions.

    The strength is the mention edge's own weight (its count over the names in
    the chunk), so a chunk listing forty titles joins each of them weakly.
    """
    ent, own = owners
    z = np.zeros(0, np.int64)
    if not len(ent):
        return z, z, np.zeros(0)
    is_ent = np.zeros(graph.n, dtype=bool)
    is_ent[ent] = True
    m = is_ent[src] & (chunk_doc[nbr] >= 0)  # entity -> chunk half-edges
    e, c, w = src[m], nbr[m], graph.weight[m].astype(np.float64)
    # Join each half-edge with every owner of its entity (sorted by entity).
    lo = np.searchsorted(ent, e, "left")
    hi = np.searchsorted(ent, e, "right")
    count = hi - lo
    idx = np.repeat(np.arange(len(e)), count)
    pos = lo[idx] + (np.arange(len(idx)) - np.repeat(np.cumsum(count) - count, count))
    a, b, ww = chunk_doc[c[idx]], own[pos], w[idx]
    keep = a != b
    a, b, ww = a[keep], b[keep], ww[keep]
    return np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([ww, ww])


def build_doc_graph(conn: sqlite3.Connection, graph: GraphIndex) -> DocGraph:
    """The :class:`DocGraph` of ``graph``: its arrays plus the title vocabulary's owners."""
    doc_nodes, row_of = _doc_rows(graph)
    n_rows = len(doc_nodes)
    src = np.repeat(np.arange(graph.n, dtype=np.int64), np.diff(graph.indptr))
    nbr_all = graph.nbr.astype(np.int64)
    chunk_doc = _chunk_docs(graph, row_of, src, nbr_all)
    order = np.argsort(chunk_doc, kind="stable")
    chunk_nodes = order[chunk_doc[order] >= 0].astype(np.int64)
    chunk_ptr = np.zeros(n_rows + 1, dtype=np.int64)
    if n_rows:
        np.cumsum(np.bincount(chunk_doc[chunk_nodes], minlength=n_rows), out=chunk_ptr[1:])
    la, lb, lw = _link_pairs(graph, row_of, src, nbr_all)
    names = _title_names(conn)
    ma, mb, mw = _mention_pairs(graph, _entity_owners(names, graph, row_of), chunk_doc, src, nbr_all)
    names_of: dict[int, list[str]] = {}
    for key, doc in names:
        names_of.setdefault(doc, []).append(key)
    a = np.concatenate([la, ma])
    b = np.concatenate([lb, mb])
    code = a * max(n_rows, 1) + b
    uniq, inv = np.unique(code, return_inverse=True)
    link_w = np.zeros(len(uniq))
    mention_w = np.zeros(len(uniq))
    np.maximum.at(link_w, inv[: len(la)], lw)
    np.maximum.at(mention_w, inv[len(la):], mw)
    rows = uniq // max(n_rows, 1)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    if n_rows:
        np.cumsum(np.bincount(rows, minlength=n_rows), out=ptr[1:])
    doc_key = np.array([int(graph.keys[i]) for i in doc_nodes.tolist()], dtype=np.int64)
    return DocGraph(
        doc_nodes=doc_nodes, doc_key=doc_key, chunk_doc=chunk_doc, chunk_ptr=chunk_ptr,
        chunk_nodes=chunk_nodes, ptr=ptr, nbr=(uniq % max(n_rows, 1)).astype(np.int64),
        link_w=link_w, mention_w=mention_w, degree=np.maximum(np.diff(ptr), 1).astype(np.float64),
        row_of_key={int(k): i for i, k in enumerate(doc_key.tolist())}, names_of=names_of,
        titles=_doc_titles(conn),
    )


def _doc_titles(conn: sqlite3.Connection) -> dict[int, str]:
    """Every document's title (what the fit leaves out of a root's question)."""
    try:
        return {int(d): t for d, t in conn.execute("SELECT doc, title FROM documents")}
    except sqlite3.OperationalError:
        return {}


_CACHE: weakref.WeakKeyDictionary[GraphIndex, DocGraph] = weakref.WeakKeyDictionary()


def doc_graph(conn: sqlite3.Connection, graph: GraphIndex) -> DocGraph:
    """The cached :class:`DocGraph` of ``graph`` (one per graph generation)."""
    found = _CACHE.get(graph)
    if found is None:
        found = _CACHE[graph] = build_doc_graph(conn, graph)
    return found


def pair_contexts(conn: sqlite3.Connection, dg: DocGraph, pairs: Sequence[tuple[int, int]],
                  ) -> dict[tuple[int, int], str]:
    """The words that join each ``(a, b)`` (rows): what their links and mentions say, both ways.

    For a link, what sync stored with it (``pinakes.links``): its text (a
    wikilink's alias or target as written, a Markdown link's text), the content words of the
    sentence, list item or table cell around it, and the heading path of the
    section it sits in; a sidecar link adds its ``rel`` and ``note``. For a
    title mention, the words next to the name (the mentions plugin's
    ``entity_context``). Read per query for the few pairs a query's roots make:
    from the roots to their neighbours and back, never between two neighbours
    (the rows between neighbours are most of what a wider read would fetch).
    """
    out: dict[tuple[int, int], list[str]] = {}
    if not pairs:
        return {}
    want = {(int(dg.doc_key[a]), int(dg.doc_key[b])): (a, b) for a, b in pairs}
    want.update({(kb_, ka): pair for (ka, kb_), pair in list(want.items())})
    linked, named = _pair_kinds(dg, pairs)
    rows: list[Any] = []
    if linked:
        roots, ends = _sides(dg, linked)
        try:
            for src_docs, dst_docs in ((roots, ends), (ends, roots)):
                rows += conn.execute(
                    "SELECT l.src_doc, d.doc, l.origin, l.rel, l.label, l.context, c.heading_path, "
                    "l.form, l.raw "
                    "FROM links l JOIN documents d ON d.ulid = l.dst_ulid AND l.dst_kb = '' "
                    "LEFT JOIN chunks c ON c.doc = l.src_doc AND c.ordinal = l.chunk "
                    f"WHERE l.src_doc IN ({marks(src_docs)}) AND d.doc IN ({marks(dst_docs)})",
                    [*src_docs, *dst_docs]).fetchall()
        except sqlite3.OperationalError:
            rows = []  # a store without the link context columns: mentions only
    for src, dst, origin, rel, label, context, heading, form, raw in rows:
        pair = want.get((int(src), int(dst)))
        if pair is None:
            continue
        # A wikilink without an alias shows its target as written: that is its text.
        shown = label or (raw.split("#")[0] if form not in ("markdown", "reference", "autolink", "sidecar") else "")
        words = [shown, context or "", " ".join(json.loads(heading)) if heading else ""]
        if origin != "reverse-scan":
            words.append(str(rel).replace("_", " "))
        out.setdefault(pair, []).append(" ".join(w for w in words if w))
    if named:
        for doc, owner, words in _mention_contexts(conn, dg, *_sides(dg, named)):
            pair = want.get((int(doc), int(owner)))
            if pair is not None and doc != owner:
                out.setdefault(pair, []).append(words)
    return {k: " ".join(v) for k, v in out.items()}


def _pair_kinds(dg: DocGraph, pairs: Sequence[tuple[int, int]],
                ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The pairs joined by a link, and those joined by a title mention (a pair may be both)."""
    linked: list[tuple[int, int]] = []
    named: list[tuple[int, int]] = []
    for a, b in pairs:
        lo, hi = int(dg.ptr[a]), int(dg.ptr[a + 1])
        e = lo + int(np.searchsorted(dg.nbr[lo:hi], b))  # a row's neighbours are sorted
        found = e < hi and int(dg.nbr[e]) == b
        if not found or dg.link_w[e] > 0:
            linked.append((a, b))
        if not found or dg.mention_w[e] > 0:
            named.append((a, b))
    return linked, named


def _sides(dg: DocGraph, pairs: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """The documents (``documents.doc``) on each side of some pairs."""
    return (sorted({int(dg.doc_key[a]) for a, _ in pairs}),
            sorted({int(dg.doc_key[b]) for _, b in pairs}))


def _mention_contexts(conn: sqlite3.Connection, dg: DocGraph, roots: list[int], ends: list[int],
                      ) -> list[tuple[int, int, str]]:
    """``(doc, owner, words)``: the words next to each title of one side named in the other.

    The names come from the document graph (read once per generation), then the
    mentions of exactly those names in the other side's documents (the ``(doc,
    key)`` index).
    """
    owners: dict[str, set[int]] = {}
    for doc in roots + ends:
        for key in dg.names_of.get(doc, ()):
            owners.setdefault(key, set()).add(doc)
    out: list[tuple[int, int, str]] = []
    for docs, named in ((roots, set(ends)), (ends, set(roots))):
        side = {k: sorted(ds & named) for k, ds in owners.items() if ds & named}
        if not side:
            continue
        keys = sorted(side)
        for doc, key, words in conn.execute(
                f"SELECT doc, key, words FROM entity_context WHERE doc IN ({marks(docs)}) "
                f"AND key IN ({marks(keys)})", [*docs, *keys]):
            out += [(doc, owner, words) for owner in side[key]]
    return out


@dataclass(frozen=True)
class BridgeSettings:
    """``ppr_bridge_*`` in ``[retrieval]`` (defaults in pinakes/config.py)."""

    weight: float = 12.0
    roots: int = 3
    temperature: float = 0.12
    degree_power: float = 0.5
    context_floor: float = 0.0
    cap: float = 0.9
    link_trust: float = 1.0  # how far the best document's fitting link stands in for the gate


@dataclass
class Lift:
    """Why one document was lifted: what ``--explain`` shows."""

    doc_row: int
    chunk_id: int
    via: list[dict[str, Any]]  # per root: {root chunk, kind, fit, stems, affinity}
    gate: float  # the gate applied: resemblance or the best document's link, as a noisy-or
    lift: float
    before: float
    after: float
    resemblance: float = 0.0  # the gate on the lifted chunk's own cosine alone
    vouched: float = 0.0  # the best document's link fit to it (0: none)


def query_weights(terms: dict[str, float]) -> dict[str, float]:
    """Query stems with the IDF of the term each comes from (the highest, when two share one)."""
    out: dict[str, float] = {}
    for term, idf in terms.items():
        for stem in context_stems(term):
            out[stem] = max(out.get(stem, 0.0), float(idf))
    return out


_WORDS = re.compile(r"[^\W_]+")
_STEMS: dict[str, tuple[str, ...]] = {}  # word -> its stems: contexts share a small vocabulary


def context_stems(text: str) -> set[str]:
    """The content stems of ``text``, as :func:`~pinakes_ppr.label_stems` gives them, memoised by word."""
    from . import label_stems

    out: set[str] = set()
    for word in _WORDS.findall(text.lower()):
        got = _STEMS.get(word)
        if got is None:
            if len(_STEMS) > 200_000:
                _STEMS.clear()
            got = _STEMS[word] = tuple(label_stems(word))
        out.update(got)
    return out


def _titles(dg: DocGraph, rows: Sequence[int]) -> dict[int, str]:
    """Titles of some document rows."""
    found = ((r, dg.titles.get(int(dg.doc_key[r]))) for r in rows)
    return {r: t for r, t in found if t is not None}


def _without(weights: dict[str, float], title: str) -> dict[str, float]:
    """``weights`` without the stems of ``title``."""
    named = context_stems(title)
    return {s: w for s, w in weights.items() if s not in named}


def context_fit(context: str, weights: dict[str, float]) -> tuple[float, list[str]]:
    """The IDF share of the question's stems that ``context`` holds, and which they are."""
    mass = sum(weights.values())
    if mass <= 0 or not context:
        return 0.0, []
    # A stem is a prefix of a lower-cased word (pinakes_ppr._stem): a context holding none of
    # the stems as a substring holds none as a word, and needs no stemming (most contexts).
    low = context.lower().replace("\u2019", "'")
    if not any(s in low for s in weights):
        return 0.0, []
    held = context_stems(context)
    found = sorted(s for s in weights if s in held)
    return sum(weights[s] for s in found) / mass, found


@dataclass
class ChunkCosines:
    """The query's cosine of graph chunk nodes, read only for the nodes a lift asks about.

    ``dense_ids`` (sorted, the dense index's chunk ids) and ``cosines`` (one per
    dense row) are the search's own; a full per-node array would cost a scatter
    over every chunk of the KB on every query, and a lift reads a few dozen.
    ``top`` is the best cosine of any chunk (0 when no chunk has a vector).
    """

    graph: GraphIndex
    dense_ids: np.ndarray
    cosines: np.ndarray

    @property
    def top(self) -> float:
        return float(self.cosines.max()) if len(self.cosines) else 0.0

    def of_nodes(self, nodes: np.ndarray) -> np.ndarray:
        """Cosine per chunk node (0 for a chunk without a vector)."""
        ids = self.graph.chunk_of[nodes].astype(np.int64)
        if not len(self.dense_ids) or not len(ids):
            return np.zeros(len(ids))
        pos = np.clip(np.searchsorted(self.dense_ids, ids), 0, len(self.dense_ids) - 1)
        return np.where(self.dense_ids[pos] == ids, self.cosines[pos].astype(np.float64), 0.0)


def bridge_lift(dg: DocGraph, graph: GraphIndex, conn: sqlite3.Connection,
                base: Sequence[tuple[int, float]], cosines: ChunkCosines,
                terms: dict[str, float], settings: BridgeSettings,
                ) -> tuple[list[tuple[int, float]], list[Lift]]:
    """``base`` (chunk id, score; best first) with bridged documents lifted; and why.

    ``cosines``: the query's cosines, read for the few chunk nodes a lift needs;
    ``terms``: the query's terms and their IDF (the lexical stage's).
    Returns ``base`` itself (and no lifts) when nothing is lifted.
    """
    if settings.weight <= 0 or not base or not dg.size:
        return list(base), []
    where = graph.nodes_of_chunks([int(c) for c, _ in base])
    top = float(base[0][1])
    if top <= 0:
        return list(base), []
    best: dict[int, tuple[int, float]] = {}  # doc row -> (best chunk, score), in rank order
    for cid, sc in base:
        node = where.get(int(cid))
        row = int(dg.chunk_doc[node]) if node is not None else -1
        if row >= 0 and row not in best:
            best[row] = (int(cid), float(sc))
    roots = list(best.items())[: max(settings.roots, 0)]
    # Candidate pairs first (cheap, from arrays), then their contexts (one read for all).
    cand: list[tuple[int, int, int]] = []  # (root row, neighbour row, entry)
    for a, (_chunk, a_score) in roots:
        lo, hi = int(dg.ptr[a]), int(dg.ptr[a + 1])
        strong = (np.maximum(dg.link_w[lo:hi], dg.mention_w[lo:hi]) > 0).tolist()
        for e, b, ok in zip(range(lo, hi), dg.nbr[lo:hi].tolist(), strong, strict=True):
            if not ok or (b in best and best[b][1] >= a_score):
                continue  # no join, or B already ranks above A: A has nothing to add
            cand.append((a, b, e))
    if not cand:
        return list(base), []
    weights = query_weights(terms)
    contexts = pair_contexts(conn, dg, [(a, b) for a, b, _ in cand]) if weights else {}
    # What the question asks *beyond* the root: the root's own title says which note the
    # question describes, not which of its links it follows (as the walk's relation
    # weights leave the seeds' names out, relations.py).
    asked = {a: _without(weights, title) for a, title in _titles(dg, [a for a, _ in roots]).items()}
    gained: dict[int, float] = {}
    vouched: dict[int, float] = {}  # doc row -> the fit of the best document's link to it
    cap: dict[int, float] = {}
    via: dict[int, list[dict[str, Any]]] = {}
    share_of = {a: sc / top for a, (_c, sc) in roots}
    chunk_of = dict(roots)
    for a, b, e in cand:
        raw_fit, found = context_fit(contexts.get((a, b), ""), asked.get(a, weights))
        fit = settings.context_floor + (1.0 - settings.context_floor) * min(raw_fit, 1.0)
        if fit <= 0:
            continue
        kind_w = max(float(dg.link_w[e]), float(dg.mention_w[e]))
        norm = (dg.degree[a] * dg.degree[b]) ** (settings.degree_power / 2)
        affinity = kind_w * fit / norm
        gained[b] = gained.get(b, 0.0) + share_of[a] * affinity
        if a == roots[0][0] and dg.link_w[e] > 0:
            vouched[b] = max(vouched.get(b, 0.0), min(raw_fit, 1.0))
        cap[b] = max(cap.get(b, 0.0), chunk_of[a][1])
        via.setdefault(b, []).append({
            "root_chunk": chunk_of[a][0], "root_doc": int(dg.doc_key[a]),
            "kind": LINK_KIND if dg.link_w[e] >= dg.mention_w[e] else MENTION_KIND,
            "fit": round(fit, 4), "context": found, "degree": [int(dg.degree[a]), int(dg.degree[b])],
            "affinity": round(affinity, 5), "share": round(share_of[a], 4),
        })
    if not gained:
        return list(base), []
    scores = {int(c): float(sc) for c, sc in base}
    lifts = _apply(dg, graph, list(gained.items()), cap, vouched, cosines, top, scores, settings)
    if not lifts:
        return list(base), []
    for lift in lifts:
        lift.via = via[lift.doc_row]
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])), lifts


def _apply(dg: DocGraph, graph: GraphIndex, gained: list[tuple[int, float]], cap: dict[int, float],
           vouched: dict[int, float], cosines: ChunkCosines, top: float, scores: dict[int, float],
           settings: BridgeSettings) -> list[Lift]:
    """Lift each gaining document's best chunk (``scores`` updated in place); what was lifted.

    One pass over the chunks of every gaining document at once (a document's
    chunks are contiguous in ``dg.chunk_nodes``): each chunk's gate, its score
    plus the lift kept under the document's ceiling, and per document the chunk
    that ends highest (the first of equals).
    """
    lo = np.array([dg.chunk_ptr[b] for b, _ in gained], dtype=np.int64)
    hi = np.array([dg.chunk_ptr[b + 1] for b, _ in gained], dtype=np.int64)
    sizes = hi - lo
    if not sizes.sum():
        return []
    owner = np.repeat(np.arange(len(gained)), sizes)
    nodes = dg.chunk_nodes[np.repeat(lo - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))]
    own = _gate(cosines.of_nodes(nodes), cosines.top, settings)
    vouch = np.array([vouched.get(b, 0.0) for b, _ in gained]) * settings.link_trust
    gates = 1.0 - (1.0 - own) * (1.0 - vouch[owner])
    chunks = graph.chunk_of[nodes].tolist()
    before = np.array([scores.get(c, 0.0) for c in chunks])
    gain = np.array([g for _, g in gained])
    ceiling = np.array([cap[b] for b, _ in gained]) * settings.cap
    raw = before + settings.weight * top * gain[owner] * gates
    after = np.maximum(before, _below(raw, ceiling[owner]))
    # Per document, its highest chunk after the lift (the first of equals, as argmax).
    order = np.lexsort((np.arange(len(nodes)), -after, owner))
    firsts = order[np.r_[0, np.nonzero(np.diff(owner[order]))[0] + 1]]
    lifts: list[Lift] = []
    for i in firsts.tolist():
        if after[i] > before[i]:
            b = gained[int(owner[i])][0]
            scores[chunks[i]] = float(after[i])
            lifts.append(Lift(b, chunks[i], [], round(float(gates[i]), 4),
                              float(after[i] - before[i]), float(before[i]), float(after[i]),
                              resemblance=round(float(own[i]), 4),
                              vouched=round(float(vouch[int(owner[i])]), 4)))
    return lifts


def _below(raw: np.ndarray, ceiling: float | np.ndarray) -> np.ndarray:
    """``raw`` kept under ``ceiling``, still in order: two lifts past the ceiling do not tie.

    Unchanged up to 0.1% below the ceiling; past that, squeezed into the last
    0.1% (monotone, never reaching it), so the stronger of two capped lifts stays
    ahead of the weaker one and both stay below the root that lifted them.
    """
    knee = ceiling * (1.0 - 1e-3)
    span = ceiling - knee
    over = np.maximum(raw - knee, 0.0)
    squeezed = knee + np.divide(span * over, over + span, out=np.zeros_like(over),
                                where=(over + span) > 0)
    return np.where(raw <= knee, raw, squeezed)


def _gate(cos: np.ndarray, top: float, settings: BridgeSettings) -> np.ndarray:
    """How much each chunk looks like part of the answer, 0..1 (query-gated spreading).

    ``exp(-(best cosine - cos) / temperature)``: a linked page about something
    else (far below the best cosine) is barely lifted, whatever the link.
    """
    if settings.temperature <= 0:
        return np.ones(len(cos))
    return np.exp(-(top - cos) / settings.temperature)
