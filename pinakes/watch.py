"""Watch mode: keep KBs' indexes fresh as their files change.

``pnk sync --watch`` and ``pnk serve --watch`` run :func:`watch`, which waits
for file-system events with ``watchfiles`` (inotify, FSEvents or
ReadDirectoryChangesW underneath; a small Rust wheel whose only dependency,
``anyio``, the MCP SDK already brings) and runs an ordinary incremental sync
when something that matters changed:

* **Debounced.** A burst (a ``git checkout``, an editor's atomic save: temp
  file, then rename over) is gathered until the folder has been quiet for
  ``step_ms``, or for at most ``debounce_ms``; events that arrive while a sync
  runs are gathered into the next batch. A thousand changed files make a few
  syncs, not a thousand.
* **Incremental.** Sync itself is hash-diffed and costs one ``stat`` per
  unchanged file (about 0.1 s for 1,000 documents, 0.8 s for 10,000; see
  docs/performance.md), so a batch runs a normal sync rather than a partial
  one, which also keeps rename detection (``pinakes.moves``) whole: a move is a
  delete and an add that must be seen together.
* **No feedback loop.** An event only counts when the file system disagrees
  with the index about that path (a document or sidecar whose size and mtime
  differ from what the last sync recorded, a folder, a deleted indexed path).
  The store's own writes (``.pinakes/``) and the sidecars sync writes itself
  therefore wake the loop but never trigger another sync.
* **Settling files.** A half-written or malformed file syncs with a problem
  line, like any bad input; the write that completes it is a new event and
  re-syncs it.
* **The KB folder moving away** (or losing its ``pinakes.toml``) ends the watch
  with :class:`KBGone`: ``pnk sync --watch`` prints one line and exits 1.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import PinakesError, StoreBusy
from .fsutil import is_included, matches_any
from .sidecar import SUFFIX

if TYPE_CHECKING:
    from .kb import KB
    from .sync import SyncReport

#: Longest a burst of events is gathered before a sync (ms).
DEBOUNCE_MS = 2000
#: Quiet time that closes a burst (ms).
STEP_MS = 300
#: How often the loop wakes without events to check the KB folders are still there (ms).
POLL_MS = 1000
#: Seconds a watch-triggered sync waits for another process's sync before retrying later.
LOCK_WAIT = 5.0


class KBGone(PinakesError):
    """A watched KB's folder was moved away or deleted."""


@dataclass
class _Watched:
    kb: KB
    root: Path
    ino: int
    prefix: str
    dirty: bool = False  # a sync is owed (the last attempt found the store busy)
    changes: int = 0
    syncs: int = 0
    problems: list[str] = field(default_factory=list)


#: Called after every sync: (kb, report, None) on success, (kb, None, message) on a failed one.
OnSync = Callable[["KB", "SyncReport | None", "str | None"], None]


def watch(kbs: Sequence[KB], on_sync: OnSync, *, stop: threading.Event | None = None,
          initial: bool = True, debounce_ms: int = DEBOUNCE_MS, step_ms: int = STEP_MS,
          on_gone: Callable[[KB, str], None] | None = None) -> None:
    """Sync ``kbs`` now (``initial``) and again whenever their files change, until ``stop``.

    ``on_sync(kb, report, error)`` hears about every sync. When a KB's folder
    goes away, ``on_gone(kb, message)`` is told and the others are still
    watched; without ``on_gone`` (or when none is left) :class:`KBGone` is
    raised. KeyboardInterrupt propagates, between syncs or during one (a sync
    interrupted before its single write transaction leaves the last index).
    """
    import watchfiles

    watched = []
    for kb in kbs:
        root = kb.root.resolve()
        if not (root / "pinakes.toml").is_file():
            message = f"{root}: not a knowledge base folder (no pinakes.toml); not watched"
            if on_gone is None:
                raise KBGone(message)
            on_gone(kb, message)
            continue
        watched.append(_Watched(kb, root, root.stat().st_ino, str(root) + os.sep))
    if not watched:
        raise KBGone("no knowledge base folder left to watch")
    live = list(watched)
    pending_initial = initial
    stop = stop or threading.Event()
    try:
        batches = watchfiles.watch(
            *(w.root for w in watched), watch_filter=_Filter(), debounce=debounce_ms, step=step_ms,
            stop_event=stop, rust_timeout=POLL_MS, yield_on_timeout=True,
            ignore_permission_denied=True,
        )
        for batch in batches:
            if pending_initial:
                # The first batch comes once the watcher runs (events or POLL_MS): syncing
                # only now means nothing changed during the first sync goes unseen.
                pending_initial = False
                for w in live:
                    _sync(w, on_sync)
                continue
            for w in list(live):
                gone = _gone(w)
                if gone:
                    live.remove(w)
                    if on_gone is None or not live:
                        raise KBGone(gone)
                    on_gone(w.kb, gone)
            for w in live:
                mine = [(int(c), p) for c, p in batch if p.startswith(w.prefix)]
                w.changes += len(mine)
                if w.dirty or (mine and _relevant(w, mine)) or _damaged(w):
                    _sync(w, on_sync)
            if stop.is_set():
                return
    except OSError as exc:
        if "watch" in str(exc).lower() and "limit" in str(exc).lower():
            raise PinakesError(
                f"the system's file-watch limit is reached ({exc}); raise it "
                "(sysctl fs.inotify.max_user_watches=524288) or set WATCHFILES_FORCE_POLLING=1"
            ) from exc
        raise


def _sync(w: _Watched, on_sync: OnSync) -> None:
    try:
        report = w.kb.sync(lock_wait=LOCK_WAIT)
    except StoreBusy as exc:
        w.dirty = True  # another process is syncing: try again on the next wake-up
        on_sync(w.kb, None, str(exc))
        return
    except PinakesError as exc:
        w.dirty = False
        on_sync(w.kb, None, str(exc))
        return
    w.dirty = False
    w.syncs += 1
    on_sync(w.kb, report, None)


def _damaged(w: _Watched) -> bool:
    """A reader (a served search) found the index damaged: sync now, which rebuilds it.

    One ``stat`` per wake-up (about once a second) when there is no mark.
    """
    from .health import DAMAGE_MARK, marked_damage

    state = w.kb.config.state_dir
    return os.path.exists(state / DAMAGE_MARK) and marked_damage(state) is not None


def _gone(w: _Watched) -> str | None:
    try:
        st = w.root.stat()
    except OSError:
        return f"{w.root}: the knowledge base folder is gone (moved or deleted); stopped watching it"
    if st.st_ino != w.ino or not (w.root / "pinakes.toml").is_file():
        return (f"{w.root}: the knowledge base folder was replaced or lost its pinakes.toml; "
                "stopped watching it")
    return None


class _Filter:
    """watchfiles' default noise filter (editor swap files, .git, ...) plus the store's folder.

    Except the mark a reader leaves when it finds the index damaged: that event
    wakes the loop, which then syncs (and so rebuilds). Waiting for a quiet
    timeout instead is not enough: a server whose calls keep reopening a
    damaged store keeps touching its ``-wal``/``-shm`` files, so the folder is
    never quiet.
    """

    def __init__(self) -> None:
        import watchfiles

        from .health import DAMAGE_MARK

        self._default = watchfiles.DefaultFilter(
            ignore_dirs=(*watchfiles.DefaultFilter.ignore_dirs, ".pinakes"))
        self._mark = os.sep + DAMAGE_MARK

    def __call__(self, change: Any, path: str) -> bool:
        return path.endswith(self._mark) or self._default(change, path)


def _relevant(w: _Watched, changes: list[tuple[int, str]]) -> bool:
    """True when some changed path is one the index disagrees with (see the module docstring)."""
    cfg = w.kb.config
    include = list(cfg.kb["include"])
    mode = str(cfg.kb["sidecars"])
    exclude = list(cfg.kb["exclude"])
    if mode not in ("", "beside"):
        exclude.append(mode.strip("/") + "/**")
    docs: dict[str, str] = {}
    sidecars: dict[str, str] = {}
    dirs: list[str] = []
    gone: list[str] = []
    for _, path in changes:
        rel = path[len(w.prefix):].replace(os.sep, "/")
        if not rel:
            continue
        if rel == "pinakes.toml":
            continue  # read at start; docs/watch.md says to restart for config changes
        if rel.endswith(SUFFIX):
            sidecars[rel] = _stat_key(path)
        elif os.path.isdir(path):
            dirs.append(rel)
        elif is_included(rel, include) and not matches_any(rel, exclude):
            docs[rel] = _stat_key(path)
        elif not os.path.lexists(path):
            gone.append(rel)  # perhaps a folder moved out of the KB: did it hold indexed files?
    if any(not matches_any(d + "/", exclude) and not matches_any(d, exclude) for d in dirs):
        return True
    if not docs and not sidecars and not gone:
        return False
    try:
        conn = _store_conn(w)
    except Exception:  # noqa: BLE001 - no readable index yet: a sync will build one
        return True
    try:
        return _disagrees(conn, docs, sidecars, gone)
    except sqlite3.DatabaseError:
        return True  # an unreadable (damaged) index: the sync rebuilds it
    finally:
        conn.close()


def _disagrees(conn: Any, docs: dict[str, str], sidecars: dict[str, str], gone: list[str]) -> bool:
    """Whether the index's rows disagree with the changed paths (see :func:`_relevant`)."""
    for rel, now in docs.items():
        row = conn.execute("SELECT size, mtime_ns FROM documents WHERE path = ?", (rel,)).fetchone()
        was = f"{row[0]}:{row[1]}" if row is not None else ""
        if now != was:
            return True
    for rel in gone:
        inside = conn.execute("SELECT 1 FROM documents WHERE path > ? AND path < ? LIMIT 1",
                              (rel + "/", rel + "0")).fetchone()
        if inside is not None:
            return True
    if sidecars:
        known = dict(conn.execute("SELECT sidecar_path, sidecar_stat FROM documents"))
        for rel, now in sidecars.items():
            if rel in known and now != known[rel]:
                return True
            if rel not in known and now:
                # A sidecar no document claims (an orphan, or one for a file not
                # indexed yet): only a move could use it, and that shows as a doc event.
                continue
    return False


def _store_conn(w: _Watched) -> Any:
    import sqlite3

    db = w.kb.config.state_dir / "index.db"
    if not db.exists():
        raise FileNotFoundError(db)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    return conn


def _stat_key(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}"


def stamp() -> str:
    """The local time, for log lines."""
    return time.strftime("%H:%M:%S")
