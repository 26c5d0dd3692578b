"""The fleet: a user-level registry mapping KB names to folders (docs/links.md, "The fleet").

It is the only state outside a KB's own folder, kept in
``<user dir>/fleet.toml`` (``PINAKES_USER_PATH`` overrides the user dir, e.g. in
tests). Commands that take ``--kb`` accept a path or a registered name, and
``all`` for every registered KB.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

from .config import CONFIG_NAME, slugify, user_dir
from .errors import ConfigError, KBNotFound
from .fsutil import atomic_write
from .kb import KB
from .search import SearchResult

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
    atomic_write(registry_path(), "\n".join(lines))


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


def resolve_kb(ref: str | None) -> KB:
    """Open one KB from a path, a registered name, or (None) the current folder."""
    if ref is None:
        return KB.open(None)
    p = Path(ref).expanduser()
    if p.exists():
        return KB.open(p)
    fleet = load_fleet()
    if ref in fleet:
        if not (fleet[ref] / CONFIG_NAME).is_file():
            raise KBNotFound(f"fleet KB {ref!r} points at {fleet[ref]}, which is no longer a KB")
        return KB.open(fleet[ref])
    if "/" in ref or ref.startswith("."):
        raise KBNotFound(f"no such folder: {p}")
    names = ", ".join(sorted(fleet)) or "none registered"
    raise KBNotFound(f"no KB {ref!r}: not a folder and not a fleet name (fleet: {names})")


def open_kbs(refs: Sequence[str] | None = None) -> list[KB]:
    """Open several KBs: paths or names, ``all`` for the whole fleet; default the current KB."""
    if not refs:
        return [resolve_kb(None)]
    out: list[KB] = []
    seen: set[Path] = set()
    for ref in refs:
        kbs = [KB.open(p) for _, p in sorted(load_fleet().items())] if ref == ALL else [resolve_kb(ref)]
        if ref == ALL and not kbs:
            raise KBNotFound("the fleet is empty: register KBs with `pnk fleet add NAME PATH`")
        for kb in kbs:
            if kb.root not in seen:
                seen.add(kb.root)
                out.append(kb)
    return out


def search_many(kbs: Sequence[KB], query: str, k: int | None = None,
                entities: Sequence[str] = (), concepts: Sequence[str] = (),
                channel: str | None = None) -> SearchResult:
    """Search several KBs and merge by fused score (each hit says its ``kb``).

    Fused scores are comparable across KBs because every KB fuses with the same
    rank-based formula. A KB that has not been synced yet is an error naming it.
    """
    if len(kbs) == 1:
        return kbs[0].search(query, k=k, entities=entities, concepts=concepts, channel=channel)
    started = time.perf_counter()
    results = [kb.search(query, k=k, entities=entities, concepts=concepts, channel=channel)
               for kb in kbs]
    limit = k or int(kbs[0].config.retrieval["k"])
    hits = sorted((h for r in results for h in r.hits), key=lambda h: (-h.score, h.kb, h.chunk_id))
    confidences = [r.confidence for r in results if r.confidence is not None]
    confidence = max(confidences) if len(confidences) == len(results) else None
    abstained = all(r.abstained for r in results)
    return SearchResult(
        query=query, kb=ALL if len(kbs) > 1 else kbs[0].name, hits=hits[:limit],
        confidence=confidence, abstained=abstained, channel=results[0].channel,
        timings_ms={"total": (time.perf_counter() - started) * 1000},
    )


def describe() -> list[dict[str, object]]:
    """The registry for ``pnk fleet list``: name, folder, and document count if indexed."""
    out: list[dict[str, object]] = []
    for name, folder in sorted(load_fleet().items()):
        entry: dict[str, object] = {"name": name, "path": str(folder),
                                    "exists": (folder / CONFIG_NAME).is_file(), "documents": None}
        if entry["exists"]:
            try:
                kb = KB.open(folder)
                with kb.reader().snapshot() as conn:
                    entry["documents"] = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
                kb.close()
            except Exception:  # noqa: S110 - not indexed, or built for another schema
                pass
        out.append(entry)
    return out
