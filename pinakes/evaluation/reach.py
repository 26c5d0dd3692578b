"""The channel-reachable ceiling (docs/design.md, "The gates"): what the graph could reach from the seeds.

For each multi-hop question, the seeds are the fused top-k chunks (the roots a
graph channel receives). Every evidence document falls in one of four bins:

``seeded``
    already among the seeds' documents;
``reachable``
    within 2 logical hops of a seed, by a path the channel may return;
``membership_only``
    within 2 logical hops only through chunks of a seed's own document reached
    by membership (the membership exclusion forbids the channel to return those, and they
    do not spend its fan-out, so paths through them are not the channel's);
``beyond``
    not within 2 logical hops at all.

The **ceiling** is the mean, over multi-hop questions, of the share of
evidence that is seeded or reachable (comparable with recall@k). The two
**excluded shares** are the membership-only and beyond-2-hop shares of the
evidence the seeds miss.

Depth counts logical hops: a move from a chunk or document to
another chunk or document costs one hop whether it is a direct edge or passes
through hub nodes (tag, heading, directory, entity); membership (chunk ↔ its
document) costs nothing. Fan-out caps are deliberately *not* applied: the
ceiling is what the structure allows, and the gap between it and the channel
is what the gate weighs.

The graph itself is built by the graph plugins, not here. This module needs
only a :data:`ReachFn`: given the store and seed chunk ids, the reachable
documents. The built-in one reads ``nodes`` / ``edges`` tables of the shape
documented at :func:`sqlite_graph`; a graph channel may instead offer its own
``reachable_docs(store, seeds, hops)`` method returning a :class:`Reach`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Node kinds that carry content; everything else is a hub (passes through for free).
CHUNK_KINDS = frozenset({"chunk"})
DOC_KINDS = frozenset({"doc", "document"})
MEMBERSHIP_KINDS = frozenset({"membership", "member", "member_of", "contains"})
HOPS = 2


@dataclass(frozen=True)
class Reach:
    """Documents (store keys) within ``hops`` logical hops of the seeds.

    ``channel``: by paths the channel may return; ``with_membership``: also by
    paths through chunks of a seed's own document (a superset).
    """

    channel: frozenset[int]
    with_membership: frozenset[int]


#: Given the store and seed chunk ids, what is reachable; None when there is no graph.
ReachFn = Callable[[Any, Collection[int]], "Reach | None"]


@dataclass
class Graph:
    """An undirected graph in memory: node kinds, adjacency with edge kinds, node → store key."""

    kind: dict[int, str] = field(default_factory=dict)
    adj: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    chunk_node: dict[int, int] = field(default_factory=dict)  # chunk id -> node
    node_doc: dict[int, int] = field(default_factory=dict)  # content node -> document key
    label: dict[int, str] = field(default_factory=dict)  # for notes: "directory passages"
    blocked: frozenset[int] = frozenset()  # hubs not passed through (see corpus_hubs)

    edges: int = 0

    def add_edge(self, a: int, b: int, kind: str) -> None:
        self.edges += 1
        self.adj.setdefault(a, []).append((b, kind))
        self.adj.setdefault(b, []).append((a, kind))

    def is_content(self, node: int) -> bool:
        k = self.kind.get(node, "")
        return k in CHUNK_KINDS or k in DOC_KINDS

    def membership(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        """(chunk node → its document nodes, document node → its chunk nodes), built once.

        The walk looks these up for every node it reaches; scanning adjacency
        lists each time made a corpus-wide hub cost seconds per question.
        """
        cached = getattr(self, "_membership", None)
        if cached is not None and cached[0] == self.edges:
            return cached[1], cached[2]
        up: dict[int, list[int]] = {}
        down: dict[int, list[int]] = {}
        for node, nbrs in self.adj.items():
            kind = self.kind.get(node, "")
            if kind in CHUNK_KINDS:
                up[node] = [n for n, ek in nbrs if ek in MEMBERSHIP_KINDS
                            and self.kind.get(n, "") in DOC_KINDS]
            elif kind in DOC_KINDS:
                down[node] = [n for n, ek in nbrs if ek in MEMBERSHIP_KINDS
                              and self.kind.get(n, "") in CHUNK_KINDS]
        self._membership = (self.edges, up, down)
        return up, down


def corpus_hubs(graph: Graph, share: float = 0.5) -> dict[int, float]:
    """Hubs whose members span more than ``share`` of all documents: hub → that share.

    Such a hub (every passage of a dataset in one directory, a tag on most
    notes) puts the whole corpus one hop from anything. It carries no
    structure to exploit, and the channel crosses it only to its ``adjacent_k``
    best-cosine members, so counting its reach would pin the ceiling at 100%
    and blind the gate; the walk does not pass through it, and the report
    names it.
    """
    every_doc = len(set(graph.node_doc.values())) or 1
    out: dict[int, float] = {}
    for node, nbrs in graph.adj.items():
        if graph.is_content(node):
            continue
        docs = {graph.node_doc[n] for n, _ in nbrs if n in graph.node_doc}
        if len(docs) > share * every_doc and len(docs) > 2:
            out[node] = len(docs) / every_doc
    return out


def reach_from(graph: Graph, seed_chunks: Iterable[int], hops: int = HOPS) -> Reach:
    """Documents within ``hops`` logical hops of the seed chunks (see the module docstring)."""
    seeds = [graph.chunk_node[c] for c in seed_chunks if c in graph.chunk_node]
    return Reach(
        channel=frozenset(_reach(graph, seeds, hops, through_own_doc=False)),
        with_membership=frozenset(_reach(graph, seeds, hops, through_own_doc=True)),
    )


def _reach(graph: Graph, seeds: Sequence[int], hops: int, through_own_doc: bool) -> set[int]:
    seed_docs = {graph.node_doc[s] for s in seeds if s in graph.node_doc}
    best: dict[int, int] = {}  # content node -> fewest hops found
    frontier: list[int] = []
    # Depth 0: the seeds, their own document node, and (only when allowed) its other chunks.
    for s in seeds:
        for node in _free_closure(graph, s, allow_down=through_own_doc):
            if node not in best:
                best[node] = 0
                frontier.append(node)
    expanded_hubs: set[int] = set()  # a hub expands once per walk: the first time is the nearest
    docs = {graph.node_doc[n] for n in best if n in graph.node_doc}
    every_doc = len(set(graph.node_doc.values()))
    for depth in range(1, hops + 1):
        if len(docs) >= every_doc:
            break  # everything is reached (a corpus-wide hub): nothing left to find
        nxt: list[int] = []
        for node in frontier:
            for target in _one_hop(graph, node, expanded_hubs):
                if target in best:
                    continue  # reached no later before (the channel does not revisit either)
                # A document reached by a real hop opens its chunks (membership is free).
                for reached in _free_closure(graph, target, allow_down=True):
                    if reached not in best:
                        best[reached] = depth
                        nxt.append(reached)
                        if reached in graph.node_doc:
                            docs.add(graph.node_doc[reached])
        frontier = nxt
    if not through_own_doc:
        # A seed's own document counts as seeded, never as reached through membership.
        docs |= seed_docs
    return docs


def _free_closure(graph: Graph, node: int, allow_down: bool) -> list[int]:
    """``node`` plus what membership reaches for free: chunk → its document (→ its chunks)."""
    up, down = graph.membership()
    out = [node]
    docs = up.get(node)
    if docs is not None:
        out.extend(docs)
    elif node in down:
        docs = [node]
    if allow_down and docs:
        for d in docs:
            out.extend(down.get(d, ()))
    return out


def _one_hop(graph: Graph, start: int, seen_hubs: set[int]) -> set[int]:
    """Content nodes one logical hop from ``start``: a direct edge, or through hubs only.

    ``seen_hubs`` is shared by the whole walk: what a hub leads to was already
    reached (at no greater depth) the first time it was expanded, so a
    corpus-wide hub (one directory holding every document) costs its degree
    once, not once per member.
    """
    out: set[int] = set()
    stack: list[int] = []
    blocked = graph.blocked
    for n, ek in graph.adj.get(start, ()):
        if ek in MEMBERSHIP_KINDS:
            continue
        if graph.is_content(n):
            out.add(n)
        elif n not in seen_hubs and n not in blocked:
            seen_hubs.add(n)
            stack.append(n)
    while stack:  # hub pass-through is depth-free (hub → hub too, e.g. entity aliases)
        hub = stack.pop()
        for n, _ek in graph.adj.get(hub, ()):
            if graph.is_content(n):
                out.add(n)
            elif n not in seen_hubs and n not in blocked:
                seen_hubs.add(n)
                stack.append(n)
    out.discard(start)
    return out


# --- reading the graph from the store ---------------------------------------------------


class GraphSchemaUnknown(Exception):
    """The store has graph tables, but not in a shape this module can read."""


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")]


def _pick(cols: Sequence[str], names: Sequence[str]) -> str | None:
    return next((n for n in names if n in cols), None)


def sqlite_graph(conn: sqlite3.Connection) -> Graph | None:
    """Load the store's graph, or None when it has no (or an empty) ``edges`` table.

    The shape read (the graph release's store; column names are matched
    leniently so a renamed column does not silently zero the ceiling)::

        nodes(id INTEGER, kind TEXT, ref ...)   -- ref: chunks.id for a chunk node,
                                                --      documents.doc for a document node
        edges(src INTEGER, dst INTEGER, kind TEXT, ...)

    Raises :class:`GraphSchemaUnknown` when the tables exist but do not fit.
    """
    tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "edges" not in tables:
        return None
    if conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is None:
        return None
    if "nodes" not in tables:
        raise GraphSchemaUnknown("an edges table without a nodes table")
    ecols, ncols = _columns(conn, "edges"), _columns(conn, "nodes")
    src = _pick(ecols, ("src", "source", "a", "u", "from_node", "src_node"))
    dst = _pick(ecols, ("dst", "target", "b", "v", "to_node", "dst_node"))
    ekind = _pick(ecols, ("kind", "type", "rel", "edge_kind"))
    nid = _pick(ncols, ("id", "node", "node_id", "rowid"))
    nkind = _pick(ncols, ("kind", "type", "node_kind"))
    ref = _pick(ncols, ("ref", "ref_id", "key", "target_id", "object_id"))
    if not all((src, dst, ekind, nid, nkind)):
        raise GraphSchemaUnknown(f"edges({', '.join(ecols)}) / nodes({', '.join(ncols)})")
    graph = Graph()
    chunk_doc = {int(r[0]): int(r[1]) for r in conn.execute("SELECT id, doc FROM chunks")}
    ref_sql = f", {ref}" if ref else ""
    extra = _pick(ncols, ("chunk", "chunk_id"))
    docc = _pick(ncols, ("doc", "doc_id", "document"))
    cols = f"{nid}, {nkind}{ref_sql}" + (f", {extra}" if extra else "") + (f", {docc}" if docc else "")
    for row in conn.execute(f"SELECT {cols} FROM nodes"):
        node, kind = int(row[0]), str(row[1])
        vals = list(row[2:])
        r = vals.pop(0) if ref else None
        chunk_ref = vals.pop(0) if extra else None
        doc_ref = vals.pop(0) if docc else None
        graph.kind[node] = kind
        graph.label[node] = f"{kind} {r}" if r is not None else kind
        if kind in CHUNK_KINDS:
            cid = chunk_ref if chunk_ref is not None else r
            if cid is not None and int(cid) in chunk_doc:
                graph.chunk_node[int(cid)] = node
                graph.node_doc[node] = chunk_doc[int(cid)]
        elif kind in DOC_KINDS:
            d = doc_ref if doc_ref is not None else r
            if d is not None:
                graph.node_doc[node] = int(d)
    if not graph.chunk_node:
        raise GraphSchemaUnknown("no chunk node maps to a chunk id")
    for a, b, k in conn.execute(f"SELECT {src}, {dst}, {ekind} FROM edges"):
        graph.add_edge(int(a), int(b), str(k))
    return graph


@dataclass
class ReachReport:
    """The gate numbers for multi-hop questions (or why there are none)."""

    available: bool
    reason: str = ""
    questions: int = 0
    ceiling: float | None = None  # mean share of evidence seeded or channel-reachable
    ceiling_all: float | None = None  # share of questions with ALL evidence seeded or reachable
    seeded_share: float | None = None  # of all evidence
    beyond_2hop_share: float | None = None  # of the evidence the seeds miss
    membership_only_share: float | None = None  # of the evidence the seeds miss
    reachable_share: float | None = None  # of the evidence the seeds miss
    evidence: int = 0
    missed_by_seeds: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        if not self.available:
            return {"available": False, "reason": self.reason}
        return {k: v for k, v in self.__dict__.items()}


def classify(evidence: Collection[int], seed_docs: Collection[int], reach: Reach) -> dict[str, int]:
    """How many evidence documents fall in each bin (seeded, reachable, membership-only, beyond)."""
    out = {"seeded": 0, "reachable": 0, "membership_only": 0, "beyond": 0}
    for doc in evidence:
        if doc in seed_docs:
            out["seeded"] += 1
        elif doc in reach.channel:
            out["reachable"] += 1
        elif doc in reach.with_membership:
            out["membership_only"] += 1
        else:
            out["beyond"] += 1
    return out


def reach_report(
    items: Sequence[tuple[Collection[int], Collection[int], Collection[int]]],
    reach_fn: ReachFn,
    store: Any,
    notes: Sequence[str] = (),
) -> ReachReport:
    """Gate numbers from ``(evidence docs, seed chunk ids, seed docs)`` per multi-hop question."""
    if not items:
        return ReachReport(False, "no multi-hop questions")
    bins = {"seeded": 0, "reachable": 0, "membership_only": 0, "beyond": 0}
    shares: list[float] = []
    alls: list[float] = []
    for evidence, seeds, seed_docs in items:
        reach = reach_fn(store, seeds)
        if reach is None:
            return ReachReport(False, "n/a (no graph edges)")
        c = classify(evidence, seed_docs, reach)
        for key, v in c.items():
            bins[key] += v
        ok = c["seeded"] + c["reachable"]
        shares.append(ok / len(evidence))
        alls.append(1.0 if ok == len(evidence) else 0.0)
    total = sum(bins.values())
    missed = total - bins["seeded"]
    return ReachReport(
        True, questions=len(items), ceiling=sum(shares) / len(shares),
        ceiling_all=sum(alls) / len(alls), seeded_share=bins["seeded"] / total if total else None,
        beyond_2hop_share=bins["beyond"] / missed if missed else 0.0,
        membership_only_share=bins["membership_only"] / missed if missed else 0.0,
        reachable_share=bins["reachable"] / missed if missed else 0.0,
        evidence=total, missed_by_seeds=missed, notes=list(notes),
    )


def default_reach_fn(kb: Any, store: Any) -> tuple[ReachFn | None, str, list[str]]:
    """The reachability function for this KB: a channel's own, the store's graph, or none.

    Returns ``(fn, reason, notes)``; ``fn`` is None with the reason to print
    ("n/a (no graph edges)", or that the graph tables have an unknown shape);
    ``notes`` name the corpus-wide hubs the walk does not pass through.
    """
    for channel in (kb.graph_channels() or {}).values():
        own = getattr(channel, "reachable_docs", None)
        if callable(own):
            return (lambda st, seeds, _f=own: _f(st, seeds, HOPS)), "", []
    try:
        graph = sqlite_graph(store.conn)
    except GraphSchemaUnknown as exc:
        return None, f"n/a (graph tables not understood: {exc})", []
    except sqlite3.DatabaseError as exc:
        return None, f"n/a (graph unreadable: {exc})", []
    if graph is None:
        return None, "n/a (no graph edges)", []
    wide = corpus_hubs(graph)
    graph.blocked = frozenset(wide)
    notes = [
        f"not passed through: {graph.label.get(h, h)} (joins {share:.0%} of the documents)"
        for h, share in sorted(wide.items(), key=lambda kv: -kv[1])[:5]
    ]
    if len(wide) > 5:
        notes.append(f"... and {len(wide) - 5} more corpus-wide hubs")
    return (lambda _st, seeds, _g=graph: reach_from(_g, seeds)), "", notes


def seed_documents(chunk_doc: Mapping[int, int], seeds: Iterable[int]) -> set[int]:
    """The documents of the seed chunks."""
    return {chunk_doc[c] for c in seeds if c in chunk_doc}
