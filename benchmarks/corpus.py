"""Deterministic synthetic knowledge bases for the benchmarks.

Text is never shipped with the benchmark: every document is assembled from
sentences and headings of the example KB (``examples/retrieval-kb``), shuffled
by a seeded RNG, so the vocabulary, sentence lengths and Markdown shape are
those of real notes while the same seed always yields the same corpus.

Every generated document has exactly ``CHUNKS_PER_DOC`` sections (an H1 with
an intro paragraph, then H2/H3 sections) that each fit the embedder's window,
so ``n`` documents make ``5 n`` chunks: 2,000 documents are 10k chunks and
10,000 documents are 50k chunks. Each document comes with its sidecar (a
committed KB, as after a fresh clone), so a sync writes no truth files.
"""

from __future__ import annotations

import functools
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

EXAMPLE_KB = Path(__file__).resolve().parent.parent / "examples" / "retrieval-kb"
CHUNKS_PER_DOC = 5
FOLDERS = 20
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_WIKI = re.compile(r"\[\[([^\]|]*\|)?([^\]]*)\]\]")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")


@dataclass(frozen=True)
class Pool:
    """Sentences, headings and titles harvested from the example KB."""

    sentences: tuple[str, ...]
    headings: tuple[str, ...]
    titles: tuple[str, ...]
    words: tuple[str, ...]


@functools.cache
def pool() -> Pool:
    """Harvest the example KB once (paragraph sentences only: no code, tables or lists)."""
    sentences: list[str] = []
    headings: set[str] = set()
    titles: list[str] = []
    for md in sorted(EXAMPLE_KB.rglob("*.md")):
        text = md.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            end = text.find("\n---", 4)
            text = text[end + 4 :] if end > 0 else text
        in_fence = False
        para: list[str] = []
        for line in text.splitlines() + [""]:
            stripped = line.strip()
            if stripped.startswith("```") or stripped.startswith("~~~"):
                in_fence = not in_fence
                para = []
                continue
            if in_fence:
                continue
            if stripped.startswith("#"):
                level = len(stripped) - len(stripped.lstrip("#"))
                name = stripped[level:].strip()
                if level == 1:
                    titles.append(name)
                elif name:
                    headings.add(name)
                continue
            if not stripped or stripped[0] in "-*|>0123456789":
                if para:
                    sentences.extend(_sentences(" ".join(para)))
                para = []
                continue
            para.append(stripped)
    words = sorted({w.lower() for s in sentences for w in re.findall(r"[A-Za-z]{4,}", s)})
    return Pool(tuple(sentences), tuple(sorted(headings)), tuple(titles), tuple(words))


def _sentences(paragraph: str) -> list[str]:
    paragraph = _WIKI.sub(lambda m: m.group(2), _LINK.sub(lambda m: m.group(1), paragraph))
    out = []
    for s in _SENT.split(paragraph):
        n = len(s.split())
        if 5 <= n <= 40:
            out.append(s.strip())
    return out


def _ulid(rng: random.Random) -> str:
    return "0" + "".join(rng.choice(_CROCKFORD) for _ in range(25))


def _paragraph(rng: random.Random, p: Pool, lo: int, hi: int) -> str:
    """Sentences drawn until the paragraph holds between lo and hi words."""
    target = rng.randint(lo, hi)
    out: list[str] = []
    words = 0
    while words < target:
        s = rng.choice(p.sentences)
        if out and words + len(s.split()) > hi:
            break
        out.append(s)
        words += len(s.split())
    return " ".join(out)


def document(i: int, seed: int = 0) -> tuple[str, str, str]:
    """Document ``i`` of the corpus: (relative path, Markdown text, sidecar text)."""
    rng = random.Random(f"{seed}:{i}")
    p = pool()
    title = f"{rng.choice(p.titles)}: {rng.choice(p.headings)} (note {i})"
    tags = sorted(rng.sample(p.words, 2))
    parts: list[str] = []
    if rng.random() < 0.3:
        parts.append(f"---\ntags: [{', '.join(tags)}]\ndescription: {json.dumps(rng.choice(p.sentences))}\n---\n")
    parts.append(f"# {title}\n")
    parts.append(_paragraph(rng, p, 30, 80) + "\n")
    for k in range(CHUNKS_PER_DOC - 1):
        level = "###" if k and rng.random() < 0.3 else "##"
        parts.append(f"{level} {rng.choice(p.headings)}\n")
        if rng.random() < 0.5:
            parts.append(_paragraph(rng, p, 20, 50) + "\n")
            parts.append(_paragraph(rng, p, 20, 50) + "\n")
        elif rng.random() < 0.3:
            parts.append(_paragraph(rng, p, 15, 35) + "\n")
            short = [x for x in p.sentences if len(x.split()) <= 22]
            items = [rng.choice(short) for _ in range(3)]
            parts.append("\n".join(f"- {s}" for s in items) + "\n")
        else:
            parts.append(_paragraph(rng, p, 40, 90) + "\n")
    text = "\n".join(parts)
    sidecar = (
        "# Pinakes sidecar: this document's identity, tags and typed links.\n"
        f"id: {_ulid(rng)}\ntitle: {json.dumps(title)}\ntags: [{', '.join(tags)}]\nlinks: []\n"
    )
    return f"topic-{i % FOLDERS:02d}/note-{i:05d}.md", text, sidecar


def write_kb(root: Path, n_docs: int, embedder: str, seed: int = 0) -> Path:
    """Write a KB of ``n_docs`` documents (and sidecars) under ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pinakes.toml").write_text(
        f'[kb]\nname = "bench-{n_docs}"\n\n[embedding]\nmodel = "{embedder}"\n', encoding="utf-8"
    )
    for i in range(n_docs):
        rel, text, sidecar = document(i, seed)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.with_name(path.stem + ".pnk.yaml").write_text(sidecar, encoding="utf-8")
    return root


def edit_document(root: Path, i: int, stamp: int, seed: int = 0) -> str:
    """Change one paragraph of document ``i`` (as a user edit would); returns its path."""
    rel, _, _ = document(i, seed)
    path = root / rel
    text = path.read_text(encoding="utf-8")
    rng = random.Random(f"edit:{seed}:{i}:{stamp}")
    extra = rng.choice(pool().sentences)
    path.write_text(text.rstrip("\n") + f" {extra} (edit {stamp})\n", encoding="utf-8")
    return rel


def queries(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct realistic queries: sentence fragments and keyword pairs."""
    rng = random.Random(f"queries:{seed}")
    p = pool()
    out: dict[str, None] = {}
    while len(out) < n:
        if rng.random() < 0.6:
            words = re.findall(r"[\w'-]+", rng.choice(p.sentences))
            size = min(len(words), rng.randint(3, 8))
            start = rng.randint(0, len(words) - size)
            q = " ".join(words[start : start + size]).lower()
        else:
            q = " ".join(rng.sample(p.words, rng.randint(2, 3)))
        if q.strip():
            out.setdefault(q, None)
    return list(out)
