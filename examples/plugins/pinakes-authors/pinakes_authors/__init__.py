"""Example edge deriver: documents whose front matter names the same author meet at an author hub."""

from pinakes import hookimpl
from pinakes.graph import Edge, Node


class AuthorDeriver:
    name = "authors"

    def derive(self, doc, conn):
        authors = doc.front_matter.get("author") or doc.front_matter.get("authors") or []
        for author in [authors] if isinstance(authors, str) else authors:
            hub = Node("author", str(author).strip().lower(), str(author), damp=True)
            yield Edge(doc.node, hub, "shared-author", 1.0)


@hookimpl
def register_edge_derivers(register):
    register(AuthorDeriver())
