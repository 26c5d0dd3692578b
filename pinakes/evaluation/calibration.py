"""Calibrated confidence: P(the top-k hits hold the evidence), from the fused lists in hand.

docs/design.md (Retrieval, step 6): a search reports a probability, fitted on a golden set, or
``unknown``; it never invents one. The probability comes from a logistic
regression (plain NumPy: Newton steps on an L2-penalised log-likelihood)
over a handful of features that the search has already computed, so the
per-query cost is a few dot products and one tiny SQL lookup:

``fused_top``
    the top fused score as a share of the best score possible (rank 1 in
    the lexical, dense and any graph list at full evidence weight), so
    ``rrf_k`` and the channel weights cancel out;
``cos_top1``
    the best cosine over all chunks. Its lead over the second best was a
    feature until 2026-12-05: it reads the corpus more than the question (a
    ten-note KB or a one-passage-per-document one leads by a lot, a note cut
    into many chunks ties with itself), and left out the sets the fit never
    saw read better (docs/benchmarks.md, "Fixtures and everyday questions in
    the fit");
``lex_cov_hit1`` / ``lex_cov_max``
    the share of the query's IDF mass that the fused top hit contains, and
    the best share any lexical candidate reaches (0 with no lexical list);
``agreement``
    1 when the lexical and the dense lists put the same document first;
``asked_gap`` / ``unknown_name`` / ``typed_missing``
    whether the top hits support what the question *asks*, not only what it
    is about (:mod:`pinakes.support`): the largest share of the query's IDF
    mass carried by one asked word the best of the top hits lacks; 1 when
    the question names something the KB never mentions; and how far the
    sentences that match the question best are from holding a token of the
    kind it asks for (a number for "how many", a date for "when", a name for
    "who"). They are what tells a near miss (the notes name the subject,
    never the asked fact) from an answer;
``absent``
    the share of the question's words that no chunk of the KB holds, names or
    not: an everyday question put to a compiler's guide ("How do I fix a
    leaking tap?") has most of its words nowhere in it, while a near miss
    and an answer both find theirs somewhere;
``other_speaker``
    in a conversation between named people, how much of the question only
    another speaker's words hold (:mod:`pinakes.support`).

Whether a graph channel reordered the result is *not* a feature (it was one
until 2026-12-04). On the fit sources the graph answers nearly every in-domain
question, and in-domain questions it leaves alone are covered as often (example
KB and docs-dev 3 of 3, vault-dev 70 % against 72 %), so its slope was learnt
from the cross-domain negatives alone: it read as "this question belongs to the
KB". A KB the graph has nothing to say about (a chat log without links, a flat
folder of notes) then lost a logit on every question, and was under-confident
(docs/benchmarks.md, "Near misses").

Every feature is read from the hybrid's own two lists, before any graph
channel: the channel adds evidence to the ranking, and the
calibration, fitted with the channel on (``pnk eval --calibrate`` on the
KB's default channel), maps the hybrid's evidence to the probability that the
*final* top k holds the answer. A calibration records the channel it was
fitted with; a search whose graph list comes from another channel gets
``unknown``. A search in which the channel added nothing is exactly a hybrid
search, and any calibration applies to it.

A calibration file records the embedder it was fitted for and the feature
set; a mismatch on either means the numbers no longer mean what they meant,
so confidence falls back to ``unknown``.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CalibrationError
from ..fsutil import atomic_write
from ..support import assess_search

if TYPE_CHECKING:
    from ..kb import KB

FEATURES = ("fused_top", "cos_top1", "lex_cov_hit1", "lex_cov_max", "agreement",
            "asked_gap", "unknown_name", "absent", "typed_missing", "other_speaker")
#: Bumped whenever a feature's definition changes: an older file no longer applies (a KB's own
#: then gives way to the shipped one until refitted: :func:`load_in_force`).
FEATURE_SET = "v8:" + ",".join(FEATURES)
CALIBRATION_VERSION = 1
#: How hard a KB's own fit is pulled towards the shipped calibration's slopes (see
#: :func:`fit_logistic`); 20 gave the best held-out Brier score on the example KB.
PRIOR_STRENGTH = 20.0
#: Where a KB keeps its fitted calibration unless ``[retrieval] calibration`` says otherwise.
KB_CALIBRATION = "golden/calibration.json"


@functools.lru_cache(maxsize=16)
def packaged_calibration_path(embedder_id: str) -> Path | None:
    """The calibration shipped inside the package for ``embedder_id``, if there is one.

    Cached: resolving package resources costs more than the search it serves.
    """
    try:
        res = resources.files("pinakes") / "data" / f"calibration-{embedder_id}.json"
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    path = Path(str(res))
    return path if path.is_file() else None


# --- features ------------------------------------------------------------------------


def extract_features(kb: KB, hits: Sequence[Any], lists: Any, cosines: np.ndarray) -> np.ndarray:
    """The feature vector of one search result (see the module docstring); cheap by design."""
    cfg = kb.config.retrieval
    ranked: dict[str, list[int]] = getattr(lists, "ranked", {})
    weights: dict[str, dict[int, float]] = getattr(lists, "weight", {})
    top_id = int(hits[0].chunk_id) if hits else -1
    # The best score possible counts lexical and dense even when a list came back empty:
    # an empty lexical list (no query word anywhere) is evidence of "nothing here".
    # The hybrid's two lists only (see the module docstring on the graph).
    best = float(cfg.get("lexical_weight", 1.0)) + float(cfg.get("dense_weight", 1.0))
    rrf_k = float(cfg["rrf_k"])
    hybrid_top = getattr(lists, "hybrid_top", None)
    top_score = float(hybrid_top) if hybrid_top is not None else (float(hits[0].score) if hits else 0.0)
    fused_top = top_score * (rrf_k + 1.0) / best if hits and best > 0 else 0.0
    cos1 = float(np.max(cosines)) if len(cosines) else 0.0
    # Raw coverage, whatever weighting fusion applied (older search code: the weights).
    lex_w = getattr(lists, "coverage", None) or weights.get("lexical", {})
    if "lexical" not in ranked:
        lex_w = {}
    lex_hit1 = min(1.0, float(lex_w.get(top_id, 0.0)))
    lex_max = min(1.0, max(lex_w.values(), default=0.0))
    agreement = 0.0
    lex_ids, dense_ids = ranked.get("lexical") or [], ranked.get("dense") or []
    if lex_ids and dense_ids:
        a, b = int(lex_ids[0]), int(dense_ids[0])
        if a == b:
            agreement = 1.0
        else:
            rows = kb.reader().conn.execute(
                "SELECT id, doc FROM chunks WHERE id IN (?, ?)", (a, b)
            ).fetchall()
            docs = {int(r[0]): int(r[1]) for r in rows}
            agreement = 1.0 if a in docs and docs.get(a) == docs.get(b) else 0.0
    support = assess_search(kb, hits, lists)
    gap, unknown, absent, typed, other = support.features if support is not None else (0.0,) * 5
    return np.array(
        [min(fused_top, 2.0), cos1, lex_hit1, lex_max, agreement, gap, unknown, absent, typed, other],
        dtype=np.float64,
    )


# --- the model ------------------------------------------------------------------------


@dataclass
class Calibration:
    """A fitted logistic calibration over :data:`FEATURES`."""

    embedder: str
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    k: int = 10
    meta: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    feature_set: str = FEATURE_SET
    lists: tuple[str, ...] = ("dense", "lexical")  # the fused lists it was fitted on
    graph: str = ""  # the graph channel it was fitted with ("" = none)

    def applies_to(self, lists: Any) -> bool:
        """Fitted on searches like this one: the same hybrid lists, and the same graph channel.

        A search whose channel added nothing is a plain hybrid search, which
        every calibration covers; one a channel reordered needs a calibration
        fitted with that channel on.
        """
        ranked = getattr(lists, "ranked", {})
        if {n for n in ranked if n != "graph"} != {n for n in self.lists if n != "graph"}:
            return False
        if ranked.get("graph"):
            return bool(self.graph) and self.graph == getattr(lists, "channel", None)
        return True

    def predict(self, x: np.ndarray) -> np.ndarray | float:
        """P(covered) for one feature vector (a float) or a matrix of them (an array)."""
        arr = np.asarray(x, dtype=np.float64)
        z = ((arr - self.mean) / self.scale) @ self.coef + self.intercept
        p = _sigmoid(z)
        return float(p) if arr.ndim == 1 else p

    def matches(self, embedder_id: str) -> bool:
        """Valid for this embedder and the feature set this code computes."""
        return (self.embedder == embedder_id and tuple(self.features) == FEATURES
                and self.feature_set == FEATURE_SET)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": CALIBRATION_VERSION,
            "kind": "logistic",
            "embedder": self.embedder,
            "feature_set": self.feature_set,
            "features": list(self.features),
            "mean": [round(float(v), 8) for v in self.mean],
            "scale": [round(float(v), 8) for v in self.scale],
            "coef": [round(float(v), 8) for v in self.coef],
            "intercept": round(float(self.intercept), 8),
            "k": self.k,
            "lists": sorted(self.lists),
            "graph": self.graph,
            "target": "P(every evidence document is among the documents of the top k hits)",
            **self.meta,
        }

    def save(self, path: Path) -> None:
        """Write atomically: the file is truth, committed with the KB."""
        atomic_write(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, data: dict[str, Any], path: Path | None = None) -> Calibration:
        try:
            if data.get("version") != CALIBRATION_VERSION or data.get("kind") != "logistic":
                raise CalibrationError(f"unsupported calibration format in {path}")
            features = tuple(str(f) for f in data["features"])
            arrays = [np.asarray(data[key], dtype=np.float64) for key in ("mean", "scale", "coef")]
            if any(a.shape != (len(features),) for a in arrays):
                raise CalibrationError(f"{path}: mean, scale and coef must each have one value per feature")
            meta = {k: v for k, v in data.items() if k not in _MODEL_KEYS}
            return cls(
                embedder=str(data["embedder"]), features=features, mean=arrays[0],
                scale=np.where(arrays[1] > 0, arrays[1], 1.0), coef=arrays[2],
                intercept=float(data["intercept"]), k=int(data.get("k", 10)), meta=meta, path=path,
                feature_set=str(data.get("feature_set", "")),
                lists=tuple(str(x) for x in data.get("lists", ("dense", "lexical"))),
                graph=str(data.get("graph", "") or ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"{path}: malformed calibration ({exc})") from None

    @classmethod
    def load(cls, path: Path) -> Calibration:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CalibrationError(f"no calibration at {path}") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise CalibrationError(f"{path}: unreadable calibration ({exc})") from None
        if not isinstance(data, dict):
            raise CalibrationError(f"{path}: a calibration is a JSON object")
        return cls.from_dict(data, Path(path))


_MODEL_KEYS = {"version", "kind", "embedder", "feature_set", "features", "mean", "scale", "coef",
               "intercept", "k", "target", "lists", "graph"}


def _sigmoid(z: Any) -> Any:
    z = np.clip(z, -35.0, 35.0)
    return 1.0 / (1.0 + np.exp(-z))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 100,
                 weights: np.ndarray | None = None, prior: Calibration | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Fit P(y=1|x) by Newton's method on standardised features; returns mean, scale, coef, b.

    The L2 penalty (not applied to the intercept) keeps a small golden set
    from producing huge coefficients, and makes perfectly separable data
    (common with 50 questions) converge instead of running off to infinity.
    ``weights`` (one per row, default 1) let a small source count as much
    as a big one when several golden sets are pooled. With a ``prior``
    calibration the coefficients shrink towards *its* slopes instead of zero
    (a Gaussian prior): a golden set of in-domain questions says little about
    off-topic ones (low cosine, no query word anywhere), and the prior, fitted
    on far more, keeps knowing that.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(y) or len(x) == 0:
        raise CalibrationError("calibration needs a non-empty feature matrix with one label per row")
    sw = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    mean = np.average(x, axis=0, weights=sw)
    scale = np.sqrt(np.average((x - mean) ** 2, axis=0, weights=sw))
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = np.column_stack([(x - mean) / scale, np.ones(len(x))])
    w = np.zeros(z.shape[1])
    base = float(np.clip(np.average(y, weights=sw), 1e-3, 1 - 1e-3))
    w[-1] = math.log(base / (1 - base))
    penalty = np.full(z.shape[1], float(l2))
    penalty[-1] = 0.0
    centre = np.zeros(z.shape[1])
    if prior is not None:
        raw = prior.coef / prior.scale  # the prior's slopes per raw feature unit
        centre[:-1] = raw * scale  # ... in this fit's standardised units
        w[:-1] = centre[:-1]
    for _ in range(iters):
        p = _sigmoid(z @ w)
        grad = z.T @ (sw * (p - y)) + penalty * (w - centre)
        hess = (z * (sw * p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return mean, scale, w[:-1], float(w[-1])


def expected_calibration_error(p: Sequence[float], y: Sequence[float], bins: int = 10) -> float:
    """ECE: bin by predicted probability (equal width), weight |mean p - hit rate| by bin size."""
    pa = np.asarray(p, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64)
    if len(pa) == 0:
        raise CalibrationError("ECE needs at least one prediction")
    return float(sum(
        (b["n"] / len(pa)) * abs(b["mean_p"] - b["rate"]) for b in reliability_bins(pa, ya, bins)
    ))


#: The per-set ECE a calibration aims at: the target an :func:`ece_floor` is read against.
ECE_TARGET = 0.05


@dataclass(frozen=True)
class EceFloor:
    """What ten-bin ECE a *perfectly* calibrated confidence shows on one set of predictions."""

    mean: float  #: on average over the draws
    p90: float  #: one time in ten it is at least this (noise alone can reach it)
    within_target: float  #: how often it is at most :data:`ECE_TARGET`


def ece_floor(p: Sequence[float], bins: int = 10, draws: int = 1000, seed: int = 0) -> EceFloor:
    """The ECE sampling noise alone gives these predictions: read a small set's ECE against it.

    Outcomes are drawn as Bernoulli(p) for the same predictions, so the
    confidence is calibrated by construction. Ten-bin ECE on a golden set of
    30-100 questions is biased upwards by that noise (often 0.06-0.10), so a
    KB's held-out ECE is compared with this floor, not with zero. Seeded:
    the same predictions always give the same floor.
    """
    pa = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    if len(pa) == 0:
        raise CalibrationError("an ECE floor needs at least one prediction")
    idx = np.minimum((pa * bins).astype(int), bins - 1)
    onehot = np.zeros((len(pa), bins))
    onehot[np.arange(len(pa)), idx] = 1.0
    counts = onehot.sum(axis=0)
    used = counts > 0
    mean_p = (pa @ onehot)[used] / counts[used]
    ys = (np.random.default_rng(seed).random((draws, len(pa))) < pa).astype(np.float64)
    rates = (ys @ onehot)[:, used] / counts[used]
    eces = (np.abs(rates - mean_p) * (counts[used] / len(pa))).sum(axis=1)
    return EceFloor(float(eces.mean()), float(np.quantile(eces, 0.9)),
                    float((eces <= ECE_TARGET + 1e-12).mean()))


def floor_sentence(floor: EceFloor, n: int, ece: float) -> str:
    """One sentence that reads a set's ECE against its floor, for ``pnk eval`` and its report."""
    verdict = ("within what noise alone gives" if ece <= floor.p90
               else "above what noise alone gives: the confidence is off on this KB")
    return (f"on {n} questions a perfectly calibrated confidence shows ECE {floor.mean:.3f} on "
            f"average and {floor.p90:.3f} one time in ten; {ece:.3f} is {verdict}")


def reliability_bins(p: Sequence[float], y: Sequence[float], bins: int = 10) -> list[dict[str, float]]:
    """Non-empty equal-width bins: range, count, mean predicted p and observed positive rate."""
    pa = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    ya = np.asarray(y, dtype=np.float64)
    idx = np.minimum((pa * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        mask = idx == b
        n = int(mask.sum())
        if n:
            out.append({"lo": b / bins, "hi": (b + 1) / bins, "n": n,
                        "mean_p": float(pa[mask].mean()), "rate": float(ya[mask].mean())})
    return out


def stratified_folds(y: Sequence[float], folds: int, seed: int = 0) -> np.ndarray:
    """A fold number per row, positives and negatives spread evenly (seeded shuffle)."""
    ya = np.asarray(y)
    rng = np.random.default_rng(seed)
    out = np.zeros(len(ya), dtype=int)
    for label in (0, 1):
        rows = np.flatnonzero(ya == label)
        rng.shuffle(rows)
        out[rows] = np.arange(len(rows)) % folds
    return out


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # features, labels, weights


def cross_validated(x: np.ndarray, y: np.ndarray, folds: int = 5, seed: int = 0, l2: float = 1.0,
                    weights: np.ndarray | None = None, prior: Calibration | None = None,
                    extra: Rows | None = None) -> np.ndarray:
    """Held-out predictions: each row predicted by a model fitted without its fold.

    ``extra`` rows (anchors, see :func:`anchor_rows`) join every fold's training
    and are never predicted: they are not the KB's questions.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sw = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    folds = max(2, min(int(folds), len(y)))
    assign = stratified_folds(y, folds, seed)
    pred = np.zeros(len(y))
    for f in range(folds):
        test = assign == f
        train = ~test
        if not test.any():
            continue
        if len(set(y[train].tolist())) < 2:
            pred[test] = float(y[train].mean()) if train.any() else 0.5
            continue
        xt, yt, wt = _with_extra(x[train], y[train], sw[train], extra)
        mean, scale, coef, b = fit_logistic(xt, yt, l2=l2, weights=wt, prior=prior)
        pred[test] = _sigmoid(((x[test] - mean) / scale) @ coef + b)
    return pred


def _with_extra(x: np.ndarray, y: np.ndarray, w: np.ndarray, extra: Rows | None) -> Rows:
    if extra is None or not len(extra[0]):
        return x, y, w
    return np.vstack([x, extra[0]]), np.concatenate([y, extra[1]]), np.concatenate([w, extra[2]])


#: How many off-topic feature rows the shipped calibration carries (see :func:`anchor_rows`).
ANCHORS = 32
#: Their total weight in a KB's own fit, as a share of its questions: at 0.5 the example KB's
#: held-out ECE stays 0.04 and an off-topic question ("How long should I boil an egg?")
#: abstains again (0.1: 0.30, 0.25: 0.25, 0.5: 0.20, 1.0: 0.14 with ECE 0.06).
ANCHOR_SHARE = 0.5


def anchor_rows(prior: Calibration | None, n: int) -> Rows | None:
    """Off-topic examples the shipped calibration carries, weighted for a fit on ``n`` questions.

    A KB's golden set asks only in-domain questions: fitted on them alone, a
    calibration has never seen "nothing here" (low cosine, no query word
    anywhere) and its intercept, free of the prior, can leave such a question
    above ``abstain_below``. The shipped fit saw thousands (cross-domain
    negatives) and keeps :data:`ANCHORS` of their feature rows in its file
    (``anchors``); a KB's fit adds them as negatives worth :data:`ANCHOR_SHARE`
    of its own questions. They are never scored in its held-out error.
    """
    rows = (prior.meta.get("anchors") if prior is not None else None) or []
    xa = np.asarray([r for r in rows if len(r) == len(FEATURES)], dtype=np.float64)
    if not len(xa) or n <= 0:
        return None
    return xa, np.zeros(len(xa)), np.full(len(xa), ANCHOR_SHARE * n / len(xa))


@dataclass
class CalibrationFit:
    """A fitted calibration with its held-out evidence."""

    calibration: Calibration
    ece_before: float | None
    before_label: str
    ece_after: float
    brier_after: float
    heldout: np.ndarray  # held-out P per question
    labels: np.ndarray
    folds: int
    floor: EceFloor | None = None  # what sampling noise alone gives the held-out predictions
    in_force_ece: float | None = None  # of the calibration in force during the run (in-sample?)


def fit_calibration(
    x: np.ndarray,
    y: np.ndarray,
    embedder_id: str,
    *,
    k: int,
    before: np.ndarray | None = None,
    before_label: str = "",
    folds: int = 5,
    seed: int = 0,
    l2: float = 1.0,
    source: str = "",
    weights: np.ndarray | None = None,
    prior: Calibration | None = None,
    lists: Sequence[str] = ("dense", "lexical"),
    graph: str = "",
    extra: Rows | None = None,
) -> CalibrationFit:
    """Fit on everything; judge by k-fold held-out ECE against the ``before`` probabilities.

    ``extra`` rows join the training (every fold's and the final fit's) but are
    never scored: the anchors of :func:`anchor_rows`.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if len(y) < 4:
        raise CalibrationError(f"calibration needs at least 4 questions, got {len(y)}")
    if y.min() == y.max():
        what = "hit" if y.max() == 1 else "miss"
        raise CalibrationError(
            f"every question is a {what}: calibration needs both hits and misses "
            "(add unanswerable questions or harder ones to the golden set)"
        )
    heldout = cross_validated(x, y, folds=folds, seed=seed, l2=l2, weights=weights, prior=prior,
                              extra=extra)
    sw = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    xt, yt, wt = _with_extra(x, y, sw, extra)
    mean, scale, coef, b = fit_logistic(xt, yt, l2=l2, weights=wt, prior=prior)
    ece_before = expected_calibration_error(before, y) if before is not None else None
    ece_after = expected_calibration_error(heldout, y)
    brier = float(np.mean((heldout - y) ** 2))
    floor = ece_floor(heldout, seed=seed)
    meta = {
        "fitted_on": {"source": source, "questions": int(len(y)), "positives": int(y.sum())},
        "heldout": {"folds": int(min(folds, len(y))), "ece_before": _round(ece_before),
                    "before": before_label, "ece_after": _round(ece_after),
                    "brier_after": _round(brier), "ece_floor": _round(floor.mean),
                    "ece_floor_p90": _round(floor.p90)},
        "l2": l2,
        "prior": prior.path.name if prior is not None and prior.path else None,  # no machine paths
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    cal = Calibration(embedder_id, FEATURES, mean, scale, coef, b, k=k, meta=meta,
                      lists=tuple(sorted(n for n in lists if n != "graph")), graph=graph)
    return CalibrationFit(cal, ece_before, before_label, ece_after, brier, heldout, y,
                          int(min(folds, len(y))), floor)


def _round(v: float | None) -> float | None:
    return None if v is None else round(float(v), 4)


# --- which calibration a KB uses ----------------------------------------------------------


def _setting(kb: KB) -> str:
    """``[retrieval] calibration`` as written ("" when unset)."""
    return str(kb.config.retrieval.get("calibration", "") or "").strip()


def calibration_path(kb: KB) -> Path | None:
    """The calibration file this KB would use, or None when confidence must stay unknown.

    ``[retrieval] calibration``: a path (relative to the KB root) or ``"none"``
    to switch calibration off. Unset: ``golden/calibration.json`` if the KB
    has one, else the calibration shipped for its embedder.
    """
    setting = _setting(kb)
    if setting.lower() in ("none", "off"):
        return None
    if setting:
        p = Path(setting).expanduser()
        return p if p.is_absolute() else kb.root / p
    own = kb.root / KB_CALIBRATION
    if own.is_file():
        return own
    return packaged_calibration_path(kb.config.embedder_id)


def load_in_force(kb: KB, path: Path | None) -> tuple[Calibration | None, str | None]:
    """The calibration searches use, given :func:`calibration_path`; and why the KB's own was passed over.

    A file that is unreadable or fitted for another embedder or feature set gives
    None: its numbers no longer mean what they say. The one exception is the
    KB's own ``golden/calibration.json`` at its default place, unreadable or gone
    stale (an upgrade changed the features): then the calibration shipped for the
    embedder stands in (it is fitted too, only not on this KB), and the second
    value says so, for ``pnk doctor``, until ``pnk eval --calibrate`` refits it.
    An explicit ``[retrieval] calibration`` is never replaced.
    """
    if path is None:
        return None, None
    embedder_id = kb.config.embedder_id
    model = _matching(path, embedder_id)
    if model is not None or path != kb.root / KB_CALIBRATION or not path.is_file():
        return model, None
    if _setting(kb):
        return None, None
    shipped = packaged_calibration_path(embedder_id)
    fallback = _matching(shipped, embedder_id) if shipped is not None else None
    why = (f"{KB_CALIBRATION} is unreadable or was fitted for another embedder or feature set; "
           + ("searches use the calibration shipped for this embedder" if fallback is not None
              else "confidence stays unknown")
           + " until `pnk eval --calibrate` fits it again")
    return fallback, why


def describe_in_force(kb: KB) -> dict[str, str | None]:
    """``{"in_force", "problem"}`` for ``pnk status``, ``pnk doctor`` and ``pnk eval``.

    ``in_force`` names the calibration that turns a search's evidence into a
    confidence ("golden/calibration.json", "shipped for <embedder>", a path), or
    is None (confidence unknown); ``problem`` says why the KB's own file was
    passed over (:func:`load_in_force`), which is where a user learns that
    ``pnk eval --calibrate`` would fit it again after an upgrade.
    """
    model, problem = load_in_force(kb, calibration_path(kb))
    where = model.path if model is not None else None
    if where is None:
        in_force = None
    elif where == packaged_calibration_path(kb.config.embedder_id):
        in_force = f"shipped for {kb.config.embedder_id}"
    elif where.is_relative_to(kb.root):
        in_force = where.relative_to(kb.root).as_posix()
    else:
        in_force = str(where)
    return {"in_force": in_force, "problem": problem}


def in_force_line(state: dict[str, str | None]) -> str:
    """The human line for :func:`describe_in_force`'s ``in_force``."""
    return f"calibration {state['in_force']}" if state.get("in_force") else "unknown: no calibration in force"


def _matching(path: Path, embedder_id: str) -> Calibration | None:
    """The calibration at ``path`` if it loads and fits this embedder and this code's features."""
    try:
        model = Calibration.load(path)
    except CalibrationError:
        return None
    return model if model.matches(embedder_id) else None


def write_target(kb: KB) -> Path:
    """Where ``pnk eval --calibrate`` writes this KB's calibration."""
    setting = _setting(kb)
    if setting and setting.lower() not in ("none", "off"):
        p = Path(setting).expanduser()
        return p if p.is_absolute() else kb.root / p
    return kb.root / KB_CALIBRATION


def fit_from_outcomes(outcomes: Sequence[Any], embedder_id: str, *, k: int, folds: int = 5,
                      seed: int = 0, source: str = "", prior: Calibration | None = None,
                      l2: float | None = None, lists: Sequence[str] = ("dense", "lexical"),
                      graph: str = "") -> CalibrationFit:
    """Fit on one setting's outcomes: covered answerable questions are the positives.

    Misses and unanswerable questions are the negatives: in both, the top k
    does not hold the evidence, which is exactly what an abstention should
    say. "Before" is the raw top cosine read as a probability, the naive
    score a user would otherwise trust; the ECE of the calibration in force
    during the run (if any) is kept in ``in_force_ece`` of the file's meta.
    With a ``prior`` (the shipped calibration), slopes shrink towards it with
    strength :data:`PRIOR_STRENGTH`, and its off-topic anchors join the fit
    (:func:`anchor_rows`); without, slopes shrink towards zero with strength 1.
    """
    rows = [o.features if o.features is not None else [0.0] * len(FEATURES) for o in outcomes]
    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray([1.0 if o.covered else 0.0 for o in outcomes])
    before = np.clip(x[:, FEATURES.index("cos_top1")], 0.0, 1.0) if len(x) else np.zeros(0)
    label = "raw top cosine read as a probability (no calibration)"
    strength = l2 if l2 is not None else (PRIOR_STRENGTH if prior is not None else 1.0)
    fit = fit_calibration(x, y, embedder_id, k=k, before=before, before_label=label,
                          folds=folds, seed=seed, source=source, prior=prior, l2=strength,
                          lists=lists, graph=graph, extra=anchor_rows(prior, len(y)))
    if prior is not None and prior.meta.get("anchors"):
        fit.calibration.meta["anchored"] = len(prior.meta["anchors"])
    reported = [o.confidence for o in outcomes]
    if outcomes and all(c is not None for c in reported):
        fit.in_force_ece = expected_calibration_error(np.asarray(reported, dtype=np.float64), y)
        fit.calibration.meta["heldout"]["in_force_ece"] = _round(fit.in_force_ece)
    return fit


def shipped_prior(embedder_id: str) -> Calibration | None:
    """The calibration shipped for this embedder, as a prior for a KB's own fit (or None)."""
    path = packaged_calibration_path(embedder_id)
    if path is None:
        return None
    try:
        cal = Calibration.load(path)
    except CalibrationError:
        return None
    return cal if cal.matches(embedder_id) else None
