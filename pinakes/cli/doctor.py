"""``pnk doctor``: errors, warnings and nudges about a knowledge base."""

from __future__ import annotations

import sys

import click

from .common import channel_line, echo_json, json_option, kb_option, open_kb
from .group import cli

SHOW = 20  # findings shown per section in human output (--json has them all)


def _section(title: str, items: list[str], total: int, colour: str | None = None) -> None:
    if not total:
        return
    click.echo(click.style(f"{title} ({total})", bold=True, fg=colour))
    for item in items[:SHOW]:
        click.echo(f"  {item}")
    if total > SHOW:
        click.echo(f"  ... and {total - SHOW} more (see --json)")


@cli.command()
@kb_option
@json_option
def doctor(kb_path: str | None, json_: bool) -> None:
    """Check links, identities, sidecars and the index. Exits 1 only for errors."""
    kb = open_kb(kb_path)
    r = kb.doctor()
    if json_:
        echo_json(r)
        sys.exit(0 if r["ok"] else 1)
    click.echo(click.style(f"{r['kb']}", bold=True) + f"  ({r['root']})")
    st = r["store"]
    if not st.get("indexed") or not st.get("current", False):
        click.echo(click.style(f"error: index: {st.get('message')}", fg="red"))
        sys.exit(1)
    click.echo(f"  index      schema {st['schema_version']}, generation {st['generation']}, "
               f"{st['documents']} documents, last sync {st['last_sync']}")
    cov = r["coverage"]
    click.echo(f"  coverage   {cov['with_authored_links']}/{cov['documents']} documents "
               f"({cov['share']:.0%}) have an authored (sidecar) link in or out; "
               f"{cov['with_any_links']} have any link")
    forms = r.get("link_forms") or []
    if forms:
        parts = [f"{f['form']} {f['resolved']}/{f['links']}" for f in forms]
        click.echo(f"  links by form  {parts[0]} resolved" + "".join(f", {p}" for p in parts[1:]))
        for f in forms:
            if f.get("hint"):
                click.echo(click.style(f"  hint: {f['hint']}", fg="yellow"))
    if r.get("left_out"):
        from ..sync import left_out_hint

        click.echo(click.style(f"  hint: {left_out_hint(r['left_out'])}", fg="yellow"))
    for copy in r.get("site_copies") or []:
        click.echo(click.style(
            f"  hint: {copy['folder']}/ ({copy['what']}) is indexed, {copy['documents']} documents: a docs "
            f"site's copy of its pages answers every question once more; to leave it out, add "
            f"\"{copy['folder']}/**\" to exclude in pinakes.toml", fg="yellow"))
    if r.get("other_text"):
        from ..sync import other_text_hint

        click.echo(click.style(f"  hint: {other_text_hint(r['other_text'])}", fg="yellow"))
    if r.get("channel"):
        click.echo(f"  channel    {channel_line(r['channel'])}")
    from ..evaluation.calibration import in_force_line

    cal = r.get("calibration") or {}
    if cal.get("problem") or not cal.get("in_force"):  # said only when something is off (--json: always)
        click.echo(f"  confidence {in_force_line(cal)}")
    if cal.get("problem"):
        click.echo(click.style(f"  warning: {cal['problem']}", fg="yellow"))
    counts = r["counts"]
    _section("error: duplicate ids", [
        f"{d['id']}: {', '.join(d['paths'])}" + (
            f" (they share the sidecar {d['shared_sidecar']}: rename one, or leave its suffix out of "
            "[kb] include)" if d.get("shared_sidecar") else "") for d in r["duplicate_ids"]],
             len(r["duplicate_ids"]), "red")
    _section("dangling links", [f"{d['file']}:{d['line']}: {d['target']} ({d['reason']})"
                                for d in r["dangling"]], counts["dangling"], "yellow")
    _section("links to a moved document (Pinakes never edits a body: fix the text)",
             [f"{d['file']}:{d['line']}: {d['target']}: {d['message']}" for d in r.get("moved_links", [])],
             counts.get("moved_links", 0), "yellow")
    _section("orphan sidecars (their document is gone)", r["orphan_sidecars"],
             counts["orphan_sidecars"], "yellow")
    _section("front matter disagrees with the sidecar (the sidecar wins)",
             [f"{d['file']}: {d['field']}: front matter {d['front_matter']!r}, sidecar {d['sidecar']!r}"
              for d in r["disagreements"]], counts["disagreements"], "yellow")
    _section("front matter changed since `pnk adopt` (run it again: the front matter wins)",
             [f"{d['file']}: {d['field']}: front matter {d['front_matter']!r}, sidecar {d['sidecar']!r}"
              for d in r.get("adoption_drift", [])], counts.get("adoption_drift", 0), "yellow")
    _section("sidecar link entries without a target",
             [f"{d['file']}: entry {d['entry']}: {d['message']}" for d in r["bad_link_entries"]],
             counts["bad_link_entries"], "yellow")
    _section("sync problems", r["problems"], counts["problems"], "yellow")
    deep = r.get("uncommitted_deep_links", [])
    _section("links suggested by `pnk ask --deep` (origin: deep), not yet committed: review and commit",
             [f"{d['file']}: -> {d['to']} ({d['rel']}, transcript {d['transcript']})" for d in deep],
             len(deep))
    _section("documents with no links (consider `pnk link`)", r["zero_links"], counts["zero_links"])
    if r.get("hubs"):
        click.echo("  graph hubs (highest degree)")
        for h in r["hubs"]:
            click.echo(f"    {h['kind']:<9} {h['label']:<30} degree {h['degree']}")
    _section("tags on most documents (glue, not signal: consider narrower tags)",
             [f"{h['label']}: {h['degree']} documents ({h['share']:.0%})" for h in r.get("glue_tags", [])],
             len(r.get("glue_tags", [])), "yellow")
    verdict = "ok" if r["ok"] else f"{r['errors']} error{'s' if r['errors'] != 1 else ''}"
    click.echo(click.style(f"{verdict}, {r['warnings']} warning{'s' if r['warnings'] != 1 else ''}",
                           fg="green" if r["ok"] else "red"))
    if not r["ok"]:
        sys.exit(1)
