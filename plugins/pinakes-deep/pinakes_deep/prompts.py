"""The prompts, built so that each kind of call has a fixed worst-case size.

Every variable part (question, passages, the rolling summary, a title) is cut
to a byte cap before it goes in. :func:`bound` builds the same prompt from
dummies exactly as large as the caps, so its token count is an upper bound on
any real prompt of that kind: that is what makes a round's cost constant and
the up-front estimate a true bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HEADER_BYTES = 160  # a passage's "title (path)" line
ANSWER_BYTES = 240  # a sub-answer, as it enters the next retrieval and the summary


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, on a character boundary."""
    raw = (text or "").encode("utf-8")
    if len(raw) <= limit:
        return text or ""
    return raw[:limit].decode("utf-8", errors="ignore")


@dataclass
class Passage:
    """A retrieved chunk as a prompt shows it (numbered from 1 in each prompt)."""

    doc_id: str
    path: str
    title: str
    text: str
    chunk_id: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "path": self.path, "title": self.title, "chunk_id": self.chunk_id}


def _schema(schema: str) -> str:
    if not schema:
        return ""
    return ("\n\nThe knowledge base's schema (entity types, relation types, attribute types); "
            "stay within it:\n" + schema)


def _passages(passages: Sequence[Passage], k: int, passage_bytes: int) -> str:
    out = []
    for i, p in enumerate(passages[:k], 1):
        head = cut(f"{p.title} ({p.path})", HEADER_BYTES)
        out.append(f"[{i}] {head}\n{cut(p.text, passage_bytes)}")
    return "\n\n".join(out) if out else "(no passages found)"


SYNTH_SYSTEM = (
    "You answer a question using only the numbered passages. Cite each passage you use as [n] "
    "right after the claim it supports. If the passages do not hold the answer, say so briefly. "
    "Answer in at most three sentences."
)

DECOMPOSE_SYSTEM = (
    "You break a question into at most {n} simpler sub-questions, each answerable from one "
    "document, in the order they must be answered. Reply with JSON only, in this form: "
    '{{"subquestions": [{{"id": "q1", "question": "...", "depends_on": []}}, '
    '{{"id": "q2", "question": "...", "depends_on": ["q1"]}}]}}. '
    "depends_on lists the ids whose answers a sub-question needs."
)

REPAIR_NOTE = ("Your previous reply was not valid JSON in the requested form. Reply again with the "
               "JSON object only, nothing else.")

SOLVE_SYSTEM = (
    "You answer one sub-question in one short sentence using only the numbered passages, citing "
    "each passage you use as [n]. If they do not answer it, reply UNKNOWN."
)


@dataclass(frozen=True)
class Caps:
    question_bytes: int
    passage_bytes: int
    summary_bytes: int
    passages: int
    final_passages: int
    max_subquestions: int

    @classmethod
    def from_settings(cls, deep: Mapping[str, Any]) -> Caps:
        return cls(int(deep["question_bytes"]), int(deep["passage_bytes"]), int(deep["summary_bytes"]),
                   int(deep["passages"]), int(deep["final_passages"]), int(deep["max_subquestions"]))


def synthesis(question: str, passages: Sequence[Passage], summary: str, caps: Caps, schema: str,
              k: int | None = None) -> list[dict[str, str]]:
    k = caps.final_passages if k is None else k
    notes = f"\n\nNOTES FROM EARLIER STEPS:\n{cut(summary, caps.summary_bytes)}" if summary else ""
    user = (f"QUESTION: {cut(question, caps.question_bytes)}{notes}\n\nPASSAGES:\n"
            f"{_passages(passages, k, caps.passage_bytes)}")
    return [{"role": "system", "content": SYNTH_SYSTEM + _schema(schema)}, {"role": "user", "content": user}]


def decompose(question: str, passages: Sequence[Passage], caps: Caps, schema: str,
              repair: bool = False) -> list[dict[str, str]]:
    system = DECOMPOSE_SYSTEM.format(n=caps.max_subquestions) + _schema(schema)
    user = (f"QUESTION: {cut(question, caps.question_bytes)}\n\nPASSAGES (for orientation):\n"
            f"{_passages(passages, 2, caps.passage_bytes)}")
    if repair:
        user += "\n\n" + REPAIR_NOTE
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def solve(question: str, sub: str, passages: Sequence[Passage], summary: str, caps: Caps,
          schema: str) -> list[dict[str, str]]:
    known = f"\n\nKNOWN SO FAR:\n{cut(summary, caps.summary_bytes)}" if summary else ""
    user = (f"MAIN QUESTION: {cut(question, caps.question_bytes)}\nSUB-QUESTION: "
            f"{cut(sub, caps.question_bytes)}{known}\n\nPASSAGES:\n"
            f"{_passages(passages, caps.passages, caps.passage_bytes)}")
    return [{"role": "system", "content": SOLVE_SYSTEM + _schema(schema)}, {"role": "user", "content": user}]


def bound(kind: str, caps: Caps, schema: str) -> list[dict[str, str]]:
    """The largest prompt of ``kind`` the caps allow (dummies of the full cap size)."""
    q = "x" * caps.question_bytes
    s = "x" * caps.summary_bytes
    n = max(caps.passages, caps.final_passages, 2)
    ps = [Passage("", "", "x" * HEADER_BYTES, "x" * caps.passage_bytes) for _ in range(n)]
    if kind == "synthesis":
        return synthesis(q, ps, s, caps, schema)
    if kind == "decompose":
        return decompose(q, ps, caps, schema, repair=True)
    if kind == "solve":
        return solve(q, q, ps, s, caps, schema)
    raise ValueError(kind)


class Summary:
    """The rolling summary: newest facts first, cut to ``summary_bytes`` (no LLM call)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: list[tuple[str, str]] = []

    def fold(self, sub: str, answer: str) -> None:
        self.entries.append((cut(sub, 200), cut(answer, ANSWER_BYTES)))

    def text(self) -> str:
        lines: list[str] = []
        size = 0
        for sub, ans in reversed(self.entries):
            line = f"- {sub} -> {ans}"
            n = len(line.encode("utf-8")) + 1
            if size + n > self.limit:
                break
            lines.append(line)
            size += n
        return cut("\n".join(reversed(lines)), self.limit)
