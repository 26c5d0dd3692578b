"""`pnk search` prewarms the ONNX session on a thread: shared with the embedder, and safe at exit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pinakes import KB
from pinakes.default_plugins import minilm


def test_prewarmed_session_is_the_embedders() -> None:
    thread = minilm.prewarm()
    assert thread is not None
    thread.join(timeout=120)
    emb = minilm.MiniLMEmbedder()
    assert emb._load_session() is next(iter(minilm._SESSIONS.values()))
    assert emb.embed_query("a metronome keeps time").shape == (384,)


def test_prewarm_skipped_when_not_wanted() -> None:
    before = dict(minilm._SESSIONS)
    minilm._SESSIONS.clear()
    try:
        thread = minilm.prewarm(lambda: False)
        assert thread is not None
        thread.join(timeout=60)
        assert not minilm._SESSIONS
    finally:
        minilm._SESSIONS.update(before)


def test_fast_failing_search_exits_cleanly(tmp_path: Path) -> None:
    # The command fails at once while the session is still being created on the
    # thread; a daemon thread killed inside ONNX Runtime aborted the process (134).
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nSome text.\n", encoding="utf-8")
    KB.init(root).sync()
    code = "import sys; from pinakes.cli import main; sys.argv[0] = 'pnk'; main()"
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", code, "search", "  ", "--kb", str(root)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert "the query is empty" in proc.stderr
        assert "terminate" not in proc.stderr
