"""The ``pnk`` command group itself: every command module registers on :data:`cli`.

Kept apart from the package's ``__init__`` so a command module imports the group
without importing the package that imports it back.
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
