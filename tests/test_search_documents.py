"""`pnk search` groups chunks by document: k hits are k documents (issue 12, item 6)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pinakes import fleet
from pinakes.cli import cli
from pinakes.search import DOCUMENT_CHUNKS, documents_result, group_by_document

# One long page whose every section is about the query, and short pages that each
# touch it once: a chunk list is all sections of the long page, a document list is not.
BREAD = {
    "baking/sourdough.md": """
        # Sourdough Bread

        ## Feeding the starter
        A sourdough starter is flour and water kept alive by wild yeast. Feed the starter
        twice a day with equal weights of flour and water so the sourdough stays lively.

        ## Mixing the dough
        Mix the active sourdough starter with flour, water and salt. The sourdough bread
        dough is wet and sticky; fold it every half hour instead of kneading.

        ## Proofing overnight
        Shape the sourdough loaf and let it proof overnight in the fridge. Cold proofing
        gives sourdough bread its sour taste and an open crumb.

        ## Baking in a pot
        Bake the sourdough bread in a preheated covered pot: the trapped steam lets the
        loaf rise before the crust sets. Uncover it for the last twenty minutes.
        """,
    "baking/rye.md": """
        # Rye Bread

        Rye bread is often leavened with a sourdough starter, because rye flour has
        little gluten and the acidity of the starter keeps the crumb from going gummy.
        """,
    "baking/flour.md": """
        # Choosing Flour

        Strong bread flour has more protein than cake flour. A sourdough starter can be
        fed with any wheat or rye flour; whole grain flour makes it ferment faster.
        """,
    "garden/compost.md": """
        # Making Compost

        Layer green kitchen scraps with brown leaves and turn the heap every few weeks.
        """,
    "garage/tyres.md": """
        # Bicycle Tyre Pressure

        Pump road tyres to six to eight bar; lower pressure grips better on gravel.
        """,
}
QUERY = "feeding a sourdough starter for sourdough bread"


@pytest.fixture
def bread(make_kb):
    kb = make_kb(BREAD, name="bread")
    kb.sync()
    return kb


def _first_occurrence(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(paths))


def test_group_by_document_keeps_the_chunk_order_and_every_chunk(bread) -> None:
    result = bread.search(QUERY, k=DOCUMENT_CHUNKS, graph_roots=3)
    docs = group_by_document(result.hits)
    # Documents rank by their best chunk, exactly the collapse `pnk eval` scores.
    assert [d.path for d in docs] == _first_occurrence([h.path for h in result.hits])
    assert sum(1 + len(d.more) for d in docs) == len(result.hits)
    for d in docs:
        assert d.best.path == d.path and d.score == d.best.score
        assert all(h.path == d.path for h in d.more)
        assert all(h.score <= d.best.score for h in d.more)
    long_page = next(d for d in docs if d.path == "baking/sourdough.md")
    assert len(long_page.more) >= 2
    assert group_by_document(result.hits, k=2) == docs[:2]


def test_k_documents_fill_even_when_one_page_holds_the_top_chunks(bread) -> None:
    chunks = bread.search(QUERY, k=3)
    # The premise: the three best chunks come from fewer than three pages.
    assert len({h.path for h in chunks.hits}) < 3
    grouped = documents_result(bread.search(QUERY, k=DOCUMENT_CHUNKS, graph_roots=3), 3)
    assert len(grouped.documents) == 3
    assert len({d.path for d in grouped.documents}) == 3
    # The chunk view of the grouped search is the plain k-chunk search, confidence included.
    assert [h.chunk_id for h in grouped.chunks.hits] == [h.chunk_id for h in chunks.hits]
    assert grouped.chunks.confidence == chunks.confidence
    assert grouped.documents[0].best.chunk_id == chunks.hits[0].chunk_id


def test_cli_shows_documents_with_their_other_sections_and_chunks_on_request(bread) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["search", QUERY, "--kb", str(bread.root), "-k", "3"])
    assert out.exit_code == 0, out.output
    numbered = [line for line in out.output.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert len(numbered) == 3
    assert numbered[0].startswith(" 1. Sourdough Bread")
    assert sum("Sourdough Bread" in line for line in numbered) == 1
    more = [line.strip() for line in out.output.splitlines() if "more section" in line]
    assert more and more[0].startswith("+")
    # The other sections are named by heading (without the page title) and line.
    assert any(h in more[0] for h in ("Mixing the dough", "Proofing overnight", "Baking in a pot",
                                      "Feeding the starter"))
    assert "(line " in more[0] and "Sourdough Bread >" not in more[0]
    assert "confidence:" in out.output

    flat = runner.invoke(cli, ["search", QUERY, "--kb", str(bread.root), "-k", "3", "--chunks"])
    assert flat.exit_code == 0, flat.output
    titles = [line for line in flat.output.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert len(titles) == 3
    assert sum("Sourdough Bread" in line for line in titles) >= 2
    assert "more section" not in flat.output


def test_cli_json_keeps_chunk_hits_and_adds_documents(bread) -> None:
    runner = CliRunner()
    base = ["search", QUERY, "--kb", str(bread.root), "-k", "3", "--json"]
    grouped = json.loads(runner.invoke(cli, base).output)
    flat = json.loads(runner.invoke(cli, [*base, "--chunks"]).output)
    assert "documents" not in flat
    # `hits` is the same k-chunk list either way (the MCP tool's shape).
    assert [h["chunk_id"] for h in grouped["hits"]] == [h["chunk_id"] for h in flat["hits"]]
    assert len(grouped["hits"]) == 3
    docs = grouped["documents"]
    assert len(docs) == 3 and len({d["path"] for d in docs}) == 3
    assert docs[0]["best"]["chunk_id"] == grouped["hits"][0]["chunk_id"]
    assert {"kb", "doc_id", "title", "path", "score", "best", "more"} <= set(docs[0])
    assert {"text", "snippet", "heading_path", "ranks"} <= set(docs[0]["best"])
    assert docs[0]["path"] == "baking/sourdough.md" and docs[0]["more"]
    assert {"chunk_id", "heading_path", "start_line", "score", "ranks"} <= set(docs[0]["more"][0])
    assert grouped["confidence"] == flat["confidence"]


def test_fleet_search_groups_per_kb_document(make_kb) -> None:
    one = make_kb(BREAD, name="one")
    two = make_kb({"notes/starter.md": BREAD["baking/sourdough.md"].replace(
        "# Sourdough Bread", "# My Sourdough Notes")}, name="two")
    one.sync()
    two.sync()
    fleet.add("one", one.root)
    fleet.add("two", two.root)
    runner = CliRunner()
    res = runner.invoke(cli, ["search", QUERY, "--kb", "all", "-k", "4", "--json"])
    assert res.exit_code == 0, res.output
    docs = json.loads(res.output)["documents"]
    keys = [(d["kb"], d["path"]) for d in docs]
    assert len(keys) == 4 and len(set(keys)) == 4
    assert {"one", "two"} <= {kb for kb, _ in keys}
    # Both copies of the long page come with their other sections, each under its own KB.
    long_pages = [d for d in docs if d["path"] in ("baking/sourdough.md", "notes/starter.md")]
    assert len(long_pages) == 2 and all(d["more"] for d in long_pages)
    text = runner.invoke(cli, ["search", QUERY, "--kb", "all", "-k", "4"])
    assert text.exit_code == 0, text.output
    assert "[two] notes/starter.md" in text.output and "[one] baking/sourdough.md" in text.output
    assert text.output.count("more section") >= 2
