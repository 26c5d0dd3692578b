"""``pnk ask``: one synthesis call, or with ``deep`` the bounded loop of the design (docs/design.md, "The paid path").

The loop, written from the design's description:

* **Round 0** is the free pipeline. Its calibrated confidence gates the rest:
  confident, or not ``deep``, means exactly one synthesis call. When round 0
  *abstains* (the notes name the subject but nothing supports what is asked,
  or nothing matches at all), an answer from its passages would be a guess:
  without ``deep`` the run says the notes do not contain it and why, and pays
  nothing; with ``deep`` it goes on to the loop, which may find the fact
  elsewhere.
* **Decompose** (one call, and one repair call if the reply is unusable) into
  a sub-question DAG; unknown ids, self-loops and cycles are repaired
  (:mod:`pinakes_deep.dag`); the plan runs in topological order.
* **Rounds**: per sub-question, free retrieval (its text plus the answers it
  depends on), one solve call, then the answer is folded into a rolling
  summary cut to a fixed size, so every round costs the same at most.
* **Stop** when the plan is done, the free confidence for the question plus
  what was learned passes ``confident_at``, ``max_rounds`` is reached, or the
  next round plus the final synthesis would not fit under the cap.
* **Synthesis** over the best passages and the summary, with citations.

Every round goes into the transcript; document pairs that co-supported the
answer, or bridged a sub-question to the one that needed it, become proposed
sidecar links (``origin: deep``). Malformed model output is repaired or ends
the run with what was learned; a provider failure raises :class:`LLMError`
after the transcript is written, and nothing is written to any sidecar.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from pinakes.sidecar import new_ulid

from . import ledger, prompts
from .backends import LLMError, paid_call
from .budget import (
    Budget,
    BudgetError,
    BudgetExceeded,
    CallRecord,
    PlannedCall,
    count_tokens,
    estimate,
    eur,
)
from .dag import Plan, SubQuestion, parse_plan
from .prompts import Caps, Passage, Summary
from .settings import Settings
from .transcript import Transcript

Confirm = Callable[[Decimal, Decimal], None]
# [1], [1, 3], [1; 3] and the [Passage 2] a small model writes
_CITE = re.compile(r"\[(?:passages?\s*)?(\d+(?:\s*[,;]\s*(?:passages?\s*)?\d+)*)\]", re.I)


def make_backend(settings: Settings) -> Any:
    from pinakes.plugins import get_llm_backends

    cls = get_llm_backends()[settings.backend_id]
    return cls(dict(settings.llm))


ECHO_CHARS = 40  # this much of the prompt copied verbatim is an echo, not an answer


def cited(text: str, shown: Sequence[Passage], prompt: Sequence[str] = ()) -> list[Passage]:
    """The passages an answer cites as ``[n]`` (``[1, 3]`` too), in first-cited order."""
    return [shown[n - 1] for n in cited_numbers(unechoed(text, shown, prompt), len(shown))]


def prompt_text(messages: Sequence[dict[str, str]]) -> tuple[str, ...]:
    """The prompt's texts an echo may copy: all of it in reading order, then each message."""
    contents = [m["content"] for m in messages]
    return ("\n\n".join(contents), *contents)


def _echoed_prefix(text: str, prompt: Sequence[str]) -> int:
    """How many leading characters of ``text`` copy the prompt (or one of its messages) verbatim."""
    best = 0
    for source in prompt:
        n = 0
        for a, b in zip(text, source, strict=False):
            if a != b:
                break
            n += 1
        best = max(best, n)
    return best if best >= ECHO_CHARS else 0


def unechoed(text: str, shown: Sequence[Passage], prompt: Sequence[str] = ()) -> str:
    """``text`` without what it copies from the prompt.

    A weak model often echoes the prompt back: its instructions, the question,
    the passages as ``[2] Title (path)`` or ``[2] <the passage's own text>``.
    Those ``[n]`` marks are the prompt's numbering, not citations. Dropped: a
    leading verbatim copy of the prompt (given ``prompt``), lines that copy a
    passage header, and ``[n]`` lines whose text is copied from the prompt.
    ``prompt`` is :func:`prompt_text` of the messages the reply answers.
    """
    heads = {prompts.cut(f"{p.title} ({p.path})", prompts.HEADER_BYTES).casefold() for p in shown}
    tails = tuple(f"({p.path})".casefold() for p in shown if p.path)
    text = (text or "").lstrip()
    if prompt:
        text = text[_echoed_prefix(text, prompt):]
    keep = []
    lines = text.rstrip().splitlines()
    if lines and re.fullmatch(r"\s*\[\d+\]\s*", lines[-1]):  # a header cut off by max_tokens
        lines.pop()
    for line in lines:
        # also as a list item, a heading or in bold: "- **[2] Title (path)**", "### [2] Title"
        m = re.match(r"\s*(?:[-*#>]+\s+)?[*_`]*\[\d+\][*_`]*\s*(.*)$", line)
        rest = m.group(1).strip().strip("*_`:").strip() if m else ""
        low = rest.casefold()
        # the whole header, its start when the reply was cut off mid-line, or any title
        # followed by a shown passage's "(path)": the prompt's header form, not a claim
        if low and (any(h == low or (len(low) >= 8 and h.startswith(low)) for h in heads)
                    or low.endswith(tails)):
            continue
        if len(rest) >= 20 and any(rest[:ECHO_CHARS] in t for t in prompt):  # a passage copied out
            continue
        keep.append(line)
    return "\n".join(keep)


def cited_numbers(text: str, shown: int) -> list[int]:
    """The passage numbers ``[n]`` an answer cites that were shown to it, first-cited order."""
    out: list[int] = []
    for m in _CITE.finditer(text or ""):
        for part in re.split(r"[,;]", m.group(1)):
            n = int(re.sub(r"\D", "", part))
            if 1 <= n <= shown and n not in out:
                out.append(n)
    return out


def strip_citations(text: str) -> str:
    """An answer without its ``[n]`` marks (they mean nothing outside the prompt that had them)."""
    return re.sub(r"\s+", " ", _CITE.sub("", text or "")).strip()


def citation_list(text: str, shown: Sequence[Passage], prompt: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One entry per cited document, with the passage numbers that cite it."""
    by_doc: dict[str, dict[str, Any]] = {}
    for n in cited_numbers(unechoed(text, shown, prompt), len(shown)):
        p = shown[n - 1]
        entry = by_doc.setdefault(p.doc_id, {"n": n, "passages": [], **p.to_dict()})
        entry["passages"].append(n)
    return list(by_doc.values())


def _passages(result: Any) -> list[Passage]:
    return [Passage(h.doc_id, h.path, h.title, h.text, h.chunk_id) for h in result.hits]


def plan_calls(settings: Settings, deep: bool) -> list[PlannedCall]:
    """Every call the run may make, at its largest: the estimate is their sum."""
    caps = Caps.from_settings(settings.deep)
    d, s = settings.deep, settings.schema
    synth = PlannedCall("synthesis", count_tokens(prompts.bound("synthesis", caps, s)), int(d["answer_tokens"]))
    if not deep:
        return [synth]
    dec = PlannedCall("decompose", count_tokens(prompts.bound("decompose", caps, s)), int(d["decompose_tokens"]))
    solve = PlannedCall("solve", count_tokens(prompts.bound("solve", caps, s)), int(d["solve_tokens"]))
    return [dec, dec] + [solve] * int(d["max_rounds"]) + [synth]


class Run:
    """One ``pnk ask`` operation: its budget, transcript and backend."""

    def __init__(self, kb: Any, question: str, settings: Settings, *, deep: bool, backend: Any = None,
                 sleep: Callable[[float], None] = time.sleep,
                 scope: dict[str, Any] | None = None) -> None:
        question = (question or "").strip()
        if not question:
            from pinakes.errors import QueryError

            raise QueryError("empty question")
        self.kb = kb
        self.question = question
        self.settings = settings
        self.deep = deep
        self.caps = Caps.from_settings(settings.deep)
        self.sleep = sleep
        self.backend = backend
        self.planned = plan_calls(settings, deep)
        self.estimate = estimate(settings.price, self.planned)
        self.budget = Budget(settings.price, settings.cap_eur, self.estimate, journal=self._journal)
        self.transcript = Transcript(new_ulid(), kb, question, "deep" if deep else "ask", settings.public())
        # ``pnk ask --in/--tag``: every search of the run keeps to that part of the KB (pinakes.scope).
        self.scope = {k: v if isinstance(v, str) else list(v) for k, v in (scope or {}).items() if v}
        if self.scope:
            self.transcript.data["scope"] = self.scope
        self._plan(self.planned)
        self.worst = {c.purpose: settings.price.cost(c.input_tokens, c.max_tokens) for c in self.planned}
        self.last: Any = None  # the latest free search's result
        self.abstained = False  # round 0 abstained
        self.reason: str | None = None  # ... and why (pinakes.support)

    # -- the free part -------------------------------------------------------------------

    def retrieve(self, query: str, k: int, label: str) -> tuple[list[Passage], float | None]:
        res = self.kb.search(query, k=k, **self.scope)
        self.last = res
        ps = _passages(res)
        self.transcript.add_round({"kind": "retrieve", "label": label, "query": query,
                                   "retrieved": [p.to_dict() for p in ps],
                                   "confidence": res.confidence, "abstained": res.abstained,
                                   "reason": res.reason, "cost_eur": 0.0})
        return ps, res.confidence

    def round0(self) -> tuple[list[Passage], float | None, bool]:
        k = max(self.caps.final_passages, self.caps.passages)
        ps, conf = self.retrieve(self.question, k, "round 0")
        gate = float(self.settings.deep["confident_at"])
        self.abstained = bool(self.last.abstained)
        self.reason = self.last.reason
        confident = conf is not None and conf >= gate and not self.abstained
        self.transcript.data["round0"] = {"confidence": conf, "confident_at": gate, "confident": confident,
                                          "abstained": self.abstained, "reason": self.reason}
        if self.abstained and not self.deep:  # the notes lack it: no paid call at all
            self._plan([])
        elif self.deep and confident:  # the loop will not run: the bound shrinks to one call
            self._plan(plan_calls(self.settings, False))
        return ps, conf, confident

    def not_in_notes(self) -> str:
        """The answer of a run whose round 0 abstained without ``deep``: what is missing, and why."""
        why = f": {self.reason}" if self.reason else ""
        return (f"The notes do not contain this{why}. Nothing was spent; rephrase the question, "
                "or run with --deep to look further.")

    def _plan(self, planned: list[PlannedCall]) -> None:
        self.planned = planned
        self.estimate = estimate(self.settings.price, planned)
        self.budget.estimate_eur = self.estimate
        self.transcript.data["estimate_eur"] = float(self.estimate)
        self.transcript.data["planned_calls"] = [c.__dict__ for c in planned]

    # -- paid calls ----------------------------------------------------------------------

    def call(self, purpose: str, messages: list[dict[str, str]], max_tokens: int,
             extra: dict[str, Any]) -> str:
        if self.backend is None:
            self.backend = make_backend(self.settings)
        llm = self.settings.llm
        first = len(self.budget.calls)
        entry: dict[str, Any] = {"kind": purpose, **extra,
                                 "prompt_bytes": sum(len(m["content"].encode("utf-8")) for m in messages)}
        try:
            comp, bound = paid_call(
                self.budget, self.backend, messages, max_tokens=max_tokens, purpose=purpose,
                retries=int(llm.get("max_retries", 3)), base_delay=float(llm.get("retry_base_seconds", 1.0)),
                max_wait=float(llm.get("max_retry_wait", 30.0)), sleep=self.sleep)
        except (LLMError, BudgetExceeded) as exc:
            entry["calls"] = [c.to_dict() for c in self.budget.calls[first:]]
            entry["error"] = str(exc)
            self.transcript.add_round(entry)
            raise
        entry["input_bound"] = bound
        entry["calls"] = [c.to_dict() for c in self.budget.calls[first:]]
        entry["reserved_eur"] = sum(c["reserved_eur"] for c in entry["calls"])
        entry["cost_eur"] = sum(c["eur"] for c in entry["calls"])
        entry["reply"] = comp.text
        self.transcript.add_round(entry)
        self.transcript.write(finished=False)  # a checkpoint: a killed run keeps its record
        return comp.text

    def _journal(self, event: str, c: CallRecord) -> None:
        """The budget's journal: each call's hold, then its settlement, on the KB's spend ledger."""
        ledger.append(self.kb, [ledger.record(
            self.kb.name, self.transcript.id, self.transcript.data["mode"], self.question,
            self.settings.backend_id, self.settings.model, c.purpose, c.input_tokens if event == "settle" else
            c.reserved_input, c.output_tokens if event == "settle" else c.reserved_output,
            c.eur if event == "settle" else c.reserved_eur, c.status, call=c.index, event=event)])

    def synthesize(self, passages: list[Passage], summary: str) -> tuple[str, list[Passage]]:
        shown = passages[: self.caps.final_passages]
        msgs = prompts.synthesis(self.question, shown, summary, self.caps, self.settings.schema)
        text = self.call("synthesis", msgs, int(self.settings.deep["answer_tokens"]),
                         {"retrieved": [p.to_dict() for p in shown]}).strip()
        if not text:
            return "", []
        self.transcript.data["citations"] = citation_list(text, shown, prompt_text(msgs))
        return text, cited(text, shown, prompt_text(msgs))

    def decompose(self, passages: list[Passage]) -> Plan | None:
        tokens = int(self.settings.deep["decompose_tokens"])
        for attempt in (False, True):
            msgs = prompts.decompose(self.question, passages, self.caps, self.settings.schema, repair=attempt)
            text = self.call("decompose", msgs, tokens, {"repair": attempt})
            plan = parse_plan(text, self.caps.max_subquestions)
            if plan is not None:
                self.transcript.data["plan"] = plan.to_dict()
                return plan
        self.transcript.data["plan"] = {"subquestions": [], "repairs": ["no usable plan in two replies"]}
        return None

    # -- the operation ---------------------------------------------------------------------

    def execute(self, confirm: Confirm | None = None) -> dict[str, Any]:
        """Run it: round 0, then one synthesis or the loop; the transcript is always written."""
        t = self.transcript
        try:
            passages0, _conf, confident = self.round0()
            if self.abstained and not self.deep:
                t.data["stop_reason"] = "not-in-notes"
                t.data["not_in_notes"] = True
                self._finish(self.not_in_notes(), [], [])
                t.data["receipt"] = self.budget.receipt()
                t.write()
                return t.data
            if not self.budget.can_afford(self.worst["synthesis"]):
                raise BudgetError(
                    f"the cap ({eur(self.budget.cap_eur)}) is below the worst case of a single "
                    f"synthesis call ({eur(self.worst['synthesis'])}): raise [budget] "
                    "max_eur_per_operation or lower [deep] answer_tokens")
            if confirm is not None:
                confirm(self.estimate, self.budget.cap_eur)
            if not self.deep or confident:
                answer, cites = self.synthesize(passages0, "")
                t.data["stop_reason"] = "confident" if self.deep else "single-call"
                self._finish(answer, cites, [])
            else:
                self._loop(passages0)
        except (LLMError, KeyboardInterrupt) as exc:  # the money spent so far is on record
            t.data["error"] = str(exc) or type(exc).__name__
            t.data["stop_reason"] = "error"
            t.data["receipt"] = self.budget.receipt()
            t.write()
            raise
        except BudgetExceeded as exc:  # only when even one call does not fit the cap
            t.data["stop_reason"] = "budget"
            t.data["budget_note"] = str(exc)
            self._finish(t.data.get("answer") or "", [], [])
        t.data["receipt"] = self.budget.receipt()
        t.write()
        return t.data

    def _loop(self, passages0: list[Passage]) -> None:
        t = self.transcript
        d = self.settings.deep
        plan = self.decompose(passages0)
        nodes = plan.nodes if plan else [SubQuestion("q1", self.question)]
        if plan is None:
            t.data.setdefault("repairs", []).append("decomposition unusable: solved the question whole")
        summary = Summary(self.caps.summary_bytes)
        answers: dict[str, tuple[str, list[Passage]]] = {}
        evidence: list[Passage] = []
        stop = "plan-done"
        round_cost = self.worst["solve"]
        for i, node in enumerate(nodes):
            if i >= int(d["max_rounds"]):
                stop = "max-rounds"
                break
            if not self.budget.can_afford(round_cost + self.worst["synthesis"]):
                stop = "budget"
                break
            deps = " ".join(prompts.cut(strip_citations(answers[x][0]), prompts.ANSWER_BYTES)
                            for x in node.depends_on if x in answers and answers[x][0] != "UNKNOWN")
            query = f"{node.question} {deps}".strip()
            ps, _ = self.retrieve(query, self.caps.passages, f"round {i + 1}: {node.id}")
            msgs = prompts.solve(self.question, node.question, ps, summary.text(), self.caps,
                                 self.settings.schema)
            try:
                reply = self.call("solve", msgs, int(d["solve_tokens"]),
                                  {"round": i + 1, "subquestion": node.to_dict(), "query": query}).strip()
            except BudgetExceeded:  # the pre-check makes this rare; stop as a budget stop would
                stop = "budget"
                break
            ans = reply if reply else "UNKNOWN"
            cites = cited(ans, ps, prompt_text(msgs)) if ans != "UNKNOWN" else []
            answers[node.id] = (ans, cites)
            t.rounds[-1]["answer"] = ans
            t.rounds[-1]["cited"] = [p.to_dict() for p in cites]
            summary.fold(node.question, strip_citations(ans) or "UNKNOWN")
            for p in cites + ps[:1]:
                if p not in evidence:
                    evidence.append(p)
            if i + 1 < len(nodes):
                _, conf = self.retrieve(f"{self.question} {summary.text()}", self.caps.passages,
                                        f"round {i + 1}: confidence check")
                if conf is not None and conf >= float(d["confident_at"]):
                    stop = "confident"
                    break
        t.data["stop_reason"] = stop
        t.data["summary"] = summary.text()
        pool = list(evidence)
        for p in passages0:
            if p not in pool:
                pool.append(p)
        try:
            answer, cites = self.synthesize(pool, summary.text())
        except BudgetExceeded:
            t.data["stop_reason"] = "budget"
            answer, cites = summary.text(), []
        bridges = []
        for node in nodes:
            for dep in node.depends_on:
                if dep in answers and node.id in answers:
                    bridges.append((answers[dep][1], answers[node.id][1], f"{dep} -> {node.id}"))
        self._finish(answer, cites, bridges)

    def _finish(self, answer: str, cites: list[Passage],
                bridges: list[tuple[list[Passage], list[Passage], str]]) -> None:
        from .suggest import propose

        t = self.transcript
        if not answer:
            answer = t.data.get("summary") or ""
            t.data.setdefault("repairs", []).append("empty answer from the model")
            if not answer:
                answer = "(no answer: the model returned nothing usable)"
        t.data["answer"] = answer
        if not cites:
            t.data["citations"] = []
        cites = list({p.doc_id: p for p in reversed(cites)}.values())[::-1]
        t.data["suggestions"] = propose(self.kb, cites, bridges, t.id, self.question,
                                        int(self.settings.deep["max_suggestions"]))
