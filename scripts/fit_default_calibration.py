"""Fit the calibration shipped for the default embedder (pinakes/data/calibration-<id>.json).

It pools three sources, each counting for a third whatever its size:

* the example KB's golden set (multi-section documents, with in-domain
  unanswerable questions: near misses);
* the 2WikiMultiHopQA dev split (a ``--dataset`` folder) (964 questions; misses only);
* cross-domain negatives: the 2wiki questions asked of the example KB, and
  the example KB's questions asked of 2wiki. Neither corpus can answer the
  other's questions, so these teach the calibration what "nothing here"
  looks like (low cosine, no query word anywhere), which golden sets of
  in-domain questions never show it.

Usage (from the repository root; the 2wiki KB is cached after its first run):

    .venv/bin/python scripts/fit_default_calibration.py [--bench PATH/TO/2wiki]
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
    ap.add_argument("--bench", required=True, metavar="PATH/TO/2wiki",
                    help="the 2WikiMultiHopQA dev folder (corpus.jsonl + queries.jsonl)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    kb = KB.open(ROOT / "examples" / "retrieval-kb")
    kb.sync()
    gs = load_golden(kb.root / "golden" / "questions.yaml")
    ex = run_eval(kb, gs.questions, resolve_documents(kb, gs.questions), [Setting("off")])
    x1, y1 = _rows(ex)

    md = materialise(load_dataset(args.bench))
    md.kb._embedder = kb.embedder
    wiki = run_eval(md.kb, md.dataset.questions, dataset_relevant(md), [Setting("off")])
    x2, y2 = _rows(wiki)

    def off_topic(questions):
        return [replace(q, cls="unanswerable", documents=()) for q in questions]

    cross_a = run_eval(kb, off_topic(md.dataset.questions), {}, [Setting("off")])
    cross_b = run_eval(md.kb, off_topic(gs.questions), {}, [Setting("off")])
    x3, y3 = _rows(cross_a)
    x4, y4 = _rows(cross_b)
    x3, y3 = np.vstack([x3, x4]), np.concatenate([y3, y4])
    assert y3.sum() == 0

    x = np.vstack([x1, x2, x3])
    y = np.concatenate([y1, y2, y3])
    # Each source carries a third of the total weight.
    w = np.concatenate([np.full(len(part), len(y) / (3 * len(part))) for part in (y1, y2, y3)])
    before = np.clip(x[:, FEATURES.index("cos_top1")], 0, 1)
    fit = fit_calibration(x, y, kb.config.embedder_id, k=int(kb.config.retrieval["k"]), before=before,
                          before_label="raw top cosine read as a probability (no calibration)",
                          weights=w, source=f"examples/retrieval-kb golden set ({len(y1)}) + "
                          f"bench/2wiki dev ({len(y2)}) + cross-domain negatives ({len(y3)}), "
                          "a third each")
    n1, n2 = len(y1), len(y1) + len(y2)
    for name, sl in (("example KB", slice(0, n1)), ("2wiki", slice(n1, n2)),
                     ("cross-domain", slice(n2, len(y)))):
        print(f"{name}: n={len(y[sl])} positives={int(y[sl].sum())} held-out ECE "
              f"{expected_calibration_error(before[sl], y[sl]):.3f} -> "
              f"{expected_calibration_error(fit.heldout[sl], y[sl]):.3f}")
    print(f"pooled: ECE {fit.ece_before:.3f} -> {fit.ece_after:.3f}, Brier {fit.brier_after:.3f}")
    out = Path(args.out) if args.out else ROOT / "pinakes" / "data" / f"calibration-{kb.config.embedder_id}.json"
    fit.calibration.meta["fitted_by"] = "scripts/fit_default_calibration.py"
    fit.calibration.save(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
