"""Turn one Markdown file into what the indexer stores: metadata, headings, chunks, links.

Why a real parser and not regexes: regexes over Markdown get fenced code,
setext headings and reference definitions wrong, and each such mistake either
leaks example code into the link graph or cuts a chunk through the middle of a
block. markdown-it-py (CommonMark + front matter + tables) gives block tokens
with source line maps, so chunk text is sliced verbatim from the file and every
link knows the line it was written on.

Why it never raises on input: a file is user content, and one malformed file
must not stop the indexing of a whole folder. Broken front matter becomes
``front_matter_error``; anything the parser cannot make sense of degrades to
plain text chunks.
"""

from __future__ import annotations

import base64
import bisect
import datetime as _dt
import functools
import itertools
import math
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline import autolink as _autolink_rule
from markdown_it.rules_inline import link as _link_rule
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from .dialects import BLOCK_ID, NOTION_ID, is_attachment, page_ref
from .text import content_words

__all__ = ["Chunk", "Heading", "Link", "ParsedDocument", "parse_markdown"]

CountTokens = Callable[[list[str]], list[int]]


# -- public data ---------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One embeddable piece of a document, small enough for the embedder's window."""

    ordinal: int  # position in the document, 0-based, consecutive
    heading_path: tuple[str, ...]  # enclosing heading texts; () before the first heading
    text: str  # verbatim Markdown source (heading line excluded), stripped
    start_line: int  # 1-based line in the original file (front matter counted)
    end_line: int  # 1-based, inclusive


@dataclass(frozen=True)
class Link:
    """One outgoing reference, as written, so the caller can resolve and type it."""

    target: str  # percent-decoded target without the fragment
    label: str  # link text (wikilink: the part after ``|``, else the inner text)
    kind: str  # "inline" | "reference" | "wikilink" | "autolink" | "embed" | "tag" | "property" | "blockref"
    #           | "toctree" | "doc-role" | "template" (a site generator's forms, read as Markdown links)
    line: int  # 1-based line in the original file
    fragment: str  # "#section" split off the target, "" if none
    aliased: bool = False  # a wikilink written with ``|`` (its label may be the target: Dendron)
    context: str = ""  # content words of the sentence, list item or table cell around it
    chunk: int = -1  # ordinal of the chunk it sits in (-1: none)
    #: A tag written as a property value (Logseq's bare ``tags::`` value): it resolves like
    #: ``#x``, and names no page without being a broken link, as ``#x`` does.
    tag: bool = False


@dataclass(frozen=True)
class Heading:
    """A section heading (top level of the document, not inside lists or quotes)."""

    level: int
    text: str
    line: int


@dataclass
class ParsedDocument:
    """Everything the indexer needs from one file, computed in one parse."""

    front_matter: dict[str, Any]
    front_matter_error: str | None
    title: str | None
    headings: list[Heading] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    #: Logseq block ids the document declares (``id:: 6f1c…`` under a block, lower case): a
    #: ``((6f1c…))`` block reference in any note links to this one.
    block_ids: list[str] = field(default_factory=list)


# -- entry point ---------------------------------------------------------------


def parse_markdown(
    text: str,
    *,
    max_tokens: int = 256,
    count_tokens: CountTokens | None = None,
    name: str = "",
) -> ParsedDocument:
    """Parse ``text`` into front matter, title, headings, chunks and links.

    ``name``: the file's name, which tells a Notion export's page (its name ends in
    the page's 32-digit hex id) and so whether the lines under its title are the
    page's properties (:func:`_notion_properties`), and an MDX page (``.mdx``), whose
    ``import`` and ``export`` statements are code, not text (:func:`_mdx_statements`).

    Chunks never exceed ``max_tokens`` as measured by ``count_tokens`` (the
    embedder's own tokenizer, called in batches because it is usually a Rust
    tokenizer with per-call overhead), so nothing is silently truncated at
    embedding time. Without a counter a word/punctuation estimate is used.
    The only exception to the budget is a single character that alone counts
    more than ``max_tokens``, which cannot be split further.

    Chunk text is the file's own source (CRLF read as LF), except that pieces
    of a code fence too big for one chunk are each re-wrapped in the fence's
    opening and closing lines so every piece still reads as code.
    """
    src = _normalize(text)
    counter = count_tokens if count_tokens is not None else _approx_count_tokens
    budget = max(1, int(max_tokens))
    lines = src.split("\n")  # not splitlines(): markdown-it only breaks on "\n"

    toml_end = _front_matter_end(lines, "+++")
    forms: dict[tuple[int, str], str] = {}  # (line, target) -> the site generator's form it was
    code = [] if name.lower().endswith(".mdx") else None  # an MDX page's statements' lines
    try:
        tokens = _parser().parse(_parse_view(src, lines, toml_end, forms, code))
    except Exception:  # pragma: no cover - defensive; markdown-it should not fail
        tokens = []  # degrade: the whole file becomes preamble text, no links

    structure = _Structure.from_tokens(tokens, len(lines))
    if code:
        structure.hidden = sorted(structure.hidden + code)

    front_matter: dict[str, Any] = {}
    fm_error: str | None = None
    property_links: list[Link] = []
    own_lines: set[int] = set()  # ``alias::`` lines: names of this page, not links from it
    if structure.front_matter is not None:
        load = _load_front_matter if toml_end is None else _load_toml_front_matter
        front_matter, fm_error = load(structure.front_matter.content)
        property_links = _front_matter_links(front_matter, structure.front_matter.content)
    else:
        front_matter, property_links, own_lines = _page_properties(lines, structure)
        if not front_matter and NOTION_ID.search(name.rsplit("/", 1)[-1].rsplit(".", 1)[0]):
            front_matter, property_links = _notion_properties(lines, structure)

    title: str | None = None
    fm_title = front_matter.get("title")
    if isinstance(fm_title, str) and fm_title.strip():
        title = fm_title.strip()
    else:
        title = next((h.text for h in structure.headings if h.level == 1 and h.text), None)

    chunker = _Chunker(src, lines, budget, counter)
    chunks = chunker.chunk(structure.sections(len(lines)))

    try:
        links = property_links + [lk for lk in _collect_links(tokens) if lk.line not in own_lines]
    except Exception:  # pragma: no cover - defensive; links are best effort
        links = property_links
    if forms:  # written as a toctree entry, a {doc} role or a template: say so (pnk doctor's forms)
        links = [replace(lk, kind=forms[(lk.line, lk.target)]) if (lk.line, lk.target) in forms else lk
                 for lk in links]
    if links and chunks:
        ends = [c.end_line for c in chunks]
        links = [replace(lk, chunk=chunks[min(bisect.bisect_left(ends, lk.line), len(chunks) - 1)]
                         .ordinal) for lk in links]

    return ParsedDocument(
        front_matter=front_matter,
        front_matter_error=fm_error,
        title=title,
        headings=list(structure.headings),
        chunks=chunks,
        links=links,
        block_ids=_block_ids(src),
    )


# -- input normalisation and the parser ----------------------------------------

_NEWLINES = re.compile(r"\r\n?")

#: The opening line of a block whose body is indented under it: MkDocs (Python-Markdown)
#: admonitions ``!!! note "Title"`` (one or more classes: ``!!! note inline end``),
#: collapsible ``??? tip`` / ``???+ tip``, and content tabs ``=== "Linux"`` (a quoted
#: label, always: a bare ``===`` is a setext heading's underline).
_INDENTED_BLOCK = re.compile(
    r'( *)(?:(?:!!!|\?\?\?\+?)(?:[ \t]+[\w-]+)+(?:[ \t]+"[^"]*")?|===[+!]?[ \t]+"[^"]*")[ \t]*$')
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")


class _Fences:
    """The ordinary code fences the pre-readers of :func:`_parse_view` meet, line by line: a
    syntax example in a fence stays code, whatever it shows."""

    def __init__(self) -> None:
        self.marker = ""  # the fence being skipped

    def inside(self, line: str) -> bool:
        """Whether ``line`` is in a fence, its closing line included."""
        if not self.marker:
            return False
        if _is_closing_fence(line, self.marker):
            self.marker = ""
        return True

    def opens(self, line: str) -> bool:
        """Whether ``line`` opens a fence (the lines up to its close are then :meth:`inside`)."""
        if m := _FENCE_LINE.match(line):
            self.marker = m.group(1)
            return True
        return False


def _parse_view(src: str, lines: list[str], toml_end: int | None,
                forms: dict[tuple[int, str], str], code: list[tuple[int, int]] | None = None) -> str:
    """The text markdown-it parses: ``src`` as the tool it was written for shows it.

    Hugo's TOML front matter (``+++`` ... ``+++``) is fenced as YAML's, so its lines are no
    text (:func:`_load_toml_front_matter` reads its keys); MkDocs bodies are unindented
    (:func:`_unindent_bodies`), MyST prose directives opened (:func:`_open_directives`),
    a MyST table of contents made a list of links (:func:`_toctree_links`), and the link
    forms of Hugo and Sphinx written as links (:func:`_site_link_roles`), and, when ``code``
    is given (an MDX page), its ``import`` / ``export`` statements blanked and their line
    ranges added to ``code``, which no chunk holds (:func:`_mdx_statements`). Each works on one
    copy, line by line: every line keeps its number, and a chunk's text is still the
    file's own lines (:class:`_Chunker` cuts ``src``, not this). ``forms`` collects the
    (line, target) of each link written so, with the form it was written in.
    """
    out = list(lines)
    if toml_end is not None:
        out[0] = out[toml_end] = "---"
    _unindent_bodies(src, out)
    _open_directives(src, out)
    _toctree_links(src, out, forms)
    _site_link_roles(src, out, forms)
    if code is not None:
        _mdx_statements(out, code)
    return src if out == lines else "\n".join(out)


#: The first line of an MDX page's ES module statement: ``import Tabs from '@theme/Tabs';``,
#: ``import './styles.css'``, ``export const meta = {...}``, ``export default Layout``.
_ESM = re.compile(r"import[ \t]+[\w$*{'\"]|export[ \t]+(?:(?:default|const|let|var|function|async|class)\b"
                  r"|[{*])")


def _mdx_statements(out: list[str], code: list[tuple[int, int]]) -> None:
    """Blank an MDX page's ``import`` and ``export`` statements in ``out``, adding their line
    ranges to ``code``.

    Docusaurus and Nextra pages open with the components they use; MDX reads a statement
    from a line that starts with ``import`` or ``export`` to the next blank line. It is code
    the site runs, not text the page shows: kept, it made a section of its own that search
    returned for "tabs". Lines in a fence, and the front matter, are left alone; so is a
    ``.md`` page, where such a line is prose.
    """
    end = _front_matter_end(out, "---", "...")
    fences = _Fences()
    i = 0 if end is None else end + 1
    while i < len(out):
        line = out[i]
        if fences.inside(line) or fences.opens(line) or not _ESM.match(line):
            i += 1
            continue
        start = i
        while i < len(out) and out[i].strip():
            out[i] = ""
            i += 1
        code.append((start, i))


#: MyST (Sphinx, Jupyter Book) directives whose body is prose the page shows: admonitions,
#: dropdowns, tabs, cards. Others (``{code-block}``, ``{math}``) stay fences; a ``{toctree}``
#: becomes a list of links (:func:`_toctree_links`).
_PROSE_DIRECTIVES = frozenset("""admonition attention caution danger error hint important note
    seealso tip warning versionadded versionchanged deprecated dropdown topic sidebar margin
    tab-item card grid-item-card epigraph pull-quote highlights""".split())
_DIRECTIVE = re.compile(r" {0,3}(`{3,}|~{3,})\{([\w-]+)\}")
_DIRECTIVE_OPTION = re.compile(r"\s*:[\w-]+:")


def _open_directives(src: str, out: list[str]) -> None:
    """Blank a MyST prose directive's fence lines in ``out`` (``src``'s lines), keeping its body.

    ````` ```{note} ````` ... ````` ``` ````` is a fence to CommonMark, so the note's
    links were no links; MyST renders its body as Markdown. Blanking the two fence lines
    (and the ``:class: tip`` option lines opening the body) parses the body as the page
    shows it, every line keeping its number; a chunk's text is still the file's own
    lines. A fence inside the body is a fence again; a directive inside an ordinary fence
    (a syntax example) is left alone.
    """
    if "```{" not in src and "~~~{" not in src:
        return
    fences = _Fences()
    opened: list[str] = []  # the fence markers of the prose directives open around this line
    options = False
    for i, line in enumerate(out):
        if fences.inside(line):
            continue
        if opened and _is_closing_fence(line, opened[-1]):
            out[i] = ""
            opened.pop()
            options = False
            continue
        if options and _DIRECTIVE_OPTION.match(line):
            out[i] = ""
            continue
        options = False
        m = _DIRECTIVE.match(line)
        if m and m.group(2) in _PROSE_DIRECTIVES:
            out[i] = ""
            opened.append(m.group(1))
            options = True
        else:
            fences.opens(line)


_TOCTREE = re.compile(r" {0,3}(`{3,}|~{3,}|:{3,})\{toctree\}")


def _toctree_links(src: str, out: list[str], forms: dict[tuple[int, str], str]) -> None:
    """Write each entry of a MyST ``{toctree}`` in ``out`` as a list item linking to it.

    A Sphinx or Jupyter Book site's pages are joined by their tables of contents: an index
    page's ``{toctree}`` lists its child pages by path (``install``, ``Title <guide/setup>``),
    which the site shows as links. In CommonMark it is a fence, so the pages were not
    linked. Fence and option lines become blank; a glob pattern, ``self`` or a web address
    is no page of the KB and stays out.
    """
    if "{toctree}" not in src:
        return
    fences = _Fences()
    i = 0
    while i < len(out):
        line = out[i]
        if fences.inside(line):
            i += 1
            continue
        m = _TOCTREE.match(line)
        if m is None:
            fences.opens(line)
            i += 1
            continue
        marker = m.group(1)
        out[i] = ""
        i += 1
        options = True
        if i < len(out) and out[i].strip() == "---":  # options as a YAML block
            out[i] = ""
            i += 1
            while i < len(out) and out[i].strip() != "---" and not _is_closing_fence(out[i], marker):
                out[i] = ""
                i += 1
            if i < len(out) and out[i].strip() == "---":
                out[i] = ""
                i += 1
        while i < len(out) and not _is_closing_fence(out[i], marker):
            entry = out[i].strip()
            options = options and bool(_DIRECTIVE_OPTION.match(out[i]))
            out[i] = "" if options or not entry else _toc_item(entry)
            if out[i]:
                forms[(i + 1, _titled(entry)[1].partition("#")[0])] = "toctree"
            i += 1
        if i < len(out):
            out[i] = ""
        i += 1


def _titled(text: str) -> tuple[str, str]:
    """``Title <target>`` as (title, target); a bare ``target`` as ("", target).

    The form of a Sphinx toctree entry and role. Read by string search, not a regular
    expression: a 1 MB line must cost one pass."""
    at = text.rfind("<")
    if at < 0 or not text.endswith(">") or ">" in text[at + 1:-1]:
        return "", text.strip()
    return text[:at].strip(), text[at + 1:-1].strip()


def _toc_item(entry: str) -> str:
    """One toctree entry as a Markdown list item linking to its page ("" when it names none)."""
    title, path = _titled(entry)
    if not path or path == "self" or any(c in path for c in "*?[<>") or ":" in path:
        return ""
    return f"- [{title or path}](<{path}>)"


#: A link's destination (no parentheses or line break inside); a site generator's template
#: may write it: ``[text]({{< ref "first" >}})``, ``[text]({% link a.md %})``.
_DEST = re.compile(r"\]\(([^()\n]*)\)")
#: The site's own address in front of a path: Jekyll's ``{{ site.baseurl }}``, ``{{ site.url }}``.
_SITE_VAR = re.compile(r"\{\{-?\s*site\.(?:baseurl|url)\s*-?\}\}")
#: The templates that name a page, each with whether its path is looked up site-wide (then
#: a leading ``/`` is dropped, see :func:`_site_link_roles`): Hugo's ``{{< ref "first" >}}``
#: (``relref``, ``{{% %}}``, ``path=``), Jekyll's ``{% link a.md %}`` and ``{% post_url
#: 2024-01-05-name %}``; and a Liquid filter's route, kept as written: ``{{ "/about/" | relative_url }}``.
_TEMPLATE_PAGE = (
    (re.compile(r"\{\{[<%]\s*(?:rel)?ref\s+(?:path\s*=\s*)?[\"`]([^\"`\n<>]+)[\"`][^}\n]*\}\}"), True),
    (re.compile(r"\{%-?\s*(?:link|post_url)\s+([^\s%]+)\s*-?%\}"), True),
    (re.compile(r"\{\{-?\s*[\"']([^\"'\n<>]+)[\"']\s*\|[^}\n]*\}\}"), False),
)
#: A Sphinx (MyST) ``{doc}`` role: ``{doc}`install``` or ``{doc}`Installing <install>```.
_DOC_ROLE = re.compile(r"(?<![`\w])\{doc\}`([^`\s][^`\n]*)`")


def _template_page(dest: str) -> str | None:
    """The page a templated link destination names (with its ``#fragment``), or None."""
    d = _SITE_VAR.sub("", dest).strip()
    if "{" not in d:
        return d or None  # "{{ site.baseurl }}/about/": the route
    for rx, site_wide in _TEMPLATE_PAGE:
        m = rx.match(d)
        if m is not None and (m.end() == len(d) or d[m.end()] == "#"):
            path = m.group(1).strip()
            return (path.lstrip("/") if site_wide else path) + d[m.end():]
    return None


def _site_link_roles(src: str, out: list[str], forms: dict[tuple[int, str], str]) -> None:
    """Rewrite the links site generators expand (templated destinations and MyST ``{doc}``
    roles) in ``out`` as Markdown links.

    They are how those sites link pages (the site builds the URL), and CommonMark reads
    none as a link. A ``{doc}`` path keeps Sphinx's meaning: from the linking page's
    folder, or from the site's root when it starts with ``/``; so does a route after
    Jekyll's ``{{ site.baseurl }}``. A page a Hugo ``ref`` or a Jekyll ``link`` names is
    looked up as those tools do, from the page's folder and then anywhere in the site
    (whose root, such as Hugo's ``content/``, is rarely the KB's): without a leading ``/``,
    so that it is read as a note tool's path is. In code they are code still: a fence or
    a code span is never parsed for links.
    """
    templated = "{{" in src or "{%" in src
    role = "{doc}`" in src
    if not templated and not role:
        return

    line_no = 0

    def page(m: re.Match[str]) -> str:
        dest = m.group(1)
        found = _template_page(dest) if "{{" in dest or "{%" in dest else None
        if found is None:
            return m.group(0)
        forms[(line_no, found.partition("#")[0])] = "template"
        return f"](<{found}>)"

    def doc(m: re.Match[str]) -> str:
        title, path = _titled(m.group(1))
        if not path or "<" in path or ">" in path:
            return m.group(0)
        forms[(line_no, path.partition("#")[0])] = "doc-role"
        return f"[{title or path}](<{path}>)"

    for i, line in enumerate(out):
        line_no = i + 1
        if templated and "](" in line and "{" in line:
            line = _DEST.sub(page, line)
        if role and "{doc}`" in line:
            line = _DOC_ROLE.sub(doc, line)
        out[i] = line


def _unindent_bodies(src: str, out: list[str]) -> None:
    """Move each MkDocs block's body in ``out`` (``src``'s lines) out by its indent.

    CommonMark reads the four-space body of an admonition or a content tab as an indented
    code block: its links are no links, its lists no lists. The body is what the page shows
    as prose, so it is parsed unindented (nested blocks too, one level at a time). Only
    leading spaces go. Lines in a fence, and the front matter, are left alone.
    """
    if "!!!" not in src and "???" not in src and "===" not in src:
        return
    end = _front_matter_end(out, "---", "...")
    start = 0 if end is None else end + 1
    fences = _Fences()
    for i in range(start, len(out)):
        line = out[i]
        if fences.inside(line) or fences.opens(line):
            continue
        m = _INDENTED_BLOCK.match(line)
        if m is None:
            continue
        base = len(m.group(1))
        for j in range(i + 1, len(out)):
            body = out[j]
            if not body.strip():
                continue
            if body.startswith(" " * (base + 4)):
                out[j] = body[:base] + body[base + 4:]
            elif body[:base] == " " * base and body[base:base + 1] == "\t":
                out[j] = body[:base] + body[base + 1:]
            else:
                break


def _normalize(text: object) -> str:
    """Apply markdown-it's own normalisation up front.

    markdown-it rewrites CRLF/CR to LF and NUL to U+FFFD before computing line
    maps; doing the same here keeps our line slicing aligned with its maps.
    A leading BOM is dropped so front matter on line 1 is still recognised.
    """
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    elif not isinstance(text, str):
        text = str(text)
    text = _NEWLINES.sub("\n", text).replace("\0", "\ufffd")
    return text[1:] if text.startswith("\ufeff") else text


def _identity(url: str) -> str:
    """Keep link destinations as written; we never render HTML from these tokens."""
    return url


def _accept(url: str) -> bool:
    """Accept every scheme: the caller decides which targets matter, not the parser."""
    return True


@functools.cache
def _parser() -> MarkdownIt:
    """Build the shared parser once.

    URL normalisation and validation are switched off because markdown-it would
    percent-encode or drop targets (``pnk://``, ``kb://``, ``file:``) that the
    caller needs verbatim. The link and autolink rules are wrapped to remember
    where each link starts, which gives exact line numbers inside multi-line
    paragraphs.
    """
    md = MarkdownIt("commonmark").use(front_matter_plugin).enable("table")
    md.normalizeLink = _identity  # type: ignore[method-assign]
    md.normalizeLinkText = _identity  # type: ignore[method-assign]
    md.validateLink = _accept  # type: ignore[method-assign]
    md.inline.ruler.at("link", _tracked(_link_rule))
    md.inline.ruler.at("autolink", _tracked(_autolink_rule))
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.after("wikilink", "hashtag", _hashtag_rule)
    md.core.ruler.push("blockref", _block_refs)
    md.core.ruler.push("comments", _comments)
    return md


def _tracked(rule: Callable[[StateInline, bool], bool]) -> Callable[[StateInline, bool], bool]:
    """Wrap a link-producing inline rule to record the link's source offset and kind.

    The offset lets us compute the exact line; the consumed source tells an
    inline link (``...)``) from a resolved reference link (``...]``), which
    markdown-it otherwise turns into identical ``link_open`` tokens.
    """

    def tracked(state: StateInline, silent: bool) -> bool:
        start = state.pos
        first = len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            for tok in itertools.islice(state.tokens, first, None):
                if tok.type == "link_open":
                    tok.meta["src_pos"] = start
                    if tok.markup == "autolink":
                        kind = "autolink"
                    elif state.src[start : state.pos].endswith(")"):
                        kind = "inline"
                    else:
                        kind = "reference"
                    tok.meta["kind"] = kind
                    break
        return True

    return tracked


_WIKILINK_MAX = 1000  # longest inner text considered; bounds work on junk like "[[[[..."
_WIKILINK_BAD = frozenset("[]\n`")


def _wikilink_inner(src: str, start: int, pos_max: int) -> int:
    """End of a ``[[...]]`` whose inner text starts at ``start`` (the ``]]``), or -1."""
    close = src.find("]]", start, min(pos_max, start + _WIKILINK_MAX))
    if close <= start or not _WIKILINK_BAD.isdisjoint(src[start:close]):
        return -1
    return close


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """Inline rule for ``[[target#frag|label]]`` and the embed ``![[target]]``.

    Being an inline rule (not a regex over the file) is what keeps wikilinks in
    code spans and fences out of the link graph. An embed of a note counts as a
    link to it (Obsidian and Dendron transclude notes that way); an embed of an
    attachment (``![[diagram.png]]``) is an image, consumed as plain text.
    """
    src, pos = state.src, state.pos
    if src.startswith("[[", pos):
        start, embed = pos + 2, False
    elif src.startswith("![[", pos):
        start, embed = pos + 3, True
    else:
        return False
    close = _wikilink_inner(src, start, state.posMax)
    if close < 0:
        return False
    inner = src[start:close]
    dest, bar, label = inner.replace("\\|", "|").partition("|")
    dest = dest.strip()
    if not dest:
        return False
    if not silent:
        if embed and is_attachment(dest.partition("#")[0].strip()):
            tok = state.push("text", "", 0)
            tok.content = src[pos : close + 2]
        else:
            tok = state.push("wikilink", "", 0)
            tok.content = (label.strip() if bar else "") or dest
            tok.meta = {"target": dest, "src_pos": pos, "embed": embed,
                        "aliased": bool(bar and label.strip())}
    state.pos = close + 2
    return True


_TAG = re.compile(r"[\w/-]{1,200}")
_TAG_AFTER = frozenset(" \t\n(*_")


def _hashtag_rule(state: StateInline, silent: bool) -> bool:
    """Inline rule for ``#tag`` and ``#[[multi word]]``: Logseq page references, Obsidian tags.

    A tag starts the text or follows a space (``C#``, ``&#35;`` and ``/#anchor``
    are not tags), has a letter (``#123`` is an issue number, not a tag) and
    drops trailing ``/`` and ``-``. It resolves to a page of that name where one
    exists; elsewhere it is a plain tag, kept with the reason ``tag-only``.
    """
    src, pos = state.src, state.pos
    if src[pos] != "#" or (pos > 0 and src[pos - 1] not in _TAG_AFTER):
        return False
    if src.startswith("#[[", pos):
        close = _wikilink_inner(src, pos + 3, state.posMax)
        if close < 0:
            return False
        name, end = src[pos + 3 : close].strip(), close + 2
    else:
        m = _TAG.match(src, pos + 1, state.posMax)
        if m is None or _TAG.match(src, m.end(), state.posMax):
            return False  # none, or longer than any tag: text
        name = m.group(0).rstrip("/-")
        end = pos + 1 + len(name)
    if not name or not any(c.isalpha() for c in name):
        return False
    if not silent:
        tok = state.push("tag", "", 0)
        tok.content = src[pos:end]
        tok.meta = {"target": name, "src_pos": pos}
    state.pos = end
    return True


_BLOCK_REF = re.compile(r"\(\((" + BLOCK_ID + r")\)\)")
#: Logseq's block id, a property line under its block: "  id:: 6f1c2a0e-…".
_BLOCK_ID_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?id::[ \t]*(" + BLOCK_ID + r")[ \t]*$", re.MULTILINE)


def _block_refs(state: StateCore) -> None:
    """Core rule for Logseq's block reference ``((6f1c…))`` (and ``{{embed ((6f1c…))}}``).

    The block lives in the note that declares its id (``id:: 6f1c…``), so the
    reference links to that note (form ``block-ref``), as ``[[note#^block]]``
    links to its note in Obsidian. Not an inline rule: "(" ends no text run in
    markdown-it, so the text rule would swallow the reference first. The inline
    pass has already run, so a reference inside a code span (not a text token)
    stays text.
    """
    for tok in state.tokens:
        if tok.type != "inline" or not tok.children or "((" not in tok.content:
            continue
        out: list[Token] = []
        seek = 0
        for child in tok.children:
            text = child.content
            if child.type != "text" or "((" not in text:
                out.append(child)
                continue
            last = 0
            for m in _BLOCK_REF.finditer(text):
                if m.start() > last:
                    out.append(_text_token(text[last:m.start()]))
                at = tok.content.find(m.group(0), seek)
                seek = at + len(m.group(0)) if at >= 0 else seek
                ref = Token("wikilink", "", 0)
                ref.content = m.group(0)
                ref.meta = {"target": m.group(1), "src_pos": max(at, 0), "embed": False,
                            "aliased": False, "block": True}
                out.append(ref)
                last = m.end()
            if last == 0:
                out.append(child)
            elif last < len(text):
                out.append(_text_token(text[last:]))
        tok.children = out


_COMMENT = "%%"

#: A top-level code block inside an Obsidian comment is left out of the chunks: that is
#: where plugins keep their data, out of the reading view. A drawing of the Excalidraw
#: plugin is a ``%%``-hidden ``compressed-json`` block of some 50 kB, which as text made
#: ~230 chunks of base64 per drawing (five drawings: 1,140 junk chunks beside a 56-chunk
#: vault, and 43 s of embedding); the Kanban plugin keeps its settings the same way. The
#: note's other text, the drawing's labels among it, stays.
_IN_COMMENT = "comment"


def _comments(state: StateCore) -> None:
    """Core rule for Obsidian's comments: ``%% ... %%`` hides text, and a link in it is no link.

    A comment is how a note keeps a thought or a commented-out link out of its
    reading view ("%% later: [[Tax 2025]] %%"), and Obsidian leaves its links out
    of backlinks and the graph; as links they would be dangling noise in
    ``pnk doctor`` and false edges in the graph. The text stays indexed, as
    Obsidian's own search finds it; but a code block inside a comment is a
    plugin's data, not writing (:data:`_IN_COMMENT`). A comment may span paragraphs,
    so the state runs on across the document's tokens in order. Only marks in
    pairs open and close: a last, unclosed ``%%`` opens nothing. Obsidian would
    hide the rest of the note, but outside a vault a lone ``%%`` is text ("write
    %% for a literal percent sign" in a docs page), and taking it for a comment
    would drop every link and code example after it. Marks in a code span or
    fence are code (not text tokens) and open nothing. Runs after the inline
    pass and the block references: it marks link and code-block tokens
    (``meta[_IN_COMMENT]``), which :func:`_collect_links` and
    :meth:`_Structure.from_tokens` leave out.
    """
    if _COMMENT not in state.src:
        return
    marks = sum(child.content.count(_COMMENT) for tok in state.tokens if tok.type == "inline" and tok.children
                for child in tok.children if child.type == "text")
    usable = marks - marks % 2  # the marks that pair up
    seen, inside = 0, False
    for tok in state.tokens:
        if tok.type in ("fence", "code_block"):
            if inside:  # a plugin's data (:data:`_IN_COMMENT`)
                tok.meta = {**(tok.meta or {}), _IN_COMMENT: True}
            continue
        if tok.type != "inline" or not tok.children or not inside and _COMMENT not in tok.content:
            continue
        for child in tok.children:
            if child.type == "text":
                n = child.content.count(_COMMENT)
                inside ^= min(n, max(0, usable - seen)) % 2 == 1
                seen += n
            elif inside and child.type in ("link_open", "wikilink", "tag"):
                child.meta = {**(child.meta or {}), _IN_COMMENT: True}


def _text_token(content: str) -> Token:
    tok = Token("text", "", 0)
    tok.content = content
    return tok


def _block_ids(src: str) -> list[str]:
    """The Logseq block ids ``src`` declares (``id:: …`` lines), lower case, each once."""
    if "id::" not in src:
        return []
    return list(dict.fromkeys(m.group(1).lower() for m in _BLOCK_ID_LINE.finditer(src)))


# -- document structure ----------------------------------------------------------


@dataclass
class _Block:
    """A top-level block's line range (0-based, end exclusive) and how to split it."""

    start: int
    end: int
    kind: str  # "fence" | "list" | "table" | "code" | "text"
    markup: str = ""
    items: list[int] = field(default_factory=list)  # list item start lines


@dataclass
class _HeadingSpan:
    heading: Heading
    start: int  # 0-based first line of the heading
    end: int  # 0-based line after the heading (setext headings span two)


@dataclass
class _Section:
    path: tuple[str, ...]
    start: int  # 0-based first content line
    end: int  # exclusive
    blocks: list[_Block]


_BLOCK_KINDS = {
    "fence": "fence",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "code_block": "code",
}


@dataclass
class _Structure:
    """Top-level skeleton of the token stream: front matter, headings, blocks."""

    front_matter: Token | None
    body_start: int
    headings: list[Heading]
    heading_spans: list[_HeadingSpan]
    blocks: list[_Block]
    hidden: list[tuple[int, int]] = field(default_factory=list)  # line ranges left out (_IN_COMMENT)

    @classmethod
    def from_tokens(cls, tokens: Sequence[Token], n_lines: int) -> _Structure:
        """Only level-0 tokens matter: a heading inside a list or quote is content."""
        front_matter: Token | None = None
        spans: list[_HeadingSpan] = []
        blocks: list[_Block] = []
        hidden: list[tuple[int, int]] = []
        current_list: _Block | None = None
        for i, tok in enumerate(tokens):
            if tok.map is None:
                continue
            a, b = max(0, tok.map[0]), min(n_lines, tok.map[1])
            if tok.level == 1 and tok.type == "list_item_open" and current_list is not None:
                current_list.items.append(a)
                continue
            if tok.level != 0 or tok.nesting < 0:
                continue
            if tok.type == "front_matter":
                if a == 0 and front_matter is None:
                    front_matter = tok
                continue
            if tok.type == "heading_open":
                nxt = tokens[i + 1] if i + 1 < len(tokens) else None
                text = _plain_text(nxt.children or []) if nxt and nxt.type == "inline" else ""
                level = int(tok.tag[1:]) if tok.tag[1:].isdigit() else 1
                spans.append(_HeadingSpan(Heading(level, text, a + 1), a, max(b, a + 1)))
                current_list = None
                continue
            if (tok.meta or {}).get(_IN_COMMENT):
                hidden.append((a, max(b, a + 1)))
                continue
            blk = _Block(a, max(b, a + 1), _BLOCK_KINDS.get(tok.type, "text"), tok.markup)
            blocks.append(blk)
            current_list = blk if blk.kind == "list" else None
        body_start = min(front_matter.map[1], n_lines) if front_matter and front_matter.map else 0
        blocks.sort(key=lambda blk: blk.start)
        return cls(front_matter, body_start, [s.heading for s in spans], spans, blocks, hidden)

    def sections(self, n_lines: int) -> list[_Section]:
        """Split the body at every heading, tracking the heading path stack."""
        bounds: list[tuple[tuple[str, ...], int, int]] = []
        first = self.heading_spans[0].start if self.heading_spans else n_lines
        bounds.append(((), self.body_start, max(first, self.body_start)))
        stack: list[tuple[int, str]] = []
        for k, span in enumerate(self.heading_spans):
            while stack and stack[-1][0] >= span.heading.level:
                stack.pop()
            stack.append((span.heading.level, span.heading.text))
            nxt = self.heading_spans[k + 1].start if k + 1 < len(self.heading_spans) else n_lines
            bounds.append((tuple(t for _, t in stack), span.end, max(nxt, span.end)))
        # A hidden block cuts its section in two, under the same headings; its lines are in neither.
        for a, b in self.hidden:
            bounds = [part for path, start, end in bounds for part in (
                [(path, start, a), (path, b, end)] if start <= a < end else [(path, start, end)])]
        starts = [b.start for b in self.blocks]
        sections = []
        for path, start, end in bounds:
            lo, hi = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
            sections.append(_Section(path, start, end, self.blocks[lo:hi]))
        return sections


def _plain_text(children: Sequence[Token]) -> str:
    """Reader-visible text of inline tokens: no markup, links reduced to their text,
    whitespace collapsed (:func:`_plain_spans` without the spans)."""
    return " ".join(_plain_spans(children)[0].split())


# -- page properties and property links -----------------------------------------------

_PROPERTY = re.compile(r"^\s*(?:[-*]\s+)?([A-Za-z][\w-]{0,63})::(?:\s+(.*?))?\s*$")
_LIST_PROPERTIES = ("tags", "alias", "aliases")
_MAX_PROPERTY_LINKS = 1000


def _comma_list(value: str) -> list[str]:
    """A property's value as its comma-separated items: "meetings, ways of working"."""
    return [v.strip() for v in value.split(",") if v.strip()]


def _page_properties(lines: list[str], structure: _Structure
                     ) -> tuple[dict[str, Any], list[Link], set[int]]:
    """Logseq's page properties (``key:: value`` lines of the first block) as front matter.

    Logseq keeps a page's metadata in its first block instead of YAML, so
    ``title::`` names the page, ``alias::`` gives it other names and ``tags::``
    tags it; read as front matter, they reach the title, the tags and the
    link resolver like any other front matter. Each bare ``tags::`` value is a
    page reference too (a ``property`` link); values written ``[[x]]`` or
    ``#x`` are found by the inline parser already. The third value holds the
    lines of ``alias::``: a ``[[name]]`` there names this page, it links nowhere.
    """
    first = next((b for b in structure.blocks if b.start >= structure.body_start), None)
    heading = structure.heading_spans[0].start if structure.heading_spans else len(lines)
    if first is None or first.kind not in ("text", "list") or first.start > heading:
        return {}, [], set()  # page properties come first, before any heading
    props: dict[str, Any] = {}
    links: list[Link] = []
    own: set[int] = set()
    for n in range(first.start, first.end):
        m = _PROPERTY.match(lines[n])
        if m is None:
            break
        key, value = m.group(1).lower(), (m.group(2) or "").strip()
        if key in ("alias", "aliases"):
            own.add(n + 1)
        if key in _LIST_PROPERTIES:
            parts = _comma_list(value)
            props[key] = [page_ref(v) for v in parts if page_ref(v)]
            if key == "tags":
                links += [Link(target=v, label=v, kind="property", line=n + 1, fragment="", tag=True)
                          for v in parts if not v.startswith(("[[", "#")) and page_ref(v)]
        else:
            props[key] = value
    return props, links[:_MAX_PROPERTY_LINKS], own


#: A Notion property line: "Decided by: Lotte Vanhaecke", "Tags: meetings, ways of working".
_NOTION_PROPERTY = re.compile(r"^([^\W_][^:\n]{0,39}?):[ \t]+(\S.*?)\s*$")
#: A relation in a property's value: the page's title, then its relative path in brackets,
#: "Vireo tea tin redesign (../Projects%2088a9…/Vireo%20tea%20tin%20redesign%201af7….md)".
_NOTION_RELATION = re.compile(r"([^(),][^()]*?)\s\(([^()\s]+\.md)\)")


def _notion_properties(lines: list[str], structure: _Structure) -> tuple[dict[str, Any], list[Link]]:
    """A Notion page's properties, which its export writes as ``Key: value`` lines under the title.

    Notion keeps a database page's fields (who decided, the status, the date, the
    client) in properties, and its Markdown export writes them as the paragraph
    right under the page's ``# Title``, one ``Key: value`` per line. Read as front
    matter (keys in lower case, as Logseq's are; ``tags`` split at commas), they
    reach the tags and the reader like any other note's properties. Only when
    every line of that paragraph is one: otherwise it is the page's first text. A
    relation's value names each related page with its path in brackets, not as a
    Markdown link: each is a link of form ``property``.
    """
    spans = structure.heading_spans
    if not spans or spans[0].heading.level != 1 or any(lines[n].strip() for n in range(spans[0].start)):
        return {}, []
    first = next((b for b in structure.blocks if b.start >= spans[0].end), None)
    if first is None or first.kind != "text" or len(spans) > 1 and first.start > spans[1].start:
        return {}, []
    props: dict[str, Any] = {}
    links: list[Link] = []
    for n in range(first.start, first.end):
        m = _NOTION_PROPERTY.match(lines[n])
        if m is None:
            return {}, []
        key, value = m.group(1).strip().lower(), m.group(2)
        props[key] = _comma_list(value) if key == "tags" else value
        links += [Link(target=unquote(r.group(2)), label=r.group(1).strip(), kind="property", line=n + 1,
                       fragment="", context=" ".join(content_words(key)))
                  for r in _NOTION_RELATION.finditer(value)]
    return props, links[:_MAX_PROPERTY_LINKS]


_FM_LINK = re.compile(r"^\s*\[\[([^\[\]\n`]{1,1000})\]\]\s*$")


def _front_matter_links(front_matter: dict[str, Any], raw: str) -> list[Link]:
    """Wikilinks written as front-matter values (``related: "[[Other note]]"``): Obsidian properties.

    Only a value (or list item) that is exactly one wikilink counts; its line is
    found in the raw front matter (1 for the opening ``---``).
    """
    links: list[Link] = []
    values: list[str] = []
    for key, value in front_matter.items():
        if key in ("title", "alias", "aliases"):
            continue  # names of this note, not links from it
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, list):
            values.extend(v for v in value if isinstance(v, str))
    for value in values[:_MAX_PROPERTY_LINKS]:
        m = _FM_LINK.match(value)
        if m is None:
            continue
        inner = m.group(1).replace("\\|", "|")
        dest, bar, label = inner.partition("|")
        path, sharp, frag = dest.strip().partition("#")
        if not path.strip() or is_attachment(path.strip()):
            continue
        at = raw.find(m.group(0).strip())
        links.append(Link(target=path.strip(), label=label.strip() if bar else dest.strip(),
                          kind="property", line=raw.count("\n", 0, max(at, 0)) + 2,
                          fragment="#" + frag.strip() if sharp else "",
                          aliased=bool(bar and label.strip())))
    return links


# -- front matter ----------------------------------------------------------------


class _TooComplex(Exception):
    """Front matter expands beyond what metadata plausibly needs (alias bombs, cycles)."""


_MAX_FM_NODES = 100_000
_MAX_FM_DEPTH = 64


def _load_front_matter(content: str) -> tuple[dict[str, Any], str | None]:
    """Parse YAML front matter into plain JSON-like data, or explain why not.

    Error lines are file lines (YAML line + 1 for the opening ``---``) so a
    user can jump straight to the mistake.
    """
    if not content.strip():
        return {}, None
    try:
        data = YAML(typ="safe", pure=True).load(content)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark is not None else 2
        problem = exc.problem or exc.context or "invalid YAML"
        return {}, f"line {line}: {problem}"
    except Exception as exc:  # ReaderError, RecursionError, ...: still user input
        pos = getattr(exc, "position", None)
        line = content.count("\n", 0, pos) + 2 if isinstance(pos, int) else 2
        reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        return {}, f"line {line}: {reason}"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, f"line 2: front matter must be a mapping, not {_yaml_kind(data)}"
    return _plain_front_matter(data)


def _plain_front_matter(data: dict[Any, Any]) -> tuple[dict[str, Any], str | None]:
    """Parsed front matter (YAML's or TOML's) as plain JSON-like data, or why it is refused."""
    try:
        return _to_plain(data, 0, [0]), None
    except (_TooComplex, RecursionError):
        return {}, "line 2: front matter is too deeply nested or too large"


def _front_matter_end(lines: list[str], fence: str, *closers: str) -> int | None:
    """The line closing a front matter opened by ``fence`` on the first line (``+++``: Hugo's
    TOML; ``---``: YAML, which may also close with ``...``), or None when there is none."""
    if not lines or lines[0].rstrip() != fence:
        return None
    ends = (fence, *closers)
    return next((i for i in range(1, len(lines)) if lines[i].rstrip() in ends), None)


_TOML_LINE = re.compile(r"at line (\d+)")


def _load_toml_front_matter(content: str) -> tuple[dict[str, Any], str | None]:
    """Parse TOML front matter (Hugo's ``+++``) as :func:`_load_front_matter` parses YAML.

    Dates and times become ISO strings, as YAML's do; an error names the file line.
    """
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        m = _TOML_LINE.search(str(exc))
        line = int(m.group(1)) + 1 if m else 2
        return {}, f"line {line}: {str(exc).split(' (at ')[0]}"
    return _plain_front_matter(data)


def _yaml_kind(value: object) -> str:
    """Name a YAML value's kind the way a user would."""
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "a scalar" if isinstance(value, int | float | bool) else type(value).__name__


def _to_plain(value: Any, depth: int, nodes: list[int]) -> Any:
    """Convert YAML values to dict/list/str/int/float/bool/None for JSON storage.

    Dates become ISO strings, binary becomes its base64 text, sets become
    lists, and non-string keys become strings. ``nodes`` bounds the expansion
    of shared aliases, ``depth`` catches self-referencing ones.
    """
    nodes[0] += 1
    if nodes[0] > _MAX_FM_NODES or depth > _MAX_FM_DEPTH:
        raise _TooComplex
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, _dt.date | _dt.datetime | _dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {_plain_key(k): _to_plain(v, depth + 1, nodes) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return [_to_plain(v, depth + 1, nodes) for v in sorted(value, key=str)]
    if isinstance(value, list | tuple):
        return [_to_plain(v, depth + 1, nodes) for v in value]
    return str(value)


def _plain_key(key: Any) -> str:
    """Mapping keys as strings, spelled the way YAML wrote them where possible."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, _dt.date | _dt.datetime):
        return key.isoformat()
    return str(key)


# -- chunking --------------------------------------------------------------------

_APPROX_TOKEN = re.compile(r"\w{1,10}|[^\w\s]")


def _approx_count_tokens(texts: list[str]) -> list[int]:
    """Estimate subword tokens when no tokenizer is given.

    Words and punctuation marks, times 4/3 for subword splits; words longer
    than 10 characters count once per 10 so base64 blobs and minified code
    still get split.
    """
    return [len(_APPROX_TOKEN.findall(t)) * 4 // 3 for t in texts]


_SENTENCE_END = re.compile(r"[.!?。！？][\"'”’)\]*_]*\s+")
_PARAGRAPH_GAP = re.compile(r"\n[ \t]*\n\s*")
_WHITESPACE = re.compile(r"\s+")
_NEWLINE = re.compile(r"\n")


@dataclass(frozen=True)
class _Wrap:
    """A fence to re-open and close around each piece of a split code block."""

    open: str
    close: str
    cost: int  # tokens the two fence lines add to a piece


@dataclass(frozen=True)
class _Piece:
    text: str
    start: int  # offset of the first source character covered
    end: int  # offset past the last source character covered
    verbatim: bool = True  # text is src[start:end]; False for re-fenced code pieces


# A level maps a source range to cut offsets (first = start, last = end).
_Level = Callable[[int, int], list[int]]
_OnOversize = Callable[[int, int], list[_Piece]]


class _Chunker:
    """Pack sections into chunks that fit the token budget.

    Cheapest split first: a whole section, then runs of top-level blocks, then
    list items, paragraphs, sentences, lines, words and finally characters.
    Packing is greedy on per-unit counts, corrected by a per-join overhead fitted
    from the whole's count (tokenizers add [CLS]/[SEP] per string, BPE merges
    across joins), and every packed chunk is re-counted: only verified chunks
    are emitted, so the budget holds for any counter.
    """

    def __init__(self, src: str, lines: list[str], budget: int, counter: CountTokens) -> None:
        self.src = src
        self.lines = lines
        self.budget = budget
        self.counter = counter
        starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]
        starts[-1] = len(src)
        self.starts = starts

    # -- helpers

    def count(self, texts: list[str]) -> list[int]:
        """Call the counter once for a batch and check it kept its contract."""
        if not texts:
            return []
        out = list(self.counter(texts))
        if len(out) != len(texts):
            raise ValueError(f"count_tokens returned {len(out)} counts for {len(texts)} texts")
        return [int(c) for c in out]

    def off(self, line: int) -> int:
        """Offset of the start of 0-based ``line`` (clamped to the text)."""
        return self.starts[min(max(line, 0), len(self.starts) - 1)]

    def line_of(self, offset: int) -> int:
        """1-based line containing ``offset``."""
        return max(1, bisect.bisect_right(self.starts, offset, hi=len(self.starts) - 1))

    def render(self, a: int, b: int, wrap: _Wrap | None) -> _Piece | None:
        """The chunk text for source range [a, b), or None if it is only whitespace (or the
        ``%%`` marks left of a comment whose code block was left out)."""
        s = self.src[a:b]
        body = s.strip()
        if not body or not body.replace(_COMMENT, "").strip():
            return None
        lead = len(s) - len(s.lstrip())
        start, end = a + lead, a + lead + len(body)
        if wrap is None:
            return _Piece(body, start, end)
        # Keep the first code line's indentation: inside a fence it is content.
        inner = s[s.rfind("\n", 0, lead) + 1 : len(s.rstrip())]
        return _Piece(f"{wrap.open}\n{inner}\n{wrap.close}", start, end, verbatim=False)

    def blank(self, a_line: int, b_line: int) -> bool:
        """Whether lines [a_line, b_line) hold only whitespace (safe to leave out)."""
        return not self.src[self.off(a_line) : self.off(b_line)].strip()

    # -- sections and blocks

    def chunk(self, sections: list[_Section]) -> list[Chunk]:
        """Chunk every section; whole sections are counted in one batch."""
        rendered = [self.render(self.off(s.start), self.off(s.end), None) for s in sections]
        todo = [(s, p) for s, p in zip(sections, rendered, strict=True) if p is not None]
        counts = self.count([p.text for _, p in todo])
        chunks: list[Chunk] = []
        for (section, piece), n in zip(todo, counts, strict=True):
            pieces = [piece] if n <= self.budget else self.split_section(section, n)
            for p in pieces:
                chunks.append(
                    Chunk(
                        ordinal=len(chunks),
                        heading_path=section.path,
                        text=p.text,
                        start_line=self.line_of(p.start),
                        end_line=self.line_of(max(p.start, p.end - 1)),
                    )
                )
        return chunks

    def units(self, section: _Section) -> list[_Block]:
        """The section's blocks plus any non-blank text between them.

        Reference definitions and similar produce no tokens; keeping the gaps
        as units means no source text is ever dropped.
        """
        units: list[_Block] = []
        cursor = section.start
        for blk in section.blocks:
            s, e = max(blk.start, cursor), min(blk.end, section.end)
            if e <= s:
                continue
            if s > cursor and not self.blank(cursor, s):
                units.append(_Block(cursor, s, "text"))
            units.append(blk if (s, e) == (blk.start, blk.end) else replace(blk, start=s, end=e))
            cursor = e
        if cursor < section.end and not self.blank(cursor, section.end):
            units.append(_Block(cursor, section.end, "text"))
        return units

    def split_section(self, section: _Section, whole: int) -> list[_Piece]:
        """Pack an oversized section's blocks, splitting only blocks that alone overflow."""
        units = self.units(section)
        if not units:
            return []
        if len(units) == 1:
            return self.merge(self.split_block(units[0], whole))
        cuts = [self.off(u.start) for u in units] + [self.off(units[-1].end)]
        return self.merge(self.pack(cuts, whole, lambda i, n: self.split_block(units[i], n), None))

    def merge(self, pieces: list[_Piece]) -> list[_Piece]:
        """Re-join neighbouring pieces that fit together.

        Splitting an oversized block leaves a short tail that packing at the
        block level could not see; a lone sentence fragment embeds poorly, so
        it is merged with what follows when the verified count allows.
        Re-fenced code pieces are never merged (their text is not a slice).
        """
        if len(pieces) < 2:
            return pieces
        counts = self.count([p.text for p in pieces])
        groups: list[tuple[int, int]] = []
        i = 0
        while i < len(pieces):
            j, total = i + 1, counts[i]
            if pieces[i].verbatim:
                while j < len(pieces) and pieces[j].verbatim and total + counts[j] <= self.budget:
                    total, j = total + counts[j], j + 1
            groups.append((i, j))
            i = j
        joined = {
            g: self.render(pieces[g[0]].start, pieces[g[1] - 1].end, None)
            for g in groups
            if g[1] - g[0] > 1
        }
        tried = [(g, p) for g, p in joined.items() if p is not None]
        fits = {
            g: p
            for (g, p), n in zip(tried, self.count([p.text for _, p in tried]), strict=True)
            if n <= self.budget
        }
        out: list[_Piece] = []
        for g in groups:
            out.extend([fits[g]] if g in fits else pieces[g[0] : g[1]])
        return out

    def split_block(self, blk: _Block, whole: int | None) -> list[_Piece]:
        """Split one oversized block along the boundaries that suit its kind."""
        a, b = self.off(blk.start), self.off(blk.end)
        if blk.kind == "fence":
            return self.split_fence(blk)
        levels: list[_Level]
        if blk.kind == "list":
            levels = [self.items_level(blk.items), self.sentences, self.line_cuts, self.words]
        elif blk.kind in ("table", "code"):
            levels = [self.line_cuts, self.words]
        else:
            levels = [self.paragraphs, self.sentences, self.line_cuts, self.words]
        return self.split(a, b, levels, None, whole)

    def split_fence(self, blk: _Block) -> list[_Piece]:
        """Split a code fence at line boundaries, re-fencing every piece.

        Each piece stays valid Markdown with the same info string, so it still
        reads (and embeds) as code. If the budget cannot even hold the two
        fence lines, fall back to splitting the raw lines.
        """
        open_line = self.lines[blk.start]
        markup = blk.markup or "```"
        last = self.lines[blk.end - 1] if blk.end - 1 > blk.start else ""
        closed = blk.end - 1 > blk.start and _is_closing_fence(last, markup)
        close_line = last.strip() if closed else markup
        wrap_text = f"{open_line.strip()}\n{close_line}"
        cost = self.count([wrap_text])[0]
        if cost >= self.budget:
            return self.split(
                self.off(blk.start), self.off(blk.end), [self.line_cuts, self.words], None, None
            )
        wrap = _Wrap(open_line.strip(), close_line, cost)
        body_end = blk.end - 1 if closed else blk.end
        pieces = self.split(
            self.off(blk.start + 1), self.off(body_end), [self.line_cuts, self.words], wrap, None
        )
        if pieces:  # the fence lines belong to the first and last piece
            pieces[0] = replace(pieces[0], start=self.off(blk.start))
            if closed:
                pieces[-1] = replace(pieces[-1], end=self.off(blk.end - 1) + len(last))
        return pieces

    # -- levels

    def items_level(self, items: list[int]) -> _Level:
        def cuts(a: int, b: int) -> list[int]:
            return _cuts(a, b, (self.off(line) for line in items))

        return cuts

    def paragraphs(self, a: int, b: int) -> list[int]:
        return _cuts(a, b, (m.end() for m in _PARAGRAPH_GAP.finditer(self.src, a, b)))

    def sentences(self, a: int, b: int) -> list[int]:
        return _cuts(a, b, (m.end() for m in _SENTENCE_END.finditer(self.src, a, b)))

    def line_cuts(self, a: int, b: int) -> list[int]:
        return _cuts(a, b, (m.end() for m in _NEWLINE.finditer(self.src, a, b)))

    def words(self, a: int, b: int) -> list[int]:
        return _cuts(a, b, (m.end() for m in _WHITESPACE.finditer(self.src, a, b)))

    # -- the packer

    def split(
        self, a: int, b: int, levels: list[_Level], wrap: _Wrap | None, whole: int | None
    ) -> list[_Piece]:
        """Split [a, b) with the first level that yields several units."""
        for depth, level in enumerate(levels):
            cuts = level(a, b)
            if len(cuts) > 2:
                rest = levels[depth + 1 :]
                break
        else:
            return self.hard_split(a, b, wrap, whole)

        def deeper(i: int, n: int) -> list[_Piece]:
            return self.split(cuts[i], cuts[i + 1], rest, wrap, n)

        return self.pack(cuts, whole, deeper, wrap)

    def pack(
        self, cuts: list[int], whole: int | None, on_oversize: _OnOversize, wrap: _Wrap | None
    ) -> list[_Piece]:
        """Greedily pack consecutive units [cuts[i], cuts[i+1]) into verified chunks."""
        n = len(cuts) - 1
        texts = [self.src[cuts[i] : cuts[i + 1]].strip() for i in range(n)]
        asked = [t for t in texts if t]
        extra: list[str] = []
        if whole is None:
            full = self.render(cuts[0], cuts[-1], wrap)
            if full is None:
                return []
            extra.append(full.text)
        got = self.count(asked + extra)
        if whole is None:
            whole = got[-1]
        it = iter(got)
        counts = [next(it) if t else 0 for t in texts]
        wrap_cost = wrap.cost if wrap else 0
        nonempty = len(asked)
        # Per-join correction: positive when each string carries fixed overhead
        # (special tokens), negative when joins add tokens.
        join = (sum(counts) + wrap_cost - whole) / (nonempty - 1) if nonempty > 1 else 0.0

        total = [0, *itertools.accumulate(counts)]
        filled = [0, *itertools.accumulate(1 if c else 0 for c in counts)]

        def estimate(i: int, j: int) -> float:
            k = filled[j] - filled[i]
            return wrap_cost + total[j] - total[i] - join * max(k - 1, 0)

        def greedy(i: int, j: int, target: float) -> list[tuple[int, int]]:
            groups = []
            while i < j:
                end = i + 1
                while end < j and estimate(i, end + 1) <= target:
                    end += 1
                groups.append((i, end))
                i = end
            return groups

        results: dict[int, list[_Piece]] = {}
        pending = greedy(0, n, self.budget)
        while pending:
            rendered = [(g, self.render(cuts[g[0]], cuts[g[1]], wrap)) for g in pending]
            rendered = [(g, p) for g, p in rendered if p is not None]
            measured = self.count([p.text for _, p in rendered])
            pending = []
            for ((i, j), piece), actual in zip(rendered, measured, strict=True):
                if actual <= self.budget:
                    results[i] = [piece]
                elif j - i == 1:
                    results[i] = on_oversize(i, actual)
                else:
                    target = math.floor(estimate(i, j) * self.budget / actual)
                    regrouped = greedy(i, j, target)
                    if len(regrouped) < 2:
                        mid = (i + j) // 2
                        regrouped = [(i, mid), (mid, j)]
                    pending.extend(regrouped)
        return [p for i in sorted(results) for p in results[i]]

    def hard_split(self, a: int, b: int, wrap: _Wrap | None, whole: int | None) -> list[_Piece]:
        """Last resort for a run without whitespace: cut at character positions."""
        full = self.render(a, b, wrap)
        if full is None:
            return []
        if whole is None:
            whole = self.count([full.text])[0]
        if whole <= self.budget:
            return [full]
        room = max(1, self.budget - (wrap.cost if wrap else 0))
        parts = min(b - a, max(2, math.ceil(whole * 1.15 / room)))
        edges = [a + (b - a) * k // parts for k in range(parts + 1)]
        pending = [(edges[k], edges[k + 1]) for k in range(parts) if edges[k] < edges[k + 1]]
        done: list[tuple[int, _Piece]] = []
        while pending:
            rendered = [(r, self.render(r[0], r[1], wrap)) for r in pending]
            rendered = [(r, p) for r, p in rendered if p is not None]
            measured = self.count([p.text for _, p in rendered])
            pending = []
            for ((x, y), piece), actual in zip(rendered, measured, strict=True):
                if actual <= self.budget or y - x <= 1:
                    done.append((x, piece))  # a lone character is kept even if over budget
                else:
                    mid = (x + y) // 2
                    pending += [(x, mid), (mid, y)]
        return [p for _, p in sorted(done, key=lambda d: d[0])]


def _cuts(a: int, b: int, points: Any) -> list[int]:
    """Strictly increasing cut offsets from ``a`` to ``b`` through interior ``points``."""
    out = [a]
    for p in points:
        if out[-1] < p < b:
            out.append(p)
    out.append(b)
    return out


def _is_closing_fence(line: str, markup: str) -> bool:
    """Whether ``line`` closes a fence opened with ``markup`` (CommonMark rules)."""
    stripped = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return (
        indent < 4
        and len(stripped) >= len(markup)
        and bool(stripped)
        and set(stripped) == {markup[0]}
    )


# -- links -----------------------------------------------------------------------


class _LineCounter:
    """Map offsets in an inline token's source to file lines, incrementally.

    Links come in source order, so counting newlines from the previous link
    keeps a huge paragraph with many links linear rather than quadratic.
    """

    def __init__(self, content: str, first_line: int) -> None:
        self.content = content
        self.first_line = first_line  # 0-based line of the token's first line
        self.cursor = 0
        self.newlines = 0

    def __call__(self, pos: int) -> int:
        pos = min(max(pos, 0), len(self.content))
        if pos < self.cursor:
            self.cursor, self.newlines = 0, 0
        self.newlines += self.content.count("\n", self.cursor, pos)
        self.cursor = pos
        return self.first_line + self.newlines + 1


_SENTENCE_GAP = re.compile(r"(?<=[.!?。！？])\s+")  # a semicolon joins clauses of one thought
CONTEXT_WORDS = 12  # content words kept on each side of a link
#: A link whose own sentence gives fewer content words than this also reads the one before.
SHORT_CONTEXT = 3


class _Contexts:
    """The content words around each link of one inline block, within its sentence.

    The block is a paragraph, a list item's paragraph, a table cell or a
    heading, so a list item or a cell is its own context. Sentence gaps are
    found once per block, so a paragraph with many links stays linear.
    """

    def __init__(self, children: Sequence[Token]) -> None:
        self.text, self.spans = _plain_spans(children)
        gaps = [(m.start(), m.end()) for m in _SENTENCE_GAP.finditer(self.text)]
        self.gap_starts = [g[0] for g in gaps]
        self.gap_ends = [g[1] for g in gaps]

    def around(self, index: int) -> str:
        """Words around the link token at ``index``: its own words are left out (they
        are its label); stop words, bare numbers and single letters are dropped, at
        most :data:`CONTEXT_WORDS` on each side, nearest first. A link whose own
        sentence gives fewer than :data:`SHORT_CONTEXT` words reads the sentence
        before it too."""
        start, end = self.spans.get(index, (0, 0))
        sentence = bisect.bisect_right(self.gap_ends, start)  # the link's, counted from 0
        lo = self.gap_ends[sentence - 1] if sentence else 0
        k = bisect.bisect_left(self.gap_starts, end)
        hi = self.gap_starts[k] if k < len(self.gap_starts) else len(self.text)
        left = content_words(self.text[max(lo, start - 600) : start])[-CONTEXT_WORDS:]
        right = content_words(self.text[end : max(end, min(hi, end + 600))])[:CONTEXT_WORDS]
        if sentence and len(left) + len(right) < SHORT_CONTEXT:
            # "I journal to stay mindful. I wrote about it [here]." says why it links in
            # the sentence before: a sentence that says next to nothing borrows that one.
            before = self.gap_ends[sentence - 2] if sentence >= 2 else 0
            left = content_words(self.text[max(before, start - 600) : start])[-CONTEXT_WORDS:]
        return " ".join(dict.fromkeys(left + right))


def _plain_spans(children: Sequence[Token]) -> tuple[str, dict[int, tuple[int, int]]]:
    """Reader-visible text of inline tokens, and where each link in it starts and ends.

    The spans are keyed by the index of the ``link_open``, ``wikilink`` or
    ``tag`` token; a link's span covers its label.
    """
    parts: list[str] = []
    size = 0
    spans: dict[int, tuple[int, int]] = {}
    open_at: list[tuple[int, int]] = []
    for i, tok in enumerate(children):
        piece = ""
        if tok.type in ("text", "text_special", "code_inline"):
            piece = tok.content
        elif tok.type in ("wikilink", "tag"):
            spans[i] = (size, size + len(tok.content))
            piece = tok.content
        elif tok.type in ("softbreak", "hardbreak"):
            piece = " "
        elif tok.type == "image":
            piece = _plain_text(tok.children or [])
        elif tok.type == "link_open":
            open_at.append((i, size))
        elif tok.type == "link_close" and open_at:
            j, begin = open_at.pop()
            spans[j] = (begin, size)
        if piece:
            parts.append(piece)
            size += len(piece)
    return "".join(parts), spans


def _collect_links(tokens: Sequence[Token]) -> list[Link]:
    """Every link in document order, from inline tokens only.

    Walking tokens (not text) is what leaves code spans and fences out. Images
    are skipped, including links inside their alt text, and so is a link in an
    Obsidian comment (:func:`_comments`).
    """
    links: list[Link] = []
    last_line = 0
    for tok in tokens:
        if tok.map is not None:
            last_line = tok.map[0]
        if tok.type != "inline" or not tok.children:
            continue
        line_at = _LineCounter(tok.content, tok.map[0] if tok.map is not None else last_line)
        children = tok.children
        contexts: _Contexts | None = None
        for i, child in enumerate(children):
            if child.type not in ("link_open", "wikilink", "tag") or (child.meta or {}).get(_IN_COMMENT):
                continue
            if contexts is None:
                contexts = _Contexts(children)
            context = contexts.around(i)
            line = line_at(int(child.meta.get("src_pos", 0)))
            if child.type == "link_open":
                depth, j = 1, i + 1
                while j < len(children):
                    if children[j].type == "link_open":
                        depth += 1
                    elif children[j].type == "link_close":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                href = str(child.attrs.get("href", ""))
                path, sharp, frag = href.partition("#")
                links.append(Link(
                    target=unquote(path), label=_plain_text(children[i + 1 : j]),
                    kind=str(child.meta.get("kind", "inline")), line=line,
                    fragment="#" + unquote(frag) if sharp else "", context=context,
                ))
            elif child.type == "wikilink":
                path, sharp, frag = str(child.meta.get("target", "")).partition("#")
                links.append(Link(
                    target=path.strip(), label=child.content,
                    kind="blockref" if child.meta.get("block") else
                    "embed" if child.meta.get("embed") else "wikilink", line=line,
                    fragment="#" + frag.strip() if sharp else "",
                    aliased=bool(child.meta.get("aliased")), context=context,
                ))
            else:
                links.append(Link(target=str(child.meta.get("target", "")), label=child.content,
                                  kind="tag", line=line, fragment="", context=context))
    return links
