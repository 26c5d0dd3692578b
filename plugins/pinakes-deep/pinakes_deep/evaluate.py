"""``pnk eval --deep``: what the paid path costs and how well its answers cite, per question class.

For each question it runs ``pnk ask --deep`` (the same :class:`~pinakes_deep.engine.Run`,
its own budget and transcript) and reports, per class: calls, tokens and
euros per question, the recall of the documents the answer cites (the share
of a question's golden documents among its citations), the free path's
recall over the first five documents of round 0 for comparison, and budget
breaches (a run that spent more than its estimate or its cap: always zero
unless something is wrong). A provider failure ends the evaluation with the
questions done so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from .backends import LLMError
from .budget import eur
from .engine import Run
from .settings import Settings


def _ulids(kb: Any) -> dict[int, str]:
    with kb.reader().snapshot() as conn:
        return {int(r["doc"]): str(r["ulid"]) for r in conn.execute("SELECT doc, ulid FROM documents")}


def run_deep_eval(kb: Any, questions: Sequence[Any], relevant: Mapping[str, Sequence[int]],
                  settings: Settings, *, deep: bool = True, progress: Callable[[int, int], None] | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    ulid_of = _ulids(kb)
    rows: list[dict[str, Any]] = []
    error = None
    started = time.perf_counter()
    for i, q in enumerate(questions):
        gold = {ulid_of[d] for d in relevant.get(q.id, ()) if d in ulid_of}
        try:
            data = Run(kb, q.text, settings, deep=deep, sleep=sleep).execute()
        except LLMError as exc:
            error = f"question {q.id}: {exc}"
            break
        rec = data["receipt"]
        cited = {c["doc_id"] for c in data["citations"]}
        free: list[str] = []
        first = next((r for r in data["rounds"] if r["kind"] == "retrieve"), None)
        for p in (first or {}).get("retrieved", []):
            if p["doc_id"] not in free:
                free.append(p["doc_id"])
        rows.append({
            "id": q.id, "class": q.cls, "transcript": data["id"], "stop": data["stop_reason"],
            "calls": rec["calls"], "input_tokens": rec["input_tokens"], "output_tokens": rec["output_tokens"],
            "eur": rec["eur"], "eur_exact": rec["eur_exact"], "estimate_eur": rec["estimate_eur"],
            "breach": not (rec["within_estimate"] and rec["within_cap"]) or rec["overruns"] > 0,
            "cited_recall": (len(cited & gold) / len(gold)) if gold else None,
            "free_recall_at_5": (len(set(free[:5]) & gold) / len(gold)) if gold else None,
            "cited": sorted(cited), "gold": sorted(gold),
        })
        if progress:
            progress(i + 1, len(questions))
    classes: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        classes.setdefault(r["class"], []).append(r)
    summary = {cls: _aggregate(rs) for cls, rs in classes.items()}
    summary["all"] = _aggregate(rows)
    return {"backend": settings.backend_id, "model": settings.model, "deep": deep,
            "price": settings.price.to_dict(), "cap_eur": float(settings.cap_eur),
            "questions": len(rows), "error": error, "seconds": round(time.perf_counter() - started, 2),
            "classes": summary, "per_question": rows}


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(sum(vals) / len(vals), 4) if vals else None


def _aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    if not n:
        return {"n": 0}
    total = sum((Decimal(r["eur_exact"]) for r in rows), Decimal(0))
    return {
        "n": n,
        "calls_per_query": round(sum(r["calls"] for r in rows) / n, 3),
        "input_tokens_per_query": round(sum(r["input_tokens"] for r in rows) / n, 1),
        "output_tokens_per_query": round(sum(r["output_tokens"] for r in rows) / n, 1),
        "tokens_per_query": round(sum(r["input_tokens"] + r["output_tokens"] for r in rows) / n, 1),
        "eur_per_query": float(total / n),
        "eur_total": float(total),
        "cited_recall": _mean([r["cited_recall"] for r in rows]),
        "free_recall_at_5": _mean([r["free_recall_at_5"] for r in rows]),
        "budget_breaches": sum(1 for r in rows if r["breach"]),
        "stops": {s: sum(1 for r in rows if r["stop"] == s) for s in sorted({r["stop"] for r in rows})},
    }


def eval_command(kb: Any, questions: Sequence[Any], relevant: Mapping[str, Sequence[int]],
                 source: dict[str, Any], *, json_: bool, yes: bool) -> None:
    """What core's ``pnk eval --deep`` calls once it has loaded the questions."""
    import sys

    import click

    from pinakes.cli.core import echo_json

    from .budget import confirm
    from .engine import plan_calls
    from .settings import resolve

    settings = resolve(kb)
    assert settings is not None
    per_q = sum((settings.price.cost(c.input_tokens, c.max_tokens) for c in plan_calls(settings, True)),
                Decimal(0))
    total = min(per_q, settings.cap_eur) * len(questions)
    if settings.backend_id != "scripted":  # the scripted backend spends no money
        confirm(total, total, settings.confirm_above_eur, yes=yes, interactive=sys.stdin.isatty(),
                ask=lambda m: click.confirm(m, default=False, err=True))
    if not json_:
        click.echo(f"{len(questions)} questions through `pnk ask --deep` ({settings.backend_id} "
                   f"{settings.model}): up to {eur(total)}", err=True)
    out = run_deep_eval(kb, questions, relevant, settings)
    out["source"] = source
    if json_:
        echo_json(out)
    else:
        click.echo(f"{'class':<14}{'n':>4}{'calls/q':>9}{'tokens/q':>10}{'€/q':>12}{'cited R':>9}"
                   f"{'free R@5':>10}{'breaches':>10}")
        for cls, s in out["classes"].items():
            if not s.get("n"):
                continue
            click.echo(f"{cls:<14}{s['n']:>4}{s['calls_per_query']:>9}{s['tokens_per_query']:>10}"
                       f"{s['eur_per_query']:>12.6f}{_pct(s['cited_recall']):>9}"
                       f"{_pct(s['free_recall_at_5']):>10}{s['budget_breaches']:>10}")
    if out["error"]:
        raise LLMError(f"stopped early: {out['error']}")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"
