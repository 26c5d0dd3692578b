"""pnk eval: metrics by hand, dataset cache, gates, reachability, calibration, CLI end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes.cli import cli
from pinakes.errors import DatasetError, EvalError, GoldenSetError, QueryError
from pinakes.evaluation import calibration as C
from pinakes.evaluation import metrics as M
from pinakes.evaluation.dataset import dataset_relevant, load_dataset, materialise
from pinakes.evaluation.gates import GateTolerances, default_on_gate, gate_verdicts, ppr_gate
from pinakes.evaluation.golden import Question, load_golden, select_questions
from pinakes.evaluation.reach import Graph, Reach, reach_from, reach_report, sqlite_graph
from pinakes.evaluation.runner import Setting, parse_matrix

from .small_kb import DOCS

EXAMPLE_KB = Path(__file__).resolve().parents[1] / "examples" / "retrieval-kb"


# --- metrics, against hand-computed values ----------------------------------------------


def _outcomes() -> list[M.Outcome]:
    """Four questions whose every metric is worked out in the test below."""
    return [
        # simple: relevant A found at rank 2, covered, answered.
        M.Outcome("q1", "simple", ("A",), ["B", "A", "C"], True, False, 0.9, 10.0, "lookup"),
        # multi-hop: A at 1 and D at 4; covered; abstained anyway (a false abstention).
        M.Outcome("q2", "multi-hop", ("A", "D"), ["A", "B", "C", "D", "E"], True, True, 0.1, 20.0,
                  "bridge"),
        # unanswerable: abstained (right).
        M.Outcome("q3", "unanswerable", (), ["A"], False, True, 0.05, 30.0),
        # simple: a miss (E never retrieved), abstained (right: the evidence was not there).
        M.Outcome("q4", "simple", ("E",), ["A", "B", "C", "D", "F", "G"], False, True, 0.2, 40.0,
                  "lookup"),
    ]


def test_rank_metrics_by_hand() -> None:
    assert M.collapse([7, 7, 3, 9, 3, 1]) == [7, 3, 9, 1]
    assert M.recall_at(["a", "b", "c"], {"a", "d"}, 2) == 0.5
    assert M.recall_at(["a", "b", "c", "d"], {"a", "d"}, 3) == 0.5
    assert M.recall_at(["a", "b", "c", "d"], {"a", "d"}, 4) == 1.0
    assert M.all_recall_at(["a", "b", "c", "d"], {"a", "d"}, 3) == 0.0
    assert M.all_recall_at(["a", "b", "c", "d"], {"a", "d"}, 4) == 1.0
    assert M.reciprocal_rank(["x", "y", "a"], {"a", "y"}) == 0.5
    assert M.reciprocal_rank(["x"], {"a"}) == 0.0
    with pytest.raises(ValueError):
        M.recall_at(["a"], set(), 1)


def test_summary_metrics_by_hand() -> None:
    s = M.summarise(_outcomes())
    assert s["n"] == 4 and s["answerable"] == 3
    # recall@2: q1 1, q2 1/2 (A in, D at 4), q4 0 -> 1.5 / 3
    assert s["recall@2"] == pytest.approx(0.5)
    # recall@5: q1 1, q2 1, q4 0
    assert s["recall@5"] == pytest.approx(2 / 3)
    assert s["recall@10"] == pytest.approx(2 / 3)
    assert s["all_recall@5"] == pytest.approx(2 / 3)
    # MRR: 1/2, 1, 0
    assert s["mrr"] == pytest.approx(0.5)
    assert s["abstain_rate"] == pytest.approx(3 / 4)
    # Only q2 abstained while holding its evidence.
    assert s["false_abstain_rate"] == pytest.approx(1 / 3)
    # Abstentions q2, q3, q4: q3 (unanswerable) and q4 (a miss) were right.
    assert s["abstain_precision"] == pytest.approx(2 / 3)
    # Latencies 10, 20, 30, 40: p50 25, p95 = 30 + 0.85 * 10.
    assert s["latency_ms_p50"] == pytest.approx(25.0)
    assert s["latency_ms_p95"] == pytest.approx(38.5)
    assert s["cost_eur_per_query"] == 0.0
    # ECE, one question per bin: |0.9 - 1| + |0.1 - 1| + |0.05 - 0| + |0.2 - 0|, over 4.
    assert s["ece"] == pytest.approx(1.25 / 4)
    # No confidence (no calibration in force): no ECE, rather than one of made-up zeros.
    blind = _outcomes()
    blind[0].confidence = None
    assert M.summarise(blind)["ece"] is None


def test_grouped_metrics_per_class_and_type() -> None:
    g = M.grouped(_outcomes())
    assert set(g["by_class"]) == {"simple", "multi-hop", "unanswerable"}
    simple = g["by_class"]["simple"]
    assert simple["recall@2"] == pytest.approx(0.5)  # q1 1, q4 0
    assert simple["mrr"] == pytest.approx(0.25)
    assert simple["abstain_precision"] == 1.0  # its one abstention (q4) was a miss
    assert g["by_class"]["unanswerable"]["recall@5"] is None
    assert g["by_class"]["unanswerable"]["abstain_rate"] == 1.0
    assert set(g["by_question_type"]) == {"lookup", "bridge"}
    assert g["by_question_type"]["bridge"]["recall@2"] == pytest.approx(0.5)
    assert M.recall_curve(_outcomes(), ks=(1, 4)) == pytest.approx([(0 + 0.5 + 0) / 3, (1 + 1 + 0) / 3])


# --- golden sets ------------------------------------------------------------------------


def test_golden_set_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "q.yaml"
    bad.write_text(textwrap.dedent("""\
        version: 1
        questions:
          - id: a
            question: fine?
            class: simple
            documents: [x.md]
          - id: b
            question: what class?
            class: easy
            documents: [x.md]
          - id: a
            question: again
            class: unanswerable
            documents: []
    """))
    with pytest.raises(GoldenSetError) as err:
        load_golden(bad)
    assert "q.yaml:7: question b: `class` must be one of" in str(err.value)
    assert "duplicate id 'a'" in str(err.value)
    bad.write_text("version: 1\nquestions:\n  - id: u\n    question: x\n    class: unanswerable\n"
                   "    documents: [a.md]\n")
    with pytest.raises(GoldenSetError, match="lists no documents"):
        load_golden(bad)


def test_example_golden_set_is_valid() -> None:
    gs = load_golden(EXAMPLE_KB / "golden" / "questions.yaml")
    counts = gs.counts()
    assert counts["simple"] >= 20 and counts["multi-hop"] >= 20 and counts["unanswerable"] >= 1


# --- settings -----------------------------------------------------------------------------


def test_matrix_parsing() -> None:
    s = parse_matrix("bm25,dense,off+rrf_k=30+dense_temperature=0.05", [])
    assert [x.name for x in s] == ["bm25", "dense", "off+rrf_k=30+dense_temperature=0.05"]
    assert s[0].channels == ("lexical",) and s[1].channels == ("dense",)
    assert dict(s[0].overrides) == {"lexical_coverage": "off"}  # BM25's own ranking
    assert dict(s[2].overrides) == {"rrf_k": 30, "dense_temperature": 0.05}
    assert not s[2].is_baseline
    withgraph = parse_matrix("expand+salience", ["expand"])
    assert withgraph[0] == Setting("off")  # the gates' baseline comes along
    assert withgraph[1].channel == "expand" and dict(withgraph[1].overrides)["salience_prior"] == 1.0
    for bad in ("nosuch", "off+k=5", "off+rrf_k=fast", "off+bogus", "off,off"):
        with pytest.raises(EvalError):
            parse_matrix(bad, ["expand"])


# --- gates (pure) --------------------------------------------------------------------------


def _m(multi: float, simple: float, fab: float, multi10: float | None = None) -> dict:
    return {
        "multi-hop": {"recall@5": multi, "recall@10": multi10 if multi10 is not None else multi},
        "simple": {"recall@5": simple},
        "all": {"false_abstain_rate": fab},
    }


def test_default_on_gate() -> None:
    off = _m(0.600, 0.950, 0.010)
    ok = default_on_gate({"off": off, "expand": _m(0.650, 0.947, 0.012)}, "expand")
    assert ok.verdict == "pass", ok  # simple -0.3 pt is within the half-point tolerance
    simple_down = default_on_gate({"off": off, "expand": _m(0.700, 0.940, 0.010)}, "expand")
    assert simple_down.verdict == "fail" and "simple" in simple_down.summary
    abstains = default_on_gate({"off": off, "expand": _m(0.700, 0.950, 0.030)}, "expand")
    assert abstains.verdict == "fail" and "false-abstain" in abstains.summary
    flat = default_on_gate({"off": off, "expand": _m(0.600, 0.960, 0.0)}, "expand")
    assert flat.verdict == "fail" and "multi-hop" in flat.summary
    strict = default_on_gate({"off": off, "expand": _m(0.650, 0.947, 0.012)}, "expand",
                             tol=GateTolerances(simple_tolerance=0.001))
    assert strict.verdict == "fail"
    no_multi = default_on_gate({"off": {"simple": {"recall@5": 0.9}, "all": {}},
                                "expand": {"simple": {"recall@5": 0.9}, "all": {}}}, "expand")
    assert no_multi.verdict == "n/a"


def test_ppr_gate_reads_the_ceiling_and_the_excluded_shares() -> None:
    metrics = {"off": _m(0.6, 0.9, 0.0), "expand": _m(0.7, 0.9, 0.0, multi10=0.80)}
    reach = {"available": True, "ceiling": 0.90, "beyond_2hop_share": 0.7, "membership_only_share": 0.1}
    wide = ppr_gate(metrics, "expand", reach)
    assert wide.verdict == "pass" and "10.0 pt below" in wide.summary
    assert any("beyond-2-hop" in n for n in wide.notes)
    close = ppr_gate(metrics, "expand", {**reach, "ceiling": 0.83, "beyond_2hop_share": 0.1})
    assert close.verdict == "fail" and not close.notes
    na = ppr_gate(metrics, "expand", {"available": False, "reason": "n/a (no graph edges)"})
    assert na.verdict == "n/a" and "no graph edges" in na.summary
    allg = gate_verdicts(metrics, ["expand"], reach=reach, expand_settings=["expand"])
    assert [g.gate for g in allg] == ["expand default-on", "ppr implemented at all"]


# --- reachability ---------------------------------------------------------------------------


def _toy_graph() -> Graph:
    """Docs 1..5. Chunks 11, 12 in doc 1 (seed 11); 21 in 2; 31 in 3; 41 in 4; 51 in 5.

    doc1 -authored- doc2 -authored- doc3 -authored- doc4 (3 hops: beyond);
    chunk 12 (doc 1's other chunk) -mentions- entity 900 -mentions- chunk 51 (doc 5):
    reachable only through the seed's own document, so membership-only.
    """
    g = Graph()
    docs = {1: 101, 2: 102, 3: 103, 4: 104, 5: 105}  # doc key -> node
    chunks = {11: 1, 12: 1, 21: 2, 31: 3, 41: 4, 51: 5}
    for d, n in docs.items():
        g.kind[n] = "doc"
        g.node_doc[n] = d
    for c, d in chunks.items():
        g.kind[c] = "chunk"
        g.chunk_node[c] = c
        g.node_doc[c] = d
        g.add_edge(c, docs[d], "membership")
    g.kind[900] = "entity"
    g.add_edge(101, 102, "authored")
    g.add_edge(102, 103, "authored")
    g.add_edge(103, 104, "authored")
    return g


def test_reach_counts_logical_hops_and_membership_exclusion() -> None:
    g = _toy_graph()
    g.add_edge(12, 900, "mentions")
    g.add_edge(900, 51, "mentions")
    r = reach_from(g, [11])
    assert r.channel == {1, 2, 3}  # doc 4 is three authored hops away
    assert r.with_membership == {1, 2, 3, 5}  # doc 5 only via doc 1's other chunk
    # With a sibling edge, chunk 12 is reached by a real hop (not membership): doc 5 is fair game.
    g.add_edge(11, 12, "sibling")
    assert reach_from(g, [11]).channel == {1, 2, 3, 5}


def test_reach_report_shares() -> None:
    reach = Reach(channel=frozenset({1, 2, 3}), with_membership=frozenset({1, 2, 3, 5}))
    items = [
        ({2, 1}, [11], {1}),  # 1 seeded, 2 reachable
        ({4, 5}, [11], {1}),  # 4 beyond, 5 membership-only
    ]
    rep = reach_report(items, lambda _store, _seeds: reach, None)
    assert rep.available and rep.questions == 2
    assert rep.ceiling == pytest.approx((1.0 + 0.0) / 2)
    assert rep.ceiling_all == pytest.approx(0.5)
    assert rep.missed_by_seeds == 3
    assert rep.beyond_2hop_share == pytest.approx(1 / 3)
    assert rep.membership_only_share == pytest.approx(1 / 3)
    assert rep.reachable_share == pytest.approx(1 / 3)
    none = reach_report(items, lambda _store, _seeds: None, None)
    assert not none.available and none.reason == "n/a (no graph edges)"


def test_sqlite_graph_reads_the_store_shape_and_reports_no_edges() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, doc INTEGER)")
    assert sqlite_graph(conn) is None  # no edges table at all
    conn.execute("CREATE TABLE nodes (id INTEGER PRIMARY KEY, kind TEXT, key TEXT)")
    conn.execute("CREATE TABLE edges (src INTEGER, dst INTEGER, kind TEXT, weight REAL)")
    assert sqlite_graph(conn) is None  # an empty one
    conn.executemany("INSERT INTO chunks VALUES (?, ?)", [(11, 1), (21, 2), (31, 3)])
    conn.executemany("INSERT INTO nodes VALUES (?, ?, ?)", [
        (1, "doc", "1"), (2, "doc", "2"), (3, "doc", "3"),
        (4, "chunk", "11"), (5, "chunk", "21"), (6, "chunk", "31"), (7, "tag", "graphs"),
    ])
    conn.executemany("INSERT INTO edges VALUES (?, ?, ?, 1.0)", [
        (4, 1, "membership"), (5, 2, "membership"), (6, 3, "membership"),
        (1, 7, "shared-tag"), (2, 7, "shared-tag"),  # docs 1 and 2 share a tag: one hop
    ])
    g = sqlite_graph(conn)
    assert g is not None
    r = reach_from(g, [11])
    assert r.channel == {1, 2} and r.with_membership == {1, 2}


def test_a_corpus_wide_hub_is_not_passed_through_and_is_named() -> None:
    from pinakes.evaluation.reach import corpus_hubs

    g = Graph()
    for d in range(1, 6):
        g.kind[100 + d], g.node_doc[100 + d] = "doc", d
        g.kind[d], g.chunk_node[d], g.node_doc[d] = "chunk", d, d
        g.add_edge(d, 100 + d, "membership")
        g.add_edge(100 + d, 900, "co-located")  # one directory holds every document
    g.kind[900], g.label[900] = "directory", "directory passages"
    g.add_edge(101, 102, "authored")
    assert reach_from(g, [1]).channel == {1, 2, 3, 4, 5}  # literally, all one hop away
    wide = corpus_hubs(g)
    assert wide == {900: 1.0}
    g.blocked = frozenset(wide)
    assert reach_from(g, [1]).channel == {1, 2}


# --- calibration ----------------------------------------------------------------------------


def test_ece_by_hand() -> None:
    assert C.expected_calibration_error([0.1, 0.9], [0, 1]) == pytest.approx(0.1)
    assert C.expected_calibration_error([0.85, 0.85, 0.85, 0.85], [1, 0, 0, 0]) == pytest.approx(0.6)
    bins = C.reliability_bins([0.05, 0.07, 0.95], [0, 1, 1])
    assert [b["n"] for b in bins] == [2, 1] and bins[0]["rate"] == 0.5


def test_ece_floor_is_the_noise_of_a_calibrated_confidence() -> None:
    # Four predictions of 0.5: ECE is |k/4 - 1/2| for k ~ Binomial(4, 1/2), 0.1875 on average.
    four = C.ece_floor([0.5] * 4, draws=4000)
    assert four.mean == pytest.approx(0.1875, abs=0.01)
    assert four.within_target == pytest.approx(6 / 16, abs=0.03)  # only k = 2 gives ECE 0
    # Noise shrinks with the set: the same confidence on 1,000 questions has almost none.
    small, large = C.ece_floor([0.8] * 30), C.ece_floor([0.8] * 1000)
    assert small.mean > 0.04 > large.mean and small.p90 > small.mean
    assert C.ece_floor([0.0, 1.0, 1.0]) == C.EceFloor(0.0, 0.0, 1.0)  # certain outcomes: no noise
    assert C.ece_floor([0.3, 0.7] * 20, seed=4) == C.ece_floor([0.3, 0.7] * 20, seed=4)
    ok = C.floor_sentence(small, 30, small.mean)
    off = C.floor_sentence(small, 30, small.p90 + 0.05)
    assert "within what noise alone gives" in ok and "the confidence is off" in off
    with pytest.raises(C.CalibrationError):
        C.ece_floor([])


def _synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, len(C.FEATURES)))
    truth = 1 / (1 + np.exp(-(1.5 * x[:, 0] - 0.8 * x[:, 3] + 0.3)))
    y = (rng.random(n) < truth).astype(float)
    overconfident = 1 / (1 + np.exp(-8 * x[:, 0]))  # right direction, badly miscalibrated
    return x, y, overconfident


def test_calibration_fit_lowers_heldout_ece_and_round_trips(tmp_path: Path) -> None:
    x, y, before = _synthetic(600, seed=3)
    fit = C.fit_calibration(x, y, "emb-a", k=10, before=before, before_label="overconfident")
    assert fit.ece_before is not None and fit.ece_before > 0.1
    assert fit.ece_after < fit.ece_before / 2
    # The fitted direction matches the generating one.
    coef = fit.calibration.coef / fit.calibration.scale
    assert coef[0] > 0.8 and coef[3] < -0.3
    path = tmp_path / "cal.json"
    fit.calibration.save(path)
    loaded = C.Calibration.load(path)
    assert loaded.matches("emb-a") and not loaded.matches("emb-b")
    assert loaded.predict(x[0]) == pytest.approx(fit.calibration.predict(x[0]))
    data = json.loads(path.read_text())
    assert data["embedder"] == "emb-a" and data["feature_set"] == C.FEATURE_SET
    assert data["heldout"]["ece_after"] == pytest.approx(fit.ece_after, abs=1e-4)
    with pytest.raises(Exception, match="both hits and misses"):
        C.fit_calibration(x[:10], np.ones(10), "emb-a", k=10)


# --- search channels ------------------------------------------------------------------------


@pytest.fixture
def small_kb(make_kb):
    kb = make_kb(DOCS)
    kb.sync()
    return kb


def test_search_can_fuse_one_list_only(small_kb) -> None:
    q = "how deep should chest compressions go"
    both = small_kb.search(q)
    assert set(both.hits[0].ranks) == {"lexical", "dense"}
    lex = small_kb.search(q, channels=["lexical"])
    assert set(lex.hits[0].ranks) == {"lexical"} and lex.hits[0].path == "health/cpr.md"
    dense = small_kb.search(q, channels=["dense"])
    assert set(dense.hits[0].ranks) == {"dense"} and dense.hits[0].path == "health/cpr.md"
    with pytest.raises(QueryError):
        small_kb.search(q, channels=["bm42"])


def test_a_possessive_query_finds_the_plain_name(make_kb) -> None:
    """Found by pnk eval on 2wiki: "Lothair II's" became the FTS phrase "ii s" and missed."""
    from pinakes.text import query_terms

    assert query_terms("When did Lothair II's mother die?") == ["lothair", "ii", "mother", "die"]
    assert query_terms("don't panic") == ["don't", "panic"]
    kb = make_kb({
        **DOCS,
        "kings/second.md": "# Lothair II\n\nLothair II was a king of Lotharingia, a realm between "
                           "the Rhine and the Meuse, from 855 until he died in 869.\n",
        "kings/first.md": "# Lothair I\n\nLothair I was an emperor.\n",
    })
    kb.sync()
    hits = kb.search("Lothair II's reign", channels=["lexical"]).hits
    assert hits[0].path == "kings/second.md"


# --- datasets --------------------------------------------------------------------------------


def _write_dataset(folder: Path, passages: list[dict], queries: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))


PASSAGES = [
    {"id": "p:1", "title": "Cardiopulmonary resuscitation",
     "text": "Push hard and fast in the centre of the chest at 100 to 120 compressions a minute."},
    {"id": "p:2", "title": "Dried pasta", "text": "Boil salted water, then cook the pasta al dente."},
    {"id": "p:3", "title": "Bicycle chain", "text": "Degrease the chain and apply one drop of lube per roller."},
    {"id": "p/4", "title": "Tomatoes", "text": "Tomatoes need six to eight hours of direct sun."},
]
QUERIES = [
    {"id": "a", "text": "How fast should chest compressions be?", "relevant": ["p:1"], "class": "simple"},
    {"id": "b", "text": "How do I cook pasta and care for my bike chain?", "relevant": ["p:2", "p:3"],
     "class": "multi-hop", "question_type": "comparison"},
    {"id": "c", "text": "How much sun do tomatoes need?", "relevant": ["p/4"], "class": "simple"},
]


def test_dataset_cache_is_reused_and_rebuilt_when_the_corpus_changes(tmp_path: Path, embedder) -> None:
    ds_dir = tmp_path / "mini"
    _write_dataset(ds_dir, PASSAGES, QUERIES)
    cache = tmp_path / "cache"
    first = materialise(load_dataset(ds_dir), cache, embedder=embedder)
    assert first.rematerialised and len(first.sync.added) == 4
    assert first.kb.root.parent == cache and first.kb.root.name.startswith("mini-")
    assert (first.kb.root / "passages" / "p_1.md").read_text().startswith("# Cardiopulmonary")
    rel = dataset_relevant(first)
    assert len(rel["b"]) == 2

    again = materialise(load_dataset(ds_dir), cache, embedder=embedder)
    assert not again.rematerialised
    assert again.sync.added == [] and again.sync.changed == [] and again.sync.chunks_embedded == 0

    corpus = ds_dir / "corpus.jsonl"
    os.utime(corpus, ns=(corpus.stat().st_atime_ns, corpus.stat().st_mtime_ns + 10**9))
    touched = materialise(load_dataset(ds_dir), cache, embedder=embedder)
    assert not touched.rematerialised  # same bytes, new mtime: the hash says unchanged

    changed = [dict(p) for p in PASSAGES[:3]] + [
        {"id": "p:5", "title": "Coffee", "text": "Bloom the grounds for thirty seconds."}]
    changed[1]["text"] = "Bring a large pot of salted water to a rolling boil first."
    _write_dataset(ds_dir, changed, QUERIES[:2])
    rebuilt = materialise(load_dataset(ds_dir), cache, embedder=embedder)
    assert rebuilt.rematerialised
    assert rebuilt.sync.changed == ["passages/p_2.md"]
    assert rebuilt.sync.added == ["passages/p_5.md"] and rebuilt.sync.removed == ["passages/p_4.md"]
    assert rebuilt.sync.chunks_embedded == 2  # the unchanged passages came from the cache
    assert not (rebuilt.kb.root / "passages" / "p_4.pnk.yaml").exists()


def test_dataset_errors_name_file_and_line(tmp_path: Path) -> None:
    ds_dir = tmp_path / "bad"
    _write_dataset(ds_dir, PASSAGES, [{"id": "x", "text": "q", "relevant": ["nope"], "class": "simple"}])
    with pytest.raises(DatasetError, match=r"queries.jsonl:1: relevant passage 'nope'"):
        load_dataset(ds_dir)
    with pytest.raises(DatasetError, match="no dataset folder"):
        load_dataset(tmp_path / "missing")


def test_eval_dataset_through_the_cli(tmp_path: Path) -> None:
    ds_dir = tmp_path / "mini"
    _write_dataset(ds_dir, PASSAGES, QUERIES)
    result = CliRunner().invoke(cli, ["eval", "--dataset", str(ds_dir), "--cache", str(tmp_path / "c"),
                                      "--matrix", "bm25,dense,off", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["source"]["kind"] == "dataset" and out["source"]["questions"] == 3
    names = [s["name"] for s in out["settings"]]
    assert names == ["bm25", "dense", "off"]
    off = out["settings"][2]["metrics"]
    assert off["by_class"]["simple"]["recall@2"] == 1.0
    assert set(off["by_question_type"]) == {"comparison"}


def test_select_questions_filters_the_class_before_a_fixed_sample() -> None:
    qs = [Question(f"q{i}", f"question {i}", "multi-hop" if i % 3 == 0 else "simple", ("d",))
          for i in range(60)]
    multi = [q for q in qs if q.cls == "multi-hop"]  # 20 of them
    first = select_questions(qs, ["multi-hop"], 8, seed=0)
    assert len(first) == 8 and all(q.cls == "multi-hop" for q in first)
    assert first == select_questions(qs, ["multi-hop"], 8, seed=0)  # fixed: the same 8 every run
    assert first != select_questions(qs, ["multi-hop"], 8, seed=1)
    assert [q.id for q in first] == sorted((q.id for q in first), key=lambda x: int(x[1:]))  # file order
    # sampling after the filter: 8 of the 20, not the multi-hop share of 8 drawn from all 60
    assert len(select_questions(qs, [], 8, seed=0)) == 8
    assert sum(q.cls == "multi-hop" for q in select_questions(qs, [], 8, seed=0)) < 8
    assert select_questions(qs, ["multi-hop"], 100) == multi and select_questions(qs) == qs
    # no class: exactly the sample --limit drew before the option existed
    import random
    keep = set(random.Random(3).sample(range(60), 5))
    assert select_questions(qs, (), 5, seed=3) == [q for i, q in enumerate(qs) if i in keep]
    with pytest.raises(GoldenSetError, match="unknown question class 'multihop'"):
        select_questions(qs, ["multihop"])


def test_eval_class_option_through_the_cli(tmp_path: Path) -> None:
    ds_dir = tmp_path / "mini"
    _write_dataset(ds_dir, PASSAGES, QUERIES)
    runner = CliRunner()
    base = ["eval", "--dataset", str(ds_dir), "--cache", str(tmp_path / "c"), "--matrix", "off", "--json"]
    result = runner.invoke(cli, [*base, "--class", "simple", "--limit", "1", "--seed", "0"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["source"]["questions"] == 1 and out["source"]["sampled_from"] == 3
    assert out["source"]["classes"] == ["simple"] and out["source"]["seed"] == 0
    assert set(out["settings"][0]["metrics"]["by_class"]) <= {"simple"}
    multi = json.loads(runner.invoke(cli, [*base, "--class", "multi-hop"]).output)
    assert multi["source"]["questions"] == 1 and "seed" not in multi["source"]
    assert multi["settings"][0]["metrics"]["by_class"]["multi-hop"]["n"] == 1
    none = runner.invoke(cli, [*base, "--class", "unanswerable"])
    assert none.exit_code == 2 and "no question of class unanswerable" in none.output
    bad = runner.invoke(cli, [*base, "--class", "multihop"])
    assert bad.exit_code == 2 and "multihop" in bad.output


# --- golden sets through the CLI, on a small KB ---------------------------------------------

SMALL_GOLDEN = """\
version: 1
questions:
  - id: s1
    question: How many chest compressions a minute during CPR?
    class: simple
    documents: [health/cpr.md]
  - id: s2
    question: What error code does the build backend give when the version is missing?
    class: simple
    documents: [code/packaging.md]
  - id: s3
    question: How many hours of sun do tomato plants need?
    class: simple
    documents: [garden/tomatoes.md]
  - id: m1
    question: Which needs water just off the boil and which a rolling boil, coffee or pasta?
    class: multi-hop
    documents: [kitchen/coffee.md, kitchen/pasta.md]
  - id: u1
    question: What is the boiling point of liquid nitrogen?
    class: unanswerable
    documents: []
"""


def test_eval_golden_end_to_end_through_the_cli(small_kb, tmp_path: Path) -> None:
    golden = small_kb.root / "golden" / "questions.yaml"
    golden.parent.mkdir()
    golden.write_text(SMALL_GOLDEN)
    report = tmp_path / "r.html"
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", "--kb", str(small_kb.root), "--matrix", "off,bm25,dense",
                                 "--json", "--report", str(report)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) >= {"source", "k", "settings", "gates", "reachability", "query_embedding_ms",
                        "confidence", "chunks_retrieved"}
    assert out["source"]["questions"] == 5 and out["k"] == 10
    off = out["settings"][0]
    assert off["name"] == "off" and off["channels"] is None
    m = off["metrics"]
    assert set(m) == {"all", "by_class", "by_question_type"}
    simple = m["by_class"]["simple"]
    assert set(simple) >= {"recall@2", "recall@5", "recall@10", "all_recall@5", "mrr",
                           "false_abstain_rate", "abstain_precision", "latency_ms_p50",
                           "latency_ms_p95", "cost_eur_per_query", "n"}
    assert simple["n"] == 3 and simple["recall@5"] == 1.0 and simple["cost_eur_per_query"] == 0.0
    assert m["by_class"]["multi-hop"]["recall@10"] == 1.0
    assert out["settings"][1]["channels"] == ["lexical"]
    page = report.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "<script" not in page
    assert 0.0 <= m["all"]["ece"] <= 1.0  # the shipped calibration is in force
    human = runner.invoke(cli, ["eval", "--kb", str(small_kb.root)])
    assert human.exit_code == 0, human.output
    assert "multi-hop" in human.output and "€0.00" in human.output
    # The confidence in force, read against what sampling noise gives on 5 questions.
    assert re.search(r"^confidence \(\w+\): on 5 questions a perfectly calibrated confidence "
                     r"shows ECE [0-9.]+ on average", human.output, re.M), human.output
    # A golden entry that names no document is an error in the golden set, not a miss.
    golden.write_text(SMALL_GOLDEN.replace("garden/tomatoes.md", "garden/potatoes.md"))
    broken = runner.invoke(cli, ["eval", "--kb", str(small_kb.root)])
    assert broken.exit_code == 1 and "garden/potatoes.md" in broken.output
    assert "Traceback" not in broken.output


# --- the example KB: golden set, calibration, abstention -----------------------------------


@pytest.fixture
def writable_example_kb(example_kb_copy: Path, tmp_path: Path, embedder) -> KB:
    """A private copy of the session's synced example KB: this test writes its calibration."""
    root = tmp_path / "retrieval-kb"
    shutil.copytree(example_kb_copy, root)
    (root / "golden" / "calibration.json").unlink(missing_ok=True)
    kb = KB.open(root)
    kb._embedder = embedder
    kb.sync()
    return kb


def test_example_kb_golden_set_calibration_and_abstention(writable_example_kb: KB) -> None:
    example_kb = writable_example_kb
    root = example_kb.root
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", "--kb", str(root), "--calibrate", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    by_class = out["settings"][0]["metrics"]["by_class"]
    assert out["source"]["questions"] >= 90
    assert by_class["simple"]["recall@10"] >= 0.9
    assert by_class["multi-hop"]["recall@10"] >= 0.8
    cal = out["calibration"]
    assert cal["path"] == str(root / "golden" / "calibration.json")
    assert cal["ece_after"] < cal["ece_before"] and cal["ece_after"] < 0.1
    # Read against what noise alone gives on this many questions (a calibrated fit is within it).
    assert 0.0 < cal["ece_floor"] <= cal["ece_floor_p90"] and cal["ece_after"] <= cal["ece_floor_p90"]
    report = root / "report.html"
    human = runner.invoke(cli, ["eval", "--kb", str(root), "--calibrate", "--report", str(report)])
    assert human.exit_code == 0, human.output
    floor_line = f"on {out['source']['questions']} questions a perfectly calibrated confidence shows ECE"
    assert floor_line in human.output and floor_line in report.read_text()
    assert cal["prior"] is not None  # shrunk towards the calibration shipped for the embedder
    saved = json.loads((root / "golden" / "calibration.json").read_text())
    assert saved["embedder"] == example_kb.config.embedder_id and saved["features"] == list(C.FEATURES)

    kb = KB.open(root)
    kb._embedder = example_kb.embedder
    answered = kb.search("Which two free parameters does Okapi BM25 use?")
    assert answered.confidence is not None and answered.confidence > 0.5
    assert not answered.abstained
    assert answered.to_dict()["confidence"] == round(answered.confidence, 4)
    off_topic = kb.search("How do I poach an egg?")  # benchmarks/off-topic/check.txt: never fitted
    assert off_topic.confidence is not None and off_topic.confidence < 0.25
    assert off_topic.abstained

    # A calibration for another embedder (or, after an upgrade, another feature set) no
    # longer means what it says: the shipped one stands in, and doctor says what to run.
    saved["embedder"] = "some-other-embedder"
    (root / "golden" / "calibration.json").write_text(json.dumps(saved))
    stood_in = kb.calibration()
    assert stood_in is not None and stood_in.path == C.packaged_calibration_path(kb.config.embedder_id)
    assert kb.search("Which two free parameters does Okapi BM25 use?").confidence is not None
    report = kb.doctor()
    assert "`pnk eval --calibrate`" in report["calibration"]["problem"]
    assert report["calibration"]["in_force"] == f"shipped for {kb.config.embedder_id}"
    warning = "warning: golden/calibration.json is unreadable or was fitted for another"
    assert warning in runner.invoke(cli, ["doctor", "--kb", str(root)]).output
    status = runner.invoke(cli, ["status", "--kb", str(root)]).output
    assert f"confidence calibration shipped for {kb.config.embedder_id}" in status and warning in status
    assert json.loads(runner.invoke(cli, ["status", "--kb", str(root), "--json"]).output
                      )["calibration"] == report["calibration"]
    assert warning in runner.invoke(cli, ["eval", "--kb", str(root), "--limit", "3"]).output
    evaluated = json.loads(runner.invoke(cli, ["eval", "--kb", str(root), "--limit", "3", "--json"]).output)
    assert evaluated["confidence"] == str(C.packaged_calibration_path(kb.config.embedder_id))
    # Named in pinakes.toml, the stale file is not replaced: confidence is unknown.
    toml = root / "pinakes.toml"
    toml.write_text(toml.read_text().replace("[retrieval]\n", '[retrieval]\ncalibration = "golden/calibration.json"\n'))
    named = KB.open(root)
    named._embedder = example_kb.embedder
    assert named.calibration() is None
    assert named.search("Which two free parameters does Okapi BM25 use?").confidence is None
    # Refitted, the KB's own is in force again and the warning is gone.
    assert runner.invoke(cli, ["eval", "--kb", str(root), "--calibrate"]).exit_code == 0
    again = KB.open(root)
    assert again.calibration() is not None and again.calibration().path == root / "golden" / "calibration.json"
    assert again.doctor()["calibration"] == {"in_force": "golden/calibration.json", "problem": None}
    status = runner.invoke(cli, ["status", "--kb", str(root)]).output
    assert "confidence calibration golden/calibration.json" in status and "warning" not in status


def test_packaged_default_calibration_is_used_without_a_kb_one(small_kb) -> None:
    path = C.packaged_calibration_path(small_kb.config.embedder_id)
    assert path is not None and path.is_file()
    cal = C.Calibration.load(path)
    assert cal.matches(small_kb.config.embedder_id)
    res = small_kb.search("how deep should chest compressions go")
    assert res.confidence is not None and 0.0 <= res.confidence <= 1.0
    off = small_kb.search("What is the airspeed velocity of an unladen swallow in Mongolia?")
    assert off.confidence is not None and off.confidence < res.confidence


def test_an_unreadable_own_calibration_gives_way_to_the_shipped_one(make_kb) -> None:
    kb = make_kb({"cpr.md": "# CPR\n\nPress the chest five to six centimetres deep, a hundred times a minute.\n"})
    kb.sync()
    own = kb.root / C.KB_CALIBRATION
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text("{ not json", encoding="utf-8")  # a half-written or hand-mangled file
    shipped = C.packaged_calibration_path(kb.config.embedder_id)
    assert kb.calibration() is not None and kb.calibration().path == shipped
    assert kb.search("how deep should chest compressions go").confidence is not None
    state = kb.doctor()
    assert state["calibration"]["problem"].startswith("golden/calibration.json is unreadable")
    # Switched off on purpose, nothing stands in.
    (kb.root / "pinakes.toml").write_text('[kb]\nname = "test-kb"\n[retrieval]\ncalibration = "none"\n')
    off = KB.open(kb.root)
    off._embedder = kb.embedder
    assert off.calibration() is None and off.search("how deep should chest compressions go").confidence is None
    assert off.doctor()["calibration"] == {"in_force": None, "problem": None}
