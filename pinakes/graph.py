"""The graph fabric: nodes and edges in the store, derived at sync time for free.

Node kinds are ``chunk``, ``doc``, ``tag``, ``heading`` (per document),
``directory`` and ``entity``, but any deriver may add its own. Shared values
always go through a *hub* node (a tag, a directory, a heading, an entity),
never as pairwise edges, so edge counts grow linearly with the KB. A hub
marked ``damp`` divides the weight of every edge touching it by its degree
(1/tag degree, 1/directory size, 1/section size), computed when read, so hub
weights stay right after any add, edit or delete without rewriting edges.

Edges are owned by the document whose derivation produced them: when a
document changes, its edges are deleted and every deriver runs again for it.
Removing a document removes its nodes and every edge touching them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .fsutil import remove_stray_temps
from .sqlin import batches
from .sqlin import marks as sqlmarks

GRAPH_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    damp INTEGER NOT NULL DEFAULT 0,      -- 1: edges touching it count 1/degree
    degree INTEGER NOT NULL DEFAULT 0,
    UNIQUE (kind, key)
);
CREATE TABLE IF NOT EXISTS edges (
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    kind TEXT NOT NULL,
    weight REAL NOT NULL,
    deriver TEXT NOT NULL,
    owner INTEGER                          -- document key whose change re-derives it
);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE INDEX IF NOT EXISTS edges_owner ON edges(owner);
"""

#: Node kinds that are hubs: they connect members and are passed through, not returned.
HUB_KINDS = frozenset({"tag", "heading", "directory", "entity"})


@dataclass(frozen=True)
class Node:
    """A graph node, named by ``(kind, key)``; ``damp`` makes it a degree-damped hub."""

    kind: str
    key: str
    label: str = ""
    damp: bool = False


@dataclass(frozen=True)
class Edge:
    """An undirected, weighted edge a deriver returns."""

    src: Node
    dst: Node
    kind: str
    weight: float = 1.0


def doc_node(doc_key: int, title: str = "") -> Node:
    """The node of a document (keyed by its internal key, stable across edits and renames)."""
    return Node("doc", str(doc_key), title)


def chunk_node(chunk_id: int) -> Node:
    """The node of a chunk."""
    return Node("chunk", str(chunk_id))


@dataclass
class ChunkView:
    """A chunk as derivers see it."""

    id: int
    ordinal: int
    heading_path: tuple[str, ...]
    text: str


@dataclass
class DocView:
    """A document as derivers see it: everything the store knows about it."""

    key: int
    ulid: str
    path: str
    title: str
    tags: list[str]
    meta: dict[str, Any]
    chunks: list[ChunkView] = field(default_factory=list)

    @property
    def front_matter(self) -> dict[str, Any]:
        fm = self.meta.get("front_matter")
        return fm if isinstance(fm, dict) else {}

    @property
    def node(self) -> Node:
        return doc_node(self.key, self.title)

    def authored_links(self, conn: sqlite3.Connection) -> list[Any]:
        """This document's resolved links with their label, context words and heading path.

        What a deriver needs to weigh a link by the relation it states
        (:func:`pinakes.links.authored_links`; imported here lazily, the graph
        module sits below the links module).
        """
        from .links import authored_links

        return authored_links(conn, self.key)

    def authored_targets(self, conn: sqlite3.Connection) -> list[tuple[int, str]]:
        """``(documents.doc, title)`` of the documents this one links to, once each, in order."""
        from .links import authored_targets

        return authored_targets(conn, self.key)


@dataclass
class Changes:
    """What a sync changed: documents to (re-)derive, and documents removed."""

    docs: list[DocView]
    removed: list[int]

    @property
    def any(self) -> bool:
        return bool(self.docs or self.removed)


def load_doc_views(conn: sqlite3.Connection, keys: Sequence[int]) -> list[DocView]:
    """Build :class:`DocView` objects for the given document keys."""
    views: dict[int, DocView] = {}
    for part in batches(keys):
        marks = sqlmarks(part)
        for r in conn.execute(
            f"SELECT doc, ulid, path, title, tags, meta FROM documents WHERE doc IN ({marks})", part
        ):
            views[r[0]] = DocView(r[0], r[1], r[2], r[3], json.loads(r[4]), json.loads(r[5]))
        for r in conn.execute(
            f"SELECT id, doc, ordinal, heading_path, text FROM chunks WHERE doc IN ({marks}) "
            "ORDER BY doc, ordinal",
            part,
        ):
            views[r[1]].chunks.append(ChunkView(r[0], r[2], tuple(json.loads(r[3])), r[4]))
    return [views[k] for k in keys if k in views]


class GraphWriter:
    """Applies derivers' edges to the store inside sync's transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._ids: dict[tuple[str, str], int] = {}
        self.touched: set[int] = set()

    def node_id(self, node: Node) -> int:
        key = (node.kind, node.key)
        found = self._ids.get(key)
        if found is not None:
            return found
        row = self.conn.execute(
            "SELECT id FROM nodes WHERE kind = ? AND key = ?", (node.kind, node.key)
        ).fetchone()
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO nodes(kind, key, label, damp) VALUES (?, ?, ?, ?)",
                (node.kind, node.key, node.label, int(node.damp)),
            )
            nid = int(cur.lastrowid)
        else:
            nid = int(row[0])
            if node.label:
                self.conn.execute("UPDATE nodes SET label = ? WHERE id = ? AND label != ?",
                                  (node.label, nid, node.label))
        self._ids[key] = nid
        return nid

    def forget_docs(self, doc_keys: Iterable[int], removed: Iterable[int]) -> None:
        """Delete edges owned by these documents; drop removed documents' nodes entirely."""
        for key in doc_keys:
            self._delete_where("owner = ?", (key,))
        for key in removed:
            self._delete_where("owner = ?", (key,))
            row = self.conn.execute(
                "SELECT id FROM nodes WHERE kind = 'doc' AND key = ?", (str(key),)
            ).fetchone()
            if row:
                self._delete_where("src = ? OR dst = ?", (row[0], row[0]))
                self.conn.execute("DELETE FROM nodes WHERE id = ?", (row[0],))
        self._drop_stale_chunk_nodes()

    def _drop_stale_chunk_nodes(self) -> None:
        # Chunk ids of a re-synced document are new; its old chunk nodes are stale.
        # Every such node lost its membership edge (owned by its document) just now,
        # so only the nodes touched by this sync need checking, not every chunk node.
        touched = sorted(self.touched)
        stale: list[int] = []
        for part in batches(touched):
            marks = sqlmarks(part)
            stale.extend(
                r[0]
                for r in self.conn.execute(
                    f"SELECT n.id FROM nodes n WHERE n.id IN ({marks}) AND n.kind = 'chunk' "
                    "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = CAST(n.key AS INTEGER))",
                    part,
                )
            )
        for nid in stale:
            self._delete_where("src = ? OR dst = ?", (nid, nid))
            self.conn.execute("DELETE FROM nodes WHERE id = ?", (nid,))

    def _delete_where(self, where: str, params: tuple[Any, ...]) -> None:
        for r in self.conn.execute(f"SELECT src, dst FROM edges WHERE {where}", params):
            self.touched.update((r[0], r[1]))
        self.conn.execute(f"DELETE FROM edges WHERE {where}", params)

    def add(self, edges: Iterable[Edge], deriver: str, owner: int | None) -> int:
        rows = []
        for e in edges:
            a, b = self.node_id(e.src), self.node_id(e.dst)
            if a == b:
                continue
            rows.append((a, b, e.kind, float(e.weight), deriver, owner))
            self.touched.update((a, b))
        self.conn.executemany(
            "INSERT INTO edges(src, dst, kind, weight, deriver, owner) VALUES (?,?,?,?,?,?)", rows
        )
        return len(rows)

    def finish(self) -> None:
        """Refresh degrees of touched nodes and drop nodes left without edges."""
        touched = list(self.touched)
        for part in batches(touched):
            marks = sqlmarks(part)
            self.conn.execute(
                f"UPDATE nodes SET degree = (SELECT count(*) FROM edges WHERE src = nodes.id) + "
                f"(SELECT count(*) FROM edges WHERE dst = nodes.id) WHERE id IN ({marks})",
                part,
            )
            self.conn.execute(f"DELETE FROM nodes WHERE id IN ({marks}) AND degree = 0", part)
        self._ids.clear()


def run_derivers(conn: sqlite3.Connection, derivers: dict[str, Any], changed: Sequence[int],
                 removed: Sequence[int]) -> int:
    """Re-derive edges for changed documents with every installed deriver.

    A deriver may define ``wants_full(changes, conn) -> bool`` to ask for a
    re-derivation of every document, or the narrower ``affected(changes, conn)``
    to name the other documents a change invalidates (e.g. those whose text
    names a title that changed). Returns the number of edges written.
    """
    if not derivers:
        return 0
    changes = Changes(load_doc_views(conn, list(changed)), list(removed))
    full = any(
        getattr(d, "wants_full", None) is not None and d.wants_full(changes, conn)
        for d in derivers.values()
    )
    if not changes.any and not full:
        return 0
    writer = GraphWriter(conn)
    if full:
        all_keys = [r[0] for r in conn.execute("SELECT doc FROM documents ORDER BY doc")]
        changes = Changes(load_doc_views(conn, all_keys), list(removed))
    # ``affected(changes, conn) -> Iterable[doc key]``: other documents whose edges this
    # change invalidates (their text names a title that was added, changed or removed).
    # Asked before anything is forgotten; they are re-derived by every deriver, like a
    # changed document, so a new title costs the documents naming it, not a full pass.
    extra: set[int] = set()
    for _name, deriver in sorted(derivers.items()):
        affected = getattr(deriver, "affected", None)
        if affected is not None:
            extra.update(int(k) for k in affected(changes, conn))
    extra.difference_update(d.key for d in changes.docs)
    extra.difference_update(removed)
    if extra:
        changes = Changes(changes.docs + load_doc_views(conn, sorted(extra)), list(removed))
    writer.forget_docs([d.key for d in changes.docs], removed)
    written = 0
    for name, deriver in sorted(derivers.items()):
        begin = getattr(deriver, "begin", None)
        if begin is not None:
            begin(changes, conn)
        for doc in changes.docs:
            written += writer.add(deriver.derive(doc, conn), name, doc.key)
    writer.finish()
    return written


# --- reading --------------------------------------------------------------------


def has_graph(conn: sqlite3.Connection) -> bool:
    """True when the store holds any edge."""
    return conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is not None


class GraphIndex:
    """The whole graph of one store generation in memory, as CSR arrays.

    Query-time channels walk this instead of issuing SQL per hop: building it
    costs one scan of ``nodes`` and ``edges`` per sync generation, and then a
    hop is an array slice. Edges are undirected: each is stored in both
    directions, sharing one ``edge_id`` so a visited-edge set covers both.
    Hub damping is applied here (weight / degree of each damped end).
    """

    def __init__(self, generation: int, node_ids: np.ndarray, kinds: list[str],
                 kind_code: np.ndarray, keys: list[str], chunk_of: np.ndarray,
                 indptr: np.ndarray, nbr: np.ndarray, weight: np.ndarray,
                 edge_kind: np.ndarray, edge_id: np.ndarray, edge_kinds: list[str],
                 damped: np.ndarray | None = None) -> None:
        self.generation = generation
        self.node_ids = node_ids      # store node id per index, ascending
        self.kinds = kinds            # kind names; kind_code indexes into it
        self.kind_code = kind_code    # int8 per node
        self.keys = keys              # node key per index
        self.chunk_of = chunk_of      # chunk id per node index, -1 if not a chunk
        self.indptr = indptr          # CSR row pointers (n + 1)
        self.nbr = nbr                # neighbour node index per half-edge
        self.weight = weight          # effective (damped) weight per half-edge
        self.edge_kind = edge_kind    # int8 per half-edge; indexes edge_kinds
        self.edge_id = edge_id        # shared id of the two halves of an edge
        self.edge_kinds = edge_kinds
        hub_codes = np.array([k in HUB_KINDS for k in kinds] + [False], dtype=bool)
        #: Hub nodes are passed through (free hops): a hub kind or any damped node.
        self.damped = damped if damped is not None else np.zeros(len(kind_code), dtype=bool)
        self.is_hub = hub_codes[kind_code] | self.damped
        order = np.argsort(chunk_of)
        self._chunk_sorted = chunk_of[order]
        self._chunk_order = order

    @property
    def n(self) -> int:
        return len(self.node_ids)

    @property
    def n_edges(self) -> int:
        return len(self.nbr) // 2

    def kind(self, idx: int) -> str:
        return self.kinds[int(self.kind_code[idx])]

    def code(self, kind: str) -> int:
        """The code of a node kind, -1 if the graph has none of it."""
        return self.kinds.index(kind) if kind in self.kinds else -1

    def ecode(self, kind: str) -> int:
        """The code of an edge kind, -1 if the graph has none of it."""
        return self.edge_kinds.index(kind) if kind in self.edge_kinds else -1

    def nodes_of_chunks(self, chunk_ids: Sequence[int]) -> dict[int, int]:
        """Node index of each chunk id that has a node."""
        if not len(chunk_ids) or not len(self._chunk_sorted):
            return {}
        ids = np.asarray(chunk_ids, dtype=np.int64)
        pos = np.searchsorted(self._chunk_sorted, ids)
        pos = np.clip(pos, 0, len(self._chunk_sorted) - 1)
        hit = self._chunk_sorted[pos] == ids
        return {c: o for c, o, h in zip(ids.tolist(), self._chunk_order[pos].tolist(), hit.tolist(),
                                        strict=True) if h}

    def slice(self, idx: int) -> slice:
        return slice(int(self.indptr[idx]), int(self.indptr[idx + 1]))

    @classmethod
    def load(cls, conn: sqlite3.Connection, generation: int,
             cache: Path | None = None) -> GraphIndex:
        """Read the graph of the current snapshot into arrays.

        With ``cache`` (the store's folder), the arrays are also left in
        :data:`GRAPH_CACHE` for the next process, and taken from there when that
        file is of this very store and generation: building them from SQL costs
        ~0.9 s of CPU at 50k chunks (the ``sqlite3`` module making 450k row
        tuples), reading them back ~0.07 s. That is what a one-shot ``pnk search``
        on a large KB pays otherwise. The file is derived and disposable: a
        reader that cannot write it, or finds it damaged, builds from SQL.
        """
        if cache is None:
            return cls._from_sql(conn, generation)
        with _read_transaction(conn):
            key = _cache_key(conn, generation)
            found = _read_cache(cache / GRAPH_CACHE, key) if key else None
            if found is not None:
                return found
            graph = cls._from_sql(conn, generation)
        if key:
            _write_cache(cache / GRAPH_CACHE, key, graph)
        return graph

    @classmethod
    def _from_sql(cls, conn: sqlite3.Connection, generation: int) -> GraphIndex:
        rows = conn.execute("SELECT id, kind, key, damp, degree FROM nodes ORDER BY id").fetchall()
        n = len(rows)
        node_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        kinds: list[str] = sorted({r[1] for r in rows})
        code = {k: i for i, k in enumerate(kinds)}
        kind_code = np.fromiter((code[r[1]] for r in rows), dtype=np.int8, count=n)
        keys = [r[2] for r in rows]
        damp_div = np.fromiter(
            ((max(1, r[4]) if r[3] else 1) for r in rows), dtype=np.float64, count=n
        )
        chunk_code = code.get("chunk", -1)
        chunk_of = np.full(n, -1, dtype=np.int64)
        for i, r in enumerate(rows):
            if kind_code[i] == chunk_code:
                chunk_of[i] = int(r[2])
        erows = conn.execute("SELECT rowid, src, dst, kind, weight FROM edges").fetchall()
        m = len(erows)
        edge_kinds: list[str] = sorted({r[3] for r in erows})
        ecode = {k: i for i, k in enumerate(edge_kinds)}
        # Edge ids are dense positions 0..m-1 (not rowids), so a channel can keep its
        # visited-edge set as one boolean array.
        eid = np.arange(m, dtype=np.int64)
        src = np.searchsorted(node_ids, np.fromiter((r[1] for r in erows), dtype=np.int64, count=m))
        dst = np.searchsorted(node_ids, np.fromiter((r[2] for r in erows), dtype=np.int64, count=m))
        w = np.fromiter((r[4] for r in erows), dtype=np.float64, count=m)
        ek = np.fromiter((ecode[r[3]] for r in erows), dtype=np.int8, count=m)
        if m:
            w = w / damp_div[src] / damp_div[dst]
        a = np.concatenate([src, dst])
        b = np.concatenate([dst, src])
        order = np.argsort(a, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        if m:
            np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
        return cls(
            generation, node_ids, kinds, kind_code, keys, chunk_of, indptr,
            b[order].astype(np.int64), np.concatenate([w, w])[order].astype(np.float32),
            np.concatenate([ek, ek])[order], np.concatenate([eid, eid])[order], edge_kinds,
            damped=np.fromiter((bool(r[3]) for r in rows), dtype=bool, count=n),
        )


#: Where a reader leaves the graph arrays for the next process (in ``.pinakes/``).
GRAPH_CACHE = "graph-cache.npz"
_ARRAYS = ("node_ids", "kind_code", "chunk_of", "indptr", "nbr", "weight", "edge_kind",
           "edge_id", "damped")


@contextlib.contextmanager
def _read_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One snapshot for the cache key and the rows (unless the caller already holds one)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _cache_key(conn: sqlite3.Connection, generation: int) -> str | None:
    """What the graph file must match: this store, its generation, its row counts.

    Every sync that changes nodes or edges moves the generation; the store id
    (set when a store is created, so a rebuilt one differs) keeps a rebuilt
    store's generation 3 from matching the old one's; the counts and largest ids
    are a cheap second check. None for a store without an id (made before ids
    were written; the next sync adds one).
    """
    row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
    if row is None:
        return None
    nodes = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM nodes").fetchone()
    edges = conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM edges").fetchone()
    return f"{row[0]}:{generation}:{nodes[0]}:{nodes[1]}:{edges[0]}:{edges[1]}"


def _text_blob(items: Sequence[str]) -> np.ndarray:
    return np.frombuffer("\0".join(items).encode("utf-8"), dtype=np.uint8)


def _blob_text(blob: np.ndarray, count: int) -> list[str]:
    if count == 0:
        return []
    out = blob.tobytes().decode("utf-8").split("\0")
    if len(out) != count:
        raise ValueError("graph cache: text list does not match its count")
    return out


def _read_cache(path: Path, key: str) -> GraphIndex | None:
    """The cached graph if ``path`` holds this ``key``'s; None otherwise (or if damaged)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if bytes(z["key"].tobytes()).decode("utf-8") != key:
                return None
            a = {name: z[name] for name in _ARRAYS}
            counts = z["counts"]
            kinds = _blob_text(z["kinds"], int(counts[0]))
            edge_kinds = _blob_text(z["edge_kinds"], int(counts[1]))
            keys = _blob_text(z["keys"], len(a["node_ids"]))
    except Exception:  # noqa: BLE001 - missing, half-written, damaged (zipfile raises a zoo:
        return None  # BadZipFile, NotImplementedError for a flipped version field, ...): from SQL
    generation = int(key.split(":")[1])
    return GraphIndex(generation, a["node_ids"], kinds, a["kind_code"], keys, a["chunk_of"],
                      a["indptr"], a["nbr"], a["weight"], a["edge_kind"], a["edge_id"],
                      edge_kinds, damped=a["damped"])


def _write_cache(path: Path, key: str, graph: GraphIndex) -> None:
    """Leave ``graph`` in ``path`` for the next reader: a temp file renamed over it.

    Best effort: a read-only store, a full disk or a key that cannot be joined
    leaves no file and changes nothing else.
    """
    texts = (*graph.kinds, *graph.edge_kinds, *graph.keys)
    if any("\0" in t for t in texts):
        return
    arrays = {name: getattr(graph, name) for name in _ARRAYS}
    remove_stray_temps(path)  # left by a reader killed while writing
    try:
        # Named like atomic_write's temps (the writer's pid), so is_stray_temp knows them.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, key=np.frombuffer(key.encode("utf-8"), dtype=np.uint8),
                     counts=np.array([len(graph.kinds), len(graph.edge_kinds)], dtype=np.int64),
                     kinds=_text_blob(graph.kinds), edge_kinds=_text_blob(graph.edge_kinds),
                     keys=_text_blob(graph.keys), **arrays)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def edge_counts(conn: sqlite3.Connection) -> tuple[dict[str, int], dict[str, int]]:
    """Node counts by kind and edge counts by kind (for ``pnk status``)."""
    nodes = {r[0]: r[1] for r in conn.execute("SELECT kind, count(*) FROM nodes GROUP BY kind")}
    edges = {r[0]: r[1] for r in conn.execute("SELECT kind, count(*) FROM edges GROUP BY kind")}
    return nodes, edges


def top_hubs(conn: sqlite3.Connection, limit: int = 10) -> list[dict[str, Any]]:
    """The highest-degree hub nodes (``pnk doctor``): a tag linking everything is glue."""
    docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0] or 1
    out = []
    for r in conn.execute(
        "SELECT kind, key, label, degree FROM nodes WHERE kind NOT IN ('chunk', 'doc') "
        "ORDER BY degree DESC, kind, key LIMIT ?",
        (limit,),
    ):
        out.append({"kind": r[0], "key": r[1], "label": r[2] or r[1], "degree": r[3],
                    "share": round(r[3] / docs, 3)})
    return out
