"""The ``pnk`` command line: a thin face over :class:`pinakes.KB`.

Each command group lives in its own module and registers on the group of
:mod:`.group`; what they share (``--kb``, ``--json``, opening the KB) is in
:mod:`.common`, so no command module imports another, nor this package. Plugins
add commands through the ``register_commands`` hook, called when ``main`` runs
(never at import time, so a broken plugin cannot break importing the CLI).
"""

from __future__ import annotations

import os
import sys

import click

from . import (  # each module registers its commands on `cli`
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
from .group import PinakesGroup, cli  # noqa: F401  (the group; `from pinakes.cli import cli`)

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
