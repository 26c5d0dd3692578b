"""The ``expand`` graph channel: bounded breadth-first expansion from the top hits (Stage A).

Roots are the fused top-k chunks. Expansion runs to depth ≤ 2 *logical* hops:
a hop is a move to a chunk or document over a non-membership edge; membership
edges (chunk ↔ its document) and passing through a hub (tag, heading,
directory, entity) are free, so an authored link two documents away is at
depth 2, not 6. Two bounding rules keep it cheap on real graphs:

* per-node fan-out is capped at ``adjacent_k``: chunk neighbours ranked by
  cosine to the query, other neighbours by (hub-damped) edge weight;
* a global visited-edge set, so a popular hub expands once, not once per visit.

Chunks reached only by going up to a root's own document and back down are
excluded: intra-document structure is the sibling/parent/section edges' job,
and this channel exists to surface cross-document evidence. Reached chunks are
ranked by cosine to the query, discounted by depth, weighted by the strength of the path that
reached them (the product of effective edge weights capped at 1: a spoke of a
damped hub counts 1/degree), and fed to fusion as the third list.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pinakes import hookimpl
from pinakes.graph import GraphIndex

__version__ = "0.1.0"

MAX_DEPTH = 2


class ExpandChannel:
    """See the module docstring."""

    name = "expand"

    def search(self, ctx: Any) -> list[tuple[int, float]]:
        graph = ctx.kb.graph_index(ctx.store)
        if graph.n_edges == 0:
            return []
        return expand(graph, ctx.roots, ctx.dense.ids, ctx.cosines,
                      int(ctx.config.get("adjacent_k", 8)))


def expand(graph: GraphIndex, roots: list[int], dense_ids: np.ndarray, cosines: np.ndarray,
           fan_out: int) -> list[tuple[int, float]]:
    """Run the expansion; ``(chunk_id, score)`` of the reached chunks, best first.

    The roots themselves are not returned: they are already the fused top, and
    the channel's job is what they connect to.
    """
    fan_out = max(1, fan_out)
    root_nodes = graph.nodes_of_chunks(roots)
    if not root_nodes:
        return []
    hub = graph.is_hub
    doc_code = graph.code("doc")
    chunk_code = graph.code("chunk")
    member = graph.ecode("membership")

    # Cosine of every chunk node, looked up once through the dense index.
    node_cos = np.zeros(graph.n, dtype=np.float32)
    chunk_nodes = np.nonzero(graph.chunk_of >= 0)[0]
    if len(chunk_nodes) and len(dense_ids):
        ids = graph.chunk_of[chunk_nodes]
        rows = np.clip(np.searchsorted(dense_ids, ids), 0, len(dense_ids) - 1)
        ok = dense_ids[rows] == ids
        node_cos[chunk_nodes[ok]] = cosines[rows[ok]]

    roots_set = set(root_nodes.values())
    own_docs = set()
    for r in roots_set:
        sl = graph.slice(r)
        for j in range(sl.start, sl.stop):
            if graph.edge_kind[j] == member:
                own_docs.add(int(graph.nbr[j]))
    depth_of: dict[int, int] = {n: 0 for n in roots_set}
    # Path strength: the product of effective edge weights (capped at 1) along the
    # best path found, roots at 1.0: a spoke of a damped hub costs 1/degree, so a
    # chunk reached through a popular tag counts for little.
    strength: dict[int, float] = {n: 1.0 for n in roots_set}
    up_from_own: set[int] = set()
    visited = np.zeros(graph.n_edges, dtype=bool)
    level = sorted(roots_set)
    depth = 0
    while level and depth <= MAX_DEPTH:
        next_level: list[int] = []
        todo = level
        while todo:
            same: list[int] = []
            for node in todo:
                node_hub = bool(hub[node])
                last = depth == MAX_DEPTH
                if last and graph.kind_code[node] != doc_code:
                    # At the last depth only free hops remain, and the only free hop
                    # that reaches new chunks is a document's membership edges.
                    continue
                for j in _fan_out(graph, node, node_cos, fan_out, visited,
                                  node in up_from_own, member, chunk_code, only_membership=last):
                    visited[graph.edge_id[j]] = True
                    other = int(graph.nbr[j])
                    via = strength[node] * min(1.0, float(graph.weight[j]))
                    if other in depth_of:
                        if via > strength[other] and other not in roots_set:
                            strength[other] = via
                        continue
                    ocode = graph.kind_code[other]
                    if graph.edge_kind[j] == member or hub[other]:
                        cost = 0
                    else:
                        cost = 1 if (node_hub or ocode in (chunk_code, doc_code)) else 0
                    d = depth + cost
                    if d > MAX_DEPTH:
                        continue
                    depth_of[other] = d
                    strength[other] = via
                    if ocode == doc_code and graph.edge_kind[j] == member and other in own_docs:
                        up_from_own.add(other)
                    (same if cost == 0 else next_level).append(other)
            todo = same
        level = next_level
        depth += 1
    scored = []
    for node, d in depth_of.items():
        if graph.kind_code[node] == chunk_code and node not in roots_set:
            score = max(float(node_cos[node]), 0.0) * strength[node] / max(1, d)
            scored.append((int(graph.chunk_of[node]), score))
    scored.sort(key=lambda x: (-x[1], x[0]))
    return scored


def _fan_out(graph: GraphIndex, node: int, node_cos: np.ndarray, k: int, visited: np.ndarray,
             entered_from_own_chunk: bool, member: int, chunk_code: int,
             only_membership: bool = False) -> list[int]:
    """Half-edge positions to follow from ``node``: at most ``k``.

    Chunk neighbours are ranked by cosine to the query, others by (hub-damped)
    edge weight; the budget is shared, a short group leaving its share to the
    other. Edges already walked (from anywhere) are skipped, so a hub expands once.
    """
    sl = graph.slice(node)
    if sl.stop == sl.start:
        return []
    js = np.arange(sl.start, sl.stop)
    js = js[~visited[graph.edge_id[js]]]
    if only_membership:
        js = js[graph.edge_kind[js] == member]
    if entered_from_own_chunk:
        # Never walk back down into a root's own document (and spend no budget on it).
        js = js[graph.edge_kind[js] != member]
    if not len(js):
        return []
    others_nodes = graph.nbr[js]
    is_chunk = graph.kind_code[others_nodes] == chunk_code
    cj = js[is_chunk]
    oj = js[~is_chunk]
    cj = cj[np.lexsort((graph.nbr[cj], -node_cos[graph.nbr[cj]]))]
    oj = oj[np.lexsort((graph.nbr[oj], -graph.weight[oj]))]
    half = (k + 1) // 2
    take_c = min(len(cj), max(half, k - len(oj)))
    take_o = min(len(oj), k - take_c)
    return [int(j) for j in cj[:take_c]] + [int(j) for j in oj[:take_o]]


@hookimpl
def register_graph_channels(register):  # type: ignore[no-untyped-def]
    register(ExpandChannel())
