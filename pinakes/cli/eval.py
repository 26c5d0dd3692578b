"""``pnk eval``: golden sets and datasets through the channel matrix, gates and calibration."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import click

from ..config import find_kb_root
from ..errors import GoldenSetError, KBNotFound
from ..fsutil import atomic_write
from ..kb import KB
from .common import Progress, echo_json, json_option, kb_option, open_kb
from .group import cli


@cli.command(name="eval")
@click.option("--golden", "golden_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Golden set (YAML). Default: golden/questions.yaml in the KB.")
@click.option("--dataset", "dataset_path", type=click.Path(file_okay=False, path_type=Path),
              help="A corpus.jsonl + queries.jsonl folder (materialised once into a cached KB).")
@kb_option
@click.option("--matrix", metavar="SETTINGS",
              help="Comma-separated settings side by side: off, bm25, dense, any graph channel "
                   "(e.g. expand), with +salience, +distance, +rrf, +final or +key=value "
                   "([retrieval] overrides). Default: the KB's graph_channel.")
@click.option("--class", "classes", multiple=True, metavar="CLASS",
              type=click.Choice(["simple", "multi-hop", "unanswerable"]),
              help="Only the questions of this class: simple, multi-hop or unanswerable (repeatable); "
                   "--limit then samples among them.")
@click.option("--limit", type=click.IntRange(1), help="Evaluate a random sample of N questions.")
@click.option("--seed", default=0, show_default=True, help="Seed of --limit's sample and the folds.")
@click.option("--calibrate", is_flag=True,
              help="Fit the confidence calibration and write it to the KB (golden/calibration.json); "
                   "its held-out ECE is printed beside what sampling noise alone gives on that many "
                   "questions.")
@click.option("--folds", default=5, show_default=True, type=click.IntRange(2),
              help="Folds for the held-out calibration error.")
@click.option("--calibration-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the calibration here instead of into the KB.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a self-contained HTML report (recall curves, reliability diagram).")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for materialised datasets (default: $XDG_CACHE_HOME/pinakes/datasets).")
@click.option("--graph", "graph", multiple=True, metavar="DERIVER",
              help="With --dataset: switch an edge deriver on in its KB ([graph] DERIVER = true), "
                   "e.g. ner, or off with !DERIVER (e.g. !mentions, on by default); repeatable. "
                   "(A --golden KB uses its own pinakes.toml.)")
@click.option("--init", "init", is_flag=True,
              help="Write a starter golden set (golden/questions.yaml, or --golden FILE) from the "
                   "KB's own documents, to edit by reading them; refuses to overwrite.")
@click.option("--deep", is_flag=True,
              help="Run each question through `pnk ask --deep` (paid; pinakes[deep]) and report "
                   "calls, tokens, EUR per question and cited-document recall per class.")
@click.option("--mode", "mode", metavar="NAME",
              help="An evaluation mode a plugin adds (`pnk plugins --all` lists them); "
                   "--deep is --mode deep.")
@click.option("-y", "--yes", is_flag=True, help="With --deep: do not ask before spending.")
@click.option("--explain", "explain_id", metavar="ID",
              help="One question (its id) under each setting of --matrix side by side (default: "
                   "off and the KB's channel), the relevant documents marked, each with why it "
                   "ranked there.")
@json_option
def eval_cmd(golden_path: Path | None, dataset_path: Path | None, kb_path: str | None,
             matrix: str | None, limit: int | None, seed: int, calibrate: bool, folds: int,
             calibration_out: Path | None, report_path: Path | None, cache_dir: Path | None,
             graph: tuple[str, ...], init: bool, json_: bool, deep: bool = False,
             yes: bool = False, classes: tuple[str, ...] = (), mode: str | None = None,
             explain_id: str | None = None) -> None:
    """Measure retrieval: recall@k, MRR, abstention and latency per question class.

    \b
    pnk eval --init                      (a starter golden set to edit)
    pnk eval --golden golden/questions.yaml --kb my-kb
    pnk eval --dataset ../bench/2wiki --matrix bm25,dense,off --json
    pnk eval --kb my-kb --calibrate --report eval.html
    pnk eval --dataset ../bench/2wiki --class multi-hop --limit 50 --seed 0
    pnk eval --explain m14 --matrix off,ppr   (one question, side by side)

    Every setting runs through the same search users run; cost is €0.00
    (the free path). Graph settings are judged against the `off` baseline by
    the gates (docs/design.md, "The gates").
    """
    from ..channel_choice import global_default, record_eval_run
    from ..channel_choice import golden_file as own_golden_file
    from ..evaluation.calibration import (
        describe_in_force,
        fit_from_outcomes,
        shipped_prior,
        write_target,
    )
    from ..evaluation.dataset import dataset_relevant, load_dataset, materialise
    from ..evaluation.golden import load_golden, resolve_documents, select_questions
    from ..evaluation.report import render_html
    from ..evaluation.runner import Setting, parse_matrix, run_eval

    if init:
        if dataset_path or matrix or calibrate or report_path:
            raise click.UsageError("--init only writes a starter golden set; run `pnk eval` after it")
        _init_golden(kb_path, golden_path, json_)
        return
    if golden_path and dataset_path:
        raise click.UsageError("give --golden or --dataset, not both")
    if dataset_path and kb_path:
        raise click.UsageError("--dataset builds its own KB; --kb applies to --golden only")
    if graph and not dataset_path:
        raise click.UsageError("--graph applies to --dataset only; for your own KB set "
                               "[graph] DERIVER = true in its pinakes.toml")
    interactive = sys.stderr.isatty() and not json_
    source: dict[str, Any]
    if dataset_path:
        ds = load_dataset(dataset_path)
        if interactive:
            click.echo(f"Preparing {ds.name} ({len(ds.passages)} passages)...", err=True)
        progress = Progress(enabled=interactive)
        try:
            md = materialise(ds, cache_dir, progress=progress, graph=graph)
        finally:
            progress.close()
        kb = md.kb
        questions = ds.questions
        relevant = dataset_relevant(md)
        source = {"kind": "dataset", "name": ds.name, "path": str(ds.path), "kb": str(kb.root),
                  "rematerialised": md.rematerialised, "graph": sorted(kb.edge_derivers())}
    else:
        if golden_path is not None and not golden_path.is_file():
            raise GoldenSetError(f"no golden set at {golden_path}")
        kb = _golden_kb(kb_path, golden_path)
        golden_file = golden_path or kb.root / "golden" / "questions.yaml"
        if golden_path is None and not golden_file.is_file():
            raise click.UsageError(f"no golden set at {golden_file}: pass --golden FILE or --dataset DIR")
        gs = load_golden(golden_file)
        questions = gs.questions
        relevant = resolve_documents(kb, questions)
        source = {"kind": "golden", "name": kb.name, "path": str(golden_file), "kb": str(kb.root)}
    if explain_id is not None:
        _explain_one(kb, questions, relevant, explain_id, matrix, json_, source)
        return
    total = len(questions)
    questions = select_questions(questions, classes, limit, seed)
    if not questions:
        raise click.UsageError(f"no question of class {', '.join(classes)} in {source['path']}")
    source["questions"] = len(questions)
    if classes:
        source["classes"] = sorted(set(classes))
    if len(questions) < total:
        source["sampled_from"] = total
        if limit:
            source["seed"] = seed
    if deep or mode:  # a plugin's mode (the paid path's lives in plugins/pinakes-deep)
        _eval_mode("deep" if deep else str(mode)).run(kb, questions, relevant, source,
                                                      json_=json_, yes=yes)
        return

    channels = kb.graph_channels()
    default_name = kb.channel_name(installed=channels)  # in force (auto: this KB's verdict)
    # Without --matrix: the channel against `off`. Under "auto" that is the global default
    # (ppr) whatever the KB's verdict, so the gate that sets the verdict is measured again.
    auto = str(kb.config.retrieval.get("graph_channel", "auto")) == "auto"
    settings = parse_matrix(matrix or (global_default(channels) if auto else default_name), channels)
    calib_setting = next((s for s in settings if s.channel == (default_name if default_name in channels
                                                                 else "off")
                          and s.channels is None and not s.overrides), None)
    if calibrate and calib_setting is None:
        calib_setting = Setting(default_name if default_name in channels else "off",
                                default_name if default_name in channels else "off")
        settings.insert(0, calib_setting)

    in_force_model = kb.calibration()  # the shipped one when the KB's own went stale
    in_force = in_force_model.path if in_force_model is not None else None
    bar: Any = None
    shown = 0

    def tick(done: int, n: int) -> None:
        nonlocal bar, shown
        if not interactive:
            return
        if bar is None:
            bar = click.progressbar(length=n, label="Evaluating", file=sys.stderr)
            bar.__enter__()
        bar.update(done - shown)
        shown = done

    try:
        run = run_eval(kb, questions, relevant, settings, source=source, progress=tick)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    run.confidence_source = str(in_force) if in_force else "unknown"
    if (auto and source["kind"] == "golden" and "sampled_from" not in source
            and Path(source["path"]).resolve() == own_golden_file(kb.config).resolve()):
        # The whole of the KB's own golden set: its verdict is what `auto` searches by.
        recorded = record_eval_run(kb, run, gs.counts())
        if recorded is not None:
            run.source["channel"] = {k: recorded[k] for k in ("outcome", "channel", "reason")}

    reliability = None
    if calibrate and calib_setting is not None:
        outcomes = run.run(calib_setting.name).outcomes
        fit = fit_from_outcomes(outcomes, kb.config.embedder_id, k=run.k, folds=folds, seed=seed,
                                source=f"{source['kind']} {_shown(source['path'], kb.root)} "
                                f"({calib_setting.name})",
                                prior=shipped_prior(kb.config.embedder_id),
                                graph="" if calib_setting.channel == "off"
                                else calib_setting.channel)
        target = calibration_out or write_target(kb)
        fit.calibration.save(target)
        run.calibration, run.calibration_path = fit, str(target)
        reliability = (fit.heldout.tolist(), fit.labels.tolist(),
                       f"held-out ({fit.folds}-fold) calibrated confidence")
    elif in_force:
        base = next((r for r in run.runs if r.setting.is_baseline), run.runs[0])
        if all(o.confidence is not None for o in base.outcomes):
            reliability = ([float(o.confidence or 0.0) for o in base.outcomes],
                           [1.0 if o.covered else 0.0 for o in base.outcomes],
                           f"confidence in force ({base.setting.name})")
    if report_path:
        atomic_write(report_path, render_html(run, reliability))
    if json_:
        echo_json(run.to_dict())
        return
    _print_human(run)
    if in_force and not calibrate and calib_setting is not None:
        _print_confidence_check(run.run(calib_setting.name))
    stale = None if calibrate else describe_in_force(kb)["problem"]
    if stale:  # the KB's own calibration predates this version's features
        click.echo(click.style(f"warning: {stale}", fg="yellow"))
    if report_path:
        click.echo(f"report: {report_path}")


def _print_confidence_check(setting_run: Any) -> None:
    """How well the confidence in force fits this golden set, read against sampling noise.

    The shipped calibration was fitted on other KBs: on a KB unlike them (a few dozen
    chunks, say) it can be off, and this line says so and what to run.
    """
    from ..evaluation.calibration import ece_floor, floor_sentence

    ece = setting_run.metrics["all"].get("ece")
    if ece is None:
        return
    floor = ece_floor([float(o.confidence or 0.0) for o in setting_run.outcomes])
    line = f"confidence ({setting_run.setting.name}): {floor_sentence(floor, len(setting_run.outcomes), ece)}"
    if ece > floor.p90:
        line += "; `pnk eval --calibrate` fits one for this KB"
    click.echo(line)


def _explain_one(kb: KB, questions: Any, relevant: Any, qid: str, matrix: str | None,
                 json_: bool, source: dict[str, Any]) -> None:
    """``pnk eval --explain ID``: one question under each setting, side by side."""
    from ..evaluation.runner import explain_question, parse_matrix

    found = [q for q in questions if q.id == qid]
    if not found:
        raise click.UsageError(f"no question {qid!r} in {source['path']} "
                               f"({len(questions)} questions; ids like {questions[0].id!r})"
                               if questions else f"no question {qid!r}: the golden set is empty")
    channels = kb.graph_channels()
    default_name = kb.channel_name(installed=channels)
    spec = matrix or ("off" if default_name in ("off", "") else f"off,{default_name}")
    out = explain_question(kb, found[0], tuple(relevant.get(qid, ())), parse_matrix(spec, channels))
    out["source"] = source
    if json_:
        echo_json(out)
        return
    _print_explained(out)


def _print_explained(out: dict[str, Any]) -> None:
    from ..explain import hit_lines

    q = out["question"]
    click.echo(click.style(f"{q['id']} ({q['class']}): {q['text']}", bold=True))
    cols = out["settings"]
    paths = {d["doc_id"]: d["path"] for c in cols for d in c["documents"]}
    shown = [paths.get(u, u) for u in out["relevant"]]
    click.echo(f"relevant: {', '.join(shown) or 'none (unanswerable)'}   (* marks them)")
    width = max(24, min(44, (shutil.get_terminal_size((120, 20)).columns - 4) // len(cols) - 2))
    click.echo(("    " + "".join(f"{c['setting'][:width]:<{width + 2}}" for c in cols)).rstrip())
    for i in range(max(len(c["documents"]) for c in cols)):
        row = f"{i + 1:>3} "
        for c in cols:
            d = c["documents"][i] if i < len(c["documents"]) else None
            cell = "" if d is None else f"{'*' if d['relevant'] else ' '} {d['title']}"
            row += f"{cell[:width]:<{width + 2}}"
        click.echo(row.rstrip())
    for c in cols:
        conf = c["confidence"]
        click.echo(click.style(f"\n== {c['setting']} (channel {c['why'] or c['channel']}, "
                               f"confidence {'unknown' if conf is None else f'{conf:.2f}'})",
                               bold=True))
        for d in c["documents"]:
            if d["relevant"] or d["rank"] <= 2:
                click.echo(f"{d['rank']:>3}. {'*' if d['relevant'] else ' '} {d['title']}  "
                           + click.style(d["path"], fg="cyan"))
                for line in hit_lines(d["explain"]):
                    click.echo(f"        {line}")
        missing = [p for u, p in zip(out["relevant"], shown, strict=True)
                   if u not in {d["doc_id"] for d in c["documents"]}]
        if missing:
            click.echo(f"     not in the top {out['k']}: {', '.join(missing)}")


def _eval_mode(name: str) -> Any:
    """The installed eval mode ``name`` (``register_eval_modes``), or a one-line error."""
    from ..extras import not_installed
    from ..plugins import get_eval_modes

    modes = get_eval_modes()
    if name not in modes:
        missing = not_installed("eval mode", name)
        known = ", ".join(sorted(modes)) or "none installed"
        raise click.ClickException(f"pnk eval --{'deep' if name == 'deep' else 'mode ' + name}: "
                                   + (missing or f"unknown eval mode {name!r} (installed: {known})"))
    return modes[name]


def _shown(path: str, root: Path) -> str:
    """``path`` relative to the KB when inside it: a committed file names no machine paths."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).name


def _init_golden(kb_path: str | None, golden_path: Path | None, json_: bool) -> None:
    """``pnk eval --init``: write the starter golden set, never over an existing file."""
    from ..evaluation.golden import starter_golden

    kb = open_kb(kb_path)
    target = golden_path or kb.root / "golden" / "questions.yaml"
    if target.exists():
        raise click.UsageError(f"{target} already exists: edit it, or pass --golden NEWFILE")
    text, n = starter_golden(kb)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text)
    if json_:
        echo_json({"path": str(target), "questions": n})
        return
    click.echo(f"Wrote {target}: {n} starter questions (a document's title and a heading each).")
    click.echo("Rewrite them by reading the documents, add multi-hop and unanswerable ones, "
               "then run `pnk eval`.")


def _golden_kb(kb_path: str | None, golden_path: Path | None) -> KB:
    """``--kb``, else the KB enclosing the golden file, else the one enclosing the current folder."""
    if kb_path or golden_path is None:
        return open_kb(kb_path)
    try:
        return KB.open(find_kb_root(golden_path.expanduser().resolve().parent))
    except KBNotFound:
        return open_kb(None)


def _pct(v: Any) -> str:
    return "    –" if v is None else f"{100 * float(v):5.1f}"


def _ms(v: Any) -> str:
    return "    –" if v is None else f"{float(v):5.1f}"


def _print_human(run: Any) -> None:
    src = run.source
    sampled = f" (sample of {src['sampled_from']})" if src.get("sampled_from") else ""
    click.echo(click.style(f"{src['name']}", bold=True)
               + f"  {src['kind']} {src['path']}  ·  {src['questions']} questions{sampled}  ·  "
               f"k={run.k}  ·  {run.seconds:.1f}s  ·  confidence: {run.confidence_source}")
    name_w = max(12, *(len(r.setting.name) for r in run.runs)) + 2
    header = (f"{'':<{name_w}}{'n':>5} {'R@2':>5} {'R@5':>5} {'R@10':>5} {'allR5':>5} {'MRR':>5} "
              f"{'abst':>5} {'fAbst':>5} {'abstP':>5} {'p50ms':>5} {'p95ms':>5}  €/query")
    click.echo(click.style(header, dim=True))
    groups: list[tuple[str, Any]] = [(c, ("class", c)) for c in ("simple", "multi-hop", "unanswerable")]
    groups.append(("all", ("all", None)))
    types = sorted({t for r in run.runs for t in r.metrics.get("by_question_type", {})})
    groups += [(f"type {t}", ("type", t)) for t in types]
    for label, (kind, key) in groups:
        rows = []
        for r in run.runs:
            m = (r.metrics["all"] if kind == "all" else
                 r.metrics["by_class"].get(key) if kind == "class" else
                 r.metrics["by_question_type"].get(key))
            if m:
                rows.append(
                    f"  {r.setting.name:<{name_w - 2}}{m['n']:>5} {_pct(m['recall@2'])} "
                    f"{_pct(m['recall@5'])} {_pct(m['recall@10'])} {_pct(m['all_recall@5'])} "
                    f"{_pct(m['mrr'])} {_pct(m['abstain_rate'])} {_pct(m['false_abstain_rate'])} "
                    f"{_pct(m['abstain_precision'])} "
                    f"{_ms(m['latency_ms_p50'])} {_ms(m['latency_ms_p95'])}  "
                    f"€{m['cost_eur_per_query']:.2f}"
                )
        if rows:
            click.echo(click.style(label, bold=True))
            for row in rows:
                click.echo(row)
    e = run.embed_ms
    if e.get("p50") is not None:
        click.echo(click.style(f"query embedding (excluded from latency above): p50 {e['p50']:.1f} ms, "
                               f"p95 {e['p95']:.1f} ms", dim=True))
    reach = run.reach
    if reach is not None:
        if reach.available:
            click.echo(
                f"multi-hop reach from the fused seeds: ceiling {_pct(reach.ceiling).strip()}% "
                f"(all evidence {_pct(reach.ceiling_all).strip()}%); of the evidence the seeds miss, "
                f"{_pct(reach.reachable_share).strip()}% channel-reachable, "
                f"{_pct(reach.membership_only_share).strip()}% membership-only, "
                f"{_pct(reach.beyond_2hop_share).strip()}% beyond 2 hops"
            )
            for note in reach.notes:
                click.echo(f"  note: {note}")
        else:
            click.echo(f"multi-hop channel-reachable ceiling: {reach.reason}")
    for g in run.gates:
        color = {"pass": "green", "fail": "red"}.get(g.verdict, None)
        click.echo(f"gate {g.gate}: " + click.style(g.verdict, fg=color, bold=True) + f" — {g.summary}")
        for note in g.notes:
            click.echo(f"  note: {note}")
    chosen = src.get("channel")
    if chosen:
        click.echo(f"graph_channel auto: searches of {src['name']} now use {chosen['reason']}")
    if run.calibration is not None:
        fit = run.calibration
        before = "–" if fit.ece_before is None else f"{fit.ece_before:.3f}"
        click.echo(
            f"calibration: {len(fit.labels)} questions ({int(fit.labels.sum())} with the evidence in "
            f"the top {run.k}); held-out ECE {before} -> {fit.ece_after:.3f} ({fit.folds} folds; "
            f"before = {fit.before_label}); written to {run.calibration_path}"
        )
        if fit.floor is not None:
            from ..evaluation.calibration import floor_sentence

            click.echo(f"  {floor_sentence(fit.floor, len(fit.labels), fit.ece_after)}")
        if fit.in_force_ece is not None:
            click.echo(f"  (the calibration in force during the run: ECE {fit.in_force_ece:.3f}, "
                       "in-sample if it was fitted on these questions)")
