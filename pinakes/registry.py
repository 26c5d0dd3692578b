"""The fleet registry: KB names to folders, in ``<user dir>/fleet.toml`` (docs/links.md).

Reading and writing the registry needs no KB object, so the modules below the
library API (links resolving ``pnk://`` and ``kb://`` targets in other KBs)
read it here; :mod:`pinakes.fleet` opens and searches the KBs it names.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from .config import CONFIG_NAME, slugify, user_dir
from .errors import ConfigError, KBNotFound
from .fsutil import atomic_write, remove_stray_temps

ALL = "all"


def registry_path() -> Path:
    """Where the fleet registry lives."""
    return user_dir() / "fleet.toml"


def load_fleet() -> dict[str, Path]:
    """Registered KBs by name (empty when there is no registry yet)."""
    path = registry_path()
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    kbs = data.get("kbs", {})
    return {str(name): Path(str(entry.get("path", ""))) for name, entry in kbs.items()
            if isinstance(entry, dict)}


def _save(fleet: dict[str, Path]) -> None:
    lines = ["# Pinakes fleet: knowledge bases by name (edit with `pnk fleet add|remove`).", ""]
    for name in sorted(fleet):
        lines.append(f'[kbs."{name}"]')
        lines.append(f'path = "{_toml_escape(str(fleet[name]))}"')
        lines.append("")
    path = registry_path()
    # No sync looks in the user folder: a registry write killed before its rename would
    # leave its temp file there for good, so the next write removes a dead writer's.
    remove_stray_temps(path)
    atomic_write(path, "\n".join(lines))


def _toml_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def add(name: str, path: str | Path) -> Path:
    """Register the KB at ``path`` under ``name``; returns its resolved folder."""
    slug = slugify(name)
    if slug != name:
        raise ConfigError(f"fleet names are slugs (lower-case letters, digits, '-'): try {slug!r}")
    if name == ALL:
        raise ConfigError("'all' is reserved: it means every KB in the fleet")
    folder = Path(path).expanduser().resolve()
    if not (folder / CONFIG_NAME).is_file():
        raise KBNotFound(f"{folder} is not a knowledge base (no {CONFIG_NAME}; run `pnk init` there)")
    fleet = load_fleet()
    if name in fleet and fleet[name] != folder:
        raise ConfigError(f"{name!r} is already registered for {fleet[name]}; remove it first")
    fleet[name] = folder
    _save(fleet)
    return folder


def remove(name: str) -> Path:
    """Forget ``name`` (its folder is untouched)."""
    fleet = load_fleet()
    if name not in fleet:
        raise KBNotFound(f"no KB named {name!r} in the fleet")
    folder = fleet.pop(name)
    _save(fleet)
    return folder


def names_for(root: Path, fleet: dict[str, Path] | None = None) -> list[str]:
    """Every fleet name registered for the KB folder ``root`` (sorted; usually one)."""
    fleet = load_fleet() if fleet is None else fleet
    out = []
    for name, folder in fleet.items():
        try:
            if folder.expanduser().resolve() == root:
                out.append(name)
        except OSError:
            continue
    return sorted(out)
