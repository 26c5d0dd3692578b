"""The index side of move records: the ``moves`` table, and what the link resolver asks of it.

A moved document's sidecar records its earlier paths (``moved_from``, written
by :mod:`pinakes.relink`); sync keeps them in ``moves`` next to the links of the
same documents, and :class:`pinakes.links.Resolver` falls back to them for a
path no document lives at any more. Kept apart from :mod:`pinakes.relink` (which
reads and rewrites sidecars, and needs :mod:`pinakes.links`) so the resolver can
use it without an import circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .sqlin import batches, marks, rows

#: ``links.reason`` of a row resolved through a move record (``dst_ulid`` is set).
MOVED = "moved"


def is_relative(raw: str) -> bool:
    """Whether a written target is read from its document's folder (not root-absolute, no scheme)."""
    return not raw.startswith("/") and ":" not in raw.split("/", 1)[0]


def store_records(conn: Any, inserted: Sequence[tuple[int, Any]], stale: Sequence[int]) -> list[str]:
    """Replace the move records of re-inserted documents; returns every old path now recorded.

    Runs inside sync's transaction, next to the links of the same documents.
    """
    for part in batches(stale):
        conn.execute(f"DELETE FROM moves WHERE doc IN ({marks(part)})", part)
    found = [(path, key) for key, doc in inserted for path in getattr(doc, "moved_from", ())]
    conn.executemany("INSERT INTO moves(path, doc) VALUES (?, ?)", found)
    return sorted({path for path, _ in found})


def lookup(conn: Any, paths: Iterable[str]) -> dict[str, str]:
    """Old path -> the ULID of the one document that records having moved away from it."""
    found: dict[str, set[str]] = {}
    for path, ulid in rows(conn, "SELECT m.path, d.ulid FROM moves m JOIN documents d ON d.doc = m.doc"
                                 " WHERE m.path IN ({})", paths):
        found.setdefault(path, set()).add(ulid)
    return {p: next(iter(u)) for p, u in found.items() if len(u) == 1}


def previous_paths(conn: Any, sources: Iterable[str]) -> dict[str, list[str]]:
    """Document path -> the paths it had before (its move records), for its own relative links."""
    out: dict[str, list[str]] = {}
    for path, old in rows(conn, "SELECT d.path, m.path FROM moves m JOIN documents d ON d.doc = m.doc"
                                " WHERE d.path IN ({}) ORDER BY m.rowid DESC", sources):
        out.setdefault(path, []).append(old)
    return out
