"""``--explain``: the search stages' own records, per hit, add up to the hit's score.

On the example KB (real embedder, the installed graph plugins): every hit's
explanation is checked against the arithmetic the pipeline does (RRF terms from
ranks and weights, the document-evidence lift, the graph channel's rescaling,
the priors' additions), a hit the graph lifted shows the seed and the edge path
that carried it, and the CLI (human and ``--json``), the MCP tool and
``pnk eval --explain`` show it.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes.cli import cli
from pinakes.mcp_server import RESPONSE_BUDGET, PinakesServer

from .test_mcp import ok, stdio_session

LIFTED = "Which was posted to arXiv first, HippoRAG or LightRAG?"  # golden m14
QUESTIONS = [
    LIFTED,
    "How does late interaction work?",
    "Who proposed reciprocal rank fusion and what constant does it use?",
    "Which was proposed first, temperature scaling for calibrating neural networks or "
    "Reciprocal Rank Fusion?",
    "vector quantisation for approximate nearest neighbour search",
    "zzqx unknownword",
]


@contextlib.contextmanager
def retrieval(kb: KB, **overrides: Any) -> Iterator[None]:
    """``[retrieval]`` overridden for the block (as ``pnk eval --matrix`` does)."""
    saved = kb.config.data["retrieval"]
    kb.config.data["retrieval"] = {**saved, **overrides}
    try:
        yield
    finally:
        kb.config.data["retrieval"] = saved


def check_sums(kb: KB, query: str, channel: str) -> list[Any]:
    """Search with and without explain; check every hit's explanation against its score."""
    plain = kb.search(query, k=20, channel=channel)
    res = kb.search(query, k=20, channel=channel, explain=True)
    assert [(h.chunk_id, h.score) for h in res.hits] == [(h.chunk_id, h.score) for h in plain.hits]
    assert res.confidence == plain.confidence
    cfg = kb.config.retrieval
    ex = res.explain
    assert ex is not None and ex["channel"]["in_force"] == res.channel
    rrf_k, weights = float(cfg["rrf_k"]), ex["fusion"]["weights"]
    for h in res.hits:
        e = h.explain
        assert e is not None and e["score"] == h.score
        fusion, graph, priors = e["fusion"], e["graph"], e["priors"]
        # The stages add up to the hit's score (which is rounded to 6 places).
        total = fusion["score"] + (graph["delta"] if graph else 0.0) + priors["delta"]
        assert total == pytest.approx(h.score, abs=1e-6), (query, channel, e)
        assert fusion["score"] == pytest.approx(sum(fusion["rrf"].values()) + fusion["doc_evidence"],
                                                rel=1e-12, abs=1e-15)
        # Each list's term is its weight over (rrf_k + rank), from the rank the hit reports.
        for name in ("lexical", "dense"):
            stage = e[name]
            if stage is None or stage["rank"] is None:
                assert name not in fusion["rrf"]
                continue
            assert stage["rank"] == h.ranks[name]
            assert fusion["rrf"][name] == pytest.approx(
                weights[name] * stage["weight"] / (rrf_k + stage["rank"]), rel=1e-12)
        assert priors["delta"] == pytest.approx(
            sum(v for k, v in priors.items() if k != "delta"), abs=1e-15)
        if graph and "channel_score" in graph and ex["channel"]["fusion"] == "final":
            scale = ex["graph"]["scale"]
            assert graph["score"] == pytest.approx(
                graph["channel_score"] * scale["top_fused"] / scale["top_graph"], rel=1e-9)
        walk = (graph or {}).get("walk") or {}
        bridge = (graph or {}).get("bridge")
        if bridge:  # ppr's bridges: a lifted document's score is the lift's own "after"
            assert graph["channel_score"] == pytest.approx(bridge["after"], rel=1e-12)
            assert bridge["after"] == pytest.approx(bridge["before"] + bridge["lift"], rel=1e-12)
            assert bridge["via"] and all(v["root"] for v in bridge["via"])
        if "blend" in walk:  # ppr: its score is the walk's evidence plus the hybrid's share
            before = bridge["before"] if bridge else graph["channel_score"]
            assert walk["blend"] == pytest.approx(before, rel=1e-9, abs=1e-12)
            assert walk["lifted"] == pytest.approx(walk["mass"] * walk["centrality_divisor"],
                                                   rel=1e-5)
        reach = (graph or {}).get("reach")
        if reach and "channel_score" in graph:  # expand: cosine x strength / depth
            assert graph["channel_score"] == pytest.approx(
                max(reach["cosine"], 0.0) * reach["strength"] / max(1, reach["depth"]), rel=1e-5)
    return res.hits


@pytest.mark.parametrize("channel", ["off", "ppr", "expand"])
def test_explain_is_the_computation(example_kb: KB, channel: str) -> None:
    for query in QUESTIONS:
        check_sums(example_kb, query, channel)


def test_explain_adds_up_with_priors_and_rrf_fusion(example_kb: KB) -> None:
    """Priors on, and the graph list fused by RRF instead of being the final ranking."""
    with retrieval(example_kb, salience_prior=1.0, link_distance_rerank=1.0, index_prior=1.0,
                   index_pages=["**/index.md", "README.md"]):
        hits = check_sums(example_kb, LIFTED, "ppr")
        assert any(h.explain["priors"]["delta"] > 0 for h in hits)
    with retrieval(example_kb, graph_fusion="rrf"):
        hits = check_sums(example_kb, LIFTED, "ppr")
        graphed = [h for h in hits if h.ranks.get("graph")]
        assert graphed and all("graph" in h.explain["graph"]["rrf"] for h in graphed)


def test_a_hit_the_graph_lifted_shows_its_seed_and_path(example_kb: KB) -> None:
    off = example_kb.search(LIFTED, k=50, channel="off")
    res = example_kb.search(LIFTED, k=50, channel="ppr", explain=True)
    seeds = {s["label"] for s in res.explain["graph"]["seeds"]}
    assert {"HippoRAG", "LightRAG"} <= seeds  # the names the question contains
    assert all(s["kind"] == "entity" and s["mass"] > 0 for s in res.explain["graph"]["seeds"])

    def doc_rank(result: Any, path: str) -> int:
        docs: list[str] = []
        for h in result.hits:
            if h.path not in docs:
                docs.append(h.path)
        return docs.index(path) + 1

    # The HippoRAG page: sixth without the graph, second with it.
    assert doc_rank(res, "graphs/hipporag.md") < doc_rank(off, "graphs/hipporag.md")
    hit = next(h for h in res.hits if h.path == "graphs/hipporag.md")
    graph = hit.explain["graph"]
    assert graph["delta"] > 0 and graph["rank"] is not None
    path = graph["path"]
    assert path[0]["origin"] == "seed" and path[0]["label"] == "HippoRAG"
    assert path[-1]["kind"] == "chunk" and "graphs/hipporag.md" in path[-1]["label"]
    edge_kinds = {r[0] for r in example_kb.reader().conn.execute("SELECT DISTINCT kind FROM edges")}
    for step in path[1:]:
        assert set(step["edge"].split("+")) <= edge_kinds and step["weight"] > 0
        assert 0 < step["share"] <= 1.0


def test_expand_explains_the_path_its_strength_came_from(example_kb: KB) -> None:
    res = example_kb.search(LIFTED, k=20, channel="expand", explain=True)
    reached = [h for h in res.hits if h.explain["graph"] and h.explain["graph"].get("reach")]
    assert reached
    for h in reached:
        reach, path = h.explain["graph"]["reach"], h.explain["graph"]["path"]
        assert path[0]["origin"] == "root" and path[-1]["kind"] == "chunk"
        strength = 1.0
        for step in path[1:]:
            strength *= min(1.0, step["weight"])
        assert strength == pytest.approx(reach["strength"], rel=1e-5)


def test_search_cli_explain_human_and_json(example_kb: KB) -> None:
    runner = CliRunner()
    args = ["search", LIFTED, "--kb", str(example_kb.root), "-k", "3", "--explain"]
    human = runner.invoke(cli, args)
    assert human.exit_code == 0, human.output
    out = human.output
    assert "seed: HippoRAG (entity" in out and "channel: ppr" in out
    assert "path: seed HippoRAG (entity)" in out and "-mentions" in out
    assert "lexical #" in out and "dense #" in out and "graph #" in out and "features" in out
    js = runner.invoke(cli, [*args, "--json"])
    assert js.exit_code == 0, js.output
    data = json.loads(js.output)
    assert data["explain"]["lexical"]["terms"][0]["term"] == "posted"
    assert {t["term"] for t in data["explain"]["lexical"]["terms"]} >= {"hipporag", "lightrag"}
    assert set(data["explain"]["confidence"]["features"]) >= {"cos_top1", "asked_gap"}
    assert "reader:" in out and data["explain"]["confidence"]["reader"]["asked"]
    for hit in data["hits"]:
        e = hit["explain"]
        assert e["score"] == hit["score"]
        assert list(e) == ["lexical", "dense", "fusion", "graph", "priors", "score"]
    lifted = next(d for d in data["documents"] if d["path"] == "graphs/hipporag.md")
    assert lifted["best"]["explain"]["graph"]["path"][0]["origin"] == "seed"
    plain = json.loads(runner.invoke(cli, args[:-1] + ["--json"]).output)
    assert "explain" not in plain and all("explain" not in h for h in plain["hits"])


def test_mcp_search_explains_within_the_budget(example_kb: KB, tmp_path: Path) -> None:
    server = PinakesServer([example_kb])
    big = server.search(LIFTED, k=50, explain=True)
    assert len(json.dumps(big).encode()) <= RESPONSE_BUDGET + 2000
    assert big["truncated"] is True and big["hits"] and all("explain" in h for h in big["hits"])

    async def scenario() -> None:
        async with stdio_session(["--kb", str(example_kb.root)], tmp_path / "server.log") as session:
            got = ok(await session.call_tool("pinakes_search",
                                             {"query": LIFTED, "k": 3, "explain": True}))
            assert got["explain"]["channel"]["in_force"] == "ppr"
            assert all(h["explain"]["score"] == h["score"] for h in got["hits"])
            plain = ok(await session.call_tool("pinakes_search", {"query": LIFTED, "k": 3}))
            assert "explain" not in plain and "explain" not in plain["hits"][0]

    try:
        anyio.run(scenario)
    except BaseException:
        print((tmp_path / "server.log").read_text(encoding="utf-8"), file=sys.stderr)
        raise


def test_eval_explain_shows_one_question_under_two_settings(example_kb: KB) -> None:
    runner = CliRunner()
    base = ["eval", "--kb", str(example_kb.root), "--explain", "m14", "--matrix", "off,ppr"]
    human = runner.invoke(cli, base)
    assert human.exit_code == 0, human.output
    lines = human.output.splitlines()
    header = next(line for line in lines if line.strip().startswith("off"))
    assert "ppr" in header
    assert "== off (channel off" in human.output and "== ppr (channel ppr" in human.output
    assert "relevant: graphs/hipporag.md, graphs/lightrag.md" in human.output
    data = json.loads(runner.invoke(cli, [*base, "--json"]).output)
    assert [c["setting"] for c in data["settings"]] == ["off", "ppr"]
    rank = {c["setting"]: next(d["rank"] for d in c["documents"] if d["path"] == "graphs/hipporag.md")
            for c in data["settings"]}
    assert rank["ppr"] < rank["off"]
    assert all(d["relevant"] == (d["path"] in ("graphs/hipporag.md", "graphs/lightrag.md"))
               for c in data["settings"] for d in c["documents"])
    bad = runner.invoke(cli, ["eval", "--kb", str(example_kb.root), "--explain", "nope"])
    assert bad.exit_code == 2 and "no question 'nope'" in bad.output


def test_a_bridged_hit_shows_the_root_and_link_that_lifted_it(make_kb) -> None:
    """ppr's bridges: the lifted note's explanation names the root note and the link's fit."""
    vault = Path(__file__).parent / "fixtures" / "hobby-vault"
    kb = make_kb({p.name: p.read_text(encoding="utf-8") for p in sorted(vault.glob("*.md"))},
                 name="hobby")
    kb.sync()
    question = "Which grind setting do I use for the beans I brought back from Lisbon?"
    hits = check_sums(kb, question, "ppr")
    bridged = [h for h in hits if (h.explain["graph"] or {}).get("bridge")]
    assert bridged, "the bridges lifted nothing on their own test question"
    press = next(h for h in bridged if h.path == "French Press.md")
    bridge = press.explain["graph"]["bridge"]
    assert bridge["lift"] > 0 and bridge["after"] > bridge["before"]
    assert any("Lisbon" in v["root"] and v["kind"] in ("link", "mention") for v in bridge["via"])
    out = CliRunner().invoke(cli, ["search", question, "--kb", str(kb.root), "--explain", "-k", "3"])
    assert out.exit_code == 0, out.output
    assert "bridge: " in out.output and "from Lisbon" in out.output
