"""``pnk ask`` without the paid-path plugin: say how to install it.

The real command comes from ``pinakes-deep`` (``pip install 'pinakes[deep]'``),
whose ``register_commands`` replaces this one, so ``pnk ask`` is never an
unknown command and never a traceback.
"""

from __future__ import annotations

import click

from .group import cli


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def ask(args: tuple[str, ...]) -> None:
    """Answer a question with citations (needs the paid-path plugin: pip install 'pinakes[deep]')."""
    raise click.ClickException(
        "`pnk ask` needs the paid-path plugin: pip install 'pinakes[deep]' (docs/deep.md); "
        "`pnk search` answers for free meanwhile"
    )
