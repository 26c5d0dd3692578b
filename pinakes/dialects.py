"""Note-tool dialects: the names a document answers to and the names a link asks for.

Obsidian, Foam, Logseq, Dendron and Zettelkasten vaults write links in their own
way, and each resolves them by *names*, not by relative paths: a file name
anywhere in the vault, a path suffix, a title, an alias, a namespace written as
``a___b`` in the file name, a journal's date, a note id. This module knows those
conventions as pure functions, so the resolver (:mod:`pinakes.links`), the parser
(:mod:`pinakes.markdown`) and the structural deriver agree on them:

* :func:`doc_names` lists what a document can be linked as (stored in the
  ``link_names`` table at sync, one indexed lookup per link when resolving);
* :func:`lookup_name` and :func:`date_key` / :func:`zettel_id` turn what a link
  wrote into the same folded keys;
* :func:`hierarchy_parent` reads a dotted (Dendron) or namespaced (Logseq) file
  name as the path it stands for;
* :func:`link_form` names the syntax a link was written in, for ``pnk doctor``'s
  per-form report.

Names are folded (Unicode NFC, then ``casefold``): every note tool matches names
case-insensitively, and macOS hands out file names in NFD.
"""

from __future__ import annotations

import datetime as _dt
import posixpath
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = [
    "ATTACHMENT_SUFFIXES",
    "BLOCK_ID",
    "block_key",
    "FORMS",
    "NAME_TIERS",
    "date_key",
    "dendron_name",
    "doc_aliases",
    "doc_names",
    "doc_routes",
    "DATE_FIELDS",
    "served_key",
    "fold",
    "hierarchy_parent",
    "is_attachment",
    "NOTION_ID",
    "link_form",
    "lookup_name",
    "page_ref",
    "parent_path",
    "split_vault",
    "strip_suffix",
    "zettel_id",
]

#: The suffixes of a note: Markdown's, MDX's (Docusaurus, Nextra pages) and Quarto's (``.qmd``,
#: Markdown with code cells; not R Markdown's ``.Rmd``, which an R package keeps beside the
#: ``README.md`` it renders, and whose sidecar would be that file's). A link that names
#: one is a link to a note; a file with one that ``[kb] include`` names no pattern for is
#: counted at sync (:func:`pinakes.fsutil.walk_kb`), so the sync can say why it indexed none.
DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".mdown", ".mkd", ".mkdn", ".qmd")

#: A Notion export names each page's file (and its subpages' folder) after its title, a space
#: and the page's 32-digit hex id: "Clients 1e969a758672a64dfea579f174b610e0".
NOTION_ID = re.compile(r"(?:^|\s)[0-9a-f]{32}$")

#: File types a wikilink or embed can name that are not notes: attachments, never links.
ATTACHMENT_SUFFIXES = frozenset(
    """png jpg jpeg gif svg webp bmp ico tif tiff heic avif pdf mp3 mp4 m4a m4v wav ogg oga
    flac webm mov mkv avi zip gz tar tgz 7z rar csv tsv xlsx xls docx doc pptx ppt odt ods
    odp epub canvas excalidraw json yaml yml toml txt html htm css js ts py ipynb drawio
    base""".split()
)

#: How a name was derived, strongest first. A link resolves in the first tier with a
#: match: a path beats a file name, a file name beats a title (what every note tool
#: does: the file is the note), a title beats an alias, and the looser readings
#: (namespaces spelled in file names, journal dates, note ids, Logseq block ids) come last.
#: ``folder`` and ``readme`` name a folder's own page, which only a suffixless path or a
#: folder link (``[Guide](guide/)``) reaches, after the path itself; so does ``route``, a web
#: address the page declares (``permalink: /about/``), before any file name; ``folder-suffix``
#: names a folder's page by the end of its folder's path, as ``suffix`` names a file; ``served``
#: is the address a docs site serves a page at when it differs from the file's path (the
#: ordering numbers of ``01-guide/02-install.md`` left out, Docusaurus's ``id:``), last among a
#: suffixless path's readings.
NAME_TIERS = ("path", "folder", "readme", "route", "name", "suffix", "folder-suffix", "title", "alias",
              "namespace", "date", "id", "block", "served")

#: The file names (folded, no suffix) of the page a site generator serves for its folder:
#: ``index.md`` (MkDocs, VitePress, Docusaurus, Sphinx), ``_index.md`` (a Hugo section).
#: ``README.md`` (what GitHub shows for a folder; MkDocs' fallback) answers only after them.
_FOLDER_PAGES = ("index", "_index")

_WS = re.compile(r"\s+")


def fold(text: str) -> str:
    """The matching form of a name: NFC, case-folded, inner whitespace collapsed."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()


def strip_suffix(name: str) -> str:
    """``note.md`` -> ``note`` (only Markdown suffixes: ``a.b.c`` keeps its dots)."""
    low = name.lower()
    for suffix in DOC_SUFFIXES:
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_attachment(target: str) -> bool:
    """Whether a wikilink or embed target names a file that is not a note (an image, a PDF)."""
    last = target.rsplit("/", 1)[-1]
    stem, dot, ext = last.rpartition(".")
    return bool(dot and stem and ext.lower() in ATTACHMENT_SUFFIXES)


# -- what a link asks for ------------------------------------------------------------

_DENDRON = re.compile(r"^dendron://([^/]*)/(.*)$", re.IGNORECASE | re.DOTALL)


def split_vault(target: str) -> tuple[str, str]:
    """``dendron://vault/note.name`` -> ``("vault", "note.name")``; anything else -> ``("", target)``."""
    m = _DENDRON.match(target.strip())
    if m is None:
        return "", target
    return m.group(1).strip(), m.group(2).strip()


def lookup_name(target: str) -> str:
    """The folded name a wiki-style target looks up: vault prefix and ``.md`` dropped.

    ``[[Folder/Note.md]]`` asks for ``folder/note``; ``[[dendron://v/a.b]]`` for ``a.b``.
    """
    _, note = split_vault(target)
    note = note.replace("\\", "/").strip().strip("/")
    return fold(strip_suffix(note))


_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december"
    .split(), 1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAY = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*,?\s+"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_FORMS = [
    # 2023-01-01, 2023_01_01, 2023.01.01, 2023/01/01 (ISO order; Logseq and Obsidian file names)
    (re.compile(r"^(\d{4})[-_./](\d{1,2})[-_./](\d{1,2})$"), "ymd"),
    # Jan 1st, 2023 / January 1, 2023 / Monday, January 1st 2023 (Logseq's default titles)
    (re.compile(rf"^(?:{_WEEKDAY})?([a-z]+)\.?\s+(\d{{1,2}}){_ORD},?\s+(\d{{4}})$"), "mdy"),
    # 1st Jan 2023 / 1 January, 2023
    (re.compile(rf"^(?:{_WEEKDAY})?(\d{{1,2}}){_ORD}\s+([a-z]+)\.?,?\s+(\d{{4}})$"), "dmy"),
]


def date_key(text: str) -> str:
    """``date:YYYY-MM-DD`` for a journal date written in one of the supported forms, else ``""``.

    Supported: ISO order with ``-``, ``_``, ``.`` or ``/`` (``2023_01_01``), and
    English month names in either order with an optional ordinal and weekday
    (``Jan 1st, 2023``, ``Monday, January 1st 2023``, ``1 January 2023``).
    Numeric day-first or month-first forms (``01/02/2023``) are ambiguous and
    are not read.
    """
    s = fold(text)
    if not s or len(s) > 40 or not any(c.isdigit() for c in s):
        return ""
    for pattern, order in _DATE_FORMS:
        m = pattern.match(s)
        if m is None:
            continue
        a, b, c = m.groups()
        try:
            if order == "ymd":
                y, mo, d = int(a), int(b), int(c)
            elif order == "mdy":
                y, mo, d = int(c), _MONTHS[a], int(b)
            else:
                y, mo, d = int(c), _MONTHS[b], int(a)
            return "date:" + _dt.date(y, mo, d).isoformat()
        except (KeyError, ValueError):
            return ""
    return ""


_ZETTEL = re.compile(r"^(\d{12,14})(?=$|[\s_\-.])")


def zettel_id(text: str) -> str:
    """``id:<digits>`` when ``text`` starts with a 12-14 digit Zettelkasten id, else ``""``."""
    m = _ZETTEL.match(text.strip())
    return f"id:{m.group(1)}" if m else ""


# -- what a document answers to ---------------------------------------------------------

_NAMESPACE_SEP = re.compile(r"___|%2f", re.IGNORECASE)
_DOTTED = re.compile(r"^[^\s.][^\s]*$")


def hierarchy_parent(stem: str) -> str | None:
    """The parent name of a hierarchical file name, or None for a plain one.

    ``a.b.c`` (Dendron, older Logseq) -> ``a.b``; ``a___b`` (Logseq's file name
    for the page ``a/b``) -> ``a``; ``a%2Fb`` (Logseq's older form) -> ``a``.
    A dotted name counts only without spaces and with a last part that is not a
    number, so ``v2.1``, ``2023.01.01`` and ``Mr. Smith`` stay plain names.
    """
    parts = _NAMESPACE_SEP.split(stem)
    if len(parts) > 1:
        m = list(_NAMESPACE_SEP.finditer(stem))[-1]
        parent = stem[: m.start()]
        return parent if parent.strip() and stem[m.end():].strip() else None
    if "." not in stem or not _DOTTED.match(stem):
        return None
    parent, _, last = stem.rpartition(".")
    if not parent or not last or parent.endswith(".") or last.isdigit():
        return None
    return parent


def _namespace_name(stem: str) -> str:
    """The page name a namespaced file name stands for: ``a___b`` / ``a%2Fb`` / ``a.b`` -> ``a/b``."""
    if _NAMESPACE_SEP.search(stem):
        return _NAMESPACE_SEP.sub("/", stem)
    if hierarchy_parent(stem) is not None:
        return stem.replace(".", "/")
    return ""


def _strings(value: Any) -> list[str]:
    """A front-matter value as a list of strings (``a, b`` strings and YAML lists both)."""
    if isinstance(value, str):
        return [v for v in (p.strip() for p in value.split(",")) if v]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if isinstance(v, str | int | float) and str(v).strip()]
    return []


_BRACKETS = re.compile(r"^\[\[(.*)\]\]$|^#\[\[(.*)\]\]$|^#(.*)$", re.DOTALL)


def page_ref(value: str) -> str:
    """A property value with its page-reference markup removed: ``[[a b]]``, ``#[[a b]]``, ``#a`` -> the name."""
    v = value.strip().strip('"').strip("'").strip()
    m = _BRACKETS.match(v)
    if m:
        v = next(g for g in m.groups() if g is not None)
    return v.strip()


def doc_aliases(front_matter: Mapping[str, Any]) -> list[str]:
    """The aliases a document declares: ``aliases:``/``alias:`` (Obsidian, Logseq's ``alias::``).

    A value that starts with ``/`` is an old web address of the page (Hugo's ``aliases``),
    not a name: it is one of :func:`doc_routes`.
    """
    out: list[str] = []
    for key in ("aliases", "alias"):
        for v in _strings(front_matter.get(key)):
            name = page_ref(v)
            if name and name not in out and not name.startswith("/"):
                out.append(name)
    return out


#: Front-matter keys that date a note: a journal day's or a chat session's ``date:``, a note
#: tool's ``created:``, a daily note's ``day:``. The confidence's reader takes such a note's
#: lines as dated (:func:`pinakes.support.reader.note_dated`); a ``--since`` scope keeps it
#: when the date falls in the span (:func:`pinakes.scope.doc_span`).
DATE_FIELDS = ("date", "created", "day")

#: Front-matter keys that set a page's web address: Jekyll's ``permalink``, Hugo's ``url``,
#: Docusaurus's ``slug``; Hugo's ``aliases`` list its old addresses.
_ROUTE_KEYS = ("permalink", "url", "slug", "aliases")
_BUILT_PAGE = re.compile(r"(?:/index)?\.html?$", re.IGNORECASE)


def doc_routes(front_matter: Mapping[str, Any]) -> list[str]:
    """The site addresses a page declares, as the names a link to them looks up.

    ``permalink: /about/`` makes ``[About](/about/)`` reach this page wherever its file
    lies. Only addresses from the site's root (``/...``) count; a pattern
    (``/:year/:title/``) or a web address (``https://...``) is none.
    """
    out: list[str] = []
    for key in _ROUTE_KEYS:
        for v in _strings(front_matter.get(key)):
            if not v.startswith("/") or any(c in v for c in ":{}?#"):
                continue
            name = fold(strip_suffix(_BUILT_PAGE.sub("", v).strip("/")))
            if name and name not in out:
                out.append(name)
    return out


#: The ordering number of a file or folder name, which Docusaurus leaves out of the page's
#: address (``01-intro.md`` is served as ``intro``, ``2_guides/`` as ``guides/``): digits, then
#: dashes, underscores or dots, then a name that does not start with a digit, so that a date
#: (``2023-01-05-notes``) or a version (``1.2-notes``) keeps its numbers.
_ORDER_NUMBER = re.compile(r"^\d+\s*[-_.]+\s*(?=[^\d\s._-])")
#: A page id as Docusaurus takes it from front matter (``id: config``): one path segment.
_PAGE_ID = re.compile(r"^[\w.-]+$")


def served_key(name: str) -> str:
    """A folded path with each segment's ordering number left out: ``docs/01-guide/02-install``
    -> ``docs/guide/install``, the form a docs site's address takes."""
    return "/".join(_ORDER_NUMBER.sub("", part) for part in name.split("/"))


#: A Jekyll post's file name: its date, then its title (``2019-01-01-hello-world``).
_POST = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(.+)$")


def _post_address(folder: str, post: re.Match[str], title: str, front_matter: Mapping[str, Any]) -> str:
    """Where Jekyll's default permalink serves a post: ``/:categories/:year/:month/:day/:title``.

    Its categories are the folders above ``_posts`` (``blog/_posts/``) and the front
    matter's ``categories`` (a list, or words) or ``category``.
    """
    cats = [p for p in folder.split("/")[: folder.split("/").index("_posts")] if p]
    for key in ("categories", "category"):
        value = front_matter.get(key)
        words = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
        cats += [str(w).strip() for w in words if isinstance(w, str | int) and str(w).strip()]
    return "/".join([*cats, post.group(1), post.group(2), post.group(3), title])


def _served_path(bare: str, front_matter: Mapping[str, Any]) -> str:
    """The folded address a docs site serves the page ``bare`` (a path without suffix) at.

    Docusaurus drops the ordering numbers of file and folder names and puts a page's
    ``id:`` (or a relative ``slug:``) in place of its file name; a folder's ``index`` page
    is served as the folder. Jekyll serves a post (``_posts/2019-01-01-hello.md``) under
    its categories and date (``2019/01/01/hello``).
    """
    folder, _, stem = bare.rpartition("/")
    post = _POST.match(stem) if "_posts" in folder.split("/") else None
    page_id = next((v.strip() for key in ("slug", "id")
                    if isinstance(v := front_matter.get(key), str) and _PAGE_ID.match(v.strip())), None)
    if post:
        title = page_id if page_id and page_id != post.group(0) else post.group(4)
        return fold(_post_address(folder, post, title, front_matter))
    stem = page_id or stem
    served = served_key(fold(f"{folder}/{stem}" if folder else stem))
    if served == fold(bare):
        return served  # served at its own path: no other name
    head, _, last = served.rpartition("/")
    return head if head and last in (*_FOLDER_PAGES, "readme") else served


def doc_names(path: str, title: str, front_matter: Mapping[str, Any],
              block_ids: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Every ``(folded name, tier)`` a document answers to (see :data:`NAME_TIERS`).

    ``notes/Topic/Alpha Beta.md`` titled "Alpha" with ``aliases: [AB]`` answers to
    ``notes/topic/alpha beta`` (path), ``alpha beta`` (name), ``topic/alpha beta``
    (suffix), ``alpha`` (title) and ``ab`` (alias); ``guide/index.md`` also to
    ``guide`` (folder), ``guide/README.md`` to ``guide`` (readme), ``site/docs/guide/index.md``
    also to ``docs/guide`` (folder-suffix: a route under a site's content folder), a page declaring
    ``permalink: /about/`` to ``about`` (route); a Logseq page
    ``pages/a___b.md`` also to ``a/b`` (namespace), a journal
    ``journals/2023_01_01.md`` to ``date:2023-01-01`` and a note
    ``202301011200 Idea.md`` to ``id:202301011200``; a Logseq page declaring the
    block id ``6f1c…`` (``block_ids``) to ``6f1c…`` (block), which ``((6f1c…))`` asks for;
    ``docs/01-guide/02-install.md`` also to ``docs/guide/install``, ``guide/install`` and
    ``install`` (served: the address Docusaurus gives it).
    """
    out: dict[tuple[str, str], None] = {}

    def add(name: str, tier: str) -> None:
        if name:
            out.setdefault((name, tier), None)

    bare = strip_suffix(path)
    add(fold(bare), "path")
    parts = bare.split("/")
    stem = parts[-1]
    add(fold(stem), "name")
    decoded = unquote(stem) if "%" in stem else stem
    if decoded != stem:
        add(fold(decoded), "name")
    for i in range(1, len(parts) - 1):
        add(fold("/".join(parts[i:])), "suffix")
    page = fold(stem)
    if len(parts) > 1 and page in (*_FOLDER_PAGES, "readme"):
        add(fold("/".join(parts[:-1])), "readme" if page == "readme" else "folder")
        for i in range(1, len(parts) - 2):  # docs/concepts of content/en/docs/concepts/_index.md
            add(fold("/".join(parts[i:-1])), "folder-suffix")
    if title:
        add(fold(title), "title")
    for alias in doc_aliases(front_matter):
        add(fold(alias), "alias")
    for route in doc_routes(front_matter):
        add(route, "route")
    add(fold(_namespace_name(stem)), "namespace")
    add(date_key(stem), "date")
    add(zettel_id(stem), "id")
    for block in block_ids:
        add(block_key(block), "block")
    served = _served_path(bare, front_matter)
    if served != fold(bare):
        segments = served.split("/")
        for i in range(len(segments)):
            add("/".join(segments[i:]), "served")
    return list(out)


#: A Logseq block id, as ``id::`` declares it and ``((…))`` refers to it (any case).
BLOCK_ID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_BLOCK_KEY = re.compile(BLOCK_ID)


def block_key(text: str) -> str:
    """A Logseq block id as a name (lower case), or "" when ``text`` is not one."""
    t = text.strip().lower()
    return t if _BLOCK_KEY.fullmatch(t) else ""


# -- what a link was written as -----------------------------------------------------

#: Every form :func:`link_form` returns, in the order ``pnk doctor`` lists them.
FORMS = ("sidecar", "markdown", "reference", "autolink", "wikilink", "wikilink-alias",
         "wikilink-heading", "wikilink-block", "wikilink-date", "wikilink-id", "dendron-vault",
         "embed", "tag", "property", "block-ref", "toctree", "doc-role", "template")


def link_form(kind: str, target: str, fragment: str = "", aliased: bool = False,
              label: str = "") -> str:
    """The syntax a body link was written in, for ``pnk doctor``'s per-form report.

    ``kind`` is the parser's (``inline``, ``reference``, ``autolink``,
    ``wikilink``, ``embed``, ``tag``, ``property``; a site generator's ``toctree``,
    ``doc-role`` and ``template``, read as Markdown links). A wikilink counts under its
    most specific feature: a vault prefix (in either part), then a block or
    heading fragment, a journal date or note id as target, then an alias.
    """
    if kind == "inline":
        return "markdown"
    if kind in ("reference", "autolink", "embed", "tag", "property", "toctree", "doc-role", "template"):
        return kind
    if kind == "blockref":
        return "block-ref"
    if any(t.strip().lower().startswith("dendron://") for t in (target, label if aliased else "")):
        return "dendron-vault"
    if fragment.startswith("#^"):
        return "wikilink-block"
    if fragment:
        return "wikilink-heading"
    if date_key(target):
        return "wikilink-date"
    if zettel_id(target) and target.strip().isdigit():
        return "wikilink-id"
    return "wikilink-alias" if aliased else "wikilink"


def dendron_name(text: str) -> bool:
    """Whether ``text`` looks like a Dendron note name (``lang.python``, no spaces)."""
    t = text.strip()
    return bool(t) and " " not in t and "." in t.strip(".") and not is_attachment(t)


def parent_path(path: str) -> str | None:
    """The KB path of a hierarchical note's parent note (``x/a.b.c.md`` -> ``x/a.b.md``)."""
    folder, name = posixpath.split(path)
    stem = strip_suffix(name)
    parent = hierarchy_parent(stem)
    if parent is None:
        return None
    ext = name[len(stem):] or ".md"
    return posixpath.join(folder, parent + ext) if folder else parent + ext
