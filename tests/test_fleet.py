"""The fleet: the registry commands, `--kb all` search, and pnk:// links across KBs."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pinakes import fleet
from pinakes.cli import cli

B_ID = "01JDQ5S8Z6W3K1V9XQ2M4B7N3B"
NOWHERE = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def test_fleet_add_list_remove(make_kb) -> None:
    one = make_kb({"a.md": "# A\n\nalpha\n"}, name="one")
    one.sync()
    two = make_kb({"b.md": "# B\n\nbeta\n"}, name="two")
    runner = CliRunner()
    res = runner.invoke(cli, ["fleet", "add", "one", str(one.root)])
    assert res.exit_code == 0 and "Registered one" in res.output
    assert runner.invoke(cli, ["fleet", "add", "two", str(two.root)]).exit_code == 0
    listed = json.loads(runner.invoke(cli, ["fleet", "list", "--json"]).output)
    assert [(e["name"], e["path"], e["documents"]) for e in listed] == [
        ("one", str(one.root), 1), ("two", str(two.root), None)]
    plain = runner.invoke(cli, ["fleet"])  # `list` is the default
    assert plain.exit_code == 0 and "1 documents" in plain.output and "not indexed" in plain.output
    assert fleet.registry_path().is_file()
    for bad, message in ((["fleet", "add", "Bad Name", str(one.root)], "slugs"),
                         (["fleet", "add", "all", str(one.root)], "reserved"),
                         (["fleet", "add", "x", str(one.root / "nope")], "not a knowledge base"),
                         (["fleet", "add", "one", str(two.root)], "already registered"),
                         (["fleet", "remove", "ghost"], "no KB named")):
        res = runner.invoke(cli, bad)
        assert res.exit_code == 1 and message in res.output and "Traceback" not in res.output
    res = runner.invoke(cli, ["fleet", "remove", "two"])
    assert res.exit_code == 0 and "untouched" in res.output
    assert sorted(fleet.load_fleet()) == ["one"]
    assert two.root.is_dir()
    # a fleet name works wherever --kb is taken
    res = runner.invoke(cli, ["status", "--kb", "one", "--json"])
    assert json.loads(res.output)["documents"] == 1


def test_pnk_links_resolve_across_the_fleet(make_kb) -> None:
    one = make_kb({"a.md": f"""
        # A

        <pnk://{B_ID}> and [b](kb://two/b.md), [ghost](kb://ghost/z.md),
        <pnk://{NOWHERE}> and [gone](kb://two/missing.md).
        """}, name="one")
    two = make_kb({"b.md": "# Bee\n\nbeta\n", "b.pnk.yaml": f"id: {B_ID}\ntitle: Bee\n"}, name="two")
    one.sync()
    two.sync()
    before = one.links("a.md")
    assert before["neighbours"] == []
    assert {(u["target"], u["reason"]) for u in before["unresolved"]} == {
        (f"pnk://{B_ID}", "unknown-id"), ("kb://two/b.md", "unknown-kb"),
        ("kb://ghost/z.md", "unknown-kb"), (f"pnk://{NOWHERE}", "unknown-id"),
        ("kb://two/missing.md", "unknown-kb"),
    }
    fleet.add("one", one.root)
    fleet.add("two", two.root)
    after = one.links("a.md")
    assert after["neighbours"] == [{"doc_id": B_ID, "title": "Bee", "rel": "links-to", "direction": "out",
                                    "distance": 1, "score": 1.0, "kb": "two"}]
    assert {(u["target"], u["reason"]) for u in after["unresolved"]} == {
        ("kb://ghost/z.md", "unknown-kb"), (f"pnk://{NOWHERE}", "unknown-id"),
        ("kb://two/missing.md", "missing-file"),
    }
    # `pnk link` accepts a document of another KB by id, and writes a pnk:// URI
    res = CliRunner().invoke(cli, ["link", "a.md", f"pnk://{B_ID}", "--rel", "cites", "--kb", "one"])
    assert res.exit_code == 0, res.output
    assert f"to: pnk://{B_ID}" in (one.root / "a.pnk.yaml").read_text()
    rels = {(n["rel"], n.get("kb")) for n in one.links("a.md")["neighbours"]}
    assert rels == {("cites", "two"), ("links-to", "two")}
    res = CliRunner().invoke(cli, ["links", "a.md", "--kb", "one"])
    assert "[two] b.md" in res.output
    dangling = {(d["target"], d["reason"]) for d in one.doctor()["dangling"]}
    assert dangling == {("kb://ghost/z.md", "unknown-kb"), (f"pnk://{NOWHERE}", "unknown-id"),
                        ("kb://two/missing.md", "missing-file")}
    assert one.doctor()["coverage"]["with_authored_links"] == 1


def test_search_across_the_fleet(make_kb) -> None:
    one = make_kb({"bread.md": "# Sourdough\n\nFeed the starter and bake the bread.\n"}, name="one")
    two = make_kb({"bikes.md": "# Bicycle chains\n\nClean and oil the chain every month.\n"}, name="two")
    one.sync()
    two.sync()
    fleet.add("one", one.root)
    fleet.add("two", two.root)
    runner = CliRunner()
    for args in (["--kb", "all"], ["--kb", "one", "--kb", "two"], ["--kb", "one", "--kb", str(two.root)]):
        res = runner.invoke(cli, ["search", "bread or bicycles", *args, "--json"])
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        assert data["kb"] == "all"
        assert {h["kb"] for h in data["hits"]} == {"one", "two"}
    res = runner.invoke(cli, ["search", "oiling a bike chain", "--kb", "all"])
    assert res.exit_code == 0 and "[two] bikes.md" in res.output.splitlines()[0]
    single = json.loads(runner.invoke(cli, ["search", "bread", "--kb", "one", "--json"]).output)
    assert single["kb"] == "one"
    fleet.remove("one")
    fleet.remove("two")
    res = runner.invoke(cli, ["search", "bread", "--kb", "all"])
    assert res.exit_code == 1 and "fleet is empty" in res.output
