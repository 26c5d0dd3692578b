"""Sub-question plans: parse a model's (possibly broken) decomposition, repair it, order it.

A weak model's JSON is often almost right: fenced in Markdown, trailing
commas, single quotes, a list where an object was asked for, ids it never
defined, or dependencies that loop. Each defect is repaired when a safe
repair exists and written down (the transcript keeps the list); only a reply
with no recognisable sub-question is rejected.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SubQuestion:
    id: str
    question: str
    depends_on: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "depends_on": list(self.depends_on)}


@dataclass
class Plan:
    """An acyclic, ordered set of sub-questions, and what was repaired to get it."""

    nodes: list[SubQuestion]
    repairs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"subquestions": [n.to_dict() for n in self.nodes], "repairs": list(self.repairs)}


def _json_candidates(text: str) -> list[str]:
    text = text.strip()
    out = [text]
    fenced = re.findall(r"```(?:json)?\s*(.*?)```", text, flags=re.S)
    out += fenced
    for open_, close in (("{", "}"), ("[", "]")):
        i, j = text.find(open_), text.rfind(close)
        if i != -1 and j > i:
            out.append(text[i:j + 1])
    return out


def _loads_lenient(s: str) -> Any:
    try:
        return json.loads(s)
    except ValueError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", s)  # trailing commas
    try:
        return json.loads(fixed)
    except ValueError:
        pass
    fixed = re.sub(r"'", '"', fixed)  # single quotes
    try:
        return json.loads(fixed)
    except ValueError:
        return None


def parse_json(text: str) -> Any:
    """The first JSON value recoverable from ``text``, or None."""
    for cand in _json_candidates(text or ""):
        value = _loads_lenient(cand)
        if value is not None:
            return value
    return None


def parse_plan(text: str, max_nodes: int) -> Plan | None:
    """A repaired plan from a decomposition reply, or None when nothing usable is in it."""
    repairs: list[str] = []
    data = parse_json(text)
    items: list[Any] | None = None
    if isinstance(data, dict):
        for key in ("subquestions", "sub_questions", "questions", "steps", "nodes"):
            if isinstance(data.get(key), list):
                items = data[key]
                break
    elif isinstance(data, list):
        items = data
    if items is not None and not any(isinstance(i, str | dict) for i in items):
        items = None  # e.g. a stray "[1]" read as JSON
    if items is None:
        # a prompt echoed back ("QUESTION: ...") is stripped of its labels
        lines = [re.sub(r"^\s*(?:\d+[.)]|[-*])?\s*(?:(?:main |sub-)?question:\s*)?", "", ln, flags=re.I).strip()
                 for ln in (text or "").splitlines()]
        qs = [ln for ln in lines if ln.endswith("?") and len(ln) > 8]
        if not qs:
            return None
        repairs.append("no JSON: read the question lines as a chain")
        items = [{"id": f"q{i + 1}", "question": q, "depends_on": [f"q{i}"] if i else []}
                 for i, q in enumerate(qs)]
    nodes: list[SubQuestion] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"question": item}
        if not isinstance(item, dict):
            repairs.append(f"item {i + 1} is not an object: dropped")
            continue
        q = item.get("question") or item.get("q") or item.get("text")
        # "..." is the prompt's own example echoed back (a weak model copies it): no question
        if not isinstance(q, str) or not re.search(r"\w", q):
            repairs.append(f"item {i + 1} has no question: dropped")
            continue
        ident = str(item.get("id") or f"q{i + 1}").strip() or f"q{i + 1}"
        if ident in seen:
            new = f"q{i + 1}"
            while new in seen:
                new += "'"
            repairs.append(f"duplicate id {ident!r} renamed {new!r}")
            ident = new
        seen.add(ident)
        deps = item.get("depends_on", item.get("deps", []))
        if isinstance(deps, str):
            deps = [deps]
        if not isinstance(deps, list):
            deps = []
        nodes.append(SubQuestion(ident, q.strip(), [str(d) for d in deps]))
    if not nodes:
        return None
    if len(nodes) > max_nodes:
        repairs.append(f"{len(nodes)} sub-questions: kept the first {max_nodes}")
        nodes = nodes[:max_nodes]
    known = {n.id for n in nodes}
    for n in nodes:
        bad = [d for d in n.depends_on if d not in known or d == n.id]
        if bad:
            repairs.append(f"{n.id}: dropped unknown or self dependencies {bad}")
            n.depends_on = [d for d in n.depends_on if d in known and d != n.id]
        n.depends_on = list(dict.fromkeys(n.depends_on))
    repairs += break_cycles(nodes)
    return Plan(topological(nodes), repairs)


def break_cycles(nodes: list[SubQuestion]) -> list[str]:
    """Remove one edge per cycle until none is left; say which.

    The model was asked to list sub-questions in answering order, so in a
    cycle the edge to drop is a *forward* one: a sub-question depending on one
    listed after it (every cycle has at least one). Of those, the longest jump
    goes first.
    """
    order = {n.id: i for i, n in enumerate(nodes)}
    by_id = {n.id: n for n in nodes}
    removed: list[str] = []
    while True:
        cycle = _find_cycle(nodes, by_id)
        if not cycle:
            return removed
        forward = [(a, b) for a, b in cycle if order[b] > order[a]] or cycle
        a, b = max(forward, key=lambda e: order[e[1]] - order[e[0]])
        by_id[a].depends_on.remove(b)
        removed.append(f"cycle: dropped the dependency {a} -> {b}")


def _find_cycle(nodes: list[SubQuestion], by_id: dict[str, SubQuestion]) -> list[tuple[str, str]]:
    """The edges ``(node, dependency)`` of one cycle, or [] when the plan is acyclic."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(ident: str) -> list[tuple[str, str]]:
        state[ident] = 1
        stack.append(ident)
        for d in by_id[ident].depends_on:
            if state.get(d) == 1:
                loop = stack[stack.index(d):] + [d]
                return list(zip(loop, loop[1:], strict=False))
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[ident] = 2
        return []

    for n in nodes:
        if n.id not in state:
            found = visit(n.id)
            if found:
                return found
    return []


def topological(nodes: list[SubQuestion]) -> list[SubQuestion]:
    """Kahn's order, ties kept in the model's order; the input must be acyclic."""
    pending = list(nodes)
    done: set[str] = set()
    out: list[SubQuestion] = []
    while pending:
        for n in pending:
            if all(d in done for d in n.depends_on):
                out.append(n)
                done.add(n.id)
                pending.remove(n)
                break
        else:  # pragma: no cover - break_cycles guarantees progress
            raise ValueError("cycle left in the plan")
    return out
