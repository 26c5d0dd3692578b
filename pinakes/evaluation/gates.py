"""The default-on gates (docs/design.md, "The gates"), as a pure function of the measured numbers.

* **``<channel>`` default-on** (every graph channel in the matrix, against the
  ``off`` baseline): multi-hop recall@k up, simple-lookup recall@k unchanged
  within a tolerance, false-abstain rate flat within a tolerance. A channel
  that regresses simple lookups stays off whatever it does for multi-hop.
* **``ppr`` implemented at all** (read from ``expand``): expansion's multi-hop
  recall sits at least 5 points below the channel-reachable ceiling. The
  beyond-2-hop and membership-only shares are reported beside it, because the
  decision weighs all three.

Recall here is HippoRAG's recall@k as fractions (0.005 is half a point).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class GateTolerances:
    """Thresholds of the gates (fractions, not points)."""

    k: int = 5  # the recall@k the default-on gate reads
    min_multihop_gain: float = 0.0  # multi-hop recall must rise by MORE than this
    simple_tolerance: float = 0.005  # simple recall may fall by at most half a point
    false_abstain_tolerance: float = 0.005  # false-abstain may rise by at most half a point
    ceiling_k: int = 10  # the recall compared with the ceiling (seeds are the top-10 hits)
    ppr_gap: float = 0.05  # ceiling minus expansion's recall at or above this: PPR's mandate
    dominates: float = 0.5  # an excluded share above this "dominates" what the seeds miss


DEFAULT_TOLERANCES = GateTolerances()


@dataclass
class Check:
    name: str
    value: float | None
    threshold: str
    ok: bool | None  # None: could not be measured


@dataclass
class GateVerdict:
    gate: str
    setting: str
    verdict: str  # "pass" | "fail" | "n/a"
    summary: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Metrics = Mapping[str, Mapping[str, Mapping[str, Any]]]  # setting -> group -> metric -> value


def _get(metrics: Metrics, setting: str, group: str, key: str) -> float | None:
    value = metrics.get(setting, {}).get(group, {}).get(key)
    return None if value is None else float(value)


def _delta(metrics: Metrics, setting: str, baseline: str, group: str, key: str) -> float | None:
    a, b = _get(metrics, setting, group, key), _get(metrics, baseline, group, key)
    return None if a is None or b is None else a - b


def default_on_gate(metrics: Metrics, setting: str, baseline: str = "off",
                    tol: GateTolerances = DEFAULT_TOLERANCES) -> GateVerdict:
    """The gate for switching a graph channel on by default."""
    key = f"recall@{tol.k}"
    multi = _delta(metrics, setting, baseline, "multi-hop", key)
    simple = _delta(metrics, setting, baseline, "simple", key)
    fab = _delta(metrics, setting, baseline, "all", "false_abstain_rate")
    checks = [
        Check(f"multi-hop {key} change", multi, f"> {tol.min_multihop_gain:+.3f}",
              None if multi is None else multi > tol.min_multihop_gain),
        Check(f"simple {key} change", simple, f">= {-tol.simple_tolerance:+.3f}",
              None if simple is None else simple >= -tol.simple_tolerance),
        Check("false-abstain rate change", fab, f"<= {tol.false_abstain_tolerance:+.3f}",
              None if fab is None else fab <= tol.false_abstain_tolerance),
    ]
    gate = f"{setting} default-on"
    if any(c.ok is None for c in checks[:2]):
        missing = [c.name for c in checks[:2] if c.ok is None]
        return GateVerdict(gate, setting, "n/a",
                           f"cannot judge: no {' or '.join(missing)} (needs both classes and "
                           f"the {baseline!r} baseline)", checks)
    failed = [c.name for c in checks if c.ok is False]
    if failed:
        return GateVerdict(gate, setting, "fail", "stays off: " + "; ".join(failed) + " not met", checks)
    return GateVerdict(gate, setting, "pass",
                       "may default on: multi-hop up, simple lookups unchanged, false-abstain flat",
                       checks)


def ppr_gate(metrics: Metrics, setting: str, reach: Mapping[str, Any] | None,
             tol: GateTolerances = DEFAULT_TOLERANCES) -> GateVerdict:
    """The gate for implementing PPR, read from the expansion channel's numbers."""
    gate = "ppr implemented at all"
    if not reach or not reach.get("available"):
        reason = (reach or {}).get("reason") or "n/a (no reachability numbers)"
        return GateVerdict(gate, setting, "n/a", f"cannot judge: ceiling {reason}")
    key = f"recall@{tol.ceiling_k}"
    recall = _get(metrics, setting, "multi-hop", key)
    ceiling = reach.get("ceiling")
    if recall is None or ceiling is None:
        return GateVerdict(gate, setting, "n/a", f"cannot judge: no multi-hop {key} for {setting}")
    gap = float(ceiling) - recall
    checks = [Check(f"ceiling - {setting} multi-hop {key}", gap, f">= {tol.ppr_gap:.3f}",
                    gap >= tol.ppr_gap)]
    notes = []
    beyond = reach.get("beyond_2hop_share")
    member = reach.get("membership_only_share")
    if beyond is not None and beyond > tol.dominates:
        notes.append(f"beyond-2-hop evidence dominates what the seeds miss ({beyond:.0%}): "
                     "the gate is blind to exactly what PPR's diffusion could reach")
    if member is not None and member > tol.dominates:
        notes.append(f"membership-only evidence dominates what the seeds miss ({member:.0%}): "
                     "revisit the membership exclusion before implementing PPR")
    if gap >= tol.ppr_gap:
        return GateVerdict(gate, setting, "pass",
                           f"expansion sits {gap * 100:.1f} pt below the ceiling: PPR's mandate",
                           checks, notes)
    return GateVerdict(gate, setting, "fail",
                       f"expansion is within {gap * 100:.1f} pt of the ceiling: expansion suffices",
                       checks, notes)


def gate_verdicts(metrics: Metrics, graph_settings: Sequence[str], baseline: str = "off",
                  reach: Mapping[str, Any] | None = None, expand_settings: Sequence[str] = (),
                  tol: GateTolerances = DEFAULT_TOLERANCES) -> list[GateVerdict]:
    """Every gate that the settings in the matrix let us judge."""
    out = [default_on_gate(metrics, s, baseline, tol) for s in graph_settings]
    out += [ppr_gate(metrics, s, reach, tol) for s in expand_settings]
    return out
