"""``pnk fleet``: register knowledge bases by name (docs/links.md, "The fleet")."""

from __future__ import annotations

import click

from .common import echo_json, json_option
from .group import cli


@cli.group(invoke_without_command=True)
@click.pass_context
def fleet(ctx: click.Context) -> None:
    """Knowledge bases known by name: `add NAME PATH`, `list` (the default), `remove NAME`.

    Names work wherever --kb is accepted; `--kb all` searches every one, and
    pnk:// links resolve across all of them. The registry is fleet.toml in
    the user config folder (PINAKES_USER_PATH overrides the folder).
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(fleet_list, json_=False)


@fleet.command(name="add")
@click.argument("name")
@click.argument("path", type=click.Path(file_okay=False))
def fleet_add(name: str, path: str) -> None:
    """Register the knowledge base at PATH as NAME."""
    from .. import fleet as fleet_mod

    folder = fleet_mod.add(name, path)
    click.echo(f"Registered {name} -> {folder}")


@fleet.command(name="list")
@json_option
def fleet_list(json_: bool) -> None:
    """List registered knowledge bases and whether each is indexed."""
    from .. import fleet as fleet_mod

    data = fleet_mod.describe()
    if json_:
        echo_json(data)
        return
    if not data:
        click.echo("The fleet is empty: register a KB with `pnk fleet add NAME PATH`.")
        click.echo(f"(registry: {fleet_mod.registry_path()})")
        return
    width = max(len(d["name"]) for d in data)
    for d in data:
        if not d["exists"]:
            state = click.style("missing: no pinakes.toml there", fg="red")
        elif d.get("documents") is None:
            state = click.style("not indexed (run `pnk sync` there)", fg="yellow")
        else:
            state = f"{d['documents']} documents"
        click.echo(f"{d['name']:<{width}}  {d['path']}  {state}")


@fleet.command(name="remove")
@click.argument("name")
def fleet_remove(name: str) -> None:
    """Forget NAME (the folder itself is untouched)."""
    from .. import fleet as fleet_mod

    folder = fleet_mod.remove(name)
    click.echo(f"Removed {name} (was {folder}); its files are untouched.")
