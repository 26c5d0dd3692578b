"""``pnk serve``: the MCP server, over stdio (default) or streamable HTTP."""

from __future__ import annotations

import os

import click

from .group import cli

DEFAULT_PORT = 8765


@cli.command()
@click.option("--kb", "kb_refs", multiple=True, metavar="NAME|PATH",
              help="A knowledge base to serve: a folder or a fleet name (repeatable). "
                   "Default: the KB enclosing the current folder.")
@click.option("--all", "all_", is_flag=True, help="Serve every KB registered in the fleet.")
@click.option("--allow-writes", is_flag=True,
              help="Also offer pinakes_link and pinakes_unlink: agents may record typed links "
                   "in sidecars (never in a document's text). Without it the server is read-only.")
@click.option("--http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind with --http. Anything but loopback requires --token.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535),
              help="Port to bind with --http.")
@click.option("--token", envvar="PINAKES_MCP_TOKEN", metavar="T",
              help="With --http, require `Authorization: Bearer T` on every request "
                   "(env: PINAKES_MCP_TOKEN, which keeps it out of the process list).")
@click.option("--watch", is_flag=True,
              help="Also keep the served KBs synced as their files change (docs/watch.md).")
@click.pass_context
def serve(ctx: click.Context, kb_refs: tuple[str, ...], all_: bool, http: bool, host: str,
          port: int, token: str | None, watch: bool, allow_writes: bool) -> None:
    """Serve knowledge bases to AI agents over MCP (read-only unless --allow-writes).

    \b
    Tools: pinakes_search, pinakes_links, pinakes_read, pinakes_kbs;
    with --allow-writes also pinakes_link, pinakes_unlink (sidecars only).
    Claude Code:  claude mcp add pinakes -- pnk serve --kb /path/to/kb
    HTTP:         pnk serve --http --port 8765 --token "$SECRET"

    A `pnk sync` while the server runs is picked up on the next call; no
    restart is needed (with --watch the server syncs by itself as files
    change). Logs go to stderr; stdout belongs to the protocol.
    """
    from ..fleet import ALL, label, open_kbs
    from ..mcp_server import PinakesServer, is_loopback, run_http, run_stdio

    source = ctx.get_parameter_source
    if not http:
        given = [f"--{name}" for name in ("host", "port", "token")
                 if source(name) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"{', '.join(given)}: only used with --http")
    if all_ and kb_refs:
        raise click.UsageError("use either --kb or --all, not both")
    if http and not token and not is_loopback(host):
        raise click.UsageError(
            f"--host {host} exposes your knowledge bases beyond this machine: "
            "also pass --token (or set PINAKES_MCP_TOKEN)"
        )
    refs: list[str] | None
    if all_:
        refs = [ALL]
    elif kb_refs:
        refs = list(kb_refs)
    else:
        env = os.environ.get("PINAKES_KB")
        refs = [env] if env else None
    kbs = open_kbs(refs, skipped=(skipped := []))
    server = PinakesServer(kbs)
    if watch:
        from .watching import serve_watcher

        thread, stop = serve_watcher(kbs, after_sync=server.warm_after_sync)
        # On the way out, let a running sync finish (it is one transaction anyway).
        ctx.call_on_close(lambda: (stop.set(), thread.join(timeout=30)))
    for kb in kbs:
        if watch:
            continue  # the watcher's first sync indexes it
        if not (kb.config.state_dir / "index.db").exists():
            click.echo(f"pnk serve: warning: {label(kb)} is not indexed yet; run `pnk sync --kb {kb.root}`"
                       " (the server picks it up without a restart)", err=True)
    for s in skipped:  # a fleet entry that cannot even be opened is left out, by name
        click.echo(f"pnk serve: warning: not serving {s['kb']}: {s['reason']}", err=True)
    if allow_writes:
        server.enable_writes()
    names = ", ".join(sorted(server.kbs))
    if http:
        auth = "bearer token required" if token else "no token"
        click.echo(f"pnk serve: serving {names} at http://{_url_host(host)}:{port}/mcp ({auth})", err=True)
        run_http(server, host, port, token)
    else:
        click.echo(f"pnk serve: serving {names} over stdio", err=True)
        run_stdio(server)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
