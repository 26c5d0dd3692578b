"""A document keeps its identity (ULID, internal key, links, sidecar) when it is moved.

Real files, a real store, the real embedder; `git mv` in a real git repository.
Every case runs with sidecars beside the documents and in a parallel tree.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest

from pinakes.sidecar import sidecar_rel_path

MODES = ["beside", ".pinakes-meta"]

DOCS = {
    "notes/owls.md": """
        # Barn Owls

        Barn owls hunt at dusk over rough grassland, listening for voles in the long
        grass. Their heart-shaped facial disc funnels sound to ears set at different
        heights, so they can strike prey they never see.
        """,
    "notes/kettles.md": """
        # Descaling a Kettle

        Hard water leaves a chalky crust on the element. Fill the kettle halfway with
        equal parts water and white vinegar, bring it to the boil, leave it for an hour,
        then rinse it out several times before the next cup of tea.
        """,
    "notes/ropes.md": """
        # Coiling a Climbing Rope

        Butterfly coils keep a rope from kinking. Take arm-length loops over the neck,
        alternating sides, then wrap the tail around the middle and tie it off so the
        coil can be carried like a rucksack on the walk out.
        """,
    "index.md": """
        # Index

        Start from the owls page and follow the links.
        """,
}


def make(make_kb, mode: str):
    config = "" if mode == "beside" else f'sidecars = "{mode}"\n'
    kb = make_kb(DOCS, config=config)
    kb.sync()
    return kb


def sc(kb, rel: str, mode: str):
    return kb.root / sidecar_rel_path(rel, mode)


def key_of(kb, rel: str) -> int | None:
    with kb.reader().snapshot() as conn:
        row = conn.execute("SELECT doc FROM documents WHERE path = ?", (rel,)).fetchone()
    return None if row is None else row[0]


def annotate(kb, rel: str, mode: str) -> bytes:
    """Give ``rel``'s sidecar a comment and a tag, and link index.md to it by id; return its bytes."""
    p = sc(kb, rel, mode)
    p.write_text("# kept: a comment the move must not lose\n" +
                 p.read_text().replace("tags: []", "tags: [birds]"))
    kb.link("index.md", "pnk://" + kb.show(rel)["doc_id"], rel="see_also")
    return p.read_bytes()


def linked_from_index(kb) -> set[str]:
    return {n.path for n in kb.walk_links("index.md", direction="out").neighbours}


def assert_moved(kb, mode: str, report, old: str, new: str, ulid: str, key: int,
                 sidecar: bytes) -> None:
    assert report.renamed == [(old, new)], report.summary()
    assert report.added == [] and report.removed == [] and report.sidecars_created == []
    assert "1 renamed" in report.summary()
    assert not sc(kb, old, mode).exists()
    assert sc(kb, new, mode).read_bytes() == sidecar  # bytes kept: comments, key order
    shown = kb.show(new)
    assert shown["doc_id"] == ulid and key_of(kb, new) == key
    assert "birds" in shown["tags"]
    assert kb.show(ulid)["path"] == new
    assert new in linked_from_index(kb)  # the pnk:// link still resolves
    assert kb.doctor()["orphan_sidecars"] == []


@pytest.mark.parametrize("mode", MODES)
def test_plain_mv_keeps_identity(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    sidecar = annotate(kb, "notes/owls.md", mode)
    ulid, key = kb.show("notes/owls.md")["doc_id"], key_of(kb, "notes/owls.md")
    os.rename(kb.root / "notes/owls.md", kb.root / "notes/barn-owls.md")
    report = kb.sync()
    assert_moved(kb, mode, report, "notes/owls.md", "notes/barn-owls.md", ulid, key, sidecar)
    assert report.chunks_embedded == 0  # same content: vectors come from the cache


@pytest.mark.parametrize("mode", MODES)
def test_git_mv_keeps_identity(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    sidecar = annotate(kb, "notes/kettles.md", mode)
    ulid, key = kb.show("notes/kettles.md")["doc_id"], key_of(kb, "notes/kettles.md")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(kb.root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "notes"], check=True)
    subprocess.run([*git, "mv", "notes/kettles.md", "notes/descaling.md"], check=True)
    report = kb.sync()
    assert_moved(kb, mode, report, "notes/kettles.md", "notes/descaling.md", ulid, key, sidecar)


@pytest.mark.parametrize("mode", MODES)
def test_rename_with_small_edit(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    sidecar = annotate(kb, "notes/ropes.md", mode)
    ulid, key = kb.show("notes/ropes.md")["doc_id"], key_of(kb, "notes/ropes.md")
    text = (kb.root / "notes/ropes.md").read_text()
    os.remove(kb.root / "notes/ropes.md")
    (kb.root / "notes/rope-coils.md").write_text(
        text.replace("Butterfly coils", "Neat butterfly coils") + "\nCheck the ends for wear.\n")
    report = kb.sync()
    assert_moved(kb, mode, report, "notes/ropes.md", "notes/rope-coils.md", ulid, key, sidecar)
    assert report.chunks_embedded > 0  # the edit is indexed
    assert "wear" in kb.search("check the rope ends for wear").hits[0].text


@pytest.mark.parametrize("mode", MODES)
def test_rename_across_folders(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    sidecar = annotate(kb, "notes/owls.md", mode)
    ulid, key = kb.show("notes/owls.md")["doc_id"], key_of(kb, "notes/owls.md")
    (kb.root / "wildlife/birds").mkdir(parents=True)
    os.rename(kb.root / "notes/owls.md", kb.root / "wildlife/birds/owls.md")
    report = kb.sync()
    assert_moved(kb, mode, report, "notes/owls.md", "wildlife/birds/owls.md", ulid, key, sidecar)
    if mode != "beside":  # the parallel tree keeps no empty folders... unless others remain
        assert sc(kb, "notes/kettles.md", mode).exists()


@pytest.mark.parametrize("mode", MODES)
def test_whole_folder_moved_away_prunes_parallel_tree(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    ids = {rel: kb.show(rel)["doc_id"] for rel in DOCS if rel.startswith("notes/")}
    os.rename(kb.root / "notes", kb.root / "archive")
    if mode == "beside":
        (kb.root / "notes").mkdir()  # a moved folder takes its sidecars: recreate the case
        for rel in ids:
            p = kb.root / "archive" / sidecar_rel_path(rel, mode).split("/", 1)[1]
            os.rename(p, sc(kb, rel, mode))
    report = kb.sync()
    moved = {old: new for old, new in report.renamed}
    assert moved == {rel: "archive/" + rel.split("/", 1)[1] for rel in ids}
    for old, new in moved.items():
        assert kb.show(new)["doc_id"] == ids[old]
    if mode != "beside":
        assert not (kb.root / mode / "notes").exists()  # emptied by the moves, pruned


@pytest.mark.parametrize("mode", MODES)
def test_two_files_swapped(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    a, b = "notes/owls.md", "notes/kettles.md"
    ids = {a: kb.show(a)["doc_id"], b: kb.show(b)["doc_id"]}
    keys = {a: key_of(kb, a), b: key_of(kb, b)}
    bytes_ = {a: sc(kb, a, mode).read_bytes(), b: sc(kb, b, mode).read_bytes()}
    os.rename(kb.root / a, kb.root / "tmp.md")
    os.rename(kb.root / b, kb.root / a)
    os.rename(kb.root / "tmp.md", kb.root / b)
    report = kb.sync()
    assert sorted(report.renamed) == sorted([(a, b), (b, a)]), report.summary()
    assert report.added == report.removed == report.changed == []
    assert report.chunks_embedded == 0
    assert kb.show(a)["doc_id"] == ids[b] and kb.show(b)["doc_id"] == ids[a]
    assert key_of(kb, a) == keys[b] and key_of(kb, b) == keys[a]
    assert sc(kb, a, mode).read_bytes() == bytes_[b] and sc(kb, b, mode).read_bytes() == bytes_[a]
    assert kb.search("barn owls hunting voles").hits[0].path == b
    assert not list(kb.root.rglob("*.swap.tmp"))
    again = kb.sync()
    assert again.renamed == [] and again.changed == []


@pytest.mark.parametrize("mode", MODES)
def test_sidecar_moved_along_still_works(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    sidecar = annotate(kb, "notes/owls.md", mode)
    ulid, key = kb.show("notes/owls.md")["doc_id"], key_of(kb, "notes/owls.md")
    os.rename(kb.root / "notes/owls.md", kb.root / "notes/strix.md")
    os.rename(sc(kb, "notes/owls.md", mode), sc(kb, "notes/strix.md", mode))
    report = kb.sync()
    assert_moved(kb, mode, report, "notes/owls.md", "notes/strix.md", ulid, key, sidecar)


@pytest.mark.parametrize("mode", MODES)
def test_two_identical_new_files_are_reported_not_guessed(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    old = "notes/owls.md"
    ulid = kb.show(old)["doc_id"]
    text = (kb.root / old).read_text()
    os.remove(kb.root / old)
    (kb.root / "notes/owls-1.md").write_text(text)
    (kb.root / "notes/owls-2.md").write_text(text)
    report = kb.sync()
    assert report.renamed == []
    assert report.removed == [old] and sorted(report.added) == ["notes/owls-1.md", "notes/owls-2.md"]
    lines = [p for p in report.problems if "ambiguous" in p]
    assert len(lines) == 1 and "notes/owls-1.md" in lines[0] and old in lines[0]
    assert {kb.show("notes/owls-1.md")["doc_id"], kb.show("notes/owls-2.md")["doc_id"]}.isdisjoint({ulid})
    assert sc(kb, old, mode).exists()  # left alone for the user to place


@pytest.mark.parametrize("mode", MODES)
def test_unrelated_delete_and_add_is_no_rename(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    ulid = kb.show("notes/owls.md")["doc_id"]
    os.remove(kb.root / "notes/owls.md")
    (kb.root / "notes/tides.md").write_text(
        "# Tides\n\nSpring tides follow the new and full moon, when the sun and moon pull\n"
        "together; neap tides fall between, with the smallest range of the month.\n")
    report = kb.sync()
    assert report.renamed == [] and report.removed == ["notes/owls.md"]
    assert report.added == ["notes/tides.md"] and report.sidecars_created
    assert kb.show("notes/tides.md")["doc_id"] != ulid
    assert not any("ambiguous" in p for p in report.problems)


def test_near_tie_between_two_vanished_documents_is_reported(make_kb) -> None:
    kb = make(make_kb, "beside")
    base = (kb.root / "notes/ropes.md").read_text()
    (kb.root / "notes/ropes-copy.md").write_text(base.replace("walk out", "long walk out"))
    kb.sync()
    ids = {kb.show("notes/ropes.md")["doc_id"], kb.show("notes/ropes-copy.md")["doc_id"]}
    os.remove(kb.root / "notes/ropes.md")
    os.remove(kb.root / "notes/ropes-copy.md")
    (kb.root / "notes/coils.md").write_text(base.replace("walk out", "walk back out"))
    report = kb.sync()
    assert report.renamed == []
    assert sum("ambiguous" in p for p in report.problems) == 1
    assert kb.show("notes/coils.md")["doc_id"] not in ids


@pytest.mark.parametrize("mode", MODES)
def test_rebuild_after_mv_keeps_identity(make_kb, mode) -> None:
    """`--rebuild` drops the index the move is recognised from, so it settles moves first."""
    kb = make(make_kb, mode)
    sidecar = annotate(kb, "notes/owls.md", mode)
    ulid = kb.show("notes/owls.md")["doc_id"]
    os.rename(kb.root / "notes/owls.md", kb.root / "notes/barn-owls.md")
    report = kb.sync(rebuild=True)
    assert report.rebuilt and report.renamed == [("notes/owls.md", "notes/barn-owls.md")]
    assert "rebuilt the index" in report.summary() and "1 renamed" in report.summary()
    assert not sc(kb, "notes/owls.md", mode).exists()
    assert sc(kb, "notes/barn-owls.md", mode).read_bytes() == sidecar
    assert kb.show("notes/barn-owls.md")["doc_id"] == ulid
    assert "notes/barn-owls.md" in linked_from_index(kb)  # the pnk:// link still resolves
    assert kb.doctor()["orphan_sidecars"] == []
    assert kb.sync().added == []  # settled: the next sync has nothing to do


@pytest.mark.parametrize("mode", MODES)
def test_rebuild_after_swap_keeps_ids_with_their_text(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    a, b = "notes/owls.md", "notes/kettles.md"
    ids = {a: kb.show(a)["doc_id"], b: kb.show(b)["doc_id"]}
    os.rename(kb.root / a, kb.root / "tmp.md")
    os.rename(kb.root / b, kb.root / a)
    os.rename(kb.root / "tmp.md", kb.root / b)
    report = kb.sync(rebuild=True)
    assert report.rebuilt and sorted(report.renamed) == sorted([(a, b), (b, a)])
    assert kb.show(a)["doc_id"] == ids[b] and kb.show(b)["doc_id"] == ids[a]
    assert kb.search("barn owls hunting voles").hits[0].path == b


def test_rebuild_of_an_unreadable_index_starts_from_nothing(make_kb) -> None:
    """With no index to settle from, a move since the last sync cannot be recognised: the
    note gets a new id and its old sidecar is an orphan for `pnk doctor` (as documented)."""
    kb = make(make_kb, "beside")
    ulid = kb.show("notes/owls.md")["doc_id"]
    os.rename(kb.root / "notes/owls.md", kb.root / "notes/barn-owls.md")
    index = kb.root / ".pinakes" / "index.db"
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(index) + suffix)
    index.write_bytes(b"not a database" * 100)
    report = kb.sync(rebuild=True)
    assert report.rebuilt and report.renamed == []
    assert "notes/barn-owls.md" in report.added
    assert kb.show("notes/barn-owls.md")["doc_id"] != ulid
    old_sidecar = sc(kb, "notes/owls.md", "beside").relative_to(kb.root).as_posix()
    assert kb.doctor()["orphan_sidecars"] == [old_sidecar]
