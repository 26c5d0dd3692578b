"""The library API: one :class:`KB` is the product; the CLI, MCP server and eval are faces of it.

>>> kb = KB.open("examples/retrieval-kb")      # doctest: +SKIP
>>> kb.sync()                                   # doctest: +SKIP
>>> kb.search("how does late interaction work").hits[0].title  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from . import plugins
from .config import CONFIG_NAME, DEFAULTS, TEMPLATE, Config, load_config, slugify
from .config import find_kb_root as _find_root
from .errors import (
    AmbiguousDocument,
    DocumentNotFound,
    IndexDamaged,
    KBNotFound,
    PinakesError,
    UnknownEmbedder,
)
from .fsutil import atomic_write, copies_in_words, markdown_left_out, site_copies, suffix_counts
from .search import DenseIndex, SearchInputs, SearchResult, hybrid_search
from .sidecar import is_ulid
from .store import Store, damage_error, note_once

if TYPE_CHECKING:
    from .sync import ProgressFn, SyncReport

GITIGNORE_LINE = ".pinakes/"

_F = TypeVar("_F", bound=Callable[..., Any])


def _detects_damage(method: _F) -> _F:
    """A read that fails on a damaged index says so in one line and leaves the mark that
    makes the next ``pnk sync`` rebuild it (pinakes/health.py).

    An unexpected failure is blamed on the index only when the file confirms it
    (SQLite's own corruption codes, or :func:`pinakes.health.verify_index`): a
    bug stays a bug.
    """

    @functools.wraps(method)
    def guarded(self: KB, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except IndexDamaged as exc:
            self._mark_damaged(exc.reason)
            raise
        except PinakesError:
            raise
        except Exception as exc:
            from .health import damage_of

            reason = damage_of(exc, self.config.state_dir / "index.db")
            if reason is None:
                raise
            self._mark_damaged(reason)
            raise damage_error(reason) from exc

    return guarded  # type: ignore[return-value]


class KB:
    """A knowledge base: a folder with ``pinakes.toml``, its documents and its derived store."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.root = config.root
        self._embedder: Any = None
        self._reader: Store | None = None
        self._reader_ino: int | None = None
        self._dense: DenseIndex | None = None
        self._graph: Any = None
        self._idf_cache: dict[str, Any] = {}
        self._calibration: Any = None

    def __repr__(self) -> str:
        return f"KB({str(self.root)!r})"

    # --- opening ---------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None) -> KB:
        """Open the KB at ``path``, or the one enclosing the current folder."""
        if path is None:
            root = _find_root()
        else:
            p = Path(path).expanduser()
            if not p.exists():
                raise KBNotFound(f"no such folder: {p}")
            root = p.resolve() if (p / CONFIG_NAME).is_file() else _find_root(p)
        return cls(load_config(root))

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".", name: str | None = None,
             template: str | None = None) -> KB:
        """Create ``pinakes.toml`` (never overwriting one) and ignore ``.pinakes/`` in git.

        ``template`` (see :mod:`pinakes.templates`) adds its seed schema to the file.
        """
        root = Path(path).expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise KBNotFound(f"{root} is not a folder")
        root.mkdir(parents=True, exist_ok=True)
        cfg = root / CONFIG_NAME
        if cfg.exists():
            raise KBNotFound(f"{cfg} already exists; not overwriting it")
        slug = slugify(name or root.name)
        text = TEMPLATE.format(name=slug)
        found = markdown_left_out(root, list(DEFAULTS["kb"]["include"]), list(DEFAULTS["kb"]["exclude"]))
        if found:
            # A Docusaurus or Nextra folder is .mdx pages: include them from the start rather
            # than index none and say so after the first sync.
            counts, patterns = suffix_counts(found)
            text = text.replace('# include = ["**/*.md"]\n',
                                f'include = ["**/*.md", {patterns}]  # pnk init found {counts} files\n', 1)
        copies = site_copies(root)
        if copies:
            # A docs site's frozen versions and translations repeat every page: search the
            # current docs in the site's own language, and say how to take the copies back in.
            exclude = [*DEFAULTS["kb"]["exclude"], *(f"{folder}/**" for folder, _ in copies)]
            text = re.sub(r"^# exclude = .*$", lambda _: f"exclude = {json.dumps(exclude)}  # pnk init left out "
                          + copies_in_words(copies), text, count=1, flags=re.MULTILINE)
        if template:
            from .templates import apply_template

            text = apply_template(text, template)
        atomic_write(cfg, text)
        gi = root / ".gitignore"
        lines = gi.read_text(encoding="utf-8").splitlines() if gi.exists() else []
        if not any(line.strip() in (GITIGNORE_LINE, ".pinakes", "/.pinakes/") for line in lines):
            body = "\n".join(lines + [GITIGNORE_LINE]) + "\n"
            atomic_write(gi, body)
        return cls(load_config(root))

    @property
    def name(self) -> str:
        return self.config.name

    # --- components --------------------------------------------------------------

    @property
    def embedder(self) -> Any:
        """The configured embedder, constructed once (it loads its model lazily)."""
        if self._embedder is None:
            available = plugins.get_embedders()
            wanted = self.config.embedder_id
            if wanted not in available:
                from .extras import not_installed

                known = ", ".join(sorted(available)) or "none"
                missing = not_installed("embedder", wanted)
                raise UnknownEmbedder(f"[embedding] model: {missing}" if missing else
                                      f"unknown embedder {wanted!r} in [embedding] model (installed: {known})")
            self._embedder = available[wanted]()
        return self._embedder

    def graph_channels(self) -> dict[str, Any]:
        """Installed graph channels by name."""
        return plugins.get_graph_channels()

    def channel_name(self, requested: str | None = None,
                     installed: dict[str, Any] | None = None) -> str:
        """The graph channel a search uses: ``requested``, else ``[retrieval] graph_channel``.

        ``"auto"`` (the default) lets this KB's golden set decide, else the
        installed default channel (``ppr``), else ``"off"``; see
        :mod:`pinakes.channel_choice`, whose ``channel_in_force`` also says why.
        ``installed``: the channel table, when the caller already collected it.
        """
        from .channel_choice import channel_in_force

        return channel_in_force(self, requested, installed)[0]

    @property
    def signature(self) -> str:
        derivers = [f"{name}:{getattr(d, 'version', '1')}" for name, d in self.edge_derivers().items()]
        return Store.signature_for(
            str(self.config.retrieval["tokenizer"]), self.config.embedder_id,
            plugins.get_store_schemas(), derivers, self._link_settings(),
        )

    def _link_settings(self) -> list[str]:
        """``[kb]`` settings that change how sync reads links, when not at their default.

        Part of the store's signature, so editing one rebuilds the index (free,
        embeddings are cached) instead of keeping links resolved the old way.
        """
        out = []
        bundle = str(self.config.kb.get("bundle_root") or "").strip("/")
        if bundle:
            out.append(f"bundle_root={bundle}")
        no_hub = list(self.config.kb.get("no_link_hub") or [])
        if no_hub:
            out.append("no_link_hub=" + json.dumps(sorted(map(str, no_hub))))
        return out

    def edge_derivers(self) -> dict[str, Any]:
        """Edge derivers enabled for this KB, by name (run by sync; part of the signature).

        ``[graph] NAME = true|false`` switches an installed deriver on or off. A
        deriver whose ``default_enabled`` is False (an eval-gated one, such as
        ``mentions``) runs only when switched on, so installing it changes nothing
        until a KB asks for it. A deriver with ``for_kb(kb)`` returns its instance
        for this KB (its settings); one that ``supersedes`` others replaces them.
        """
        from .errors import ConfigError
        from .extras import not_installed

        switches = self.config.section("graph")
        installed = plugins.get_edge_derivers()
        for name, on in switches.items():
            missing = on is True and name not in installed and not_installed("edge deriver", name)
            if missing:  # asked for, known, absent: building without it would mislead
                raise ConfigError(f"[graph] {name} = true, but the {missing}")
        out: dict[str, Any] = {}
        for name, deriver in installed.items():
            on = switches.get(name, getattr(deriver, "default_enabled", True))
            if not isinstance(on, bool):
                raise ConfigError(f"[graph] {name} should be true or false, got {on!r}")
            if on:
                for_kb = getattr(deriver, "for_kb", None)
                out[name] = for_kb(self) if for_kb is not None else deriver
        for deriver in list(out.values()):
            for other in getattr(deriver, "supersedes", ()):
                out.pop(other, None)
        return out

    def open_store_for_write(self, rebuild: bool = False) -> tuple[Store, bool]:
        """Open the store for a sync, rebuilding it when its signature changed."""
        return Store.open_for_write(
            self.config.state_dir, self.signature, str(self.config.retrieval["tokenizer"]),
            plugins.get_store_schemas(), rebuild=rebuild,
        )

    def reader(self) -> Store:
        """The read connection, reopened when a rebuild replaced the file under it."""
        path = self.config.state_dir / "index.db"
        try:
            ino = path.stat().st_ino
        except FileNotFoundError:
            ino = None
        if self._reader is None or ino != self._reader_ino:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._dense = None
            self._graph = None
            self._reader = Store.open_for_read(self.config.state_dir, self.signature)
            self._reader_ino = ino
            if self._reader.note:
                note_once(f"{self.name}: {self._reader.note}")
        return self._reader

    @property
    def index_note(self) -> str:
        """What the index lacks for this install, or has that it cannot use ("" when it matches).

        Set when the index was synced by another install with other plugins
        (see :func:`pinakes.store.read_compatibility`).
        """
        return self.reader().note

    def dense_index(self, store: Store) -> DenseIndex:
        """The vector matrix of the store's current generation (reloaded after a sync)."""
        gen = store.generation
        if self._dense is None or self._dense.generation != gen:
            ids, codes, scale, crc = store.load_vectors(self.embedder.dim)
            self._dense = DenseIndex(gen, ids, codes, scale, crc)
        return self._dense

    def graph_index(self, store: Store) -> Any:
        """The in-memory graph of the store's current generation (reloaded after a sync)."""
        from .graph import GraphIndex

        gen = store.generation
        if self._graph is None or self._graph.generation != gen:
            self._graph = GraphIndex.load(store.conn, gen, cache=store.state_dir)
        return self._graph

    def warm_graph(self, store: Store | None = None) -> bool:
        """Load this generation's graph and let the search's channel build what it caches.

        For long-lived processes (``pnk serve``): the first query after a sync
        would otherwise pay for the graph arrays and the channel's
        per-generation indexes (PPR's name index, its query-independent walk,
        SciPy's import). A channel offers this as an optional
        ``prepare(kb, store, graph)``. True when a channel prepared a graph.
        """
        installed = self.graph_channels()
        channel = installed.get(self.channel_name(installed=installed))
        prepare = getattr(channel, "prepare", None)
        if prepare is None:
            return False
        store = self.reader() if store is None else store
        graph = self.graph_index(store)
        if graph.n_edges == 0:
            return False
        prepare(self, store, graph)
        return True

    def _mark_damaged(self, reason: str) -> None:
        from .health import mark_damaged

        mark_damaged(self.config.state_dir, reason)
        self.invalidate()

    def invalidate(self) -> None:
        """Forget cached reader state (after this process synced)."""
        if self._reader is not None:
            self._reader.close()
        self._reader = None
        self._dense = None
        self._graph = None
        self._idf_cache.clear()

    def close(self) -> None:
        self.invalidate()

    # --- the verbs ---------------------------------------------------------------

    def sync(self, *, rebuild: bool = False, progress: ProgressFn | None = None,
             lock_wait: float = 30.0, check_channel: bool = True) -> SyncReport:
        """Index what changed (free: no LLM ever runs here).

        Then, with ``graph_channel = "auto"`` and a golden set, measure the
        KB's channel verdict again if it is out of date (``check_channel``;
        :mod:`pinakes.channel_choice`): seconds, and only when it is.
        """
        # Imported here: the Markdown parser behind sync is not needed to search,
        # and `pnk search` starts faster without it (docs/performance.md).
        from .channel_choice import refresh
        from .sync import SyncInputs, sync_kb

        cfg = self.config
        inputs = SyncInputs(
            name=self.name, root=self.root, state_dir=cfg.state_dir, kb=cfg.kb,
            tokenizer=str(cfg.retrieval["tokenizer"]),
            batch_size=int(cfg.section("embedding").get("batch_size", 32)),
            load_embedder=lambda: self.embedder, signature=lambda: self.signature,
            open_store=lambda rebuild: self.open_store_for_write(rebuild=rebuild),
            derivers=self.edge_derivers,
        )
        try:
            report = sync_kb(inputs, rebuild=rebuild, progress=progress, lock_wait=lock_wait)
        finally:
            self.invalidate()
        if check_channel:  # graph_channel = "auto" with a golden set: is its verdict current?
            report.channel = refresh(self, None if progress is None else
                                     lambda done, total: progress("channel", done, total))
        return report

    @_detects_damage
    def search(self, query: str, k: int | None = None, entities: Sequence[str] = (),
               concepts: Sequence[str] = (), channel: str | None = None,
               channels: Sequence[str] | None = None, graph_roots: int | None = None,
               explain: bool = False, within: Sequence[str] = (),
               tags: Sequence[str] = (), since: str | None = None,
               until: str | None = None, not_within: Sequence[str] = ()) -> SearchResult:
        """Hybrid search; see :mod:`pinakes.search` (``channels``, ``graph_roots``: for eval).

        ``explain``: keep every stage's record, on the result and on each hit
        (``pnk search --explain``, :mod:`pinakes.explain`); the ranking is the same.
        ``within`` (folders, files or globs from the KB's root, or absolute paths inside
        it) and ``tags`` scope the search to the documents under one of those paths that
        carry every tag, and ``since`` / ``until`` (``2024``, ``2024-03``, ``2024-03-14``) to
        the documents dated in that span, leaving out those under ``not_within``
        (:mod:`pinakes.scope`); none there is an :class:`~pinakes.scope.OutOfScope` error.
        """
        from .scope import make_scope

        scoped = within or tags or since or until or not_within
        scope = make_scope(within, tags, self.root, since, until, not_within) if scoped else None
        return hybrid_search(self.search_inputs(), query, k=k, entities=entities,
                             concepts=concepts, channel=channel, channels=channels,
                             graph_roots=graph_roots, explain=explain, scope=scope)

    def search_inputs(self) -> SearchInputs:
        """What :func:`pinakes.search.hybrid_search` reads of this KB, and nothing more."""
        return SearchInputs(
            name=self.name, retrieval=self.config.retrieval,
            no_link_hub=[str(p) for p in self.config.kb.get("no_link_hub") or []],
            embedder=self.embedder, reader=self.reader, dense_index=self.dense_index,
            memo=self._idf_cache, channels=self.graph_channels,
            choose_channel=self._choose_channel, confidence=self.confidence, owner=self,
        )

    def _choose_channel(self, asked: str | None, installed: dict[str, Any]) -> tuple[str, str]:
        """``(channel, why)`` for one search (``asked``: its own ``--channel``, or None)."""
        from .channel_choice import channel_in_force

        return channel_in_force(self, asked, installed)

    def confidence(self, hits: list[Any], lists: Any, cosines: np.ndarray,
                   record: dict[str, Any] | None = None) -> float | None:
        """Calibrated probability that the hits hold the evidence; None when uncalibrated.

        Features come from the lists the search already holds (a few NumPy
        reductions and one indexed lookup); see :mod:`pinakes.evaluation.calibration`.
        ``record`` (``--explain``) receives the features by name and why the
        confidence is unknown when it is.
        """
        model = self.calibration()
        if model is None or not hits or not model.applies_to(lists):
            if record is not None:
                record["unknown"] = ("no calibration in force (none, or one fitted for another "
                                     "embedder or feature set)" if model is None else
                                     "the calibration in force was fitted on other lists or "
                                     "another graph channel")
            return None  # uncalibrated, or a search unlike those it was fitted on
        from .evaluation.calibration import extract_features

        features = extract_features(self, hits, lists, cosines)
        if record is not None:
            record["features"] = {name: float(v) for name, v in
                                  zip(model.features, features, strict=False)}
            support = getattr(lists, "support", None)
            if support is not None:  # what the reader found, for "why this confidence?"
                record["reader"] = support.to_dict()
        return float(model.predict(features))

    @_detects_damage
    def status(self) -> dict[str, Any]:
        """Counts and facts about the store, for ``pnk status`` and ``pinakes_kbs``."""
        out: dict[str, Any] = {"name": self.name, "root": str(self.root)}
        db = self.config.state_dir / "index.db"
        if not db.exists():
            out["indexed"] = False
            return out
        store = self.reader()
        with store.snapshot() as conn:
            out["indexed"] = True
            out["documents"] = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
            out["chunks"] = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            out["vectors"] = conn.execute(
                "SELECT count(*) FROM chunks WHERE vec IS NOT NULL"
            ).fetchone()[0]
            # A first sync commits documents before embedding them (sync.py phase 4).
            out["embedding_pending"] = int(store.get_meta("embedding_pending") or 0)
            last = store.get_meta("last_sync")
            out["last_sync"] = (
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(last))) if last else None
            )
            out["generation"] = store.generation
            out["schema"] = store.get_meta("signature")
            out["embedder"] = store.get_meta("embedder")
            out["dim"] = int(store.get_meta("dim") or 0)
            out["problems"] = len(store.document_problems())
            from .graph import edge_counts
            from .scope import scope_outline

            out["nodes_by_kind"], out["edges_by_kind"] = edge_counts(conn)
            out.update(scope_outline(conn))  # what --in and --tag can take
        size = 0
        for f in self.config.state_dir.iterdir():
            if f.name.startswith("index.db"):
                size += f.stat().st_size
        out["store_bytes"] = size
        cache = self.config.state_dir / "cache.db"
        out["cache_bytes"] = cache.stat().st_size if cache.exists() else 0
        return out

    # --- documents -----------------------------------------------------------------

    @_detects_damage
    def resolve(self, ref: str) -> dict[str, Any]:
        """Find one document by ULID, ``pnk://`` URI, KB-relative path or unique title."""
        ref = str(ref).strip()
        if not ref:
            raise DocumentNotFound("empty document reference")
        store = self.reader()
        conn = store.conn
        cols = "doc, ulid, path, title, tags, meta, sidecar_path, provisional, problems"
        candidate = ref.removeprefix("pnk://")
        if "/" not in candidate and is_ulid(candidate.upper()):
            rows = conn.execute(
                f"SELECT {cols} FROM documents WHERE ulid = ?", (candidate.upper(),)
            ).fetchall()
            if len(rows) > 1:
                raise AmbiguousDocument(
                    f"id {candidate} is claimed by {len(rows)} documents: "
                    + ", ".join(r["path"] for r in rows)
                )
            if rows:
                return dict(rows[0])
            raise DocumentNotFound(f"no document with id {candidate} in {self.name}")
        rel = self._relative(ref)
        if rel is not None:
            row = conn.execute(f"SELECT {cols} FROM documents WHERE path = ?", (rel,)).fetchone()
            if row:
                return dict(row)
        rows = conn.execute(
            f"SELECT {cols} FROM documents WHERE title = ? COLLATE NOCASE", (ref,)
        ).fetchall()
        if len(rows) == 1:
            return dict(rows[0])
        if len(rows) > 1:
            raise AmbiguousDocument(
                f"{len(rows)} documents are titled {ref!r}: "
                + ", ".join(r["path"] for r in rows) + " (use a path or id)"
            )
        raise DocumentNotFound(f"no document {ref!r} in {self.name} (try a path, id or exact title)")

    def _relative(self, ref: str) -> str | None:
        """A KB-relative POSIX path for ``ref`` if it names a path inside the KB."""
        p = Path(ref)
        if p.is_absolute():
            try:
                return p.resolve().relative_to(self.root).as_posix()
            except ValueError:
                return None
        cwd_based = (Path.cwd() / p)
        try:
            rel = cwd_based.resolve().relative_to(self.root).as_posix()
            if (self.root / rel).exists():
                return rel
        except ValueError:
            pass
        norm = os.path.normpath(ref).replace(os.sep, "/").lstrip("/")
        if norm.startswith("../"):
            return None
        return norm

    @_detects_damage
    def show(self, ref: str) -> dict[str, Any]:
        """A document's metadata and sections (``pnk show``)."""
        row = self.resolve(ref)
        conn = self.reader().conn
        sections = [
            {
                "ordinal": r["ordinal"],
                "heading_path": json.loads(r["heading_path"]),
                "lines": [r["start_line"], r["end_line"]],
                "chars": len(r["text"]),
            }
            for r in conn.execute(
                "SELECT ordinal, heading_path, start_line, end_line, text FROM chunks "
                "WHERE doc = ? ORDER BY ordinal",
                (row["doc"],),
            )
        ]
        meta = json.loads(row["meta"])
        from .scope import note_span  # the day(s) --since / --until read the note as dated

        links = conn.execute(
            "SELECT l.rel, l.raw, l.origin, l.line, l.reason, l.kind, d.path FROM links l "
            "LEFT JOIN documents d ON d.ulid = l.dst_ulid AND l.dst_kb = '' "
            "WHERE l.src_doc = ? ORDER BY l.origin, l.line", (row["doc"],)).fetchall()
        # A #tag no note is named after is a tag, not a dangling link: listed with the tags
        # (what `pnk search --tag` matches), not among the links.
        inline_tags = list(dict.fromkeys(r["raw"] for r in links if r["kind"] == "tag" and r["reason"] == "tag-only"))
        outgoing = [
            f"{r['rel']} -> {r['path'] or r['raw']}"
            + ("" if r["path"] else f"  (unresolved: {r['reason'] or 'elsewhere in the fleet'})")
            + f"  [{r['origin']}, line {r['line']}]"
            for r in links if not (r["kind"] == "tag" and r["reason"] == "tag-only")
        ]
        incoming = [
            f"{r['rel']} <- {r['path']}  [{r['origin']}]"
            for r in conn.execute(
                "SELECT l.rel, l.origin, d.path FROM links l JOIN documents d ON d.doc = l.src_doc "
                "WHERE l.dst_ulid = ? AND l.dst_kb = '' AND l.src_doc != ? ORDER BY d.path",
                (row["ulid"], row["doc"]))
        ]
        return {
            "doc_id": row["ulid"],
            "uri": f"pnk://{row['ulid']}",
            "kb": self.name,
            "title": row["title"],
            "path": row["path"],
            "sidecar": row["sidecar_path"],
            "tags": json.loads(row["tags"]),
            "inline_tags": inline_tags,
            "dated": list(span) if (span := note_span(row["path"], meta.get("front_matter"))) else None,
            "front_matter": meta.get("front_matter", {}),
            "links": meta.get("sidecar", {}).get("links", []),
            "outgoing": outgoing,
            "incoming": incoming,
            "provisional_id": bool(row["provisional"]),
            "problems": json.loads(row["problems"]),
            "sections": sections,
        }

    @_detects_damage
    def read(self, ref: str, section: str | Sequence[str] | None = None) -> dict[str, Any]:
        """A document's text, or one section's, with its sidecar metadata (``pinakes_read``).

        ``section`` is a heading path, ``"Intro > Background"`` or a list; its
        tail is enough when unique (``"Background"``). Only indexed documents
        are read, from their indexed path, and never through a symlink that
        leaves the KB: see :mod:`pinakes.reading`.
        """
        from .reading import read_document

        return read_document(self, ref, section)

    def calibration(self) -> Any:
        """The confidence calibration in force, or None (confidence then stays ``unknown``).

        The KB's own ``golden/calibration.json`` (or ``[retrieval] calibration``)
        wins over the one shipped for the default embedder. A missing,
        unreadable or mismatched file (another embedder, another feature set)
        gives None rather than a number that no longer means what it says,
        except that a stale own file at its default place gives way to the
        shipped calibration (:func:`pinakes.evaluation.calibration.load_in_force`).
        Re-read only when the file changes (one stat per search).
        """
        from .evaluation.calibration import calibration_path, load_in_force

        path = calibration_path(self)
        try:
            key = (str(path), path.stat().st_mtime_ns) if path is not None else None
        except OSError:
            key = None
        cached = self._calibration
        if cached is not None and cached[0] == key:
            return cached[1]
        model = load_in_force(self, path)[0] if key is not None else None
        self._calibration = (key, model)
        return model

    # --- links (pinakes/links.py, pinakes/doctor.py) ----------------------------------

    def links(self, doc: str, rel: str | None = None, direction: str = "both", depth: int = 1,
              query: str | None = None) -> dict[str, Any]:
        """A document's typed neighbourhood: the ``pinakes_links`` structure (docs/links.md).

        ``{neighbours: [{doc_id, title, rel, direction, distance, score}], frontier:
        [{doc_id, rel}], unresolved: [{target, reason}], confidence, truncated, depth}``
        plus ``note`` when ``depth`` was capped at 3. A neighbour in another fleet KB
        also carries ``kb``. Raises DocumentNotFound or QueryError for bad arguments.
        """
        return self.walk_links(doc, rel=rel, direction=direction, depth=depth, query=query).to_dict()

    @_detects_damage
    def walk_links(self, doc: str, rel: str | None = None, direction: str = "both", depth: int = 1,
                   query: str | None = None) -> Any:
        """Like :meth:`links` but returns the :class:`pinakes.links.LinkResult` (paths, ``via``)."""
        from .links import walk

        return walk(self, doc, rel=rel, direction=direction, depth=depth, query=query)

    def link(self, src: str, dst: str, rel: str, note: str | None = None,
             allow_dangling: bool = False) -> dict[str, Any]:
        """Add a typed link SRC -> DST to SRC's sidecar (idempotent, atomic), then sync."""
        from .links import add_link

        return add_link(self, src, dst, rel, note=note, allow_dangling=allow_dangling)

    def unlink(self, src: str, dst: str, rel: str | None = None) -> dict[str, Any]:
        """Remove SRC's sidecar links to DST (only relation ``rel`` if given), then sync."""
        from .links import remove_link

        return remove_link(self, src, dst, rel=rel)

    @_detects_damage
    def doctor(self) -> dict[str, Any]:
        """Health report: link coverage, dangling links, duplicate ids, orphan sidecars, ..."""
        from .doctor import diagnose

        return diagnose(self)
