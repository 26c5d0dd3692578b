"""What a question expects: a cheap reader of answer types (:func:`answer_type`).

Part of :mod:`pinakes.support`; its docstring tells the whole method.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..text import (
    DIMENSIONS,
    HOW_DIMENSION_RE,
    STOPWORDS,
)

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
#: How many, before "... ago": "three", "a few" ("three years ago", "a few days ago").
_FEW = r"\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few"
#: A year counted from the note's own date: "last year", "three years ago".
_YEAR_AGO = re.compile(r"\b(?:this|last|next)\s+year\b|\b(?:" + _FEW + r"|several)\s+years?\s+ago\b",
                       re.IGNORECASE)
#: "this weekend", "next month", "tonight", "two weeks ago": a date counted from the note's
#: own (a journal day's, a chat session's), as good as written out when the note is dated.
_RELATIVE_DATE = re.compile(r"\b(?:this|next|last|coming)\s+(?:weekend|week|month|year|spring|"
                            r"summer|autumn|fall|winter|morning|afternoon|evening|night)\b"
                            r"|\btonight\b|\b(?:" + _FEW + r"|a\s+couple\s+of|several)"
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
#: The nouns of "<noun> number" that ask for a phone number.
_PHONE_NOUNS = frozenset("phone mobile cell telephone fax".split())
#: Nouns whose instances are places in an order: "which floor", "what storey".
_ORDINAL_NOUNS = frozenset("floor storey story".split())
#: A question that offers its answers ("Who lived longer, Ludwig Elsbett or Pamela Rymer?"):
#: the names are the question's own, and what decides between them is worded any way.
_CHOICE = re.compile(r"\bor\b")
