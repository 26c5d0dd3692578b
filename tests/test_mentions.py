"""Title mentions (plugins/pinakes-mentions): entity nodes, mentions edges, hub cap, aliases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pinakes.errors import ConfigError
from pinakes.graph import top_hubs
from pinakes_mentions import Matcher, MentionsDeriver, fold, named_entities, normalise, title_names

ON = "[graph]\nmentions = true\nner = false\n"  # titles only, even with pinakes-ner installed


def mention_edges(kb, kind: str = "mentions") -> dict[tuple[str, str], float]:
    """``{(document path, entity key): weight}`` of every edge of ``kind``."""
    rows = kb.reader().conn.execute(
        "SELECT d.path, b.key, e.weight FROM edges e JOIN nodes a ON a.id = e.src "
        "JOIN nodes b ON b.id = e.dst JOIN chunks c ON c.id = CAST(a.key AS INTEGER) "
        "JOIN documents d ON d.doc = c.doc WHERE e.kind = ? AND a.kind = 'chunk' "
        "AND b.kind = 'entity'", (kind,),
    ).fetchall()
    return {(r[0], r[1]): round(r[2], 4) for r in rows}


def entity_labels(kb) -> dict[str, str]:
    return dict(kb.reader().conn.execute("SELECT key, label FROM nodes WHERE kind = 'entity'"))


# --- names ------------------------------------------------------------------------------


def test_normalisation_folds_case_articles_possessives_and_rejects_non_names() -> None:
    assert normalise("Marie Curie") == "marie curie"
    assert normalise("  MARIE\n curie's ") == "marie curie"
    assert normalise("The Beatles") == "beatles"
    assert normalise("The Who") == "the who"  # "who" alone is a stop word
    assert normalise("“Casablanca”,") == "casablanca"
    assert normalise("Ｆｕｌｌｗｉｄｔｈ") == "fullwidth"
    for junk in ("It", "1999", "a", "", "  ", "--", "the"):
        assert normalise(junk) == "", junk
    assert title_names("Foo Bar (1999 film)") == [("foo bar (1999 film)", "Foo Bar (1999 film)"),
                                                  ("foo bar", "Foo Bar")]
    assert title_names("Paris") == [("paris", "Paris")]


def test_near_duplicate_candidates_need_word_containment() -> None:
    from pinakes_mentions.names import contains, initials, words

    def inside(a: str, b: str) -> bool:
        return contains(words(a), words(b), initials(a))

    assert inside("curie", "marie curie") and inside("m. curie", "marie curie")
    assert not inside("william v", "william vi")  # a numeral is not an initial
    assert not inside("pierre curie", "marie curie")


def test_matcher_counts_whole_words_case_insensitively() -> None:
    m = Matcher(["art", "marie curie", "curie", "new york", "東京"])
    text = fold("Art and artists: Marie Curie met Curie's ART teacher in New\nYork; 東京に行った.")
    got = m.counts(text)
    assert got["art"] == 2  # not inside "artists"
    assert got["marie curie"] == 1 and got["curie"] == 1  # a name inside a longer one: not
    assert m.counts(text, nested=True)["curie"] == 2
    assert got["new york"] == 1  # whitespace folded
    assert got["東京"] == 1  # CJK has no word boundaries to check


# --- the deriver in a KB ---------------------------------------------------------------------

DOCS = {
    "people/marie-curie.md": "# Marie Curie\n\nMarie Curie was a physicist and chemist. "
                             "Marie Curie worked in Paris on radium.\n",
    "places/paris.md": "# Paris\n\nParis is the capital of France.\n",
    "science/radium.md": "# Radium\n\nRadium was isolated by Marie Curie in Paris.\n",
    "misc/film.md": "# Radium City (film)\n\nA documentary. Not about the element.\n",
    "misc/unrelated.md": "# Bread\n\nFlour, water, salt and patience.\n",
}


def test_on_by_default_off_in_one_line_and_a_bad_switch_is_a_clear_error(make_kb) -> None:
    kb = make_kb(DOCS)
    # on by default: titles, or (pinakes-ner installed, which supersedes it) titles + NER
    assert {"mentions", "ner"} & set(kb.edge_derivers())
    kb.sync()
    assert mention_edges(kb)
    off = make_kb(DOCS, name="off", config="[graph]\nmentions = false\nner = false\n")
    assert not {"mentions", "ner"} & set(off.edge_derivers())
    off.sync()
    assert not mention_edges(off)
    bad = make_kb(DOCS, name="bad", config='[graph]\nmentions = "yes"\n')
    with pytest.raises(ConfigError, match=r"\[graph\] mentions should be true or false"):
        bad.edge_derivers()


def test_entities_edges_and_weights(make_kb) -> None:
    kb = make_kb(DOCS, config=ON)
    kb.sync()
    edges = mention_edges(kb)
    # count / mentions in the chunk; a document's own title counts once for being its
    # title plus once per time its text names it. radium.md: "Radium" 1 + 1, "Marie
    # Curie" 1, "Paris" 1; marie-curie.md: "Marie Curie" 1 + 2, "Paris" 1, "radium" 1.
    assert edges[("science/radium.md", "radium")] == 0.5
    assert edges[("science/radium.md", "marie curie")] == 0.25
    assert edges[("science/radium.md", "paris")] == 0.25
    assert edges[("people/marie-curie.md", "marie curie")] == 0.6
    assert edges[("people/marie-curie.md", "radium")] == 0.2
    # a name inside a longer one does not count: "Radium City" is not radium
    assert ("misc/film.md", "radium") not in edges
    # a document's own title is an entity its chunks mention, with its alias sans "(film)"
    assert ("misc/film.md", "radium city (film)") in edges
    assert ("misc/film.md", "radium city") in edges
    assert ("misc/unrelated.md", "bread") in edges
    # weights of a chunk sum to 1
    for path in DOCS:
        assert abs(sum(w for (p, _), w in edges.items() if p == path) - 1.0) < 1e-3
    # labels are the human-readable surface forms (PPR matches queries against them)
    labels = entity_labels(kb)
    assert labels["marie curie"] == "Marie Curie" and labels["radium city"] == "Radium City"
    nodes, kinds = kb.status()["nodes_by_kind"], kb.status()["edges_by_kind"]
    assert nodes["entity"] == 6 and kinds["mentions"] == len(edges)
    hubs = top_hubs(kb.reader().conn)
    assert {"kind": "entity", "key": "paris", "label": "Paris", "degree": 3}.items() <= hubs[0].items()


def test_named_entities_matches_a_query_like_a_chunk(make_kb) -> None:
    kb = make_kb(DOCS, config=ON)
    kb.sync()
    conn = kb.reader().conn
    got = named_entities(conn, "Where did MARIE CURIE's radium research happen?")
    assert got == [("marie curie", "Marie Curie", 2), ("radium", "Radium", 2)]
    assert named_entities(conn, "radiums and curiosities") == []


def test_pnk_status_shows_entity_nodes_and_mentions_edges(make_kb) -> None:
    kb = make_kb(DOCS, config=ON)
    kb.sync()
    pnk = Path(sys.executable).with_name("pnk")
    out = subprocess.run([str(pnk), "status", "--kb", str(kb.root)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    nodes = next(line for line in out.splitlines() if line.strip().startswith("nodes"))
    edges = next(line for line in out.splitlines() if line.strip().startswith("edges"))
    assert "entity 6" in nodes and "mentions " in edges


class Recording(MentionsDeriver):
    """A mentions deriver that records which documents it derives, per sync."""

    log: list[set[str]] = []

    def affected(self, changes, conn):  # type: ignore[no-untyped-def]
        Recording.log.append(set())
        return super().affected(changes, conn)

    def derive(self, doc, conn):  # type: ignore[no-untyped-def]
        Recording.log[-1].add(doc.path)
        return super().derive(doc, conn)


@pytest.fixture
def recording(monkeypatch):
    """Make every KB run the recording deriver (plus the real structural one)."""
    from pinakes import kb as kb_module

    original = kb_module.KB.edge_derivers
    Recording.log = []

    def derivers(self):  # type: ignore[no-untyped-def]
        out = original(self)
        if "mentions" in out:
            out["mentions"] = Recording(out["mentions"].settings, self)
        return out

    monkeypatch.setattr(kb_module.KB, "edge_derivers", derivers)
    return Recording.log


def test_incremental_after_an_edit_and_after_titles_appear_change_and_vanish(make_kb, recording) -> None:
    kb = make_kb(DOCS, config=ON)
    kb.sync()
    assert recording[-1] == set(DOCS)
    # An edit that names a title: only that document is re-derived.
    bread = kb.root / "misc/unrelated.md"
    bread.write_text("# Bread\n\nFlour, water, salt and patience, as in Paris.\n")
    kb.sync()
    assert recording[-1] == {"misc/unrelated.md"}
    assert ("misc/unrelated.md", "paris") in mention_edges(kb)
    # A new document whose title others already name: it, plus the documents naming it.
    (kb.root / "places/france.md").write_text("# France\n\nA country.\n")
    kb.sync()
    assert recording[-1] == {"places/france.md", "places/paris.md"}
    assert ("places/paris.md", "france") in mention_edges(kb)
    # A title changes: the documents naming the old or the new title, nothing else.
    paris = kb.root / "places/paris.md"
    paris.write_text("# Lutetia\n\nParis is the capital of France.\n")
    sidecar = kb.root / "places/paris.pnk.yaml"
    sidecar.write_text(sidecar.read_text().replace("title: Paris", "title: Lutetia"))
    kb.sync()
    assert recording[-1] == {"places/paris.md", "people/marie-curie.md", "science/radium.md",
                             "misc/unrelated.md"}
    edges = mention_edges(kb)
    assert not [e for e in edges if e[1] == "paris"]
    assert ("places/paris.md", "lutetia") in edges
    assert "paris" not in entity_labels(kb)
    # A document is removed: the documents naming its title lose those edges.
    (kb.root / "places/france.md").unlink()
    (kb.root / "places/france.pnk.yaml").unlink()
    kb.sync()
    assert recording[-1] == {"places/paris.md"}
    assert not [e for e in mention_edges(kb) if e[1] == "france"]
    # The incremental graph equals a from-scratch one.
    before = mention_edges(kb)
    kb.sync(rebuild=True)
    assert mention_edges(kb) == before


def test_hub_cap_drops_popular_names_and_restores_them(make_kb, recording) -> None:
    files = {f"n{i}.md": f"# Note {i}\n\nA note that names Vesuvius.\n" for i in range(4)}
    files["vesuvius.md"] = "# Vesuvius\n\nA volcano.\n"
    files["other.md"] = "# Other\n\nNothing here.\n"
    cfg = ON + "entity_hub_min = 4\nentity_hub_share = 0.0\n"
    kb = make_kb(files, config=cfg)
    kb.sync()
    # named by 5 documents (4 notes + its own), cap 4: no edges at all
    assert not [e for e in mention_edges(kb) if e[1] == "vesuvius"]
    assert "vesuvius" not in entity_labels(kb)
    # one note stops naming it: back under the cap, every naming document re-derived
    (kb.root / "n0.md").write_text("# Note 0\n\nA note about nothing.\n")
    kb.sync()
    assert recording[-1] == {"n0.md", "n1.md", "n2.md", "n3.md", "vesuvius.md"}
    got = {p for p, k in mention_edges(kb) if k == "vesuvius"}
    assert got == {"n1.md", "n2.md", "n3.md", "vesuvius.md"}
    kb.sync(rebuild=True)
    assert {p for p, k in mention_edges(kb) if k == "vesuvius"} == got


def test_cap_scales_with_the_kb() -> None:
    from pinakes_mentions import Settings

    s = Settings()
    assert s.cap(100) == 12  # the absolute floor for small KBs
    assert s.cap(6119) == 12  # the prototype's 0.2% of 2wiki's passages
    assert s.cap(50_000) == 100


def test_front_matter_aliases_are_names(make_kb) -> None:
    kb = make_kb({
        "a.md": "---\naliases: [Bobby Tables]\n---\n# Robert Tables\n\nA student.\n",
        "b.md": "# School\n\nLittle Bobby Tables broke the database.\n",
    }, config=ON)
    kb.sync()
    assert ("b.md", "bobby tables") in mention_edges(kb)


def test_near_duplicates_are_linked_by_label_embeddings(make_kb) -> None:
    files = {
        "marie.md": "# Marie Curie\n\nPhysicist, two Nobel prizes.\n",
        "crater.md": "# Curie (crater)\n\nA lunar crater.\n",
        "pierre.md": "# Pierre Curie\n\nPhysicist, husband.\n",
        "letters.md": "# M. Curie (letters)\n\nLetters signed with an initial.\n",
        "notes.md": "# Lab notes\n\nToday Curie measured the sample again.\n",
    }
    kb = make_kb(files, config=ON + "entity_alias_threshold = 0.65\n")
    kb.sync()
    rows = kb.reader().conn.execute("SELECT a, b, sim FROM entity_aliases").fetchall()
    pairs = {(a, b) for a, b, _ in rows}
    assert ("curie", "marie curie") in pairs and ("marie curie", "curie") in pairs
    assert ("m. curie", "marie curie") in pairs  # an initial stands for a word
    assert ("marie curie", "pierre curie") not in pairs  # no word-containment: never a candidate
    aliases = mention_edges(kb, "alias")
    # the chunk naming "Curie" also reaches the entity "Marie Curie", more weakly
    direct = mention_edges(kb)[("notes.md", "curie")]
    assert 0 < aliases[("notes.md", "marie curie")] < direct
    # labels were embedded once and cached: a rebuild embeds nothing
    kb.sync(rebuild=True)
    assert mention_edges(kb, "alias") == aliases


def test_mentions_answer_a_question_only_a_shared_entity_connects(make_kb) -> None:
    """The bridge no structural edge gives: two documents in different folders, no tag, no link."""
    files = {
        "lights/harbour.md": "# Harbour Lighthouse\n\n"
                             "The harbour lighthouse was kept for forty years by Edith Marlow, "
                             "who trimmed the lamp every night.\n",
        "people/edith.md": "# Edith Marlow\n\nShe grew up in Thornby, a hamlet of weavers.\n",
    }
    for i in range(8):
        files[f"noise{i}/note.md"] = (f"# Lighthouse note {i}\n\nLighthouse keepers and harbour lamps, "
                                   f"note {i}: the keeper trims the lamp.\n")
    q = "where did the keeper of the harbour lighthouse grow up"
    plain = make_kb(files, name="plain", config="[graph]\nmentions = false\nner = false\n")
    plain.sync()
    kb = make_kb(files, name="with-mentions", config=ON)
    kb.sync()
    off = [h.path for h in kb.search(q, k=3, channel="off").hits]
    assert "lights/harbour.md" in off and "people/edith.md" not in off
    # without mentions the graph has no bridge: expand cannot find her
    assert "people/edith.md" not in [h.path for h in plain.search(q, k=3, channel="expand").hits]
    ex = kb.search(q, k=3, channel="expand")
    paths = [h.path for h in ex.hits]
    assert "people/edith.md" in paths
    assert ex.hits[paths.index("people/edith.md")].ranks["graph"] is not None
    # PPR seeds the entity the query names ("Harbour Lighthouse", by its label) and walks
    # on through the entity its chunk mentions
    named = "where did the keeper of the Harbour Lighthouse grow up"
    if "ppr" in kb.graph_channels():
        assert "people/edith.md" in [h.path for h in kb.search(named, k=3, channel="ppr").hits]
        assert "people/edith.md" not in [h.path for h in plain.search(named, k=3, channel="ppr").hits]


def test_plugin_is_listed_by_pnk_plugins() -> None:
    pnk = Path(sys.executable).with_name("pnk")
    proc = subprocess.run([str(pnk), "plugins", "--json"], capture_output=True, text=True,
                          timeout=60, check=True)
    found = {p["name"]: p for p in json.loads(proc.stdout)}
    assert found["mentions"]["registers"] == {"register_edge_derivers": ["mentions"]}


def test_pnk_doctor_shows_entity_hubs(make_kb) -> None:
    kb = make_kb(DOCS, config=ON)
    kb.sync()
    hubs = kb.doctor()["hubs"]
    assert any(h["kind"] == "entity" and h["label"] == "Paris" for h in hubs)


def test_a_dataset_kb_switches_derivers_on_without_re_embedding(tmp_path: Path, embedder) -> None:
    """``pnk eval --dataset DIR --graph ...``: the cached KB switches derivers without re-embedding.

    Title mentions are on by default; ``--graph`` names derivers to switch on, so a
    dataset materialised with and without it differs exactly when the switch is
    not already the default (the materialised pinakes.toml records the choice).
    """
    from pinakes.evaluation.dataset import load_dataset, materialise

    ds = tmp_path / "ds"
    ds.mkdir()
    passages = [("p1", "Lothair II", "Lothair II was a king; his mother was Ermengarde of Tours."),
                ("p2", "Ermengarde of Tours", "Ermengarde of Tours died on 20 March 851."),
                ("p3", "Bread", "Flour and water.")]
    (ds / "corpus.jsonl").write_text("".join(
        json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in passages))
    (ds / "queries.jsonl").write_text(json.dumps(
        {"id": "q", "text": "When did Lothair II's mother die?", "relevant": ["p1", "p2"],
         "class": "multi-hop"}) + "\n")
    plain = materialise(load_dataset(ds), tmp_path / "cache", embedder=embedder,
                        graph=("!mentions", "!ner"))
    assert "mentions" not in plain.kb.edge_derivers()
    on = materialise(load_dataset(ds), tmp_path / "cache", embedder=embedder,
                     graph=("mentions", "!ner"))
    assert on.kb.root == plain.kb.root and on.sync.rebuilt and on.sync.chunks_embedded == 0
    assert ("passages/p1.md", "ermengarde of tours") in mention_edges(on.kb)
    pnk = Path(sys.executable).with_name("pnk")
    proc = subprocess.run([str(pnk), "eval", "--golden", "x.yaml", "--graph", "mentions"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "--graph applies to --dataset only" in proc.stderr
