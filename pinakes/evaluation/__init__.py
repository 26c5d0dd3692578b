"""Evaluation: golden sets, external datasets, the channel matrix, gates and calibration.

``pnk eval`` is a thin face over this package, and this package is a thin
user of :meth:`pinakes.KB.search`: it never reimplements retrieval, so what
it measures is what users run.

* :mod:`.golden` — golden sets (YAML) loaded strictly, documents resolved;
* :mod:`.dataset` — ``corpus.jsonl`` + ``queries.jsonl`` folders, materialised
  once into a cached KB;
* :mod:`.metrics` — recall@k, all-evidence recall, MRR, abstention, latency;
* :mod:`.runner` — the settings matrix, run side by side;
* :mod:`.reach` — the channel-reachable ceiling of the gates;
* :mod:`.gates` — the default-on gates, as a pure function;
* :mod:`.calibration` — calibrated confidence (NumPy logistic regression);
* :mod:`.report` — the self-contained HTML report.
"""

from __future__ import annotations

from .golden import CLASSES, GoldenSet, Question, load_golden, resolve_documents

__all__ = ["CLASSES", "GoldenSet", "Question", "load_golden", "resolve_documents"]
