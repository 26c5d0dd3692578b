"""``pnk sync``: make the derived store match the files, incrementally and for free.

Three phases keep it exact and crash-safe:

1. *Scan*: walk the KB; an unchanged file (same size and mtime, same sidecar
   stat) costs one ``stat``. Changed files are read, hashed and re-chunked.
2. *Embed*: chunks whose content hash is not in the embedding cache are
   embedded (sorted by length, batched) and cached as they go, so a killed
   sync loses no embedding work.
3. *Apply*: every change lands in ONE write transaction, so a reader (or a
   killed sync) sees the previous consistent index or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import LEDGER_DIR
from .faults import crash_point
from .fsutil import (
    WalkProblem,
    atomic_write,
    other_text_files,
    stray_temps_under,
    suffix_counts,
    walk_kb,
)
from .graph import run_derivers
from .health import chunk_hash, row_checksum
from .links import refresh_links
from .markdown import Chunk, ParsedDocument, parse_markdown
from .moves import finish_interrupted_swap, recognise_moves
from .relink import follow_moves, moved_from
from .sidecar import Sidecar, is_ulid, new_ulid, read_sidecar, sidecar_rel_path, skeleton
from .store import Store
from .text import embed_text, fold, segment_cjk

# Title, heading path and a separator take some of the embedder's window.
CHUNK_HEADROOM = 40
# A file with a longer line is skipped with a warning (tests/test_limits.py): one
# 10 MB line took the chunker minutes and is never a note.
MAX_LINE_BYTES = 1024 * 1024


def _longest_line(raw: bytes) -> int:
    """Length in bytes of the longest line of ``raw`` (one pass, no copies of the lines)."""
    longest = start = 0
    while True:
        end = raw.find(b"\n", start)
        if end < 0:
            return max(longest, len(raw) - start)
        longest = max(longest, end - start)
        start = end + 1


@dataclass
class SyncReport:
    """What a sync did; printed as one line, or as JSON with ``--json``."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    skipped: int = 0
    chunks_embedded: int = 0
    chunks_cached: int = 0
    sidecars_created: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    rebuilt: bool = False
    healed: str = ""  # why the index was found damaged (and so rebuilt), if it was
    seconds: float = 0.0
    embed_seconds: float = 0.0
    generation: int = 0
    edges_written: int = 0
    #: Sidecars whose links sync re-aimed at moved documents: (sidecar, [(before, after)]).
    relinked: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)
    #: Moves recorded in a moved document's sidecar (``moved_from``): (sidecar, old, new).
    move_records: list[tuple[str, str, str]] = field(default_factory=list)
    #: Sidecars sync moved after their documents (old, new), and of those the paths to
    #: stage in git (old and new; empty outside a git work tree): see moves.git_stage_paths.
    sidecars_moved: list[tuple[str, str]] = field(default_factory=list)
    git_stage: list[str] = field(default_factory=list)
    git_root: str = ""  # the KB folder the git_stage paths are relative to
    #: The graph channel check that followed (pinakes.channel_choice.refresh), if any.
    channel: dict[str, Any] | None = None
    #: Markdown files ``include`` has no pattern for, by suffix (".mdx": 12): see left_out_hint.
    left_out: dict[str, int] = field(default_factory=dict)
    #: In a KB with no document: its other text files, by suffix (".rst": 40): see other_text_hint.
    other_text: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """The one closing line a sync prints."""
        parts = [
            f"{len(self.added)} added",
            f"{len(self.changed)} changed",
            f"{len(self.removed)} removed",
        ]
        if self.renamed:
            parts.append(f"{len(self.renamed)} renamed")
        parts.append(f"{self.unchanged} unchanged")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        text = ", ".join(parts)
        text += f"; {self.chunks_embedded} chunks embedded, {self.chunks_cached} from cache"
        if self.problems:
            text += f"; {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"
        text += f" in {self.seconds:.2f}s"
        if self.healed:
            text = f"the index was damaged ({self.healed}); rebuilt it from your files: " + text
        elif self.rebuilt:
            text = "rebuilt the index: " + text
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "renamed": [{"from": a, "to": b} for a, b in self.renamed],
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "chunks_embedded": self.chunks_embedded,
            "chunks_cached": self.chunks_cached,
            "sidecars_created": self.sidecars_created,
            "problems": self.problems,
            "rebuilt": self.rebuilt,
            "healed": self.healed,
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "generation": self.generation,
            "edges_written": self.edges_written,
            "relinked": [{"sidecar": sc, "changes": [{"from": a, "to": b} for a, b in ch]}
                         for sc, ch in self.relinked],
            "move_records": [{"sidecar": sc, "from": a, "to": b} for sc, a, b in self.move_records],
            "sidecars_moved": [{"from": a, "to": b} for a, b in self.sidecars_moved],
            "git_stage": self.git_stage,
            "channel": self.channel,
            "left_out": self.left_out,
            "other_text": self.other_text,
        }


@dataclass
class PreparedDoc:
    """A changed document, read and chunked, waiting for its vectors."""

    rel: str
    ulid: str
    provisional: bool
    title: str
    tags: list[str]
    meta: dict[str, Any]
    size: int
    mtime_ns: int
    hash: str
    sidecar_rel: str
    sidecar_stat: str
    problems: list[str]
    parsed: ParsedDocument
    chunk_rows: list[dict[str, Any]] = field(default_factory=list)
    sidecar: Sidecar | None = None
    fm_problems: list[str] = field(default_factory=list)  # the document's own (not its sidecar's)
    awaiting: bool = False  # no sidecar yet: maybe a move whose sidecar stayed behind
    moved_from: list[str] = field(default_factory=list)  # its sidecar's move records (relink.py)


ProgressFn = Callable[[str, int, int], None]


def _stat_key(path: Path | str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}"


@dataclass
class SyncInputs:
    """What a sync reads, handed over by its KB (:meth:`pinakes.kb.KB.sync`).

    The phases below reach for nothing else, so sync can be read and tested
    without the KB object; the KB stays the one place that knows how its
    store, embedder and edge derivers are made.
    """

    name: str  # the KB's name (its own ``kb://`` links)
    root: Path
    state_dir: Path
    kb: Mapping[str, Any]  # [kb]: include, exclude, sidecars, max_file_mb, bundle_root, ...
    tokenizer: str  # [retrieval] tokenizer: what the FTS rows are made with
    batch_size: int  # [embedding] batch_size
    load_embedder: Callable[[], Any]  # the embedder (built on first use)
    signature: Callable[[], str]  # what the store must have been built for
    open_store: Callable[[bool], tuple[Store, bool]]  # (rebuild) -> (store, rebuilt)
    derivers: Callable[[], Mapping[str, Any]]  # the enabled edge derivers


@dataclass
class Scan:
    """Phase 1's record: what the files say changed since the store's last sync."""

    files: list[tuple[str, Path]]  # every document the walk found: (KB path, file)
    problems: list[tuple[str, str]]  # (path, message), for the problems table
    existing: dict[str, Any] = field(default_factory=dict)  # KB path -> stored row
    seen: set[str] = field(default_factory=set)  # paths still present (changed or not)
    prepared: list[PreparedDoc] = field(default_factory=list)  # changed: read and chunked
    touched: list[tuple[int, int, str, int]] = field(default_factory=list)  # stat-only updates
    removed: list[Any] = field(default_factory=list)  # stored rows whose file is gone
    renames: dict[str, Any] = field(default_factory=dict)  # new path -> old row (same identity)
    swaps: dict[str, Any] = field(default_factory=dict)  # paths that exchanged identities
    left_out: dict[str, int] = field(default_factory=dict)  # Markdown suffix no include names -> files
    other_text: dict[str, int] = field(default_factory=dict)  # no document at all: .rst, .txt, ... -> files


def sync_kb(src: SyncInputs, *, rebuild: bool = False, progress: ProgressFn | None = None,
            lock_wait: float = 30.0) -> SyncReport:
    """Bring the KB's store up to date with its files. See the module docstring."""
    from .store import SyncLock

    started = time.perf_counter()
    with SyncLock(src.state_dir, wait=lock_wait):
        try:
            report = _sync_locked(src, rebuild, progress)
        except Exception as exc:
            # The index is derived: damage found mid-sync costs a rebuild, never the sync.
            from .health import damage_of, discard_index

            reason = damage_of(exc, src.state_dir / "index.db")
            if reason is None:
                raise
            discard_index(src.state_dir)
            report = _sync_locked(src, False, progress)
            report.rebuilt, report.healed = True, reason
    if report.sidecars_moved:
        from .moves import git_stage_paths

        report.git_stage = git_stage_paths(src.root, report.sidecars_moved)
        report.git_root = str(src.root)
    report.seconds = time.perf_counter() - started
    return report


def _sync_locked(src: SyncInputs, rebuild: bool, progress: ProgressFn | None) -> SyncReport:
    """One sync under the lock: settle (for ``--rebuild``), open (rebuilding if needed), sync."""
    from . import health

    state = src.state_dir
    report = SyncReport()
    settled = _settle_before_rebuild(src, progress) if rebuild else None
    store, rebuilt = src.open_store(rebuild)
    try:
        report.rebuilt, report.healed = rebuilt, store.healed
        _sync(src, store, report, progress)
        # What the next open checks a lost or stale write-ahead log against.
        health.record_generation(state, store.get_meta("store_id"), store.generation)
    finally:
        store.close()
    if rebuilt or health.marked_damage(state) is None:
        health.clear_mark(state)  # a mark about a store this sync (or an earlier one) replaced
    if settled is not None:
        _merge_settled(report, settled)
    return report


def _settle_before_rebuild(src: SyncInputs, progress: ProgressFn | None) -> SyncReport | None:
    """A plain sync on the index a ``--rebuild`` is about to drop; its report, or None.

    Moves without sidecars and content swaps made since the last sync are recognised
    only from the old index (what the vanished note held), so they are settled
    first: sidecars follow their text, then the rebuild indexes the settled files.
    An index that is unreadable or was built by another schema, embedder or plugin
    set cannot be synced; the rebuild then starts from nothing, as it always did.
    """
    from .store import index_signature

    if index_signature(src.state_dir) != src.signature():
        return None
    from .health import damage_of

    pre = SyncReport()
    try:
        store, _ = src.open_store(False)
    except sqlite3.DatabaseError:
        return None
    if store.healed:  # damaged: it was just dropped, there is nothing to settle from
        store.close()
        return None
    try:
        _sync(src, store, pre, progress)
    except Exception as exc:
        if damage_of(exc, src.state_dir / "index.db") is None:
            raise
        return None  # a damaged index: nothing to settle from; truth files are whole
    finally:
        store.close()
    return pre


def _merge_settled(report: SyncReport, settled: SyncReport) -> None:
    """Carry what the settling sync did into the rebuild's report (once each)."""

    def once(first: list[Any], then: list[Any]) -> list[Any]:
        return first + [x for x in then if x not in first]

    report.renamed = once(settled.renamed, report.renamed)
    report.sidecars_created = once(settled.sidecars_created, report.sidecars_created)
    report.sidecars_moved = once(settled.sidecars_moved, report.sidecars_moved)
    report.relinked = once(settled.relinked, report.relinked)
    report.move_records = once(settled.move_records, report.move_records)
    report.problems = once(settled.problems, report.problems)


def _sync(src: SyncInputs, store: Store, report: SyncReport, progress: ProgressFn | None) -> None:
    """The phases, in order (see the module docstring)."""
    scan = walk_phase(src, store)
    read_phase(src, store, scan, report, progress)
    identity_phase(src, store, scan, report)
    # Phase 2: vectors, from the cache where possible. A large embedding job is
    # left to phase 4, after the documents are committed and searchable.
    _embed(src, store, scan.prepared, report, progress)
    dupes = apply_phase(src, store, scan, report)
    # Phase 4: embed what phase 2 left (this sync's large job, or an interrupted one's).
    _embed_pending(src, store, report, progress)
    _finish_report(report, scan, dupes)


def left_out_hint(left_out: dict[str, int]) -> str:
    """One line on the Markdown files ``include`` leaves out, and the line that takes them in.

    A Docusaurus or Nextra docs folder is ``.mdx`` pages; with the default ``include =
    ["**/*.md"]`` a sync indexed none of them and said nothing.
    """
    if not left_out:
        return ""
    n = sum(left_out.values())
    kinds, patterns = suffix_counts(left_out)
    them = "them" if n != 1 else "it"
    return (f"{n} Markdown file{'s are' if n != 1 else ' is'} not indexed ({kinds}): [kb] include has "
            f"no pattern for {them}; to index {them}, add {patterns} to include in pinakes.toml")


def other_text_hint(other_text: dict[str, int]) -> str:
    """One line for a KB with no Markdown but other text files, and the line that takes them in.

    A folder of Sphinx ``.rst`` pages or Simplenote ``.txt`` notes synced to "0 added".
    """
    if not other_text:
        return ""
    kinds, patterns = suffix_counts(other_text)
    return (f"no Markdown file to index here, but {kinds} file{'s' if sum(other_text.values()) != 1 else ''}"
            f": to index them as Markdown text (their words searchable, their own link syntax not "
            f"read), add {patterns} to [kb] include in pinakes.toml")


# --- phase 1: scan ---------------------------------------------------------------------


def walk_phase(src: SyncInputs, store: Store) -> Scan:
    """Walk the KB: its documents, the walk's problems, and leftovers of a killed sync cleared."""
    mode = str(src.kb["sidecars"])
    walk_problems: list[WalkProblem] = []
    strays: list[tuple[str, str]] = []
    left_out: Counter[str] = Counter()
    files = list(walk_kb(src.root, list(src.kb["include"]), _excludes(src.kb, mode),
                         walk_problems, strays, left_out))
    problems: list[tuple[str, str]] = [(p.path, p.message) for p in walk_problems]
    if mode not in ("", "beside"):
        # The walk skips the parallel sidecar tree, where a killed sidecar write leaves its temp.
        strays.extend(stray_temps_under(src.root, mode.strip("/")))
    if (src.root / LEDGER_DIR).is_dir():  # nor does it enter the ledger, where a killed `pnk ask` may leave one
        strays.extend(stray_temps_under(src.root, LEDGER_DIR))
    for stray_rel, stray in strays:
        # A truth-file write killed before its rename: the file itself is intact.
        with contextlib.suppress(OSError):
            os.unlink(stray)
            problems.append((stray_rel, "removed a temporary file left by an interrupted write"))
    # A sidecar swap a killed sync left half done (two sidecars with one id) is finished first.
    problems.extend(finish_interrupted_swap(src.root, store.state_dir))
    scan = Scan(files, problems, left_out=dict(sorted(left_out.items())))
    if not files and not left_out:  # nothing to index: say what is here instead
        scan.other_text = other_text_files(src.root, list(src.kb["include"]), _excludes(src.kb, mode))
    scan.existing = {
        row["path"]: row
        for row in store.conn.execute(
            "SELECT doc, ulid, path, size, mtime_ns, hash, sidecar_path, sidecar_stat FROM documents"
        )
    }
    return scan


def read_phase(src: SyncInputs, store: Store, scan: Scan, report: SyncReport,
               progress: ProgressFn | None) -> None:
    """Read, hash and chunk every changed file; an unchanged one costs one ``stat``."""
    root, root_str = src.root, str(src.root)
    mode = str(src.kb["sidecars"])
    max_bytes = int(float(src.kb["max_file_mb"]) * 1024 * 1024)
    embedder = src.load_embedder()
    budget = max(32, embedder.max_tokens - CHUNK_HEADROOM)
    for i, (rel, path) in enumerate(scan.files):
        if progress:
            progress("scan", i + 1, len(scan.files))
        sc_rel = sidecar_rel_path(rel, mode)
        sc_file = os.path.join(root_str, sc_rel)  # a str: cheaper than a Path per file
        try:
            st = path.stat()
        except OSError as exc:
            scan.problems.append((rel, f"cannot read: {exc.strerror}"))
            continue
        sc_stat = _stat_key(sc_file)
        old = scan.existing.get(rel)
        if (old is not None and old["size"] == st.st_size and old["mtime_ns"] == st.st_mtime_ns
                and old["sidecar_stat"] == sc_stat):
            scan.seen.add(rel)
            report.unchanged += 1
            continue
        text, digest, problem = _read_document(rel, path, st, max_bytes, src.kb["max_file_mb"])
        if text is None:
            scan.problems.append(problem)
            report.skipped += 1
            continue
        scan.seen.add(rel)
        if old is not None and old["hash"] == digest and old["sidecar_stat"] == sc_stat:
            scan.touched.append((st.st_size, st.st_mtime_ns, sc_stat, old["doc"]))
            report.unchanged += 1
            continue
        scan.prepared.append(_prepare(rel, text, digest, st, sc_rel, root / sc_rel, budget,
                                      embedder, report, mint=old is not None, root=root))


def _read_document(rel: str, path: Path, st: os.stat_result, max_bytes: int, max_mb: Any
                   ) -> tuple[str | None, str, tuple[str, str]]:
    """``(text, sha256, ())`` of a changed file, or ``(None, "", (path, why it is skipped))``."""
    if st.st_size > max_bytes:
        return None, "", (rel, f"skipped: {st.st_size / 1048576:.1f} MB is over max_file_mb "
                               f"({max_mb} MB in pinakes.toml)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, "", (rel, f"cannot read: {exc.strerror}")
    if b"\x00" in raw[:65536]:
        return None, "", (rel, "skipped: binary file (contains NUL bytes), not Markdown")
    longest = _longest_line(raw) if len(raw) > MAX_LINE_BYTES else 0
    if longest > MAX_LINE_BYTES:
        # Minified data or an inlined blob, not prose: chunking it would take minutes.
        return None, "", (rel, f"skipped: a line of {longest / 1048576:.1f} MB (over "
                               f"{MAX_LINE_BYTES // 1048576} MB), not prose Markdown")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, "", (f"{rel}:{line}",
                          f"skipped: not UTF-8 (invalid byte at offset {exc.start})")
    return text, hashlib.sha256(raw).hexdigest(), ("", "")


def identity_phase(src: SyncInputs, store: Store, scan: Scan, report: SyncReport) -> None:
    """Moves, renames and removals: which stored document each changed file is, if any."""
    mode = str(src.kb["sidecars"])
    # A document moved without its sidecar (git mv, mv) takes its old sidecar (moves.py).
    swaps = recognise_moves(store, src.root, mode, scan.files, scan.existing, scan.seen,
                            scan.prepared, report, scan.problems, identify=identify)
    removed = [row for path, row in scan.existing.items() if path not in scan.seen]
    # A document that vanished from one path and appeared at another with the same
    # ULID was renamed (moved with its sidecar): it keeps its internal key.
    vanished = {row["ulid"]: row for row in removed}
    renames: dict[str, Any] = {}
    for doc in scan.prepared:
        if doc.rel not in scan.existing and doc.ulid in vanished and not doc.provisional:
            renames[doc.rel] = vanished.pop(doc.ulid)
    scan.removed = [row for row in removed if row["ulid"] in vanished]
    renames.update(swaps)
    scan.renames, scan.swaps = renames, swaps
    # Authored links follow moved documents; body links get a move record (relink.py).
    follow_moves(src.root, src.name, str(src.kb.get("bundle_root") or ""), store, renames,
                 scan.existing, scan.removed, scan.prepared, report,
                 lambda rel: _reprepare(src, rel, report), identify)


# --- phase 3: apply, in one transaction ---------------------------------------------------


def apply_phase(src: SyncInputs, store: Store, scan: Scan, report: SyncReport) -> list[Any]:
    """Every change in ONE write transaction; returns the ids claimed by two documents."""
    embedder = src.load_embedder()
    with store.transaction() as conn:
        changed_keys, previous = _write_documents(conn, scan, src.tokenizer)
        # Links: store the changed documents' links, re-resolve only what may now differ.
        relinked = refresh_links(conn, src.root, src.name,
                                 list(zip(changed_keys, scan.prepared, strict=True)),
                                 previous, [(row["doc"], row["ulid"]) for row in scan.removed],
                                 bundle_root=str(src.kb["bundle_root"]),
                                 no_link_hub=list(src.kb["no_link_hub"]))
        changed_keys += sorted(relinked.difference(changed_keys))
        # Graph edges: every installed deriver re-derives the changed documents.
        # (Documents whose links resolve differently now are re-derived too.)
        report.edges_written = run_derivers(
            conn, src.derivers(), changed_keys, [row["doc"] for row in scan.removed]
        )
        conn.execute("DELETE FROM problems")
        conn.executemany("INSERT INTO problems(path, message) VALUES (?, ?)", scan.problems)
        dupes = conn.execute(
            "SELECT ulid, group_concat(path, ', '), min(sidecar_path), count(DISTINCT sidecar_path)"
            " FROM documents GROUP BY ulid HAVING count(*) > 1"
        ).fetchall()
        generation = store.generation
        if scan.prepared or scan.removed or report.rebuilt or generation == 0:
            # Readers (a running MCP server) reload vectors only when this moves. A first
            # sync always leaves generation 1, even of an empty KB: 0 means "being built".
            generation += 1
            store.set_meta("generation", str(generation))
        store.set_meta("last_sync", str(time.time()))
        store.set_meta("embedder", embedder.id)
        store.set_meta("dim", str(embedder.dim))
        crash_point("apply-commit")
    report.generation = generation
    return dupes


def _write_documents(conn: Any, scan: Scan, tokenizer: str
                     ) -> tuple[list[int], dict[int, tuple[str, str]]]:
    """Delete, touch and (re)write documents; their keys, and each one's (ulid, path) before."""
    for row in scan.removed:
        _delete_doc(conn, row["doc"])
    for size, mtime, sc_stat, doc_key in scan.touched:
        conn.execute(
            "UPDATE documents SET size = ?, mtime_ns = ?, sidecar_stat = ? WHERE doc = ?",
            (size, mtime, sc_stat, doc_key),
        )
    changed_keys: list[int] = []
    previous: dict[int, tuple[str, str]] = {}  # doc key -> (ulid, path) before this sync
    for rel in scan.swaps:  # documents that exchanged paths: free the paths first (UNIQUE)
        conn.execute("UPDATE documents SET path = '//swap/' || doc WHERE path = ?", (rel,))
    for doc in scan.prepared:
        old = scan.renames.get(doc.rel) or scan.existing.get(doc.rel)
        # A changed or renamed document keeps its internal key, so graph nodes
        # and edges that other documents hold towards it stay valid.
        changed_keys.append(
            _insert_doc(conn, doc, tokenizer, replace=None if old is None else old["doc"])
        )
        if old is not None:
            previous[changed_keys[-1]] = (old["ulid"], old["path"])
        crash_point("apply-doc")
    return changed_keys, previous


def _finish_report(report: SyncReport, scan: Scan, dupes: list[Any]) -> None:
    """What the sync did, for the one-line summary and ``--json``."""
    existing, prepared = scan.existing, scan.prepared
    report.renamed = sorted((row["path"], rel) for rel, row in scan.renames.items())
    report.removed = [row["path"] for row in scan.removed]
    renamed_to = set(scan.renames)
    report.added = [d.rel for d in prepared if d.rel not in existing and d.rel not in renamed_to]
    report.changed = [d.rel for d in prepared if d.rel in existing and d.rel not in renamed_to]
    report.problems = [f"{p}: {m}" for p, m in scan.problems]
    report.left_out = scan.left_out
    report.other_text = scan.other_text
    for doc in prepared:
        report.problems.extend(doc.problems)
    for ulid, paths, sidecar, sidecars in dupes:
        if sidecars == 1:  # a.md and a.mdx: a sidecar is named after its document's stem
            report.problems.append(
                f"{paths} share one sidecar, {sidecar} (named after the file without its suffix), "
                f"and so one id {ulid}: rename one of them, or leave its suffix out of [kb] include"
            )
            continue
        report.problems.append(
            f"duplicate id {ulid} claimed by {paths}: both are indexed; give one a new id "
            "(delete its `id:` line and run `pnk sync`)"
        )


def _reprepare(src: SyncInputs, rel: str, report: SyncReport) -> PreparedDoc | None:
    """Read an unchanged document again, because this sync rewrote its sidecar (relink.py)."""
    root = src.root
    path = root / rel
    try:
        st = path.stat()
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    sc_rel = sidecar_rel_path(rel, str(src.kb["sidecars"]))
    embedder = src.load_embedder()
    report.unchanged -= 1
    return _prepare(rel, text, hashlib.sha256(raw).hexdigest(), st, sc_rel, root / sc_rel,
                    max(32, embedder.max_tokens - CHUNK_HEADROOM), embedder, report, root=root)


def _excludes(kb_cfg: dict[str, Any], mode: str) -> list[str]:
    excludes = list(kb_cfg["exclude"])
    if mode not in ("", "beside"):
        excludes.append(mode.strip("/") + "/**")
    return excludes


def _prepare(rel: str, text: str, digest: str, st: os.stat_result, sc_rel: str,
             sc_path: Path, budget: int, embedder: Any, report: SyncReport,
             mint: bool = True, root: Path | None = None) -> PreparedDoc:
    """Read and chunk a changed document, and give it its identity from its sidecar.

    With ``mint=False`` a document without a sidecar gets none yet (``awaiting``):
    it may be a moved document whose sidecar stayed behind (see :mod:`.moves`).
    """
    parsed = parse_markdown(text, max_tokens=budget, count_tokens=embedder.count_tokens, name=rel)
    problems: list[str] = []
    if parsed.front_matter_error:
        problems.append(f"{rel}:{parsed.front_matter_error.removeprefix('line ')}"
                        if parsed.front_matter_error.startswith("line ")
                        else f"{rel}: {parsed.front_matter_error}")
    fm = parsed.front_matter
    if not parsed.chunks:
        # Every document gets at least one chunk, so an empty or front-matter-only
        # document is still found by its title (and description).
        desc = fm.get("description")
        parsed.chunks.append(Chunk(0, (), str(desc) if isinstance(desc, str) else "", 1, 1))
    doc = PreparedDoc(
        rel=rel, ulid="", provisional=True, title="", tags=[],
        meta={"front_matter": fm, "sidecar": {}}, size=st.st_size, mtime_ns=st.st_mtime_ns,
        hash=digest, sidecar_rel=sc_rel, sidecar_stat="", problems=problems, parsed=parsed,
        fm_problems=list(problems),
    )
    doc.awaiting = not identify(doc, sc_path, report, mint=mint, root=root)
    return doc


def identify(doc: PreparedDoc, sc_path: Path, report: SyncReport, mint: bool = True,
             root: Path | None = None) -> bool:
    """Take ``doc``'s id, title, tags and sidecar from the sidecar at ``sc_path``.

    A missing sidecar is written (a fresh ULID) when ``mint``; otherwise nothing
    changes and False is returned. Called again after a sidecar was moved or
    swapped to this document, so it rebuilds every sidecar-derived field.
    """
    rel, sc_rel = doc.rel, doc.sidecar_rel
    fm = doc.meta["front_matter"]
    fallback_title = doc.parsed.title or Path(rel).stem.replace("-", " ").replace("_", " ")
    sc = read_sidecar(sc_path, display=sc_rel, root=root)
    if not sc.exists:
        if not mint:
            return False
        atomic_write(sc_path, skeleton(new_ulid(), fallback_title))
        report.sidecars_created.append(sc_rel)
        sc = read_sidecar(sc_path, display=sc_rel, root=root)
    problems = list(doc.fm_problems)
    if sc.error:
        problems.append(sc.error + " (the document is indexed with what could be read)")
    ulid = sc.id if sc.id and is_ulid(sc.id) else None
    provisional = False
    if ulid is None:
        # Never rewrite a sidecar the user must fix: index under a stable provisional id.
        provisional = True
        ulid = _provisional_id(rel)
        if not sc.error:
            problems.append(f"{sc_rel}:1: no `id:`; indexed under a provisional id until one is added")
    # Only a sidecar's links are read later (links.rows_for); a ruamel map costs ~5 KB per
    # document, which at 100,000 new documents was a third of the sync's peak memory.
    links = sc.data.get("links")
    doc.ulid, doc.provisional, doc.problems = ulid, provisional, problems
    doc.sidecar = sc if isinstance(links, list) and links else None
    doc.title = sc.title or (str(fm["title"]) if isinstance(fm.get("title"), str) and fm["title"].strip() else None) or fallback_title
    doc.tags = sc.tags or _fm_tags(fm)
    doc.meta = {"front_matter": fm, "sidecar": sc.to_plain() if not sc.error else {}}
    doc.sidecar_stat = _stat_key(sc_path)
    doc.moved_from = moved_from(sc.data) if not sc.error else []
    doc.awaiting = False
    return True


def _fm_tags(fm: dict[str, Any]) -> list[str]:
    tags = fm.get("tags")
    if isinstance(tags, str):
        return [t.strip() for t in tags.split(",") if t.strip()]
    if isinstance(tags, list):
        return [str(t) for t in tags if isinstance(t, str | int | float)]
    return []


def _provisional_id(rel: str) -> str:
    """A deterministic ULID-shaped id from the path, for a document without a valid sidecar id."""
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    n = int.from_bytes(hashlib.sha256(rel.encode()).digest()[:16], "big") >> 2
    return "".join(alphabet[(n >> (5 * i)) & 31] for i in reversed(range(26)))


#: Up to this many chunks to embed, a sync embeds before committing (one atomic
#: transaction, as for an edit); more, and the documents are committed first with
#: no vectors, searchable lexically at once, and embedded afterwards (phase 4).
INLINE_EMBED_MAX = 64
#: Phase 4 commits vectors in batches of this many chunks, so an interrupted sync
#: keeps them, and moves the store generation (readers reload) at most this often.
PENDING_BATCH = 256
PENDING_RELOAD_S = 15.0


def _embed(src: SyncInputs, store: Store, docs: list[PreparedDoc], report: SyncReport,
           progress: ProgressFn | None) -> None:
    """Phase 2: the changed chunks' vectors, from the cache or embedded (a small job only)."""
    from .embcache import canonical

    embedder = src.load_embedder()
    model = embedder.id
    pending: dict[str, str] = {}  # hash -> text
    for doc in docs:
        for chunk in doc.parsed.chunks:
            text = embed_text(doc.title, chunk.heading_path, chunk.text)
            h = chunk_hash(text)
            doc.chunk_rows.append({"chunk": chunk, "hash": h})
            pending.setdefault(h, text)
    cached = store.cached_vectors(model, list(pending))
    vectors: dict[str, bytes] = dict(cached)
    todo = [(h, t) for h, t in pending.items() if h not in cached]
    report.chunks_cached = sum(len(d.chunk_rows) for d in docs) - sum(
        1 for d in docs for r in d.chunk_rows if r["hash"] not in cached
    )
    if len(todo) > INLINE_EMBED_MAX:
        todo = []  # phase 4 embeds them once the documents are committed
    t0 = time.perf_counter()
    done = 0
    bs = src.batch_size
    for start in range(0, len(todo), PENDING_BATCH):
        part = todo[start : start + PENDING_BATCH]

        def tick(n: int, _base: int = done) -> None:
            nonlocal done
            done += n
            crash_point("embed-batch")  # test equipment: pinakes/faults.py
            if progress:
                progress("embed", done, len(todo))

        vecs = embedder.embed([t for _, t in part], batch_size=bs, progress=tick)
        store.cache_vectors(model, [(h, v) for (h, _), v in zip(part, vecs, strict=True)])
        for (h, _), v in zip(part, vecs, strict=True):
            vectors[h] = canonical(v)  # as the cache gives it back: a rebuild ranks the same
    report.embed_seconds = time.perf_counter() - t0
    report.chunks_embedded = len(todo)
    # The index stores quantised vectors (pinakes.quant); the cache keeps float32.
    packed = _pack_vectors(vectors, embedder.dim)
    for doc in docs:
        for row in doc.chunk_rows:
            row["vec"] = packed.get(row["hash"])  # None: embedded in phase 4


def _embed_pending(src: SyncInputs, store: Store, report: SyncReport,
                   progress: ProgressFn | None) -> None:
    """Phase 4: embed every chunk still without a vector, committing batch by batch.

    The documents are already committed, so the KB is searchable lexically
    while this runs (``embedding_pending`` in ``meta`` says how far it got;
    search and ``pnk status`` report it). Chunks are found in the store, not in
    this sync's work list, so a sync interrupted here is resumed by the next.
    """
    conn = store.conn
    rows = conn.execute(
        "SELECT c.hash, d.title, c.heading_path, c.text FROM chunks c "
        "JOIN documents d ON d.doc = c.doc WHERE c.vec IS NULL ORDER BY c.id"
    ).fetchall()
    if not rows:
        if store.get_meta("embedding_pending") not in (None, "0"):
            with store.transaction():
                store.set_meta("embedding_pending", "0")
        return
    texts: dict[str, str] = {}
    for h, title, heading_json, text in rows:
        texts.setdefault(h, embed_text(title, tuple(json.loads(heading_json)), text))
    total = len(texts)
    t0 = time.perf_counter()
    with store.transaction():
        store.set_meta("embedding_pending", str(total))
        store.set_meta("embedding_total", str(total))
    embedded = _embed_batches(src, store, texts, report, progress)
    report.embed_seconds += time.perf_counter() - t0
    report.chunks_embedded += embedded
    report.chunks_cached += len(rows) - embedded


def _embed_batches(src: SyncInputs, store: Store, texts: dict[str, str], report: SyncReport,
                   progress: ProgressFn | None) -> int:
    """Phase 4's batches: cached or embedded, then committed; returns how many were embedded."""
    from .embcache import canonical

    embedder = src.load_embedder()
    model = embedder.id
    total = len(texts)
    hashes = list(texts)
    last_bump = time.monotonic()
    done = embedded = 0
    for start in range(0, total, PENDING_BATCH):
        part = hashes[start : start + PENDING_BATCH]
        # Another sync, or another KB sharing the cache, may have embedded some.
        found = store.cached_vectors(model, part)
        missing = [h for h in part if h not in found]
        done += len(part) - len(missing)
        if missing:

            def tick(n: int, _base: int = done) -> None:
                nonlocal done
                done += n
                crash_point("embed-batch")  # test equipment: pinakes/faults.py
                if progress:
                    progress("embed", done, total)

            vecs = embedder.embed([texts[h] for h in missing], batch_size=src.batch_size,
                                  progress=tick)
            store.cache_vectors(model, list(zip(missing, vecs, strict=True)))
            for h, v in zip(missing, vecs, strict=True):
                found[h] = canonical(v)  # as the cache gives it back: a rebuild ranks the same
            embedded += len(missing)
        packed = _pack_vectors(found, embedder.dim)
        left = total - min(total, start + len(part))
        with store.transaction() as wconn:
            wconn.executemany("UPDATE chunks SET vec = ? WHERE hash = ? AND vec IS NULL",
                              [(packed[h], h) for h in part])
            store.set_meta("embedding_pending", str(left))
            if left == 0 or time.monotonic() - last_bump >= PENDING_RELOAD_S:
                # Readers reload their vectors when the generation moves.
                report.generation = store.generation + 1
                store.set_meta("generation", str(report.generation))
                last_bump = time.monotonic()
    return embedded


def _pack_vectors(vectors: dict[str, bytes], dim: int) -> dict[str, bytes]:
    """Float32 blobs by hash -> the index's quantised blobs, in one vectorised pass."""
    from .quant import pack_many

    if not vectors:
        return {}
    hashes = list(vectors)
    matrix = np.frombuffer(b"".join(vectors[h] for h in hashes), dtype="<f4").reshape(len(hashes), dim)
    return dict(zip(hashes, pack_many(matrix), strict=True))


def _fts_tokenizer(conn: Any) -> str:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    return "trigram" if row and "trigram" in str(row[0]) else "words"


def _fts_values(tokenizer: str, title: str, heading_path: list[str] | tuple[str, ...],
                text: str) -> tuple[str, str, str]:
    """What ``chunks_fts`` indexes for a chunk: also what deleting it must give back."""
    seg = fold if tokenizer == "trigram" else (lambda s: segment_cjk(fold(s)))
    return seg(title), seg(" > ".join(heading_path)), seg(text)


def _delete_chunks(conn: Any, doc_key: int, tokenizer: str | None = None) -> None:
    # chunks_fts is contentless: a row is deleted by handing FTS5 the values it
    # indexed, rebuilt from the chunk and its document exactly as _insert_doc made them.
    tok = tokenizer or _fts_tokenizer(conn)
    rows = conn.execute(
        "SELECT c.id, d.title, c.heading_path, c.text FROM chunks c "
        "JOIN documents d ON d.doc = c.doc WHERE c.doc = ?", (doc_key,)
    ).fetchall()
    conn.executemany(
        "INSERT INTO chunks_fts(chunks_fts, rowid, title, heading, body) "
        "VALUES ('delete', ?, ?, ?, ?)",
        [(r[0], *_fts_values(tok, r[1], json.loads(r[2]), r[3])) for r in rows],
    )
    conn.execute("DELETE FROM chunks WHERE doc = ?", (doc_key,))


def _delete_doc(conn: Any, doc_key: int) -> None:
    _delete_chunks(conn, doc_key)
    conn.execute("DELETE FROM documents WHERE doc = ?", (doc_key,))


def _insert_doc(conn: Any, doc: PreparedDoc, tokenizer: str, replace: int | None = None) -> int:
    """Insert a document and its chunks, or (``replace``) rewrite one keeping its key."""
    values = (
        doc.ulid, doc.rel, doc.title, json.dumps(doc.tags), json.dumps(doc.meta, default=str),
        doc.size, doc.mtime_ns, doc.hash, doc.sidecar_rel, doc.sidecar_stat,
        int(doc.provisional), json.dumps(doc.problems),
    )
    if replace is not None:
        _delete_chunks(conn, replace, tokenizer)
        conn.execute(
            "UPDATE documents SET ulid=?, path=?, title=?, tags=?, meta=?, size=?, mtime_ns=?,"
            " hash=?, sidecar_path=?, sidecar_stat=?, provisional=?, problems=? WHERE doc = ?",
            (*values, replace),
        )
        doc_key = replace
    else:
        cur = conn.execute(
            "INSERT INTO documents(ulid, path, title, tags, meta, size, mtime_ns, hash, sidecar_path,"
            " sidecar_stat, provisional, problems) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            values,
        )
        doc_key = int(cur.lastrowid)
    for row in doc.chunk_rows:
        chunk = row["chunk"]
        cur = conn.execute(
            "INSERT INTO chunks(doc, ordinal, heading_path, text, hash, start_line, end_line, vec,"
            " checksum) VALUES (?,?,?,?,?,?,?,?,?)",
            (doc_key, chunk.ordinal, json.dumps(list(chunk.heading_path)), chunk.text, row["hash"],
             chunk.start_line, chunk.end_line, row["vec"],
             row_checksum(doc.ulid, doc.rel, chunk.ordinal, chunk.start_line, chunk.end_line, row["hash"])),
        )
        conn.execute(
            "INSERT INTO chunks_fts(rowid, title, heading, body) VALUES (?, ?, ?, ?)",
            (cur.lastrowid, *_fts_values(tokenizer, doc.title, chunk.heading_path, chunk.text)),
        )
    return doc_key
