"""SQL ``IN (...)`` lists in batches.

SQLite caps the variables of one statement (32,766 since 3.32, 999 before), so
every query over an unbounded list of keys runs in parts of :data:`BATCH`. One
helper for the store, the link resolver, the graph and the plugins, so none
writes the loop and the placeholder string again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Any

#: Keys per statement: far under any SQLite's variable limit, large enough that a
#: sync of thousands of documents runs few statements.
BATCH = 500


def batches(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    """``items`` in lists of at most ``size``, in order."""
    seq = items if isinstance(items, list) else list(items)
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


def marks(part: Sized) -> str:
    """``?,?,?``: one placeholder per item of ``part``."""
    return ",".join("?" * len(part))


def rows(conn: Any, sql: str, keys: Iterable[Any], *before: Any) -> Iterator[Any]:
    """Rows of ``sql`` (whose ``{}`` takes the placeholders) for the distinct ``keys``,
    sorted, in batches; ``before`` are the values of placeholders ahead of the list."""
    for part in batches(sorted(set(keys))):
        yield from conn.execute(sql.format(marks(part)), (*before, *part))
