"""Links survive every move sync recognises (pinakes/relink.py).

Sidecar links are re-aimed at the moved document (atomic, comments kept); body
links are never edited and resolve through the moved document's ``moved_from``
record until the text is fixed, which ``pnk doctor`` asks for. Real files, a
real store, the real embedder, real ``git``; each case with sidecars beside the
documents and in a parallel tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pinakes.sidecar import sidecar_rel_path

MODES = ["beside", ".pinakes-meta"]
PNK = Path(sys.executable).with_name("pnk")

DOCS = {
    "notes/rivers.md": """
        # Rivers

        Rivers carry silt down to the estuary. The wave that runs upstream is a
        [bore](bore.md), strongest at spring tides.
        """,
    "notes/bore.md": """
        # Tidal Bore

        A tidal bore is a wave that travels up a river against its current when the
        incoming tide is funnelled into a narrowing estuary.

        ## Waves

        Surfers ride the Severn bore for miles.
        """,
    "notes/moon.md": """
        # The Moon

        The moon's pull raises the tides that drive every bore.
        """,
}


def make(make_kb, mode: str):
    kb = make_kb(DOCS, config="" if mode == "beside" else f'sidecars = "{mode}"\n')
    kb.sync()
    return kb


def sc(kb, rel: str, mode: str) -> Path:
    return kb.root / sidecar_rel_path(rel, mode)


def out(kb, rel: str) -> dict[str, str]:
    """Outgoing resolved links of ``rel``: target path -> rel."""
    return {n.path: n.rel for n in kb.walk_links(rel, direction="out").neighbours}


def git(kb, *args: str) -> str:
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(kb.root), *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def commit_all(kb) -> None:
    git(kb, "init", "-q")
    git(kb, "add", "-A")
    git(kb, "commit", "-q", "-m", "notes")


@pytest.mark.parametrize("mode", MODES)
def test_git_mv_keeps_the_authored_link_and_stages_nothing(make_kb, mode) -> None:
    """The issue's case: `pnk link`, `git mv`, `pnk sync`, and `pnk links` still shows the link."""
    kb = make(make_kb, mode)
    kb.link("notes/rivers.md", "notes/bore.md", rel="mentions")
    side = sc(kb, "notes/rivers.md", mode)
    side.write_text("# my notes on rivers\n" + side.read_text().replace(
        "rel: mentions", "rel: mentions   # the bore is the point"))
    bore_id = kb.show("notes/bore.md")["doc_id"]
    kb.sync()
    commit_all(kb)
    before_index = git(kb, "diff", "--cached", "--name-status")
    git(kb, "mv", "notes/bore.md", "notes/tidal-bore.md")
    report = kb.sync()
    assert report.renamed == [("notes/bore.md", "notes/tidal-bore.md")]
    assert kb.show("notes/tidal-bore.md")["doc_id"] == bore_id
    links = kb.links("notes/rivers.md", direction="out")
    assert links["unresolved"] == []
    assert out(kb, "notes/rivers.md") == {"notes/tidal-bore.md": "mentions"}
    text = side.read_text()
    assert "to: tidal-bore.md" in text and "bore.md\n" not in text.replace("tidal-bore.md", "")
    assert text.startswith("# my notes on rivers\n") and "# the bore is the point" in text
    assert report.relinked == [(sidecar_rel_path("notes/rivers.md", mode), [("bore.md", "tidal-bore.md")])]
    # The body still says bore.md: never edited, resolved through the move record, named by doctor.
    assert "[bore](bore.md)" in (kb.root / "notes/rivers.md").read_text()
    moved = kb.doctor()["moved_links"]
    assert [(m["file"], m["target"], m["old"], m["new"]) for m in moved] == [
        ("notes/rivers.md", "bore.md", "notes/bore.md", "notes/tidal-bore.md")]
    assert "moved_from:\n  - notes/bore.md" in sc(kb, "notes/tidal-bore.md", mode).read_text()
    # Item 7: git's index is untouched; the report names exactly what to stage.
    old_sc, new_sc = sidecar_rel_path("notes/bore.md", mode), sidecar_rel_path("notes/tidal-bore.md", mode)
    assert report.sidecars_moved == [(old_sc, new_sc)]
    assert report.git_stage == [old_sc, new_sc]
    status = git(kb, "status", "--porcelain")
    assert f" D {old_sc}" in status and f"?? {new_sc}" in status  # sync staged nothing
    assert before_index == ""
    git(kb, "add", "-A", *report.git_stage)
    assert f"R  {old_sc} -> {new_sc}" in git(kb, "status", "--porcelain")
    again = kb.sync()
    assert again.changed == again.renamed == again.relinked == [] and again.git_stage == []


def test_cli_prints_the_git_stage_command_once(make_kb, tmp_path) -> None:
    kb = make(make_kb, "beside")
    commit_all(kb)
    env = dict(os.environ)
    plain = subprocess.run([str(PNK), "sync", "--kb", str(kb.root)], capture_output=True, text=True, env=env)
    assert plain.returncode == 0 and "git add" not in plain.stdout  # nothing moved: git never runs
    git(kb, "mv", "notes/moon.md", "notes/the-moon.md")
    res = subprocess.run([str(PNK), "sync"], capture_output=True, text=True, env=env, cwd=kb.root)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if "git add" in ln]
    assert lines == ["  git: sync moved 1 sidecar after its note; stage the move with: "
                     "git add -A notes/moon.pnk.yaml notes/the-moon.pnk.yaml"]
    subprocess.run(lines[0].split("with: ", 1)[1].split(), cwd=kb.root, check=True)
    assert "R  notes/moon.pnk.yaml -> notes/the-moon.pnk.yaml" in git(kb, "status", "--porcelain")
    # Outside git, nothing is said about git.
    other = make_kb({"a.md": "# A\n\nalpha words here\n"}, name="loose", root=tmp_path / "loose")
    other.sync()
    os.rename(other.root / "a.md", other.root / "b.md")
    res = subprocess.run([str(PNK), "sync", "--kb", str(other.root)], capture_output=True, text=True, env=env)
    assert "renamed a.md -> b.md" in res.stdout and "git add" not in res.stdout


@pytest.mark.parametrize("mode", MODES)
def test_a_chain_of_moves_then_a_rebuild(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    kb.link("notes/moon.md", "notes/bore.md", rel="causes")
    os.rename(kb.root / "notes/bore.md", kb.root / "notes/tidal-bore.md")
    kb.sync()
    (kb.root / "estuary").mkdir()
    os.rename(kb.root / "notes/tidal-bore.md", kb.root / "estuary/severn-bore.md")
    report = kb.sync()
    assert report.renamed == [("notes/tidal-bore.md", "estuary/severn-bore.md")]
    assert "to: ../estuary/severn-bore.md" in sc(kb, "notes/moon.md", mode).read_text()
    for rebuild in (False, True):
        if rebuild:
            assert kb.sync(rebuild=True).rebuilt
        assert out(kb, "notes/moon.md") == {"estuary/severn-bore.md": "causes"}
        assert out(kb, "notes/rivers.md") == {"estuary/severn-bore.md": "links-to"}  # body: bore.md
        assert [m["new"] for m in kb.doctor()["moved_links"]] == ["estuary/severn-bore.md"]
    # The first old path is kept through the chain; the second was never linked.
    assert "moved_from:\n  - notes/bore.md\n" in sc(kb, "estuary/severn-bore.md", mode).read_text()


@pytest.mark.parametrize("mode", MODES)
def test_a_swap_reaims_sidecar_links_at_the_same_documents(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    kb.link("notes/rivers.md", "notes/moon.md", rel="pulled_by")
    kb.link("notes/rivers.md", "notes/bore.md", rel="mentions")
    ids = {rel: kb.show(rel)["doc_id"] for rel in ("notes/bore.md", "notes/moon.md")}
    a, b = kb.root / "notes/bore.md", kb.root / "notes/moon.md"
    ta, tb = a.read_text(), b.read_text()
    a.write_text(tb)
    b.write_text(ta)
    report = kb.sync()
    assert sorted(report.renamed) == [("notes/bore.md", "notes/moon.md"), ("notes/moon.md", "notes/bore.md")]
    assert kb.show("notes/moon.md")["doc_id"] == ids["notes/bore.md"]
    walked = {n.doc_id: n.rel for n in kb.walk_links("notes/rivers.md", direction="out").neighbours
              if n.rel != "links-to"}
    assert walked == {ids["notes/bore.md"]: "mentions", ids["notes/moon.md"]: "pulled_by"}
    text = sc(kb, "notes/rivers.md", mode).read_text()
    assert "to: bore.md\n    rel: pulled_by" in text and "to: moon.md\n    rel: mentions" in text
    # The body's bore.md names whatever is at that path now: no move record, nothing to fix.
    assert kb.doctor()["moved_links"] == [] and "moved_from" not in text


@pytest.mark.parametrize("mode", MODES)
def test_a_document_that_reappears_at_the_old_path_wins_the_body_link(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    kb.link("notes/rivers.md", "notes/bore.md", rel="mentions")
    os.rename(kb.root / "notes/bore.md", kb.root / "notes/tidal-bore.md")
    kb.sync()
    (kb.root / "notes/bore.md").write_text("# Bore (drilling)\n\nA borehole is drilled for water.\n")
    kb.sync()
    assert out(kb, "notes/rivers.md") == {"notes/tidal-bore.md": "mentions", "notes/bore.md": "links-to"}
    assert kb.doctor()["moved_links"] == []
    os.remove(kb.root / "notes/bore.md")  # gone again: the record answers once more
    kb.sync()
    assert out(kb, "notes/rivers.md") == {"notes/tidal-bore.md": "mentions"}
    assert len(kb.doctor()["moved_links"]) == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_moved_note_keeps_its_own_relative_links(make_kb, mode) -> None:
    kb = make(make_kb, mode)
    side = sc(kb, "notes/rivers.md", mode)
    side.write_text(side.read_text().replace(
        "links: []", "links:\n  - to: moon.md#tides   # why the bore comes\n    rel: pulled_by\n"
                     "  - to: /notes/bore.md\n    rel: mentions"))
    body = kb.root / "notes/rivers.md"
    body.write_text(body.read_text() + "\nThe [moon](./moon.md) drives it.\n")
    kb.sync()
    (kb.root / "geo").mkdir()
    os.rename(kb.root / "notes/rivers.md", kb.root / "geo/rivers.md")
    report = kb.sync()
    assert report.renamed == [("notes/rivers.md", "geo/rivers.md")]
    text = sc(kb, "geo/rivers.md", mode).read_text()
    assert "to: ../notes/moon.md#tides # why the bore comes" in text  # fragment and comment kept
    assert "to: /notes/bore.md\n" in text  # root-absolute: still right, left alone
    assert out(kb, "geo/rivers.md") == {"notes/moon.md": "pulled_by", "notes/bore.md": "mentions"}
    # Its body's [moon](./moon.md) was written in notes/: read from there. ([bore](bore.md),
    # a plain file name, is found by its name wherever it is: no record needed.)
    assert kb.links("geo/rivers.md", direction="out")["unresolved"] == []
    moved = kb.doctor()["moved_links"]
    assert [(m["file"], m["target"], m["new"]) for m in moved] == [
        ("geo/rivers.md", "./moon.md", "notes/moon.md")]
    assert "written before geo/rivers.md moved" in moved[0]["message"]


def test_source_and_target_moved_in_one_sync(make_kb) -> None:
    """Both ends of a sidecar link moved at once: the link is re-aimed from the new place to the new place."""
    kb = make(make_kb, "beside")
    kb.link("notes/rivers.md", "notes/bore.md", rel="mentions")
    commit_all(kb)
    git(kb, "mv", "notes/bore.md", "notes/tidal-bore.md")
    (kb.root / "geo").mkdir()
    git(kb, "mv", "notes/rivers.md", "geo/rivers.md")
    report = kb.sync()
    assert sorted(report.renamed) == [("notes/bore.md", "notes/tidal-bore.md"),
                                      ("notes/rivers.md", "geo/rivers.md")]
    assert "to: ../notes/tidal-bore.md\n" in (kb.root / "geo/rivers.pnk.yaml").read_text()
    assert out(kb, "geo/rivers.md") == {"notes/tidal-bore.md": "mentions"}
    assert sorted(report.git_stage) == sorted(["notes/bore.pnk.yaml", "notes/tidal-bore.pnk.yaml",
                                               "notes/rivers.pnk.yaml", "geo/rivers.pnk.yaml"])
    assert kb.sync().changed == []
