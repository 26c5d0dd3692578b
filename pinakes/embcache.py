"""The per-user embedding cache: vectors by (model id, content hash), shared by every KB.

Embedding is the only expensive step of a sync, and its result depends on
nothing but the model and the text. So the vectors live outside any KB, in one
SQLite file per user (``embeddings.db`` in :func:`cache_dir`): deleting a KB's
``.pinakes/`` folder, rebuilding its index, renaming a file, cloning the KB
elsewhere or indexing the same notes in a second KB re-embeds nothing.

The cache is derived data like the store: no migrations (a file of another
layout is replaced), and losing it costs only time. It is

- *compact*: a vector is stored as little-endian float16 (768 bytes for 384
  dimensions, plus a 5-byte CRC-32 trailer that catches a damaged row) under a
  20-byte SHA-1 key and an integer model id, about 0.9 KB
  per vector with SQLite's overhead. Rounding to float16 moves a unit vector's
  cosines by about 1e-4, which leaves dense rankings unchanged (the example
  KB's top-10 lists agree; tests/test_cache.py checks it). Sync stores the
  rounded vector in the index too, so a rebuild from the cache ranks exactly
  like the first sync did. A vector float16 cannot hold (a huge or non-finite
  component, which no normalising embedder produces) is simply not cached.
- *bounded*: when the file grows past the maximum size (``PINAKES_CACHE_MAX_SIZE``,
  default 1 GiB), the least recently used vectors are deleted down to 90% of
  it; a lookup refreshes the entries it hits.
- *shared safely*: WAL journal and a busy timeout, each write one short
  transaction, so two syncs (of one KB or of two) can fill it at once.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError
from .fsutil import enable_wal
from .sqlin import batches
from .sqlin import marks as sqlmarks

ENV_DIR = "PINAKES_CACHE_DIR"
ENV_MAX = "PINAKES_CACHE_MAX_SIZE"
DEFAULT_MAX_BYTES = 1 << 30
FILE_NAME = "embeddings.db"
LAYOUT = "1"  # bump when the tables change: an older file is replaced, never migrated
TOUCH_EVERY = 3600  # seconds: a hit refreshes its LRU clock at most this often (fewer writes)
PRUNE_TO = 0.9  # an over-full cache is pruned to this fraction of its maximum
F16_MAX = 65000.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE           -- the embedder's id, e.g. minilm-l6-v2-int8
);
-- A rowid table, not WITHOUT ROWID keyed by the (random) hash: rows are appended in
-- rowid order, so pages fill up instead of splitting half-empty (0.9 KB per vector
-- instead of twice that and more).
CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY,
    model INTEGER NOT NULL,             -- models.id
    hash BLOB NOT NULL,                 -- SHA-1 digest (20 bytes) of the embedded text
    used INTEGER NOT NULL,              -- unix seconds of the last write or hit: the LRU clock
    vec BLOB NOT NULL                   -- little-endian float16
);
CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors(model, hash);
CREATE INDEX IF NOT EXISTS vectors_used ON vectors(used);
"""

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_warned: set[str] = set()


def cache_dir() -> Path:
    """Where the cache lives: ``$PINAKES_CACHE_DIR``, else ``$XDG_CACHE_HOME/pinakes``, else ``~/.cache/pinakes``."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pinakes"


def parse_size(text: str) -> int:
    """Bytes from ``1G``, ``500MB``, ``1.5GiB`` or a plain number (binary units: 1K = 1024)."""
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ConfigError(f"invalid size {text!r}: use a number of bytes or e.g. 500M, 2G")
    number, unit = float(m.group(1)), m.group(2).lower()
    return int(number * 1024 ** "_kmgt".index(unit)) if unit else int(number)


def max_bytes() -> int:
    """The configured maximum size (``PINAKES_CACHE_MAX_SIZE``), default 1 GiB."""
    env = os.environ.get(ENV_MAX)
    if not env:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(env)
    except ConfigError as exc:
        raise ConfigError(f"{ENV_MAX}: {exc}") from None


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _fits_f16(v: np.ndarray) -> bool:
    return not v.size or (bool(np.all(np.isfinite(v))) and float(np.max(np.abs(v))) <= F16_MAX)


#: Ends a checked row: float16 values, their CRC-32 (4 bytes), then this byte. A
#: float16 row has an even length; a checked one an odd length, so rows written
#: before the check (no trailer) still read.
_CHECKED = b"\x01"


def encode(vec: np.ndarray) -> bytes | None:
    """A vector as the cache stores it (float16 + CRC-32), or None when float16 cannot hold it.

    The CRC is what catches a damaged row: SQLite checks its pages' structure,
    not the bytes inside a blob, and a bad vector would be copied into every
    index that asks for this text.
    """
    v = np.asarray(vec, dtype=np.float32).ravel()
    if not _fits_f16(v):
        return None
    raw = v.astype("<f2").tobytes()
    return raw + zlib.crc32(raw).to_bytes(4, "little") + _CHECKED


def decode(blob: bytes) -> bytes:
    """Cached bytes back to little-endian float32 bytes (what the store holds).

    Raises ValueError for a row whose bytes no longer match its CRC-32.
    """
    if len(blob) % 2:
        raw = blob[:-5]
        if blob[-1:] != _CHECKED or zlib.crc32(raw) != int.from_bytes(blob[-5:-1], "little"):
            raise ValueError("damaged cache row")
        blob = raw
    return np.frombuffer(blob, dtype="<f2").astype("<f4").tobytes()


def canonical(vec: np.ndarray) -> bytes:
    """The float32 bytes a vector has after a trip through the cache.

    Sync stores these even for a vector it just computed, so the index is the
    same whether a chunk was embedded now or found in the cache.
    """
    v = np.asarray(vec, dtype=np.float32).ravel()
    if not _fits_f16(v):
        return v.astype("<f4").tobytes()
    return v.astype("<f2").astype("<f4").tobytes()


def _key(h: str) -> bytes:
    try:
        return bytes.fromhex(h) if len(h) == 40 else h.encode("utf-8")
    except ValueError:
        return h.encode("utf-8")


def _unkey(k: bytes) -> str:
    return k.hex() if len(k) == 20 else k.decode("utf-8", "replace")


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"pnk: warning: {message}", file=sys.stderr)


class EmbeddingCache:
    """One open cache file. Cheap to open; every method is one short transaction."""

    def __init__(self, folder: Path | None = None, max_size: int | None = None) -> None:
        self.folder = cache_dir() if folder is None else Path(folder)
        self.path = self.folder / FILE_NAME
        self.max_size = max_bytes() if max_size is None else int(max_size)
        self._models: dict[str, int] = {}
        self.conn = self._open()

    # --- opening --------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        conn.isolation_level = None  # explicit transactions only
        conn.execute("PRAGMA busy_timeout = 30000")
        enable_wal(conn, 30)
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _open(self) -> sqlite3.Connection:
        self.folder.mkdir(parents=True, exist_ok=True)
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
            conn.executescript(SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
            if row is None:
                conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('layout', ?)", (LAYOUT,))
            elif row[0] != LAYOUT:
                raise sqlite3.DatabaseError(f"cache layout {row[0]}, expected {LAYOUT}")
        except sqlite3.OperationalError:
            if conn is not None:
                conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            # Not a cache we can read (corrupt, or another layout): it is derived, start afresh.
            if conn is not None:
                conn.close()
            conn = self._fresh(exc)
        return conn

    def _fresh(self, exc: BaseException) -> sqlite3.Connection:
        _warn_once(f"{self.path} was unreadable ({' '.join(str(exc).split())}); "
                   "starting a new embedding cache")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(self.path) + suffix)
        conn = self._connect()
        conn.executescript(SCHEMA)
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('layout', ?)", (LAYOUT,))
        return conn

    def _start_afresh(self, exc: BaseException) -> None:
        """The open file turned out damaged: replace it (losing only time), keep going."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()
        self._models.clear()
        self.conn = self._fresh(exc)

    @classmethod
    def open_or_none(cls) -> EmbeddingCache | None:
        """The user's cache, or None (with one warning) when it cannot be opened: sync goes on."""
        try:
            return cls()
        except (OSError, sqlite3.Error) as exc:
            _warn_once(f"embedding cache unavailable ({exc}); embedding without it")
            return None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _model_id(self, model: str, create: bool) -> int | None:
        if model in self._models:
            return self._models[model]
        row = self.conn.execute("SELECT id FROM models WHERE name = ?", (model,)).fetchone()
        if row is None and create:
            self.conn.execute("INSERT OR IGNORE INTO models(name) VALUES (?)", (model,))
            row = self.conn.execute("SELECT id FROM models WHERE name = ?", (model,)).fetchone()
        if row is None:
            return None
        self._models[model] = int(row[0])
        return self._models[model]

    # --- lookups and writes -------------------------------------------------------

    def get(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        """Float32 bytes of the vectors cached for these content hashes (misses are absent).

        Hits have their LRU clock refreshed (at most hourly, best effort: a
        cache busy beyond the timeout only loses the refresh). A cache that
        fails (a full disk, a lock held for half a minute) answers nothing,
        with one warning: the sync embeds instead of failing.
        """
        try:
            return self._get(model, hashes)
        except sqlite3.OperationalError as exc:
            _warn_once(f"embedding cache lookup failed ({exc}); embedding without it")
            return {}
        except sqlite3.DatabaseError as exc:  # a damaged file: derived, so start a new one
            self._start_afresh(exc)
            return {}

    def _get(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        mid = self._model_id(model, create=False)
        found: dict[str, bytes] = {}
        if mid is None or not hashes:
            return found
        now = int(time.time())
        stale: list[bytes] = []
        damaged = 0
        for raw in batches(hashes):
            part = [_key(h) for h in raw]
            marks = sqlmarks(part)
            for key, used, blob in self.conn.execute(
                f"SELECT hash, used, vec FROM vectors WHERE model = ? AND hash IN ({marks})",
                (mid, *part),
            ):
                try:
                    found[_unkey(key)] = decode(blob)
                except ValueError:
                    damaged += 1  # a miss: embedded again, and the row replaced by put()
                    continue
                if used < now - TOUCH_EVERY:
                    stale.append(key)
        if damaged:
            _warn_once(f"{damaged} damaged vector{'s' if damaged != 1 else ''} in the embedding cache "
                       f"({self.path}) ignored: embedding {'them' if damaged != 1 else 'it'} again")
        if stale:
            with contextlib.suppress(sqlite3.OperationalError):
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    self.conn.executemany("UPDATE vectors SET used = ? WHERE model = ? AND hash = ?",
                                          [(now, mid, k) for k in stale])
                finally:
                    self.conn.execute("COMMIT")
        return found

    def put(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Remember vectors by content hash, in one transaction; prunes when over the maximum.

        Like :meth:`get`, a failing cache costs a warning, never the sync.
        """
        try:
            self._put(model, items)
        except sqlite3.OperationalError as exc:
            _warn_once(f"embedding cache write failed ({exc}); these vectors are not cached")
        except sqlite3.DatabaseError as exc:
            self._start_afresh(exc)

    def _put(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        now = int(time.time())
        encoded = ((_key(h), encode(v)) for h, v in items)
        rows = [(k, now, b) for k, b in encoded if b is not None]
        if not rows:
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            mid = self._model_id(model, create=True)
            self.conn.executemany(
                "INSERT OR REPLACE INTO vectors(model, hash, used, vec) VALUES (?, ?, ?, ?)",
                [(mid, k, t, b) for k, t, b in rows],
            )
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._models.pop(model, None)
            raise
        self.conn.execute("COMMIT")
        if self.used_bytes() > self.max_size:
            self.prune()

    # --- size and pruning ---------------------------------------------------------------

    def used_bytes(self) -> int:
        """Bytes of the database in use (its pages minus free ones): what the maximum bounds."""
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = self.conn.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)

    def file_bytes(self) -> int:
        """Bytes on disk, the WAL included."""
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(str(self.path) + suffix).st_size
        return total

    def entries(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def prune(self, max_size: int | None = None, compact: bool = False) -> int:
        """Delete least recently used vectors until the cache is under ``PRUNE_TO`` of the maximum.

        Returns how many were deleted. ``compact`` also rewrites the file so
        the freed space goes back to the disk (``pnk cache --prune``); without
        it SQLite reuses the free pages for the next vectors.
        """
        limit = self.max_size if max_size is None else int(max_size)
        deleted = 0
        for _ in range(20):  # each round deletes an estimate; a few rounds converge
            used = self.used_bytes()
            if used <= limit:
                break
            n = self.entries()
            if n == 0:
                break
            per_row = used / n
            excess = used - limit * PRUNE_TO
            count = min(n, max(1, math.ceil(excess / per_row)))
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                cur = self.conn.execute(
                    "DELETE FROM vectors WHERE id IN (SELECT id FROM vectors ORDER BY used, id LIMIT ?)",
                    (count,),
                )
                deleted += max(0, cur.rowcount)
            finally:
                self.conn.execute("COMMIT")
        if compact:
            self.compact()
        return deleted

    def clear(self, model: str | None = None) -> int:
        """Delete every vector (of one model, if given) and give the space back; returns how many."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if model is None:
                cur = self.conn.execute("DELETE FROM vectors")
                self.conn.execute("DELETE FROM models")
            else:
                cur = self.conn.execute(
                    "DELETE FROM vectors WHERE model = (SELECT id FROM models WHERE name = ?)", (model,))
                self.conn.execute("DELETE FROM models WHERE name = ?", (model,))
        finally:
            self.conn.execute("COMMIT")
        self._models.clear()
        self.compact()
        return max(0, cur.rowcount)

    def compact(self) -> None:
        """Return free pages to the disk (VACUUM) and empty the WAL; skipped if another process is busy."""
        with contextlib.suppress(sqlite3.OperationalError):
            self.conn.execute("VACUUM")
        with contextlib.suppress(sqlite3.OperationalError):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def info(self) -> dict[str, Any]:
        """Path, entries, size and maximum, and the entries of each model: ``pnk status``/``pnk cache``."""
        models = [
            {"model": name, "entries": int(count)}
            for name, count in self.conn.execute(
                "SELECT m.name, count(v.hash) FROM models m LEFT JOIN vectors v ON v.model = m.id "
                "GROUP BY m.id ORDER BY m.name"
            )
        ]
        entries = sum(m["entries"] for m in models)
        return {
            "path": str(self.path),
            "entries": entries,
            "bytes": self.file_bytes(),
            "used_bytes": self.used_bytes(),
            "max_bytes": self.max_size,
            "bytes_per_entry": round(self.used_bytes() / entries) if entries else None,
            "models": models,
        }


def describe() -> dict[str, Any]:
    """The cache's :meth:`EmbeddingCache.info` without creating it; ``exists: False`` if there is none."""
    path = cache_dir() / FILE_NAME
    if not path.exists():
        return {"path": str(path), "exists": False, "entries": 0, "bytes": 0, "used_bytes": 0,
                "max_bytes": max_bytes(), "bytes_per_entry": None, "models": []}
    with EmbeddingCache() as cache:
        return {"exists": True, **cache.info()}
