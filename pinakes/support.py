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
  rate"), without the quantity word of "how many / how much / how long".

and two things are measured, cheaply (regexes over the few hits the search
already holds, IDF from the search's own cache):

``asked_gap``
    in each of the top :data:`SUPPORT_HITS` hits, the largest share of the
    query's IDF mass carried by one asked word the hit does not contain; the
    best of those hits (the smallest gap) is the feature. 0 when some top hit
    holds every asked word; ~0.4 for "who invented the French press" against
    a note that never says "invent". A share of the query's mass, so it
    reads the same on any corpus and any query length.
``unknown_name``
    1 when the question writes a name (a capitalised word past the first, an
    all-caps or letters-and-digits token) that occurs nowhere in the KB:
    "What BLEU score did ...", "... LlamaIndex's SentenceSplitter". The notes
    cannot hold a fact about something they never mention.

Both go to the calibrator (:mod:`pinakes.evaluation.calibration`), which
decides what they are worth; :meth:`Support.reason` turns them into the
sentence an abstaining result carries ("found 'French press', nothing on
'invented'"). Measured leads that did not pay (docs/benchmarks.md): a second
short embedding of the asked part against the hits or their sentences, the
wh-phrase's head noun ("which *chair*"): the answer to "what X" is an instance
of X, rarely the word X, so its absence says little.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .text import NAME_TOKEN_RE, STOPWORDS, name_spans, name_tokens, query_terms, term_pattern

if TYPE_CHECKING:
    from .kb import KB

#: How many of the top hits may hold the asked part (the search's own best few).
SUPPORT_HITS = 3
#: "how many milligrams": the quantity word asks for a number, no text will hold it.
_QUANTITY = re.compile(r"\bhow\s+(many|much|long|often|far|old)\b", re.IGNORECASE)
#: Words as written, for telling names (capitals, digits) from ordinary words.
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
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

    @property
    def features(self) -> tuple[float, float]:
        """``(asked_gap, unknown_name)`` for the calibrator."""
        return self.gap, 1.0 if self.unknown else 0.0

    def reason(self) -> str:
        """Which part of the question found no support, in one line (for an abstention).

        "nothing in the notes mentions 'BLEU'"; "found 'French press', nothing on
        'invented'"; and when every word was found somewhere, that the matches
        are weak, so an agent knows to rephrase rather than to look for a gap.
        """
        if self.unknown:
            return f"nothing in the notes mentions {_quoted(self.unknown)}"
        if self.unsupported:
            subject = self.about or self.found
            head = f"found {_quoted(subject, 'and')}, " if subject else ""
            return f"{head}nothing on {_quoted(self.unsupported)}"
        return "the best matches are weak: no note matches the question closely"

    def to_dict(self) -> dict[str, Any]:
        return {"about": list(self.about), "asked": list(self.asked),
                "unsupported": list(self.unsupported), "unknown": list(self.unknown),
                "asked_gap": round(self.gap, 4)}


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
    for title, aliases in conn.execute(
        "SELECT title, json_extract(meta, '$.front_matter.aliases') FROM documents"
    ):
        if title:
            labels.append(str(title))
            short = re.sub(r"\s*\([^()]*\)\s*$", "", str(title))
            if short != title:
                labels.append(short)
        if aliases:
            try:
                parsed = json.loads(aliases) if aliases.startswith("[") else [aliases]
            except (ValueError, AttributeError):
                parsed = []
            labels.extend(str(a) for a in parsed if isinstance(a, str | int | float))
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


# --- the measurement ---------------------------------------------------------------------


def assess(kb: KB, query: str, hits: Sequence[Any], *, conn: Any, generation: int,
           idf_of: Any, df_of: Any, tokenizer: str = "porter") -> Support:
    """Split ``query`` into about / asked and measure the asked part against the top hits.

    ``idf_of(terms) -> {term: idf}`` and ``df_of(term) -> int`` are the
    search's own cached statistics (no extra SQL for terms it has seen).
    ``hits`` carry ``title``, ``heading_path`` and ``text`` (the search holds
    them already).
    """
    trigram = tokenizer == "trigram"
    quantity = {m.group(1).lower() for m in _QUANTITY.finditer(query)}
    terms = [t for t in query_terms(query, cjk_bigrams=not trigram) if t not in quantity]
    if not terms:
        return Support()
    names = known_names(kb, conn, generation)
    about, about_toks = _about(query, names)
    asked = [t for t in terms if t not in about_toks]
    idf = idf_of(terms)
    mass = sum(idf.values()) or 1.0
    patterns = {t: term_pattern(t) for t in terms}
    top = list(hits[:SUPPORT_HITS])
    held: list[set[str]] = []
    for h in top:
        hay = f"{h.title}\n{' > '.join(h.heading_path)}\n{h.text}"
        held.append({t for t, p in patterns.items() if p.search(hay)})
    if held:
        gaps = [max((idf[t] for t in asked if t not in got), default=0.0) / mass for got in held]
        gap = min(gaps)
        anywhere = set().union(*held)
        best = held[gaps.index(gap)]
    else:
        gap, anywhere, best = 0.0, set(), set()
    unsupported = sorted((t for t in asked if t not in anywhere), key=lambda t: -idf[t])
    found = [t for t in terms if t in best and t not in about_toks]
    found.sort(key=lambda t: -idf[t])
    unknown = []
    written: dict[str, str] = {}  # a term as the question writes it
    for m in _WORD.finditer(query):
        word = m.group(0).replace("’", "'")
        word = word[:-2] if word.lower().endswith("'s") else word
        low = word.lower()
        written.setdefault(low, word)
        if low not in patterns or len(low) < MIN_UNKNOWN_CHARS or word == low and word.isalpha():
            continue  # not a query term, too short, or an ordinary lower-case word
        name_like = (m.start() > 0 and word != low) or (  # a capital past the first word
            any(c.isdigit() for c in word) and any(c.isalpha() for c in word))  # "70B", "GPT4"
        if name_like and df_of(low) == 0:
            unknown.append(word)
    return Support(about=about, asked=asked,
                   unsupported=[written.get(t, t) for t in unsupported],
                   unknown=list(dict.fromkeys(unknown)),
                   found=[written.get(t, t) for t in found[:3]], gap=gap)


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

    support = assess(kb, query, hits, conn=conn, generation=generation, idf_of=idf_of,
                     df_of=df_of, tokenizer=str(kb.config.retrieval.get("tokenizer", "porter")))
    lists.support = support
    return support


class _LazyConn:
    """The KB's read connection, opened (one stat) only when a statistic is not cached."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb

    def execute(self, *args: Any) -> Any:
        return self.kb.reader().conn.execute(*args)
