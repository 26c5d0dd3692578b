"""The MCP server (``pnk serve``): four read-only tools over the library API.

The agent is Pinakes' main user, and its loop (think, probe, decide) needs two
signals per answer: a relevance score and the visible frontier.
The tools return exactly those, typed, with an
``outputSchema``, matching ``structuredContent`` and a text rendering for older
clients. Everything here is a thin face over :class:`pinakes.KB`: retrieval,
traversal and reading live in the library; this module only resolves which KB
is meant, enforces the hard caps and the response budget, and turns typed
errors into one-line tool errors so the server stays up.

Caps, whatever the client asks: ``k`` ≤ 50, ``depth`` ≤ 3, fan-out ≤ the KB's
``adjacent_k`` (enforced by ``KB.links``), and every structured result under
:data:`RESPONSE_BUDGET` bytes of JSON (hit text is shortened first, then rows are
dropped, and the result says ``truncated``: the agent should narrow, not page).

Freshness needs no restart: ``KB.reader()`` reopens a store file replaced by a
rebuild and ``KB.dense_index`` reloads when the sync generation moves, while a
call made during a sync reads the last committed transaction (SQLite WAL).
"""

# No ``from __future__ import annotations`` here: the SDK reads each tool's
# signature with ``eval_str=True`` against module globals, and the tool
# parameters use types built inside ``_register`` (their descriptions name the
# served KBs), so annotations must be real objects, not strings.
import contextlib
import functools
import hmac
import ipaddress
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import __version__
from .errors import ConfigError, PinakesError, storage_problem
from .fleet import search_many, sync_ref
from .kb import KB
from .search import MAX_K
from .store import NotSynced

MAX_DEPTH = 3
RESPONSE_BUDGET = 24_000  # bytes of structured JSON; the text rendering is about as long again
MIN_HIT_TEXT = 160  # bytes of text every hit keeps before hits are dropped instead
MAX_SECTIONS_LISTED = 200
LOOPBACK_NAMES = ("localhost",)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# pinakes_link / pinakes_unlink (only with `pnk serve --allow-writes`): they edit a
# sidecar, never a document body; a repeated call changes nothing; unlink removes
# only what the agent (or anyone) can add back with link.
WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
MAX_NOTE = 500

INSTRUCTIONS = """\
Pinakes serves local Markdown knowledge bases, read-only.
Loop: pinakes_search -> look at scores and confidence -> refine the query (or pass
entities/concepts) rather than raising k -> pinakes_links on a promising doc_id for
one hop, read its frontier, go deeper only if needed -> pinakes_read for the full text
of a document or one section. `truncated: true` means narrow the request, not page.
"""

WRITE_INSTRUCTIONS = """Writes are enabled: when you find that one document relates to another (cites,
extends, uses, contradicts...), record it with pinakes_link; it lands in the source's
sidecar (.pnk.yaml), never in a document's text, and the next searches see it.
"""


# --- output schemas ---------------------------------------------------------------


class _Open(BaseModel):
    """Rows passed through from the library may carry extra keys; the schema allows them."""

    model_config = ConfigDict(extra="allow")


class SearchHitOut(BaseModel):
    kb: str = Field(description="The knowledge base the hit comes from.")
    doc_id: str = Field(description="The document's ULID; pass it to pinakes_links or pinakes_read.")
    uri: str = Field(description="pnk:// URI of the document.")
    title: str
    path: str = Field(description="KB-relative path of the Markdown file.")
    heading_path: list[str] = Field(description="Headings enclosing the chunk, outermost first.")
    start_line: int = Field(description="1-based line of the chunk in the file.")
    text: str = Field(description="The chunk's Markdown (shortened when text_truncated).")
    text_truncated: bool = Field(False, description="True when text was cut to fit the response budget.")
    score: float = Field(description="Fused relevance score (higher is better; compare within one answer).")
    ranks: dict[str, int | None] = Field(
        description="1-based rank of the chunk in each channel (lexical, dense, graph); null: not in it."
    )
    explain: dict[str, Any] | None = Field(
        None, description="With explain: what each stage gave this hit (lexical, dense, fusion, "
                          "graph with its path, priors); fusion.score + graph.delta + priors.delta = score."
    )


class SkippedOut(BaseModel):
    kb: str = Field(description="A served KB that was not searched.")
    reason: str = Field(description="Why, and how to fix it (e.g. run `pnk sync`).")


class SearchOut(BaseModel):
    query: str
    kb: str = Field(description="The KB searched, or 'all' when several were.")
    channel: str = Field(description="Graph channel used ('off' when none).")
    channel_reason: str = Field("", description="Why that channel, in one line (e.g. the KB's "
                                "golden set fails the graph gate, or the global default).")
    k: int = Field(description="How many hits were asked for, after the cap.")
    confidence: float | Literal["unknown"] = Field(
        description="Calibrated probability that the hits hold the evidence; 'unknown' when uncalibrated."
    )
    abstained: bool = Field(description="True when confidence is below the KB's abstain_below.")
    reason: str | None = Field(
        None,
        description="When abstained: which part of the question the notes do not support, e.g. "
                    "\"found 'French press', nothing on 'invented'\" or \"nothing in the notes mentions "
                    "'BLEU'\". Rephrase that part, or report that the notes lack it.",
    )
    hits: list[SearchHitOut]
    truncated: bool = Field(description="The response budget cut text or hits: narrow the query, don't page.")
    notes: list[str] = Field(description="Caps applied and other server remarks.")
    skipped: list[SkippedOut] = Field(
        default_factory=list,
        description="KBs left out of this search (e.g. never synced); the others were searched.",
    )
    explain: dict[str, Any] | None = Field(
        None, description="With explain: the query's stages (terms kept and dropped, the graph "
                          "channel in force and its seeds, the confidence's features)."
    )
    scope: dict[str, Any] | None = Field(
        None, description="When the search was scoped (within, tags): what was asked and how many "
                          "documents that holds."
    )


class NeighbourOut(_Open):
    doc_id: str
    title: str | None = None
    rel: str
    direction: str
    distance: int
    score: float | None = None


class FrontierOut(_Open):
    doc_id: str
    rel: str


class UnresolvedOut(_Open):
    target: str
    reason: str


class LinksOut(_Open):
    kb: str
    doc_id: str = Field(description="The start document's ULID.")
    depth: int = Field(description="Depth actually walked (the server caps it at 3).")
    neighbours: list[NeighbourOut]
    frontier: list[FrontierOut] = Field(description="Unexpanded next hops: where a further probe would go.")
    unresolved: list[UnresolvedOut] = Field(description="Dangling links, reported rather than dropped.")
    confidence: float | Literal["unknown"]
    truncated: bool = Field(description="Rows were cut by a cap: narrow (rel, direction, query), don't page.")
    note: str | None = None
    notes: list[str] = Field(default_factory=list, description="Caps applied by the server.")


class ReadOut(BaseModel):
    kb: str
    doc_id: str
    uri: str
    title: str
    path: str
    sidecar: str = Field(description="KB-relative path of the document's .pnk.yaml sidecar.")
    tags: list[str]
    front_matter: dict[str, Any]
    links: list[dict[str, Any]] = Field(description="Authored links from the sidecar (to, rel, ...).")
    provisional_id: bool = Field(description="True when the id is provisional (the sidecar has none).")
    section: list[str] | None = Field(description="Heading path of the section read; null: whole document.")
    lines: list[int] = Field(description="First and last line read (1-based, inclusive).")
    text: str
    stale: bool = Field(description="The file changed since the last `pnk sync`; text is the file as it is now.")
    sections: list[str] = Field(description="Every section's heading path, to pick one to read.")
    truncated: bool = Field(description="text was cut to fit the response budget: read one section instead.")
    notes: list[str]


class LinkDocOut(_Open):
    doc_id: str | None = None
    path: str | None = None
    title: str | None = None


class LinkOut(BaseModel):
    kb: str
    action: Literal["added", "updated", "exists", "removed", "absent"] = Field(
        description="added/updated/removed: the sidecar was rewritten; exists/absent: nothing to do.")
    source: LinkDocOut = Field(description="The document whose sidecar holds the link.")
    target: dict[str, Any] = Field(description="The linked document, or {target, dangling: true}.")
    rel: str | None = Field(None, description="The relation (for unlink: the one asked for, if any).")
    to: str | None = Field(None, description="The `to:` written in the sidecar (link only).")
    removed: list[dict[str, str]] = Field(default_factory=list, description="Entries removed (unlink).")
    sidecar: str = Field(description="KB-relative path of the edited sidecar.")
    sync: str | None = Field(None, description="The sync that followed the edit, in one line.")


class KbOut(BaseModel):
    name: str = Field(description="The name to pass as `kb` (its fleet name when registered).")
    aliases: list[str] = Field(default_factory=list,
                               description="Other names this KB answers to (its [kb] name, ...).")
    root: str
    indexed: bool
    documents: int | None = None
    chunks: int | None = None
    last_sync: str | None = Field(None, description="UTC time of the last sync, ISO 8601.")
    generation: int | None = Field(None, description="Sync generation; it moves on every sync.")
    embedder: str | None = None
    problems: int | None = None
    folders: dict[str, int] | None = Field(
        None, description="Its top-level folders and how many documents each holds, most first: "
                          "values for pinakes_search's `within`.")
    tags: dict[str, int] | None = Field(
        None, description="Its most used tags and how many documents carry each: values for "
                          "pinakes_search's `tags`.")
    error: str | None = None


class KbsOut(BaseModel):
    kbs: list[KbOut]
    truncated: bool = Field(False, description="Too many KBs for one response: name one with kb instead.")
    notes: list[str] = Field(default_factory=list)


# --- helpers --------------------------------------------------------------------------


def _size(data: Any) -> int:
    return len(json.dumps(data, ensure_ascii=False, default=str).encode("utf-8"))


def _cut(text: str, max_bytes: int) -> str:
    """``text`` shortened to about ``max_bytes`` UTF-8 bytes at a word boundary, marked with '…'."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    head = raw[: max(0, max_bytes - 3)].decode("utf-8", errors="ignore")
    space = head.rfind(" ")
    if space > len(head) // 2:
        head = head[:space]
    return head.rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _validation_message(tool: str, exc: ValidationError) -> str:
    """A pydantic argument error as one line an agent can act on."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    extra = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return f"invalid arguments for {tool}: " + "; ".join(parts) + extra


@contextlib.contextmanager
def _naming(name: str, kb: KB) -> Iterator[None]:
    """Say which KB is not indexed: the store's own message cannot know its fleet name, nor
    what ``pnk sync --kb`` takes to reach it (:func:`pinakes.fleet.sync_ref`)."""
    try:
        yield
    except NotSynced as exc:
        raise ToolError(f"{name}: {_one_line(str(exc))}".replace(
            "`pnk sync", f"`pnk sync --kb {sync_ref(kb)}")) from exc


@contextlib.contextmanager
def _kb_relative(kb: KB) -> Iterator[None]:
    """Errors about paths the server anchored at the KB root name them as the agent gave them."""
    try:
        yield
    except PinakesError as exc:
        if isinstance(exc, NotSynced):
            raise
        raise ToolError(_one_line(str(exc)).replace(f"{kb.root}/", "")) from exc


def is_loopback(host: str) -> bool:
    """True for hosts that only this machine can reach."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


P = ParamSpec("P")
R = TypeVar("R")


class PinakesMCP(MCPServer):
    """``MCPServer`` whose argument-validation errors are one line, like every other tool error.

    The SDK reports a schema violation with pydantic's multi-line text; an agent
    reads a single ``name: reason`` line better, and the server logs stay tidy.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(_validation_message(name, exc.__cause__)) from exc.__cause__
            raise


# --- the server -------------------------------------------------------------------------


class PinakesServer:
    """The served KBs and the four tools over them.

    Tool calls run on worker threads (the SDK runs sync tools off the event
    loop); one lock serialises them because a :class:`KB` caches one SQLite
    connection and one vector matrix that are not meant for concurrent use.
    Searches take milliseconds, so serialising costs nothing noticeable.
    """

    def __init__(self, kbs: Sequence[KB], allow_writes: bool = False) -> None:
        if not kbs:
            raise ConfigError("no knowledge base to serve")
        self.allow_writes = False
        from .fleet import label

        self.kbs: dict[str, KB] = {}
        for kb in kbs:
            name = label(kb)
            if name in self.kbs:
                raise ConfigError(
                    f"two served KBs are both named {name!r} ({self.kbs[name].root} and "
                    f"{kb.root}): rename one in its pinakes.toml"
                )
            self.kbs[name] = kb
        self.aliases = self._aliases()
        self.lock = threading.Lock()
        self.mcp = PinakesMCP(
            "pinakes", title="Pinakes", version=__version__, instructions=INSTRUCTIONS,
            log_level="WARNING",
        )
        self._register()
        if allow_writes:
            self.enable_writes()

    def enable_writes(self) -> None:
        """Offer pinakes_link and pinakes_unlink too (``pnk serve --allow-writes``); call before serving."""
        if self.allow_writes:
            return
        self.allow_writes = True
        self.mcp._lowlevel_server.instructions = INSTRUCTIONS + WRITE_INSTRUCTIONS
        self._register_writes()

    # --- KB selection -------------------------------------------------------------

    def _aliases(self) -> dict[str, str]:
        """Other names of each served KB (its ``[kb] name``, further fleet names) -> served name.

        One KB, one name: whether an agent learnt a KB's name from the fleet (a
        cross-KB link row says ``kb: retrieval``) or from its pinakes.toml, the
        name works. A name two served KBs could claim is nobody's alias.
        """
        from .fleet import load_fleet, names_for

        try:
            fleet = load_fleet()
        except PinakesError:
            fleet = {}
        claims: dict[str, set[str]] = {}
        for served, kb in self.kbs.items():
            for other in [kb.name, *names_for(kb.root, fleet)]:
                if other != served and other not in self.kbs:
                    claims.setdefault(other, set()).add(served)
        return {alias: next(iter(owners)) for alias, owners in claims.items() if len(owners) == 1}

    def _served(self) -> str:
        return ", ".join(sorted(self.kbs))

    def name_of(self, name: str | None) -> str:
        """The served name for ``name`` (a served name or an alias); omitted with one KB served."""
        if name is None or not name.strip():
            if len(self.kbs) == 1:
                return next(iter(self.kbs))
            raise ToolError(f"several KBs are served ({self._served()}): pass kb")
        wanted = name.strip()
        if wanted in self.kbs:
            return wanted
        if wanted in self.aliases:
            return self.aliases[wanted]
        raise ToolError(f"unknown kb {name!r} (served: {self._served()})")

    def pick(self, name: str | None) -> KB:
        """The KB ``name`` names (or an alias of it); with one KB served the name may be omitted."""
        return self.kbs[self.name_of(name)]

    def pick_many(self, name: str | None) -> list[KB]:
        """For search: one KB by name, or every served KB when omitted or 'all'."""
        if name is None or not name.strip() or name.strip() == "all":
            return list(self.kbs.values())
        return [self.pick(name)]

    # --- the tools ------------------------------------------------------------------

    def search(self, query: str, kb: str | None = None, k: int | None = None,
               entities: Sequence[str] = (), concepts: Sequence[str] = (),
               channel: str | None = None, explain: bool = False,
               scope: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Hybrid search, capped and fitted to the response budget (``explain`` included);
        ``scope`` (the scope keywords of :meth:`pinakes.kb.KB.search`, paths from each KB's
        root) keeps it to part of each KB."""
        if not query.strip():
            raise ToolError("the query is empty")
        kbs = self.pick_many(kb)
        notes: list[str] = []
        if k is not None and k < 1:
            raise ToolError("k must be at least 1")
        if k is not None and k > MAX_K:
            notes.append(f"k={k} capped at {MAX_K}: prefer refining the query over raising k")
            k = MAX_K
        from .fleet import label

        result = search_many(kbs, query, k=k, entities=list(entities), concepts=list(concepts),
                             channel=channel, explain=explain, scope=scope)
        names = {id(kb_): served for served, kb_ in self.kbs.items()}
        label_of = {label(kb_): names[id(kb_)] for kb_ in kbs}
        hits = []
        for h in result.hits:
            hits.append({
                "kb": label_of.get(h.kb, h.kb), "doc_id": h.doc_id, "uri": f"pnk://{h.doc_id}", "title": h.title,
                "path": h.path, "heading_path": list(h.heading_path), "start_line": h.start_line,
                "text": h.text, "text_truncated": False, "score": h.score, "ranks": dict(h.ranks),
                **({"explain": h.explain} if explain else {}),
            })
        out = {
            "query": query,
            "kb": label_of.get(result.kb, result.kb),
            "channel": result.channel,
            "channel_reason": result.channel_reason,
            "k": k if k is not None else min(int(kbs[0].config.retrieval["k"]), MAX_K),
            "confidence": "unknown" if result.confidence is None else round(result.confidence, 4),
            "abstained": result.abstained,
            "reason": result.reason,
            "hits": hits,
            "truncated": False,
            "notes": notes,
            "skipped": [{"kb": label_of.get(s["kb"], s["kb"]), "reason": s["reason"]}
                        for s in result.skipped],
            **({"explain": result.explain} if explain else {}),
            **({"scope": result.scope} if result.scope else {}),
        }
        self._fit_hits(out)
        return out

    def _fit_hits(self, out: dict[str, Any]) -> None:
        """Shorten hit text evenly, then drop trailing hits, until the JSON fits the budget."""
        hits = out["hits"]
        size = _size(out)
        if size <= RESPONSE_BUDGET:
            return
        text_bytes = sum(len(h["text"].encode("utf-8")) for h in hits)
        allowance = max(MIN_HIT_TEXT, (RESPONSE_BUDGET - (size - text_bytes)) // max(1, len(hits)))
        # JSON escaping makes text a little longer than its bytes: shrink until it fits.
        while _size(out) > RESPONSE_BUDGET and allowance >= MIN_HIT_TEXT:
            for h in hits:
                short = _cut(h["text"], allowance)
                if short != h["text"]:
                    h["text"], h["text_truncated"] = short, True
            allowance = int(allowance * 0.85)
        dropped = 0
        while _size(out) > RESPONSE_BUDGET and len(hits) > 1:
            hits.pop()
            dropped += 1
        out["truncated"] = True
        note = f"response budget ({RESPONSE_BUDGET} bytes) reached: hit text shortened"
        if dropped:
            note += f" and the last {dropped} hits dropped"
        out["notes"].append(note + "; narrow the query or read one section with pinakes_read")

    def links(self, kb: str | None, doc_id: str, rel: str | None = None, direction: str = "both",
              depth: int = 1, query: str | None = None) -> dict[str, Any]:
        """Typed neighbourhood of a document, depth capped at 3, fitted to the budget."""
        served = self.name_of(kb)
        target = self.kbs[served]
        notes: list[str] = []
        if depth < 1:
            raise ToolError("depth must be at least 1")
        if depth > MAX_DEPTH:
            notes.append(
                f"depth {depth} capped at {MAX_DEPTH}: take one hop and look at the frontier "
                "before going deeper"
            )
            depth = MAX_DEPTH
        if query is not None and not query.strip():
            query = None
        with _naming(served, target):
            start = target.resolve(doc_id)
            result = dict(target.links(doc_id, rel=rel, direction=direction, depth=depth, query=query))
        result["kb"] = served
        result.setdefault("doc_id", start["ulid"])
        result.setdefault("depth", depth)
        result.setdefault("truncated", False)
        result.setdefault("frontier", [])
        result.setdefault("unresolved", [])
        conf = result.get("confidence")
        result["confidence"] = "unknown" if conf is None else conf
        result["notes"] = list(result.get("notes") or []) + notes
        dropped = 0
        while _size(result) > RESPONSE_BUDGET:
            longest = max(("neighbours", "frontier", "unresolved"), key=lambda key: len(result[key]))
            if not result[longest]:
                break
            result[longest] = result[longest][: max(0, len(result[longest]) * 3 // 4)]
            dropped += 1
        if dropped:
            result["truncated"] = True
            result["notes"].append(
                f"response budget ({RESPONSE_BUDGET} bytes) reached: rows dropped; narrow with "
                "rel, direction or query"
            )
        return result

    def read(self, kb: str | None, doc_id: str, section: str | list[str] | None = None) -> dict[str, Any]:
        """A served document's text (or one section), fitted to the budget."""
        served = self.name_of(kb)
        with _naming(served, self.kbs[served]):
            out = dict(self.kbs[served].read(doc_id, section))
        out["kb"] = served
        out["truncated"] = False
        out["notes"] = []
        if len(out["sections"]) > MAX_SECTIONS_LISTED:
            out["notes"].append(f"only the first {MAX_SECTIONS_LISTED} of {len(out['sections'])} sections listed")
            out["sections"] = out["sections"][:MAX_SECTIONS_LISTED]
        text = out["text"]
        out["text"] = ""
        room = RESPONSE_BUDGET - _size(out)
        if len(text.encode("utf-8")) > room:
            allowance = max(MIN_HIT_TEXT, room)
            short = _cut(text, allowance)
            out["text"] = short
            while _size(out) > RESPONSE_BUDGET and allowance > MIN_HIT_TEXT:
                allowance = int(allowance * 0.9)
                out["text"] = _cut(text, allowance)
            out["truncated"] = True
            shown = len(out["text"])
            out["notes"].append(
                f"text truncated to {shown} of {len(text)} characters to fit the response budget: "
                "read one section (see `sections`)"
            )
        else:
            out["text"] = text
        if out["stale"]:
            out["notes"].append("the file changed since the last `pnk sync`; this is its current text")
        return out

    # --- writes (pnk serve --allow-writes) -------------------------------------------------

    def _ref(self, kb: KB, value: str, what: str, target: bool = False) -> str:
        """A document reference an agent gave, made safe to hand to the library.

        ULIDs, ``pnk://`` URIs and (for a target) ``kb://name/path`` pass through;
        anything else is a KB-relative path, refused when it is absolute or leaves
        the KB, and passed on anchored at the KB root (never the server's folder).
        """
        import os
        from pathlib import PurePosixPath

        from .sidecar import is_ulid

        ref = str(value).strip()
        if not ref:
            raise ToolError(f"{what} is empty: give a document id or KB-relative path")
        if "\x00" in ref or "\n" in ref:
            raise ToolError(f"{what}: invalid characters in {ref!r}")
        low = ref.lower()
        if low.startswith("pnk://") or is_ulid(ref.upper()) or (target and low.startswith("kb://")):
            return ref
        if "://" in ref or (len(ref) > 1 and ref[1] == ":"):
            raise ToolError(f"{what} {ref!r}: use a document id, pnk://ID"
                            + (", kb://name/path" if target else "") + " or a KB-relative path")
        norm = os.path.normpath(ref.replace("\\", "/")).replace(os.sep, "/")
        parts = PurePosixPath(norm).parts
        if ref.startswith(("/", "~")) or norm == ".." or (parts and parts[0] == ".."):
            raise ToolError(f"{what} {ref!r} is outside the knowledge base: give a path relative to "
                            "its root, e.g. notes/a.md")
        return str(kb.root / norm)

    def _link_out(self, served: str, kb: KB, out: dict[str, Any]) -> dict[str, Any]:
        root = str(kb.root) + "/"
        dst = dict(out["dst"])
        if isinstance(dst.get("target"), str) and dst["target"].startswith(root):
            dst["target"] = dst["target"][len(root):]  # a dangling path, shown as the agent wrote it
        return {
            "kb": served, "action": out["action"], "source": out["src"], "target": dst,
            "rel": out.get("rel"), "to": out.get("to"), "removed": out.get("removed", []),
            "sidecar": out["sidecar"], "sync": out.get("sync"),
        }

    def link(self, kb: str | None, source: str, target: str, rel: str, note: str | None = None,
             allow_dangling: bool = False) -> dict[str, Any]:
        """Add a typed link to SOURCE's sidecar (idempotent), then sync: ``pnk link``."""
        from .links import check_rel

        served = self.name_of(kb)
        the_kb = self.kbs[served]
        rel = check_rel(rel)
        if note is not None and len(note) > MAX_NOTE:
            raise ToolError(f"note is {len(note)} characters: keep it under {MAX_NOTE}")
        src = self._ref(the_kb, source, "source")
        dst = self._ref(the_kb, target, "target", target=True)
        with _naming(served, the_kb), _kb_relative(the_kb):
            out = the_kb.link(src, dst, rel, note=note or None, allow_dangling=allow_dangling)
        return self._link_out(served, the_kb, out)

    def unlink(self, kb: str | None, source: str, target: str, rel: str | None = None) -> dict[str, Any]:
        """Remove SOURCE's sidecar links to TARGET (of ``rel`` only, if given), then sync: ``pnk unlink``."""
        from .links import check_rel

        served = self.name_of(kb)
        the_kb = self.kbs[served]
        if rel is not None and rel.strip():
            rel = check_rel(rel)
        else:
            rel = None
        src = self._ref(the_kb, source, "source")
        dst = self._ref(the_kb, target, "target", target=True)
        with _naming(served, the_kb), _kb_relative(the_kb):
            out = the_kb.unlink(src, dst, rel=rel)
        return self._link_out(served, the_kb, {**out, "rel": rel})

    def kbs_info(self) -> dict[str, Any]:
        """Every served KB with counts and its last sync time."""
        rows = []
        for name, kb in sorted(self.kbs.items()):
            row: dict[str, Any] = {"name": name, "root": str(kb.root), "indexed": False,
                                   "aliases": sorted(a for a, o in self.aliases.items() if o == name)}
            try:
                info = kb.status()
            except PinakesError as exc:
                row["error"] = _one_line(str(exc))
            else:
                row["indexed"] = bool(info.get("indexed"))
                for key in ("documents", "chunks", "last_sync", "generation", "embedder", "problems",
                            "folders", "tags"):
                    if key in info:
                        row[key] = info[key]
                if not row["indexed"]:
                    row["error"] = "not indexed yet: run `pnk sync`"
            rows.append(row)
        out: dict[str, Any] = {"kbs": rows, "truncated": False, "notes": []}
        total = len(rows)
        while _size(out) > RESPONSE_BUDGET and len(rows) > 1:
            rows.pop()
        if len(rows) < total:
            out["truncated"] = True
            out["notes"].append(f"only {len(rows)} of {total} KBs listed (response budget)")
        return out

    def warm_up(self) -> threading.Thread:
        """Load the embedder and vectors before the first call, in the background.

        Returns the thread so the transport can join it before the process
        exits: a native runtime (onnxruntime) aborts the process if it is torn
        down while a model load is still running on another thread.
        """

        def run() -> None:
            with self.lock:
                for kb in self.kbs.values():
                    try:
                        if not (kb.config.state_dir / "index.db").exists():
                            continue
                        kb.embedder.embed_query("warm up")
                        kb.dense_index(kb.reader())
                        kb.warm_graph()
                    except Exception:  # noqa: BLE001 - a real problem resurfaces as a tool error on the first call
                        pass

        thread = threading.Thread(target=run, name="pinakes-warm-up", daemon=True)
        thread.start()
        return thread

    def warm_after_sync(self, root: Any) -> None:
        """After a sync of the served KB at ``root`` (``pnk serve --watch``): load its new
        vectors and graph now, so the next call does not (called on the watcher's thread)."""
        for kb in self.kbs.values():
            if kb.root == root:
                with self.lock:
                    try:
                        kb.dense_index(kb.reader())
                        kb.warm_graph()
                    except Exception:  # noqa: BLE001 - the next call reports a real problem
                        pass

    # --- registration ------------------------------------------------------------------

    def _guard(self, fn: Callable[P, R]) -> Callable[P, R]:
        """Serialise the call and turn typed Pinakes errors into one-line tool errors."""

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            with self.lock:
                try:
                    return fn(*args, **kwargs)
                except PinakesError as exc:
                    raise ToolError(_one_line(str(exc))) from exc
                except (OSError, sqlite3.Error) as exc:
                    storage = storage_problem(exc)  # disk full, read-only, a deleted store
                    if storage is None:
                        raise
                    raise ToolError(storage) from exc

        return wrapper

    def _register(self) -> None:
        server = self
        guard = self._guard
        kb_names = self._served()

        KbArg = Annotated[
            str | None,
            Field(description=f"Knowledge base name (served: {kb_names}); may be omitted when one is served."),
        ]
        DocArg = Annotated[
            str,
            Field(description="The document: its ULID, a pnk:// URI, or its KB-relative path (e.g. notes/x.md).",
                  min_length=1),
        ]

        @guard
        def pinakes_search(
            query: Annotated[str, Field(description="What you are looking for, in words. Refine it rather than raising k.")],
            kb: Annotated[str | None, Field(description=f"Knowledge base name (served: {kb_names}), or 'all'. Default: every served KB.")] = None,
            k: Annotated[int | None, Field(description=f"How many hits (default: the KB's [retrieval] k, usually 10; capped at {MAX_K}).")] = None,
            entities: Annotated[list[str] | None, Field(description="Exact names or phrases to boost lexically, e.g. ['BM25', 'Robertson'].")] = None,
            concepts: Annotated[list[str] | None, Field(description="Ideas to blend into the query's meaning, e.g. ['term weighting'].")] = None,
            channel: Annotated[str | None, Field(description="Graph channel: 'off', 'auto' or an installed one such as 'ppr' or 'expand'. Default: the KB's setting (auto: ppr when installed).")] = None,
            explain: Annotated[bool, Field(description="Also say why each hit is there: each stage's numbers, and the graph's seed and path. Larger answers: use it to debug a ranking, not by default.")] = False,
            within: Annotated[list[str] | None, Field(description="Search only documents under one of these folders or files, or matching a glob, from the KB's root, e.g. ['meetings', 'projects/2024-*'].")] = None,
            tags: Annotated[list[str] | None, Field(description="Search only documents carrying every one of these tags (front matter or #tag; 'project' also matches #project/alpha).")] = None,
            since: Annotated[str | None, Field(description="Search only documents dated from this day on: '2024', '2024-03' or '2024-03-14' (a journal day or chat session, by front matter date/created or file name).")] = None,
            until: Annotated[str | None, Field(description="Search only documents dated up to this day, included: '2024', '2024-03' or '2024-03-14'.")] = None,
            not_within: Annotated[list[str] | None, Field(description="Leave out the documents under these folders or files, or matching a glob, e.g. ['archive'].")] = None,
        ) -> Annotated[CallToolResult, SearchOut]:
            out = server.search(query, kb, k, entities or (), concepts or (), channel, explain,
                                {"within": within or (), "tags": tags or (), "since": since, "until": until,
                                 "not_within": not_within or ()})
            return _result(out, render_search(out))

        @guard
        def pinakes_links(
            doc_id: DocArg,
            kb: KbArg = None,
            rel: Annotated[str | None, Field(description="Only links of this relation (e.g. cites, extends, uses).")] = None,
            direction: Annotated[Literal["out", "in", "both"], Field(description="out: links this document makes; in: links to it; both.")] = "both",
            depth: Annotated[int, Field(description="Hops to walk (default 1, capped at 3). Take one hop and look before asking for 3.")] = 1,
            query: Annotated[str | None, Field(description="Rank neighbours by similarity to this text (and get a calibrated confidence).")] = None,
        ) -> Annotated[CallToolResult, LinksOut]:
            out = server.links(kb, doc_id, rel, direction, depth, query)
            return _result(out, render_links(out))

        @guard
        def pinakes_read(
            doc_id: DocArg,
            kb: KbArg = None,
            section: Annotated[str | list[str] | None, Field(description="One section by heading path, 'Intro > Background' or ['Intro', 'Background']; its last heading alone is enough when unique. Default: the whole document.")] = None,
        ) -> Annotated[CallToolResult, ReadOut]:
            out = server.read(kb, doc_id, section)
            return _result(out, render_read(out))

        @guard
        def pinakes_kbs() -> Annotated[CallToolResult, KbsOut]:
            out = server.kbs_info()
            return _result(out, render_kbs(out))

        add = self.mcp.add_tool
        add(pinakes_search, title="Search the knowledge base", annotations=READ_ONLY, description=(
            "Hybrid search (BM25 + embeddings, fused) over local Markdown knowledge bases. "
            "Returns ranked chunks (doc_id, title, path, heading path, text, score, per-channel "
            "ranks), a calibrated confidence ('unknown' when uncalibrated) and whether it abstained; "
            "an abstention's `reason` names the part of the question the notes do not support "
            "(rephrase that part, or report the gap rather than answer from the hits). "
            "Prefer refining the query, or naming entities/concepts, over raising k; when you "
            "know where the answer lies, narrow with `within` (folders) or `tags`. "
            f"k is capped at {MAX_K}; `truncated: true` means the answer hit the size budget: "
            "narrow the query, don't page."
        ))
        add(pinakes_links, title="Follow typed links", annotations=READ_ONLY, description=(
            "The typed neighbourhood of one document: neighbours (doc_id, title, rel, direction, "
            "distance, score), the frontier of unexpanded next hops, and dangling links "
            "(unresolved, never dropped). With `query`, neighbours rank by similarity to it and "
            "confidence is calibrated; without, by edge weight and distance, confidence 'unknown'. "
            "Take one hop and look at the frontier before asking for depth 3 (the cap). "
            "Fan-out per node is capped at the KB's adjacent_k; `truncated: true` means narrow "
            "(rel, direction, query), don't page."
        ))
        add(pinakes_read, title="Read a document or section", annotations=READ_ONLY, description=(
            "The text of one indexed document, or of one section chosen by heading path, with "
            "its sidecar metadata (title, tags, front matter, authored links) and the list of its "
            "sections. doc_id is a ULID, pnk:// URI or KB-relative path. A long document is "
            "truncated to the response budget: then read one section."
        ))
        add(pinakes_kbs, title="List knowledge bases", annotations=READ_ONLY, description=(
            "The knowledge bases this server serves, with document and chunk counts, the last "
            "sync time and sync generation. Use a name as the `kb` argument of the other tools."
        ))


    def _register_writes(self) -> None:
        """pinakes_link and pinakes_unlink: registered only with ``--allow-writes``."""
        server = self
        guard = self._guard
        KbArg = Annotated[
            str | None,
            Field(description=f"Knowledge base name (served: {self._served()}); may be omitted when one is served."),
        ]
        SourceArg = Annotated[str, Field(
            description="The document whose sidecar gets the link: its ULID, pnk:// URI or "
                        "KB-relative path (e.g. notes/a.md).", min_length=1)]
        TargetArg = Annotated[str, Field(
            description="The linked document: ULID, pnk:// URI, KB-relative path, or "
                        "kb://name/path for a document of another fleet KB.", min_length=1)]

        @guard
        def pinakes_link(
            source: SourceArg,
            target: TargetArg,
            rel: Annotated[str, Field(description="The relation, one short word: cites, extends, uses, "
                                                  "contradicts, part_of, ... (letters, digits, _ - . :).")],
            kb: KbArg = None,
            note: Annotated[str | None, Field(description=f"A short note kept with the link (at most {MAX_NOTE} characters).")] = None,
            allow_dangling: Annotated[bool, Field(description="Link even when target is not (yet) a known document (a path inside the KB).")] = False,
        ) -> Annotated[CallToolResult, LinkOut]:
            out = server.link(kb, source, target, rel, note, allow_dangling)
            return _result(out, render_link(out))

        @guard
        def pinakes_unlink(
            source: SourceArg,
            target: TargetArg,
            rel: Annotated[str | None, Field(description="Only remove links of this relation (default: every sidecar link to target).")] = None,
            kb: KbArg = None,
        ) -> Annotated[CallToolResult, LinkOut]:
            out = server.unlink(kb, source, target, rel)
            return _result(out, render_link(out))

        add = self.mcp.add_tool
        add(pinakes_link, title="Record a typed link", annotations=WRITES, description=(
            "Record that source relates to target (rel: cites, extends, uses, ...) in source's "
            "sidecar (.pnk.yaml); never edits a document's text. Idempotent: the same link twice "
            "is stored once ('exists'). The index is updated before the call returns, so "
            "pinakes_links and searches see the link at once."
        ))
        add(pinakes_unlink, title="Remove a typed link", annotations=WRITES, description=(
            "Remove source's sidecar links to target (only those of rel, when given). Links "
            "written in a document's text are part of the document and are never edited. "
            "Idempotent: 'absent' when there was nothing to remove."
        ))


def _result(data: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


# --- text renderings (for clients that ignore structuredContent) -----------------------------


def _notes(out: dict[str, Any]) -> list[str]:
    lines = [f"note: {n}" for n in out.get("notes") or []]
    if out.get("note"):
        lines.append(f"note: {out['note']}")
    return lines


def render_search(out: dict[str, Any]) -> str:
    from .explain import hit_lines, query_lines

    n = len(out["hits"])
    head = (f"{n} hit{'s' if n != 1 else ''} for {out['query']!r} in {out['kb']} "
            f"(confidence {out['confidence']}{', abstains' if out['abstained'] else ''})")
    lines = [head]
    if out["abstained"] and out.get("reason"):
        lines.append(f"abstains: {out['reason']}")
    explained = out.get("explain") or {}
    for name, one in (explained.get("by_kb") or ({out["kb"]: explained} if explained else {})).items():
        lines += [f"[{name}] {line}" for line in query_lines(one)]
    for i, h in enumerate(out["hits"], 1):
        heading = " > ".join(h["heading_path"])
        ranks = ", ".join(f"{c} #{r}" for c, r in h["ranks"].items() if r)
        lines.append("")
        lines.append(f"{i}. {h['title']} [{h['kb']}] {h['path']}:{h['start_line']}"
                     + (f" § {heading}" if heading else ""))
        lines.append(f"   doc_id {h['doc_id']}  score {h['score']:.4f}  ({ranks or 'no channel'})")
        if h.get("explain"):
            lines += [f"   why: {line}" for line in hit_lines(h["explain"])]
        lines.append("   " + h["text"].replace("\n", "\n   "))
    if out["truncated"]:
        lines.append("")
        lines.append("truncated: narrow the query rather than paging")
    lines += [f"skipped {s['kb']}: {s['reason']}" for s in out.get("skipped") or []]
    if out.get("scope"):
        from .scope import scope_words

        lines.append(f"searched {out['scope']['documents']} documents {scope_words(out['scope'])}")
    if out.get("channel_reason"):
        lines.append(f"channel {out['channel_reason']}")
    return "\n".join(lines + _notes(out))


def render_links(out: dict[str, Any]) -> str:
    lines = [f"links of {out['doc_id']} in {out['kb']} (depth {out['depth']}, "
             f"confidence {out['confidence']}{', truncated' if out['truncated'] else ''})"]
    for nb in out.get("neighbours", []):
        score = nb.get("score")
        lines.append(f"  {nb.get('direction')} {nb.get('rel')} d={nb.get('distance')} "
                     f"{nb.get('doc_id')} {nb.get('title') or ''}"
                     + (f" score {score:.4f}" if isinstance(score, int | float) else ""))
    if out.get("frontier"):
        lines.append("frontier (unexpanded next hops):")
        lines += [f"  {f.get('rel')} -> {f.get('doc_id')}" for f in out["frontier"]]
    if out.get("unresolved"):
        lines.append("unresolved:")
        lines += [f"  {u.get('target')}: {u.get('reason')}" for u in out["unresolved"]]
    return "\n".join(lines + _notes(out))


def render_read(out: dict[str, Any]) -> str:
    where = " > ".join(out["section"]) if out["section"] else "whole document"
    head = [f"{out['title']} ({out['path']}, {out['doc_id']}) — {where}, lines {out['lines'][0]}-{out['lines'][1]}"]
    if out["tags"]:
        head.append("tags: " + ", ".join(out["tags"]))
    for link in out["links"]:
        head.append(f"link: {link.get('rel', 'links-to')} -> {link.get('to')}")
    return "\n".join(head + _notes(out) + ["", out["text"]])


def render_link(out: dict[str, Any]) -> str:
    src = out["source"].get("path") or out["source"].get("doc_id")
    dst = out["target"].get("path") or out["target"].get("target") or out["target"].get("doc_id")
    if out["action"] in ("added", "updated", "exists"):
        verb = {"added": "linked", "updated": "updated the note of", "exists": "already linked:"}[out["action"]]
        line = f"{verb} {src} -> {out['to']} ({out['rel']}) in {out['sidecar']}"
    elif out["action"] == "removed":
        line = "; ".join(f"unlinked {src} -> {r['to']} ({r['rel']})" for r in out["removed"])
        line += f" in {out['sidecar']}"
    else:
        line = f"{out['sidecar']} has no link to {dst}" + (f" of relation {out['rel']!r}" if out["rel"] else "")
    if out["target"].get("dangling"):
        line += f"; {dst} is not a known document yet (dangling)"
    return line + (f"\nsync: {out['sync']}" if out.get("sync") else "")


def render_kbs(out: dict[str, Any]) -> str:
    lines = []
    for kb in out["kbs"]:
        if kb["indexed"]:
            lines.append(f"{kb['name']}: {kb['documents']} documents, {kb['chunks']} chunks, "
                         f"last sync {kb['last_sync']} (generation {kb['generation']}) — {kb['root']}")
            for key, mark in (("folders", ""), ("tags", "#")):
                if kb.get(key):
                    lines.append(f"  {key}: " + ", ".join(f"{mark}{k} ({n})" for k, n in kb[key].items()))
        else:
            lines.append(f"{kb['name']}: {kb.get('error') or 'not indexed'} — {kb['root']}")
    return "\n".join(lines + _notes(out))


# --- transports --------------------------------------------------------------------------------


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``.

    A static shared secret, compared in constant time, is all a local server
    needs; the SDK's OAuth machinery (token verifiers, metadata routes) is for
    servers with an authorization server. Lifespan events pass through.
    """

    def __init__(self, app: Callable[..., Any], token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            body = json.dumps({
                "error": "invalid_token",
                "error_description": "missing or wrong bearer token (Authorization: Bearer <token>)",
            }).encode()
            await send({
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="pinakes"'),
                ],
            })
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False


def run_stdio(server: PinakesServer) -> None:
    """Serve over stdin/stdout until the client closes the pipe."""
    warming = server.warm_up()
    try:
        server.mcp.run("stdio")
    finally:
        warming.join(timeout=60)


def http_app(server: PinakesServer, host: str, token: str | None) -> Any:
    """The streamable-HTTP ASGI app at ``/mcp``, behind the bearer check when a token is set."""
    app: Any = server.mcp.streamable_http_app(host=host)
    return BearerTokenMiddleware(app, token) if token else app


def run_http(server: PinakesServer, host: str, port: int, token: str | None) -> None:
    """Serve streamable HTTP with uvicorn until interrupted."""
    import uvicorn

    warming = server.warm_up()
    config = uvicorn.Config(http_app(server, host, token), host=host, port=port, log_level="warning",
                            lifespan="on")
    try:
        uvicorn.Server(config).run()
    finally:
        warming.join(timeout=60)
