"""scripts/reproduce-2wiki.sh: the 2Wiki figures from a local dataset folder, fetching nothing.

The fixture is a six-passage corpus in the same two-file format, written here; the real
dataset is never part of the repository.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "reproduce-2wiki.sh"

PASSAGES = [
    ("p1", "Aldous Brenning", "Aldous Brenning was a glassblower born in Lutz in 1821. He married Clara Vey."),
    ("p2", "Clara Vey", "Clara Vey was a painter from Orren. She died in 1890."),
    ("p3", "Lutz", "Lutz is a river town known for its glassworks."),
    ("p4", "Orren", "Orren is a mountain village with a painted chapel."),
    ("p5", "The Copper Kettle", "The Copper Kettle is an 1850 novel set in Lutz."),
    ("p6", "Mira Stone", "Mira Stone wrote The Copper Kettle while living in Orren."),
]
QUERIES = [
    {"id": "q1", "text": "When did the wife of Aldous Brenning die?", "relevant": ["p1", "p2"],
     "class": "multi-hop"},
    {"id": "q2", "text": "Where was Aldous Brenning born?", "relevant": ["p1"], "class": "simple"},
    {"id": "q3", "text": "Who wrote The Copper Kettle?", "relevant": ["p6"], "class": "simple"},
]


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in PASSAGES), "utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES), "utf-8")
    return folder


def _script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PNK": str(Path(sys.executable).with_name("pnk")),
                               **(env or {})})


def test_wrong_folder_is_one_clear_line(tmp_path: Path) -> None:
    out = _script(str(tmp_path / "nowhere"))
    assert out.returncode == 1
    assert "corpus.jsonl not found" in out.stderr and "Traceback" not in out.stderr
    assert _script().returncode == 2  # no folder at all: usage


@pytest.mark.slow
def test_reproduces_the_tables_from_a_dataset_folder(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "2wiki")
    out_dir = tmp_path / "out"
    done = _script(str(data), str(out_dir), "--", "--cache", str(tmp_path / "cache"),
                   env={"STAGES": "default structure"})
    assert done.returncode == 0, done.stderr[-3000:]
    default = json.loads((out_dir / "default.json").read_text())
    names = [s["name"] for s in default["settings"]]
    assert names[:5] == ["off", "bm25", "dense", "expand", "ppr"] and len(names) == 9
    assert default["source"]["questions"] == 3 and "mentions" in default["source"]["graph"]
    structure = json.loads((out_dir / "structure.json").read_text())
    assert [s["name"] for s in structure["settings"]] == ["off", "ppr"]
    assert "mentions" not in structure["source"]["graph"]
    assert (out_dir / "default.html").is_file() and not (out_dir / "ner.json").exists()
    assert "| default | bm25 |" in done.stdout and "| structure | ppr |" in done.stdout
