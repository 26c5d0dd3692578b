"""The ``pnk`` command line: a thin face over :class:`pinakes.KB`.

Each command group lives in its own module; plugins add commands through the
``register_commands`` hook, called when ``main`` runs (never at import time, so
a broken plugin cannot break importing the CLI).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from .. import __version__
from ..errors import PinakesError, storage_problem


class PinakesGroup(click.Group):
    """Turns typed Pinakes errors into one clear line and a non-zero exit."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """A plugin's command that is not installed names the extra that installs it."""
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            from ..extras import not_installed

            missing = not_installed("command", args[0])
            if missing:
                ctx.fail(missing)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PinakesError as exc:
            if os.environ.get("PINAKES_RAISE_ERRORS"):
                raise
            raise click.ClickException(str(exc)) from None
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            # The reader went away (`pnk search ... | head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        except Exception as exc:  # a bug, not a user mistake: one line, traceback on request
            if os.environ.get("PINAKES_RAISE_ERRORS"):
                raise
            storage = storage_problem(exc)  # disk full, read-only, permissions: not a bug
            if storage is not None:
                raise click.ClickException(storage) from None
            raise click.ClickException(
                f"unexpected {type(exc).__name__}: {exc} "
                "(set PINAKES_RAISE_ERRORS=1 for the traceback, and please report it)"
            ) from None


@click.group(cls=PinakesGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="pnk")
def cli() -> None:
    """Pinakes: hybrid search, typed links and a free graph over a folder of Markdown.

    \b
    Start with:  pnk init   then   pnk sync   then   pnk search "your question"
    Every command finds its knowledge base with --kb, else by walking up from
    the current folder to pinakes.toml.
    """


from . import (  # noqa: E402  (each module registers its commands on `cli`)
    ask,  # noqa: F401  (pnk ask: an install hint until pinakes-deep replaces it)
    cache,  # noqa: F401  (pnk cache)
    core,  # noqa: F401  (init, sync, status, search, show, plugins)
    doctor,  # noqa: F401  (pnk doctor)
    eval,  # noqa: F401  (pnk eval)
    fleet,  # noqa: F401  (pnk fleet)
    help,  # noqa: F401  (pnk help: the installed reference pages)
    links,  # noqa: F401  (pnk links, link, unlink)
    serve,  # noqa: F401  (pnk serve)
)

_commands_loaded = False


def load_plugin_commands() -> None:
    """Let plugins add their commands, each on its own so one failure is contained."""
    global _commands_loaded
    if _commands_loaded:
        return
    _commands_loaded = True
    from ..plugins import load_plugins, pm

    load_plugins()
    for impl in pm.hook.register_commands.get_hookimpls():
        try:
            impl.function(**{name: cli for name in impl.argnames})
        except Exception as exc:
            if os.environ.get("PINAKES_STRICT_PLUGINS") == "1":
                raise
            click.echo(
                f"Warning: plugin {impl.plugin_name!r} failed to add its commands ({exc})", err=True
            )


def _prewarm_embedder(argv: list[str]) -> None:
    """For ``pnk search``: start creating the default embedder's ONNX session now.

    It takes ~0.5 s and mostly runs outside the GIL, so it overlaps plugin
    loading and opening the store (docs/performance.md). Skipped when the KB's
    ``[embedding] model`` is another embedder, or ``PINAKES_PREWARM=0``.
    """
    if len(argv) < 2 or argv[1] != "search" or os.environ.get("PINAKES_PREWARM") == "0":
        return
    from ..default_plugins import minilm

    def wanted() -> bool:
        from ..config import find_kb_root, load_config

        kb_arg = os.environ.get("PINAKES_KB")
        for i, arg in enumerate(argv):
            if arg == "--kb" and i + 1 < len(argv):
                kb_arg = argv[i + 1]
            elif arg.startswith("--kb="):
                kb_arg = arg[5:]
        from pathlib import Path

        if kb_arg and not Path(kb_arg).is_dir():
            # A fleet name (no path separator) most likely uses the default embedder
            # too; a path that is not a folder is an error the command will report.
            return kb_arg != "all" and "/" not in kb_arg and not kb_arg.startswith(".")
        root = find_kb_root(Path(kb_arg) if kb_arg else None)
        return load_config(root).embedder_id == minilm.MiniLMEmbedder.id

    minilm.prewarm(wanted)


def main() -> None:
    """Console-script entry point."""
    _prewarm_embedder(sys.argv)
    load_plugin_commands()
    cli(prog_name="pnk")
