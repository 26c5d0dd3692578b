"""The ``[ner]`` deriver (plugins/pinakes-ner): spaCy entities as entity nodes, cached by hash."""

from __future__ import annotations

import pytest

pytest.importorskip("spacy")

from pinakes_ner import NerDeriver, entities  # noqa: E402

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
    assert ("warsaw.md", "warsaw") in edges and ("warsaw.md", "pierre curie") in edges
    assert ("curie.md", "marie curie") in edges
    assert ("warsaw.md", "city notes") in edges  # its own title
    labels = dict(kb.reader().conn.execute("SELECT key, label FROM nodes WHERE kind = 'entity'"))
    assert labels["pierre curie"] == "Pierre Curie"  # a readable surface form for PPR seeds
    assert not [k for k in labels if k[:1].isdigit()]
    # weights: count / mentions in the chunk
    for path in ("curie.md", "warsaw.md"):
        assert abs(sum(w for (p, _), w in edges.items() if p == path) - 1.0) < 1e-3


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
    titles_only = make_kb(files, name="titles", config="[graph]\nmentions = true\n")
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
