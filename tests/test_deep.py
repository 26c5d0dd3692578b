"""`pnk ask` and `pnk ask --deep` (plugins/pinakes-deep) against a real local HTTP server.

The provider is tests/llm_server.py: real HTTP on 127.0.0.1, scripted replies,
spoken to by the real ``openai`` and ``anthropic`` SDK clients. The KB is a
real one (real store, real embedder). Every paid run checks the budget's two
promises: the actual cost is within the printed estimate and within the cap.
"""

from __future__ import annotations

import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pinakes.cli import cli, load_plugin_commands
from pinakes_deep.backends import LLMError
from pinakes_deep.engine import Run, plan_calls
from pinakes_deep.settings import resolve
from pinakes_deep.suggest import write_suggestions

from .llm_server import FakeLLM, Raw

DOCS = {
    "people/mira-okafor.md": """
        # Mira Okafor

        Mira Okafor is an engineer who designed the Halden tidal turbine while working at a
        small marine workshop. She later taught fluid mechanics.
        """,
    "machines/halden-turbine.md": """
        # Halden Tidal Turbine

        The Halden tidal turbine turns slowly in strong currents. The first unit was installed
        at Port Essery in 2011 and still runs today.
        """,
    "places/port-essery.md": """
        # Port Essery

        Port Essery is a harbour town on the north coast of Velmar, known for its lighthouse
        and a ferry to the outer islands.
        """,
    "kitchen/bread.md": """
        # Baking Sourdough Bread

        Feed the starter the night before, mix flour, water and salt, and let the dough rise
        slowly. Bake in a hot covered pot.
        """,
}

MULTI = "On which coast is the town where the turbine designed by Mira Okafor was first installed?"
LLM = """
[llm]
backend = "openai"
model = "test-model"
retry_base_seconds = 0.01
max_retry_wait = 2.0
timeout = 10.0
"""


@pytest.fixture(autouse=True)
def _prices(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test model's price lives in the user config, as a real user's would."""
    user = Path(os.environ["PINAKES_USER_PATH"])
    user.mkdir(parents=True, exist_ok=True)
    (user / "config.toml").write_text(
        '[prices.openai]\n"test-model" = { input_per_1k = 0.001, output_per_1k = 0.003 }\n'
        '[prices.anthropic]\n"test-claude" = { input_per_1k = 0.002, output_per_1k = 0.006 }\n',
        encoding="utf-8")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def kb_with(make_kb: Any, deep: str = "", extra: str = "", name: str = "deep-kb") -> Any:
    kb = make_kb(DOCS, name=name, config=LLM + extra + ("\n[deep]\n" + deep if deep else ""))
    kb.sync()
    return kb


def run(kb: Any, server: FakeLLM, question: str = MULTI, *, deep: bool = True, sleeps: list[float] | None = None,
        max_eur: float | None = None) -> dict[str, Any]:
    settings = resolve(kb, base_url=server.url + "/v1", max_eur=max_eur)
    r = Run(kb, question, settings, deep=deep, sleep=(sleeps.append if sleeps is not None else lambda s: None))
    data = r.execute()
    check_money(data)
    return data


def check_money(data: dict[str, Any]) -> None:
    """Both promises of the budget, on every paid run."""
    receipt = data["receipt"]
    assert Decimal(receipt["eur_exact"]) <= Decimal(str(data["estimate_eur"])) + Decimal("1e-12")
    assert receipt["within_estimate"] and receipt["within_cap"] and receipt["overruns"] == 0


def calls_of(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in data["rounds"] if r["kind"] == kind]


def plan_json(*nodes: tuple[str, str, list[str]]) -> str:
    return json.dumps({"subquestions": [{"id": i, "question": q, "depends_on": d} for i, q, d in nodes]})


def test_confident_round0_is_exactly_one_call(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 0.5")
    with FakeLLM(["The first Halden turbine was installed at Port Essery [1]."]) as server:
        data = run(kb, server, "Where was the first Halden tidal turbine installed?")
    assert server.calls == 1
    assert server.paths == ["/v1/chat/completions"]
    assert data["stop_reason"] == "confident" and data["round0"]["confident"]
    assert server.requests[0]["max_tokens"] == 300 and server.requests[0]["model"] == "test-model"
    assert [c["path"] for c in data["citations"]] == ["machines/halden-turbine.md"]
    assert data["receipt"]["calls"] == 1
    # once round 0 is confident the bound is one synthesis call, not the loop's
    assert len(data["planned_calls"]) == 1


def test_system_role_user_sends_the_instructions_inside_the_user_turn(make_kb: Any) -> None:
    """For chat templates without a system turn (llama.cpp's `gemma` format drops one silently)."""
    from pinakes.errors import ConfigError
    from pinakes_deep.prompts import SYNTH_SYSTEM

    kb = kb_with(make_kb, deep="confident_at = 0.5", extra='system_role = "user"\n')
    with FakeLLM(["At Port Essery [1]."]) as server:
        data = run(kb, server, "Where was the first Halden tidal turbine installed?")
    msgs = server.requests[0]["messages"]
    assert [m["role"] for m in msgs] == ["user"]
    assert msgs[0]["content"].startswith(SYNTH_SYSTEM + "\n\nQUESTION: Where was the first Halden")
    assert data["settings"]["llm"]["system_role"] == "user"
    assert [c["path"] for c in data["citations"]] == ["machines/halden-turbine.md"]
    # the default keeps the system message
    plain = kb_with(make_kb, deep="confident_at = 0.5", name="plain-kb")
    with FakeLLM(["At Port Essery [1]."]) as server:
        run(plain, server, "Where was the first Halden tidal turbine installed?")
    assert [m["role"] for m in server.requests[0]["messages"]] == ["system", "user"]
    odd = kb_with(make_kb, extra='system_role = "assistant"\n', name="odd-kb")
    with pytest.raises(ConfigError, match="system_role must be one of system, user"):
        resolve(odd, base_url="http://127.0.0.1:9/v1")


def test_deep_loop_repairs_a_cycle_solves_in_order_and_records_everything(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    plan = plan_json(
        ("q1", "Which turbine did Mira Okafor design?", ["q3"]),  # q3 -> ... -> q1: a cycle
        ("q2", "Where was that turbine first installed?", ["q1", "q9"]),  # q9 does not exist
        ("q3", "On which coast is that town?", ["q2"]),
    )
    replies = [plan, "The Halden tidal turbine [1].", "At Port Essery [1].",
               "On the north coast of Velmar [1].", "The north coast of Velmar [1][2]."]
    with FakeLLM(replies) as server:
        data = run(kb, server)
    assert server.calls == 5  # decompose, three solves, synthesis
    repairs = data["plan"]["repairs"]
    # the model listed q1 first, so q1's dependency on the later q3 is the edge to drop
    assert any("cycle" in r and "q1 -> q3" in r for r in repairs), repairs
    assert any("q9" in r for r in repairs), repairs
    order = [r["subquestion"]["id"] for r in calls_of(data, "solve")]
    assert order == ["q1", "q2", "q3"]
    # q2 depends on q1: q1's answer goes into q2's retrieval (the bridge)
    solves = calls_of(data, "solve")
    assert "Halden" in solves[1]["query"]
    assert data["stop_reason"] == "plan-done"
    # the rolling summary reached the later prompts
    assert "KNOWN SO FAR" in server.requests[3]["messages"][1]["content"]
    assert "Port Essery" in server.requests[3]["messages"][1]["content"]
    # the transcript on disk: every round's query, retrieved ids, prompt size, reserved and actual cost
    path = kb.root / ".pinakes-ledger" / "transcripts" / f"{data['id']}.json"
    saved = json.loads(path.read_text())
    assert saved["id"] == data["id"] and saved["answer"].startswith("The north coast")
    for r in saved["rounds"]:
        if r["kind"] == "retrieve":
            assert r["query"] and r["retrieved"] and all(p["doc_id"] for p in r["retrieved"])
        else:
            assert r["prompt_bytes"] > 0 and r["calls"]
            assert 0 < r["cost_eur"] <= r["reserved_eur"]
            assert r["input_bound"] >= r["calls"][0]["input_tokens"]
    assert saved["receipt"]["calls"] == 5
    # what it discovered: documents that answered a sub-question and one that depended on it
    rels = {(s["src"], s["to"], s["rel"]) for s in saved["suggestions"]}
    assert ("people/mira-okafor.md", "machines/halden-turbine.md", "bridges") in rels
    assert all(s["origin"] == "deep" and s["transcript"] == data["id"] for s in saved["suggestions"])


def test_the_cap_halts_the_loop_before_the_breaching_call(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    settings = resolve(kb, base_url="http://127.0.0.1:9/v1")
    worst = {c.purpose: settings.price.cost(c.input_tokens, c.max_tokens) for c in plan_calls(settings, True)}
    # room for decompose + one solve + the synthesis, not for a second solve
    plan = plan_json(("q1", "Which turbine did Mira Okafor design?", []),
                     ("q2", "Where was it first installed?", ["q1"]),
                     ("q3", "On which coast is that town?", ["q2"]))
    replies = [plan, "The Halden turbine [1].", "At Port Essery [1].", "North [1].", "North coast [1]."]
    with FakeLLM(replies) as server:  # uncapped: learn what the first two calls really cost
        free = run(kb, server)
    assert server.calls == 5
    spent = [c["cost_eur"] for c in free["rounds"] if c["kind"] != "retrieve"]
    # room for round 1 (decompose's actual + a solve's and the synthesis's worst case), and
    # not for round 2 (which adds round 1's actual): the run must stop between them
    cap = (Decimal(str(spent[0])) + worst["solve"] + worst["synthesis"] + Decimal(str(spent[1])) / 2)
    assert cap >= worst["decompose"]
    with FakeLLM(replies) as server:
        data = run(kb, server, max_eur=float(cap))
    assert server.calls == 3  # decompose, one solve, synthesis: the second solve was never sent
    assert data["stop_reason"] == "budget"
    assert [r["kind"] for r in data["rounds"] if r["kind"] != "retrieve"] == ["decompose", "solve", "synthesis"]
    assert Decimal(data["receipt"]["eur_exact"]) <= cap


def test_a_cap_below_one_call_refuses_before_any_request(make_kb: Any) -> None:
    from pinakes_deep.budget import BudgetError

    kb = kb_with(make_kb)
    with FakeLLM(["never"]) as server:
        with pytest.raises(BudgetError, match="below the worst case"):
            run(kb, server, deep=False, max_eur=0.000001)
    assert server.calls == 0


def test_429_then_success_honours_retry_after(make_kb: Any) -> None:
    kb = kb_with(make_kb)
    sleeps: list[float] = []
    replies = [Raw(429, {"error": {"message": "slow down"}}, {"retry-after": "0.05"}),
               Raw(503, {"error": {"message": "busy"}}),
               "Port Essery [1]."]
    with FakeLLM(replies) as server:
        data = run(kb, server, "Where was the first Halden tidal turbine installed?", deep=False, sleeps=sleeps)
    assert server.calls == 3
    assert sleeps == [0.05, 0.02]  # Retry-After, then the backoff (base 0.01 x 2)
    receipt = data["receipt"]
    assert receipt["calls"] == 1 and receipt["rejected_attempts"] == 2  # rejected attempts cost nothing
    assert data["answer"] == "Port Essery [1]."


def test_retry_after_longer_than_allowed_gives_up_with_one_line(make_kb: Any) -> None:
    kb = kb_with(make_kb)
    with FakeLLM([Raw(429, {}, {"retry-after": "120"})]) as server:
        with pytest.raises(LLMError, match="asks to wait 120 s"):
            run(kb, server, deep=False)
    assert server.calls == 1


@pytest.fixture
def runner() -> CliRunner:
    load_plugin_commands()
    return CliRunner()


def sidecars(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.pnk.yaml"))}


def test_outage_is_one_clear_error_and_no_sidecar_is_written(make_kb: Any, runner: CliRunner,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    before = sidecars(kb.root)
    plan = plan_json(("q1", "Which turbine did Mira Okafor design?", []))
    with FakeLLM([plan, "The Halden turbine [1]."], default=Raw(503, {"error": {"message": "down"}})) as server:
        res = runner.invoke(cli, ["ask", MULTI, "--kb", str(kb.root), "--deep", "--yes",
                                  "--write-suggestions", "--base-url", server.url + "/v1"])
    assert res.exit_code == 1
    assert "HTTP 503" in res.output and "gave up after 4 attempts" in res.output
    assert "Traceback" not in res.output
    assert sidecars(kb.root) == before
    saved = [json.loads(p.read_text()) for p in (kb.root / ".pinakes-ledger" / "transcripts").glob("*.json")]
    assert len(saved) == 1 and saved[0]["stop_reason"] == "error" and "503" in saved[0]["error"]
    check_money({**saved[0], "receipt": saved[0]["receipt"]})
    # and a server that is not there at all
    res = runner.invoke(cli, ["ask", MULTI, "--kb", str(kb.root), "--yes", "--base-url", "http://127.0.0.1:9/v1"])
    assert res.exit_code == 1 and "cannot reach http://127.0.0.1:9/v1" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) <= 3


def test_malformed_model_output_is_repaired_or_ends_cleanly(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    # 1. a fenced, trailing-comma, single-quoted plan is repaired
    fenced = "Here you go:\n```json\n{'subquestions': [{'id': 'a', 'question': 'Which turbine did Mira Okafor design?', 'depends_on': [],},],}\n```"
    with FakeLLM([fenced, "Halden [1].", "Halden turbine, north coast [1]."]) as server:
        data = run(kb, server)
    assert server.calls == 3 and data["plan"]["subquestions"][0]["id"] == "a"
    # 2. two replies with no plan at all: the question is solved whole, the run ends cleanly
    with FakeLLM(["I cannot do JSON, sorry", "{broken", "", ""]) as server:
        data = run(kb, server)
    assert server.calls == 4  # decompose, the repair call, one solve, synthesis
    assert "repair" in server.requests[1]["messages"][1]["content"].lower() or \
        "not valid JSON" in server.requests[1]["messages"][1]["content"]
    assert data["stop_reason"] == "plan-done"
    assert any("empty answer" in r for r in data.get("repairs", []))
    assert data["answer"]  # what was learned, never a traceback
    # 3. citations to passages that were not shown are ignored
    with FakeLLM(["Port Essery [7] [1, 99].", "Port Essery [Passage 1]."]) as server:
        data = run(kb, server, "Where was the first Halden tidal turbine installed?", deep=False)
        assert len(data["citations"]) == 1 and data["citations"][0]["passages"] == [1]
        # a small model's "[Passage n]" counts as a citation too
        data = run(kb, server, "Where was the first Halden tidal turbine installed?", deep=False)
    assert data["citations"][0]["path"] == "machines/halden-turbine.md"
    # a model that echoes the prompt's passage headers has cited nothing
    shown = next(r for r in data["rounds"] if r["kind"] == "synthesis")["retrieved"]
    echo = "QUESTION: where?\n\nPASSAGES:\n" + "\n".join(
        f"[{i}] {p['title']} ({p['path']})\nsome text" for i, p in enumerate(shown, 1))
    echo += f"\n[2] {shown[1]['title']}"  # cut off by max_tokens mid-header
    # and reformatted as markdown, as a small instruction-tuned model does
    echo += f"\n[1] **{shown[0]['title']} ({shown[0]['path']})**\n- **[2] {shown[1]['title']}**"
    echo += f"\n### [1] {shown[0]['title']}:"
    # in another case, or under a made-up title: still the header form "[n] title (path)"
    echo += f"\n[1] {shown[0]['title'].upper()} ({shown[0]['path']})\n[2] Some Other Title ({shown[1]['path']})"
    with FakeLLM([echo + "\n\n[3]"]) as server:  # ending on the next header, cut off by max_tokens
        data = run(kb, server, "Where was the first Halden tidal turbine installed?", deep=False)
    assert data["citations"] == [] and data["suggestions"] == []
    # a real citation on a line of its own still counts
    with FakeLLM([echo + "\n[1] The first unit went to Port Essery."]) as server:
        data = run(kb, server, "Where was the first Halden tidal turbine installed?", deep=False)
    assert [c["passages"] for c in data["citations"]] == [[1]]


def test_a_reply_that_echoes_its_prompt_cites_nothing_it_copied(make_kb: Any) -> None:
    """Gemma 3 270M (a base model) repeats its prompt; the copied [n] marks are not citations."""
    kb = kb_with(make_kb, extra='system_role = "user"\n')
    q = "Where was the first Halden tidal turbine installed?"
    with FakeLLM(["x"]) as server:
        run(kb, server, q, deep=False)
    prompt = server.requests[0]["messages"][0]["content"]
    first = prompt.index("[1] ")
    head_end = prompt.index("\n", first)
    # the instructions, the question, then passage 1 copied without its "(path)" header tail
    title = prompt[first + 4:head_end].rsplit(" (", 1)[0]
    body = prompt[head_end + 1:].split("\n", 1)[0]
    echo = prompt[:first] + f"[1] {title}: {body}\n[2] {body[:50]}"
    with FakeLLM([echo]) as server:
        data = run(kb, server, q, deep=False)
    assert data["citations"] == [] and data["suggestions"] == []
    # what follows the copied part is read as usual
    with FakeLLM([prompt[:first] + "\nAt Port Essery [1]."]) as server:
        data = run(kb, server, q, deep=False)
    assert [c["passages"] for c in data["citations"]] == [[1]]
    # a short restatement of the question is not an echo, and neither is a plain answer
    with FakeLLM([f"{q} At Port Essery [1].", "At Port Essery [1]."]) as server:
        assert run(kb, server, q, deep=False)["citations"][0]["passages"] == [1]
        assert run(kb, server, q, deep=False)["citations"][0]["passages"] == [1]


def test_write_suggestions_is_idempotent_and_keeps_comments(make_kb: Any) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    sc = kb.root / "people" / "mira-okafor.pnk.yaml"
    text = sc.read_text()
    sc.write_text("# my own note about this sidecar\n" + text.replace("tags: []", "tags: [people]  # keep me"))
    kb.sync()
    plan = plan_json(("q1", "Which turbine did Mira Okafor design?", []),
                     ("q2", "Where was it first installed?", ["q1"]))
    replies = [plan, "The Halden turbine [1].", "At Port Essery [1].", "Velmar's north coast [1][2][3]."]
    with FakeLLM(replies) as server:
        data = run(kb, server)
    assert data["suggestions"]
    first = write_suggestions(kb, data["suggestions"])
    assert first["added"] and not first["existing"]
    after = sc.read_text()
    assert after.startswith("# my own note about this sidecar") and "# keep me" in after
    assert "origin: deep" in after and f"transcript: {data['id']}" in after
    snapshot = sidecars(kb.root)
    second = write_suggestions(kb, data["suggestions"])
    assert not second["added"] and len(second["existing"]) == len(first["added"])
    assert sidecars(kb.root) == snapshot  # byte for byte
    # the staged links are ordinary links to the index now
    shown = kb.show("people/mira-okafor.md")
    assert any("halden-turbine" in line and "[sidecar" in line for line in shown["outgoing"])


def test_doctor_lists_deep_links_not_yet_committed(make_kb: Any, runner: CliRunner) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-C", str(kb.root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "kb"], check=True)
    plan = plan_json(("q1", "Which turbine did Mira Okafor design?", []),
                     ("q2", "Where was it first installed?", ["q1"]))
    with FakeLLM([plan, "Halden [1].", "Port Essery [1].", "North coast [1][2]."]) as server:
        data = run(kb, server)
    staged = write_suggestions(kb, data["suggestions"])
    report = kb.doctor()
    listed = report["uncommitted_deep_links"]
    assert len(listed) == len(staged["added"]) and listed[0]["transcript"] == data["id"]
    res = runner.invoke(cli, ["doctor", "--kb", str(kb.root)])
    assert "origin: deep" in res.output
    subprocess.run([*git, "commit", "-qam", "accept the suggestions"], check=True)
    assert kb.doctor()["uncommitted_deep_links"] == []


def test_anthropic_backend_speaks_the_messages_api(make_kb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = kb_with(make_kb)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    with FakeLLM([Raw(529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
                  "Port Essery [1]."]) as server:
        settings = resolve(kb, backend="anthropic", model="test-claude", base_url=server.url)
        data = Run(kb, "Where was the first Halden tidal turbine installed?", settings, deep=False,
                   sleep=lambda s: None).execute()
    check_money(data)
    assert server.paths == ["/v1/messages", "/v1/messages"]
    body = server.requests[-1]
    assert "numbered passages" in body["system"] and body["messages"][0]["role"] == "user"
    sent = server.headers[-1]
    assert "sk-ant-test-secret" in (sent.get("x-api-key", "") + sent.get("authorization", ""))
    assert data["answer"] == "Port Essery [1]." and data["citations"][0]["path"] == "machines/halden-turbine.md"
    assert data["receipt"]["price"]["input_per_1k_eur"] == "0.002"
    transcript = (kb.root / ".pinakes-ledger" / "transcripts" / f"{data['id']}.json").read_text()
    assert "sk-ant-test-secret" not in transcript


def test_auth_failure_is_one_line_and_the_key_never_shows(make_kb: Any, runner: CliRunner,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    kb = kb_with(make_kb)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-very-secret")
    with FakeLLM([Raw(401, {"error": {"message": "bad key sk-test-very-secret"}})]) as server:
        res = runner.invoke(cli, ["ask", MULTI, "--kb", str(kb.root), "--base-url", server.url + "/v1"])
    assert res.exit_code == 1 and "authentication failed" in res.output
    assert server.headers[0]["authorization"] == "Bearer sk-test-very-secret"
    assert "sk-test-very-secret" not in res.output
    assert server.calls == 1  # no retry on a bad key


def test_a_key_in_pinakes_toml_is_refused(make_kb: Any, runner: CliRunner) -> None:
    kb = kb_with(make_kb, extra='api_key = "sk-leak"\n')
    res = runner.invoke(cli, ["ask", MULTI, "--kb", str(kb.root)])
    assert res.exit_code == 1 and "api_key is refused" in res.output and "sk-leak" not in res.output


def test_cli_json_show_transcript_and_confirmation(make_kb: Any, runner: CliRunner) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    q = "Where was the first Halden tidal turbine installed?"
    with FakeLLM(["Port Essery [1]."]) as server:
        url = server.url + "/v1"
        # the deep bound is above confirm_above_eur (0.02) at this price: no terminal, no --yes: refuse
        res = runner.invoke(cli, ["ask", MULTI, "--kb", str(kb.root), "--deep", "--base-url", url])
        assert res.exit_code == 1 and "pass --yes" in res.output and server.calls == 0
        res = runner.invoke(cli, ["ask", q, "--kb", str(kb.root), "--json", "--base-url", url])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["answer"] == "Port Essery [1]." and data["receipt"]["calls"] == 1
    res = runner.invoke(cli, ["ask", "--kb", str(kb.root), "--show-transcript", data["id"][:12]])
    assert res.exit_code == 0 and "synthesis" in res.output and "receipt: 1 call" in res.output
    res = runner.invoke(cli, ["ask", "--kb", str(kb.root), "--show-transcript", data["id"], "--json"])
    assert json.loads(res.output)["id"] == data["id"]
    res = runner.invoke(cli, ["ask", "--kb", str(kb.root), "--show-transcript", "NOPE"])
    assert res.exit_code == 1 and "no transcript" in res.output
    # --dry-run: the estimate and the plan, no request
    with FakeLLM([]) as server:
        res = runner.invoke(cli, ["ask", MULTI, "--kb", str(kb.root), "--deep", "--dry-run", "--json",
                                  "--base-url", server.url + "/v1"])
    assert res.exit_code == 0 and server.calls == 0
    dry = json.loads(res.output)
    assert dry["estimate_eur"] > 0 and dry["planned_calls"]


def test_ask_in_part_of_the_kb_keeps_every_search_there(make_kb: Any, runner: CliRunner) -> None:
    """``pnk ask --in/--tag``: the free search and the paid run's retrievals see only that part;
    the transcript records the scope; a part that lacks the fact, or holds nothing, costs nothing."""
    kb = kb_with(make_kb, deep="confident_at = 0.5")
    q = "Where was the first Halden tidal turbine installed?"
    with FakeLLM(["The first Halden turbine was installed at Port Essery [1]."]) as server:
        url = server.url + "/v1"
        res = runner.invoke(cli, ["ask", q, "--kb", str(kb.root), "--json", "--in", "machines", "--base-url", url])
        assert res.exit_code == 0, res.output
        data = json.loads(res.output)
        assert data["scope"] == {"within": ["machines"]} and server.calls == 1
        retrieved = {p["path"] for r in calls_of(data, "retrieve") for p in r["retrieved"]}
        assert retrieved == {"machines/halden-turbine.md"}
        assert [c["path"] for c in data["citations"]] == ["machines/halden-turbine.md"]
        # the place note names the turbine's town, never the turbine: not in that part of the notes
        res = runner.invoke(cli, ["ask", q, "--kb", str(kb.root), "--json", "--in", "places", "--base-url", url])
        data = json.loads(res.output)
        assert data["stop_reason"] == "not-in-notes" and data["receipt"]["calls"] == 0
        res = runner.invoke(cli, ["ask", q, "--kb", str(kb.root), "--tag", "nope", "--base-url", url])
        assert res.exit_code == 1 and res.output.strip() == "Error: no document is tagged #nope"
        res = runner.invoke(cli, ["ask", q, "--kb", str(kb.root), "--since", "2030", "--base-url", url])
        assert res.exit_code == 1 and res.output.strip() == "Error: no document is dated from 2030-01-01"
        assert server.calls == 1
    free = make_kb(DOCS, name="free-scope")
    free.sync()
    res = runner.invoke(cli, ["ask", q, "--kb", str(free.root), "--in", "kitchen"])
    assert res.exit_code == 0 and "kitchen/bread.md" in res.output and "machines/" not in res.output


def test_without_a_backend_ask_prints_passages_and_how_to_configure_one(make_kb: Any, runner: CliRunner) -> None:
    kb = make_kb(DOCS, name="free-kb")
    kb.sync()
    res = runner.invoke(cli, ["ask", "Where was the Halden turbine installed?", "--kb", str(kb.root)])
    assert res.exit_code == 0
    assert "machines/halden-turbine.md" in res.output and "No LLM backend" in res.output
    assert "docs/deep.md" in res.output
    # A question the notes do not answer owes no answer: it says so, and what --deep needs.
    from .test_support import CHEMEX, coffee_docs

    coffee = make_kb(coffee_docs(False), name="coffee-free")
    coffee.sync()
    near = runner.invoke(cli, ["ask", CHEMEX, "--kb", str(coffee.root)])
    assert near.exit_code == 0, near.output
    assert near.output.startswith("The notes do not contain this: nothing in the notes mentions 'Chemex'.")
    assert "No LLM backend, so no answer" not in near.output
    assert "--deep would look further" in near.output and "docs/deep.md" in near.output
    data = json.loads(runner.invoke(cli, ["ask", CHEMEX, "--kb", str(coffee.root), "--json"]).output)
    assert data["not_in_notes"] is True and data["answer"] is None and data["backend"] is None


def test_template_schema_is_quoted_verbatim_in_the_decomposition_prompt(make_kb: Any, runner: CliRunner,
                                                                       tmp_path: Path) -> None:
    res = runner.invoke(cli, ["init", str(tmp_path / "papers"), "--template", "research-papers"])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "papers" / "pinakes.toml").read_text()
    assert 'template = "research-papers"' in text and "[schema]" in text
    schema = text[text.index("\n[schema]\n"):]
    kb = make_kb(DOCS, name="papers", root=tmp_path / "papers", config=LLM + "\n[deep]\nconfident_at = 1.01\n" + schema)
    kb.sync()
    with FakeLLM([plan_json(("q1", "Which turbine?", [])), "Halden [1].", "Halden [1]."]) as server:
        run(kb, server)
    decompose_system = server.requests[0]["messages"][0]["content"]
    assert "entity types: author, paper, venue, method, dataset" in decompose_system
    assert "relation types: cites, extends, evaluates_on, authored_by" in decompose_system


GOLDEN = """\
version: 1
questions:
  - id: s01
    question: Where was the first Halden tidal turbine installed?
    class: simple
    documents: [machines/halden-turbine.md]
  - id: m01
    question: On which coast is the town where the turbine designed by Mira Okafor was first installed?
    class: multi-hop
    documents: [people/mira-okafor.md, machines/halden-turbine.md, places/port-essery.md]
  - id: u01
    question: How fast does a swallow fly?
    class: unanswerable
    documents: []
"""


def test_eval_deep_reports_cost_tokens_and_cited_recall_per_class(make_kb: Any, runner: CliRunner,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    kb = kb_with(make_kb, deep="confident_at = 1.01")
    (kb.root / "golden").mkdir()
    (kb.root / "golden" / "questions.yaml").write_text(GOLDEN)
    monkeypatch.setenv("PINAKES_LLM_BACKEND", "scripted")
    res = runner.invoke(cli, ["eval", "--deep", "--kb", str(kb.root), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["backend"] == "scripted" and out["questions"] == 3 and out["error"] is None
    rows = {r["id"]: r for r in out["per_question"]}
    ulid = {p: kb.resolve(p)["ulid"] for p in DOCS}
    gold = {"m01": {ulid[p] for p in ("people/mira-okafor.md", "machines/halden-turbine.md",
                                      "places/port-essery.md")}}
    assert rows["m01"]["cited_recall"] == pytest.approx(len(set(rows["m01"]["cited"]) & gold["m01"]) / 3)
    assert set(rows["m01"]["gold"]) == gold["m01"]  # the row says what it was scored against
    assert rows["u01"]["cited_recall"] is None and rows["u01"]["gold"] == []
    for cls in ("simple", "multi-hop", "unanswerable", "all"):
        s = out["classes"][cls]
        assert s["calls_per_query"] >= 3 and s["tokens_per_query"] > 0 and s["budget_breaches"] == 0
    assert out["classes"]["all"]["eur_total"] == pytest.approx(sum(r["eur"] for r in rows.values()))
    # each question left its own transcript
    assert len(list((kb.root / ".pinakes-ledger" / "transcripts").glob("*.json"))) == 3
    # --class choose the questions of the paid run as they do the free one's
    one = json.loads(runner.invoke(cli, ["eval", "--deep", "--kb", str(kb.root), "--json",
                                         "--class", "multi-hop"]).output)
    assert [r["id"] for r in one["per_question"]] == ["m01"] and one["source"]["classes"] == ["multi-hop"]


def test_an_unreadable_reply_is_charged_its_reservation(make_kb: Any) -> None:
    """A 200 whose body does not parse may have been billed: the budget assumes the worst."""
    kb = kb_with(make_kb)
    with FakeLLM([Raw(200, "this is not json")]) as server:
        with pytest.raises(LLMError, match="unreadable reply"):
            run(kb, server, deep=False)
    assert server.calls == 1
    saved = json.loads(next((kb.root / ".pinakes-ledger" / "transcripts").glob("*.json")).read_text())
    call = next(r for r in saved["rounds"] if r["kind"] == "synthesis")["calls"][0]
    assert call["status"] == "unknown-outcome" and call["eur"] == call["reserved_eur"] > 0
    check_money(saved)


def test_a_timeout_is_charged_its_reservation_and_retried_within_the_cap(make_kb: Any) -> None:
    """No answer in time: the provider may have billed it, so the budget charges the worst case."""
    import time as _time

    kb = kb_with(make_kb)

    def late(body: dict[str, Any]) -> str:
        _time.sleep(1.0)
        return "too late"

    with FakeLLM([late, "Port Essery [1]."]) as server:
        settings = resolve(kb, base_url=server.url + "/v1")
        settings.llm["timeout"] = 0.3
        data = Run(kb, "Where was the first Halden tidal turbine installed?", settings, deep=False,
                   sleep=lambda s: None).execute()
    assert server.calls == 2 and data["answer"] == "Port Essery [1]."
    attempts = next(r for r in data["rounds"] if r["kind"] == "synthesis")["calls"]
    assert attempts[0]["status"] == "unknown-outcome" and attempts[0]["eur"] == attempts[0]["reserved_eur"]
    assert attempts[1]["status"] == "ok"
    receipt = data["receipt"]
    assert receipt["within_cap"] and receipt["calls"] == 2
    # a billed-maybe retry is the one way past the estimate; the receipt says so
    assert receipt["within_estimate"] == (Decimal(receipt["eur_exact"]) <= Decimal(str(data["estimate_eur"])))


def test_core_ask_without_the_plugin_says_how_to_install_it() -> None:
    from pinakes.cli.ask import ask as core_ask

    res = CliRunner().invoke(core_ask, ["what is bm25", "--deep"])
    assert res.exit_code == 1 and "pip install 'pinakes[deep]'" in res.output
    assert "Traceback" not in res.output


def test_software_docs_template_and_an_unknown_one(tmp_path: Path) -> None:
    from pinakes import KB
    from pinakes.errors import ConfigError

    kb = KB.init(tmp_path / "docs-kb", template="software-docs")
    schema = kb.config.data["schema"]
    assert schema["relation_types"][0] == "depends_on" and kb.config.kb["template"] == "software-docs"
    with pytest.raises(ConfigError, match="unknown template"):
        KB.init(tmp_path / "other", template="cookbook")
    assert not (tmp_path / "other" / "pinakes.toml").exists()


# --- round 0 that abstains or misses the asked fact (pinakes/support/) -------------------------


def coffee_kb(make_kb: Any, deep: str = "") -> Any:
    from .test_support import coffee_docs

    kb = make_kb(coffee_docs(False), name="coffee-ask", config=LLM + ("\n[deep]\n" + deep if deep else ""))
    kb.sync()
    return kb


def test_an_abstaining_round0_says_the_notes_lack_it_and_pays_nothing(make_kb: Any, runner: CliRunner) -> None:
    from .test_support import CHEMEX

    kb = coffee_kb(make_kb)
    with FakeLLM(["A guess the notes do not support [1]."]) as server:
        data = run(kb, server, CHEMEX, deep=False)
    assert server.calls == 0
    assert data["stop_reason"] == "not-in-notes" and data["not_in_notes"] is True
    assert data["round0"]["abstained"] and data["round0"]["reason"] == "nothing in the notes mentions 'Chemex'"
    assert data["answer"].startswith("The notes do not contain this: nothing in the notes mentions 'Chemex'")
    assert data["receipt"]["calls"] == 0 and data["receipt"]["eur"] == 0.0
    assert data["estimate_eur"] == 0.0 and data["planned_calls"] == []
    # The CLI says so, and --dry-run plans no paid call (the runner fixture loads pnk ask from
    # the plugin: alone in a worker, a bare CliRunner meets the install hint instead).
    with FakeLLM([]) as server:
        res = runner.invoke(cli, ["ask", CHEMEX, "--kb", str(kb.root), "--base-url", server.url + "/v1"])
        dry = runner.invoke(cli, ["ask", CHEMEX, "--kb", str(kb.root), "--base-url", server.url + "/v1",
                                  "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "The notes do not contain this: nothing in the notes mentions 'Chemex'" in res.output
    assert "abstains: nothing in the notes mentions 'Chemex'" in dry.output
    assert "no paid call" in dry.output and server.calls == 0


def test_a_near_miss_round0_is_not_the_cheap_exit_of_deep(make_kb: Any) -> None:
    """The note names the French press, never its inventor: --deep looks further."""
    from .test_support import CHEMEX, WHO

    kb = coffee_kb(make_kb)  # confident_at stays the default
    plan = plan_json(("q1", "Who invented the French press?", []))
    with FakeLLM([plan, "UNKNOWN", "The notes do not say who invented the French press."]) as server:
        data = run(kb, server, WHO, deep=True)
    # Round 0 abstains, naming the unsupported part; --deep still looks further.
    assert not data["round0"]["confident"] and data["round0"]["abstained"]
    assert data["round0"]["reason"] == "found 'French press', nothing on 'invented'"
    assert calls_of(data, "decompose") and data["stop_reason"] != "confident"
    # Plain ask says the notes do not contain it, and pays nothing.
    with FakeLLM(["Attilio Calimani [1]."]) as server:
        plain = run(kb, server, WHO, deep=False)
    assert server.calls == 0 and plain["stop_reason"] == "not-in-notes"
    assert plain["answer"].startswith(
        "The notes do not contain this: found 'French press', nothing on 'invented'")
    # An abstaining round 0 with --deep goes to the loop too, rather than stopping.
    with FakeLLM([plan_json(("q1", CHEMEX, [])), "UNKNOWN", "Not in the notes."]) as server:
        deep = run(kb, server, CHEMEX, deep=True)
    assert deep["round0"]["abstained"] and calls_of(deep, "decompose")
    assert deep["stop_reason"] != "not-in-notes"
