"""The crash harness at CI size, and the regressions it found.

The full run (``python benchmarks/harness_crash.py --kills 20``, 300 documents)
is documented in docs/reliability.md; here the same code lands a few kills on a
small generated KB with the real embedder and the real ``pnk`` console script.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pinakes.sidecar import read_sidecar

from .repo_script import load

ROOT = Path(__file__).resolve().parents[1]
PNK = str(Path(sys.executable).parent / "pnk")


def _harness():
    return load("benchmarks/harness_crash.py")


@pytest.mark.slow
def test_crash_harness_small(tmp_path: Path) -> None:
    report = _harness().run(kills=3, docs=20, seed=7, workdir=tmp_path, share=0.1, ops=["sync", "link"])
    assert report["failures"] == [], json.dumps(report, indent=1)
    assert report["kills"] >= 3
    assert report["recovery_syncs"] >= 1


@pytest.mark.slow
def test_crash_harness_moves_adopt_and_ask(tmp_path: Path) -> None:
    """One kill at each place the rename handling, `pnk adopt` and `--write-suggestions` write."""
    plan = [("sync", "move-sidecar"), ("sync", "swap-sidecar"), ("adopt", "atomic-write"),
            ("adopt", "apply-doc"), ("ask", "atomic-write"), ("ask", "apply-commit")]
    report = _harness().run(kills=len(plan), docs=16, seed=7, workdir=tmp_path, share=0.1, plan=plan)
    assert report["failures"] == [], json.dumps(report, indent=1)
    for op, point in plan:
        assert report["by_point"].get(f"{op} {point}", 0) >= 1, (op, point, report["by_point"])
    assert report["moved_without_sidecar"] >= 1 and report["swapped"] >= 1
    assert report["adopted_pages"] >= 8


def _env(tmp_path: Path, crash_at: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(tmp_path / "user")
    env["PINAKES_CACHE_DIR"] = str(tmp_path / "cache")  # fresh: the embed-batch point must be reached
    if crash_at:
        env["PINAKES_CRASH_AT"] = crash_at
    return env


def test_regression_temp_file_of_a_killed_write_is_removed(tmp_path: Path) -> None:
    """A sync killed between a new sidecar's fsync and its rename used to leave ``.x.pnk.yaml.*.tmp``."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pinakes.toml").write_text('[kb]\nname = "t"\n', encoding="utf-8")
    (kb / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    run = subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path, "atomic-write:1"),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == -signal.SIGKILL
    left = [p.name for p in kb.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(".a.pnk.yaml.")
    assert not (kb / "a.pnk.yaml").exists()  # never half a sidecar: the old state (none)
    done = subprocess.run([PNK, "sync", "--kb", str(kb), "--json"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert not report["rebuilt"] and report["added"] == ["a.md"]
    assert any("removed a temporary file left by an interrupted write" in p for p in report["problems"])
    assert not [p for p in kb.iterdir() if p.name.endswith(".tmp")]
    assert read_sidecar(kb / "a.pnk.yaml").error is None


def test_a_live_writers_temp_file_is_left_alone(tmp_path: Path) -> None:
    """Only a dead writer's temp file is removed: a concurrent `pnk link` may be mid-write."""
    from pinakes.fsutil import is_stray_temp

    assert not is_stray_temp(f".a.pnk.yaml.{os.getpid()}.abc12345.tmp")
    assert not is_stray_temp(".a.pnk.yaml.1.abc12345.tmp")  # pid 1 is alive
    assert not is_stray_temp("notes.tmp")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert is_stray_temp(f".a.pnk.yaml.{dead.pid}.abc12345.tmp")


@pytest.mark.parametrize("point", ["apply-doc:1", "apply-commit:1", "embed-batch:1"])
def test_killed_inside_the_transaction_keeps_the_previous_index(tmp_path: Path, point: str) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pinakes.toml").write_text('[kb]\nname = "t"\n', encoding="utf-8")
    (kb / "a.md").write_text("# A\n\nAlpha lanterns.\n", encoding="utf-8")
    assert subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path), timeout=300).returncode == 0
    (kb / "b.md").write_text("# B\n\nBeta foghorns.\n", encoding="utf-8")
    run = subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path, point), timeout=300)
    assert run.returncode == -signal.SIGKILL
    conn = sqlite3.connect(kb / ".pinakes" / "index.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert [r[0] for r in conn.execute("SELECT path FROM documents")] == ["a.md"]
    conn.close()
    done = subprocess.run([PNK, "sync", "--kb", str(kb), "--json"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert json.loads(done.stdout)["added"] == ["b.md"]


def _two_docs(tmp_path: Path, config: str = "") -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pinakes.toml").write_text(f'[kb]\nname = "t"\n{config}', encoding="utf-8")
    (kb / "a.md").write_text("# Alpha\n\nAlpha lanterns burn at the harbour.\n", encoding="utf-8")
    (kb / "b.md").write_text("# Beta\n\nBeta foghorns sound over the reef.\n", encoding="utf-8")
    assert subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path), timeout=300).returncode == 0
    return kb


def _ids(kb: Path) -> dict[str, str]:
    return {str(p.relative_to(kb)): str(read_sidecar(p).id) for p in sorted(kb.rglob("*.pnk.yaml"))}


def _sync_json(tmp_path: Path, kb: Path) -> dict:
    done = subprocess.run([PNK, "sync", "--kb", str(kb), "--json"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_regression_killed_sidecar_move_leaves_one_sidecar(tmp_path: Path) -> None:
    """A document moved without its sidecar: sync used to copy the sidecar and then remove the
    old one, so a kill between the two left both, one id held twice, the old one for good."""
    kb = _two_docs(tmp_path)
    ident = _ids(kb)["a.pnk.yaml"]
    (kb / "a.md").rename(kb / "c.md")  # git mv a.md c.md: the sidecar stays behind
    run = subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path, "move-sidecar:1"), timeout=300)
    assert run.returncode == -signal.SIGKILL
    assert _ids(kb) == {"b.pnk.yaml": _ids(kb)["b.pnk.yaml"], "c.pnk.yaml": ident}  # moved, not copied
    report = _sync_json(tmp_path, kb)
    assert report["renamed"] == [{"from": "a.md", "to": "c.md"}] and not report["added"]
    assert sorted(_ids(kb)) == ["b.pnk.yaml", "c.pnk.yaml"] and _ids(kb)["c.pnk.yaml"] == ident


def test_regression_killed_sidecar_swap_is_finished(tmp_path: Path) -> None:
    """Two documents that exchanged contents swap sidecars; a kill between the two sidecar
    writes used to leave both with one id (the other identity lost) and a stray .swap.tmp."""
    kb = _two_docs(tmp_path)
    before = _ids(kb)
    a, b = (kb / "a.md").read_bytes(), (kb / "b.md").read_bytes()
    (kb / "a.md").write_bytes(b)
    (kb / "b.md").write_bytes(a)
    run = subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path, "swap-sidecar:1"), timeout=300)
    assert run.returncode == -signal.SIGKILL
    assert (kb / ".pinakes" / "swap.journal").exists()  # the redo log of the half-done swap
    report = _sync_json(tmp_path, kb)
    assert any("finished swapping the sidecars" in p for p in report["problems"]), report["problems"]
    assert _ids(kb) == {"a.pnk.yaml": before["b.pnk.yaml"], "b.pnk.yaml": before["a.pnk.yaml"]}
    assert not (kb / ".pinakes" / "swap.journal").exists()
    assert not [p for p in kb.rglob("*.tmp")]
    conn = sqlite3.connect(kb / ".pinakes" / "index.db")
    rows = dict(conn.execute("SELECT path, ulid FROM documents"))
    conn.close()
    assert rows == {"a.md": before["b.pnk.yaml"], "b.md": before["a.pnk.yaml"]}


def test_regression_temp_file_in_the_parallel_sidecar_tree_is_removed(tmp_path: Path) -> None:
    """A sidecar write killed in a parallel sidecar tree (`[kb] sidecars = ".meta"`, as an
    adopted ClaudeKB has) left its temp file for good: the walk skips that tree."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pinakes.toml").write_text('[kb]\nname = "t"\nsidecars = ".meta"\n', encoding="utf-8")
    (kb / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    run = subprocess.run([PNK, "sync", "--kb", str(kb)], env=_env(tmp_path, "atomic-write:1"), timeout=300)
    assert run.returncode == -signal.SIGKILL
    assert len(list((kb / ".meta").glob(".*.tmp"))) == 1
    report = _sync_json(tmp_path, kb)
    assert any("removed a temporary file" in p for p in report["problems"])
    assert not list((kb / ".meta").glob(".*.tmp")) and read_sidecar(kb / ".meta" / "a.pnk.yaml").error is None


def test_regression_write_suggestions_follows_moved_and_deleted_sources(make_kb) -> None:
    """`pnk ask --write-suggestions` resolved sources in an index older than the files: a
    source deleted since the last sync got its sidecar written back beside nothing."""
    pytest.importorskip("pinakes_deep")
    from pinakes_deep.suggest import write_suggestions

    kb = make_kb({"a.md": "# A\n\nAlpha lanterns.\n", "b.md": "# B\n\nBeta foghorns.\n",
                  "c.md": "# C\n\nGamma tides.\n"})
    kb.sync()
    ids = {r: kb.resolve(r)["ulid"] for r in ("a.md", "b.md", "c.md")}

    def suggestion(src: str, dst: str) -> dict:
        return {"src": src, "src_id": ids[src], "to": dst, "to_id": ids[dst], "rel": "related",
                "origin": "deep", "transcript": "01TESTTRANSCRIPT0000000000", "note": "cited together"}

    (kb.root / "a.md").unlink()
    (kb.root / "a.pnk.yaml").unlink()  # git rm a.md a.pnk.yaml
    (kb.root / "b.md").rename(kb.root / "moved.md")
    (kb.root / "b.pnk.yaml").rename(kb.root / "moved.pnk.yaml")  # git mv, with the sidecar
    staged = write_suggestions(kb, [suggestion("a.md", "c.md"), suggestion("b.md", "c.md")])
    assert not (kb.root / "a.pnk.yaml").exists() and not (kb.root / "b.pnk.yaml").exists()
    assert [s["src"] for s in staged["skipped"]] == ["a.md"]
    assert [s["sidecar"] for s in staged["added"]] == ["moved.pnk.yaml"]
    assert "origin: deep" in (kb.root / "moved.pnk.yaml").read_text(encoding="utf-8")


def test_regression_killed_fleet_registry_write_leaves_no_temp(tmp_path: Path) -> None:
    """`pnk adopt` (or `pnk fleet add`) killed while it wrote the fleet registry left
    `.fleet.toml.PID.XXXX.tmp` in the user folder for good: no sync ever looks there."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pinakes.toml").write_text('[kb]\nname = "t"\n', encoding="utf-8")
    user = tmp_path / "user"
    run = subprocess.run([PNK, "fleet", "add", "t", str(kb)], env=_env(tmp_path, "atomic-write:1"), timeout=300)
    assert run.returncode == -signal.SIGKILL
    assert len(list(user.glob(".fleet.toml.*.tmp"))) == 1 and not (user / "fleet.toml").exists()
    done = subprocess.run([PNK, "fleet", "add", "t", str(kb)], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not list(user.glob(".*.tmp")) and "[kbs.\"t\"]" in (user / "fleet.toml").read_text()


def test_regression_readoption_after_git_mv_keeps_the_pages_id(tmp_path: Path) -> None:
    """`pnk adopt` again after `git mv` of a page planned before syncing: the moved page got a
    fresh sidecar and a new id, and its old sidecar stayed beside nothing."""
    pytest.importorskip("pinakes_claudekb")
    kb = tmp_path / "ckb"
    (kb / "docs" / "c").mkdir(parents=True)
    (kb / "kb.yml").write_text("name: ck\ntitle: CK\n", encoding="utf-8")
    for stem, word in (("a", "Alpha lanterns burn at the harbour all night"), ("b", "Beta foghorns sound")):
        (kb / "docs" / "c" / f"{stem}.md").write_text(
            f"---\ntype: concept\ntitle: {stem.upper()}\ndescription: page {stem}\n---\n\n# {stem}\n\n{word}.\n",
            encoding="utf-8")
    first = subprocess.run([PNK, "adopt", str(kb), "--json"], env=_env(tmp_path), capture_output=True,
                           text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    meta = kb / ".pinakes-meta" / "docs" / "c"
    ident = read_sidecar(meta / "a.pnk.yaml").id
    (kb / "docs" / "c" / "a.md").rename(kb / "docs" / "c" / "moved.md")  # git mv: the sidecar stays
    again = subprocess.run([PNK, "adopt", str(kb), "--json"], env=_env(tmp_path), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in meta.iterdir()) == ["b.pnk.yaml", "moved.pnk.yaml"]
    assert read_sidecar(meta / "moved.pnk.yaml").id == ident
    assert "adopted" in (meta / "moved.pnk.yaml").read_text(encoding="utf-8")  # still the adopted sidecar
