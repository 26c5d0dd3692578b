"""Text helpers shared by indexing and search: query terms, CJK segmentation, FTS syntax.

User text never reaches FTS5 as syntax: a query becomes an OR of quoted terms,
so quotes, ``*``, ``-``, ``NEAR``, ``AND`` and unbalanced parentheses are just
characters.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata

# Han, Hiragana, Katakana, Hangul: scripts written without spaces between words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_RE = re.compile(f"[{_CJK}]")
_TERM_RE = re.compile(f"[{_CJK}]+|[^\\W_]+(?:['’][^\\W_]+)?", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve""".split()
)


def segment_cjk(text: str) -> str:
    """Put spaces around CJK characters so FTS5's word tokenizers index each one.

    unicode61 would otherwise treat a whole run of ideographs as one token, and a
    query for a two-character word inside it would never match.
    """
    if not CJK_RE.search(text):
        return text
    return CJK_RE.sub(lambda m: f" {m.group(0)} ", text)


def fold(text: str) -> str:
    """``text`` with Unicode's compatibility forms folded (NFKC): "CO₂" is "CO2", "m²" is
    "m2", full-width "ＰＤＦ" is "PDF", the ligature in "ﬁle" is "fi".

    What the full-text index holds and what a query asks are both folded, so a question
    typed with plain digits finds a note written with subscripts, and the confidence's
    reader reads the hits the same way. ASCII text (most of it) is returned as it is.
    """
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def query_terms(query: str, keep_stopwords: bool = False, cjk_bigrams: bool = True) -> list[str]:
    """The distinct search terms of a query, lower-cased, in order.

    A CJK run becomes its character bigrams (each searched as a phrase), or stays
    whole with ``cjk_bigrams=False`` (the trigram tokenizer matches substrings).
    Stop words are dropped unless the query has nothing else.
    """
    raw: list[str] = []
    for t in _TERM_RE.findall(fold(query)):
        if CJK_RE.match(t) and cjk_bigrams:
            # Overlapping character bigrams: the usual way to search unsegmented text.
            raw.extend(t[i : i + 2] for i in range(max(1, len(t) - 1)))
        else:
            term = t.lower().replace("’", "'")
            # A possessive is its noun: "Lothair II's" must find "Lothair II". Kept, "ii's"
            # became the FTS phrase "ii s", which a text without the possessive never matches.
            raw.append(term[:-2] if term.endswith("'s") and len(term) > 2 else term)
    seen: dict[str, None] = {}
    for t in raw:
        seen.setdefault(t, None)
    terms = list(seen)
    if keep_stopwords:
        return terms
    content = [t for t in terms if t not in STOPWORDS]
    return content or terms


#: The word after "how" that names the dimension of the answer: "how much", "how big",
#: "how long". The answer is a value ("200 mg", "2 TB", "3 hours") that seldom repeats
#: the word, so the confidence's reader does not ask a text to hold it (the lexical
#: stage still searches it: docs/benchmarks.md, "Tried for the reader").
DIMENSIONS = ("much", "many", "long", "often", "far", "old", "big", "large", "small", "fast",
              "tall", "high", "wide", "deep", "heavy", "quickly", "soon")
HOW_DIMENSION_RE = re.compile(r"\bhow\s+(" + "|".join(DIMENSIONS) + r")\b", re.IGNORECASE)


def dimension_words(query: str) -> set[str]:
    """The dimension words of ``query``'s "how much / how big" phrases, lower-cased.

    A word the query also uses elsewhere stays a term: "how long is the long run"
    still looks for "long".
    """
    how = [m.group(1).lower() for m in HOW_DIMENSION_RE.finditer(query)]
    if not how:
        return set()
    words = [t.lower() for t in _TERM_RE.findall(query)]
    return {w for w in set(how) if words.count(w) == how.count(w)}


def content_terms(query: str, cjk_bigrams: bool = True) -> list[str]:
    """:func:`query_terms` less the dimension words: what a text holding the answer
    shares with the question. Empty when the question is only "how much?"."""
    drop = dimension_words(query)
    return [t for t in query_terms(query, cjk_bigrams=cjk_bigrams) if t not in drop]


def content_words(text: str) -> list[str]:
    """The words a link's context keeps: search terms without bare numbers or single letters.

    One definition for the parser (the words around a link) and the store (a
    note's or a label's words), so the bridges compare like with like.
    """
    return [w for w in query_terms(text) if len(w) > 1 and not w.isdigit()]


def fts_term(term: str) -> str:
    """One term as a quoted FTS5 string (a phrase of characters for CJK)."""
    if CJK_RE.match(term):
        term = " ".join(term)
    return '"' + term.replace('"', '""') + '"'


def fts_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression: the OR of the quoted terms ('' when there are none)."""
    return " OR ".join(fts_term(t) for t in terms[:64])


def fts_phrase(text: str) -> str:
    """An exact-phrase FTS5 expression for ``text`` ('' when it has no terms)."""
    terms = query_terms(text, keep_stopwords=True)
    if not terms:
        return ""
    words = " ".join(" ".join(t) if CJK_RE.match(t) else t for t in terms)
    return '"' + words.replace('"', '""') + '"'


def crude_stem(term: str) -> str:
    """The prefix a term's other forms share: "ranking" ~ "ranked", "paying" ~ "pay".

    Up to three letters come off a word longer than four, never below four left,
    except that "paying", "buying", "saying" keep their three-letter verb (kept to
    four, "payi" would not find "pay"). Other short "-ing" forms keep four letters:
    a three-letter "com" or "mak" would find far more than "come" and "make".
    """
    if len(term) <= 4:
        return term
    if len(term) == 6 and term.endswith("ying") and term[1] in "aeiou":
        return term[:3]  # "paying", "buying", "saying": the verb is the three letters
    return term[: max(4, len(term) - 3)]


#: Common verbs whose past forms share no prefix with the verb: a question asks "how much
#: did I pay", a note says "I paid". Each line: the verb, then its past forms.
_IRREGULAR = """pay paid|buy bought|say said|sell sold|tell told|teach taught|think thought
bring brought|catch caught|fight fought|seek sought|make made|take took taken|go went gone
see saw seen|meet met|give gave given|win won|find found|leave left|get got gotten
begin began begun|write wrote written|run ran|eat ate eaten|drive drove driven|fly flew flown
ride rode ridden|lose lost|spend spent|send sent|lend lent|build built|keep kept|feel felt
sleep slept|hold held|choose chose chosen|break broke broken|speak spoke spoken|wear wore worn
forget forgot forgotten|grow grew grown|know knew known|throw threw thrown|swim swam swum
sing sang sung|drink drank drunk|hear heard|stand stood|understand understood|sit sat
draw drew drawn|come came|become became|fall fell fallen|hide hid hidden|steal stole stolen
wake woke woken|feed fed|lead led|shoot shot|bite bit bitten|hang hung|dig dug
freeze froze frozen|mean meant|deal dealt|light lit|ring rang rung|rise rose risen|shake shook shaken
strike struck|tear tore torn|weave wove woven"""
#: Each form of an irregular verb -> all its forms.
_FORMS: dict[str, tuple[str, ...]] = {
    form: group for group in (tuple(line.split()) for line in re.split(r"[|\n]", _IRREGULAR))
    for form in group}


def verb_forms(term: str) -> tuple[str, ...]:
    """The irregular verb forms of ``term`` ("pay", "pays", "paying", "paid"), or ``()``."""
    for base in (term, term[:-1] if term.endswith("s") else "",
                 term[:-2] if term.endswith("es") else "",
                 term[:-3] if term.endswith("ing") else "",
                 term[:-3] + "e" if term.endswith("ing") else "",
                 term[:-4] if term.endswith("ing") and term[-4:-3] == term[-5:-4] else ""):
        if base in _FORMS:
            return _FORMS[base]
    return ()


#: A title's or an address's usual short form, both ways: "my doctor" is "Dr. Okonkwo".
_SHORT_FORMS: dict[str, tuple[str, ...]] = {
    "doctor": ("dr",), "doctors": ("dr",), "dr": ("doctor", "doctors"),
    "professor": ("prof",), "prof": ("professor",),
    "avenue": ("ave",), "ave": ("avenue",), "mount": ("mt",), "mt": ("mount",),
}


def other_forms(term: str) -> tuple[str, ...]:
    """The words ``term`` stands for that share no stem with it: an irregular verb's other
    forms ("pay" -> "paid", "bought" -> "buy") and a title's short form ("doctor" -> "dr").

    One list for every reader of a term: the lexical query and its IDF
    (:mod:`pinakes.termstats`) and the patterns of the coverage weights and the
    confidence (:func:`term_pattern`), so a note's "I paid" counts for "pay" everywhere.
    """
    return tuple(f for f in (*verb_forms(term), *_SHORT_FORMS.get(term, ())) if f != term)


def word_forms(word: str) -> list[str]:
    """A word and the forms English inflection and the commonest suffixes give it: "run" ->
    "runs", "running", "runner"; "use" -> "used", "using", "useful"; "copy" -> "copies".

    What :func:`term_pattern` finds for a word too short to stem, instead of every word
    it begins ("dr" is not "drive", "cat" not "category").
    """
    endings = ["s", "es", "'s", "d", "ed", "ing", "er", "ers", "est", "ly", "y"]
    if len(word) > 2:  # "payment", "useful", "careless": not for "dr" or "go"
        endings += ["ment", "ments", "ful", "less", "ness", "able"]
    forms = [word, *(word + e for e in endings)]
    if word.endswith("e") and len(word) > 2:  # "using", "coder" (not "e" alone: "vitamin E")
        forms += [word[:-1] + e for e in ("ing", "er", "ers", "est", "y")]
    if re.search(r"[^aeiou]y$", word):  # "copies", "copied", "happily"
        forms += [word[:-1] + e for e in ("ies", "ied", "ier", "iers", "iest", "ily")]
    if re.search(r"(?:^|[^aeiou])[aeiou][^aeiouwxy]$", word):  # "running", "stopped"
        forms += [word + word[-1] + e for e in ("ing", "ed", "er", "ers", "est", "y")]
    return list(dict.fromkeys(forms))


@functools.lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str]:
    """A forgiving regex for a term in raw text: a crude stem, so "ranking" finds "ranked"
    (a word of four letters or fewer is kept whole, with its endings: "run" finds "running",
    not "rung"; "dr" not "drive"), an irregular verb's other forms, so "pay" finds "paid",
    and a title's short form, so "doctor" finds "Dr. Okonkwo".

    Cached: the search's coverage weights and the confidence's support check
    (pinakes.support) match the same query terms in the same search.
    """
    if CJK_RE.match(term):
        return re.compile(re.escape(term))
    stem = crude_stem(term)
    # The stem at a word start. Written stem-first with the word-start check as a
    # lookbehind over "one word character + the stem": the same matches and spans
    # as a leading (?<![^\W_]), but the regex engine can scan for the literal
    # first, which is ~3x faster (search runs this on every lexical candidate).
    ends = ""
    if stem == term and not term.isdigit():
        # A short word is kept whole: it ends in one of its own inflections, so "dr" does
        # not find "drive", "cat" not "category", "work" not "workflow".
        forms = word_forms(term)
        stem = os.path.commonprefix(forms)
        tails = "|".join(re.escape(f[len(stem):]) for f in sorted(forms, key=len, reverse=True))
        ends = f"(?:{tails})" + r"(?![^\W_])"
    lit = re.escape(stem)
    pattern = lit + r"(?<![^\W_]" + lit + ")" + ends
    # "pay" finds "paid", "bought" finds "buy": an irregular verb's other forms, whole.
    whole = re.compile(pattern, re.IGNORECASE)
    others = [f for f in other_forms(term) if not whole.fullmatch(f)]
    if others:
        pattern = f"(?:{pattern}|\\b(?:{'|'.join(map(re.escape, others))})\\b)"
    derived = derived_patterns(term)
    if derived:
        pattern = f"(?:{pattern}|{'|'.join(derived)})"
    return re.compile(pattern, re.IGNORECASE)


#: The endings a verb takes after a "-tion" noun's stem (or none): "definition" -> "define",
#: "defined"; "installation" -> "install", "installs".
_VERB_TAILS = ("s", "e", "es", "ed", "ing", "er", "ers", "y")


def derived_patterns(term: str) -> list[str]:
    """Regex fragments for the words ``term`` is built from, which no stem of it reaches.

    A noun in "-ation", "-ition" or "-ution" and its verb: the question's "my floral unit
    *definition*" is the note's "floral units as *defined* in". A word negated with "un-"
    and the word itself: "how much is *unspent*" is answered by "£1,585 *spent* of £2,500".
    Each is matched as a whole word with a verb's endings, never as a bare prefix
    ("defin" would find "definitely").
    """
    out: list[str] = []
    low = term.lower()
    if len(low) >= 9 and re.search(r"[aiu]tion$", low):  # a stem of four letters or more
        stem = re.escape(low[:-5])
        out.append(rf"\b{stem}(?:{'|'.join(_VERB_TAILS)})?\b")
    if low.startswith("un") and len(low) >= 6 and low[2:].isalpha():
        out.append(term_pattern(low[2:]).pattern)  # "unpaid": "paid", and so "pay"
    return out


def embed_text(title: str, heading_path: tuple[str, ...] | list[str], text: str) -> str:
    """What the embedder sees for a chunk: its document title and heading path give context.

    Its SHA-1 is the chunk's content hash: the embedding cache's key, and what a
    search checks a hit's stored text against (pinakes/health.py).
    """
    head = " > ".join(heading_path)
    return f"{title}\n{head}\n{text}" if head else f"{title}\n{text}"
# --- names in a query (what a question is about) -------------------------------------

#: Word tokens as names are matched: a CJK character alone, else a run of letters/digits.
NAME_TOKEN_RE = re.compile(f"[{_CJK}]|[^\\W_]+")
#: Longest name (in tokens) that can count as named in a query.
MAX_NAME_TOKENS = 12
#: A title's trailing "(qualifier)": "Foo (film)", "Gordon Douglas (director)".
_QUALIFIER_TAIL = re.compile(r"\s*\([^()]*\)\s*$")


def strip_qualifier(text: str) -> str:
    """``text`` without a trailing parenthetical: "Foo (film)" → "Foo". Encyclopedias tell
    namesakes apart that way, and a question names the thing without it."""
    return _QUALIFIER_TAIL.sub("", text)


def name_tokens(text: str) -> tuple[str, ...]:
    """Lower-cased word tokens in order (CJK: one per character), stop words kept."""
    return tuple(t.lower() for t in NAME_TOKEN_RE.findall(text.replace("’", "'")))


def name_spans(tokens: tuple[str, ...], names: object,
               max_len: int = MAX_NAME_TOKENS) -> list[tuple[int, int]]:
    """``(start, end)`` token spans of ``tokens`` that are whole known names, longest first wins.

    ``names`` is anything supporting ``in`` on token tuples (a dict or set of
    names as :func:`name_tokens` gives them). A span strictly inside a longer
    named span is dropped: "Lothair" inside "Lothair II" names someone else.
    Shared by the graph channel's seeding and the confidence's subject/asked split.
    """
    found = [(i, j) for i in range(len(tokens))
             for j in range(i + 1, min(len(tokens), i + max_len) + 1)
             if tokens[i:j] in names]  # type: ignore[operator]
    return [(i, j) for i, j in found
            if not any(a <= i and j <= b and (b - a) > (j - i) for a, b in found)]
