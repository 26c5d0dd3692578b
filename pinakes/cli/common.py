"""What every command of ``pnk`` shares: ``--kb`` and ``--json``, opening the KB, printing.

Plugin commands use these too (``register_commands``), so a plugin's ``--kb``
and ``--json`` read like the core's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..kb import KB


def kb_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--kb PATH``: which knowledge base (default: the one enclosing the current folder)."""
    return click.option(
        "--kb",
        "kb_path",
        envvar="PINAKES_KB",
        metavar="PATH",
        help="Knowledge base: a folder or a fleet name (default: walk up from here to pinakes.toml).",
    )(f)


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("json_", "--json", is_flag=True, help="Print JSON for scripts.")(f)


def open_kb(kb_path: str | None) -> KB:
    """Open the KB named by ``--kb`` (a path or fleet name) or found from the current folder."""
    from ..fleet import resolve_kb

    return resolve_kb(kb_path)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class Progress:
    """A progress bar on stderr, shown only on a terminal and only for long phases."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.phase = ""
        self.shown = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled or total < 50:
            return
        if phase != self.phase:
            self.close()
            label = {"scan": "Scanning ", "embed": "Embedding",
                     "channel": "Checking the graph channel"}.get(phase, phase)
            self.bar = click.progressbar(length=total, label=label, file=sys.stderr)
            self.bar.__enter__()
            self.phase = phase
            self.shown = 0
        self.bar.update(done - self.shown)
        self.shown = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def echo_sync_report(report: Any, summary_line: str, quiet: bool) -> None:
    """A sync's new sidecars and renames (unless ``quiet``), its problems, then its summary.

    Shared by ``pnk sync`` and every sync of ``pnk sync --watch``.
    """
    if not quiet:
        for rel in report.sidecars_created[:20]:
            click.echo(f"  new sidecar {rel}")
        if len(report.sidecars_created) > 20:
            click.echo(f"  ... and {len(report.sidecars_created) - 20} more new sidecars")
        for old, new in report.renamed[:20]:
            click.echo(f"  renamed {old} -> {new}")
        for sc, changes in report.relinked[:20]:
            click.echo(f"  updated links in {sc}: " + ", ".join(f"{a} -> {b}" for a, b in changes))
        for sc, old, new in report.move_records[:20]:
            click.echo(f"  recorded the move {old} -> {new} in {sc} (links that still name "
                       "the old path resolve through it; `pnk doctor` lists them)")
    for problem in report.problems:
        click.echo(click.style("  problem: ", fg="yellow") + problem, err=True)
    # Said when the sync found nothing it had indexed before (a first sync, a rebuild, a KB of
    # only .mdx pages), not on every later sync of a KB that leaves them out on purpose.
    if getattr(report, "left_out", None) and not report.unchanged:
        from ..sync import left_out_hint

        click.echo("  note: " + left_out_hint(report.left_out), err=True)
    if getattr(report, "other_text", None):
        from ..sync import other_text_hint

        click.echo("  note: " + other_text_hint(report.other_text), err=True)
    click.echo(summary_line)
    check = getattr(report, "channel", None)
    if check and check.get("checked"):  # graph_channel = "auto": the golden set was measured again
        click.echo(f"  graph channel {check['reason']}  (checked in {check['seconds']:.1f}s; "
                   f"{check['why']})")
    if report.git_stage:
        click.echo(git_stage_line(report.git_stage, report.git_root))


def git_stage_line(paths: list[str], root: Any = None) -> str:
    """One line with the command that stages the sidecars sync moved (sync never touches git)."""
    import shlex

    here = Path.cwd().resolve()
    prefix = "git add -A" if root is None or Path(root) == here else f"git -C {shlex.quote(str(root))} add -A"
    n = len(paths) // 2
    return (f"  git: sync moved {n} sidecar{'s' if n != 1 else ''} after {'its' if n == 1 else 'their'} "
            f"note{'s' if n != 1 else ''}; stage the move with: {prefix} " + " ".join(map(shlex.quote, paths)))


def channel_line(state: dict[str, Any]) -> str:
    """``pnk status``'s channel row: the reason, then how current this KB's verdict is."""
    line = state["reason"]
    check = state.get("check")
    if not check:
        return line
    when = f"checked by {check['by']} at generation {check['generation']}, {check['checked_at']}"
    moved = check.get("documents_changed_since")
    if check.get("out_of_date"):
        when += f"; out of date ({check['out_of_date']}): the next `pnk sync` checks again"
    elif moved:
        when += (f"; {moved} document{'s' if moved != 1 else ''} changed since "
                 f"(`pnk sync` checks again at a tenth of the KB)")
    return f"{line}\n{'':<13}{when}"


def scope_of(kbs: Sequence[Any], within: Sequence[str] = (), tags: Sequence[str] = (),
             since: str | None = None, until: str | None = None,
             not_within: Sequence[str] = ()) -> dict[str, Any]:
    """The ``--in``/``--tag``/``--since``/``--until``/``--not-in`` options as the scope
    keywords of :meth:`pinakes.kb.KB.search`, paths read from here (:func:`scope_paths`)."""
    return {"within": scope_paths(within, kbs), "tags": tuple(tags), "since": since, "until": until,
            "not_within": scope_paths(not_within, kbs)}


def scope_paths(within: Sequence[str], kbs: Sequence[Any]) -> tuple[str, ...]:
    """``--in`` paths as a scoped search reads them (:mod:`pinakes.scope`).

    A folder or file named from the current folder inside one of ``kbs`` (``--in .`` in
    a KB's subfolder) becomes its absolute path; anything else (a glob, a path from the
    KB's root) stays as written, for each KB to read from its root.
    """
    roots = [Path(kb.root).resolve() for kb in kbs]
    out = []
    for path in within:
        here = Path(path)
        if path.strip() and not here.is_absolute() and here.exists():
            full = here.resolve()
            if any(full.is_relative_to(r) for r in roots):
                path = str(full)
        out.append(path)
    return tuple(out)


def scope_options(fn: Any) -> Any:
    """``--in PATH``, ``--tag TAG``, ``--since``, ``--until`` and ``--not-in PATH``, as ``pnk search``
    and ``pnk ask`` take them (:func:`scope_of` reads them)."""
    fn = click.option("--until", metavar="DATE",
                      help="Only documents dated up to DATE (2024, 2024-03 or 2024-03-14, included).")(fn)
    fn = click.option("--since", metavar="DATE",
                      help="Only documents dated from DATE on (2024, 2024-03 or 2024-03-14): a journal "
                           "day or chat session, by front matter (date, created) or file name.")(fn)
    fn = click.option("--not-in", "not_within", multiple=True, metavar="PATH",
                      help="Leave out the documents under this folder or file, or matching this "
                           "glob (`archive`); repeatable.")(fn)
    fn = click.option("--tag", "tags", multiple=True, metavar="TAG",
                      help="Only documents tagged TAG, in front matter or as #TAG; #a/b counts "
                           "for a (repeatable: every tag).")(fn)
    return click.option("--in", "within", multiple=True, metavar="PATH",
                        help="Only the documents under this folder or file, or matching this glob "
                             "(`notes/2024-*`, `**/README.md`, as include reads one); from the "
                             "current folder or the KB's root (repeatable: any).")(fn)
