"""``pnk cache``: the per-user embedding cache every KB on this machine shares."""

from __future__ import annotations

from typing import Any

import click

from .common import echo_json, json_option
from .group import cli


def _size(value: str | None) -> int | None:
    from ..embcache import parse_size
    from ..errors import ConfigError

    if value is None:
        return None
    try:
        return parse_size(value)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-size") from None


@cli.command()
@click.option("--prune", is_flag=True,
              help="Delete the least recently used vectors until the cache is under its maximum "
                   "size, and give the space back to the disk.")
@click.option("--max-size", metavar="SIZE",
              help="With --prune: the size to prune to, e.g. 200M or 2G "
                   "(default: $PINAKES_CACHE_MAX_SIZE, else 1G).")
@click.option("--clear", is_flag=True, help="Delete every cached vector (the next syncs re-embed).")
@click.option("--model", metavar="ID", help="With --clear: only this embedder's vectors.")
@json_option
def cache(prune: bool, max_size: str | None, clear: bool, model: str | None, json_: bool) -> None:
    """Show, prune or clear the embedding cache.

    \b
    Vectors are kept per user, by embedder and content hash, in
    $PINAKES_CACHE_DIR, else $XDG_CACHE_HOME/pinakes, else ~/.cache/pinakes.
    Every KB shares them: deleting a KB's .pinakes/ folder, `pnk sync
    --rebuild`, renames and copies of a KB re-embed nothing. The cache prunes
    itself (least recently used first) past $PINAKES_CACHE_MAX_SIZE (default
    1G); deleting it only costs the time to embed again.
    """
    from ..embcache import EmbeddingCache, describe, human_bytes

    if prune and clear:
        raise click.UsageError("use either --prune or --clear, not both")
    if max_size is not None and not prune:
        raise click.UsageError("--max-size is only used with --prune")
    if model is not None and not clear:
        raise click.UsageError("--model is only used with --clear")
    limit = _size(max_size)
    action: dict[str, Any] = {}
    if prune or clear:
        with EmbeddingCache() as store:
            before = store.file_bytes()
            if clear:
                action = {"action": "clear", "model": model, "deleted": store.clear(model)}
            else:
                action = {"action": "prune", "max_bytes": limit or store.max_size,
                          "deleted": store.prune(limit, compact=True)}
            action["freed_bytes"] = max(0, before - store.file_bytes())
    info = describe()
    if json_:
        echo_json({**info, **({"done": action} if action else {})})
        return
    if action:
        what = "cleared" if clear else "pruned"
        scope = f" of {model}" if model else ""
        click.echo(f"{what.capitalize()} {action['deleted']} vectors{scope}; "
                   f"{human_bytes(action['freed_bytes'])} freed.")
    click.echo(f"embedding cache  {info['path']}")
    if not info["exists"]:
        click.echo("  empty (it fills on the next `pnk sync`)")
        return
    per = f", {info['bytes_per_entry']} B per vector" if info["bytes_per_entry"] else ""
    click.echo(f"  {info['entries']} vectors, {human_bytes(info['bytes'])} on disk "
               f"(max {human_bytes(info['max_bytes'])}{per})")
    for m in info["models"]:
        click.echo(f"  {m['model']:<28} {m['entries']} vectors")
