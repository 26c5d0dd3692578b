"""``IN (...)`` lists in batches (pinakes/sqlin.py), against a real SQLite connection."""

from __future__ import annotations

import sqlite3

from pinakes.sqlin import BATCH, batches, marks, rows


def test_batches_cover_every_item_once_in_order() -> None:
    items = list(range(2 * BATCH + 7))
    parts = list(batches(iter(items)))  # any iterable, not only lists
    assert [len(p) for p in parts] == [BATCH, BATCH, 7]
    assert [x for p in parts for x in p] == items
    assert list(batches([])) == []


def test_rows_run_past_the_batch_size_with_values_ahead_of_the_list() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k INTEGER, tag TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(k, "a" if k % 2 else "b") for k in range(3 * BATCH)])
    keys = [*range(0, 3 * BATCH, 3), 3, 3, 10**6]  # duplicates and a key with no row
    got = [r[0] for r in rows(conn, "SELECT k FROM t WHERE tag = ? AND k IN ({}) ORDER BY k", keys, "a")]
    assert got == [k for k in sorted(set(keys)) if k < 3 * BATCH and k % 2]
    assert marks([1, 2, 3]) == "?,?,?"
