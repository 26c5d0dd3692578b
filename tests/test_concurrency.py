"""Concurrency: ``pnk serve`` under repeated syncs and a file watcher (the harness at CI size), and two syncs at once.

Full size: ``python benchmarks/harness_concurrency.py --calls 500`` (docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .repo_script import load

ROOT = Path(__file__).resolve().parents[1]
PNK = str(Path(sys.executable).parent / "pnk")


def _harness():
    return load("benchmarks/harness_concurrency.py")


@pytest.mark.slow
def test_serve_answers_consistently_while_sync_runs(tmp_path: Path) -> None:
    """Two servers, three sessions, syncs in a loop and a ``pnk sync --watch`` syncing an editor's edits."""
    report = _harness().run(calls=40, docs=8, clients=3, canaries=3, workdir=tmp_path, min_syncs=2)
    assert report["failures"] == [], json.dumps(report, indent=1)
    assert report["calls"] >= 40 and report["syncs_during"] >= 2
    assert set(report["by_transport"]) == {"stdio", "http"}
    assert report["canary_rounds_seen"] >= 2  # answers came from more than one generation
    assert report["edits_during"] >= 1 and report["watcher_syncs"] >= 2  # the initial sync, then edits


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(tmp_path / "user")
    env["PINAKES_CACHE_DIR"] = os.environ.get("PINAKES_CACHE_DIR", str(tmp_path / "cache"))  # never the real home
    return env


def _kb(tmp_path: Path, n: int) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "pinakes.toml").write_text('[kb]\nname = "two"\n', encoding="utf-8")
    words = "lantern harbour keeper beacon tide fog signal prism lens rotation gallery tower".split()
    for i in range(n):
        paras = "\n\n".join(" ".join(words[(i * 5 + j * 7 + k) % len(words)] + str(i + j) for k in range(50))
                            for j in range(4))
        (root / f"d{i:03d}.md").write_text(f"# Doc {i}\n\n{paras}\n", encoding="utf-8")
    return root


def test_two_syncs_at_once_one_waits_none_corrupts(tmp_path: Path) -> None:
    root = _kb(tmp_path, 12)
    procs = [subprocess.Popen([PNK, "sync", "--kb", str(root), "--json", "--wait", "600"], env=_env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    reports = [json.loads(o[0]) for o in outs]
    # One did the work; the other waited for the lock and found nothing left to do.
    assert sorted(len(r["added"]) for r in reports) == [0, 12]
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 12
    assert conn.execute("SELECT count(DISTINCT ulid) FROM documents").fetchone()[0] == 12
    conn.close()
    sidecars = sorted(p.name for p in root.glob("*.pnk.yaml"))
    assert len(sidecars) == 12  # each written once: no second sidecar raced in with another id


def test_second_sync_without_waiting_fails_clearly(tmp_path: Path) -> None:
    root = _kb(tmp_path, 16)
    first = subprocess.Popen([PNK, "sync", "--kb", str(root)], env=_env(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = root / ".pinakes" / "sync.lock"
    deadline = time.monotonic() + 120
    while not (lock.exists() and lock.read_text().startswith("pid")):
        assert time.monotonic() < deadline and first.poll() is None, "the first sync never took the lock"
        time.sleep(0.05)
    second = subprocess.run([PNK, "sync", "--kb", str(root), "--wait", "0"], env=_env(tmp_path),
                            capture_output=True, text=True, timeout=300)
    first.communicate(timeout=600)
    assert first.returncode == 0
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and "another sync is running on this knowledge base (pid" in lines[0], lines
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 16
    conn.close()
