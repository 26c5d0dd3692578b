"""The release side: versions in step, extras that name every plugin, real wheels that install.

The slow test builds every distribution with scripts/build-dist.sh (the command a release
runs), installs ``pinakes[graph]`` from those files into a brand-new venv and searches a
tiny KB with the ``ppr`` channel there: the path a user takes, end to end.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pinakes import __version__, extras
from pinakes.plugins import registrations

ROOT = Path(__file__).resolve().parents[1]
PNK = Path(sys.executable).with_name("pnk")


def _pyproject(path: Path) -> dict:
    return tomllib.loads(path.read_text("utf-8"))["project"]


def _plugins() -> dict[str, Path]:
    """Distribution name -> folder, for every plugin under plugins/."""
    return {_pyproject(p)["name"]: p.parent for p in sorted(ROOT.glob("plugins/*/pyproject.toml"))}


def _extra_closure(extra: str, table: dict[str, list[str]]) -> set[str]:
    """Distribution names an extra pulls in, following ``pinakes[other]`` self-references."""
    out: set[str] = set()
    for req in table[extra]:
        m = re.match(r"pinakes\[([^\]]+)\]", req)
        if m:
            for inner in m.group(1).split(","):
                out |= _extra_closure(inner.strip(), table)
        else:
            out.add(re.split(r"[\s\[=<>!~;]", req, maxsplit=1)[0])
    return out


def _versions_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("versions", ROOT / "scripts" / "versions.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_versions_are_in_step() -> None:
    versions = _versions_module()
    assert versions.problems(ROOT) == []
    assert versions.core_version(ROOT) == __version__


def test_versions_check_names_a_plugin_out_of_step(tmp_path: Path) -> None:
    """The check can fail: a copy with one plugin unpinned and one bumped is reported, then fixed."""
    versions = _versions_module()
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
        ".venv", ".git", ".pinakes", "examples", "benchmarks", "dist", "build", "*.egg-info"))
    expand = copy / "plugins" / "pinakes-expand" / "pyproject.toml"
    expand.write_text(expand.read_text().replace(f'"pinakes=={__version__}"', '"pinakes"'))
    ppr = copy / "plugins" / "pinakes-ppr" / "pyproject.toml"
    ppr.write_text(ppr.read_text().replace(f'version = "{__version__}"', 'version = "9.9"'))
    found = versions.problems(copy)
    assert any("pinakes-expand" in p and "'pinakes'" in p for p in found)
    assert any("pinakes-ppr" in p and "9.9" in p for p in found)
    versions.set_version("0.7.1", copy)
    assert versions.problems(copy) == []
    text = (copy / "pyproject.toml").read_text()
    assert '"pinakes-ppr==0.7.1"' in text and '"pinakes", "pinakes_structural"' in text  # isort list kept
    assert 'name = "pinakes-expand"' in expand.read_text()


def test_every_project_builds_the_same_way() -> None:
    """Each pyproject: setuptools >= 77 (SPDX licence strings) and an explicit package root.

    Without ``package-dir = {"" = "."}`` setuptools installs a flat-layout project
    editable through an import hook and prints a "BuildBackendWarning: Editable
    installation" block per project during scripts/setup.sh.
    """
    for path in [ROOT / "pyproject.toml", *sorted(ROOT.glob("plugins/*/pyproject.toml"))]:
        data = tomllib.loads(path.read_text("utf-8"))
        rel = path.relative_to(ROOT)
        assert data["build-system"]["requires"] == ["setuptools>=77"], rel
        assert data["build-system"]["build-backend"] == "setuptools.build_meta", rel
        assert data["tool"]["setuptools"].get("package-dir") == {"": "."}, (
            f'{rel}: add package-dir = {{"" = "."}} under [tool.setuptools]')


def test_every_plugin_is_installed_by_an_extra() -> None:
    table = _pyproject(ROOT / "pyproject.toml")["optional-dependencies"]
    plugins = set(_plugins())
    named = set().union(*(_extra_closure(e, table) for e in table if e not in ("test", "all")))
    assert plugins <= named, f"plugins without an extra: {sorted(plugins - named)}"
    assert plugins <= _extra_closure("all", table), "[all] must install every plugin"


def test_extras_table_matches_what_plugins_register() -> None:
    """pinakes.extras names, for each registration, the plugin that makes it and its extra."""
    from pinakes.cli import cli, load_plugin_commands

    table = _pyproject(ROOT / "pyproject.toml")["optional-dependencies"]
    dist_of = {ep.name: ep.dist.name for ep in importlib.metadata.entry_points(group="pinakes")
               if ep.dist is not None}
    hook_kind = {"register_embedders": "embedder", "register_graph_channels": "graph channel", "register_edge_derivers": "edge deriver",
                 "register_importers": "importer", "register_llm_backends": "LLM backend",
                 "register_eval_modes": "eval mode"}
    plugins = _plugins()
    seen: set[tuple[str, str]] = set()
    for plugin, hooks in registrations().items():
        dist = dist_of.get(plugin)
        if dist not in plugins:
            continue  # the built-in embedder, or a plugin from outside this repository
        for hook, names in hooks.items():
            kind = hook_kind.get(hook)
            for name in names if kind else ():
                if kind == "LLM backend" and name == "scripted":
                    continue  # test equipment, not something a user installs for
                entry = extras.PROVIDERS.get(kind, {}).get(name)
                assert entry is not None, f"{kind} {name!r} ({dist}) is missing from pinakes/extras.py"
                assert entry[0] == dist, f"{kind} {name!r} comes from {dist}, table says {entry[0]}"
                seen.add((kind, name))
    load_plugin_commands()
    for kind, names in extras.PROVIDERS.items():
        for name, (dist, extra) in names.items():
            assert dist in _extra_closure(extra, table), f"[{extra}] does not install {dist}"
            if dist not in plugins:
                continue  # a plugin that is not in this tree (yet): nothing to compare against
            if kind == "command":
                assert name in cli.commands, f"{dist} should add `pnk {name}`"
            else:
                assert (kind, name) in seen, f"{dist} does not register {kind} {name!r}"


def _pnk(*args: str, cwd: Path, env: dict[str, str] | None = None,
         exe: Path = PNK) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


TINY = {
    "bees.md": "---\ntags: [pollination]\n---\n# Bees\n\nHoney bees carry pollen between orchard "
               "blossoms in spring.\n",
    "orchards.md": "---\ntags: [pollination]\n---\n# Orchards\n\nApple orchards rely on visiting "
                   "insects.\n\n## Pruning\n\nPrune the trees in late winter.\n",
}


def _tiny_kb(root: Path, config: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "pinakes.toml").write_text(f'[kb]\nname = "tiny"\n{config}', "utf-8")
    for rel, text in TINY.items():
        (root / rel).write_text(text, "utf-8")
    return root


def test_missing_plugins_name_their_extra(tmp_path: Path) -> None:
    """With the plugins hidden, each request for one says which extra installs it."""
    kb = _tiny_kb(tmp_path / "kb", config="[graph]\nner = true\n")
    none = {"PINAKES_LOAD_PLUGINS": ""}
    out = _pnk("sync", cwd=kb, env=none)
    assert out.returncode != 0
    assert "edge deriver 'ner' is not installed: pip install 'pinakes[ner]'" in out.stderr
    assert "Traceback" not in out.stderr
    (kb / "pinakes.toml").write_text('[kb]\nname = "tiny"\n', "utf-8")
    assert _pnk("sync", cwd=kb, env=none).returncode == 0
    out = _pnk("search", "bees", "--channel", "ppr", cwd=kb, env=none)
    assert out.returncode != 0
    assert "graph channel 'ppr' is not installed: pip install 'pinakes[graph]'" in out.stderr
    out = _pnk("adopt", "somewhere", cwd=kb, env=none)
    assert out.returncode != 0
    assert "command 'adopt' is not installed: pip install 'pinakes[claudekb]'" in out.stderr
    # A name no known plugin provides is still just unknown.
    out = _pnk("search", "bees", "--channel", "nosuch", cwd=kb, env=none)
    assert "unknown graph channel 'nosuch'" in out.stderr


def _fresh_venv(where: Path, dist: Path, requirement: str) -> Path:
    """A new venv holding ``requirement`` from ``dist`` (+ PyPI for third-party packages)."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv:  # the same resolution as pip's, an order of magnitude faster on 2 cores
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(where)], check=True)
        cmd = [uv, "pip", "install", "-q", "--python", str(where / "bin" / "python")]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        cmd = [str(where / "bin" / "python"), "-m", "pip", "install", "-q"]
    done = subprocess.run([*cmd, "--find-links", str(dist), requirement],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return where


@pytest.mark.slow
def test_built_wheels_install_graph_extra_in_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = subprocess.run(["bash", str(ROOT / "scripts" / "build-dist.sh"), "--no-isolation"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "DIST_DIR": str(dist), "PYTHON": sys.executable})
    assert built.returncode == 0, built.stderr[-3000:]
    files = {p.name for p in dist.iterdir()}
    for name in ["pinakes", *_plugins()]:
        stem = name.replace("-", "_")
        assert f"{stem}-{__version__}-py3-none-any.whl" in files, (name, sorted(files))
        assert f"{stem}-{__version__}.tar.gz" in files, (name, sorted(files))

    venv = _fresh_venv(tmp_path / "venv", dist, "pinakes[graph]")
    pnk = venv / "bin" / "pnk"
    listed = _pnk("plugins", "--json", cwd=tmp_path, exe=pnk)
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert set(plugins) == {"structural", "expand", "ppr", "mentions"}
    assert {p["version"] for p in plugins.values()} == {__version__}
    assert plugins["ppr"]["registers"]["register_graph_channels"] == ["ppr"]
    human = _pnk("plugins", cwd=tmp_path, exe=pnk).stdout
    assert "pip install 'pinakes[ner]' (ner)" in human and "pinakes[graph]" not in human
    # The venv holds the built files, not this checkout.
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import pinakes, pinakes_ppr; print(pinakes.__file__, pinakes_ppr.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert str(ROOT) not in where and str(venv) in where

    kb = _tiny_kb(tmp_path / "kb")
    assert _pnk("sync", cwd=kb, exe=pnk).returncode == 0
    found = _pnk("search", "how do bees help orchards", "--channel", "ppr", "--json", cwd=kb, exe=pnk)
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["channel"] == "ppr"
    assert {h["path"] for h in result["hits"]} == {"bees.md", "orchards.md"}
    assert any(h["ranks"].get("graph") for h in result["hits"]), result["hits"]

    # What [graph] does not bring says which extra does.
    (kb / "pinakes.toml").write_text('[kb]\nname = "tiny"\n[graph]\nner = true\n', "utf-8")
    out = _pnk("sync", cwd=kb, exe=pnk)
    assert out.returncode != 0 and "pip install 'pinakes[ner]'" in out.stderr
    out = _pnk("adopt", str(kb), cwd=kb, exe=pnk)
    assert out.returncode != 0 and "pip install 'pinakes[claudekb]'" in out.stderr
