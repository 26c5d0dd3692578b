"""Pinakes plugin: adopt a ClaudeKB knowledge base (``pnk adopt``) into the fleet.

ClaudeKB is a public copier blueprint for fleets of agent-written Markdown KBs
(``kb.yml``, ``vocab.yml``, pages under ``docs/``). Its roadmap defers the
layer Pinakes is (cross-KB search, MCP, ranking), so adopting one must be one
command and lose nothing: see :mod:`pinakes_claudekb.adopt` for what it writes
and the rules it keeps, and ``docs/adopt.md`` for a walkthrough.

Importing this module does no I/O; the hooks only hand core one importer
object and one command, and the work happens when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pinakes import hookimpl

__version__ = "0.1.0"


class ClaudeKBImporter:
    """Recognises a ClaudeKB folder and adopts it (the importer ``pnk adopt`` uses)."""

    name = "claudekb"

    def detect(self, path: Any) -> bool:
        """A ClaudeKB folder has ``kb.yml`` at its root and its pages under ``docs/``.

        Only two ``stat`` calls: core may ask every importer about every folder.
        """
        root = Path(path)
        return (root / "kb.yml").is_file() and (root / "docs").is_dir()

    def plan(self, path: Any, *, name: str | None = None) -> Any:
        """What adopting ``path`` would write (an :class:`~pinakes_claudekb.adopt.Adoption`)."""
        from .adopt import plan

        return plan(Path(path), name=name)

    def adopt(self, path: Any, *, name: str | None = None, dry_run: bool = False) -> Any:
        """Adopt ``path``: write its config and sidecars, join the fleet (nothing with ``dry_run``)."""
        from .adopt import adopt

        return adopt(Path(path), name=name, dry_run=dry_run)


IMPORTER = ClaudeKBImporter()


@hookimpl
def register_importers(register):  # type: ignore[no-untyped-def]
    register(IMPORTER)


@hookimpl
def importer_for_path(path):  # type: ignore[no-untyped-def]
    return IMPORTER if IMPORTER.detect(path) else None


@hookimpl
def register_commands(cli):  # type: ignore[no-untyped-def]
    from .cli import add_commands

    add_commands(cli)
