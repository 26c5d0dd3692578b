"""Lexical MATCH over selective terms only (opt-in); very common terms still weigh in fusion."""

from __future__ import annotations

from pathlib import Path

from pinakes import KB


def _kb(tmp_path: Path) -> KB:
    root = tmp_path / "kb"
    root.mkdir()
    for i in range(24):
        extra = " The zephyrine valve sits here." if i == 7 else ""
        (root / f"doc{i:02d}.md").write_text(
            f"# Note {i}\n\nEvery pump needs a gasket number {i}.{extra}\n", encoding="utf-8")
    kb = KB.init(root)
    kb.sync()
    return kb


def test_common_terms_leave_the_match(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    cfg = kb.config.retrieval
    cfg["lexical_common_min_df"] = 0
    cfg["lexical_common_share"] = 0.5  # "pump" and "gasket" are in every chunk
    res = kb.search("pump gasket zephyrine", channels=["lexical"])
    assert [h.path for h in res.hits] == ["doc07.md"]
    cfg["lexical_common_share"] = 1.0  # off: every term matches, as before
    res = kb.search("pump gasket zephyrine", channels=["lexical"])
    assert res.hits[0].path == "doc07.md" and len(res.hits) > 1


def test_all_common_keeps_the_rarest_and_small_kbs_are_untouched(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    cfg = kb.config.retrieval
    cfg["lexical_common_min_df"] = 0
    cfg["lexical_common_share"] = 0.01
    # Every occurring term is common; an absent one ("unobtainium") must not empty the list.
    res = kb.search("pump gasket unobtainium", channels=["lexical"])
    assert len(res.hits) == 10
    del cfg["lexical_common_min_df"]  # default floor: 24 chunks are far below it
    res = kb.search("pump gasket zephyrine", channels=["lexical"])
    assert res.hits[0].path == "doc07.md" and len(res.hits) > 1
    del cfg["lexical_common_share"]
    cfg["lexical_common_min_df"] = 0  # the default share (1.0) is off: every term matches
    res = kb.search("pump gasket zephyrine", channels=["lexical"])
    assert len(res.hits) > 1


def test_a_term_named_like_a_cache_key(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    # Its document frequency must not collide with the cache's own "generation" key.
    assert kb.search("generation gasket").hits
    assert kb._idf_cache["_df"]["generation"] == 0
    assert kb._idf_cache["_df"]["gasket"] == 24
    assert kb._idf_cache["generation"] == kb.reader().generation
