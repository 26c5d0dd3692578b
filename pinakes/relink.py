"""Links follow the documents they point at when sync sees those documents move.

A move that sync recognises (a rename by ULID, a document moved without its
sidecar, two documents that swapped contents: :mod:`pinakes.moves`) keeps the
document's identity. What was written *as a path* does not move by itself:
``to: bore.md`` in another note's sidecar, ``[bore](bore.md)`` in a body, and a
moved note's own relative links, now read from a folder they were not written
in. Without this module each of those became ``missing-file`` on the next sync
and the authored edge was gone.

* **Sidecar links are updated.** Sidecars are Pinakes' files: every authored
  path link that resolved to a document before this sync is rewritten so that
  it resolves to the same document after it (its new path, or its own new
  folder when the linking note moved), in the form it was written (relative,
  root-absolute, ``kb://``; fragments kept). The write is atomic and keeps
  comments, key order and quoting; the rewritten sidecar is read again in the
  same sync, so the index holds the new target at once.
* **Body links are never edited.** A moved document whose old path is still
  linked by a body (or by a sidecar that could not be rewritten), or whose own
  relative body links were written from its old folder, records that path in
  its sidecar, ``moved_from: [old/path.md]``. Sync keeps those records in the
  ``moves`` table and the resolver falls back to them: a link to a path where
  no document lives now resolves to the document that moved away from it
  (``reason`` ``moved`` on the resolved row, so ``pnk doctor`` can name the
  move and the new path until the text is fixed); a moved note's relative
  links that no longer resolve are read from its old folder. A document that
  appears at the old path later wins: a path means what is there now.

The record lives in the sidecar (truth), not only in the index, so it survives
``pnk sync --rebuild``, a deleted ``.pinakes/`` and a clone, and a chain of
moves (a -> b -> c) keeps every old path. A sync that moved nothing does none
of this work.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dialects import lookup_name
from .links import SCAN, SIDECAR, classify, is_outside, kb_path
from .movetable import is_relative
from .sidecar import read_sidecar, write_sidecar
from .sqlin import rows

if TYPE_CHECKING:
    from .store import Store
    from .sync import PreparedDoc, SyncReport

#: The sidecar key holding a document's earlier paths (KB-relative, oldest first).
MOVED_FROM = "moved_from"


def moved_from(data: Any) -> list[str]:
    """The earlier paths a sidecar records, as clean KB-relative POSIX paths."""
    value = data.get(MOVED_FROM) if isinstance(data, dict) else None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    out: list[str] = []
    for item in value:
        if isinstance(item, str) and item.strip():
            rel = kb_path(item.strip(), "", root_relative=True)
            if rel and not is_outside(rel) and rel not in out:
                out.append(rel)
    return out


#: ``identify(doc, sidecar path, report, root=...)``: sync's, which re-reads a sidecar into a document.
Identify = Callable[..., Any]


def follow_moves(root: Path, own: str, bundle: str, store: Store, renames: dict[str, Any],
                 existing: dict[str, Any], removed: Sequence[Any], prepared: list[PreparedDoc],
                 report: SyncReport, reprepare: Callable[[str], PreparedDoc | None],
                 identify: Identify) -> None:
    """Rewrite authored links to (and of) moved documents; record moves body links need.

    Called by sync after moves are recognised and before anything is embedded
    or written to the index. ``own`` and ``bundle`` are the KB's name and
    ``[kb] bundle_root`` (how its links are read). ``renames`` maps a new path
    to the document's row before this sync; ``existing`` holds every row by
    path, ``removed`` the rows of documents that are gone. ``reprepare(path)``
    reads an otherwise unchanged document whose sidecar this rewrote, so it is
    re-indexed now; ``identify`` re-reads a rewritten sidecar into its document.
    """
    moved = {row["doc"]: (row["path"], new) for new, row in renames.items() if row["path"] != new}
    if not moved:
        return
    by_key = {row["doc"]: row for row in existing.values()}
    gone = {row["doc"] for row in removed}
    by_rel = {doc.rel: doc for doc in prepared}
    # Where each document lives after this sync (None: gone, or one id claimed twice).
    where: dict[str, str | None] = {}
    for row in existing.values():
        if row["doc"] in gone:
            continue
        path = moved[row["doc"]][1] if row["doc"] in moved else row["path"]
        where[row["ulid"]] = path if row["ulid"] not in where else None
    moved_ulids = {by_key[k]["ulid"]: v for k, v in moved.items()}
    rows = _authored_rows(store, sorted(moved_ulids), sorted(moved))
    rewritten: set[tuple[int, str]] = set()  # (source doc key, old target key) now updated
    for src_key, targets in rows.items():
        row = by_key.get(src_key)
        if row is None or src_key in gone:
            continue
        old_path = row["path"]
        new_path = moved[src_key][1] if src_key in moved else old_path
        doc = by_rel.get(new_path)
        if doc is None:
            doc = reprepare(new_path)
            if doc is None:
                continue
            prepared.append(doc)
            by_rel[new_path] = doc
        if doc.ulid != row["ulid"]:
            continue
        changes = _rewrite_sidecar(root / doc.sidecar_rel, doc.sidecar_rel, old_path, new_path,
                                   targets, where, own, bundle)
        if changes:
            identify(doc, root / doc.sidecar_rel, report, root=root)
            report.relinked.append((doc.sidecar_rel, [(before, after) for before, after, _ in changes]))
            rewritten.update((src_key, key) for _, _, key in changes)
    _record_moves(root, store, moved, by_key, by_rel, existing, gone, rewritten, report, identify)


def _authored_rows(store: Store, ulids: list[str], keys: list[int]) -> dict[int, dict[str, str]]:
    """Resolved sidecar path links to a moved document or from one: src doc -> {key: ULID}."""
    out: dict[int, dict[str, str]] = {}
    base = ("SELECT src_doc, key, dst_ulid FROM links WHERE origin = ? AND kind = 'path'"
            " AND dst_ulid IS NOT NULL AND dst_kb = '' AND ")
    for column, values in (("dst_ulid", ulids), ("src_doc", keys)):
        for src, key, dst in rows(store.conn, base + column + " IN ({})", values, SIDECAR):
            out.setdefault(int(src), {})[str(key)] = str(dst)
    return out


def _rewrite_sidecar(path: Path, shown: str, src_old: str, src_new: str,
                     targets: dict[str, str], where: dict[str, str | None], own: str,
                     bundle: str) -> list[tuple[str, str, str]]:
    """Point each of the sidecar's resolved path links at its target's place after the moves.

    Returns (before, after, old target key) for each ``to:`` changed; writes only if any did.
    A sidecar that cannot be read cleanly is never rewritten (its links then
    resolve through the move record, like body links).
    """
    sc = read_sidecar(path, display=shown)
    seq = sc.data.get("links") if sc.exists and sc.error is None else None
    if not isinstance(seq, list):
        return []
    changes: list[tuple[str, str, str]] = []
    for item in seq:
        if not isinstance(item, dict) or not isinstance(item.get("to"), str):
            continue
        before = item["to"]
        t = classify(before, src_old, own, sidecar=True, bundle_root=bundle)
        if t is None or t.kind != "path" or t.key not in targets:
            continue
        dest = where.get(targets[t.key])
        if dest is None:
            continue
        after = restyle(before, src_new, dest, own, bundle)
        if after is None or after == before:
            continue
        item["to"] = after
        changes.append((before, after, t.key))
    if changes:
        write_sidecar(sc)
    return changes


def restyle(written: str, src: str, dest: str, own: str, bundle: str) -> str | None:
    """``written`` (a path link target) re-aimed at ``dest`` from a document at ``src``.

    Keeps the form it was written in: a ``kb://own/`` or a root-absolute
    path stays one (when ``dest`` lies under ``bundle_root``), any other stays
    relative to the linking document; a ``#fragment`` or ``?query`` is kept.
    None when no form of it reaches ``dest``.
    """
    text = written.strip()
    scheme_kb = text.lower().startswith("kb:")
    body = text[len("kb:"):].lstrip("/").partition("/")[2] if scheme_kb else text
    cut = min((i for i in (body.find("#"), body.find("?")) if i >= 0), default=len(body))
    suffix = body[cut:]
    base = bundle.strip("/")
    under = posixpath.relpath(dest, base) if base else dest
    if scheme_kb or body.startswith("/"):
        if under.startswith("../"):
            return None
        after = f"kb://{own}/{under}{suffix}" if scheme_kb else f"/{under}{suffix}"
    else:
        after = posixpath.relpath(dest, posixpath.dirname(src) or ".") + suffix
    t = classify(after, src, own, sidecar=True, bundle_root=bundle)
    return after if t is not None and t.kind == "path" and t.key == dest else None


def _record_moves(root: Path, store: Store, moved: dict[int, tuple[str, str]], by_key: dict[int, Any],
                  by_rel: dict[str, PreparedDoc], existing: dict[str, Any], gone: set[int],
                  rewritten: set[tuple[int, str]], report: SyncReport, identify: Identify) -> None:
    """Add ``moved_from`` to the sidecar of each moved document some link still needs it for.

    Needed when, before this sync, a link that Pinakes cannot rewrite (a body
    link, or a sidecar link whose sidecar could not be rewritten) reached the
    document by its old path or by its old title-less wikilink path, or when
    the moved document itself has relative body links and changed folder.
    Not needed when another document now lives at the old path (a swap).
    """
    occupied = {p for p, row in existing.items() if row["doc"] not in gone and row["doc"] not in moved}
    occupied |= set(by_rel)
    for doc_key, (old, new) in sorted(moved.items()):
        if old in occupied:
            continue
        doc = by_rel.get(new)
        row = by_key[doc_key]
        if doc is None or doc.ulid != row["ulid"] or old in doc.moved_from:
            continue
        if not _needs_record(store, doc_key, row, old, new, rewritten):
            continue
        sc = read_sidecar(root / doc.sidecar_rel, display=doc.sidecar_rel)
        if not sc.exists or sc.error is not None:
            continue
        from ruamel.yaml.comments import CommentedSeq

        seq = sc.data.get(MOVED_FROM)
        if not isinstance(seq, list):
            seq = CommentedSeq()
            sc.data[MOVED_FROM] = seq
        seq.append(old)
        write_sidecar(sc)
        identify(doc, root / doc.sidecar_rel, report, root=root)
        report.move_records.append((doc.sidecar_rel, old, new))


def _needs_record(store: Store, doc_key: int, row: Any, old: str, new: str,
                  rewritten: set[tuple[int, str]]) -> bool:
    conn = store.conn
    for src, origin, kind, key in conn.execute(
        "SELECT src_doc, origin, kind, key FROM links WHERE dst_ulid = ? AND dst_kb = '' "
        "AND kind IN ('path', 'guess', 'wiki')", (row["ulid"],)
    ):
        if src == doc_key and kind in ("path", "guess"):
            continue  # its own links: judged below, from where they were written
        if kind in ("path", "guess") and key == old and not (origin == SIDECAR and (src, key) in rewritten):
            return True
        if kind == "wiki" and lookup_name(key) != lookup_name(_title(conn, doc_key)):
            return True  # reached by path or file name, not by its title
    if posixpath.dirname(old) == posixpath.dirname(new):
        return False
    for (raw,) in conn.execute(
        "SELECT raw FROM links WHERE src_doc = ? AND origin = ? AND kind IN ('path', 'guess', 'wiki')"
        " AND dst_ulid IS NOT NULL",
        (doc_key, SCAN),
    ):
        if is_relative(str(raw)):
            return True
    return False


def _title(conn: Any, doc_key: int) -> str:
    row = conn.execute("SELECT title FROM documents WHERE doc = ?", (doc_key,)).fetchone()
    return str(row[0]) if row else ""
