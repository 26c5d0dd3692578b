"""A fleet with one bad KB still answers, and a KB answers to its fleet name everywhere.

The fleet here is real: two KBs on disk registered in the user registry, one
synced and one never synced, searched through the CLI and through `pnk serve
--all` driven by the MCP SDK's own client.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
from click.testing import CliRunner

from pinakes import fleet
from pinakes.cli import cli
from tests.test_mcp import err, ok, stdio_session

BREAD = {"bread.md": "# Sourdough\n\nFeed the starter, fold the dough and bake the bread.\n"}
BIKES = {"bikes.md": "# Bicycle chains\n\nClean and oil the chain every month.\n"}


def _fleet(make_kb):
    """`retrieval` (pinakes.toml says `retrieval-kb`), synced; `fresh`, never synced."""
    good = make_kb(BREAD, name="retrieval-kb")
    good.sync()
    fresh = make_kb(BIKES, name="fresh")
    fleet.add("retrieval", good.root)
    fleet.add("fresh", fresh.root)
    return good, fresh


def test_search_all_skips_a_never_synced_kb_by_name(make_kb) -> None:
    _fleet(make_kb)
    runner = CliRunner()
    res = runner.invoke(cli, ["search", "baking sourdough bread", "--kb", "all"])
    assert res.exit_code == 0, res.output
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert warnings == ["pnk search: warning: skipped fresh: not indexed yet: run `pnk sync --kb fresh`"]
    assert "[retrieval] bread.md" in res.stdout
    data = json.loads(runner.invoke(cli, ["search", "bread", "--kb", "all", "--json"]).stdout)
    assert data["skipped"] == [{"kb": "fresh", "reason": "not indexed yet: run `pnk sync --kb fresh`"}]
    assert data["hits"] and {h["kb"] for h in data["hits"]} == {"retrieval"}

    # naming the unsynced KB alone is an error that names it, not a silent empty answer
    res = runner.invoke(cli, ["search", "chains", "--kb", "fresh"])
    assert res.exit_code == 1 and "fresh: not indexed yet" in res.output and "Traceback" not in res.output

    # a fleet entry whose folder has gone is skipped too
    gone = make_kb({"x.md": "# X\n\nxylophone\n"}, name="gone")
    fleet.add("gone", gone.root)
    shutil.rmtree(gone.root)
    data = json.loads(runner.invoke(cli, ["search", "bread", "--kb", "all", "--json"]).stdout)
    assert [s["kb"] for s in data["skipped"]] == ["fresh", "gone"]
    assert "no longer a KB" in data["skipped"][1]["reason"]

    # once it is synced, the same search covers it
    assert runner.invoke(cli, ["sync", "--kb", "fresh"]).exit_code == 0
    data = json.loads(runner.invoke(cli, ["search", "oil the bicycle chain", "--kb", "all", "--json"]).stdout)
    assert [s["kb"] for s in data["skipped"]] == ["gone"]
    assert data["hits"][0]["kb"] == "fresh"


def test_search_all_fails_clearly_when_no_kb_can_be_searched(make_kb) -> None:
    a = make_kb(BREAD, name="a")
    b = make_kb(BIKES, name="b")
    fleet.add("a", a.root)
    fleet.add("b", b.root)
    res = CliRunner().invoke(cli, ["search", "bread", "--kb", "all"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "no knowledge base could be searched" in res.output
    assert "a (not indexed yet" in res.output and "b (not indexed yet" in res.output


def test_a_kb_answers_to_its_fleet_name_in_the_cli(make_kb) -> None:
    good, _ = _fleet(make_kb)
    runner = CliRunner()
    data = json.loads(runner.invoke(cli, ["search", "bread", "--kb", "retrieval", "--json"]).stdout)
    assert data["kb"] == "retrieval" and {h["kb"] for h in data["hits"]} == {"retrieval"}
    # opened by its folder it is still the fleet's `retrieval`
    data = json.loads(runner.invoke(cli, ["search", "bread", "--kb", str(good.root), "--json"]).stdout)
    assert data["kb"] == "retrieval"
    assert json.loads(runner.invoke(cli, ["status", "--kb", "retrieval", "--json"]).stdout)["documents"] == 1


def test_serve_all_over_mcp_skips_and_aliases(make_kb, tmp_path: Path) -> None:
    good, fresh = _fleet(make_kb)
    gone = make_kb({"x.md": "# X\n\nxylophone\n"}, name="gone")
    fleet.add("gone", gone.root)
    shutil.rmtree(gone.root)  # a fleet entry whose folder has been moved away
    log = tmp_path / "server.log"

    async def scenario() -> None:
        async with stdio_session(["--all"], log) as session:
            call = session.call_tool
            kbs = ok(await call("pinakes_kbs", {}))["kbs"]
            assert [(k["name"], k["indexed"], k["aliases"]) for k in kbs] == [
                ("fresh", False, []), ("retrieval", True, ["retrieval-kb"])]

            found = ok(await call("pinakes_search", {"query": "baking sourdough bread"}))
            assert found["kb"] == "all"
            assert found["hits"] and {h["kb"] for h in found["hits"]} == {"retrieval"}
            assert found["skipped"] == [{"kb": "fresh",
                                         "reason": "not indexed yet: run `pnk sync --kb fresh`"}]
            text = (await call("pinakes_search", {"query": "bread"})).content[0].text
            assert "skipped fresh: not indexed yet" in text

            # the fleet name and the pinakes.toml name both work, and answers use the fleet name
            for name in ("retrieval", "retrieval-kb"):
                one = ok(await call("pinakes_search", {"query": "bread", "kb": name}))
                assert one["kb"] == "retrieval" and one["skipped"] == []
                doc = ok(await call("pinakes_read", {"doc_id": "bread.md", "kb": name}))
                assert doc["kb"] == "retrieval" and "starter" in doc["text"]
                links = ok(await call("pinakes_links", {"doc_id": "bread.md", "kb": name}))
                assert links["kb"] == "retrieval"

            # the unsynced KB, named: one line that names it
            assert "fresh: not indexed yet" in err(await call("pinakes_search", {"query": "x", "kb": "fresh"}))
            assert "fresh:" in err(await call("pinakes_read", {"doc_id": "bikes.md", "kb": "fresh"}))
            assert "unknown kb 'nope'" in err(await call("pinakes_search", {"query": "x", "kb": "nope"}))

            # synced while the server runs: searched on the next call, no restart
            fresh.sync()
            found = ok(await call("pinakes_search", {"query": "oil the bicycle chain"}))
            assert found["skipped"] == [] and found["hits"][0]["kb"] == "fresh"

    try:
        anyio.run(scenario)
    except BaseException:
        print(log.read_text(encoding="utf-8"), file=sys.stderr)
        raise
    banner = log.read_text(encoding="utf-8")
    assert "warning: fresh is not indexed yet" in banner
    assert "warning: not serving gone: fleet KB 'gone' points at" in banner


def test_a_kb_no_fleet_names_is_told_to_sync_by_its_folder(make_kb) -> None:
    """A KB opened by its folder and registered nowhere: the hint's ``--kb`` is the folder
    (its ``[kb] name`` would not resolve), and running the hint heals it."""
    kb = make_kb(BIKES, name="loose")
    runner = CliRunner()
    res = runner.invoke(cli, ["search", "bike", "--kb", str(kb.root)])
    assert res.exit_code == 1
    hint = f"run `pnk sync --kb {kb.root}`"
    assert hint in res.stderr and "--kb loose`" not in res.stderr
    assert runner.invoke(cli, ["sync", "--kb", str(kb.root)]).exit_code == 0
    assert runner.invoke(cli, ["search", "bike", "--kb", str(kb.root)]).exit_code == 0
