"""The contentless FTS index: no second copy of the text, and deletes that leave nothing behind.

chunks_fts keeps no content, so a sync deletes a row by giving back what it
indexed. The check: after edits, renames of titles, CJK text and removals, the
incrementally kept index holds exactly the terms (and counts) of a rebuild.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pinakes import KB


def _vocab(db: Path) -> list[tuple[str, int, int]]:
    conn = sqlite3.connect(db)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, row)")
        return sorted(conn.execute("SELECT term, doc, cnt FROM temp.v"))
    finally:
        conn.close()


def test_incremental_index_equals_a_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nLate interaction scores tokens.\n\n## Part\n\nMore text.\n",
                               encoding="utf-8")
    (root / "b.md").write_text("# 東京の案内\n\n東京は大きい都市です。\n", encoding="utf-8")
    (root / "c.md").write_text("# Gamma\n\nA metronome keeps time.\n", encoding="utf-8")
    kb = KB.init(root)
    kb.sync()
    (root / "a.md").write_text("# Alpha renamed\n\nEarly interaction, other words.\n", encoding="utf-8")
    (root / "b.md").write_text("# 東京の案内\n\n京都も大きい。\n\n## 別\n\n新しい節。\n", encoding="utf-8")
    (root / "c.md").unlink()
    (root / "c.pnk.yaml").unlink()
    (root / "d.md").write_text("# Delta\n\nDelta arrives.\n", encoding="utf-8")
    kb.sync()
    kb.invalidate()
    db = root / ".pinakes" / "index.db"
    incremental = _vocab(db)
    assert not any(t in ("metronome", "late", "token") for t, _, _ in incremental)
    kb.sync(rebuild=True)
    kb.invalidate()
    assert _vocab(db) == incremental
    res = kb.search("early interaction")
    assert res.hits[0].path == "a.md"
    assert not kb.search("metronome").hits or all(h.path != "c.md" for h in kb.search("metronome").hits)


def test_index_keeps_no_text(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nsupercalifragilistic words here.\n", encoding="utf-8")
    kb = KB.init(root)
    kb.sync()
    kb.invalidate()
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "chunks_fts_content" not in tables  # contentless: no shadow copy of the text
        (body,) = conn.execute("SELECT body FROM chunks_fts WHERE chunks_fts MATCH 'supercalifragilistic'"
                               ).fetchone()
        assert body is None
    finally:
        conn.close()
