"""Limits: huge files are skipped with a warning, fast, never hung on.

The 100,000-file memory run is by command only (``python benchmarks/harness_limits.py``,
figures in docs/reliability.md); it is far too long for CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pinakes.sync import MAX_LINE_BYTES, _longest_line

PNK = str(Path(sys.executable).parent / "pnk")


def test_a_50_mb_file_and_a_10_mb_line_are_skipped_in_seconds(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "pinakes.toml").write_text('[kb]\nname = "limits"\n', encoding="utf-8")
    (root / "note.md").write_text("# Note\n\nA normal note about lighthouses.\n", encoding="utf-8")
    line = b"lantern harbour keeper " * 435_000  # 10,005,000 bytes: just under max_file_mb (10 MiB)
    (root / "one-line.md").write_bytes(b"# One line\n\n" + line + b"\n")
    with open(root / "huge.md", "wb") as fh:
        para = b"The keeper trimmed the wick and wound the clockwork before dusk.\n\n"
        for _ in range(50 * 1024 * 1024 // len(para) + 1):
            fh.write(para)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(tmp_path / "user")
    env["PINAKES_CACHE_DIR"] = os.environ.get("PINAKES_CACHE_DIR", str(tmp_path / "cache"))  # never the real home
    t0 = time.monotonic()
    run = subprocess.run([PNK, "sync", "--kb", str(root), "--json"], env=env, capture_output=True,
                         text=True, timeout=180)
    elapsed = time.monotonic() - t0
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["added"] == ["note.md"] and report["skipped"] == 2
    problems = " | ".join(report["problems"])
    assert "huge.md: skipped: 50.0 MB is over max_file_mb" in problems
    assert "one-line.md: skipped: a line of 9.5 MB (over 1 MB), not prose Markdown" in problems
    assert elapsed < 120, f"sync took {elapsed:.0f} s on two skipped files"
    # Skipped files cost a stat next time, nothing more: still skipped, still fast.
    again = subprocess.run([PNK, "sync", "--kb", str(root), "--json"], env=env, capture_output=True,
                           text=True, timeout=180)
    assert json.loads(again.stdout)["skipped"] == 2


def test_longest_line() -> None:
    assert _longest_line(b"") == 0
    assert _longest_line(b"ab\ncde\nf") == 3
    assert _longest_line(b"abcd") == 4
    assert _longest_line(b"a\n" * 10 + b"x" * (MAX_LINE_BYTES + 1)) == MAX_LINE_BYTES + 1
