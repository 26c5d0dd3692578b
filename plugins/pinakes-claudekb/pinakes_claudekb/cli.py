"""``pnk adopt``: the command this plugin adds to the ``pnk`` command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


def add_commands(cli: click.Group) -> None:
    """Register ``adopt`` on the top-level ``pnk`` group (called by ``register_commands``)."""

    @cli.command()
    @click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
    @click.option("--name", help="Fleet name for the KB (a slug). Default: `name` in kb.yml.")
    @click.option("--dry-run", is_flag=True, help="Print every file adoption would write; write nothing.")
    @click.option("--no-sync", is_flag=True, help="Do not index the KB after adopting it.")
    @click.option("json_", "--json", is_flag=True, help="Print JSON for scripts.")
    def adopt(path: Path, name: str | None, dry_run: bool, no_sync: bool, json_: bool) -> None:
        """Adopt the knowledge base at PATH (a ClaudeKB: kb.yml + docs/) into Pinakes.

        \b
        Writes pinakes.toml and one sidecar per page (in .pinakes-meta/, outside
        docs/), each atomically; never a page, never a blueprint-owned file.
        The KB joins the fleet under its kb.yml name, then is indexed.
        Running it again changes nothing unless the front matter changed.
        """
        from pinakes.errors import PinakesError
        from pinakes.plugins import get_importers, importer_for

        importer = importer_for(path.resolve())
        if importer is None:
            known = ", ".join(sorted(get_importers())) or "none installed"
            raise PinakesError(f"{path}: no installed importer recognises this folder "
                               f"(importers: {known}; a ClaudeKB has kb.yml and docs/)")
        adoption = importer.adopt(path, name=name, dry_run=dry_run)
        report = None
        if not dry_run and not no_sync:
            from pinakes import KB

            kb = KB.open(adoption.root)
            try:
                report = kb.sync()
            finally:
                kb.close()
        data = adoption.to_dict()
        data["sync"] = report.to_dict() if report is not None else None
        if json_:
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
            return
        _print(data, report.summary() if report is not None else None)


def _print(data: dict[str, Any], sync_summary: str | None) -> None:
    """The human report: every file written (or, dry, to be written), then what happened."""
    dry = data["dry_run"]
    statuses = data["statuses"]
    with_fm = sum(statuses.values())
    bits = [f"{data['pages']} pages", f"{with_fm} with front matter"]
    bits += [f"{n} {status}" for status, n in statuses.items() if status not in ("none", "published")]
    click.echo(f"ClaudeKB {data['kb']!r} at {data['root']} ({', '.join(bits)})")
    verb = {"create": "would create" if dry else "created", "update": "would update" if dry else "updated"}
    for w in data["writes"]:
        click.echo(f"  {verb[w['action']]:<14} {w['path']}")
    fleet = data["fleet"]
    if fleet["action"] == "register":
        click.echo(f"  {'would register' if dry else 'registered':<14} fleet: {fleet['name']} -> {fleet['path']}")
    n = len(data["writes"])
    if dry:
        click.echo(f"Dry run: would write {n} file{'s' if n != 1 else ''} "
                   f"({data['unchanged']} up to date); nothing was written.")
    elif n:
        click.echo(f"Wrote {n} file{'s' if n != 1 else ''} ({data['unchanged']} up to date); "
                   f"no page and none of the {len(data['blueprint_files'])} blueprint-owned files "
                   "was touched.")
    else:
        click.echo(f"Nothing to write: pinakes.toml and all {data['unchanged'] - 1} sidecars are "
                   "up to date.")
    for note in data["notes"]:
        click.echo(f"note: {note}")
    if sync_summary:
        click.echo(f"Indexed: {sync_summary}")
        click.echo(f"Next: pnk search \"...\" --kb {data['kb']}   (or --kb all across the fleet), "
                   f"pnk doctor --kb {data['kb']}")
