"""Sidecars: ``<stem>.pnk.yaml`` files that give a document its identity, tags and links.

They are truth files, so every write is atomic and round-trips the user's
comments and key order (ruamel.yaml). A malformed sidecar is never rewritten:
its problem is reported with ``file:line`` and its document indexes with what
can be salvaged.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .fsutil import atomic_write

if TYPE_CHECKING:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

# ruamel.yaml and python-ulid are imported where they are used: searching never
# reads or writes a sidecar, and `pnk search` starts ~20 ms faster without them.

SUFFIX = ".pnk.yaml"
# ``adopted: {from, fields}`` in a sidecar written by an importer (``pnk adopt``):
# ``fields`` are the top-level keys it copied from the document's front matter,
# which owns them from then on (``pnk doctor`` reports drift between the two).
ADOPTED = "adopted"
# Keys only the sidecar may set: never copied from front matter by an importer.
SIDECAR_OWN_KEYS = ("id", "links", ADOPTED)
ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_ID_LINE = re.compile(r"^id:\s*['\"]?([0-9A-Za-z]{26})['\"]?\s*(?:#.*)?$", re.MULTILINE)


def new_ulid() -> str:
    """A fresh document identity."""
    from ulid import ULID

    return str(ULID())


def is_ulid(value: object) -> bool:
    """True for a well-formed (upper-case Crockford base32) ULID string."""
    return isinstance(value, str) and bool(ULID_RE.match(value))


def _commented_map() -> CommentedMap:
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def _yaml() -> YAML:
    from ruamel.yaml import YAML

    y = YAML()  # round-trip: keeps comments, key order and quoting
    y.preserve_quotes = True
    y.indent(mapping=2, sequence=4, offset=2)
    y.width = 4096
    return y


def sidecar_rel_path(doc_rel: str, mode: str) -> str:
    """The sidecar's KB-relative path for a document, per ``[kb] sidecars``.

    ``beside`` puts ``notes/a.pnk.yaml`` next to ``notes/a.md``; any other
    value is a folder holding a parallel tree (``.meta/notes/a.pnk.yaml``),
    for KBs whose document folder is published as a website.
    """
    if mode in ("", "beside"):
        parts = doc_rel.split("/")
        if "" not in parts and "." not in parts:
            # A clean relative path (what the KB walk yields): plain string work
            # gives exactly PurePosixPath's answer at a fraction of the cost, and
            # sync asks this for every document.
            name = parts[-1]
            i = name.rfind(".")
            stem = name[:i] if 0 < i < len(name) - 1 else name
            parts[-1] = stem + SUFFIX
            return "/".join(parts)
    p = PurePosixPath(doc_rel)
    name = p.stem + SUFFIX
    if mode in ("", "beside"):
        return str(p.with_name(name))
    return str(PurePosixPath(mode.strip("/")) / p.with_name(name))


@dataclass
class Sidecar:
    """A parsed sidecar. ``data`` keeps comments so it can be edited and saved."""

    path: Path
    data: CommentedMap = field(default_factory=_commented_map)
    error: str | None = None  # "file:line: message" when malformed
    exists: bool = True

    @property
    def id(self) -> str | None:
        value = self.data.get("id") if isinstance(self.data, dict) else None
        return str(value) if value is not None else None

    @property
    def title(self) -> str | None:
        value = self.data.get("title")
        return str(value) if isinstance(value, str | int | float) and str(value).strip() else None

    @property
    def tags(self) -> list[str]:
        value = self.data.get("tags")
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [str(t) for t in value if isinstance(t, str | int | float)]
        return []

    @property
    def links(self) -> list[dict[str, Any]]:
        value = self.data.get("links")
        if not isinstance(value, list):
            return []
        return [dict(item) for item in value if isinstance(item, dict)]

    def to_plain(self) -> dict[str, Any]:
        """The sidecar as plain JSON-able data (for the store and ``pnk show``)."""
        return _plain(self.data)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value if not isinstance(value, str) else str(value)
    return str(value)


def read_sidecar(path: Path, display: str | None = None, root: Path | None = None) -> Sidecar:
    """Parse a sidecar; problems become ``Sidecar.error`` with ``file:line``, never an exception.

    With ``root`` (the KB folder), a sidecar that is a symlink resolving outside
    it is reported and never opened: its text would otherwise be indexed and
    served as this document's metadata (a read outside the KB).
    """
    shown = display or str(path)
    if root is not None and os.path.lexists(path):
        real, base = os.path.realpath(path), os.path.realpath(root)
        if not real.startswith(base + os.sep):
            return Sidecar(path, error=f"{shown}:1: symlink points outside the knowledge base; not read")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Sidecar(path, exists=False)
    except OSError as exc:
        return Sidecar(path, error=f"{shown}: cannot read: {exc.strerror}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Sidecar(path, error=f"{shown}: not UTF-8 (byte {exc.start})")
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        data = _yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        return _salvage(path, text, f"{shown}:{line}: {problem}")
    except YAMLError as exc:
        # ruamel's message runs over several lines ("...\n  in <unicode string>"): keep the first.
        return _salvage(path, text, f"{shown}:1: {(str(exc).strip().splitlines() or ['invalid YAML'])[0]}")
    if data is None:
        data = _commented_map()
    if not isinstance(data, dict):
        return _salvage(path, text, f"{shown}:1: a sidecar must be a mapping (key: value)")
    sc = Sidecar(path, data)
    if sc.id is not None and not is_ulid(sc.id):
        sc.error = f"{shown}:{_line_of(text, 'id')}: id {sc.id!r} is not a ULID"
    return sc


def _line_of(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(f"{key}:"):
            return number
    return 1


def _salvage(path: Path, text: str, error: str) -> Sidecar:
    """Keep what can be known from a malformed sidecar: its ``id`` line, if any."""
    data = _commented_map()
    m = _ID_LINE.search(text)
    if m and is_ulid(m.group(1)):
        data["id"] = m.group(1)
    return Sidecar(path, data, error=error)


def skeleton(doc_id: str, title: str) -> str:
    """The text of a fresh sidecar written by ``pnk sync`` for a new document."""
    buf = io.StringIO()
    data = _commented_map()
    data["id"] = doc_id
    data["title"] = title
    data["tags"] = []
    data["links"] = []
    _yaml().dump(data, buf)
    return "# Pinakes sidecar: this document's identity, tags and typed links.\n" + buf.getvalue()


def dump_sidecar(data: CommentedMap) -> str:
    """The text a sidecar's data saves as (comments, key order and quoting kept).

    Public so a writer can compare it with the file first and leave an
    unchanged sidecar's bytes (and mtime) alone.
    """
    buf = io.StringIO()
    _yaml().dump(data, buf)
    return buf.getvalue()


def write_sidecar(sidecar: Sidecar) -> None:
    """Save an edited sidecar atomically, keeping comments and key order."""
    atomic_write(sidecar.path, dump_sidecar(sidecar.data))
