"""The question sets under ``benchmarks/`` stay usable, and two of them hold what they found.

Each fixture is a KB folder written for this project with a golden set beside it
(``benchmarks/<name>/golden.yaml``; docs/benchmarks.md reads them). A renamed note or a
typo in a path would leave ``pnk eval`` measuring nothing for that question, so every set
must load and every document it lists must exist in each KB folder of its fixture.

The outliner vault is then searched end to end, the way a user would after ``pnk init``
and ``pnk sync``: a fact written in a nested bullet, in kronor, answers; a price the notes
never give still abstains.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pinakes.evaluation.golden import load_golden

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SETS = sorted(p for p in BENCHMARKS.glob("*/*.yaml") if p.name in ("golden.yaml", "kinds.yaml"))


def _kb_folders(fixture: Path) -> list[Path]:
    """A fixture's KB folders: ``kb/``, or one per rendering (``kb-heading-dates/``, ...)."""
    return sorted(p for p in fixture.iterdir() if p.is_dir() and p.name.startswith("kb"))


def test_every_fixture_has_a_golden_set() -> None:
    fixtures = {p.parent.name for p in SETS}
    assert {"tool-docs", "outliner-vault", "small-vault", "two-friends"} <= fixtures


@pytest.mark.parametrize("golden", SETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_golden_sets_documents_exist_in_its_kb(golden: Path) -> None:
    questions = load_golden(golden).questions
    assert questions, golden
    folders = _kb_folders(golden.parent)
    assert folders, f"no kb folder beside {golden}"
    missing = [(q.id, doc, folder.name) for q in questions for doc in q.documents
               for folder in folders if not (folder / doc).is_file()]
    assert not missing
    # A near miss lists no document; an answerable question lists at least one.
    assert all(bool(q.documents) == (q.cls != "unanswerable") for q in questions)


def test_the_outliner_vault_answers_from_nested_bullets(tmp_path: Path, make_kb: Any) -> None:
    root = tmp_path / "outliner-vault"
    shutil.copytree(BENCHMARKS / "outliner-vault" / "kb", root)
    kb = make_kb({}, name="outliner-vault", root=root)
    kb.sync()
    # "- DONE renew Agria insurance for [[Otis]]" / "\t- 412 kr/month now, was 389"
    insurance = kb.search("How much is Otis's insurance a month now?")
    assert insurance.confidence is not None and not insurance.abstained
    # "- rent 8 940 kr/month, due on the 28th", on the page "Flat"
    rent = kb.search("How much does my flat cost me each month?")
    assert rent.confidence is not None and not rent.abstained
    # The bike service is in the notes; its price never is.
    service = kb.search("How much did the new chain and cassette at Velo Fix cost?")
    assert service.abstained
