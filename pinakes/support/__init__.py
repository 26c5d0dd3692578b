"""Does the evidence support what the question *asks*, not just what it is *about*?

Every retrieval feature of the confidence (top cosine, agreement of the
lists, coverage of the query's words) measures how well the hits match the
question as a whole. A near miss matches it well: the notes name the
subject and say nothing about the asked detail ("who invented the French
press" against a note that describes the press and never its inventor). So
the question is split in two:

* **what it is about**: the names it mentions, as whole token sequences:
  document titles (and a title without its trailing parenthetical),
  front-matter ``aliases`` and, when a graph deriver made them, entity node
  labels. The same longest-name matching the graph channel seeds from
  (:func:`pinakes.text.name_spans`), read from the store, so it works with no
  graph plugin installed;
* **what it asks**: the remaining content words ("invented", "learning
  rate"), without the dimension word of "how many / how much / how big"
  (:data:`pinakes.text.DIMENSIONS`).

and three things are measured, cheaply (regexes over the few hits the search
already holds, IDF from the search's own cache):

``asked_gap``
    in each of the top hits (:func:`support_window`: three, five for a bridge
    question), the largest share of the query's IDF mass carried by one asked
    word the hit does not contain; the
    best of those hits (the smallest gap) is the feature. 0 when some top hit
    holds every asked word; ~0.4 for "who invented the French press" against
    a note that never says "invent". A share of the query's mass, so it
    reads the same on any corpus and any query length. For a question whose
    answer kind the reader checks (``typed_missing`` below) the gap is
    scaled by that feature: when the best-matching sentence holds a token of
    the asked kind, the missing word is the relation said another way ("Who
    *wrote* ColBERT?" against "introduced by Omar Khattab"), not a gap. For
    "who <verb>" that holds only where the name's sentence says the deed in
    some form or names an agent ("by ..."): "My aunt Greta gave me this
    French press in Lisbon" names two things and no inventor. For "which
    <thing> do I <verb>" it holds only where the sentence says the verb or
    anything beyond names: a bare list entry ("[Leica M10P]" among cameras
    worth a look) names a camera, not the one the asker owns
    (:func:`asked_deed`; light verbs such as "got" and "made" are exempt).
``unknown_name``
    1 when the question writes a name (a capitalised word past the first, an
    all-caps or letters-and-digits token) that occurs nowhere in the KB:
    "What BLEU score did ...", "... LlamaIndex's SentenceSplitter". The notes
    cannot hold a fact about something they never mention.

``typed_missing``
    a cheap reader of answer types. The question's wh-phrase says what kind
    of token its answer is (:func:`answer_type`): a quantity ("how many",
    "what size", "what MRR@10"), a date ("when was", "which release"), a name
    ("who", "what is the name of", "which X"), a place ("where", "in which
    city"), a colour or a day of the week (closed classes), a clock reading
    ("what time"), a span ("my finish time"), a password written out ("the wifi
    password": "password: puffin-harbour7"), or nothing
    checkable ("why", "how do I", yes/no, two questions of different kinds in
    one; two of one kind are checked as that kind). The
    top hits are read sentence by sentence; the sentence that matches the
    question best (the largest share of its IDF mass, the hit's title and
    headings counting for every sentence under them) should hold a token of
    that kind (a number, a year or month, a capitalised word or code span
    the question does not contain, a month or weekday never being a name or
    a place, ...). For a question about the asker (I,
    my, we), the best sentence is the best first-person statement when a top
    hit has one: in a chat log the assistant's advice repeats the question's
    words, and the fact sits in the user's own turn. Nor does a token in an
    assistant's turn answer such a question (:func:`sentence_labels`):
    its names and numbers are its advice's, unless the question asks what
    "you" said. Conversely, a question about someone else it names is not
    answered by the writer's own words ("What was Idris's finish time?"
    against "I finished in 58:14"; :func:`_writers_own`). The gap between that best
    sentence and the best one that does hold such a token (a neighbouring sentence's
    token counts half; one that tells more of the same thing counts in full: a next
    sentence that points back, a nested list item or the one it hangs under, its list
    item's short opening label: :func:`outline`) is 0 for an answer and large for a near
    miss: "What font size do I use in VS Code?" against "I use VS Code ... with
    JetBrains Mono font" (no number anywhere near), "What is the name of the cat ..."
    against "I also have a cat that likes to visit" (no name). The noun that
    names the kind ("name", "time", "colour": :func:`kind_word`) keeps its
    share of the question but matches no sentence to it, and when no sentence
    of the top hits holds an asked word at all, the typed gap is the asked
    gap: "What's my accountant's name?" is not answered by "each file name
    starts with the date". A name the question writes that none of the top
    hits holds (nor other hits of their notes) makes the feature 1: the
    token found is another thing's ("How much disk space does a Rust for
    Linux build need?" against "a Fuchsia checkout and build takes 46G").
    So does a "what / which / how" question two of whose asked words (beyond
    its names, the kind's noun and relations to a person) the top hits all
    lack: a token there sits near the subject and answers something else
    ("Which hotel did we stay at in Kyoto?" against "Maya found her Mashiko
    cup in a shop in Kyoto"; :func:`asks_thing`).
    The feature
    ramps from 0 at a gap of :data:`TYPED_GAP_FROM` (a stray word) to 1 at
    :data:`TYPED_GAP_FULL` (a main content word of the question).

``other_speaker``
    in a conversation between named people ("**Ines:** ...", "**Tomas:** ..."),
    whether the asked part is said of the person the question names, or only
    by the other speaker of themselves (:func:`speaker_gap`): "What did Ines
    realise after her charity 10K?" against Tomas's "I ran the charity 10K and
    realised ...". Ramped like ``typed_missing``; 0 on any other KB.

All four go to the calibrator (:mod:`pinakes.evaluation.calibration`), which
decides what they are worth; :meth:`Support.reason` turns them into the
sentence an abstaining result carries ("found 'French press', nothing on
'invented'"; "found 'VS Code' and 'font', but no number near them"; "found
'charity' and '10K' in what Tomas said, nothing of it about Ines").
Measured leads that did not pay (docs/benchmarks.md): a second short
embedding of the asked part against the hits or their sentences, the
wh-phrase's head noun ("which *chair*") missing from the hits: the answer to
"what X" is an instance of X, rarely the word X, so its absence says little
(the reader asks instead for a token that *could* be an instance).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, is_dataclass, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..dialects import doc_aliases
from ..text import (
    NAME_TOKEN_RE,
    STOPWORDS,
    content_terms,
    fold,
    name_spans,
    name_tokens,
    strip_qualifier,
    term_pattern,
)
from .lexicon import (
    _ACRONYM_PLURAL,
    _DECADE,
    _END_UP,
    _NUMERONYM,
    _ORDINAL,
    _SLIGHT,
    _WORD,
    BRIDGE_HITS,
    MIN_UNKNOWN_CHARS,
    OTHER_HITS,
    SUPPORT_HITS,
)
from .questions import (
    _CHOICE,
    _DAYS,
    _MONTHS,
    _RELATIONS,
    _WEEKDAYS,
    COLOUR,
    DATE,
    MIN_ASKED_UNHELD,
    NAME,
    PLACE,
    QUANTITY,
    TYPED_GAP_FROM,
    TYPED_GAP_FULL,
    UNCHECKED,
    WEEKDAY,
    Expected,
    answer_type,
    asks_thing,
    kind_word,
    measured,
    wh_noun,
)
from .reader import (
    _ASKS_DEFAULT,
    _RELATIVE,
    _SETTING,
    Deed,
    _made_by_someone,
    _same_release,
    _versions,
    asked_deed,
    asked_role,
    asked_tie,
    default_told,
    made_term,
    note_dated,
    note_properties,
    property_lines,
    role_pattern,
    spelled_days,
    typed_gap,
)
from .sentences import _TURN, holds_typed, outline, sentences
from .speakers import sentence_turns, speaker_gap, turns

if TYPE_CHECKING:
    from ..kb import KB

#: What the package offers; the rest is each module's own.
__all__ = [
    "COLOUR",
    "DATE",
    "Deed",
    "Expected",
    "NAME",
    "PLACE",
    "QUANTITY",
    "Support",
    "TYPED_GAP_FULL",
    "UNCHECKED",
    "WEEKDAY",
    "answer_type",
    "asked_deed",
    "asks_thing",
    "assess",
    "assess_search",
    "holds_typed",
    "kind_word",
    "known_names",
    "lead_section",
    "measured",
    "outline",
    "property_lines",
    "read_hits",
    "release_sections",
    "sentence_turns",
    "sentences",
    "speaker_gap",
    "spelled_days",
    "support_window",
    "turns",
    "typed_gap",
    "wh_noun",
]


@dataclass
class Support:
    """What a question is about and asks, and how much of it the top hits hold."""

    about: list[str] = field(default_factory=list)  # names found in the question, as written
    asked: list[str] = field(default_factory=list)  # asked terms (lower case)
    unsupported: list[str] = field(default_factory=list)  # asked terms no top hit holds
    unknown: list[str] = field(default_factory=list)  # names found nowhere in the KB, as written
    found: list[str] = field(default_factory=list)  # query terms the best hit holds (no names)
    gap: float = 0.0
    expected: Expected = field(default_factory=lambda: UNCHECKED)  # what answers the question
    typed_gap: float = 0.0  # best sentence's share minus the best typed sentence's
    near: list[str] = field(default_factory=list)  # what the best sentence holds, as written
    speaker: str | None = None  # the one speaker of a conversation the question names
    said_by: str | None = None  # the other speaker, whose words hold the asked part
    speaker_gap: float = 0.0  # the asked part's share in said_by's words minus in speaker's
    said: list[str] = field(default_factory=list)  # the asked words said_by's sentence holds
    answer_at: str | None = None  # the sentence whose token stands for the typed answer
    kind_noun: str = ""  # the noun naming the checked answer kind ("name", "time"); "" if none
    absent: float = 0.0  # the share of the query's terms that no chunk of the KB holds
    untold: str = ""  # what the read notes do not tell, when a rule found it ("no default for ...")

    @property
    def expects(self) -> str | None:
        """The answer's kind (QUANTITY, DATE, NAME, PLACE, COLOUR, WEEKDAY), or None."""
        return self.expected.kind

    @property
    def expects_what(self) -> str | None:
        """The answer as a reason names it ("amount of money", "number")."""
        return self.expected.what

    @property
    def typed_missing(self) -> float:
        """The typed gap as a 0..1 ramp: a stray word is no gap, a main content word is."""
        return _gap_ramp(self.typed_gap)

    @property
    def features(self) -> tuple[float, float, float, float, float]:
        """``(asked_gap, unknown_name, absent, typed_missing, other_speaker)`` for the calibrator."""
        return self.gap, 1.0 if self.unknown else 0.0, self.absent, self.typed_missing, self.other_speaker

    @property
    def other_speaker(self) -> float:
        """The speaker gap on the typed gap's ramp: one stray word said only by the other
        speaker is no gap, a main content word of the question is."""
        return _gap_ramp(self.speaker_gap)

    def reason(self) -> str:
        """Which part of the question found no support, in one line (for an abstention).

        "nothing in the notes mentions 'BLEU'"; "found 'French press', nothing on
        'invented'"; and when every word was found somewhere, that the matches
        are weak, so an agent knows to rephrase rather than to look for a gap.
        """
        if self.unknown:
            return f"nothing in the notes mentions {_quoted(self.unknown)}"
        if self.speaker and self.said_by and self.other_speaker >= 0.5:
            return (f"found {_quoted(self.said or self.asked, 'and')} in what {self.said_by} said,"
                    f" nothing of it about {self.speaker}")
        if self.untold and self.typed_missing >= 0.5:
            return f"found {_quoted(self.about, 'and')}, but {self.untold}" if self.about else self.untold
        # "What is the name of my dentist?": notes seldom write the kind's own noun, so its
        # absence is not the gap to name; the missing name is.
        unsupported = [w for w in self.unsupported if w.lower() != self.kind_noun]
        if unsupported:
            subject = self.about or self.found
            head = f"found {_quoted(subject, 'and')}, " if subject else ""
            return f"{head}nothing on {_quoted(unsupported)}"
        if self.expects and self.typed_missing >= 0.5:
            near = self.near or self.about or self.found
            what = self.expects_what
            if not near:
                return f"no {what} in the best matches"
            return f"found {_quoted(near, 'and')}, but no {what} near {'it' if len(near) == 1 else 'them'}"
        return "the best matches are weak: no note matches the question closely"

    def to_dict(self) -> dict[str, Any]:
        return {"about": list(self.about), "asked": list(self.asked),
                "unsupported": list(self.unsupported), "unknown": list(self.unknown),
                "asked_gap": round(self.gap, 4), "expects": self.expects,
                "expects_what": self.expects_what,
                "typed_gap": round(self.typed_gap, 4), "speaker": self.speaker,
                "said_by": self.said_by, "speaker_gap": round(self.speaker_gap, 4),
                "absent": round(self.absent, 4), "answer_at": self.answer_at}


def _clip(sentence: str, most: int = 160) -> str:
    """A sentence short enough for an explanation line."""
    return sentence if len(sentence) <= most else sentence[:most - 1].rstrip() + "…"


def _gap_ramp(gap: float) -> float:
    """0 up to :data:`TYPED_GAP_FROM` (a stray word), 1 from :data:`TYPED_GAP_FULL`."""
    return min(1.0, max(0.0, (gap - TYPED_GAP_FROM) / (TYPED_GAP_FULL - TYPED_GAP_FROM)))


def _quoted(words: Sequence[str], joiner: str = "or", most: int = 3) -> str:
    shown = [f"'{w}'" for w in words[:most]]
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + f" {joiner} " + shown[-1]


# --- what the question is about ---------------------------------------------------------


def known_names(kb: KB, conn: Any, generation: int) -> dict[tuple[str, ...], str]:
    """Token sequence -> label of every name the KB knows, cached per store generation.

    Titles, titles without a trailing "(qualifier)", front-matter ``aliases``,
    and the labels of ``entity`` nodes when a graph deriver made them (the
    mentions plugin's titles and aliases, NER names). Names made only of stop
    words never count, nor do single characters.
    """
    cache = kb._idf_cache
    hit = cache.get("_names")
    if hit is not None and hit[0] == generation:
        return hit[1]
    labels: list[str] = []
    for title, front in conn.execute(
        "SELECT title, json_extract(meta, '$.front_matter') FROM documents"
    ):
        if title:
            labels.append(str(title))
            short = strip_qualifier(str(title))
            if short != title:
                labels.append(short)
        if front:
            # The aliases the link resolver reads, in every note tool's form (pinakes.dialects).
            with contextlib.suppress(ValueError):
                fm = json.loads(front)
                labels.extend(doc_aliases(fm) if isinstance(fm, dict) else [])
    try:
        labels.extend(str(r[0]) for r in conn.execute(
            "SELECT label FROM nodes WHERE kind = 'entity' AND label IS NOT NULL"))
    except Exception:  # noqa: S110 - a store without graph tables: titles alone
        pass
    names: dict[tuple[str, ...], str] = {}
    for label in labels:
        toks = name_tokens(label)
        if toks and not all(t in STOPWORDS for t in toks) and sum(map(len, toks)) > 1:
            names.setdefault(toks, label)
    cache["_names"] = (generation, names)
    return names


def _about(query: str, names: dict[tuple[str, ...], str]) -> tuple[list[str], set[str]]:
    """The names the query mentions (as it writes them) and their lower-cased tokens."""
    raw = NAME_TOKEN_RE.findall(query.replace("’", "'"))
    toks = tuple(t.lower() for t in raw)
    spans = name_spans(toks, names)
    about = [" ".join(raw[i:j]) for i, j in spans]
    return list(dict.fromkeys(about)), {toks[k] for i, j in spans for k in range(i, j)}


# --- the measurement -------------------------------------------------------------------


#: A question word, where a question's ask begins ("In 2019, *how* much ...").
_ASK_WORD = re.compile(r"\b(?:who|whom|whose|what|which|when|where|why|how)\b", re.IGNORECASE)


def first_ask(query: str) -> str:
    """The question up to the comma that ends its first ask.

    "How much disk space ..., and for the Linux integration?" asks twice; the names past the
    comma may be another ask's. A phrase set before the question word ("In 2019, how much did
    the Figma plan cost?") is no ask of its own: the first ask runs on past its comma.
    """
    word = _ASK_WORD.search(query)
    start = word.start() if word and "," in query[:word.start()] else 0
    end = query.find(",", start)
    return query if end < 0 else query[:end]


def _folded(hit: Any) -> Any:
    """``hit`` with its title, headings and text folded (:func:`pinakes.text.fold`); the hit
    itself when they are ASCII, as most are."""
    if hit.text.isascii() and hit.title.isascii() and all(h.isascii() for h in hit.heading_path):
        return hit
    copy = replace(hit) if is_dataclass(hit) else SimpleNamespace(**vars(hit))
    copy.text, copy.title = fold(hit.text), fold(hit.title)
    copy.heading_path = [fold(h) for h in hit.heading_path]
    return copy


def support_window(query: str) -> int:
    """How many top hits may hold the asked part: :data:`SUPPORT_HITS`, and
    :data:`BRIDGE_HITS` more for a question that describes what it asks about through
    another fact ("Who leads the team that owns the reports service?"): the fact that names
    the team and the one that names its lead are two notes, and the second often ranks
    below the first's neighbours."""
    return SUPPORT_HITS + (BRIDGE_HITS if _RELATIVE.search(query) else 0)


#: How many asked words a later section's heading must name to be read with the top hits.
HEADING_ASKED = 2


def notes_say(pattern: re.Pattern[str], notes: Sequence[Any],
              props: Callable[[Any], dict[str, Any]] | None = None) -> bool:
    """Whether one of the hits ``notes`` (its title, headings and text) or one of their notes'
    properties says ``pattern``: where the tie and the role checks of :func:`assess` look."""
    if any(pattern.search(f"{h.title}\n{' > '.join(h.heading_path)}\n{h.text}") for h in notes):
        return True
    firsts = {h.path: h for h in reversed(notes)}.values() if props is not None else ()
    return any(pattern.search(line) for h in firsts for line in property_lines(props(h)))  # type: ignore[misc]


def tie_told(tie: re.Pattern[str], about: Sequence[str], top: Sequence[Any], hits: Sequence[Any],
             hop: bool, later: Callable[[set[str]], list[str]] | None,
             props: Callable[[Any], dict[str, Any]] | None = None) -> bool:
    """Whether the notes tell a tie of the asked kind of the person the question is about.

    Where a note is titled by the question's name, it is that note (every hit of it, and its
    candidates past them), or a sentence elsewhere that writes the name; for a question that
    reaches its person through another fact ("the mother of *the director of* X"), also the
    note of a name X's note writes ("directed by Aurel Venn"), if it is among the hits. With
    no such note (a personal vault's "my sister's husband"), any read hit's note. A note's
    properties count ("spouse: Ivo Lind").
    """
    names = {a.lower() for a in about}
    own = [h for h in hits if names and (strip_qualifier(h.title).lower() in names or h.title.lower() in names)]
    paths = {h.path for h in own or top}
    if hop:
        written = "\n".join(h.text for h in hits if h.path in paths)
        paths |= {h.path for h in hits if h.path not in paths and h.title and len(h.title) > 2
                  and re.search(r"(?<!\w)" + re.escape(h.title) + r"(?!\w)", written)}
    if notes_say(tie, [h for h in hits if h.path in paths], props):
        return True
    if names and any(tie.search(sent) and any(n in sent.lower() for n in names)
                     for h in hits for sent in sentences(h.text)):
        return True
    return later is not None and any(tie.search(fold(t)) for t in later(paths))


#: How many sections headed by the asked release the reader adds (:func:`release_sections`).
RELEASE_SECTIONS = 2


def release_sections(conn: Any, query: str, top: Sequence[Any], trigram: bool = False) -> list[Any]:
    """The sections of the KB headed by the release the question asks about, that the read
    hits are not: "When did Burrow 3.0.0 reach the stable channel?" is answered under the
    changelog's "3.0.0 — 2023-11-28", which ranks far below the changelog's opening ("Dates
    are the day the release reached the stable channel") and the newest release's section.
    A heading names its release plainly; one look-up in the lexical index's headings (a
    fraction of a millisecond at 50,000 chunks), only for a question that writes a
    version, and asks a date (which the heading holds) or a name ("Who reported the bug that
    2.3.1 fixed?"). A count is not read there: "Vault format 3." in the 2.0 section is no
    answer to "How many times has tern 2.0 been downloaded?"."""
    asked = _versions(query)
    if not asked or answer_type(first_ask(query)).kind not in (DATE, NAME):
        return []
    seen = {(h.path, tuple(h.heading_path)) for h in top}
    out: list[Any] = []
    for version in dict.fromkeys(asked):
        # The lexical index's heading column finds them (a phrase of the version's parts
        # under a word tokenizer, the version itself under trigrams); the check below is exact.
        parts = re.findall(r"[^\W_]+", version)
        phrase = version if trigram else " ".join(parts)
        try:
            rows = conn.execute(
                "SELECT d.path, d.title, c.heading_path, c.text FROM chunks c JOIN documents d ON d.doc = c.doc "
                "WHERE c.id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 50) ORDER BY c.id",
                (f'heading: "{phrase}"',)).fetchall()
        except Exception:  # noqa: BLE001 - a store without a lexical index: nothing to add
            return out
        for path, title, heading_json, text in rows:
            try:
                heading = [str(x) for x in json.loads(heading_json)]
            except ValueError:
                continue
            key = (path, tuple(heading))
            # The deepest heading that names a release: "3.0.0 — 2023-11-28 > Changed".
            named = next((vs for vs in map(_versions, reversed(heading)) if vs), [])
            if key in seen or not any(
                    _same_release(v, version) and len(v.split(".")) >= len(version.split(".")) for v in named):
                continue
            seen.add(key)
            out.append(SimpleNamespace(path=path, title=title, heading_path=heading, text=text))
            if len(out) >= RELEASE_SECTIONS:
                return out
    return out


#: At most this many chunks of a note's opening section are read with the top hits.
LEAD_CHUNKS = 3


def lead_section(conn: Any, top: Sequence[Any], about: Sequence[str]) -> list[Any]:
    """The opening section of the top hit's note, when the question is about that note's
    subject and the read hits leave it out: "Who wrote ColBERT?" is told in ColBERT's
    opening ("Omar Khattab and Matei Zaharia of Stanford introduced the model"), while the
    sections on its retrieval modes and on ColBERTv2 rank first. A page opens with who made
    its subject, and when and where; one indexed look-up of at most :data:`LEAD_CHUNKS` rows."""
    if not top or not about:
        return []
    first = top[0]
    # "ColBERT" asks about the page "ColBERT (model)", as :func:`tie_told` reads titles.
    titles = {first.title.lower(), strip_qualifier(first.title).lower()}
    if not any(fold(a).lower() in titles for a in about):
        return []
    rows = conn.execute(
        "SELECT c.heading_path, c.text FROM chunks c JOIN documents d ON d.doc = c.doc "
        "WHERE d.path = ? ORDER BY c.ordinal LIMIT ?", (first.path, LEAD_CHUNKS)).fetchall()
    if not rows:
        return []
    seen = {h.text for h in top if h.path == first.path}
    lead = rows[0][0]
    heading_path = [str(x) for x in json.loads(lead)]
    opening = [fold(text) for heading, text in rows if heading == lead]
    return [SimpleNamespace(path=first.path, title=first.title, heading_path=heading_path, text=text)
            for text in opening if text not in seen]


def read_hits(hits: Sequence[Any], window: int, asked: Sequence[str],
              patterns: dict[str, re.Pattern[str]]) -> list[Any]:
    """The hits the reader reads: the first ``window``, and the first later section (within
    :data:`OTHER_HITS`) of one of their notes whose own heading names :data:`HEADING_ASKED`
    of the ``asked`` words. A page's opening section often matches a question's words best
    and ranks first, while the section headed "How long results are kept" holds the
    answer to "How long does a result backend keep a job's return value?".
    """
    top = list(hits[:window])
    paths = {h.path for h in top}
    for h in hits[window:OTHER_HITS]:
        heading = h.heading_path[-1] if h.path in paths and h.heading_path else ""
        if heading and sum(1 for t in asked if patterns[t].search(heading)) >= HEADING_ASKED:
            return [*top, h]
    return top


def assess(kb: KB, query: str, hits: Sequence[Any], *, conn: Any, generation: int,
           idf_of: Any, df_of: Any, tokenizer: str = "porter",
           later: Callable[[set[str]], list[str]] | None = None) -> Support:
    """Split ``query`` into about / asked and measure the asked part against the top hits.

    ``idf_of(terms) -> {term: idf}`` and ``df_of(term) -> int`` are the
    search's own cached statistics (no extra SQL for terms it has seen).
    ``hits`` carry ``title``, ``heading_path`` and ``text`` (the search holds
    them already). ``later(paths)``: the texts of the search's candidates past its hits,
    within :data:`OTHER_HITS`, that belong to those notes (a search for 5 hits then reads a
    question as one for 50 does).
    """
    trigram = tokenizer == "trigram"
    # Only the first OTHER_HITS are ever read; "CO₂" is read as the question's "CO2".
    hits = [_folded(h) for h in hits[:OTHER_HITS]]
    # "how many milligrams": the dimension word asks for a number, no text holds it.
    terms = content_terms(query, cjk_bigrams=not trigram)
    if not terms:
        return Support()
    names = known_names(kb, conn, generation)
    about, about_toks = _about(query, names)
    asked = [t for t in terms if t not in about_toks]
    idf = idf_of(terms)
    df = {t: df_of(t) for t in terms}  # how many chunks hold each term; 0: none in the KB
    mass = sum(idf.values()) or 1.0
    patterns = {t: term_pattern(t) for t in terms}
    top = read_hits(hits, support_window(query), [t for t in terms if t not in about_toks], patterns)
    top += release_sections(conn, query, top, trigram)
    top += lead_section(conn, top, about)
    front: dict[str, dict[str, Any]] = {}

    def props(h: Any) -> dict[str, Any]:
        if h.path not in front:
            front[h.path] = note_properties(conn, h.path)
        return front[h.path]

    held: list[set[str]] = []
    # "How long was everything down?", "the study behind my definition": words no fact needs
    # written count as held, and keep their share of the question.
    slight = {t for t in terms if t in _SLIGHT}
    if _END_UP.search(query):
        slight.add("end")  # "What did they end up paying?": "end up" says "in the end"
    # "Who wrote ColBERT?": a hit that says who made it in another word of making ("Omar
    # Khattab ... introduced the model") holds what the question asks.
    role = asked_role(query)
    made = made_term(query, terms, patterns, role)
    for h in top:
        hay = spelled_days(f"{h.title}\n{' > '.join(h.heading_path)}\n{h.text}\n" + "\n".join(property_lines(props(h))))
        got = {t for t, p in patterns.items() if p.search(hay)} | slight
        if made is not None and made not in got and _made_by_someone(hay):
            got.add(made)
        held.append(got)
    if held:
        gaps = [max((idf[t] for t in asked if t not in got), default=0.0) / mass for got in held]
        gap = min(gaps)
        anywhere = set().union(*held)
        best = held[gaps.index(gap)]
    else:
        gap, anywhere, best = 0.0, set(), set()
    unsupported = sorted((t for t in asked if t not in anywhere), key=lambda t: -idf[t])
    found = [t for t in terms if t in best and t not in about_toks and t not in slight]
    found.sort(key=lambda t: -idf[t])
    unknown = []
    named: set[str] = set()  # the terms the question writes as names
    written: dict[str, str] = {}  # a term as the question writes it
    # A question typed in capitals ("WHO INVENTED THE FRENCH PRESS") says nothing by its case.
    shouted = not any(c.islower() for c in query)
    for m in _WORD.finditer(query):
        word = m.group(0).replace("’", "'")
        word = word[:-2] if word.lower().endswith("'s") else word
        low = word.lower()
        written.setdefault(low, word)
        if low.split("'")[0] == "i" and not re.match(r"\s+[A-Z]", query[m.end():]):
            continue  # "I've", "I'm": the asker, written with a capital ("I'll Be Going Now" a title)
        if low not in patterns or len(low) < MIN_UNKNOWN_CHARS or word == low and word.isalpha():
            continue  # not a query term, too short, or an ordinary lower-case word
        if low in _MONTHS or low in _DAYS or low in _WEEKDAYS or word == low and (
                _NUMERONYM.fullmatch(word) or _ORDINAL.fullmatch(word) or _DECADE.fullmatch(word)):
            # "in March": notes date things many ways ("2024-03-14"); "seq2seq", "k8s":
            # shorthand the notes may write out in full; "her 10th birthday": a count the
            # notes may not write ("Elsa turns ten"); "a 1980s tourer": a decade the notes
            # give as a year ("a Dawes from about 1985"). None is a name.
            continue
        if _ACRONYM_PLURAL.fullmatch(word):
            continue  # "CVs", "PDFs": a common noun in capitals, which the notes may word otherwise
        name_like = (m.start() > 0 and word != low and not shouted) or (  # a capital past the first
            any(c.isdigit() for c in word) and any(c.isalpha() for c in word))  # "70B", "GPT4"
        if name_like:
            named.add(low)
        if name_like and df[low] == 0:
            unknown.append(word)
    # "How many times has Ines ...": a speaker's doings are counted like the asker's own.
    speakers = frozenset(m.group(1).split()[0].lower() for h in top for m in _TURN.finditer(h.text)
                         ) if "many" in query.lower() else frozenset()
    expected, typed, near_terms, answer_at = typed_gap(query, top, terms, idf, patterns,
                                                       dated=lambda h: note_dated(conn, h.path, props(h)),
                                                       speakers=speakers, props=props)
    kind = expected.kind
    # The noun naming the answer's kind ("name", "colour"), when the kind is checked.
    kind_noun = (kind_word(query) or "") if kind is not None else ""
    talk_gap, speaker, said_by, said = speaker_gap(query, top, terms, idf, patterns)
    # A name the question writes is in none of the top hits, nor in their notes' other hits:
    # the token the reader found is another thing's ("How much disk space does a Rust for
    # Linux build need?" against "a Fuchsia checkout and build takes 46G").
    # Past a comma a question may list more asks ("..., and for a compiler built with full
    # debuginfo for GDB?"): a name there may be another ask's, in another note.
    main_ask = first_ask(query)
    missing = [t for t in unsupported if t in named and patterns[t].search(main_ask)
               ] if kind is not None else []
    read = {h.path for h in top}  # the notes the reader read
    if missing:

        def mention(texts: Sequence[str]) -> bool:
            return any(patterns[t].search(text) for text in texts for t in missing)

        # The candidates past a short search's hits are fetched only when these do not tell.
        in_top = {id(h) for h in top}
        if not mention([h.text for h in hits if h.path in read and id(h) not in in_top]) and not (
                later is not None and mention([fold(t) for t in later(read)])):
            typed, answer_at = 1.0, None
    if kind is not None and not near_terms:
        # No sentence of the top hits holds an asked word: no token there can stand in for
        # the missing part, so what is missing is the typed gap too.
        typed = gap
    # Nothing the question asks is in the top hits, only what it is about: whatever token sits
    # near the subject answers something else ("Which hotel did we stay at in Kyoto?" against
    # "Maya found her Mashiko cup in a shop in Kyoto": no "hotel", no "stay"). The asked words
    # counted leave out the names the question writes, the kind's own noun ("what *colour*")
    # and a relation to a person ("X's *father*": "son of Y" says it backwards); two of them
    # must be missing, since a note says one word another way as often as not ("Which editor
    # do I *use*?": "Neovim, with ..."). "Who" too: "Who composed the music for Tide Line?"
    # against an encyclopedia's "Tide Line is a 1988 film written and directed by Nadia Fenn"
    # (none of the read articles holds "composed" or "music"). Not "where" or "when", whose
    # relation the evidence words its own way ("the place of death" by "died in"), nor a
    # question that offers its answers (:data:`_CHOICE`).
    if kind is not None and (asks_thing(query) or kind == NAME and not _CHOICE.search(query)):
        plain = [t for t in asked if t not in named and t != kind_noun and t not in _RELATIONS]
        if len(plain) >= MIN_ASKED_UNHELD and not anywhere.intersection(plain):
            typed, answer_at = max(typed, sum(idf[t] for t in plain) / mass), None
    def untold_share(word: str) -> float:
        """The typed gap when the notes do not tell what ``word`` asks (a tie, a role, a
        default): its own share of the question, and at least the asked gap."""
        return max(typed, max((idf[t] for t in terms if patterns[t].search(word)), default=0.0) / mass, gap)

    # "Who was the mother of the director of The Last Ferry?" against the film's "directed by
    # Aurel Venn" and Venn's article, which tells of his films and never of his parents: the
    # director's name answers the inner ask. A tie between people is told in words of its
    # kind ("son of", "born to", "married", "his widow"); where none of the read hits has
    # one, no name there stands for the person asked about.
    # The read notes' other hits count, and so does the note of a name they write: a later hit
    # titled "Aurel Venn" is the bridge the film's "directed by Aurel Venn" points to.
    tie = asked_tie(query) if kind == NAME else None
    if tie is not None and not tie_told(tie[1], about, top, hits, tie[2], later, props):
        typed, answer_at = untold_share(tie[0]), None
    # "Who was the first chairman of the Calvessan State Railway?" against the railway's
    # "The first line, between Halvick and Dunmere ..., opened in 1891": a name answers for a
    # role only where a read note writes the role, or its verb ("chaired by", "directed by").
    if role is not None and kind == NAME and tie is None:
        told = role_pattern(role)
        if not notes_say(told, [h for h in hits if h.path in read], props) and not (
                later is not None and any(told.search(fold(t)) for t in later(read))):
            typed, answer_at = untold_share(role), None
    # "What is the default value of scanner.workers?" against a user's "set `scanner.workers =
    # 2`" and "`scanner.poll_interval` defaults to `15m`": a value answers for a default only
    # where a read note says it is the default, of the setting asked about.
    untold = ""
    if _ASKS_DEFAULT.search(query):
        others = [patterns[t] for t in asked if t not in named and t not in ("default", "value", kind_noun)]
        texts = [(f"{h.title}\n{' > '.join(h.heading_path)}", h.text) for h in hits if h.path in read]
        if not default_told(query, texts, others):
            # The whole ask is untold, however common "default" is in the KB: docs say it on
            # every page, so its IDF is low, but none says it of this setting.
            typed, answer_at = max(untold_share("default"), TYPED_GAP_FULL), None
            settings = _SETTING.findall(query)
            untold = f"no default given for {_quoted(settings, 'and') if settings else 'it'}"
    # "How long is the salt ...?": a measure of the salt, which no top hit mentions. The answer
    # token stands in for an asked verb (below), never for the thing that is measured.
    subject = measured(query)
    if kind is not None and subject in patterns and subject in asked and subject not in anywhere:
        typed, answer_at = max(typed, idf[subject] / mass), None
    if kind is not None:
        # The answer token stands in for the asked relation: "Who wrote ColBERT?" against
        # "ColBERT was introduced by Omar Khattab and Matei Zaharia" lacks "wrote", not the
        # fact. A missing asked word counts only as far as the reader finds no such token.
        # When no sentence holds one, the missing words are the typed gap too: "What is
        # Mira's street address?" against notes that never name a street, where "Mira" and
        # "Groningen", on every other line, weigh too little to make one of their own.
        if answer_at is None:
            typed = max(typed, gap)
        gap *= _gap_ramp(typed)
    near = list(about) + [written.get(t, t) for t in sorted(
        (t for t in near_terms if t not in about_toks), key=lambda t: (-idf[t], t))][:max(0, 3 - len(about))]
    return Support(about=about, asked=asked,
                   unsupported=[written.get(t, t) for t in unsupported],
                   unknown=list(dict.fromkeys(unknown)),
                   found=[written.get(t, t) for t in found[:3]], gap=gap,
                   expected=expected, typed_gap=typed, near=near,
                   speaker=speaker, said_by=said_by,
                   speaker_gap=talk_gap,
                   said=[written.get(t, t) for t in sorted(said, key=lambda t: (-idf[t], t))],
                   kind_noun=kind_noun, untold=untold,
                   # "How do I fix a leaking tap?" put to a compiler's guide: "leaking" and "tap"
                   # are in no note at all. A name the KB lacks is ``unknown``; this counts any word.
                   absent=sum(1 for t in terms if df[t] == 0) / len(terms),
                   # Named only when the reader takes it for the answer (no typed gap left).
                   answer_at=_clip(answer_at) if answer_at and near_terms and _gap_ramp(typed) == 0
                   else None)


def assess_search(kb: KB, hits: Sequence[Any], lists: Any) -> Support | None:
    """:func:`assess` for one search's result, with its statistics; None without a query.

    Called once per search from the confidence's feature extraction, which
    keeps the result on ``lists.support`` for the search's ``reason``.
    """
    query = getattr(lists, "query", None)
    if not query or not hits:
        return None
    if getattr(lists, "support", None) is not None:  # this search's, assessed already
        return lists.support  # type: ignore[no-any-return]
    from ..termstats import chunk_count, idf

    conn = _LazyConn(kb)  # the statistics are cached per generation: SQL only on a miss
    generation = getattr(lists, "generation", None)
    if generation is None:
        generation = kb.reader().generation
    memo = kb._idf_cache
    total = chunk_count(memo, conn, generation, 0)
    tokenizer = str(kb.config.retrieval.get("tokenizer", "porter"))

    def idf_of(terms: list[str]) -> dict[str, float]:
        return idf(memo, conn, generation, terms, total, tokenizer)

    def df_of(term: str) -> int:
        idf_of([term])
        return int(kb._idf_cache.get("_df", {}).get(term, 0))

    # The fused candidates past a short search's hits, up to the reader's window.
    later_ids = list(getattr(lists, "later", None) or ())[:max(0, OTHER_HITS - len(hits))]

    def later(paths: set[str]) -> list[str]:
        """The texts of the candidates past the hits that belong to the notes at ``paths``."""
        if not later_ids or not paths:
            return []
        rows = conn.execute(
            f"SELECT c.text FROM chunks c JOIN documents d ON d.doc = c.doc WHERE c.id IN "
            f"({','.join('?' * len(later_ids))}) AND d.path IN ({','.join('?' * len(paths))})",
            (*later_ids, *sorted(paths))).fetchall()
        return [row[0] for row in rows]

    support = assess(kb, query, hits, conn=conn, generation=generation, idf_of=idf_of,
                     df_of=df_of, tokenizer=str(kb.config.retrieval.get("tokenizer", "porter")),
                     later=later)
    lists.support = support
    return support


class _LazyConn:
    """The KB's read connection, opened (one stat) only when a statistic is not cached."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb

    def execute(self, *args: Any) -> Any:
        return self.kb.reader().conn.execute(*args)
