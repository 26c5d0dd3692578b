"""The command-line face of watch mode (``pnk sync --watch``, ``pnk serve --watch``)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from .common import echo_sync_report

if TYPE_CHECKING:
    from ..kb import KB
    from ..sync import SyncReport


def sync_watch(kb: KB, quiet: bool, json_: bool) -> None:
    """Sync now, then on every change, until Ctrl-C (exit 0) or the KB folder goes (exit 1)."""
    from ..watch import KBGone, stamp, watch

    def on_sync(kb: KB, report: SyncReport | None, error: str | None) -> None:
        if json_:
            out: dict[str, Any] = {"kb": kb.name, "time": stamp()}
            out.update(report.to_dict() if report is not None else {"error": error})
            click.echo(json.dumps(out, ensure_ascii=False, default=str))
            return
        if report is None:
            click.echo(f"{stamp()} {kb.name}: sync failed: {error}", err=True)
            return
        echo_sync_report(report, f"{stamp()} {kb.name}: {report.summary()}", quiet)

    _sigterm_interrupts()
    if not json_:
        click.echo(f"pnk sync: watching {kb.root} (Ctrl-C to stop)", err=True)
    try:
        watch([kb], on_sync)
    except KBGone as exc:
        click.echo(f"pnk sync: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("pnk sync: stopped watching", err=True)


def serve_watcher(kbs: Sequence[KB], after_sync: Callable[[Any], None] | None = None,
                  ) -> tuple[threading.Thread, threading.Event]:
    """Keep the served KBs synced from a background thread; logs go to stderr (stdout is MCP's).

    The watcher syncs through KB objects of its own (a KB's cached connection
    is not shared across threads) that share the served KBs' embedders (which
    are thread-safe); the server sees each new sync generation on its next call.
    ``after_sync(root)`` runs on this thread after each sync that changed a KB
    (the server loads the new generation's vectors and graph there).
    """
    from ..kb import KB
    from ..watch import watch

    stop = threading.Event()
    own = []
    for kb in kbs:
        mine = KB.open(kb.root)
        mine._embedder = kb.embedder  # one model in memory, not two
        own.append(mine)

    def on_sync(kb: KB, report: SyncReport | None, error: str | None) -> None:
        changed = report is not None and bool(report.generation) and bool(
            report.added or report.changed or report.removed or report.renamed or report.rebuilt)
        if report is None:
            click.echo(f"pnk serve: {kb.name}: sync failed: {error}", err=True)
        elif changed:
            click.echo(f"pnk serve: {kb.name}: {report.summary()}", err=True)
        for problem in report.problems if report is not None else ():
            click.echo(f"pnk serve: {kb.name}: problem: {problem}", err=True)
        if changed and after_sync is not None:
            after_sync(kb.root)

    def on_gone(kb: KB, message: str) -> None:
        click.echo(f"pnk serve: {kb.name}: {message}", err=True)

    def run() -> None:
        try:
            watch(own, on_sync, stop=stop, on_gone=on_gone)
        except Exception as exc:  # noqa: BLE001 - the server keeps serving what it has
            click.echo(f"pnk serve: watching stopped: {exc}", err=True)

    thread = threading.Thread(target=run, name="pinakes-watch", daemon=True)
    thread.start()
    return thread, stop


def _sigterm_interrupts() -> None:
    """Let SIGTERM stop the watch like Ctrl-C does (a clean exit, not a kill mid-sync)."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
