"""The spend ledger and transcripts (``.pinakes-ledger/``): kept, append-safe, summed by ``pnk ask --spent``.

The provider is the real local HTTP server of tests/llm_server.py; the ledger is
written by real processes (concurrent ``pnk ask`` runs, appenders killed with
SIGKILL), and read back line by line.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes.cli import cli, load_plugin_commands
from pinakes_deep import ledger
from pinakes_deep import transcript as tr

from .llm_server import FakeLLM, Raw
from .test_deep import (
    DOCS,
    MULTI,
    _prices,  # noqa: F401 (the autouse fixture: the test model's price)
    kb_with,
    plan_json,
    run,
)

Q = "Where was the first Halden tidal turbine installed?"
PNK = str(Path(sys.executable).parent / "pnk")


@pytest.fixture
def runner() -> CliRunner:
    load_plugin_commands()
    return CliRunner()


def lines(kb: Any) -> list[dict[str, Any]]:
    raw = ledger.spend_path(kb).read_text(encoding="utf-8")
    assert raw.endswith("\n")
    return [json.loads(line) for line in raw.splitlines()]


def test_every_call_is_on_the_ledger_and_survives_deleting_the_index(make_kb: Any, runner: CliRunner) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    replies = [plan_json(("q1", "Which turbine did Mira Okafor design?", []),
                         ("q2", "Where was that turbine first installed?", ["q1"])),
               "The Halden tidal turbine [1].", "At Port Essery [1].",
               "Port Essery is on the north coast [1][2]."]
    with FakeLLM(replies) as server:
        data = run(kb, server)
    recs = lines(kb)
    # two lines per call: its hold before the request, its settlement after
    assert [(r["call"], r["event"]) for r in recs] == [(i, e) for i in range(4) for e in ("hold", "settle")]
    settled = [r for r in recs if r["event"] == "settle"]
    assert {r["run"] for r in recs} == {data["id"]}
    assert [r["purpose"] for r in settled] == ["decompose", "solve", "solve", "synthesis"]
    assert all(r["backend"] == "openai" and r["model"] == "test-model" and r["question"] == MULTI for r in recs)
    assert sum(Decimal(r["eur"]) for r in settled) == Decimal(data["receipt"]["eur_exact"])
    assert sum(r["input_tokens"] for r in settled) == data["receipt"]["input_tokens"]
    holds = [r for r in recs if r["event"] == "hold"]
    assert all(Decimal(h["eur"]) >= Decimal(s["eur"]) for h, s in zip(holds, settled, strict=True))

    # the index is derived: deleting it takes neither the ledger nor the transcript
    shutil.rmtree(kb.root / ".pinakes")
    kb.close()
    kb = KB.open(kb.root)
    kb.sync()
    assert (kb.root / ".pinakes-ledger" / "transcripts" / f"{data['id']}.json").is_file()
    assert tr.load(kb, data["id"][:10])["receipt"] == data["receipt"]
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root), "--json"])
    assert res.exit_code == 0, res.output
    spent = json.loads(res.output)
    assert spent["runs"] == 1 and spent["calls"] == 4
    assert spent["eur_exact"] == str(Decimal(data["receipt"]["eur_exact"]))
    # the ledger folder merges by union in git, and the index never reads it
    assert (kb.root / ".pinakes-ledger" / ".gitattributes").read_text() == "spend.jsonl merge=union\n"
    assert kb.status()["documents"] == len([p for p in DOCS if p.endswith(".md")])


def test_write_suggestions_name_a_transcript_that_outlives_the_index(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    plan = plan_json(("q1", "Which turbine did Mira Okafor design?", []),
                     ("q2", "Where was that turbine first installed?", ["q1"]))
    with FakeLLM([plan, "The Halden tidal turbine [1].", "At Port Essery [1].", "North coast [1][2]."]) as s:
        data = run(kb, s)
    from pinakes_deep.suggest import write_suggestions

    staged = write_suggestions(kb, data["suggestions"])
    assert staged["added"]
    shutil.rmtree(kb.root / ".pinakes")
    for path in kb.root.rglob("*.pnk.yaml"):
        for line in path.read_text().splitlines():
            if line.strip().startswith("transcript:"):
                ident = line.split(":", 1)[1].strip()
                assert tr.load(kb, ident)["id"] == ident


def test_spent_sums_this_month_by_model_and_takes_month_and_all(make_kb: Any, runner: CliRunner) -> None:
    kb = kb_with(make_kb)
    with FakeLLM(default="Port Essery [1].") as server:
        first = run(kb, server, Q, deep=False)
        second = run(kb, server, "Who designed the Halden turbine?", deep=False)
    # a month-old record of another model, written as the ledger writes (hold then settle)
    old = [ledger.record(kb.name, "01OLDRUN", "ask", "an old question", "anthropic", "claude-haiku-4-5",
                         "synthesis", 900, 200, Decimal(e), st, call=0, event=ev, at="2025-01-15T10:00:00Z")
           for ev, e, st in (("hold", "0.5", "held"), ("settle", "0.0125", "ok"))]
    ledger.append(kb, old)
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root)])
    assert res.exit_code == 0, res.output
    total = Decimal(first["receipt"]["eur_exact"]) + Decimal(second["receipt"]["eur_exact"])
    this_month = time.strftime("%Y-%m", time.gmtime())
    head = res.output.splitlines()[0]
    assert head.startswith(f"{kb.name}: €{total.quantize(Decimal('0.000001'), rounding='ROUND_CEILING')} "
                           f"spent in {this_month} (UTC), 2 runs, 2 calls"), res.output
    assert "openai test-model" in res.output and "claude" not in res.output
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root), "--month", "2025-01", "--json"])
    jan = json.loads(res.output)
    assert jan["calls"] == 1 and jan["eur_exact"] == "0.0125" and jan["by_model"][0]["model"] == "claude-haiku-4-5"
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root), "--all", "--json"])
    every = json.loads(res.output)
    assert every["runs"] == 3 and Decimal(every["eur_exact"]) == total + Decimal("0.0125")
    assert set(every["by_month"]) == {"2025-01", this_month}
    assert [m["model"] for m in every["by_model"]] == ["claude-haiku-4-5", "test-model"]  # by euros
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root), "--month", "2025-1"])
    assert res.exit_code != 0 and "YYYY-MM" in res.output and "Traceback" not in res.output
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root), "--month", "1999-12"])
    assert res.exit_code == 0 and "nothing spent in 1999-12" in res.output
    # looking writes nothing: a KB that never paid gets no ledger folder from --spent
    fresh = make_kb(DOCS, name="fresh-kb")
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(fresh.root), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["calls"] == 0
    res = runner.invoke(cli, ["ask", "--show-transcript", "last", "--kb", str(fresh.root)])
    assert res.exit_code == 1 and "no transcript" in res.output
    assert not (fresh.root / ".pinakes-ledger").exists()
    res = runner.invoke(cli, ["ask", "--kb", str(kb.root), "--all"])
    assert res.exit_code == 2 and "go with --spent" in res.output
    res = runner.invoke(cli, ["ask", "a question", "--spent", "--kb", str(kb.root)])
    assert res.exit_code == 2


def test_rejected_attempts_cost_nothing_and_a_killed_call_counts_at_its_reservation(make_kb: Any) -> None:
    kb = kb_with(make_kb)
    with FakeLLM([Raw(503, {"error": {"message": "busy"}}), "Port Essery [1]."]) as server:
        data = run(kb, server, Q, deep=False)
    recs = lines(kb)
    assert [(r["call"], r["event"], r["status"]) for r in recs] == [
        (0, "hold", "held"), (0, "settle", "released"), (1, "hold", "held"), (1, "settle", "ok")]
    assert Decimal(recs[1]["eur"]) == 0
    # A process killed during a call leaves its hold and no settlement: the provider may
    # have billed it, so it counts at its reservation.
    hold = ledger.record(kb.name, "01KILLED", "ask", Q, "openai", "test-model", "synthesis",
                         1000, 300, Decimal("0.0019"), "held", call=0, event="hold")
    ledger.append(kb, [hold])
    spent = ledger.spent(kb)
    assert spent["calls"] == 2 and spent["unsettled_calls"] == 1
    assert Decimal(spent["eur_exact"]) == Decimal(data["receipt"]["eur_exact"]) + Decimal("0.0019")


def _append_many(root: str, tag: str, n: int) -> None:
    kb = KB.open(root)
    for i in range(n):
        ledger.append(kb, [ledger.record(kb.name, f"{tag}-{i}", "ask", "q" * 200, "openai", "m", "synthesis",
                                         i, i, Decimal("0.000001"), "ok", call=0, event="settle")])


def test_concurrent_appenders_leave_every_line_whole(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    KB.init(root)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(root), f"p{i}", 60)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    kb = KB.open(root)
    records, bad = ledger.read(kb)
    assert bad == 0 and len(records) == 240
    assert len({r["run"] for r in records}) == 240


def test_a_killed_appender_leaves_whole_lines_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    KB.init(root)
    repo = str(Path(__file__).resolve().parents[1])
    code = (f"import sys; sys.path.insert(0, {repo!r}); from tests.test_deep_ledger import _append_many; "
            f"_append_many({str(root)!r}, 'k', 100000)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    kb = KB.open(root)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        path = ledger.spend_path(kb)
        if path.exists() and path.stat().st_size > 20_000:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    records, bad = ledger.read(kb)
    assert bad == 0 and len(records) > 20
    # A power cut can tear the last line (a kill cannot): it is skipped, and the next
    # record starts on a line of its own.
    with open(ledger.spend_path(kb), "ab") as fh:
        fh.write(b'{"at": "2026-01-01T00:00:00Z", "run": "torn", "eu')
    _append_many(str(root), "after", 1)
    again, bad = ledger.read(kb)
    assert bad == 1 and len(again) == len(records) + 1 and again[-1]["run"] == "after-0"
    assert ledger.spent(kb, all_time=True)["unreadable_lines"] == 1


def test_two_pnk_ask_at_once_both_land_on_the_ledger(make_kb: Any) -> None:
    kb = kb_with(make_kb)
    kb.close()
    gate = threading.Barrier(2, timeout=60)

    def reply(body: dict[str, Any]) -> str:
        gate.wait()  # both requests are in flight at once before either is answered
        return "Port Essery [1]."

    with FakeLLM(default=reply) as server:
        procs = [subprocess.Popen([PNK, "ask", q, "--kb", str(kb.root), "--yes", "--json",
                                   "--base-url", server.url + "/v1"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for q in (Q, "Who designed the Halden turbine?")]
        outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    ids = {json.loads(o)["id"] for o, _ in outs}
    recs = lines(kb)
    assert {r["run"] for r in recs} == ids and len(recs) == 4
    assert all((ledger.transcripts_dir(kb) / f"{i}.json").is_file() for i in ids)


def test_transcripts_in_the_old_place_are_moved_and_recorded_on_first_use(make_kb: Any,
                                                                          runner: CliRunner) -> None:
    kb = kb_with(make_kb)
    with FakeLLM(default="Port Essery [1].") as server:
        data = run(kb, server, Q, deep=False)
    # what a KB used by an earlier version looks like: transcripts under .pinakes/, no ledger
    legacy = kb.root / ".pinakes" / "transcripts"
    legacy.mkdir()
    shutil.move(str(ledger.transcripts_dir(kb) / f"{data['id']}.json"), legacy)
    shutil.rmtree(kb.root / ".pinakes-ledger")
    res = runner.invoke(cli, ["ask", "--spent", "--kb", str(kb.root), "--json"])
    assert res.exit_code == 0, res.output
    spent = json.loads(res.output)
    assert spent["runs"] == 1 and spent["eur_exact"] == str(Decimal(data["receipt"]["eur_exact"]))
    assert not legacy.exists()
    assert (ledger.transcripts_dir(kb) / f"{data['id']}.json").is_file()
    assert all(r.get("recovered") for r in lines(kb))
    # a second look records nothing twice
    before = ledger.spend_path(kb).read_bytes()
    runner.invoke(cli, ["ask", "--show-transcript", data["id"], "--kb", str(kb.root)])
    assert ledger.spend_path(kb).read_bytes() == before


def test_a_killed_run_keeps_a_transcript_of_what_it_spent(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    kb.close()
    plan = plan_json(("q1", "Which turbine did Mira Okafor design?", []),
                     ("q2", "Where was that turbine first installed?", ["q1"]))
    second, release = threading.Event(), threading.Event()

    def stall(body: dict[str, Any]) -> str:
        second.set()
        release.wait(60)  # the run is killed while this call is in flight
        return "never read"

    with FakeLLM([plan, stall]) as server:
        proc = subprocess.Popen([PNK, "ask", MULTI, "--deep", "--yes", "--kb", str(kb.root),
                                 "--base-url", server.url + "/v1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert second.wait(120)
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        release.set()
    kb = KB.open(kb.root)
    recs = lines(kb)
    assert [(r["call"], r["event"]) for r in recs] == [(0, "hold"), (0, "settle"), (1, "hold")]
    saved = json.loads(next(ledger.transcripts_dir(kb).glob("*.json")).read_text())
    assert saved["finished"] is None and [r["kind"] for r in saved["rounds"]][:2] == ["retrieve", "decompose"]
    spent = ledger.spent(kb)
    assert spent["unsettled_calls"] == 1
    assert Decimal(spent["eur_exact"]) == Decimal(recs[1]["eur"]) + Decimal(recs[2]["eur"])


def test_init_says_what_to_commit(tmp_path: Path, runner: CliRunner) -> None:
    res = runner.invoke(cli, ["init", str(tmp_path / "kb")])
    assert res.exit_code == 0
    assert ".pinakes-ledger/" in res.output and "commit" in res.output
    ignored = (tmp_path / "kb" / ".gitignore").read_text()
    assert ".pinakes/" in ignored and ".pinakes-ledger" not in ignored


@pytest.mark.parametrize("args", [["--dry-run"], ["--dry-run", "--json"]])
def test_dry_run_without_a_backend_says_why_there_is_no_estimate(make_kb: Any, runner: CliRunner,
                                                                args: list[str]) -> None:
    kb = make_kb(DOCS, name="free-kb")
    kb.sync()
    res = runner.invoke(cli, ["ask", Q, "--kb", str(kb.root), *args])
    assert res.exit_code == 0, res.output
    if "--json" in args:
        out = json.loads(res.output)
        assert out["dry_run"] and out["estimate_eur"] is None and "no LLM backend" in out["estimate_note"]
    else:
        assert "no estimate: no LLM backend is configured" in res.output
    assert not ledger.spend_path(kb).exists()
