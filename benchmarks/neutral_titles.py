"""Derive a dev proxy for corpora whose documents are not named after their subjects.

2WikiMultiHopQA passages are titled after their subjects ("Polish Easter",
"Jakob Ziemnicki"), so title mentions alone bridge them: a passage naming
"Jakob Ziemnicki" meets the passage titled so at one entity node. Many real
corpora (MuSiQue's paragraphs, meeting notes, tickets, chat exports) have no
such titles, and there only entities found in the *text* can bridge.

This script reads a dataset folder in the ``pnk eval --dataset`` format
(``corpus.jsonl`` + ``queries.jsonl``) and writes a copy whose passages carry
neutral titles ("Passage 3817", a number that says nothing about order or
subject) and the same text; the questions are copied unchanged. Title mentions
then cannot bridge, only text entities can: a check that an entity extractor's
mechanism carries over, not a set to tune on alone. The output is derived
data: write it outside the repository (e.g. under a scratch folder).

    python benchmarks/neutral_titles.py PATH/TO/2wiki OUT_DIR
    pnk eval --dataset OUT_DIR --graph ner --matrix off,ppr --json
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path


def neutral_title(pid: str, used: set[int]) -> str:
    """A title that names nothing: a number derived from the id (stable, collision-free)."""
    n = int(hashlib.sha1(pid.encode("utf-8")).hexdigest()[:8], 16) % 1_000_000
    while n in used:
        n = (n + 1) % 1_000_000
    used.add(n)
    return f"Passage {n}"


def derive(src: Path, out: Path) -> tuple[int, int]:
    """Write ``out/corpus.jsonl`` (neutral titles) and ``out/queries.jsonl``; the counts."""
    out.mkdir(parents=True, exist_ok=True)
    used: set[int] = set()
    passages = 0
    with (src / "corpus.jsonl").open(encoding="utf-8") as fin, \
            (out / "corpus.jsonl").open("w", encoding="utf-8") as fout:
        for line in fin:
            if not line.strip():
                continue
            row = json.loads(line)
            row["title"] = neutral_title(str(row["id"]), used)
            fout.write(json.dumps(row, ensure_ascii=False) + "\n")
            passages += 1
    queries = 0
    with (src / "queries.jsonl").open(encoding="utf-8") as fin, \
            (out / "queries.jsonl").open("w", encoding="utf-8") as fout:
        for line in fin:
            if line.strip():
                fout.write(line if line.endswith("\n") else line + "\n")
                queries += 1
    return passages, queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="dataset folder (corpus.jsonl, queries.jsonl)")
    ap.add_argument("out", type=Path, help="output folder (outside the repository)")
    args = ap.parse_args()
    passages, queries = derive(args.source, args.out)
    print(f"{passages} passages, {queries} questions -> {args.out}")


if __name__ == "__main__":
    main()
