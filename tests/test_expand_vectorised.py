"""The vectorised ``expand`` channel gives exactly what the node-by-node walk gave.

``reference_expand`` below is the channel's previous implementation (one node
at a time, in frontier order), kept here as the specification: the vectorised
rounds must reach the same chunks with the same scores on graphs with hubs,
budgets that bind, edges between nodes of one round and roots that share
documents.
"""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from pinakes.graph import GRAPH_SCHEMA, Edge, GraphIndex, GraphWriter, Node, chunk_node, doc_node
from pinakes_expand import MAX_DEPTH, expand


def reference_expand(graph: GraphIndex, roots: list[int], dense_ids: np.ndarray,
                     cosines: np.ndarray, fan_out: int,
                     limit: int | None = None) -> list[tuple[int, float]]:
    fan_out = max(1, fan_out)
    root_nodes = graph.nodes_of_chunks(roots)
    if not root_nodes:
        return []
    hub = graph.is_hub
    doc_code, chunk_code = graph.code("doc"), graph.code("chunk")
    member = graph.ecode("membership")
    node_cos = np.zeros(graph.n, dtype=np.float32)
    chunk_nodes = np.nonzero(graph.chunk_of >= 0)[0]
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
    depth_of = {n: 0 for n in roots_set}
    strength = {n: 1.0 for n in roots_set}
    up_from_own: set[int] = set()
    visited = np.zeros(graph.n_edges, dtype=bool)
    level = sorted(roots_set)
    depth = 0

    def strongest(node: int) -> float:
        sl = graph.slice(node)
        return max((min(1.0, float(graph.weight[j])) for j in range(sl.start, sl.stop)),
                   default=0.0)

    cos_max = max(0.0, float(node_cos.max()))

    def bound(node: int, last: bool) -> float:
        """Strength × strongest edge × the best cosine it can reach: any chunk's, or at
        the last depth its own chunk neighbours'."""
        best = cos_max
        if last:
            sl = graph.slice(node)
            best = max((float(node_cos[graph.nbr[j]]) for j in range(sl.start, sl.stop)
                        if graph.kind_code[graph.nbr[j]] == chunk_code), default=0.0)
            best = max(best, 0.0)
        return strength[node] * strongest(node) * best

    def scored() -> list[tuple[int, float]]:
        out = []
        for node, d in depth_of.items():
            if graph.kind_code[node] == chunk_code and node not in roots_set:
                score = max(float(node_cos[node]), 0.0) * strength[node] / max(1, d)
                out.append((int(graph.chunk_of[node]), score))
        out.sort(key=lambda x: (-x[1], x[0]))
        return out

    while level and depth <= MAX_DEPTH:
        next_level: list[int] = []
        todo = level
        while todo:
            same: list[int] = []
            if limit is not None:
                # With a limit, a node whose bound is below the limit-th best score so
                # far, read when its batch starts, is not expanded.
                so_far = scored()
                if len(so_far) >= limit:
                    floor = so_far[limit - 1][1]
                    todo = [n for n in todo if bound(n, depth == MAX_DEPTH) >= floor]
            for node in todo:
                node_hub = bool(hub[node])
                last = depth == MAX_DEPTH
                if last and graph.kind_code[node] != doc_code:
                    continue
                for j in _fan_out(graph, node, node_cos, fan_out, visited, node in up_from_own,
                                  member, chunk_code, only_membership=last):
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
    return scored()[:limit]


def _fan_out(graph: GraphIndex, node: int, node_cos: np.ndarray, k: int, visited: np.ndarray,
             entered_from_own_chunk: bool, member: int, chunk_code: int,
             only_membership: bool = False) -> list[int]:
    sl = graph.slice(node)
    js = np.arange(sl.start, sl.stop)
    js = js[~visited[graph.edge_id[js]]]
    if only_membership:
        js = js[graph.edge_kind[js] == member]
    if entered_from_own_chunk:
        js = js[graph.edge_kind[js] != member]
    if not len(js):
        return []
    is_chunk = graph.kind_code[graph.nbr[js]] == chunk_code
    cj, oj = js[is_chunk], js[~is_chunk]
    cj = cj[np.lexsort((graph.nbr[cj], -node_cos[graph.nbr[cj]]))]
    oj = oj[np.lexsort((graph.nbr[oj], -graph.weight[oj]))]
    half = (k + 1) // 2
    take_c = min(len(cj), max(half, k - len(oj)))
    take_o = min(len(oj), k - take_c)
    return [int(j) for j in cj[:take_c]] + [int(j) for j in oj[:take_o]]


def random_graph(seed: int, n_docs: int = 120) -> GraphIndex:
    """Documents of 3-6 chunks with sibling edges, damped tags and folders, entity hubs
    that chunks mention, authored links between documents and links between chunks."""
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:")
    conn.executescript(GRAPH_SCHEMA)
    w = GraphWriter(conn)
    edges: list[Edge] = []
    cid = 0
    chunks: list[int] = []
    for d in range(1, n_docs + 1):
        doc = doc_node(d)
        mine = []
        for _ in range(rng.randint(3, 6)):
            cid += 1
            mine.append(cid)
            edges.append(Edge(chunk_node(cid), doc, "membership", 1.0))
        for a, b in zip(mine, mine[1:], strict=False):
            edges.append(Edge(chunk_node(a), chunk_node(b), "sibling", 1.0))
        for tag in rng.sample(range(8), 2):
            edges.append(Edge(doc, Node("tag", f"t{tag}", damp=True), "shared-tag", 1.0))
        edges.append(Edge(doc, Node("directory", f"dir{d % 4}", damp=True), "co-located", 1.0))
        if rng.random() < 0.8:
            other = rng.randint(1, n_docs)
            if other != d:
                edges.append(Edge(doc, doc_node(other), "authored", 2.0))
        chunks += mine
    for c in chunks:
        for _ in range(rng.randint(0, 3)):
            e = rng.randint(0, 30)
            edges.append(Edge(chunk_node(c), Node("entity", f"e{e}", damp=True), "mentions",
                              rng.choice([0.5, 1.0])))
        if rng.random() < 0.1:
            edges.append(Edge(chunk_node(c), chunk_node(rng.choice(chunks)), "authored",
                              rng.choice([1.0, 2.0])))
    w.add(edges, "test", None)
    w.finish()
    return GraphIndex.load(conn, 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_rounds_match_the_node_by_node_walk(seed: int) -> None:
    g = random_graph(seed)
    ids = np.sort(g.chunk_of[g.chunk_of >= 0])
    rng = np.random.default_rng(seed)
    compared = pruned = 0
    for q in range(12):
        cos = np.clip(rng.normal(0.15, 0.1, len(ids)), -0.2, 0.95).astype(np.float32)
        cos[rng.choice(len(ids), 5, replace=False)] = 0.5  # ties in the cosine order
        roots = [int(ids[i]) for i in rng.choice(len(ids), int(rng.integers(1, 12)),
                                                  replace=False)]
        for fan_out in (1, 3, 8):
            want = reference_expand(g, roots, ids, cos, fan_out)
            got = expand(g, roots, ids, cos, fan_out)
            assert [c for c, _ in got] == [c for c, _ in want], (seed, q, fan_out)
            assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-12, atol=0)
            compared += len(want)
            for limit in (10, 40):
                want_head = reference_expand(g, roots, ids, cos, fan_out, limit=limit)
                head = expand(g, roots, ids, cos, fan_out, limit=limit)
                assert [c for c, _ in head] == [c for c, _ in want_head], (seed, q, limit)
                assert np.allclose([s for _, s in head], [s for _, s in want_head],
                                   rtol=1e-12, atol=0)
                pruned += head != got[:limit]
    assert compared > 1000  # the walks reached something worth comparing
    assert pruned  # the limit changed some walks: the pruning was exercised
