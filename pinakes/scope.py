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

``since`` and ``until`` keep the documents dated in that span (a year, a month or a day
each, both ends included): a journal's day or a chat session, dated by its front matter
(``date``, ``created``, ``day``) or its file name (``2024-03-14.md``, Logseq's
``2024_03_14.md``, ``March 14th, 2024.md``, ``2024-02-19-session-02.md``). A document
with no date is outside any span.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .dialects import DATE_FIELDS, date_key, fold, strip_suffix
from .errors import QueryError
from .fsutil import glob_regex

__all__ = ["OutOfScope", "Scope", "ScopedDocs", "make_scope", "note_span", "resolve_scope", "scope_clause",
           "scope_outline", "scope_words"]

_GLOB = frozenset("*?")


class OutOfScope(QueryError):
    """No document of the knowledge base is in the scope a search asked for."""


@dataclass(frozen=True)
class Scope:
    """Folders, files or globs (KB-relative) a document must be under, and tags it must carry."""

    within: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: str = ""  # the first day in the span (YYYY-MM-DD), "" for no bound
    until: str = ""  # the last day in the span, "" for no bound
    not_within: tuple[str, ...] = ()  # folders, files or globs left out (an archive)

    def __bool__(self) -> bool:
        return bool(self.within or self.tags or self.since or self.until or self.not_within)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"within": list(self.within), "tags": list(self.tags)}
        if self.not_within:
            out["not_within"] = list(self.not_within)
        if self.since or self.until:
            out.update(since=self.since or None, until=self.until or None)
        return out


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


def make_scope(within: Iterable[str] = (), tags: Iterable[str] = (), root: Path | None = None,
               since: str | None = None, until: str | None = None,
               not_within: Iterable[str] = ()) -> Scope:
    """A :class:`Scope` from what a user or agent wrote; a clear :class:`QueryError` for a bad part.

    A path is from the KB's root (``notes/work``), or absolute inside the KB ``root``
    (the CLI passes a path it found from the current folder that way); the root itself
    (``.``) is the whole KB. One leading outside is :class:`OutOfScope` (a fleet
    search skips that KB). ``since`` / ``until``: ``2024``, ``2024-03`` or ``2024-03-14``.
    ``not_within`` (paths as ``within``) leaves documents out; one outside the KB leaves
    nothing out, and the whole KB is refused.
    """
    left_out: list[str] = []
    for raw in not_within:
        if not isinstance(raw, str):
            raise QueryError(f"a scope path must be text (got {raw!r})")
        rel = _kb_relative(raw, root)
        if rel == ".":
            raise QueryError(f"leaving out {raw!r} leaves out the whole knowledge base")
        if rel is not None and rel not in left_out:
            left_out.append(rel)
    first, last = _day(since, "since", first=True), _day(until, "until", first=False)
    if first and last and first > last:
        raise QueryError(f"since {since} is after until {until}")
    dates: dict[str, Any] = {"since": first, "until": last, "not_within": tuple(left_out)}
    paths: list[str] = []
    for raw in within:
        if not isinstance(raw, str):
            raise QueryError(f"a scope path must be text (got {raw!r})")
        rel = _kb_relative(raw, root)
        if rel is None:
            raise OutOfScope(f"{raw!r} is outside the knowledge base")
        if rel == ".":
            return Scope((), _tags(tags), **dates)  # the whole KB
        if rel not in paths:
            paths.append(rel)
    return Scope(tuple(paths), _tags(tags), **dates)


_DAY_ARG = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")


def _day(value: str | None, name: str, *, first: bool) -> str:
    """``2024`` / ``2024-03`` / ``2024-03-14`` as the first (or last) day it covers, ISO."""
    if value is None or not str(value).strip():
        return ""
    m = _DAY_ARG.match(str(value).strip())
    try:
        if m is None:
            raise ValueError
        y, mo, d = int(m.group(1)), m.group(2), m.group(3)
        if mo is None:
            return _dt.date(y, 1 if first else 12, 1 if first else 31).isoformat()
        if d is None:
            start = _dt.date(y, int(mo), 1)
            if first:
                return start.isoformat()
            nxt = _dt.date(y + (start.month == 12), start.month % 12 + 1, 1)
            return (nxt - _dt.timedelta(days=1)).isoformat()
        return _dt.date(y, int(mo), int(d)).isoformat()
    except ValueError:
        raise QueryError(f"{name} takes a date written 2024, 2024-03 or 2024-03-14 (got {value!r})") from None


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


def resolve_scope(conn: Any, scope: Scope, memo: dict[str, Any] | None = None,
                  generation: int | None = None) -> ScopedDocs:
    """The documents and chunks in ``scope``; :class:`OutOfScope` when there are none.

    A path or tag that alone matches nothing is named with the nearest ones the KB has
    ("did you mean #recipes?"): a typo is the usual reason. ``memo`` and ``generation``
    (the KB's per-generation cache): every document's tags and dates are read once per
    sync, not once per search (10k documents: 0.3 s).
    """
    cache: dict[str, Any] = {}
    if memo is not None:
        cache = memo.setdefault("_scope", {})
        if cache.get("generation") != generation:
            cache.clear()
            cache["generation"] = generation
    docs = None
    if scope.since or scope.until:
        if "spans" not in cache:
            cache["spans"] = _doc_spans(conn)
        docs = {d for d, (first, last) in cache["spans"].items()
                if (not scope.since or last >= scope.since) and (not scope.until or first <= scope.until)}
        if not docs:
            raise OutOfScope(f"no document is dated {_span_words(scope.since, scope.until)}")
    if scope.within:
        under = _docs_within(conn, scope.within)
        if not under:
            raise OutOfScope(_nothing_in(Scope(scope.within)) + _nearest(scope.within, _folders(conn), ""))
        docs = under if docs is None else docs & under
    if scope.tags:
        if "tags" not in cache:
            cache["tags"] = _tag_index(conn)
        index = cache["tags"]
        for tag in scope.tags:
            tagged = {d for key, ds in index.items() if key == tag or key.startswith(tag + "/") for d in ds}
            if not tagged:
                raise OutOfScope(_nothing_in(Scope(tags=(tag,))) + _nearest((tag,), index, "#"))
            docs = tagged if docs is None else docs & tagged
    if scope.not_within:
        if docs is None:
            docs = {int(r[0]) for r in conn.execute("SELECT doc FROM documents")}
        docs -= _docs_within(conn, scope.not_within)
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
    dated = f" dated {_span_words(scope.since, scope.until)}" if scope.since or scope.until else ""
    if scope.not_within:
        dated += " outside " + " and ".join(repr(w) for w in scope.not_within)
    if under and tagged:
        return f"no document under {under} is tagged {tagged}{dated}"
    if under or tagged:
        return (f"no document is under {under}" if under else f"no document is tagged {tagged}") + (
            f", {dated.strip()}" if dated else "")
    return f"no document is{dated}"


def scope_words(scope: Mapping[str, Any]) -> str:
    """``under notes/work or home, tagged #project, dated 2024-03-01 to 2024-03-31``: a scope
    (its ``to_dict``) in words, for the CLI's and the MCP answer's footers and ``--explain``."""
    parts = []
    if scope.get("within"):
        parts.append("under " + " or ".join(scope["within"]))
    if scope.get("tags"):
        parts.append("tagged " + " and ".join(f"#{t}" for t in scope["tags"]))
    if scope.get("since") or scope.get("until"):
        parts.append("dated " + _span_words(scope.get("since"), scope.get("until")))
    if scope.get("not_within"):
        parts.append("not under " + " or ".join(scope["not_within"]))
    return ", ".join(parts)


def _span_words(since: str | None, until: str | None) -> str:
    """``2024-03-01 to 2024-03-31``, ``from 2024-03-01``, ``up to 2024-03-31``."""
    if since and until:
        return f"{since} to {until}"
    return f"from {since}" if since else f"up to {until}"


def scope_clause(column: str) -> str:
    """The SQL condition keeping ``column`` (a chunk id) in scope; its one parameter is
    :attr:`ScopedDocs.docs_json`."""
    return f"{column} IN (SELECT id FROM chunks WHERE doc IN (SELECT value FROM json_each(?)))"


def _tag_key(tag: str) -> str:
    return fold(tag.strip().lstrip("#").strip("/"))


def _docs_within(conn: Any, within: Sequence[str]) -> set[int]:
    """Documents at or under any of ``within``. A path that names none but holds ``*`` or
    ``?`` is a glob as ``include`` reads one (``*`` within a folder name, ``**`` across
    folders, ``**/x.md`` at any depth, the root too), matched against a document's path or
    any of its folders: ``notes/2024-*`` takes the files and the folders it names."""
    found: set[int] = set()
    rows: list[tuple[int, str]] | None = None
    for w in within:
        docs = {int(r[0]) for r in conn.execute(
            "SELECT doc FROM documents WHERE path = ? OR substr(path, 1, ?) = ?", (w, len(w) + 1, w + "/"))}
        if not docs and _GLOB & set(w):
            if rows is None:
                rows = [(int(d), str(p)) for d, p in conn.execute("SELECT doc, path FROM documents")]
            pattern = glob_regex(w)
            docs = {d for d, p in rows if any(pattern.match(part) for part in _and_folders(p))}
        found |= docs
    return found


def _and_folders(path: str) -> list[str]:
    """``a/b/c.md`` -> ``["a/b/c.md", "a", "a/b"]``: a path and each folder it is in."""
    parts = path.split("/")
    return [path] + ["/".join(parts[:i]) for i in range(1, len(parts))]


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


#: A day or month written in numbers, year first, in a file name: "2024-02-19-session-02".
_NAME_DAY = re.compile(r"(?<!\d)((?:19|20)\d\d)[-_.]([01]\d)(?:[-_.]([0-3]\d))?(?!\d)")


def doc_span(path: str, dated: Sequence[Any]) -> tuple[str, str] | None:
    """The first and last day (ISO) a document is dated, or None: its front matter's
    ``date`` / ``created`` / ``day`` (``dated``, in that order), else its file name. A month
    ("2024-03") covers the month."""
    for value in dated:
        if value is None:
            continue
        text = str(value).strip()
        m = _NAME_DAY.match(text)
        key = date_key(text) if m is None else ""
        if m is None and not key:
            continue
        return _span_of(m.groups() if m else tuple(key[len("date:"):].split("-")))
    stem = strip_suffix(path).rsplit("/", 1)[-1]
    key = date_key(stem)
    if key:
        return _span_of(tuple(key[len("date:"):].split("-")))
    m = _NAME_DAY.search(stem) or _NAME_DAY.search(path)
    return _span_of(m.groups()) if m else None


def note_span(path: str, front_matter: Any) -> tuple[str, str] | None:
    """:func:`doc_span` of a note from its front matter (a mapping; anything else: none)."""
    fm = front_matter if isinstance(front_matter, Mapping) else {}
    return doc_span(path, [fm.get(f) for f in DATE_FIELDS])


def _span_of(parts: tuple[str | None, ...]) -> tuple[str, str] | None:
    y, mo, d = (parts + (None, None))[:3]
    text = f"{y}-{mo}" + (f"-{d}" if d else "")
    try:
        return _day(text, "date", first=True), _day(text, "date", first=False)
    except QueryError:
        return None


def _doc_spans(conn: Any) -> dict[int, tuple[str, str]]:
    """Every dated document's first and last day (:func:`doc_span`)."""
    fields = ", ".join(f"json_extract(meta, '$.front_matter.{f}')" for f in DATE_FIELDS)
    spans: dict[int, tuple[str, str]] = {}
    for doc, path, *dated in conn.execute(f"SELECT doc, path, {fields} FROM documents"):
        span = doc_span(str(path), dated)
        if span:
            spans[int(doc)] = span
    return spans


def scope_outline(conn: Any, limit: int = 12) -> dict[str, Any]:
    """The KB's top-level folders and its tags, each with how many documents it holds, most
    first (``limit`` of each): what ``--in`` and ``--tag`` can take, for ``pnk status`` and
    the MCP ``pinakes_kbs`` tool."""
    folders: dict[str, int] = {}
    for (path,) in conn.execute("SELECT path FROM documents"):
        head, sep, _ = str(path).partition("/")
        if sep:
            folders[head] = folders.get(head, 0) + 1
    tags = {t: len(docs) for t, docs in _tag_index(conn).items()}

    def top(counts: dict[str, int]) -> dict[str, int]:
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])

    return {"folders": top(folders), "folders_total": len(folders), "tags": top(tags), "tags_total": len(tags)}
