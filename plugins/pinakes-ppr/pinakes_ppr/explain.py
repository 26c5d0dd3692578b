"""Why the walk ranked a chunk where it did (``pnk search --explain``).

A walk's score at a chunk is a sum over every path from the reset vector, so
there is no single reason; what can be shown exactly is where its mass came
from. At the walk's fixed point

    p[v] = (1 - d + d · dangling mass) · r[v] + d · Σ_u M[v, u] · p[u]

so each neighbour ``u`` brings ``d · M[v, u] · p[u]`` of ``v``'s score, with
``M`` the operator the walk really ran on (the query's relation weights
included). From the hit, :func:`flow_path` follows the neighbour that brings
the most, node by node, until a node's own reset term outweighs every
neighbour's: there the mass entered the walk, at a *seed* (a name the query
contains), a *root* (a fused top hit) or the query's *cosine* background.
Reversed, that is the path seed → edge (kind, weight, relation factor) → … →
hit. Edge kinds and weights are read from the graph, never assumed, so new
kinds and new weights need nothing here.

The rest of a hit's account is what :func:`pinakes_ppr.run_ppr` kept in its
:class:`~pinakes_ppr.Trace` when the search was explained: the walk's mass,
the centrality divisor, the log-scaled evidence and the hybrid's share that
the blend added (their sum is the channel's score for the hit), and, for a
document the bridges lifted (:mod:`.bridges`), its :class:`~pinakes_ppr.bridges.Lift`:
the score before and after, and each root that passed it a lift, over which
kind of link, with what fit of the link's context to the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: A path longer than this many edges is cut (a walk with damping 0.5 keeps ~3% of a
#: seed's mass after five steps, so a dominant flow is rarely longer).
MAX_HOPS = 8


def explain_walk(ctx: Any, trace: Any, graph: Any, op: Any, settings: Any,
                 chunk_ids: Sequence[int]) -> dict[str, Any]:
    """The channel's account: ``{"channel": {seeds, ...}, "hits": {chunk id: {walk, path}}}``."""
    from pinakes.explain import node_labels

    conn = ctx.store.conn
    seeds = list(getattr(trace, "seeds", None) or [])
    channel: dict[str, Any] = {
        "iterations": trace.iterations, "relation_edges": trace.relation_edges,
        "damping": settings.damping, "centrality_power": settings.centrality_power,
        "hybrid_weight": settings.hybrid_weight,
    }
    seed_labels = node_labels(conn, graph, [n for n, _ in seeds])
    channel["seeds"] = [{**seed_labels.get(n, {"kind": graph.kind(n), "label": "?"}),
                         "mass": float(m), "chunks": float(op.chunk_count[n])} for n, m in seeds]
    lifts = {int(lift.chunk_id): lift for lift in getattr(trace, "lifts", None) or []}
    channel["bridges"] = len(lifts)
    if trace.p is None or not trace.iterations:
        channel["note"] = ("no name of the graph in the query: no walk" if not seeds else
                           "the walk did not run") + \
            (f"; bridges lifted {len(lifts)} documents" if lifts else ": the hybrid ranking stands")
        return {"channel": channel, "hits": _bridges(ctx, graph, lifts, chunk_ids)}
    where = graph.nodes_of_chunks(list(chunk_ids))
    roots = graph.nodes_of_chunks(list(ctx.roots))
    origins = {n: "seed" for n, _ in seeds}
    for rank, cid in enumerate(ctx.roots, 1):
        if cid in roots:
            origins.setdefault(roots[cid], f"root #{rank}")
    divisor = (op.centrality_divisor(settings.damping, settings.centrality_power)
               if settings.centrality_power > 0 else None)
    paths = {cid: flow_path(op, trace.walk, trace.p, trace.reset, settings.damping, node)
             for cid, node in where.items()}
    labels = node_labels(conn, graph, {n for steps in paths.values() for n, *_ in steps})
    hits = _bridges(ctx, graph, lifts, chunk_ids)
    for cid, node in where.items():
        hits.setdefault(cid, {}).update(walk=_walk_numbers(trace, divisor, cid, node),
                                        path=_path_record(graph, paths[cid], labels, origins))
    return {"channel": channel, "hits": hits}


def _bridges(ctx: Any, graph: Any, lifts: Mapping[int, Any],
             chunk_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """``{chunk id: {"bridge": ...}}`` for the hits a bridge lifted (the lift's own record)."""
    from pinakes.explain import node_labels

    wanted = [c for c in chunk_ids if int(c) in lifts]
    if not wanted:
        return {}
    roots = graph.nodes_of_chunks([int(v["root_chunk"]) for c in wanted for v in lifts[c].via])
    labels = node_labels(ctx.store.conn, graph, roots.values())
    out: dict[int, dict[str, Any]] = {}
    for cid in wanted:
        lift = lifts[cid]
        via = [{**v, "root": labels.get(roots.get(int(v["root_chunk"]), -1), {}).get("label")}
               for v in lift.via]
        out[int(cid)] = {"bridge": {"before": lift.before, "lift": lift.lift, "after": lift.after,
                                    "gate": lift.gate, "resemblance": lift.resemblance,
                                    "vouched": lift.vouched, "via": via}}
    return out


def _walk_numbers(trace: Any, divisor: np.ndarray | None, cid: int, node: int) -> dict[str, Any]:
    """The hit's numbers from the walk to the blend: mass, ÷ centrality, evidence, + hybrid."""
    blend = trace.blend
    out: dict[str, Any] = {"mass": float(trace.p[node])}
    if divisor is not None:
        out["centrality_divisor"] = float(divisor[node])
    out["lifted"] = float(trace.scores[node]) if trace.scores is not None else None
    if blend:
        evidence = float(blend.get("evidence", {}).get(cid, 0.0))
        hybrid = float(blend.get("hybrid", {}).get(cid, 0.0))
        out.update(evidence=evidence, hybrid=hybrid, blend=evidence + hybrid)
    return out


def _in_flow(walk: Any, op: Any, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sources, M[v, u], base M[v, u])`` of node ``v``'s neighbours, summed per neighbour.

    ``walk`` is the operator the walk ran on: the channel's base operator, or a
    relation-reweighted one holding its change as a small sparse ``Δ`` (its rows,
    columns and values); the base coefficients come from the operator's CSR row.
    """
    lo, hi = int(op.indptr[v]), int(op.indptr[v + 1])
    src = np.asarray(op.cols[lo:hi], dtype=np.int64)
    coef = np.asarray(op.coef[lo:hi], dtype=np.float64)
    uniq, inv = np.unique(src, return_inverse=True)
    base = np.bincount(inv, weights=coef, minlength=len(uniq))
    eff = base.copy()
    rows = getattr(walk, "_rows", None)
    if walk is not op and rows is not None:
        at = int(np.searchsorted(rows, v))
        if at < len(rows) and int(rows[at]) == v:
            mask = walk._row_at == at
            cols = np.asarray(walk._cols)[walk._col_at[mask]]
            pos = np.searchsorted(uniq, cols)
            ok = (pos < len(uniq)) & (uniq[np.minimum(pos, len(uniq) - 1)] == cols)
            np.add.at(eff, pos[ok], np.asarray(walk._data)[mask][ok])
    return uniq, eff, base


def flow_path(op: Any, walk: Any, p: np.ndarray, reset: np.ndarray, damping: float,
              target: int) -> list[tuple[int, float, float, float]]:
    """The dominant flow into ``target``, from where its mass entered the walk.

    ``[(node, share, coefficient, base coefficient), ...]`` from the origin to
    ``target``: ``share`` is the part of the next node's score this node sent
    it (of the origin: its own reset term's part of its score).
    """
    lost = float(p[op.dangling].sum()) if len(op.dangling) else 0.0
    keep = 1.0 - damping + damping * lost
    back: list[tuple[int, float, float, float]] = []
    v, seen = int(target), {int(target)}
    while len(back) < MAX_HOPS:
        src, eff, base = _in_flow(walk, op, v)
        flow = damping * eff * p[src].astype(np.float64)
        flow[[i for i, u in enumerate(src) if int(u) in seen]] = -1.0
        own = keep * float(reset[v])
        best = int(np.argmax(flow)) if len(flow) else -1
        if best < 0 or flow[best] <= own:
            break
        u = int(src[best])
        back.append((v, float(flow[best]) / max(float(p[v]), 1e-300), float(eff[best]),
                     float(base[best])))
        v = u
        seen.add(u)
    origin_share = keep * float(reset[v]) / max(float(p[v]), 1e-300)
    out = [(v, origin_share, 0.0, 0.0)]
    node = v
    for nxt, share, eff, base in reversed(back):
        out.append((nxt, share, eff, base))
        node = nxt
    assert node == int(target)
    return out


def _path_record(graph: Any, steps: Sequence[tuple[int, float, float, float]],
                 labels: Mapping[int, Mapping[str, str]], origins: Mapping[int, str]
                 ) -> list[dict[str, Any]]:
    """The path as JSON: its origin, then per edge its kinds, weight and relation factor."""
    from pinakes.explain import edge_between

    out: list[dict[str, Any]] = []
    prev = None
    for node, share, eff, base in steps:
        step: dict[str, Any] = {**labels.get(node, {"kind": graph.kind(node), "label": "?"}),
                                "share": share}
        if prev is None:
            step["origin"] = origins.get(node) or ("query cosine" if graph.chunk_of[node] >= 0
                                                   else "walk")
            if len(steps) > MAX_HOPS:
                step["origin"] = "cut"
        else:
            kinds, weight = edge_between(graph, prev, node)
            step.update(edge=kinds, weight=weight,
                        relation=(eff / base) if base > 0 and abs(eff - base) > 1e-12 * base else None)
        out.append(step)
        prev = node
    return out
