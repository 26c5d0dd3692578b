"""The matrix runner: every question through every setting, side by side, in one run.

A *setting* is a way to search, written in ``--matrix`` as a base with
optional ``+`` modifiers:

* bases: ``off`` (the hybrid free path, no graph channel), ``bm25`` (the
  lexical list alone, in BM25's own order), ``lexical`` (the lexical list
  alone, weighed as the hybrid weighs it), ``dense`` (the dense list alone),
  or the name of any installed graph channel (``expand``, ``ppr``, ...);
* named modifiers: ``+salience`` (in-degree prior), ``+distance`` (link-
  distance rerank), ``+rrf`` (plain RRF: no evidence weighting of either list),
  ``+final`` (the graph channel's list is the final ranking, not a third
  RRF list: ``ppr+final``);
* ``+key=value``: any ``[retrieval]`` key for this setting only, e.g.
  ``off+rrf_k=30+dense_temperature=0.05`` (how fusion knobs are tuned).

Every setting goes through :meth:`KB.search`, the same code users run; the
runner only swaps the config dict for the duration of a call. Questions are
interleaved across settings (question 1 in every setting, then question 2,
...) so machine noise lands on all settings alike. Query embeddings are
computed once up front and timed on their own, and each search's latency
excludes its (then cached) embedding time, so settings compare on retrieval.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import DEFAULTS
from ..errors import EvalError
from . import metrics as M
from .calibration import extract_features
from .gates import DEFAULT_TOLERANCES, GateTolerances, GateVerdict, gate_verdicts
from .golden import Question
from .reach import ReachReport, default_reach_fn, reach_report, seed_documents

if TYPE_CHECKING:
    from ..kb import KB

#: Chunks retrieved per question: enough that the top 10 *documents* survive collapsing.
CHUNKS = 50
#: Setting bases without a graph channel: which lists fuse, and config they imply.
#: ``bm25`` is BM25's own ranking (no coverage reweighting); ``lexical`` is the lexical
#: list alone as the hybrid weighs it.
BASES: dict[str, tuple[tuple[str, ...] | None, dict[str, Any]]] = {
    "off": (None, {}),
    "hybrid": (None, {}),
    "bm25": (("lexical",), {"lexical_coverage": "off"}),
    "lexical": (("lexical",), {}),
    "dense": (("dense",), {}),
}
NAMED_MODIFIERS: dict[str, dict[str, Any]] = {
    "salience": {"salience_prior": 1.0},
    "distance": {"link_distance_rerank": 1.0},
    "rrf": {"dense_floor": 0.0, "dense_temperature": 0.0, "lexical_coverage": "off"},
    "final": {"graph_fusion": "final"},
}
#: Keys a setting may not override: they change what is indexed or what "top k" means.
FIXED_KEYS = {"tokenizer", "k", "graph_channel"}


@dataclass(frozen=True)
class Setting:
    """One column of the matrix."""

    name: str
    channel: str = "off"
    channels: tuple[str, ...] | None = None
    overrides: tuple[tuple[str, Any], ...] = ()

    @property
    def is_baseline(self) -> bool:
        """The plain hybrid with the KB's own config: the gates' reference."""
        return self.channel == "off" and self.channels is None and not self.overrides

    @property
    def is_graph(self) -> bool:
        return self.channel != "off"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "channel": self.channel,
                "channels": list(self.channels) if self.channels else None,
                "overrides": dict(self.overrides)}


def _value(key: str, raw: str) -> Any:
    """A ``key=value`` override's value, typed like the default it replaces."""
    text = raw.strip()
    if text.lower() in ("true", "false"):
        value: Any = text.lower() == "true"
    else:
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                value = text.strip("\"'")
    default = DEFAULTS["retrieval"].get(key)
    if isinstance(default, str):
        return text.strip("\"'")
    if isinstance(default, bool) and not isinstance(value, bool):
        raise EvalError(f"{key} takes true or false, not {raw!r}")
    if isinstance(default, float) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EvalError(f"{key} takes a number, not {raw!r}")
        value = float(value)
    elif isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, bool) or not isinstance(value, int):
            raise EvalError(f"{key} takes an integer, not {raw!r}")
    return value


def parse_setting(text: str, channels: Sequence[str]) -> Setting:
    """One ``--matrix`` entry (see the module docstring)."""
    parts = [p.strip() for p in text.strip().split("+")]
    base, mods = parts[0], parts[1:]
    if not base:
        raise EvalError(f"empty setting in --matrix: {text!r}")
    overrides: dict[str, Any] = {}
    if base in BASES:
        channel, (restrict, implied) = "off", BASES[base]
        overrides.update(implied)
    elif base in channels:
        channel, restrict = base, None
    else:
        from ..extras import not_installed

        missing = not_installed("graph channel", base)
        raise EvalError(f"--matrix: {missing}" if missing else
                        f"unknown setting {base!r} in --matrix (choose from {', '.join(available(channels))})")
    for mod in mods:
        if not mod:
            raise EvalError(f"empty modifier in setting {text!r}")
        if "=" in mod:
            key, raw = (s.strip() for s in mod.split("=", 1))
            if key in FIXED_KEYS:
                raise EvalError(f"{key} cannot vary within one eval run (it changes what top-k means "
                                "or what is indexed)")
            overrides[key] = _value(key, raw)
        elif mod in NAMED_MODIFIERS:
            overrides.update(NAMED_MODIFIERS[mod])
        else:
            raise EvalError(f"unknown modifier {mod!r} in {text!r} (named: "
                            f"{', '.join(NAMED_MODIFIERS)}; or key=value for any [retrieval] key)")
    return Setting(text.strip(), channel, restrict, tuple(sorted(overrides.items())))


def available(channels: Sequence[str] | Mapping[str, Any]) -> list[str]:
    """Every setting base this KB offers (for help and errors)."""
    return ["off", "bm25", "lexical", "dense", *sorted(channels)]


def parse_matrix(text: str, channels: Sequence[str] | Mapping[str, Any]) -> list[Setting]:
    """``--matrix off,expand,bm25`` → settings; a graph setting brings its ``off`` baseline."""
    names = list(channels)
    settings: list[Setting] = []
    for part in text.split(","):
        if part.strip():
            s = parse_setting(part, names)
            if s.name in {x.name for x in settings}:
                raise EvalError(f"setting {s.name!r} appears twice in --matrix")
            settings.append(s)
    if not settings:
        raise EvalError("--matrix names no setting")
    if any(s.is_graph for s in settings) and not any(s.is_baseline for s in settings):
        settings.insert(0, Setting("off"))
    return settings


@contextlib.contextmanager
def _config(kb: KB, overrides: Sequence[tuple[str, Any]]) -> Iterator[None]:
    """Run with ``[retrieval]`` overridden; the KB's own config is restored afterwards."""
    if not overrides:
        yield
        return
    data = kb.config.data
    saved = data["retrieval"]
    data["retrieval"] = {**saved, **dict(overrides)}
    try:
        yield
    finally:
        data["retrieval"] = saved


class _FeatureTap:
    """Captures the calibration features of each search while leaving its result untouched."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.last: list[float] | None = None

    def __enter__(self) -> _FeatureTap:
        kb = self.kb
        original = type(kb).confidence

        def tapped(hits: list[Any], lists: Any, cosines: Any) -> float | None:
            self.last = [float(v) for v in extract_features(kb, hits, lists, cosines)]
            return original(kb, hits, lists, cosines)

        kb.confidence = tapped  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(AttributeError):
            del self.kb.confidence


@dataclass
class SettingRun:
    setting: Setting
    outcomes: list[M.Outcome] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class EvalRun:
    """Everything one ``pnk eval`` measured."""

    source: dict[str, Any]
    k: int
    runs: list[SettingRun]
    reach: ReachReport | None
    gates: list[GateVerdict]
    embed_ms: dict[str, float | None]
    seconds: float
    calibration: Any = None  # CalibrationFit, when --calibrate ran
    calibration_path: str | None = None
    confidence_source: str | None = None

    def run(self, name: str) -> SettingRun:
        return next(r for r in self.runs if r.setting.name == name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "k": self.k,
            "chunks_retrieved": CHUNKS,
            "seconds": round(self.seconds, 2),
            "query_embedding_ms": _rounded(self.embed_ms),
            "confidence": self.confidence_source or "unknown",
            "settings": [
                {**r.setting.to_dict(), "metrics": _rounded(r.metrics)} for r in self.runs
            ],
            "reachability": self.reach.to_dict() if self.reach else None,
            "gates": [g.to_dict() for g in self.gates],
        }
        if self.calibration is not None:
            fit = self.calibration
            out["calibration"] = {
                "path": self.calibration_path, "questions": int(len(fit.labels)),
                "positives": int(fit.labels.sum()), "folds": fit.folds,
                "ece_before": _r(fit.ece_before), "before": fit.before_label,
                "ece_after": _r(fit.ece_after), "brier_after": _r(fit.brier_after),
                "in_force_ece": _r(fit.in_force_ece),
                "ece_floor": _r(fit.floor.mean) if fit.floor else None,
                "ece_floor_p90": _r(fit.floor.p90) if fit.floor else None,
                "prior": fit.calibration.meta.get("prior"), "l2": fit.calibration.meta.get("l2"),
            }
        return out


def _r(v: float | None) -> float | None:
    return None if v is None else round(float(v), 4)


def _rounded(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _rounded(v) for k, v in d.items()}
    if isinstance(d, float):
        return round(d, 4)
    return d


ProgressFn = Callable[[int, int], None]


def run_eval(
    kb: KB,
    questions: Sequence[Question],
    relevant: Mapping[str, tuple[int, ...]],
    settings: Sequence[Setting],
    *,
    source: Mapping[str, Any] | None = None,
    progress: ProgressFn | None = None,
    tolerances: GateTolerances = DEFAULT_TOLERANCES,
    reach: bool = True,
) -> EvalRun:
    """Search every question in every setting; collect metrics, reachability and gate verdicts.

    ``reach=False`` skips the channel-reachable ceiling (a walk per multi-hop
    question): the default-on gate does not read it, and the channel check that
    ``pnk sync`` runs (:mod:`pinakes.channel_choice`) needs only that gate.
    """
    started = time.perf_counter()
    k = int(kb.config.retrieval["k"])
    store = kb.reader()
    chunk_doc = {int(r[0]): int(r[1]) for r in store.conn.execute("SELECT id, doc FROM chunks")}

    # Embed every query once, timed on its own; the searches then hit the query cache.
    embed_times = []
    for q in questions:
        t = time.perf_counter()
        kb.embedder.embed_query(q.text)
        embed_times.append((time.perf_counter() - t) * 1000)
    embed_ms = {"p50": M.percentile(embed_times, 50), "p95": M.percentile(embed_times, 95)}

    runs = [SettingRun(s) for s in settings]
    total = len(questions) * len(runs)
    done = 0
    with _FeatureTap(kb) as tap:
        for q in questions:
            rel = tuple(relevant.get(q.id, ()))
            for run in runs:
                s = run.setting
                tap.last = None
                with _config(kb, s.overrides):
                    t = time.perf_counter()
                    res = kb.search(q.text, k=CHUNKS, channel=s.channel, channels=s.channels,
                                    graph_roots=k)
                    wall = (time.perf_counter() - t) * 1000
                hit_docs = [chunk_doc.get(h.chunk_id, -1) for h in res.hits]
                top = set(hit_docs[:k])
                run.outcomes.append(M.Outcome(
                    qid=q.id, cls=q.cls, relevant=rel, ranked=M.collapse(hit_docs),
                    covered=bool(rel) and set(rel) <= top, abstained=res.abstained,
                    confidence=res.confidence, latency_ms=max(0.0, wall - res.timings_ms.get("embed", 0.0)),
                    question_type=q.question_type, features=tap.last,
                    seeds=[h.chunk_id for h in res.hits[:k]],
                ))
                done += 1
                if progress:
                    progress(done, total)
    for run in runs:
        run.metrics = M.grouped(run.outcomes)

    ceiling = None
    base = next((r for r in runs if r.setting.is_baseline), None)
    if reach and base is not None and any(o.cls == "multi-hop" for o in base.outcomes):
        fn, reason, notes = default_reach_fn(kb, store)
        items = [(o.relevant, o.seeds, seed_documents(chunk_doc, o.seeds))
                 for o in base.outcomes if o.cls == "multi-hop"]
        ceiling = reach_report(items, fn, store, notes) if fn else ReachReport(False, reason)
    metric_view = {r.setting.name: {"all": r.metrics["all"], **r.metrics["by_class"]} for r in runs}
    graph = [r.setting.name for r in runs if r.setting.is_graph]
    expand = [r.setting.name for r in runs if r.setting.channel == "expand"]
    gates = (
        gate_verdicts(metric_view, graph, base.setting.name, ceiling.to_dict() if ceiling else None,
                      expand, tolerances)
        if base is not None else []
    )
    return EvalRun(dict(source or {}), k, runs, ceiling, gates, embed_ms,
                   time.perf_counter() - started)


def explain_question(kb: KB, question: Question, relevant: Sequence[int],
                     settings: Sequence[Setting]) -> dict[str, Any]:
    """One question under each setting, explained (``pnk eval --explain ID``).

    Each setting searches exactly as :func:`run_eval` does (same chunk count,
    same roots, the same config override), with ``explain`` on; the result is
    the top ``k`` documents of each, the relevant ones marked, each with its
    best chunk's explanation: the view that says why a channel lost a question
    another setting found.
    """
    k = int(kb.config.retrieval["k"])
    with kb.reader().snapshot() as conn:
        ulid_of = {int(r[0]): str(r[1]) for r in conn.execute("SELECT doc, ulid FROM documents")}
    gold = {ulid_of[d] for d in relevant if d in ulid_of}
    columns = []
    for s in settings:
        with _config(kb, s.overrides):
            res = kb.search(question.text, k=CHUNKS, channel=s.channel, channels=s.channels,
                            graph_roots=k, explain=True)
        best: dict[str, Any] = {}  # each document at its best chunk, as eval ranks documents
        for h in res.hits:
            if len(best) < k:
                best.setdefault(h.doc_id, h)
        columns.append({
            "setting": s.name, "channel": res.channel, "why": res.channel_reason,
            "explain": res.explain, "confidence": res.confidence, "abstained": res.abstained,
            "documents": [{"rank": i, "doc_id": h.doc_id, "title": h.title, "path": h.path,
                           "relevant": h.doc_id in gold, "score": h.score,
                           "ranks": dict(h.ranks), "explain": h.explain}
                          for i, h in enumerate(best.values(), 1)],
        })
    return {"question": {"id": question.id, "text": question.text, "class": question.cls},
            "relevant": sorted(gold), "k": k, "settings": columns}
