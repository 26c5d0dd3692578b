"""``--explain``: why each hit is where it is, laid out from the search stages' own records.

Nothing here recomputes a score. :func:`pinakes.search.hybrid_search` keeps what
each stage computed when asked to explain (the lexical and dense lists, every
RRF term fusion summed, the document-evidence lift, what the graph channel
returned and how its list became the ranking, the priors' additions, the
confidence's features), and :func:`assemble` arranges those numbers per query
and per hit, in the order the pipeline ran. For every hit::

    fusion.score + graph.delta + priors.delta == score

where ``fusion.score`` is the sum of its RRF terms and its lift, exactly as
fusion added them. ``tests/test_explain.py`` checks that identity, so the
explanation cannot drift from the computation.

A graph channel adds its own account through an optional method
``explain(context, chunk_ids)`` (docs/plugins/plugin-hooks.md): the seeds it
started from and, per hit, the path that carried the hit's score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .sqlin import rows as sqlrows


def assemble(plan: Any, lexical: Any, dense: Any, lists: Any, trace: Any, hits: Sequence[Any],
             dfs: Mapping[str, int]) -> dict[str, Any]:
    """The query's explanation; each hit's goes on ``hit.explain``. Records: pinakes.search."""
    ids = [h.chunk_id for h in hits]
    channel = _channel_account(plan, trace, ids)
    out: dict[str, Any] = {
        "channel": {"requested": plan.requested, "in_force": plan.channel,
                    "why": plan.channel_reason,
                    "fusion": plan.fusion if plan.graph is not None else None},
        "lists": list(lists.ranked),
        "lexical": _lexical_query(plan, lexical, dfs),
        "dense": _dense_query(plan, dense),
        "fusion": {"rrf_k": plan.rrf_k, "weights": dict(plan.weights),
                   "doc_evidence": float(plan.cfg.get("doc_evidence", 0.0))},
        "graph": _graph_query(plan, trace, channel),
        "priors": {key: float(plan.cfg[key])
                   for key in ("salience_prior", "link_distance_rerank", "index_prior")},
    }
    rank_of = {name: {cid: i + 1 for i, cid in enumerate(r)} for name, r in lists.ranked.items()}
    per_hit = channel.get("hits") or {}
    for hit in hits:
        cid = hit.chunk_id
        fused = trace.fused.get(cid, 0.0)
        after = trace.after_graph.get(cid, fused)
        priors = trace.priors.get(cid, {})
        hit.explain = {
            "lexical": _lexical_hit(lexical, rank_of, cid),
            "dense": _dense_hit(plan, dense, rank_of, cid),
            "fusion": {"rrf": dict(trace.terms.get(cid, {})), "doc_evidence": trace.lift.get(cid, 0.0),
                       "score": fused},
            "graph": _graph_hit(plan, trace, rank_of, cid, fused, after, per_hit.get(cid)),
            "priors": {**priors, "delta": (sum(priors.values()) if priors else 0.0)},
            "score": hit.score,
        }
    return out


# --- per query -----------------------------------------------------------------------------


def _lexical_query(plan: Any, lexical: Any, dfs: Mapping[str, int]) -> dict[str, Any]:
    if lexical.ids is None:
        why = "no query terms" if not lexical.terms else "left out (channels)"
        return {"ran": False, "why": why, "terms": list(lexical.terms)}
    kept = set(lexical.kept)
    return {
        "ran": True,
        "terms": [{"term": t, "df": dfs.get(t), "idf": lexical.idf.get(t), "kept": t in kept}
                  for t in lexical.terms],
        "entities": list(plan.entities),
        "candidates": len(lexical.ids),
        "coverage": str(plan.cfg.get("lexical_coverage", "hit")),
        "coverage_power": float(plan.cfg.get("lexical_coverage_power", 1.0)),
    }


def _dense_query(plan: Any, dense: Any) -> dict[str, Any]:
    if dense.ids is None:
        return {"ran": False, "why": "no vectors yet"}
    best = float(dense.cosines.max()) if len(dense.cosines) else None
    return {"ran": True, "fused": "dense" in plan.fuse_lists, "candidates": len(dense.ids),
            "best_cosine": best, "floor": float(plan.cfg["dense_floor"]),
            "temperature": float(plan.cfg["dense_temperature"]),
            "concepts": list(plan.concepts)}


def _channel_account(plan: Any, trace: Any, ids: list[int]) -> dict[str, Any]:
    """What the channel says about itself and the hits (its optional ``explain``), or {}."""
    explain = getattr(plan.graph, "explain", None)
    if explain is None or trace.context is None:
        return {}
    found = explain(trace.context, ids) or {}
    return {"channel": dict(found.get("channel") or {}),
            "hits": {int(c): v for c, v in (found.get("hits") or {}).items()}}


def _graph_query(plan: Any, trace: Any, channel: Mapping[str, Any]) -> dict[str, Any] | None:
    if plan.graph is None:
        return None
    out: dict[str, Any] = {"channel": plan.channel, "fusion": plan.fusion,
                           "listed": len(trace.graph_hits), "roots": plan.roots_k}
    if not trace.graph_hits:
        out["note"] = "the channel added nothing: the hybrid ranking stands"
    if plan.fusion == "final" and trace.final:
        out["scale"] = dict(trace.final)
    out.update(channel.get("channel") or {})
    if not hasattr(plan.graph, "explain"):
        out["note"] = f"the {plan.channel} channel does not explain its list"
    return out


# --- per hit -------------------------------------------------------------------------------


def _lexical_hit(lexical: Any, rank_of: Mapping[str, Mapping[int, int]],
                 cid: int) -> dict[str, Any] | None:
    rank = rank_of.get("lexical", {}).get(cid)
    if rank is None:
        return None
    return {"rank": rank, "bm25": lexical.bm25.get(cid), "coverage": lexical.coverage.get(cid),
            "weight": lexical.weights.get(cid), "entity_phrases": lexical.entity_hits.get(cid, 0)}


def _dense_hit(plan: Any, dense: Any, rank_of: Mapping[str, Mapping[int, int]],
               cid: int) -> dict[str, Any] | None:
    cosine = _cosine(dense, cid)
    rank = rank_of.get("dense", {}).get(cid)
    if rank is None:  # not among the dense candidates (or dense did not fuse): no term
        return None if cosine is None else {"rank": None, "cosine": cosine, "weight": None}
    return {"rank": rank, "weight": dense.weights.get(cid), "cosine": cosine}


def _cosine(dense: Any, cid: int) -> float | None:
    """The chunk's cosine to the query, read from the dense stage's full cosine vector."""
    ids = dense.row_ids
    if ids is None or not len(dense.cosines):
        return None
    row = int(np.searchsorted(ids, cid))
    return float(dense.cosines[row]) if row < len(ids) and ids[row] == cid else None


def _graph_hit(plan: Any, trace: Any, rank_of: Mapping[str, Mapping[int, int]], cid: int,
               fused: float, after: float, account: Any) -> dict[str, Any] | None:
    if plan.graph is None:
        return None
    out: dict[str, Any] = {"rank": rank_of.get("graph", {}).get(cid), "delta": after - fused,
                           "score": after}
    listed = dict(trace.graph_hits)
    if cid in listed:
        out["channel_score"] = float(listed[cid])
    if trace.graph_hits:
        out["rrf"] = dict(trace.refused.get(cid, {}))
        if plan.fusion == "final" and trace.final:
            out["from"] = "channel score x top fused / top channel" if cid in listed else \
                "after the channel's list: floor x fused score / top fused"
        else:
            out["from"] = "RRF of the lists and the channel's list (no document-evidence lift)"
    if account:
        out.update(account)
    return out


# --- helpers for channels ----------------------------------------------------------------


def node_labels(conn: Any, graph: Any, nodes: Iterable[int]) -> dict[int, dict[str, str]]:
    """``{node index: {kind, label}}`` for some nodes of a :class:`~pinakes.graph.GraphIndex`.

    A chunk is shown as ``title > heading`` (line), a document by its title, a
    hub by its label (its key when it has none). For channels' ``explain``.
    """
    idx = sorted({int(n) for n in nodes})
    out: dict[int, dict[str, str]] = {}
    if not idx:
        return out
    ids = [int(graph.node_ids[i]) for i in idx]
    rows = {int(r[0]): (r[1], r[2], r[3])
            for r in sqlrows(conn, "SELECT id, kind, key, label FROM nodes WHERE id IN ({})", ids)}
    chunks = [int(graph.chunk_of[i]) for i in idx if graph.chunk_of[i] >= 0]
    where = _chunk_places(conn, chunks)
    for i, nid in zip(idx, ids, strict=True):
        kind, key, label = rows.get(nid, (graph.kind(i), str(nid), ""))
        if graph.chunk_of[i] >= 0:
            label = where.get(int(graph.chunk_of[i]), label or key)
        elif kind == "heading" and not label:
            label = key
        out[i] = {"kind": kind, "label": label or key}
    return out


def edge_between(graph: Any, u: int, v: int) -> tuple[str, float]:
    """The kinds of the edges joining nodes ``u`` and ``v`` ("+"-joined, as the graph names
    them) and their summed effective weight: one step of a channel's path."""
    sl = graph.slice(v)
    at = np.nonzero(graph.nbr[sl] == u)[0] + sl.start
    kinds = sorted({graph.edge_kinds[int(graph.edge_kind[j])] for j in at})
    return "+".join(kinds) or "?", float(graph.weight[at].sum())


def _chunk_places(conn: Any, chunk_ids: list[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for cid, title, heading, path, line in sqlrows(
            conn, "SELECT c.id, d.title, c.heading_path, d.path, c.start_line FROM chunks c "
            "JOIN documents d ON d.doc = c.doc WHERE c.id IN ({})", chunk_ids):
        head = [h for h in json.loads(heading) if h.strip().casefold() != title.strip().casefold()]
        out[int(cid)] = f"{title}" + (f" > {' > '.join(head)}" if head else "") + f" ({path}:{line})"
    return out


# --- the terminal form ---------------------------------------------------------------------


def _n(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    v = float(v)
    if v != 0 and (abs(v) < 10 ** -digits or abs(v) >= 1e5):
        return f"{v:.2e}"
    return f"{v:.{digits}f}"


def query_lines(explain: Mapping[str, Any]) -> list[str]:
    """The query's explanation for a terminal: terms, lists, channel and seeds, confidence."""
    lines = []
    ch = explain["channel"]
    lines.append(f"channel: {ch.get('why') or ch['in_force']} (asked: {ch['requested']})"
                 + (f"; its list joins as {ch['fusion']}" if ch.get("fusion") else ""))
    scope = explain.get("scope")
    if scope:
        from .scope import scope_words

        lines.append(f"scope: {scope['documents']} documents {scope_words(scope)}; "
                     "each list ranks only their chunks (the graph walks through any document)")
    lex = explain["lexical"]
    if lex.get("ran"):
        terms = ", ".join(f"{t['term']} (idf {_n(t['idf'], 2)}{'' if t['kept'] else ', not matched: common'})"
                          for t in lex["terms"])
        lines.append(f"lexical: {terms}; {lex['candidates']} candidates, coverage {lex['coverage']}")
        if lex.get("entities"):
            lines.append("  entity phrases: " + ", ".join(lex["entities"]))
    else:
        lines.append(f"lexical: not run ({lex['why']})")
    dense = explain["dense"]
    if dense.get("ran"):
        lines.append(f"dense: best cosine {_n(dense['best_cosine'], 3)}, floor {dense['floor']}, "
                     f"temperature {dense['temperature']}"
                     + ("" if dense.get("fused", True) else " (not fused: channels)"))
    fu = explain["fusion"]
    weights = ", ".join(f"{k} {v:g}" for k, v in fu["weights"].items())
    lines.append(f"fusion: RRF k={fu['rrf_k']:g}, weights {weights}, doc evidence {fu['doc_evidence']:g}")
    graph = explain.get("graph")
    if graph:
        lines.extend(_graph_query_lines(graph))
    pri = explain["priors"]
    on = [f"{k} {v:g}" for k, v in pri.items() if v]
    lines.append("priors: " + (", ".join(on) if on else "off"))
    conf = explain.get("confidence")
    if conf:
        lines.append(_confidence_line(conf))
        if conf.get("reader"):
            lines.append(_reader_line(conf["reader"]))
    return lines


def _graph_query_lines(graph: Mapping[str, Any]) -> list[str]:
    lines = [f"graph: {graph['channel']} listed {graph['listed']} chunks from the top "
             f"{graph['roots']} roots"]
    for seed in graph.get("seeds") or []:
        lines.append(f"  seed: {seed.get('label')!s} ({seed.get('kind')}, mass {_n(seed.get('mass'))}"
                     + (f", {seed['chunks']:g} chunks" if seed.get("chunks") is not None else "") + ")")
    if graph.get("bridges"):
        lines.append(f"  bridges lifted {graph['bridges']} document(s) linked from the top ones")
    if graph.get("note"):
        lines.append(f"  note: {graph['note']}")
    return lines


def _confidence_line(conf: Mapping[str, Any]) -> str:
    value = conf.get("value")
    line = "confidence: " + ("unknown" if value is None else f"{value:.3f}")
    line += f" (abstains below {conf.get('abstain_below')})"
    if conf.get("unknown"):
        line += f": {conf['unknown']}"
    if conf.get("abstained"):
        line += f"; abstains: {conf.get('reason') or 'below the threshold'}"
    feats = conf.get("features")
    if feats:
        line += "; features " + ", ".join(f"{k} {_n(v, 3)}" for k, v in feats.items())
    return line


def _reader_line(reader: Mapping[str, Any]) -> str:
    """What the confidence's reader found (pinakes.support): the answer kind it looked for,
    the sentence whose token stands for the answer, the asked words no top hit holds."""
    what = reader.get("expects_what")
    if what is None:
        line = "reader: no answer kind checked"
    else:
        expects = f"reader: expects {'an' if what[:1] in 'aeiou' else 'a'} {what}"
        line = (f"{expects}, found in \"{reader['answer_at']}\"" if reader.get("answer_at") else
                f"{expects}, none near the best-matching sentence "
                f"(typed gap {_n(reader.get('typed_gap'), 2)})")
    if reader.get("unsupported"):
        line += "; no top hit holds " + ", ".join(f"'{w}'" for w in reader["unsupported"])
    if reader.get("said_by") and reader.get("speaker"):
        line += (f"; said by {reader['said_by']}, asked of {reader['speaker']} "
                 f"(gap {_n(reader.get('speaker_gap'), 2)})")
    return line


def hit_lines(explain: Mapping[str, Any] | None) -> list[str]:
    """One hit's explanation (``hit.explain``) for a terminal, stage by stage, with what each added."""
    e = explain or {}
    lines = []
    lex, dense, fu = e.get("lexical"), e.get("dense"), e.get("fusion") or {}
    rrf = fu.get("rrf", {})
    if lex:
        lines.append(f"lexical #{lex['rank']}: bm25 {_n(lex['bm25'], 2)}, coverage "
                     f"{_n(lex['coverage'], 2)}, weight {_n(lex['weight'], 2)}"
                     + (f", {lex['entity_phrases']} entity phrases" if lex.get("entity_phrases") else "")
                     + f" -> +{_n(rrf.get('lexical', 0.0))}")
    if dense:
        lines.append(f"dense #{dense['rank']}: cosine {_n(dense['cosine'], 3)}, weight "
                     f"{_n(dense['weight'], 2)} -> +{_n(rrf.get('dense', 0.0))}")
    if fu.get("doc_evidence"):
        lines.append(f"fusion: {_n(sum(rrf.values()))} + doc evidence {_n(fu['doc_evidence'])} "
                     f"= {_n(fu.get('score'))}")
    else:
        lines.append(f"fusion: {_n(fu.get('score'))}")
    graph = e.get("graph")
    if graph and (graph.get("rank") or graph.get("delta") or graph.get("path")):
        lines.extend(_graph_hit_lines(graph))  # (a channel that added nothing: no line)
    pri = e.get("priors") or {}
    if pri.get("delta"):
        parts = ", ".join(f"{k} +{_n(v)}" for k, v in pri.items() if k != "delta" and v)
        lines.append(f"priors: {parts}")
    lines.append(f"= {_n(e.get('score'))}")
    return lines


def _graph_hit_lines(graph: Mapping[str, Any]) -> list[str]:
    rank = f"#{graph['rank']}" if graph.get("rank") else "(not listed)"
    delta = float(graph.get("delta") or 0.0)
    head = f"graph {rank}: {'+' if delta >= 0 else '-'}{_n(abs(delta))} -> {_n(graph.get('score'))}"
    if graph.get("channel_score") is not None:
        head += f" (channel score {_n(graph['channel_score'])})"
    lines = [head]
    reach = graph.get("reach")
    if reach:
        lines.append("  reach " + ", ".join(f"{k} {_n(v)}" for k, v in reach.items()))
    walk = graph.get("walk")
    if walk:
        lines.append("  walk " + ", ".join(f"{k} {_n(v)}" for k, v in walk.items()))
    path = graph.get("path") or []
    if path:
        lines.append("  path: " + _path_text(path))
    bridge = graph.get("bridge")
    if bridge:
        vouched = bridge.get("vouched") or 0.0
        gate = f"gate {_n(bridge.get('gate'), 2)}" + (
            f": resemblance {_n(bridge.get('resemblance'), 2)}, the best note's link {_n(vouched, 2)}"
            if vouched > 0 else "")
        lines.append(f"  bridge: {_n(bridge.get('before'))} -> {_n(bridge.get('after'))} ({gate})")
        for v in bridge.get("via") or []:
            found = ", ".join(v.get("context") or []) if isinstance(v.get("context"), list) \
                else str(v.get("context") or "")
            lines.append(f"    from {v.get('root')} by a {v.get('kind')} (fit {_n(v.get('fit'), 2)}"
                         + (f", on {found}" if found else "") + ")")
    return lines


def _path_text(path: Sequence[Mapping[str, Any]]) -> str:
    """``seed "X" (entity) -mentions x1.0-> ... -> hit``: one path, its first step its origin."""
    out = []
    for i, step in enumerate(path):
        node = f"{step.get('label')} ({step.get('kind')})"
        share = step.get("share")
        if i == 0:
            out.append(f"{step.get('origin', 'from')} {node}"
                       + (f" [{share:.0%} of its score]" if isinstance(share, float) else ""))
            continue
        w, rel = step.get("weight"), step.get("relation")
        tag = str(step.get("edge", "?"))
        tag += f" w{w:.3g}" if isinstance(w, float) and math.isfinite(w) else ""
        tag += f" relation x{rel:.3g}" if rel else ""
        tag += f" [{share:.0%}]" if isinstance(share, float) else ""
        out.append(f"-{tag}-> {node}")
    return " ".join(out)
