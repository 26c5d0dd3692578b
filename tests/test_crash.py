"""The crash harness at CI size, and the regressions it found.

The full run (``python benchmarks/harness_crash.py --kills 20``, 300 documents)
is documented in docs/reliability.md; here the same code lands a few kills on a
small generated KB with the real embedder and the real ``pnk`` console script.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pinakes.sidecar import read_sidecar

ROOT = Path(__file__).resolve().parents[1]
PNK = str(Path(sys.executable).parent / "pnk")


def _harness():
    spec = importlib.util.spec_from_file_location("harness_crash", ROOT / "benchmarks" / "harness_crash.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["harness_crash"] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def test_crash_harness_small(tmp_path: Path) -> None:
    report = _harness().run(kills=3, docs=20, seed=7, workdir=tmp_path, share=0.1)
    assert report["failures"] == [], json.dumps(report, indent=1)
    assert report["kills"] >= 3
    assert report["recovery_syncs"] >= 1


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
