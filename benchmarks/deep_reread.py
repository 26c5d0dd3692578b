"""Re-read the citations of a ``pnk eval --deep`` run with today's citation parser.

    .venv/bin/python benchmarks/deep_reread.py REPORT.json [--dataset DIR]

The report is the JSON ``pnk eval --deep --json`` (or deep_small_model.py) wrote;
its transcripts are read from the KB it names. Each synthesis prompt is rebuilt
from the transcript (question, settings, summary) and the passages' text in the
KB's index, and must come out at the byte size the transcript recorded, so the
parser sees exactly what the model saw. The cited-document recall is then
recomputed; a report written before the rows carried ``gold`` needs
``--dataset`` (the folder it was run on) for the golden documents. It prints
the recall as run and as re-read, and how many answers copy their prompt.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

from pinakes import KB
from pinakes_deep import prompts
from pinakes_deep import transcript as tr
from pinakes_deep.engine import _echoed_prefix, citation_list, prompt_text
from pinakes_deep.prompts import Caps, Passage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report")
    ap.add_argument("--dataset", help="the dataset folder, for reports whose rows have no `gold`")
    ap.add_argument("--write", help="write the report with re-read figures here")
    args = ap.parse_args()
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    kb_root = Path(report["source"]["kb"])
    kb = KB.open(kb_root)  # transcripts: .pinakes-ledger/transcripts/ (older runs are moved there)
    db = sqlite3.connect(kb_root / ".pinakes" / "index.db")
    golds = _golds(report, args.dataset, db)
    rows = report["per_question"]
    reread, echoes, exact = [], 0, 0
    for row in rows:
        t = tr.load(kb, row["transcript"])
        syn = [r for r in t["rounds"] if r["kind"] == "synthesis"][-1]
        caps = Caps.from_settings(t["settings"]["deep"])
        shown = [Passage(p["doc_id"], p["path"], p["title"], _text(db, p["chunk_id"]), p["chunk_id"])
                 for p in syn["retrieved"]]
        msgs = prompts.synthesis(t["question"], shown, t.get("summary") or "", caps,
                                 t["settings"].get("schema", ""))
        if t["settings"]["llm"].get("system_role") == "user":
            from pinakes_deep.backends import system_as_user
            msgs = system_as_user(msgs)
            size = len(msgs[0]["content"].encode("utf-8"))
        else:
            size = sum(len(m["content"].encode("utf-8")) for m in msgs)
        exact += size == syn["prompt_bytes"] or size == syn["prompt_bytes"] + 2  # + the joining blank line
        prompt = prompt_text(msgs)
        reply = (syn.get("reply") or "").lstrip()
        echoes += _echoed_prefix(reply, prompt) > 0
        cites = {c["doc_id"] for c in citation_list(t["answer"], shown, prompt)}
        gold = golds[row["id"]]
        reread.append(len(cites & gold) / len(gold) if gold else None)
        row["cited_reread"] = sorted(cites)
        row["cited_recall_reread"] = reread[-1]
    vals = [v for v in reread if v is not None]
    as_run = [r["cited_recall"] for r in rows if r["cited_recall"] is not None]
    out = {"n": len(rows), "prompts_rebuilt_exactly": exact,
           "cited_recall_as_run": round(sum(as_run) / len(as_run), 4) if as_run else None,
           "cited_recall_reread": round(sum(vals) / len(vals), 4) if vals else None,
           "answers_copying_their_prompt": echoes}
    print(json.dumps(out))
    if args.write:
        report["reread"] = out
        Path(args.write).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _text(db: sqlite3.Connection, chunk_id: int) -> str:
    row = db.execute("SELECT text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    return row[0] if row else ""


def _golds(report: dict, dataset: str | None, db: sqlite3.Connection) -> dict[str, set[str]]:
    rows = report["per_question"]
    if all("gold" in r for r in rows):
        return {r["id"]: set(r["gold"]) for r in rows}
    if not dataset:
        raise SystemExit("this report's rows carry no `gold`: pass --dataset DIR")
    from pinakes.evaluation.dataset import dataset_relevant, load_dataset, materialise

    md = materialise(load_dataset(dataset))
    rel = dataset_relevant(md)
    ulid = dict(db.execute("SELECT doc, ulid FROM documents").fetchall())
    return {r["id"]: {ulid[d] for d in rel.get(r["id"], ()) if d in ulid} for r in rows}


if __name__ == "__main__":
    main()
