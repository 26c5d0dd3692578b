"""The graph arrays a reader leaves in ``.pinakes/graph-cache.npz`` for the next process.

A one-shot ``pnk search`` on a large KB used to rebuild them from SQL every time. The
file must never serve a graph other than the store's current one: not after an edit,
not after a rebuild (whose generation numbers start again), not when damaged.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3

import numpy as np
import pytest

from pinakes import KB
from pinakes.graph import GRAPH_CACHE, GraphIndex

DOCS = {
    "birds/owls.md": """
        # Barn Owls

        Barn owls hunt voles at dusk. See [Kestrels](kestrels.md).
        """,
    "birds/kestrels.md": """
        ---
        tags: [raptors]
        ---
        # Kestrels

        Kestrels hover over verges. Barn Owls hunt the same fields at night.
        """,
    "kitchen/kettles.md": """
        # Descaling a Kettle

        Vinegar and water, boiled, then left for an hour.
        """,
}

ARRAYS = ("node_ids", "kind_code", "chunk_of", "indptr", "nbr", "weight", "edge_kind",
          "edge_id", "damped", "is_hub")


def fresh(kb: KB) -> KB:
    """The same KB as a new process would open it (no graph in memory)."""
    other = KB.open(kb.root)
    other._embedder = kb._embedder
    return other


def load(kb: KB) -> GraphIndex:
    store = kb.reader()
    with store.snapshot():
        return kb.graph_index(store)


def assert_same(a: GraphIndex, b: GraphIndex) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert (a.keys, a.kinds, a.edge_kinds, a.generation) == (b.keys, b.kinds, b.edge_kinds,
                                                            b.generation)


def from_sql(kb: KB) -> GraphIndex:
    store = kb.reader()
    with store.snapshot() as conn:
        return GraphIndex.load(conn, store.generation)


@pytest.fixture
def no_sql(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts builds from SQL (a cache hit builds none)."""
    calls: list[int] = []
    real = GraphIndex._from_sql.__func__  # type: ignore[attr-defined]

    def counted(cls, conn, generation):  # type: ignore[no-untyped-def]
        calls.append(generation)
        return real(cls, conn, generation)

    monkeypatch.setattr(GraphIndex, "_from_sql", classmethod(counted))
    return calls


def test_the_next_process_reads_the_graph_back_unchanged(make_kb, no_sql) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    first = load(kb)
    assert no_sql == [first.generation]
    assert (kb.root / ".pinakes" / GRAPH_CACHE).is_file()
    second = load(fresh(kb))
    assert no_sql == [first.generation]  # read back, not rebuilt
    assert_same(second, first)
    assert second.n_edges > 0


def test_an_edit_makes_the_next_process_build_the_new_graph(make_kb, no_sql) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    before = load(kb)
    (kb.root / "kitchen/kettles.md").write_text(
        "# Descaling a Kettle\n\nVinegar works; Kestrels do not. See [Owls](../birds/owls.md).\n")
    kb.sync()
    after = load(fresh(kb))
    assert len(no_sql) == 2 and after.generation > before.generation
    assert after.n_edges != before.n_edges
    assert_same(after, from_sql(kb))


def test_a_rebuilt_store_never_serves_the_old_stores_graph(make_kb, no_sql) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    old = load(kb)
    # Rebuild with different content but the same generation number (1): only the store
    # id tells the two stores apart.
    (kb.root / "kitchen/kettles.md").unlink()
    kb.sync(rebuild=True)
    new = load(fresh(kb))
    assert new.generation == old.generation
    assert len(no_sql) == 2
    assert new.n != old.n
    assert_same(new, from_sql(kb))


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04 not really a zip", None])
def test_a_damaged_or_foreign_cache_file_is_rebuilt_from_sql(make_kb, no_sql, damage) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    want = load(kb)
    path = kb.root / ".pinakes" / GRAPH_CACHE
    if damage is None:
        # A well-formed file of another store: right format, wrong key.
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["key"] = np.frombuffer(b"another-store:1:0:0:0:0", dtype=np.uint8)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    else:
        path.write_bytes(damage)
    got = load(fresh(kb))
    assert len(no_sql) == 2
    assert_same(got, want)
    assert load(fresh(kb)) is not None and len(no_sql) == 2  # the rebuilt file is good again


def test_a_store_without_an_id_is_not_cached(make_kb, no_sql) -> None:
    """A store made before ids were written: readers build from SQL until a sync adds one."""
    kb = make_kb(DOCS)
    kb.sync()
    conn = sqlite3.connect(kb.root / ".pinakes" / "index.db")
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'store_id'")
    conn.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(kb.root / ".pinakes" / GRAPH_CACHE)
    load(fresh(kb))
    assert not (kb.root / ".pinakes" / GRAPH_CACHE).exists()
    kb.sync()  # nothing changed, but the store gets its id
    load(fresh(kb))
    load(fresh(kb))
    assert (kb.root / ".pinakes" / GRAPH_CACHE).exists()
    assert len(no_sql) == 2  # the last load was a cache hit


def test_the_cache_key_names_the_store_not_only_its_generation(make_kb) -> None:
    """Rebuilding unchanged files gives the same generation and row counts: the store id
    is what keeps the old store's file from being taken for the new one's."""
    from pinakes.graph import _cache_key

    kb = make_kb(DOCS)
    kb.sync()

    def key() -> str | None:
        store = fresh(kb).reader()
        with store.snapshot() as conn:
            return _cache_key(conn, store.generation)

    before = key()
    kb.sync(rebuild=True)
    after = key()
    assert before and after and before != after
    assert before.split(":")[1:] == after.split(":")[1:]  # everything but the store id agrees
