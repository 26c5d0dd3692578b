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
import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, is_dataclass, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .dialects import NOTION_ID, date_key, doc_aliases, strip_suffix
from .text import (
    DIMENSIONS,
    HOW_DIMENSION_RE,
    NAME_TOKEN_RE,
    STOPWORDS,
    content_terms,
    fold,
    name_spans,
    name_tokens,
    strip_qualifier,
    term_pattern,
)

if TYPE_CHECKING:
    from .kb import KB

#: How many of the top hits may hold the asked part (the search's own best few).
SUPPORT_HITS = 3
#: How many more a bridge question's reader reads (:func:`support_window`).
BRIDGE_HITS = 2
#: The candidates a missing name is looked for in (its top hits' notes' other hits): the
#: first ten of the fused ranking, as many as a search returns by default. Whatever ``k`` a
#: caller asks for (``pnk eval`` and ``pnk search`` ask for 50 chunks, an agent for 10), the
#: reader sees the same ones.
OTHER_HITS = 10
#: Words as written, for telling names (capitals, digits) from ordinary words.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
#: A lower-case word with digits between letters is shorthand for words ("seq2seq" for
#: "sequence-to-sequence", "i18n", "k8s"), not a name: notes often spell it out.
_NUMERONYM = re.compile(r"[a-z]+\d+[a-z]+")
#: An ordinal in figures: "10th", "21st", "2nd".
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")
#: An acronym's plural ("CVs", "PDFs", "GPUs"): things of a kind, not one named thing.
_ACRONYM_PLURAL = re.compile(r"[A-Z]{2,}s")
#: Words the search keeps but no fact needs written: adverbs of time and degree, prepositions
#: of place and indefinite pronouns. "How much is *still* unspent?" is answered by "£915
#: left"; "How long was *everything* down?" by "the outage lasted 1 h 5 min".
_SLIGHT = frozenset("""still already yet ever also even really actually currently usually typically
    finally eventually originally initially ultimately recently lately normally generally
    exactly roughly approximately around across along within without behind beside besides toward
    towards upon via onto among amongst throughout beyond anyway everything anything something
    nothing everyone anyone someone everybody anybody somebody ones since""".split())
#: "end up", "ended up": how it turned out, which the notes tell without the phrase.
_END_UP = re.compile(r"\bend(?:s|ed|ing)?\s+up\b", re.IGNORECASE)
#: A decade in figures: "1980s", "the 90s", "'70s". Notes give a year of it ("from about 1985").
_DECADE = re.compile(r"(?:1[89]|20)?\d0s")
#: A name-like word the KB never mentions must be at least this long (shorter tokens
#: are initials and units, and a trigram index cannot count them at all).
MIN_UNKNOWN_CHARS = 3


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


# --- what the question expects: a cheap reader of answer types ---------------------------

QUANTITY, DATE, NAME, PLACE = "quantity", "date", "name", "place"
#: Closed classes: a colour word, a day of the week.
COLOUR, WEEKDAY = "colour", "weekday"
#: Each answer kind as a reason (and ``--explain``) says it.
KIND_NOUN = {QUANTITY: "number", DATE: "date", NAME: "name", PLACE: "place", COLOUR: "colour",
             WEEKDAY: "day of the week"}


@dataclass(frozen=True)
class Expected:
    """What answers a question (:func:`answer_type`), read by :func:`holds_typed`.

    ``kind`` is the token's kind (:data:`QUANTITY`, :data:`DATE`, :data:`NAME`,
    :data:`PLACE`, :data:`COLOUR`, :data:`WEEKDAY`), or None when nothing is
    checkable. ``units``: the words a quantity's number must carry ("mg",
    "days", "people"; empty: any number). The rest say what else answers, or
    what does not, for one wh-phrase each; each is a rule of English, kept apart
    so that a new one is one more field and one more check in
    :func:`holds_typed`, not a marker hidden among the units.
    """

    kind: str | None = None
    units: tuple[str, ...] = ()
    #: "When is my sister's wedding?": a note's own date (its title's, a journal day's)
    #: does not answer a planned event's date.
    undated: bool = False
    #: "What time is my check-up?": only a clock reading answers ("4:30", "9 am").
    clock: bool = False
    #: "my finish time": a clock reading answers as well as a duration ("1:58:42").
    span: bool = False
    #: "What year was the boiler put in?": only a year answers ("2011", "last year"), not a
    #: day, a month or a season ("every autumn").
    year: bool = False
    #: "How much did it cost?": a currency sign on the number answers ("$499").
    money: bool = False
    #: "Who gave Ines the easel?": a relation answers as well as a name ("my grandmother").
    relation: bool = False
    #: "Where does he hide?": a place said with a preposition answers ("in the bathtub").
    preposition: bool = False
    #: "Who ...?", "What is the name of my dentist?": a person answers, and a name said
    #: after "at" or "in" is a place's or an organisation's ("at Tandartspraktijk Oost").
    person: bool = False
    #: "How often?": a frequency in words answers as well as a number ("twice a week").
    frequency: bool = False
    #: "How many kilometres do I run per week?": a rate per this unit of time answers
    #: ("40 km a week", "€12/month", "monthly"), not any number ("Long run: 28 km").
    per: str = ""
    #: "What is Maya's surname?": only a name written next to hers answers ("Maya
    #: Lindqvist"), after it for a surname, before it for a first name, either side for
    #: a full name: (her name in lower case, "after" / "before" / "either").
    beside: tuple[str, str] = ("", "")
    #: "What is Maya's new address?": only a street address answers ("Storgata 14", "12 Elm
    #: Street"), not any place ("got the job at Ishavsfysio"); "email" for an email address;
    #: "phone" for a phone number ("07700 900316", "+46 31 12 34 56"), not "a 10-minute talk".
    address: str = ""
    #: "What is my flight number?": an identifier answers ("SK 4411", "14C", "+46 31 12 34
    #: 56"), not a time, an amount or a measure ("leaves 07:10", "3 280 kr", "8 kg").
    identifier: bool = False
    #: "Which floor is the flat on?": a place in an order answers ("the third floor", "floor
    #: 3", "the ground floor"), not a name.
    ordinal: bool = False
    #: "Which Redis version ...?": a version answers ("6.2", "v1.9.4", "version 7"), not a
    #: year or a date.
    version: bool = False
    #: "What's the wifi password at the cottage?": a secret written out answers ("password:
    #: puffin-harbour", "`Tregarrow2019`", "PIN 4711"), not "the password is on the fridge".
    secret: bool = False

    @property
    def what(self) -> str | None:
        """The answer as a reason names it: "amount of money", "time of day", "number"."""
        if self.kind is None:
            return None
        if self.money:
            return "amount of money"
        if self.clock:
            return "time of day"
        if self.span:
            return "duration"
        if self.year:
            return "year"
        if self.version:
            return "version"
        if self.address == "phone":
            return "phone number"
        if self.secret:
            return "password or code"
        if self.identifier:
            return "identifying number"
        if self.address:
            return f"{self.address} address"
        return KIND_NOUN[self.kind]


#: Nothing checkable.
UNCHECKED = Expected()
#: The typed gap (a share of the query's IDF mass) under which nothing is missing: one
#: stray word. At :data:`TYPED_GAP_FULL` (a main content word of a question) it counts fully.
TYPED_GAP_FROM = 0.15
TYPED_GAP_FULL = 0.30
#: A neighbouring sentence's token answers at this share of the sentence's match ("Lamont
#: (1895-1993) was a filmmaker. He died in Los Angeles." for "When did Lamont die?").
NEIGHBOUR_CREDIT = 0.5
#: At most this many words make a list item's opening sentence a label ("**Jasper Willaert**,
#: operations."), whose subject the item's next sentences leave out ("Handles print orders").
LABEL_WORDS = 6

_AUX = r"(?:am|is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|must|may|might)"
#: The determiners before a noun phrase ("the" before "their", "a" before "an", as each
#: pattern below has always tried them).
_DETERMINER = r"(?:the|my|your|its|their|our|his|her|a|an)"
#: Words that may precede a wh-word at the head of its clause ("in which city", "roughly how").
_LEAD = frozenset("and or but so then roughly approximately about exactly just in on at for "
                  "from to by with of since until during into".split())
_WH = re.compile(r"\b(how|what|which|who|whom|whose|when|where|why)\b")
#: Head nouns of "what/which X" whose answer is a quantity, a date, a place or a name.
_MEASURE = frozenset("""size number count amount price cost rate ratio percentage percent score
    length height width weight depth age population speed temperature duration capacity limit
    maximum minimum budget salary fee dose dosage frequency accuracy latency throughput
    bandwidth distance volume area total sum threshold timeout interval quota rent wage
    fare""".split())
#: Measures whose value is an amount of money: "what salary", "the price of the plan".
#: Not "money": "How much money do I keep aside as a safety cushion?" is answered by a note
#: that says "a goal of 5000 pounds" in none of the question's words, and read as any number
#: it stays answered (docs/benchmarks.md, eleventh session).
_MONEY_NOUNS = frozenset("""price prices salary salaries fee fees rent wage wages fare fares fund funds
    deposit deposits payment payments donation donations loan loans grant grants mortgage""".split())
#: Currencies named in words ("pound" is left out: it weighs too).
_CURRENCY_WORDS = frozenset("dollar dollars euro euros usd eur gbp sterling yen".split())
#: Nouns of a sum, which a currency before them makes an amount of money: "the euro value".
_SUM_NOUNS = frozenset("amount amounts value values total sum sums cost costs figure".split())
#: A metric at a cutoff ("MRR@10", "nDCG@5", "Recall@100", "P@1") is a quantity.
_METRIC_AT = re.compile(r"[a-z][a-z\-]*@\d+")
_DATE_NOUNS = frozenset("year date month day time decade century era week hour season release "
                        "version".split())
_PLACE_NOUNS = frozenset("""city country place town state location venue region continent address
    village county province island street neighbourhood neighborhood""".split())
_NAME_NOUNS = frozenset({"name", "title", "nickname", "surname", "forename", "username"})
_COLOUR_NOUNS = frozenset({"colour", "color", "colours", "colors"})
#: "how many <unit>": the number must carry that unit (or its symbol) to answer.
_UNITS: dict[str, tuple[str, ...]] = {
    "milligrams": ("mg", "milligram"), "grams": ("g", "gram", "gr"), "kilograms": ("kg", "kilo"),
    "pounds": ("lb", "lbs", "pound", "£"), "ounces": ("oz", "ounce"), "litres": ("l", "litre", "liter"),
    "liters": ("l", "liter", "litre"), "millilitres": ("ml",), "milliliters": ("ml",),
    "metres": ("m", "metre", "meter"), "meters": ("m", "meter", "metre"), "kilometres": ("km",),
    "kilometers": ("km",), "miles": ("mi", "mile"), "feet": ("ft", "foot"), "inches": ("in", "inch"),
    "centimetres": ("cm",), "centimeters": ("cm",), "millimetres": ("mm",), "millimeters": ("mm",),
    "bytes": ("b", "byte"), "kilobytes": ("kb", "k"), "megabytes": ("mb", "m"),
    "gigabytes": ("gb", "g"), "terabytes": ("tb", "t"), "seconds": ("s", "sec", "second", "secs"),
    "minutes": ("min", "mins", "minute"), "hours": ("h", "hr", "hrs", "hour"), "days": ("d", "day"),
    "weeks": ("w", "wk", "week"), "months": ("mo", "month"), "years": ("y", "yr", "yrs", "year"),
    "calories": ("kcal", "cal", "calorie"), "dollars": ("$", "usd", "dollar"),
    "euros": ("€", "eur", "euro"), "percent": ("%",), "degrees": ("°", "degree"),
    "milliseconds": ("ms", "millisecond"), "pixels": ("px", "pixel"), "points": ("pt", "point"),
}
_NUMBER_WORDS = frozenset("""zero two three four five six seven eight nine ten eleven twelve
    thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty
    seventy eighty ninety hundred hundreds thousand thousands million millions billion billions
    dozen dozens half thrice several few couple daily weekly monthly yearly hourly nightly
    annually""".split())
#: Number words that give no value: "a few minutes" is no finish time.
_VAGUE = frozenset(("few", "several", "couple"))
#: Adverbs of frequency: they answer "how often" and no other measure ("the week view uses
#: hourly totals" says nothing of how long the totals are kept).
_EVERY = frozenset("daily weekly monthly yearly hourly nightly annually".split())
_MONTHS = frozenset("january february march april may june july august september october "
                    "november december".split())
_MONTH_NAME = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
               r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
#: A number that is part of a date: beside a month's name (capitalised: "may" is a verb),
#: or an ISO day. Case-sensitive on purpose.
_DATED_NUMBER = re.compile(rf"\b{_MONTH_NAME}\.?\s+\d{{1,4}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"
                           rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_NAME}\b\.?(?:,?\s+\d{{4}}\b)?"
                           r"|\b\d{4}-\d{2}-\d{2}\b")
#: Seasons and holidays date an event well enough ("we went in the summer", "at Christmas");
#: "spring" and "fall" are left out (the Spring framework, to fall).
_SEASONS = frozenset("summer winter autumn christmas easter thanksgiving halloween hanukkah "
                     "ramadan diwali eid midsummer".split())
_WEEK = "monday tuesday wednesday thursday friday saturday sunday".split()
#: Months' and weekdays' short forms, as dated lines write them ("1 Feb", "Sept", "Tue").
_CALENDAR_SHORT = frozenset("jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed "
                            "thu thur thurs fri sat sun".split())
_DAYS = frozenset([*_WEEK, "yesterday", "today", "tomorrow"])
# A number standing alone (not inside "x86_64", "M10P", "MRR@10", a path or a version's tail),
# with an optional currency sign before and a short unit or % after ("46G", "100GB", "5%").
_NUMBER = re.compile(r"(?<![\w@#/.\-])[-+]?[$£€]?\d+(?:[.,:]\d+)*(?:\s?%|[a-zA-Z]{0,3}\b)?(?![\w@])")
#: A version, not a quantity: "1.x", "2.3.x", "2.3.1", "v1.9.4" ("Which 1.x release ...",
#: "tern 2.3.1 (vault format 3)"). "1.000.000" (groups of three) is a number and stays.
_VERSION_NUMBER = re.compile(r"(?<![\w.])[vV]?\d+(?:\.\d+)*\.[xX*](?!\w)"
                             r"|(?<![\w.])(?!\d{1,3}(?:\.\d{3})+(?![\w.]?\d))"
                             r"[vV]?\d+(?:\.\d+){2,}(?![\w.]?\d)")
_RANGE_TAIL = re.compile(r"^\s*(?:-|–|to|or)\s*\d+(?:[.,]\d+)*")
_YEAR = re.compile(r"(?<![\w.\-/])([1-9]\d{2}|1\d{3}|20\d\d)s?(?![\w@/]|[.,]\d)")
_DATE = re.compile(r"(?<!\w)(?:\d{4}-\d{1,2}(?:-\d{1,2})?|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"
                   r"|\d{1,2}(?:st|nd|rd|th))(?!\w)")
#: A wikilink, whose text names a note: "[[Annual checkup 2025]]", "[[Kenji Watanabe|Kenji]]".
_WIKILINK = re.compile(r"\[\[[^\]\n]*\]\]")
#: What says three figures are a year: "in 870", "AD 870", "870 BC".
_ERA = re.compile(r"\b(?:in|AD|CE|c\.|circa)\s+\d{3}\b|\b\d{3}\s+(?:AD|BC|BCE|CE)\b")
#: A year counted from the note's own date: "last year", "three years ago".
_YEAR_AGO = re.compile(r"\b(?:this|last|next)\s+year\b|\b(?:\d+|an?|one|two|three|four|five|six|seven|"
                       r"eight|nine|ten|a\s+few|several)\s+years?\s+ago\b", re.IGNORECASE)
#: "this weekend", "next month", "tonight", "two weeks ago": a date counted from the note's
#: own (a journal day's, a chat session's), as good as written out when the note is dated.
_RELATIVE_DATE = re.compile(r"\b(?:this|next|last|coming)\s+(?:weekend|week|month|year|spring|"
                            r"summer|autumn|fall|winter|morning|afternoon|evening|night)\b"
                            r"|\btonight\b|\b(?:\d+|an?|one|two|three|"
                            r"four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple\s+of|several)"
                            r"\s+(?:days?|weeks?|months?|years?)\s+ago\b", re.IGNORECASE)
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?!\w)|\bversion\s+\d+", re.IGNORECASE)
_CODE = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]+)*"
                   r"|(?<![\w/])[\w.\-]+(?:/[\w.\-]+)+\.[a-z]{1,5}\b"
                   r"|(?<![\w/])[\w.\-]+/[\w.\-]+/[\w.\-]+")
_TOKEN = re.compile(r"[^\W_][\w'’\-]*")
# Link targets and bare URLs carry digits and capitals that answer nothing.
_LINK_TARGET = re.compile(r"\]\([^)]*\)|https?://\S+|<[^>\s]+>")
_ITEM = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|\||#)")
# A list item's or a diary line's marker ("- ", "2. ", "(8) "): its next word opens a sentence.
_MARKER = re.compile(r"^(?:[-*+]|\d+[.)]|\(\d+\))\s+")
#: Abbreviations whose period ends no sentence ("Mr. Okafor", "e.g. Zotero").
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Prof", "Mt", "vs", "e.g", "i.e")
#: Lower-case abbreviations whose period ends no sentence ("approx. three", "etc. and").
_LOWER_ABBREVIATIONS = ("etc", "approx", "incl", "excl", "min", "max", "vol", "fig", "esp", "resp",
                        "sec", "hrs", "mins", "est", "dept", "govt", "ver", "nos", "pts", "abbr",
                        "cont", "misc", "avg")
_SENTENCE_END = re.compile(r"(?<=[.!?])" + "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
                           + r"\s+(?=[\"'(\[`*_]*[A-Z0-9])"
                           # "we're in Groningen. the new flat is on the third floor": a chat or
                           # a terse note opens a sentence in lower case after a word's stop.
                           + r"|(?<=[a-z]{3}[.!?])" + "".join(rf"(?<!\b{a}\.)" for a in _LOWER_ABBREVIATIONS)
                           + r"\s+(?=[a-z]{2})")
_ABBREVIATED = re.compile(r"\b(" + "|".join(re.escape(a) for a in _ABBREVIATIONS) + r")\.", re.IGNORECASE)


#: "... did I / have we ...": the question counts the asker's own doings.
_FIRST_PERSON = re.compile(r"\b" + _AUX + r"\s+(?:i|we)\b")
#: "How many pages am I allowed to print?", "how many days off do we get?": a limit a rule
#: sets, written as a number, not a count of the asker's own doings. ("Can I" is left out:
#: "how many versions can I still restore" asks what the tool keeps, often in another note.)
_ALLOWANCE = re.compile(r"\b(?:am|are)\s+(?:i|we)\s+(?:allowed|entitled|permitted|supposed)\b"
                        r"|\bdo\s+(?:i|we)\s+(?:get|need|have\s+to)\b")
_TIME_UNITS = r"(?:days|weeks|months|years|hours|minutes|nights)"
#: "how many days after / how long between ...": a span between two dated events.
_INTERVAL = re.compile(r"how\s+(?:many\s+(?:more\s+|fewer\s+)?" + _TIME_UNITS + r"\b(?:\s+\w+){0,8}?"
                       r"|long)\s+(?:after|before|between|since|until|apart|passed|elapsed|earlier|"
                       r"later)\b")
#: "where did X place / finish / rank": a rank in a race or a contest, not a place.
_RANKED = re.compile(r"where\s+(?:did|do|does|will|would)\s+(?:[\w'’\-]+\s+){1,3}?"
                     r"(?:place|finish|rank|end\s+up)\s+(?:in|at|on|among)\b")
#: "how long ago", "how many weeks ago": the span from a dated event to today.
_AGO = re.compile(r"how\s+(?:long|many\s+" + _TIME_UNITS + r")\s+ago\b")
#: "how many miles ... between A and B", "how much ... since": a difference of two readings.
_DIFFERENCE = re.compile(r"how\s+(?:many|much)\b(?:\s+[\w'\-]+){0,10}?\s+(?:between|since)\b")
#: People counted under one name or another: "how many guests" is answered by "8 people".
_PERSONS = ("people", "person", "persons", "guests", "guest", "attendees", "attendee",
            "participants", "participant", "adults", "adult", "kids", "kid", "children", "child",
            "friends", "friend", "members", "member", "visitors", "visitor")
#: What answers "what colour": a colour word (hair and fur colours among them).
_COLOURS = frozenset("""red orange yellow green blue purple violet pink brown black white grey
    gray silver gold golden beige tan navy teal turquoise cyan magenta maroon burgundy crimson
    cream ivory charcoal olive lime khaki lavender lilac bronze copper amber indigo scarlet
    coral peach plum rust slate taupe ginger tabby calico tortoiseshell brindle auburn blonde
    blond brunette chestnut hazel multicoloured multicolored""".split())
#: What answers "what day of the week": a weekday, in the singular or the plural.
_WEEKDAYS = frozenset([*_WEEK, *(d + "s" for d in _WEEK), "weekend", "weekends", "weekday",
                       "weekdays"])
#: "what's", "who's", "when's": the wh-word and "is", read as written out.
_CONTRACTED = re.compile(r"\b(what|who|where|when|which|how)'s\b")
#: "When is <someone's / my / the> <event>?": a date the notes must write (no verb after:
#: "when is my code re-embedded" asks a condition, "when is the hook run" too, "when is it
#: worth ..." too). "When is the Berlingo due its MOT?", "when is the kids' half-term?".
_SCHEDULED = re.compile(r"when\s+(?:is|are)\s+(?:my|our|your|his|her|their|the|[\w\-]+'s|[\w\-]+s')"
                        r"(?:\s+(?![\w\-]*(?:ed|en)\b|(?:run|set|built|sent|put|kept|made|done|read|hit"
                        r"|cut|shut|split|spent|held|left|lost|found|sold|told|paid|bought|brought|met"
                        r"|won|begun|stuck|hung|laid|said|thought|caught|taught|fed|led|shot)\b)"
                        r"[\w\-']+){1,4}\s*\??$")
#: "When is tern 3.0 going to be released?", "when will the app launch?": the date of a release
#: to come, which a note writes out. Only a release: "when does the café open / the course
#: start?" asks a time of day as often as a date, "when does such a test pass?" a condition.
_RELEASE_DATE = re.compile(r"when\s+(?:is|are|will|does|do)\b(?:\s+[\w'’.\-]+){1,6}?\s+(?:be\s+)?"
                           r"(?:released?|launch(?:ed)?|ship(?:ped)?)\b")
_AT_PLACE = re.compile(r"\b(?:in|at|on|to|into|inside|under|behind|near|by|from|onto|beside)\s+"
                       + _DETERMINER + r"\s+(?!(?:few|couple|lot|bit|"
                       r"while|moment|minute|second|way|same|end|time|day|week|month|year|morning|"
                       r"evening|night|weekend|first|third|fourth|last|next|following|previous|other)\b)"
                       r"[a-z]", re.IGNORECASE)
_FREQUENCY = re.compile(r"\b(?:once|twice|thrice|every|each)\b|\b(?:a|an|per)\s+(?:day|week|month|year|"
                        r"night|morning|evening|weekend|fortnight|hour)\b", re.IGNORECASE)
#: Words that name a person by relation or role, in the singular and the plural.
_RELATIONS = frozenset(w + s for w in """mother mom mum mommy mummy father dad daddy parent
    grandmother grandma granny nan nana grandfather grandpa granddad grandparent sister brother
    sibling aunt auntie uncle cousin niece nephew son daughter child kid baby husband wife
    spouse partner fiance fiancee boyfriend girlfriend friend bestie roommate flatmate housemate
    neighbour neighbor landlord landlady boss manager colleague coworker co-worker teammate
    mentor teacher tutor coach trainer instructor professor doctor therapist counselor
    counsellor nurse dentist vet classmate family team group""".split() for s in ("", "s")) | {
    "children", "families"}
#: "two-year-old", "three-day", "ten-minute": a number word, a hyphen, a unit.
_HYPHEN_MEASURE = re.compile(r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                             r"fifteen|twenty|thirty|forty|fifty|hundred|thousand)-(?:second|minute|"
                             r"hour|day|night|week|month|year|mile|kilometre|kilometer|metre|meter|"
                             r"foot|pound|kilo|gram|litre|liter|page|person|man|room|bedroom|storey|"
                             r"story|piece|seat)s?(?:-|$)")
#: "Which hobby / instrument / animals ...": kinds whose instances are common nouns ("pottery",
#: "the violin", "penguins"), not names, so a name is not what answers them.
_COMMON_KINDS = frozenset(w + s for w in """hobby activity sport instrument animal pet food dish
    meal drink snack dessert fruit vegetable genre subject skill exercise flower plant breed
    ingredient flavour flavor material fabric""".split() for s in ("", "s")) | {
    "hobbies", "activities", "dishes", "breeds", "flavours"}
#: A currency's code or short name just before a number, as a word of its own ("CHF 20",
#: "Rs. 500", "kr 500"; not the "rs" of "years 5").
_CODE_BEFORE = re.compile(r"(?<![^\W\d])([^\W\d]{1,3})\.?\s?$")
#: "how much did it cost", "how much rent": an amount of money answers.
#: Other currencies by sign, code or name, as a notes vault anywhere writes them ("412 kr/month",
#: "CHF 20", "¥3,000", "Rs 500"): a code or a word before the number counts as after it.
MONEY_UNITS = ("$", "€", "£", "¥", "₹", "₩", "₽", "₺", "₪", "฿", "₴", "usd", "eur", "gbp",
               "dollar", "dollars", "euro", "euros", "pound", "pounds", "bucks", "cent", "cents",
               "pence", "k", "kr", "sek", "nok", "dkk", "isk", "krona", "kronor", "krone",
               "kroner", "chf", "franc", "francs", "yen", "jpy", "yuan", "rmb", "cny", "inr", "rs",
               "rupee", "rupees", "aud", "cad", "nzd", "sgd", "hkd", "zł", "pln", "zloty",
               "zlotys", "czk", "kč", "huf", "forint", "forints", "brl", "reais", "mxn", "peso",
               "pesos", "zar", "rand", "krw", "rub", "ruble", "rubles", "rouble", "roubles",
               "lira", "lire", "ils", "shekel", "shekels", "aed", "dirham", "dirhams", "baht",
               "thb", "ron", "lei", "uah", "quid")
_MONEY_VERBS = frozenset("""cost costs pay paid paying pays spend spent spending charge charged
    budget earn earned earns owe owed donate donated donates lend lent lends borrow borrowed borrows
    refund refunded""".split())
#: A "how much" question that says any of these asks for an amount of money.
_PRICED = re.compile(r"\b(?:" + "|".join(sorted(_MONEY_NOUNS | _MONEY_VERBS)) + r")\b")
#: What answers "what time": a clock reading ("4:30", "9 am", "at noon").
_CLOCK = re.compile(r"(?<![\w:])\d{1,2}:\d\d(?![\d:])|\b\d{1,2}(?:[.:]\d\d)?\s?(?:[ap]m\b|[ap]\.m\.)"
                    r"|\b(?:noon|midday|midnight|morning|afternoon|evening|o'clock)\b", re.IGNORECASE)
#: A rate's kind by the word before it, and what it is written in.
_PERCENT = ("%", "percent", "pct")
_RATES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys("interest tax vat error hit success failure conversion growth inflation churn "
                    "discount savings mortgage bounce click response retention".split(), _PERCENT),
    "heart": ("bpm", "beats"), "pulse": ("bpm", "beats")}
#: A measure's extremes: "the largest message", "the minimum version", "the highest value".
_SUPERLATIVES = frozenset("largest biggest smallest highest lowest longest shortest maximum minimum max "
                          "min greatest heaviest lightest fastest slowest".split())
#: What holds bytes, and what bytes are written in ("512Mi", "2 GB", "46G").
_STORED = frozenset("memory ram disk storage heap ssd drive space".split())
BYTE_UNITS = ("b", "byte", "bytes", "k", "kb", "kib", "ki", "m", "mb", "mib", "mi", "g", "gb", "gib", "gi",
              "t", "tb", "tib", "ti", "kilobytes", "megabytes", "gigabytes", "terabytes")
#: What a temperature is written in: "180C", "350°F", "200 fan", "21 degrees".
TEMPERATURE_UNITS = ("°", "°c", "°f", "c", "f", "degree", "degrees", "celsius", "fahrenheit", "fan")
#: A temperature given as a setting, with no unit: "temperature 0.7", "temperature: 0".
_TEMPERATURE_SET = re.compile(r"\btemperature\b\W{0,3}\d", re.IGNORECASE)
#: What answers "my finish time", "the build time": a duration (or a clock reading "1:58:42").
SPAN_UNITS = ("s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes",
              "h", "hr", "hrs", "hour", "hours")
#: What "how long does it take" is answered in: a span as "my finish time" is, or whole days
#: to years ("3-4 days", "a week"); not "100 MB" for "How long does the scan take?".
DURATION_UNITS = (*SPAN_UNITS, "ms", "millisecond", "milliseconds", "day", "days", "night",
                  "nights", "evening", "evenings", "afternoon", "afternoons", "morning",
                  "mornings", "weekend", "weekends", "week", "weeks", "fortnight", "fortnights",
                  "month", "months", "season", "seasons", "year", "years", "decade", "decades")
#: "How long does / did / will ... take", "How long does the battery last": a duration.
_TAKES = re.compile(r"how\s+long\s+(?:does|do|did|will|would|should|can|could|might)\b"
                    r"(?:\s+[\w'’\-.,]+){1,10}?\s+(?:take|last)\b")
#: What a "<word> time" measures as a span, not a moment: "finish time", "build time".
_DURATIONS = frozenset("""finish race lap running completion response load loading build compile
    boot startup wait waiting travel commute cooking baking flight driving render rendering
    processing goal marathon triathlon swim hike workout reaction turnaround lead cycle
    recovery charging screen download upload transit""".split())
_NOUN_STOP = frozenset({"per", "each", "every", "across", "within", "without", "among"})
_PLURALS = frozenset({"people", "children", "men", "women", "feet", "teeth", "mice", "data"})


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


#: "what is the <noun phrase> of ...", "what's my accountant's name": the phrase whose head
#: says the answer's kind.
_WHAT_IS = re.compile(r"(what|which)\s+" + _AUX + r"\s+" + _DETERMINER + "?"
                      r"\s*(.*?)(?=\s+(?:of|in|on|for|at|from|to|by|with|after|before|during|since|until|that|which|who|i|you|we)\b"
                      r"|[?,]|$)")
#: "what time are my lessons", "which font does ...": the wh-word's own noun phrase.
_WHAT_NOUN = re.compile(r"(what|which)\s+(.*?)(?=\s+" + _AUX + r"\b|\s+(?:of|in|on|for|at|from|to|"
                        r"by|with|after|before|during|since|until)\b|[?,]|$)")


def _normal(query: str) -> str:
    """The question as the wh-readers see it: lower case, "what's" as "what is", and
    abbreviations without their period ("Mr. Okafor's" is no second sentence)."""
    low = _CONTRACTED.sub(r"\1 is", query.strip().lower().replace("’", "'"))
    return _ABBREVIATED.sub(r"\1", low)


@functools.lru_cache(maxsize=64)
def kind_word(query: str) -> str | None:
    """The noun of the question that names its answer's kind ("name", "time", "colour"), if any.

    "What's my accountant's name?": the answer is a name, and a sentence that
    says "name" is no closer to it than one that does not (the answer token
    stands in for the word). :func:`typed_gap` therefore does not let this word
    decide which sentence matches the question. Cached: :func:`typed_gap` and
    :func:`assess` both read it for the same search.
    """
    low = _normal(query)
    for wh in _heads(low):
        main = low[wh.start():]
        m = _WHAT_IS.match(main) or _WHAT_NOUN.match(main)
        head = _content(m.group(2).split()) if m else []
        if head and (_noun_kind(head) is not None or head[-1] in _PARTITIVE):
            return head[-1]
    return None


#: "how long is the salt", "how old was my car": the dimension asked of a thing, and the thing.
_MEASURED = re.compile(r"how\s+(?:" + "|".join(DIMENSIONS) + r")\s+(?:is|are|was|were)\s+"
                       r"(?:" + _DETERMINER + r"\s+)?([a-z][\w\-]*)")


#: Words before a measure's noun that qualify it, not name what is measured: "daily rate"
#: ("£130 a day"), "default timeout", "average speed".
_QUALIFIERS = frozenset("""daily weekly monthly yearly annual hourly nightly quarterly average mean
    median default typical usual normal current new old base starting initial final total overall
    recommended expected estimated approximate exact maximum minimum max min peak net gross""".split())
#: "What oven temperature ...", "what was my poster number ...": a measure's noun after its thing's.
_MEASURE_OF = re.compile(r"\b(?:what|which)\s+(?:(?:is|are|was|were)\s+)?(?:" + _DETERMINER + r"\s+)?"
                         r"([a-z][\w\-]*)\s+(" + "|".join(sorted(_MEASURE)) + r")s?\b")


def measured(query: str) -> str | None:
    """The thing a "how long / big / old ... is the X" question measures: its first word; or
    the word before a measure's noun in "what oven temperature", "what is my poster number"."""
    low = _normal(query)
    m = _MEASURED.search(low)
    if m is None and (of := _MEASURE_OF.search(low)) and of.group(1) not in _QUALIFIERS:
        m = of
    return m.group(1) if m and m.group(1) not in STOPWORDS else None


def wh_noun(query: str) -> str | None:
    """The noun whose instance a what / which question asks for: "What *pet* does Tomas
    have?", "what is Tomas's *pet*?"; None for "what did Ines realise ...", "who ..."."""
    low = _normal(query)
    for wh in _heads(low):
        main = low[wh.start():]
        m = _WHAT_NOUN.match(main)
        words = m.group(2).split() if m else []
        if not words or re.fullmatch(_AUX, words[0]):
            copula = re.match(r"(?:what|which)\s+(?:is|are|was|were)\b", main) and _WHAT_IS.match(main)
            words = copula.group(2).split() if copula else []
        head = _content(words)
        return head[-1] if head else None
    return None


#: "Which part of Denver", "what kind of dog", "which brand of coffee": the noun says the
#: answer is one of something; the sentence holding the answer seldom repeats it.
_PARTITIVE = frozenset("part kind type sort variety brand model".split())


def _is_head(text: str, pos: int) -> bool:
    """Is the wh-word at ``pos`` its clause's head ("in which city"), not embedded ("decide how")?"""
    before = re.split(r"[,;:.?!(]|\b(?:and|or|but)\b", text[:pos])[-1].split()
    return all(w in _LEAD for w in before)


def _heads(low: str) -> list[re.Match[str]]:
    """The wh-words of the normalised question ``low`` that head their clauses."""
    return [m for m in _WH.finditer(low) if _is_head(low, m.start())]


#: The wh-words that ask for an instance of a thing: "which hotel", "what colour", "how much".
#: "Who", "where" and "when" ask a relation, which the evidence often words its own way
#: ("Who is X's paternal grandfather?" answered by two notes saying "son of").
_THING_WH = frozenset(("what", "which", "how"))
#: How many of the asked words (beyond names, the kind's noun and relations to a person) the
#: top hits must all lack before no token near the subject answers (see :func:`assess`).
MIN_ASKED_UNHELD = 2


def asks_thing(query: str) -> bool:
    """Does every head wh-word of ``query`` ask for a thing (what / which / how)?"""
    heads = _heads(_normal(query))
    return bool(heads) and all(h.group(1) in _THING_WH for h in heads)


def _content(words: Sequence[str]) -> list[str]:
    """A wh-phrase's words without stop words: its last one is the head noun."""
    return [w for w in words if w not in STOPWORDS]


def _timed(word: str) -> bool:
    """Does "<word> time" measure a span: "finish time", and "finishing time" alike?"""
    return word in _DURATIONS or word.endswith("ing") and (
        word[:-3] in _DURATIONS or word[:-3] + "e" in _DURATIONS)


#: Things a size or a colour qualifies that have names or values of their own: "what colour
#: theme" asks for "Solarized", "what size class" for "M".
_NAMED_BY_KIND = frozenset("""theme themes scheme schemes palette palettes profile profiles code
    codes mode modes space temperature depth grading chart charts picker setting settings option
    options class classes category guide""".split())


def _noun_kind(words: Sequence[str]) -> str | None:
    head = _content(words)
    if not head:
        return None
    if len(head) > 1 and head[0] in ("size", "colour", "color") and head[-1] not in _NAMED_BY_KIND:
        # "what size SSD", "what colour tiles": the first noun names the kind of the answer
        # (not in "what colour theme", a theme's name).
        return QUANTITY if head[0] == "size" else COLOUR
    h = head[-1]
    if h in _MEASURE or _METRIC_AT.fullmatch(h):
        return QUANTITY
    if h in ("time", "times") and len(head) > 1 and _timed(head[-2]):
        return QUANTITY  # "my finish time", "the build time": a span ("1:52:10", "40 minutes")
    if h != "times":
        h = _singular(h)  # "which days", "what dates": the kind of each one
    if h in _DATE_NOUNS:
        return DATE
    if h in _PLACE_NOUNS:
        return PLACE
    if h in _NAME_NOUNS:
        return NAME
    if h in _COLOUR_NOUNS:
        return COLOUR
    return None


def answer_type(query: str, speakers: frozenset[str] = frozenset()) -> Expected:
    """What kind of token answers ``query`` (and the unit a count must carry), or
    :data:`UNCHECKED`.

    English wh-phrases only, read at the head of the question: "how many
    milligrams" -> a quantity in mg; "what MRR@10" (a metric at a cutoff) -> a
    quantity; "when was" -> a date; "who" or "what is the name of" -> a name
    (for "who", a relation too: "my grandmother"); "where" -> a place (or one
    said with a preposition: "in the bathtub"); "in which city" -> a place's
    name; "which <noun>" -> a name (an instance of the noun: "Which font ..."
    -> "JetBrains Mono"), unless it offers a choice ("X or Y") or names a kind
    of common nouns ("which hobby"); "how often" -> a number or a frequency
    ("twice a week"); "what time" -> a clock reading ("4:30", "9 am"), which a
    note's own date is not; "my finish time", "the build time" -> a span
    ("58:14", "40 minutes"); "how much did it cost / rent / salary" -> money
    ("$499", "1,150 euros"). Anything else is not checked: "why", "how do I", "what
    does X do", a yes/no question, a question asking two things of different
    kinds (two of one kind, "who ... and at which conference", are read as that
    kind), a count of the asker's own doings ("how many books did I buy": made
    by listing them, rarely written as a number; "how many milligrams do I
    take" still asks for one) or of a speaker's (``speakers``: their first
    names in lower case; "how many times has Ines been to the coast?"), and a
    question behind a context sentence ("X did Y in 2019. How many ...?": its
    top hits serve the context, not the asked fact).
    """
    low = _normal(query)  # "What's the name of ...": "what is the name of ..."
    if re.search(r"[.?!;:]\s+\S", low.rstrip("?!. ")):
        return UNCHECKED
    if re.match(_AUX + r"\b", low) and _WH.search(low):
        return UNCHECKED
    heads = _heads(low)
    if not heads or len(heads) > 2:
        return UNCHECKED
    kinds = [_clause_type(low[m.start():], low, speakers) for m in heads]
    if any(k.kind != kinds[0].kind for k in kinds[1:]):
        # Two things of one kind ("Who proposed X, and at which conference ...": two
        # names) are checked as that kind; two of different kinds are not checked.
        return UNCHECKED
    # Two clauses asking for one kind in different ways: only the kind is checked.
    if all(k == kinds[0] for k in kinds):
        return _beside(_per(kinds[0], low), query)
    return Expected(kinds[0].kind)


#: "What is X called?": the question asks for a name, whatever X is.
_CALLED = re.compile(r"what(?:'s|\s+(?:is|was|are|were))\s+(?:\S+\s+){1,8}?called\s*\??\s*$")


def _clause_type(main: str, low: str, speakers: frozenset[str] = frozenset()) -> Expected:
    """The answer type asked by one wh-clause ``main`` (the rest of the question from its
    wh-word) of the lower-cased question ``low``; ``speakers`` as in :func:`answer_type`."""
    if _CALLED.match(main):
        # "What was my manager at Corbel Freight called?", "what's the cat called?": a name.
        return Expected(NAME)
    if _RANKED.match(main):
        # "Where did Tomas place / finish in the race?": a rank ("seventh out of forty"),
        # not a place; ranks are not checked.
        return UNCHECKED
    if _INTERVAL.match(main) or _DIFFERENCE.match(main) or _AGO.match(main):
        # "How many days after my birthday is the race?", "how long between the move and
        # the new job?", "how many miles did I drive between the two services?": worked
        # out from two dated events or two readings, often in two notes; no one sentence
        # holds the difference, so nothing is checked. "How long ago / how many days ago
        # did I ...?" is the span from a dated note to today: a chat session or a journal
        # entry dates the event ("I went today", "2024-03-14"), rarely writes the span.
        return UNCHECKED
    m = re.match(r"how\s+(many|much)\b((?:\s+[\w\-]+){0,3})", main)
    if m:
        noun: list[str] = []
        for w in m.group(2).split():
            if w in STOPWORDS or w in _NOUN_STOP or re.fullmatch(_AUX, w):
                break
            noun.append(w)
        # The counted noun: the first plural among them ("linking pages", "people live").
        head = next((w for w in noun if w in _PLURALS or w.endswith("s") and not w.endswith("ss")),
                    noun[0] if noun else "")
        if head in _UNITS:
            return Expected(QUANTITY, _UNITS[head])
        doer = re.search(r"\b" + _AUX + r"\s+([\w\-]+)", main)
        if m.group(1) == "many" and not _ALLOWANCE.search(main) and (
                _FIRST_PERSON.search(main) or doer and doer.group(1) in speakers):
            # "How many books did I buy?", "how many times have we met?": a count of one's
            # own doings is made by listing them across the notes, rarely written as a number.
            return UNCHECKED
        if m.group(1) == "many" and head and head != "times":
            # A count of X is written "N X": "24 layers", "3-4 days". A number next to
            # something else ("one million tokens" for "how many entities") is not it.
            if head in _PERSONS:
                return Expected(QUANTITY, _PERSONS)
            # A word the question sets before the noun may stand between the number and the
            # noun, or for the noun: "312 extra invoices", "9,800 reminder texts".
            before = noun[:noun.index(head)] if head in noun else []
            return Expected(QUANTITY, tuple(dict.fromkeys((head, _singular(head), *before))))
        if m.group(1) == "much" and _PRICED.search(main):
            return Expected(QUANTITY, MONEY_UNITS, money=True)  # "how much did it cost": "$499", "1,150 euros"
        if _STORED.intersection(noun):
            return Expected(QUANTITY, BYTE_UNITS)  # "how much disk space": "46G", "512 MiB"
        return Expected(QUANTITY)
    if main.startswith("how often"):
        return Expected(QUANTITY, frequency=True)
    if _TAKES.match(main):
        return Expected(QUANTITY, DURATION_UNITS, span=True)
    if HOW_DIMENSION_RE.match(main):  # "how long / old / far / big ...": a number
        return Expected(QUANTITY)
    if re.match(r"when\s+(?:was|were|did|had)\b", main) or re.search(r"\bsince\s+when\b", low):
        return Expected(DATE)
    if _SCHEDULED.match(main) or _RELEASE_DATE.match(main):
        # "When is Theo's birthday?", "when is my next dentist appointment?": the date of
        # a named event, which its note writes out. A note's own date (a journal's day, a
        # chat session's) answers what happened then ("when did I ..."), not this.
        return Expected(DATE, undated=True)
    if re.match(r"(?:who|whom|whose)\b", main):
        return Expected(NAME, relation=True, person=True)
    if main.startswith("where"):
        return Expected(PLACE, preposition=True)
    if re.match(r"(?:what|which)\s+(?:day\s+of\s+the\s+week|weekday)\b", main):
        return Expected(WEEKDAY)  # a day of the week is one of seven words, not any date
    m = _WHAT_IS.match(main)
    if m:
        phrase = m.group(2).split()
        expected = _by_head(Expected(_noun_kind(phrase)), phrase, main)
        if expected.kind is None and phrase and phrase[0] in _SUPERLATIVES:
            return Expected(QUANTITY)  # "the largest message the broker accepts": a size
        of = _NAME_OF.match(main)
        if expected.kind == NAME and of and of.group(1) in _RELATIONS:
            return replace(expected, person=True)  # "the name of my dentist"
        return expected
    m = _WHAT_NOUN.match(main)
    if m:
        kind = _noun_kind(m.group(2).split())
        if (kind is None and m.group(1) == "which" and not _CHOICE.search(main)
                and not _COMMON_KINDS.intersection(m.group(2).split())):
            kind = NAME
        return _by_head(Expected(kind), m.group(2).split(), main)
    return UNCHECKED


#: "what is the name of my dentist": the person the name is asked of.
_NAME_OF = re.compile(r"(?:what|which)\s+\S+\s+(?:the\s+)?(?:\w+\s+)?name\s+of\s+(?:my|our|his|her|their|the|"
                      r"[\w\-]+'s)\s+(?:\w+\s+)??([\w\-]+)\??$")
#: "per week", "each month", "every day": the question asks a rate (see :attr:`Expected.per`).
_PER_UNIT = re.compile(r"\b(?:per|each|every)\s+(second|minute|hour|day|night|week|month|year)\b")
#: How a rate per unit is written, by the unit: "a week", "per week", "/wk", "weekly".
_RATE_FORMS = {"second": ("second", "sec", "s"), "minute": ("minute", "min"), "hour": ("hour", "hr", "h"),
               "day": ("day", "d"), "night": ("night",), "week": ("week", "wk", "w"),
               "month": ("month", "mo", "mth"), "year": ("year", "yr", "y", "annum")}
_RATE_ADJECTIVES = {"second": "", "minute": "", "hour": "hourly", "day": "daily", "night": "nightly",
                    "week": "weekly", "month": "monthly", "year": "yearly|annually|annual"}


@functools.cache
def _rate_pattern(unit: str) -> re.Pattern[str]:
    forms = "|".join(_RATE_FORMS[unit])
    adjective = _RATE_ADJECTIVES[unit]
    return re.compile(rf"(?:\b(?:per|a|an|each|every|one)\s+{unit}s?\b|/\s?(?:{forms})s?\b"
                      rf"|\b(?:{unit}s?\s+per\b)" + (rf"|\b(?:{adjective})\b" if adjective else "") + ")",
                      re.IGNORECASE)


#: "Maya's surname", "Mr. Okafor's first name": a part of a person's name, asked by their name.
_NAME_PART = re.compile(r"\b([A-Z][\w\-]*)['’]s\s+(first|given|middle|last|family|maiden|full)?\s*"
                        r"(name|surname|forename)\b")
_NAME_SIDE = {"first": "before", "given": "before", "forename": "before", "last": "after",
              "family": "after", "maiden": "after", "surname": "after"}


def _beside(expected: Expected, query: str) -> Expected:
    """A part of a named person's name is answered by a name written next to theirs."""
    m = _NAME_PART.search(query) if expected.kind == NAME else None
    if m is None or m.group(2) is None and m.group(3) == "name":
        return expected  # "Maya's name": the question gives it
    side = _NAME_SIDE.get(m.group(2) or m.group(3), "either")
    return replace(expected, beside=(m.group(1).lower(), side))


def _per(expected: Expected, low: str) -> Expected:
    """A quantity asked per unit of time ("per week", "each month") is answered by a rate."""
    m = _PER_UNIT.search(low) if expected.kind == QUANTITY else None
    return replace(expected, per=m.group(1)) if m else expected


def _by_head(expected: Expected, words: Sequence[str], main: str) -> Expected:
    """What the phrase's head noun asks beyond its kind: money ("what salary": "$120,000"),
    a span ("my finish time": "1:58:42", "27 minutes"), a clock reading ("what time is my
    check-up": "4:30", "at noon"); else ``expected`` as it is."""
    head = _content(words)
    if head and head[-1] in _MONEY_NOUNS and expected.kind == QUANTITY:
        return replace(expected, units=MONEY_UNITS, money=True)
    if _CURRENCY_WORDS.intersection(head) and (expected.kind == QUANTITY or head[-1] in _SUM_NOUNS):
        # "the total dollar amount", "the euro value of the grant": money ("$48,210"), not
        # "312 extra invoices".
        return Expected(QUANTITY, MONEY_UNITS, money=True)
    if (head[-2:-1] and head[-2] in _ID_NOUNS and head[-1] in ("number", "no", "nr", "id")
            and expected.kind == QUANTITY):
        return replace(expected, identifier=True, address="phone" if head[-2] in _PHONE_NOUNS else "")
    if head and head[-1] in _SECRETS:
        return Expected(QUANTITY, identifier=True, secret=True)  # "the wifi password", "the alarm PIN"
    if head[-2:-1] and head[-2] in _CODED and head[-1] in ("code", "codes"):
        # "the colour codes of ...", "the door code": an identifier ("#2F5D3A", "4711"), which
        # a note without one ("a deep green") does not give.
        return Expected(QUANTITY, identifier=True)
    if head and _singular(head[-1]) in _ORDINAL_NOUNS:
        return Expected(QUANTITY, ordinal=True)  # "which floor": "the third floor", "floor 3"
    if head[-2:] in (["ip", "address"], ["mac", "address"]):
        return Expected(QUANTITY, identifier=True)  # "192.168.0.23", "a4:83:e7:..."
    if head and head[-1] == "address" and expected.kind == PLACE:
        # "my new address", "her home address": a street's; "his email address": an email's.
        # Other addresses ("the IP address", "a web address") are not read.
        before = head[-2] if len(head) > 1 else ""
        kind = "email" if before in ("email", "e-mail", "mail") else "street" if (
            before in ("", "new", "old", "home", "postal", "street", "mailing", "current", "full")) else ""
        return replace(expected, address=kind)
    if head[-2:-1] and head[-1] == "rate" and expected.kind == QUANTITY and head[-2] in _RATES:
        # "What interest rate ...?": "4.1%", not the payment's "£1,020"; "resting heart rate": bpm.
        return replace(expected, units=_RATES[head[-2]])
    if head and head[-1] in _MEASURE and expected.kind == QUANTITY and _STORED.intersection(head[:-1]):
        # "the memory limit", "the disk size": bytes ("512Mi", "2 GB"), not "12 pods" or "70%".
        return replace(expected, units=BYTE_UNITS)
    if head and head[-1] in ("port", "ports"):
        # "Which port does Herald expose its metrics on?": a number ("9102"), not "Grafana".
        return Expected(QUANTITY, identifier=True)
    if head and head[-1] == "temperature" and expected.kind == QUANTITY:
        # "What temperature for the banana bread?": "180C", "350°F", "200 fan"; not "55 min".
        return replace(expected, units=TEMPERATURE_UNITS)
    if head and head[-1] in ("year", "years") and expected.kind == DATE:
        return replace(expected, year=True)
    if head and head[-1] in ("version", "versions") and expected.kind == DATE:
        # "Which Redis version was the gateway using?": a version written out ("Redis 6.2"),
        # not a year the sentence gives, nor the date of the note that tells of it.
        return replace(expected, undated=True, version=True)
    if head and head[-1] in ("hour", "hours") and expected.kind == DATE:
        # "What hours do I need to be reachable?", "the opening hours": a clock reading
        # ("10:00-16:00"), as "what time" asks; no date answers them.
        return replace(expected, clock=True, undated=True)
    if not head or head[-1] not in ("time", "times"):
        return expected
    if expected.kind == QUANTITY:
        return replace(expected, units=SPAN_UNITS, span=True)
    if expected.kind == DATE and len(head) == 1 and not re.search(
            r"\btime\s+of\s+(?:the\s+)?(?:year|month|week|season)\b", main):
        # A clock reading; the note's own date ("2024-02-19-session-02.md") is not one.
        return replace(expected, clock=True, undated=True)
    return expected


def sentences(text: str) -> list[str]:
    """A chunk's text as sentences: list items, table rows and headings apart; link targets gone.

    Hard-wrapped lines join their paragraph; a blockquote's markers go.
    """
    return [sent for _, sent in numbered_sentences(text)]


def numbered_sentences(text: str) -> list[tuple[int, str]]:
    """:func:`sentences`, each with the number of its paragraph (or list item, row, turn)."""
    return outline(text)[0]


#: A list item's bullet and the indent before it ("\t- ", "    2. ").
_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d+[.)])\s")


def outline(text: str) -> tuple[list[tuple[int, str]], list[int | None]]:
    """:func:`numbered_sentences`, and the paragraph number of each list item's parent item.

    An outliner writes a fact under the item it belongs to ("- long ride to Särö and
    back" / "\t- 62 km, 2 h 48 min"; "- renewed the insurance" / "\t- 412 kr/month now"):
    the nested item tells more of its parent, as a next sentence that points back does. A
    line that leads straight into a list ("PE days (kit in school!)" / "- Ben: Tuesday and
    Friday") is its outermost items' parent in the same way.
    -1 for an item at the outermost level with no such line, None for a paragraph, a row or
    a turn.
    """
    units: list[tuple[str, int | None, int]] = []  # (text, item indent or None, block)
    linked = _LINK_TARGET.sub(lambda m: "]" if m.group(0)[0] == "]" else " ", text)
    for block_no, block in enumerate(re.split(r"\n\s*\n", linked)):
        current: list[str] = []
        indent: int | None = None
        for line in block.split("\n"):
            line = re.sub(r"^\s*>\s?", "", line)
            if (_ITEM.match(line) or _TURN.match(line)) and current:
                units.append((" ".join(current), indent, block_no))
                current = []
            if not current:
                bullet = _BULLET.match(line)
                indent = len(bullet.group(1).expandtabs(4)) if bullet else None
            current.append(line.strip())
        if current:
            units.append((" ".join(current), indent, block_no))
    units = [u for u in units if u[0].strip()]
    parents: list[int | None] = []
    open_items: list[tuple[int, int]] = []  # (indent, paragraph) of the items still open
    lead = -1  # the paragraph just before, in the same block: a line leading into a list
    for n, (_, indent, block_no) in enumerate(units):
        if n and units[n - 1][2] != block_no:
            lead = -1
        if indent is None:
            open_items = []
            parents.append(None)
            lead = n
            continue
        while open_items and open_items[-1][0] >= indent:
            open_items.pop()
        parents.append(open_items[-1][1] if open_items else lead)
        open_items.append((indent, n))
    return ([(n, s) for n, (u, _, _) in enumerate(units)
             for s in _SENTENCE_END.split(_MARKER.sub("", u.strip())) if s.strip()], parents)


#: What a number's identifier is of: "my flight number", "the vet's phone number".
_ID_NOUNS = frozenset("""phone mobile cell telephone fax flight account order tracking reference
    confirmation booking reservation seat room house apartment flat passport policy serial ticket
    membership member customer invoice table gate platform licence license plate registration
    case claim patient student employee pin iban card insurance tax vat""".split())
#: What a code is of, when the answer is a code: "the colour codes", "the door code".
_CODED = _ID_NOUNS | frozenset("""colour color hex door zip post postal area country dialling dialing
    access entry alarm lock safe wifi discount promo voucher gift error exit status sort swift""".split())
#: The nouns of a secret a note writes out: "the wifi password", "the alarm PIN".
_SECRETS = frozenset("password passwords passcode passcodes passphrase pin pins".split())
#: A secret given after its label: "password: puffin-harbour", "wifi = BlueHeron7", "PIN
#: 4711", "the password is Tregarrow!"; not where a note says where it is or how it is ("the
#: password is on the fridge", "the wifi was slow"): after "is", only a word no dictionary
#: has (a figure, a capital past the first letter, a sign) or one in quotes.
_SECRET_GIVEN = re.compile(
    r"\b(?:password|passcode|passphrase|pass|pw|pwd|pin|wi-?fi|network|ssid|key|code)\b(?:"
    r"\s*(?::|=|-)\s*[\"'“‘]?(?!(?:on|in|at|the|a|an|my|our|your|its|below|above|same|see|ask)\b)"
    r"([^\s\"'`”’]{3,})"
    r"|\s+(?:is|was)\s+(?:[\"'“‘]([^\s\"'”’]{3,})|((?=\S*[\d!@#$%&*?])\S{3,}|(?-i:\S+[A-Z]\S*)))"
    r"|\s+(\d{3,}))", re.IGNORECASE)
#: A word of letters and figures, as passwords are made: "tregarrow2019", "Blue-Heron-7".
_MIXED_WORD = re.compile(r"(?<![\w\-/:.])(?=[\w\-!@#$%&*]*\d)(?=[\w\-!@#$%&*]*[A-Za-z])[\w\-!@#$%&*]{6,}"
                         r"(?![\w/:])")


def _holds_secret(text: str, asked: frozenset[str]) -> bool:
    """Does ``text`` write out a password, a passcode or a PIN: in code, after its label, or
    as a word of letters and figures the question does not write?"""
    if any(m.group(1).strip().lower() not in asked for m in _CODE.finditer(text)):
        return True
    if any(next(g for g in m.groups() if g).lower().rstrip(".,;!") not in asked for m in _SECRET_GIVEN.finditer(text)):
        return True
    return any(m.group(0).lower() not in asked and not _DATE.fullmatch(m.group(0))
               for m in _MIXED_WORD.finditer(_LINK_TARGET.sub(" ", text)))


#: The words a number is a measure or an amount in, when they follow it.
_MEASURE_WORDS = frozenset(
    [u for key, forms in _UNITS.items() for u in (key, *forms)] + [*MONEY_UNITS, *DURATION_UNITS]
    + "am pm a.m. p.m. people persons times x percent".split())


#: A colour's hex code; three letters need a digit among them ("#0af", not the tag "#ace").
_HEX_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{6}|(?=[a-fA-F]*\d)[0-9a-fA-F]{3})\b")


def _is_range(token: str) -> bool:
    """Two figures of one length with a dash between, the second not led by a zero: a range
    ("1000-2000"), not a phone number ("555-0143", "0161-496-0000")."""
    m = re.fullmatch(r"(\d{3,5})[-–]([1-9]\d{2,4})", token)
    return m is not None and len(m.group(1)) == len(m.group(2))


#: The nouns of "<noun> number" that ask for a phone number.
_PHONE_NOUNS = frozenset("phone mobile cell telephone fax".split())
#: A phone number: six digits or more in one run, spaces, dashes, dots and brackets between
#: ("07700 900316", "+46 31 12 34 56", "(555) 014-3321"), or an office's extension.
_PHONE = re.compile(r"(?<![\w.,])\+?\(?\d(?:[ \-.()]{0,2}\d){6,}(?![\w,])"
                    r"|\b(?:ext|extension|x)\.?[ \t]*\d{2,6}\b", re.IGNORECASE)  # "ext. 4411"


#: A major version after its name: "PostgreSQL 13", "Redis 7", "Node v20" (not "May 6").
_NAMED_MAJOR = re.compile(r"\b([A-Z][\w\-]*)\s+v?(\d{1,3})\b(?![.,:]\d)")


def _holds_identifier(text: str, asked: frozenset[str]) -> bool:
    """Does ``text`` hold a number that may be an identifier: not a clock reading, a year, an
    amount of money or a measure ("leaves 07:10", "in 2024", "3 280 kr", "8 kg")?"""
    if _HEX_COLOUR.search(text):
        return True  # a colour's hex code: "#2F5D3A", "#0af"
    text = re.sub(r"(?<=\d)[ \u00a0\u202f](?=\d{3}\b)", "", text)  # "3 280 kr": one number
    for m in _NUMBER.finditer(text):
        tok = m.group(0).strip().lower()
        if tok in asked or any(c in tok[:2] for c in "$£€") or tok.endswith("%"):
            continue  # an amount of money, a share
        if re.fullmatch(r"\d{1,2}[:.]\d\d(?:[:.]\d\d)?|(?:19|20)\d\d", tok):
            continue  # a clock reading, a year
        suffix = re.sub(r"^[-+]?\d+(?:[.,:]\d+)*\s?", "", tok)
        after = re.match(r"\s*([^\W\d]+\.?|[%°£$€])", text[m.end():m.end() + 16].lower())
        if suffix in _MEASURE_WORDS or after and after.group(1).rstrip(".") in _MEASURE_WORDS:
            continue
        return True
    return False


#: Nouns whose instances are places in an order: "which floor", "what storey".
_ORDINAL_NOUNS = frozenset("floor storey story".split())
#: A place in an order, in words or figures: "third", "3rd", "ground" (as in "ground floor").
_ORDINAL_WORD = re.compile(r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
                           r"eleventh|twelfth|top|ground|bottom|basement|" + _ORDINAL.pattern + r")\b",
                           re.IGNORECASE)
#: The two ends of a span of time, as verbs: "When did the course *start*?" is not answered by
#: "*Finished* 17:40", nor "What time does the shop *close*?" by "*opens* at 8".
_START_WORDS = frozenset("""start starts started starting begin begins began begun beginning open opens
    opened opening""".split())
_END_WORDS = frozenset("""finish finishes finished finishing end ends ended ending stop stops stopped
    close closes closed closing""".split())


def _asked_end(query: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """``(the asked end's words, the other end's)`` when a when / what-time question asks
    for one end of a span and not the other; else None."""
    words = set(re.findall(r"[a-z]+", query.lower()))
    start, end = bool(words & _START_WORDS), bool(words & _END_WORDS)
    if start == end:
        return None
    return (_START_WORDS, _END_WORDS) if start else (_END_WORDS, _START_WORDS)


def _tells_other_end(sent: str, ends: tuple[frozenset[str], frozenset[str]]) -> bool:
    """Does ``sent`` tell the other end of the span (and not the asked one)?"""
    words = set(re.findall(r"[a-z]+", sent.lower()))
    return bool(words & ends[1]) and not words & ends[0]


#: A short label opening a line: "- Tyres: 40 mm, tubeless", "**Frame**: 56 cm".
_LINE_LABEL = re.compile(r"^\W*([A-Za-z][A-Za-z'\-]*(?:\s+[A-Za-z][A-Za-z'\-]*){0,2})\W*:\s+\S")
#: Labels that say how a line speaks, not what it is about.
_DISCOURSE_LABELS = frozenset("""note notes nb ps fyi update edit todo tip warning caution important
    status result results summary answer example reminder idea question q a plan next done why how
    what also see total""".split())


def _labels_another(sent: str, asked: frozenset[str]) -> bool:
    """Does ``sent`` open with a label naming a thing the question does not ask of?

    "What frame size is the gravel bike?" against "- Tyres: 40 mm, tubeless": the number is
    the tyres'. A label the question writes ("Frame: 56 cm"), a measure ("Size: 56",
    "Price: £890") or a label of how the line speaks ("Note: 40 mm") leaves it open; so does
    a line that writes an asked word (checked by the caller: "Conditions: ... HEPES ...").
    """
    m = _LINE_LABEL.match(sent)
    if not m:
        return False
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'\-]*", m.group(1))]
    if any(w in _DISCOURSE_LABELS or w in _MEASURE or _singular(w) in _MEASURE for w in words):
        return False
    stems = {w[:4] for w in asked if len(w) >= 4}
    return not any(w in asked or _singular(w) in asked or (len(w) >= 4 and w[:4] in stems) for w in words)


def _table_count(row: str, asked: frozenset[str], unit_forms: set[str]) -> bool:
    """Is ``row`` a table row with a cell that is a bare number and another that names its
    unit? "| `pool_size` | `20` | Maximum connections per server node. |": a reference
    table gives the value in one column and what it counts in another."""
    if not row.lstrip().startswith("|"):
        return False
    cells = [c.strip().strip("`*_ ") for c in row.strip().strip("|").split("|")]
    numbers = {i for i, c in enumerate(cells) if re.fullmatch(r"\d+(?:[.,]\d+)*", c) and c not in asked}
    return bool(numbers) and any(_singular(w) in unit_forms for i, c in enumerate(cells) if i not in numbers
                                 for w in _TOKEN.findall(c.lower()))


#: Every unit a number may carry glued to it, in lower case ("16GB", "5km", "30s").
_KNOWN_UNITS = frozenset(u for group in (*_UNITS.values(), BYTE_UNITS, DURATION_UNITS, MONEY_UNITS,
                                         TEMPERATURE_UNITS) for u in group)
#: A figure glued to capitals that are no unit: "2FA", "4WD", "3DS" name a thing, not a
#: quantity.
_CAPS_NAME = re.compile(r"\d+([A-Z]{2,3})")


#: How many words may stand between a count and the thing it counts: "31 semi-natural
#: grassland sites", "12 wild bee species".
COUNT_MODIFIERS = 2
#: The plain words after a count: the counted thing, with up to COUNT_MODIFIERS before it.
_COUNT_PHRASE = re.compile(rf"(?:\s+[^\W\d_][\w\-]*){{2,{COUNT_MODIFIERS + 1}}}")


def _counted_past_modifiers(after: str, unit_forms: set[str]) -> bool:
    """Does the text after a number name the counted thing past a few words describing it?

    "31 semi-natural grassland sites" counts sites as "31 sites" does. Only plain words may
    stand between (no figure, no punctuation, no function word: "5 minutes from the site"
    counts minutes, and "3 of the sites" is left unread).
    """
    words = _COUNT_PHRASE.match(after)
    if not words:
        return False
    seq = words.group(0).split()
    for i, w in enumerate(seq):
        low = w.lower()
        if i > 0 and _singular(low) in unit_forms:
            return True
        if low in STOPWORDS:
            return False
    return False


_LOOSE_UNITS = frozenset("smdywktgbh")


def _unit_after(text: str, end: int) -> bool:
    """Does a unit of measure follow the figure that ends at ``end`` ("200 kB/s", "250 ms")?"""
    m = re.match(r"\s?([^\W\d_]+)", text[end:end + 12])
    if m is None:
        return False
    unit = m.group(1)
    # Byte sizes in their own case; of the one-letter units, those that are as often a word's
    # initial or an abbreviation ("s", "m", "d") say nothing.
    return unit.lower() in _KNOWN_UNITS and unit.lower() not in _LOOSE_UNITS or unit in ("kB", "KB", "MB", "GB", "TB")


def holds_typed(expected: Expected | str, text: str, asked: frozenset[str]) -> bool:
    """Does ``text`` hold a token that could answer what ``expected`` says (or a bare kind)?

    ``asked``: the question's own tokens (lower case), which never count: the
    answer to "how many threads with -Z threads=8" is not the 8 it was asked with.
    """
    if isinstance(expected, str):
        expected = Expected(expected)
    if expected.secret:
        return _holds_secret(text, asked)
    kind, units = expected.kind, expected.units
    if kind in (QUANTITY, DATE):
        # "KEEP_CHECKOUT=1", "x86_64": identifiers, not quantities; "`t = 200`" is a value.
        # A quoted value is a value too: a config table's `"04:00-05:00"`, `"30s"`.
        text = _CODE.sub(lambda m: m.group(1) if re.search(r"(?:^|\s|^[\"'])\d", m.group(1)) else " ", text)
    if kind == QUANTITY and expected.per and not _rate_pattern(expected.per).search(text):
        return False  # "per week": "Long run: 28 km" is one run's, not a week's
    if (kind == QUANTITY or kind == DATE and expected.undated and not expected.clock) and (
            turn := _TURN.match(text)):
        # "[11:04] Joris: she was the only dog ...": a chat line's clock says when it was
        # written, and counts nothing it tells; nor does its date ("20/01/2025, 10:06 -
        # Gran: ...") date an event it tells of ("When is the MOT due?"). What happened that
        # day ("When did Gran see the optician?") may still be dated by it, and a time of day
        # read from it ("What time did Ayla ring the office?": "(09:30): Rang the office").
        text = text[turn.end():]
    if kind == QUANTITY:
        # "August 17", "17 Aug", "March 2023", "2024-03-14": a date's numbers count nothing;
        # nor does a note's name in a wikilink ("results in [[Annual checkup 2025]]").
        text = _DATED_NUMBER.sub(" ", _WIKILINK.sub(" ", text))
        if expected.address == "phone":
            asked_digits = {re.sub(r"\D", "", a) for a in asked}
            return any(re.sub(r"\D", "", m.group(0)) not in asked_digits and not _is_range(m.group(0))
                       for m in _PHONE.finditer(text))
        if expected.identifier:
            return _holds_identifier(text, asked)
        if expected.ordinal and any(m.group(0).lower() not in asked for m in _ORDINAL_WORD.finditer(text)):
            return True
        text = _VERSION_NUMBER.sub(" ", text)
        unit_set = set(units)
        unit_forms = {_singular(u) for u in units}  # read for every number word below
        if expected.frequency and any(m.group(0).lower() not in asked  # "twice a week", "3x"
                                      for m in _FREQUENCY.finditer(text)):
            return True
        if units == TEMPERATURE_UNITS and _TEMPERATURE_SET.search(text):
            return True  # a model's sampling temperature has no unit
        if units and _table_count(text, asked, unit_forms):
            return True
        for m in _NUMBER.finditer(text):
            tok = m.group(0).strip().lower()
            sign = text[max(0, m.start() - 1):m.start()]  # the character before the figure
            if sign == "<" and not tok.strip("3") and not _unit_after(text, m.end()):
                continue  # "happy birthday Tobias!! <3": a chat's heart, no three ("<3 ms" is a bound)
            if tok in asked or tok.rstrip("%") in asked or tok == "+1" or sign == "#":
                # "+1 but please keep the armv7 image": a chat's "me too" counts nothing; nor
                # does an issue's or a ticket's number ("about #561").
                continue
            caps = _CAPS_NAME.fullmatch(m.group(0).strip())
            if caps and caps.group(1).lower() not in _KNOWN_UNITS:
                continue  # "See [Accounts and 2FA].": a name with a figure in it
            if not units or expected.span and re.fullmatch(r"\d+:\d\d(?::\d\d)?", tok):
                return True
            if expected.money and (tok[:1] in ("$", "€", "£") or (
                    (code := _CODE_BEFORE.search(text[max(0, m.start() - 8):m.start()]))
                    and code.group(1).lower() in unit_set)):
                return True  # "$499": the sign is inside the number's token; "CHF 20", "kr 500"
            after = _RANGE_TAIL.sub("", text[m.end():m.end() + 24].lower())  # "3-4 days"
            suffix = re.sub(r"^[-+$£€]?\d+(?:[.,:]\d+)*\s?", "", tok)
            if suffix == "s" and (re.fullmatch(r"\d{3}0s", tok)
                                  or _NAME_BEFORE.search(text, max(0, m.start() - 40), m.start())):
                continue  # "the 1990s", "Hoka Clifton 9s": a decade, a model's plural, no seconds
            unit = re.match(r"(?:\s*|-(?=[^\W\d]))([^\W\d]+|[%°£$€])", after)  # "11 digits", "11-digit"
            said = {suffix, unit.group(1) if unit else "", text[max(0, m.start() - 1):m.start()]}
            if said & unit_set or {_singular(w) for w in said if w} & unit_set:
                return True
            if unit and _counted_past_modifiers(text[m.end():m.end() + 48], unit_forms):
                return True
        # "a two-year-old greyhound", "a three-day trip": a number word before a unit, inside
        # the hyphens ("zero-shot", "half-precision" count nothing).
        words = [part for w in _TOKEN.findall(text.lower())
                 for part in (w.split("-")[:2] if _HYPHEN_MEASURE.match(w) else (w,))]
        for i, w in enumerate(words):
            if w in asked or w not in _NUMBER_WORDS and w not in ("one", "a", "an") or (
                    w in _EVERY and not expected.frequency):
                continue
            if not units:
                if w in _NUMBER_WORDS:
                    return True
            elif w in _VAGUE:
                continue  # "the first few minutes", "several days": no value was given
            elif i + 1 < len(words) and _singular(words[i + 1]) in unit_forms:
                return True  # "fifteen grams", "a day", "an hour"
        return False
    if kind == DATE and expected.version:
        return any(m.group(0).lower().lstrip("v") not in asked for m in _VERSION.finditer(text)) or any(
            m.group(2) not in asked and m.group(1).lower() not in _MONTHS for m in _NAMED_MAJOR.finditer(text))
    if kind == DATE and expected.clock:
        return any(m.group(0).lower() not in asked for m in _CLOCK.finditer(text))
    if kind == DATE and expected.year:
        # Three figures are a year only said as one ("in 870", "870 AD"), not "page 140 of 410".
        return any(m.group(1) not in asked and (len(m.group(1)) == 4 or _ERA.search(
            text, max(0, m.start() - 6), min(len(text), m.end() + 4))) for m in _YEAR.finditer(text)
        ) or bool(_YEAR_AGO.search(text))
    if kind == DATE:
        # "slower than 200 kB/s": a figure with a unit after it is a measure, not a year.
        if any(m.group(1) not in asked and not _unit_after(text, m.end()) for m in _YEAR.finditer(text)):
            return True
        # A version dates a changelog's lines; not the one the question asks about ("When is
        # 3.0 going to be released?" against "Work on 3.0 has begun.").
        if _DATE.search(text) or _RELATIVE_DATE.search(text) or any(
                m.group(0).lower().lstrip("v") not in asked for m in _VERSION.finditer(text)):
            return True
        for w in _TOKEN.findall(text):
            low = w.lower()
            if low in asked:
                continue
            if low in _DAYS or low in _WEEKDAYS or low in _SEASONS or (
                    low in _MONTHS and (w[0].isupper() or low not in ("may", "march"))):
                return True
        return False
    if kind in (COLOUR, WEEKDAY):
        words = _COLOURS if kind == COLOUR else _WEEKDAYS
        return any(part in words and part not in asked
                   for w in _TOKEN.findall(text.lower()) for part in w.split("-"))
    if expected.beside[0]:
        return _next_to(text, *expected.beside, asked)
    if expected.address == "email":
        return any(m.group(0).lower() not in asked for m in _EMAIL.finditer(text))
    if expected.address:
        return bool(_STREET.search(text))
    # A name or a place: a capitalised word past a sentence's first, a mixed-case or
    # letters-and-digits token, a code span or a path that the question does not contain.
    if any(m.group(0).lower() not in asked for m in _PATH.finditer(text)):
        return True
    if any(m.group(1).strip().lower() not in asked for m in _CODE.finditer(text)):
        return True
    if expected.preposition and _AT_PLACE.search(text):
        return True
    if expected.relation and any(w in _RELATIONS and w not in asked
                                    for w in _TOKEN.findall(text.lower())):
        return True
    # "Dentist check-up at Tandartspraktijk Oost": a name after "at" or "in" is where, not who.
    placed = [m.span(1) for m in _PLACED_NAME.finditer(text)] if expected.person else []
    for m in _TOKEN.finditer(text):
        w = m.group(0)
        if w.islower() or w.lower() == w.upper():
            continue  # the common case, cheaply: an ordinary word, or no letters ("1-1", "2019")
        if placed and any(a <= m.start() < b for a, b in placed):
            continue
        w = w.replace("’", "'").split("'")[0]  # "Lothair's", "I've": the word itself
        low = w.lower()
        if low in asked or low in STOPWORDS or len(w) < 2:
            continue
        if low in _MONTHS or low in _DAYS or low in _WEEKDAYS or low in _CALENDAR_SHORT and (
                _AFTER_NUMBER.search(text, max(0, m.start() - 2), m.start()) or re.match(
                    r"\.?\s?\d", text[m.end():m.end() + 3])):
            # "in September", "on Fridays", "1 Feb", "Sat 12 Oct": a date, not the name a
            # question asks for ("Jan" alone may be a person).
            continue
        if w in _TASK_MARKERS:
            continue  # "TODO book the hotel": an outliner's task state
        if w.isupper() and (low in _NUMBER_WORDS or low in STOPWORDS or low == "one"):
            continue  # "only TWO plants", "NOT again": a common word stressed, no acronym
        if w.isupper() and _AFTER_NUMBER.search(text, max(0, m.start() - 2), m.start()):
            continue  # "4,000 IU", "16 GB": a unit after its number, not a name
        if not w[1:].islower() and (not w[1:].isdigit() or w[0].isupper()):
            return True  # "iTerm", "TEDx", "M10P", "GPT4": a name wherever it stands
        if w[0].isupper() and not _after_stop(text, m.start()):
            return True  # "Alan" in "invented by Alan Adler"; not "The" opening a sentence
    return False


#: An email address.
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+")
#: A street address: "12 Elm Street", "Elm St", "Storgata 14", "Brouwerskaai 12", "rue de
#: Rivoli 8", a British or a Dutch postcode. A suffix that ends ordinary words too ("-gate",
#: "-ring", "-kade": "Northgate", "Spring", "Arcade") counts only with a house number.
_STREET = re.compile(
    r"\b\d{1,5}[A-Za-z]?,?\s+(?:[A-Z][\w\-']*\s+){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Way|Drive"
    r"|Dr|Boulevard|Blvd|Place|Pl|Square|Sq|Court|Ct|Terrace|Close|Crescent|Row|Parkway)\b"
    r"|\b[A-Z][\w\-']*\s+(?:Street|Road|Avenue|Lane|Drive|Boulevard|Terrace|Crescent)\b"
    r"|\b[A-ZÄÖÜÅØÆ][\w\-']*(?:gatan|gata|vägen|veien|vegen|gränd|straat|strasse|straße|gasse|gracht|plein"
    r"|kaai|allee|platz)\b"
    r"|\b[A-ZÄÖÜÅØÆ][\w\-']*(?:gate|väg|vej|gade|weg|laan|kade|ring)\s+\d{1,4}[a-zA-Z]?\b"
    r"|\b(?:[Rr]ue|[Vv]ia|[Cc]alle|[Rr]ua|[Aa]venida|[Pp]iazza|[Pp]laza|[Cc]arrer)\s+(?:\w+\s+){0,2}?[A-Z][\w\-']*"
    r"|\b[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}\b|\b\d{4}\s?[A-Z]{2}\b")
#: The task states outliners (Logseq, org-mode) write before a block: no names.
_TASK_MARKERS = frozenset("TODO DOING DONE LATER NOW WAITING CANCELED CANCELLED".split())
#: A title before a name, no part of it: "Mr Okafor", "Dr Ek".
_HONORIFICS = frozenset(a.lower() for a in (*_ABBREVIATIONS, "Miss", "Sir", "Madam", "Mx"))


def _next_to(text: str, name: str, side: str, asked: frozenset[str]) -> bool:
    """Is a capitalised word written right after (or before) ``name`` in ``text``?"""
    who = rf"(?i:{re.escape(name)})"
    forms = {"after": [rf"\b{who}\s+([A-Z][\w'’\-]+)"], "before": [rf"\b([A-Z][\w'’\-]+)\s+{who}\b"]}
    pats = forms.get(side) or forms["after"] + forms["before"]
    return any(m.group(1).lower() not in asked and m.group(1).lower() not in STOPWORDS
               and m.group(1).lower() not in _HONORIFICS for p in pats for m in re.finditer(p, text))


#: A capitalised word and a space just before a number: "Clifton 9s" names a model.
_NAME_BEFORE = re.compile(r"\b[A-Z][\w\-]*\s$")
#: A number and a space just before a word (read over the two characters before it): a unit.
_AFTER_NUMBER = re.compile(r"\d\s?$")


def _after_stop(text: str, pos: int) -> bool:
    """Does the word at ``pos`` open a sentence (only spaces, quotes, brackets, a heading's or a
    quote's marker since a stop: "## Hiring: an intern", "> Note that ...")?"""
    j = pos - 1
    while j >= 0 and (text[j].isspace() or text[j] in "\"'([*_#>"):
        j -= 1
    if j < 0 or text[j] in ".!?:":
        return True
    # "[Orchid] - Enables a private network", "Rekki – Joined in January": a dash between
    # spaces opens a clause, as a stop does, so the word after it is no name for that.
    return (text[j] in "-\u2013\u2014" and j + 1 < pos and text[j + 1].isspace()
            and (j == 0 or text[j - 1].isspace()))


#: The asker's own voice, in a question or a note: "I", "my", "we", "our" ...
_ASKER = re.compile(r"\b(?:I|[Mm]y|me|mine|[Ww]e|[Oo]ur|ours|us)\b")
#: The speaker as a sentence's subject or owner ("I named him", "my kitten").
_SELF = re.compile(r"\b(?:I|[Mm]y|[Mm]ine|[Ww]e|[Oo]ur|[Oo]urs)\b")
#: A request for the other's news: "Tell me everything about the kitten", "send us a photo".
_REQUEST = re.compile(r"^\W*(?:(?:please|so|okay|ok|now|and|go\s+on)\W+)?(?:tell|send|show|give|text|"
                      r"update|remind|let)\s+(?:me|us)\b", re.IGNORECASE)


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
#: The whole name after "at" or "in", for a question asking a person (:attr:`Expected.person`):
#: a place's or an organisation's ("at Buro Groen", "in Alfama"), no person's.
_PLACED_NAME = re.compile(r"\b(?:at|in)\s+((?:[A-Z][\w'’\-]*)(?:\s+[A-Z][\w'’\-]*)*)")
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


def _tells_self(sent: str) -> bool:
    """Is ``sent`` its speaker's word about themselves? First person, unless it only asks
    for the other's news ("Tell me everything about the kitten": "me" tells nothing);
    "Northgate wants me as a physio" is the speaker's news."""
    return bool(_ASKER.search(sent)) and not (_REQUEST.match(sent) and not _SELF.search(sent))


def _asks(sent: str) -> bool:
    """Is ``sent`` a question (it states nothing)?"""
    return sent.rstrip(" *_\"')]").endswith("?")


def _own_statement(sent: str) -> bool:
    """Does ``sent`` state something in the first person (not ask it)?"""
    return bool(_ASKER.search(sent)) and not _asks(sent)


#: A day or a month in a file name: "journal/2023-05-08.md", "2024-03 review.md".
_PATH_DAY = re.compile(r"(?<!\d)(?:19|20)\d\d-[01]\d(?:-[0-3]\d)?(?!\d)")
#: Front-matter fields that date a note (a journal day, a chat session).
_DATE_FIELDS = ("date", "created", "day")


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
    return any(holds_typed(DATE, str(meta.get(f, "")), frozenset()) for f in _DATE_FIELDS if meta.get(f))


#: A question that offers its answers ("Who lived longer, Ludwig Elsbett or Pamela Rymer?"):
#: the names are the question's own, and what decides between them is worded any way.
_CHOICE = re.compile(r"\bor\b")

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
#: A pronoun that points back to what the sentence before spoke of.
_BACK = re.compile(r"\b(?:it|its|them|they|their|this|these|those|he|she|him|his|her)\b", re.IGNORECASE)
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


# --- who said it: a conversation between named people ------------------------------------

#: A turn at a line's start: "**Ines:** ...", "**Ines**: ...", "Ines: ...", "- Ines: ...",
#: "> Ines: ...", "[10:32] Ines: ...", "10:32 Ines: ...", "Ines (8 May, 10:32): ...",
#: "D1:3 Ines: ...", "2. Ines: ...", "Ines [D1:3]: ...", "Ines said: ...", "[Ines]: ...",
#: 'Ines said, "..."' (a transcript rendered as prose): one to three capitalised words,
#: then a colon (or, after "said", a comma and the opening quote). After a bracketed time, as
#: a chat server's export writes it ("**[2025-04-02 14:31] mo.h:** ...", "[14:31] **kestrel_dev**:
#: ..."), a user's handle in any case: a lower-case word after a bare clock is as often a
#: plan's line ("09:00 gym: legs").
_TURN = re.compile(r"^[ \t]*(?:>[ \t]*)?(?:[-*+][ \t]+|\d{1,4}[.)][ \t]+)?(?:\*\*|__)?"
                   r"(?:\[[^\]\n]{1,40}\][ \t]*|(?:\d{1,4}[/.\-]\d{1,2}[/.\-]\d{2,4},?[ \t]+)?"
                   r"\d{1,2}:\d\d(?::\d\d)?(?:[ \t]*[AaPp][Mm])?[ \t]+"
                   r"(?:[-–][ \t]+)?|[A-Z]{0,3}\d+(?::\d+)+[ \t]+)?(?:\*\*|__)?"
                   r"\[?([A-Z][^\W_]*(?:[ \t][A-Z][^\W_]*){0,2}"
                   r"|(?:(?<=\d\])|(?<=\d\][ \t])|(?<=\d\][ \t]\*\*)|(?<=\d\]\*\*[ \t]))"
                   r"[^\W_][\w.\-]{0,30}(?<![.\-]))\]?"
                   r"(?:[ \t]+(?:said|says|wrote|writes|asked|asks|replied|replies)"
                   r"(?P<quoted>,[ \t]*(?=[\"“]))?)?(?:\*\*|__)?"
                   r"(?(quoted)|(?:[ \t]*(?:\([^()\n]{1,40}\)|\[[^\]\n]{1,40}\]))?(?:\*\*|__)?"
                   r"[ \t]*:(?:\*\*|__)?[ \t]+(?!<?[a-z][\w+.\-]*://))",  # "[Zotero]: https://..." is a link
                   re.MULTILINE)
#: The person spoken to.
_YOU = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
#: The one spoken to as the owner or the doer of what follows: "your mug", "a photo of you
#: hanging off a rock", "I heard you started climbing". Not "you" as the one told or given
#: something ("I told you about the kitten", "I'll send you a photo"): what follows is the
#: speaker's news.
_LISTENERS = re.compile(r"\b(?:your|yours|yourself)\b|\byou\b(?=\s+(?!(?:a|an|the|about|some|my|our|"
                        r"his|her|their|this|that|these|those|to|in|on|at|for|with|from|when|how|"
                        r"what|all|so|too|back|again|know|guys|both|and|or|but|if|as)\b)[a-z])",
                        re.IGNORECASE)


def _addressed(sent: str, got: set[str], patterns: dict[str, re.Pattern[str]]) -> set[str]:
    """The words of ``got`` that ``sent`` gives to the one spoken to: the nearest person
    before the word is "you" (as owner or doer, :data:`_LISTENERS`), not "I" or "my"."""
    marks = sorted([(m.start(), False) for m in _ASKER.finditer(sent)]
                   + [(m.start(), True) for m in _LISTENERS.finditer(sent)])
    out: set[str] = set()
    for t in got:
        m = patterns[t].search(sent)  # None for a word carried from the sentence before
        if m is None:
            continue
        before = [you for at, you in marks if at < m.start()]
        if before and before[-1]:
            out.add(t)
    return out


#: A speaker label must open this many turns among the hits read (one "Note:" is no speaker).
MIN_TURNS = 2


#: The labels of an assistant's turns in a chat log ("**Assistant:**", "ChatGPT: ...").
ASSISTANT_LABELS = frozenset("assistant chatgpt claude gemini copilot bot".split())
#: A chat export's role label in any case ("user: ...", "assistant: ..."), which :data:`_TURN`
#: (a person's capitalised name) does not read.
_ROLE = re.compile(r"^[\W_]*(user|human|assistant|chatgpt|claude|gemini|copilot|bot|system)[\W_]*:\s",
                   re.IGNORECASE)


def sentence_labels(sents: Sequence[str]) -> list[str | None]:
    """Who says each of ``sents``: the first word of the last turn label before it, in
    lower case ("ines", "assistant"), or None before any.

    One label is enough, unlike :func:`sentence_turns`: a chunk of a long chat often
    holds a single turn, whose label still says whose words follow.
    """
    out: list[str | None] = []
    who: str | None = None
    for sent in sents:
        m = _TURN.match(sent) or _ROLE.match(sent)
        if m:
            who = m.group(1).split()[0].lower()
        out.append(who)
    return out


def turns(text: str) -> list[tuple[str | None, str]]:
    """``text`` as ``(speaker, words)`` turns; words before the first turn have no speaker."""
    found = list(_TURN.finditer(text))
    if not found:
        return [(None, text)]
    out: list[tuple[str | None, str]] = [(None, text[:found[0].start()])] if found[0].start() else []
    for m, nxt in zip(found, [*found[1:], None], strict=True):
        out.append((m.group(1), text[m.end():nxt.start() if nxt else len(text)]))
    return out


#: A clock in a turn's label: a chat export's line.
_CLOCK_IN_LABEL = re.compile(r"\d:\d\d")


def sentence_turns(sents: Sequence[str]) -> list[tuple[str, int] | None]:
    """Each sentence's ``(speaker, turn number)`` in a conversation, else ``None`` for all.

    A conversation here is two or more speakers whose labels open sentences (a turn
    starts a new unit in :func:`numbered_sentences`); one "Note:" line is no speaker.
    """
    out: list[tuple[str, int] | None] = []
    who: str | None = None
    number = -1
    stamped: set[str] = set()  # speakers whose label carries a clock ("[18:40] jgrebe:")
    for sent in sents:
        m = _TURN.match(sent)
        if m:
            who, number = m.group(1), number + 1
            if _CLOCK_IN_LABEL.search(m.group(0)):
                stamped.add(who)
        out.append((who, number) if who else None)
    opened = Counter(who for who, _ in dict.fromkeys(filter(None, out)))  # turns per speaker
    # A busy chat's chunk may hold one line from each of many people: two labels with a clock
    # are two speakers, as no note's "Note:" or "Tip:" is.
    if sum(n >= MIN_TURNS for n in opened.values()) < 2 and len(stamped) < 2:
        return [None] * len(sents)
    return out


def speaker_gap(query: str, hits: Sequence[Any], terms: Sequence[str], idf: dict[str, float],
                patterns: dict[str, re.Pattern[str]]) -> tuple[float, str | None, str | None, set[str]]:
    """Do the hits hold the asked part for the person asked about, or only for the other one?

    A chat between named people ("**Ines:** ...", "**Tomas:** ...") tells the
    same kind of thing of each: both ran, both got a pet. "What did Ines
    realise after her charity 10K?" finds every asked word in Tomas's "I ran
    the charity 10K ... and realised ..."; it is about Ines only if Ines said
    it of herself, someone said it to her ("how was your 10K?") or named her.
    So each sentence of the top hits is given to whom it is about: a speaker's
    first-person words to the speaker (not a request: "tell me about the kitten"
    asks for the other's news), words to "you" (and none of "I") to the
    one spoken to, a sentence naming the person to that person. A plain
    statement is nobody's: the listener echoes the teller ("that charity 10K
    sounds brutal"), and what the person asked about asks ("how's the
    kitten?") states nothing of theirs either; a name that only calls someone
    ("Thanks, Tomas!") is not about them; a first-person sentence that points
    back ("I paid $180 for it") makes the sentence before it in the turn the
    teller's too; in a sentence with both persons each asked word is whose the
    nearest person before it says ("I saw a photo of *you* hanging off a rock",
    "I loved *your* mug"). The gap is the asked part's best
    share (of its IDF mass) in the other speakers' words about themselves
    minus its best share in words about the person asked about. 0 when the question names no speaker, or
    two (one of them is then the subject, the other the object), or is about
    the asker ("my", "I": a user's own log).
    Returns ``(gap, speaker, said_by, the asked terms said_by's sentence holds)``.
    """
    none: tuple[float, str | None, str | None, set[str]] = (0.0, None, None, set())
    words = [m.group(0).replace("’", "'") for m in _WORD.finditer(query)]
    # Every capitalised word, the first too ("Ines's 10K was when?"): only a speaker's label counts.
    bare = {w[:-2] if w.endswith("'s") else w.rstrip("'") for w in words}
    written = {w for w in bare if w[:1].isupper()}
    # A handle in small letters is a speaker only after a bracketed time (:data:`_TURN`).
    if _ASKER.search(query) or not written and not any("]" in h.text for h in hits):
        return none
    per_hit = [turns(h.text) for h in hits]
    counts = Counter(who for hit_turns in per_hit for who, _ in hit_turns if who)
    speakers = {w for w, n in counts.items() if n >= MIN_TURNS and len(w) > 1}
    if len(speakers) < 2:
        return none
    # A handle in small letters ("jgrebe") is written as its label is.
    named = [w for w in speakers if w.split()[0] in written or w.islower() and w in bare]
    if len(named) != 1:
        return none
    person = named[0]
    # Not asked of them: their name, nor the noun the answer stands for ("What *pet* does
    # Tomas have?": his "a very patient cat" answers; Ines's "my flat allows pets" is no pet).
    noun = wh_noun(query)
    own = {t.lower() for t in person.split()} | ({noun} if noun else set())
    asked = [t for t in terms if t not in own]
    mass = sum(idf.get(t, 0.0) for t in asked)
    if not asked or mass <= 0:
        return none

    def share_of(words: set[str]) -> float:
        """``words``' share of the asked part's IDF mass."""
        return sum(idf.get(t, 0.0) for t in words) / mass

    first_name = re.escape(person.split()[0])
    mention = re.compile(r"\b" + first_name + r"\b")
    # "Tomas, guess what: I adopted the dog!", "Thanks, Tomas!": a name that calls someone
    # (the sentence's first word, or after a comma or a greeting, then a stop) is not about them.
    calling = re.compile(r"(?:^[\W_]*|[,;]\s*|\b(?:[Hh]ey|[Hh]i|[Hh]ello|[Oo]h|[Yy]o|[Tt]hanks|[Dd]ear|"
                         r"[Mm]orning|[Cc]ongrats|[Ww]ow)\s+)" + first_name + r"(?=\s*(?:[,!?.;:]|$))")
    best_x, best_other, other, said = 0.0, 0.0, None, set()
    for hit_turns in per_hit:
        # "You" is the one spoken to only between two people; in a group it may be anyone.
        pair = len({who for who, _ in hit_turns if who}) <= 2
        for who, words_said in hit_turns:
            in_turn = [t for t in asked if patterns[t].search(words_said)] if who else []
            if not in_turn:
                continue  # no speaker, or no asked word anywhere in the turn
            prev: set[str] = set()  # the asked words of the turn's sentence before
            for sent in sentences(words_said):
                got = here = {t for t in in_turn if patterns[t].search(sent)}
                first = _tells_self(sent)
                if first and prev and _BACK.search(sent) and not _asks(sent):
                    # "A refurbished Gaggia espresso machine. I paid $180 for it.": a first-
                    # person sentence that points back makes the thing before it the teller's.
                    got = got | prev
                prev = here
                if not got:
                    continue
                share = share_of(got)
                second = bool(_YOU.search(sent))
                calls = len(calling.findall(sent))
                # "I saw the photo of you hanging off a rock!": both persons; each asked word
                # is whose the nearest of them before it says ("you": the rock is the other's).
                yours = _addressed(sent, got, patterns) if first and second else set()
                mine = got - yours
                if len(mention.findall(sent)) > calls or (calls and second and not first):
                    best_x = max(best_x, share)  # names them, or tells them ("..., Ines?")
                elif who == person:
                    # Their own words, unless they ask ("how's the kitten?" states nothing). In
                    # a group, terse news drops the "I" ("results are out!!! 66% average for
                    # second year"): a plain statement of theirs that speaks to nobody is theirs.
                    if (first or not pair and not second) and mine and not _asks(sent):
                        best_x = max(best_x, share_of(mine))
                elif pair and second and not first:
                    best_x = max(best_x, share)  # said to them
                elif first and who in speakers:
                    if pair and yours:  # "I loved your mug": the mug is theirs
                        best_x = max(best_x, share_of(yours))
                    if mine and share_of(mine) > best_other:
                        best_other, other, said = share_of(mine), who, mine
    gap = max(0.0, best_other - best_x)
    return (gap, person, other, said) if gap > 0 else (0.0, person, None, set())


# --- the measurement ---------------------------------------------------------------------


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
    title = fold(first.title).lower()
    if not any(fold(a).lower() == title for a in about):
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
    from .termstats import chunk_count, idf

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
