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
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from posixpath import dirname

from pinakes import hookimpl
from pinakes.graph import DocView, Edge, Node, chunk_node, doc_node
from pinakes.links import NO_HUB

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
        folder = dirname(doc.path) or "."
        yield Edge(d, Node("directory", folder, folder, damp=True), "co-located", 1.0)
        for tag in doc.tags:
            key = str(tag).strip().lower()
            if key:
                yield Edge(d, Node("tag", key, str(tag), damp=True), "shared-tag", 1.0)
        yield from _authored(doc, conn)


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
    document to every other one through itself.
    """
    try:
        rows = conn.execute(
            "SELECT DISTINCT d.doc, d.title FROM links l JOIN documents d ON d.ulid = l.dst_ulid "
            "WHERE l.src_doc = ? AND l.dst_ulid IS NOT NULL AND (l.dst_kb IS NULL OR l.dst_kb = '')"
            " AND l.provenance != ?",
            (doc.key, NO_HUB),
        ).fetchall()
    except sqlite3.OperationalError:
        return  # no links table in this store
    for key, title in rows:
        if key != doc.key:
            yield Edge(doc.node, doc_node(key, title), "authored", AUTHORED_WEIGHT)


@hookimpl
def register_edge_derivers(register):  # type: ignore[no-untyped-def]
    register(StructuralDeriver())
