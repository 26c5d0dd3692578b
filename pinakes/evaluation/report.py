"""``pnk eval --report FILE.html``: one self-contained page, read at a glance.

Inline SVG and a little CSS, no JavaScript and nothing fetched, so the file
can be attached to a pull request or opened offline years later. It shows
the recall@k curves of every setting per question class, the reliability
diagram of the confidence, the metric tables and the gate verdicts.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .calibration import floor_sentence, reliability_bins
from .golden import CLASSES
from .metrics import CURVE_KS, recall_curve
from .runner import EvalRun

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _pct(v: Any, digits: int = 1) -> str:
    return "–" if v is None else f"{100 * float(v):.{digits}f}"


def _ms(v: Any) -> str:
    return "–" if v is None else f"{float(v):.1f}"


def recall_svg(title: str, series: Sequence[tuple[str, Sequence[float | None]]],
               ks: Sequence[int] = CURVE_KS, width: int = 420, height: int = 280) -> str:
    """A line chart of recall@k (0-100 %) against k, one line per setting."""
    left, right, top, bottom = 48, 12, 28, 40
    pw, ph = width - left - right, height - top - bottom
    values = [v for _, ys in series for v in ys if v is not None]
    lo = max(0.0, (np.floor(min(values) * 10) / 10) - 0.1) if values else 0.0
    lo = min(lo, 0.5)

    def x(i: int) -> float:
        return left + pw * (i / max(1, len(ks) - 1))

    def y(v: float) -> float:
        return top + ph * (1 - (v - lo) / (1 - lo))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
           f'<text x="{left}" y="16" class="t">{_e(title)}</text>']
    steps = int(round((1 - lo) / 0.1))
    for j in range(steps + 1):
        v = lo + j * 0.1
        yy = y(v)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="g"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" class="a" text-anchor="end">{v * 100:.0f}</text>')
    for i, k in enumerate(ks):
        out.append(f'<text x="{x(i):.1f}" y="{top + ph + 16}" class="a" text-anchor="middle">{k}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 6}" class="a" text-anchor="middle">k (documents)</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" class="a" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + ph / 2})">recall@k %</text>')
    for n, (name, ys) in enumerate(series):
        color = PALETTE[n % len(PALETTE)]
        pts = [(x(i), y(v)) for i, v in enumerate(ys) if v is not None]
        if not pts:
            continue
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for px, py in pts:
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{color}"/>')
        # Legend bottom right: recall curves rise, so that corner is empty.
        ly = top + ph - 8 - 14 * (len(series) - 1 - n)
        lx = left + pw - 8 - 7 * max(len(s) for s, _ in series) - 14
        out.append(f'<rect x="{lx:.0f}" y="{ly - 8}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{lx + 14:.0f}" y="{ly + 1}" class="a">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def reliability_svg(p: Sequence[float], y: Sequence[float], title: str, bins: int = 10,
                    width: int = 420, height: int = 300) -> str:
    """Reliability diagram: observed hit rate against predicted probability, per bin."""
    left, right, top, bottom = 48, 12, 28, 44
    pw, ph = width - left - right, height - top - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
           f'<text x="{left}" y="16" class="t">{_e(title)}</text>']
    for j in range(11):
        v = j / 10
        yy = top + ph * (1 - v)
        xx = left + pw * v
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="g"/>')
        if j % 2 == 0:
            out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" class="a" text-anchor="end">{v:.1f}</text>')
            out.append(f'<text x="{xx:.1f}" y="{top + ph + 16}" class="a" text-anchor="middle">{v:.1f}</text>')
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top}" stroke="#999" '
               'stroke-dasharray="4 3"/>')
    data = reliability_bins(p, y, bins)
    biggest = max((b["n"] for b in data), default=1)
    bw = pw / bins
    for b in data:
        x0 = left + pw * b["lo"]
        h = ph * b["rate"]
        out.append(f'<rect x="{x0 + 2:.1f}" y="{top + ph - h:.1f}" width="{bw - 4:.1f}" height="{h:.1f}" '
                   f'fill="#1f77b4" fill-opacity="{0.25 + 0.65 * b["n"] / biggest:.2f}">'
                   f'<title>{b["n"]} questions, mean p {b["mean_p"]:.2f}, hit rate {b["rate"]:.2f}</title></rect>')
        cx = left + pw * b["mean_p"]
        cy = top + ph * (1 - b["rate"])
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="#d62728"/>')
        out.append(f'<text x="{x0 + bw / 2:.1f}" y="{top + ph - h - 4:.1f}" class="a" '
                   f'text-anchor="middle">{b["n"]}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 8}" class="a" text-anchor="middle">'
               'predicted P(top-k holds the evidence)</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" class="a" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + ph / 2})">observed rate</text>')
    out.append("</svg>")
    return "".join(out)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#666} .charts{display:flex;flex-wrap:wrap;gap:16px}
table{border-collapse:collapse;margin:6px 0 12px} th,td{padding:3px 8px;text-align:right;border-bottom:1px solid #eee}
th{background:#f6f6f6} td:first-child,th:first-child,td.l{text-align:left}
.pass{color:#137333;font-weight:600} .fail{color:#b3261e;font-weight:600} .na{color:#777}
svg .t{font-size:13px;font-weight:600} svg .a{font-size:11px;fill:#444} svg .g{stroke:#eee}
"""


def render_html(run: EvalRun, reliability: tuple[Sequence[float], Sequence[float], str] | None = None) -> str:
    """The whole report page for one :class:`EvalRun`."""
    src = run.source
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>pnk eval: {_e(src.get('name', ''))}</title><style>{CSS}</style></head><body>",
        f"<h1>pnk eval: {_e(src.get('name', ''))}</h1>",
        f'<div class=meta>{_e(src.get("kind", ""))} {_e(src.get("path", ""))} · '
        f'{sum(1 for _ in run.runs[0].outcomes) if run.runs else 0} questions · k = {run.k} · '
        f'{time.strftime("%Y-%m-%d %H:%M")} · {run.seconds:.0f} s · cost €0.00 (free path)</div>',
        "<h2>Recall@k by class</h2><div class=charts>",
    ]
    for cls in (*CLASSES, None):
        series = []
        for r in run.runs:
            part = [o for o in r.outcomes if cls is None or o.cls == cls]
            if any(o.answerable for o in part):
                series.append((r.setting.name, recall_curve(part)))
        if series and cls != "unanswerable":
            label = cls or "all answerable"
            n = sum(1 for o in run.runs[0].outcomes if (cls is None and o.answerable) or o.cls == cls)
            parts.append(recall_svg(f"{label} ({n})", series))
    parts.append("</div>")
    if reliability is not None:
        p, y, label = reliability
        parts.append("<h2>Confidence: reliability</h2><div class=charts>")
        parts.append(reliability_svg(p, y, label))
        fit = run.calibration
        if fit is not None:
            before = "–" if fit.ece_before is None else f"{fit.ece_before:.3f}"
            parts.append(f"<p>Expected calibration error on held-out folds: {before} "
                         f"({_e(fit.before_label)}) → <b>{fit.ece_after:.3f}</b> calibrated; "
                         f"{len(fit.labels)} questions, {int(fit.labels.sum())} with the evidence in "
                         f"the top {run.k}. Written to {_e(run.calibration_path)}.</p>")
            if fit.floor is not None:
                parts.append(f"<p>{_e(floor_sentence(fit.floor, len(fit.labels), fit.ece_after))}</p>")
        parts.append("</div><p class=meta>Bars: observed share of questions whose top-k held the "
                     "evidence, per bin of predicted probability (label: count); dots: mean "
                     "prediction vs observed rate; dashed: perfect calibration.</p>")
    else:
        parts.append("<h2>Confidence</h2><p class=meta>unknown: no calibration in force "
                     "(run <code>pnk eval --calibrate</code>)</p>")
    parts.append(_tables(run))
    parts.append(_gates(run))
    parts.append("</body></html>\n")
    return "".join(parts)


def _tables(run: EvalRun) -> str:
    head = ("<tr><th>setting</th><th>n</th><th>R@2</th><th>R@5</th><th>R@10</th><th>all-R@5</th>"
            "<th>MRR</th><th>abstain</th><th>false-abstain</th><th>abstain prec.</th><th>p50 ms</th>"
            "<th>p95 ms</th>"
            "<th>€/query</th></tr>")
    out = ["<h2>Metrics (%)</h2>"]
    groups: list[tuple[str, str | None]] = [(c, c) for c in CLASSES] + [("all", None)]
    types = sorted({t for r in run.runs for t in r.metrics.get("by_question_type", {})})
    groups += [(f"type: {t}", f"type:{t}") for t in types]
    for label, key in groups:
        rows = []
        for r in run.runs:
            if key is None:
                m = r.metrics["all"]
            elif key.startswith("type:"):
                m = r.metrics["by_question_type"].get(key[5:])
            else:
                m = r.metrics["by_class"].get(key)
            if not m:
                continue
            rows.append(
                f"<tr><td>{_e(r.setting.name)}</td><td>{m['n']}</td><td>{_pct(m['recall@2'])}</td>"
                f"<td>{_pct(m['recall@5'])}</td><td>{_pct(m['recall@10'])}</td>"
                f"<td>{_pct(m['all_recall@5'])}</td><td>{_pct(m['mrr'])}</td><td>{_pct(m['abstain_rate'])}</td>"
                f"<td>{_pct(m['false_abstain_rate'])}</td><td>{_pct(m['abstain_precision'])}</td>"
                f"<td>{_ms(m['latency_ms_p50'])}</td><td>{_ms(m['latency_ms_p95'])}</td>"
                f"<td>{m['cost_eur_per_query']:.2f}</td></tr>"
            )
        if rows:
            out.append(f"<h3>{_e(label)}</h3><table>{head}{''.join(rows)}</table>")
    return "".join(out)


def _gates(run: EvalRun) -> str:
    out = ["<h2>Gates</h2>"]
    reach = run.reach
    if reach is None:
        out.append("<p class=meta>No reachability numbers (no multi-hop questions or no "
                   "<code>off</code> baseline in the matrix).</p>")
    elif not reach.available:
        out.append(f"<p>Channel-reachable ceiling: <span class=na>{_e(reach.reason)}</span></p>")
    else:
        out.append(
            "<table><tr><th>multi-hop questions</th><th>ceiling</th><th>ceiling (all evidence)</th>"
            "<th>beyond 2 hops</th><th>membership-only</th><th>channel-reachable</th></tr>"
            f"<tr><td>{reach.questions}</td><td>{_pct(reach.ceiling)}</td><td>{_pct(reach.ceiling_all)}</td>"
            f"<td>{_pct(reach.beyond_2hop_share)}</td><td>{_pct(reach.membership_only_share)}</td>"
            f"<td>{_pct(reach.reachable_share)}</td></tr></table>"
            "<p class=meta>Shares are of the evidence the fused seeds miss.</p>"
        )
        out.extend(f"<p class=meta>{_e(n)}</p>" for n in reach.notes)
    if not run.gates:
        out.append("<p class=meta>No graph channel in the matrix: no gate to judge.</p>")
    for g in run.gates:
        cls = {"pass": "pass", "fail": "fail"}.get(g.verdict, "na")
        out.append(f"<p><b>{_e(g.gate)}</b>: <span class={cls}>{_e(g.verdict)}</span> — {_e(g.summary)}</p>")
        if g.checks:
            out.append("<table><tr><th>check</th><th>value (pt)</th><th>needs</th><th>ok</th></tr>")
            for c in g.checks:
                value = "–" if c.value is None else f"{c.value * 100:+.1f}"
                ok = {True: "yes", False: "no", None: "n/a"}[c.ok]
                out.append(f"<tr><td class=l>{_e(c.name)}</td><td>{value}</td>"
                           f"<td>{_e(c.threshold)}</td><td>{ok}</td></tr>")
            out.append("</table>")
        for note in g.notes:
            out.append(f"<p class=meta>{_e(note)}</p>")
    return "".join(out)
