"""Reading a document or one of its sections, for ``KB.read`` (and so ``pinakes_read``).

Reading is the one verb that touches document files at query time, so it is
where containment is enforced: only a document that is *in the index* is read,
from its indexed KB-relative path, and only when that file's real path is still
inside the KB root. A reference is never turned into a path by itself, so a
path-like id (``../../etc/passwd``), an absolute path or a symlink swapped in
after the last sync cannot make Pinakes read a file outside the KB.

Sections are found by parsing the file as it is now with the same Markdown
parser sync uses, so a section read is exact even when the file changed since
the last sync (the result says ``stale`` then).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import DocumentNotFound, SectionNotFound
from .markdown import parse_markdown

if TYPE_CHECKING:
    from .kb import KB

SEPARATOR = " > "


@dataclass(frozen=True)
class Section:
    """One heading's span: from its heading line to the next heading of the same or a higher level."""

    path: tuple[str, ...]
    start_line: int  # 1-based, the heading line itself
    end_line: int  # 1-based, inclusive


def split_heading_path(section: str | Sequence[str]) -> tuple[str, ...]:
    """``"Intro > Background"`` or ``["Intro", "Background"]`` as a tuple of heading texts."""
    parts = section.split(">") if isinstance(section, str) else [str(p) for p in section]
    return tuple(p.strip() for p in parts if p.strip())


def _norm(parts: Sequence[str]) -> tuple[str, ...]:
    return tuple(re.sub(r"\s+", " ", p).strip().casefold() for p in parts)


def sections_of(text: str) -> list[Section]:
    """Every heading of ``text`` as a :class:`Section`, in document order."""
    parsed = parse_markdown(text)
    n_lines = len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    heads = parsed.headings
    for i, h in enumerate(heads):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.text))
        end = n_lines
        for later in heads[i + 1 :]:
            if later.level <= h.level:
                end = later.line - 1  # a heading's first line (a setext heading's text)
                break
        out.append(Section(tuple(t for _, t in stack), h.line, max(h.line, end)))
    return out


def find_section(sections: list[Section], wanted: tuple[str, ...], display: str) -> Section:
    """The section whose heading path is ``wanted``, or ends with it when that is unique."""
    if not wanted:
        raise SectionNotFound("empty section: give a heading path such as 'Intro > Background'")
    key = _norm(wanted)
    exact = [s for s in sections if _norm(s.path) == key]
    if len(exact) == 1:
        return exact[0]
    matches = exact or [s for s in sections if _norm(s.path)[-len(key) :] == key]
    if len(matches) == 1:
        return matches[0]
    if not matches and len(key) == 1:
        # One words-only heading ("late interaction" for "The idea: late interaction"):
        # accepted when exactly one heading contains it, never guessed between several.
        matches = [s for s in sections if key[0] in _norm(s.path)[-1]]
        if len(matches) == 1:
            return matches[0]
    shown = "; ".join(SEPARATOR.join(s.path) for s in (matches or sections)[:8])
    if matches:
        raise SectionNotFound(
            f"section {SEPARATOR.join(wanted)!r} is ambiguous in {display}: {shown} (give the full path)"
        )
    more = "" if len(sections) <= 8 else f" and {len(sections) - 8} more"
    raise SectionNotFound(
        f"no section {SEPARATOR.join(wanted)!r} in {display}"
        + (f" (sections: {shown}{more})" if sections else " (it has no headings)")
    )


def read_document(kb: KB, ref: str, section: str | Sequence[str] | None = None) -> dict[str, Any]:
    """See :meth:`pinakes.kb.KB.read`."""
    row = kb.resolve(ref)
    indexed_hash = kb.reader().conn.execute(
        "SELECT hash FROM documents WHERE doc = ?", (row["doc"],)
    ).fetchone()
    root = Path(os.path.realpath(kb.root))
    real = Path(os.path.realpath(root / row["path"]))
    if not real.is_relative_to(root) or real == root:
        raise DocumentNotFound(
            f"{row['path']} now resolves outside the knowledge base; refusing to read it"
        )
    try:
        raw = real.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise DocumentNotFound(
            f"{row['path']} is indexed but no longer on disk (run `pnk sync`)"
        ) from None
    except OSError as exc:
        raise DocumentNotFound(f"cannot read {row['path']}: {exc.strerror}") from None
    stale = indexed_hash is None or hashlib.sha256(raw).hexdigest() != indexed_hash[0]
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    sections = sections_of(text)
    lines = text.split("\n")
    chosen: Section | None = None
    if section is not None and (not isinstance(section, str) or section.strip()):
        chosen = find_section(sections, split_heading_path(section), row["path"])
        body = "\n".join(lines[chosen.start_line - 1 : chosen.end_line]).strip("\n")
        span = [chosen.start_line, chosen.end_line]
    else:
        body = text
        span = [1, len(lines)]
    meta = json.loads(row["meta"])
    return {
        "kb": kb.name,
        "doc_id": row["ulid"],
        "uri": f"pnk://{row['ulid']}",
        "title": row["title"],
        "path": row["path"],
        "sidecar": row["sidecar_path"],
        "tags": json.loads(row["tags"]),
        "front_matter": meta.get("front_matter", {}),
        "links": [link for link in meta.get("sidecar", {}).get("links") or []
                  if isinstance(link, dict)],
        "provisional_id": bool(row["provisional"]),
        "section": list(chosen.path) if chosen else None,
        "lines": span,
        "text": body,
        "stale": stale,
        "sections": [SEPARATOR.join(s.path) for s in sections],
    }
