"""Which documents a search looks at: ``pnk search --in notes/work --tag project``.

A notes vault mixes work and home, a docs site mixes versions and guides; a person
or an agent often knows where the answer lies. A :class:`Scope` names folders,
files or glob patterns (``within``) and tags; a search then ranks only the chunks
of documents under one of those paths that carry every tag. The scope is applied
inside each list before it is cut to its candidates (the lexical index's query,
the dense scores), so a narrow scope still gets its own best candidates rather
than whatever of the whole KB's top survived a filter.

Tags are the document's front-matter or sidecar ``tags`` and its inline ``#tags``,
matched in any case, with or without ``#``; a nested tag counts for its parents
(``project`` matches ``#project/alpha``), as Obsidian's tag search does.
"""

from __future__ import annotations

import difflib
import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .dialects import fold
from .errors import QueryError

__all__ = ["OutOfScope", "Scope", "ScopedDocs", "make_scope", "resolve_scope", "scope_clause", "scope_words"]

_GLOB = frozenset("*?[")


class OutOfScope(QueryError):
    """No document of the knowledge base is in the scope a search asked for."""


@dataclass(frozen=True)
class Scope:
    """Folders, files or globs (KB-relative) a document must be under, and tags it must carry."""

    within: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.within or self.tags)

    def to_dict(self) -> dict[str, Any]:
        return {"within": list(self.within), "tags": list(self.tags)}


@dataclass(frozen=True)
class ScopedDocs:
    """A scope resolved against one store generation: its documents and their chunks."""

    scope: Scope
    docs: tuple[int, ...]  # documents.doc keys, ascending
    chunk_ids: np.ndarray  # int64, ascending

    @property
    def docs_json(self) -> str:
        """The document keys as one JSON array: one SQL parameter however many there are."""
        return json.dumps(list(self.docs))

    def contains(self, chunk_ids: np.ndarray) -> np.ndarray:
        """A boolean mask: which of ``chunk_ids`` are in scope."""
        return np.isin(chunk_ids, self.chunk_ids, assume_unique=False)

    def to_dict(self) -> dict[str, Any]:
        return {**self.scope.to_dict(), "documents": len(self.docs)}


def make_scope(within: Iterable[str] = (), tags: Iterable[str] = (), root: Path | None = None) -> Scope:
    """A :class:`Scope` from what a user or agent wrote; a clear :class:`QueryError` for a bad part.

    A path is from the KB's root (``notes/work``), or absolute inside the KB ``root``
    (the CLI passes a path it found from the current folder that way); the root itself
    (``.``) is the whole KB. One leading outside is :class:`OutOfScope` (a fleet
    search skips that KB).
    """
    paths: list[str] = []
    for raw in within:
        if not isinstance(raw, str):
            raise QueryError(f"a scope path must be text (got {raw!r})")
        rel = _kb_relative(raw, root)
        if rel is None:
            raise OutOfScope(f"{raw!r} is outside the knowledge base")
        if rel == ".":
            return Scope((), _tags(tags))  # the whole KB
        if rel not in paths:
            paths.append(rel)
    return Scope(tuple(paths), _tags(tags))


def _kb_relative(raw: str, root: Path | None) -> str | None:
    """``raw`` as a KB-relative POSIX path (``.`` for the root), or None when it leads outside."""
    text = raw.strip().replace("\\", "/")
    if not text:
        raise QueryError("an empty scope path (write . for the whole knowledge base)")
    if text.startswith("/") or (len(text) > 2 and text[1] == ":"):  # absolute (POSIX or Windows)
        if root is None:
            return None
        try:
            return Path(text).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return None
    rel = posixpath.normpath(text)
    return None if rel == ".." or rel.startswith("../") else rel


def _tags(tags: Iterable[str]) -> tuple[str, ...]:
    """The folded tags a scope asks for (``#Project/`` is ``project``), each once."""
    wanted: list[str] = []
    for raw in tags:
        if not isinstance(raw, str):
            raise QueryError(f"a tag must be text (got {raw!r})")
        tag = _tag_key(raw)
        if not tag:
            raise QueryError(f"{raw!r} is no tag")
        if tag not in wanted:
            wanted.append(tag)
    return tuple(wanted)


def resolve_scope(conn: Any, scope: Scope) -> ScopedDocs:
    """The documents and chunks in ``scope``; :class:`OutOfScope` when there are none.

    A path or tag that alone matches nothing is named with the nearest ones the KB has
    ("did you mean #recipes?"): a typo is the usual reason.
    """
    docs = None
    if scope.within:
        docs = _docs_within(conn, scope.within)
        if not docs:
            raise OutOfScope(_nothing_in(Scope(scope.within)) + _nearest(scope.within, _folders(conn), ""))
    if scope.tags:
        index = _tag_index(conn)
        for tag in scope.tags:
            tagged = {d for key, ds in index.items() if key == tag or key.startswith(tag + "/") for d in ds}
            if not tagged:
                raise OutOfScope(_nothing_in(Scope(tags=(tag,))) + _nearest((tag,), index, "#"))
            docs = tagged if docs is None else docs & tagged
    found = tuple(sorted(docs or ()))
    if not found:
        raise OutOfScope(_nothing_in(scope))
    ids = np.array([r[0] for r in conn.execute(
        "SELECT id FROM chunks WHERE doc IN (SELECT value FROM json_each(?)) ORDER BY id",
        (json.dumps(list(found)),))], dtype=np.int64)
    return ScopedDocs(scope, found, ids)


def _nearest(asked: Sequence[str], known: Iterable[str], mark: str) -> str:
    """`` (did you mean 'recipes'?)`` for the known names closest to what was asked, or ``""``."""
    names = sorted(set(known))
    close = [m for a in asked for m in difflib.get_close_matches(a.casefold(), names, n=3, cutoff=0.6)]
    if not close:
        return ""
    shown = [f"{mark}{c}" if mark else repr(c) for c in dict.fromkeys(close)]
    return f" (did you mean {' or '.join(shown)}?)"


def _folders(conn: Any) -> set[str]:
    """Every folder that holds a document, as a KB-relative path."""
    out: set[str] = set()
    for (path,) in conn.execute("SELECT path FROM documents"):
        parts = str(path).split("/")[:-1]
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def _nothing_in(scope: Scope) -> str:
    """``no document under 'notes' is tagged #work``: the one line an empty scope gets."""
    under = " or ".join(repr(w) for w in scope.within)
    tagged = " and ".join(f"#{t}" for t in scope.tags)
    if under and tagged:
        return f"no document under {under} is tagged {tagged}"
    return f"no document is under {under}" if under else f"no document is tagged {tagged}"


def scope_words(scope: Mapping[str, Any]) -> str:
    """``under notes/work or home, tagged #project``: a scope (its ``to_dict``) in words, for
    the CLI's and the MCP answer's footers and ``--explain``."""
    parts = []
    if scope.get("within"):
        parts.append("under " + " or ".join(scope["within"]))
    if scope.get("tags"):
        parts.append("tagged " + " and ".join(f"#{t}" for t in scope["tags"]))
    return ", ".join(parts)


def scope_clause(column: str) -> str:
    """The SQL condition keeping ``column`` (a chunk id) in scope; its one parameter is
    :attr:`ScopedDocs.docs_json`."""
    return f"{column} IN (SELECT id FROM chunks WHERE doc IN (SELECT value FROM json_each(?)))"


def _tag_key(tag: str) -> str:
    return fold(tag.strip().lstrip("#").strip("/"))


def _docs_within(conn: Any, within: Sequence[str]) -> set[int]:
    """Documents at or under any of ``within``. A path that names none but holds ``*``, ``?``
    or ``[`` is a glob, matched against the whole path (``*`` across folders); so a folder
    really named ``Notes [old]`` is still found by its name."""
    found: set[int] = set()
    for w in within:
        docs = {int(r[0]) for r in conn.execute(
            "SELECT doc FROM documents WHERE path = ? OR substr(path, 1, ?) = ?", (w, len(w) + 1, w + "/"))}
        if not docs and _GLOB & set(w):
            docs = {int(r[0]) for r in conn.execute("SELECT doc FROM documents WHERE path GLOB ?", (w,))}
        found |= docs
    return found


def _tag_index(conn: Any) -> dict[str, set[int]]:
    """Every tag (folded, no ``#``) and the documents carrying it, in front matter or text."""
    rows = conn.execute(
        "SELECT d.doc, j.value FROM documents d, json_each(d.tags) j"
        " UNION ALL SELECT src_doc, key FROM links WHERE kind = 'tag'")
    index: dict[str, set[int]] = {}
    for doc, value in rows:
        key = _tag_key(value if isinstance(value, str) else str(value))
        if key:
            index.setdefault(key, set()).add(int(doc))
    return index
