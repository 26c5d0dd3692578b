"""Structural edges: the free graph fabric every Markdown KB already has.

Weights: docs/design.md, "The graph". Shared values (a section, a directory, a tag) are
hub nodes marked ``damp``, so each spoke counts 1/degree when read:

=============  ===========================================  ===============
edge           connects                                     weight
=============  ===========================================  ===============
membership     chunk ↔ its document                         1.0 (transit)
sibling        chunk ↔ chunk, adjacent ordinal              1.0
parent         section chunk ↔ first chunk of a subsection  1.0
in-section     chunk ↔ heading node (per document)          1/section size
co-located     document ↔ directory node                    1/directory size
shared-tag     document ↔ tag node                          1/tag degree
authored       document ↔ document (sidecar and body links) 2.0
=============  ===========================================  ===============

A hierarchical file name is a folder written in the name: Dendron's ``a.b.c.md`` is
the child of ``a.b.md``, Logseq's ``a___b.md`` (or ``a%2Fb.md``) the page ``a/b``.
Such a note is co-located in the *directory* node its name stands for
(``folder/a.b``) instead of its real folder, and the parent note ``a.b.md`` joins
that node too, as a folder's own page would: children are siblings through
their hub, and one hub hop from their parent. Plain names (``v2.0``,
``Mr. Smith``, ``2023.01.05``) stay in their folder (``pinakes.dialects``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from posixpath import dirname

from pinakes import hookimpl
from pinakes.dialects import hierarchy_parent, parent_path, strip_suffix
from pinakes.graph import Changes, DocView, Edge, Node, chunk_node, doc_node

__version__ = "0.1.0"

AUTHORED_WEIGHT = 2.0
BODY_LINK_WEIGHT = 2.0


class StructuralDeriver:
    """Derives every structural edge of one document."""

    name = "structural"
    version = __version__

    def derive(self, doc: DocView, conn: sqlite3.Connection) -> Iterator[Edge]:
        d = doc.node
        first_of_section: dict[tuple[str, ...], int] = {}
        for chunk in doc.chunks:
            c = chunk_node(chunk.id)
            yield Edge(c, d, "membership", 1.0)
            first_of_section.setdefault(chunk.heading_path, chunk.id)
            if chunk.heading_path:
                heading = Node(
                    "heading",
                    f"{doc.key}:{json.dumps(list(chunk.heading_path), ensure_ascii=False)}",
                    chunk.heading_path[-1],
                    damp=True,
                )
                yield Edge(c, heading, "in-section", 1.0)
        for prev, nxt in zip(doc.chunks, doc.chunks[1:], strict=False):
            yield Edge(chunk_node(prev.id), chunk_node(nxt.id), "sibling", 1.0)
        for path, chunk_id in first_of_section.items():
            parent = _nearest_ancestor(path, first_of_section)
            if parent is not None and parent != chunk_id:
                yield Edge(chunk_node(parent), chunk_node(chunk_id), "parent", 1.0)
        hub = _hub_of(doc.path)
        yield Edge(d, Node("directory", hub, hub, damp=True), "co-located", 1.0)
        own = _own_hub(doc.path)
        if own != hub and _has_children(conn, doc.path):
            yield Edge(d, Node("directory", own, own, damp=True), "co-located", 1.0)
        for tag in doc.tags:
            key = str(tag).strip().lower()
            if key:
                yield Edge(d, Node("tag", key, str(tag), damp=True), "shared-tag", 1.0)
        yield from _authored(doc, conn)

    def affected(self, changes: Changes, conn: sqlite3.Connection) -> list[int]:
        """Parent notes whose first hierarchical child just appeared: they join its hub.

        Asked before the changed documents' edges are re-derived; a parent already
        in the hub (or with no note of its own) costs one indexed lookup.
        """
        out: list[int] = []
        for doc in changes.docs:
            parent = parent_path(doc.path)
            if parent is None:
                continue
            row = conn.execute("SELECT doc FROM documents WHERE path = ?", (parent,)).fetchone()
            if row is None:
                continue
            joined = conn.execute(
                "SELECT 1 FROM nodes a JOIN edges e ON e.src = a.id JOIN nodes b ON b.id = e.dst"
                " WHERE a.kind = 'doc' AND a.key = ? AND b.kind = 'directory' AND b.key = ? LIMIT 1",
                (str(row[0]), _hub_of(doc.path)),
            ).fetchone()
            if joined is None:
                out.append(int(row[0]))
        return out


def _hub_of(path: str) -> str:
    """The directory node a document is co-located in: its folder, or the one its name spells."""
    folder = dirname(path)
    parent = hierarchy_parent(strip_suffix(path.rsplit("/", 1)[-1]))
    if parent is None:
        return folder or "."
    return f"{folder}/{parent}" if folder else parent


def _own_hub(path: str) -> str:
    """The directory node of this document's hierarchical children (``x/a.b.md`` -> ``x/a.b``)."""
    return strip_suffix(path)


def _has_children(conn: sqlite3.Connection, path: str) -> bool:
    """Whether some document's hierarchical name makes it a child of ``path``'s note."""
    stem = strip_suffix(path)
    for sep in (".", "___", "%2F", "%2f"):
        prefix = stem + sep
        for (child,) in conn.execute(
            "SELECT path FROM documents WHERE path > ? AND path < ? LIMIT 20",
            (prefix, prefix + "\U0010ffff"),
        ):
            if parent_path(child) == path:
                return True
    return False


def _nearest_ancestor(path: tuple[str, ...], sections: dict[tuple[str, ...], int]) -> int | None:
    for cut in range(len(path) - 1, -1, -1):
        found = sections.get(path[:cut])
        if found is not None:
            return found
    return None


def _authored(doc: DocView, conn: sqlite3.Connection) -> Iterator[Edge]:
    """Document ↔ document edges from the links table (resolved links only).

    Body links of a ``[kb] no_link_hub`` page (a change log) are skipped: that
    page mentions everything it touched, and as edges it would join every
    document to every other one through itself. (A link's label and context, for
    relation-aware weighting, are ``DocView.authored_links``; an edge needs neither.)
    """
    try:
        found = doc.authored_targets(conn)
    except sqlite3.OperationalError:
        return  # no links table in this store
    for key, title in found:
        yield Edge(doc.node, doc_node(key, title), "authored", AUTHORED_WEIGHT)


@hookimpl
def register_edge_derivers(register):  # type: ignore[no-untyped-def]
    register(StructuralDeriver())
