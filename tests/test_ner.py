"""The ``[ner]`` deriver (plugins/pinakes-ner): spaCy entities as entity nodes, cached by hash."""

from __future__ import annotations

import pytest

pytest.importorskip("spacy")

from pinakes_ner import (  # noqa: E402
    NerDeriver,
    NerSettings,
    capitalised_names,
    clean_name,
    entities,
    opening_name,
)

ON = "[graph]\nner = true\n"

PARAGRAPH = ("Marie Curie was born in Warsaw in 1867 and worked at the University of Paris "
             "with Pierre Curie. She received two Nobel Prizes, in 1903 and 1911.")


def entity_edges(kb) -> dict[tuple[str, str], float]:
    rows = kb.reader().conn.execute(
        "SELECT d.path, b.key, e.weight FROM edges e JOIN nodes a ON a.id = e.src "
        "JOIN nodes b ON b.id = e.dst JOIN chunks c ON c.id = CAST(a.key AS INTEGER) "
        "JOIN documents d ON d.doc = c.doc WHERE e.kind = 'mentions' AND b.kind = 'entity'"
    ).fetchall()
    return {(r[0], r[1]): round(r[2], 4) for r in rows}


@pytest.fixture
def derivers_seen(monkeypatch):
    """Every per-KB ``ner`` deriver instance a sync used, in order (for their stats)."""
    from pinakes import kb as kb_module

    original = kb_module.KB.edge_derivers
    seen: list[NerDeriver] = []

    def derivers(self):  # type: ignore[no-untyped-def]
        out = original(self)
        if "ner" in out:
            seen.append(out["ner"])
        return out

    monkeypatch.setattr(kb_module.KB, "edge_derivers", derivers)
    return seen


def test_entity_extraction_on_a_fixed_paragraph() -> None:
    (found,) = entities([PARAGRAPH])
    names = {surface: label for surface, label in found}
    assert names.get("Marie Curie") == "PERSON"
    assert names.get("Pierre Curie") == "PERSON"
    assert names.get("Warsaw") == "GPE"
    assert "University of Paris" in " ".join(names)
    # dates and numbers are not names
    assert not {"DATE", "CARDINAL", "ORDINAL"} & set(names.values())
    assert "1867" not in names and "two" not in names


def test_ner_supersedes_title_mentions_and_links_chunks_to_entities(make_kb) -> None:
    kb = make_kb({
        "curie.md": f"# Marie Curie\n\n{PARAGRAPH}\n",
        "warsaw.md": "# City notes\n\nWarsaw is on the Vistula; Pierre Curie never lived there.\n",
    }, config=ON + "mentions = true\n")
    assert set(kb.edge_derivers()) == {"ner", "structural"}
    kb.sync()
    edges = entity_edges(kb)
    # NER names found in curie.md are matched in warsaw.md too, and titles stay entities
    assert ("warsaw.md", "pierre curie") in edges
    assert ("curie.md", "marie curie") in edges
    assert ("warsaw.md", "city notes") in edges  # its own title
    # a capitalised word alone is no name ("Warsaw" may open any sentence)
    assert not [k for (_, k) in edges if k == "warsaw"]
    labels = dict(kb.reader().conn.execute("SELECT key, label FROM nodes WHERE kind = 'entity'"))
    assert labels["pierre curie"] == "Pierre Curie"  # a readable surface form for PPR seeds
    assert not [k for k in labels if k[:1].isdigit()]
    # weights: title mentions share 1 per chunk (as `mentions` gives them), the names only
    # NER found share ner_weight (0.1): NER never thins a title edge
    assert edges[("warsaw.md", "city notes")] == 1.0 and edges[("curie.md", "marie curie")] == 1.0
    for path in ("curie.md", "warsaw.md"):
        ner_only = [w for (p, k), w in edges.items() if p == path and k not in ("marie curie",
                                                                                 "city notes")]
        assert ner_only and abs(sum(ner_only) - NerSettings().weight) < 1e-3


def test_markup_fragments_and_lone_words_are_not_names() -> None:
    """spaCy on Markdown tags "compiler`]" or "> tests": such keys would seed any query."""
    for junk in ("compiler`]", "> tests", "&trait", "solver](", "session", "proof trees",
                 "Profiler", "US", "`rustc_middle`"):
        assert clean_name(junk) == "", junk
    for name in ("Olof Palme", "UNICEF", "McGee", "St. Louis", "University of Paris"):
        assert clean_name(name) == name
    assert clean_name("The Beatles'") == "The Beatles"
    assert capitalised_names("Polish Easter is a 2011 German film directed by Jakob Ziemnicki. "
                             "During the War he met J. R. R. Tolkien in St. Louis.") == [
        "Polish Easter", "German", "Jakob Ziemnicki", "J. R. R. Tolkien", "St. Louis"]


def test_a_new_title_for_a_name_ner_found_reweights_the_documents_naming_it(make_kb) -> None:
    """Whether a key is some page's title decides its weights: a new page re-derives the rest."""
    files = {"harbour.md": "# Harbour notes\n\nThe lamp was kept by Edith Marlow and "
                           "Thomas Wren of Thornby Pictures.\n"}
    kb = make_kb(files, config=ON)
    kb.sync()
    before = entity_edges(kb)[("harbour.md", "edith marlow")]
    (kb.root / "edith.md").write_text("# Edith Marlow\n\nShe grew up in Kelland.\n")
    kb.sync()
    after = entity_edges(kb)
    assert after[("harbour.md", "edith marlow")] > before  # now a title mention
    kb.sync(rebuild=True)
    assert entity_edges(kb) == after  # incremental == rebuilt


def test_only_changed_chunks_run_ner_and_rebuilds_use_the_cache(make_kb, derivers_seen) -> None:
    kb = make_kb({
        "a.md": "# Alpha\n\n## One\n\nAda Lovelace wrote notes.\n\n## Two\n\nCharles Babbage built engines.\n",
        "b.md": "# Beta\n\nGrace Hopper wrote compilers.\n",
    }, config=ON)
    kb.sync()
    assert derivers_seen[-1].stats["ner_chunks"] == 3  # every chunk with text
    a = kb.root / "a.md"
    a.write_text(a.read_text().replace("Charles Babbage built engines.",
                                       "Charles Babbage met Grace Hopper? No."))
    kb.sync()
    stats = derivers_seen[-1].stats
    assert stats["ner_chunks"] == 1 and stats["ner_cached"] >= 1
    assert ("a.md", "grace hopper") in entity_edges(kb)
    kb.sync(rebuild=True)
    assert derivers_seen[-1].stats["ner_chunks"] == 0
    assert (kb.root / ".pinakes" / "ner-cache.db").exists()


def test_a_shared_person_bridges_two_unrelated_documents(make_kb) -> None:
    """No title names her: only NER sees that both documents speak of Edith Marlow."""
    files = {
        "lights/harbour.md": "# Harbour Lighthouse\n\nThe harbour lighthouse was kept for forty "
                             "years by Edith Marlow, who trimmed the lamp every night.\n",
        "parish/records.md": "# Parish register, 1871\n\nEdith Marlow, daughter of a weaver, "
                             "entered at St Aldhelm's, Thornby.\n",
    }
    for i in range(8):  # each in its own folder: no directory hub ties them to each other
        files[f"noise{i}/note.md"] = (f"# Lighthouse note {i}\n\nLighthouse keepers and harbour lamps, "
                                   f"note {i}: the keeper trims the lamp.\n")
    q = "in which village did the harbour lighthouse keeper grow up"
    titles_only = make_kb(files, name="titles", config="[graph]\nmentions = true\nner = false\n")
    titles_only.sync()
    kb = make_kb(files, name="ner", config=ON)
    kb.sync()
    off = [h.path for h in kb.search(q, k=3, channel="off").hits]
    assert "lights/harbour.md" in off and "parish/records.md" not in off
    assert "parish/records.md" not in [h.path for h in titles_only.search(q, k=3, channel="expand").hits]
    ex = [h.path for h in kb.search(q, k=3, channel="expand").hits]
    assert "parish/records.md" in ex


def test_plugin_is_listed_by_pnk_plugins() -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    pnk = Path(sys.executable).with_name("pnk")
    proc = subprocess.run([str(pnk), "plugins", "--json"], capture_output=True, text=True,
                          timeout=60, check=True)
    found = {p["name"]: p for p in json.loads(proc.stdout)}
    assert found["ner"]["registers"] == {"register_edge_derivers": ["ner"]}


NEUTRAL = {  # documents not named after their subjects: titles cannot bridge them
    "notes/week1.md": "# Meeting notes, week 1\n\nWe watched Harbour Lights, the film Edith Marlow "
                      "directed for Thornby Pictures.\n",
    "notes/week2.md": "# Meeting notes, week 2\n\nEdith Marlow was born in Kelland and trained "
                      "as a painter before she worked in film.\n",
}
for _i in range(8):
    NEUTRAL[f"notes/other{_i}.md"] = (f"# Meeting notes, other {_i}\n\nA film director was born in a "
                                      f"port town, and the director of film number {_i} was born "
                                      "there too.\n")
BRIDGE_Q = "Where was the director of Harbour Lights born?"


def test_a_bridge_named_only_in_text_is_lifted_for_a_multi_hop_question(make_kb) -> None:
    """The second hop is reachable only through a name NER finds in text, not a title.

    With ``ner_subject``, week2 (which opens with "Edith Marlow") is her page, so the
    name is a bridge with a home and week1's mention of her weighs like a title mention.
    """
    titles = make_kb(NEUTRAL, name="titles", config="[graph]\nner = false\n")
    titles.sync()
    kb = make_kb(NEUTRAL, name="ner", config=ON + "ner_subject = true\n")
    kb.sync()
    assert "notes/week2.md" not in [h.path for h in titles.search(BRIDGE_Q, k=2).hits]
    assert "notes/week2.md" not in [h.path for h in kb.search(BRIDGE_Q, k=2, channel="off").hits]
    hits = [h.path for h in kb.search(BRIDGE_Q, k=2).hits]
    assert set(hits) == {"notes/week1.md", "notes/week2.md"}
    subject = dict(kb.reader().conn.execute(
        "SELECT n.key, n.source FROM entity_names n JOIN documents d ON d.doc = n.doc "
        "WHERE d.path = 'notes/week2.md'"))
    assert subject["edith marlow"] == "alias"  # the name week2 opens with


def test_opening_name_is_the_subject_of_an_untitled_passage() -> None:
    text = "Jakob Ziemnicki (born 1975) is a German director who studied in Munich."
    assert opening_name(text, ["German", "Jakob Ziemnicki", "Munich"]) == "Jakob Ziemnicki"
    assert opening_name("The Straw Hat is a 1974 film.", ["Straw Hat"]) == "Straw Hat"
    assert opening_name("In 1975 Jakob Ziemnicki was born.", ["Jakob Ziemnicki"]) == ""
