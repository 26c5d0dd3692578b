"""Entity names: normalising a surface form into a node key, and finding names in text.

One key per entity, whatever the spelling in a given chunk: ``"The Beatles'"``,
``"the  Beatles"`` and ``"Beatles"`` all become ``beatles``. The key is also
the pattern searched for in chunk text, so normalisation only ever *removes*
characters from the edges of a name (a leading article, a possessive,
punctuation) and folds case: what is left is still a substring of every
spelling it came from, and a single Aho–Corasick pass over a chunk finds all
names at once, whatever their number.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

import ahocorasick

from pinakes.text import CJK_RE, STOPWORDS, strip_qualifier

_WS = re.compile(r"\s+")
_POSSESSIVE = re.compile(r"['’]s?$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_INITIAL = re.compile(r"(?<![^\W_])([^\W\d_])\.", re.UNICODE)
# Stripped from both ends of a name; brackets are kept (a key may be "foo (film)").
_EDGE = " \t\"'`“”‘’.,;:!?*_#|~-–—/\\"
MAX_KEY_CHARS = 120


def fold(text: str) -> str:
    """Case- and width-fold ``text`` and collapse whitespace: what names are matched in."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return _WS.sub(" ", text).strip()


def normalise(surface: str) -> str:
    """The entity key of a surface form ('' when it is not a usable name).

    Folded (see :func:`fold`), possessive and edge punctuation stripped, and a
    leading "the " dropped unless what is left is a stop word ("The Who"
    stays "the who"). A usable key has a letter, at least two characters, and
    is not a stop word: "It" or "1999" as a title would otherwise match
    nearly every chunk.
    """
    s = fold(surface)
    s = _POSSESSIVE.sub("", s).strip(_EDGE)
    if s.startswith("the ") and s[4:] not in STOPWORDS:
        s = s[4:].strip(_EDGE)
    if len(s) < 2 or len(s) > MAX_KEY_CHARS or s in STOPWORDS:
        return ""
    if not any(ch.isalpha() for ch in s):
        return ""
    return s


def title_names(title: str) -> list[tuple[str, str]]:
    """``(key, label)`` of a title and of its alias without a trailing parenthetical.

    ``"Foo (film)"`` gives ``foo (film)`` and ``foo``: text says "Foo", not
    "Foo (film)", so the alias is what other documents' chunks actually name.
    """
    label = " ".join(title.split())
    out: list[tuple[str, str]] = []
    key = normalise(label)
    if key:
        out.append((key, label))
    short = strip_qualifier(label)
    if short != label:
        skey = normalise(short)
        if skey and skey != key:
            out.append((skey, short))
    return out


def words(key: str) -> list[str]:
    """The words of a key."""
    return _WORD.findall(key)


def tokens(key: str) -> list[str]:
    """The content words of a key (no stop word, no initial): near-duplicate blocking keys."""
    return [t for t in _WORD.findall(key) if len(t) > 1 and t not in STOPWORDS]


def initials(key: str) -> frozenset[str]:
    """The one-letter words of a key written as initials ("m." in "m. curie")."""
    return frozenset(_INITIAL.findall(key))


def contains(small: list[str], big: list[str], abbreviated: frozenset[str] = frozenset()) -> bool:
    """True when every word of ``small`` is in ``big``; an initial matches a word it begins.

    ``["curie"]`` and (with ``abbreviated={"m"}``) ``["m", "curie"]`` are both
    contained in ``["marie", "curie"]``. Only a letter written with a full stop
    is an initial: "William V" is not contained in "William VI".
    """
    if not small:
        return False
    bigset = set(big)
    for t in small:
        if t in bigset:
            continue
        if t in abbreviated and any(u.startswith(t) for u in big):
            continue
        return False
    return True


class Matcher:
    """All names of a vocabulary, found in one pass over a text (Aho–Corasick).

    A match counts only on word boundaries: the characters around it must not
    be letters or digits, so "Art" is not found in "artist". CJK text has no
    spaces between words, so a name starting or ending with a CJK character is
    exempt from the check at that end.
    """

    def __init__(self, keys: Iterable[str]) -> None:
        self._auto = ahocorasick.Automaton()
        n = 0
        for key in keys:
            if key:
                self._auto.add_word(key, key)
                n += 1
        self.size = n
        if n:
            self._auto.make_automaton()

    def counts(self, text: str, nested: bool = False) -> Counter[str]:
        """How often each name occurs in ``text`` (already folded with :func:`fold`).

        A name found only inside a longer one ("Andy" in "Andy Summers") does not
        count unless ``nested``: it names someone else, and counting it would tie
        every Andy together. Names that merely overlap both count.
        """
        return Counter(key for _, _, key in self.spans(text, nested))

    def spans(self, text: str, nested: bool = False) -> list[tuple[int, int, str]]:
        """``(start, end, key)`` of every match :meth:`counts` counts, in text order.

        ``end`` is inclusive. The mentions deriver reads the words around each span
        (the relation a chunk states about the name, see ``mention_context``).
        """
        if not self.size or not text:
            return []
        last = len(text) - 1
        spans: list[tuple[int, int, str]] = []
        for end, key in self._auto.iter(text):
            start = end - len(key) + 1
            if start > 0 and _is_word(text[start - 1]) and not CJK_RE.match(key[0]):
                continue
            if end < last and _is_word(text[end + 1]) and not CJK_RE.match(key[-1]):
                continue
            spans.append((start, end, key))
        spans.sort(key=lambda s: (s[0], -s[1]))
        if not nested:
            kept: list[tuple[int, int, str]] = []
            reach = -1  # the furthest end of a kept span starting at or before this one
            for span in spans:
                if span[1] <= reach:
                    continue  # inside a longer name
                kept.append(span)
                reach = span[1]
            spans = kept
        return spans


#: Where the words a chunk says about a name stop: a clause boundary.
_CLAUSE_END = re.compile(r"[.,;:!?()\[\]{}\n\"“”|]")
#: Content words kept on each side of a mention.
CONTEXT_WORDS = 6


def mention_context(text: str, spans: list[tuple[int, int, str]], i: int,
                    width: int = CONTEXT_WORDS) -> list[str]:
    """The content words next to mention ``spans[i]`` in ``text``, within its clause.

    The words between the mention and the nearest clause boundary (punctuation,
    a line break) or neighbouring mention on each side, at most ``width`` each,
    stop words and bare numbers dropped. In "a 2011 film directed by Jakob
    Ziemnicki, produced by Anna Kowalska" the words of Jakob's mention are "film
    directed" and Anna's "produced": the relation the chunk states about each
    name, as cheap text. A query asking for the director then favours the edge
    to Jakob (the ppr channel's relation weights, ``ppr_relation_weight``).
    """
    start, end, _ = spans[i]
    lo = spans[i - 1][1] + 1 if i > 0 else 0
    hi = spans[i + 1][0] if i + 1 < len(spans) else len(text)
    lo = max(lo, 0)
    left = text[lo:start]
    cut = [m.end() for m in _CLAUSE_END.finditer(left)]
    if cut:
        left = left[cut[-1]:]
    right = text[end + 1 : max(hi, end + 1)]
    stop = _CLAUSE_END.search(right)
    if stop:
        right = right[: stop.start()]
    def keep(ws: list[str]) -> list[str]:
        return [w for w in ws if w not in STOPWORDS and not w.isdigit() and len(w) > 1]
    return keep(_WORD.findall(left))[-width:] + keep(_WORD.findall(right))[:width]


def candidate_names(text: str, longest: int = MAX_KEY_CHARS) -> set[str]:
    """Every substring of ``text`` (folded) that :class:`Matcher` could match as a name.

    A match starts after a non-word character (or at the start) and ends before
    one (or at the end), and names never begin or end with a space. Used to look
    names up by key for a few chunks instead of building an automaton over all
    of them; exact for text without CJK (which has no boundaries to rely on).
    """
    n = len(text)
    starts = [i for i in range(n) if text[i] != " " and (i == 0 or not _is_word(text[i - 1]))]
    ends = [j for j in range(n) if text[j] != " " and (j == n - 1 or not _is_word(text[j + 1]))]
    out: set[str] = set()
    k = 0
    for i in starts:
        while k < len(ends) and ends[k] < i:
            k += 1
        for j in ends[k:]:
            if j - i >= longest:
                break
            out.add(text[i : j + 1])
    return out


def _is_word(ch: str) -> bool:
    return ch.isalnum() and not CJK_RE.match(ch)
