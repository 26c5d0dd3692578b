"""``pnk ask``: the command this plugin adds (it replaces core's install hint of the same name)."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

import click


def add_commands(cli: click.Group) -> None:
    """Register ``ask`` on the top-level ``pnk`` group (called by ``register_commands``)."""
    from pinakes.cli.common import echo_json, json_option, kb_option, scope_options

    @cli.command()
    @click.argument("question", required=False)
    @kb_option
    @click.option("--deep", is_flag=True,
                  help="Run the bounded loop when the free search is not confident: decompose into "
                       "sub-questions, solve each with free retrieval, then answer.")
    @click.option("--dry-run", is_flag=True, help="Run the free search, print the estimate and the plan; pay nothing.")
    @click.option("-y", "--yes", is_flag=True, help="Do not ask before spending more than confirm_above_eur.")
    @click.option("--max-eur", type=float, help="This run's cap in EUR (default: [budget] max_eur_per_operation).")
    @click.option("--backend", help="LLM backend (default: [llm] backend): openai, anthropic, scripted.")
    @click.option("--model", help="Model name (default: [llm] model).")
    @click.option("--base-url", help="OpenAI-compatible server URL (e.g. http://127.0.0.1:8080/v1).")
    @click.option("--write-suggestions", is_flag=True,
                  help="Stage the proposed links (origin: deep) into the sidecars, for you to review and commit.")
    @click.option("--show-transcript", "show_id", metavar="ID",
                  help="Print a past run's transcript (an id prefix is enough; `last`: the newest run).")
    @click.option("--spent", is_flag=True,
                  help="Print what this KB's paid runs spent this month (UTC), by model, from its "
                       "ledger (.pinakes-ledger/spend.jsonl). Spends nothing.")
    @click.option("--month", metavar="YYYY-MM", help="With --spent: that month instead of this one.")
    @click.option("--all", "all_time", is_flag=True, help="With --spent: everything on the ledger, by month too.")
    @scope_options
    @json_option
    def ask(question: str | None, kb_path: str | None, deep: bool, dry_run: bool, yes: bool,
            max_eur: float | None, backend: str | None, model: str | None, base_url: str | None,
            write_suggestions: bool, show_id: str | None, spent: bool, month: str | None,
            all_time: bool, json_: bool, **scope_args: Any) -> None:
        """Answer QUESTION from the knowledge base, with citations.

        \b
        Retrieval is free. With an LLM backend ([llm] in pinakes.toml or the user
        config), one synthesis call answers with citations; --deep may spend more
        (a bounded loop), never past [budget] max_eur_per_operation. Every paid run
        prints an estimate first, asks above confirm_above_eur and ends with a
        receipt. Each paid call is appended to the KB's spend ledger and each run
        leaves a transcript, both in .pinakes-ledger/ (commit it; deleting .pinakes/
        does not touch it). `pnk ask --spent` sums the ledger. --in, --tag, --since,
        --until and --not-in keep every search of the run to part of the KB, as `pnk
        search` does.
        See docs/deep.md.
        """
        from pinakes.cli.common import open_kb, scope_of

        from . import transcript as tr
        from .settings import no_backend_hint, resolve

        if (month or all_time) and not spent:
            raise click.UsageError("--month and --all go with --spent")
        if month and all_time:
            raise click.UsageError("give --month or --all, not both")
        if spent and (question or show_id):
            raise click.UsageError("--spent takes no QUESTION (and no --show-transcript)")
        kb = open_kb(kb_path)
        if spent:
            from .ledger import spent as sums

            report = sums(kb, month=month, all_time=all_time)
            if json_:
                echo_json(report)
            else:
                _print_spent(report)
            return
        if show_id:
            data = tr.load(kb, show_id)
            if json_:
                echo_json(data)
            else:
                _print_transcript(data)
            return
        if not question or not question.strip():
            raise click.UsageError("give a QUESTION (or --show-transcript ID)")
        settings = resolve(kb, backend=backend, model=model, base_url=base_url, max_eur=max_eur,
                           require_backend=False)
        scope = scope_of([kb], **scope_args)
        if settings is None:
            res = kb.search(question, k=5, **scope)
            # No backend means no model and so no price: there is nothing to estimate.
            no_estimate = "no estimate: no LLM backend is configured, so there is no model to price"
            if json_:
                out = {"question": question, "answer": None, "backend": None,
                       "not_in_notes": res.abstained, "hint": no_backend_hint(),
                       "search": res.to_dict()}
                if dry_run:
                    out.update(dry_run=True, estimate_eur=None, estimate_note=no_estimate)
                echo_json(out)
                return
            if res.abstained:
                click.echo(f"The notes do not contain this: {res.reason}.")
            for i, h in enumerate(res.hits, 1):
                click.echo(f"[{i}] {h.title}  {h.path}:{h.start_line}")
                click.echo(f"    {h.snippet}")
            if dry_run:
                click.echo(f"{no_estimate}; dry run: nothing was spent")
            # An abstaining search owes no answer (the notes lack it): only --deep could look further.
            lead = ("With an LLM backend, --deep would look further: " if res.abstained
                    else "No LLM backend, so no answer: ")
            click.echo(click.style(lead, fg="yellow") + no_backend_hint())
            return
        from .budget import confirm, eur
        from .engine import Run

        run = Run(kb, question, settings, deep=deep, scope=scope)
        if dry_run:
            _dry_run(run, json_, echo_json)
            return

        def gate(estimate: Decimal, cap: Decimal) -> None:
            if not json_:
                n = len(run.planned)
                click.echo(f"estimate: up to {eur(min(estimate, cap))} for up to {n} call{'s' if n != 1 else ''} "
                           f"({settings.backend_id} {settings.model}; cap {eur(cap)})", err=True)
            confirm(estimate, cap, settings.confirm_above_eur, yes=yes, interactive=sys.stdin.isatty(),
                    ask=lambda msg: click.confirm(msg, default=False, err=True))

        data = run.execute(confirm=gate)
        staged = None
        if write_suggestions and data["suggestions"]:
            from .suggest import write_suggestions as stage

            staged = stage(kb, data["suggestions"])
            data["staged"] = staged
        if json_:
            echo_json(data)
            return
        _print_answer(data, staged)


def _dry_run(run: Any, json_: bool, echo_json: Any) -> None:
    from .budget import eur

    _, conf, confident = run.round0()
    if run.abstained and not run.deep:
        shape = f"no paid call: the notes do not contain this ({run.reason})"
    elif confident or not run.deep:
        shape = "one synthesis call"
    else:
        shape = (f"decompose (up to 2 calls), up to {run.settings.deep['max_rounds']} rounds of free "
                 "retrieval + one solve call, one synthesis call")
    out = {"question": run.question, "dry_run": True, "confidence": conf, "confident": confident,
           "abstained": run.abstained, "reason": run.reason,
           "plan": shape, "estimate_eur": float(run.estimate), "cap_eur": float(run.budget.cap_eur),
           "planned_calls": [c.__dict__ for c in run.planned],
           "backend": run.settings.backend_id, "model": run.settings.model}
    if json_:
        echo_json(out)
        return
    shown = "unknown" if conf is None else f"{conf:.2f}"
    verdict = f"abstains: {run.reason}" if run.abstained else ("confident" if confident else "not confident")
    click.echo(f"round 0: free search, confidence {shown} (confident at "
               f"{run.settings.deep['confident_at']}): {verdict}")
    click.echo(f"plan: {shape}")
    click.echo(f"estimate: up to {eur(min(run.estimate, run.budget.cap_eur))} for up to "
               f"{len(run.planned)} calls (cap {eur(run.budget.cap_eur)}); dry run: nothing was spent")


def _print_spent(report: dict[str, Any]) -> None:
    from .budget import eur

    period = "in all" if report["period"] == "all" else f"in {report['period']} (UTC)"
    if not report["calls"]:
        click.echo(f"{report['kb']}: nothing spent {period}")
    else:
        runs, calls = report["runs"], report["calls"]
        click.echo(f"{report['kb']}: {eur(Decimal(report['eur_exact']))} spent {period}, "
                   f"{runs} run{'s' if runs != 1 else ''}, {calls} call{'s' if calls != 1 else ''}, "
                   f"{report['input_tokens']:,} tokens in, {report['output_tokens']:,} out")
        rows = [(f"{r['backend']} {r['model']}", str(r["runs"]), str(r["calls"]), f"{r['input_tokens']:,}",
                 f"{r['output_tokens']:,}", eur(Decimal(r["eur_exact"]))) for r in report["by_model"]]
        head = ("model", "runs", "calls", "tokens in", "out", "EUR")
        widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
        for line in [head, *rows]:
            click.echo("  " + "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i])
                                         for i, c in enumerate(line)))
        if report["period"] == "all":
            click.echo("  by month: " + ", ".join(f"{m} {eur(Decimal(v))}" for m, v in report["by_month"].items()))
    if report["unsettled_calls"]:
        n = report["unsettled_calls"]
        click.echo(f"  {n} call{'s' if n != 1 else ''} never settled (the process stopped mid-call): "
                   "counted at the reservation, as the provider may have billed it")
    if report["unreadable_lines"]:
        click.echo(f"warning: {report['unreadable_lines']} unreadable line(s) in the ledger were skipped",
                   err=True)
    click.echo(f"ledger: {report['ledger']}", err=True)


def _print_answer(data: dict[str, Any], staged: dict[str, Any] | None) -> None:
    from .budget import receipt_line

    click.echo(data["answer"])
    if data["citations"]:
        click.echo(click.style("\nSources", bold=True))
        for c in data["citations"]:
            marks = "".join(f"[{n}]" for n in c.get("passages", [c["n"]]))
            click.echo(f"  {marks} {c['title']}  {c['path']}  ({c['doc_id']})")
    if data["suggestions"]:
        verb = "Staged" if staged else "Proposed"
        click.echo(click.style(f"\n{verb} links (origin: deep, transcript {data['id']})", bold=True))
        for s in data["suggestions"]:
            click.echo(f"  {s['src']} -> {s['to']}  rel {s['rel']}  ({s['why']})")
        if staged:
            click.echo(f"  {len(staged['added'])} added, {len(staged['existing'])} already there; "
                       "review with `git diff` and commit to keep them")
        else:
            click.echo("  stage them with --write-suggestions (then review and commit)")
    click.echo(f"\nstop: {data['stop_reason']}", err=True)
    click.echo(receipt_line(data["receipt"]), err=True)
    click.echo(f"transcript: {data['id']}  (pnk ask --show-transcript {data['id']})", err=True)


def _print_transcript(data: dict[str, Any]) -> None:
    from .budget import receipt_line

    click.echo(f"{data['id']}  {data['mode']}  {data['started']}  kb {data['kb']}")
    click.echo(f"question: {data['question']}")
    for r in data["rounds"]:
        if r["kind"] == "retrieve":
            ids = ", ".join(p["path"] for p in r["retrieved"]) or "nothing"
            conf = r.get("confidence")
            click.echo(f"  {r['step']:>2} retrieve [{r['label']}] {r['query']!r} -> {ids}"
                       f" (confidence {'unknown' if conf is None else round(conf, 3)})")
        else:
            calls = r.get("calls", [])
            cost = sum(c["eur"] for c in calls)
            reserved = sum(c["reserved_eur"] for c in calls)
            click.echo(f"  {r['step']:>2} {r['kind']} prompt {r.get('prompt_bytes', 0)} B, "
                       f"reserved €{reserved:.6f}, spent €{cost:.6f}")
            if r.get("error"):
                click.echo(f"       error: {r['error']}")
            if r.get("subquestion"):
                click.echo(f"       sub-question: {r['subquestion']['question']}")
            if r.get("answer") or r.get("reply"):
                text = (r.get("answer") or r.get("reply") or "").replace("\n", " ")
                click.echo(f"       -> {text[:200]}")
    click.echo(f"stop: {data['stop_reason']}")
    if data.get("error"):
        click.echo(f"error: {data['error']}")
    click.echo(f"answer: {data.get('answer')}")
    if data.get("receipt"):
        click.echo(receipt_line(data["receipt"]))
