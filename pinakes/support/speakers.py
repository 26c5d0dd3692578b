"""Who said it: a conversation between named people (:func:`speaker_gap`).

Part of :mod:`pinakes.support`; its docstring tells the whole method.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .lexicon import _WORD
from .questions import wh_noun
from .sentences import _TURN, sentences

#: The asker's own voice, in a question or a note: "I", "my", "we", "our" ...
_ASKER = re.compile(r"\b(?:I|[Mm]y|me|mine|[Ww]e|[Oo]ur|ours|us)\b")
#: The speaker as a sentence's subject or owner ("I named him", "my kitten").
_SELF = re.compile(r"\b(?:I|[Mm]y|[Mm]ine|[Ww]e|[Oo]ur|[Oo]urs)\b")
#: A request for the other's news: "Tell me everything about the kitten", "send us a photo".
_REQUEST = re.compile(r"^\W*(?:(?:please|so|okay|ok|now|and|go\s+on)\W+)?(?:tell|send|show|give|text|"
                      r"update|remind|let)\s+(?:me|us)\b", re.IGNORECASE)


def _tells_self(sent: str) -> bool:
    """Is ``sent`` its speaker's word about themselves? First person, unless it only asks
    for the other's news ("Tell me everything about the kitten": "me" tells nothing);
    "Northgate wants me as a physio" is the speaker's news."""
    return bool(_ASKER.search(sent)) and not (_REQUEST.match(sent) and not _SELF.search(sent))


def _asks(sent: str) -> bool:
    """Is ``sent`` a question (it states nothing)?"""
    return sent.rstrip(" *_\"')]").endswith("?")


#: A pronoun that points back to what the sentence before spoke of.
_BACK = re.compile(r"\b(?:it|its|them|they|their|this|these|those|he|she|him|his|her)\b", re.IGNORECASE)
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
