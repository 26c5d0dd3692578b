"""Core commands: init, sync, status, search, show, plugins."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from ..kb import KB
from .common import (  # noqa: F401  (kb_option, json_option, open_kb, echo_json: imported from here by older plugins)
    Progress,
    channel_line,
    echo_json,
    echo_sync_report,
    json_option,
    kb_option,
    open_kb,
    scope_of,
    scope_options,
)
from .group import cli


@cli.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--name", help="KB name (a slug, unique in your fleet). Default: the folder name.")
@click.option("--template", type=click.Choice(["research-papers", "software-docs"]),
              help="Add the template's seed schema ([schema]: entity, relation and attribute types), "
                   "quoted verbatim in every `pnk ask --deep` prompt.")
def init(directory: Path, name: str | None, template: str | None = None) -> None:
    """Make DIRECTORY (default: here) a knowledge base: writes pinakes.toml.

    Also adds `.pinakes/` (the derived, disposable index) to .gitignore.
    Refuses to overwrite an existing pinakes.toml.
    """
    kb = KB.init(directory, name=name, template=template)
    click.echo(f"Created {kb.root / 'pinakes.toml'} (kb name: {kb.name}).")
    include = list(kb.config.kb["include"])
    if include != ["**/*.md"]:  # KB.init found .mdx (or .markdown) pages and lists them
        click.echo(f"Found Markdown files besides .md; pinakes.toml includes them: include = {json.dumps(include)}")
    else:
        from ..fsutil import other_text_files, walk_kb
        from ..sync import other_text_hint

        exclude = list(kb.config.kb["exclude"])
        if next(walk_kb(kb.root, include, exclude, []), None) is None:
            hint = other_text_hint(other_text_files(kb.root, include, exclude))
            click.echo(f"Note: {hint}." if hint else "Note: no Markdown file here yet.")
    from ..fsutil import copies_in_words, site_copies

    copies = site_copies(kb.root)
    if copies:
        click.echo(f"Left out {copies_in_words(copies)}: a docs site's copies of its pages, which would "
                   "answer every question once per version and language. To index them, take them "
                   "out of exclude in pinakes.toml.")
    click.echo("Commit pinakes.toml, your documents and their .pnk.yaml sidecars; .pinakes/ (the index) "
               "is derived and git-ignored. `pnk ask` records what it spends in .pinakes-ledger/: "
               "commit that too.")
    click.echo("Next: `pnk sync` to index it, then `pnk search \"...\"`.")


@cli.command()
@kb_option
@click.option("--rebuild", is_flag=True,
              help="Drop the index and rebuild it (embeddings stay cached). Moves and swaps since "
                   "the last sync are settled first, from the old index.")
@click.option("--wait", default=30.0, show_default=True, help="Seconds to wait for another running sync.")
@click.option("-q", "--quiet", is_flag=True, help="Print problems and the summary only.")
@click.option("--watch", is_flag=True,
              help="Keep syncing as files change, until Ctrl-C (docs/watch.md). With --json: one "
                   "JSON object per line per sync.")
@json_option
def sync(kb_path: str | None, rebuild: bool, wait: float, quiet: bool, watch: bool,
         json_: bool) -> None:
    """Index what changed since the last sync. Free: no LLM ever runs here.

    Unchanged files cost a stat; changed ones are re-chunked and re-embedded
    (cached vectors are reused). Documents without a sidecar get one with a
    fresh id; a document moved without its sidecar (git mv, mv) takes its old
    one along and keeps its id. Problems (malformed files, links out of the
    KB, ...) are listed and never stop the rest of the KB from syncing.

    With graph_channel = "auto" and a golden set (golden/questions.yaml), the
    sync then measures which graph channel the set's own gate supports, when
    that verdict is missing or out of date (seconds; docs/configuration.md).
    """
    kb = open_kb(kb_path)
    if watch:
        from .watching import sync_watch

        if rebuild:
            raise click.UsageError("--rebuild and --watch: rebuild first, then watch")
        return sync_watch(kb, quiet, json_)
    progress = Progress(enabled=sys.stderr.isatty() and not json_ and not quiet)
    try:
        report = kb.sync(rebuild=rebuild, progress=progress, lock_wait=wait)
    finally:
        progress.close()
    if json_:
        echo_json(report.to_dict())
        return
    echo_sync_report(report, f"{kb.name}: {report.summary()}", quiet)


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


@cli.command()
@kb_option
@json_option
def status(kb_path: str | None, json_: bool) -> None:
    """Documents, chunks, vectors, store size, last sync, schema, embedder, graph channel, calibration.

    The channel row says which graph channel searches use and why (the KB's
    own golden-set verdict under graph_channel = "auto", and how current it is);
    the confidence row, which calibration turns evidence into a confidence, and
    whether the KB's own went stale. An index that another version or setting
    built says so, and that `pnk sync` rebuilds it.
    """
    from ..channel_choice import describe as channel_state
    from ..embcache import describe
    from ..errors import NotSynced
    from ..evaluation.calibration import describe_in_force, in_force_line

    kb = open_kb(kb_path)
    try:
        info = kb.status()
    except NotSynced as exc:
        # An index another version or setting built (or one a sync is still building) is a
        # state to report, not a failure: after an upgrade, status says what to run.
        info = {"name": kb.name, "root": str(kb.root), "indexed": False, "index_note": str(exc)}
    if info.get("indexed"):
        info["channel"] = channel_state(kb)
        info["calibration"] = describe_in_force(kb)
    info["embedding_cache"] = cache = describe()  # per user, shared by every KB (`pnk cache`)
    info["cache_bytes"] = cache["bytes"]
    if json_:
        echo_json(info)
        return
    click.echo(f"{info['name']}  ({info['root']})")
    cache_line = (f"{cache['entries']} vectors, {_human_bytes(cache['bytes'])} of "
                  f"{_human_bytes(cache['max_bytes'])} max, in {cache['path']}")
    if not info.get("indexed"):
        click.echo(f"  {info.get('index_note') or 'not indexed yet: run `pnk sync`'}")
        click.echo(f"  {'cache':<10} {cache_line}")
        return
    rows = [
        ("documents", info["documents"]),
        ("chunks", info["chunks"]),
        ("vectors", f"{info['vectors']} x {info['dim']}d"
                    + (f" (embedding in progress: {info['vectors']:,} of {info['chunks']:,} chunks;"
                       " an interrupted `pnk sync` resumes it)" if info.get("embedding_pending") else "")),
        ("store", f"{_human_bytes(info['store_bytes'])} (+ {_human_bytes(info['cache_bytes'])} embedding cache)"),
        ("last sync", info["last_sync"]),
        ("cache", cache_line),
        ("embedder", info["embedder"]),
        ("schema", info["schema"]),
        ("problems", f"{info['problems']} (see `pnk sync` or `pnk doctor`)" if info["problems"] else 0),
    ]
    if info.get("channel"):
        rows.append(("channel", channel_line(info["channel"])))
    if info.get("calibration"):
        cal = info["calibration"]
        rows.append(("confidence", in_force_line(cal) + (f"\n{'':13}warning: {cal['problem']}" if cal["problem"] else "")))
    for key, mark in (("folders", ""), ("tags", "#")):  # what --in and --tag can take
        if info.get(key):
            more = info[f"{key}_total"] - len(info[key])
            rows.append((key, ", ".join(f"{mark}{k} {v}" for k, v in info[key].items())
                         + (f", +{more} more" if more > 0 else "")))
    if info.get("edges_by_kind"):
        rows.append(("nodes", ", ".join(f"{k} {v}" for k, v in sorted(info["nodes_by_kind"].items()))))
        rows.append(("edges", ", ".join(f"{k} {v}" for k, v in sorted(info["edges_by_kind"].items()))))
    for label, value in rows:
        click.echo(f"  {label:<10} {value}")


def _highlight(snippet: str, spans: list[tuple[int, int]] | list[list[int]]) -> str:
    out = []
    last = 0
    for a, b in spans:
        out.append(snippet[last:a])
        out.append(click.style(snippet[a:b], bold=True, fg="yellow"))
        last = b
    out.append(snippet[last:])
    return "".join(out)


@cli.command()
@click.argument("query")
@click.option("--kb", "kb_paths", multiple=True, metavar="PATH|NAME|all",
              help="Knowledge base(s) to search: a folder or fleet name, `all` for the whole "
                   "fleet; repeatable (default: $PINAKES_KB, else walk up to pinakes.toml).")
@click.option("-k", "k", type=click.IntRange(1, 50),
              help="How many documents (chunks with --chunks) (default: [retrieval] k).")
@click.option("--entity", "entities", multiple=True, metavar="X",
              help="An exact name or phrase to boost lexically (repeatable).")
@click.option("--concept", "concepts", multiple=True, metavar="Y",
              help="A concept blended into the query's meaning (repeatable).")
@click.option("--channel", help="Graph channel for this query: off, auto (the default: ppr when installed) or an installed one (e.g. expand).")
@scope_options
@click.option("--chunks", "chunks", is_flag=True,
              help="List the k best chunks (sections) one by one, as the MCP tool returns them, "
                   "instead of grouping them by document.")
@click.option("--explain", "explain", is_flag=True,
              help="Show why each hit is there: what the lexical, dense, fusion, graph and prior "
                   "stages gave it (the graph's seeds and path), and the confidence's features.")
@json_option
def search(query: str, kb_paths: tuple[str, ...], k: int | None, entities: tuple[str, ...],
           concepts: tuple[str, ...], channel: str | None, chunks: bool, json_: bool,
           explain: bool = False, **scope_args: Any) -> None:
    """Hybrid search: BM25 and embeddings together, fused; offline and free.

    Shows the k best documents, each at its best-matching section, with the
    other sections that matched listed under it; --chunks lists sections one
    by one instead. --json keeps `hits` (the k best chunks, the MCP tool's
    shape) and adds `documents` (the grouping), unless --chunks is given.
    --explain adds each stage's numbers (`explain` in --json), in the order
    the search ran them; the ranking is the same. --in, --tag, --since,
    --until and --not-in search only part of the KB (`--in journal --since
    2024-03 --not-in journal/private`); `scope` in --json says how many
    documents that was.

    The last lines give a calibrated confidence that the hits hold the
    answer. Under [retrieval] abstain_below the search abstains and says which
    part of the question the notes do not support ("found 'French press',
    nothing on 'invented'"): rephrase that part, or take it that the notes
    lack it.
    """
    from ..fleet import open_kbs, search_many
    from ..search import DOCUMENT_CHUNKS, documents_result

    refs = list(kb_paths) or ([os.environ["PINAKES_KB"]] if os.environ.get("PINAKES_KB") else [])
    skipped: list[dict[str, str]] = []
    kbs = open_kbs(refs, skipped=skipped)
    want = k or int(kbs[0].config.retrieval["k"])
    scope = scope_of(kbs, **scope_args)

    def warn(result: Any) -> None:
        for s in getattr(result, "skipped", ()):  # one bad KB of a fleet search: a warning
            click.echo(f"pnk search: warning: skipped {s['kb']}: {s['reason']}", err=True)

    def notice(result: Any) -> None:
        if getattr(result, "notice", None):  # a first sync is still embedding: say what is missing
            click.echo(click.style(f"Note: {result.notice}", fg="yellow"), err=True)

    if chunks:
        result = search_many(kbs, query, k=k, entities=entities, concepts=concepts, channel=channel,
                             skipped=skipped, explain=explain, scope=scope)
        warn(result)
        notice(result)
        if json_:
            echo_json(result.to_dict())
            return
        _print_query_explain(result)
        _print_chunks(result, several=len(kbs) > 1)
        return
    # More chunks than documents shown, so k documents fill; the graph channel keeps its k seeds.
    raw = search_many(kbs, query, k=max(want, DOCUMENT_CHUNKS), entities=entities,
                      concepts=concepts, channel=channel, graph_roots=want, skipped=skipped,
                      explain=explain, scope=scope)
    warn(raw)
    notice(raw)
    grouped = documents_result(raw, want)
    if json_:
        echo_json(grouped.to_dict())
        return
    if not grouped.documents:
        click.echo("No matches.")
        return
    _print_query_explain(raw)
    for i, doc in enumerate(grouped.documents, 1):
        _print_hit(i, doc.best, several=len(kbs) > 1)
        if doc.more:
            click.echo(click.style("    " + _more_sections(doc), dim=True))
    _print_confidence(grouped.chunks)


def score_text(score: float) -> str:
    """A hit's score for people: four decimals, or two significant digits when smaller.

    A graph channel's final ranking leaves the hits far below its walk with scores
    like 2e-06; printed as "0.0000" they read as no match at all, and tie in print
    where the ranking does not.
    """
    return f"{score:.4f}" if score == 0 or abs(score) >= 0.001 else f"{score:.2g}"


def _print_hit(i: int, hit: Any, several: bool) -> None:
    heading = " > ".join(hit.heading_path)
    ranks = " ".join(f"{name}#{rank}" if rank else f"{name}:-" for name, rank in hit.ranks.items())
    where = f"[{hit.kb}] " if several else ""
    click.echo(
        click.style(f"{i:>2}. {hit.title}", bold=True)
        + click.style(f"  {where}{hit.path}:{hit.start_line}", fg="cyan")
    )
    if heading:
        click.echo(f"    § {heading}")
    click.echo("    " + _highlight(hit.snippet, hit.highlights))
    click.echo(click.style(f"    score {score_text(hit.score)}  {ranks}", dim=True))
    if hit.explain is not None:
        from ..explain import hit_lines

        for line in hit_lines(hit.explain):
            click.echo(click.style(f"      {line}", fg="blue"))


def _print_query_explain(result: Any) -> None:
    """``--explain``: the query's stages before the hits (one block per KB for a fleet)."""
    from ..explain import query_lines

    explain = result.explain
    if explain is None:
        return
    per_kb = explain.get("by_kb") or {result.kb: explain}
    for name, one in per_kb.items():
        if len(per_kb) > 1:
            click.echo(click.style(f"[{name}]", bold=True))
        for line in query_lines(one):
            click.echo(click.style(line, fg="blue"))
    click.echo()


def _section_label(title: str, heading_path: list[str]) -> str:
    """A section's heading without the document's own title (its H1), which is already shown."""
    path = list(heading_path)
    if path and path[0].strip().casefold() == title.strip().casefold():
        path = path[1:]
    return " > ".join(path) or "(intro)"


def _more_sections(doc: Any, show: int = 3) -> str:
    """``+2 more sections: History (line 53) · Limits (line 62)``: the document's other matches."""
    labels: list[str] = []
    seen: set[str] = set()
    for h in doc.more:
        label = _section_label(doc.title, h.heading_path)
        if label not in seen:
            seen.add(label)
            labels.append(f"{label} (line {h.start_line})")
    n = len(labels)  # distinct sections: a long section split in two chunks counts once
    head = f"+{n} more section{'s' if n != 1 else ''}: "
    rest = f" · +{len(labels) - show} more" if len(labels) > show else ""
    return head + " · ".join(labels[:show]) + rest


def _print_chunks(result: Any, several: bool) -> None:
    if not result.hits:
        click.echo("No matches.")
        return
    for i, hit in enumerate(result.hits, 1):
        _print_hit(i, hit, several)
    _print_confidence(result)


def _print_confidence(result: Any) -> None:
    conf = "unknown" if result.confidence is None else f"{result.confidence:.2f}"
    line = f"confidence: {conf}"
    if result.abstained:
        why = getattr(result, "reason", None) or "nothing here looks good enough"
        line += f" (abstains: {why})"
    click.echo(click.style(line, dim=True))
    scope = getattr(result, "scope", None)
    if scope:
        from ..scope import scope_words

        n = scope["documents"]
        click.echo(click.style(f"searched {n} document{'s' if n != 1 else ''} {scope_words(scope)}",
                               dim=True))
    if getattr(result, "channel_reason", ""):
        click.echo(click.style(f"channel {result.channel_reason}", dim=True))


@cli.command()
@click.argument("doc")
@kb_option
@json_option
def show(doc: str, kb_path: str | None, json_: bool) -> None:
    """Show one document: metadata, sections, links. DOC is a ULID, path or exact title."""
    kb = open_kb(kb_path)
    info = kb.show(doc)
    if json_:
        echo_json(info)
        return
    click.echo(click.style(info["title"], bold=True))
    click.echo(f"  id       {info['doc_id']}{'  (provisional)' if info['provisional_id'] else ''}")
    click.echo(f"  path     {info['path']}")
    click.echo(f"  sidecar  {info['sidecar']}")
    tags = [*info["tags"], *(f"#{t}" for t in info.get("inline_tags", []))]
    if tags:
        click.echo(f"  tags     {', '.join(tags)}")
    if info.get("dated"):  # what --since and --until read
        first, last = info["dated"]
        click.echo(f"  dated    {first if first == last else f'{first} to {last}'}")
    desc = info["front_matter"].get("description") if isinstance(info["front_matter"], dict) else None
    if desc:
        click.echo(f"  about    {desc}")
    for problem in info["problems"]:
        click.echo(click.style(f"  problem  {problem}", fg="yellow"))
    click.echo("  sections")
    for s in info["sections"]:
        heading = " > ".join(s["heading_path"]) or "(preamble)"
        click.echo(f"    {s['ordinal']:>3}  {heading}  (lines {s['lines'][0]}-{s['lines'][1]})")
    links = info.get("links") or []
    if links and not info.get("outgoing"):
        click.echo("  links")
        for link in links:
            click.echo(f"    {link.get('rel', 'links-to')} -> {link.get('to')}")
    for key in ("outgoing", "incoming"):
        if info.get(key):
            click.echo(f"  {key}")
            for link in info[key]:
                click.echo(f"    {link}")


@cli.command(name="plugins")
@click.option("--all", "all_", is_flag=True, help="Include the built-in default plugins.")
@json_option
def plugins_cmd(all_: bool, json_: bool) -> None:
    """List installed plugins, their versions and what each registers."""
    from .. import plugins

    regs = plugins.registrations()
    infos = plugins.plugin_infos(include_defaults=all_)
    data = [
        {
            "name": info.name,
            "version": info.version,
            "default": info.default,
            "hooks": info.hooks,
            "registers": {k: v for k, v in regs.get(info.name, {}).items() if v},
            **({"error": info.error} if info.error else {}),
        }
        for info in infos
    ]
    if json_:
        echo_json(data)
        return
    if not data:
        click.echo("No plugins installed (`pnk plugins --all` shows the built-in ones).")
        return
    for p in data:
        version = f" {p['version']}" if p["version"] else ""
        tag = " (built-in)" if p["default"] else ""
        click.echo(click.style(f"{p['name']}{version}{tag}", bold=True))
        if p.get("error"):
            click.echo(click.style(f"  failed to load: {p['error']}", fg="red"))
            continue
        for hook, ids in p["registers"].items():
            click.echo(f"  {hook}: {', '.join(ids)}")
        others = [h for h in p["hooks"] if h not in p["registers"]]
        if others:
            click.echo(f"  hooks: {', '.join(others)}")
    missing = _missing_extras()
    if missing:
        click.echo("Not installed: " + "; ".join(f"{extra} ({', '.join(names)})"
                                                  for extra, names in missing.items()))


def _missing_extras() -> dict[str, list[str]]:
    """``pip install 'pinakes[extra]'`` -> what it would add, for extras not installed."""
    import importlib.metadata

    from ..extras import PROVIDERS, install_command

    out: dict[str, list[str]] = {}
    for names in PROVIDERS.values():
        for name, (dist, extra) in names.items():
            try:
                importlib.metadata.distribution(dist)
            except importlib.metadata.PackageNotFoundError:
                out.setdefault(install_command(extra), [])
                if name not in out[install_command(extra)]:
                    out[install_command(extra)].append(name)
    return out
