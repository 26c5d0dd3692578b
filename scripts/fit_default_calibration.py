"""Fit the calibration shipped for the default embedder (pinakes/data/calibration-<id>.json).

It is fitted with the default graph channel on (``graph_channel = "auto"``,
i.e. ``ppr`` when the graph plugins are installed), so the default search
reports a calibrated confidence and abstains. It pools four sources, each
counting for a quarter whatever its size:

* the example KB's golden set (multi-section documents, with in-domain
  unanswerable questions: near misses);
* the dev split of a 2Wiki dataset folder (964 questions; misses only);
* the golden set of a documentation KB (``--docs-kb`` synced from a docs
  folder, with ``--docs-golden``: real linked pages and near-miss
  unanswerable questions);
* cross-domain negatives: the 2Wiki questions asked of the example KB, and
  the example KB's questions asked of 2Wiki. Neither corpus can answer the
  other's questions, so these teach the calibration what "nothing here"
  looks like (low cosine, no query word anywhere), which golden sets of
  in-domain questions never show it.

Usage (from the repository root; the 2Wiki KB is cached after its first run;
the documentation KB must be a synced copy, never a folder you care about):

    .venv/bin/python scripts/fit_default_calibration.py --bench PATH/TO/2wiki \\
        --docs-kb PATH/TO/SYNCED/DOCS-KB --docs-golden PATH/TO/golden.yaml
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from pinakes import KB
from pinakes.evaluation.calibration import FEATURES, expected_calibration_error, fit_calibration
from pinakes.evaluation.dataset import dataset_relevant, load_dataset, materialise
from pinakes.evaluation.golden import load_golden, resolve_documents
from pinakes.evaluation.runner import Setting, run_eval

ROOT = Path(__file__).resolve().parents[1]


def _rows(run) -> tuple[np.ndarray, np.ndarray]:
    outs = run.runs[0].outcomes
    x = np.asarray([o.features or [0.0] * len(FEATURES) for o in outs], dtype=np.float64)
    y = np.asarray([1.0 if o.covered else 0.0 for o in outs])
    return x, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="a 2Wiki dataset folder (corpus.jsonl, queries.jsonl)")
    ap.add_argument("--docs-kb", required=True, help="a synced documentation KB")
    ap.add_argument("--docs-golden", required=True, help="that KB's golden set")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    kb = KB.open(ROOT / "examples" / "retrieval-kb")
    kb.sync()
    channel = kb.channel_name()
    setting = [Setting(channel, channel)]
    gs = load_golden(kb.root / "golden" / "questions.yaml")
    ex = run_eval(kb, gs.questions, resolve_documents(kb, gs.questions), setting)
    x1, y1 = _rows(ex)

    md = materialise(load_dataset(args.bench))
    md.kb._embedder = kb.embedder
    wiki = run_eval(md.kb, md.dataset.questions, dataset_relevant(md), setting)
    x2, y2 = _rows(wiki)

    docs = KB.open(Path(args.docs_kb))
    docs._embedder = kb.embedder
    dg = load_golden(Path(args.docs_golden))
    dd = run_eval(docs, dg.questions, resolve_documents(docs, dg.questions), setting)
    x5, y5 = _rows(dd)

    def off_topic(questions):
        return [replace(q, cls="unanswerable", documents=()) for q in questions]

    cross_a = run_eval(kb, off_topic(md.dataset.questions), {}, setting)
    cross_b = run_eval(md.kb, off_topic(gs.questions), {}, setting)
    x3, y3 = _rows(cross_a)
    x4, y4 = _rows(cross_b)
    x3, y3 = np.vstack([x3, x4]), np.concatenate([y3, y4])
    assert y3.sum() == 0

    parts = [("example KB", x1, y1), ("2wiki", x2, y2), ("docs KB", x5, y5),
             ("cross-domain", x3, y3)]
    x = np.vstack([p[1] for p in parts])
    y = np.concatenate([p[2] for p in parts])
    # Each source carries a quarter of the total weight.
    w = np.concatenate([np.full(len(p[2]), len(y) / (len(parts) * len(p[2]))) for p in parts])
    before = np.clip(x[:, FEATURES.index("cos_top1")], 0, 1)
    fit = fit_calibration(
        x, y, kb.config.embedder_id, k=int(kb.config.retrieval["k"]), before=before,
        before_label="raw top cosine read as a probability (no calibration)", weights=w,
        graph="" if channel == "off" else channel,
        source=f"examples/retrieval-kb golden set ({len(y1)}) + 2wiki dev ({len(y2)}) + "
        f"docs KB golden set ({len(y5)}) + cross-domain negatives ({len(y3)}), a quarter each; "
        f"graph channel {channel}")
    start = 0
    for name, _, yy in parts:
        sl = slice(start, start + len(yy))
        start += len(yy)
        print(f"{name}: n={len(yy)} positives={int(yy.sum())} held-out ECE "
              f"{expected_calibration_error(before[sl], y[sl]):.3f} -> "
              f"{expected_calibration_error(fit.heldout[sl], y[sl]):.3f}")
    print(f"pooled: ECE {fit.ece_before:.3f} -> {fit.ece_after:.3f}, Brier {fit.brier_after:.3f}")
    out = Path(args.out) if args.out else ROOT / "pinakes" / "data" / f"calibration-{kb.config.embedder_id}.json"
    fit.calibration.meta["fitted_by"] = "scripts/fit_default_calibration.py"
    fit.calibration.save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
