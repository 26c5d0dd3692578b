"""The output the docs quote is what a real run prints (``scripts/docs_sessions.py``).

Every block marked ``<!-- session: ... -->`` in README.md and docs/ is run again: console
blocks through ``bash`` with the installed ``pnk``, MCP blocks against a real ``pnk serve``
through the official client SDK. A page whose quoted output drifted fails here, with the
diff; ``python scripts/docs_sessions.py --write PAGE`` rewrites it from the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .repo_script import load

ROOT = Path(__file__).resolve().parents[1]


sessions = load("scripts/docs_sessions.py")
MARKED = [p for p in sessions.PAGES if sessions.blocks(p)]


def test_the_pages_that_quote_output_are_marked() -> None:
    """Each page that quotes a command's or a tool's output has its blocks marked."""
    names = {p.relative_to(ROOT).as_posix() for p in MARKED}
    assert {"docs/mcp.md", "docs/links.md", "docs/deep.md", "docs/cache.md", "docs/adopt.md"} <= names
    for page in (ROOT / "docs").rglob("*.md"):
        text = page.read_text("utf-8").splitlines()
        for i, line in enumerate(text):
            if line.startswith("```console") or (line == "```json" and "pinakes_" in "".join(text[i - 4:i])):
                assert i and sessions.MARK.match(text[i - 1]), f"{page.relative_to(ROOT)}:{i + 1}: unmarked"


@pytest.mark.slow
@pytest.mark.parametrize("page", MARKED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_quoted_output_matches_a_real_run(page: Path, example_kb_copy: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The session's embedding cache, which example_kb_copy filled: the scenarios' copies of
    # the example KB embed nothing (those that show a new user's cache make their own).
    monkeypatch.setenv("PINAKES_CACHE_DIR", os.environ["PINAKES_TEST_SESSION_CACHE"])
    monkeypatch.setenv("PINAKES_DOCS_SYNCED_EXAMPLE", str(example_kb_copy))  # copied, index and all
    problems = sessions.check_page(page, log=lambda line: None)
    assert not problems, "\n\n".join(problems) + (
        f"\n\n(rewrite from the run: .venv/bin/python scripts/docs_sessions.py --write "
        f"{page.relative_to(ROOT)})")


PAGE = """# A page

<!-- session: console claudekb -->
```console
$ ls kb-bees/docs/concepts
{listing}
```
"""


def test_the_check_fails_on_drift_accepts_an_elision_and_rewrites(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE.format(listing="foraging.md\nswarming.md"), "utf-8")
    assert sessions.check_page(page, log=lambda line: None) == []
    page.write_text(PAGE.format(listing="..."), "utf-8")
    assert sessions.check_page(page, log=lambda line: None) == []
    page.write_text(PAGE.format(listing="foraging.md\nqueens.md"), "utf-8")
    problems = sessions.check_page(page, log=lambda line: None)
    assert len(problems) == 1 and "-queens.md" in problems[0] and "+swarming.md" in problems[0]
    assert sessions.check_page(page, write=True, log=lambda line: None) == []
    assert page.read_text("utf-8") == PAGE.format(listing="foraging.md\nswarming.md")


def test_volatile_parts_match_loosely_and_nothing_else_does() -> None:
    ws = sessions.Workspace(Path("/nowhere"), Path("/nowhere"), {}, Path("/nowhere"),
                            known_ids={"01M8NK2VA9AJ1YS5RDXZNJZHMD"})
    same = sessions.matches
    assert same(["synced in 0.20s at 2026-11-30T07:09:52Z"], ["synced in 1.35s at 2027-01-02T00:00:00Z"],
                ws.loose)
    assert same(["run 01M8YCMWCF69BPC70Z8KYZW10J"], ["run 01M8ZZZZZZZZZZZZZZZZZZZZZZ"], ws.loose)
    assert same(['"generation": 1,'], ['"generation": 3,'], ws.loose)
    assert not same(["doc 01M8NK2VA9AJ1YS5RDXZNJZHMD"], ["doc 01M8ZZZZZZZZZZZZZZZZZZZZZZ"], ws.loose)
    assert same(["score 0.0302"], ["score 0.0303"], ws.loose)  # the last digit's rounding
    assert not same(["score 0.0302"], ["score 0.0312"], ws.loose)
    assert not same(["3 hits"], ["4 hits"], ws.loose)
    assert same(["a", "...", "z"], ["a", "b", "c", "z"], ws.loose)
    assert not same(["a", "...", "z"], ["a", "b"], ws.loose)
