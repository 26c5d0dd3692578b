"""The plugin system: default plugins, entry points loaded one by one, duplicates, docs."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from pinakes import hookimpl, hookspecs, plugins
from pinakes.cli import cli
from pinakes.errors import PluginError

DOCS = Path(__file__).parent.parent / "docs" / "plugins" / "plugin-hooks.md"


class _FakeDist:
    version = "9.9.9"


class _FakeEntryPoint:
    def __init__(self, name: str, loader) -> None:
        self.name = name
        self.dist = _FakeDist()
        self._loader = loader

    def load(self):
        return self._loader()


@pytest.fixture
def fresh_plugins(monkeypatch):
    """A fresh plugin manager state, restored afterwards."""
    import pluggy

    pm = pluggy.PluginManager("pinakes")
    pm.add_hookspecs(hookspecs)
    monkeypatch.setattr(plugins, "pm", pm)
    monkeypatch.setattr(plugins, "_loaded", False)
    monkeypatch.setattr(plugins, "_infos", {})
    monkeypatch.setattr(plugins, "_failures", [])
    return pm


def test_default_embedder_is_registered(fresh_plugins) -> None:
    assert "minilm-l6-v2-int8" in plugins.get_embedders()


def test_a_broken_plugin_warns_and_everything_else_works(fresh_plugins, monkeypatch, capsys) -> None:
    class Good:
        @hookimpl
        def register_graph_channels(self, register):
            class Channel:
                name = "good-channel"

                def search(self, ctx):
                    return []

            register(Channel())

    def broken():
        raise ImportError("No module named 'missing_dependency'")

    eps = [_FakeEntryPoint("broken-one", broken), _FakeEntryPoint("good-one", lambda: Good())]
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: eps)
    monkeypatch.delenv("PINAKES_LOAD_PLUGINS", raising=False)
    channels = plugins.get_graph_channels()
    assert "good-channel" in channels
    err = capsys.readouterr().err
    assert "plugin 'broken-one' failed to load" in err and "missing_dependency" in err
    infos = {i.name: i for i in plugins.plugin_infos()}
    assert infos["broken-one"].error and infos["good-one"].version == "9.9.9"
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    data = {p["name"]: p for p in json.loads(result.output)}
    assert data["good-one"]["registers"] == {"register_graph_channels": ["good-channel"]}
    assert "error" in data["broken-one"]


def test_strict_mode_makes_a_broken_plugin_fatal(fresh_plugins, monkeypatch) -> None:
    def broken():
        raise ImportError("boom")

    monkeypatch.setattr(plugins.importlib.metadata, "entry_points",
                        lambda group: [_FakeEntryPoint("broken-one", broken)])
    monkeypatch.setenv("PINAKES_STRICT_PLUGINS", "1")
    with pytest.raises(ImportError):
        plugins.load_plugins()


def test_load_plugins_allow_list(fresh_plugins, monkeypatch) -> None:
    loaded = []
    eps = [_FakeEntryPoint(n, lambda n=n: loaded.append(n) or object()) for n in ("a", "b")]
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: eps)
    monkeypatch.setenv("PINAKES_LOAD_PLUGINS", "b")
    plugins.load_plugins()
    assert loaded == ["b"]


def test_duplicate_ids_name_both_plugins(fresh_plugins, monkeypatch) -> None:
    monkeypatch.setenv("PINAKES_LOAD_PLUGINS", "")

    class One:
        @hookimpl
        def register_embedders(self, register):
            class E:
                id = "minilm-l6-v2-int8"

            register(E)

    plugins.load_plugins()
    fresh_plugins.register(One(), name="copycat")
    with pytest.raises(PluginError, match="copycat") as info:
        plugins.get_embedders()
    assert "pinakes.default_plugins.minilm" in str(info.value)


def test_every_hook_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name, fn in inspect.getmembers(hookspecs, inspect.isfunction):
        if not hasattr(fn, "pinakes_spec"):
            continue
        args = ", ".join(inspect.signature(fn).parameters)
        assert re.search(rf"^## {name}\({re.escape(args)}\)", text, re.MULTILINE), (
            f"docs/plugins/plugin-hooks.md lacks a '## {name}({args})' section"
        )


def test_installed_plugins_are_discovered_through_real_entry_points() -> None:
    import subprocess
    import sys

    pnk = Path(sys.executable).with_name("pnk")
    proc = subprocess.run([str(pnk), "plugins", "--json"], capture_output=True, text=True,
                          timeout=60, env={**__import__("os").environ, "PINAKES_STRICT_PLUGINS": "1"})
    assert proc.returncode == 0, proc.stderr
    found = {p["name"]: p for p in json.loads(proc.stdout)}
    assert found["structural"]["registers"] == {"register_edge_derivers": ["structural"]}
    assert found["expand"]["registers"] == {"register_graph_channels": ["expand"]}
    assert found["structural"]["version"] == "0.1.0"
