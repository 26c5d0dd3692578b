"""``graph_channel = "auto"``: a KB with its own golden set searches with the channel its gate passes.

The KB here is a small town register: twelve workshops, each run by a person
who has a note of their own, linked from the workshop's note. A multi-hop
question names the workshop and asks about its master, so the second document
is reachable only through the link. The graph channels under test are test
equipment, registered as the only installed channel (and so the global
default): ``helpful`` ranks each hit's linked notes right after it, which the
gate should accept; ``harmful`` turns the ranking upside down, which it should
refuse. The mechanism is what is tested, not a channel's quality; the last
tests check the real ``ppr`` channel on the example KB the same way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from pinakes import KB, channel_choice, plugins
from pinakes.cli import cli

WORKSHOPS = [  # (workshop, what it makes, master, birthplace, master's craft detail)
    ("Harrow Kiln", "salt-glazed stoneware jugs", "Ilse Marrow", "Quenby", "a retired ferry pilot"),
    ("Tansy Loom", "herringbone wool blankets", "Oskar Pell", "Wrenford", "a former choir singer"),
    ("Copperfield Forge", "hand-forged garden gates", "Maud Everly", "Saltmarsh", "an amateur astronomer"),
    ("Bellwether Bindery", "leather-bound ledgers", "Rufus Kettle", "Ashby Vale", "a keen beekeeper"),
    ("Larkspur Glassworks", "blown glass lanterns", "Nell Hargrave", "Dunmore", "a chess champion"),
    ("Ember Lane Bakery", "rye sourdough loaves", "Piet Olander", "Corrow", "a lighthouse keeper's son"),
    ("Gannet Ropewalk", "tarred hemp mooring lines", "Agnes Thorne", "Fallowmere", "a fell runner"),
    ("Thistle Press", "letterpress wedding cards", "Barnaby Quill", "Eastwick", "a collector of maps"),
    ("Millrace Tannery", "vegetable-tanned saddle leather", "Hester Vane", "Brackenholt", "a former nurse"),
    ("Sorrel Cooperage", "oak cider barrels", "Tobias Wren", "Greyhaven", "a tidal swimmer"),
    ("Quarry Hill Masons", "carved sandstone lintels", "Elsie Brannock", "Holloway", "a church organist"),
    ("Wickerby Basketry", "willow log baskets", "Jory Castell", "Penmarrow", "a retired postman"),
]


def _slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def _files() -> dict[str, str]:
    files: dict[str, str] = {}
    for shop, makes, master, born, detail in WORKSHOPS:
        files[f"workshops/{_slug(shop)}.md"] = (
            f"# {shop}\n\n{shop} is a small workshop in the old market street. It makes {makes}, "
            f"sold at the Saturday fair.\n\nThe workshop is run by [{master}](../people/{_slug(master)}.md), "
            "who took it over from the founder.\n"
        )
        files[f"people/{_slug(master)}.md"] = (
            f"# {master}\n\n{master} grew up in {born} and moved to town as an adult. Before "
            f"learning a trade, {master.split()[0]} was {detail}.\n"
        )
    return files


def _golden(simple: int = 12, multi: int = 12) -> str:
    lines = ["version: 1", "questions:"]
    for i, (shop, *_rest) in enumerate(WORKSHOPS[:simple], 1):
        lines += [f"  - id: s{i:02d}", f"    question: What does {shop} make?", "    class: simple",
                  f"    documents: [workshops/{_slug(shop)}.md]"]
    for i, (shop, _makes, master, _born, _detail) in enumerate(WORKSHOPS[:multi], 1):
        lines += [f"  - id: m{i:02d}", f"    question: Where did the person who runs {shop} grow up?",
                  "    class: multi-hop",
                  f"    documents: [workshops/{_slug(shop)}.md, people/{_slug(master)}.md]"]
    lines += ["  - id: u01", "    question: What is the price of a season ticket for the ferry?",
              "    class: unanswerable", "    documents: []"]
    return "\n".join(lines) + "\n"


class Probe:
    """A test graph channel: ``helpful`` lifts linked notes, ``harmful`` reverses the ranking."""

    default_channel = True
    fusion = "final"

    def __init__(self, name: str) -> None:
        self.name = name
        self.version = name  # switching the channel is a new channel version: a new verdict
        self.searches = 0

    def search(self, ctx: Any) -> list[tuple[int, float]]:
        self.searches += 1
        fused = [cid for cid, _ in (ctx.fused or [])]
        if self.name == "harmful":
            order = list(reversed(fused))
        else:
            conn = ctx.store.conn
            order = []
            for cid in fused:
                order.append(cid)
                for (linked,) in conn.execute(
                    "SELECT c.id FROM chunks c JOIN documents d ON d.doc = c.doc "
                    "JOIN links l ON l.dst_ulid = d.ulid "
                    "WHERE l.src_doc = (SELECT doc FROM chunks WHERE id = ?) ORDER BY c.ordinal",
                    (cid,)):
                    order.append(int(linked))
            order = list(dict.fromkeys(order))
        n = len(order)
        return [(cid, float(n - i)) for i, cid in enumerate(order)]


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch):
    """Make ``Probe(name)`` the only installed graph channel (hence the global default)."""

    def use(name: str) -> Probe:
        probe = Probe(name)
        monkeypatch.setattr(plugins, "get_graph_channels", lambda: {probe.name: probe})
        return probe

    return use


@pytest.fixture
def town(make_kb):
    def build(golden: str | None = None, config: str = "") -> KB:
        files: dict[str, str] = dict(_files())
        if golden is not None:
            files["golden/questions.yaml"] = golden
        return make_kb(files, name="town", config=config)

    return build


def _status(kb: KB, json_: bool = False) -> Any:
    result = CliRunner().invoke(cli, ["status", "--kb", str(kb.root), *(["--json"] if json_ else [])])
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if json_ else result.output


def test_a_golden_set_that_fails_the_gate_turns_the_channel_off(town, install) -> None:
    probe = install("harmful")
    kb = town(_golden())
    report = kb.sync()
    assert report.channel["checked"] and report.channel["channel"] == "off"
    assert report.channel["reason"].startswith("off: this KB's golden set fails the harmful gate (")
    assert "simple R@5" in report.channel["reason"] and "pnk eval to re-check" in report.channel["reason"]

    before = probe.searches
    res = kb.search("What does Harrow Kiln make?", k=3)
    assert res.channel == "off" and probe.searches == before  # the channel did not run
    assert res.hits[0].path == "workshops/harrow-kiln.md"
    assert res.channel_reason == report.channel["reason"]
    assert res.to_dict()["channel_reason"] == res.channel_reason

    info = _status(kb, json_=True)["channel"]
    assert info["channel"] == "off" and info["source"] == "golden"
    assert info["check"]["outcome"] == "fail" and info["check"]["counts"]["multi-hop"] == 12
    assert info["check"]["numbers"]["harmful"]["simple_recall@5"] < info["check"]["numbers"]["off"]["simple_recall@5"]
    assert "channel    off: this KB's golden set fails the harmful gate" in _status(kb)

    out = CliRunner().invoke(cli, ["search", "--kb", str(kb.root), "What does Harrow Kiln make?"])
    assert out.exit_code == 0 and "channel off: this KB's golden set fails" in out.output


def test_a_golden_set_that_passes_the_gate_keeps_the_channel(town, install) -> None:
    probe = install("helpful")
    kb = town(_golden())
    report = kb.sync()
    assert report.channel["channel"] == "helpful", report.channel
    assert report.channel["reason"].startswith("helpful: this KB's golden set passes the helpful gate "
                                               "(multi-hop R@5 ")
    verdict = channel_choice.load_verdict(kb.config.state_dir)
    nums = verdict["numbers"]
    assert nums["helpful"]["multi-hop_recall@5"] > nums["off"]["multi-hop_recall@5"]
    before = probe.searches
    res = kb.search("Where did the person who runs Tansy Loom grow up?", k=5)
    assert res.channel == "helpful" and probe.searches == before + 1
    assert res.channel_reason == verdict["reason"]
    assert _status(kb, json_=True)["channel"]["channel"] == "helpful"


def test_too_few_questions_fall_back_to_the_global_default_and_say_why(town, install) -> None:
    probe = install("harmful")
    kb = town(_golden(simple=12, multi=3))
    report = kb.sync()
    assert probe.searches == 0  # nothing to decide: the set is counted, not measured
    reason = "harmful: the golden set has 3 multi-hop questions, too few to decide (need 10)"
    assert report.channel["reason"] == reason and report.channel["channel"] == "harmful"
    res = kb.search("What does Harrow Kiln make?")
    assert res.channel == "harmful" and res.channel_reason == reason
    state = _status(kb, json_=True)["channel"]
    assert state["source"] == "default" and state["check"]["outcome"] == "too-few"

    kb2 = town(_golden(simple=4, multi=2), config="")  # same folder, a smaller set
    (kb2.root / "golden" / "questions.yaml").write_text(_golden(simple=4, multi=2), encoding="utf-8")
    assert kb2.sync().channel["reason"] == ("harmful: the golden set has 4 simple and 2 multi-hop "
                                             "questions, too few to decide (need 10 of each)")


def test_without_a_golden_set_the_global_default_applies(town, install) -> None:
    install("harmful")
    kb = town()
    assert kb.sync().channel is None  # nothing to check
    res = kb.search("What does Harrow Kiln make?")
    assert (res.channel, res.channel_reason) == ("harmful", "harmful: the global default (no golden set)")
    assert channel_choice.channel_in_force(kb) == (res.channel, res.channel_reason)


def test_the_verdict_is_measured_again_when_the_golden_set_or_the_index_changes(town, install) -> None:
    install("harmful")
    kb = town(_golden())
    assert kb.sync().channel["channel"] == "off"
    assert kb.sync().channel["checked"] is False  # nothing changed: nothing measured

    golden = kb.root / "golden" / "questions.yaml"
    golden.write_text(_golden(multi=3), encoding="utf-8")
    check = kb.sync().channel
    assert check["checked"] and check["why"] == "the golden set changed"
    assert check["channel"] == "harmful" and "too few" in check["reason"]
    golden.write_text(_golden(), encoding="utf-8")
    assert kb.sync().channel["channel"] == "off"

    # One edited note of 24 is noise: the verdict stands, and status says how much moved.
    note = kb.root / "people" / "ilse-marrow.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nShe keeps two cats.\n", encoding="utf-8")
    check = kb.sync().channel
    assert check["checked"] is False and check["channel"] == "off"
    state = _status(kb, json_=True)["channel"]["check"]
    assert state["documents_changed_since"] == 1 and state["out_of_date"] is None
    assert "1 document changed since" in _status(kb)

    # A tenth of the KB changed: measured again, on the new index.
    gen_before = channel_choice.load_verdict(kb.config.state_dir)["generation"]
    for name in ("oskar-pell", "maud-everly"):
        p = kb.root / "people" / f"{name}.md"
        p.write_text(p.read_text(encoding="utf-8") + "\nA new paragraph.\n", encoding="utf-8")
    check = kb.sync().channel
    assert check["checked"] and check["why"] == "3 documents changed since"
    verdict = channel_choice.load_verdict(kb.config.state_dir)
    assert verdict["generation"] > gen_before and verdict["generation"] == kb.reader().generation

    # Another channel (a new version) or a rebuilt index: measured again too.
    install("helpful")
    check = kb.sync().channel
    assert check["checked"] and check["channel"] == "helpful"
    check = kb.sync(rebuild=True).channel
    assert check["checked"] and check["why"] == "the index was rebuilt"


def test_an_explicit_channel_always_wins_over_auto(town, install, make_kb) -> None:
    probe = install("harmful")
    kb = town(_golden())
    assert kb.sync().channel["channel"] == "off"
    res = kb.search("What does Harrow Kiln make?", channel="harmful")
    assert res.channel == "harmful" and res.channel_reason == "harmful: asked for by this search"
    out = CliRunner().invoke(cli, ["search", "--kb", str(kb.root), "--channel", "harmful", "--json",
                                   "What does Harrow Kiln make?"])
    assert out.exit_code == 0 and json.loads(out.output)["channel"] == "harmful"

    with open(kb.root / "pinakes.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[retrieval]\ngraph_channel = "harmful"\n')
    pinned = KB.open(kb.root)
    pinned._embedder = kb._embedder
    assert pinned.sync().channel is None  # a pinned channel is not measured at sync
    before = probe.searches
    res = pinned.search("What does Harrow Kiln make?")
    assert res.channel == "harmful" and probe.searches == before + 1
    assert res.channel_reason == "harmful: set by [retrieval] graph_channel"
    assert pinned.search("x y z", channel="off").channel_reason == "off: asked for by this search"
    assert _status(pinned, json_=True)["channel"]["source"] == "setting"


def test_a_search_never_measures_anything(town, install, monkeypatch: pytest.MonkeyPatch) -> None:
    install("harmful")
    kb = town(_golden())
    kb.sync(check_channel=False)  # indexed, not checked (as after a killed check)

    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("a search ran an evaluation")

    monkeypatch.setattr("pinakes.evaluation.runner.run_eval", boom)
    res = kb.search("What does Harrow Kiln make?")
    assert res.channel == "harmful"
    assert res.channel_reason == ("harmful: the global default (golden/questions.yaml not checked yet: "
                                  "pnk sync or pnk eval checks it)")


def test_a_broken_golden_set_does_not_fail_the_sync(town, install) -> None:
    install("harmful")
    kb = town(_golden().replace("workshops/harrow-kiln.md]", "workshops/no-such-note.md]", 1))
    report = kb.sync()
    assert report.generation >= 1 and report.channel["channel"] == "harmful"
    assert report.channel["reason"].startswith("harmful: the global default (the golden set cannot be used:")
    assert "no-such-note.md" in report.channel["reason"]
    assert kb.sync().channel["checked"] is False  # nothing changed: not tried again
    (kb.root / "workshops" / "no-such-note.md").write_text("# A new note\n\nIt exists now.\n",
                                                          encoding="utf-8")
    check = kb.sync().channel  # the note the set names is there now: measured for real
    assert check["checked"] and check["why"] == "the index changed since the golden set could not be used"
    assert check["channel"] == "off" and "fails the harmful gate" in check["reason"]


def test_pnk_eval_on_the_kbs_own_golden_set_records_its_verdict(town, install) -> None:
    install("harmful")
    kb = town(_golden())
    kb.sync(check_channel=False)
    # A sample measures a different thing: the cached verdict is left alone.
    out = CliRunner().invoke(cli, ["eval", "--kb", str(kb.root), "--limit", "5"])
    assert out.exit_code == 0, out.output
    assert channel_choice.load_verdict(kb.config.state_dir) is None
    out = CliRunner().invoke(cli, ["eval", "--kb", str(kb.root)])
    assert out.exit_code == 0, out.output
    assert "gate harmful default-on: fail" in out.output
    assert "graph_channel auto: searches of town now use off: this KB's golden set fails" in out.output
    verdict = channel_choice.load_verdict(kb.config.state_dir)
    assert verdict["by"] == "pnk eval" and verdict["channel"] == "off"
    assert kb.sync().channel["checked"] is False  # sync finds it current
    assert kb.search("What does Harrow Kiln make?").channel == "off"


def test_the_real_default_channel_follows_the_example_kbs_own_gate(example_kb: KB) -> None:
    """The example KB carries a golden set: its first sync measured ``ppr`` against it."""
    verdict = channel_choice.load_verdict(example_kb.config.state_dir)
    assert verdict is not None and verdict["candidate"] == "ppr" and verdict["by"] == "pnk sync"
    assert verdict["outcome"] in ("pass", "fail")
    nums = verdict["numbers"]
    gained = nums["ppr"]["multi-hop_recall@5"] > nums["off"]["multi-hop_recall@5"]
    kept = nums["ppr"]["simple_recall@5"] >= nums["off"]["simple_recall@5"] - 0.005
    flat = nums["ppr"]["false_abstain_rate"] <= nums["off"]["false_abstain_rate"] + 0.005
    assert verdict["outcome"] == ("pass" if gained and kept and flat else "fail")
    res = example_kb.search("how does reciprocal rank fusion combine rankings")
    assert res.channel == ("ppr" if verdict["outcome"] == "pass" else "off")
    assert res.channel_reason == verdict["reason"]


def test_mcp_search_says_which_channel_and_why(town, install) -> None:
    from pinakes.mcp_server import PinakesServer, render_search

    install("harmful")
    kb = town(_golden())
    kb.sync()
    server = PinakesServer([kb])
    out = server.search("What does Harrow Kiln make?")
    assert out["channel"] == "off" and out["channel_reason"].startswith("off: this KB's golden set fails")
    assert f"channel {out['channel_reason']}" in render_search(out)


def test_doctor_reports_the_channel_in_force(town, install) -> None:
    install("harmful")
    kb = town(_golden())
    kb.sync()
    assert kb.doctor()["channel"]["channel"] == "off"
    out = CliRunner().invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert "channel    off: this KB's golden set fails" in out.output


def test_enough_is_ten_of_each_deciding_class() -> None:
    decide = channel_choice.verdict_from_metrics
    assert decide("ppr", {"simple": 10, "multi-hop": 10}, None)["outcome"] == "n/a"  # enough: measured
    assert decide("ppr", {"simple": 10, "multi-hop": 9}, None)["outcome"] == "too-few"
    assert decide("ppr", {"simple": 0, "multi-hop": 40}, None)["outcome"] == "too-few"
