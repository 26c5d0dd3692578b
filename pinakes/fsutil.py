"""File-system helpers: atomic writes and a KB walk that never leaves the KB."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .dialects import DOC_SUFFIXES
from .faults import crash_point


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``path`` so that readers see the old or the new file, never half of one.

    Truth files (sidecars, ``pinakes.toml``) go through here: a temporary file
    in the same folder, fsync, then rename over the target.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    # The writer's pid in the name lets a later sync remove a temp file that a killed
    # writer left behind (:func:`is_stray_temp`), and only such a one.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        crash_point("atomic-write")  # test equipment: pinakes/faults.py
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


_TEMP_RE = re.compile(r"^\..+\.(\d+)\.[a-z0-9_]{6,}\.tmp$")


def is_stray_temp(name: str) -> bool:
    """True for an :func:`atomic_write` temp file whose writer is dead (killed mid-write)."""
    m = _TEMP_RE.match(name)
    if m is None:
        return False
    pid = int(m.group(1))
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def remove_stray_temps(path: Path) -> None:
    """Remove dead writers' temp files of ``path`` (beside it), for files no sync sweeps.

    The KB walk removes those it meets; a file outside it (the fleet registry in the
    user folder, a cache in ``.pinakes/``) is cleaned by its next writer instead.
    """
    try:
        for stray in path.parent.glob(f".{path.name}.*.tmp"):
            if is_stray_temp(stray.name):
                with contextlib.suppress(OSError):
                    stray.unlink()
    except OSError:
        pass


def stray_temps_under(root: Path, folder: str) -> list[tuple[str, str]]:
    """Dead writers' temp files in ``root/folder`` and below, as ``(relative path, absolute path)``.

    For a folder the KB walk does not enter: the parallel sidecar tree.
    """
    out = []
    for dirpath, _, names in os.walk(root / folder):
        for name in names:
            if name.endswith(".tmp") and is_stray_temp(name):
                path = os.path.join(dirpath, name)
                out.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    return out


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a gitignore-like glob (``**`` spans folders, ``*`` does not)."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(rel: str, patterns: Iterable[str]) -> bool:
    """True when the POSIX relative path ``rel`` matches one of ``patterns``."""
    return any(glob_regex(p).match(rel) for p in patterns)


def is_included(rel: str, include: Iterable[str]) -> bool:
    """Whether ``include`` names the file ``rel``, its suffix in any case.

    ``**/*.md`` takes ``NOTES.MD`` in as it does ``notes.md``: Windows tools and old
    exports write suffixes in capitals, and a note is no less a note for it.
    """
    return _in_any_case(_any_matcher(tuple(include)), rel)


def _in_any_case(named: Callable[[str], bool], rel: str) -> bool:
    """``named(rel)``, or else ``named`` of ``rel`` with its suffix in lower case (``a/NOTES.md``
    for ``a/NOTES.MD``; the stem keeps its case), asked only when that differs."""
    if named(rel):
        return True
    stem, sfx = os.path.splitext(rel)
    return sfx != sfx.lower() and named(stem + sfx.lower())


def suffix_counts(counts: dict[str, int]) -> tuple[str, str]:
    """Files counted by suffix as words and as the include patterns that take them in:
    ``{".mdx": 2, ".markdown": 1}`` -> ``('2 .mdx, 1 .markdown', '"**/*.mdx", "**/*.markdown"')``."""
    return (", ".join(f"{n} {sfx}" for sfx, n in counts.items()),
            ", ".join(f'"**/*{sfx}"' for sfx in counts))


@lru_cache(maxsize=64)
def _any_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """``matches_any`` for a fixed pattern list, as one compiled alternation."""
    if not patterns:
        return lambda rel: False
    rx = re.compile("|".join(f"(?:{glob_regex(p).pattern})" for p in patterns))
    return lambda rel: rx.match(rel) is not None


@dataclass(frozen=True)
class WalkProblem:
    """Something the walk refused to follow, reported to the user."""

    path: str
    message: str


def uncovered_suffixes(include: Iterable[str]) -> frozenset[str]:
    """The note suffixes (:data:`~pinakes.dialects.DOC_SUFFIXES`) no ``include`` pattern ends
    with: ``**/*.md`` leaves ``.mdx`` out."""
    patterns = list(include)
    return frozenset(sfx for sfx in DOC_SUFFIXES
                     if not any(p.lower().endswith(sfx) or p.endswith("*") for p in patterns))


def markdown_left_out(root: Path, include: list[str], exclude: list[str]) -> dict[str, int]:
    """The Markdown files under ``root`` that ``include`` has no pattern for, by suffix.

    ``pnk init`` includes them from the start; ``pnk doctor`` names them (``.mdx`` pages).
    """
    counts: Counter[str] = Counter()
    for _ in walk_kb(root, include, exclude, [], left_out=counts):
        pass
    return dict(sorted(counts.items()))


#: A Docusaurus site's copies of its own pages, in folders beside its config: each release's
#: frozen docs (``versioned_docs/version-2.1/``) and each language's translation (``i18n/fr/``).
#: Indexed, one question finds the same page once per version and language.
_SITE_COPIES = {"versioned_docs": "older versions of the docs", "i18n": "translations of the pages"}
_DOCUSAURUS_CONFIGS = tuple(f"docusaurus.config.{ext}" for ext in ("js", "ts", "mjs", "cjs"))


def site_copies(root: Path) -> list[tuple[str, str]]:
    """``(folder, what it holds)`` for each copy folder of a docs site at ``root`` or one folder
    down (``website/``): ``pnk init`` leaves them out, and says so.

    A Docusaurus site's ``versioned_docs/`` and ``i18n/`` beside its config; a multilingual
    Hugo site's other languages, the folders of ``content/`` named as languages (``zh-cn``,
    ``ja``) whose tree mirrors the default language's (``content/en/``).
    """
    found: list[tuple[str, str]] = []
    try:
        sites = [root] + sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return found
    for site in sites:
        if any((site / name).is_file() for name in _DOCUSAURUS_CONFIGS):
            found += [((site / folder).relative_to(root).as_posix(), what)
                      for folder, what in _SITE_COPIES.items() if (site / folder).is_dir()]
        found += [(folder.relative_to(root).as_posix(), what) for folder, what in _hugo_translations(site, root)]
    return found


def copies_in_words(copies: list[tuple[str, str]]) -> str:
    """``website/versioned_docs/ (older versions of the docs) and content/ja/, content/zh-cn/
    (translations of content/en/)``: :func:`site_copies` as ``pnk init`` says it."""
    grouped: dict[str, list[str]] = {}
    for folder, what in copies:
        grouped.setdefault(what, []).append(f"{folder}/")
    return " and ".join(f"{', '.join(folders)} ({what})" for what, folders in grouped.items())


#: A Hugo site's config (``config/_default/`` holds it in larger sites).
_HUGO_CONFIGS = ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json", "config.toml", "config.yaml",
                 "config.yml", "config/_default/hugo.toml", "config/_default/config.toml",
                 "config/_default/hugo.yaml", "config/_default/config.yaml")
_LANGUAGE = re.compile(r"^[a-z]{2}(?:[-_][a-z]{2,4})?$")
_DEFAULT_LANGUAGE = re.compile(r"""defaultContentLanguage\s*[:=]\s*["']?([A-Za-z_-]+)""")


def _hugo_translations(site: Path, root: Path) -> list[tuple[Path, str]]:
    """The other languages' content folders of a multilingual Hugo site at ``site``."""
    content = site / "content"
    configs = [site / c for c in _HUGO_CONFIGS if (site / c).is_file()]
    if not configs or not content.is_dir():
        return []
    default = "en"
    for config in configs:
        try:
            m = _DEFAULT_LANGUAGE.search(config.read_text("utf-8", errors="replace"))
        except OSError:
            continue
        if m:
            default = m.group(1).lower()
            break
    own = content / default
    what = f"translations of {own.relative_to(root).as_posix()}/"
    try:  # an unreadable folder: no copies named, init goes on
        langs = sorted(p for p in content.iterdir() if p.is_dir() and _LANGUAGE.match(p.name))
        if own not in langs or len(langs) < 2:
            return []
        mirrored = {p.name for p in own.iterdir()}
        return [(p, what) for p in langs if p != own and mirrored & {q.name for q in p.iterdir()}]
    except OSError:
        return []


#: Plain-text formats other tools write: Simplenote and nvALT notes (``.txt``), Sphinx's
#: reStructuredText, Org, AsciiDoc. Read as Markdown, their words are searchable; their own
#: link and heading syntax is not read. Named to a KB that holds no Markdown at all.
OTHER_TEXT_SUFFIXES = (".txt", ".text", ".rst", ".org", ".adoc", ".asciidoc")


def other_text_files(root: Path, include: list[str], exclude: list[str]) -> dict[str, int]:
    """Files of :data:`OTHER_TEXT_SUFFIXES` under ``root`` that ``include`` does not name, by suffix.

    Asked only when a KB holds no document: a folder of ``.rst`` or ``.txt`` notes synced to
    "0 added" and said nothing of why.
    """
    counts: Counter[str] = Counter()
    for rel, _ in walk_kb(root, [f"**/*{sfx}" for sfx in OTHER_TEXT_SUFFIXES], exclude, []):
        if not is_included(rel, include):
            counts[os.path.splitext(rel)[1].lower()] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def walk_kb(
    root: Path, include: list[str], exclude: list[str], problems: list[WalkProblem],
    strays: list[tuple[str, str]] | None = None, left_out: Counter[str] | None = None,
) -> Iterator[tuple[str, Path]]:
    """Yield ``(relative posix path, absolute path)`` of every included file.

    Symlinks are followed only while they resolve inside ``root``; a link that
    leaves the KB or loops is reported in ``problems`` and never read. With
    ``strays``, temp files left by a killed :func:`atomic_write` are collected
    there as ``(relative path, absolute path)`` for the caller to remove. With
    ``left_out``, files not excluded whose Markdown suffix no include pattern
    names (:func:`uncovered_suffixes`) are counted there by suffix (a deliberate
    ``include = ["docs/**/*.md"]`` leaves other ``.md`` files out unremarked).
    """
    root = root.resolve()
    uncovered = uncovered_suffixes(include) if left_out is not None else frozenset()
    seen_dirs: set[str] = set()
    seen_files: set[str] = set()

    def inside(real: str) -> bool:
        return real == str(root) or real.startswith(str(root) + os.sep)

    # One alternation per pattern list: the same answers as ``matches_any``, one
    # regex call instead of one per pattern (this loop runs for every file).
    excluded = _any_matcher(tuple(exclude))
    included = _any_matcher(tuple(include))

    def visit(folder: Path, rel_folder: str) -> Iterator[tuple[str, Path]]:
        real = os.path.realpath(folder)
        if real in seen_dirs:
            problems.append(WalkProblem(rel_folder or ".", "symlink loop: folder already visited"))
            return
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append(WalkProblem(rel_folder or ".", f"cannot list folder: {exc.strerror}"))
            return
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            path = entry.path
            if strays is not None and entry.name.endswith(".tmp") and is_stray_temp(entry.name):
                strays.append((rel, path))
                continue
            is_link = entry.is_symlink()
            if is_link:
                target = os.path.realpath(path)
                if not inside(target):
                    if _could_include(rel, include, exclude, entry):
                        problems.append(
                            WalkProblem(rel, "symlink points outside the knowledge base; not followed")
                        )
                    continue
                if not os.path.exists(target):
                    problems.append(WalkProblem(rel, "broken symlink"))
                    continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                problems.append(WalkProblem(rel, "symlink loop"))
                continue
            if is_dir:
                if excluded(rel + "/") or excluded(rel):
                    continue
                yield from visit(Path(path), rel)
                continue
            if excluded(rel) or not _in_any_case(included, rel):
                sfx = os.path.splitext(entry.name)[1].lower() if uncovered else ""
                if sfx in uncovered and left_out is not None and not excluded(rel):
                    left_out[sfx] += 1
                continue
            # Not a symlink: its real path is the folder's plus its name (no lstat
            # of every path component, which dominated a no-op sync).
            real_file = os.path.realpath(path) if is_link else os.path.join(real, entry.name)
            if real_file in seen_files:
                continue
            seen_files.add(real_file)
            yield rel, Path(path)

    yield from visit(root, "")


def _could_include(rel: str, include: list[str], exclude: list[str], entry: os.DirEntry) -> bool:
    if matches_any(rel, exclude):
        return False
    return matches_any(rel, include) or not entry.name.endswith((".yaml", ".yml"))


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put ``conn``'s database in WAL mode, waiting out another process that is doing the same.

    Switching the journal mode needs a lock that SQLite can refuse at once with
    "database is locked", without calling the busy handler, while a second process
    is opening or recovering the same new file. Two ``pnk`` processes starting
    together (a sync and a search, two syncs of a fleet sharing the per-user
    embedding cache) hit exactly that, so the switch is retried until ``timeout``.
    """
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
