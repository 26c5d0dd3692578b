"""A damaged index heals itself: how damage is found, remembered and repaired.

The index (``.pinakes/index.db``) is derived: damage must never cost more than a
rebuild, and no search may answer from it silently. Damage is found

* *on open*: the file is not a database, its meta table is unreadable, or it
  holds an older generation than the last sync left (a lost or stale WAL:
  every sync records ``store id, generation`` in :data:`GENERATION_MARK`);
* *on the first error*: SQLite reports a corrupt page or text that is not
  UTF-8, or a read fails in a way :func:`verify_index` then confirms;
* *by content hashes where SQLite cannot see*: every chunk's text is stored
  with the hash of what was embedded (checked for each hit a search returns),
  every stored vector carries a CRC-32 (checked for the rows a search
  re-scores), the graph cache is a zip whose members are CRC-checked, and
  the embedding cache's rows carry a CRC-32 too (a bad one is a cache miss).

Whoever finds it leaves :data:`DAMAGE_MARK` (the reason, and which store it is
about) in ``.pinakes/``; readers then refuse with one line ("run `pnk sync`"),
and the next plain ``pnk sync`` (or the sync of ``pnk serve --watch`` /
``pnk sync --watch``) rebuilds from the truth files and the embedding cache
and says so in its summary line. Identity is kept: ULIDs live in sidecars.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import zlib
from pathlib import Path
from typing import Any

#: Left in the state folder by whoever finds the index damaged (JSON: reason, store, inode).
DAMAGE_MARK = "index.damaged"
#: Left by every sync: "store_id generation" of the index it committed.
GENERATION_MARK = "index.generation"
#: SQLite's primary result codes for a damaged file.
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB


# --- content checks SQLite cannot make ---------------------------------------------------


def chunk_hash(embedded_text: str) -> str:
    """The content hash a chunk is stored (and its vector cached) under."""
    import hashlib

    return hashlib.sha1(embedded_text.encode("utf-8")).hexdigest()


def seal(blob: bytes) -> bytes:
    """``blob`` followed by its CRC-32 (4 bytes, little-endian)."""
    return blob + zlib.crc32(blob).to_bytes(4, "little")


def crc_of(blob: bytes) -> int:
    return zlib.crc32(blob)


def row_checksum(ulid: str, path: str, ordinal: int, start_line: int, end_line: int, h: str) -> int:
    """CRC-32 of what a hit shows besides its text (which its content hash covers).

    A flipped byte in a path or an id can leave valid UTF-8 (``colbert.md`` read
    as ``colbest.md``); this is what catches it.
    """
    return zlib.crc32(f"{ulid}\0{path}\0{ordinal}\0{start_line}\0{end_line}\0{h}".encode())


# --- telling damage from other failures ----------------------------------------------------


def clear_damage(exc: BaseException) -> str | None:
    """The reason when ``exc`` itself says the index file is damaged; None when it does not."""
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        text = " ".join(str(exc).split())
        if code is not None and (code & 0xFF) in _CORRUPT_CODES:
            return short(text)
        if "malformed" in text or "not a database" in text or "Could not decode to UTF-8" in text:
            return short(text)
    return None


def short(reason: str) -> str:
    """A reason fit for one line: SQLite quotes the whole undecodable text; say what it is."""
    text = " ".join(str(reason).split())
    m = re.match(r"Could not decode to UTF-8 column '([^']*)'", text)
    if m or "codec can't decode" in text:
        where = f" in column '{m.group(1)}'" if m else ""
        return f"stored text{where} is not UTF-8"
    return text if len(text) <= 120 else text[:117] + "..."


def damage_of(exc: BaseException, db: Path) -> str | None:
    """Why the index at ``db`` is damaged, when ``exc`` (raised while using it) comes from that.

    Storage faults (a full or read-only disk, a lock held by another process)
    are not damage. Anything else unexpected is checked against the file
    (:func:`verify_index`), so a bug is never mistaken for damage and
    damage never for a bug.
    """
    from .errors import PinakesError, storage_problem

    if isinstance(exc, PinakesError) or storage_problem(exc) is not None:
        return None
    if isinstance(exc, sqlite3.OperationalError) and any(
            s in str(exc) for s in ("locked", "busy", "interrupted")):
        return None
    reason = clear_damage(exc) or verify_index(db)
    return None if reason is None else short(reason)


def verify_index(db: Path) -> str | None:
    """Read every row of the index and check what can be checked; the first problem, or None.

    ``PRAGMA quick_check`` for the b-trees, every text value decoded, every
    JSON column parsed, every chunk's text against its content hash and every
    vector against its CRC. It reads the whole file: used after an
    unexpected failure, never on the hot path.
    """
    from .text import embed_text

    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        return " ".join(str(exc).split())
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
        if [tuple(r) for r in rows] != [("ok",)]:
            return "integrity check: " + "; ".join(str(r[0]) for r in rows[:3])
        titles: dict[int, str] = {}
        names: dict[int, tuple[str, str]] = {}
        for doc, ulid, path, title, tags, meta, problems in conn.execute(
                "SELECT doc, ulid, path, title, tags, meta, problems FROM documents"):
            for value in (tags, meta, problems):
                json.loads(value)
            titles[doc] = title
            names[doc] = (ulid, path)
        dim = int((conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone() or [0])[0])
        for cid, doc, ordinal, heading, text, h, start, end, vec, check in conn.execute(
                "SELECT id, doc, ordinal, heading_path, text, hash, start_line, end_line, vec, checksum"
                " FROM chunks"):
            if doc not in titles:
                return f"chunk {cid} belongs to no document"
            if chunk_hash(embed_text(titles[doc], tuple(json.loads(heading)), text)) != h:
                return f"chunk {cid}'s text does not match its content hash"
            if row_checksum(*names[doc], ordinal, start, end, h) != check:
                return f"chunk {cid}'s document, place or hash does not match its checksum"
            if vec is not None and (len(vec) != dim + 8 or not vector_intact(vec)):
                return f"chunk {cid}'s vector does not match its checksum"
        for table in ("links", "problems", "nodes", "edges", "moves", "meta"):
            with contextlib.suppress(sqlite3.OperationalError):  # a table of another version
                for _ in conn.execute(f"SELECT * FROM {table}"):  # noqa: S608 - fixed names
                    pass
    except (sqlite3.DatabaseError, ValueError, TypeError, KeyError) as exc:
        return " ".join(str(exc).split()) or type(exc).__name__
    finally:
        conn.close()
    return None


def vector_intact(blob: bytes) -> bool:
    """Whether a stored vector's last 4 bytes are the CRC-32 of the rest (see :func:`seal`)."""
    return zlib.crc32(blob[:-4]) == int.from_bytes(blob[-4:], "little")


# --- the marks -----------------------------------------------------------------------------------


def _identity(db: Path) -> dict[str, Any]:
    """What names one index file: its inode and, when readable, its store id."""
    out: dict[str, Any] = {}
    with contextlib.suppress(OSError):
        out["inode"] = os.stat(db).st_ino
    with contextlib.suppress(sqlite3.Error, ValueError):  # ValueError: a store id not UTF-8
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
            if row is not None:
                out["store"] = str(row[0])
        finally:
            conn.close()
    return out


def mark_damaged(state_dir: Path, reason: str) -> None:
    """Remember that this index is damaged, so the next sync rebuilds it (best effort).

    Written once: a file event for every refused call would keep a watcher's
    debounce from ever going quiet, and so from ever syncing.
    """
    if marked_damage(state_dir) is not None:
        return
    data = {"reason": reason, **_identity(state_dir / "index.db")}
    with contextlib.suppress(OSError):
        tmp = state_dir / f".{DAMAGE_MARK}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, state_dir / DAMAGE_MARK)


def marked_damage(state_dir: Path, store_id: str | None = None) -> str | None:
    """The reason recorded for *this* index file, or None (no mark, or one about an older file).

    A reader that found damage may write its mark after a sync already
    replaced the file; the mark names the store (or, when its id was
    unreadable, the inode) so it never condemns the new one.
    """
    path = state_dir / DAMAGE_MARK
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return "the index was marked damaged"
    if not isinstance(data, dict):
        return "the index was marked damaged"
    if data.get("store"):
        if store_id is None:
            store_id = _identity(state_dir / "index.db").get("store")
        if store_id is not None and store_id != data["store"]:
            return None
    else:
        try:
            if os.stat(state_dir / "index.db").st_ino != data.get("inode"):
                return None
        except OSError:
            return None
    return str(data.get("reason") or "the index was marked damaged")


def clear_mark(state_dir: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(state_dir / DAMAGE_MARK)


def record_generation(state_dir: Path, store_id: str | None, generation: int) -> None:
    """Leave ``store_id generation`` for :func:`lost_writes` (derived state: no fsync needed)."""
    if not store_id:
        return
    with contextlib.suppress(OSError):
        tmp = state_dir / f".{GENERATION_MARK}.{os.getpid()}.tmp"
        tmp.write_text(f"{store_id} {generation}\n", encoding="utf-8")
        os.replace(tmp, state_dir / GENERATION_MARK)


def lost_writes(state_dir: Path, store_id: str | None, generation: int) -> str | None:
    """Why the index is older than the last sync left it (its WAL lost or stale), or None."""
    if not store_id:
        return None
    try:
        found, _, gen = (state_dir / GENERATION_MARK).read_text(encoding="utf-8").strip().partition(" ")
        expected = int(gen)
    except (OSError, ValueError):
        return None
    if found == store_id and expected > generation:
        return (f"it holds generation {generation} but the last sync left {expected}: "
                "its write-ahead log was lost or replaced")
    return None


def discard_index(state_dir: Path) -> None:
    """Delete the index, what is derived from it (the graph cache) and any mark about it.

    Truth is untouched: the next sync builds a new index from the files.
    """
    for name in ("index.db", "index.db-wal", "index.db-shm", "graph-cache.npz", DAMAGE_MARK):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(state_dir / name)
