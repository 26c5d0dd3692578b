"""The ``ppr`` graph channel (plugins/pinakes-ppr) and the ``graph_fusion`` setting."""

from __future__ import annotations

import os
import re
import sqlite3

import networkx as nx
import numpy as np
import pytest

from pinakes import hookimpl, plugins
from pinakes.config import load_config
from pinakes.errors import ConfigError, QueryError
from pinakes.graph import GRAPH_SCHEMA, Edge, GraphIndex, GraphWriter, Node, doc_node
from pinakes_ppr import (
    Operator,
    PPRChannel,
    SeedIndex,
    Settings,
    Trace,
    build_operator,
    operator_for,
    personalized_pagerank,
    reset_vector,
    run_ppr,
    top_chunks,
)

# --- hand-built graphs -----------------------------------------------------------------


def build(edges: list[tuple[Node, Node, str, float]]) -> tuple[GraphIndex, sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(GRAPH_SCHEMA)
    w = GraphWriter(conn)
    w.add([Edge(a, b, k, wt) for a, b, k, wt in edges], "test", None)
    w.finish()
    return GraphIndex.load(conn, 1), conn


def C(i: int) -> Node:
    return Node("chunk", str(i))


def D(i: int) -> Node:
    return doc_node(i)


def T(name: str) -> Node:
    return Node("tag", name, name, damp=True)


def node_of(g: GraphIndex, kind: str, key: str) -> int:
    return next(i for i in range(g.n) if g.kind(i) == kind and g.keys[i] == key)


def cosines_for(op: Operator, values: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array(sorted(int(c) for c in op.chunk_ids), dtype=np.int64)
    return ids, np.array([values.get(int(c), 0.0) for c in ids], dtype=np.float32)


HAND = [
    (C(1), D(1), "membership", 1.0), (C(2), D(1), "membership", 1.0), (C(1), C(2), "sibling", 1.0),
    (C(3), D(2), "membership", 1.0), (C(4), D(3), "membership", 1.0),
    (D(1), D(2), "authored", 2.0), (D(1), T("t"), "shared-tag", 1.0),
    (D(3), T("t"), "shared-tag", 1.0), (D(2), T("t"), "shared-tag", 1.0),
    (C(4), Node("heading", "3:x", "Boilers", damp=True), "in-section", 1.0),
]


def test_two_nodes_closed_form() -> None:
    # a - b, all reset on a: p_a = 0.5 + 0.5 p_b, p_b = 0.5 p_a  =>  p = (2/3, 1/3)
    g, _ = build([(C(1), C(2), "sibling", 1.0)])
    op = build_operator(g, dtype=np.float64)
    r = np.zeros(g.n)
    r[node_of(g, "chunk", "1")] = 1.0
    p, _ = personalized_pagerank(op, r, 0.5, tolerance=1e-14, max_iterations=200)
    assert p[node_of(g, "chunk", "1")] == pytest.approx(2 / 3, abs=1e-9)
    assert p[node_of(g, "chunk", "2")] == pytest.approx(1 / 3, abs=1e-9)


@pytest.mark.parametrize("backend", ["scipy", "numpy"])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_matches_networkx_personalized_pagerank(backend: str, damping: float) -> None:
    g, _ = build(HAND)
    op = build_operator(g, backend, dtype=np.float64)
    ids, cos = cosines_for(op, {1: 0.9, 2: 0.4, 3: -0.3, 4: 0.1})
    seeds = [(node_of(g, "tag", "t"), 0.7)]
    r = reset_vector(op, op.chunk_cosines(ids, cos), 0.05, seeds)
    p, iterations = personalized_pagerank(op, r, damping, tolerance=1e-13, max_iterations=500)
    assert 1 < iterations < 500
    # Reference: networkx on the same (hub-damped, undirected) weights.
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    for u in range(g.n):
        for j in range(g.indptr[u], g.indptr[u + 1]):
            G.add_edge(u, int(g.nbr[j]), weight=float(g.weight[j]))
    ref = nx.pagerank(G, alpha=damping, personalization={i: float(r[i]) for i in range(g.n)},
                      weight="weight", tol=1e-15, max_iter=10_000)
    assert max(abs(p[i] - ref[i]) for i in range(g.n)) < 1e-6
    assert p.sum() == pytest.approx(1.0, abs=1e-9)


def test_backends_agree() -> None:
    g, _ = build(HAND)
    a, b = build_operator(g, "scipy", np.float64), build_operator(g, "numpy", np.float64)
    x = np.linspace(0.1, 1.0, g.n)
    assert np.allclose(a.matvec(x), b.matvec(x), atol=1e-12)
    assert a.nbytes > 0 and b.nbytes > 0


@pytest.mark.parametrize("backend", ["scipy", "numpy"])
def test_float32_walk_agrees_with_float64(backend: str) -> None:
    # The default operator walks in float32: the same scores to ~1e-7, the same ranking.
    g, _ = build(HAND)
    lo, hi = build_operator(g, backend), build_operator(g, backend, np.float64)
    assert lo.dtype == np.float32 and lo.coef.dtype == np.float32 and hi.coef.dtype == np.float64
    ids, cos = cosines_for(lo, {1: 0.9, 2: 0.4, 3: -0.3, 4: 0.1})
    seeds = [(node_of(g, "tag", "t"), 0.7)]
    r = reset_vector(lo, lo.chunk_cosines(ids, cos), 0.05, seeds)
    assert r.dtype == np.float32
    p32, it32 = personalized_pagerank(lo, r, 0.5, tolerance=1e-6, max_iterations=100)
    p64, it64 = personalized_pagerank(hi, r, 0.5, tolerance=1e-6, max_iterations=100)
    assert p32.dtype == np.float32 and p64.dtype == np.float64
    assert it32 == it64
    assert np.abs(p32 - p64).max() < 1e-6
    top32, top64 = top_chunks(lo, p32, 10), top_chunks(hi, p64, 10)
    assert [c for c, _ in top32] == [c for c, _ in top64] and len(top32) == 4
    assert [s for _, s in top32] == pytest.approx([s for _, s in top64], rel=1e-5)


def test_a_walk_split_over_two_threads_gives_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    # ppr_walk_threads = 2 runs each step's rows in two halves on two threads; every row is
    # summed by the same kernel in the same order, so the scores are bit-identical.
    import threading

    import pinakes_ppr

    monkeypatch.setattr(pinakes_ppr, "PARALLEL_EDGES", 1)  # the hand graph is tiny
    g, _ = build(HAND)
    ids, cos = cosines_for(build_operator(g, "scipy"), {1: 0.9, 2: 0.4, 3: -0.3, 4: 0.1})
    walks = {}
    for threads in (1, 2):
        op = build_operator(g, "scipy")
        r = reset_vector(op, op.chunk_cosines(ids, cos), 0.05, [(node_of(g, "tag", "t"), 0.7)])
        walks[threads] = personalized_pagerank(op, r, 0.5, 1e-9, 200, threads=threads)
    assert walks[1][1] == walks[2][1] > 3
    assert walks[1][0].tobytes() == walks[2][0].tobytes()
    assert 0 < op._split()[0] < g.n  # the rows really were cut in two
    named = [t.name for t in threading.enumerate()]
    assert any(n.startswith("pinakes-ppr-walk") for n in named) == ((os.cpu_count() or 1) > 1)
    assert Settings.from_config({"ppr_walk_threads": 0}).walk_threads == 1


def test_a_forked_child_still_walks_in_two_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fork keeps the helper thread's executor but not the thread: without a fresh one
    # the child's first walk would wait forever for work nobody runs.
    import signal

    import pinakes_ppr

    monkeypatch.setattr(pinakes_ppr, "PARALLEL_EDGES", 1)
    g, _ = build(HAND)
    op = build_operator(g, "scipy")
    ids, cos = cosines_for(op, {1: 0.9, 2: 0.4})
    r = reset_vector(op, op.chunk_cosines(ids, cos), 0.05, [(node_of(g, "tag", "t"), 0.7)])
    parent, _ = personalized_pagerank(op, r, 0.5, 1e-9, 200, threads=2)
    pid = os.fork()
    if pid == 0:  # the child: a hang ends in SIGALRM, a wrong walk in exit code 3
        signal.alarm(20)
        child, _ = personalized_pagerank(op, r, 0.5, 1e-9, 200, threads=2)
        os._exit(0 if child.tobytes() == parent.tobytes() else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_fast_step_matches_the_public_product() -> None:
    # damped_step accumulates d * M @ x into its output in one compiled pass (scipy's
    # kernel, weights pre-scaled once per damping); the NumPy backend does the same sum.
    g, _ = build(HAND)
    x = np.linspace(0.1, 1.0, g.n)
    for dtype in (np.float32, np.float64):
        fast, slow = build_operator(g, "scipy", dtype), build_operator(g, "numpy", dtype)
        a = np.full(g.n, 0.25, dtype=dtype)
        b = a.copy()
        fast.damped_step(0.85)(x.astype(dtype), a)
        slow.damped_step(0.85)(x.astype(dtype), b)
        expected = 0.25 + 0.85 * slow.matvec(x.astype(np.float64).astype(dtype))
        assert np.allclose(a, expected, atol=1e-6) and np.allclose(b, expected, atol=1e-6)
        assert fast.damped_step(0.85) is not None and 0.85 in fast._scaled
    with pytest.raises(ValueError, match="float32 or float64"):
        build_operator(g, dtype=np.float16)


def test_a_query_without_seeds_never_builds_the_sparse_matrix() -> None:
    # Building the operator is NumPy only; the SciPy matrix comes with the first walk,
    # so a query that names nothing (no seed, no walk) never needs SciPy.
    g, conn = build(HAND)
    op = build_operator(g, "scipy")
    assert op._matrix is None
    ids, cos = cosines_for(op, {1: 0.9, 2: 0.4})
    assert run_ppr(op, g, Settings(), query="nothing named here", dense_ids=ids, cosines=cos,
                   conn=conn) == []
    assert op._matrix is None
    r = reset_vector(op, op.chunk_cosines(ids, cos), 0.05)
    personalized_pagerank(op, r)
    assert op._scaled  # the walk made its damped weights (the compiled kernel's input)
    assert op.matrix is not None and op.matrix.dtype == np.float32


def test_reset_vector_clamps_negative_cosines_and_seeds() -> None:
    g, _ = build(HAND)
    op = build_operator(g)
    ids, cos = cosines_for(op, {1: -0.8, 2: 0.5, 3: 0.0, 4: -0.01})
    tag = node_of(g, "tag", "t")
    r = reset_vector(op, op.chunk_cosines(ids, cos), 0.05, [(tag, -3.0)])
    assert (r >= 0).all()
    assert r[node_of(g, "chunk", "1")] == 0.0 and r[node_of(g, "chunk", "4")] == 0.0
    assert r[node_of(g, "chunk", "2")] == pytest.approx(0.025)
    assert r[tag] == 0.0
    # Nothing positive to start from: no walk, an empty channel (fusion keeps two lists).
    ids, cos = cosines_for(op, {1: -0.5, 2: -0.2, 3: -0.1, 4: -0.9})
    out = run_ppr(op, g, Settings(require_seeds=False), query="anything", dense_ids=ids,
                  cosines=cos)
    assert out == []


def test_hub_damping_weakens_popular_tags() -> None:
    # Root chunk 0 in doc 0 shares a rare tag with doc 1 and a popular one with docs 2..11.
    edges = [(C(i), D(i), "membership", 1.0) for i in range(12)]
    edges += [(D(0), T("rare"), "shared-tag", 1.0), (D(1), T("rare"), "shared-tag", 1.0)]
    edges += [(D(i), T("popular"), "shared-tag", 1.0) for i in [0, *range(2, 12)]]
    g, conn = build(edges)
    op = build_operator(g)
    r = np.zeros(g.n)
    r[node_of(g, "chunk", "0")] = 1.0
    p, _ = personalized_pagerank(op, r, 0.5, tolerance=1e-12)
    rare = p[node_of(g, "chunk", "1")]
    popular = [p[node_of(g, "chunk", str(i))] for i in range(2, 12)]
    assert rare > 5 * max(popular)
    # As seeds, a tag counts 1/(chunks it connects to): the popular one seeds 1/11 as much.
    index = SeedIndex.build(conn, g, ("tag",), op.chunk_count)
    assert op.chunk_count[node_of(g, "tag", "popular")] == 11
    assert op.chunk_count[node_of(g, "tag", "rare")] == 2
    found = {int(index.nodes[index.indptr[ph]]): sc for ph, sc in index.match("rare popular", 5)}
    rare_mass = index.seed_mass(next(ph for ph, _ in index.match("rare", 5)), 1.0)
    popular_mass = index.seed_mass(next(ph for ph, _ in index.match("popular", 5)), 1.0)
    assert set(found) == {node_of(g, "tag", "rare"), node_of(g, "tag", "popular")}
    assert rare_mass[0][1] == pytest.approx(1 / 2) and popular_mass[0][1] == pytest.approx(1 / 11)


def test_seed_matching_prefers_the_specific_label() -> None:
    heading = lambda d, label: Node("heading", f"{d}:{label}", label, damp=True)  # noqa: E731
    edges = [(C(i), D(i), "membership", 1.0) for i in range(1, 7)]
    edges += [(C(i), heading(i, "How it works"), "in-section", 1.0) for i in range(1, 5)]
    edges += [(C(5), heading(5, "The idea: late interaction"), "in-section", 1.0)]
    edges += [(C(6), heading(6, "Introduction"), "in-section", 1.0)]
    edges += [(D(5), T("late-interaction"), "shared-tag", 1.0)]
    g, conn = build(edges)
    op = build_operator(g)
    index = SeedIndex.build(conn, g, ("tag", "heading", "entity"), op.chunk_count)
    got = index.match("How does late interaction work?", 5, 0.5)
    labels = [conn.execute("SELECT label FROM nodes WHERE id = ?",
                           (int(g.node_ids[index.nodes[index.indptr[ph]]]),)).fetchone()[0]
              for ph, _ in got]
    assert labels[0] == "late-interaction"  # named in full, most of the query
    assert labels.index("The idea: late interaction") < labels.index("How it works")
    assert "Introduction" not in labels
    # "How it works" is one phrase over four sections: its mass is spread over all four.
    ph = next(p for p, _ in got if labels[[q for q, _ in got].index(p)] == "How it works")
    mass = index.seed_mass(ph, 1.0)
    assert len(mass) == 4 and sum(w for _, w in mass) == pytest.approx(1 / 4)
    assert index.match("what is for dinner", 5, 0.5) == []


def test_only_labels_named_in_full_seed_by_default() -> None:
    entity = lambda name: Node("entity", name.lower(), name)  # noqa: E731
    edges = [(C(1), entity("Lothair II"), "mentions", 1.0), (C(2), entity("Do or Die"), "mentions", 1.0),
             (C(3), entity("Lothair"), "mentions", 1.0), (C(1), D(1), "membership", 1.0)]
    g, conn = build(edges)
    op = build_operator(g)
    index = SeedIndex.build(conn, g, ("entity",), op.chunk_count)

    def named(query: str, partial: float = 0.0) -> set[str]:
        return {g.keys[int(index.nodes[index.indptr[ph]])] for ph, _ in index.match(query, 5, partial)}

    assert named("When did Lothair II's mother die?") == {"lothair ii", "lothair"}
    assert named("When did lothair ii die") == {"lothair ii", "lothair"}  # case-insensitive
    assert named("Who is II Lothair?") == {"lothair"}  # words out of order: not named
    assert "do or die" in named("When did Lothair II's mother die?", partial=0.5)


def test_top_chunks_is_deterministic_with_ties() -> None:
    g, _ = build([(C(5), D(1), "membership", 1.0), (C(3), D(1), "membership", 1.0),
                  (C(9), D(1), "membership", 1.0)])
    op = build_operator(g)
    ids, cos = cosines_for(op, {5: 0.5, 3: 0.5, 9: 0.5})
    s = Settings(require_seeds=False)
    first = run_ppr(op, g, s, query="x", dense_ids=ids, cosines=cos)
    assert [c for c, _ in first] == [3, 5, 9]  # equal scores: by chunk id
    assert first == run_ppr(op, g, s, query="x", dense_ids=ids, cosines=cos)
    assert top_chunks(op, np.zeros(g.n), 10) == []


def test_empty_graph_operator_and_settings() -> None:
    g, _ = build([])
    op = build_operator(g)
    assert op.n == 0
    p, iterations = personalized_pagerank(op, np.zeros(0))
    assert iterations == 0 and len(p) == 0
    s = Settings.from_config({"ppr_seed_kinds": "tag|entity", "graph_fusion": "final"})
    assert s.seed_kinds == ("entity", "tag") and s.final
    with pytest.raises(ConfigError, match="ppr_damping"):
        Settings.from_config({"ppr_damping": 1.0})
    assert Settings.from_config({}).precision == "float32"
    assert Settings.from_config({"ppr_precision": "float64"}).precision == "float64"
    with pytest.raises(ConfigError, match="ppr_precision"):
        Settings.from_config({"ppr_precision": "float16"})


def test_operators_are_cached_per_precision() -> None:
    g, _ = build(HAND)
    lo, hi = operator_for(g), operator_for(g, dtype="float64")
    assert lo.dtype == np.float32 and hi.dtype == np.float64
    assert operator_for(g) is lo and operator_for(g, dtype=np.float64) is hi


# --- through a KB --------------------------------------------------------------------

ENTITY_RE = re.compile(r"\b(Valve 7731|Orla Quist|Harbour Works)\b")


class _Mentions:
    """A test deriver standing in for the NER plugin: chunk ↔ entity "mentions" edges."""

    name = "test-mentions"

    def derive(self, doc, conn):
        for chunk in doc.chunks:
            for name in sorted(set(ENTITY_RE.findall(chunk.text))):
                yield Edge(Node("chunk", str(chunk.id)),
                           Node("entity", name.lower(), name, damp=True), "mentions", 1.0)


class _MentionsPlugin:
    @hookimpl
    def register_edge_derivers(self, register):
        register(_Mentions())


@pytest.fixture
def mentions():
    plugins.load_plugins()
    plugin = _MentionsPlugin()
    plugins.pm.register(plugin, name="test-mentions")
    try:
        yield
    finally:
        plugins.pm.unregister(plugin)


BRIDGE = {
    "people/quist.md": "# Orla Quist\n\nOrla Quist was the engineer in charge at Harbour Works "
                       "for thirty years.\n",
    "sites/harbour.md": "# Harbour Works\n\nThe pumping station at Harbour Works relies on "
                        "Valve 7731 to hold the line pressure.\n",
    "parts/valve.md": "# Part catalogue\n\nValve 7731, fitted at Harbour Works, opens at three bar "
                      "and was cast in bronze.\n",
}


def _noise(n: int) -> dict[str, str]:
    return {f"noise/n{i}.md": f"# Valve note {i}\n\nValves at pumping stations hold pressure; note {i}.\n"
            for i in range(n)}


def test_ppr_lifts_a_document_that_mentions_what_the_query_names(make_kb, mentions) -> None:
    kb = make_kb({**BRIDGE, **_noise(8)})
    kb.sync()
    q = "Which alloy was used for the component at Orla Quist's employer?"

    def rank(channel: str) -> int:
        res = kb.search(q, k=11, channel=channel)
        return [h.path for h in res.hits].index("sites/harbour.md")

    # The query names Orla Quist (an entity seed); her page mentions Harbour Works, and
    # so does the site's page: two entity hops the hybrid cannot see.
    assert rank("ppr") < rank("off")
    hit = next(h for h in kb.search(q, k=11, channel="ppr").hits if h.path == "sites/harbour.md")
    assert hit.ranks["graph"] is not None and hit.ranks["dense"] is not None
    assert PPRChannel.name == "ppr"


def test_final_fusion_makes_the_channel_list_the_ranking(make_kb, mentions) -> None:
    kb = make_kb({**BRIDGE, **_noise(6)}, config='[retrieval]\ngraph_fusion = "final"\n')
    kb.sync()
    q = "What was Orla Quist's station's valve made of?"
    res = kb.search(q, k=6, channel="ppr")
    assert [h.ranks["graph"] for h in res.hits] == list(range(1, 7))
    assert all("lexical" in h.ranks and "dense" in h.ranks for h in res.hits)
    scores = [h.score for h in res.hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    # The fused (three-list) top score carries over, so calibration and priors, which
    # read fused scores, see the usual scale.
    kb.config.data["retrieval"]["graph_fusion"] = "rrf"
    fused_top = kb.search(q, k=6, channel="ppr").hits[0].score
    assert scores[0] == pytest.approx(fused_top, rel=1e-4)


def test_operator_is_reused_across_queries_and_rebuilt_after_sync(make_kb, mentions) -> None:
    kb = make_kb({**BRIDGE, **_noise(3)})
    kb.sync()
    kb.search("Orla Quist", channel="ppr")
    g1 = kb.graph_index(kb.reader())
    op1 = operator_for(g1)
    kb.search("Valve 7731 bronze", channel="ppr")
    assert kb.graph_index(kb.reader()) is g1 and operator_for(g1) is op1
    assert op1.generation == g1.generation
    (kb.root / "parts/gasket.md").write_text("# Gasket\n\nValve 7731 needs a new gasket.\n",
                                             encoding="utf-8")
    kb.sync()
    kb.search("Valve 7731 gasket", channel="ppr")
    g2 = kb.graph_index(kb.reader())
    op2 = operator_for(g2)
    assert g2 is not g1 and op2 is not op1
    assert op2.generation > op1.generation and op2.n > op1.n


def test_determinism_through_search(make_kb, mentions) -> None:
    kb = make_kb({**BRIDGE, **_noise(4)})
    kb.sync()
    q = "Harbour Works pressure valve"
    a = [(h.chunk_id, h.score, h.ranks) for h in kb.search(q, channel="ppr").hits]
    kb.invalidate()  # a fresh index, a fresh operator: same answer
    b = [(h.chunk_id, h.score, h.ranks) for h in kb.search(q, channel="ppr").hits]
    assert a == b


def test_empty_graph_gives_an_empty_channel_and_search_unchanged(make_kb, monkeypatch) -> None:
    kb = make_kb({"a.md": "# A\n\nthe lighthouse keeper\n", "b.md": "# B\n\nfresh bread\n"})
    monkeypatch.setattr(kb, "edge_derivers", lambda: {})
    kb.sync()
    off = kb.search("lighthouse", channel="off")
    for fusion in ("auto", "rrf", "final"):
        kb.config.data["retrieval"]["graph_fusion"] = fusion
        ppr = kb.search("lighthouse", channel="ppr")
        assert [(h.chunk_id, h.score) for h in off.hits] == [(h.chunk_id, h.score) for h in ppr.hits]
        assert all(h.ranks.get("graph") is None for h in ppr.hits)


def test_a_kb_without_the_plugin_behaves_as_before(make_kb, monkeypatch) -> None:
    kb = make_kb({**BRIDGE, **_noise(3)})
    kb.sync()
    base = [(h.chunk_id, h.score, h.ranks) for h in kb.search("Harbour Works valve", channel="off").hits]
    others = {k: v for k, v in plugins.get_graph_channels().items() if k != "ppr"}
    monkeypatch.setattr(kb, "graph_channels", lambda: others)
    with pytest.raises(QueryError, match=r"graph channel 'ppr' is not installed: "
                                         r"pip install 'pinakes\[graph\]'"):
        kb.search("Harbour Works valve", channel="ppr")
    # graph_fusion only matters when a channel runs: without one, nothing changes.
    kb.config.data["retrieval"]["graph_fusion"] = "final"
    assert [(h.chunk_id, h.score, h.ranks) for h in kb.search("Harbour Works valve").hits] == base
    kb.config.data["retrieval"]["graph_fusion"] = "sideways"
    with pytest.raises(QueryError, match="graph_fusion"):
        kb.search("Harbour Works valve")


def test_graph_fusion_is_validated_in_config(tmp_path) -> None:
    (tmp_path / "pinakes.toml").write_text('[retrieval]\ngraph_fusion = "last"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="graph_fusion"):
        load_config(tmp_path)
    (tmp_path / "pinakes.toml").write_text(
        '[retrieval]\ngraph_fusion = "final"\nppr_chunk_weight = 0.01\n', encoding="utf-8")
    cfg = load_config(tmp_path).retrieval
    s = Settings.from_config(cfg)
    assert s.final and s.chunk_weight == 0.01 and s.damping == 0.5


def test_eval_matrix_selects_ppr_variants() -> None:
    from pinakes.evaluation.runner import parse_matrix

    settings = parse_matrix(
        "off,expand,ppr,ppr+final,ppr+graph_weight=0.5,ppr+ppr_chunk_weight=0.01+ppr_damping=0.6",
        {"expand": None, "ppr": None},
    )
    by = {s.name: s for s in settings}
    assert by["ppr"].channel == "ppr" and not by["ppr"].overrides
    assert dict(by["ppr+final"].overrides) == {"graph_fusion": "final"}
    assert dict(by["ppr+graph_weight=0.5"].overrides) == {"graph_weight": 0.5}
    assert dict(by["ppr+ppr_chunk_weight=0.01+ppr_damping=0.6"].overrides) == {
        "ppr_chunk_weight": 0.01, "ppr_damping": 0.6}


def test_trace_reports_iterations_and_seeds(make_kb, mentions) -> None:
    kb = make_kb({**BRIDGE, **_noise(2)})
    kb.sync()
    store = kb.reader()
    with store.snapshot() as conn:
        g = kb.graph_index(store)
        dense = kb.dense_index(store)
        cos = dense.matrix @ kb.embedder.embed_query("Orla Quist")
        trace = Trace()
        out = run_ppr(operator_for(g), g, Settings(), query="Orla Quist", dense_ids=dense.ids,
                      cosines=cos, conn=conn, trace=trace)
    assert out and trace.iterations > 1
    assert any(g.kind(n) == "entity" and g.keys[n] == "orla quist" for n, _ in trace.seeds)


def test_no_named_seed_means_no_list_and_the_hybrid_stands(make_kb, mentions) -> None:
    kb = make_kb({**BRIDGE, **_noise(4)})
    kb.sync()
    q = "pressure held at pumping stations"  # names no tag, heading or entity
    off = [(h.chunk_id, h.score) for h in kb.search(q, channel="off").hits]
    ppr = kb.search(q, channel="ppr")
    assert [(h.chunk_id, h.score) for h in ppr.hits] == off
    assert all(h.ranks.get("graph") is None for h in ppr.hits)
    assert ppr.confidence == kb.search(q, channel="off").confidence  # calibration still applies
    kb.config.data["retrieval"]["ppr_require_seeds"] = False
    assert any(h.ranks["graph"] is not None for h in kb.search(q, channel="ppr").hits)


class _Fixed:
    """A channel with no ``fusion`` attribute: ``auto`` must fuse it by RRF."""

    name = "fixed"

    def __init__(self, order: list[int]) -> None:
        self.order = order

    def search(self, ctx):
        return [(cid, 1.0 / (i + 1)) for i, cid in enumerate(self.order)]


def test_auto_fusion_asks_the_channel(make_kb, monkeypatch) -> None:
    kb = make_kb({**BRIDGE, **_noise(4)})
    kb.sync()
    q = "Harbour Works valve"
    ids = [h.chunk_id for h in kb.search(q, k=7, channel="off").hits]
    fixed = _Fixed(list(reversed(ids)))
    monkeypatch.setattr(kb, "graph_channels", lambda: {"fixed": fixed, "ppr": PPRChannel()})
    auto = [h.chunk_id for h in kb.search(q, k=7, channel="fixed").hits]
    assert auto != fixed.order  # RRF: the hybrid's lists still count
    kb.config.data["retrieval"]["graph_fusion"] = "final"
    assert [h.chunk_id for h in kb.search(q, k=7, channel="fixed").hits] == fixed.order
    assert PPRChannel.fusion == "final"


def test_warm_graph_builds_a_generations_indexes_before_any_query(make_kb, mentions) -> None:
    # Long-lived processes (pnk serve) call KB.warm_graph at start and after each sync,
    # so the first query of a generation finds the operator and its indexes built.
    kb = make_kb({**BRIDGE, **_noise(3)}, config='[retrieval]\ngraph_channel = "ppr"\n')
    kb.sync()
    assert kb.warm_graph() is True
    g = kb.graph_index(kb.reader())
    op = operator_for(g)
    names = op._names[("entity",)]
    assert names.names and op._divisors and 0.5 in op._scaled
    from pinakes_ppr import relations

    assert g in relations._INDEXES  # the relation weights' mention contexts too
    kb.search("Orla Quist", channel="ppr")
    assert kb.graph_index(kb.reader()) is g and operator_for(g) is op
    assert op._names[("entity",)] is names  # the query reused it
    kb.config.data["retrieval"]["graph_channel"] = "off"
    assert kb.warm_graph() is False


def test_the_server_warms_a_served_kb_after_the_watcher_syncs_it(make_kb, mentions) -> None:
    from pinakes import KB
    from pinakes.mcp_server import PinakesServer

    kb = make_kb({**BRIDGE, **_noise(3)}, config='[retrieval]\ngraph_channel = "ppr"\n')
    kb.sync()
    server = PinakesServer([kb])
    kb.search("Orla Quist")
    before = kb.graph_index(kb.reader())
    other = KB.open(kb.root)  # the watcher syncs through its own KB object
    (kb.root / "parts/gasket.md").write_text("# Gasket\n\nOrla Quist ordered a gasket.\n",
                                             encoding="utf-8")
    other.sync()
    other.close()
    server.warm_after_sync(kb.root)
    assert kb._graph is not None and kb._graph is not before
    assert kb._graph.generation == kb.reader().generation
    op = operator_for(kb._graph)
    assert op._names and op._divisors


def test_a_walk_loads_only_scipys_kernel_not_scipy_sparse() -> None:
    # Importing scipy.sparse costs ~0.4 s of a one-shot `pnk search`; the walk needs one
    # compiled function, loaded from its own extension module. Same scores as NumPy's.
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from tests.test_ppr import HAND, build\n"
        "from pinakes_ppr import build_operator, personalized_pagerank, _csr_matvec\n"
        "g, _ = build(HAND)\n"
        "r = np.linspace(0.1, 1.0, g.n)\n"
        "p, _ = personalized_pagerank(build_operator(g, 'scipy'), r, 0.5, 1e-6)\n"
        "q, _ = personalized_pagerank(build_operator(g, 'numpy'), r, 0.5, 1e-6)\n"
        "print(_csr_matvec() is not None, 'scipy.sparse' in sys.modules,"
        " float(np.abs(p - q).max()) < 1e-6)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert out.stdout.split() == ["True", "False", "True"], out.stderr


# --- a name used as a common noun ---------------------------------------------------------


def E(label: str) -> Node:
    return Node("entity", label.lower(), label)


def lowercase_index() -> tuple[GraphIndex, object]:
    from pinakes_ppr import NameIndex

    g, conn = build([(C(1), E("Place of birth"), "mentions", 1.0),
                     (C(2), E("Polish Wedding"), "mentions", 1.0),
                     (C(3), E("Polish Wedding"), "mentions", 1.0),
                     (C(4), E("hybrid search"), "mentions", 1.0)])
    return g, NameIndex.build(conn, g, ["entity"], np.full(g.n, 1.0))


def seeded(g: GraphIndex, index, query: str, weight: float) -> dict[str, float]:
    return {g.keys[n]: w for n, w in index.match(query, 5, weight)}


def test_a_name_written_as_a_common_noun_in_a_cased_query_seeds_weakly() -> None:
    g, index = lowercase_index()
    q = "What is the place of birth of the director of film Polish Wedding?"
    assert seeded(g, index, q, 1.0) == {"place of birth": 1.0, "polish wedding": 1.0}
    assert seeded(g, index, q, 0.1) == {"place of birth": pytest.approx(0.1),
                                        "polish wedding": 1.0}
    assert seeded(g, index, q, 0.0) == {"polish wedding": 1.0}  # dropped, its slot freed


def test_lowercase_queries_and_written_names_are_left_alone() -> None:
    g, index = lowercase_index()
    # Typed in lower case throughout: the casing says nothing, nothing is damped.
    assert seeded(g, index, "what is the place of birth of the director of polish wedding",
                  0.1) == {"place of birth": 1.0, "polish wedding": 1.0}
    # The name written as a name.
    assert seeded(g, index, "Where is the Place of Birth page of Polish Wedding?", 0.1) == {
        "place of birth": 1.0, "polish wedding": 1.0}
    # Only the first word and "I" capitalised: no evidence of casing either.
    assert seeded(g, index, "How do I use the place of birth field?", 0.1) == {
        "place of birth": 1.0}
    # A page whose own title is lower case is written as it is named.
    assert seeded(g, index, "Does BM25 help hybrid search?", 0.1) == {"hybrid search": 1.0}
