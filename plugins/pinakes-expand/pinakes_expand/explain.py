"""Why the expansion reached a chunk and scored it as it did (``pnk search --explain``).

:func:`pinakes_expand.expand` keeps, for an explained search, its per-node
depth, path strength and visited edges. A reached chunk's score is
``max(cosine, 0) × strength / max(1, depth)``, and its strength is the product
of the (capped) edge weights of the best path found to it, so the path is
recovered from those records alone: from the chunk, step to the neighbour over
a visited edge whose strength times that edge's weight gives the chunk's
strength, until a root. Edge kinds and weights are read from the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MAX_STEPS = 12  # two logical hops can pass through several free (hub, membership) edges


def explain_reach(ctx: Any, graph: Any, record: Mapping[str, Any],
                  chunk_ids: Sequence[int]) -> dict[str, Any]:
    """The channel's account: ``{"channel": {roots, ...}, "hits": {chunk id: {reach, path}}}``."""
    from pinakes.explain import edge_between, node_labels

    if not record:
        return {"channel": {"note": "no root is in the graph: nothing expanded"}, "hits": {}}
    depth, strength = record["depth_of"], record["strength"]
    where = graph.nodes_of_chunks(list(chunk_ids))
    paths = {cid: reach_path(graph, record, node) for cid, node in where.items()
             if depth[node] > 0}
    labels = node_labels(ctx.store.conn, graph, {n for p in paths.values() for n in p})
    ids = ctx.dense.ids
    hits = {}
    for cid, steps in paths.items():
        node, row = where[cid], int(np.searchsorted(ids, cid))
        cos = float(ctx.cosines[row]) if row < len(ids) and ids[row] == cid else 0.0
        path = []
        for i, n in enumerate(steps):
            step = dict(labels.get(n, {"kind": graph.kind(n), "label": "?"}))
            if i == 0:
                step["origin"] = "root"
            else:
                step["edge"], step["weight"] = edge_between(graph, steps[i - 1], n)
            path.append(step)
        hits[cid] = {"reach": {"depth": int(depth[node]), "strength": float(strength[node]),
                               "cosine": cos}, "path": path}
    return {"channel": {"roots": len(record["roots"]), "fan_out": record.get("fan_out")},
            "hits": hits}


def reach_path(graph: Any, record: Mapping[str, Any], target: int) -> list[int]:
    """Node indices from a root to ``target`` along the path its strength came from."""
    depth, strength, visited = record["depth_of"], record["strength"], record["visited"]
    is_root = np.zeros(graph.n, dtype=bool)
    is_root[record["roots"]] = True
    back = [int(target)]
    v = int(target)
    while not is_root[v] and len(back) <= MAX_STEPS:
        sl = graph.slice(v)
        nbr = graph.nbr[sl].astype(np.int64)
        ok = visited[graph.edge_id[sl]] & (depth[nbr] >= 0) & ~np.isin(nbr, back)
        if not ok.any():
            break
        via = strength[nbr] * np.minimum(1.0, graph.weight[sl].astype(np.float64))
        # The neighbour whose strength over this edge gives v's: v's best path came from it.
        miss = np.where(ok, np.abs(via - strength[v]), np.inf)
        order = np.lexsort((depth[nbr], ~is_root[nbr], miss))
        v = int(nbr[order[0]])
        back.append(v)
    return back[::-1]
