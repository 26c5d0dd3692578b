"""The derived store: one SQLite file (WAL) under ``.pinakes/``, disposable by design.

``index.db`` holds documents, chunks, their full-text index and vectors. It has
no migrations: its *signature* (``SCHEMA_VERSION``, the FTS tokenizer, the
embedder id and every plugin's schema version) is recorded in ``meta``; a
store with another signature is deleted and rebuilt by the next sync. The
embedding cache lives outside the KB, per user (:mod:`pinakes.embcache`), keyed
by (model, content hash), so a rebuild, a deleted ``.pinakes/``, a rename or a
moved section is never re-embedded.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from . import health
from .embcache import EmbeddingCache
from .errors import IndexDamaged, NotSynced, StoreBusy
from .fsutil import enable_wal
from .graph import GRAPH_SCHEMA

SCHEMA_VERSION = "13"  # 4: int8 vectors (pinakes.quant); 5: contentless chunks_fts; 6: link forms,
# context and the link_names table (note dialects); 7: moves, vector and chunk-row checksums;
# 8: a link whose sentence says next to nothing takes its context from the sentence before;
# 9: the full-text index holds text folded to NFKC ("CO₂" as "CO2"; pinakes.text.fold);
# 10: Logseq block references ((uuid)) link to the page declaring the id, and a bare tags::
# value no page answers is a plain tag; 11: other tools' files read as their tools show them
# (an Obsidian comment's links and plugin data, MkDocs admonition and MyST directive bodies,
# Hugo's TOML front matter), and .mdx a note suffix; 12: a folder link (guide/), a built page
# (guide.html) and a site route (/posts/first/) reach the page a site generator serves, and
# the links of site generators (MyST {toctree} entries and {doc} roles, Hugo ref shortcodes,
# Jekyll Liquid links) count, and a route reaches the page declaring it (permalink, url, slug);
# 13: a suffixless link reaches the page a docs site serves there (link_names tier ``served``:
# ordering numbers such as 01-intro.md left out, Docusaurus's id:; a Jekyll post's dated
# address), and an MDX page's import and export statements are in no chunk

_TOKENIZE = {
    "porter": "porter unicode61 remove_diacritics 2",
    "unicode61": "unicode61 remove_diacritics 2",
    "trigram": "trigram",
}

CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc INTEGER PRIMARY KEY,          -- internal key; the user-facing identity is ulid
    ulid TEXT NOT NULL,               -- not UNIQUE: duplicate sidecar ids are reported, not dropped
    path TEXT NOT NULL UNIQUE,        -- KB-relative POSIX path
    title TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',  -- JSON list
    meta TEXT NOT NULL DEFAULT '{}',  -- JSON: front matter and sidecar fields
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    sidecar_path TEXT NOT NULL,
    sidecar_stat TEXT NOT NULL DEFAULT '',
    provisional INTEGER NOT NULL DEFAULT 0,   -- 1: id not from a valid sidecar
    problems TEXT NOT NULL DEFAULT '[]'       -- JSON list of "file:line: message"
);
CREATE INDEX IF NOT EXISTS documents_ulid ON documents(ulid);
CREATE INDEX IF NOT EXISTS documents_title ON documents(title COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL,       -- JSON list of heading texts
    text TEXT NOT NULL,
    hash TEXT NOT NULL,               -- of the embedded text; the embedding cache key
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    vec BLOB,                         -- uint8 codes + float32 scale + CRC-32 (pinakes.quant)
    checksum INTEGER NOT NULL DEFAULT 0  -- CRC-32 of its document's id and path, its place and hash
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc, ordinal);
-- Chunks still waiting for a vector (a first sync embeds after committing, sync.py
-- phase 4): partial, so it is empty, and free, once everything is embedded.
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks(hash) WHERE vec IS NULL;
CREATE TABLE IF NOT EXISTS problems (
    path TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS links (      -- see pinakes/links.py
    id INTEGER PRIMARY KEY,
    src_doc INTEGER NOT NULL,           -- documents.doc of the linking document
    origin TEXT NOT NULL,               -- 'sidecar' | 'reverse-scan'
    raw TEXT NOT NULL,                  -- the target as written
    kind TEXT NOT NULL,                 -- 'path' | 'guess' | 'id' | 'wiki' | 'tag' | 'kb'
    key TEXT NOT NULL,                  -- normalised target (KB path, ULID, wiki text, name/path)
    alt TEXT NOT NULL DEFAULT '',       -- a second reading: [[a|b]]'s b, a path as written
    fkey TEXT NOT NULL DEFAULT '',      -- folded name `key` looks up (re-resolved when it changes)
    falt TEXT NOT NULL DEFAULT '',      -- folded name `alt` looks up
    fday TEXT NOT NULL DEFAULT '',      -- the journal date / note id it reads as (date:..., id:...), or the served address
    rel TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    provenance TEXT NOT NULL DEFAULT '', -- a sidecar link's `origin:` (e.g. deep)
    line INTEGER NOT NULL,              -- in the document (reverse-scan) or its sidecar
    form TEXT NOT NULL DEFAULT '',      -- syntax: markdown, wikilink-alias, embed, tag, sidecar, ...
    label TEXT NOT NULL DEFAULT '',     -- the link's text or alias
    context TEXT NOT NULL DEFAULT '',   -- content words of the sentence around it
    chunk INTEGER,                      -- ordinal of the chunk it sits in (NULL: sidecar)
    dst_ulid TEXT,                      -- the resolved target; NULL while unresolved
    dst_kb TEXT NOT NULL DEFAULT '',    -- '' = this KB (other fleet KBs are looked up when read)
    reason TEXT                         -- why unresolved: missing-file, unknown-id, outside-kb, ...;
                                        -- 'moved' on a row resolved through a move record
);
CREATE INDEX IF NOT EXISTS links_src ON links(src_doc);
CREATE INDEX IF NOT EXISTS links_dst ON links(dst_ulid);
CREATE INDEX IF NOT EXISTS links_fkey ON links(fkey);
CREATE INDEX IF NOT EXISTS links_falt ON links(falt);
CREATE INDEX IF NOT EXISTS links_fday ON links(fday);
-- the rows resolved through a move record, which every sync that adds a document re-checks
CREATE INDEX IF NOT EXISTS links_moved ON links(reason) WHERE reason = 'moved';
CREATE TABLE IF NOT EXISTS link_names (  -- the names a document answers to (pinakes/dialects.py)
    doc INTEGER NOT NULL,               -- documents.doc
    name TEXT NOT NULL,                 -- folded: a path, file name, title, alias, date:..., id:...
    tier TEXT NOT NULL                  -- dialects.NAME_TIERS: path | name | suffix | title | alias | ... | served
);
CREATE INDEX IF NOT EXISTS link_names_name ON link_names(name);
CREATE INDEX IF NOT EXISTS link_names_doc ON link_names(doc);
CREATE TABLE IF NOT EXISTS moves (      -- a document's earlier paths: its sidecar's moved_from
    path TEXT NOT NULL,                 -- (pinakes/relink.py); links to them resolve to it
    doc INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS moves_path ON moves(path);
CREATE INDEX IF NOT EXISTS moves_doc ON moves(doc);
"""

# The layout of the old in-KB ``.pinakes/cache.db``. Chunk vectors now live in the
# per-user cache (pinakes/embcache.py); this stays for plugins that keep their own
# small caches in that file (pinakes-mentions' entity-label vectors).
CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    hash TEXT NOT NULL,
    vec BLOB NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;
"""


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, check_same_thread=False)
    conn.isolation_level = None  # explicit transactions only
    conn.execute("PRAGMA busy_timeout = 10000")
    if not readonly:
        enable_wal(conn, 10)
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.row_factory = sqlite3.Row
    return conn


def _connect_unwritable(path: Path) -> sqlite3.Connection:
    """Open a store this process cannot write (a read-only disk, another user's KB) to search it.

    A WAL database needs its ``-shm`` file, which a reader without write access
    cannot create: read-only mode works while it exists; otherwise the file is
    opened ``immutable`` (no locking), which is exact on a read-only disk, where
    no sync can run under the reader.
    """
    if os.access(path.parent, os.W_OK):
        raise sqlite3.OperationalError(f"unable to open database file: {path}")
    for flags in ("mode=ro", "mode=ro&immutable=1"):
        conn = sqlite3.connect(f"file:{path}?{flags}", uri=True, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn.close()
            continue
        conn.isolation_level = None
        conn.row_factory = sqlite3.Row
        return conn
    raise sqlite3.OperationalError(f"unable to open database file: {path}")


class SyncLock:
    """An exclusive lock on ``.pinakes/sync.lock``: one writer per KB.

    A second ``pnk sync`` waits up to ``wait`` seconds, then fails clearly.
    """

    def __init__(self, state_dir: Path, wait: float = 30.0) -> None:
        self.path = state_dir / "sync.lock"
        self.wait = wait
        self._fh: object | None = None

    def __enter__(self) -> SyncLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    fh.seek(0)
                    holder = fh.read().strip() or "another process"
                    fh.close()
                    raise StoreBusy(
                        f"another sync is running on this knowledge base ({holder}); "
                        "try again when it finishes"
                    ) from None
                time.sleep(0.1)
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc: object) -> None:
        fh = self._fh
        if fh is not None:
            fh.truncate(0)  # type: ignore[attr-defined]
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)  # type: ignore[attr-defined]
            fh.close()  # type: ignore[attr-defined]
            self._fh = None


class Store:
    """An open ``index.db`` (plus its embedding cache)."""

    def __init__(self, state_dir: Path, signature: str, conn: sqlite3.Connection) -> None:
        self.state_dir = state_dir
        self.signature = signature
        self.conn = conn
        self._cache: EmbeddingCache | None = None
        self._cache_opened = False
        #: Set by :meth:`open_for_write` when it rebuilt a damaged index: why.
        self.healed = ""
        #: Set by :meth:`open_for_read` when the index was built by another plugin set
        #: (another install): what this reader searches without, said once per process.
        self.note = ""

    # --- opening ---------------------------------------------------------

    @staticmethod
    def signature_for(tokenizer: str, embedder_id: str, plugin_schemas: Iterable[tuple[str, str, str]],
                      derivers: Iterable[str] = (), settings: Iterable[str] = ()) -> str:
        """The string whose change means "rebuild the store".

        Installed edge derivers are part of it: installing or removing one
        rebuilds the (free, derived) graph instead of leaving it half-derived.
        ``settings`` are config values that change what sync extracts (how
        links are read): changing one rebuilds rather than leaving rows made
        under the old value.
        """
        parts = [f"schema={SCHEMA_VERSION}", f"tokenizer={tokenizer}", f"embedder={embedder_id}"]
        parts += [f"{name}={version}" for name, version, _ in plugin_schemas]
        parts += [f"deriver={d}" for d in sorted(derivers)]
        parts += [f"setting={s}" for s in settings]
        return ";".join(parts)

    @classmethod
    def open_for_write(
        cls,
        state_dir: Path,
        signature: str,
        tokenizer: str,
        plugin_schemas: Iterable[tuple[str, str, str]] = (),
        rebuild: bool = False,
    ) -> tuple[Store, bool]:
        """Open (creating or rebuilding as needed) for a sync; returns (store, rebuilt)."""
        state_dir.mkdir(parents=True, exist_ok=True)
        ignore = state_dir / ".gitignore"
        if not ignore.exists():
            # The store ignores itself: a KB whose own .gitignore Pinakes must not
            # edit (an adopted ClaudeKB, where that file is blueprint-owned) still
            # never commits its derived index.
            ignore.write_text("*\n", encoding="utf-8")
        path = state_dir / "index.db"
        rebuilt = False
        healed = ""
        if path.exists():
            old, store_id, generation, error = _read_identity(path)
            # A damaged index (unreadable, marked by a reader that hit damage, or older
            # than the last sync left it) is rebuilt like an outdated one (pinakes/health.py).
            healed = error or health.marked_damage(state_dir, store_id) or \
                health.lost_writes(state_dir, store_id, generation) or ""
            if rebuild or healed or old != signature:
                health.discard_index(state_dir)
                rebuilt = True
        conn = _connect(path)
        conn.executescript(CORE_SCHEMA)
        conn.executescript(GRAPH_SCHEMA)
        # Contentless (content=''): the index keeps only its inverted lists, never a
        # second copy of the text, which `chunks` and `documents` already hold.
        # Search reads only rowids and bm25(); sync deletes a row by giving back the
        # values it indexed (sync._delete_chunks).
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5("
            f"title, heading, body, content='', tokenize='{_TOKENIZE[tokenizer]}')"
        )
        for _name, _version, sql in plugin_schemas:
            conn.executescript(sql)
        store = cls(state_dir, signature, conn)
        if store.get_meta("signature") is None:
            store.set_meta("signature", signature)
            store.set_meta("generation", "0")
        if store.get_meta("store_id") is None:
            # Names this store (a rebuild makes a new one): what a reader caches from it
            # (the graph arrays) is keyed by this and the generation.
            store.set_meta("store_id", uuid.uuid4().hex)
        store.healed = healed
        return store, rebuilt

    @classmethod
    def open_for_read(cls, state_dir: Path, signature: str) -> Store:
        """Open for searching; a missing or outdated store is a clear error."""
        path = state_dir / "index.db"
        if not path.exists():
            raise NotSynced("this knowledge base has not been indexed yet: run `pnk sync`")
        try:
            try:
                conn = _connect(path)
            except sqlite3.OperationalError as exc:
                if health.clear_damage(exc):
                    raise
                conn = _connect_unwritable(path)
            store = cls(state_dir, signature, conn)
            found = store.get_meta("signature")
            store_id, generation = store.get_meta("store_id"), store.generation
        except (sqlite3.DatabaseError, ValueError) as exc:  # ValueError: meta that is not UTF-8
            reason = health.clear_damage(exc) or (
                health.short(str(exc)) if isinstance(exc, ValueError) else None)
            if reason is None and "no such table" in str(exc):
                raise NotSynced(BEING_BUILT) from exc  # a file a rebuild has only just created
            if reason is None:
                raise NotSynced(f"the index is unreadable ({' '.join(str(exc).split())}): "
                                "run `pnk sync`") from exc
            health.mark_damaged(state_dir, reason)
            raise damage_error(reason) from exc
        if generation == 0:
            # Created by a sync that has not committed yet (a rebuild in progress): empty,
            # and searching it would answer nothing, silently.
            store.close()
            raise NotSynced(BEING_BUILT)
        lost = health.lost_writes(state_dir, store_id, generation)
        if lost:
            health.mark_damaged(state_dir, lost)
        reason = lost or health.marked_damage(state_dir, store_id)
        if reason:
            store.close()
            raise damage_error(reason)
        if found != signature:
            usable, note = read_compatibility(found or "", signature)
            if not usable:
                raise NotSynced(note)
            store.note = note
        return store

    def close(self) -> None:
        self.conn.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    # --- meta --------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it lands, or none of it (a killed sync)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent generation."""
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")

    # --- embedding cache ------------------------------------------------------

    @property
    def cache(self) -> EmbeddingCache | None:
        """The per-user embedding cache, opened on first use (None when it cannot be opened)."""
        if not self._cache_opened:
            self._cache_opened = True
            self._cache = EmbeddingCache.open_or_none()
        return self._cache

    def cached_vectors(self, model: str, hashes: list[str]) -> dict[str, bytes]:
        """Vectors (float32 bytes) already computed for these content hashes; the rest must be embedded."""
        cache = self.cache
        return {} if cache is None else cache.get(model, hashes)

    def cache_vectors(self, model: str, items: list[tuple[str, np.ndarray]]) -> None:
        """Remember vectors by content hash; committed at once so a killed sync keeps them."""
        cache = self.cache
        if cache is not None:
            cache.put(model, items)

    # --- reading ----------------------------------------------------------------

    def load_vectors(self, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All chunk vectors, quantised: ``(ids int64, codes uint8 (n, dim), scale float32, crc uint32)``.

        A stored vector is ``codes + float32 scale + CRC-32`` (``pinakes.quant``):
        392 bytes per 384-d chunk. Each blob is copied into preallocated arrays as
        the cursor yields it, so peak memory is the arrays themselves rather
        than every blob (``fetchall``) plus their concatenation. The CRCs are
        kept for the rows a search re-scores (``DenseIndex.cosines``), not
        checked here: that would cost every cold search ~1 us per chunk.
        """
        n = self.conn.execute("SELECT count(*) FROM chunks WHERE vec IS NOT NULL").fetchone()[0]
        width = dim + 8
        ids = np.empty(n, dtype=np.int64)
        if n == 0:  # nothing embedded yet (a first sync's phase 4 has not run)
            return (ids, np.zeros((0, dim), dtype=np.uint8), np.zeros(0, dtype=np.float32),
                    np.zeros(0, dtype=np.uint32))
        codes = np.empty((n, dim), dtype=np.uint8)
        tail = np.empty((n, 8), dtype=np.uint8)  # scale and CRC, as stored
        cbuf = memoryview(codes).cast("B")
        tbuf = memoryview(tail).cast("B")
        cur = self.conn.cursor()
        cur.row_factory = None  # plain tuples: no Row object per vector
        i = 0
        complete = False
        for cid, blob in cur.execute(
            "SELECT id, vec FROM chunks WHERE vec IS NOT NULL ORDER BY id"
        ):
            if len(blob) != width:
                raise IndexDamaged(f"chunk {cid}'s stored vector has {len(blob)} bytes, not {width}")
            if i == n:
                break  # more rows than counted: a sync committed in between (no snapshot)
            ids[i] = cid
            cbuf[i * dim : (i + 1) * dim] = blob[:dim]
            tbuf[i * 8 : i * 8 + 8] = blob[dim:]
            i += 1
        else:
            complete = i == n
        if not complete:
            return self._load_vectors_at_once(dim)
        return ids, codes, *_scales_and_crcs(tail)

    def _load_vectors_at_once(self, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``load_vectors`` in one statement (2.5x the memory): used only after a race."""
        rows = self.conn.execute(
            "SELECT id, vec FROM chunks WHERE vec IS NOT NULL ORDER BY id"
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return (ids, np.zeros((0, dim), dtype=np.uint8), np.zeros(0, dtype=np.float32),
                    np.zeros(0, dtype=np.uint32))
        if any(len(r[1]) != dim + 8 for r in rows):
            raise IndexDamaged("a stored vector has the wrong length")
        packed = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
        return ids, np.ascontiguousarray(packed[:, :dim]), *_scales_and_crcs(packed[:, dim:])

    def document_problems(self) -> list[tuple[str, str]]:
        """Every problem the last sync reported, as (path, message)."""
        out = [(r[0], r[1]) for r in self.conn.execute("SELECT path, message FROM problems")]
        for row in self.conn.execute("SELECT path, problems FROM documents WHERE problems != '[]'"):
            out.extend((row[0], msg) for msg in json.loads(row[1]))
        return sorted(out)


_noted: set[str] = set()


def note_once(message: str) -> None:
    """Say ``message`` on stderr once per process (stdout belongs to results and the MCP protocol)."""
    if message not in _noted:
        _noted.add(message)
        import sys

        print(f"pnk: note: {message}", file=sys.stderr)


def parse_signature(signature: str) -> dict[str, Any]:
    """A signature's parts: ``core`` (schema, tokenizer, embedder and settings), ``tables``
    (plugin table versions by plugin) and ``derivers`` (edge deriver versions by name)."""
    core: list[str] = []
    tables: dict[str, str] = {}
    derivers: dict[str, str] = {}
    for part in signature.split(";") if signature else []:
        key, _, value = part.partition("=")
        if key in ("schema", "tokenizer", "embedder", "setting") or not value:
            core.append(part)
        elif key == "deriver":
            name, _, version = value.partition(":")
            derivers[name] = version
        else:
            tables[key] = value
    return {"core": sorted(core), "tables": tables, "derivers": derivers}


def read_compatibility(found: str, wanted: str) -> tuple[bool, str]:
    """Whether a reader wanting ``wanted`` can search an index built as ``found``; and what to say.

    Two installs share one KB (an MCP server from one environment, a CLI from
    another; a core-only venv beside a full one). What a *writer* stores
    depends on its plugins, so a writer whose plugin set differs rebuilds. A
    *reader* needs only the schema, the tokenizer, the embedder and the link
    settings to match: it searches the index it finds, without the parts it
    lacks the plugins for (their tables are simply not read) or with an empty
    graph where the index has none, and says so. (False, message) otherwise.
    """
    a, b = parse_signature(found), parse_signature(wanted)
    if a["core"] != b["core"]:
        return False, ("the index was built with another schema, tokenizer, embedder or link "
                       "setting: run `pnk sync` to rebuild it")
    only_index = {n for k in ("derivers", "tables") for n in a[k] if n not in b[k]}
    only_here = {n for k in ("derivers", "tables") for n in b[k] if n not in a[k]}
    versions = {n for k in ("derivers", "tables") for n, v in a[k].items() if n in b[k] and b[k][n] != v}
    said = []
    if only_index:
        said.append(f"built with plugins this install does not have ({', '.join(sorted(only_index))}): "
                    "searching it without them")
    if only_here:
        said.append(f"built without this install's {', '.join(sorted(only_here))}: searching it without "
                    "what they add until `pnk sync` runs from this install")
    if versions:
        said.append(f"built by other versions of {', '.join(sorted(versions))}: searching it as it is "
                    "until `pnk sync` runs from this install")
    return True, ("the index was " + "; and ".join(said)) if said else ""


def _scales_and_crcs(tail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float32 scales and the CRC-32s from the last 8 bytes of each packed row."""
    t = np.ascontiguousarray(tail)
    scale = np.ascontiguousarray(t[:, :4]).view("<f4").reshape(-1).astype(np.float32)
    crc = np.ascontiguousarray(t[:, 4:]).view("<u4").reshape(-1).astype(np.uint32)
    return scale, crc


#: What a reader says about an index a sync has created but not yet committed to.
BEING_BUILT = ("the index is being built by a sync that has not finished: try again in a moment "
               "(or run `pnk sync`)")


def damaged(reason: str) -> str:
    """The one line a reader of a damaged index gets."""
    return f"the index is damaged ({reason}): run `pnk sync` to rebuild it from your files"


def damage_error(reason: str) -> IndexDamaged:
    """The error a reader of a damaged index raises: :func:`damaged`'s line, and the reason."""
    return IndexDamaged(damaged(reason), reason)


def index_signature(state_dir: Path) -> str | None:
    """The signature the KB's ``index.db`` was built with; None if missing or unreadable."""
    path = state_dir / "index.db"
    return _read_identity(path)[0] if path.exists() else None


def _read_identity(path: Path) -> tuple[str | None, str | None, int, str]:
    """(signature, store id, generation, error) of an index file; error "" when it reads."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(conn.execute(
                "SELECT key, value FROM meta WHERE key IN ('signature', 'store_id', 'generation')"))
        finally:
            conn.close()
        generation = int(meta.get("generation") or 0)
    except (sqlite3.DatabaseError, ValueError) as exc:
        return None, None, 0, " ".join(str(exc).split()) or type(exc).__name__
    sig = meta.get("signature")
    return (None if sig is None else str(sig)), meta.get("store_id"), generation, ""
