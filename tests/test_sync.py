"""Incremental sync, rebuilds, the lock, and every kind of bad input."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from pinakes import KB
from pinakes import store as store_mod
from pinakes.errors import StoreBusy
from pinakes.store import SyncLock

from .small_kb import DOCS


def paths(kb) -> set[str]:
    with kb.reader().snapshot() as conn:
        return {r[0] for r in conn.execute("SELECT path FROM documents")}


def test_incremental_add_edit_delete_rename(make_kb) -> None:
    kb = make_kb(DOCS)
    first = kb.sync()
    assert len(first.added) == len(DOCS) and first.chunks_embedded > 0

    again = kb.sync()
    assert (again.added, again.changed, again.removed) == ([], [], [])
    assert again.unchanged == len(DOCS) and again.chunks_embedded == 0

    (kb.root / "sky" / "comets.md").write_text("# Comets\n\nIcy bodies with glowing tails of gas.\n")
    added = kb.sync()
    assert added.added == ["sky/comets.md"] and added.chunks_embedded == 1
    assert kb.search("icy bodies with tails").hits[0].path == "sky/comets.md"

    tomato = kb.root / "garden" / "tomatoes.md"
    tomato.write_text(tomato.read_text() + "\nMulch with straw to keep the soil moist.\n")
    edited = kb.sync()
    assert edited.changed == ["garden/tomatoes.md"]
    assert "straw" in kb.search("straw mulch").hits[0].text

    os.remove(kb.root / "pets" / "dog-recall.md")
    removed = kb.sync()
    assert removed.removed == ["pets/dog-recall.md"]
    assert "pets/dog-recall.md" not in paths(kb)

    ulid = kb.show("kitchen/coffee.md")["doc_id"]
    (kb.root / "drinks").mkdir()
    shutil.move(kb.root / "kitchen" / "coffee.md", kb.root / "drinks" / "coffee.md")
    shutil.move(kb.root / "kitchen" / "coffee.pnk.yaml", kb.root / "drinks" / "coffee.pnk.yaml")
    moved = kb.sync()
    assert moved.renamed == [("kitchen/coffee.md", "drinks/coffee.md")]
    assert moved.chunks_embedded == 0  # content unchanged: vectors come from the cache
    assert kb.show("drinks/coffee.md")["doc_id"] == ulid
    assert kb.show(ulid)["path"] == "drinks/coffee.md"


def test_touch_without_change_costs_no_reindex(make_kb) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    p = kb.root / "kitchen" / "pasta.md"
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10_000_000))
    report = kb.sync()
    assert report.changed == [] and report.unchanged == len(DOCS)


def test_schema_bump_rebuilds_without_reembedding(make_kb, monkeypatch) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", store_mod.SCHEMA_VERSION + "-next")
    report = kb.sync()
    assert report.rebuilt
    assert len(report.added) == len(DOCS)
    assert report.chunks_embedded == 0 and report.chunks_cached > 0
    assert kb.search("tomato blight").hits[0].path == "garden/tomatoes.md"


def test_explicit_rebuild_and_deleted_store(make_kb) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    assert kb.sync(rebuild=True).rebuilt
    shutil.rmtree(kb.root / ".pinakes")
    report = kb.sync()
    assert len(report.added) == len(DOCS)


def test_a_second_sync_fails_clearly_while_one_holds_the_lock(make_kb) -> None:
    kb = make_kb(DOCS)
    with SyncLock(kb.config.state_dir):
        with pytest.raises(StoreBusy, match="another sync is running"):
            kb.sync(lock_wait=0.2)
    assert kb.sync().added  # and works once the lock is free


def test_bad_inputs_are_reported_and_the_rest_syncs(make_kb, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nconfidential launch codes\n")
    files: dict[str, str | bytes] = dict(DOCS)
    files.update(
        {
            "bad/latin1.md": "# Caf\xe9\n".encode("latin-1"),
            "bad/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "bad/empty.md": "",
            "bad/only-front-matter.md": "---\ntitle: Just Metadata\ndescription: nothing below\n---\n",
            "bad/broken-front-matter.md": "---\ntitle: [unclosed\n---\n# Still Here\n\nbody text survives\n",
            "bad/malformed-sidecar.md": "# Malformed Sidecar Doc\n\nzebra crossings everywhere\n",
            "bad/malformed-sidecar.pnk.yaml": "id: 01JDQ5S8Z6W3K1V9XQ2M4B7N0C\ntags: [a, b\nlinks: x\n",
            "dup/one.md": "# One\n\nfirst of the twins\n",
            "dup/one.pnk.yaml": "id: 01JDQ5T2A8R4M1V9XQ2M4B7N0D\n",
            "dup/two.md": "# Two\n\nsecond of the twins\n",
            "dup/two.pnk.yaml": "id: 01JDQ5T2A8R4M1V9XQ2M4B7N0D\n",
        }
    )
    kb = make_kb(files)
    (kb.root / "bad" / "huge.md").write_text("# Huge\n\n" + "lorem ipsum dolor sit amet\n" * 2_000_000)
    os.symlink(kb.root / "loop", kb.root / "loop", target_is_directory=True)
    os.symlink(kb.root / "bad", kb.root / "bad" / "again", target_is_directory=True)
    os.symlink(outside, kb.root / "escape", target_is_directory=True)
    os.symlink(outside / "secret.md", kb.root / "secret-link.md")
    os.symlink(kb.root / "kitchen" / "pasta.md", kb.root / "pasta-alias.md")

    report = kb.sync()
    problems = "\n".join(report.problems)
    assert "bad/latin1.md:1: skipped: not UTF-8" in problems
    assert "bad/binary.md: skipped: binary file" in problems
    assert "bad/huge.md: skipped: 51.5 MB is over max_file_mb" in problems
    assert "bad/broken-front-matter.md:" in problems
    assert "bad/malformed-sidecar.pnk.yaml:2:" in problems or "bad/malformed-sidecar.pnk.yaml:3:" in problems
    assert "escape: symlink points outside the knowledge base" in problems
    assert "secret-link.md: symlink points outside the knowledge base" in problems
    assert "symlink loop" in problems
    assert "duplicate id 01JDQ5T2A8R4M1V9XQ2M4B7N0D claimed by dup/one.md, dup/two.md" in problems

    indexed = paths(kb)
    assert set(DOCS) <= indexed
    assert {"bad/empty.md", "bad/only-front-matter.md", "bad/broken-front-matter.md",
            "bad/malformed-sidecar.md", "dup/one.md", "dup/two.md"} <= indexed
    assert not any("secret" in p or p.startswith("escape") for p in indexed)
    assert "pasta-alias.md" not in indexed  # the same file is indexed once
    assert not any("confidential" in h.text for h in kb.search("confidential launch codes").hits)
    assert kb.search("Just Metadata").hits[0].path == "bad/only-front-matter.md"
    assert kb.search("body text survives").hits[0].path == "bad/broken-front-matter.md"
    assert kb.search("zebra crossings").hits[0].path == "bad/malformed-sidecar.md"
    # the malformed sidecar keeps its salvaged id and is never rewritten
    assert kb.show("bad/malformed-sidecar.md")["doc_id"] == "01JDQ5S8Z6W3K1V9XQ2M4B7N0C"
    assert (kb.root / "bad" / "malformed-sidecar.pnk.yaml").read_text().startswith("id: 01JDQ5S8Z6W3")
    # both duplicates are findable
    assert {h.path for h in kb.search("twins", k=5).hits} >= {"dup/one.md", "dup/two.md"}
    assert not (outside / "secret.pnk.yaml").exists()


def test_sidecar_edits_keep_comments_and_key_order(make_kb) -> None:
    kb = make_kb({"a.md": "# A\n\ntext\n"})
    kb.sync()
    sc = kb.root / "a.pnk.yaml"
    text = sc.read_text()
    assert text.index("id:") < text.index("title:") < text.index("tags:") < text.index("links:")
    custom = text.replace("tags: []", "# my own comment\ntags: [alpha]  # trailing note")
    sc.write_text(custom)
    from pinakes.sidecar import read_sidecar, write_sidecar

    loaded = read_sidecar(sc)
    loaded.data["links"].append({"to": "b.md", "rel": "cites"})
    write_sidecar(loaded)
    out = sc.read_text()
    assert "# my own comment" in out and "# trailing note" in out
    assert out.index("tags:") < out.index("links:")
    assert "rel: cites" in out
    report = kb.sync()
    assert report.changed == ["a.md"]
    assert kb.show("a.md")["tags"] == ["alpha"]


def test_status_reports_an_index_another_version_built(make_kb, monkeypatch) -> None:
    """After an upgrade that changes what sync stores, `pnk status` says what to run, exit 0."""
    from click.testing import CliRunner

    from pinakes.cli import cli

    kb = make_kb(DOCS)
    kb.sync()
    monkeypatch.setattr(store_mod, "SCHEMA_VERSION", store_mod.SCHEMA_VERSION + "-next")
    runner = CliRunner()
    out = runner.invoke(cli, ["status", "--kb", str(kb.root)])
    assert out.exit_code == 0, out.output
    assert "another schema" in out.output and "run `pnk sync`" in out.output
    assert "documents" not in out.output  # nothing read from the outdated index
    data = json.loads(runner.invoke(cli, ["status", "--kb", str(kb.root), "--json"]).output)
    assert data["indexed"] is False and "pnk sync" in data["index_note"]
    # The search still refuses, in one line; a sync rebuilds and status reads it again.
    assert runner.invoke(cli, ["search", "tomato", "--kb", str(kb.root)]).exit_code == 1
    assert KB.open(kb.root).sync().rebuilt
    assert "documents" in runner.invoke(cli, ["status", "--kb", str(kb.root)]).output
