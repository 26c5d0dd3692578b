"""Retrieval metrics over per-question outcomes: pure functions, hand-checkable.

Definitions (the ones ``docs/benchmarks.md`` and ``golden/README.md`` quote):

* Ranked chunks are first **collapsed to documents**: a document takes the
  rank of its best chunk, and later chunks of it are dropped.
* **recall@k** (HippoRAG's): per answerable question, the fraction of its
  relevant documents among the top ``k`` documents; averaged over questions.
* **all-evidence recall@k**: per question 1 if *every* relevant document is
  in the top ``k``, else 0; averaged.
* **MRR**: mean of 1 / rank of the first relevant document (0 when none of
  the retrieved documents is relevant).
* A question is **covered** when all of its evidence lies in the documents of
  the search's own top ``k`` hits (``[retrieval] k`` chunks): that is what the
  confidence predicts and what an abstention must be judged against.
* **false-abstain rate**: share of answerable questions on which the search
  abstained although it *was* covered (it had the evidence and said no).
* **abstain precision**: of all abstentions, the share that were right (the
  question was unanswerable, or its evidence was not in the top ``k``).
  ``None`` when nothing abstained.
* **latency**: percentiles (linear interpolation) of the per-query time.
* **ece**: ten-bin expected calibration error of the confidence against being
  covered (unanswerable questions and misses count as not covered, as in the
  calibration's own fit); ``None`` when any search had no confidence.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The recall cut-offs every report shows.
RECALL_KS = (2, 5, 10)
#: Cut-offs of the recall@k curves in the HTML report.
CURVE_KS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)


def collapse(items: Iterable[Hashable]) -> list[Hashable]:
    """Distinct items in order of first appearance (chunks' documents → ranked documents)."""
    return list(dict.fromkeys(items))


def recall_at(ranked: Sequence[Hashable], relevant: Iterable[Hashable], k: int) -> float:
    """Fraction of ``relevant`` among the first ``k`` of ``ranked`` (HippoRAG's recall)."""
    rel = set(relevant)
    if not rel:
        raise ValueError("recall is undefined without relevant documents")
    return len(rel.intersection(ranked[:k])) / len(rel)


def all_recall_at(ranked: Sequence[Hashable], relevant: Iterable[Hashable], k: int) -> float:
    """1.0 when every relevant document is among the first ``k``, else 0.0."""
    rel = set(relevant)
    if not rel:
        raise ValueError("recall is undefined without relevant documents")
    return 1.0 if rel.issubset(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[Hashable], relevant: Iterable[Hashable]) -> float:
    """1 / rank of the first relevant document, 0 when none was retrieved."""
    rel = set(relevant)
    for i, doc in enumerate(ranked, 1):
        if doc in rel:
            return 1.0 / i
    return 0.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100, linear interpolation); None for no values."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


@dataclass
class Outcome:
    """What one search did for one question under one setting."""

    qid: str
    cls: str
    relevant: tuple[Hashable, ...]
    ranked: list[Hashable]  # documents, best first (collapsed)
    covered: bool  # all evidence in the top-k hits' documents
    abstained: bool
    confidence: float | None
    latency_ms: float
    question_type: str | None = None
    features: list[float] | None = None
    seeds: list[int] = field(default_factory=list)  # fused top-k chunk ids (graph roots)
    cost_eur: float = 0.0

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The metrics of one group of outcomes (see the module docstring)."""
    answerable = [o for o in outcomes if o.answerable]
    out: dict[str, Any] = {"n": len(outcomes), "answerable": len(answerable)}
    for k in RECALL_KS:
        out[f"recall@{k}"] = _mean(recall_at(o.ranked, o.relevant, k) for o in answerable)
    out["all_recall@5"] = _mean(all_recall_at(o.ranked, o.relevant, 5) for o in answerable)
    out["mrr"] = _mean(reciprocal_rank(o.ranked, o.relevant) for o in answerable)
    out["covered"] = _mean(1.0 if o.covered else 0.0 for o in answerable)
    abstained = [o for o in outcomes if o.abstained]
    out["abstain_rate"] = (len(abstained) / len(outcomes)) if outcomes else None
    out["false_abstain_rate"] = (
        sum(1 for o in answerable if o.abstained and o.covered) / len(answerable)
        if answerable else None
    )
    out["abstain_precision"] = (
        sum(1 for o in abstained if not o.covered) / len(abstained) if abstained else None
    )
    confidences = [o.confidence for o in outcomes]
    out["ece"] = None
    if outcomes and all(c is not None for c in confidences):
        from .calibration import expected_calibration_error  # here: metrics stays import-light

        out["ece"] = expected_calibration_error(
            [float(c or 0.0) for c in confidences], [1.0 if o.covered else 0.0 for o in outcomes])
    lat = [o.latency_ms for o in outcomes]
    out["latency_ms_p50"] = percentile(lat, 50)
    out["latency_ms_p95"] = percentile(lat, 95)
    out["cost_eur_per_query"] = (sum(o.cost_eur for o in outcomes) / len(outcomes)) if outcomes else 0.0
    return out


def recall_curve(outcomes: Sequence[Outcome], ks: Sequence[int] = CURVE_KS) -> list[float | None]:
    """recall@k for each k in ``ks`` (for the report's curves)."""
    answerable = [o for o in outcomes if o.answerable]
    return [_mean(recall_at(o.ranked, o.relevant, k) for o in answerable) for k in ks]


def grouped(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Metrics overall, per class and per ``question_type`` (when any question has one)."""
    from .golden import CLASSES

    by_class: dict[str, Any] = {}
    for cls in CLASSES:
        part = [o for o in outcomes if o.cls == cls]
        if part:
            by_class[cls] = summarise(part)
    types = sorted({o.question_type for o in outcomes if o.question_type})
    by_type = {t: summarise([o for o in outcomes if o.question_type == t]) for t in types}
    return {"all": summarise(outcomes), "by_class": by_class, "by_question_type": by_type}


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return sum(vals) / len(vals) if vals else None
