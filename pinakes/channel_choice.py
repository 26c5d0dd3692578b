"""Which graph channel a search uses, and why: ``graph_channel = "auto"`` lets the KB's evidence decide.

The global default (the installed channel that declares ``default_channel``:
``ppr``) was chosen on every dev set at once; a KB unlike them can lose by it.
A KB with its own golden set (``golden/questions.yaml``) therefore gets the
verdict of its own default-on gate (:mod:`pinakes.evaluation.gates`): the
default channel when the gate passes, no channel when it fails, and the global
default when the set has too few questions of a class to decide.

Measuring the gate is an evaluation: 90 questions through two settings cost
4-5 s of CPU on the dev sets. A search never pays for it. The verdict is
measured by ``pnk sync`` (when it is missing or out of date) and by ``pnk eval``
(which computes it anyway), and cached in ``.pinakes/channel-check.json``; a
search reads that small file (one ``stat`` per search, parsed again only when
it changes). A verdict is out of date when the golden set, the retrieval
settings, the channel or the store (a rebuild) changed, or when a tenth of the
documents changed since it was measured; smaller edits do not re-run a
multi-second check after every one-line sync, and the verdict stays in force,
with ``pnk status`` saying how much changed since (docs/configuration.md).

:func:`channel_in_force` is the one answer to "which channel, and why", for
the search result, ``pnk status``, ``--explain`` and the MCP answer.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .fsutil import atomic_write, remove_stray_temps

if TYPE_CHECKING:
    from .config import Config
    from .kb import KB

#: The golden set a KB's own verdict is measured on.
GOLDEN = Path("golden") / "questions.yaml"
#: The cached verdict (derived: deleting it only means the next sync measures again).
VERDICT_FILE = "channel-check.json"
#: The documents the verdict was measured on (one 64-bit fingerprint each), to tell
#: how much of the KB changed since.
DOCS_FILE = "channel-check-docs.npy"
VERDICT_VERSION = 1
#: Questions of each deciding class (simple, multi-hop) a golden set needs before its
#: gate may overrule the global default. The gate reads recall@5 to half a point; on n
#: questions one question moves it by 100/n points, so below ten a single mislabelled or
#: borderline question decides the verdict alone, and the chance that a channel which
#: costs one question in ten shows no loss at all is over a third (0.9^10 = 0.35).
MIN_PER_CLASS = 10
#: Share of the documents (changed, added or removed since the check) at which
#: ``pnk sync`` measures the verdict again.
RECHECK_SHARE = 0.10
OFF = ("", "off", "none")


@dataclass(frozen=True)
class Choice:
    """The channel a search uses and why, in one line (``reason`` starts with the channel)."""

    channel: str
    reason: str
    #: ``asked`` (this search named it), ``setting`` (``[retrieval] graph_channel``),
    #: ``golden`` (this KB's own verdict), ``default`` (the global default).
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"channel": self.channel, "reason": self.reason, "source": self.source}


def global_default(installed: Mapping[str, Any]) -> str:
    """The installed channel that declares itself the default (``ppr``), else ``"off"``."""
    picks = sorted(n for n, c in installed.items() if getattr(c, "default_channel", False))
    return picks[0] if picks else "off"


def golden_file(config: Config) -> Path:
    return config.root / GOLDEN


# --- the cheap path: what a search reads ----------------------------------------------

_CACHE: dict[str, tuple[tuple[int, int, int], dict[str, Any] | None]] = {}


def load_verdict(state_dir: Path) -> dict[str, Any] | None:
    """The cached verdict, or None; parsed again only when the file changes (one stat)."""
    path = state_dir / VERDICT_FILE
    try:
        st = path.stat()
    except OSError:
        _CACHE.pop(str(path), None)
        return None
    key = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = _CACHE.get(str(path))
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("version") != VERDICT_VERSION:
        data = None
    _CACHE[str(path)] = (key, data)
    return data


def choose(config: Config, requested: str | None, installed: Mapping[str, Any]) -> Choice:
    """The channel for one search: ``requested`` (``--channel``), else the setting, else auto.

    Reads only configuration, the channel table and the cached verdict: never
    measures anything, so a search costs what it always did.
    """
    setting = str(config.retrieval.get("graph_channel", "auto") or "off")
    asked = requested is not None
    name = requested if asked else setting
    name = name or "off"
    by = "asked for by this search" if asked else "set by [retrieval] graph_channel"
    if name != "auto":
        channel = "off" if name in OFF else name
        return Choice(channel, f"{channel}: {by}", "asked" if asked else "setting")
    default = global_default(installed)
    if default == "off":
        return Choice("off", "off: no graph channel installed (pip install 'pinakes[graph]')",
                      "default")
    if not golden_file(config).is_file():
        return Choice(default, f"{default}: the global default (no golden set)", "default")
    verdict = load_verdict(config.state_dir)
    if verdict is None or verdict.get("candidate") != default:
        return Choice(default, f"{default}: the global default ({GOLDEN.as_posix()} not checked "
                               "yet: pnk sync or pnk eval checks it)", "default")
    channel = str(verdict.get("channel") or default)
    if channel not in ("off", default):
        channel = default
    source = "golden" if verdict.get("outcome") in ("pass", "fail") else "default"
    return Choice(channel, str(verdict.get("reason") or f"{channel}: this KB's golden set"), source)


def channel_in_force(kb: KB, requested: str | None = None,
                     installed: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``(channel, reason)``: the channel a search of ``kb`` uses, and why, in one line.

    ``requested`` is a search's own ``--channel`` (None: the KB's setting);
    ``installed`` the channel table when the caller already collected it.
    """
    table = kb.graph_channels() if installed is None else installed
    c = choose(kb.config, requested, table)
    return c.channel, c.reason


# --- the verdict: measured by sync and eval ---------------------------------------------


def settings_key(kb: KB, candidate: str, installed: Mapping[str, Any]) -> str:
    """What the verdict depends on besides the golden set and the store.

    Every ``[retrieval]`` value but ``graph_channel`` (fusion weights, the
    channel's own parameters, ``k``, the calibration in force), the channel's
    version and the code's: change one and the verdict is measured again.
    """
    from . import __version__

    retrieval = {k: v for k, v in sorted(kb.config.retrieval.items()) if k != "graph_channel"}
    channel = installed.get(candidate)
    parts = {
        "retrieval": retrieval,
        "channel": candidate,
        "channel_version": str(getattr(channel, "version", "") or ""),
        "pinakes": __version__,
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _golden_state(config: Config) -> dict[str, Any] | None:
    path = golden_file(config)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    return {"path": GOLDEN.as_posix(), "sha256": hashlib.sha256(raw).hexdigest()}


def _fingerprints(conn: Any) -> np.ndarray:
    """One 64-bit fingerprint per document (its content and its sidecar), sorted."""
    out = np.fromiter(
        (int.from_bytes(hashlib.blake2b(f"{r[0]}\0{r[1]}".encode(), digest_size=8).digest(), "big")
         for r in conn.execute("SELECT hash, sidecar_stat FROM documents")),
        dtype=np.uint64,
    )
    out.sort()
    return out


def drift(kb: KB, verdict: Mapping[str, Any]) -> int | None:
    """About how many documents changed, were added or removed since the verdict; None: unknown."""
    store = kb.reader()
    if verdict.get("generation") == store.generation and verdict.get("store_id") == store.get_meta("store_id"):
        return 0
    try:
        then = np.load(kb.config.state_dir / DOCS_FILE)
    except (OSError, ValueError):
        return None
    with store.snapshot() as conn:
        now = _fingerprints(conn)
    gone = np.setdiff1d(then, now, assume_unique=False).size
    new = np.setdiff1d(now, then, assume_unique=False).size
    return int(max(gone, new))


def out_of_date(kb: KB, verdict: Mapping[str, Any] | None, candidate: str,
                installed: Mapping[str, Any], moved: int | None = None,
                ) -> str | None:
    """Why the verdict must be measured again, or None when it still holds.

    ``moved``: :func:`drift`'s count when the caller has it already (None: counted here).
    """
    if verdict is None:
        return "first check"
    if verdict.get("candidate") != candidate:
        return f"it was measured for {verdict.get('candidate')}"
    golden = _golden_state(kb.config)
    if golden is None or (verdict.get("golden") or {}).get("sha256") != golden["sha256"]:
        return "the golden set changed"
    if verdict.get("settings") != settings_key(kb, candidate, installed):
        return "the retrieval settings changed"
    store = kb.reader()
    if verdict.get("store_id") != store.get_meta("store_id") or \
            verdict.get("signature") != store.get_meta("signature"):
        return "the index was rebuilt"
    if verdict.get("outcome") == "too-few":
        return None  # counted, not measured: only the golden set can change it
    if verdict.get("outcome") == "error" and verdict.get("generation") != store.generation:
        return "the index changed since the golden set could not be used"  # a missing note added?
    if moved is None:
        moved = drift(kb, verdict)
    if moved is None:
        return "the documents it was measured on are unknown"
    limit = max(1, math.ceil(RECHECK_SHARE * int(verdict.get("documents") or 0)))
    if moved >= limit:
        return f"{moved} documents changed since"
    return None


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * float(v):.1f}"


def verdict_from_metrics(candidate: str, counts: Mapping[str, int],
                         metrics: Mapping[str, Mapping[str, Any]] | None,
                         gate: Any = None) -> dict[str, Any]:
    """The verdict's outcome, channel and one-line reason.

    ``counts``: questions per class in the golden set; ``metrics``: per setting
    (``off`` and the candidate), ``{"simple": {...}, "multi-hop": {...}, "all": {...}}``
    as the eval runner reports them; ``gate``: the candidate's default-on verdict.
    """
    few = [c for c in ("simple", "multi-hop") if int(counts.get(c, 0)) < MIN_PER_CLASS]
    if few:
        have = " and ".join(f"{int(counts.get(c, 0))} {c}" for c in few)
        need = f"need {MIN_PER_CLASS}" + (" of each" if len(few) > 1 else "")
        return {"outcome": "too-few", "channel": candidate,
                "reason": f"{candidate}: the golden set has {have} questions, too few to decide ({need})"}
    if gate is None or metrics is None or gate.verdict not in ("pass", "fail"):
        why = getattr(gate, "summary", "not measured")
        return {"outcome": "n/a", "channel": candidate,
                "reason": f"{candidate}: the global default (the {candidate} gate could not judge: {why})"}

    def pair(group: str, key: str, label: str) -> str:
        a = metrics.get(candidate, {}).get(group, {}).get(key)
        b = metrics.get("off", {}).get(group, {}).get(key)
        return f"{label} {_pct(a)} vs {_pct(b)}"

    shown = {"multi-hop recall@5 change": pair("multi-hop", "recall@5", "multi-hop R@5"),
             "simple recall@5 change": pair("simple", "recall@5", "simple R@5"),
             "false-abstain rate change": pair("all", "false_abstain_rate", "false-abstain")}
    if gate.verdict == "pass":
        return {"outcome": "pass", "channel": candidate,
                "reason": f"{candidate}: this KB's golden set passes the {candidate} gate "
                          f"({shown['multi-hop recall@5 change']})"}
    failed = [shown.get(c.name, c.name) for c in gate.checks
              if c.ok is False] or [gate.summary]
    return {"outcome": "fail", "channel": "off",
            "reason": f"off: this KB's golden set fails the {candidate} gate ({'; '.join(failed)})"
                      " — pnk eval to re-check"}


def record(kb: KB, candidate: str, installed: Mapping[str, Any], decided: Mapping[str, Any],
           *, counts: Mapping[str, int], by: str, seconds: float = 0.0,
           numbers: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write the verdict (and the documents it was measured on) into ``.pinakes/``."""
    store = kb.reader()
    state = kb.config.state_dir
    with store.snapshot() as conn:
        prints = _fingerprints(conn)
        generation = store.generation
    data = {
        "version": VERDICT_VERSION,
        "candidate": candidate,
        **dict(decided),
        "counts": dict(counts),
        "numbers": dict(numbers or {}),
        "golden": _golden_state(kb.config),
        "settings": settings_key(kb, candidate, installed),
        "store_id": store.get_meta("store_id"),
        "signature": store.get_meta("signature"),
        "generation": generation,
        "documents": int(prints.size),
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "by": by,
        "seconds": round(float(seconds), 2),
    }
    buf = io.BytesIO()
    np.save(buf, prints)
    remove_stray_temps(state / DOCS_FILE)  # a killed writer's, which no sync sweeps here
    atomic_write(state / DOCS_FILE, buf.getvalue())
    atomic_write(state / VERDICT_FILE, json.dumps(data, indent=1) + "\n")
    return data


def _numbers(metrics: Mapping[str, Mapping[str, Any]], candidate: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for setting in ("off", candidate):
        m = metrics.get(setting, {})
        out[setting] = {
            "simple_recall@5": m.get("simple", {}).get("recall@5"),
            "multi-hop_recall@5": m.get("multi-hop", {}).get("recall@5"),
            "false_abstain_rate": m.get("all", {}).get("false_abstain_rate"),
        }
    return out


def record_eval_run(kb: KB, run: Any, counts: Mapping[str, int]) -> dict[str, Any] | None:
    """After ``pnk eval`` on the KB's whole own golden set: keep the verdict it measured.

    Only a run with the plain ``off`` baseline and the plain default channel
    measured what sync would; anything else (a sample, one class, other
    settings) leaves the cached verdict alone. Returns the recorded verdict.
    """
    installed = kb.graph_channels()
    candidate = global_default(installed)
    if candidate == "off":
        return None
    plain = {r.setting.name: r for r in run.runs if r.setting.channels is None and not r.setting.overrides}
    base = next((r for r in plain.values() if r.setting.channel == "off"), None)
    cand = next((r for r in plain.values() if r.setting.channel == candidate), None)
    if base is None or cand is None:
        return None
    return _record_runs(kb, candidate, installed, base, cand, run.gates, counts, "pnk eval", run.seconds)


def _record_runs(kb: KB, candidate: str, installed: Mapping[str, Any], base: Any, cand: Any,
                 gates: Any, counts: Mapping[str, int], by: str, seconds: float) -> dict[str, Any]:
    """Decide from one eval's ``off`` and candidate runs, and record the verdict."""
    metrics = {"off": {"all": base.metrics["all"], **base.metrics["by_class"]},
               candidate: {"all": cand.metrics["all"], **cand.metrics["by_class"]}}
    gate = next((g for g in gates if g.setting == cand.setting.name
                 and g.gate.endswith("default-on")), None)
    decided = verdict_from_metrics(candidate, counts, metrics, gate)
    return record(kb, candidate, installed, decided, counts=counts, by=by, seconds=seconds,
                  numbers=_numbers(metrics, candidate))


def measure(kb: KB, candidate: str, installed: Mapping[str, Any],
            progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run the golden set through ``off`` and ``candidate`` and record the verdict.

    Runs on a second :class:`KB` over the same folder (sharing the loaded
    embedder), so a server answering searches on ``kb`` meanwhile is not
    disturbed. A golden set that cannot be read or resolved is recorded as such
    (the global default stays in force) rather than failing the sync.
    """
    from .errors import PinakesError
    from .evaluation.golden import load_golden, resolve_documents
    from .evaluation.runner import Setting, run_eval

    started = time.perf_counter()
    counts: dict[str, int] = {}
    try:
        gs = load_golden(golden_file(kb.config))
        counts = gs.counts()
        decided = verdict_from_metrics(candidate, counts, None)
        if decided["outcome"] == "too-few":
            return record(kb, candidate, installed, decided, counts=counts, by="pnk sync")
        checker = type(kb)(kb.config)  # the KB's own class: this module imports no kb
        checker._embedder = kb._embedder
        try:
            relevant = resolve_documents(checker, gs.questions)
            run = run_eval(checker, gs.questions, relevant,
                           [Setting("off"), Setting(candidate, candidate)],
                           progress=progress, reach=False)
        finally:
            kb._embedder = kb._embedder or checker._embedder
            checker.close()
    except PinakesError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        decided = {"outcome": "error", "channel": candidate,
                   "reason": f"{candidate}: the global default (the golden set cannot be used: {first})"}
        return record(kb, candidate, installed, decided, counts=counts, by="pnk sync",
                      seconds=time.perf_counter() - started)
    return _record_runs(kb, candidate, installed, run.runs[0], run.runs[1], run.gates, counts,
                        "pnk sync", time.perf_counter() - started)


def refresh(kb: KB, progress: Callable[[int, int], None] | None = None,
            force: bool = False) -> dict[str, Any] | None:
    """After a sync: measure the verdict again when it is missing or out of date.

    Returns ``{"checked": bool, "channel", "reason", "why", "seconds"}`` when
    the KB's channel is decided by its golden set (``graph_channel = "auto"``,
    a golden set, a default channel installed), else None. Cheap when nothing
    is out of date: a stat, the golden file's hash and, after a sync that
    changed something, one pass over the documents' hashes.
    """
    if str(kb.config.retrieval.get("graph_channel", "auto")) != "auto":
        return None
    if not golden_file(kb.config).is_file():
        return None
    installed = kb.graph_channels()
    candidate = global_default(installed)
    if candidate == "off":
        return None
    verdict = load_verdict(kb.config.state_dir)
    why = "asked to" if force else out_of_date(kb, verdict, candidate, installed)
    if why is None:
        c = choose(kb.config, None, installed)
        return {"checked": False, "channel": c.channel, "reason": c.reason, "why": None, "seconds": 0.0}
    started = time.perf_counter()
    verdict = measure(kb, candidate, installed, progress)
    return {"checked": True, "channel": verdict["channel"], "reason": verdict["reason"], "why": why,
            "seconds": round(time.perf_counter() - started, 2)}


def describe(kb: KB) -> dict[str, Any]:
    """The channel in force, why, and the state of the KB's verdict (``pnk status``, doctor)."""
    import sqlite3

    from .errors import PinakesError

    installed = kb.graph_channels()
    c = choose(kb.config, None, installed)
    out: dict[str, Any] = c.to_dict()
    verdict = load_verdict(kb.config.state_dir)
    candidate = global_default(installed)
    if verdict is None or not golden_file(kb.config).is_file():
        return out
    check = {k: verdict.get(k) for k in ("candidate", "outcome", "counts", "numbers", "generation",
                                          "documents", "checked_at", "by", "seconds")}
    try:
        moved = drift(kb, verdict)
        check["out_of_date"] = out_of_date(kb, verdict, candidate, installed, moved)
    except (PinakesError, sqlite3.Error):  # no readable index: the status says so elsewhere
        check["out_of_date"], moved = "the index cannot be read", None
    check["documents_changed_since"] = moved
    out["check"] = check
    return out
