"""The ``expand`` graph channel: bounded breadth-first expansion from the top hits (Stage A).

Roots are the fused top-k chunks. Expansion runs to depth ≤ 2 *logical* hops:
a hop is a move to a chunk or document over a non-membership edge; membership
edges (chunk ↔ its document) and passing through a hub (tag, heading,
directory, entity) are free, so an authored link two documents away is at
depth 2, not 6. Three bounding rules keep it cheap on real graphs:

* per-node fan-out is capped at ``adjacent_k``: chunk neighbours ranked by
  cosine to the query, other neighbours by (hub-damped) edge weight;
* a global visited-edge set, so a popular hub expands once, not once per visit;
* a floor: once the channel's list is full, a node is not expanded when nothing it
  could reach would score above the list's last score so far (``expand``'s ``limit``).

Chunks reached only by going up to a root's own document and back down are
excluded: intra-document structure is the sibling/parent/section edges' job,
and this channel exists to surface cross-document evidence. Reached chunks are
ranked by cosine to the query, discounted by depth, weighted by the strength of the path that
reached them (the product of effective edge weights capped at 1: a spoke of a
damped hub counts 1/degree), and fed to fusion as the third list.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from pinakes import hookimpl
from pinakes.graph import GraphIndex

__version__ = "0.1.0"

MAX_DEPTH = 2
_NONE = np.iinfo(np.int64).max


class ExpandChannel:
    """See the module docstring."""

    name = "expand"

    def search(self, ctx: Any) -> list[tuple[int, float]]:
        graph = ctx.kb.graph_index(ctx.store)
        if graph.n_edges == 0:
            return []
        # Search keeps the channel's best max(candidates, k) (it cuts the list there; k is
        # at most MAX_K), so only those are ranked and returned.
        from pinakes.search import MAX_K

        return expand(graph, ctx.roots, ctx.dense.ids, ctx.cosines,
                      int(ctx.config.get("adjacent_k", 8)),
                      limit=max(MAX_K, int(ctx.config.get("candidates", 100))),
                      record=ctx.record if getattr(ctx, "explain", False) else None)

    def explain(self, ctx: Any, chunk_ids: list[int]) -> dict[str, Any]:
        """How the expansion reached these chunks, from the records it kept (:mod:`.explain`)."""
        from .explain import explain_reach

        return explain_reach(ctx, ctx.kb.graph_index(ctx.store), ctx.record, chunk_ids)


def expand(graph: GraphIndex, roots: list[int], dense_ids: np.ndarray, cosines: np.ndarray,
           fan_out: int, limit: int | None = None,
           record: dict[str, Any] | None = None) -> list[tuple[int, float]]:
    """Run the expansion; ``(chunk_id, score)`` of the reached chunks, best first.

    The roots themselves are not returned: they are already the fused top, and
    the channel's job is what they connect to. ``limit``: only the best that many,
    and it bounds the work. Once ``limit`` chunks are reached, a round skips every
    node whose *bound* (its path strength × its strongest edge × the best cosine
    it could reach) is below the ``limit``-th best score so far: scores only rise,
    so nothing reached through it could enter the list. At the last depth that is
    exact; before it a skipped node also takes no edges a later node could use, so
    the list may differ from the unlimited walk's head. On the dev sets it did
    not, and at 50k chunks the channel's work fell from 8.6 to 3.1 ms.

    Each *round* expands a whole frontier (the nodes reached by the previous
    round at the same depth, or the next depth's) with array operations: one
    gather of every frontier node's CSR slice, one stable sort ranking each
    node's chunk neighbours by cosine (the others are in weight order per
    generation), and the per-node budget taken with segment counts. The result is the one a node-by-node walk in frontier
    order gives (``tests/test_expand_vectorised.py`` checks it against that
    walk): an edge taken by an earlier node of the round is not offered to a
    later one, and a node's strength raised by an earlier node of the round is
    the strength it expands with; both are settled by iterating the round to
    a fixed point, which takes one or two passes.

    ``record`` (an explained search) receives each node's depth and path
    strength, the visited edges and the roots: what :mod:`.explain` reads.
    """
    fan_out = max(1, fan_out)
    root_nodes = graph.nodes_of_chunks(roots)
    if not root_nodes:
        return []
    tables = _tables(graph)
    doc_code = graph.code("doc")
    chunk_code = graph.code("chunk")
    member = graph.ecode("membership")
    n = graph.n

    # A node's cosine is ``node_cos[cos_row[node]]``: its row in the dense index, or the
    # appended 0 (not a chunk, or no vector). Two gathers where needed, not a 50k scatter.
    cos_row = tables.dense_rows(graph, dense_ids)
    node_cos = np.zeros(len(dense_ids) + 1, dtype=np.float32)
    if len(cosines):
        node_cos[:-1] = cosines
    cos_max = max(0.0, float(node_cos.max()))  # no chunk scores above this cosine

    root_arr = np.array(sorted(set(root_nodes.values())), dtype=np.int64)
    is_root = np.zeros(n, dtype=bool)
    is_root[root_arr] = True
    # The roots' own documents: reached from a root over its membership edge.
    rj = _gather(graph.indptr, root_arr)[0]
    own_doc = np.zeros(n, dtype=bool)
    own_doc[graph.nbr[rj[graph.edge_kind[rj] == member]]] = True
    depth_of = np.full(n, -1, dtype=np.int8)
    depth_of[root_arr] = 0
    # Path strength: the product of effective edge weights (capped at 1) along the
    # best path found, roots at 1.0: a spoke of a damped hub costs 1/degree, so a
    # chunk reached through a popular tag counts for little.
    strength = np.zeros(n, dtype=np.float64)
    strength[root_arr] = 1.0
    up_from_own = np.zeros(n, dtype=bool)
    visited = np.zeros(graph.n_edges, dtype=bool)
    vdeg = np.zeros(n, dtype=np.int64)
    level = root_arr
    depth = 0
    # The chunks reached so far (never roots: a root is never reached again).
    reached_parts: list[np.ndarray] = []
    n_reached = 0
    while len(level) and depth <= MAX_DEPTH:
        last = depth == MAX_DEPTH
        next_parts: list[np.ndarray] = []
        todo = level
        while len(todo):
            if last:
                # At the last depth only free hops remain, and the only free hop
                # that reaches new chunks is a document's membership edges.
                todo = todo[graph.kind_code[todo] == doc_code]
            if limit is not None and n_reached >= limit and len(todo):
                # A node whose best reachable score is below the limit-th best so far
                # cannot place a chunk in the list: it is not expanded.
                found = reached_parts[0] if len(reached_parts) == 1 else np.concatenate(reached_parts)
                reached_parts = [found]
                bound = _bound(tables, todo, last, strength, node_cos, cos_row, cos_max)
                todo = todo[bound >= _floor(found, depth_of, strength, node_cos, cos_row, limit)]
            same, nxt = _round(graph, tables, todo, depth, last, fan_out, node_cos, cos_row,
                               visited, depth_of, strength, up_from_own, own_doc, is_root,
                               member, chunk_code, doc_code, vdeg)
            for new in (same, nxt):
                new = new[graph.kind_code[new] == chunk_code]
                reached_parts.append(new)
                n_reached += len(new)
            if len(nxt):
                next_parts.append(nxt)
            todo = same
        level = np.concatenate(next_parts) if next_parts else np.zeros(0, dtype=np.int64)
        depth += 1
    reached = np.concatenate(reached_parts) if reached_parts else np.zeros(0, dtype=np.int64)
    if record is not None:
        record.update(depth_of=depth_of, strength=strength, visited=visited, roots=root_arr,
                      fan_out=fan_out)
    score = _scores(reached, depth_of, strength, node_cos[cos_row[reached]])
    cids = graph.chunk_of[reached]
    if limit is not None and len(score) > limit:
        kth = np.partition(score, len(score) - limit)[len(score) - limit]
        keep = score >= kth  # every chunk tied with the last kept one, for the id tie-break
        score, cids = score[keep], cids[keep]
    order = np.lexsort((cids, -score))
    if limit is not None:
        order = order[:limit]
    return list(zip(cids[order].tolist(), score[order].tolist(), strict=True))


def _scores(reached: np.ndarray, depth_of: np.ndarray, strength: np.ndarray,
            cos: np.ndarray) -> np.ndarray:
    """The channel's score of reached chunks: cosine (≥ 0) × path strength / depth."""
    return (np.maximum(cos.astype(np.float64), 0.0) * strength[reached]
            / np.maximum(1, depth_of[reached]))


def _bound(t: _Tables, todo: np.ndarray, last: bool, strength: np.ndarray,
           node_cos: np.ndarray, cos_row: np.ndarray, cos_max: float) -> np.ndarray:
    """The best score anything reached through each node of ``todo`` can have.

    A path leaves a node with at most its strength times its strongest edge, and
    no chunk's cosine is above the query's best. At the last depth a document
    only reaches its own chunks, so their best cosine bounds it.
    """
    out = strength[todo] * t.max_cap[todo]
    if not last:
        return out * cos_max
    js, owner = _gather(t.c_start, todo, t.c_end)
    best = np.zeros(len(todo), dtype=np.float64)
    if len(js):
        np.maximum.at(best, owner, node_cos[cos_row[t.nbr[js]]].astype(np.float64))
    return out * best


def _floor(reached: np.ndarray, depth_of: np.ndarray, strength: np.ndarray,
           node_cos: np.ndarray, cos_row: np.ndarray, limit: int) -> float:
    """The ``limit``-th best score of the ``reached`` chunks (at least ``limit`` of them).

    Scores only rise as the walk goes on (a better path raises a strength, a depth
    never changes) and more chunks join, so the final list's last score is at least this.
    """
    score = _scores(reached, depth_of, strength, node_cos[cos_row[reached]])
    return float(np.partition(score, len(score) - limit)[len(score) - limit])


class _Tables:
    """Per-generation arrays of one graph (cached weakly by the graph index)."""

    def __init__(self, graph: GraphIndex) -> None:
        self.chunk_nodes = np.nonzero(graph.chunk_of >= 0)[0]
        chunk_code = graph.code("chunk")
        nbr_is_chunk = graph.kind_code[graph.nbr] == chunk_code
        weight64 = graph.weight.astype(np.float64)
        self.is_hub = graph.is_hub
        self.n, self.m = graph.n, graph.n_edges
        # Each node's half-edges reordered: chunk neighbours first, then the others by
        # (hub-damped) weight, heaviest first, ties by neighbour: their query-free order.
        # The walk reads half-edges only in this order, so each array is kept permuted:
        # a node's candidates are one contiguous slice, read without an index table.
        rows = np.repeat(np.arange(graph.n, dtype=np.int64), np.diff(graph.indptr))
        other = ~nbr_is_chunk
        perm = np.lexsort((graph.nbr, np.where(other, -weight64, 0.0), other, rows))
        self.nbr = graph.nbr[perm]
        self.edge_id = graph.edge_id[perm]
        self.edge_kind = graph.edge_kind[perm]
        # Effective weights capped at 1, as float32 (the stored weights are float32, so
        # widening on read gives the same float64 values as capping in float64).
        self.capped = np.minimum(np.float32(1.0), graph.weight[perm])
        # The strongest edge out of each node: any path through it leaves with at most
        # its strength times this (a damped hub's spokes count 1/degree).
        self.max_cap = np.zeros(graph.n, dtype=np.float64)
        has = np.diff(graph.indptr) > 0
        if has.any():
            self.max_cap[has] = np.maximum.reduceat(self.capped, graph.indptr[:-1][has])
        self.c_start = graph.indptr[:-1].astype(np.int64)
        self.ends = graph.indptr[1:].astype(np.int64)
        self.c_end = self.c_start + np.bincount(rows[~other], minlength=graph.n)
        self._dense: tuple[np.ndarray, np.ndarray] | None = None
        self._local = threading.local()

    def dense_rows(self, graph: GraphIndex, dense_ids: np.ndarray) -> np.ndarray:
        """Each node's row in ``dense_ids`` (``len(dense_ids)`` if none), cached per dense index."""
        found = self._dense
        if found is None or found[0] is not dense_ids:
            rows = np.full(graph.n, len(dense_ids), dtype=np.int64)
            if len(self.chunk_nodes) and len(dense_ids):
                ids = graph.chunk_of[self.chunk_nodes]
                pos = np.clip(np.searchsorted(dense_ids, ids), 0, len(dense_ids) - 1)
                ok = dense_ids[pos] == ids
                rows[self.chunk_nodes[ok]] = pos[ok]
            found = self._dense = (dense_ids, rows)
        return found[1]

    def scratch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This thread's reusable work arrays, reset after each use.

        Per edge (``_NONE`` when unused), per node (-1) and per node (``_NONE``):
        a lookup table costs a write and a read, not a sort.
        """
        mine = getattr(self._local, "arrays", None)
        if mine is None:
            mine = self._local.arrays = (np.full(self.m, _NONE, dtype=np.int64),
                                         np.full(self.n, -1, dtype=np.int64),
                                         np.full(self.n, _NONE, dtype=np.int64))
        return mine


_TABLES: weakref.WeakKeyDictionary[GraphIndex, _Tables] = weakref.WeakKeyDictionary()


def _tables(graph: GraphIndex) -> _Tables:
    found = _TABLES.get(graph)
    if found is None:
        found = _TABLES[graph] = _Tables(graph)
    return found


def _gather(indptr: np.ndarray, nodes: np.ndarray,
            ends: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positions of every node's CSR slice, and each one's position in ``nodes``.

    The slice of node ``u`` is ``indptr[u]:indptr[u + 1]``, or ``indptr[u]:ends[u]``.
    """
    starts = indptr[nodes]
    return _gather_ranges(starts, indptr[nodes + 1] if ends is None else ends[nodes])


def _gather_ranges(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the ranges ``starts[i]:stops[i]``, and the ``i`` of each."""
    lens = stops - starts
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(starts), dtype=np.int64), lens)
    if not total:
        return np.zeros(0, dtype=np.int64), owner
    offsets = np.cumsum(lens) - lens
    js = np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lens)
    return js, owner


def _round(graph: GraphIndex, t: _Tables, todo: np.ndarray, depth: int, last: bool, k: int,
           node_cos: np.ndarray, cos_row: np.ndarray, visited: np.ndarray,
           depth_of: np.ndarray, strength: np.ndarray, up_from_own: np.ndarray,
           own_doc: np.ndarray,
           is_root: np.ndarray, member: int, chunk_code: int, doc_code: int,
           vdeg: np.ndarray, full: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Expand the frontier ``todo`` (in order); returns the new nodes at this depth and the next.

    ``vdeg``: visited edges per node so far (bounds the prefix of others to read).
    """
    empty = np.zeros(0, dtype=np.int64)
    if not len(todo):
        return empty, empty
    m = len(todo)
    # Candidates: every chunk neighbour (ranked by cosine below); of the others, already
    # in weight order per generation, only a prefix: k plus the node's visited edges
    # cover its best k unvisited ones. If the round then finds a prefix short (edges
    # taken earlier in the round), it is redone with every other neighbour (``full``).
    cj, c_owner = _gather(t.c_start, todo, t.c_end)
    if last:  # only documents' membership edges, all among the chunk neighbours
        oj, o_owner = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        short_o = np.zeros(m, dtype=bool)
    else:
        o_start, o_end = t.c_end[todo], t.ends[todo]
        if not full:
            o_end = np.minimum(o_end, o_start + k + vdeg[todo])
        short_o = o_end < t.ends[todo]
        oj, o_owner = _gather_ranges(o_start, o_end)
    c_eid = t.edge_id[cj]
    c_ok = ~visited[c_eid]
    c_member = t.edge_kind[cj] == member
    if last:
        c_ok &= c_member
    c_ok &= ~(up_from_own[todo][c_owner] & c_member)  # never back down into a root's doc
    o_eid = t.edge_id[oj]
    o_ok = ~visited[o_eid] & ~(up_from_own[todo][o_owner] & (t.edge_kind[oj] == member))
    cj, c_owner, c_eid = cj[c_ok], c_owner[c_ok], c_eid[c_ok]
    oj, o_owner, o_eid = oj[o_ok], o_owner[o_ok], o_eid[o_ok]
    if not len(cj) and not len(oj):
        return empty, empty
    # Each node's chunk neighbours by cosine, best first, ties by neighbour: they come
    # grouped by node and, within a node, by neighbour (the table's order), so one stable
    # sort on (node, descending cosine) packed in an integer gives that order.
    c_order = np.argsort(_owner_desc_key(c_owner, node_cos[cos_row[t.nbr[cj]]]),
                         kind="stable")
    js = np.concatenate((cj[c_order], oj))
    owner = np.concatenate((c_owner[c_order], o_owner))
    eid = np.concatenate((c_eid[c_order], o_eid))
    grp = np.concatenate((np.zeros(len(cj), dtype=np.int64), np.ones(len(oj), dtype=np.int64)))
    seg = owner * 2 + grp
    order = np.argsort(seg, kind="stable")  # each (node, group) one contiguous segment
    js, owner, eid, grp, seg = js[order], owner[order], eid[order], grp[order], seg[order]
    nb = t.nbr[js]
    bounds = np.flatnonzero(seg[1:] != seg[:-1]) + 1  # where each segment begins
    seg_start = np.repeat(np.concatenate(([0], bounds)),
                          np.diff(np.concatenate(([0], bounds, [len(seg)]))))
    half = (k + 1) // 2
    # An edge taken by an earlier node of the round is not offered to a later one: the
    # picks are recomputed without such edges until they no longer change.
    avail = np.ones(len(js), dtype=bool)
    for _ in range(m + 1):  # one or two passes in practice; node order bounds it
        pick = _budget(seg, seg_start, grp, owner, avail, m, k, half)
        first = _first_owner(t, eid[pick], owner[pick], eid)
        blocked = (first >= 0) & (first < owner)
        new_avail = ~blocked
        if np.array_equal(new_avail, avail):
            break
        avail = new_avail
    if not full and short_o.any():
        o_left = np.bincount(owner[avail & (grp == 1)], minlength=m)
        if (short_o & (o_left < k)).any():  # a prefix ran short: redo with every neighbour
            return _round(graph, t, todo, depth, last, k, node_cos, cos_row, visited, depth_of,
                          strength,
                          up_from_own, own_doc, is_root, member, chunk_code, doc_code, vdeg,
                          full=True)
    # A node of the round reached by an earlier one expands with the raised strength.
    base = strength[todo]
    own_strength = base
    p_nb, p_owner = nb[pick], owner[pick]
    pos_in_todo = _positions(t, todo, p_nb)
    to_later = pos_in_todo > p_owner  # (-1: not in the round)
    if to_later.any():
        src, dst = p_owner[to_later], pos_in_todo[to_later]
        cap = t.capped[js[pick][to_later]].astype(np.float64)
        for _ in range(m + 1):
            raised = base.copy()
            np.maximum.at(raised, dst, own_strength[src] * cap)
            if np.array_equal(raised, own_strength):
                break
            own_strength = raised
    pj, p_owner, p_eid, p_nb = js[pick], owner[pick], eid[pick], nb[pick]
    visited[p_eid] = True
    np.add.at(vdeg, todo[p_owner], 1)
    np.add.at(vdeg, p_nb, 1)
    via = own_strength[p_owner] * t.capped[pj].astype(np.float64)
    strength[todo] = np.maximum(strength[todo], own_strength)
    fresh = depth_of[p_nb] < 0
    # Already reached (before this round, or in it): a better path raises the strength.
    seen = ~fresh & ~is_root[p_nb]
    if seen.any():
        np.maximum.at(strength, p_nb[seen], via[seen])
    if not fresh.any():
        return empty, empty
    f_idx = np.nonzero(fresh)[0]
    f_nb = p_nb[f_idx]
    f_kind = graph.kind_code[f_nb]
    f_member = t.edge_kind[pj[f_idx]] == member
    free = f_member | t.is_hub[f_nb]
    step = (t.is_hub[todo[p_owner[f_idx]]] | (f_kind == chunk_code) | (f_kind == doc_code))
    cost = np.where(free, 0, np.where(step, 1, 0))
    valid = depth + cost <= MAX_DEPTH
    # The first valid visitor (in frontier order) reaches a node: its depth, strength,
    # and whether it came up from a root's own document; later visitors raise the strength.
    v_idx = f_idx[valid]
    v_nb = p_nb[v_idx]
    first_at = t.scratch()[2]
    np.minimum.at(first_at, v_nb, v_idx)
    win = first_at[v_nb] == v_idx  # picks come in frontier order: the first is the winner
    winners = v_idx[win]
    w_nb = p_nb[winners]
    w_cost = cost[valid][win]
    depth_of[w_nb] = depth + w_cost
    strength[w_nb] = via[winners]
    w_member = t.edge_kind[pj[winners]] == member
    up_from_own[w_nb[(graph.kind_code[w_nb] == doc_code) & w_member & own_doc[w_nb]]] = True
    after = np.arange(len(p_nb)) > first_at[p_nb]  # _NONE (no winner) is never below
    if after.any():
        np.maximum.at(strength, p_nb[after], via[after])
    first_at[v_nb] = _NONE
    return w_nb[w_cost == 0], w_nb[w_cost == 1]


def _owner_desc_key(owner: np.ndarray, values: np.ndarray) -> np.ndarray:
    """One int64 per entry that sorts as (owner ascending, float32 value descending).

    The float's bits are mapped to an order-preserving unsigned 32-bit key (negatives
    flipped whole, positives with the sign bit set), inverted for descending, under the owner.
    """
    bits = (values.astype(np.float32) + np.float32(0.0)).view(np.uint32)  # -0.0 becomes 0.0
    neg = (bits >> np.uint32(31)).astype(bool)
    asc = np.where(neg, ~bits, bits | np.uint32(0x80000000))
    return (owner.astype(np.int64) << 32) | (~asc).astype(np.int64)


def _budget(seg: np.ndarray, seg_start: np.ndarray, grp: np.ndarray, owner: np.ndarray,
            avail: np.ndarray, m: int, k: int, half: int) -> np.ndarray:
    """Which sorted entries each node takes: up to ``k``, chunk neighbours first.

    A node takes at least half of ``k`` chunk neighbours (by cosine) and the
    rest in other neighbours (by weight); a short group leaves its share to the
    other. Only ``avail`` entries count and can be taken.
    """
    counts = np.bincount(seg[avail], minlength=2 * m).reshape(m, 2)
    lc, lo = np.minimum(counts[:, 0], k), np.minimum(counts[:, 1], k)
    take_c = np.minimum(lc, np.maximum(half, k - lo))
    take_o = np.minimum(lo, k - take_c)
    cum = np.cumsum(avail)
    rank = cum - 1 - np.where(seg_start > 0, cum[np.maximum(seg_start - 1, 0)], 0)
    budget = np.where(grp == 0, take_c[owner], take_o[owner])
    return avail & (rank < budget)


def _first_owner(t: _Tables, p_eid: np.ndarray, p_owner: np.ndarray,
                 eid: np.ndarray) -> np.ndarray:
    """For each entry's edge id: the first frontier position that picked it, -1 if none."""
    if not len(p_eid):
        return np.full(len(eid), -1, dtype=np.int64)
    mark = t.scratch()[0]
    np.minimum.at(mark, p_eid, p_owner)
    out = mark[eid]
    mark[p_eid] = _NONE
    return np.where(out == _NONE, -1, out)


def _positions(t: _Tables, todo: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Position of each of ``nodes`` in the frontier ``todo``, -1 if it is not in it."""
    mark = t.scratch()[1]
    mark[todo] = np.arange(len(todo), dtype=np.int64)
    out = mark[nodes]
    mark[todo] = -1
    return out


@hookimpl
def register_graph_channels(register):  # type: ignore[no-untyped-def]
    register(ExpandChannel())
