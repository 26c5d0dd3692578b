"""Link commands: ``pnk links`` (walk), ``pnk link`` and ``pnk unlink`` (edit sidecars)."""

from __future__ import annotations

from typing import Any

import click

from .common import echo_json, json_option, kb_option, open_kb
from .group import cli


def _arrow(direction: str, rel: str) -> str:
    return f"-> {rel}" if direction == "out" else f"<- {rel}"


@cli.command()
@click.argument("doc")
@kb_option
@click.option("--rel", help="Only links of this relation (e.g. cites, uses, links-to).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both",
              show_default=True, help="Follow outgoing links, incoming links, or both.")
@click.option("--depth", type=click.IntRange(min=1), default=1, show_default=True,
              help="Hops to walk (capped at 3; take one hop and look first).")
@click.option("--query", "-q", help="Rank neighbours by similarity to this text.")
@json_option
def links(doc: str, kb_path: str | None, rel: str | None, direction: str, depth: int,
          query: str | None, json_: bool) -> None:
    """Walk DOC's typed links: neighbours, the next hops not taken, dangling links.

    DOC is a path, ULID, pnk:// URI or exact title. --json prints exactly what
    the MCP tool pinakes_links returns.
    """
    kb = open_kb(kb_path)
    result = kb.walk_links(doc, rel=rel, direction=direction, depth=depth, query=query)
    if json_:
        echo_json(result.to_dict())
        return
    root = result.root
    click.echo(click.style(root["title"], bold=True) + click.style(f"  {root['path']}", fg="cyan"))
    children: dict[str, list[Any]] = {}
    for n in result.neighbours:
        children.setdefault(n.via, []).append(n)
    shown: set[str] = {root["doc_id"]}

    score_label = "sim" if result.ranked_by == "query" else "weight"

    def render(node: str, prefix: str) -> None:
        # One line per (document, relation); a link both ways shows as <->.
        kids: dict[tuple[str, str], list[Any]] = {}
        for n in children.get(node, []):
            kids.setdefault((n.doc_id, n.rel), []).append(n)
        rows = list(kids.values())
        for i, group in enumerate(rows):
            n = group[0]
            last = i == len(rows) - 1
            where = f"[{n.kb}] {n.path}" if n.kb else n.path
            arrow = f"<-> {n.rel}" if len(group) > 1 else _arrow(n.direction, n.rel)
            click.echo(
                f"{prefix}{'└─ ' if last else '├─ '}{arrow}  "
                + click.style(n.title, bold=True) + click.style(f"  {where}", fg="cyan")
                + click.style(f"  {score_label} {n.score:.3g}", dim=True)
            )
            if n.doc_id not in shown:
                shown.add(n.doc_id)
                render(n.doc_id, prefix + ("   " if last else "│  "))

    render(root["doc_id"], "")
    if not result.neighbours:
        click.echo("  (no links" + (f" of relation {rel!r}" if rel else "") + ")")
    if result.frontier:
        click.echo(f"next hops not taken ({len(result.frontier)}):")
        for f in result.frontier[:10]:
            click.echo(f"  {f['rel']} {f['title']}  " + click.style(f["path"], fg="cyan"))
        if len(result.frontier) > 10:
            click.echo(f"  ... and {len(result.frontier) - 10} more (see --json)")
    if result.unresolved:
        click.echo("unresolved:")
        for u in result.unresolved:
            click.echo(click.style(f"  {u['target']}  ({u['reason']})", fg="yellow"))
    facts = [f"depth {result.depth}",
             "confidence " + ("unknown" if result.confidence is None else f"{result.confidence:.2f}")]
    if result.truncated:
        facts.append("truncated: narrow with --rel or --direction")
    click.echo(click.style(" · ".join(facts), dim=True))
    if result.note:
        click.echo(click.style(f"note: {result.note}", fg="yellow"))


@cli.command()
@click.argument("src")
@click.argument("dst")
@kb_option
@click.option("--rel", required=True, help="The relation, e.g. cites, uses, extends, compares_with.")
@click.option("--note", help="A short note kept with the link.")
@click.option("--allow-dangling", is_flag=True, help="Link even if DST is not (yet) a known document.")
@json_option
def link(src: str, dst: str, kb_path: str | None, rel: str, note: str | None,
         allow_dangling: bool, json_: bool) -> None:
    """Add a typed link SRC -> DST to SRC's sidecar, then update the index.

    SRC and DST are paths, ULIDs, pnk:// URIs or exact titles; DST may be a
    document of another fleet KB (by id). Running it twice adds nothing;
    comments and key order in the sidecar are kept.
    """
    kb = open_kb(kb_path)
    out = kb.link(src, dst, rel, note=note, allow_dangling=allow_dangling)
    if json_:
        echo_json(out)
        return
    line = f"{out['src']['path']} -> {out['to']} ({out['rel']})"
    if out["action"] == "added":
        click.echo(f"Linked {line} in {out['sidecar']}.")
    elif out["action"] == "updated":
        click.echo(f"Updated the note of {line} in {out['sidecar']}.")
    else:
        click.echo(f"Already linked: {line}; nothing to do.")
    if out["dst"].get("dangling"):
        click.echo(click.style(f"  {out['to']} is not a known document yet (dangling)", fg="yellow"))
    if out["sync"]:
        click.echo(f"{kb.name}: {out['sync']}")


@cli.command()
@click.argument("src")
@click.argument("dst")
@kb_option
@click.option("--rel", help="Only remove links of this relation (default: every link to DST).")
@json_option
def unlink(src: str, dst: str, kb_path: str | None, rel: str | None, json_: bool) -> None:
    """Remove SRC's sidecar links to DST, then update the index.

    Body links are the document's own text and are never edited.
    """
    kb = open_kb(kb_path)
    out = kb.unlink(src, dst, rel=rel)
    if json_:
        echo_json(out)
        return
    if out["action"] == "absent":
        click.echo(f"{out['sidecar']} has no link to {dst}" + (f" of relation {rel!r}" if rel else "")
                   + "; nothing to do.")
        return
    for r in out["removed"]:
        click.echo(f"Unlinked {out['src']['path']} -> {r['to']} ({r['rel']}) in {out['sidecar']}.")
    if out["sync"]:
        click.echo(f"{kb.name}: {out['sync']}")
