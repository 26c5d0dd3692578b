"""The typed gap: whether the sentence that matches the question best holds its answer (:func:`typed_gap`).

Part of :mod:`pinakes.support`; its docstring tells the whole method.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..dialects import DATE_FIELDS, NOTION_ID, date_key, strip_suffix
from ..text import (
    STOPWORDS,
)
from .lexicon import _WORD
from .questions import (
    _AUX,
    _CHOICE,
    _CODE,
    _DAYS,
    _DETERMINER,
    _MONTHS,
    _PATH,
    _RELATIONS,
    _SEASONS,
    _VERSION,
    _WEEKDAYS,
    DATE,
    LABEL_WORDS,
    NAME,
    NEIGHBOUR_CREDIT,
    PLACE,
    QUANTITY,
    WEEKDAY,
    Expected,
    _normal,
    _singular,
    answer_type,
    kind_word,
    wh_noun,
)
from .sentences import (
    _asked_end,
    _labels_another,
    _tells_other_end,
    holds_typed,
    outline,
    sentences,
)
from .speakers import (
    _ASKER,
    _BACK,
    _YOU,
    ASSISTANT_LABELS,
    MIN_TURNS,
    _asks,
    sentence_labels,
    sentence_turns,
)

#: The first person singular: the writer alone ("I finished in 58:14").
_SINGULAR = re.compile(r"\b(?:I|[Mm]y|[Mm]e|[Mm]ine)\b")
#: A name the question writes: a capitalised word past its first ("Idris's", "Riverside").
_NAME_WRITTEN = re.compile(r"(?<=\s)([A-Z][\w\-]*?)(?:'s|’s)?\b(?!['’]\w)")


def _sibling_section(hit: Any, headed: set[str], names: set[str], sent: str) -> bool:
    """Is ``hit`` a section of a note another section of which is headed by one of the
    question's ``names``, while neither its own headings (the note's title among them) nor
    ``sent`` name any of them?"""
    return (hit.path in headed and len(hit.heading_path) > 1 and not names & _written(sent)
            and not any(names & _written(heading) for heading in hit.heading_path))


#: A pre-release's tag after its version: "0.12.0-rc1", "2.0-beta", "3.1.0.dev2".
_PRERELEASE = re.compile(r"[-.]?(?:rc|beta|alpha|pre|dev|b|a)\d*(?![\w])", re.IGNORECASE)


def _tagged(text: str, version: str, end: int) -> str:
    """``version`` (lower case) with the pre-release tag written just after it, at ``end``:
    "0.12.0-rc1" is another release than "0.12.0"."""
    tag = _PRERELEASE.match(text, end)
    return version.lower() + (tag.group(0).lower() if tag else "")


def _versions(text: str, after: frozenset[str] = frozenset()) -> list[str]:
    """The versions ``text`` writes ("2.3.1", "v1.9"), lower case, without a leading "v";
    none written just after one of the words ``after`` ("Go" in "needs Go 1.23"). A
    pre-release keeps its tag ("0.12.0-rc1"): it is another release than 0.12.0."""
    return [_tagged(text, m.group(0).lower().lstrip("v"), m.end()) for m in _VERSION.finditer(text)
            if not m.group(0).lower().startswith("version") and _word_before(text, m.start()) not in after]


#: "my sister", "our neighbour": the asker's own relation.
_MY_KIN = re.compile(r"\b(?:my|our)\s+([a-z]+)\b", re.IGNORECASE)
#: "her sister", "his brother's": somebody else's.
_THEIR_KIN = re.compile(r"\b(?:his|her|their)\s+([a-z]+)(?:['’]s)?\b", re.IGNORECASE)


def _anothers_kin(sent: str, kin: set[str]) -> bool:
    """Does ``sent`` speak of somebody else's ``kin`` ("her sister's organising it") and of no
    one's the asker calls theirs? "When is my sister's birthday?" is not answered by it."""
    theirs = {m.group(1).lower() for m in _THEIR_KIN.finditer(sent)}
    mine = {m.group(1).lower() for m in _MY_KIN.finditer(sent)}
    return bool(theirs & kin) and not (mine & kin)


def _tells_other_version(hit: Any, sent: str, asked: list[str], named: frozenset[str] = frozenset()) -> bool:
    """Does ``sent`` tell of another version than the ones the question asks of?

    It does when it writes versions and none asked ("Current stable release: 3.4.1." says
    nothing of 3.3.2's date), or, writing none, when its section is headed by other versions
    only: under a changelog's "1.9.4 (2023-11-30)", "Reported by Jun Takeda." does not
    answer "Who reported the bug that 2.3.1 fixed?". ``hit`` is None for a note's property
    line, which has no heading. ``named``: for a question that asks a version ("Which Go
    version does 0.9.0 need?"), the words it writes: a version after one of them ("needs Go
    1.23") is the answer, not another release.
    """
    said = _versions(sent, named)
    if any(_same_release(v, w) for v in said for w in asked):
        return False
    if said:
        return True
    heading = _versions(hit.heading_path[-1]) if hit is not None and hit.heading_path else []
    return bool(heading) and not any(_same_release(v, w) for v in heading for w in asked)


def _word_before(text: str, pos: int) -> str:
    """The word just before ``pos`` in ``text``, lower case ("" at the start)."""
    m = re.search(r"([^\W_][\w\-]*)\W*$", text[max(0, pos - 40):pos])
    return m.group(1).lower() if m else ""


def _writers_own(sent: str, names: set[str]) -> bool:
    """Is ``sent`` about its writer alone: the first person singular, none of ``names``
    (lower case), and no word for anybody or anything else ("he", "it", "my husband")?"""
    if not _SINGULAR.search(sent) or _BACK.search(sent):
        return False
    words = _written(sent)
    return not (words & names or words & _RELATIONS)


def _bare(word: str) -> str:
    """``word`` in lower case, without a possessive "'s" ("Idris's" is "idris")."""
    return re.sub(r"['’]s$", "", word.lower())


def _written(sent: str) -> set[str]:
    """The words of ``sent``, each :func:`_bare`."""
    return {_bare(w) for w in _WORD.findall(sent)}


#: A name after "at": "my manager *at Lumenfield*", "what did I buy *at Target*". Only "at" (a
#: workplace, a shop, a venue): "in" nests places ("Where did we stay in Lisbon?" is
#: answered by "staying at Casa do Limoeiro in Alfama").
_AT_NAME = re.compile(r"\bat\s+([A-Z][\w'’&\-]*)")
#: Capitalised after "at" and no name: a date ("at Easter", "on Friday"), a sentence's "At the".
_NOT_NAMES = _MONTHS | _DAYS | _WEEKDAYS | _SEASONS | STOPWORDS


def _at_names(query: str) -> list[str]:
    """The names the question puts after "at", in lower case."""
    return [w for m in _AT_NAME.finditer(query) if (w := _bare(m.group(1))) not in _NOT_NAMES]


#: A name before a noun: "the PostgreSQL broker", "a Redis server".
_NAME_NOUN = re.compile(r"(?<=\s)([A-Z][\w\-]*)\s+([a-z][a-z\-]{2,})\b")
#: The same after a determiner, as a sentence names a thing of a kind: "a Redis server" (not
#: "MOT due again", where the noun is no noun).
_THE_NAME_NOUN = re.compile(r"\b(?i:" + _DETERMINER + r")\s+([A-Z][\w\-]*)\s+([a-z][a-z\-]{2,})\b")


def _named_kinds(query: str) -> tuple[set[str], set[str]]:
    """The question's names that stand before a noun, and those nouns: ("postgresql",
    "broker") in "the PostgreSQL broker"."""
    pairs = [(m.group(1).lower(), _singular(m.group(2))) for m in _NAME_NOUN.finditer(query)
             if m.group(2) not in STOPWORDS and m.group(1).lower() not in _NOT_NAMES]
    return {n for n, _ in pairs}, {k for _, k in pairs}


def _other_named(sent: str, names: set[str], kinds: set[str]) -> bool:
    """Does ``sent`` put another name before one of the question's named nouns and none of
    the question's names anywhere ("a Redis server, version 6.2" for "the PostgreSQL server")?"""
    if names & _written(sent):
        return False
    return any(_singular(m.group(2)) in kinds and m.group(1).lower() not in names
               and m.group(1).lower() not in _NOT_NAMES for m in _THE_NAME_NOUN.finditer(sent))


def _swapped(sent: str, names: list[str], asked: frozenset[str]) -> bool:
    """Does ``sent`` put another name after "at" and not the question's ("my manager Priscilla
    *at Tallgrass*" for "Who is my manager *at Lumenfield*?")? Then it speaks of that other
    place: the near miss a memory benchmark builds by swapping a name."""
    if any(name in _written(sent) for name in names):
        return False
    return any((other := _bare(m.group(1))) not in asked and other not in _NOT_NAMES
               for m in _AT_NAME.finditer(sent))


#: "a hotel", "an affordable intern", "another dentist": the determiners of a thing not named.
_INDEFINITE = r"\b(?:a|an|another|some|any)\s+(?:[a-z][\w\-]*\s+){0,2}?"
#: "Scandic, a hotel by the harbour", "Ana as an intern", "X is a hotel", "a tool like tidy":
#: a name tied to it.
_TIED_BEFORE = re.compile(r"(?:[,(:\u2014\u2013]|\b(?:is|was|as))\s*$")
_TIED_AFTER = re.compile(r"\s*(?:[,(:\u2014\u2013]|\b(?:called|named|like|such\s+as|namely|e\.g\.|i\.e\.))")


#: "the name of the garage that ...", "the name of my dentist": the thing whose name is asked.
_NAME_OF_THING = re.compile(r"\bname\s+of\s+(?:the|my|our|his|her|their|your|this|that)\s+([a-z][\w\-]*)")


def _unnamed_instance(sent: str, noun: str) -> bool:
    """Does ``sent`` speak of the asked thing only as *a* thing, with no name tied to it?

    "Which hotel am I staying at?" against "two nights at Maya's, then two nights in a
    hotel in town", "Which intern did we hire?" against "Lotte wants an intern": the
    sentence says such a thing exists, and its names are somebody else's. A name tied to
    the noun ("Scandic, a hotel by the harbour", "a hotel called Scandic", "Ana as an
    intern") still answers, as does any mention with "the" or none ("the Scandic hotel").
    """
    seen = False
    for m in re.finditer(rf"\b{re.escape(noun)}(?:s|es)?\b", sent, re.IGNORECASE):
        before = sent[:m.start()]
        det = re.search(_INDEFINITE + r"$", before, re.IGNORECASE)
        if det is None or det.group(0)[:1].isupper() and det.start() > 0:
            return False  # "the hotel", "Scandic hotel", "our hotel": no unnamed one
        if _TIED_BEFORE.search(before[:det.start()]) or _TIED_AFTER.match(sent, m.end()):
            return False
        seen = True
    return seen


#: A sentence told of somebody else's kin or acquaintance: "her partner Elias stays ...",
#: "his old boss ...".
_THIRD_OPENS = re.compile(r"^\W*(?:[Hh]is|[Hh]er|[Tt]heir)\s+([a-z][\w\-]*)(?:\s+([a-z][\w\-]*))?")


#: A relative clause describing a thing: "the child who played", "the printer that cut".
_RELATIVE = re.compile(r"\b(?:the|a|an|my|our|his|her|their)\s+(?:[\w\-]+\s+){1,3}?(?:who|that|which|whom|whose)\s+\w",
                       re.IGNORECASE)
#: A thing's release as a name and a version after it: "tern 3.0", "Python 3.12", "tern 1.x",
#: "Lucene version 6.0".
_RELEASE = re.compile(r"\b([A-Za-z][\w\-]*)\s+(?:version\s+)?v?(\d+(?:\.(?:\d+|[xX*]))+)(?![\w.]?\d)")


def _releases(text: str) -> dict[str, list[str]]:
    """The releases ``text`` names: ``{name (lower case): [version, ...]}``."""
    out: dict[str, list[str]] = {}
    for m in _RELEASE.finditer(text):
        if m.group(1).lower() not in STOPWORDS:
            # "Pellicle v0.12.0-rc1" is no 0.12.0
            out.setdefault(m.group(1).lower(), []).append(_tagged(text, m.group(2), m.end()))
    return out


def _same_release(a: str, b: str) -> bool:
    """"3.0" is "3.0.1" and "1.x" is "1.5": the parts both write agree."""
    return all(x == y or "x" in (x, y) or "*" in (x, y)
               for x, y in zip(a.split("."), b.split("."), strict=False))


def _other_release(sent: str, asked: dict[str, list[str]]) -> bool:
    """Does ``sent`` speak of another release of a thing the question names with its version
    ("tern 1.x gets security fixes until 2025-06-30" for "When is tern 3.0 going to be
    released?"), and of none the question names? Its dates and numbers are that release's."""
    said = _releases(sent)
    pairs = [(v, w) for name, vs in said.items() if name in asked for v in vs for w in asked[name]]
    return bool(pairs) and not any(_same_release(v, w) for v, w in pairs)


def _of_another(sent: str) -> bool:
    """Is ``sent`` told of somebody else's kin, with no word for the writer ("her partner
    Elias stays in Göteborg")? A question about the asker ("Which hotel am I staying at?")
    is not answered by it."""
    m = _THIRD_OPENS.search(sent)
    return m is not None and bool(_RELATIONS.intersection(m.groups())) and not _ASKER.search(sent)


def _names_any(sent: str, names: set[str]) -> bool:
    """Does ``sent`` write any of ``names`` (lower case)?"""
    return bool(_written(sent) & names)


def _own_statement(sent: str) -> bool:
    """Does ``sent`` state something in the first person (not ask it)?"""
    return bool(_ASKER.search(sent)) and not _asks(sent)


#: A day or a month in a file name: "journal/2023-05-08.md", "2024-03 review.md".
_PATH_DAY = re.compile(r"(?<!\d)(?:19|20)\d\d-[01]\d(?:-[0-3]\d)?(?!\d)")

#: A day written in numbers, year first: "Weekly sync 2024-05-13", a journal's "2024_05_13".
_NUMERIC_DAY = re.compile(r"(?<![\d.])((?:19|20)\d\d)[-_./](0?[1-9]|1[0-2])[-_./](0?[1-9]|[12]\d|3[01])(?![\d.])")
_MONTH_WORDS = ("January February March April May June July August September October November "
                "December").split()


def spelled_days(text: str) -> str:
    """``text`` with each day written in numbers also written in words: "2024-05-13" → "13 May 2024".

    A meeting note or a journal day is named by its date in numbers, while a question
    says "at the 13 May sync" or "on May 13": so the month's name is found where the
    notes wrote only its number.
    """
    days = [f"{int(d)} {_MONTH_WORDS[int(mo) - 1]} {y}" for y, mo, d in _NUMERIC_DAY.findall(text)]
    return text + "\n" + "\n".join(days) if days else text


def note_properties(conn: Any, path: str) -> dict[str, Any]:
    """The front matter of the note at ``path`` (YAML, Logseq's or Notion's properties); {} if none."""
    try:
        row = conn.execute("SELECT meta FROM documents WHERE path = ?", (path,)).fetchone()
        meta = (json.loads(row[0]) if row else {}).get("front_matter") or {}
    except Exception:  # noqa: BLE001 - a store without the column: no properties
        return {}
    return meta if isinstance(meta, dict) else {}


#: Properties that are not facts of the note: its title and other names (its hits' context
#: already) and its tags (what it is filed under: the question's words find them, and the
#: names in them, "tags:: [[travel]], [[Maya Lindqvist]]", answer nothing).
_OWN_NAMES = frozenset({"title", "alias", "aliases", "tags"})
#: The most words a property's value has to be read: a field ("Lotte Vanhaecke", "June 24,
#: 2024", four attendees), not prose. A ``description:`` restates the page in the question's
#: own words better than the sentence that holds the fact, and names nothing itself.
PROPERTY_WORDS = 16


def property_lines(front_matter: dict[str, Any], every: bool = False) -> list[str]:
    """A note's properties as the reader reads them: one ``key: value`` line each.

    A note tool keeps who, when and what of a page in its properties ("decided
    by: Lotte", "deadline: June 24", "author: ..."), often nowhere else in the
    page; a question asks for exactly those. The title and aliases are left
    out (they are every hit's context already), as are its tags, nested maps and
    values longer than :data:`PROPERTY_WORDS`. ``every``: all of them but nested maps,
    for finding the page's property lines in its text.
    """
    out = []
    for key, value in front_matter.items():
        if str(key).lower() in _OWN_NAMES and not every:
            continue
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value if not isinstance(v, dict | list))
        elif isinstance(value, dict) or value is None:
            continue
        text = str(value).strip()
        if text and (every or len(text.split()) <= PROPERTY_WORDS):
            out.append(f"{key}: {text}")
    return out


#: A Logseq block's own bookkeeping, no fact: "collapsed:: true", "id:: 65f1c2...".
_LOGSEQ_META = re.compile(r"^\s*(?:[-*]\s+)?(?:collapsed|id|heading|background-color)::(?:\s|$)")
_REF_MARKS = re.compile(r"\[\[|\]\]|(?<!\w)#")


def _property_key(line: str) -> str:
    """A property line folded for comparing: "Decided by: Lotte" and "decided by: Lotte" alike."""
    line = _REF_MARKS.sub("", line.strip().lstrip("-* ").replace("::", ":", 1))
    return re.sub(r"\s+", " ", line).lower()


def _without_properties(text: str, props: Sequence[str]) -> str:
    """``text`` without the page's property lines (``props``, as :func:`property_lines` writes
    them with ``every``: Logseq's first block, a Notion page's lines under its title), which
    the reader reads one by one, and without a Logseq block's bookkeeping (``collapsed::``).
    Joined into one sentence with their neighbours, "type:: trip tags:: [[travel]], [[Maya
    Lindqvist]] status:: planning" would lend the title's words to every name among them."""
    if "::" not in text and not props:
        return text
    own = {_property_key(p) for p in props}
    lines = text.split("\n")
    kept = [line for line in lines if not (_LOGSEQ_META.match(line) or own and _property_key(line) in own)]
    return text if len(kept) == len(lines) else "\n".join(kept)


def _note_is_a(hit: Any, noun: str, props: Callable[[Any], dict[str, Any]] | None) -> bool:
    """Is the hit's note an instance of ``noun`` (singular, lower case)? It sits in a folder
    named for the kind ("Clients/", Notion's "Clients 1e96…/"), its title says so ("Client:
    Museum Kanaalhuis"), or its ``type`` / ``category`` property does."""
    folders = str(getattr(hit, "path", "")).split("/")[:-1]
    if any(_singular(NOTION_ID.sub("", f).lower().replace("-", " ").replace("_", " ").strip()) == noun
           for f in folders):
        return True
    if hit.title.lower().startswith(noun + ":"):
        return True
    front = props(hit) if props is not None else {}
    return any(str(front.get(k, "")).strip().lower() in (noun, noun + "s") for k in ("type", "category"))


def note_dated(conn: Any, path: str, front_matter: dict[str, Any] | None = None) -> bool:
    """Is the note at ``path`` dated by its file name or its front matter (``date:``)?

    A journal day or a chat session dates what it tells ("I bought the camera."),
    as a date in its title or heading does; a note dated only in front matter
    shows the date in no sentence. A file name is read as the journal dialects
    name their days (:func:`pinakes.dialects.date_key`: Logseq's ``2023_01_01``,
    Roam's ``January 1st, 2023``) as well as by a day or month inside it
    (``2024-02-19-session-02``). ``front_matter``: the note's, when the caller holds it
    already (:func:`note_properties`), which saves the query.
    """
    if _PATH_DAY.search(path) or date_key(strip_suffix(path).rsplit("/", 1)[-1]):
        return True
    meta = note_properties(conn, path) if front_matter is None else front_matter
    return any(holds_typed(DATE, str(meta.get(f, "")), frozenset()) for f in DATE_FIELDS if meta.get(f))


#: The words that tell a tie between two people, by the kind of tie: a parent is told by
#: "mother", "son of", "born to", "née"; a marriage by "married", "wife", "widow", and a
#: monarch's by "consort" or "queen".
_TIES = {
    "parent": re.compile(r"\b(?:mother|father|parents?|mum|mom|dad|sons?|daughters?|child(?:ren)?|"
                         r"born\s+(?:to|of)|n[ée]e|stepmother|stepfather|stepson|stepdaughter)\b", re.I),
    "spouse": re.compile(r"\b(?:marri(?:ed|age|es)|marry(?:ing)?|wife|wives|husbands?|spouses?|"
                         r"wed(?:s|ded|ding)?|widow(?:s|ed|er)?|divorc(?:ed?|es|ing)|partners?|"
                         r"fianc[ée]e?|consorts?|queens?|concubines?|betrothed|engaged)\b", re.I),
    "sibling": re.compile(r"\b(?:sisters?|brothers?|siblings?|twins?|half-(?:sister|brother)s?)\b", re.I),
}
#: Each asked relation's tie: "Who was the mother of ..." is told where a parent is.
_TIE_OF = {**{w: "parent" for w in """mother father parent mom mum dad grandmother grandfather
    grandparent son daughter child stepmother stepfather stepson stepdaughter""".split()},
           **{w: "spouse" for w in "husband wife spouse".split()},
           **{w: "sibling" for w in "sister brother sibling".split()}}
_KIN_ADJ = r"(?:(?:paternal|maternal|late|first|second|biological|eldest|oldest|youngest|younger|elder)\s+)?"
#: "Who was the mother of the director of X?", "Who is Aurel Venn's mother?", "Who was Mirela
#: Koss married to?": a question asking who stands in a tie to somebody.
_ASKED_TIE = re.compile(
    r"^\s*(?:who|whom)\s+(?:is|was|are|were)\s+(?:the\s+" + _KIN_ADJ + r"(?P<a>[a-z]+)(?P<al>-in-law)?\s+of\b"
    r"|(?:[\w'’.\-]+\s+){0,6}?[\w.\-]+['’]s?\s+" + _KIN_ADJ + r"(?P<b>[a-z]+)(?P<bl>-in-law)?\s*\??\s*$"
    r"|.+?\s(?P<m>married)\s+to\s*\??\s*$)", re.I)


#: "Who was the first chairman of the Calvessan State Railway?", "Who is the maintainer of
#: tern?": a question asking who holds a role, and the role's noun.
_ASKED_ROLE = re.compile(r"^\s*who\s+(?:is|was|are|were)\s+(?:currently\s+)?the\s+(?:(?:first|current|last|new|"
                         r"founding|original|present|former|chief|head|lead|main|next|previous)\s+)?"
                         r"(?P<role>[a-z]{4,})\s+(?:of|at|for|in|on)\b", re.I)
#: A role's ending, which its verb does without: "director" by "directed", "chairman" by "chaired".
_ROLE_END = re.compile(r"(?:man|woman|person|ess|ist|er|or|ar|ee)$")


def asked_role(query: str) -> str | None:
    """The role a "Who was the first chairman of X?" question asks who holds (None for any
    other question, and for a tie between people, :func:`asked_tie`)."""
    m = _ASKED_ROLE.match(query)
    role = m.group("role").lower() if m else None
    if role is None or role in _RELATIONS or role in _TIE_OF or role in {"name", "person", "one", "man", "woman"}:
        return None
    return role


def role_pattern(role: str) -> re.Pattern[str]:
    """The words that tell who holds ``role``: the noun, and a verb of its stem ("directed
    by" for a director, "chaired" for a chairman, "founded" for a founder). A maker's role
    (an author, a composer, a director) is told by "by" and a name as well: "a novel by
    Theo Marchetti", "music by Pavel Dries"."""
    stem = _ROLE_END.sub("", role)
    stem = stem if len(stem) >= 3 else role
    maker = r"|\bby\s+(?:the\s+)?(?-i:[A-Z])" if re.search(r"(?:er|or|ist)$", role) else ""
    if _MAKING.fullmatch(role):  # an author or an inventor, told by any word of making
        maker += "|" + _MAKING.pattern
    return re.compile(r"\b(?:" + re.escape(role) + r"|" + re.escape(stem) + r")\w*" + maker, re.I)


#: "What is the default value of scanner.workers?", "the default page size": a default asked.
_ASKS_DEFAULT = re.compile(r"\b(?:the|its|their|a)\s+default\b|\bby\s+default\b|['’]s\s+default\b", re.I)
#: A setting's name as docs write it: "scanner.workers", "max_retries", "--result-ttl".
_SETTING = re.compile(r"(?<![\w.\-])(?:--?[a-z][\w\-]+|[A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*)+|[a-z]+_[a-z_\d]+)")


def default_told(query: str, texts: Sequence[tuple[str, str]], words: Sequence[re.Pattern[str]]) -> bool:
    """Whether a text tells the default the question asks for: a sentence, or a table row
    (under a header that says "default"), that says "default" and names the setting the
    question writes ("scanner.workers"), or, with no setting written, one of its other
    ``words`` (in the sentence or in its note's title and headings). "set `scanner.workers =
    2`" on a Pi is one user's value, and "`scanner.poll_interval` defaults to `15m`" is
    another setting's default. ``texts``: (title and headings, text) of each read hit."""
    keys = [k.lower() for k in _SETTING.findall(query)]
    default = re.compile(r"\bdefault", re.I)

    def names(line: str, context: str) -> bool:
        low = line.lower()
        if keys:
            return any(k in low for k in keys)
        return any(w.search(line) or w.search(context) for w in words)

    for context, text in texts:
        header = None
        for line in text.splitlines():
            if line.lstrip().startswith("|"):
                header = header or line
                if names(line, context) and (default.search(line) or default.search(header)):
                    return True
            else:
                header = None
        if any(default.search(sent) and names(sent, context) for sent in sentences(text)):
            return True
    return False


#: What follows "the mother of" when the person is reached through another fact: "the director
#: of X", "the man who ...".
_HOP = re.compile(r"\s*(?:the|a|an)\s+(?:[\w\-]+\s+){0,2}?[\w\-]+\s+(?:of|who|that|which|whom|whose)\b", re.I)


def asked_tie(query: str) -> tuple[str, re.Pattern[str], bool] | None:
    """The relation a "who is the mother of ..." question asks for, as written, the pattern
    of the words that tell that kind of tie, and whether the person is reached through
    another fact (None for any other question). A father-in-law is somebody's spouse's
    parent: the spouse is what a note must tell first."""
    m = _ASKED_TIE.match(query)
    if not m:
        return None
    if m.group("m"):
        return "married", _TIES["spouse"], False
    word = (m.group("a") or m.group("b") or "").lower()
    word = word[:-1] if word.endswith("s") and word[:-1] in _TIE_OF else word
    if word not in _TIE_OF:
        return None
    # "the mother of the director of X": the person is reached through another fact.
    hop = bool(m.group("a")) and bool(_HOP.match(query[m.end():]))
    return word, _TIES["spouse" if m.group("al") or m.group("bl") else _TIE_OF[word]], hop


#: A sentence that opens with its value, a quantity or a sum and no subject ("Train down from
#: Porto: the fast one. **2 hours 58 minutes**, €32.40 each."): a note's shorthand for more of
#: what the sentence before it tells. Not a date ("22 Nov: MOT booked": a unit is written in
#: small letters, a month is not), a clock ("10:05 - Gran: ...") or a year ("2019: moved"),
#: which open an entry of their own.
_OPENS_WITH_VALUE = re.compile(
    r"^[*_\s]*(?:[$€£¥]\s?\d|(?!(?:1[89]|20)\d\d\b)\d[\d,.]*(?![\d,.:/\-])\s?(?:%|[a-z]+\b))")
#: A word that names one thing: a capital followed by small letters or digits ("Samsung",
#: "T7", "X100V") past a sentence's first word. All capitals ("TB", "NFL") are left out:
#: units and acronyms name kinds of things as often as one thing.
_NAMED = re.compile(r"(?<=\s)[A-Z](?=[\w\-]*[a-z0-9])[\w\-]*")


def _named(sentence: str, asked: frozenset[str]) -> set[str]:
    """The names ``sentence`` mentions that the question does not."""
    return {w.lower() for w in _NAMED.findall(sentence)} - asked


#: Verbs that say little of what was done: their deed is told in other words as often as not.
_LIGHT_VERBS = frozenset("""get gets got gotten make makes made take takes took taken give gives gave
    given keep keeps kept let lets put puts bring brings brought go goes went come comes came
    help helps helped""".split())
#: Words of making something new, as verbs and as the maker's noun. Who made a thing is told
#: in any of them: "Who wrote ColBERT?" and "Who are the authors of ColBERT?" by "Omar Khattab
#: and Matei Zaharia of Stanford introduced the model", "Who invented X?" by "Y designed X".
_MAKING = re.compile(r"\b(?:invent(?:s|ed|ing|or|ors)?|creat(?:e|es|ed|ing|or|ors)|wr(?:ite|ites|ote|itten|"
                     r"iting|iter|iters)|(?:co-?)?author(?:s|ed|ing)?|develop(?:s|ed|ing|er|ers)?|"
                     r"design(?:s|ed|ing|er|ers)?|introduc(?:e|es|ed|ing)|propos(?:e|es|ed|ing)|"
                     r"devis(?:e|es|ed|ing)|coin(?:ed|ing)|conceiv(?:e|es|ed|ing)|originat(?:e|es|ed|ing|or|ors)|"
                     r"pioneer(?:s|ed|ing)?)\b", re.I)
#: "introduced by Omar Khattab", "made by my aunt": a passive's agent names who did it.
_BY_AGENT = re.compile(r"\bby\s+(?:[\w\-]+\s+){0,2}?(?:[A-Z]|(?:my|our|his|her|their)\b)")
#: A maker named by a noun: "the inventor", "its authors", "the lead developer".
_MAKER_NOUN = re.compile(r"(?:or|ors|er|ers|author|authors)$", re.I)
#: Words for a person that do a deed before its verb: "She wrote it", "my aunt designed it".
_PERSON_WORDS = frozenset("he she they we i".split()) | _RELATIONS


def _made_by_someone(sentence: str) -> bool:
    """Does ``sentence`` say who made something: a word of making (:data:`_MAKING`) with its
    maker, a name or a person before the verb ("Omar Khattab and Matei Zaharia of Stanford
    introduced the model") or after "by", or a maker's noun ("the inventor, Alan Adler")?
    "The same paper introduced the LoTTE benchmark" tells that something was made, not who
    made it: a paper is no maker a "who" asks for."""
    for m in _MAKING.finditer(sentence):
        if _MAKER_NOUN.search(m.group(0)) or _BY_AGENT.search(sentence, m.end()):
            return True
        clause = re.split(r"[;:.!?]\s", sentence[:m.start()])[-1]
        if any(w[:1].isupper() or w.lower() in _PERSON_WORDS for w in _agent_words(clause)):
            return True
    return False


_OPENING_DETERMINERS = frozenset("the a an this that these those it its our my your their his her".split())


def _agent_words(clause: str) -> list[str]:
    """The words of ``clause`` that may name its subject: all but an opening article or
    determiner ("The same paper"), which a capital does not make a name."""
    words = re.findall(r"[^\W\d_][\w\-']*", clause)
    if words and words[0].lower() in _OPENING_DETERMINERS:
        words = words[1:]
    return words


#: "Which Leica camera do I own?": the asker's own deed with a thing of the asked kind.
_ASKER_DEED = re.compile(r"\s*(?:which|what)\b[^?]*?\b(?:do|did|does)\s+(?:i|we)\s+"
                         r"(?:(?:still|usually|mostly|currently|actually|really)\s+)?([a-z][\w\-']*)")
#: A word of a sentence that is no part of a name: lower case, not a number.
_PLAIN_WORD = re.compile(r"(?<![\w/.])[a-z][a-z'\-]*\b")
#: A Markdown link's target and a bare URL: no words of the sentence.
_LINK_OR_URL = re.compile(r"\]\([^)]*\)|https?://\S+")


@dataclass(frozen=True)
class Deed:
    """The deed a question asks about (:func:`asked_deed`).

    ``term``: the verb as one of the query's terms (None when the verb is no
    content term: "own" is a stopword). ``asker``: the asker did it ("Which
    Leica camera do I own?"), and any sentence that says something of the thing
    may tell it ("Shoes: ASICS Novablast 4, replaced every 700 km" in the asker's
    running note), but not a bare entry of a list ("[Leica M10P]" among cameras
    worth a look): a name alone says that the thing exists, not what the asker
    does with it. Otherwise somebody did it ("Who invented ..."), and a
    passive's agent ("by Alan Adler") tells it.
    """

    term: str | None
    asker: bool = False
    making: bool = False  # a deed of making something new (:data:`_MAKING`), told by any of them

    def told(self, sentence: str, patterns: dict[str, re.Pattern[str]]) -> bool:
        """Does ``sentence`` tell this deed: its verb in some form, or who did it?"""
        if self.term is not None and patterns[self.term].search(sentence):
            return True
        if self.making and _made_by_someone(sentence):
            return True
        if self.asker:
            return bool(_PLAIN_WORD.search(_LINK_OR_URL.sub(" ", sentence)))
        return bool(_BY_AGENT.search(sentence))


def asked_deed(query: str, expected: Expected, terms: Sequence[str],
                patterns: dict[str, re.Pattern[str]]) -> Deed | None:
    """The deed a question asks about, when a name answers it only where the deed is told.

    * "who <verb>" ("invented" in "Who invented the Mashiko cup?"; not "who is / did
      ..."): a name in the sentence that matches best stands for the answer only where
      that sentence says the deed (any form of the verb) or names an agent ("by Alan
      Adler"): "Maya found her Mashiko cup in Kyoto" names Maya, not an inventor.
    * "which / what <thing> do I <verb>" ("Which Leica camera do I own?"): a name of the
      thing stands for the answer only where its sentence says the verb or anything
      beyond names. A bare list item ("- [Leica M10P](...)" among cameras worth a look)
      names a camera, not the asker's.

    None for any other question, a choice between names ("X or Y?") and light verbs
    ("got", "made"), whose deed is told in other words as often as not.
    """
    low = _normal(query)
    if _CHOICE.search(query):
        return None  # "Who lived longer, X or Y?": a choice between names the question gives
    if expected.relation:
        m = re.match(r"\s*(?:who|whom)\s+([a-z][\w\-']*)", low)
        asker = False
    elif expected.kind in (NAME, PLACE):
        m = _ASKER_DEED.match(low)
        asker = True
    else:
        return None
    if m is None or re.fullmatch(_AUX, m.group(1)):
        return None
    word = m.group(1)
    if word in _LIGHT_VERBS:
        return None  # "Who got Ines into volunteering?": "she asked if I could help" says it too
    if word in STOPWORDS:
        return Deed(None, asker) if asker else None
    term = next((t for t in terms if patterns[t].search(word)), None)
    return Deed(term, asker, making=not asker and bool(_MAKING.fullmatch(word))) if term is not None or asker else None


def asked_making(query: str, role: str | None) -> str | None:
    """The word of making (:data:`_MAKING`) that a "Who wrote X?" or "Who is the author of X?"
    question asks with, lower case; None for any other question. ``role``: the question's
    :func:`asked_role`."""
    m = re.match(r"\s*who\s+(?:first\s+|originally\s+|actually\s+)?([a-z][\w\-]*)", query, re.I)
    if m and _MAKING.fullmatch(m.group(1)):
        return m.group(1).lower()
    return role if role is not None and _MAKING.fullmatch(role) else None


def made_term(query: str, terms: Sequence[str], patterns: dict[str, re.Pattern[str]],
              role: str | None) -> str | None:
    """The query term that asks who made a thing ("wrote" in "Who wrote ColBERT?", "authors"
    in "Who are the authors of ...?"), which any word of making with its maker tells; None
    for any other question. ``role``: the question's :func:`asked_role`."""
    making = asked_making(query, role)
    return next((t for t in terms if patterns[t].search(making)), None) if making else None


def typed_gap(query: str, hits: Sequence[Any], terms: Sequence[str], idf: dict[str, float],
              patterns: dict[str, re.Pattern[str]], dated: Callable[[Any], bool] | None = None,
              speakers: frozenset[str] = frozenset(),
              props: Callable[[Any], dict[str, Any]] | None = None,
              ) -> tuple[Expected, float, set[str], str | None]:
    """What answers the question (:func:`answer_type`), the typed gap (see the module docstring), the best sentence's terms
    and the sentence whose token stands for the answer (None when none does).

    0 when the question's kind is not checkable, or when the sentence that
    matches the question best (or one as good) holds a token of that kind.
    ``dated(hit)``: whether the hit's note has a date of its own beyond its title
    and headings (:func:`note_dated`), which answers "when did ..." for all it tells.
    ``speakers``: as in :func:`answer_type`.
    ``props(hit)``: the hit's note's properties (its front matter), read one line each
    (:func:`property_lines`) and left out of its text's sentences.
    """
    expected = answer_type(query, speakers)
    kind = expected.kind
    if kind is None or not terms:
        return expected, 0.0, set(), None
    asked = {w.lower().replace("’", "'") for w in re.findall(r"[^\W_][\w'’\-.%]*", query)}
    asked |= {w.rstrip(".") for w in asked} | {w[:-2] for w in asked if w.endswith("'s")}
    frozen = frozenset(asked)
    about_asker = bool(_ASKER.search(query))
    mass = sum(idf.get(t, 0.0) for t in terms) or 1.0
    # The kind's own noun keeps its share of the question but matches no sentence to it:
    # "my accountant's name" is not found in a sentence that only says "name".
    kind_noun = kind_word(query)
    # "What day of the week": both of the phrase's nouns name the kind.
    kind_nouns = {kind_noun, "day", "week"} if kind == WEEKDAY else {kind_noun}
    idf = {t: 0.0 if t in kind_nouns else v for t, v in idf.items()}
    # "Which client's invoices ...?": a note that is a client (in a "Clients" folder, titled
    # "Client: Museum Kanaalhuis", typed "client") answers with its own name.
    owner = re.match(r"\s*(?:which|what)\s+([a-z][\w\-]*)['’]s\b", query.lower())  # "which client's"
    noun = owner.group(1) if owner else wh_noun(query)
    if noun == "name" and (of := _NAME_OF_THING.search(query.lower())):
        noun = of.group(1)  # "What was the name of the hotel ...?": a hotel's
    instance = _singular(noun) if noun and re.match(r"\s*(?:which|what)\b", query.lower()) else None
    scored: list[tuple[float, int, int]] = []  # (share, hit, sentence)
    matched: dict[tuple[int, int], set[str]] = {}  # the terms each sentence holds
    # Per hit (and per note's properties): its sentences, whether its context is typed, each
    # sentence's paragraph and turn, each paragraph's parent item.
    per_hit: list[tuple[list[str], bool, list[int], list[tuple[str, int] | None], list[int | None]]] = []

    def score(i: int, got: set[str]) -> float:
        """Record sentence ``i`` of the last entry of ``per_hit`` as holding ``got``; its share."""
        share = sum(idf.get(t, 0.0) for t in got) / mass
        scored.append((share, len(per_hit) - 1, i))
        matched[len(per_hit) - 1, i] = got
        return share

    best_own, own_terms = 0.0, set()
    # "Who wrote X?": a sentence that says who made X in another word of making holds the
    # asked verb, as a hit does in :func:`assess`.
    made = made_term(query, terms, patterns, asked_role(query))
    versions = _versions(query)  # "the bug that 2.3.1 fixed": a bare version, no name before it
    released: set[int] = set()  # the hits under a dated heading of the asked release
    for h in hits:
        context = spelled_days(f"{h.title}\n{' > '.join(h.heading_path)}")
        in_context = {t for t in terms if patterns[t].search(context)}
        if kind == DATE:  # a journal's "2019 February", a changelog's "v1.2" dates every line
            # ... but not for another release: under "Ferrowave 3.0" or "3.0.0 — 2024-04-22",
            # a line dates 3.0, not the 2.9 or 2.0 the question asks about.
            other = bool(versions) and bool(named := _versions(context)) and not any(
                _same_release(v, w) for v in named for w in versions)
            context_typed = not expected.undated and not other and (
                holds_typed(kind, context, frozen) or (dated is not None and dated(h)))
            if context_typed and versions and named:
                released.add(len(per_hit))  # this hit's heading dates the release asked about
        elif kind in (NAME, PLACE):  # a heading "~/src/clones" names the folder asked for
            context_typed = bool(_PATH.search(context) or _CODE.search(context)) or bool(
                expected.beside[0]) and holds_typed(expected, context, frozen) or (  # "# Maya Lindqvist"
                instance is not None and kind == NAME and _note_is_a(h, instance, props))
        else:
            context_typed = False
        page = property_lines(props(h), every=True) if props is not None else []
        numbered, parents = outline(_without_properties(h.text, page))
        sents = [sent for _, sent in numbered]
        turn = sentence_turns(sents)
        per_hit.append((sents, context_typed, [n for n, _ in numbered], turn, parents))
        # A turn's label ("**Tomas:**") speaks for each of its sentences, not only the first.
        labels = {who: {t for t in terms if patterns[t].search(who)} for who, _ in filter(None, turn)}
        for i, sent in enumerate(sents):
            got = {t for t in terms if patterns[t].search(sent)} | in_context
            if made is not None and got and made not in got and _made_by_someone(sent):
                # "Who wrote ColBERT?": "Omar Khattab ... introduced the model", under ColBERT's
                # title; not a sentence of nothing else asked ("a poem her grandmother wrote").
                got.add(made)
            if turn[i] is not None:
                got |= labels[turn[i][0]]
            share = score(i, got)
            if about_asker and share > best_own and _own_statement(sent):
                best_own, own_terms = share, got
    # A note's properties ("decided by: Lotte Vanhaecke") are read once per note, each line on
    # its own: next to no other line, and only where the line itself holds an asked word. The
    # title's words count for it, as for the note's sentences; alone they would let any date
    # or name among the properties answer whatever is asked about the note.
    props_at: set[int] = set()
    firsts: dict[str, Any] = {}
    for h in hits if props is not None else ():
        firsts.setdefault(h.path, h)
    for h in firsts.values():
        lines = property_lines(props(h))
        if not lines:
            continue
        in_context = {t for t in terms if patterns[t].search(spelled_days(h.title))}
        per_hit.append((lines, False, list(range(len(lines))), [None] * len(lines), [None] * len(lines)))
        props_at.add(len(per_hit) - 1)
        for i, line in enumerate(lines):
            own = {t for t in terms if patterns[t].search(line)}
            if own:
                score(i, own | in_context)
    # The best match: the first sentence with the largest share (none when nothing matches).
    top = max(scored, default=(0.0, -1, -1), key=lambda x: x[0])
    best_all, best_terms = (top[0], matched[top[1], top[2]]) if top[0] > 0.0 else (0.0, set())
    if best_own > 0.0:
        # A question about the asker is answered where the notes speak for the asker. In a
        # chat log the assistant's advice repeats the question's words ("keep taking the
        # higher dose") while the fact sits in the user's turn ("my doctor bumped me up to
        # 4,000 IU a day"); a question in the notes ("... with the higher dose?") states
        # nothing. So the gap is measured from the best first-person statement, when any
        # top hit has one; other notes (docs in "you", a third-person page) read as before.
        best_all, best_terms = best_own, own_terms
    # Best-matching sentences first; reading stops once no sentence left can do better.
    typed: dict[tuple[int, int], bool] = {}

    # A question about the asker's life is not answered by an assistant's turn: it gives advice
    # and general facts ("the weather in Sintra is often cooler"), whose names and numbers are
    # theirs. Unless the question asks what "you" said ("Which hotel did you suggest?").
    skip_advice = about_asker and not _YOU.search(query)
    # A question about someone else the asker names ("What was Idris's finish time?") is
    # not answered by the writer's own words ("I finished in 58:14"): a sentence in the
    # first person singular that names none of the question's names and points to nobody
    # else ("he", "it", "my husband"), unless it is that person's own turn in a chat.
    written_names = {w.lower() for w in _NAME_WRITTEN.findall(query)}
    # A chat server's users go by handles in small letters ("jgrebe's library"): a word of the
    # question that is a speaker's label names that speaker as a capital would.
    written_names |= asked & {t[0].lower() for hit in per_hit for t in filter(None, hit[3])}
    others = set() if about_asker else written_names
    # Nor is a question about someone or something the asker names ("What was Marcus's finish
    # time in the half marathon?") answered by an assistant's sentence that names none of
    # them: its numbers and names are its advice's ("a two-hour finish works out to roughly
    # 9:09 per mile"), unless the question asks what "you" said.
    relay = bool(others) and not _YOU.search(query)
    # In a chat, a question about one of its speakers ("Where is Tomasz going for his
    # holiday?") is not answered by another speaker telling of themselves ("**Ayla**: I'm
    # off 14 to 21 April, going to stay with my sister in Izmir"), unless they name him.
    told_by = Counter(t[0] for hit in per_hit for t in dict.fromkeys(filter(None, hit[3]))) if others else Counter()
    asked_of = [w for w, n in told_by.items() if n >= MIN_TURNS and w.split()[0].lower() in others]
    speaker_of = asked_of[0] if len(asked_of) == 1 and len(told_by) > 1 else None
    at_names = _at_names(query)
    kind_names, named_kinds = _named_kinds(query)
    labels: dict[int, list[str | None]] = {}
    releases = _releases(query)
    # "my sister Ruth's birthday": the asker's kin, by the relation's noun.
    my_kin = {m.group(1).lower() for m in _MY_KIN.finditer(query) if m.group(1).lower() in _RELATIONS}
    # "When is the Berlingo due its MOT?": a note with a section headed by the name the
    # question writes ("## Berlingo") tells of it there; a sibling section headed by another
    # ("## Skoda": "MOT due again 22 Nov") tells of that one, unless its sentence names it.
    heading_names = {n for h in hits if written_names and len(h.heading_path) > 1
                     for n in written_names & _written(h.heading_path[-1])}
    headed = {h.path for h in hits if heading_names & _written(h.heading_path[-1])} if heading_names else set()

    def holds(hi: int, si: int) -> bool:
        if (hi, si) not in typed:
            sent = per_hit[hi][0][si]
            if (skip_advice or others) and hi not in labels:
                labels[hi] = sentence_labels(per_hit[hi][0])
            typed[hi, si] = not (
                skip_advice and labels[hi][si] in ASSISTANT_LABELS
                or others and labels[hi][si] not in others and _writers_own(sent, others)
                or relay and labels[hi][si] in ASSISTANT_LABELS and not _names_any(sent, others)
                or at_names and _swapped(sent, at_names, frozen)
                or bool(named_kinds) and _other_named(sent, kind_names, named_kinds)
                or about_asker and _of_another(sent)
                or bool(my_kin) and _anothers_kin(sent, my_kin)
                or instance is not None and kind in (NAME, PLACE) and _unnamed_instance(sent, instance)
                or releases and _other_release(sent, releases)
                or bool(versions) and _tells_other_version(hits[hi] if hi < len(hits) else None, sent, versions,
                                                           frozen if expected.version else frozenset())
                or bool(headed) and hi < len(hits) and _sibling_section(hits[hi], headed, heading_names, sent)
                or speaker_of is not None and per_hit[hi][3][si] is not None
                and per_hit[hi][3][si][0] != speaker_of and _own_statement(sent)
                and not _names_any(sent, {speaker_of.split()[0].lower()})
                or kind == DATE and bool(ends) and _tells_other_end(sent, ends)
                or kind == QUANTITY and per_hit[hi][3][si] is None and _labels_another(sent, frozen)
                and not any(patterns[t].search(sent) for t in terms)
            ) and holds_typed(expected, sent, frozen)
        return typed[hi, si]

    ends = _asked_end(query) if kind == DATE else None
    deed = asked_deed(query, expected, terms, patterns)

    def another_release(hi: int, si: int) -> bool:
        """A dated context dates its lines, not another release one of them announces: a chat
        line of 15 October ("**Pellicle v0.12.0-rc1** (2025-10-15)") dates no 0.12.0."""
        sent = per_hit[hi][0][si]
        return bool(releases) and _other_release(sent, releases) or bool(versions) and _tells_other_version(
            None, sent, versions)

    def says(hi: int, si: int) -> bool:
        """The sentence tells the deed the question asks about (or none is asked)."""
        return deed is None or deed.told(per_hit[hi][0][si], patterns)

    names: dict[tuple[int, int], set[str]] = {}

    def names_of(hi: int, si: int) -> set[str]:
        if (hi, si) not in names:
            names[hi, si] = _named(per_hit[hi][0][si], frozen)
        return names[hi, si]

    # "the child who played ...", "the printer that cut ...": the question describes a thing
    # it asks about through another fact, which may sit in another note.
    relative = bool(_RELATIVE.search(query))
    plain = replace(expected, relation=False, preposition=False)
    in_paragraph: dict[tuple[int, int], set[str]] = {}

    def paragraph_names(hi: int, p: int) -> set[str]:
        """The names of paragraph ``p`` of hit ``hi`` that the question does not write."""
        if (hi, p) not in in_paragraph:
            sents, _, paragraph, *_rest = per_hit[hi]
            in_paragraph[hi, p] = set().union(*(names_of(hi, j) for j in range(len(sents)) if paragraph[j] == p))
        return in_paragraph[hi, p]

    best_typed, answer_at = 0.0, None
    # "When did Burrow 3.0.0 reach the stable channel?": under "3.0.0 — 2023-11-28" the
    # heading holds the date and the version, and the changelog's opening says what its
    # dates are ("the day the release reached the stable channel"). A section of the asked
    # release is credited with its note's best match: the note tells the rest of the question.
    for hi in released:
        path = hits[hi].path
        note_best = max((share for share, hj, _ in scored if hj < len(hits) and hits[hj].path == path), default=0.0)
        if note_best > best_typed and per_hit[hi][0]:
            best_typed, answer_at = note_best, per_hit[hi][0][0]
    for share, hi, si in sorted(scored, key=lambda x: -x[0]):
        if share <= best_typed:
            break
        told_here = says(hi, si)  # a neighbour's name answers when either sentence tells the deed
        if per_hit[hi][1] and not another_release(hi, si) or holds(hi, si) and told_here:
            best_typed, answer_at = share, per_hit[hi][0][si]
            break
        if hi in props_at:
            continue
        sents, _, paragraph, turn, parents = per_hit[hi]
        # The sentences either side; in a conversation, the teller's others in this turn and
        # in their next or last one, past the other's "how did it go?" ("I ran the charity
        # 5K." ... "I finished in 27 minutes.").
        here = turn[si]
        partners = {k for k in (si - 1, si + 1) if 0 <= k < len(sents)}
        # "Time Machine to a Samsung T7 drive. (...) The T7 holds 2 TB.": a sentence of the
        # same section that names what this one names speaks of the same thing.
        mine = names_of(hi, si) if kind in (QUANTITY, DATE) else set()
        same = {k for k in range(len(sents)) if k != si and mine & names_of(hi, k)} if mine else set()
        # An item nested under this sentence's item, or the item this one is nested under.
        nested = {k for k in range(len(sents)) if paragraph[k] != paragraph[si] and (
            parents[paragraph[k]] == paragraph[si] or parents[paragraph[si]] == paragraph[k])}
        partners |= same | nested
        if here is not None:
            partners |= {k for k, there in enumerate(turn) if there is not None and k != si
                         and there[0] == here[0] and abs(there[1] - here[1]) in (0, 2)}
        for k in sorted(partners):
            near = abs(k - si) == 1
            told = here is not None and turn[k] is not None and turn[k][0] == here[0]
            if not holds(hi, k) or not (told_here or says(hi, k)):
                continue
            # "I bought a secondhand wheel. I paid $260 for it.": when the neighbour in the
            # same paragraph (or the teller's same story) holds asked words of its own, or
            # is the next sentence and points back ("My shoes are Saucony Rides. I bought
            # *them* for $140."), the two answer together.
            both = matched[hi, si] | matched[hi, k]
            # It speaks of the same thing: it repeats a name, or it is next and points back, or
            # it is the short label opening this sentence's list item, whose subject the rest
            # leaves out ("- **Jasper Willaert**, operations. Handles print orders ...").
            label = (k < si and paragraph[k] == paragraph[si] and parents[paragraph[si]] is not None
                     and (k == 0 or paragraph[k - 1] != paragraph[k])
                     and len(sents[k].split()) <= LABEL_WORDS)
            # "1 Feb: apple tree in! Egremont Russet, from Fenwright's Garden Centre.": a short
            # labelled line opening its paragraph ("<label>: ...") is a heading of sorts, as a
            # list item's label is, and the sentence after it tells more of what it names. A
            # short sentence of its own ("My running shoes are Saucony Rides.") is not.
            opener = (k == si + 1 and paragraph[k] == paragraph[si] and len(sents[si].split()) <= LABEL_WORDS
                      and ":" in sents[si] and (si == 0 or paragraph[si - 1] != paragraph[si]))
            refers = (k in same or k in nested or label or opener or k == si + 1 and (
                bool(_BACK.search(sents[k])) or bool(_OPENS_WITH_VALUE.match(sents[k]))))
            own = ((both != matched[hi, si] or refers)
                   and (told or k in same or k in nested or paragraph[k] == paragraph[si])
                   and sum(idf.get(t, 0.0) for t in both) / mass)
            credit = own or (NEIGHBOUR_CREDIT * share if near else 0.0)
            if credit > best_typed:
                best_typed, answer_at = credit, sents[k]
        if not relative:
            continue
        # A bridge: "Who teaches the child who played a Petzold minuet?" describes the child
        # in one note ("Noor had her first piano recital. She played a minuet by Petzold.") and
        # asks of her in another ("My daughter Noor starts piano lessons. Her teacher is Mrs.
        # Halvorsen."). A sentence of another top hit whose paragraph names what this one's
        # paragraph names, beyond the question's names, tells the rest; for a name, neither the
        # one they share nor a relation ("my daughter Noor") is an answer.
        bridge = paragraph_names(hi, paragraph[si])
        for hj, (other, _, para, *_rest) in enumerate(per_hit):
            if not bridge or hj == hi or hj in props_at:
                continue
            for k in range(len(other)):
                shared = bridge & paragraph_names(hj, para[k])
                if not shared or not holds(hj, k) or not (told_here or says(hj, k)):
                    continue
                if kind in (NAME, PLACE) and not holds_typed(plain, other[k], frozen | shared):
                    continue  # "My daughter Noor starts lessons": the child again, no teacher
                credit = sum(idf.get(t, 0.0) for t in matched[hi, si] | matched[hj, k]) / mass
                if credit > best_typed:
                    best_typed, answer_at = credit, other[k]
    return expected, max(0.0, best_all - best_typed), best_terms, answer_at
