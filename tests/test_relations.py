"""Relation-aware mention weights (issue 12, item 3): mention contexts and the reweighted walk."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from pinakes.graph import GRAPH_SCHEMA, Edge, GraphIndex, GraphWriter, Node
from pinakes_mentions.names import Matcher, fold, mention_context
from pinakes_ppr import build_operator, personalized_pagerank
from pinakes_ppr.relations import RelationIndex, reweighted_operator

ON = "[graph]\nmentions = true\n"


def test_mention_context_is_the_clause_around_the_name() -> None:
    m = Matcher(["polish easter", "jakob ziemnicki", "anna kowalska"])
    text = fold("Polish Easter is a 2011 German comedy film directed by Jakob Ziemnicki, "
                "and produced by Anna Kowalska.")
    spans = m.spans(text)
    words = {s[2]: mention_context(text, spans, i) for i, s in enumerate(spans)}
    assert words["jakob ziemnicki"] == ["german", "comedy", "film", "directed"]
    assert words["anna kowalska"] == ["produced"]  # the comma ends Jakob's clause
    assert m.counts(text) == {"polish easter": 1, "jakob ziemnicki": 1, "anna kowalska": 1}


def _graph(weights: dict[tuple[int, str], float]) -> tuple[GraphIndex, sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(GRAPH_SCHEMA)
    conn.execute("CREATE TABLE entity_context (doc INTEGER, chunk INTEGER, key TEXT, words TEXT)")
    w = GraphWriter(conn)
    edges = [Edge(Node("chunk", str(c)), Node("entity", k, k), "mentions", wt)
             for (c, k), wt in weights.items()]
    edges.append(Edge(Node("chunk", "1"), Node("chunk", "2"), "sibling", 1.0))
    w.add(edges, "test", None)
    w.finish()
    return GraphIndex.load(conn, 1), conn


def test_the_reweighted_walk_equals_the_walk_of_the_reweighted_graph() -> None:
    base = {(1, "x"): 1.0, (1, "a"): 0.5, (1, "b"): 0.5, (2, "a"): 1.0, (3, "b"): 1.0,
            (3, "x"): 0.3}
    g, conn = _graph(base)
    conn.executemany("INSERT INTO entity_context VALUES (1, ?, ?, ?)",
                     [(1, "a", "film directed"), (1, "b", "produced"), (3, "x", "directed")])
    index = RelationIndex.build(conn, g)
    assert index.size == 3
    edges, share = index.match(["direc"])
    assert len(edges) == 2 and np.allclose(share, 1.0)
    factor = 1.0 + 4.0 * share
    for backend in ("scipy", "numpy"):
        op = build_operator(g, backend)
        # Both directions: exactly the walk of the graph with those edges' weights x5.
        walk = reweighted_operator(op, g, edges, factor, index, both=True)
        assert walk is not None
        scaled = dict(base)
        scaled[(1, "a")] *= 5.0
        scaled[(3, "x")] *= 5.0
        g2, _ = _graph(scaled)
        op2 = build_operator(g2, backend)
        assert list(g2.keys) == list(g.keys)
        x = np.random.default_rng(0).random(g.n)
        assert np.allclose(walk.matvec(x), op2.matvec(x))
        r = np.zeros(g.n)
        r[g.keys.index("x")] = 1.0
        p1, _ = personalized_pagerank(walk, r, 0.5, 1e-12, 200)
        p2, _ = personalized_pagerank(op2, r, 0.5, 1e-12, 200)
        assert np.allclose(p1, p2) and p1.sum() == pytest.approx(1.0)
        # The default: only the chunks' out-weights change; the walk stays stochastic.
        out = reweighted_operator(op, g, edges, factor, index)
        assert out is not None
        columns = np.stack([out.matvec(np.eye(g.n)[i]) for i in range(g.n)], axis=1)
        assert np.allclose(columns.sum(axis=0), 1.0)
        c1, a, b = g.keys.index("1"), g.keys.index("a"), g.keys.index("b")
        # chunk 1: x 1.0, a 0.5 x 5, b 0.5, its sibling 1.0 -> a gets 2.5 / 5
        assert columns[a, c1] == pytest.approx(0.5) and columns[b, c1] == pytest.approx(0.1)
        base_cols = np.stack([op.matvec(np.eye(g.n)[i]) for i in range(g.n)], axis=1)
        assert np.allclose(columns[:, a], base_cols[:, a])  # the entity's own choice is unchanged


def test_a_store_without_mention_contexts_reweights_nothing() -> None:
    g, conn = _graph({(1, "x"): 1.0})
    conn.execute("DROP TABLE entity_context")
    assert RelationIndex.build(conn, g).size == 0


FILMS = {
    "films/polish-easter.md": "# Polish Easter\n\nPolish Easter is a 2011 German comedy film "
                              "directed by Jakob Ziemnicki, and produced by Anna Kowalska. Most "
                              "of it was shot on the farm of Anna Kowalska.\n",
    "people/jakob.md": "# Jakob Ziemnicki\n\nJakob Ziemnicki is a Polish filmmaker who was born "
                       "in Gdansk.\n",
    "people/anna.md": "# Anna Kowalska\n\nAnna Kowalska is a Polish screenwriter who was born "
                      "in Krakow.\n",
}


def _films() -> dict[str, str]:
    files = dict(FILMS)
    for i in range(8):
        files[f"notes/n{i}.md"] = (f"# Festival note {i}\n\nComedy films shown at the festival, "
                                   f"note {i}: farms, towns and harbours.\n")
    return files


def test_the_walk_follows_the_relation_the_question_asks_about(make_kb) -> None:
    """'The director of X': the director's page over the producer's, both named in X's page.

    The walk alone (bridges off: they read the same relation off the mention's
    context, tests/test_bridges.py), with and without its relation weights.
    """
    q = "Where was the director of Polish Easter born?"
    walk = "[retrieval]\nppr_bridge_weight = 0\n"
    blind = make_kb(_films(), name="blind", config=ON + walk + "ppr_relation_weight = 0\n")
    blind.sync()
    aware = make_kb(_films(), name="aware", config=ON + walk)  # the walk's default weights
    aware.sync()

    def order(kb) -> list[str]:
        return [h.path for h in kb.search(q, k=4, channel="ppr").hits]

    # Relation-blind, the producer wins: Polish Easter's page names her twice.
    before = order(blind)
    assert before.index("people/anna.md") < before.index("people/jakob.md")
    after = order(aware)
    assert after.index("people/jakob.md") < after.index("people/anna.md")
    assert after[0] == "films/polish-easter.md"
    # A question about the producer still reaches her first.
    prod = [h.path for h in aware.search("Where was the producer of Polish Easter born?", k=4,
                                         channel="ppr").hits]
    assert prod.index("people/anna.md") < prod.index("people/jakob.md")


def test_mention_contexts_follow_edits(make_kb) -> None:
    kb = make_kb(FILMS, name="edits", config=ON)
    kb.sync()

    def contexts() -> dict[str, str]:
        with kb.reader().snapshot() as conn:
            return {k: w for k, w in conn.execute(
                "SELECT key, words FROM entity_context ORDER BY key")}

    assert contexts()["jakob ziemnicki"] == "german comedy film directed"
    (kb.root / "films/polish-easter.md").write_text(
        "# Polish Easter\n\nPolish Easter was written by Jakob Ziemnicki.\n", encoding="utf-8")
    kb.sync()
    assert contexts() == {"jakob ziemnicki": "written"}
