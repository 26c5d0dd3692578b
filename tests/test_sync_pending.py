"""A first sync is searchable lexically before its embedding finishes, and resumes it.

Real store, real MiniLM embedder, a small fixture; the phase-4 thresholds are
lowered so a handful of chunks exercises the batch path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes import sync as sync_mod
from pinakes.cli import cli

DOCS = {
    "metronome.md": "# Metronome\n\nA metronome keeps a steady tempo for practice.\n\n"
                    "## Tempo\n\nStart slow and raise the tempo by small steps.\n",
    "build.md": "# Slow builds\n\nA slow build is often a cold cache.\n\n"
                "## ERR-4471\n\nERR-4471 means the linker ran out of memory.\n",
    "fusion.md": "# Fusion\n\nReciprocal-rank fusion merges ranked lists.\n",
}


def _kb(tmp_path: Path) -> KB:
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return KB.init(root)


class Interrupt(BaseException):
    """Stands in for Ctrl-C in the middle of phase 4."""


def test_interrupted_embedding_is_lexical_then_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sync_mod, "INLINE_EMBED_MAX", 0)
    monkeypatch.setattr(sync_mod, "PENDING_BATCH", 2)
    kb = _kb(tmp_path)
    emb = kb.embedder
    real_embed = emb.embed
    calls = {"n": 0}

    def flaky(texts, **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise Interrupt
        return real_embed(texts, **kw)

    monkeypatch.setattr(emb, "embed", flaky)
    with pytest.raises(Interrupt):
        kb.sync()
    kb.invalidate()
    status = kb.status()
    assert status["documents"] == 3
    assert 0 < status["vectors"] < status["chunks"]
    assert status["embedding_pending"] == status["chunks"] - 2
    res = kb.search("ERR-4471 linker")
    assert res.hits[0].path == "build.md"  # lexical works before embedding finished
    assert res.embedding is not None and res.embedding["embedded"] == 2
    assert "still embedding" in (res.notice or "")
    out = CliRunner().invoke(cli, ["status", "--kb", str(kb.root)])
    assert "embedding in progress" in out.output, out.output

    monkeypatch.setattr(emb, "embed", real_embed)
    report = kb.sync()
    assert not report.added and not report.changed
    assert report.chunks_embedded == status["chunks"] - 2
    kb.invalidate()
    status = kb.status()
    assert status["vectors"] == status["chunks"] and status["embedding_pending"] == 0
    res = kb.search("keeping a steady beat while practising")
    assert res.embedding is None and res.notice is None
    assert res.hits[0].path == "metronome.md"
    assert res.hits[0].ranks.get("dense") == 1


def test_no_vectors_yet_is_lexical_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sync_mod, "INLINE_EMBED_MAX", 0)
    kb = _kb(tmp_path)

    def never(texts, **kw):  # type: ignore[no-untyped-def]
        raise Interrupt

    monkeypatch.setattr(kb.embedder, "embed", never)
    with pytest.raises(Interrupt):
        kb.sync()
    kb.invalidate()
    monkeypatch.undo()
    res = kb.search("reciprocal rank fusion")
    assert res.hits and res.hits[0].path == "fusion.md"
    assert res.embedding is not None and res.embedding["lexical_only"]
    assert "lexical-only" in (res.notice or "")
    assert "dense" not in res.hits[0].ranks


def test_small_job_stays_one_transaction(tmp_path: Path) -> None:
    kb = _kb(tmp_path)  # 5 chunks: under INLINE_EMBED_MAX, embedded before the commit
    report = kb.sync()
    kb.invalidate()
    status = kb.status()
    assert report.chunks_embedded == status["chunks"] == status["vectors"] == 5
    assert report.generation == 1  # one commit: documents and vectors together
    assert kb.reader().get_meta("embedding_pending") is None
