"""Golden sets: questions with the documents that answer them, loaded and checked strictly.

A golden set is truth (it is committed with the KB and sets every retrieval
default), so a malformed entry is an error naming its file and line, never a
silently skipped question: a question that quietly drops out would move the
numbers without anyone noticing. The format is documented in
``golden/README.md`` at the repository root.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GoldenSetError
from ..sidecar import is_ulid

if TYPE_CHECKING:
    from ..kb import KB

#: The question classes a golden set may use, in reporting order.
CLASSES = ("simple", "multi-hop", "unanswerable")
GOLDEN_VERSION = 1


@dataclass(frozen=True)
class Question:
    """One evaluation question; ``documents`` are references (paths, ULIDs or corpus ids)."""

    id: str
    text: str
    cls: str
    documents: tuple[str, ...]
    answer: str | None = None
    notes: str | None = None
    question_type: str | None = None
    line: int = 0  # where it was defined, for error messages

    @property
    def answerable(self) -> bool:
        return self.cls != "unanswerable"


@dataclass
class GoldenSet:
    """A loaded golden set: its questions in file order."""

    path: Path
    questions: list[Question] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Questions per class (every class listed, zero included)."""
        out = dict.fromkeys(CLASSES, 0)
        for q in self.questions:
            out[q.cls] += 1
        return out


def select_questions(questions: Sequence[Question], classes: Iterable[str] = (),
                     limit: int | None = None, seed: int = 0) -> list[Question]:
    """The questions of ``classes`` (all when empty), then a seeded sample of ``limit``, in file order.

    The class filter comes first, so ``--class multi-hop --limit 50 --seed 0`` is
    50 multi-hop questions, the same 50 on every run of the same set: a fixed
    sample a paid evaluation can be repeated on and compared with the free path.
    Without a class the sample is the one ``--limit`` always drew.
    """
    import random

    wanted = tuple(dict.fromkeys(classes))
    unknown = [c for c in wanted if c not in CLASSES]
    if unknown:
        raise GoldenSetError(f"unknown question class {unknown[0]!r}: use one of {', '.join(CLASSES)}")
    pool = [q for q in questions if not wanted or q.cls in wanted]
    if limit and limit < len(pool):
        keep = set(random.Random(seed).sample(range(len(pool)), limit))
        pool = [q for i, q in enumerate(pool) if i in keep]
    return pool


def _line(node: Any, fallback: int = 0) -> int:
    """1-based line of a ruamel round-trip node, when it carries one."""
    lc = getattr(node, "lc", None)
    line = getattr(lc, "line", None)
    return int(line) + 1 if isinstance(line, int) else fallback


def load_golden(path: str | Path) -> GoldenSet:
    """Read and validate a golden set (YAML, ``version: 1``)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    p = Path(path).expanduser()
    shown = str(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GoldenSetError(f"no golden set at {shown}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenSetError(f"{shown}: cannot read: {exc}") from None
    try:
        data = YAML(typ="rt").load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise GoldenSetError(f"{shown}{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, Mapping):
        raise GoldenSetError(f"{shown}:1: a golden set is a mapping with `version` and `questions`")
    version = data.get("version")
    if version != GOLDEN_VERSION:
        raise GoldenSetError(
            f"{shown}:{_line(data)}: `version` must be {GOLDEN_VERSION} (found {version!r})"
        )
    items = data.get("questions")
    if not isinstance(items, Sequence) or isinstance(items, str):
        raise GoldenSetError(f"{shown}: `questions` must be a list")
    problems: list[str] = []
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        line = items.lc.item(i)[0] + 1 if hasattr(items, "lc") else 0
        q = _question(item, line, shown, problems)
        if q is None:
            continue
        if q.id in seen:
            problems.append(f"{shown}:{line}: duplicate id {q.id!r} (first at line {seen[q.id]})")
            continue
        seen[q.id] = line
        questions.append(q)
    if problems:
        raise GoldenSetError(_summarise(problems))
    if not questions:
        raise GoldenSetError(f"{shown}: the golden set has no questions")
    return GoldenSet(p, questions)


def _question(item: Any, line: int, shown: str, problems: list[str]) -> Question | None:
    where = f"{shown}:{line}"
    if not isinstance(item, Mapping):
        problems.append(f"{where}: each question is a mapping (id, question, class, documents)")
        return None
    qid = item.get("id")
    if not isinstance(qid, str | int) or isinstance(qid, bool) or not str(qid).strip():
        problems.append(f"{where}: missing `id`")
        return None
    qid = str(qid)
    text = item.get("question")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: question {qid}: missing `question` text")
        return None
    cls = item.get("class")
    if cls not in CLASSES:
        problems.append(f"{where}: question {qid}: `class` must be one of {', '.join(CLASSES)} "
                        f"(found {cls!r})")
        return None
    docs = item.get("documents")
    if docs is None or isinstance(docs, str) or not isinstance(docs, Sequence):
        problems.append(f"{where}: question {qid}: `documents` must be a list (use [] if none)")
        return None
    refs = tuple(str(d).strip() for d in docs)
    if any(not r for r in refs):
        problems.append(f"{where}: question {qid}: an empty entry in `documents`")
        return None
    if cls == "unanswerable" and refs:
        problems.append(f"{where}: question {qid}: an unanswerable question lists no documents")
        return None
    if cls != "unanswerable" and not refs:
        problems.append(f"{where}: question {qid}: a {cls} question needs its documents")
        return None
    if len(set(refs)) != len(refs):
        problems.append(f"{where}: question {qid}: a document is listed twice")
        return None
    answer = item.get("answer")
    notes = item.get("notes")
    qtype = item.get("question_type")
    return Question(
        id=qid, text=text.strip(), cls=str(cls), documents=refs,
        answer=None if answer is None else str(answer),
        notes=None if notes is None else str(notes),
        question_type=None if qtype is None else str(qtype), line=line,
    )


def _summarise(problems: list[str], shown: int = 10) -> str:
    head = "; ".join(problems[:shown])
    more = f"; and {len(problems) - shown} more" if len(problems) > shown else ""
    return f"golden set has {len(problems)} problem{'s' if len(problems) != 1 else ''}: {head}{more}"


def resolve_documents(kb: KB, questions: Iterable[Question]) -> dict[str, tuple[int, ...]]:
    """Each question's documents as store keys (``documents.doc``), in listed order.

    A reference is a KB-relative path or a sidecar ULID (``pnk://`` allowed).
    Every one must name exactly one indexed document: an entry that resolves
    to nothing is a broken golden set, not a retrieval miss.
    """
    conn = kb.reader().conn
    by_path: dict[str, int] = {}
    by_ulid: dict[str, list[int]] = {}
    for row in conn.execute("SELECT doc, ulid, path FROM documents"):
        by_path[row["path"]] = int(row["doc"])
        by_ulid.setdefault(row["ulid"], []).append(int(row["doc"]))
    problems: list[str] = []
    out: dict[str, tuple[int, ...]] = {}
    for q in questions:
        keys: list[int] = []
        for ref in q.documents:
            key = _resolve_one(ref, by_path, by_ulid)
            if isinstance(key, str):
                problems.append(f"line {q.line}: question {q.id}: {ref!r} {key}")
            else:
                keys.append(key)
        out[q.id] = tuple(keys)
    if problems:
        raise GoldenSetError(_summarise(problems) + f" (in {kb.name}; was it synced?)")
    return out


def _resolve_one(ref: str, by_path: Mapping[str, int], by_ulid: Mapping[str, list[int]]) -> int | str:
    """A document key, or the reason (a string) that ``ref`` names none or several."""
    bare = ref.removeprefix("pnk://")
    if "/" not in bare and is_ulid(bare.upper()) and not bare.endswith(".md"):
        found = by_ulid.get(bare.upper(), [])
        if len(found) == 1:
            return found[0]
        return "is claimed by several documents" if found else "is no document's id"
    norm = bare.replace("\\", "/")
    while norm.startswith("./"):
        norm = norm[2:]
    if norm in by_path:
        return by_path[norm]
    return "is not an indexed document (paths are relative to the KB root)"


STARTER_HEADER = """\
# A starter golden set, written by `pnk eval --init` from this KB's own documents: one
# lookup per document, its title and one of its section headings, so `pnk eval` runs
# today. Titles and headings are easy for search to find, so these numbers are a smoke
# test, not a measure of quality. Replace each question with one written by READING the
# document (never by searching), add multi-hop and unanswerable questions, keep the ids
# stable, and commit the file. The format, the classes and the rules: golden/README.md in
# the Pinakes repository.
#
# Examples of the other two classes (uncomment and edit):
#  - id: m01
#    question: "A question only two documents together answer"
#    class: multi-hop
#    documents: [first/document.md, second/document.md]
#  - id: u01
#    question: "A plausible question that no document answers"
#    class: unanswerable
#    documents: []
version: 1
questions:
"""


def starter_golden(kb: KB, n: int = 10) -> tuple[str, int]:
    """A starter golden set (YAML text) from the KB's indexed documents, and its size.

    Why it exists: ``pnk eval`` needs a golden set, and an empty page is where most
    never get written. The starter takes up to ``n`` documents spread evenly over
    the KB (by path, so the same KB gives the same file) and asks, for each, for
    its title plus one section heading. It reads the index's document and chunk
    tables only and never runs a search: the rule of golden sets (questions come
    from reading, not from the engine) holds for the starter too.
    """
    import json

    store = kb.reader()
    with store.snapshot() as conn:
        docs = conn.execute("SELECT doc, path, title FROM documents ORDER BY path").fetchall()
        if not docs:
            raise GoldenSetError("the knowledge base has no indexed documents to start a golden "
                                 "set from: add Markdown files and run `pnk sync`")
        step = max(1, len(docs) / max(1, n))
        picked = [docs[int(i * step)] for i in range(min(n, len(docs)))]
        lines = [STARTER_HEADER]
        for i, (doc, path, title) in enumerate(picked, 1):
            headings = [json.loads(r[0]) for r in conn.execute(
                "SELECT heading_path FROM chunks WHERE doc = ? ORDER BY ordinal", (doc,))]
            section = next((h[-1] for h in headings if h and h[-1].strip() and
                            h[-1].strip().lower() != str(title).strip().lower()), "")
            question = f"{title}: {section}" if section else str(title)
            lines.append(f"  - id: s{i:02d}\n"
                         f"    question: {json.dumps(question, ensure_ascii=False)}\n"
                         f"    class: simple\n"
                         f"    documents: [{json.dumps(path, ensure_ascii=False)}]\n"
                         f"    notes: starter (title and heading); rewrite by reading the document\n")
    return "".join(lines), len(picked)
