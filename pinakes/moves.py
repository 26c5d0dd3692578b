"""Moves: a document renamed without its sidecar keeps its identity.

``git mv a.md b.md`` or a plain ``mv`` moves the Markdown file and leaves
``a.pnk.yaml`` behind. Without this module sync would mint a new ULID for
``b.md`` and orphan the old sidecar, turning every ``pnk://`` link to the note
into a dangling one. Sync calls :func:`recognise_moves` after its scan, while
new documents still wait for a sidecar, and:

* a new document whose bytes equal those of a document that vanished in this
  same sync (its file gone, its sidecar still there and still carrying its id)
  takes that sidecar: it is moved beside the new path;
* failing that, one whose text is clearly the most similar (a rename with a
  small edit: word-trigram Jaccard at least :data:`SIMILAR`, and ahead of the
  runner-up on both sides by :data:`MARGIN`) takes it the same way;
* documents that merely swapped places (``a.md`` now holds what ``b.md`` held
  and the other way round, sidecars untouched) swap sidecars, for any cycle of
  exact content matches.

Anything ambiguous (two new files with the same content as one vanished
document, a near tie) is reported as one problem line and left alone: never
guessed. The sidecar is moved with one rename (comments and key order kept),
so a kill leaves it at the old place or the new one, never at both; a swap
is logged first and replayed by the next sync when a kill interrupts it. Sync then sees the same ULID at a new path, which is
an ordinary rename: the internal document key, links and metadata carry over.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .faults import crash_point
from .fsutil import atomic_write
from .sidecar import read_sidecar, sidecar_rel_path

if TYPE_CHECKING:
    from .store import Store
    from .sync import PreparedDoc, SyncReport

#: ``identify(doc, sidecar path, report)``: sync's reading of a sidecar into a document.
Identify = Callable[["PreparedDoc", Path, "SyncReport"], Any]

#: Least word-trigram Jaccard similarity for a rename with an edit.
SIMILAR = 0.5
#: How far the best candidate must lead the runner-up (on both sides) to be taken.
MARGIN = 0.2
#: A trigram shared by more vanished documents than this is boilerplate: it decides nothing.
COMMON = 50

_WORD = re.compile(r"\w+")


def recognise_moves(store: Store, root: Path, mode: str, files: list[tuple[str, Path]],
                    existing: dict[str, Any], seen: set[str], prepared: list[PreparedDoc],
                    report: SyncReport, problems: list[tuple[str, str]], *,
                    identify: Identify) -> dict[str, Any]:
    """Give moved documents their old sidecars; see the module docstring.

    Returns ``{new path: old row}`` for documents that swapped identities
    between paths that both still exist (the caller treats them as renames);
    plain moves need no answer: the moved sidecar's ULID says it all.
    ``problems`` receives one (path, message) per ambiguous case. ``identify``
    is sync's: it reads a document's identity from the sidecar now beside it
    (handed in, so this module and sync do not import each other).
    """
    awaiting = [d for d in prepared if d.awaiting]
    gone = [row for path, row in existing.items() if path not in seen] if awaiting else []
    swaps: dict[str, Any] = {}
    if gone:
        orphans = _orphans(root, mode, files, gone)
        if orphans:
            for doc, row in _match(store, awaiting, orphans, problems):
                if _move_sidecar(root / row["sidecar_path"], root / doc.sidecar_rel,
                                 prune=None if mode in ("", "beside") else root / mode.strip("/")):
                    identify(doc, root / doc.sidecar_rel, report)
    for doc in awaiting:
        if doc.awaiting:
            identify(doc, root / doc.sidecar_rel, report)
    changed = [d for d in prepared if d.rel in existing and d.hash != existing[d.rel]["hash"]
               and d.sidecar_stat == existing[d.rel]["sidecar_stat"]
               and d.ulid == existing[d.rel]["ulid"]]
    if len(changed) > 1:
        swaps = _swap(root, existing, changed, report, store.state_dir, identify)
    return swaps


def _orphans(root: Path, mode: str, files: list[tuple[str, Path]], gone: list[Any]) -> list[Any]:
    """Vanished documents whose sidecar stayed behind, unclaimed, still holding their id."""
    claimed = {sidecar_rel_path(rel, mode) for rel, _ in files}
    out = []
    for row in gone:
        if os.path.lexists(root / row["path"]) or row["sidecar_path"] in claimed:
            continue  # still there but no longer indexed (excluded, skipped), or reused
        sc = read_sidecar(root / row["sidecar_path"])
        if sc.exists and sc.error is None and sc.id == row["ulid"]:
            out.append(row)
    return out


def _match(store: Store, awaiting: list[PreparedDoc], orphans: list[Any],
           problems: list[tuple[str, str]]) -> list[tuple[PreparedDoc, Any]]:
    """Pair new documents with vanished ones: equal bytes first, then clear similarity."""
    pairs: list[tuple[PreparedDoc, Any]] = []
    by_hash_new: dict[str, list[PreparedDoc]] = {}
    by_hash_old: dict[str, list[Any]] = {}
    for doc in awaiting:
        by_hash_new.setdefault(doc.hash, []).append(doc)
    for row in orphans:
        by_hash_old.setdefault(row["hash"], []).append(row)
    used_new: set[str] = set()
    used_old: set[int] = set()
    for digest, olds in by_hash_old.items():
        news = by_hash_new.get(digest, [])
        if not news:
            continue
        used_new.update(d.rel for d in news)
        used_old.update(r["doc"] for r in olds)
        if len(news) == 1 and len(olds) == 1:
            pairs.append((news[0], olds[0]))
        else:
            problems.append((news[0].rel, _ambiguous([d.rel for d in news], [r["path"] for r in olds],
                                                     "the same content")))
    rest_new = [d for d in awaiting if d.rel not in used_new]
    rest_old = [r for r in orphans if r["doc"] not in used_old]
    if rest_new and rest_old:
        pairs.extend(_similar(store, rest_new, rest_old, problems))
    return pairs


def _similar(store: Store, news: list[PreparedDoc], olds: list[Any],
             problems: list[tuple[str, str]]) -> list[tuple[PreparedDoc, Any]]:
    """Pairs whose texts are clearly each other's best match (a rename with a small edit)."""
    old_sets: dict[int, set[int]] = {}
    index: dict[int, list[int]] = {}
    for row in olds:
        text = "\n".join(r[0] for r in store.conn.execute(
            "SELECT text FROM chunks WHERE doc = ? ORDER BY ordinal", (row["doc"],)))
        old_sets[row["doc"]] = grams = _trigrams(text)
        for g in grams:
            index.setdefault(g, []).append(row["doc"])
    scores: dict[tuple[str, int], float] = {}
    for doc in news:
        grams = _trigrams("\n".join(c.text for c in doc.parsed.chunks))
        overlap: Counter[int] = Counter()
        for g in grams:
            holders = index.get(g, ())
            if len(holders) <= COMMON:
                overlap.update(holders)
        for key, shared in overlap.items():
            union = len(grams) + len(old_sets[key]) - shared
            if union:
                scores[(doc.rel, key)] = shared / union
    by_new: dict[str, list[tuple[float, int]]] = {}
    by_old: dict[int, list[tuple[float, str]]] = {}
    for (rel, key), s in scores.items():
        by_new.setdefault(rel, []).append((s, key))
        by_old.setdefault(key, []).append((s, rel))
    rows = {row["doc"]: row for row in olds}
    pairs = []
    for doc in news:
        ranked = sorted(by_new.get(doc.rel, []), reverse=True)
        if not ranked or ranked[0][0] < SIMILAR:
            continue
        best, key = ranked[0]
        rivals = sorted(by_old[key], reverse=True)
        runner_up = max(ranked[1][0] if len(ranked) > 1 else 0.0,
                        next((s for s, rel in rivals if rel != doc.rel), 0.0))
        if rivals[0][1] == doc.rel and best - runner_up >= MARGIN:
            pairs.append((doc, rows[key]))
        else:
            close_new = [rel for s, rel in rivals if s >= best - MARGIN]
            close_old = [rows[k]["path"] for s, k in ranked if s >= best - MARGIN]
            line = (doc.rel, _ambiguous(sorted(set(close_new) | {doc.rel}), sorted(set(close_old)),
                                        "similar content"))
            if line[1] not in {m for _, m in problems}:
                problems.append(line)
    return pairs


def _trigrams(text: str) -> set[int]:
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return {hash(tuple(words))} if words else set()
    return {hash((words[i], words[i + 1], words[i + 2])) for i in range(len(words) - 2)}


def _ambiguous(news: list[str], olds: list[str], why: str) -> str:
    return (f"ambiguous move, not guessed: {' and '.join(news)} and vanished "
            f"{' and '.join(olds)} have {why}; each new file got a new id (to keep an old one, "
            "put the old sidecar over the new file's sidecar and run `pnk sync`)")


def _move_sidecar(old: Path, new: Path, prune: Path | None = None) -> bool:
    """Move a sidecar to ``new`` with one rename, so a kill leaves it at one place or the other.

    (Writing a copy and then removing the original left, when killed between the
    two, a second sidecar carrying the same id beside nothing.) Only across file
    systems (a mount inside the KB) is it copied (atomically) and then removed.
    ``prune``: the parallel sidecar tree, in which folders the move left empty
    are removed (the user's own folders are never touched).
    """
    if new.exists():
        return False
    try:
        new.parent.mkdir(parents=True, exist_ok=True)
        os.rename(old, new)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            return False
        try:
            raw = old.read_bytes()
            mode = old.stat().st_mode & 0o777
        except OSError:
            return False
        atomic_write(new, raw)
        os.chmod(new, mode)
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
    crash_point("move-sidecar")  # test equipment: pinakes/faults.py
    _fsync_dir(new.parent)
    _fsync_dir(old.parent)
    if prune is not None:
        _prune_empty(old.parent, prune)
    return True


#: The redo log of a sidecar swap in progress, in the KB's state folder.
SWAP_JOURNAL = "swap.journal"


def _swap(root: Path, existing: dict[str, Any], changed: list[PreparedDoc],
          report: SyncReport, state_dir: Path, identify: Identify) -> dict[str, Any]:
    """Rotate sidecars among documents that only exchanged contents (cycles of exact matches).

    A swap rewrites several sidecars, and no kill between two of those writes
    may leave two sidecars with one id (the other identity lost). So the whole
    swap (every sidecar's text before and after) is first written, atomically,
    to a redo log (:data:`SWAP_JOURNAL`); then each sidecar is written
    atomically; then the log is removed. A sync that finds the log left by a
    killed one finishes the swap first (:func:`finish_interrupted_swap`).
    """
    old_hash: dict[str, list[str]] = {}
    for doc in changed:
        old_hash.setdefault(existing[doc.rel]["hash"], []).append(doc.rel)
    takes = {}  # path -> the path whose old identity (and sidecar) it should take
    for doc in changed:
        holders = old_hash.get(doc.hash, [])
        if len(holders) == 1 and holders[0] != doc.rel:
            takes[doc.rel] = holders[0]
    cycle_members: set[str] = set()
    for start in takes:
        path, seen = start, []
        while path in takes and path not in seen:
            seen.append(path)
            path = takes[path]
        if path == start:
            cycle_members.update(seen)
    if not cycle_members:
        return {}
    docs = {d.rel: d for d in changed if d.rel in cycle_members}
    texts = {rel: (root / d.sidecar_rel).read_bytes() for rel, d in docs.items()}
    plan = [(doc.sidecar_rel, texts[rel], texts[takes[rel]]) for rel, doc in docs.items()]
    journal = state_dir / SWAP_JOURNAL
    atomic_write(journal, json.dumps([{"path": p, "old": _b64(a), "new": _b64(b)} for p, a, b in plan]))
    for sc_rel, _, new in plan:
        atomic_write(root / sc_rel, new)
        crash_point("swap-sidecar")  # test equipment: pinakes/faults.py
    journal.unlink()
    _fsync_dir(state_dir)
    for doc in docs.values():
        identify(doc, root / doc.sidecar_rel, report)
    return {rel: existing[takes[rel]] for rel in docs}


def finish_interrupted_swap(root: Path, state_dir: Path) -> list[tuple[str, str]]:
    """Complete a sidecar swap a killed sync left half done; returns problem lines.

    Each sidecar of the logged swap that still holds its text from before gets
    its new one; a sidecar edited since (neither text) is left alone and
    reported. Runs under the sync lock, before the scan.
    """
    journal = state_dir / SWAP_JOURNAL
    try:
        entries = json.loads(journal.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        return [(f".pinakes/{SWAP_JOURNAL}", f"unreadable, not replayed ({exc}); removed")]
    problems = []
    done = []
    for entry in entries:
        rel, old, new = str(entry["path"]), base64.b64decode(entry["old"]), base64.b64decode(entry["new"])
        try:
            current = (root / rel).read_bytes()
        except OSError:
            current = None
        if current == old:
            atomic_write(root / rel, new)
        elif current != new:
            problems.append((rel, "changed since an interrupted sync began to swap it with another "
                                  "document's sidecar; left as it is (check its id)"))
            continue
        done.append(rel)
    journal.unlink()
    _fsync_dir(state_dir)
    if done:
        problems.append((done[0], "finished swapping the sidecars of " + ", ".join(done)
                         + " (a sync was interrupted while it swapped them)"))
    return problems


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _prune_empty(folder: Path, top: Path) -> None:
    """Remove ``folder`` and its parents below ``top`` while they are empty."""
    while top in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
