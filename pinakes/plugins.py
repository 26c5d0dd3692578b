"""The plugin manager: built-in default plugins plus entry points of group ``pinakes``.

Loading is lazy (nothing happens at import time) and each entry point is
loaded on its own, so one broken plugin prints a warning naming it and every
other command still works. ``PINAKES_LOAD_PLUGINS`` (a comma list; empty means
none) restricts which entry points load; ``PINAKES_STRICT_PLUGINS=1`` makes a
failing plugin fatal.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError

DEFAULT_PLUGINS = ("pinakes.default_plugins.minilm",)

pm = pluggy.PluginManager("pinakes")
pm.add_hookspecs(hookspecs)


@dataclass
class PluginInfo:
    """What ``pnk plugins`` shows about one plugin."""

    name: str
    version: str | None
    default: bool
    hooks: list[str] = field(default_factory=list)
    error: str | None = None


_loaded = False
_infos: dict[str, PluginInfo] = {}
_failures: list[PluginInfo] = []


def _warn(message: str) -> None:
    print(f"Warning: {message}", file=sys.stderr)


def load_plugins() -> None:
    """Register default plugins and installed entry points, once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module_name in DEFAULT_PLUGINS:
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
        _infos[module_name] = PluginInfo(module_name, None, True)
    allow = os.environ.get("PINAKES_LOAD_PLUGINS")
    allowed = None if allow is None else {n.strip() for n in allow.split(",") if n.strip()}
    strict = os.environ.get("PINAKES_STRICT_PLUGINS") == "1"
    for ep in importlib.metadata.entry_points(group="pinakes"):
        if allowed is not None and ep.name not in allowed:
            continue
        if pm.has_plugin(ep.name):
            continue
        version = ep.dist.version if ep.dist else None
        try:
            module = ep.load()
            pm.register(module, name=ep.name)
        except Exception as exc:  # a broken plugin must not take the CLI down
            if strict:
                raise
            reason = f"{type(exc).__name__}: {exc}"
            _warn(f"plugin {ep.name!r} failed to load and was skipped ({reason})")
            _failures.append(PluginInfo(ep.name, version, False, error=reason))
            continue
        _infos[ep.name] = PluginInfo(ep.name, version, False)
    pm.check_pending()


def plugin_infos(include_defaults: bool = False) -> list[PluginInfo]:
    """Installed plugins with the hooks each implements, failures included."""
    load_plugins()
    out = []
    for name, info in _infos.items():
        if info.default and not include_defaults:
            continue
        plugin = pm.get_plugin(name)
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        out.append(PluginInfo(info.name, info.version, info.default, hooks))
    return sorted(out, key=lambda i: i.name) + list(_failures)


def _call_register(impl: Any) -> list[Any]:
    """Run one plugin's ``register_*`` implementation and return what it registered.

    Calling implementations one by one (rather than the whole hook) is what lets
    core say which plugin registered what.
    """
    collected: list[Any] = []
    impl.function(**{name: collected.append for name in impl.argnames})
    return collected


def _collect(hook_name: str, key: Callable[[Any], str]) -> dict[str, Any]:
    """Call a ``register_*`` hook and collect what each plugin registers, by id."""
    load_plugins()
    found: dict[str, Any] = {}
    owners: dict[str, str] = {}
    hook = getattr(pm.hook, hook_name)
    for impl in reversed(hook.get_hookimpls()):  # registration order
        collected = _call_register(impl)
        for item in collected:
            ident = key(item)
            if ident in found:
                raise PluginError(
                    f"{hook_name}: id {ident!r} registered by both "
                    f"{owners[ident]!r} and {impl.plugin_name!r}"
                )
            found[ident] = item
            owners[ident] = impl.plugin_name
    return found


def registrations() -> dict[str, dict[str, list[str]]]:
    """For each plugin, the ids it registers per hook (shown by ``pnk plugins``)."""
    load_plugins()
    out: dict[str, dict[str, list[str]]] = {}
    for hook_name, attr in (
        ("register_embedders", "id"),
        ("register_edge_derivers", "name"),
        ("register_graph_channels", "name"),
        ("register_llm_backends", "id"),
        ("register_importers", "name"),
        ("register_eval_modes", "name"),
    ):
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            collected = _call_register(impl)
            ids = [str(getattr(item, attr, item)) for item in collected]
            out.setdefault(impl.plugin_name, {})[hook_name] = ids
    return out


def get_embedders() -> dict[str, Any]:
    """Registered embedder classes keyed by their ``id``."""
    return _collect("register_embedders", lambda cls: cls.id)


def get_edge_derivers() -> dict[str, Any]:
    """Registered edge derivers keyed by ``name``."""
    return _collect("register_edge_derivers", lambda d: d.name)


def get_graph_channels() -> dict[str, Any]:
    """Registered graph channels keyed by ``name``."""
    return _collect("register_graph_channels", lambda c: c.name)


def get_llm_backends() -> dict[str, Any]:
    """Registered LLM backend classes keyed by ``id``."""
    return _collect("register_llm_backends", lambda b: b.id)


def get_eval_modes() -> dict[str, Any]:
    """Registered ``pnk eval`` modes keyed by ``name`` (``register_eval_modes``)."""
    return _collect("register_eval_modes", lambda m: m.name)


def get_importers() -> dict[str, Any]:
    """Registered importers keyed by ``name``."""
    return _collect("register_importers", lambda i: i.name)


def importer_for(path: Any) -> Any | None:
    """The importer for the folder ``path``, or None when no installed importer knows it.

    Plugins choose first (``importer_for_path``, first non-None wins); when
    none does, each registered importer's ``detect(path)`` is asked in name order.
    """
    load_plugins()
    chosen = pm.hook.importer_for_path(path=path)
    if chosen is not None:
        return chosen
    for _name, importer in sorted(get_importers().items()):
        if importer.detect(path):
            return importer
    return None


def get_store_schemas() -> list[tuple[str, str, str]]:
    """Plugin store tables as ``(name, version, sql)``, sorted by name."""
    load_plugins()
    collected: list[tuple[str, str, str]] = []
    pm.hook.register_store_schema(register=lambda n, v, s: collected.append((n, v, s)))
    return sorted(collected)
