"""Keep the versions of the core and of every plugin under plugins/ in step.

A release is one version for every distribution: the core's extras pin each plugin
(``pinakes-ppr==X``) and each plugin pins the core (``pinakes==X``), so
``pip install 'pinakes[graph]'`` can only ever assemble pieces built together. The
version lives in ``[project] version`` of each ``pyproject.toml``, in those pins, and
in ``pinakes.__version__``; this script checks them all, or rewrites them all::

    python scripts/versions.py            # check: exit 1 and name every mismatch
    python scripts/versions.py --set 0.2.0

Rewriting edits only the version strings (comments and layout stay as they are).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION_RE = r"[0-9][0-9A-Za-z.+!-]*"


def projects(root: Path = ROOT) -> list[Path]:
    """The core's pyproject.toml, then every plugin's, in name order."""
    return [root / "pyproject.toml", *sorted(root.glob("plugins/*/pyproject.toml"))]


def core_version(root: Path = ROOT) -> str:
    return str(tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["project"]["version"])


def _pinakes_requirements(reqs: list[str]) -> list[str]:
    """Requirements on a Pinakes distribution (``pinakes`` or ``pinakes-*``), not self-extras."""
    out = []
    for req in reqs:
        name = re.split(r"[\s\[=<>!~;]", req, maxsplit=1)[0].lower()
        if (name == "pinakes" or name.startswith("pinakes-")) and "[" not in req:
            out.append(req)
    return out


def problems(root: Path = ROOT) -> list[str]:
    """Every place whose version is not the core's, as one line each."""
    want = core_version(root)
    out: list[str] = []
    init = (root / "pinakes" / "__init__.py").read_text("utf-8")
    m = re.search(r'^__version__ = "([^"]*)"', init, re.M)
    if not m or m.group(1) != want:
        out.append(f"pinakes/__init__.py: __version__ is {m.group(1) if m else None!r}, "
                   f"expected {want!r}")
    for path in projects(root):
        rel = path.relative_to(root)
        project = tomllib.loads(path.read_text("utf-8"))["project"]
        if project["version"] != want:
            out.append(f"{rel}: version {project['version']!r}, expected {want!r}")
        reqs = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            reqs.extend(extra)
        for req in _pinakes_requirements(reqs):
            name = re.split(r"[\s=<>!~;]", req, maxsplit=1)[0]
            if req.replace(" ", "") != f"{name}=={want}":
                out.append(f"{rel}: requirement {req!r}, expected '{name}=={want}'")
    return out


def set_version(new: str, root: Path = ROOT) -> None:
    """Rewrite every version and pin to ``new`` in place."""
    if not re.fullmatch(VERSION_RE, new):
        raise SystemExit(f"not a version: {new!r}")
    for path in projects(root):
        text = path.read_text("utf-8")
        text = re.sub(rf'^version = "{VERSION_RE}"', f'version = "{new}"', text, count=1, flags=re.M)
        # Pinned requirements anywhere (the core's extras); bare ones inside `dependencies`.
        text = re.sub(rf'"(pinakes(?:-[a-z0-9-]+)?)\s*==\s*{VERSION_RE}"', rf'"\1=={new}"', text)
        text = re.sub(r"^dependencies = \[.*?\]", lambda m: re.sub(
            r'"(pinakes(?:-[a-z0-9-]+)?)"', rf'"\1=={new}"', m.group(0)), text,
            count=1, flags=re.M | re.S)
        path.write_text(text, "utf-8")
    init = root / "pinakes" / "__init__.py"
    init.write_text(re.sub(r'^__version__ = "[^"]*"', f'__version__ = "{new}"',
                           init.read_text("utf-8"), flags=re.M), "utf-8")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--set"] and len(argv) == 2:
        set_version(argv[1])
    elif argv:
        print("usage: python scripts/versions.py [--set VERSION]", file=sys.stderr)
        return 2
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"versions out of step ({len(found)}); fix with: python scripts/versions.py "
              f"--set {core_version()}", file=sys.stderr)
        return 1
    print(core_version())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
