"""``pnk help [TOPIC]``: the reference pages, from the docs that came with this install.

``pnk init`` points every new ``pinakes.toml`` at ``pnk help config``: a link to
a website would go stale or not exist, while the installed docs match the
installed code. A checkout (``scripts/setup.sh``'s editable install) reads
``docs/`` beside the package; a wheel installs the same pages under
``<prefix>/share/pinakes/docs/`` (``[tool.setuptools.data-files]``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .group import cli

#: Short names for pages whose file name is long; every other page answers to its stem.
ALIASES = {"config": "configuration", "plugins": "plugins/index", "hooks": "plugins/plugin-hooks"}


def docs_dir() -> Path | None:
    """Where this install's documentation is, or ``None`` when it came without it."""
    import pinakes

    candidates = [Path(pinakes.__file__).resolve().parent.parent / "docs",
                  Path(sys.prefix) / "share" / "pinakes" / "docs"]
    return next((d for d in candidates if (d / "configuration.md").is_file()), None)


def topics(folder: Path) -> list[str]:
    pages = sorted(p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.md"))
    return [*ALIASES, *(p for p in pages if p not in ALIASES.values())]


@cli.command(name="help")
@click.argument("topic", required=False)
def help_(topic: str | None) -> None:
    """Print a reference page: `pnk help config` lists every pinakes.toml key.

    \b
    Without TOPIC, lists the pages. The pages are the docs that came with this
    install, so they describe this version. `pnk COMMAND --help` explains a command.
    """
    folder = docs_dir()
    if folder is None:
        raise click.ClickException("this install has no documentation pages (they ship in the "
                                   "wheel and in a checkout's docs/ folder); `pnk COMMAND --help` "
                                   "still explains each command")
    if not topic:
        click.echo("pnk help TOPIC prints one of these pages (Markdown):")
        for name in topics(folder):
            page = ALIASES.get(name, name)
            click.echo(f"  {name:<26} {_title(folder / f'{page}.md')}")
        click.echo(f"(from {folder})")
        return
    page = folder / f"{ALIASES.get(topic, topic)}.md"
    if not page.is_file() or not page.resolve().is_relative_to(folder.resolve()):
        raise click.ClickException(f"no help topic {topic!r}: try one of {', '.join(topics(folder))}")
    click.echo(page.read_text(encoding="utf-8"), nl=False)


def _title(page: Path) -> str:
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""
