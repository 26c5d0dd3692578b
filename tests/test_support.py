"""Near misses: the notes name the subject but not the asked fact (pinakes/support/).

A small coffee KB, written for these tests: the French press note describes the
press and never names an inventor; the AeroPress and moka pot notes do name
theirs, so "invented" is in the KB, just not in the note the question is about.
The same KB with one sentence added to the French press note (its inventor) is
the answerable twin: everything else is equal.
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes.cli import cli
from pinakes.evaluation.calibration import FEATURES, extract_features
from pinakes.support import (
    COLOUR,
    DATE,
    NAME,
    PLACE,
    QUANTITY,
    TYPED_GAP_FULL,
    UNCHECKED,
    WEEKDAY,
    Deed,
    Expected,
    Support,
    answer_type,
    asked_deed,
    asks_thing,
    assess_search,
    holds_typed,
    kind_word,
    known_names,
    lead_section,
    measured,
    outline,
    property_lines,
    read_hits,
    release_sections,
    sentence_turns,
    sentences,
    speaker_gap,
    spelled_days,
    support_window,
    turns,
    typed_gap,
    wh_noun,
)
from pinakes.support.reader import (
    _RELATIVE,
    _made_by_someone,
    _named_kinds,
    _other_release,
    _releases,
    _unnamed_instance,
    _without_properties,
)
from pinakes.termstats import chunk_count
from pinakes.termstats import idf as term_idf
from pinakes.text import content_terms, fold, name_spans, name_tokens, query_terms, term_pattern

COFFEE = {
    "coffee/french-press.md": """
        # French press

        A French press is a cylindrical carafe with a plunger and a fine metal mesh filter.
        Coarse ground coffee steeps in hot water for about four minutes; pressing the plunger
        pushes the grounds to the bottom and the brewed coffee is poured off the top.

        ## Brewing

        Use roughly one gram of coffee for every fifteen grams of water, just off the boil.
        Stir once, put the lid on, wait four minutes, then press slowly.

        ## Cleaning

        The mesh filter traps oils and fines; rinse it after every brew and take the
        plunger apart once a week.
        """,
    "coffee/aeropress.md": """
        # AeroPress

        The AeroPress was invented by Alan Adler, a Stanford engineering lecturer, in 2005.
        Air pressure pushes the coffee through a paper filter in under a minute.
        """,
    "coffee/moka-pot.md": """
        # Moka pot

        The moka pot was invented by Alfonso Bialetti in 1933. Steam pressure in the lower
        chamber pushes water up through the coffee basket into the top chamber.
        """,
    "coffee/espresso.md": """
        # Espresso

        Espresso forces water at about nine bars through a compact puck of finely ground coffee.
        A shot takes twenty-five to thirty seconds.
        """,
    "coffee/grinders.md": """
        # Grinders

        Burr grinders crush beans between two abrasive surfaces and give an even grind;
        blade grinders chop unevenly. A French press wants a coarse grind, espresso a fine one.
        """,
    "tea/green-tea.md": """
        # Green tea

        Green tea is steeped at 70 to 80 degrees for two to three minutes; boiling water
        makes it bitter.
        """,
    "kitchen/kettle.md": """
        # Kettle

        A gooseneck kettle pours slowly and precisely, which matters for pour-over coffee.
        """,
    "kitchen/bread.md": """
        # Sourdough bread

        The starter is fed with equal weights of flour and water the night before baking.
        """,
}
INVENTOR = "It was invented by Attilio Calimani, who patented it in Milan in 1929.\n"
WHO = "Who invented the French press?"


def coffee_docs(with_inventor: bool) -> dict[str, str]:
    docs = dict(COFFEE)
    if with_inventor:
        docs["coffee/french-press.md"] = docs["coffee/french-press.md"].replace(
            "mesh filter.\n", "mesh filter.\n        " + INVENTOR, 1)
    return docs


@pytest.fixture
def coffee(make_kb: Any) -> KB:
    kb = make_kb(coffee_docs(False), name="coffee")
    kb.sync()
    return kb


@pytest.fixture
def coffee_with_inventor(make_kb: Any) -> KB:
    kb = make_kb(coffee_docs(True), name="coffee-inventor")
    kb.sync()
    return kb


def support_of(kb: KB, query: str) -> tuple[Support, list[float]]:
    """The support and feature vector the confidence saw for ``query``."""
    seen: dict[str, Any] = {}
    original = type(kb).confidence

    def tap(hits: list[Any], lists: Any, cosines: Any) -> float | None:
        seen["x"] = [float(v) for v in extract_features(kb, hits, lists, cosines)]
        seen["support"] = lists.support
        return original(kb, hits, lists, cosines)

    kb.confidence = tap  # type: ignore[method-assign]
    try:
        kb.search(query)
    finally:
        del kb.confidence
    return seen["support"], seen["x"]


def support_in(make_kb: Any, files: dict[str, str], question: str, name: str
               ) -> tuple[Support, list[float]]:
    """:func:`support_of` ``question`` in a fresh KB of :data:`COFFEE` and ``files``."""
    kb = make_kb({**COFFEE, **files}, name=name)
    kb.sync()
    return support_of(kb, question)


# --- the split: what it is about, what it asks ------------------------------------------------


def test_name_spans_keep_the_longest_name() -> None:
    names = {("lothair",), ("lothair", "ii"), ("french", "press")}
    toks = name_tokens("When did Lothair II's mother meet the French press?")
    spans = name_spans(toks, names)
    assert [toks[i:j] for i, j in spans] == [("lothair", "ii"), ("french", "press")]
    assert name_spans(name_tokens("nothing named here"), names) == []


def test_names_come_from_titles_without_a_graph_plugin(coffee: KB) -> None:
    store = coffee.reader()
    names = known_names(coffee, store.conn, store.generation)
    assert names[("french", "press")] == "French press"
    assert ("moka", "pot") in names and ("aeropress",) in names


def test_names_include_aliases_in_every_note_tools_form(make_kb) -> None:
    kb = make_kb({
        "cafetiere.md": "---\naliases: [Plunger Pot, \"[[Coffee Plunger]]\"]\n---\n# Cafetiere\n\nA jug.\n",
        "kettle.md": "---\nalias: Swan Neck\n---\n# Kettle\n\nBoils water.\n",
        "grinder.md": "---\naliases: Burr Mill, Bean Crusher\n---\n# Grinder\n\nGrinds.\n",
    }, name="aliases")
    kb.sync()
    store = kb.reader()
    names = known_names(kb, store.conn, store.generation)
    for toks in [("plunger", "pot"), ("coffee", "plunger"), ("swan", "neck"), ("burr", "mill"),
                 ("bean", "crusher")]:
        assert toks in names, toks


def test_the_asked_part_is_measured_against_the_subjects_note(coffee: KB,
                                                              coffee_with_inventor: KB) -> None:
    missing, x_missing = support_of(coffee, WHO)
    assert missing.about == ["French press"] and missing.asked == ["invented"]
    assert missing.unsupported == ["invented"] and missing.unknown == []
    # "invented" carries a large share of the question and no top hit holds it, although
    # other notes (AeroPress, moka pot) do use the word: support is judged on the top hits.
    gap = x_missing[FEATURES.index("asked_gap")]
    assert gap > 0.3
    found, x_found = support_of(coffee_with_inventor, WHO)
    assert found.about == ["French press"] and found.unsupported == []
    assert x_found[FEATURES.index("asked_gap")] == 0.0
    # A question about the same subject that the note does answer has no gap either.
    steep, _ = support_of(coffee, "How long does coffee steep in a French press?")
    assert steep.unsupported == [] and steep.gap == 0.0


def test_a_name_the_notes_never_mention_is_unknown(coffee: KB) -> None:
    support, x = support_of(coffee, "How many bars does a Gaggia Classic espresso machine reach?")
    assert support.unknown == ["Gaggia", "Classic"]
    assert x[FEATURES.index("unknown_name")] == 1.0
    assert support.reason() == "nothing in the notes mentions 'Gaggia' or 'Classic'"
    # The first word of a question is capitalised anyway: never a name by its case alone.
    plain, x_plain = support_of(coffee, "Grinders: which kind gives an even grind?")
    assert plain.unknown == [] and x_plain[FEATURES.index("unknown_name")] == 0.0
    # Nor is any word of a question typed in capitals; a name in it with digits still is.
    shouted, _ = support_of(coffee, "WHO INVENTED THE FRENCH PRESS?")
    assert shouted.unknown == [] and shouted.unsupported == ["INVENTED"]
    assert support_of(coffee, "WHAT DOES THE X100V COST?")[0].unknown == ["X100V"]


def test_words_no_note_holds_are_absent(coffee: KB) -> None:
    """An everyday question put to notes on other things has its words nowhere in the KB."""
    tap, x_tap = support_of(coffee, "How do I fix a leaking tap?")
    assert tap.absent == 1.0 and x_tap[FEATURES.index("absent")] == 1.0
    assert tap.unknown == []  # no name among them: unknown_name cannot tell
    off_topic = coffee.search("How do I fix a leaking tap?")  # an agent reads it in the result
    assert off_topic.support is not None and off_topic.support["absent"] == 1.0
    # A question the notes answer, and a near miss on a subject they hold, find their words.
    assert support_of(coffee, "How long does coffee steep in a French press?")[0].absent == 0.0
    assert support_of(coffee, WHO)[0].absent == 0.0
    # The share counts each word once: "leaking" is nowhere, "kettle" and "water" are.
    kettle, _ = support_of(coffee, "Is my kettle leaking water?")
    assert kettle.absent == pytest.approx(1 / 3)


def test_a_month_is_a_date_not_an_unknown_name(make_kb: Any) -> None:
    """Notes date things as "2024-03-14": "in March" is no name the KB fails to mention."""
    kb = make_kb({"2024-03-14-chat.md": "# Chat\n\nI bought a Fuji X100V camera last week.\n"},
                 name="months")
    kb.sync()
    support, x = support_of(kb, "What camera did I buy in March?")
    assert support.unknown == [] and x[FEATURES.index("unknown_name")] == 0.0
    other, _ = support_of(kb, "What camera did I buy in Osaka?")
    assert other.unknown == ["Osaka"]  # the rule is about dates, not every capital


def test_shorthand_with_digits_inside_is_not_an_unknown_name(make_kb: Any) -> None:
    """"seq2seq" is the notes' "sequence-to-sequence"; "GPT4" is still a name."""
    kb = make_kb({"models.md": "# Models\n\nA sequence-to-sequence model writes one text "
                               "from another.\n"}, name="shorthand")
    kb.sync()
    support, _ = support_of(kb, "What does a seq2seq model write?")
    assert support.unknown == []
    other, _ = support_of(kb, "What does a gpt4 model write?")
    assert other.unknown == ["gpt4"]


@pytest.mark.parametrize(("note", "question", "named", "name"), [
    # "a 1980s tourer" is the notes' "a tourer from about 1985"; "GT40" is still a name.
    ("Mr Pryce came in with a green Dawes tourer from about 1985. Its bottom bracket had seized.",
     "What had seized on the 1980s Dawes tourer?", "What had seized on the 1980s Dawes GT40 tourer?",
     "GT40"),
    # "CVs" are things of a kind, which the notes may call applications; "CVX" is a name.
    ("Applications from candidates we turn down are deleted six months after the decision.",
     "How long do we keep CVs from candidates we turn down?",
     "How long do we keep CVX files from candidates we turn down?", "CVX"),
])
def test_a_decade_or_an_acronyms_plural_is_not_an_unknown_name(
        make_kb: Any, note: str, question: str, named: str, name: str) -> None:
    kb = make_kb({"note.md": f"# Note\n\n{note}\n"}, name=f"unknown-{name.lower()}")
    kb.sync()
    support, x = support_of(kb, question)
    assert support.unknown == [] and x[FEATURES.index("unknown_name")] == 0.0
    other, _ = support_of(kb, named)
    assert other.unknown == [name]


def test_words_no_fact_needs_written_are_held(make_kb: Any) -> None:
    """"How long was everything down ...?" is answered by a note that never says "everything";
    "still" and "behind" are no more a fact than "the" is."""
    kb = make_kb({"outage.md": "# Certificate outage\n\nThe internal wildcard certificate expired "
                               "on 21 June. The outage lasted 1 hour and 5 minutes.\n"}, name="slight")
    kb.sync()
    support, _ = support_of(kb, "How long was everything still down behind the expired wildcard certificate?")
    assert not {"everything", "still", "behind"} & set(support.unsupported)
    assert not {"everything", "still", "behind"} & {w.lower() for w in support.found}  # nor "found"
    ones, _ = support_of(kb, "How long did the wildcard certificate outage last, against the older ones?")
    assert "ones" not in ones.unsupported and "older" in ones.unsupported
    other, _ = support_of(kb, "How long was the router down behind the expired wildcard certificate?")
    assert "router" in other.unsupported  # a content word is still asked of the notes
    # "finally", "end up": how it turned out, which a note tells without the words.
    finally_, _ = support_of(kb, "How long did the wildcard certificate outage finally last?")
    assert "finally" not in finally_.unsupported
    end_up, _ = support_of(kb, "How long did the wildcard certificate outage end up lasting?")
    assert "end" not in end_up.unsupported
    end, _ = support_of(kb, "When was the end of the wildcard certificate outage?")
    assert "end" in end.unsupported  # "the end" is asked of the notes
    since, _ = support_of(kb, "How long has the wildcard certificate outage lasted since 21 June?")
    assert "since" not in since.unsupported


def test_support_needs_the_query_it_was_asked() -> None:
    class Lists:
        ranked: dict[str, list[int]] = {}

    assert assess_search(None, [object()], Lists()) is None  # type: ignore[arg-type]


# --- the calibrated decision and its reason -----------------------------------------------------

CHEMEX = "Who invented the Chemex coffee maker?"


def test_who_invented_abstains_when_the_note_never_names_an_inventor(
        coffee: KB, coffee_with_inventor: KB) -> None:
    near_miss = coffee.search(WHO)
    answered = coffee_with_inventor.search(WHO)
    assert near_miss.hits[0].path == answered.hits[0].path == "coffee/french-press.md"
    assert near_miss.confidence is not None and answered.confidence is not None
    # Same subject, same notes but one sentence: the asked part decides.
    assert answered.confidence > 0.9 and not answered.abstained and answered.reason is None
    assert near_miss.abstained and near_miss.confidence < 0.25
    assert near_miss.reason == "found 'French press', nothing on 'invented'"
    assert near_miss.support is not None and near_miss.support["unsupported"] == ["invented"]
    # A "who" question wants a name; the sentences about the French press hold none.
    assert near_miss.support["expects"] == "name" and near_miss.support["typed_gap"] > 0.3
    assert answered.support is not None and answered.support["unsupported"] == []
    assert answered.support["typed_gap"] == 0.0  # "Attilio Calimani" sits in the sentence
    # The subject alone is not what is penalised: a question the note answers is answered.
    steep = coffee.search("How long does coffee steep in a French press?")
    assert not steep.abstained and steep.confidence is not None and steep.confidence > 0.8


def test_the_asked_relation_said_another_way_is_not_a_near_miss(
        coffee: KB, coffee_with_inventor: KB) -> None:
    """"Who created ..." against "invented by Attilio Calimani": the name answers, the verb differs."""
    question = "Who created the French press?"
    support, x = support_of(coffee_with_inventor, question)
    # No hit says "created", but "invented" is a word of making: it tells who created it ...
    assert support.unsupported == []
    assert support.expects == "name" and x[FEATURES.index("typed_missing")] == 0.0  # ... a name is there
    assert x[FEATURES.index("asked_gap")] == 0.0  # so the missing verb is no gap
    answered = coffee_with_inventor.search(question)
    assert answered.confidence is not None and not answered.abstained and answered.confidence > 0.5
    # Without the inventor's sentence the same question still abstains: no name near.
    support, x = support_of(coffee, question)
    assert x[FEATURES.index("asked_gap")] > 0.2 and x[FEATURES.index("typed_missing")] == 1.0
    assert coffee.search(question).abstained


AUNT = "My aunt Greta gave me this French press in Lisbon.\n"


def test_who_made_a_thing_is_told_by_any_word_of_making(make_kb: Any) -> None:
    """"Who wrote Quillsearch?", "Who proposed ...", "Who are the authors of ...": a paper's
    "Ana Ruiz and Ben Okafor introduced Quillsearch" tells who made it, in another word of
    making and with no "by". A page that describes the ranker and names other people (its
    users, its benchmark) tells no maker, and the question still abstains."""
    about = ("# Quillsearch\n\nQuillsearch ranks passages by matching every query token against "
             "every passage token. Teams at Northwind and Fabrikam run it in production.\n")
    docs = {"rankers/quillsearch.md": about,
            "rankers/bm25.md": "# BM25\n\nBM25 weighs a term by its frequency and its rarity.\n"}
    plain = make_kb(docs, name="quill-plain")
    plain.sync()
    made = make_kb({**docs, "rankers/quillsearch.md": about + "\nAna Ruiz and Ben Okafor introduced "
                    "Quillsearch at SIGIR 2021, with a compressed index.\n"}, name="quill-made")
    made.sync()
    for question in ("Who wrote Quillsearch?", "Who proposed Quillsearch?",
                     "Who are the authors of Quillsearch?"):
        support, x = support_of(made, question)
        assert support.unsupported == [] and x[FEATURES.index("typed_missing")] == 0.0, question
        assert not made.search(question).abstained, question
        support, x = support_of(plain, question)
        assert x[FEATURES.index("typed_missing")] > 0.5, question  # Northwind made nothing
        assert plain.search(question).abstained, question


def test_a_word_of_making_tells_who_made_it_only_with_its_maker() -> None:
    """"The same paper introduced the LoTTE benchmark" says that something was made, not who
    made it: a word of making answers "Who wrote ...?" with a maker before its verb (a name,
    a person, a relation), after "by", or as a maker's noun."""
    assert not _made_by_someone("The same paper introduced the LoTTE benchmark of long questions.")
    assert not _made_by_someone("It was designed in Italy for camping.")
    assert _made_by_someone("Ana Ruiz and Ben Okafor of Lund introduced the model in 2021.")
    assert _made_by_someone("The press was invented by Attilio Calimani in 1929.")
    assert _made_by_someone("She wrote it in the winter of 1990.")
    assert _made_by_someone("My aunt designed the label herself.")
    assert _made_by_someone("The inventor, Alan Adler, sold it in 2005.")


QUILL_SECTIONS = """# Quillsearch

## Origin

Quillsearch matches every query token against every passage token. Ana Ruiz and Ben Okafor
introduced it at SIGIR 2021.

## Compression

Quillsearch stores each token vector as a centroid and a residual. The same paper introduced
the Harbour benchmark of long-tail questions.

## Serving

Quillsearch serves queries from a memory-mapped index on one machine. It writes a log of
every query it serves.

## Indexing

Quillsearch writes its index in shards; each shard is written once and never rewritten.

## Updates

A new passage is written to a small side index, which Quillsearch writes into the main one
at night.
"""


def test_the_opening_section_of_the_note_asked_about_is_read(make_kb: Any) -> None:
    """"Who wrote Quillsearch?" when the top hits are Quillsearch's later sections: its opening
    says who made it, and is read with them; a question about another subject does not read it."""
    kb = make_kb({"rankers/quillsearch.md": QUILL_SECTIONS,
                  "rankers/bm25.md": "# BM25\n\nBM25 weighs a term by its frequency and its rarity.\n"},
                 name="quill-sections")
    kb.sync()
    conn = kb.reader().conn
    later = [SimpleNamespace(path="rankers/quillsearch.md", title="Quillsearch",
                             heading_path=["Quillsearch", heading], text=text)
             for heading, text in (("Compression", "The same paper introduced the Harbour benchmark."),
                                   ("Serving", "Quillsearch serves queries."))]
    lead = lead_section(conn, later, ["Quillsearch"])
    assert [h.heading_path for h in lead] == [["Quillsearch", "Origin"]]
    assert "Ana Ruiz and Ben Okafor" in lead[0].text
    assert lead_section(conn, later, ["BM25"]) == []  # the question is about another subject
    assert lead_section(conn, [*lead, *later], ["Quillsearch"]) == []  # read already
    # A page whose title tells namesakes apart, "Quillsearch (ranker)", is still the one
    # "Who wrote Quillsearch?" asks about.
    qualified = [SimpleNamespace(**{**vars(h), "title": "Quillsearch (ranker)"}) for h in later]
    assert [h.heading_path for h in lead_section(conn, qualified, ["Quillsearch"])] == [
        ["Quillsearch", "Origin"]]
    # The sections that say "writes" rank first, the opening that says who made it below
    # them; the reader takes the authors' sentence, not the paper's other making.
    question = "Who wrote Quillsearch?"
    assert "Origin" not in [h.heading_path[-1] for h in kb.search(question).hits[:3]]
    support, x = support_of(kb, question)
    assert x[FEATURES.index("typed_missing")] == 0.0
    assert support.answer_at is not None and "Ana Ruiz" in support.answer_at


def test_a_name_beside_the_subject_is_no_answer_to_who_did_it(make_kb: Any) -> None:
    """"Who invented the French press?" against "My aunt Greta gave me this French press in
    Lisbon": the sentence names people and places, none of them an inventor. The name
    stands for the answer only where its sentence says the deed or names an agent ("by")."""
    def with_aunt(inventor: bool) -> dict[str, str]:
        docs = coffee_docs(inventor)
        docs["coffee/french-press.md"] = docs["coffee/french-press.md"].replace(
            "mesh filter.\n", "mesh filter.\n        " + AUNT, 1)
        return docs

    aunt = make_kb(with_aunt(False), name="aunt")
    aunt.sync()
    both = make_kb(with_aunt(True), name="aunt-inventor")
    both.sync()
    for question in (WHO, "Who designed the French press?"):
        support, x = support_of(aunt, question)
        assert support.expects == "name" and support.answer_at is None, question
        assert x[FEATURES.index("typed_missing")] == 1.0, question
        near = aunt.search(question)
        assert near.abstained and near.reason is not None and "nothing on" in near.reason
    answered = both.search(WHO)
    assert not answered.abstained and answered.support is not None
    assert answered.support["answer_at"] == INVENTOR.strip()  # "invented by Attilio Calimani"
    # A light verb is told in other words as often as not: its name still answers.
    gave, x_gave = support_of(aunt, "Who gave me my French press?")
    assert gave.answer_at == AUNT.strip() and x_gave[FEATURES.index("typed_missing")] == 0.0


@pytest.mark.parametrize(("question", "deed"), [
    ("Who invented the French press?", Deed("invented", making=True)),
    ("Who thanked Maya?", Deed("thanked")),  # a deed, not one of making
    ("Whom did Maya thank?", None),  # an auxiliary: the deed is further on
    ("Who is Noor's piano teacher?", None),
    ("Who lived longer, Ludwig Elsbett or Pamela Rymer?", None),  # a choice between names
    ("Who got Ines into volunteering?", None),  # a light verb
    ("What did Maya invent?", None),  # not a "who" question, and not the asker's deed
    ("Which chair do I sit on?", Deed("sit", asker=True)),
    ("Which Leica camera do I own?", Deed(None, asker=True)),  # "own" is a stopword
    ("Which editor do I still use for Go?", Deed("use", asker=True)),
    ("Which camera did I get in Tokyo?", None),  # a light verb
    ("Which camera do you own?", None),  # not the asker's
    ("How many cameras do I own?", None),  # a number, not a name, answers it
])
def test_the_deed_a_question_asks_about(question: str, deed: Deed | None) -> None:
    terms = content_terms(question)
    patterns = {t: term_pattern(t) for t in terms}
    assert asked_deed(question, answer_type(question), terms, patterns) == deed


def test_a_bare_list_entry_is_no_answer_to_what_the_asker_does(make_kb: Any) -> None:
    """"Which Leica camera do I own?" against a photography note's links: "[Leica M10P](...)"
    names a camera worth a look, not the asker's. A sentence saying anything of the thing
    ("Shoes: ASICS Novablast 4, replaced every 700 km") may tell it, with or without the verb."""
    kb = make_kb({
        "art/photography.md": """
            # Photography

            Cameras and lenses I read about, and photographers whose work I follow.

            ## Cameras

            - [Leica M10P](https://example.com/leica-m10p)
            - [Ricoh GR III](https://example.com/ricoh-gr3)
            - [Fujifilm X100V](https://example.com/x100v)

            ## Photographers

            - [Saul Leiter](https://example.com/leiter)
            - [Fan Ho](https://example.com/fan-ho)
            """,
        "health/running.md": """
            # Running

            I run three times a week along the canal, 30 km in all.

            - Shoes: ASICS Novablast 4, replaced every 700 km
            - Watch: Garmin Forerunner 255
            """,
        "sharing/things.md": """
            # Things I own

            - Desk: an oak table from a flea market, 140 cm wide
            - Phone: Pixel 7, two years old
            """,
    }, name="gear")
    kb.sync()
    for question in ("Which Leica camera do I own?", "Which Ricoh camera do I shoot with?"):
        support, x = support_of(kb, question)
        assert support.expects == "name" and support.answer_at is None, question
        assert x[FEATURES.index("typed_missing")] > 0.2, question
    owned = kb.search("Which Leica camera do I own?")
    assert owned.abstained and owned.reason is not None and "no name near" in owned.reason
    shoes, x = support_of(kb, "Which running shoes do I use?")
    assert shoes.answer_at is not None and "Novablast" in shoes.answer_at
    assert x[FEATURES.index("typed_missing")] == 0.0
    assert not kb.search("Which running shoes do I use?").abstained


BUILDS = {
    "builds/fuchsia.md": "# Fuchsia integration\n\nThe Fuchsia job builds the toolchain and runs the "
                         "Fuchsia tests. A Fuchsia checkout is large: a checkout and build takes 46G "
                         "of disk space, and it takes a while.\n",
    "builds/chromium.md": "# Chromium builds\n\nA Chromium checkout and build needs about 100 GB of "
                          "free disk space and 16 GB of memory.\n",
    "builds/prerequisites.md": "# Prerequisites\n\nYou need 30 GB of free disk space, a C compiler "
                               "and Python 3 to build from a checkout.\n",
    "people/ines.md": "# Ines\n\nInes runs Linux on her old laptop and bakes bread on Sundays.\n",
}


def test_a_number_for_another_thing_does_not_answer(make_kb: Any) -> None:
    """"How much disk space does a Linux build need?" against notes giving Fuchsia's and
    Chromium's: each holds a number, for another thing. A name the question writes that
    none of the top hits holds (nor their notes' other hits) leaves no token standing for
    the answer; the KB mentions Linux elsewhere, so it is no unknown name either."""
    kb = make_kb(BUILDS, name="builds")
    kb.sync()
    linux = "How much disk space does a checkout and build of the Linux integration need?"
    support, x = support_of(kb, linux)
    assert "Linux" in support.unsupported and support.unknown == []
    assert x[FEATURES.index("typed_missing")] == 1.0 and support.answer_at is None
    res = kb.search(linux)
    assert res.abstained and res.reason is not None and "'Linux'" in res.reason
    fuchsia = kb.search(linux.replace("Linux", "Fuchsia"))
    assert not fuchsia.abstained and fuchsia.support is not None
    assert "46G" in (fuchsia.support["answer_at"] or "")
    # Past a comma a question may ask more: a name there may be another ask's, held by a
    # note past the top three, and the first ask's number still answers it.
    both = "How much free disk space do I need with a C compiler and Python 3, and for the Linux integration?"
    support, x = support_of(kb, both)
    assert "Linux" in support.unsupported and x[FEATURES.index("typed_missing")] == 0.0
    assert "30 GB" in (support.answer_at or "")
    # A phrase before the question word is no ask of its own: the name after its comma is
    # the first ask's.
    support, x = support_of(kb, "These days, how much disk space does a checkout and build of the Linux integration need?")
    assert "Linux" in support.unsupported and x[FEATURES.index("typed_missing")] == 1.0


TRIP = {
    "travel/japan.md": "# Japan 2024\n\nTwo weeks in October with [[Maya]]: Tokyo, Kyoto, Kanazawa.\n\n"
                       "- Maya found her Mashiko cup in a shop in Kyoto.\n"
                       "- Best meal: a soba place near Higashi Chaya in Kanazawa.\n",
    "people/Maya.md": "# Maya\n\nMy partner. Works as a landscape architect at Buro Groen in Utrecht.\n",
    "tools/editor.md": "# Editor\n\nNeovim, with the Kanagawa theme and Iosevka Term at size 15.\n",
    "people/Tomas Verbeek.md": "# Tomas Verbeek\n\nTomas Verbeek (born 1961) is a cyclist, the son "
                               "of [[Jan Verbeek]].\n",
    "people/Jan Verbeek.md": "# Jan Verbeek\n\nJan Verbeek was an engineer born in Ghent, Belgium.\n",
}


def assert_nothing_asked_is_held(kb: KB, question: str, words: set[str]) -> None:
    """``words`` of ``question`` are in none of the read hits, and no token stands for its answer."""
    support, x = support_of(kb, question)
    assert words <= set(support.unsupported)
    assert x[FEATURES.index("typed_missing")] == 1.0 and support.answer_at is None


def test_a_token_beside_the_subject_answers_nothing_asked(make_kb: Any) -> None:
    """"Which hotel did we stay at in Kyoto?" against a trip note that names Kyoto and a
    shop there: the top hits hold neither "hotel" nor "stay", so the name beside Kyoto
    ("Mashiko") answers something else. One asked word missing is not enough ("Which
    editor do I use?" against "Neovim, with ..."), nor a relation to a person or the
    kind's own noun; and once the note says where they stayed, the question answers."""
    kb = make_kb(TRIP, name="trip")
    kb.sync()
    hotel = "Which hotel did we stay at in Kyoto?"
    assert_nothing_asked_is_held(kb, hotel, {"hotel", "stay"})
    res = kb.search(hotel)
    assert res.abstained and res.reason is not None
    assert "'hotel'" in res.reason and "'stay'" in res.reason
    editor, x = support_of(kb, "Which editor do I use?")
    assert x[FEATURES.index("typed_missing")] == 0.0
    assert not kb.search("Which editor do I use?").abstained
    # "Where" and "when" ask a relation, often worded the evidence's own way ("the place
    # of death" by "died in"); the rule reads what / which / how, and "who" (below).
    assert asks_thing(hotel) and asks_thing("How much did the Japan trip cost?")
    assert not asks_thing("Who is Tomas Verbeek's paternal grandfather?")
    assert not asks_thing("Where was the performer of the song born?")
    # A relation to a person is said another way: "X's father" by "the son of Y".
    _, x = support_of(kb, "Which country Tomas Verbeek's father is from?")
    assert x[FEATURES.index("typed_missing")] < 1.0
    (kb.root / "travel" / "japan.md").write_text(
        TRIP["travel/japan.md"] + "- In Kyoto we stayed at Hotel Kanra, near the station.\n",
        encoding="utf-8")
    kb.sync()
    answered = kb.search(hotel)
    assert not answered.abstained and answered.support is not None
    assert "Kanra" in (answered.support["answer_at"] or "")


FILMS = {
    "films/Tide Line.md": "# Tide Line\n\nTide Line is a 1988 drama film written and directed by "
                          "Nadia Fenn, her first feature. It was shot in Halvick over one summer.\n",
    "people/Nadia Fenn.md": "# Nadia Fenn\n\nNadia Fenn (1950 - 2019) was a film director born in "
                            "Halvick. Her first feature was Tide Line.\n",
    "people/Aurel Venn.md": "# Aurel Venn\n\nAurel Venn (1931 - 2004) was a film director and "
                            "producer from Dunmere.\n",
    "places/Halvick.md": "# Halvick\n\nHalvick is a port town on the Orsa estuary with a film festival.\n",
}


def test_who_asks_in_words_no_read_note_holds_answers_nothing(make_kb: Any) -> None:
    """"Who composed the music for Tide Line?" against an encyclopedia that names the film's
    director and never its composer: the director's name beside the title answers
    something else. A question that offers its answers ("Who lived longer, A or B?")
    decides between its own names however the notes word it."""
    kb = make_kb(FILMS, name="films")
    kb.sync()
    music = "Who composed the music for Tide Line?"
    assert_nothing_asked_is_held(kb, music, {"composed", "music"})
    assert kb.search(music).abstained
    support, x = support_of(kb, "Who directed Tide Line?")
    assert x[FEATURES.index("typed_missing")] == 0.0 and "Nadia Fenn" in (support.answer_at or "")
    _, x = support_of(kb, "Who lived longer, Nadia Fenn or Aurel Venn?")
    assert x[FEATURES.index("typed_missing")] < 1.0


def test_who_invented_abstains_when_the_notes_never_mention_the_thing(coffee: KB) -> None:
    res = coffee.search(CHEMEX)
    assert res.confidence is not None and res.abstained
    assert res.reason == "nothing in the notes mentions 'Chemex'"


def test_the_reason_reaches_the_cli_and_json(coffee: KB) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["search", CHEMEX, "--kb", str(coffee.root)])
    assert shown.exit_code == 0, shown.output
    assert "abstains: nothing in the notes mentions 'Chemex'" in shown.output
    out = json.loads(runner.invoke(cli, ["search", CHEMEX, "--kb", str(coffee.root), "--json"]).output)
    assert out["abstained"] is True and out["reason"] == "nothing in the notes mentions 'Chemex'"
    near = json.loads(runner.invoke(cli, ["search", WHO, "--kb", str(coffee.root), "--json"]).output)
    assert near["support"]["about"] == ["French press"]
    assert near["support"]["unsupported"] == ["invented"] and near["support"]["asked_gap"] > 0.3
    assert near["support"]["expects"] == "name" and near["abstained"] is True
    confident = json.loads(runner.invoke(
        cli, ["search", "How long does coffee steep in a French press?", "--kb", str(coffee.root),
              "--json"]).output)
    assert confident["abstained"] is False and confident["reason"] is None


def test_the_reason_reaches_the_mcp_answer(coffee: KB, tmp_path: Path) -> None:
    from .test_mcp import ok, stdio_session

    async def scenario() -> tuple[dict[str, Any], str]:
        async with stdio_session(["--kb", str(coffee.root)], tmp_path / "serve.log") as session:
            res = await session.call_tool("pinakes_search", {"query": CHEMEX})
            return ok(res), res.content[0].text

    out, text = asyncio.run(scenario())
    assert out["abstained"] is True
    assert out["reason"] == "nothing in the notes mentions 'Chemex'"
    assert "abstains: nothing in the notes mentions 'Chemex'" in text


# --- the reader: what kind of token answers the question ---------------------------------------


@pytest.mark.parametrize(("question", "kind"), [
    ("How many milligrams of magnesium do I take a day?", QUANTITY),
    ("Roughly how many days will the results take?", QUANTITY),
    ("What font size do I use in VS Code?", QUANTITY),
    ("What is the default chunk size of the splitter?", QUANTITY),
    ("When was the first episode published?", DATE),
    ("In which release was the old compiler removed?", DATE),
    ("Who invented the French press?", NAME),
    ("What is the name of the cat that visited my home?", NAME),
    ("Which font do I use in Sublime Text?", NAME),  # an instance of "font": a name
    ("Where do I keep my credentials?", PLACE),
    ("In which city did I give my talk?", PLACE),
    # Two things of one kind are checked as that kind: two names here.
    ("Who proposed the index, and at which conference was it published?", NAME),
    # A metric at a cutoff is a quantity, however it is spelled.
    ("What MRR@10 does the sparse model reach on the dev set?", QUANTITY),
    ("What nDCG@5 did the reranker get?", QUANTITY),
    # Nothing to check: an explanation, a procedure, a definition, a choice, yes/no,
    # two questions of different kinds, or a question behind a context sentence.
    ("Why does the sampler run below one hundred hertz?", None),
    ("How do I edit the wiki from my phone?", None),
    ("What does the flag do?", None),
    ("Which film came out first, Dune or Alien?", None),
    ("Do I skip meals on purpose, and how often do I fast?", None),
    ("Which MacBook do I own and how much RAM does it have?", None),
    ("The model came out in 2019. How many layers does it have?", None),
    # A count of one's own doings is made by listing them, rarely written as a number;
    # a unit still asks for a number.
    ("How many novels did I buy in March?", None),
    ("How many times have we met this year?", None),
    ("How many milligrams of magnesium do I take a day?", QUANTITY),
    ("How many pages does the novel have?", QUANTITY),
    # A limit a rule sets is written as a number, whoever asks.
    ("How many pages am I allowed to print per month?", QUANTITY),
    ("How many sick notes do we need to hand in?", QUANTITY),
    ("How can you count how many lines each function contributes?", None),  # embedded "how many"
    # A span between two dated events is worked out, not written: not checked. A duration
    # that one sentence states still is.
    ("How many days after my birthday is the race?", None),
    ("How many days were there between the trip and the wedding?", None),
    ("How long after the move did I start the new job?", None),
    ("How many miles did I drive between the two services?", None),
    ("How long ago did I stop eating meat?", None),  # the span from a dated note to today
    ("How many days ago did I buy the camera?", None),
    ("How much weight have I lost since January?", None),
    ("How long does coffee steep before pressing?", QUANTITY),
    # Closed classes: a colour, a day of the week (not any date).
    ("What colour is my car?", COLOUR),
    ("What is the colour of the kettle?", COLOUR),
    ("What colour theme does my editor use?", None),
    ("What day of the week does the club meet?", WEEKDAY),
    ("Which day did we visit the palace?", DATE),
    ("How many days did I spend in Lisbon?", QUANTITY),
    # Contractions are read written out.
    ("What's the name of the venue?", NAME),
    ("What's my doctor's name?", NAME),
    ("Who's my landlord in Portland?", NAME),
    # "When is <someone's / my> <event>": a date; "when is" with a verb or a condition is not.
    ("When is Theo's birthday?", DATE),
    ("When is my next dentist appointment?", DATE),
    ("When is my code re-embedded?", None),
    ("When is it worth adding a reranker?", None),
    ("When is HNSW preferred over IVF?", None),
    ("When is the Berlingo due its MOT?", DATE),
    # A superlative of a measure asks for a quantity, unless its noun says otherwise.
    ("What is the largest message the PostgreSQL broker will accept?", QUANTITY),
    ("What's the highest value I'm allowed to set max_retries to?", QUANTITY),
    ("What is the largest city in Norway?", PLACE),
    # "What is X called?" asks for a name, whatever X is; "what did she call it" is not read.
    ("What was my manager at Corbel Freight called?", NAME),
    ("What's the new cat called?", NAME),
    ("What is the setting called that controls retries?", None),
    ("When is the kids' May half-term?", DATE),
    ("When is the hook run?", None),
    ("When is the cache invalidated?", None),
    # "Where did X place / finish": a rank, not a place.
    ("Where did Tomas place in his first bouldering competition?", None),
    ("Where did I place my keys?", PLACE),
    # An abbreviation's period ends no sentence; a span's "time" asks for a number.
    ("What's Mr. Okafor's first name?", NAME),
    ("Which street did Dr. Patel move to?", PLACE),
    ("What was my finish time in the Turkey Trot?", QUANTITY),
    ("What was my finishing time at the Riverside 10k?", QUANTITY),
    ("Which days does Ben take his PE kit to school?", DATE),
    ("What hours do I need to be reachable when I work from home?", DATE),
    ("What is the build time of the crate?", QUANTITY),
    ("What time are my guitar lessons?", DATE),
    ("What is Maya's surname?", NAME),
])
def test_the_question_says_what_kind_of_token_answers_it(question: str, kind: str | None) -> None:
    assert answer_type(question).kind == kind


HOUSE = {
    "Boiler.md": "# Boiler\n\nWorcester Greenstar 30i, came with the house. Bleed the radiators every "
                 "autumn; the key is in the drawer by the cooker.\n",
    "Banana bread.md": "# Banana bread\n\n- 3 ripe bananas\n- 250g flour\n\nBake about an hour. The "
                       "last one was pale at 55 min, so leave it the full hour.\n",
    "Running.md": "# Running\n\nSigned up for the Riverside 10k on Sunday 21 Sept. Entry was 24 pounds.\n",
    "School.md": "# School\n\nElsa is in Year 5, Ben in Year 2.\n\nPE days (kit in school on these days!)\n"
                 "- Elsa: Monday and Wednesday\n- Ben: Tuesday and Friday\n\nClubs\n"
                 "- Elsa: chess club, pick up from the hall door\n- Ben: football club\n",
    "Party.md": "# Elsa's party\n\nElsa turned ten. She asked for the lemon drizzle cake, doubled: "
                "450g flour.\n",
}


@pytest.mark.parametrize(("question", "written", "told"), [
    # "What year": a year, not "every autumn".
    ("What year was our boiler put in?", "Boiler.md", "It was put in in 2011."),
    # "What temperature": degrees, not "55 min".
    ("What temperature do I bake the banana bread at?", "Banana bread.md", "Bake at 170C."),
    # "finishing time": a duration, as "finish time" asks, not the race's date.
    ("What was my finishing time at the Riverside 10k?", "Running.md", "I finished in 52:10."),
])
def test_the_asked_measure_must_be_there(make_kb: Any, question: str, written: str, told: str) -> None:
    """Each question finds its subject and a token of another kind beside it (a season, a
    time in minutes, a date): a near miss. Written into the note, the asked measure answers."""
    kb = make_kb(HOUSE, name="house")
    kb.sync()
    support, x = support_of(kb, question)
    assert x[FEATURES.index("typed_missing")] > 0.0 and support.answer_at is None
    assert kb.search(question).abstained
    note = kb.root / written
    note.write_text(note.read_text(encoding="utf-8") + "\n" + told + "\n", encoding="utf-8")
    kb.sync()
    support, x = support_of(kb, question)
    assert x[FEATURES.index("typed_missing")] == 0.0 and told.split()[-1].rstrip(".") in (support.answer_at or "")


def test_a_line_leading_into_a_list_is_its_items_parent(make_kb: Any) -> None:
    """"PE days (...)" holds the asked words, the item under it the weekdays: read together.
    And an ordinal the notes write another way ("10th": "turned ten") is no missing name."""
    kb = make_kb(HOUSE, name="house")
    kb.sync()
    support, x = support_of(kb, "Which days does Ben have to take his PE kit to school?")
    # Read together, the two hold every asked word: nothing is missing (read apart, the item
    # holds "Ben" alone and the weekdays count only as a neighbour's).
    assert "Tuesday" in (support.answer_at or "") and support.typed_gap == 0.0
    assert not kb.search("Which days does Ben have to take his PE kit to school?").abstained
    support, _ = support_of(kb, "How much flour is in the cake Elsa asked for at her 10th birthday?")
    assert support.unknown == [] and "450g" in (support.answer_at or "")


@pytest.mark.parametrize(("question", "text", "answers"), [
    # A rate of interest is a share; a heart rate is beats a minute. A payment is neither.
    ("What interest rate am I paying on my mortgage?", "| Mortgage (fixed until 2027) | £1,020 |", False),
    ("What interest rate am I paying on my mortgage?", "Fixed at 4.1% until 2027.", True),
    ("What was my resting heart rate?", "Resting heart rate 58 bpm.", True),
    # A note's name in a wikilink is no reading.
    ("What was my resting heart rate?", "GP checkup this morning, results in [[Annual checkup 2025]].", False),
    ("How heavy is the boiler?", "Serviced in spring, see [[Boiler 30i]].", False),
    ("How heavy is the boiler?", "The boiler weighs 30 kg, see [[Boiler]].", True),
    # Three figures are a year only said as one.
    ("What year did the novel come out?", "Gave up at page 140 of 410.", False),
    ("In what year did Lothair die?", "He died in 869 at Piacenza.", True),
    # "on the first Thursday" is when, not where.
    ("Where does Oona's book club meet?", "We meet on the first Thursday of every month.", False),
    ("Where does Oona's book club meet?", "We meet in the back room of the library.", True),
    # An IP address is a number, not a room.
    ("What's the printer's IP address?", "The printer is a Brother laser and sits in the study.", False),
    ("What's the printer's IP address?", "Printer: 192.168.0.23 on the wifi.", True),
    # A memory limit is in bytes; a port is a number, not the dashboard's name.
    ("What memory limit is set on the billing pods?", "The autoscaler adds pods up to 12 above 70% CPU.", False),
    ("What memory limit is set on the billing pods?", "Limits: 512Mi of memory per pod.", True),
    ("How much disk space does a checkout need?", "A checkout takes about 30 minutes.", False),
    ("Which port does Herald expose its metrics on?", "The dashboard is Herald / Delivery in Grafana.", False),
    ("Which port does Herald expose its metrics on?", "Metrics are served on port 9102.", True),
    # A common word in capitals is stressed, not a name; a month's short form is a date.
    ("Which variety of beans did I sow?", "Courgettes: only TWO plants this year.", False),
    ("Which variety of beans did I sow?", "Beans: Scarlet Emperor, up the wigwam.", True),
    ("Where did I get the apple tree from?", "1 Feb: apple tree in!", False),
    # "What hours": a clock reading, as "what time" asks.
    ("What hours do I need to be reachable?", "Be reachable between 10:00 and 15:00.", True),
    ("What hours do I need to be reachable?", "Be reachable on weekdays since March 2024.", False),
    ("Who lent me the ladder?", "It was Jan from next door.", True),
    # "Which floor": a place in an order, not a name.
    ("Which floor is the new flat on?", "The new flat is on the third floor.", True),
    ("Which floor is the new flat on?", "The new flat is in Groningen.", False),
    # A reference table: the value in one column, what it counts in another.
    ("How many connections can a node open?", "| `pool_size` | `20` | Maximum connections per node. |",
     True),
    ("How many connections can a node open?", "| `pool_size` | `20` | Maximum size of the pool. |", False),
    ("How many connections can a node open?", "| `pool_size` | 20 | 8 connections in tests |", True),
])
def test_the_token_must_be_of_the_asked_kind(question: str, text: str, answers: bool) -> None:
    asked = frozenset(w.strip("?'s") for w in question.lower().split())
    assert holds_typed(answer_type(question), text, asked) is answers


NOTES = {
    "Kitchen.md": "# Kitchen remodel\n\nBudget: £18,500 in total, including a 10% contingency.\n",
    "Garden.md": "# Garden\n\n1 Feb: apple tree in! Egremont Russet, bare root, from Fenwright's Garden "
                 "Centre on Mill Lane.\n\n2 May: runner beans sown into bed 2.\n",
    "Japanese.md": "# Learn Japanese\n\n- Weekly online lesson with my tutor [[Kenji]].\n"
                   "- Anki: 15 new cards a day.\n",
    "Kenji.md": "# Kenji\n\n- My Japanese tutor since November.\n- Lessons are online, Tuesdays at 19:00.\n",
}


def test_the_asker_a_labels_next_sentence_and_the_weekdays_phrase(make_kb: Any) -> None:
    """"I've" is the asker, no name the notes lack; a short sentence opening its paragraph
    is a label the next sentence tells more of; "day of the week" names the kind, so
    "weekly" in another sentence is no asked word that the weekday's sentence lacks."""
    kb = make_kb(NOTES, name="notes")
    kb.sync()
    support, _ = support_of(kb, "What's the total I've budgeted for the kitchen?")
    assert support.unknown == [] and "18,500" in (support.answer_at or "")
    support, x = support_of(kb, "Where did I get the apple tree from?")
    assert "Fenwright" in (support.answer_at or "") and x[FEATURES.index("typed_missing")] == 0.0
    support, x = support_of(kb, "What day of the week do I have my Japanese lesson?")
    assert "Tuesdays" in (support.answer_at or "") and x[FEATURES.index("typed_missing")] == 0.0


CARS = {
    "Cars.md": "# Car maintenance\n\nTwo cars now: the Skoda is mine, the Berlingo is Tomas's.\n\n"
               "## Skoda\n\n- MOT due again 22 Nov 2025, booked in for 17 Nov.\n- Tyres: 2.3 bar front.\n\n"
               "## Berlingo\n\n- Bought from the Hallam dealership, mostly does tip runs.\n"
               "- The left sliding door sticks when it is cold.\n",
}


def test_a_sibling_sections_date_is_another_things(make_kb: Any) -> None:
    """"When is the Berlingo due its MOT?": the note heads a section "Berlingo", so the MOT
    date under "Skoda" is the Skoda's. Asked of the Skoda, the same date answers."""
    kb = make_kb(CARS, name="cars")
    kb.sync()
    support, _ = support_of(kb, "When is the Berlingo due its MOT?")
    assert support.answer_at is None and kb.search("When is the Berlingo due its MOT?").abstained
    support, _ = support_of(kb, "When is the Skoda due its MOT?")
    assert "22 Nov 2025" in (support.answer_at or "")


def test_a_counted_nouns_own_modifier_may_stand_next_to_the_number() -> None:
    """"How many extra invoices": "312 extra invoices" counts them, "41 clinics" does not;
    "how many reminder messages": "9,800 reminder texts" says the noun another way."""
    question = "How many extra invoices did the November run create?"
    asked = frozenset(question.lower().rstrip("?").split())
    assert holds_typed(answer_type(question), "It created duplicates for 41 clinics, 312 extra invoices in all.", asked)
    assert not holds_typed(answer_type(question), "It created duplicate invoices for 41 clinics.", asked)
    question = "Roughly how many reminder messages were lost?"
    asked = frozenset(question.lower().rstrip("?").split())
    assert holds_typed(answer_type(question), "About 9,800 reminder texts were lost.", asked)
    assert not holds_typed(answer_type(question), "About 9,800 clinics were affected.", asked)


def test_a_figure_glued_to_capitals_that_are_no_unit_is_a_name() -> None:
    """"See [Accounts and 2FA]." holds no duration for "How long does a VPN connection stay
    up?"; "16GB" carries a unit and still counts."""
    vpn = answer_type("How long does a VPN connection stay up before I sign in again?")
    assert not holds_typed(vpn, "See [Accounts and 2FA].", frozenset())
    assert holds_typed(vpn, "It stays up for 12 hours.", frozenset())
    size = answer_type("How big is the memory card?")
    assert holds_typed(size, "A 16GB card.", frozenset())


def test_a_chat_lines_clock_counts_nothing() -> None:
    """"[11:04] Joris: she was the only dog who wouldn't sit" says nothing of how old the dog
    is; the clock says when the line was written. Her age in the line still answers, and
    the clock still answers "what time"."""
    age = answer_type("How old is Joris's dog Pip?")
    assert not holds_typed(age, "[11:04] Joris: she was the only dog who wouldn't sit.", frozenset())
    assert holds_typed(age, "[11:04] Joris: she turned 3 last week.", frozenset())
    finish = answer_type("What was Sanne's finishing time in the triathlon?")
    assert not holds_typed(finish, "**Sanne** (13:05): I FINISHED", frozenset())
    assert holds_typed(finish, "**Sanne** (13:05): I finished in 2:41:10", frozenset())
    clock = answer_type("What time did Ayla ring the market office?")
    assert holds_typed(clock, "**Ayla** (09:30): Rang the market office.", frozenset())
    # A phone export's date says when a line was sent: not when the MOT is due.
    due = answer_type("When is Gran's eye operation?")
    assert due.undated
    assert not holds_typed(due, "20/01/2025, 10:06 - Gran: the eye operation is booked", frozenset())
    assert holds_typed(due, "20/01/2025, 10:06 - Gran: the eye operation is on 14 March", frozenset())


def test_a_phone_number_is_six_digits_or_an_extension() -> None:
    """"What's Ingrid's phone number?" is not answered by "a 10-minute talk" or a date, as any
    identifier might be; a run of six digits or more, or "ext. 4411", answers."""
    phone = answer_type("What's Ingrid's phone number?")
    assert phone.identifier and phone.address == "phone"
    assert not holds_typed(phone, "Ingrid wants a 10-minute talk and a 5-page report by 8 May.", frozenset())
    assert not holds_typed(phone, "Booked on 2024-03-14, £1,585 in all.", frozenset())
    assert not holds_typed(phone, "New shoes every 600-700 km, or 1000-2000 a year.", frozenset())
    for text in ("Dave Pryce, Warmline: 07700 900316", "call +46 31 12 34 56", "(555) 014-3321",
                 "IT desk: ext. 4411", "front desk 555-0143"):
        assert holds_typed(phone, text, frozenset()), text
    assert answer_type("What is my flight number?").address == ""


def test_a_version_question_is_answered_by_a_version_not_a_year() -> None:
    """"Which Redis version ...?" is not answered by "in the first half of 2023", nor by
    the date of the note that tells it; "Redis 6.2", "v1.9.4" or "PostgreSQL 13" answers."""
    redis = answer_type("Which Redis version was the gateway using for sessions?")
    assert redis.kind == DATE and redis.version and redis.undated and redis.what == "version"
    assert not holds_typed(redis, "Two incidents in the first half of 2023 were failovers.", frozenset())
    assert not holds_typed(redis, "Moved on 6 May, then again on 2024-03-14.", frozenset())
    for text in ("It ran Redis 6.2 on three nodes.", "Pinned to v1.9.4 until the upgrade.",
                 "We picked PostgreSQL 13, then current."):
        assert holds_typed(redis, text, frozenset()), text
    assert not answer_type("When was the gateway moved?").version


def test_a_value_in_quotes_and_a_hyphenated_count_are_read() -> None:
    """A config table's `"04:00-05:00"` is a time of day, `"stable"` none; "the 11-digit
    code" counts digits as "11 digits" does, "a 3-day course" counts none."""
    hours = answer_type("During which hours does the hub install updates by default?")
    row = '| `update.window` | string | `"04:00-05:00"` | local time range for updates |'
    assert holds_typed(hours, row, frozenset())
    assert not holds_typed(hours, '| `update.channel` | string | `"stable"` | or `"beta"` |', frozenset())
    digits = answer_type("How many digits does the manual pairing code have?")
    assert holds_typed(digits, "Type the 11-digit manual code.", frozenset())
    assert not holds_typed(digits, "Book the 3-day course first.", frozenset())


def test_a_count_may_describe_what_it_counts_in_a_few_words() -> None:
    """"31 semi-natural grassland sites" counts sites, as "31 sites" does; a function word in
    between ("5 minutes from the site") makes the number count something else."""
    sites = answer_type("How many sites did the study cover?")
    assert holds_typed(sites, "31 semi-natural grassland sites across France.", frozenset())
    assert not holds_typed(sites, "The lab is 5 minutes from the site.", frozenset())
    assert not holds_typed(sites, "31 semi-natural grassland plots across France.", frozenset())
    days = answer_type("How many days a year can you work abroad?")
    assert holds_typed(days, "Up to 10 working days a year.", frozenset())
    assert not holds_typed(days, "Up to 10 working hours of travel on those days.", frozenset())


def test_a_count_or_a_unit_must_sit_next_to_its_number() -> None:
    asked = frozenset({"how", "many", "milligrams", "of", "magnesium"})
    milligrams = answer_type("How many milligrams of magnesium do I take?")
    assert "mg" in milligrams.units
    assert not holds_typed(milligrams, "Magnesium (1 capsule)", asked)
    assert holds_typed(milligrams, "Magnesium, 400 mg at night", asked)
    assert holds_typed(milligrams, "Magnesium: two hundred milligrams", asked)
    days = answer_type("How many days does a check-only run take?")
    assert holds_typed(days, "A check-only run takes around 3-4 days.", frozenset())
    entities = answer_type("How many entities did the pipeline extract?")
    assert not holds_typed(entities, "The corpus holds about one million tokens.", frozenset())
    assert holds_typed(entities, "It extracted 15,000 entities.", frozenset())
    # People are counted under one name or another: guests, people, adults.
    guests = answer_type("How many guests are coming for dinner?")
    assert holds_typed(guests, "We're hosting dinner for 8 people this year.", frozenset())
    assert not holds_typed(guests, "We're hosting dinner for 8 hours this year.", frozenset())
    # A finish time is a span: a clock reading or a duration, not the race's distance or day.
    span = answer_type("What was my finish time in the Turkey Trot?")
    assert holds_typed(span, "I finished the half in 1:58:42.", frozenset())
    assert holds_typed(span, "I crossed the line after 27 minutes.", frozenset())
    assert holds_typed(span, "It took me an hour.", frozenset())
    assert not holds_typed(span, "I ran the Turkey Trot 5K on November 28.", frozenset())
    # So is a goal time, a lead time, screen time: "April 2025" is the race's month, not the goal.
    goal = answer_type("What is my marathon goal time?")
    assert goal.span and not holds_typed(goal, "Training for the Rotterdam Marathon, April 2025.", frozenset())
    assert holds_typed(goal, "Goal: under 3:30 this time.", frozenset())
    assert answer_type("What is the lead time for the parts?").span
    # "A few minutes", "several hours" give no value: no finish time, no count of days.
    assert not holds_typed(span, "Be patient for the first few minutes.", frozenset())
    assert not holds_typed(span, "It took several hours.", frozenset())
    assert not holds_typed(days, "A check-only run takes a couple days.", frozenset())
    assert holds_typed(days, "A check-only run takes a day or two.", frozenset())
    # "How long does it take" asks for a duration: "100 MB" is a number, not how long.
    scan = answer_type("How long does the near-duplicate scan take for 10,000 photos?")
    assert scan.span and not holds_typed(scan, "A library of 100,000 photos needs roughly 100 MB.",
                                         frozenset({"10", "000"}))
    assert holds_typed(scan, "On a laptop it takes about 40 minutes.", frozenset({"10", "000"}))
    assert holds_typed(answer_type("How long did the bookshelf take Tomas to build?"),
                       "It took me three weekends.", frozenset())
    assert not answer_type("How long is the salt?").span  # a length, any number
    # A version is no count: "1.x", "2.3.1" name a release ("1.000.000" is still a number).
    downloads = answer_type("How many times has tern 2.0 been downloaded?")
    release = "This guide moves an existing 1.x setup to 2.x; tern 2.3.1 reads both."
    assert not holds_typed(downloads, release, frozenset({"2", "0"}))
    assert holds_typed(downloads, "Version 2.0 was downloaded 1.000.000 times.", frozenset({"2", "0"}))
    assert holds_typed(answer_type("How many threads does it use?"), "It uses 2.5 threads.", frozenset())
    # Seconds glued to a number ("58s") are a span; a model's plural or a decade is not.
    assert holds_typed(span, "I finished in 58s.", frozenset())
    assert not holds_typed(span, "I replaced my shoes with Hoka Clifton 9s.", frozenset())
    assert not holds_typed(span, "A race route unchanged since the 1990s.", frozenset())
    # "How much did it cost" wants money: a currency sign or word, not the trip's nights.
    money = answer_type("How much did the Japan trip cost?")
    assert holds_typed(money, "It was $499 at Harmony Music.", frozenset())
    assert holds_typed(money, "The flat was 1,150 euros for the week.", frozenset())
    assert not holds_typed(money, "Tokyo (5 nights), then Kyoto (6).", frozenset())
    # Any currency, by sign, code or name, before or after the number.
    for priced in ("3 280 kr return, hand luggage only", "CHF 20 for the ticket", "¥3,000 a night",
                   "Rs. 500 at the door", "was 1 200 SEK", "about 40 zł"):
        assert holds_typed(money, priced, frozenset()), priced
    assert not holds_typed(money, "Three nights, then 2 more in Oslo.", frozenset())
    assert not holds_typed(money, "We met Aaron 5 times.", frozenset())  # "ron" ends a name here
    assert answer_type("How much weight did I lose?") == Expected(QUANTITY)
    # A salary, a price, a fee or a rent is an amount of money, however it is asked.
    salary = answer_type("What salary did Lumenfield offer me?")
    assert salary.money and answer_type("What is the price of the family plan?").money
    # "How much" asks for money when any money word is in it: the same nouns as "what salary".
    assert answer_type("How much is the bus fare to work?").money
    assert answer_type("How much do the wages come to?").money
    assert holds_typed(salary, "The offer is 95k plus equity.", frozenset())
    assert not holds_typed(salary, "Big news part two: they want me in Denver.", frozenset())
    assert not answer_type("What is the computational cost of attention?").money
    # A currency named in words makes a sum money: "312 extra invoices" is no dollar amount.
    dollars = answer_type("What was the total dollar amount of the duplicated invoices?")
    assert dollars.money and answer_type("What is the euro value of the grant?").money
    assert not holds_typed(dollars, "It created 312 extra invoices in total.", frozenset())
    assert holds_typed(dollars, "The duplicates came to $48,210.", frozenset())
    assert not answer_type("What is the amount of the grant?").money
    # A date's numbers count nothing: "August 17" is no rent, "March 2023" no font size.
    assert not holds_typed(QUANTITY, "Moving day is August 17, and we rent a townhouse.", frozenset())
    assert not holds_typed(QUANTITY, "Switched on 17 March 2023, then 2024-03-14.", frozenset())
    assert holds_typed(QUANTITY, "From August 17 the rent is $1,850 a month.", frozenset())
    assert holds_typed(QUANTITY, "You may 5 times a day.", frozenset())  # "may" is no month here


def test_a_colour_or_a_weekday_answers_only_its_own_question() -> None:
    none: frozenset[str] = frozenset()
    assert holds_typed(COLOUR, "The car is a dark-blue estate.", none)
    assert not holds_typed(COLOUR, "The car is a fast, roomy estate.", none)
    assert not holds_typed(COLOUR, "The blue car is mine.", frozenset({"blue"}))  # asked already
    assert holds_typed(WEEKDAY, "The club meets on Thursdays.", none)
    assert not holds_typed(WEEKDAY, "The club met on 3 June 2024.", none)


def test_what_time_wants_a_clock_reading_not_the_notes_date() -> None:
    """"What time is my check-up?" against a dated session's "back for a check-up in six
    weeks": a date, not a time of day. "What time of year" still takes any date."""
    clock = answer_type("What time is my check-up?")
    assert clock.kind == DATE and holds_typed(clock, "Lessons are on Thursdays at 4:30.", frozenset())
    assert holds_typed(clock, "The train leaves at 9 am.", frozenset())
    assert holds_typed(clock, "The train leaves at 9.30 p.m. sharp.", frozenset())
    assert not holds_typed(clock, "I ran 9 amazing kilometres.", frozenset())
    assert not holds_typed(clock, "She wants me back for a check-up in six weeks.", frozenset())
    assert answer_type("What time of year do we go?") == Expected(DATE)
    question = "What time is my check-up?"
    terms = ["time", "check"]
    patterns = {t: term_pattern(t) for t in terms}
    hit = SimpleNamespace(title="Chat session 2", heading_path=[], path="2024-02-19-session-02.md",
                          text="She also wants me back for a check-up in six weeks.")
    dated = lambda h: True  # noqa: E731 - the session's file name dates it
    assert typed_gap(question, [hit], terms, {t: 1.0 for t in terms}, patterns, dated=dated)[1] > 0.3
    hit.text = "My check-up is on March 4 at 10:15."
    assert typed_gap(question, [hit], terms, {t: 1.0 for t in terms}, patterns, dated=dated)[1] == 0.0


def test_a_dated_notes_own_date_answers_what_happened_not_what_is_planned() -> None:
    """"When did I ..." is answered by a chat session's or a journal day's own date; "when is
    my sister's wedding" is not, unless the sentence counts from it ("this weekend")."""
    done = answer_type("When did I buy the camera?")
    planned = answer_type("When is my sister's wedding?")
    assert done == Expected(DATE)
    assert planned.kind == DATE and planned.undated
    hit = SimpleNamespace(title="2024-02-02 session 04", heading_path=[], text=(
        "My sister is getting married and I want a gift for the wedding. Any ideas?"))
    terms = ["sister", "wedding"]
    idf = {"sister": 2.0, "wedding": 2.0}
    patterns = {t: term_pattern(t) for t in terms}
    assert typed_gap("When did my sister's wedding happen?", [hit], terms, idf, patterns)[1] == 0.0
    assert typed_gap("When is my sister's wedding?", [hit], terms, idf, patterns)[1] == 1.0
    hit.text = "I'm the maid of honour at my sister's wedding this weekend and I need a toast."
    assert typed_gap("When is my sister's wedding?", [hit], terms, idf, patterns)[1] == 0.0
    hit.text = "My sister's wedding is on October 5 in Asheville."
    assert typed_gap("When is my sister's wedding?", [hit], terms, idf, patterns)[1] == 0.0


def test_a_nested_bullet_tells_more_of_its_parent() -> None:
    """An outliner writes a fact under the item it belongs to: the nested item answers with
    its parent, as a next sentence that points back does; a sibling or an item at the same
    level does not."""
    question = "How much is Otis's insurance a month now?"
    terms = ["otis", "insurance", "month"]
    idf = {t: 1.0 for t in terms}
    patterns = {t: term_pattern(t) for t in terms}
    hit = SimpleNamespace(title="2024_03_05", heading_path=[], text=(
        "- [[Otis]] skipped breakfast, ate dinner fine\n"
        "- DONE renew Agria insurance for [[Otis]]\n"
        "\t- 412 kr/month now, was 389\n"
        "- bled the bedroom radiator"))
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0
    # Spaces nest as tabs do; the numbered paragraphs and their parents, as read.
    numbered, parents = outline("- renew the insurance\n  - 412 kr a month\n    - paid by card\n- radiator")
    assert [n for n, _ in numbered] == [0, 1, 2, 3] and parents == [-1, 0, 1, -1]
    # A list item's short opening label is the subject its next sentence leaves out; a long
    # opening sentence is a fact of its own, and its names are not the answer.
    who_q = "Who at Vireo handles print orders?"
    who_terms = ["vireo", "handles", "print", "orders"]
    who = SimpleNamespace(title="Client: Vireo Tea Company", heading_path=["Contacts"], text=(
        "- **Mathilde Claes**, founder. Approves all design work.\n"
        "- **Jasper Willaert**, operations. Handles print orders, deliveries and purchase orders.\n"))
    patterns_who = {t: term_pattern(t) for t in who_terms}
    assert typed_gap(who_q, [who], who_terms, {t: 1.0 for t in who_terms}, patterns_who)[1] == 0.0
    who_q = "What is the name of our accountant?"
    who_terms = ["name", "accountant"]
    who.text = ("- Upload every receipt to the Expenses folder in Dropbox by the 5th of the month. "
                "The receipts then go on to our accountant every quarter.\n")
    patterns_who = {t: term_pattern(t) for t in who_terms}
    assert typed_gap(who_q, [who], who_terms, {t: 1.0 for t in who_terms}, patterns_who)[1] > 0.0
    # At the same level, the number is another item's: half the credit, as any neighbour.
    hit.text = ("- [[Otis]] skipped breakfast, ate dinner fine\n"
                "- DONE renew Agria insurance for [[Otis]]\n"
                "- 412 kr/month for the new phone plan\n")
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == pytest.approx(2 / 3 - 1 / 3)


@pytest.mark.parametrize(("term", "finds", "misses"), [
    ("paying", ["I pay $1,850 a month", "we were paying too much"], ["the papers", "the pace"]),
    ("buying", ["I buy it weekly", "the buyer"], ["a bus"]),
    ("ranking", ["ranked lists", "the ranker"], ["a ranch"]),
    ("coming", ["coming home"], ["the company", "a comet"]),  # no three-letter "com"
    ("string", ["strings"], ["a strong claim", "the street"]),
    # An irregular verb's other forms, as whole words.
    ("pay", ["I paid $180 for it", "paying rent"], ["a paidless", "the papers"]),
    ("bought", ["we buy bread", "I bought it"], ["a boundary"]),
    ("went", ["I go there", "we went to Lisbon", "it's gone"], ["a goal"]),
    # A title's short form, both ways.
    ("doctor", ["I saw Dr. Okonkwo on Friday", "my doctors"], ["I drove", "a drum"]),
    ("dr", ["my doctor said so", "Dr. Okafor"], ["the doc", "I drive", "a drink"]),
    # A short word is kept whole with its own endings: it does not find longer words.
    ("cat", ["two cats", "the cat's bowl"], ["a category", "catch"]),
    ("run", ["running", "the runner", "she ran"], ["a rung"]),
    ("use", ["using it", "I used", "useful"], ["usual", "usher"]),
    ("copy", ["copies", "copied"], ["copyright"]),
    ("work", ["worked", "working"], ["my workflow", "a workshop"]),
    ("e", ["vitamin E"], ["a ring", "x and y"]),  # a letter alone loses no "e" to an ending
    # A "-tion" noun finds its verb, as a whole word with a verb's endings.
    ("definition", ["units as defined in", "define it"], ["to defy", "a deficit"]),
    ("installation", ["install it", "installed"], ["an instalment"]),
    # A word negated with "un-" finds the word: "unspent" is told as "spent".
    ("unspent", ["£1,585 spent so far", "we spend less"], ["a spell", "unsent"]),
    ("unpaid", ["I paid $180", "pay it"], ["the papers"]),
])
def test_a_terms_other_forms_are_found_and_little_else(term: str, finds: list[str],
                                                       misses: list[str]) -> None:
    pattern = term_pattern(term)
    assert all(pattern.search(t) for t in finds)
    assert not any(pattern.search(t) for t in misses)


def gap_in(question: str, terms: list[str], text: str) -> float:
    """The typed gap of ``question`` against one hit holding ``text``, every term weighing 1."""
    hit = SimpleNamespace(title="Notes", heading_path=[], text=text)
    return typed_gap(question, [hit], terms, {t: 1.0 for t in terms},
                     {t: term_pattern(t) for t in terms})[1]


def test_the_next_sentence_of_a_paragraph_may_answer_with_it() -> None:
    """"I bought a wheel. I paid $260 for it.": the number's sentence holds an asked word of
    its own, so the two sentences answer together; a number in another paragraph does not."""
    wheel = ("How much did Ines pay for her secondhand pottery wheel?",
             ["ines", "pay", "secondhand", "pottery", "wheel"])
    assert gap_in(*wheel, "Ines bought a secondhand pottery wheel from a retired teacher. "
                          "I paid $260 for it.") == 0.0
    assert gap_in(*wheel, "Ines bought a secondhand pottery wheel from a retired teacher.\n\n"
                          "I paid $260 for it.") == pytest.approx(0.4)
    # The next sentence that points back ("them": the shoes) answers with it, though it holds
    # no asked word; one that does not point back earns half.
    shoes = ("How much did my running shoes cost?", ["running", "shoes", "cost"])
    assert gap_in(*shoes, "My running shoes are Saucony Rides. I bought them in January for $140.") == 0.0
    assert gap_in(*shoes, "My running shoes are Saucony Rides. I bought a hat in January for "
                          "$140.") == pytest.approx(1 / 3)


def test_a_next_sentence_that_opens_with_its_value_answers_with_the_one_before() -> None:
    """"Train down from Porto: the fast one. **2 hours 58 minutes**, €32.40 each.": a
    sentence with no subject that opens with a quantity is shorthand for more of what the
    one before it tells; one that opens with a date starts an entry of its own."""
    train = ("How long was the fast train from Porto?", ["fast", "train", "porto"])
    before = "Train down yesterday from Porto: the fast one. "
    assert gap_in(*train, before + "**2 hours 58 minutes**, €32.40 each.") == 0.0
    assert gap_in(*train, before + "Then 2 hours 58 minutes of queueing.") == pytest.approx(0.5)
    assert gap_in(*train, before + "22 Nov: 3 hours at the dentist.") == pytest.approx(0.5)


def test_a_later_sentence_that_names_the_same_thing_answers_with_it() -> None:
    """"... a Samsung T7 drive every night. (two list items) The T7 holds 2 TB.": the value
    is stated of the thing the best sentence names, so the two answer together; a value
    of something else in the same note does not."""
    question = "How big is the backup drive?"
    terms = ["backup", "drive"]
    idf = {t: 1.0 for t in terms}
    patterns = {t: term_pattern(t) for t in terms}
    items = ("- Backup: Time Machine to a Samsung T7 drive every night.\n"
             "- Photos: synced to Backblaze as well.\n- Passwords: in a family plan.\n\n")
    hit = SimpleNamespace(title="Home", heading_path=[], text=items + "The T7 holds 2 TB.")
    expected, gap, _, answer_at = typed_gap(question, [hit], terms, idf, patterns)
    assert expected.kind == QUANTITY and gap == 0.0 and answer_at == "The T7 holds 2 TB."
    hit.text = items + "The old Synology holds 4 TB."
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == 1.0


def test_a_tellers_fact_runs_on_over_their_next_turn() -> None:
    """"I ran the charity 5K." -- "How did it go?" -- "I finished in 27 minutes.": the number
    answers with the teller's earlier turn; the other speaker's number does not."""
    question = "How long did Tomas take to finish the charity 5K?"
    terms = ["tomas", "take", "finish", "charity", "5k"]
    idf = {t: 1.0 for t in terms}
    patterns = {t: term_pattern(t) for t in terms}
    text = ("**Tomas:** I ran a charity 5K last weekend.\n\n**Ines:** How did it go?\n\n"
            "**Tomas:** I finished in 27 minutes.\n\n**Ines:** Nice.\n")
    hit = SimpleNamespace(title="Session 2", heading_path=[], text=text)
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0
    # The same number said by the other speaker is no part of Tomas's story.
    hit.text = text.replace("**Tomas:** I finished", "**Ines:** I finished")
    assert typed_gap(question, [hit], terms, idf, patterns)[1] > 0.0
    # Turns on consecutive lines are turns too, and one "Note:" line is no conversation.
    lines = [s for s in sentences(text.replace("\n\n", "\n"))]
    assert [t[0] if t else None for t in sentence_turns(lines)] == ["Tomas", "Ines", "Tomas", "Ines"]
    assert sentence_turns(["Note: the 5K was on Sunday.", "It rained."]) == [None, None]
    # The label speaks for each sentence of its turn: "**Tomas:** Ha. We have three kids."
    kids = ("**Tomas:** Ha, my kids would love her. We have three kids now.\n\n"
            "**Ines:** Wow.\n\n**Tomas:** Yes.\n\n**Ines:** Right.\n")
    hit.text = kids
    terms = ["kids", "tomas"]
    assert typed_gap("How many kids does Tomas have?", [hit], terms, {t: 1.0 for t in terms},
                     {t: term_pattern(t) for t in terms})[1] == 0.0


def test_who_is_answered_by_a_relation_and_when_by_a_span_ago() -> None:
    who = answer_type("Who gave Ines her easel?")
    assert who == Expected(NAME, relation=True, person=True)
    asked = frozenset({"who", "gave", "ines", "her", "easel"})
    assert holds_typed(who, "My grandmother gave me her old easel.", asked)
    assert not holds_typed(who, "I paint on an old easel every evening.", asked)
    # "Which font" is not answered by a relation; only "who" is.
    assert not holds_typed(NAME, "My grandmother picked the font.", frozenset())
    # The relation the question names is not its answer ("Who did Ines's brother marry?").
    assert not holds_typed(who, "Her brother got married.", frozenset({"brother"}))
    assert holds_typed(DATE, "I visited a shelter two weeks ago.", frozenset())
    assert holds_typed(DATE, "We moved here a couple of years ago.", frozenset())
    assert not holds_typed(DATE, "I visited a shelter with my sister.", frozenset())
    assert holds_typed(DATE, "She called last night.", frozenset())
    assert holds_typed(DATE, "We went to Lisbon in the summer, after Christmas.", frozenset())
    assert not holds_typed(DATE, "The Spring framework wires it; leaves fall.", frozenset())
    assert holds_typed(QUANTITY, "She's a two-year-old greyhound.", frozenset({"how", "old"}))
    # A speaker's doings are counted by listing them, like the asker's own.
    assert answer_type("How many times has Ines been to the coast?") == Expected(QUANTITY)
    assert answer_type("How many times has Ines been to the coast?",
                       frozenset({"ines", "tomas"})) == UNCHECKED
    assert answer_type("How many times does bors retry?", frozenset({"ines"})) == Expected(QUANTITY)
    # "Which hobby / instrument / animals": kinds of common nouns, which no name answers.
    assert answer_type("Which instrument did Lucia start?") == UNCHECKED
    assert answer_type("Which animals did the kids like at the zoo?") == UNCHECKED
    assert answer_type("Which font do I use in Sublime Text?") == Expected(NAME)
    # "How often" is answered by a frequency in words as well as by a number.
    often = answer_type("How often does Tomas go climbing?")
    assert often == Expected(QUANTITY, frequency=True)
    for said in ("He goes climbing twice a week.", "He climbs every Sunday.", "He climbs 3 times."):
        assert holds_typed(often, said, frozenset({"how", "often", "climbing"}))
    assert not holds_typed(often, "He goes climbing with Ines.", frozenset())
    assert not holds_typed(often, "It runs at night.", frozenset({"each", "night"}))
    # "Where" is answered by a place said with a preposition; "in which city" wants a name.
    where = answer_type("Where does Tomas's dog hide?")
    assert where == Expected(PLACE, preposition=True)
    assert holds_typed(where, "He hides in the bathtub whenever I vacuum.", frozenset())
    assert not holds_typed(where, "He hides whenever I vacuum, in a few seconds.", frozenset())
    assert answer_type("In which city did I give my talk?") == Expected(PLACE)
    assert not holds_typed(PLACE, "I gave my talk in the big hall.", frozenset())


def test_identifiers_links_and_sentence_openers_are_not_answers() -> None:
    none: frozenset[str] = frozenset()
    # Digits inside identifiers and link targets are not quantities; a value in code is.
    assert not holds_typed(QUANTITY, "Set `KEEP_CHECKOUT=1` and build for x86_64.", none)
    assert sentences("See [the notes](https://example.org/2019/05/notes).") == ["See [the notes]."]
    assert holds_typed(QUANTITY, "Kleinberg used `t = 200`.", none)
    # A capital opening a sentence or list item, "I" and its contractions are not names.
    assert not holds_typed(NAME, "The mesh filter traps oils. Rinse it after every brew.", none)
    assert not holds_typed(NAME, "I've been enjoying the team a lot.", none)
    assert holds_typed(NAME, "It was invented by Attilio Calimani in Milan.", none)
    assert holds_typed(NAME, "My editor is iTerm.", none)
    # A dash between spaces opens a clause as a stop does: a vault's "[Label] - Does ..."
    # item opens with a verb, not a name. A hyphen inside a word does not.
    asked = frozenset({"job", "title", "rekki"})
    assert not holds_typed(NAME, "[January] - Joined Rekki.", asked)
    assert not holds_typed(NAME, "Rekki \u2013 Joined in spring.", asked)
    assert holds_typed(NAME, "[January] - Joined Rekki as Head of Design.", asked)
    assert holds_typed(NAME, "A well-known Berlin bakery.", none)
    # A unit in capitals after its number is not a name; the same capitals elsewhere are.
    assert not holds_typed(NAME, "My doctor bumped me up to 4,000 IU a day.", none)
    assert not holds_typed(NAME, "The laptop has 16 GB of memory.", none)
    assert holds_typed(NAME, "We bought the shelves at IKEA.", none)
    # What the question already says is never its answer.
    assert not holds_typed(NAME, "The French press was invented long ago.",
                           frozenset({"who", "invented", "the", "french", "press"}))
    assert holds_typed(DATE, "It shipped in March 1929.", none)
    assert not holds_typed(DATE, "You may march on.", none)
    # A month or a weekday dates a sentence; it is no name or place a question asks for.
    assert not holds_typed(NAME, "The landlord confirmed the rent goes up in September.", none)
    assert not holds_typed(NAME, "We meet every Friday at noon.", none)
    assert holds_typed(NAME, "The landlord, Mr. Okafor, confirmed it in September.", none)


def test_sentences_join_wrapped_lines_and_split_list_items() -> None:
    text = ("A French press is a carafe\nwith a plunger. It steeps coffee.\n\n"
            "- [Aeron](https://example.org/aeron) chair\n- Sayl chair\n> quoted line")
    assert sentences(text) == ["A French press is a carafe with a plunger.", "It steeps coffee.",
                               "[Aeron] chair", "Sayl chair quoted line"]
    # "Mr.", "Dr.", "e.g." end no sentence; a full stop before a capital still does.
    assert sentences("I met Mr. Okafor today. He teaches maths, e.g. Algebra. Dr. Patel came.") == [
        "I met Mr. Okafor today.", "He teaches maths, e.g. Algebra.", "Dr. Patel came."]
    # An autolink goes whole, its closing bracket and the full stop after it too: the next
    # sentence stays a sentence of its own.
    assert sentences("The guide is at <https://example.org/v2/guide>. Version 3 came out in 2021.")[1:] \
        == ["Version 3 came out in 2021."]
    # A chat or a terse note opens a sentence in lower case; a lower-case abbreviation ends none.
    assert sentences("we're in Groningen. the new flat is on the third floor. approx. three etc. "
                     "and more") == ["we're in Groningen.", "the new flat is on the third floor.",
                                     "approx. three etc. and more"]


KETTLE = """
    # Kettle

    A gooseneck kettle pours slowly and precisely, which matters for pour-over coffee.
    Its capacity is printed on the base.
    """


def test_a_near_miss_that_holds_every_asked_word_but_no_value(make_kb: Any) -> None:
    """The note names the kettle and its capacity, never the number: the reader sees it."""
    question = "What is the capacity of the gooseneck kettle?"
    results, roots = {}, {}
    for label, body in (("near", KETTLE), ("answered", KETTLE.replace("printed on the base", "1.2 litres"))):
        kb = make_kb({**COFFEE, "kitchen/kettle.md": body}, name=f"kettle-{label}")
        kb.sync()
        support, x = support_of(kb, question)
        results[label] = (kb.search(question), support, x)
        roots[label] = kb.root
    near, support, x = results["near"]
    assert support.unsupported == [] and x[FEATURES.index("asked_gap")] == 0.0  # every word found
    assert support.expects == QUANTITY and x[FEATURES.index("typed_missing")] == 1.0
    assert support.reason() == "found 'kettle' and 'gooseneck', but no number near them"
    answered, found, x_found = results["answered"]
    assert found.expects == QUANTITY and x_found[FEATURES.index("typed_missing")] == 0.0
    assert near.confidence is not None and answered.confidence is not None
    assert answered.confidence > 0.9 and not answered.abstained
    assert near.abstained and near.reason == support.reason()
    # --explain shows what the reader took for the answer, or that it found none.
    assert found.answer_at == "Its capacity is 1.2 litres." and support.answer_at is None
    for label, says in (("answered", 'reader: expects a number, found in "Its capacity is 1.2 litres."'),
                        ("near", "reader: expects a number, none near the best-matching sentence")):
        out = CliRunner().invoke(cli, ["search", question, "--kb", str(roots[label]), "--explain"])
        assert out.exit_code == 0 and says in out.output, out.output



def test_the_reason_names_the_answer_the_question_wants(make_kb: Any) -> None:
    """A price is an amount of money: the abstention and --explain say so, not "a number"."""
    question = "What is the price of the gooseneck kettle?"
    kb = make_kb({**COFFEE, "kitchen/kettle.md": KETTLE.replace("Its capacity is printed on the base.",
                                                                "Its price is printed on the tag.")},
                 name="kettle-price")
    kb.sync()
    support, _ = support_of(kb, question)
    assert support.expects == QUANTITY and support.expects_what == "amount of money"
    assert support.reason().endswith("but no amount of money near them"), support.reason()
    out = CliRunner().invoke(cli, ["search", question, "--kb", str(kb.root), "--explain"])
    assert out.exit_code == 0 and "reader: expects an amount of money, none near" in out.output, out.output
    assert answer_type("What time is my check-up?").what == "time of day"
    assert answer_type("What was my finish time?").what == "duration"
    assert answer_type("Who wrote it?").what == "name" and UNCHECKED.what is None

def test_the_dimension_word_of_how_big_is_asked_of_no_text(make_kb: Any) -> None:
    """"How heavy" wants a weight ("900 g"), which never says "heavy": the reader asks no
    note for the word, so what is missing is the value, and the reason says so."""
    assert content_terms("How heavy is the gooseneck kettle?") == ["gooseneck", "kettle"]
    assert content_terms("How much magnesium do I take?") == ["magnesium", "take"]
    assert content_terms("How long is the long run?") == ["long", "run"]  # "long" asked too
    assert content_terms("How many?") == [] and query_terms("How many?") == ["many"]
    question = "How heavy is the gooseneck kettle?"
    seen = {}
    for label, body in (("near", KETTLE), ("answered", KETTLE.replace(
            "Its capacity is printed on the base.", "It weighs 900 g when empty."))):
        kb = make_kb({**COFFEE, "kitchen/kettle.md": body}, name=f"heavy-{label}")
        kb.sync()
        seen[label] = (kb.search(question), *support_of(kb, question))
    for label, (_, support, x) in seen.items():
        assert support.unsupported == [] and "heavy" not in support.asked, label
        assert x[FEATURES.index("asked_gap")] == 0.0, label
    near, support, x = seen["near"]
    assert near.abstained and x[FEATURES.index("typed_missing")] == 1.0
    assert support.reason() == "found 'kettle' and 'gooseneck', but no number near them"
    answered, found, _ = seen["answered"]
    assert not answered.abstained and found.answer_at == "It weighs 900 g when empty."


def test_a_verb_is_as_common_as_all_its_forms(make_kb: Any) -> None:
    """The notes say "took", never "take": "take" is still a common word of the KB, not the
    rarest word of "How much magnesium do I take?", so the sentence that matches the
    question best is the magnesium one, not "Restore took about 3 hours"."""
    kb = make_kb({
        "health/sleep.md": """
            # Sleep

            What helps: no screens after 22:15, and magnesium glycinate, 200 mg, an hour
            before bed.
            """,
        "tools/backups.md": """
            # Backups

            The laptop backs up every night. Restore was last tested in January and took
            about 3 hours.
            """,
        "travel/train.md": "# Train\n\nThe train took us to Kyoto and then we took a bus.\n",
    }, name="took")
    kb.sync()
    store = kb.reader()
    memo: dict[str, Any] = {}
    total = chunk_count(memo, store.conn, store.generation, 0)
    idf = term_idf(memo, store.conn, store.generation, ["take", "took", "magnesium"], total, "porter")
    assert idf["take"] == idf["took"] < idf["magnesium"]
    support, _ = support_of(kb, "How much magnesium do I take?")
    assert support.answer_at is not None and support.answer_at.startswith("What helps"), support.answer_at


VITAMIN_CHAT = """
    # Chat session 25

    **User:** I got my follow-up bloodwork back. My vitamin D is still on the low side, so
    my doctor bumped me up to 4,000 IU a day. Is there anything else I should think about
    with the higher dose?

    **Assistant:** With a higher dose, keep taking it consistently with a meal that
    contains some fat, and avoid doubling up with other products that contain vitamin D.
    Ask whether they plan to retest, since that is how they will confirm the new dose works.
    """


def test_in_a_chat_log_the_askers_own_turn_holds_the_fact(make_kb: Any) -> None:
    """The assistant's advice repeats the question's words; the user's turn states the fact.

    A question about the asker ("am I") is read against the notes' first-person
    statements, so the advice sentence, which holds every asked word and no number,
    is not mistaken for the place the answer should be.
    """
    question = "What dose of vitamin D am I taking now?"
    kb = make_kb({**COFFEE, "chats/session-25.md": VITAMIN_CHAT}, name="vitamin-chat")
    kb.sync()
    support, x = support_of(kb, question)
    assert support.expects == QUANTITY
    assert x[FEATURES.index("typed_missing")] == 0.0
    res = kb.search(question)
    assert res.confidence is not None and not res.abstained
    # Without the fact in the user's turn, the same chat is a near miss.
    kb2 = make_kb({**COFFEE, "chats/session-25.md": VITAMIN_CHAT.replace(
        "bumped me up to 4,000 IU a day", "changed my prescription")}, name="vitamin-chat-near")
    kb2.sync()
    near, x_near = support_of(kb2, question)
    assert x_near[FEATURES.index("typed_missing")] == 1.0
    assert near.reason() == "found 'vitamin', but no number near it"


LISBON_CHAT = """
    # Chat session 14

    **User:** Theo and I are going to Lisbon in September, our first trip abroad in years.

    **Assistant:** Lisbon rewards an early start. Most restaurants open for dinner late; to
    eat well without a booking, try the Time Out Market near Cais do Sodré.
    """


@pytest.mark.parametrize("labels", ["bold", "export"])
def test_an_assistants_advice_is_no_answer_about_the_asker(make_kb: Any, labels: str) -> None:
    """"Which restaurant in Lisbon did we eat at?" against a chat where the assistant's
    advice names a market to eat at: the user never said where they ate. An assistant's
    turn gives advice, whose names are its own; once the user says where they ate, the
    question answers, and a question that asks what "you" suggested reads the advice.
    The same whether the turns are labelled "**Assistant:**" or, as exports write them,
    "assistant:"."""
    chat = LISBON_CHAT if labels == "bold" else (
        LISBON_CHAT.replace("**User:**", "user:").replace("**Assistant:**", "assistant:"))
    kb = make_kb({**COFFEE, "chats/session-14.md": chat}, name=f"lisbon-chat-{labels}")
    kb.sync()
    question = "Which restaurant in Lisbon did we eat at?"
    support, x = support_of(kb, question)
    assert support.expects == NAME and support.answer_at is None
    assert x[FEATURES.index("typed_missing")] == 1.0
    assert kb.search(question).abstained
    suggested, x = support_of(kb, "Which market in Lisbon did you suggest we eat at?")
    assert x[FEATURES.index("typed_missing")] == 0.0 and "Time Out" in (suggested.answer_at or "")
    told_turn = "**User:**" if labels == "bold" else "user:"
    kb2 = make_kb({**COFFEE, "chats/session-14.md": chat + (
        f"\n    {told_turn} We ate at Cervejaria Ramiro on our last night in Lisbon and loved it.\n")},
        name=f"lisbon-chat-told-{labels}")
    kb2.sync()
    told, x = support_of(kb2, question)
    assert x[FEATURES.index("typed_missing")] == 0.0 and "Ramiro" in (told.answer_at or "")
    assert not kb2.search(question).abstained


RACE_CHAT = """
    # Chat session 7

    **User:** My husband Idris and I both ran the Riverside Run on Sunday. I finished in
    58:14, which beat my goal of an hour.

    **Assistant:** Congratulations to you both! Rest well this week.
    """


def test_the_writers_own_words_do_not_answer_for_someone_else(make_kb: Any) -> None:
    """"What was Idris's finish time?" against "I finished in 58:14": the writer's own
    time, not his. A first-person sentence that names none of the question's names and
    points to nobody else does not answer for them; one that does ("He finished in
    61:02"), or their own turn in a chat ("**Idris:** I finished in 61:02."), does."""
    question = "What was Idris's finish time in the Riverside Run?"
    kb = make_kb({**COFFEE, "chats/session-07.md": RACE_CHAT}, name="race-chat")
    kb.sync()
    support, x = support_of(kb, question)
    assert support.expects == QUANTITY and support.answer_at is None
    assert x[FEATURES.index("typed_missing")] == 1.0
    mine, x = support_of(kb, "What was my finish time in the Riverside Run?")
    assert x[FEATURES.index("typed_missing")] == 0.0 and "58:14" in (mine.answer_at or "")
    told = RACE_CHAT.replace("I finished in\n    58:14, which beat my goal of an hour.",
                             "He finished in\n    61:02, a minute slower than last year.")
    assert told != RACE_CHAT
    his, x = support_in(make_kb, {"chats/session-07.md": told}, question, "race-chat-told")
    assert x[FEATURES.index("typed_missing")] == 0.0 and "61:02" in (his.answer_at or "")
    own_turn = ("# Race day\n\n**Idris:** I ran the Riverside Run on Sunday. I finished in 61:02.\n\n"
                "**Maya:** Well done!\n\n**Idris:** Thanks.\n\n**Maya:** Rest now.\n")
    _, x = support_in(make_kb, {"chats/race.md": own_turn}, question, "race-own-turn")
    assert x[FEATURES.index("typed_missing")] == 0.0


MARCUS_CHAT = """
    # Chat session 21

    **User:** My friend Marcus ran the Harbour Half Marathon on Sunday, his first one. How
    should he recover this week?

    **Assistant:** Easy days first. For a half marathon, a two-hour finish works out to
    roughly 9:09 per mile, so his legs did real work: walk, stretch, and skip speed work.
    """


def test_an_assistants_advice_is_no_answer_about_someone_the_asker_names(make_kb: Any) -> None:
    """"What was Marcus's finish time?" against the assistant's "a two-hour finish works out
    to roughly 9:09 per mile": its numbers are the advice's. An assistant's sentence that
    names Marcus ("Marcus's 1:52:10 is ...") answers, as the user's own words do."""
    question = "What was Marcus's finish time in the half marathon?"
    support, x = support_in(make_kb, {"chats/session-21.md": MARCUS_CHAT}, question, "marcus-chat")
    assert support.expects == QUANTITY and support.answer_at is None
    assert x[FEATURES.index("typed_missing")] == 1.0
    for label, told in (
            ("user", MARCUS_CHAT.replace("on Sunday, his first one.", "on Sunday in 1:52:10.")),
            ("assistant", MARCUS_CHAT.replace("Easy days first.", "Marcus's 1:52:10 is a fine first half."))):
        assert told != MARCUS_CHAT
        his, x = support_in(make_kb, {"chats/session-21.md": told}, question, f"marcus-{label}")
        assert x[FEATURES.index("typed_missing")] == 0.0 and "1:52:10" in (his.answer_at or ""), label


JOB_CHAT = """
    # Chat session 22

    **User:** I got the Lumenfield job!! My start date is July 29. Now I have to write a
    resignation email to my manager Priscilla at Tallgrass. Can you help?

    **Assistant:** Of course. Thank her first, then give your last day and offer a handover.
    """


def test_a_name_in_the_questions_place_is_another_things(make_kb: Any) -> None:
    """"Who is my manager at Lumenfield?" against "my manager Priscilla at Tallgrass": the
    sentence puts another name after "at", so it speaks of Tallgrass; the question that
    names Tallgrass is answered, as is the one whose sentence names Lumenfield."""
    kb = make_kb({**COFFEE, "chats/session-22.md": JOB_CHAT}, name="job-chat")
    kb.sync()
    swapped, x = support_of(kb, "Who is my manager at Lumenfield?")
    assert swapped.expects == NAME and swapped.answer_at is None
    assert x[FEATURES.index("typed_missing")] > 0.0
    there, x = support_of(kb, "Who is my manager at Tallgrass?")
    assert x[FEATURES.index("typed_missing")] == 0.0 and "Priscilla" in (there.answer_at or "")
    told = JOB_CHAT.replace("Can you help?", "At Lumenfield my manager will be Ana Ruiz.")
    kb2 = make_kb({**COFFEE, "chats/session-22.md": told}, name="job-chat-told")
    kb2.sync()
    new, x = support_of(kb2, "Who is my manager at Lumenfield?")
    assert x[FEATURES.index("typed_missing")] == 0.0 and "Ana Ruiz" in (new.answer_at or "")


PHOTO_CHAT = """
    # Chat session 13

    **User:** I renamed my holiday photos so each file name starts with the date, like
    `2024-04-25_harbour.jpg`. Can a script do the rest?

    **Assistant:** Yes: read each photo's timestamp and rename it to that stamp.
    """


def test_the_word_that_names_the_answers_kind_does_not_find_the_sentence(make_kb: Any) -> None:
    """"What's my accountant's name?": a sentence that only says "name" (beside a file name)
    is no answer, and with no sentence holding "accountant" the name is missing too."""
    assert [kind_word(q) for q in ("What's my accountant's name?", "What time are my lessons?",
                                   "What colour is the van?", "Which font does it use?")] == [
        "name", "time", "colour", None]
    # "part", "kind", "brand": the answer is one of something, said without the word.
    assert [kind_word(q) for q in ("Which part of Denver is our new home in?",
                                   "What kind of dog does Maya have?",
                                   "Which brand of coffee do I buy?")] == ["part", "kind", "brand"]
    question = "What's my accountant's name?"
    kb = make_kb({**COFFEE, "chats/session-13.md": PHOTO_CHAT}, name="accountant-near")
    kb.sync()
    near, x_near = support_of(kb, question)
    assert near.expects == NAME and near.unsupported == ["accountant"]
    assert x_near[FEATURES.index("typed_missing")] > 0.5
    assert near.reason() == "found 'name', nothing on 'accountant'"
    told = PHOTO_CHAT + "\n    **User:** My accountant, Dana Whitfield, files our taxes every April.\n"
    kb2 = make_kb({**COFFEE, "chats/session-13.md": told}, name="accountant-told")
    kb2.sync()
    found, x_found = support_of(kb2, question)
    assert found.expects == NAME and x_found[FEATURES.index("typed_missing")] == 0.0
    answered = kb2.search(question)
    assert answered.confidence is not None and not answered.abstained
    refused = kb.search(question)
    assert refused.abstained and refused.reason == near.reason()


# --- who said it: a conversation between named people ------------------------------------

FRIENDS = {
    "talk/2023-05-08.md": """
        ---
        title: "Conversation 2023-05-08"
        ---

        **Ines:** How was your weekend? Did you finally run the charity 10K?

        **Tomas:** I did! I ran the charity 10K on Saturday for the children's hospital, and
        I realised that I love running in a crowd far more than training alone.

        **Ines:** That's wonderful. I spent Saturday at the pottery studio glazing bowls.

        **Tomas:** How is the kitten settling in?

        **Ines:** Miso is a menace. My kitten knocked a glazed bowl off the shelf on Sunday.
        """,
    "talk/2023-06-02.md": """
        ---
        title: "Conversation 2023-06-02"
        ---

        **Tomas:** My brother Rui is getting married in Porto in September.

        **Ines:** Congratulations to him! I'm off to Lisbon in July for a pottery course.

        **Tomas:** Are you taking the train? I always take the night bus.

        **Ines:** The train, it's only three hours from Madrid.
        """,
}


def speaker_gap_of(question: str, text: str) -> tuple[float, str | None, str | None, set[str]]:
    hit = SimpleNamespace(title="Conversation", heading_path=[], text=text)
    terms = query_terms(question)
    return speaker_gap(question, [hit], terms, {t: 1.0 for t in terms},
                       {t: term_pattern(t) for t in terms})


def test_a_turn_is_read_in_every_common_form() -> None:
    text = ("**Ines:** one.\n\n**Tomas**: two.\n\nInes: three.\n- Tomas: four.\n"
            "[2023-05-08 10:32] Ines: five.\n10:33 PM - Tomas: six.\n> **Ines:** seven.\n"
            "**Tomas** (8 May 2023, 10:35): eight.\n")
    assert [who for who, _ in turns(text)] == ["Ines", "Tomas", "Ines", "Tomas", "Ines", "Tomas",
                                               "Ines", "Tomas"]
    assert [said.strip() for _, said in turns(text)] == ["one.", "two.", "three.", "four.",
                                                         "five.", "six.", "seven.", "eight."]
    assert turns("No speakers here: just a colon.") == [(None, "No speakers here: just a colon.")]
    # A dialogue id, a numbered line, a bracket after the name, "said".
    more = ("D1:3 Ines: one.\n2. Tomas: two.\n**Ines** [D1:5]: three.\n**[D1:6] Tomas:** four.\n"
            "Ines said: five.\n")
    assert [(who, said.strip()) for who, said in turns(more)] == [
        ("Ines", "one."), ("Tomas", "two."), ("Ines", "three."), ("Tomas", "four."), ("Ines", "five.")]
    # A phone's chat export: the date and the time before the name, either order of day
    # and month, a 12-hour clock, square brackets.
    phone = ("20/01/2025, 10:05 - Ines: one.\n1/20/25, 7:04 PM - Tomas: two.\n"
             "[20/01/2025, 10:06:11] Ines: three.\n")
    assert [(who, said.strip()) for who, said in turns(phone)] == [
        ("Ines", "one."), ("Tomas", "two."), ("Ines", "three.")]
    # A transcript rendered as prose ('Ines said, "..."'), and a bracketed name.
    prose = 'Ines said, "six."\nTomas says, \u201cseven.\u201d\n[Ines]: eight.\n'
    assert [(who, said.strip()) for who, said in turns(prose)] == [
        ("Ines", '"six."'), ("Tomas", "\u201cseven.\u201d"), ("Ines", "eight.")]
    # "said," without a quote is prose, and a reference-style link definition no turn.
    assert turns("Jonas said, in passing, that he likes Berlin.")[0][0] is None
    assert turns("[Zotero]: https://www.zotero.org\n[Anki]: <https://apps.ankiweb.net>\n")[0][0] is None


def test_a_chat_servers_handles_are_speakers_after_a_bracketed_time() -> None:
    """A chat server's export labels each line with a time and a user's handle in small
    letters; after a bare clock a small word is a plan's line, not a speaker."""
    server = ("**[2025-05-14 18:02] ramekin:** one.\n[2025-05-14 18:05] **kestrel_dev**: two.\n"
              "[18:40] mo.h: three.\n")
    assert [(who, said.strip()) for who, said in turns(server)] == [
        ("ramekin", "one."), ("kestrel_dev", "two."), ("mo.h", "three.")]
    assert turns("09:00 gym: legs and core.\n")[0][0] is None
    assert turns("[note] todo: call the bank.\n")[0][0] is None
    # One line each from many people is still a conversation when the labels carry a clock;
    # a note's "Tip:" and "Note:" are not.
    assert [t and t[0] for t in sentence_turns(sentences(server))] == ["ramekin", "kestrel_dev", "mo.h"]
    assert sentence_turns(sentences("Tip: use a tray.\nNote: it gets hot.\n")) == [None, None]


def test_a_question_naming_a_handle_is_about_that_speaker() -> None:
    """"How long did the migration take on jgrebe's library?" is not answered by another
    user's "the migration took 12 minutes for my library"; nor does another user's count
    answer "How many photos are in sundog42's library?"."""
    chat = ("**[2025-05-14 18:02] ramekin:** the migration took 12 minutes for my library.\n"
            "**[2025-05-14 18:05] kestrel_dev:** thanks, good to know.\n"
            "**[2025-05-14 18:40] jgrebe:** upgraded too, all fine.\n")
    hit = SimpleNamespace(title="help", heading_path=[], text=chat)
    terms = ["migration", "take", "library"]
    idf = {t: 1.0 for t in terms}
    patterns = {t: term_pattern(t) for t in terms}
    question = "How long did the migration take on jgrebe's library?"
    assert typed_gap(question, [hit], terms, idf, patterns)[1] > 0.0
    question = "How long did the migration take on ramekin's library?"
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0
    talk = ("[10:00] mo.h: my library has 35k photos now.\n[10:01] sundog42: nice, which disk?\n"
            "[10:02] mo.h: a 4 TB one, my photos take most of it.\n[10:03] sundog42: ok thanks\n")
    gap, person, said_by, _ = speaker_gap_of("How many photos are in sundog42's library?", talk)
    assert (person, said_by) == ("sundog42", "mo.h") and gap > 0.0


def test_in_a_group_a_speakers_terse_news_is_their_own() -> None:
    """"results are out!!! 66% average for second year" is Tom's news though it drops the
    "I"; Sophie's "my Year 4 lot did well overall" is hers. Between two people a plain
    statement stays nobody's: the listener echoes the teller."""
    group = ("08/07/2025, 10:05 - Tom: results are out!!! 66% average for second year\n"
             "08/07/2025, 10:07 - Sophie: I had my Year 4 reports back, they did well overall this year\n"
             "08/07/2025, 10:09 - Mum: so proud of you both\n"
             "08/07/2025, 10:12 - Tom: cheers\n08/07/2025, 10:13 - Sophie: x\n"
             "08/07/2025, 10:15 - Mum: dinner sunday?\n")
    question = "How did Tom do in his second year overall?"
    assert speaker_gap_of(question, group)[0] == 0.0
    pair = "\n".join(line for line in group.splitlines() if "Mum:" not in line)
    gap, person, said_by, _ = speaker_gap_of(question, pair)
    assert (person, said_by) == ("Tom", "Sophie") and gap > 0.0


def test_what_the_other_speaker_said_of_themselves_is_no_answer() -> None:
    """The same words said by Tomas of Tomas do not answer a question about Ines."""
    text = "\n\n".join(textwrap.dedent(FRIENDS["talk/2023-05-08.md"]).split("\n\n")[1:])
    gap, person, said_by, said = speaker_gap_of("What did Ines realise after her charity 10K?", text)
    assert (person, said_by) == ("Ines", "Tomas") and gap == 1.0
    assert said == {"realise", "charity", "10k"}
    assert speaker_gap_of("Ines's charity 10K: what did she realise?", text)[1:3] == ("Ines", "Tomas")
    # Said by Tomas of himself, asked of Tomas: an answer.
    assert speaker_gap_of("What did Tomas realise after his charity 10K?", text)[0] == 0.0
    # Said *to* Ines ("how was your ..."), or naming her, counts for Ines.
    told = text + "\n\n**Tomas:** Your pottery bowls from Saturday looked great, by the way."
    assert speaker_gap_of("What did Ines make at the pottery studio?", told)[0] == 0.0
    # In a group, "you" may be anyone: Ana's words to "you" are nobody's.
    group = ("**Ines:** I want to try pottery.\n\n**Tomas:** I ran the charity 10K and realised"
             " I love crowds.\n\n**Ana:** Did you realise that after the charity 10K, Ines?\n\n"
             "**Ines:** Not me.\n\n**Tomas:** Ha.\n\n"
             "**Ana:** You should run the charity 10K next year.\n")
    assert speaker_gap_of("What did Ines realise after the charity 10K?", group)[0] == 0.0
    assert speaker_gap_of("What did Ines realise after the charity 10K?",
                          group.replace(", Ines?", "?"))[0] > 0.0
    # Nobody named, both named, or the asker's own log: nothing to tell apart.
    assert speaker_gap_of("Who ran the charity 10K?", text)[0] == 0.0
    assert speaker_gap_of("What did Ines and Tomas do on Saturday?", text)[0] == 0.0
    assert speaker_gap_of("What did I realise after the charity 10K?", text)[0] == 0.0
    # A name that calls someone ("Tomas, guess what", "Thanks, Ines!") is not about them.
    called = ("**Ines:** Tomas, guess what: I adopted the dog!\n\n**Tomas:** Congratulations, Ines!"
              "\n\n**Ines:** Thanks, Tomas.\n\n**Tomas:** Ha.\n")
    assert speaker_gap_of("Why did Tomas adopt the dog?", called)[0] == 1.0
    assert speaker_gap_of("Why did Tomas adopt the dog?",
                          called.replace("Tomas, guess what", "Tomas and I"))[0] == 0.0
    # "Tell me everything about the kitten" asks for the other's news: its "me" is no
    # teller, so Tomas's request is not his kitten, and Ines's "I named him" is hers. An
    # object "me" in a statement is: "Northgate wants me" is Tomas's news.
    kitten = ("**Tomas:** I saw your photo. Tell me everything about the kitten.\n\n"
              "**Ines:** I adopted him on Saturday. I named him Pistachio.\n\n"
              "**Tomas:** Pistachio!\n\n**Ines:** Yes.\n")
    assert speaker_gap_of("What did Ines name her kitten?", kitten)[0] == 0.0
    gap, person, said_by, _ = speaker_gap_of("What did Tomas name his kitten?", kitten)
    assert (person, said_by) == ("Tomas", "Ines") and gap > 0.0
    # The noun the answer stands for is not asked of anyone: Tomas's "a very patient cat"
    # answers "What pet does Tomas have?", and Ines's "my flat allows pets" is no pet of hers.
    pets = ("**Ines:** My new flat finally allows pets.\n\n**Tomas:** We have three kids now, "
            "and a very patient cat.\n\n**Ines:** Ha.\n\n**Tomas:** Yes.\n")
    assert wh_noun("What pet does Tomas have?") == "pet" and wh_noun("What did Tomas do?") is None
    assert speaker_gap_of("What pet does Tomas have?", pets)[0] == 0.0
    # "A refurbished Gaggia espresso machine. I paid $180 for it.": the "it" makes the
    # machine Tomas's, so Ines's espresso machine is nowhere in what is said of her.
    gaggia = ("**Ines:** What did you end up buying?\n\n**Tomas:** A refurbished Gaggia espresso "
              "machine. I paid $180 for it.\n\n**Ines:** Nice.\n\n**Tomas:** It is.\n")
    gap, person, said_by, said = speaker_gap_of(
        "How much did Ines pay for her refurbished espresso machine?", gaggia)
    assert (person, said_by) == ("Ines", "Tomas") and "espresso" in said and gap > 0.5
    assert speaker_gap_of("How much did Tomas pay for his refurbished espresso machine?", gaggia)[0] == 0.0
    clinic = ("**Tomas:** Northgate Sports Clinic wants me as a physiotherapist.\n\n"
              "**Ines:** Wow.\n\n**Tomas:** Yes.\n\n**Ines:** Ha.\n")
    gap, person, said_by, _ = speaker_gap_of("When did Ines start at Northgate Sports Clinic?", clinic)
    assert (person, said_by) == ("Ines", "Tomas") and gap > 0.0
    # A sentence with both persons gives each asked word to the nearest of them before it:
    # Ines's "a photo of you hanging off a rock" is Tomas's rock, not hers, and Tomas's "I
    # loved your mug" is Ines's mug. "I told you about the kitten" keeps the kitten the
    # teller's: "you" there is only the one told.
    rock = ("**Ines:** I saw the photo of you hanging off a rock!\n\n**Tomas:** I love climbing"
            " on real rock.\n\n**Ines:** Wow.\n\n**Tomas:** I loved your mug, by the way.\n")
    assert speaker_gap_of("Where did Tomas climb the rock?", rock)[0] == 0.0
    gap, person, said_by, said = speaker_gap_of("Where did Ines climb the rock?", rock)
    assert (person, said_by) == ("Ines", "Tomas") and said == {"climb", "rock"} and gap == 1.0
    assert speaker_gap_of("Who made the mug for Ines?", rock)[0] == 0.0
    told = ("**Tomas:** I told you about the kitten I adopted.\n\n**Ines:** You did.\n\n"
            "**Tomas:** Yes.\n\n**Ines:** Ha.\n")
    gap, person, said_by, _ = speaker_gap_of("When did Ines adopt the kitten?", told)
    assert (person, said_by) == ("Ines", "Tomas") and gap > 0.0
    # A single "Note:" line in a document is not a conversation.
    assert speaker_gap_of("What did Ines realise after her 10K?",
                          "Note: Tomas ran a 10K and realised he loves crowds.")[0] == 0.0


JOURNAL = {
    "journal/monday.md": """
        ---
        date: 2024-03-11
        ---

        # Camera shop

        Bought the Fuji X100V at the camera shop on the corner. Rain all afternoon.
        """,
    "journal/2024-03-12.md": """
        # Selling gear

        Sold my old Canon to a neighbour who shoots birds.
        """,
    "gear/wish-list.md": """
        # Wish list

        The Leica Q2 is still on my wish list, next to a carbon tripod.
        """,
    # A journal day named as Logseq names them, with a heading of its own: only the file
    # name, written with underscores, dates it.
    "journals/2024_03_15.md": """
        # Repairs

        - Had the Ricoh GR III repaired at the camera shop, shutter fixed.
        """,
}


def test_a_note_dated_by_front_matter_or_file_name_dates_what_it_tells(make_kb: Any) -> None:
    """"When did I buy the Fuji?" is answered by a journal day dated only in its front matter
    or its file name, as by a date in its title; an undated note names no date."""
    kb = make_kb({**COFFEE, **JOURNAL}, name="journal")
    kb.sync()
    bought, _ = support_of(kb, "When did I buy the Fuji X100V?")
    sold, _ = support_of(kb, "When did I sell my old Canon?")
    wished, _ = support_of(kb, "When did I buy the Leica Q2?")
    repaired, _ = support_of(kb, "When did I have the Ricoh GR III repaired?")
    assert bought.expects == sold.expects == wished.expects == repaired.expects == DATE
    assert bought.typed_gap == 0.0 and sold.typed_gap == 0.0 and repaired.typed_gap == 0.0
    assert wished.typed_gap > 0.0


def as_prose(talk: dict[str, str]) -> dict[str, str]:
    """The same conversations as a prose transcript: 'Ines said, "..."'."""
    turn = re.compile(r"\*\*(\w+):\*\* (.*?)(?=\n\s*\n|\s*\Z)", re.DOTALL)
    return {path: turn.sub(r'\1 said, "\2"', text) for path, text in talk.items()}


@pytest.mark.parametrize("rendering", ["labels", "prose"])
def test_a_fact_of_the_other_friend_abstains_and_says_whose_it_is(make_kb: Any, rendering: str) -> None:
    talk = FRIENDS if rendering == "labels" else as_prose(FRIENDS)
    assert ('Tomas said, "I did!' in talk["talk/2023-05-08.md"]) == (rendering == "prose")
    kb = make_kb({**COFFEE, **talk}, name=f"friends-{rendering}")
    kb.sync()
    swapped = kb.search("What did Ines realise after her charity 10K?")
    own = kb.search("What did Tomas realise after his charity 10K?")
    assert swapped.hits[0].path == own.hits[0].path == "talk/2023-05-08.md"
    assert swapped.confidence is not None and own.confidence is not None
    assert swapped.abstained and not own.abstained
    assert swapped.reason == ("found '10K', 'charity' and 'realise' in what Tomas said, "
                              "nothing of it about Ines")
    support, x = support_of(kb, "What did Ines realise after her charity 10K?")
    assert x[FEATURES.index("other_speaker")] == 1.0 and support.said_by == "Tomas"
    assert support_of(kb, "What did Tomas realise after his charity 10K?")[1][
        FEATURES.index("other_speaker")] == 0.0


STAND_UP = """
    # Decision: drop the Friday stand-up

    {properties}

    ## Context

    Since 2021 we have met twice a week: the weekly sync on Monday and a short stand-up on
    Friday at 9:15. As the team is small, the Friday stand-up mostly repeated Monday.

    ## Decision

    We stop the Friday stand-up. Instead, everyone posts a short check-in in the studio
    channel on Friday before 11:00: what you finished and what is blocking you.
    """


@pytest.mark.parametrize("form", ["notion", "yaml"])
def test_a_notes_properties_answer_what_its_text_leaves_out(make_kb: Any, form: str) -> None:
    """"Who decided ...?" is answered by the note's property "Decided by: Lotte", written as a
    Notion export writes it (under the title) or as YAML front matter (in no chunk's text);
    a property that holds none of the asked words answers nothing."""
    props = "Created: May 21, 2024 11:05 AM\nDecided by: Lotte Vanhaecke\nReview: in 6 weeks"
    if form == "notion":
        files = {"decisions/Decision drop the Friday stand-up c21e8925ea70a9aac49e67a8abe7ad0c.md":
                 STAND_UP.replace("{properties}", textwrap.indent(props, " " * 4).lstrip())}
    else:
        yaml = "---\ndecided by: Lotte Vanhaecke\nreview: in 6 weeks\n---\n"
        files = {"decisions/drop-the-friday-stand-up.md":
                 yaml + textwrap.dedent(STAND_UP.replace("{properties}", "")).lstrip("\n")}
    kb = make_kb({**COFFEE, **files}, name=f"stand-up-{form}")
    kb.sync()
    decided, x = support_of(kb, "Who decided to drop the Friday stand-up?")
    assert decided.expects == NAME and x[FEATURES.index("typed_missing")] == 0.0
    # Read one by one, as the note's properties: not from the first chunk's text (Notion),
    # and YAML front matter is in no chunk's text.
    assert decided.answer_at == "decided by: Lotte Vanhaecke"
    result = kb.search("Who decided to drop the Friday stand-up?")
    assert result.confidence is not None and not result.abstained
    # The notes count nobody at the stand-up: "review: in 6 weeks" holds a number near the
    # title's words, but none of the asked ones, so it answers nothing.
    counted, x = support_of(kb, "How many people came to the last Friday stand-up?")
    assert counted.expects == QUANTITY and counted.typed_gap > 0.0 and counted.answer_at is None


def test_a_property_answers_only_where_it_holds_an_asked_word() -> None:
    """The title's words count for each property line, as for each sentence; alone they would
    let any number among the properties answer whatever is asked about the note."""
    query = "How many minutes did the Friday stand-up last?"
    hit = SimpleNamespace(title="Friday stand-up", heading_path=(), path="stand-up.md",
                          text="We stopped the Friday stand-up. Everyone posts a check-in instead.")
    terms = content_terms(query)
    patterns = {t: term_pattern(t) for t in terms}
    idf = dict.fromkeys(terms, 1.0)

    def read(*props: str) -> tuple[float, str | None]:
        front = dict(p.split(": ", 1) for p in props)
        expected, gap, _, answer_at = typed_gap(query, [hit], terms, idf, patterns,
                                                props=lambda h: front)
        assert expected.kind == QUANTITY
        return gap, answer_at

    assert read("duration: 15 minutes") == (0.0, "duration: 15 minutes")
    gap, answer_at = read("lunch break: 30 min")
    assert gap > 0.0 and answer_at is None
    assert read() == read("lunch break: 30 min")


def test_a_day_named_in_numbers_is_found_by_its_months_name(make_kb: Any) -> None:
    """A meeting note titled "Weekly sync 2024-05-13" holds the "May" of "the 13 May sync"."""
    assert spelled_days("Weekly sync 2024-05-13").endswith("13 May 2024")
    assert spelled_days("Journal 2023_01_01") == "Journal 2023_01_01\n1 January 2023"
    for text in ("v1.2024.05.13", "2024-13-01", "2024-05"):
        assert spelled_days(text) == text
    kb = make_kb({**COFFEE, "meetings/weekly-sync-13.md": """
        # Weekly sync 2024-05-13

        All three quotes for the tea tin sleeves are in. We go with Lindeboom: they are close
        to the studio and can do a press check.
        """}, name="weekly-sync")
    kb.sync()
    support, _ = support_of(kb, "Which printer did we choose at the 13 May sync?")
    assert "May" not in support.unsupported and "choose" in support.unsupported


def test_a_pages_property_lines_are_read_one_by_one_not_as_its_text() -> None:
    """The page's property lines leave its text's sentences (the reader reads each on its own,
    tags not at all: what a note is filed under names no answer), as does a Logseq block's
    bookkeeping; a block's own property stays a fact of its text."""
    front = {"type": "trip", "tags": ["travel", "Maya Lindqvist"], "status": "planning"}
    assert property_lines(front) == ["type: trip", "status: planning"]
    page = property_lines(front, every=True)
    assert "tags: travel, Maya Lindqvist" in page
    text = ("- type:: trip\n  tags:: [[travel]], [[Maya Lindqvist]]\n  status:: planning\n"
            "- dates: 19–23 September\n  collapsed:: true\n  - phone:: +47 412 55 010\n")
    assert _without_properties(text, page) == "- dates: 19–23 September\n  - phone:: +47 412 55 010\n"
    notion = "Created: May 21, 2024\nDecided by: Lotte Vanhaecke\n\nWe stop the stand-up."
    assert _without_properties(notion, ["created: May 21, 2024", "decided by: Lotte Vanhaecke"]) \
        == "\nWe stop the stand-up."
    assert _without_properties(notion, []) == notion  # no properties: every line is text


def test_an_outliners_task_state_is_no_name() -> None:
    assert not holds_typed(NAME, "TODO book the hotel", frozenset())
    assert not holds_typed(NAME, "DONE pack the bags", frozenset())
    assert holds_typed(NAME, "TODO call Maya about the flat", frozenset())
    assert holds_typed(NAME, "the NASA archive", frozenset())


def test_a_release_to_come_asks_a_date_and_the_asked_version_is_none() -> None:
    """"When is tern 3.0 going to be released?" asks a date; "Work on 3.0 has begun." holds
    only the version the question names. "When is the shop open?" or "when does such a test
    pass?" ask an hour or a condition, not checked."""
    for q in ("When is tern 3.0 going to be released?", "When will the mobile app launch?",
              "When does the next version ship?"):
        assert answer_type(q) == Expected(DATE, undated=True), q
    for q in ("When is Velo Fix open on Saturdays?", "When does such a test pass?",
              "When do init() functions run in a Go program?"):
        assert answer_type(q) == UNCHECKED, q
    asked = frozenset({"tern", "3.0", "released"})
    assert not holds_typed(DATE, "Work on 3.0 has begun.", asked)
    assert holds_typed(DATE, "Work on 3.0 began after 2.4 shipped.", asked)
    assert holds_typed(DATE, "Work on 3.0 has begun.", frozenset())


def test_a_quantity_per_unit_of_time_is_answered_by_a_rate() -> None:
    """"How many kilometres do I run per week?" against "Long run: 28 km": one run's, not a
    week's. A rate per that unit answers, in any of its forms; a rate per another does not."""
    weekly = answer_type("How many kilometres do I run per week?")
    assert weekly.kind == QUANTITY and weekly.per == "week"
    assert not holds_typed(weekly, "Long run: 28 km along the Vecht, 2:41.", frozenset())
    for text in ("About 40 km a week now.", "Weekly volume: 35 km.", "I run 35 km/week."):
        assert holds_typed(weekly, text, frozenset()), text
    monthly = answer_type("How much do we pay for Dropbox each month?")
    assert monthly.money and monthly.per == "month"
    assert holds_typed(monthly, "Dropbox Business costs €15 per user per month.", frozenset())
    assert holds_typed(monthly, "Dropbox: €12/mo.", frozenset())
    assert not holds_typed(monthly, "We paid €144 a year for Dropbox.", frozenset())
    assert answer_type("How many people came to the party?").per == ""


def test_a_part_of_a_persons_name_is_the_name_written_next_to_theirs(make_kb: Any) -> None:
    """"What is Maya's surname?" against a note that calls her Maya and names her employer:
    only a name right after hers answers ("Maya Lindqvist"), or her note's title."""
    surname = answer_type("What is Maya's surname?")
    assert surname.kind == NAME and surname.beside == ("maya", "after")
    assert answer_type("What's Mr. Okafor's first name?").beside == ("okafor", "before")
    assert answer_type("What is Maya's full name?").beside == ("maya", "either")
    assert answer_type("What is my dentist's name?").beside == ("", "")
    asked = frozenset({"maya", "surname"})
    assert not holds_typed(surname, "She works as a landscape architect at Buro Groen.", asked)
    assert holds_typed(surname, "Climbing with Maya Lindqvist on Thursdays.", asked)
    first = answer_type("What's Mr. Okafor's first name?")
    assert not holds_typed(first, "Mr Okafor fixed the boiler.", frozenset({"okafor"}))
    assert holds_typed(first, "Daniel Okafor fixed the boiler.", frozenset({"okafor"}))
    note = "# {title}\n\nWorks as a landscape architect at Buro Groen in Utrecht. We climb on Thursdays.\n"
    for title, answered in (("Maya", False), ("Maya Lindqvist", True)):
        kb = make_kb({**COFFEE, f"people/{title}.md": note.format(title=title)}, name=f"maya-{answered}")
        kb.sync()
        support, x = support_of(kb, "What is Maya's surname?")
        assert (x[FEATURES.index("typed_missing")] == 0.0) == answered, title


@pytest.mark.parametrize("form", ["folder", "title", "type", "none"])
def test_a_note_that_is_the_asked_kind_answers_with_its_own_name(make_kb: Any, form: str) -> None:
    """"Which client's invoices have to quote the reference KH-2024-07?" against a client's
    note that says "Every invoice quotes the tender reference KH-2024-07.": the note is a
    client (its folder, its title or its type says so), and its name is the answer."""
    body = ("A city museum about life along the canals.\n\n## Invoicing\n\n"
            "Every invoice quotes the tender reference KH-2024-07. Payment within 30 days.\n")
    path, text = {
        "folder": ("Clients/Museum Kanaalhuis.md", "# Museum Kanaalhuis\n\n" + body),
        "title": ("crm/kanaalhuis.md", "# Client: Museum Kanaalhuis\n\n" + body),
        "type": ("crm/kanaalhuis.md", "---\ntype: client\n---\n# Museum Kanaalhuis\n\n" + body),
        "none": ("crm/kanaalhuis.md", "# Museum Kanaalhuis\n\n" + body),
    }[form]
    kb = make_kb({**COFFEE, path: text}, name=f"client-{form}")
    kb.sync()
    support, x = support_of(kb, "Which client's invoices have to quote the reference KH-2024-07?")
    assert support.expects == NAME
    assert (x[FEATURES.index("typed_missing")] == 0.0) == (form != "none"), form


def test_a_thing_spoken_of_as_a_thing_is_not_named() -> None:
    """"Which intern did we hire?" against "Lotte wants an intern": the sentence says such a
    thing is wanted, and its name is the one who wants it; a name tied to the noun answers."""
    assert _unnamed_instance("Lotte wants an intern from September to January.", "intern")
    assert _unnamed_instance("Two nights at Maya's, then two nights in a cheap hotel in town.", "hotel")
    assert not _unnamed_instance("We hired Ana Ruiz as an intern.", "intern")
    assert not _unnamed_instance("We stay at Scandic, a hotel by the harbour.", "hotel")
    assert not _unnamed_instance("Booked a hotel called Scandic Ishavshotel.", "hotel")
    assert not _unnamed_instance("Run a formatting tool like tidy first.", "tool")
    assert not _unnamed_instance("Pick an editor such as Neovim.", "editor")
    assert not _unnamed_instance("Booked the Scandic hotel for two nights.", "hotel")
    assert not _unnamed_instance("Lotte met the intern, and an intern from Ghent.", "intern")
    assert not _unnamed_instance("Lotte wants to grow the team.", "intern")  # no intern at all
    assert wh_noun("Which hotel am I staying at in Tromsø?") == "hotel"
    # A heading's or a quote's marker opens its line as a stop does: "Hiring" is no name.
    assert not holds_typed(NAME, "## Hiring: an intern for the autumn", frozenset())
    assert not holds_typed(NAME, "> Posted on the job boards", frozenset())
    assert holds_typed(NAME, "## Hiring with Lotte", frozenset())


def assert_told_only_with(make_kb: Any, notes: dict[str, str], question: str, old: str, new: str,
                          kind: str, answer: str, gap_above: float = 0.0) -> None:
    """Two KBs: the notes as written and with ``old`` replaced by ``new`` (the fact they
    lacked, now told). In the first ``question`` expects ``kind`` and finds no token of it
    (its typed gap above ``gap_above``); in the second the reader takes ``answer``."""
    missing, x = support_in(make_kb, notes, question, "told-0")
    told, x2 = support_in(make_kb, {p: t.replace(old, new) for p, t in notes.items()}, question, "told-1")
    assert missing.expects == kind and missing.answer_at is None
    assert x[FEATURES.index("typed_missing")] > gap_above
    assert x2[FEATURES.index("typed_missing")] == 0.0 and answer in (told.answer_at or "")


INTERN_NOTES = {
    "meetings/2024-05-06.md": """
        # Weekly sync 2024-05-06

        ## Hiring

        Lotte wants an intern for the autumn, three days a week, mainly for production
        work on Paper Rivers. She posts the ad on the job boards of the design schools.
        """,
}


def test_which_thing_is_not_answered_where_the_thing_is_only_wanted(make_kb: Any) -> None:
    """"Which intern did we hire for the autumn?" abstains while the notes only want one, and
    is answered once they name her; "the contact nurse changes them on Mondays" names no one."""
    assert_told_only_with(make_kb, INTERN_NOTES, "Which intern did we hire for the autumn?",
                          "design schools.", "design schools. We hired Ana Ruiz as an intern.",
                          NAME, "Ana Ruiz")
    assert not holds_typed(NAME, "the contact nurse changes them on Mondays", frozenset())
    assert holds_typed(NAME, "the contact nurse, Eva, changes them on Mondays", frozenset())


GARAGE_NOTES = {
    "chat/2024-09-14.md": """
        # Trip to the lodge

        [13:30] Tobias: the car broke down outside Meppel, it is being towed to a garage in
        Zwolle now.
        [13:42] Sanne: oh no! we'll wait for you at the lodge with dinner.
        [18:05] Tobias: made it by taxi, the insurance pays for that at least.
        """,
}


def test_the_name_of_a_thing_is_not_answered_where_the_thing_is_only_placed(make_kb: Any) -> None:
    """"What is the name of the garage that fixed Tobias's car?" asks for a garage's name, as
    "Which garage ...?" does: "towed to a garage in Zwolle" says there is one, and Zwolle is
    where it is. Once a line names it, the name answers."""
    assert_told_only_with(make_kb, GARAGE_NOTES, "What is the name of the garage that fixed Tobias's car?",
                          "the insurance pays for that at least.",
                          "the insurance pays for that at least.\n        [18:07] Tobias: Autohaus Brink "
                          "fixed the car by Monday.", NAME, "Autohaus Brink")


def test_a_thing_described_in_one_note_is_answered_in_another_that_names_it() -> None:
    """"Who teaches the child who played a Petzold minuet?": the recital's note names the
    child (Noor), the note on her lessons names her teacher. The two answer together when
    they name the same child; Noor herself is no answer, and a note on some other child's
    teacher is none either."""
    question = "Who teaches the child who played a Petzold minuet?"
    terms = ["teaches", "child", "played", "petzold", "minuet"]
    patterns = {t: term_pattern(t) for t in terms}
    idf = {t: 1.0 for t in terms}
    recital = SimpleNamespace(title="Session 8", heading_path=[], path="session-08.md", text=(
        "**User:** Noor had her first piano recital last night. She played a minuet by Petzold "
        "and didn't miss a note."))
    lessons = SimpleNamespace(title="Session 1", heading_path=[], path="session-01.md", text=(
        "**User:** My daughter Noor starts piano lessons next week. Her teacher is Mrs. "
        "Halvorsen, who lives two streets over."))
    _, gap, _, answer_at = typed_gap(question, [recital, lessons], terms, idf, patterns)
    assert gap == 0.0 and "Halvorsen" in (answer_at or "")
    lessons.text = "**User:** My daughter Noor starts piano lessons next week. She is nervous."
    assert typed_gap(question, [recital, lessons], terms, idf, patterns)[1] > 0.2
    lessons.text = ("**User:** My nephew Elias starts piano lessons next week. His teacher is "
                    "Mrs. Halvorsen.")
    assert typed_gap(question, [recital, lessons], terms, idf, patterns)[1] > 0.2
    # Without a clause that describes the child, no other note is read for it.
    assert not _RELATIVE.search("Who teaches Noor piano?")


def test_a_sentence_about_someone_elses_kin_does_not_answer_for_the_asker() -> None:
    """"Which hotel am I staying at in Tromsø?" against "her partner Elias stays in Göteborg":
    the sentence is told of Maya's partner, so its names are no answer about the asker."""
    question = "Which hotel am I staying at in Tromsø?"
    terms = ["hotel", "stay", "tromsø"]
    patterns = {t: term_pattern(t) for t in terms}
    hit = SimpleNamespace(title="Tromsø trip", heading_path=[], path="pages/Tromsø trip.md",
                          text="- her partner Elias stays in Göteborg until his contract ends")
    assert typed_gap(question, [hit], terms, {t: 1.0 for t in terms}, patterns)[1] > 0.3
    hit.text = "- I stay at Scandic Ishavshotel, two nights"
    assert typed_gap(question, [hit], terms, {t: 1.0 for t in terms}, patterns)[1] == 0.0
    hit.text = "- her partner Elias had us stay at Scandic Ishavshotel"  # "us": the writer too
    assert typed_gap(question, [hit], terms, {t: 1.0 for t in terms}, patterns)[1] == 0.0
    # A question about somebody else is read as before.
    other = "Where does Maya's partner stay?"
    hit.text = "- her partner Elias stays in Göteborg until his contract ends"
    assert typed_gap(other, [hit], ["partner", "stay"], {"partner": 1.0, "stay": 1.0},
                     {t: term_pattern(t) for t in ("partner", "stay")})[1] == 0.0


def test_an_address_is_answered_by_a_street_not_by_any_place() -> None:
    """"What is Maya's new address?" wants a street address; "got the job at Ishavsfysio"
    names a place, not where she lives. An email address wants an "@"."""
    street = answer_type("What is Maya's new address in Tromsø?")
    assert street.kind == PLACE and street.address == "street"
    assert street.what == "street address"
    assert not holds_typed(street, "got the job at Ishavsfysio (sports physio clinic)", frozenset())
    for text in ("she moved to Storgata 14, 9008 Tromsø", "lives at 12 Elm Street now",
                 "new flat on Skippergata", "Brouwerskaai 12, Gent", "8 rue de Rivoli",
                 "10 Downing St", "post goes to SW1A 2AA"):
        assert holds_typed(street, text, frozenset()), text
    for text in ("Spring came early this year", "Tomas works at Northgate now", "the Arcade Fire gig"):
        assert not holds_typed(street, text, frozenset()), text
    assert holds_typed(street, "she moved to Kirkegate 5", frozenset())
    email = answer_type("What is Emre's email address?")
    assert email.address == "email"
    assert holds_typed(email, "write to emre@kwast.studio", frozenset())
    assert not holds_typed(email, "Emre lives at Brouwerskaai 12", frozenset())
    assert answer_type("What is the IP address of the NAS?").address == ""
    # A time clause ends the phrase: "after her move" is not what the address is of.
    assert answer_type("What is Maya's new address after her move?").address == "street"
    assert answer_type("What is my flight number after the rebooking?").identifier


TERN_CRYPTO = {
    "docs/encryption.md": """
        # Encryption

        On the first push to a new vault tern asks for a passphrase. It must be at least 12
        characters long; tern derives a key from your passphrase with Argon2id.
        """,
}


def test_the_measured_thing_must_be_in_the_notes(make_kb: Any) -> None:
    """"How long is the salt tern uses when it derives a key from my passphrase?" against a
    page that never says "salt": "at least 12 characters long" measures the passphrase. The
    number stands in for a missing verb, never for the thing measured."""
    assert measured("How long is the salt tern uses?") == "salt"
    assert measured("How old was my car when I sold it?") == "car"
    assert measured("How many days are left?") is None
    assert_told_only_with(
        make_kb, TERN_CRYPTO, "How long is the salt tern uses when it derives a key from my passphrase?",
        "with Argon2id.", "with Argon2id and a salt 16 bytes long.", QUANTITY, "16 bytes", gap_above=0.2)


TERN_RELEASES = {
    "guides/migrating.md": """
        # Migrating from tern 1.x

        tern 1.x gets security fixes until 2025-06-30. After that date no further 1.x
        releases are planned.
        """,
    "reference/faq.md": """
        # FAQ

        ## What about tern 3.0?

        Work on 3.0 has begun. It will drop reading of format 2 vaults.
        """,
}


def test_another_release_dates_nothing_of_the_asked_one(make_kb: Any) -> None:
    """"When is tern 3.0 going to be released?" against "tern 1.x gets security fixes until
    2025-06-30": that date is another release's. A sentence of the asked release (or one
    "1.x" covers) still answers, and a version of something else ("kernel 4.19") is no other
    release of tern."""
    asked = _releases("When is tern 3.0 going to be released?")
    assert asked == {"tern": ["3.0"]}
    assert _other_release("tern 1.x gets security fixes until 2025-06-30.", asked)
    for sent in ("tern 3.0.1 came out in May.", "It needs Linux kernel 4.19.", "Work on 3.0 has begun."):
        assert not _other_release(sent, asked), sent
    assert not _other_release("tern 1.5 came out in 2021.", _releases("When did tern 1.x ship?"))
    assert_told_only_with(make_kb, TERN_RELEASES, "When is tern 3.0 going to be released?",
                          "Work on 3.0 has begun.", "tern 3.0 is due on 2025-09-01.",
                          DATE, "2025-09-01", gap_above=0.2)


def test_an_identifier_is_no_time_amount_or_measure() -> None:
    """"What is my flight number to Tromsø?" against "leaves 07:10, lands 11:45" and "3 280 kr
    return (8 kg!)": times, an amount and a weight, none of them a flight's number."""
    flight = answer_type("What is my flight number to Tromsø?")
    assert flight.kind == QUANTITY and flight.identifier
    assert flight.what == "identifying number"  # as a reason and --explain name it
    assert answer_type("What is the vet's phone number?").identifier
    assert not answer_type("What is the total number of users?").identifier
    asked = frozenset({"flight", "number", "tromsø"})
    for text in ("out: SAS, Göteborg → Oslo → Tromsø, 19 Sept, leaves 07:10, lands 11:45",
                 "3 280 kr return, hand luggage only (8 kg!)", "booked in 2024", "it cost $40",
                 "a 40% discount", "the ride takes 50 min"):
        assert not holds_typed(flight, text, asked), text
    for text in ("flight SK 4411, leaves 07:10", "seat 14C", "call +46 31 12 34 56"):
        assert holds_typed(flight, text, asked), text


def test_a_person_is_not_named_by_where_they_are(make_kb: Any) -> None:
    """"What is the name of my dentist?" against "Dentist check-up at Tandartspraktijk Oost":
    the name after "at" is the practice's, not the dentist's. A person named in the same
    sentence still answers, and a question about a thing is read as before. The reason
    names the missing name, not the word "name", which notes seldom write."""
    dentist = answer_type("What is the name of my dentist?")
    assert dentist.kind == NAME and dentist.person
    assert answer_type("Who is our contact at PrintHaus Keller?").person
    cat = answer_type("What is the name of the cat?")
    assert cat.kind == NAME and not cat.person
    asked = frozenset({"name", "dentist"})
    for text in ("Dentist check-up at Tandartspraktijk Oost: no cavities.",
                 "Works as a landscape architect at Buro Groen in Utrecht."):
        assert not holds_typed(dentist, text, asked), text
        assert holds_typed(cat, text, asked), text
    assert holds_typed(dentist, "My dentist is Dr Ek at Tandartspraktijk Oost.", asked)
    support, _ = support_in(make_kb, {"journal/2024-11-09.md": """
        # 2024-11-09

        Dentist check-up at Tandartspraktijk Oost: no cavities. Next one in May.
        """}, "What is the name of my dentist?", "dentist")
    assert support.reason() == "found 'dentist', but no name near it"


def test_a_code_is_answered_by_an_identifier() -> None:
    """"What are the colour codes of Vireo's brand green?" against "a deep green and a warm
    cream": the colour is named, its codes are not. A door code, a colour's hex code or a
    print colour's number answers; a code the question does not qualify is not read."""
    colour = answer_type("What are the colour codes of Vireo's brand green?")
    assert colour.kind == QUANTITY and colour.identifier
    assert answer_type("What is the door code for the studio?").identifier
    assert answer_type("What code does the parser emit?").kind is None
    asked = frozenset({"colour", "codes", "vireo", "brand", "green"})
    assert not holds_typed(colour, "Their brand colours are a deep green and a warm cream.", asked)
    for text in ("brand green: #2F5D3A", "print it as Pantone 3435 C", "the door code is 4711"):
        assert holds_typed(colour, text, asked), text
    assert holds_typed(colour, "accent #0af", asked)
    assert not holds_typed(colour, "tagged #ace and #bad", asked)


FUCHSIA_SECTIONS = {
    **{p: t for p, t in BUILDS.items() if p != "builds/fuchsia.md"},
    "builds/fuchsia.md": """
        # Fuchsia integration

        ## Disk space

        A Fuchsia checkout is large: a checkout and build takes 46G of disk space, and the
        first build of the integration takes a while.

        ## Hosts

        Builders are Linux machines in the lab.

        ## Nightly tests

        The Fuchsia tests run every night and post their results to the channel.
        """,
}


def test_the_reader_sees_the_same_candidates_whatever_k_a_search_asks_for(make_kb: Any) -> None:
    """A missing name is looked for in the top notes' other hits among the first ten
    candidates, whether the search returns 3 hits (an agent's short search) or 50 (``pnk
    eval``, ``pnk search``): "Linux" in the Fuchsia note's "Hosts" section is found either
    way, so both read the question alike and report the same confidence."""
    kb = make_kb({**COFFEE, **FUCHSIA_SECTIONS}, name="builds-sections")
    kb.sync()
    linux = "How much disk space does a checkout and build of the Linux integration need?"
    long, short = kb.search(linux, k=50), kb.search(linux, k=3)
    ranked = [h.heading_path[-1] if h.heading_path else h.title for h in long.hits]
    assert "Hosts" in ranked[3:10], ranked  # past the top three, within the reader's window
    assert short.support == long.support and short.confidence == long.confidence
    assert "Linux" in (long.support or {})["unsupported"]


def test_with_no_token_of_the_kind_the_missing_words_count_in_full(make_kb: Any) -> None:
    """"What is Mira's new street address?" against a note of her new flat that names no
    street: no token answers, so "street" and "address", in no note, are the gap in full."""
    # Mira and Groningen are in many notes (their words weigh little); "street" and "address"
    # in none.
    days = {f"chat/day{i}.md": f"# Day {i}\n\nMira wrote from Groningen about the new {thing}.\n"
            for i, thing in enumerate(["rain", "archive", "bikes", "canals", "market", "choir"])}
    flat = {**days, "moves/mira.md": "# Mira's move\n\nMira moved to Groningen in May for the "
                                     "archive job. The new flat is on the third floor and has no lift.\n"}
    support, x = support_in(make_kb, flat, "What is Mira's new street address in Groningen?", "street")
    assert support.unsupported == ["street", "address"] and support.answer_at is None
    assert x[FEATURES.index("typed_missing")] == 1.0
    assert support.gap > 0.2
    # A note that gives the street answers, and the same words are no gap there.
    told = {**flat, "moves/mira.md": flat["moves/mira.md"] + "Her address is Oosterstraat 14, Groningen.\n"}
    answered, y = support_in(make_kb, told, "What is Mira's new street address in Groningen?", "street2")
    assert y[FEATURES.index("typed_missing")] == 0.0 and answered.gap < 0.1


def test_a_lower_case_sentence_after_a_stop_is_its_own() -> None:
    """In a chat a sentence may open in lower case: "we're in Groningen. the new flat is on
    the third floor." The flat is nobody's own in it; the "we" is the first sentence's."""
    chat = ("[07:10] Mira: moving day!! the van is booked until six\n"
            "[07:12] Tobias: leaving now, picking up Joris on the way\n"
            "[16:20] Tobias: we're in Groningen. the new flat is on the third floor.\n"
            "[16:22] Joris: my legs have left the group\n"
            "[18:55] Mira: van returned with five minutes to spare\n"
            "[19:00] Joris: pizza next time\n")
    assert speaker_gap_of("Which floor is Mira's new flat on?", chat)[0] == 0.0
    # Said as one sentence, the flat is what Tobias tells of his own.
    joined = chat.replace("Groningen. the new flat", "Groningen and our new flat")
    assert speaker_gap_of("Which floor is Mira's new flat on?", joined)[1:3] == ("Mira", "Tobias")


def test_a_lines_label_may_name_another_thing() -> None:
    """"- Tyres: 40 mm" gives the tyres' size, not the frame's; "- Frame: 56 cm" answers, and
    so does a measure's label ("Size: 56 cm"), or a label over a line that writes an asked word."""
    question = "What frame size is the gravel bike?"
    terms = content_terms(question)
    patterns = {t: term_pattern(t) for t in terms}
    idf = {t: 1.0 for t in terms}
    hit = SimpleNamespace(title="Bike: gravel", heading_path=["Bike: gravel"], text=(
        "Aluminium frame, carbon fork.\n- Tyres: 40 mm, tubeless.\n"))
    assert typed_gap(question, [hit], terms, idf, patterns)[1] > 0.0
    for line in ("- Frame: 56 cm.", "- Size: 56 cm.", "- Geometry: frame is 56 cm."):
        hit.text = f"Aluminium frame, carbon fork.\n{line}\n"
        assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0, line


def test_the_thing_a_measure_is_of_must_be_there(make_kb: Any) -> None:
    """"At what oven temperature ...?" measures the oven: a note giving only the kitchen's
    11 °C does not answer it. A qualifier ("daily rate", "default timeout") is no thing."""
    assert measured("At what oven temperature do I bake my sourdough loaf?") == "oven"
    assert measured("What was my poster number at the York forum?") == "poster"
    assert measured("What daily rate does the mechanic charge?") is None
    assert measured("What is the default timeout?") is None
    starter = {"bread/starter.md": "# Sourdough starter\n\nFed the starter at 9. Too cold really, "
                                   "11 °C in the kitchen, so the sourdough loaf rose slowly.\n"}
    near, x = support_in(make_kb, starter, "At what oven temperature do I bake my sourdough loaf?",
                         "oven")
    assert x[FEATURES.index("typed_missing")] > 0.3 and near.answer_at is None
    baked = {"bread/starter.md": starter["bread/starter.md"] + "Baked the sourdough loaf in the oven "
                                                               "at 250 °C.\n"}
    _, y = support_in(make_kb, baked, "At what oven temperature do I bake my sourdough loaf?", "oven2")
    assert y[FEATURES.index("typed_missing")] == 0.0


def test_one_end_of_a_span_does_not_answer_for_the_other() -> None:
    """"What time did I start work?" is not answered by "Finished 17:40.", nor "What time does the
    shop close?" by "It opens at 8:00."; a sentence that tells both ends still answers."""
    cases = [("What time did I start work on the soil day?", "Soil day at Kestrel. Finished 17:40.",
              "Soil day at Kestrel. Started at 7:15, finished 17:40."),
             ("What time does the bike shop close on Saturdays?", "The bike shop opens at 8:00 on Saturdays.",
              "The bike shop opens at 8:00 and closes at 16:00 on Saturdays.")]
    for question, other_end, both in cases:
        terms = content_terms(question)
        patterns = {t: term_pattern(t) for t in terms}
        idf = {t: 1.0 for t in terms}
        hit = SimpleNamespace(title="Log", heading_path=[], text=other_end)
        assert typed_gap(question, [hit], terms, idf, patterns)[1] > 0.0, other_end
        hit.text = both
        assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0, both


def test_another_speaker_telling_of_themselves_does_not_answer_for_one_asked_of() -> None:
    """"Where is Tomasz going for his holiday?" is not answered by Ayla's "I'm off in April,
    going to stay with my sister in Izmir"; a speaker who names him answers."""
    question = "Where is Tomasz going for his holiday?"
    terms = content_terms(question)
    patterns = {t: term_pattern(t) for t in terms}
    idf = {t: 1.0 for t in terms}
    chat = ("**Ayla** (09:30): Holiday reminder: I'm off 14 to 21 April, going to stay with my "
            "sister in Izmir.\n\n**Tomasz** (09:31): noted. I'm booking my own holiday for May.\n\n"
            "**Ayla** (09:32): good\n\n**Tomasz** (09:33): yes\n")
    hit = SimpleNamespace(title="2025-04-01", heading_path=[], text=chat)
    assert typed_gap(question, [hit], terms, idf, patterns)[1] > 0.0
    hit.text = chat.replace("good", "Tomasz is going to Porto for his holiday, lucky him")
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0


def test_another_name_before_the_asked_noun_is_another_things() -> None:
    """"the PostgreSQL server's version" is not "a Redis server, version 6.2 or newer"; "I
    pay" names no kind of thing."""
    question = "What's the minimum PostgreSQL server version the PostgreSQL broker needs?"
    terms = content_terms(question)
    patterns = {t: term_pattern(t) for t in terms}
    idf = {t: 1.0 for t in terms}
    hit = SimpleNamespace(title="Installation", heading_path=["Installation", "Broker servers"], text=(
        "For the default setup you need a Redis server, version 6.2 or newer. Brokers have their "
        "own pages."))
    assert typed_gap(question, [hit], terms, idf, patterns)[1] > 0.0
    hit.text = "The PostgreSQL broker needs a PostgreSQL server, version 13 or newer."
    assert typed_gap(question, [hit], terms, idf, patterns)[1] == 0.0
    assert _named_kinds("How much do I pay on the mortgage each month?") == (set(), set())


CHANGELOG = {
    "changelog.md": "# Changelog\n\n"
                    "## 2.3.1 (2025-03-18)\n\n"
                    "- Fixed a redirect loop when a WebDAV server answers 301 to PROPFIND.\n\n"
                    "## 1.9.4 (2023-11-30)\n\n"
                    "- Fixed the WebDAV redirect bug that dropped the password on login. "
                    "Reported by Jun Takeda.\n",
    "webdav.md": "# WebDAV vaults\n\nPoint the vault at the server's URL; redirects are followed "
                 "once, and only to the same host.\n",
}


def test_a_changelog_section_of_another_version_tells_of_that_one(make_kb: Any) -> None:
    """"Who reported the bug that 2.3.1 fixed?": the name under the heading "1.9.4" is that
    release's reporter, so nothing answers; asked of 1.9.4, the same name does."""
    kb = make_kb(CHANGELOG, name="changelog")
    kb.sync()
    support, _ = support_of(kb, "Who reported the WebDAV redirect bug that 2.3.1 fixed?")
    assert support.answer_at is None and support.typed_missing >= 0.5
    support, _ = support_of(kb, "Who reported the WebDAV redirect bug that 1.9.4 fixed?")
    assert "Jun Takeda" in (support.answer_at or "")


def test_a_bridge_question_is_read_in_five_hits_not_three(make_kb: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """"Who leads the team that owns the service ADR-003 moved off MongoDB?" (the team-wiki
    fixture): the ADR names the service, the team page (the fifth hit) names its owner and
    lead. Read in three hits, the lead is not found and the search abstains."""
    root = Path(__file__).resolve().parents[1] / "benchmarks" / "team-wiki" / "kb"
    kb = make_kb({str(p.relative_to(root)): p.read_text(encoding="utf-8")
                  for p in root.rglob("*.md")}, name="team-wiki")
    kb.sync()
    question = "Who leads the team that owns the service ADR-003 moved off MongoDB?"
    assert support_window(question) == 5 and support_window("Who leads the Insights team?") == 3
    result = kb.search(question)
    assert not result.abstained
    assert "people-and-teams/teams.md" in [h.path for h in result.hits[:5]]
    monkeypatch.setattr("pinakes.support.BRIDGE_HITS", 0)
    assert kb.search(question).abstained


def test_a_later_section_headed_by_the_asked_words_is_read_with_the_top_hits() -> None:
    """A page's opening section ranks first for "How long does a result backend keep a job's
    return value?"; its section headed "How long results are kept", sixth, is read too. A
    later section of another note, or one whose heading names one asked word, is not."""
    terms = ["result", "backend", "keep", "job", "return", "value"]
    patterns = {t: term_pattern(t) for t in terms}

    def hit(path: str, *heading: str) -> SimpleNamespace:
        return SimpleNamespace(path=path, heading_path=list(heading), text="")

    hits = [hit("results.md", "Result backends"), hit("concepts.md", "Core concepts"),
            hit("quickstart.md", "Quickstart"), hit("api.md", "API", "JobHandle"),
            hit("brokers.md", "Brokers", "How long results are kept"),
            hit("results.md", "Result backends", "Available backends"),
            hit("results.md", "Result backends", "How long results are kept")]
    read = read_hits(hits, 3, terms, patterns)
    assert [h.heading_path[-1] for h in read[3:]] == ["How long results are kept"]
    assert read[3].path == "results.md"
    assert read_hits(hits[:6], 3, terms, patterns) == hits[:3]


def test_a_question_in_plain_digits_finds_a_note_written_with_subscripts(make_kb: Any) -> None:
    """"CO2" finds "CO₂", in the full-text index and in the confidence's reader: the
    question's name is known, and the note's date answers."""
    assert fold("CO₂ in m², ＰＤＦ, ﬁle") == "CO2 in m2, PDF, file" and fold("plain") == "plain"
    kb = make_kb({"sensors.md": "# Sensors\n\nThe Corvid Air measures CO₂ with an NDIR cell. "
                                "Support for it arrived on 9 July 2024.\n",
                  "other.md": "# Lights\n\nBulbs pair in under a minute.\n"}, name="subscripts")
    kb.sync()
    result = kb.search("When did support for the CO2 sensor arrive?")
    assert result.hits[0].path == "sensors.md" and not result.abstained
    support, _ = support_of(kb, "When did support for the CO2 sensor arrive?")
    assert support.unknown == [] and "co2" not in [w.lower() for w in support.unsupported]


def test_a_sentence_of_other_versions_does_not_date_the_one_asked(make_kb: Any) -> None:
    """"On what date was Burrow 3.3.2 released?": "Current stable release: 3.4.1." names a
    version, which dates changelog lines, but another one; asked of 3.4.1, its line answers."""
    kb = make_kb({"index.md": "# Burrow\n\nBurrow runs your home locally. Current stable release: "
                              "**3.4.1**, published 2 March 2025.\n",
                  "pairing.md": "# Pairing\n\nHold the button for five seconds to pair a sensor.\n"},
                 name="versions")
    kb.sync()
    support, _ = support_of(kb, "On what date was Burrow 3.3.2 released?")
    assert support.answer_at is None and support.typed_missing >= 0.5
    support, _ = support_of(kb, "On what date was Burrow 3.4.1 released?")
    assert "2 March 2025" in (support.answer_at or "")


def test_a_version_the_question_asks_for_is_no_other_release(make_kb: Any) -> None:
    """"Which Go version do you need to build Pellicle since 0.9.0?": "building from source
    needs Go 1.23 now" writes a version, the asked kind's own, after the word the question
    writes ("Go"); it answers. Under another release's heading it still tells of that one."""
    kb = make_kb({"announcements.md": "# Pellicle 0.9.0\n\nReleased today.\n\n"
                                      "- building from source needs Go 1.23 now\n"
                                      "- thumbnails are sharper\n",
                  "old.md": "# Changelog\n\n## 0.8.2 (2024-12-01)\n\n- building from source "
                            "needs Go 1.21.\n",
                  "install.md": "# Install\n\nRun the container with a volume for the library.\n"},
                 name="go-version")
    kb.sync()
    support, _ = support_of(kb, "Which Go version do you need to build Pellicle from source since 0.9.0?")
    assert "1.23" in (support.answer_at or "")
    support, _ = support_of(kb, "Which Go version do you need to build Pellicle from source in 0.7.0?")
    assert support.answer_at is None


def test_somebody_elses_kin_does_not_answer_for_the_askers(make_kb: Any) -> None:
    """"When is my sister's birthday?" is not answered by "Priya says her sister's birthday is
    on 12 May"; the asker's own "my sister's birthday is 12 May" answers."""
    kb = make_kb({"2025-02-01.md": "# 1 Feb\n\nLunch with Priya. She says her sister's birthday is "
                                   "on 12 May, and a hen do is planned.\n",
                  "2025-02-03.md": "# 3 Feb\n\nRan 8 km by the river before work.\n"}, name="kin")
    kb.sync()
    support, _ = support_of(kb, "When is my sister's birthday?")
    assert support.answer_at is None
    kb2 = make_kb({"2025-02-01.md": "# 1 Feb\n\nLunch with Priya. My sister's birthday is on 12 May, "
                                    "her sister's organising Priya's hen do.\n",
                   "2025-02-03.md": "# 3 Feb\n\nRan 8 km by the river before work.\n"}, name="kin2")
    kb2.sync()
    support, _ = support_of(kb2, "When is my sister's birthday?")
    assert "12 May" in (support.answer_at or "")


DIRECTOR = {
    "films/tide-run.md": "# Tide Run\n\nTide Run is a 1988 drama film written and directed by Nadia Fenn, "
                         "with music by Pavel Dries. It follows a ferry crew through one winter.\n",
    "people/nadia-fenn.md": "# Nadia Fenn\n\nNadia Fenn (born 1950) is a film director. She was born in "
                            "Halvick, the daughter of Oskar Fenn, a ferry captain. She made four features, "
                            "the last of them Tide Run.\n",
    "people/pavel-dries.md": "# Pavel Dries\n\nPavel Dries (1921 – 1990) was a composer of film music who "
                             "wrote the scores of Tide Run and of many short films.\n",
    "places/halvick.md": "# Halvick\n\nHalvick is a port town with a ferry to the islands and a film "
                         "festival in June.\n",
}


def test_a_tie_between_people_is_answered_only_where_the_notes_tell_one(make_kb: Any) -> None:
    """"Who is the spouse of the director of Tide Run?" against the film's "directed by Nadia
    Fenn" and her article, which names her father and no marriage: the director's name answers
    the inner ask, not the spouse. Her father is told ("the daughter of Oskar Fenn"), so that
    question is answered; so is the spouse once her article tells a marriage."""
    kb = make_kb(DIRECTOR, name="director")
    kb.sync()
    spouse = "Who is the spouse of the director of Tide Run?"
    support, _ = support_of(kb, spouse)
    assert support.expects == "name" and support.answer_at is None and support.typed_gap > 0.3
    support, _ = support_of(kb, "Who is the father of the director of Tide Run?")
    assert support.typed_gap == 0.0
    support, _ = support_of(kb, "Who was Nadia Fenn married to?")
    assert support.answer_at is None and support.typed_gap > 0.3
    married = dict(DIRECTOR)
    married["people/nadia-fenn.md"] += "\nIn 1979 she married the painter Ivo Lind.\n"
    kb2 = make_kb(married, name="director-married")
    kb2.sync()
    for question in (spouse, "Who was Nadia Fenn married to?"):
        support, _ = support_of(kb2, question)
        assert support.typed_gap == 0.0, question


RAILWAY = {
    "companies/state-railway.md": "# Calvessan State Railway\n\nThe Calvessan State Railway was formed in "
                                  "1889 to join the river towns. The first line, between Halvick and "
                                  "Dunmere along the north bank, opened in 1891.\n",
    "places/halvick.md": "# Halvick\n\nHalvick is a port town at the mouth of the Orsa, with a ferry to "
                         "the islands.\n",
    "reading/quiet-engines.md": "---\nauthor: Theo Marchetti\n---\n# Quiet Engines\n\nA book about the "
                                "systems nobody looks at: sewers, water mains, substations.\n",
}


def test_a_role_is_answered_only_where_the_notes_write_it(make_kb: Any) -> None:
    """"Who was the first chairman of the Calvessan State Railway?" against the railway's
    "The first line, between Halvick and Dunmere ..., opened in 1891": the place names answer
    no chairman. The railway "chaired by" somebody, or a book's ``author:`` property, does."""
    kb = make_kb(RAILWAY, name="railway")
    kb.sync()
    chairman = "Who was the first chairman of the Calvessan State Railway?"
    support, _ = support_of(kb, chairman)
    assert support.answer_at is None and support.typed_gap > 0.3
    support, _ = support_of(kb, "Who is the author of Quiet Engines?")
    assert support.typed_gap == 0.0
    chaired = dict(RAILWAY)
    chaired["companies/state-railway.md"] += "\nIts board was chaired at first by Edvard Lorne.\n"
    kb2 = make_kb(chaired, name="railway-chaired")
    kb2.sync()
    support, _ = support_of(kb2, chairman)
    assert support.typed_gap == 0.0 and "Edvard Lorne" in (support.answer_at or "")


def test_chat_idioms_and_frequency_adverbs_are_no_measure() -> None:
    """A chat's "+1" agrees and "#561" names an issue; "hourly totals" says how often, not how
    long. None answers "how long"; a duration does, and "daily" still answers "how often"."""
    keep = answer_type("How long does the hub keep the hourly energy totals?")
    asked = frozenset({"hub", "keep", "hourly", "energy", "totals"})
    assert not holds_typed(keep, "The week view uses hourly totals and the year view daily totals.", asked)
    assert holds_typed(keep, "Hourly totals are kept for 90 days.", asked)
    assert holds_typed(answer_type("How often is the backup run?"), "The backup runs daily.", frozenset())
    sizes = answer_type("How big is the Docker image?")
    assert not holds_typed(sizes, "+1 but please keep the old image on the registry", frozenset())
    assert not holds_typed(sizes, "about #561, the share link bug", frozenset())
    assert holds_typed(sizes, "the image is 412 MB now", frozenset())
    # "<3" is a heart: "How old did Tobias turn?" is not answered by a birthday wish.
    age = answer_type("How old did Tobias turn in April?")
    assert not holds_typed(age, "[07:58] Sanne: happy birthday Tobias!! <3", frozenset())
    assert not holds_typed(age, "love you all <333", frozenset())
    assert holds_typed(age, "[08:31] Tobias: 31 is not old <3", frozenset())
    assert holds_typed(answer_type("How long does a search take?"), "p99 stays <3 ms", frozenset())


def test_how_long_something_lasts_asks_for_a_duration() -> None:
    """"How long does the weekly dev call last?" asks for a span, as "... take" does: "two
    bugs" in the same chat line counts nothing; "about 45 minutes" answers."""
    expected = answer_type("How long does the weekly Pellicle dev call last?")
    assert expected.kind == QUANTITY and expected.span and "minutes" in expected.units
    asked = frozenset({"weekly", "pellicle", "dev", "call", "last"})
    assert not holds_typed(expected, "the gist of the call is two bugs", asked)
    assert holds_typed(expected, "the call usually runs about 45 minutes", asked)


def test_a_dated_context_does_not_date_another_release() -> None:
    """A changelog's "3.0.0 — 2024-04-22" dates its lines for 3.0.0, not for the 2.0 the
    question asks about; a chat line's date dates no 0.12.0 when it announces 0.12.0-rc1."""
    terms = ["tidewater", "2", "0", "first", "released"]

    def gap(question: str, heading: str, text: str, dated: bool = False) -> float:
        hit = SimpleNamespace(title="Changelog", heading_path=["Changelog", heading], text=text, path="c.md")
        return typed_gap(question, [hit], terms, {t: 1.0 for t in terms},
                         {t: term_pattern(t) for t in terms}, dated=lambda h: dated)[1]

    when = "When was Tidewater 2.0 first released?"
    assert gap(when, "3.0.0 — 2024-04-22", "First release of the 3.x line.") > 0.3
    assert gap(when, "2.0.0 — 2021-05-02", "First release of the 2.x line.") == 0.0
    final = "On what date was Tidewater v2.0.0 released?"
    rc = "**[2021-04-02 16:00] kestrel:** Tidewater v2.0.0-rc1 is out, please test it first."
    assert gap(final, "Week 13", rc, dated=True) > 0.3
    assert gap(final, "Week 13", rc.replace("-rc1", ""), dated=True) == 0.0


def test_the_asked_releases_section_is_read_though_it_ranks_low(make_kb: Any) -> None:
    """"When did Burrow 3.0.0 reach the stable channel?": the changelog's opening matches the
    question best and newer releases' sections next; the section headed "3.0.0 —
    2023-11-28" is looked up by its heading and read too, once, and credited with what the
    changelog's opening matches. A release with an undated section is no answer, nor is a
    figure with a unit ("200 kB/s") a year."""
    sections = "".join(f"## 3.{n}.0 — 2024-{n + 1:02d}-0{n + 1}\n\n### Added\n- Scenes can use sensor "
                       f"type {n} and the energy view shows it.\n\n" for n in range(8, 0, -1))
    changelog = ("# Changelog\n\nAll notable changes to Burrow. Dates are the day the release reached "
                 "the **stable** channel.\n\n" + sections + "## 3.0.0 — 2023-11-28\n\n### Changed\n"
                 "- **Config is now TOML**.\n\n## 2.9.1\n\nHotfix, stable channel only.\n\n### Fixed\n"
                 "- Hub could hang when the download was slower than 200 kB/s.\n")
    kb = make_kb({"changelog.md": changelog,
                  "updating.md": "# Updating\n\nThe hub updates itself at night; a backup is taken "
                                 "first.\n"}, name="burrow")
    kb.sync()
    conn = kb.reader().conn
    question = "When did Burrow 3.0.0 reach the stable channel?"
    found = release_sections(conn, question, [])
    assert [h.heading_path for h in found] == [["Changelog", "3.0.0 — 2023-11-28", "Changed"]]
    assert release_sections(conn, question, found) == []  # a section read already is not added
    assert release_sections(conn, "When did Burrow 3.9.0 reach the stable channel?", []) == []
    # The section's heading dates the release; the changelog's opening says what its dates are.
    support, _ = support_of(kb, question)
    assert support.typed_gap == 0.0
    support, _ = support_of(kb, "On what date was Burrow 2.9.1 released?")
    assert support.typed_gap > 0.3



def test_a_default_is_answered_only_where_the_notes_call_it_one(make_kb: Any) -> None:
    """"What is the default value of scanner.workers?" against a user's "set `scanner.workers =
    2`" and another setting's "defaults to `15m`": no default of that setting is told. A
    sentence or a table row under a "Default" header that names the setting answers."""
    chat = {"help/2025-W17.md": "# help, week 17\n\n**[2025-04-23 17:40] pixelpush:** set "
                                "`scanner.workers = 2` because the pi was too hot during the "
                                "thumbnail run.\n",
            "announcements/2025-W20.md": "# Pellicle 0.10\n\n- `scanner.poll_interval` defaults to "
                                         "`15m`. The scanner has workers for thumbnails.\n"}
    kb = make_kb(chat, name="defaults")
    kb.sync()
    question = "What is the default value of scanner.workers?"
    support, _ = support_of(kb, question)
    assert support.answer_at is None and support.typed_gap > 0.3
    assert support.reason() == "no default given for 'scanner.workers'"
    table = dict(chat)
    table["reference.md"] = ("# Settings\n\n| Setting | Default | Meaning |\n|---|---|---|\n"
                             "| `scanner.workers` | `4` | thumbnail workers |\n")
    kb2 = make_kb(table, name="defaults-table")
    kb2.sync()
    support, _ = support_of(kb2, question)
    assert support.typed_gap < 0.15
    # In docs that say "default" on every page the word weighs little, yet the whole ask is
    # untold: "What is the default lint level of the unused_unsafe lint?" against a page that
    # shows the lint and never its level.
    docs = {f"lints/{name}.md": f"# The {name} lint\n\nThe {name} lint is {level} by default. "
                                f"Its default level can be changed with a flag.\n"
            for name, level in (("dead_code", "warn"), ("unused_mut", "warn"), ("box_pointers", "allow"),
                                ("unconditional_recursion", "warn"), ("missing_docs", "allow"))}
    docs["unsafety.md"] = ("# Unsafety checking\n\n## The unused_unsafe lint\n\nThe unused_unsafe lint "
                           "reports `unsafe` blocks that can be removed, such as an `unsafe` block "
                           "inside another one.\n")
    kb3 = make_kb(docs, name="defaults-common")
    kb3.sync()
    support, _ = support_of(kb3, "What is the default lint level of the unused_unsafe lint?")
    assert support.typed_gap >= TYPED_GAP_FULL
    assert support.reason() == "no default given for 'unused_unsafe'"


def test_a_password_is_answered_only_where_the_notes_write_one_out(make_kb: Any) -> None:
    """"What's the wifi password at Tregarrow Cottage?" against "The wifi at Tregarrow Cottage
    is terrible" and "the password is on the fridge": the notes name the cottage, its wifi
    and even its password, and give none. A password after its label, in code or quotes, or
    a word of letters and figures answers."""
    question = "What's the wifi password at Tregarrow Cottage?"
    expected = answer_type(question)
    assert expected.secret and expected.what == "password or code"
    asked = frozenset("what's the wifi password at tregarrow cottage".split())
    for told in ("Wifi password: puffin-harbour", "The wifi is BlueHeron7 (capitals matter).",
                 "The password is `sandcastle`.", "The password is tregarrow1988.", "Alarm PIN 4711."):
        assert holds_typed(expected, told, asked), told
    for untold in ("The wifi password is on the fridge.", "The wifi was slow all week.",
                   "The password is long enough.", "We changed the wifi password in May 2024.",
                   "Wifi: see the card by the kettle."):
        assert not holds_typed(expected, untold, asked), untold
    trip = ("# Cornwall trip\n\nWe stay at Tregarrow Cottage from 14 July, seven nights, key "
            "from the lockbox by the door. The wifi at Tregarrow Cottage is terrible but who "
            "needs it. The owners say the password is on the fridge.\n")
    kb = make_kb({"trips/cornwall.md": trip}, name="cottage")
    kb.sync()
    support, x = support_of(kb, question)
    assert x[FEATURES.index("typed_missing")] == 1.0
    assert kb.search(question).abstained
    told = make_kb({"trips/cornwall.md": trip.replace("The owners say the password is on the fridge.",
                                                      "The Tregarrow Cottage wifi password: puffin-harbour7")},
                   name="cottage-told")
    told.sync()
    support, x = support_of(told, question)
    assert x[FEATURES.index("typed_missing")] == 0.0 and not told.search(question).abstained


def test_a_fund_a_deposit_or_a_donation_is_an_amount_of_money() -> None:
    """"How much did we put into Ilse and Dario's honeymoon fund?" asks for money, not for
    any number: "They're going to Japan for two weeks in October" gives none; "we put 150
    quid in" does ("quid" is pounds, as British notes write them)."""
    for question in ("How much did we put into Ilse and Dario's honeymoon fund?",
                     "How much is the deposit for the flat?", "How much did we donate to the school?",
                     "How much did Ines lend her brother?"):
        assert answer_type(question).money, question
    question = "How much did we put into Ilse and Dario's honeymoon fund?"
    terms = ["put", "ilse", "dario", "honeymoon", "fund"]
    assert gap_in(question, terms, "Ilse and Dario set up a honeymoon fund instead of a gift "
                                   "list. They're going to Japan for two weeks in October.") > 0.3
    assert gap_in(question, terms, "Ilse and Dario set up a honeymoon fund instead of a gift "
                                   "list. We put 150 quid in.") == 0.0


def test_what_size_or_colour_thing_asks_for_a_size_or_a_colour() -> None:
    """"What colour splashback tiles did I go for?" asks for a colour, though its last noun is
    "tiles": "the hexagon tiles from Topps" names none; "sage green tiles" does."""
    question = "What colour splashback tiles did I go for?"
    assert answer_type(question).kind == COLOUR
    assert answer_type("What size SSD did I upgrade my laptop to?").kind == QUANTITY
    assert answer_type("What colour theme does my editor use?").kind is None  # a theme's name
    terms = ["colour", "splashback", "tiles"]
    assert gap_in(question, terms, "Went for the hexagon splashback tiles from Topps Tiles.") > 0.3
    assert gap_in(question, terms, "Went for the sage green splashback tiles from Topps Tiles.") == 0.0
