"""Links: authored (sidecar) and scanned (body) links, their resolution, and the traversal core.

Three parts, used by sync, ``pnk link``, ``pnk links``, ``pnk doctor`` and the
MCP tool ``pinakes_links``:

1. *Extraction* (:func:`rows_for`): a changed document's sidecar ``links:``
   (origin ``sidecar``) and the links its body makes to other documents
   (origin ``reverse-scan``: inline and reference links to ``.md`` files or
   written without a suffix, ``/root/absolute.md`` paths, ``pnk://ULID``,
   ``kb://name/path.md``, and the note tools' forms: wikilinks, embeds,
   ``#tags``, property links; :mod:`pinakes.dialects`). Web and mail links,
   images and attachments are not document links and are ignored. Each link
   keeps its form, label and context (the words around it) for the graph.
2. *Resolution* (:func:`refresh_links`, inside sync's one transaction): each
   link gets the ULID of its target or stays unresolved with a reason
   (``missing-file``, ``unknown-id``, ``outside-kb``, ``unknown-kb``,
   ``ambiguous-title``, and the soft ``tag-only`` and ``no-document``);
   nothing is dropped. Names (file names, titles, aliases, ...) are looked up
   in the ``link_names`` table. Only what can have changed is re-resolved, so
   a no-op sync costs nothing here. Targets in *other* KBs of the fleet are
   looked up when links are read (:class:`FleetLookup`), because those KBs
   change on their own schedule.
3. *Traversal* (:func:`walk`): the contract of ``pinakes_links`` (docs/links.md).

A target outside the KB is found by path arithmetic (``os.path.normpath`` of
the KB-relative path) and by reading the in-KB symlinks on the way; the target
itself is never opened or stat'ed.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .dialects import (
    DOC_SUFFIXES,
    block_key,
    date_key,
    dendron_name,
    doc_names,
    fold,
    is_attachment,
    link_form,
    lookup_name,
    served_key,
    split_vault,
    strip_suffix,
    zettel_id,
)
from .errors import DocumentNotFound, LinkError, QueryError
from .fsutil import matches_any
from .sidecar import is_ulid
from .sqlin import batches
from .sqlin import marks as sqlmarks
from .sqlin import rows as sqlrows
from .text import content_words

if TYPE_CHECKING:
    from .kb import KB

SIDECAR = "sidecar"
SCAN = "reverse-scan"
DEFAULT_REL = "links-to"
WEIGHTS = {SIDECAR: 2.0, SCAN: 1.0}
REASONS = ("missing-file", "unknown-id", "outside-kb", "unknown-kb", "ambiguous-title", "tag-only",
           "no-document")
# Unresolved, but not broken: a ``#tag`` with no page of its name is a plain tag (Obsidian), and
# an extensionless Markdown link that names no note is most likely a folder, a web route or a
# non-Markdown file. Kept and counted per form by ``pnk doctor``, never listed as dangling.
SOFT_REASONS = ("tag-only", "no-document")
DIRECTIONS = ("in", "out", "both")
MAX_DEPTH = 3
MAX_ROWS = 50  # per list (neighbours, frontier, unresolved) in one response
MAX_BYTES = 16_000  # the whole response, as JSON
# The ``provenance`` of a body link written in a ``[kb] no_link_hub`` page (a change
# log): stored, resolved and reported like any link, but never an edge or a prior.
NO_HUB = "no-link-hub"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


# -- 1. extraction ---------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """How a written target resolves.

    ``kind`` is ``path`` (a Markdown path), ``guess`` (a Markdown path written
    without a suffix: ``note`` for ``note.md``, a folder ``guide/``, a built page
    ``guide.html``), ``id``, ``wiki`` (a name: wikilinks, embeds, property links),
    ``tag`` or ``kb``; ``key`` is the normalised target. ``alt`` is a second
    reading tried when the first does not resolve: for ``[[a|b]]`` the part after
    ``|`` (Dendron writes the alias first), for a Markdown path written without
    ``./`` or ``../`` the path as written (Obsidian writes paths from the vault
    root, or just a file name), and so for a site route (``/posts/first/``), whose
    site may be built from a folder of the KB (Hugo's ``content/``).
    """

    kind: str
    key: str
    alt: str = ""


def classify(raw: str, source_rel: str, own_kb: str, *, wiki: bool = False,
             sidecar: bool = False, bundle_root: str = "", tag: bool = False,
             alt: str = "") -> Target | None:
    """Classify a link target as written in ``source_rel``; ``None`` when it is not a document link.

    Paths become KB-relative POSIX paths by pure arithmetic; one that climbs
    out of the KB keeps its leading ``../`` (resolved later as ``outside-kb``).
    Root-absolute paths (``/a.md``) and this KB's own ``kb://`` paths start at
    ``bundle_root`` (``[kb] bundle_root``; "" is the KB folder). A wikilink
    (``wiki``) or ``tag`` is a name, resolved against the notes' names; ``alt``
    is a wikilink's other part (``[[a|b]]``). Attachments (``[[paper.pdf]]``)
    are not documents.
    """
    text = raw.strip()
    if not text:
        return None
    if tag:
        return Target("tag", text)
    if wiki:
        if is_attachment(split_vault(text)[1]):
            return None
        second = alt.strip()
        return Target("wiki", text, "" if is_attachment(split_vault(second)[1].partition("#")[0])
                      else second)
    m = _SCHEME.match(text)
    if m:
        scheme = m.group(1).lower()
        if scheme == "pnk":
            ident = text[len("pnk:"):].lstrip("/").split("/", 1)[0].split("#", 1)[0]
            return Target("id", ident.upper() if is_ulid(ident.upper()) else ident)
        if scheme == "kb":
            rest = text[len("kb:"):].lstrip("/")
            name, _, path = rest.partition("/")
            path = path.split("#", 1)[0].split("?", 1)[0]
            if name == own_kb:
                return Target("path", kb_path(path, "", root_relative=True, bundle_root=bundle_root))
            return Target("kb", f"{name}/{path}")
        return None  # http(s), mailto, file, ...: not a link to a document of this KB
    path = text.split("#", 1)[0].split("?", 1)[0]
    if not path:
        return None  # "#section": a link inside the same document
    if sidecar and "/" not in path and is_ulid(path.upper()):
        return Target("id", path.upper())
    root_relative = path.startswith("/")
    if sidecar:
        return Target("path", kb_path(path, source_rel, root_relative=root_relative,
                                      bundle_root=bundle_root))
    # Written as a vault path or a bare file name (no ./, ../ or /): Obsidian's forms.
    plain = not root_relative and not path.startswith(("./", "\\")) and ".." not in path.split("/")
    if path.lower().endswith(DOC_SUFFIXES):
        return Target("path", kb_path(path, source_rel, root_relative=root_relative,
                                      bundle_root=bundle_root), path if plain else "")
    page = path.rstrip("/\\")
    last = page.replace("\\", "/").rsplit("/", 1)[-1]
    if last in ("", ".", ".."):
        return None  # the KB root or a parent folder: no one page
    site = _SITE_PAGE.search(last)
    if site:
        page = page[: len(page) - len(site.group(0))]  # a built page names its Markdown source
    elif "." in last and page == path:
        return None  # images, PDFs: not documents
    # Foam, Obsidian and site generators leave the suffix out; a folder link (guide/) names
    # that folder's page, found by the folder tiers when no guide.md answers.
    guess = page + ".md"
    return Target("guess", kb_path(guess, source_rel, root_relative=root_relative,
                                   bundle_root=bundle_root), guess if plain or root_relative else "")


#: A link to the page a site generator built from a Markdown file: ``install.html``.
_SITE_PAGE = re.compile(r"\.html?$", re.IGNORECASE)


def kb_path(path: str, source_rel: str, *, root_relative: bool = False, bundle_root: str = "") -> str:
    """The KB-relative POSIX path of ``path`` written in ``source_rel`` (arithmetic only).

    A root-relative path starts at ``bundle_root`` (a KB-relative folder such
    as ``docs`` for a KB whose site is built from ``docs/``), not the KB folder.
    """
    if "\\" in path:
        path = path.replace("\\", "/")
    if root_relative:
        bundle = bundle_root.strip("/")
        inner = path.lstrip("/")
        joined = posixpath.normpath(f"{bundle}/{inner}" if bundle and inner else bundle or inner)
    else:
        base = source_rel.rpartition("/")[0]
        joined = posixpath.normpath(f"{base}/{path}" if base else path)
    return "" if joined == "." else joined


def is_outside(rel: str) -> bool:
    return rel == ".." or rel.startswith("../") or rel.startswith("/")


@dataclass
class LinkRow:
    """One link as stored: where it is written and what it points at."""

    origin: str
    raw: str
    target: Target
    rel: str
    line: int
    note: str = ""
    provenance: str = ""
    form: str = ""  # the syntax it was written in (dialects.link_form; "sidecar")
    label: str = ""  # its text: a wikilink's alias, a Markdown link's text
    context: str = ""  # content words around it (a sidecar link: its note's)
    chunk: int | None = None  # ordinal of the chunk it sits in


def rows_for(source_rel: str, parsed_links: Sequence[Any], sidecar: Any, own_kb: str, *,
             bundle_root: str = "", no_hub: bool = False) -> list[LinkRow]:
    """Every document link of one document: its sidecar's ``links:`` and its body's links.

    ``no_hub`` marks the body links of a ``[kb] no_link_hub`` page with
    :data:`NO_HUB` (its sidecar links were authored on purpose and stay edges).
    """
    out: list[LinkRow] = []
    seq = sidecar.data.get("links") if sidecar is not None and isinstance(sidecar.data, dict) else None
    if isinstance(seq, list):
        for i, item in enumerate(seq):
            if not isinstance(item, dict):
                continue
            to = item.get("to")
            if not isinstance(to, str) or not to.strip():
                continue
            target = classify(to, source_rel, own_kb, sidecar=True, bundle_root=bundle_root)
            if target is None:
                continue
            rel = item.get("rel")
            note = item.get("note")
            prov = item.get("origin")
            note_text = str(note) if note is not None else ""
            out.append(LinkRow(
                origin=SIDECAR, raw=to.strip(), target=target,
                rel=str(rel).strip() if isinstance(rel, str) and rel.strip() else DEFAULT_REL,
                line=_item_line(seq, i), note=note_text,
                provenance=str(prov) if prov is not None else "", form=SIDECAR,
                context=" ".join(content_words(note_text)),
            ))
    for link in parsed_links:
        wiki = link.kind in WIKI_KINDS
        aliased = bool(getattr(link, "aliased", False))
        tag = link.kind == "tag" or getattr(link, "tag", False)  # #x, or Logseq's bare tags:: x
        target = classify(link.target, source_rel, own_kb, wiki=wiki, tag=tag,
                          alt=link.label if wiki and aliased else "", bundle_root=bundle_root)
        if target is None:
            continue
        chunk = getattr(link, "chunk", -1)
        out.append(LinkRow(
            origin=SCAN, raw=link.target + link.fragment, target=target, rel=DEFAULT_REL,
            line=link.line, provenance=NO_HUB if no_hub else "",
            form=link_form(link.kind, link.target, link.fragment, aliased, link.label),
            label=link.label, context=getattr(link, "context", ""),
            chunk=chunk if chunk >= 0 else None,
        ))
    return out


#: Parser kinds whose target is a note's name (markdown.Link.kind).
WIKI_KINDS = ("wikilink", "embed", "property", "blockref")


def _item_line(seq: Any, i: int) -> int:
    try:
        return int(seq.lc.item(i)[0]) + 1
    except (AttributeError, KeyError, IndexError, TypeError):
        return 1


# -- 2. resolution -----------------------------------------------------------------


def escapes_via_symlink(root: Path, rel: str) -> bool:
    """Whether ``rel`` (lexically inside ``root``) leaves the KB through a symlink.

    Only paths inside the KB are looked at (``lstat`` and ``readlink`` of the
    links themselves); the moment the path would leave, the answer is known
    and nothing outside is touched.
    """
    base = str(root)
    parts = [p for p in rel.split("/") if p]
    cur = base
    hops = 0
    while parts:
        part = parts.pop(0)
        candidate = os.path.join(cur, part)
        try:
            is_link = os.path.islink(candidate)
        except OSError:
            return False
        if not is_link:
            if not os.path.lexists(candidate):
                return False
            cur = candidate
            continue
        hops += 1
        if hops > 40:
            return False  # a loop: not an escape, just broken
        try:
            target = os.readlink(candidate)
        except OSError:
            return False
        dest = os.path.normpath(os.path.join(cur, target))
        if not (dest == base or dest.startswith(base + os.sep)):
            return True
        inner = os.path.relpath(dest, base)
        parts = ([] if inner == "." else inner.split(os.sep)) + parts
        cur = base
    return False


@dataclass(frozen=True)
class Answer:
    """What a target resolved to: a ULID, or the reason it did not.

    ``flipped`` says the second part of ``[[a|b]]`` was taken as the target
    (Dendron's alias-first order), so ``a`` is the link's label.
    """

    ulid: str | None
    reason: str | None
    flipped: bool = False


# Tiers where a name is a file's own (its path, file name, a namespace spelled in the file
# name, a note id). Only these can make the second part of [[a|b]] the target: Dendron's
# targets are note (file) names, never titles.
_FILE_TIERS = frozenset({"path", "name", "suffix", "namespace", "id"})
_WIKI_TIERS = ("name", "suffix", "title", "alias", "namespace")


class Resolver:
    """Resolves targets against the ``documents`` and ``link_names`` tables (batched lookups).

    A wiki-style name goes through the tiers of :data:`pinakes.dialects.NAME_TIERS`:
    the first tier with a match decides; several matches there resolve to the one
    in the linking note's folder (or the ``dendron://`` vault), else the link is
    ``ambiguous-title``.
    """

    def __init__(self, conn: Any, root: Path) -> None:
        self.conn = conn
        self.root = root
        self._label_first: bool | None = None

    @property
    def label_first(self) -> bool:
        """Whether the tool that wrote this KB puts a link's text first: ``[[a|b]]`` is text ``a``,
        note ``b``.

        So write a Dendron workspace (``dendron.yml``) and a GitHub or Gollum wiki (its
        ``_Sidebar.md`` or ``_Footer.md``); Obsidian, Foam and Logseq write the note first. A
        root ``Home.md`` is no sign: Obsidian vaults have one as often as wikis do.
        """
        if self._label_first is None:
            wiki = any((self.root / f"{n}{sfx}").is_file()
                       for n in ("_Sidebar", "_Footer") for sfx in DOC_SUFFIXES)
            self._label_first = wiki or (self.root / "dendron.yml").is_file()
        return self._label_first

    def resolve(self, items: Sequence[tuple[str, ...]]) -> list[tuple[str | None, str | None]]:
        """``items`` are (kind, key, source path[, alt[, raw]]); returns (ULID, None) or (None, reason) each.

        A target no document answers may be answered by a move record
        (:meth:`_through_moves`): then (ULID, ``"moved"``). ``raw`` (the target as
        written) lets a moved note's relative links be read from its old folder.
        """
        return [(a.ulid, a.reason) for a in self.answers(items)]

    def answers(self, items: Sequence[tuple[str, ...]]) -> list[Answer]:
        """Like :meth:`resolve`, saying also which part of an aliased wikilink was the target."""
        norm = [(str(it[0]), str(it[1]), str(it[2]), str(it[3]) if len(it) > 3 else "")
                for it in items]
        paths: set[str] = set()
        ids: set[str] = set()
        names: set[str] = set()
        for kind, key, src, alt in norm:
            if kind in ("path", "guess"):
                if not is_outside(key):
                    paths.add(key)
                names.update(n for _, n in _path_lookups(kind, key, alt))
            elif kind == "id" and is_ulid(key):
                ids.add(key)
            elif kind in ("wiki", "tag"):
                for part in (key, alt.partition("#")[0]) if alt else (key,):
                    names.update(n for _, n in _wiki_lookups(part, src)[0])
        by_path = self._lookup("SELECT path, ulid FROM documents WHERE path IN ({})", sorted(paths))
        known_ids = set(self._lookup(
            "SELECT ulid, ulid FROM documents WHERE ulid IN ({})", sorted(ids)))
        by_name: dict[str, list[tuple[str, str, str]]] = {}
        for name, tier, ulid, path in sqlrows(
                self.conn, "SELECT n.name, n.tier, d.ulid, d.path FROM link_names n JOIN documents d"
                " ON d.doc = n.doc WHERE n.name IN ({})", (n for n in names if n)):
            by_name.setdefault(name, []).append((tier, ulid, path))
        out: list[Answer] = []
        for kind, key, src, alt in norm:
            if kind in ("path", "guess"):
                out.append(self._path(kind, key, src, alt, by_path, by_name))
            elif kind == "id":
                out.append(Answer(key, None) if key in known_ids else Answer(None, "unknown-id"))
            elif kind == "kb":
                out.append(Answer(None, "unknown-kb"))  # another KB: looked up in the fleet when read
            elif kind in ("wiki", "tag"):
                out.append(self._wiki(kind, key, src, alt, by_name))
            else:
                out.append(Answer(None, "missing-file"))
        return self._through_moves(items, out)

    def _through_moves(self, items: Sequence[tuple[str, ...]], out: list[Answer]) -> list[Answer]:
        """Answer links no document answers from move records (pinakes/relink.py).

        A path a document moved away from resolves to that document; a relative
        link written in a document that has since moved is read from the folder
        it was written in. Both resolve with reason ``moved``, which ``pnk
        doctor`` reports so the text can be fixed. A path (or wikilink path) that
        a document lives at now always wins over a record.
        """
        missing = [i for i, a in enumerate(out)
                   if a.ulid is None and a.reason in ("missing-file", "no-document")]
        if not missing:
            return out
        from .movetable import MOVED, is_relative, lookup, previous_paths

        prev = previous_paths(self.conn, {str(items[i][2]) for i in missing})
        candidates: dict[int, list[str]] = {}
        for i in missing:
            kind, key, src = (str(x) for x in items[i][:3])
            raw = str(items[i][4]) if len(items[i]) > 4 else None
            olds = prev.get(src, [])
            if kind in ("path", "guess"):
                cands = [key]
                if raw is not None and is_relative(raw):
                    written = posixpath.relpath(key, posixpath.dirname(src) or ".")
                    cands += [kb_path(written, old) for old in olds]
            elif kind == "wiki":
                cands = [p for s in (src, *olds) for p in _wiki_lookups(key, s)[1]]
            else:
                continue
            candidates[i] = [c for c in dict.fromkeys(cands) if c and not is_outside(c)]
        wanted = sorted({c for cs in candidates.values() for c in cs})
        if not wanted:
            return out
        by_path = self._lookup("SELECT path, ulid FROM documents WHERE path IN ({})", wanted)
        moved = lookup(self.conn, wanted)
        for i, cands in candidates.items():
            for c in cands:
                ulid = by_path.get(c) or moved.get(c)
                if ulid is not None:
                    out[i] = Answer(ulid, MOVED)
                    break
        return out

    def _lookup(self, sql: str, keys: list[str]) -> dict[str, str]:
        return dict(sqlrows(self.conn, sql, keys))

    def _path(self, kind: str, key: str, src: str, alt: str, by_path: dict[str, str],
              by_name: dict[str, list[tuple[str, str, str]]]) -> Answer:
        """A Markdown path: exactly, then in another case, then (written plainly) from the
        KB root or by file name, as Obsidian writes them; a guessed ``.md`` that finds
        nothing is ``no-document``, not a broken link."""
        if is_outside(key):
            return Answer(None, "outside-kb")
        if key in by_path:
            return Answer(by_path[key], None)
        if escapes_via_symlink(self.root, key):
            return Answer(None, "outside-kb")
        ulid, _tier, _ambiguous = _pick(_path_lookups(kind, key, alt), by_name, src, "", key, nearest=True)
        if ulid is not None:
            return Answer(ulid, None)
        return Answer(None, "no-document" if kind == "guess" else "missing-file")

    def _wiki(self, kind: str, key: str, src: str, alt: str,
              by_name: dict[str, list[tuple[str, str, str]]]) -> Answer:
        """A name: ``[[X]]``, ``![[X]]``, ``#X``, a property; ``[[a|b]]`` tries both orders."""
        lookups, paths = _wiki_lookups(key, src)
        first = _pick(lookups, by_name, src, split_vault(key)[0], "")
        if alt:
            second_key = alt.partition("#")[0].strip()
            second = _pick(_wiki_lookups(second_key, src)[0], by_name, src,
                           split_vault(second_key)[0], "")
            label_first = self.label_first
            # A wiki names a page by its title, which is its file name ("Page Name" is
            # Page-Name.md): that reads as the file too.
            file_tiers = _FILE_TIERS | {"title"} if label_first else _FILE_TIERS
            if second[0] is not None and second[1] in file_tiers:
                dendronish = label_first or second_key.lower().startswith("dendron://") \
                    or dendron_name(second_key)
                # Same note either way: the dialect decides only which part is the label.
                if (first[0] is None and dendronish) or (first[0] is not None and label_first):
                    return Answer(second[0], None, flipped=True)
        if first[0] is not None:
            return Answer(first[0], None)
        if first[2]:
            return Answer(None, "ambiguous-title")
        if kind == "tag":
            return Answer(None, "tag-only")
        if paths and all(is_outside(p) or escapes_via_symlink(self.root, p) for p in paths):
            return Answer(None, "outside-kb")
        return Answer(None, "missing-file")


def _wiki_lookups(key: str, src: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The ``(tier, folded name)`` lookups of a wiki-style name, in order, and its KB paths.

    Paths first (from the ``dendron://`` vault, the KB root, then the linking
    note's folder), then the name as a file name, path suffix, title, alias or
    Logseq namespace, then as a journal date or a note id.
    """
    block = block_key(key)
    if block:  # ((6f1c…)): the note that declares that block id
        return [("block", block)], []
    vault, note = split_vault(key)
    note = note.replace("\\", "/").strip()
    if not note:
        return [], []
    with_md = note if note.lower().endswith(DOC_SUFFIXES) else note + ".md"
    candidates = [kb_path(f"{vault}/{with_md}", "", root_relative=True)] if vault else []
    candidates += [kb_path(with_md, src, root_relative=True), kb_path(with_md, src)]
    paths = list(dict.fromkeys(candidates))
    lookups = [("path", fold(strip_suffix(p))) for p in paths if p and not is_outside(p)]
    name = lookup_name(note)
    if name:
        lookups += [(tier, name) for tier in _WIKI_TIERS]
    day = date_key(note)
    if day:
        lookups.append(("date", day))
    if note.isdigit() and zettel_id(note):
        lookups.append(("id", zettel_id(note)))
    return lookups, paths


def _path_lookups(kind: str, key: str, alt: str) -> list[tuple[str, str]]:
    """The name lookups of a Markdown path once the exact path failed (see ``Resolver._path``).

    A path written without its suffix (``kind`` ``guess``) may name a folder's own page:
    ``/guide/`` or ``/guide`` is ``guide/index.md`` when no ``guide.md`` answers, as every
    site generator serves it (then ``guide/README.md``, as GitHub shows a folder); written
    as a site route, also the page declaring that address (``permalink: /about/``), before
    any file of that name; last, the page a docs site serves there (``/docs/guide/intro`` is
    ``docs/01-guide/01-intro.md``: the ``served`` tier). A path written with its suffix names
    that file only.
    """
    guess = kind == "guess"
    base = fold(strip_suffix(key)) if key and not is_outside(key) else ""
    lookups = [(tier, base) for tier in (("path", "folder", "readme") if guess else ("path",))] if base else []
    name = lookup_name(alt) if alt else ""
    if alt:
        from_root = kb_path(alt, "", root_relative=True)
        if from_root and not is_outside(from_root):
            lookups.append(("path", fold(strip_suffix(from_root))))
        if name:
            tiers = ("route", "name", "suffix", "folder-suffix") if guess else ("name", "suffix")
            lookups += [(tier, name) for tier in tiers]
    if guess:  # last: the address a docs site serves (ordering numbers and ids: dialects.served_key)
        lookups += [("served", served_key(n)) for n in dict.fromkeys((base, name)) if n]
    return lookups


def _pick(lookups: Sequence[tuple[str, str]], by_name: dict[str, list[tuple[str, str, str]]],
          src: str, vault: str, exact: str, nearest: bool = False) -> tuple[str | None, str | None, bool]:
    """``(ULID, tier, ambiguous)`` of the first lookup that matches.

    Several documents in one tier: the one at the exact path ``exact``, else the
    one in the linking note's folder, else the one inside the ``vault`` folder;
    with ``nearest`` (a Markdown path or site route), else the one sharing the most
    folders with the linking page (``/docs/x/`` written in ``content/en/docs`` is
    ``content/en/docs/x``, not another language's copy); none of these makes it
    ambiguous (and the lookups stop there: a looser tier must not pick one of
    several stronger matches).
    """
    folder = posixpath.dirname(src)
    for tier, name in lookups:
        found = {(ulid, path) for t, ulid, path in by_name.get(name, ()) if t == tier}
        if not found:
            continue
        ulids = {u for u, _ in found}
        if len(ulids) == 1:
            return next(iter(ulids)), tier, False
        for keep in (lambda p: p == exact, lambda p: posixpath.dirname(p) == folder,
                     lambda p: bool(vault) and p.split("/", 1)[0] == vault):
            chosen = {u for u, p in found if keep(p)}
            if len(chosen) == 1:
                return next(iter(chosen)), tier, False
        if nearest:
            shared = {u: _shared_folders(p, src) for u, p in found}
            best = max(shared.values())
            chosen = {u for u, n in shared.items() if n == best}
            if best and len(chosen) == 1:
                return next(iter(chosen)), tier, False
        return None, tier, True
    return None, None, False


def _shared_folders(path: str, src: str) -> int:
    """How many leading folders ``path`` and ``src`` have in common."""
    return len(os.path.commonprefix([path.split("/")[:-1], src.split("/")[:-1]]))


def refresh_links(conn: Any, root: Path, own_kb: str, inserted: Sequence[tuple[int, Any]],
                  previous: dict[int, tuple[str, str]], removed: Sequence[tuple[int, str]], *,
                  bundle_root: str = "", no_link_hub: Sequence[str] = ()) -> set[int]:
    """Store the links of (re-)inserted documents and re-resolve what can have changed.

    ``bundle_root`` and ``no_link_hub`` are the ``[kb]`` settings of that name
    (see :func:`classify` and :func:`rows_for`).

    Runs inside sync's apply transaction, before the edge derivers.
    ``inserted`` holds (doc key, prepared document) for every added, changed or
    renamed document; ``previous`` maps the keys of changed and renamed ones to
    their (ULID, path) before this sync; ``removed`` holds (doc key, ULID) of
    deleted documents. Returns the keys of *other* documents whose links now
    resolve differently (their authored edges must be re-derived).

    Only what can have changed is resolved again: the inserted documents'
    links, links that pointed at a removed, renamed or re-identified document,
    and links asking for a name (a path, file name, title, alias, date, id or
    ULID) that a document gained or lost. A sync that changed nothing calls this
    with nothing and it costs nothing; a new note costs the links that name it,
    not every unresolved link of the KB.
    """
    if not inserted and not removed:
        return set()
    gone = {ulid for _, ulid in removed} | {ulid for ulid, _ in previous.values()}
    stale = sorted({key for key, _ in inserted} | {key for key, _ in removed})
    old_names: dict[int, set[str]] = {}
    for chunk in batches(stale):
        marks = sqlmarks(chunk)
        for doc_key, name in conn.execute(
                f"SELECT doc, name FROM link_names WHERE doc IN ({marks})", chunk):
            old_names.setdefault(doc_key, set()).add(name)
        conn.execute(f"DELETE FROM links WHERE src_doc IN ({marks})", chunk)
        conn.execute(f"DELETE FROM link_names WHERE doc IN ({marks})", chunk)
    # The names each document answers to (dialects.doc_names); a name that appeared or
    # vanished can change what other documents' links resolve to.
    name_rows: list[tuple[int, str, str]] = []
    touched: set[str] = set()
    for doc_key, doc in inserted:
        names = doc_names(doc.rel, doc.title, doc.parsed.front_matter, doc.parsed.block_ids)
        name_rows += [(doc_key, name, tier) for name, tier in names]
        touched |= {name for name, _ in names} ^ old_names.get(doc_key, set())
        if previous.get(doc_key, ("",))[0] != doc.ulid:
            touched.add(_ULID_KEY + doc.ulid)  # pnk:// links to a new identity
    for doc_key, _ in removed:
        touched |= old_names.get(doc_key, set())
    conn.executemany("INSERT INTO link_names(doc, name, tier) VALUES (?,?,?)", name_rows)
    from .movetable import store_records

    # Move records (relink.py): a path a document recorded moving away from now answers
    # the links that name it.
    recorded = store_records(conn, inserted, stale)
    touched |= {fold(strip_suffix(path)) for path in recorded}
    # Links of other documents whose answer may have changed (collected before the new rows exist).
    ids: set[int] = set()
    ids.update(r[0] for r in sqlrows(conn, "SELECT id FROM links WHERE dst_ulid IN ({})", gone))
    for chunk in batches(sorted(touched)):
        marks = sqlmarks(chunk)
        ids.update(r[0] for r in conn.execute(
            f"SELECT id FROM links WHERE fkey IN ({marks}) OR falt IN ({marks}) OR fday IN ({marks})",
            chunk * 3))
    if inserted:
        # Links answered by a move record: a document may now live at the old path,
        # or the record may be gone. Few rows: they are retried whenever anything changed.
        ids.update(r[0] for r in conn.execute("SELECT id FROM links WHERE reason = 'moved'"))
    resolver = Resolver(conn, root)
    # The new rows, resolved before they are written (one executemany).
    fresh: list[tuple[int, LinkRow]] = [
        (doc_key, r) for doc_key, doc in inserted
        for r in rows_for(doc.rel, doc.parsed.links, doc.sidecar, own_kb, bundle_root=bundle_root,
                          no_hub=bool(no_link_hub) and matches_any(doc.rel, no_link_hub))
    ]
    paths = {doc_key: doc.rel for doc_key, doc in inserted}
    answers = resolver.answers([(r.target.kind, r.target.key, paths[k], r.target.alt, r.raw)
                                for k, r in fresh]) if fresh else []
    conn.executemany(
        "INSERT INTO links(src_doc, origin, raw, kind, key, alt, fkey, falt, fday, rel, note,"
        " provenance, line, form, label, context, chunk, dst_ulid, reason)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(k, r.origin, r.raw, r.target.kind, r.target.key, r.target.alt, *_folded_keys(r.target),
          r.rel, r.note, r.provenance, r.line, r.form, r.raw if a.flipped else r.label, r.context,
          r.chunk, a.ulid, a.reason) for (k, r), a in zip(fresh, answers, strict=True)],
    )
    if not ids:
        return set()
    todo = [tuple(r) for r in sqlrows(
        conn, "SELECT l.id, l.kind, l.key, d.path, l.src_doc, l.dst_ulid, l.alt, l.raw, l.label"
        " FROM links l JOIN documents d ON d.doc = l.src_doc WHERE l.id IN ({})", ids)]
    results = resolver.answers([(t[1], t[2], t[3], t[6], t[7]) for t in todo])
    conn.executemany("UPDATE links SET dst_ulid = ?, reason = ?, label = ? WHERE id = ?", [
        (a.ulid, a.reason, _label(t[1], t[6], t[7], t[8], a.flipped), t[0])
        for t, a in zip(todo, results, strict=True)])
    return {t[4] for t, a in zip(todo, results, strict=True) if t[5] != a.ulid}


_ULID_KEY = "ulid:"


def _folded_keys(target: Target) -> tuple[str, str, str]:
    """The folded names a target looks up (``fkey``, ``falt``, ``fday``): when a document
    gains or loses one of them, the link is resolved again.

    ``fday`` is a journal date or note id the name also reads as (``date:2023-03-14``,
    ``id:202301011200``), or for a suffixless path the address a docs site serves
    (``docs/01-guide/intro`` as ``docs/guide/intro``); a ``pnk://`` link looks up ``ulid:<ULID>``.
    """
    if target.kind in ("wiki", "tag"):
        alt = target.alt.partition("#")[0]
        day = ""
        for part in (target.key, alt):
            note = split_vault(part)[1].strip()
            day = day or date_key(note) or (zettel_id(note) if note.isdigit() else "")
        return lookup_name(target.key), lookup_name(alt) if alt else "", day
    if target.kind in ("path", "guess"):
        fkey, falt = fold(strip_suffix(target.key)), lookup_name(target.alt) if target.alt else ""
        served = [served_key(n) for n in (fkey, falt) if n] if target.kind == "guess" else []
        return fkey, falt, next((n for n in served if n not in (fkey, falt)), "")
    if target.kind == "id":
        return _ULID_KEY + target.key, "", ""
    return "", "", ""


def _label(kind: str, alt: str, raw: str, label: str, flipped: bool) -> str:
    """An aliased wikilink's label after resolving: whichever part was not the target."""
    if kind not in ("wiki", "tag") or not alt:
        return label
    return raw if flipped else alt


# -- link context for the graph ----------------------------------------------------------


@dataclass(frozen=True)
class AuthoredLink:
    """One resolved link of a document, with what was written around it.

    What edge derivers and graph channels read to weigh a link by the relation
    it states: its ``label`` (a wikilink's alias, a Markdown link's text), the
    content words of the sentence around it (``context``; a sidecar link's
    ``note``), and where it sits (chunk ``ordinal`` and ``heading_path``).
    """

    dst: int  # documents.doc of the target
    title: str  # the target's title
    origin: str  # sidecar | reverse-scan
    rel: str
    form: str
    label: str
    context: str
    chunk: int | None  # ordinal in the source document (None: a sidecar link)
    heading_path: tuple[str, ...]


# The links that make graph edges: resolved, inside the KB, not from a no_link_hub page, not
# to the document itself.
_AUTHORED_WHERE = (
    " WHERE l.dst_ulid IS NOT NULL AND l.dst_kb = '' AND l.provenance != ? AND d.doc != l.src_doc"
)
_AUTHORED_SQL = (
    "SELECT l.src_doc, d.doc, d.title, l.origin, l.rel, l.form, l.label, l.context, l.chunk,"
    " c.heading_path FROM links l JOIN documents d ON d.ulid = l.dst_ulid"
    " LEFT JOIN chunks c ON c.doc = l.src_doc AND c.ordinal = l.chunk" + _AUTHORED_WHERE
)


def authored_links(conn: Any, doc_key: int) -> list[AuthoredLink]:
    """The resolved in-KB links of document ``doc_key`` that make graph edges, in written order.

    The same selection as the structural deriver's ``authored`` edges (links of
    a ``[kb] no_link_hub`` page and links to itself excluded), one row per link.
    """
    rows = conn.execute(_AUTHORED_SQL + " AND l.src_doc = ? ORDER BY l.id", (NO_HUB, doc_key))
    return [AuthoredLink(r[1], r[2], r[3], r[4], r[5] or "", r[6] or "", r[7] or "", r[8],
                         tuple(json.loads(r[9])) if r[9] else ()) for r in rows]


def authored_targets(conn: Any, doc_key: int) -> list[tuple[int, str]]:
    """``(documents.doc, title)`` of each document :func:`authored_links` reaches, once, in
    the order first linked: all a deriver drawing plain edges needs (no context read)."""
    return conn.execute(
        "SELECT d.doc, d.title FROM links l JOIN documents d ON d.ulid = l.dst_ulid"
        + _AUTHORED_WHERE + " AND l.src_doc = ? GROUP BY d.doc ORDER BY min(l.id)",
        (NO_HUB, doc_key)).fetchall()


def link_contexts(conn: Any, src_docs: Sequence[int] | None = None) -> dict[tuple[int, int], str]:
    """Per authored edge ``(source doc, target doc)``: the words its links carry.

    The label words and context words of every link between the two (a source
    linking twice says more), in written order, each word once. For the graph's
    relation-aware weighting: which of a seed's links does a question follow?
    ``src_docs`` limits it to those sources (None: every document).
    """
    words: dict[tuple[int, int], dict[str, None]] = {}
    if src_docs is None:
        found: Iterable[Any] = conn.execute(_AUTHORED_SQL + " ORDER BY l.id", (NO_HUB,))
    else:
        found = sqlrows(conn, _AUTHORED_SQL + " AND l.src_doc IN ({}) ORDER BY l.id", src_docs, NO_HUB)
    for r in found:
        bag = words.setdefault((r[0], r[1]), {})
        bag.update(dict.fromkeys(content_words(r[6] or "")))
        bag.update(dict.fromkeys((r[7] or "").split()))
    return {edge: " ".join(ws) for edge, ws in words.items()}


# -- the fleet -----------------------------------------------------------------------


class FleetLookup:
    """Finds link targets in the other KBs of the fleet (read-only, opened lazily)."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self._others: list[tuple[str, KB]] | None = None
        self._names: dict[str, Path] = {}

    def others(self) -> list[tuple[str, KB]]:
        if self._others is None:
            from .registry import load_fleet

            self._others = []
            try:
                fleet = load_fleet()
            except Exception:  # an unreadable registry must not break reading links
                fleet = {}
            self._names = dict(fleet)
            for name, folder in sorted(fleet.items()):
                try:
                    if folder.resolve() == self.kb.root:
                        continue
                    # Opened by the KB's own class: this module needs no import of it.
                    self._others.append((name, type(self.kb).open(folder)))
                except Exception:  # noqa: S112 - a broken fleet entry only hides its own targets
                    continue
        return self._others

    def find_ids(self, ulids: Iterable[str]) -> dict[str, dict[str, str]]:
        """ULID -> {kb, title, path} for ids found in another fleet KB (first KB by name wins)."""
        wanted = sorted({u for u in ulids if is_ulid(u)})
        found: dict[str, dict[str, str]] = {}
        if not wanted:
            return found
        for name, other in self.others():
            rest = [u for u in wanted if u not in found]
            if not rest:
                break
            try:
                conn = other.reader().conn
                for ulid, title, path in sqlrows(
                        conn, "SELECT ulid, title, path FROM documents WHERE ulid IN ({}) ORDER BY path",
                        rest):
                    found.setdefault(ulid, {"kb": name, "title": title, "path": path})
            except Exception:  # noqa: S112 - an unsynced KB simply has no answers
                continue
        return found

    def find_path(self, key: str) -> tuple[dict[str, str] | None, str]:
        """``name/path`` of a ``kb://`` link: (target, "") or (None, reason)."""
        name, _, path = key.partition("/")
        self.others()
        if name not in self._names:
            return None, "unknown-kb"
        if self._names[name].resolve() == self.kb.root:
            kb = self.kb
        else:
            match = [o for n, o in self.others() if n == name]
            if not match:
                return None, "unknown-kb"
            kb = match[0]
        rel = kb_path(path, "", root_relative=True, bundle_root=_bundle_root(kb))
        if is_outside(rel):
            return None, "outside-kb"
        try:
            row = kb.reader().conn.execute(
                "SELECT ulid, title, path FROM documents WHERE path = ?", (rel,)).fetchone()
        except Exception:
            return None, "unknown-kb"
        if row is None:
            return None, "missing-file"
        return {"kb": "" if kb is self.kb else name, "doc_id": row[0], "title": row[1],
                "path": row[2]}, ""


def _bundle_root(kb: KB) -> str:
    """A KB's ``[kb] bundle_root``: where its root-absolute and ``kb://`` paths start."""
    return str(kb.config.kb.get("bundle_root") or "")


def fleet_refine(kb: KB, rows: Sequence[dict[str, Any]], lookup: FleetLookup | None = None
                 ) -> list[dict[str, Any]]:
    """Give unresolved ``pnk://`` and ``kb://`` rows a fleet answer.

    Each row needs ``kind``, ``key`` and ``reason``; rows found elsewhere gain
    ``foreign`` = {kb, doc_id, title, path} and lose their reason.
    """
    lookup = lookup or FleetLookup(kb)
    ids = [r["key"] for r in rows if r["kind"] == "id" and r["reason"] == "unknown-id"]
    found = lookup.find_ids(ids) if ids else {}
    out = []
    for r in rows:
        r = dict(r)
        if r["kind"] == "id" and r["key"] in found:
            r["foreign"] = {"doc_id": r["key"], **found[r["key"]]}
            r["reason"] = None
        elif r["kind"] == "kb":
            target, reason = lookup.find_path(r["key"])
            if target is not None and target["kb"]:
                r["foreign"], r["reason"] = target, None
            elif target is not None:
                r["local"], r["reason"] = target, None
            else:
                r["reason"] = reason
        out.append(r)
    return out


# -- 3. traversal ----------------------------------------------------------------------


@dataclass
class Neighbour:
    """A document reached from the root; ``via`` is the document it was reached from."""

    doc_id: str
    title: str
    path: str
    rel: str
    direction: str
    distance: int
    score: float
    via: str
    kb: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "doc_id": self.doc_id, "title": self.title, "rel": self.rel,
            "direction": self.direction, "distance": self.distance, "score": round(self.score, 4),
        }
        if self.kb:
            d["kb"] = self.kb  # only for a target in another KB of the fleet
        return d


@dataclass
class LinkResult:
    """The answer of :func:`walk`; :meth:`to_dict` is the ``pinakes_links`` structure."""

    root: dict[str, str]
    neighbours: list[Neighbour] = field(default_factory=list)
    frontier: list[dict[str, str]] = field(default_factory=list)
    unresolved: list[dict[str, Any]] = field(default_factory=list)
    confidence: float | None = None
    truncated: bool = False
    depth: int = 1
    note: str = ""
    ranked_by: str = "weight"  # or "query": scores are then cosine similarities

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "neighbours": [n.to_dict() for n in self.neighbours],
            "frontier": [{"doc_id": f["doc_id"], "rel": f["rel"]} for f in self.frontier],
            "unresolved": [{"target": u["target"], "reason": u["reason"]} for u in self.unresolved],
            "confidence": "unknown" if self.confidence is None else round(self.confidence, 4),
            "truncated": self.truncated,
            "depth": self.depth,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class _Edge:
    other: str  # the ULID at the far end
    rel: str
    direction: str  # "out": node -> other; "in": other -> node
    weight: float


def walk(kb: KB, doc: str, rel: str | None = None, direction: str = "both", depth: int = 1,
         query: str | None = None) -> LinkResult:
    """Breadth-first over resolved links from ``doc`` (the ``pinakes_links`` contract, docs/links.md)."""
    if direction not in DIRECTIONS:
        raise QueryError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    if isinstance(depth, bool) or not isinstance(depth, int):
        try:
            depth = int(depth)
        except (TypeError, ValueError):
            raise QueryError(f"depth must be a whole number, not {depth!r}") from None
    if depth < 1:
        raise QueryError("depth must be at least 1")
    if rel is not None and not str(rel).strip():
        rel = None
    if query is not None and not str(query).strip():
        raise QueryError("the query is empty (leave it out to rank by link weight)")
    note = ""
    asked = depth
    if depth > MAX_DEPTH:
        depth = MAX_DEPTH
        note = (f"depth capped at {MAX_DEPTH} (asked {asked}); "
                "take one hop and look before going deeper")
    fan_out = max(1, int(kb.config.retrieval.get("adjacent_k", 8)))
    root_row = kb.resolve(doc)
    store = kb.reader()
    with store.snapshot() as conn:
        state = _Walk(kb, conn, rel, direction, query, fan_out)
        result = state.run(root_row, depth)
    result.depth = depth
    result.note = note
    result.ranked_by = "weight" if query is None else "query"
    return _cap(result)


class _Walk:
    def __init__(self, kb: KB, conn: Any, rel: str | None, direction: str, query: str | None,
                 fan_out: int) -> None:
        self.kb = kb
        self.conn = conn
        self.rel = rel
        self.direction = direction
        self.fan_out = fan_out
        self.docs: dict[str, dict[str, Any]] = {}  # ulid -> {title, path, keys}
        self.scores: dict[str, float] = {}  # ulid -> best cosine to the query
        self.qv = None
        self.dense = None
        if query is not None:
            self.qv = kb.embedder.embed_query(query)
            self.dense = kb.dense_index(kb.reader())
        self.lookup = FleetLookup(kb)
        self.root = ""  # set by run()

    # -- data

    def load_docs(self, ulids: Iterable[str]) -> None:
        need = sorted({u for u in ulids if u not in self.docs})
        for row in sqlrows(self.conn, "SELECT doc, ulid, path, title FROM documents"
                                      " WHERE ulid IN ({}) ORDER BY path", need):
            entry = self.docs.setdefault(row["ulid"], {"title": row["title"], "path": row["path"],
                                                        "keys": []})
            entry["keys"].append(row["doc"])
        if self.qv is not None:
            self._score(need)

    def _score(self, ulids: list[str]) -> None:
        keys = {k: u for u in ulids if u in self.docs for k in self.docs[u]["keys"]}
        if not keys or self.dense is None or not len(self.dense.ids):
            return
        chunk_ids: list[int] = []
        owners: list[str] = []
        for cid, dkey in sqlrows(
                self.conn, "SELECT id, doc FROM chunks WHERE doc IN ({}) AND vec IS NOT NULL", keys):
            chunk_ids.append(cid)
            owners.append(keys[dkey])
        if not chunk_ids:
            return
        ids = np.asarray(chunk_ids, dtype=np.int64)
        rows = self.dense.row_of(ids)
        ok = (rows < len(self.dense.ids)) & (self.dense.ids[np.minimum(rows, len(self.dense.ids) - 1)] == ids)
        cos = self.dense.vectors(rows[ok]) @ self.qv
        for owner, c in zip(np.asarray(owners)[ok], cos, strict=True):
            if float(c) > self.scores.get(str(owner), -2.0):
                self.scores[str(owner)] = float(c)

    def edges(self, ulids: list[str]) -> dict[str, list[_Edge]]:
        """Resolved edges of each node, a typed sidecar link absorbing a body link to the same doc."""
        out: dict[str, list[_Edge]] = {u: [] for u in ulids}
        raw: list[tuple[str, str, str, str]] = []  # (src ulid, dst ulid, rel, origin)
        # A no-link-hub page's body links (a change log) are followed only out of that
        # page itself, when it is the root: the walk never passes through it.
        hub_filter = " AND (l.provenance != ? OR s.ulid = ?)"
        hub_args = (NO_HUB, self.root)
        for chunk in batches(sorted(ulids)):
            marks = sqlmarks(chunk)
            if self.direction in ("out", "both"):
                raw.extend(tuple(r) for r in self.conn.execute(
                    "SELECT s.ulid, l.dst_ulid, l.rel, l.origin FROM links l JOIN documents s"
                    f" ON s.doc = l.src_doc WHERE s.ulid IN ({marks}) AND l.dst_ulid IS NOT NULL"
                    + hub_filter, (*chunk, *hub_args)))
            if self.direction in ("in", "both"):
                raw.extend(tuple(r) for r in self.conn.execute(
                    "SELECT s.ulid, l.dst_ulid, l.rel, l.origin FROM links l JOIN documents s"
                    f" ON s.doc = l.src_doc WHERE l.dst_ulid IN ({marks})" + hub_filter,
                    (*chunk, *hub_args)))
        typed = {(s, d) for s, d, _, o in raw if o == SIDECAR}
        best: dict[tuple[str, str, str, str], float] = {}
        wanted = set(ulids)
        for s, d, rel, origin in set(raw):
            if s == d or (origin == SCAN and (s, d) in typed):
                continue
            if self.rel is not None and rel != self.rel:
                continue
            for node, other, direction in ((s, d, "out"), (d, s, "in")):
                if node not in wanted or (direction == "out" and self.direction == "in") or (
                        direction == "in" and self.direction == "out"):
                    continue
                k = (node, other, rel, direction)
                best[k] = max(best.get(k, 0.0), WEIGHTS.get(origin, 1.0))
        for (node, other, rel, direction), w in sorted(best.items()):
            out[node].append(_Edge(other, rel, direction, w))
        return out

    def unresolved_of(self, ulids: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for r in sqlrows(
                self.conn, "SELECT s.ulid AS node, l.raw, l.kind, l.key, l.rel, l.reason, l.origin,"
                " l.line FROM links l JOIN documents s ON s.doc = l.src_doc WHERE s.ulid IN ({})"
                " AND l.dst_ulid IS NULL ORDER BY l.origin DESC, l.line, l.id", ulids):
            if self.rel is not None and r["rel"] != self.rel:
                continue
            rows.append(dict(r))
        return fleet_refine(self.kb, rows, self.lookup) if rows else rows

    # -- ranking

    def rank_key(self, ulid: str, weight: float, title: str) -> tuple[Any, ...]:
        if self.qv is not None:
            return (-self.scores.get(ulid, -1.0), -weight, title.casefold(), ulid)
        return (-weight, title.casefold(), ulid)

    def score(self, ulid: str, weight: float) -> float:
        if self.qv is not None:
            return self.scores.get(ulid, 0.0)
        return weight

    def cap(self, ranked: list[_Edge]) -> tuple[list[_Edge], list[_Edge]]:
        """Keep the edges to the best ``adjacent_k`` distinct documents (all edges to each)."""
        docs: set[str] = set()
        kept: list[_Edge] = []
        cut: list[_Edge] = []
        for e in ranked:
            if e.other in docs or len(docs) < self.fan_out:
                docs.add(e.other)
                kept.append(e)
            else:
                cut.append(e)
        return kept, cut

    # -- the walk

    def run(self, root_row: dict[str, Any], depth: int) -> LinkResult:
        root = root_row["ulid"]
        self.root = root
        self.load_docs([root])
        result = LinkResult(root={"doc_id": root, "title": root_row["title"], "path": root_row["path"]})
        seen_at: dict[str, int] = {root: 0}
        entries: dict[tuple[str, str, str], Neighbour] = {}
        best: dict[str, float] = {}  # ulid -> best score of its entries
        # Next hops not taken, as ((distance, rank key), ulid, rel): cut by the fan-out cap
        # at some level, or one step past the last level.
        overflow: list[tuple[tuple[Any, ...], str, str]] = []
        level = [root]
        foreign: dict[tuple[str, str], Neighbour] = {}
        for distance in range(1, depth + 2):
            if not level:
                break
            edges = self.edges(level)
            self.load_docs(e.other for es in edges.values() for e in es)
            if distance == depth + 1:  # one look past the last level: the frontier
                for node in level:
                    cands = [e for e in edges[node] if e.other not in seen_at and e.other in self.docs]
                    cands.sort(key=lambda e: self.rank_key(e.other, e.weight, self.docs[e.other]["title"]))
                    kept, _ = self.cap(cands)
                    overflow.extend(((distance, *self.rank_key(e.other, e.weight, self.docs[e.other]["title"])),
                                     e.other, e.rel) for e in kept)
                break
            if self.direction != "in":
                for row in self.unresolved_of(level):
                    if row.get("foreign"):
                        f = row["foreign"]
                        key = (f["doc_id"], row["rel"])
                        if key not in foreign:
                            foreign[key] = Neighbour(
                                doc_id=f["doc_id"], title=f["title"], path=f["path"], rel=row["rel"],
                                direction="out", distance=distance,
                                score=0.0 if self.qv is not None else WEIGHTS.get(row["origin"], 1.0),
                                via=row["node"], kb=f["kb"])
                    elif row.get("local"):
                        continue
                    elif distance == 1 and row["reason"] and row["reason"] not in SOFT_REASONS:
                        result.unresolved.append({"target": row["raw"], "reason": row["reason"],
                                                  "line": row["line"], "origin": row["origin"]})
            nxt: list[str] = []
            for node in level:
                cands = [e for e in edges[node]
                         if e.other in self.docs and seen_at.get(e.other, distance) >= distance]
                cands.sort(key=lambda e: self.rank_key(e.other, e.weight, self.docs[e.other]["title"]))
                kept, cut = self.cap(cands)
                for e in cut:
                    overflow.append(((distance, *self.rank_key(e.other, e.weight, self.docs[e.other]["title"])),
                                     e.other, e.rel))
                for e in kept:
                    info = self.docs[e.other]
                    key = (e.other, e.rel, e.direction)
                    score = self.score(e.other, e.weight)
                    best[e.other] = max(best.get(e.other, score), score)
                    if key not in entries or entries[key].score < score:
                        entries[key] = Neighbour(
                            doc_id=e.other, title=info["title"], path=info["path"], rel=e.rel,
                            direction=e.direction, distance=distance, score=score, via=node)
                    if e.other not in seen_at:
                        seen_at[e.other] = distance
                        nxt.append(e.other)
            level = sorted(nxt, key=lambda u: self.rank_key(u, best[u], self.docs[u]["title"]))
        neighbours = list(entries.values()) + [
            n for n in foreign.values() if n.doc_id not in seen_at]
        neighbours.sort(key=lambda n: (-n.score, n.distance, n.title.casefold(), n.doc_id, n.rel,
                                       n.direction))
        result.neighbours = neighbours
        frontier: dict[tuple[str, str], tuple[Any, ...]] = {}
        for key, ulid, rel in overflow:
            if ulid in seen_at:
                continue
            k = (ulid, rel)
            if k not in frontier or key < frontier[k]:
                frontier[k] = key
        result.frontier = [{"doc_id": u, "rel": r, "title": self.docs[u]["title"],
                            "path": self.docs[u]["path"]}
                           for (u, r), _ in sorted(frontier.items(), key=lambda kv: (kv[1], kv[0][1]))]
        return result


def _cap(result: LinkResult) -> LinkResult:
    """Hold each list to :data:`MAX_ROWS` and the whole answer to :data:`MAX_BYTES`."""
    for name in ("neighbours", "frontier", "unresolved"):
        items = getattr(result, name)
        if len(items) > MAX_ROWS:
            setattr(result, name, items[:MAX_ROWS])
            result.truncated = True
    size = len(json.dumps(result.to_dict(), ensure_ascii=False))
    while size > MAX_BYTES:
        for name in ("frontier", "unresolved", "neighbours"):
            items = getattr(result, name)
            if items:
                items.pop()
                break
        else:
            break
        result.truncated = True
        size = len(json.dumps(result.to_dict(), ensure_ascii=False))
    return result


# -- editing sidecars: pnk link / pnk unlink ------------------------------------------------

_REL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$")


def check_rel(rel: str) -> str:
    rel = str(rel).strip()
    if not _REL_RE.match(rel):
        raise LinkError(
            f"invalid relation {rel!r}: use a short word such as cites, uses, extends "
            "(letters, digits, '_', '-', starting with a letter)"
        )
    return rel


def target_for(kb: KB, dst: str) -> dict[str, Any] | None:
    """Find DST of ``pnk link``: this KB first (path, ULID, URI, unique title), then the fleet by id."""
    try:
        row = kb.resolve(dst)
        return {"doc_id": row["ulid"], "title": row["title"], "path": row["path"], "kb": ""}
    except DocumentNotFound:
        pass
    ident = dst.strip()
    ident = ident[len("pnk://"):] if ident.lower().startswith("pnk://") else ident
    ident = ident.split("/", 1)[0].upper()
    if is_ulid(ident):
        found = FleetLookup(kb).find_ids([ident])
        if ident in found:
            return {"doc_id": ident, **found[ident]}
    if dst.strip().lower().startswith("kb://"):
        target, _ = FleetLookup(kb).find_path(dst.strip()[len("kb://"):].lstrip("/"))
        if target is not None:
            return target
    return None


def written_form(kb: KB, src_path: str, dst: str, target: dict[str, Any] | None) -> str:
    """What ``to:`` gets: ``pnk://ULID`` when asked by id or across KBs, else a path relative to SRC.

    A dangling path is read like any path argument (from the current folder
    when it is inside the KB, else from the KB root) and written relative to SRC.
    """
    given = dst.strip()
    if target is not None:
        by_id = given.lower().startswith("pnk://") or is_ulid(given.upper())
        if target["kb"] or by_id:
            return f"pnk://{target['doc_id']}"
        return relative_to(src_path, target["path"])
    if _SCHEME.match(given):
        scheme = given.split(":", 1)[0].lower()
        if scheme not in ("pnk", "kb"):
            raise LinkError(f"{given!r} is not a document link (use a path, pnk://ULID or kb://name/path)")
        inner = given.split(":", 1)[1].lstrip("/").partition("/")[2].replace("\\", "/")
        if scheme == "kb" and is_outside(posixpath.normpath(inner or ".")):
            raise LinkError(f"{given!r} climbs out of its knowledge base")
        return given
    if is_ulid(given.upper()):
        return f"pnk://{given.upper()}"
    if not given.lower().split("#", 1)[0].endswith(DOC_SUFFIXES):
        raise LinkError(
            f"no document {given!r}; a dangling link needs a path to the future file "
            "(e.g. notes/idea.md), a pnk://ULID or a kb://name/path.md"
        )
    # A backslash is a separator to the link reader (kb_path), so it is one here too:
    # "..\\x.md" must be refused like "../x.md", not written as an in-KB file name.
    rel = kb._relative(given.replace("\\", "/"))
    if rel is None or is_outside(rel):
        raise LinkError(f"{given!r} is outside the knowledge base")
    return relative_to(src_path, rel)


def relative_to(src_path: str, dst_path: str) -> str:
    rel = os.path.relpath(dst_path, os.path.dirname(src_path) or ".")
    return rel.replace(os.sep, "/")


def _editable_sidecar(kb: KB, src_row: dict[str, Any]) -> Any:
    from .fsutil import atomic_write
    from .sidecar import read_sidecar, skeleton

    rel = src_row["sidecar_path"]
    path = kb.root / rel
    sc = read_sidecar(path, display=rel, root=kb.root)
    if not sc.exists:
        atomic_write(path, skeleton(src_row["ulid"], src_row["title"]))
        sc = read_sidecar(path, display=rel)
    if sc.error:
        raise LinkError(f"{sc.error}; fix the sidecar before editing its links")
    return sc


def _links_seq(sc: Any, create: bool) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    seq = sc.data.get("links")
    if seq is None:
        if not create:
            return None
        seq = CommentedSeq()
        sc.data["links"] = seq
    if not isinstance(seq, list):
        raise LinkError(f"{sc.path}: `links:` must be a list of {{to, rel}} entries")
    return seq


def _matching(kb: KB, src_row: dict[str, Any], seq: Any, dst: str, target: dict[str, Any] | None,
              rel: str | None) -> list[int]:
    """Indexes of the sidecar entries that point at DST (with relation ``rel``, if given)."""
    src_path = src_row["path"]
    wanted: set[Target] = set()
    given = dst.strip()
    for t in (classify(given, src_path, kb.name, sidecar=True, bundle_root=_bundle_root(kb)),):
        if t is not None:
            wanted.add(t)
    rel_given = kb._relative(given)
    if rel_given is not None:
        wanted.add(Target("path", rel_given))
    if target is not None:
        if target["kb"]:
            wanted.add(Target("id", target["doc_id"]))
        else:
            wanted.add(Target("path", target["path"]))
    entries: list[tuple[int, Target]] = []
    for i, item in enumerate(seq):
        if not isinstance(item, dict) or not isinstance(item.get("to"), str):
            continue
        item_rel = item.get("rel") if isinstance(item.get("rel"), str) else DEFAULT_REL
        if rel is not None and str(item_rel).strip() != rel:
            continue
        t = classify(item["to"], src_path, kb.name, sidecar=True, bundle_root=_bundle_root(kb))
        if t is not None:
            entries.append((i, t))
    if not entries:
        return []
    resolved = Resolver(kb.reader().conn, kb.root).resolve([(t.kind, t.key, src_path) for _, t in entries])
    out = []
    for (i, t), (ulid, _) in zip(entries, resolved, strict=True):
        same_doc = target is not None and ulid is not None and not target["kb"] and ulid == target["doc_id"]
        if same_doc or t in wanted or (target is not None and t == Target("id", target["doc_id"])):
            out.append(i)
    return out


def add_link(kb: KB, src: str, dst: str, rel: str, note: str | None = None,
             allow_dangling: bool = False) -> dict[str, Any]:
    """``pnk link``: add a typed link to SRC's sidecar (idempotent), then sync."""
    from ruamel.yaml.comments import CommentedMap

    from .sidecar import write_sidecar

    rel = check_rel(rel)
    if not str(dst).strip():
        raise DocumentNotFound("empty link target")
    kb.sync()  # the index must know SRC and DST, and SRC must have its sidecar
    src_row = kb.resolve(src)
    target = target_for(kb, dst)
    if target is None and not allow_dangling:
        raise DocumentNotFound(
            f"no document {dst!r} in {kb.name} or the fleet (a path, id, pnk:// URI or exact title); "
            "pass --allow-dangling to link to it anyway"
        )
    if target is not None and not target["kb"] and target["doc_id"] == src_row["ulid"]:
        raise LinkError("a document cannot link to itself")
    sc = _editable_sidecar(kb, src_row)
    seq = _links_seq(sc, create=True)
    to = written_form(kb, src_row["path"], dst, target)
    found = _matching(kb, src_row, seq, dst, target, rel)
    if found:
        item = seq[found[0]]
        if note is not None and str(item.get("note") or "") != note:
            item["note"] = note
            action = "updated"
        else:
            action = "exists"
        to = str(item["to"])
    else:
        item = CommentedMap()
        item["to"] = to
        item["rel"] = rel
        if note:
            item["note"] = note
        if getattr(seq, "fa", None) is not None and seq.fa.flow_style():
            seq.fa.set_block_style()
        seq.append(item)
        action = "added"
    summary = None
    if action != "exists":
        write_sidecar(sc)
        summary = kb.sync().summary()
    return {
        "action": action,
        "src": {"doc_id": src_row["ulid"], "path": src_row["path"], "title": src_row["title"]},
        "dst": target if target is not None else {"target": to, "dangling": True},
        "to": to,
        "rel": rel,
        "note": note,
        "sidecar": src_row["sidecar_path"],
        "sync": summary,
    }


def remove_link(kb: KB, src: str, dst: str, rel: str | None = None) -> dict[str, Any]:
    """``pnk unlink``: remove SRC's sidecar links to DST (of relation ``rel``), then sync."""
    from .sidecar import write_sidecar

    if rel is not None:
        rel = check_rel(rel)
    if not str(dst).strip():
        raise DocumentNotFound("empty link target")
    kb.sync()
    src_row = kb.resolve(src)
    target = target_for(kb, dst)
    sc = _editable_sidecar(kb, src_row)
    seq = _links_seq(sc, create=False)
    found = _matching(kb, src_row, seq, dst, target, rel) if seq else []
    removed = [{"to": str(seq[i]["to"]), "rel": str(seq[i].get("rel") or DEFAULT_REL)} for i in found]
    summary = None
    if found:
        for i in reversed(found):
            del seq[i]
        write_sidecar(sc)
        summary = kb.sync().summary()
    return {
        "action": "removed" if found else "absent",
        "src": {"doc_id": src_row["ulid"], "path": src_row["path"], "title": src_row["title"]},
        "dst": target if target is not None else {"target": dst.strip(), "dangling": True},
        "removed": removed,
        "sidecar": src_row["sidecar_path"],
        "sync": summary,
    }
