"""The reader's shared words: the hit windows and the word patterns every part of it reads.

Part of :mod:`pinakes.support`; its docstring tells the whole method.
"""

from __future__ import annotations

import re

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
