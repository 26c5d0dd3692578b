"""The graph fabric, the structural deriver and the expand channel."""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest

from pinakes import hookimpl, plugins
from pinakes.graph import GRAPH_SCHEMA, Edge, GraphIndex, GraphWriter, Node, doc_node
from pinakes_expand import expand

DOCS = {
    "notes/alpha.md": """
        ---
        tags: [shared, only-alpha]
        ---
        # Alpha

        Alpha introduction paragraph about orchards.

        ## Pruning

        Cut apple branches in late winter.

        ### Tools

        Use sharp bypass secateurs.
        """,
    "notes/beta.md": """
        ---
        tags: [shared]
        ---
        # Beta

        Beta talks about beekeeping and hives.
        """,
    "other/gamma.md": """
        ---
        tags: [shared]
        ---
        # Gamma

        Gamma is about tidal pools.
        """,
}


def edges_of(kb) -> list[tuple[str, str, str, str, str, float]]:
    conn = kb.reader().conn
    return conn.execute(
        "SELECT a.kind, a.key, b.kind, b.key, e.kind, e.weight FROM edges e "
        "JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst"
    ).fetchall()


def degree(kb, kind: str, key: str) -> int:
    row = kb.reader().conn.execute(
        "SELECT degree FROM nodes WHERE kind = ? AND key = ?", (kind, key)
    ).fetchone()
    return 0 if row is None else row[0]


def effective(kb, edge_kind: str, hub_kind: str, hub_key: str) -> set[float]:
    g = kb.graph_index(kb.reader())
    hub = g.keys.index(hub_key) if hub_key in g.keys else None
    assert hub is not None and g.kind(hub) == hub_kind
    sl = g.slice(hub)
    code = g.ecode(edge_kind)
    return {round(float(w), 6) for w, k in zip(g.weight[sl], g.edge_kind[sl], strict=True) if k == code}


def test_each_structural_edge_class_and_weight(make_kb) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    rows = edges_of(kb)
    kinds = {r[4] for r in rows}
    assert {"membership", "sibling", "parent", "in-section", "co-located", "shared-tag"} <= kinds
    with kb.reader().snapshot() as conn:
        n_chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert sum(1 for r in rows if r[4] == "membership") == n_chunks
    # alpha has three chunks (intro, Pruning, Tools): two sibling edges, parent edges by heading prefix
    alpha = kb.show("notes/alpha.md")
    assert [s["heading_path"] for s in alpha["sections"]] == [
        ["Alpha"], ["Alpha", "Pruning"], ["Alpha", "Pruning", "Tools"]]
    assert sum(1 for r in rows if r[4] == "parent") == 2
    # hub damping: 1/degree, read from the degree at load time
    assert degree(kb, "tag", "shared") == 3
    assert effective(kb, "shared-tag", "tag", "shared") == {round(1 / 3, 6)}
    assert effective(kb, "co-located", "directory", "notes") == {0.5}
    assert effective(kb, "co-located", "directory", "other") == {1.0}
    assert all(r[5] == 1.0 for r in rows if r[4] in ("membership", "sibling", "parent"))


def test_incremental_rederivation_keeps_hub_weights_right(make_kb) -> None:
    kb = make_kb(DOCS)
    kb.sync()
    # tag change: beta leaves "shared"
    beta = kb.root / "notes" / "beta.md"
    beta.write_text(beta.read_text().replace("tags: [shared]", "tags: [bees]"))
    sc = kb.root / "notes" / "beta.pnk.yaml"
    assert "tags: []" in sc.read_text()
    kb.sync()
    assert degree(kb, "tag", "shared") == 2
    assert effective(kb, "shared-tag", "tag", "shared") == {0.5}
    assert degree(kb, "tag", "bees") == 1
    # delete: gamma's nodes and edges vanish, its directory hub with it
    (kb.root / "other" / "gamma.md").unlink()
    kb.sync()
    assert degree(kb, "tag", "shared") == 1
    assert degree(kb, "directory", "other") == 0
    assert not [r for r in edges_of(kb) if r[1] == "other"]
    # rename into another folder: co-located moves, the doc node keeps its key
    key_before = kb.reader().conn.execute(
        "SELECT doc FROM documents WHERE path = 'notes/beta.md'").fetchone()[0]
    (kb.root / "archive").mkdir()
    shutil.move(beta, kb.root / "archive" / "beta.md")
    shutil.move(sc, kb.root / "archive" / "beta.pnk.yaml")
    kb.sync()
    assert degree(kb, "directory", "notes") == 1
    assert degree(kb, "directory", "archive") == 1
    assert kb.reader().conn.execute(
        "SELECT doc FROM documents WHERE path = 'archive/beta.md'").fetchone()[0] == key_before
    # edit keeps edge counts linear: no duplicates after re-derivation
    kinds = [r[4] for r in edges_of(kb)]
    assert kinds.count("co-located") == 2


def test_edge_count_grows_linearly(make_kb) -> None:
    files = {f"d{i % 7}/n{i}.md": f"---\ntags: [common, t{i % 3}]\n---\n# Note {i}\n\nBody {i}.\n\n## Part\n\nMore {i}.\n"
             for i in range(60)}
    kb = make_kb(files)
    kb.sync()
    with kb.reader().snapshot() as conn:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
    # everything through hubs: a handful of edges per chunk, not members squared
    assert edges <= 6 * chunks


# --- the expand channel on hand-built graphs ---------------------------------------


def build(edges: list[tuple[Node, Node, str, float]]) -> GraphIndex:
    conn = sqlite3.connect(":memory:")
    conn.executescript(GRAPH_SCHEMA)
    w = GraphWriter(conn)
    w.add([Edge(a, b, k, wt) for a, b, k, wt in edges], "test", None)
    w.finish()
    return GraphIndex.load(conn, 1)


def C(i: int) -> Node:
    return Node("chunk", str(i))


def D(i: int) -> Node:
    return doc_node(i)


def cos_for(ids: list[int], values: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    dense_ids = np.array(sorted(ids), dtype=np.int64)
    return dense_ids, np.array([values.get(int(i), 0.1) for i in dense_ids], dtype=np.float32)


def test_depth_metric_reaches_an_authored_edge_two_documents_away() -> None:
    # chunk1 ∈ doc1 -authored- doc2 -authored- doc3 ∋ chunk3 ; doc4 is a third hop away
    g = build([
        (C(1), D(1), "membership", 1.0), (C(2), D(2), "membership", 1.0),
        (C(3), D(3), "membership", 1.0), (C(4), D(4), "membership", 1.0),
        (D(1), D(2), "authored", 2.0), (D(2), D(3), "authored", 2.0), (D(3), D(4), "authored", 2.0),
    ])
    ids, cos = cos_for([1, 2, 3, 4], {})
    got = dict(expand(g, [1], ids, cos, fan_out=8))
    assert set(got) == {2, 3}  # roots are not returned; doc4's chunk is a third hop away
    assert got[2] > got[3]  # deeper is discounted


def test_hub_pass_through_is_free_and_expands_once() -> None:
    tag = Node("tag", "t", damp=True)
    edges = [(C(i), D(i), "membership", 1.0) for i in range(1, 6)]
    edges += [(D(i), tag, "shared-tag", 1.0) for i in range(1, 6)]
    g = build(edges)
    ids, cos = cos_for([1, 2, 3, 4, 5], {})
    got = expand(g, [1, 2], ids, cos, fan_out=8)
    # doc1 -> tag (free) -> doc3 (1 hop) -> chunk3 (free): depth 1
    assert {c for c, _ in got} == {3, 4, 5}
    # expanding the tag once: every spoke edge is in the visited set after one visit,
    # so a second root reaching the same hub adds nothing new (no duplicates in output)
    assert len(got) == len({c for c, _ in got})


def test_fan_out_cap_ranks_chunks_by_cosine() -> None:
    # one document with many chunks reached from another document's root chunk
    edges = [(C(100), D(1), "membership", 1.0), (D(1), D(2), "authored", 2.0)]
    edges += [(C(i), D(2), "membership", 1.0) for i in range(1, 21)]
    g = build(edges)
    values = {i: i / 100 for i in range(1, 21)}
    ids, cos = cos_for([100, *range(1, 21)], values)
    got = [c for c, _ in expand(g, [100], ids, cos, fan_out=3)]
    assert set(got) == {20, 19, 18}  # best three by cosine, nothing else


def test_membership_exclusion_for_the_roots_own_document() -> None:
    # chunks 1 and 2 share doc 1, with no structural edge between them
    g = build([(C(1), D(1), "membership", 1.0), (C(2), D(1), "membership", 1.0),
               (C(3), D(2), "membership", 1.0), (D(1), D(2), "authored", 2.0)])
    ids, cos = cos_for([1, 2, 3], {2: 0.9, 3: 0.5})
    got = {c for c, _ in expand(g, [1], ids, cos, fan_out=8)}
    assert 2 not in got  # reachable only through its root's own document
    assert 3 in got


def test_empty_graph_gives_an_empty_channel_and_search_unchanged(make_kb, monkeypatch) -> None:
    kb = make_kb({"a.md": "# A\n\nthe lighthouse keeper\n", "b.md": "# B\n\nfresh bread\n"})
    kb.sync()
    monkeypatch.setattr(kb, "edge_derivers", lambda: {})
    kb.sync(rebuild=True)
    off = kb.search("lighthouse", channel="off")
    ex = kb.search("lighthouse", channel="expand")
    assert [h.chunk_id for h in off.hits] == [h.chunk_id for h in ex.hits]
    assert all(h.ranks.get("graph") is None for h in ex.hits)


class _Chain:
    """A test deriver: ``see: other.md`` in front matter makes a doc-to-doc edge."""

    name = "test-see"

    def derive(self, doc, conn):
        target = doc.front_matter.get("see")
        if target:
            row = conn.execute("SELECT doc, title FROM documents WHERE path = ?", (target,)).fetchone()
            if row:
                yield Edge(doc.node, doc_node(row[0], row[1]), "authored", 2.0)

    def wants_full(self, changes, conn):
        return False


class _Plugin:
    @hookimpl
    def register_edge_derivers(self, register):
        register(_Chain())


@pytest.fixture
def chain_deriver():
    plugins.load_plugins()
    plugin = _Plugin()
    plugins.pm.register(plugin, name="test-see")
    try:
        yield
    finally:
        plugins.pm.unregister(plugin)


def test_expand_surfaces_a_linked_document_plain_search_misses(make_kb, chain_deriver) -> None:
    files = {
        "guide.md": "---\nsee: parts/relief.md\n---\n# Boiler Guide\n\n"
                    "The boiler heats water for the radiators; its safety part is listed separately.\n",
        "parts/relief.md": "# Part 7731\n\nOpens at three bar so the tank cannot burst from overpressure.\n",
    }
    for i in range(8):
        files[f"noise/n{i}.md"] = f"# Radiator note {i}\n\nRadiators and boiler water, note {i}.\n"
    kb = make_kb(files)
    kb.sync()
    q = "what stops the boiler from exploding"
    off = [h.path for h in kb.search(q, k=3, channel="off").hits]
    ex = kb.search(q, k=3, channel="expand")
    assert "guide.md" in off and "parts/relief.md" not in off
    assert "parts/relief.md" in [h.path for h in ex.hits]
    assert ex.hits[[h.path for h in ex.hits].index("parts/relief.md")].ranks["graph"] is not None


def test_a_kb_without_graph_plugins_behaves_as_before(make_kb, monkeypatch) -> None:
    kb = make_kb(DOCS)
    monkeypatch.setattr(kb, "edge_derivers", lambda: {})
    monkeypatch.setattr(kb, "graph_channels", lambda: {})
    kb.sync()
    assert kb.reader().conn.execute("SELECT count(*) FROM edges").fetchone()[0] == 0
    assert kb.search("beekeeping").hits[0].path == "notes/beta.md"
    from pinakes.errors import QueryError

    with pytest.raises(QueryError, match=r"graph channel 'expand' is not installed: "
                                         r"pip install 'pinakes\[graph\]'"):
        kb.search("beekeeping", channel="expand")


def test_salience_and_link_distance_priors(make_kb) -> None:
    kb = make_kb({
        "hub.md": "# Gearbox Widget Manual\n\nThe gearbox widget manual: gearbox widget care.\n",
        "a.md": "# A\n\nSee the [hub](hub.md) for gearbox details.\n",
        "b.md": "# B\n\nAlso [the hub](hub.md).\n",
        "far.md": "# Far\n\nA gearbox widget without links.\n",
    })
    kb.sync()
    rrf_k = float(kb.config.retrieval["rrf_k"])

    def scores() -> dict[str, float]:
        return {h.path: h.score for h in kb.search("gearbox widget", k=10).hits}

    base = scores()
    kb.config.retrieval["salience_prior"] = 2.0
    with_salience = scores()
    assert with_salience["hub.md"] == pytest.approx(base["hub.md"] + 2.0 / (rrf_k + 1), abs=1e-5)
    assert with_salience["far.md"] == pytest.approx(base["far.md"], abs=1e-6)
    kb.config.retrieval["salience_prior"] = 0.0
    kb.config.retrieval["link_distance_rerank"] = 1.0
    with_distance = scores()
    top = max(base, key=base.get)
    assert top == "hub.md"
    assert with_distance["hub.md"] == pytest.approx(base["hub.md"] + 1 / (rrf_k + 1), abs=1e-5)
    assert with_distance["a.md"] == pytest.approx(base["a.md"] + 0.5 / (rrf_k + 1), abs=1e-5)
    assert with_distance["far.md"] == pytest.approx(base["far.md"], abs=1e-6)


# Questions written for the expand channel: each one's second document is connected to the
# top hits only by an authored link, and plain hybrid search does not reach it in the top 5.
EXPAND_QUESTIONS = [
    ("Which university built the ranking function used by IRCoT's retriever?",
     "rag/iterative-retrieval.md", "foundations/bm25.md"),
    ("Which encoder architecture does ColBERT build on, and when was it published?",
     "dense/colbert.md", "dense/bert.md"),
    ("What model does MiniLM distil from?", "dense/minilm.md", "dense/sentence-bert.md"),
]


@pytest.mark.parametrize(("question", "first", "second"), EXPAND_QUESTIONS)
def test_expand_reaches_linked_documents_on_the_example_kb(example_kb_links_only, question, first,
                                                           second) -> None:
    example_kb = example_kb_links_only  # authored links are what this channel must follow

    def docs(channel: str) -> list[str]:
        out: list[str] = []
        for h in example_kb.search(question, k=5, channel=channel).hits:
            if h.path not in out:
                out.append(h.path)
        return out

    # The channel's own reach, measured against the hybrid without its document-evidence
    # lift (which, since, finds the first of these three on its own).
    example_kb.config.data["retrieval"]["doc_evidence"] = 0.0
    try:
        off, ex = docs("off"), docs("expand")
    finally:
        example_kb.config.data["retrieval"]["doc_evidence"] = 0.3
    assert first in off and second not in off
    assert second in ex
    linked = example_kb.reader().conn.execute(
        "SELECT count(*) FROM links l JOIN documents s ON s.doc = l.src_doc "
        "JOIN documents t ON t.ulid = l.dst_ulid WHERE (s.path = ? AND t.path = ?) "
        "OR (s.path = ? AND t.path = ?)", (first, second, second, first)).fetchone()[0]
    assert linked, f"{first} and {second} should be joined by an authored link"


def test_doctor_reports_hubs_and_flags_glue_tags(make_kb) -> None:  # tag hubs only: no mentions
    files = {f"n{i}.md": f"---\ntags: [misc{', rare' if i == 0 else ''}]\n---\n# N{i}\n\nnote {i}\n"
             for i in range(6)}
    kb = make_kb(files, config="[graph]\nmentions = false\nner = false\n")
    kb.sync()
    report = kb.doctor()
    hubs = {(h["kind"], h["key"]): h["degree"] for h in report["hubs"]}
    assert hubs[("tag", "misc")] == 6 and hubs[("tag", "rare")] == 1
    assert [h["key"] for h in report["glue_tags"]] == ["misc"]
    from click.testing import CliRunner

    from pinakes.cli import cli

    out = CliRunner().invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert "graph hubs" in out.output and "glue" in out.output and "misc: 6 documents" in out.output
    assert out.exit_code == 0  # warnings only
