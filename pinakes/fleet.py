"""The fleet: a user-level registry mapping KB names to folders (docs/links.md, "The fleet").

It is the only state outside a KB's own folder, kept in
``<user dir>/fleet.toml`` (``PINAKES_USER_PATH`` overrides the user dir, e.g. in
tests). Commands that take ``--kb`` accept a path or a registered name, and
``all`` for every registered KB.
"""

from __future__ import annotations

import dataclasses
import shlex
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import CONFIG_NAME
from .errors import ConfigError, KBNotFound, PinakesError, UnknownEmbedder
from .kb import KB

# The registry itself (no KB needed to read it, so modules below the KB use it too).
from .registry import ALL, add, load_fleet, names_for, registry_path, remove  # noqa: F401
from .search import SearchResult
from .store import NotSynced

# Errors that make one KB unsearchable without saying anything about the others:
# a fleet search skips that KB (with a warning naming it) and searches the rest.
KB_UNAVAILABLE = (NotSynced, UnknownEmbedder, KBNotFound, ConfigError, sqlite3.DatabaseError)


def label(kb: KB) -> str:
    """The name a KB answers to: its fleet name when registered, else its ``[kb] name``.

    One KB, one name: a KB registered as ``retrieval`` is ``retrieval`` in
    search hits, ``pnk serve`` and every MCP tool, whatever its pinakes.toml
    says (that name keeps working too, as an alias). A KB opened by a fleet
    name keeps that name even if the folder is registered twice.
    """
    names = _fleet_names(kb)
    return names[0] if len(names) == 1 else kb.name


def _fleet_names(kb: KB) -> list[str]:
    """The fleet names ``kb`` answers to: the one it was opened by, else every registered one."""
    given = getattr(kb, "fleet_name", None)
    if given:
        return [str(given)]
    try:
        return names_for(kb.root)
    except ConfigError:
        return []


def sync_ref(kb: KB) -> str:
    """What ``pnk sync --kb`` takes to reach ``kb``: its fleet name when it has one, else its
    folder. A hint naming the ``[kb] name`` of a KB no fleet registers would not resolve."""
    names = _fleet_names(kb)
    return names[0] if names else shlex.quote(str(kb.root))


def _open_named(name: str, folder: Path) -> KB:
    if not (folder / CONFIG_NAME).is_file():
        raise KBNotFound(f"fleet KB {name!r} points at {folder}, which is no longer a KB")
    kb = KB.open(folder)
    kb.fleet_name = name  # type: ignore[attr-defined]
    return kb


def resolve_kb(ref: str | None) -> KB:
    """Open one KB from a path, a registered name, or (None) the current folder."""
    if ref is None:
        return KB.open(None)
    p = Path(ref).expanduser()
    if p.exists():
        return KB.open(p)
    fleet = load_fleet()
    if ref in fleet:
        return _open_named(ref, fleet[ref])
    if "/" in ref or ref.startswith("."):
        raise KBNotFound(f"no such folder: {p}")
    names = ", ".join(sorted(fleet)) or "none registered"
    raise KBNotFound(f"no KB {ref!r}: not a folder and not a fleet name (fleet: {names})")


def open_kbs(refs: Sequence[str] | None = None,
             skipped: list[dict[str, str]] | None = None) -> list[KB]:
    """Open several KBs: paths or names, ``all`` for the whole fleet; default the current KB.

    With ``skipped`` given, a fleet entry of ``all`` that cannot be opened (its
    folder moved, its pinakes.toml broken) is recorded there as ``{kb, reason}``
    instead of failing the whole command; a KB named explicitly still fails.
    """
    if not refs:
        return [resolve_kb(None)]
    out: list[KB] = []
    seen: set[Path] = set()
    for ref in refs:
        if ref == ALL:
            fleet = sorted(load_fleet().items())
            if not fleet:
                raise KBNotFound("the fleet is empty: register KBs with `pnk fleet add NAME PATH`")
            kbs = []
            for name, folder in fleet:
                try:
                    kbs.append(_open_named(name, folder))
                except PinakesError as exc:
                    if skipped is None:
                        raise
                    skipped.append({"kb": name, "reason": _reason(exc, name)})
            if not kbs and skipped is not None:
                raise KBNotFound("no KB of the fleet can be opened: " + _list_skipped(skipped))
        else:
            kbs = [resolve_kb(ref)]
        for kb in kbs:
            if kb.root not in seen:
                seen.add(kb.root)
                out.append(kb)
    return out


def _reason(exc: BaseException, name: str) -> str:
    """Why a KB was skipped, as one line that says how to fix it (``name``: what ``--kb``
    takes to reach it, :func:`sync_ref`)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, NotSynced) and "not been indexed" in text:
        return f"not indexed yet: run `pnk sync --kb {name}`"
    if isinstance(exc, sqlite3.DatabaseError):
        return f"the index is unreadable ({text}): run `pnk sync --kb {name}`"
    return text.replace("run `pnk sync`", f"run `pnk sync --kb {name}`")


def _list_skipped(skipped: Sequence[dict[str, str]]) -> str:
    return "; ".join(f"{s['kb']} ({s['reason']})" for s in skipped)


@dataclass
class FleetResult(SearchResult):
    """A search over one or more KBs, with the KBs it had to leave out as ``{kb, reason}``."""

    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "skipped": self.skipped}


def search_many(kbs: Sequence[KB], query: str, k: int | None = None,
                entities: Sequence[str] = (), concepts: Sequence[str] = (),
                channel: str | None = None, graph_roots: int | None = None,
                skipped: Sequence[dict[str, str]] = (), explain: bool = False,
                scope: Mapping[str, Any] | None = None) -> FleetResult:
    """Search several KBs and merge by fused score (each hit says its ``kb``).

    ``graph_roots``: see :func:`pinakes.search.hybrid_search` (document-grouped
    output asks for more chunks than it shows, without changing the channel's seeds).

    Fused scores are comparable across KBs because every KB fuses with the same
    rank-based formula. Each hit's ``kb`` is the KB's :func:`label`. When
    several KBs are searched, one that cannot be (never synced, built for
    another embedder, unreadable) is skipped and listed in the result's
    ``skipped`` as ``{kb, reason}``, and the rest are searched; only when none
    can be is it an error. A single KB that cannot be searched is an error
    naming it. ``skipped`` carries KBs the caller already had to leave out.
    ``explain``: see :meth:`pinakes.kb.KB.search`; over several KBs the query's
    explanation is ``{"by_kb": {name: explanation}}`` (each hit keeps its own).
    ``scope`` (``within``, ``tags``, ``since``, ``until``, ``not_within``: the keywords of
    :meth:`pinakes.kb.KB.search`) scopes each KB's search (:mod:`pinakes.scope`); over several KBs,
    one with nothing in scope adds no hits (listed in ``skipped``), and only when none has
    anything in scope is it an error.
    """
    from .scope import OutOfScope

    started = time.perf_counter()
    left_out = list(skipped)
    out_of_scope: list[dict[str, str]] = []
    results = []
    for kb in kbs:
        name = label(kb)
        try:
            result = kb.search(query, k=k, entities=entities, concepts=concepts, channel=channel,
                               graph_roots=graph_roots, explain=explain, **(scope or {}))
        except OutOfScope as exc:
            if len(kbs) == 1 and not left_out:
                raise
            out_of_scope.append({"kb": name, "reason": str(exc)})
            continue
        except KB_UNAVAILABLE as exc:
            if len(kbs) == 1 and not left_out:  # the one KB asked for: an error naming it
                cls = type(exc) if isinstance(exc, PinakesError) else NotSynced
                raise cls(f"{name}: {_reason(exc, sync_ref(kb))}") from exc
            left_out.append({"kb": name, "reason": _reason(exc, sync_ref(kb))})
            continue
        for h in result.hits:
            h.kb = name
        result.kb = name
        results.append(result)
    if not results and out_of_scope:
        raise OutOfScope("in no knowledge base: " + _list_skipped(out_of_scope + left_out))
    left_out += out_of_scope
    if not results:
        raise NotSynced("no knowledge base could be searched: " + _list_skipped(left_out))
    if len(kbs) == 1 and not left_out:
        one = results[0]
        return FleetResult(**{f.name: getattr(one, f.name) for f in dataclasses.fields(one)})
    limit = k or int(kbs[0].config.retrieval["k"])
    hits = sorted((h for r in results for h in r.hits), key=lambda h: (-h.score, h.kb, h.chunk_id))
    confidences = [r.confidence for r in results if r.confidence is not None]
    confidence = max(confidences) if len(confidences) == len(results) else None
    abstained = all(r.abstained for r in results)
    # Every KB abstained: the reason of the one that came closest.
    closest = max(results, key=lambda r: -1.0 if r.confidence is None else r.confidence)
    return FleetResult(
        query=query, kb=ALL, hits=hits[:limit],
        confidence=confidence, abstained=abstained, channel=results[0].channel,
        reason=closest.reason if abstained else None, support=closest.support,
        channel_reason=_channel_reasons(results),
        timings_ms={"total": (time.perf_counter() - started) * 1000},
        explain={"by_kb": {r.kb: r.explain for r in results}} if explain else None,
        skipped=sorted(left_out, key=lambda s: s["kb"]),
        scope={**results[0].scope, "documents": sum(r.scope["documents"] for r in results if r.scope)}
        if results[0].scope else None,
    )


def _channel_reasons(results: Sequence[Any]) -> str:
    """One reason when every KB searched with the same channel for the same reason, else each KB's."""
    reasons = {r.channel_reason for r in results}
    if len(reasons) == 1:
        return reasons.pop()
    return "; ".join(f"{r.kb}: {r.channel_reason}" for r in results)


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
