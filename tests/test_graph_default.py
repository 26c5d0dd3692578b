"""The graph on by default: ``graph_channel = "auto"`` picks ``ppr`` and title mentions are on.

These run the installed plugins (plugins/pinakes-ppr, plugins/pinakes-mentions)
through the ordinary search path, on small real KBs with the real embedder.
"""

from __future__ import annotations

import pytest

from pinakes import KB

# A documentation-style KB: an index page links to (and names) every page, every page
# links back to it, so the index is by far the best-connected node in the graph.
PAGES = {
    "valve.md": ("Valve 7731", "Valve 7731 is cast in bronze and opens at three bar of line "
                 "pressure."),
    "harbour.md": ("Harbour Works", "Harbour Works is the pumping station on the east quay; it "
                   "was rebuilt after the flood."),
    "gasket.md": ("Gasket kit", "The gasket kit fits every flange on the east quay and is "
                  "replaced yearly."),
    "pump.md": ("Pump house", "The pump house holds two diesel pumps and a spare impeller."),
    "quay.md": ("East quay", "The east quay carries the cranes and the fuel line to the "
                "pump house."),
    "crane.md": ("Crane schedule", "Cranes on the east quay are inspected every spring by the "
                 "harbour master."),
    "flood.md": ("Flood of 1953", "The flood of 1953 closed the station for a season and "
                 "destroyed the old valves."),
    "staff.md": ("Station staff", "Eight people run the station: four fitters, two drivers and "
                 "two clerks."),
}


def _files(index_mentions: bool = True) -> dict[str, str]:
    files = {}
    lines = []
    for path, (title, body) in PAGES.items():
        files[path] = f"# {title}\n\n{body}\n\nBack to the [station index](index.md).\n"
        lines.append(f"- [{title}]({path})" + (f": everything about {title}." if index_mentions
                                               else ""))
    files["index.md"] = "# Station index\n\n" + "\n".join(lines) + "\n"
    return files


def _rank(kb: KB, query: str, path: str, **kw) -> int:
    res = kb.search(query, k=9, **kw)
    docs = list(dict.fromkeys(h.path for h in res.hits))
    return docs.index(path) if path in docs else len(docs)


def test_auto_picks_ppr_when_installed_and_off_without_it(make_kb, monkeypatch) -> None:
    kb = make_kb({"a.md": "# A\n\nalpha\n"})
    assert kb.config.retrieval["graph_channel"] == "auto"
    assert kb.channel_name() == "ppr"
    assert kb.channel_name("off") == "off" and kb.channel_name("expand") == "expand"
    # A core-only install (no channel declares itself the default) searches as before.
    monkeypatch.setattr(kb, "graph_channels", lambda: {})
    assert kb.channel_name() == "off"
    kb.sync()
    assert kb.search("alpha").channel == "off"


def test_mentions_are_on_by_default(make_kb) -> None:
    kb = make_kb(_files())
    kb.sync()
    # titles, or titles + NER when pinakes-ner (which supersedes mentions) is installed
    assert {"mentions", "ner"} & set(kb.edge_derivers())
    with kb.reader().snapshot() as conn:
        kinds = {r[0] for r in conn.execute("SELECT DISTINCT kind FROM edges")}
    assert "mentions" in kinds


def test_a_linked_hub_cannot_outrank_a_direct_match(make_kb) -> None:
    kb = make_kb(_files())
    kb.sync()
    q = "What metal is Valve 7731 cast in?"
    res = kb.search(q, k=5)
    assert res.channel == "ppr"
    assert res.hits[0].path == "valve.md"
    assert any(h.ranks.get("graph") for h in res.hits), "the query names an entity: the graph ran"
    assert _rank(kb, q, "index.md") > _rank(kb, q, "valve.md")


def test_centrality_is_divided_out_of_the_walk() -> None:
    """A hub next to the seed outranks the seed's specific neighbour in the raw walk, not after."""
    import numpy as np

    from pinakes_ppr import Settings, build_operator, lifted_scores, personalized_pagerank
    from tests.test_ppr import C, build, node_of

    edges = [(C(1), C(2), "sibling", 1.0), (C(1), C(99), "authored", 2.0)]
    edges += [(C(99), C(i), "authored", 2.0) for i in range(10, 110)]
    g, _ = build(edges)
    op = build_operator(g)
    r = np.zeros(g.n)
    r[op.chunk_nodes] = 0.01  # the cosine background every chunk gets
    r[node_of(g, "chunk", "1")] += 1.0  # the named seed
    p, _ = personalized_pagerank(op, r, 0.5, 1e-10, 200)
    hub, specific = node_of(g, "chunk", "99"), node_of(g, "chunk", "2")
    assert p[hub] > p[specific]
    lifted = lifted_scores(op, p, Settings(centrality_power=0.5))
    assert lifted[specific] > lifted[hub]
    assert lifted_scores(op, p, Settings(centrality_power=0.0)) is p


BRIDGE = {
    "people/quist.md": "# Orla Quist\n\nOrla Quist was the engineer in charge at "
                       "[the pumping station](../sites/pumphouse.md) for thirty years.\n",
    "sites/pumphouse.md": "# Pumping station\n\nThe station's main valve was cast in bronze in "
                          "1911 and still holds the line pressure.\n",
}


def _noise(n: int) -> dict[str, str]:
    return {f"noise/n{i}.md": f"# Casting note {i}\n\nValves are cast from many alloys; iron "
            f"and brass are common, note {i}.\n" for i in range(n)}


@pytest.mark.parametrize("kind", ["link", "mention"])
def test_a_bridge_reached_only_through_the_graph_is_lifted(make_kb, kind) -> None:
    files = {**BRIDGE, **_noise(8)}
    if kind == "mention":  # no link: the page names the station's title instead
        files["people/quist.md"] = ("# Orla Quist\n\nOrla Quist was the engineer in charge at the "
                                    "Pumping station for thirty years.\n")
    kb = make_kb(files)
    kb.sync()
    q = "What alloy is the valve at Orla Quist's workplace made of?"
    assert _rank(kb, q, "sites/pumphouse.md") < _rank(kb, q, "sites/pumphouse.md", channel="off")
    assert _rank(kb, q, "people/quist.md") <= 1


def test_confidence_is_calibrated_with_the_default_channel_on(make_kb) -> None:
    kb = make_kb({**BRIDGE, **_noise(4)})
    kb.sync()
    res = kb.search("What alloy is the valve at Orla Quist's workplace made of?")
    assert res.channel == "ppr" and any(h.ranks.get("graph") for h in res.hits)
    assert res.confidence is not None and 0.0 <= res.confidence <= 1.0
    off_topic = kb.search("How do I tune a ukulele?")  # benchmarks/off-topic/check.txt: never fitted
    assert off_topic.confidence is not None and off_topic.confidence < 0.25
    assert off_topic.abstained
    # A calibration fitted with another channel does not claim to cover this one.
    cal = kb.calibration()
    assert cal is not None and cal.graph == "ppr"
    cal.graph = "expand"
    try:
        assert kb.search("What alloy is the valve at Orla Quist's workplace made of?"
                         ).confidence is None
    finally:
        cal.graph = "ppr"
