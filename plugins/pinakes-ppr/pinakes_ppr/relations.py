"""Relation-aware mention weights: the walk follows the relation the query asks about.

The plain walk is relation-blind. From "Polish Easter is a film directed by
Jakob Ziemnicki, produced by Anna Kowalska" the mass a chunk sends to its
entities is split by mention counts alone, so "Where was the director of Polish
Easter born?" reaches the producer as easily as the director. At sync the
mentions deriver records, per chunk and entity, the content words next to the
mention inside its clause (``entity_context``: "film directed" for Jakob,
"produced" for Anna). At query time each such chunk–entity edge is weighted by

    g = 1 + ppr_relation_weight × (IDF share of the query's stems found in those words)

where the query's stems exclude the seeds' own names (they say *who*, not
*which relation*), and the IDF is over all mention contexts (a word next to
every mention, like "film" on a film corpus, weighs little). Only the chunk's
side changes: the chunk's out-weights are multiplied by ``g`` and renormalised,
so the walk stays stochastic, and only for the chunks within
``ppr_relation_hops`` (1) of the seeds, where the walk's mass is. The entity's
own choice among the chunks naming it is left alone: weighting that side too
sent Leo D. Maloney's mass to other films "directed by" him instead of to his
own page, and lost on 2Wiki (docs/benchmarks.md).

The operator is not rebuilt: only the columns of the reweighted chunks change,
so the walk runs ``M x + Δ x`` with a small sparse ``Δ`` (new minus old
transition of those columns), built per query from the graph index's own
arrays. The index of mention contexts (stem → edges) is built once per graph
generation, like the operator.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinakes.graph import GraphIndex


@dataclass(eq=False)
class RelationIndex:
    """Every chunk–entity edge that has mention context, grouped by chunk, with its stems.

    Edges are sorted by chunk node, so the edges of a query's scope (a few
    chunks) are a few slices; each edge's stems are a CSR slice of stem ids.
    """

    c_node: np.ndarray  # int64 chunk node per relation edge (ascending)
    e_node: np.ndarray  # int64 entity node per relation edge
    h_ce: np.ndarray  # int64 half-edge position in the chunk's row (neighbour: the entity)
    h_ec: np.ndarray  # int64 its twin in the entity's row (neighbour: the chunk)
    stem_ptr: np.ndarray  # int64 CSR pointers: edge -> its stem ids
    stem_ids: np.ndarray  # int64 stem id per (edge, stem)
    vocab: dict[str, int]  # stem -> id
    idf: np.ndarray  # float64 per stem id, over relation edges

    @property
    def size(self) -> int:
        return len(self.c_node)

    @classmethod
    def build(cls, conn: sqlite3.Connection, graph: GraphIndex) -> RelationIndex:
        """Read ``entity_context`` (the mentions plugin's table) and locate each edge's halves.

        A store without the table, or context rows whose chunk or entity is not in
        this graph (capped names have no edges), give no relation edges.
        """
        from . import label_stems  # the query side stems with the same function

        z = np.zeros(0, np.int64)
        empty = cls(z, z, z, z, np.zeros(1, np.int64), z, {}, np.zeros(0))
        ecode, ccode = graph.code("entity"), graph.code("chunk")
        if ecode < 0 or ccode < 0 or not graph.n_edges:
            return empty
        try:
            rows = conn.execute("SELECT chunk, key, words FROM entity_context").fetchall()
        except sqlite3.OperationalError:
            return empty  # no mentions plugin: nothing to weigh
        if not rows:
            return empty
        n = graph.n
        entity_of = {graph.keys[i]: i for i in np.nonzero(graph.kind_code == ecode)[0].tolist()}
        chunk_at = graph.nodes_of_chunks(sorted({int(r[0]) for r in rows}))
        c_list: list[int] = []
        e_list: list[int] = []
        words: list[str] = []
        for chunk, key, text in rows:
            c, e = chunk_at.get(int(chunk)), entity_of.get(key)
            if c is not None and e is not None:
                c_list.append(c)
                e_list.append(e)
                words.append(text)
        if not c_list:
            return empty
        c_node = np.array(c_list, dtype=np.int64)
        e_node = np.array(e_list, dtype=np.int64)
        row_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.indptr))
        nbr = graph.nbr.astype(np.int64)
        h_ce = _find_half_edges(row_of, nbr, n, c_node, e_node)
        h_ec = _find_half_edges(row_of, nbr, n, e_node, c_node)
        keep = np.nonzero((h_ce >= 0) & (h_ec >= 0))[0]
        keep = keep[np.argsort(c_node[keep], kind="stable")]
        stems_of: dict[str, list[int]] = {}  # per word: contexts share a small vocabulary
        vocab: dict[str, int] = {}
        ptr = [0]
        ids: list[int] = []
        for old in keep.tolist():
            stems: set[int] = set()
            for word in words[old].split():
                got = stems_of.get(word)
                if got is None:
                    got = stems_of[word] = [vocab.setdefault(t, len(vocab)) for t in label_stems(word)]
                stems.update(got)
            ids.extend(sorted(stems))
            ptr.append(len(ids))
        stem_ids = np.array(ids, dtype=np.int64)
        df = np.bincount(stem_ids, minlength=len(vocab)).astype(np.float64)
        total = len(keep)
        return cls(
            c_node=c_node[keep], e_node=e_node[keep], h_ce=h_ce[keep], h_ec=h_ec[keep],
            stem_ptr=np.array(ptr, dtype=np.int64), stem_ids=stem_ids, vocab=vocab,
            idf=np.log(1.0 + (total - df + 0.5) / (df + 0.5)),
        )

    def match(self, stems: Sequence[str], chunks: np.ndarray | None = None,
              ) -> tuple[np.ndarray, np.ndarray]:
        """``(edge ids, share)``: the edges (of ``chunks``, or all) whose context holds ``stems``.

        ``share`` is the IDF of the stems an edge's context holds over the IDF of
        all of ``stems`` the index knows (0..1).
        """
        none = (np.zeros(0, np.int64), np.zeros(0))
        wanted = np.array(sorted({self.vocab[s] for s in stems if s in self.vocab}), dtype=np.int64)
        if not len(wanted):
            return none
        mass = float(self.idf[wanted].sum())
        if mass <= 0:
            return none
        if chunks is None:
            edges = np.arange(self.size, dtype=np.int64)
        else:
            lo = np.searchsorted(self.c_node, chunks, "left")
            edges = _ranges(lo, np.searchsorted(self.c_node, chunks, "right"))
        if not len(edges):
            return none
        pos = _ranges(self.stem_ptr[edges], self.stem_ptr[edges + 1])
        owner = np.repeat(np.arange(len(edges)), self.stem_ptr[edges + 1] - self.stem_ptr[edges])
        sid = self.stem_ids[pos]
        hit = np.isin(sid, wanted)
        score = np.bincount(owner[hit], weights=self.idf[sid[hit]], minlength=len(edges))
        keep = score > 0
        return edges[keep], score[keep] / mass


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(lo[i], hi[i])`` over ``i``, vectorised."""
    lens = np.maximum(hi - lo, 0).astype(np.int64)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, np.int64)
    offsets = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=offsets[1:])
    owner = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    return np.arange(total, dtype=np.int64) - offsets[owner] + lo[owner].astype(np.int64)


def _find_half_edges(row_of: np.ndarray, nbr: np.ndarray, n: int, a: np.ndarray,
                     b: np.ndarray) -> np.ndarray:
    """Position of the half-edge in row ``a[i]`` whose neighbour is ``b[i]`` (-1: none)."""
    rows_a = np.zeros(n, dtype=bool)
    rows_a[a] = True
    cand = np.nonzero(rows_a[row_of])[0]
    codes = row_of[cand] * n + nbr[cand]
    order = np.argsort(codes, kind="stable")
    codes, cand = codes[order], cand[order]
    want = a * n + b
    pos = np.clip(np.searchsorted(codes, want), 0, max(len(codes) - 1, 0))
    out = np.full(len(a), -1, dtype=np.int64)
    if len(codes):
        hit = codes[pos] == want
        out[hit] = cand[pos[hit]]
    return out


_INDEXES: weakref.WeakKeyDictionary[GraphIndex, RelationIndex] = weakref.WeakKeyDictionary()


def relation_index(conn: sqlite3.Connection, graph: GraphIndex) -> RelationIndex:
    """The cached :class:`RelationIndex` of ``graph`` (one per graph generation)."""
    found = _INDEXES.get(graph)
    if found is None:
        found = _INDEXES[graph] = RelationIndex.build(conn, graph)
    return found


class ReweightedOperator:
    """An operator's walk with some edges reweighted: ``matvec(x) = M x + Δ x``.

    Has what :func:`~pinakes_ppr.personalized_pagerank` reads of an operator
    (``n``, ``dtype``, ``dangling``, ``matvec``, ``damped_step``); no node loses
    or gains all its weight, so the dangling nodes are the base operator's.
    ``Δ`` is held compressed to the rows and columns it touches, so its product
    costs its own size, not the graph's; it is a NumPy ``bincount``, so a
    reweighted query imports nothing the base walk does not (no ``scipy.sparse``).
    """

    def __init__(self, base: Any, n: int, rows: np.ndarray, cols: np.ndarray,
                 lens: np.ndarray, data: np.ndarray) -> None:
        """``Δ`` column by column: ``cols[j]`` holds ``lens[j]`` entries, at ``rows``, in order."""
        self.base = base
        self.n = n
        self.dtype = np.dtype(getattr(base, "dtype", np.float64))
        self.dangling = base.dangling
        self.nnz = len(data)
        self._rows, row_at = np.unique(rows, return_inverse=True)  # the touched rows
        self._cols = cols
        self._row_at, self._col_at, self._data = row_at, np.repeat(np.arange(len(cols)), lens), data

    def delta(self, x: np.ndarray) -> np.ndarray:
        """``Δ x`` on the touched rows only (float64)."""
        xs = x[self._cols].astype(np.float64)  # gather first: a walk step must not copy all of x
        return np.bincount(self._row_at, weights=self._data * xs[self._col_at],
                           minlength=len(self._rows))

    def matvec(self, x: np.ndarray) -> np.ndarray:
        out = np.array(self.base.matvec(x), dtype=np.float64)  # a fresh array: add in place
        out[self._rows] += self.delta(x)
        return out.astype(self.dtype, copy=False)

    def damped_step(self, damping: float, threads: int = 1) -> Any:
        """``out += damping * (M + Δ) @ x`` as ``step(x, out)``: the base step, then ``Δ``'s rows."""
        base_step = self.base.damped_step(damping, threads)
        rows = self._rows

        def step(x: np.ndarray, out: np.ndarray) -> None:
            base_step(x, out)
            out[rows] += (damping * self.delta(x)).astype(out.dtype, copy=False)
        return step


def reweighted_operator(op: Any, graph: GraphIndex, edges: np.ndarray, factor: np.ndarray,
                        index: RelationIndex, both: bool = False) -> ReweightedOperator | None:
    """``op`` with relation edge ``edges[i]``'s weight multiplied by ``factor[i]``, renormalised.

    Every node at an end of a reweighted edge gets its whole column recomputed
    (its out-weights over its new strength); the result is the difference from
    the base transition, so the base operator stays untouched and shared.
    """
    if not len(edges):
        return None
    ends = np.unique(np.concatenate([index.c_node[edges], index.e_node[edges]]) if both
                     else index.c_node[edges])
    lens = (graph.indptr[ends + 1] - graph.indptr[ends]).astype(np.int64)
    pos = _ranges(graph.indptr[ends], graph.indptr[ends + 1])  # ascending: rows in order
    total = len(pos)
    if total == 0:
        return None
    owner = np.repeat(np.arange(len(ends), dtype=np.int64), lens)
    w = graph.weight[pos].astype(np.float64)
    mult = np.ones(total, dtype=np.float64)
    mult[np.searchsorted(pos, index.h_ce[edges])] = factor
    if both:
        mult[np.searchsorted(pos, index.h_ec[edges])] = factor
    w2 = w * mult
    s_old = np.bincount(owner, weights=w, minlength=len(ends))
    s_new = np.bincount(owner, weights=w2, minlength=len(ends))
    ok = s_old[owner] > 0
    data = np.zeros(total, dtype=np.float64)
    data[ok] = w2[ok] / s_new[owner][ok] - w[ok] / s_old[owner][ok]
    # The half-edge (a, v) in a's row stands for the flow a -> v: matrix row v, column a.
    return ReweightedOperator(op, graph.n, graph.nbr[pos].astype(np.int64), ends, lens, data)


def query_relation_stems(conn: sqlite3.Connection, graph: GraphIndex, query: str,
                         seeds: Sequence[tuple[int, float]]) -> list[str]:
    """The query's stems other than its seeds' names: what it asks *about* them."""
    from . import label_stems

    named: set[str] = set()
    ids = [int(graph.node_ids[node]) for node, _ in seeds]
    if ids:
        marks = ",".join("?" * len(ids))
        for (label,) in conn.execute(f"SELECT label FROM nodes WHERE id IN ({marks})", ids):
            named.update(label_stems(label or ""))
    return [s for s in label_stems(query) if s not in named]


def _neighbours(graph: GraphIndex, nodes: np.ndarray, kind: int) -> np.ndarray:
    """The distinct neighbours of ``nodes`` of node kind code ``kind``, sorted."""
    if not len(nodes):
        return nodes
    nbr = graph.nbr[_ranges(graph.indptr[nodes], graph.indptr[nodes + 1])]
    return np.unique(nbr[graph.kind_code[nbr] == kind]).astype(np.int64)


def seed_scope(graph: GraphIndex, seeds: Sequence[tuple[int, float]], hops: int) -> np.ndarray:
    """Chunk nodes within ``hops`` chunk–entity hops of the seeds (odd hops: chunks), sorted.

    1: the chunks naming a seed (its own page, pages that name it); 3: also the
    chunks naming an entity those chunks name (the second hop of "the mother of
    the director of X"). Only these chunks' mention edges are reweighted: the
    walk's mass is there, and a query's common word ("film") next to thousands
    of mentions elsewhere would cost time and change little.
    """
    ecode, ccode = graph.code("entity"), graph.code("chunk")
    entities = np.unique(np.array([n for n, _ in seeds], dtype=np.int64))
    seen_e = entities
    found = np.zeros(0, dtype=np.int64)
    for hop in range(1, hops + 1, 2):
        chunks = _neighbours(graph, entities, ccode)
        found = np.union1d(found, chunks)
        if hop + 2 > hops:
            break
        entities = np.setdiff1d(_neighbours(graph, chunks, ecode), seen_e)
        seen_e = np.union1d(seen_e, entities)
    return found


def relation_walk(op: Any, graph: GraphIndex, conn: sqlite3.Connection | None, query: str,
                  seeds: Sequence[tuple[int, float]], weight: float,
                  hops: int = 1, both: bool = False) -> tuple[Any, int]:
    """The operator the query's walk runs on, and how many edges it reweighted.

    ``op`` itself when relation weights are off (``weight`` 0), the store has no
    mention contexts, or nothing in the query matches one near its seeds
    (:func:`seed_scope`).
    """
    if weight <= 0 or conn is None or not seeds:
        return op, 0
    index = relation_index(conn, graph)
    if not index.size:
        return op, 0
    scope = seed_scope(graph, seeds, hops) if hops > 0 else None
    edges, share = index.match(query_relation_stems(conn, graph, query, seeds), scope)
    walk = reweighted_operator(op, graph, edges, 1.0 + weight * share, index, both)
    return (walk, len(edges)) if walk is not None else (op, 0)
