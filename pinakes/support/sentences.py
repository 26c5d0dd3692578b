"""A hit's sentences, and whether one holds a token of the asked kind (:func:`holds_typed`).

Part of :mod:`pinakes.support`; its docstring tells the whole method.
"""

from __future__ import annotations

import re

from ..text import (
    STOPWORDS,
)
from .lexicon import _ORDINAL
from .questions import (
    _ABBREVIATIONS,
    _AT_PLACE,
    _CALENDAR_SHORT,
    _CLOCK,
    _CODE,
    _CODE_BEFORE,
    _COLOURS,
    _DATE,
    _DATED_NUMBER,
    _DAYS,
    _ERA,
    _EVERY,
    _FREQUENCY,
    _HYPHEN_MEASURE,
    _ITEM,
    _LINK_TARGET,
    _MARKER,
    _MEASURE,
    _MONTHS,
    _NUMBER,
    _NUMBER_WORDS,
    _PATH,
    _RANGE_TAIL,
    _RELATIONS,
    _RELATIVE_DATE,
    _SEASONS,
    _SENTENCE_END,
    _TEMPERATURE_SET,
    _TOKEN,
    _UNITS,
    _VAGUE,
    _VERSION,
    _VERSION_NUMBER,
    _WEEKDAYS,
    _WIKILINK,
    _YEAR,
    _YEAR_AGO,
    BYTE_UNITS,
    COLOUR,
    DATE,
    DURATION_UNITS,
    MONEY_UNITS,
    QUANTITY,
    TEMPERATURE_UNITS,
    WEEKDAY,
    Expected,
    _rate_pattern,
    _singular,
)


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


#: The whole name after "at" or "in", for a question asking a person (:attr:`Expected.person`):
#: a place's or an organisation's ("at Buro Groen", "in Alfama"), no person's.
_PLACED_NAME = re.compile(r"\b(?:at|in)\s+((?:[A-Z][\w'’\-]*)(?:\s+[A-Z][\w'’\-]*)*)")
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
