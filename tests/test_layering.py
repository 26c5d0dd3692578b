"""The core's import graph: no circle below the CLI, and no plugin named by the core.

Modules below the library API take narrow inputs (a store, an embedder, a
config mapping, a callable) instead of importing ``pinakes.kb``, so search,
sync, links and doctor can each be read and tested without the others, and the
core knows its plugins only through hooks (``pinakes/hookspecs.py``). Imports
are read with ``ast``: at module level and inside functions (a lazy import is
still a run-time dependency), but not under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pinakes"


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports at run time (absolute names; submodules resolved)."""
    mod = _module(path, root)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            if all(a.name.startswith("__") for a in node.names):
                return  # package metadata (``from . import __version__``): no code it runs
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        visit(node)

    visit(ast.parse(path.read_text("utf-8")))
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """``module -> modules of the package it imports`` for every module under ``root``."""
    files = {_module(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for mod, path in files.items():
        # ``from . import x`` names a submodule when x is one, else the package itself.
        deps = {d for d in imports(path, root) if d in files}
        deps = {d for d in deps if not any(o != d and o.startswith(d + ".") and o in deps
                                           for o in deps) or d not in _packages(files)}
        graph[mod] = deps - {mod}
    return graph


def _packages(files: dict[str, Path]) -> set[str]:
    return {m for m, p in files.items() if p.name == "__init__.py"}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def _below_cli(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {d for d in deps if not d.startswith("pinakes.cli")}
            for m, deps in graph.items() if not m.startswith("pinakes.cli")}


def test_the_checker_finds_a_circle_and_ignores_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "pinakes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("from .b import B\nA = 1\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\nB = 2\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .a import A\nfrom pinakes import a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .a import A\nfrom . import __version__\n")
    graph = import_graph(pkg)
    assert graph["pinakes.b"] == {"pinakes.c"}  # a lazy import is a run-time dependency
    assert graph["pinakes.d"] == set()  # a TYPE_CHECKING import is not, nor package metadata
    assert circles(graph) == [["pinakes.a", "pinakes.b", "pinakes.c"]]


def test_no_import_circle_below_the_cli() -> None:
    found = circles(_below_cli(import_graph(PACKAGE)))
    assert not found, f"import circles below the CLI: {found}"


def test_search_sync_links_doctor_do_not_import_the_kb_or_each_other() -> None:
    graph = import_graph(PACKAGE)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for d in graph.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen

    four = {"pinakes.search", "pinakes.sync", "pinakes.links", "pinakes.doctor"}
    above = {"pinakes", "pinakes.kb", "pinakes.fleet", "pinakes.mcp_server"}
    for mod in sorted(four | {"pinakes.moves", "pinakes.reading", "pinakes.evaluation.calibration"}):
        # links (reading and resolving links, a leaf) serves the other three.
        bad = reach(mod) & (above | (four - {mod, "pinakes.links"}))
        assert not bad, f"{mod} reaches {sorted(bad)}"
    assert not reach("pinakes.links") & (four | above)


def test_the_core_imports_no_plugin_package() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for name in imports(path, PACKAGE):
            if name.split(".")[0].startswith("pinakes_"):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}: {name}")
    assert not offenders, "the core names plugin packages (use a hook): " + ", ".join(offenders)


def test_eval_deep_without_its_plugin_names_the_extra(example_kb_copy: Path) -> None:
    """The core names no plugin: without one registering the `deep` eval mode, one clear line."""
    import importlib.metadata

    others = [ep.name for ep in importlib.metadata.entry_points(group="pinakes") if ep.name != "deep"]
    env = {**os.environ, "PINAKES_LOAD_PLUGINS": ",".join(others)}  # the store reads the same
    pnk = Path(sys.executable).with_name("pnk")
    proc = subprocess.run([str(pnk), "eval", "--deep", "--kb", str(example_kb_copy)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "pip install 'pinakes[deep]'" in proc.stderr and "Traceback" not in proc.stderr
