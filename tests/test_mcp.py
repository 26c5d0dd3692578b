"""``pnk serve``: the real console script, driven by the MCP SDK's own client (stdio and HTTP).

One scenario (:func:`exercise`) runs against both transports: tool listing,
each tool's structured result, the caps, the errors (and that the server
survives them), containment, and freshness after a sync. The MCP Inspector
test is the one allowed skip, when npx cannot fetch the pinned Inspector.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from pinakes import KB
from pinakes.cli import cli
from pinakes.errors import DocumentNotFound, SectionNotFound
from pinakes.mcp_server import RESPONSE_BUDGET, PinakesServer

PNK = str(Path(sys.executable).parent / "pnk")
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
TOOLS = {"pinakes_search", "pinakes_links", "pinakes_read", "pinakes_kbs"}

LENSES_ID = "01HZX5A8Q7W3K1V9XQ2M4B7N0C"
GUIDE_ID = "01HZX5B2A8R4T6Y8V0W2E4R6T8"
STORMS_ID = "01HZX5C3D5F7H9K1M3P5R7T9V1"

DOCS: dict[str, str] = {
    "guide/intro.md": """
        # Lighthouse Field Guide

        A short guide to how coastal lighthouses work and who kept them.

        ## Background
        Lighthouses mark dangerous coasts and harbour entrances for ships at night.

        ### History
        The Pharos of Alexandria, built around 280 BC, is the most famous early lighthouse.

        ## Keepers
        Keepers trimmed wicks, wound the clockwork and logged the weather every night.
        """,
    "guide/intro.pnk.yaml": f"""
        id: {GUIDE_ID}
        title: Lighthouse Field Guide
        tags: [lighthouses]
        links: []
        """,
    "guide/lenses.md": """
        # Fresnel Lenses

        Augustin-Jean Fresnel designed a lens of concentric prism rings in 1822. It bends
        the light of a small lamp into a beam visible more than twenty nautical miles away,
        far thinner and lighter than a solid glass lens of the same focal length.

        ## Orders
        Lenses come in orders, from the huge first order for sea coasts to the small sixth
        order for harbour piers.
        """,
    "guide/lenses.pnk.yaml": f"""
        id: {LENSES_ID}
        title: Fresnel Lenses
        tags: [optics, lighthouses]
        links:
          - to: intro.md
            rel: extends
          - to: ../ops/storms.md
            rel: uses
          - to: missing.md
            rel: cites
        """,
    "ops/storms.md": """
        # Storm Procedures

        When a gale rises the keeper closes the storm panes, checks the fog signal and
        keeps the light burning until dawn, whatever the weather.
        """,
    "ops/storms.pnk.yaml": f"""
        id: {STORMS_ID}
        title: Storm Procedures
        tags: [operations]
        links: []
        """,
    "ops/swap.md": """
        # Swap Target

        This document is replaced by a symlink after sync in the containment check.
        """,
}


@pytest.fixture
def mcp_kb(make_kb, tmp_path: Path) -> KB:
    kb = make_kb(DOCS, name="lights")
    kb.sync()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nTOPSECRET do not serve\n", encoding="utf-8")
    return kb


# --- helpers -----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {"PINAKES_USER_PATH": os.environ["PINAKES_USER_PATH"]}
    for key in ("PINAKES_CACHE_DIR", "PINAKES_LOAD_PLUGINS", "HOME", "PATH", "TMPDIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


@contextlib.asynccontextmanager
async def stdio_session(args: list[str], log: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=PNK, args=["serve", *args], env=_env())
    with open(log, "w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.content and result.content[0].type == "text" and result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def err(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text, text
    return text


# --- the scenario, run over each transport --------------------------------------------------------


async def exercise(session: ClientSession, kb: KB, tmp_path: Path) -> None:
    listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.idempotent_hint is True
        assert tool.annotations.open_world_hint is False
        assert tool.description
    by_name = {t.name: t for t in listed}
    assert "refining the query" in by_name["pinakes_search"].description
    assert "narrow with `within`" in by_name["pinakes_search"].description
    assert "one hop" in by_name["pinakes_links"].description
    assert "don't page" in by_name["pinakes_links"].description
    assert set(by_name["pinakes_search"].input_schema["properties"]) == {
        "query", "kb", "k", "entities", "concepts", "channel", "explain", "within", "tags", "since", "until", "not_within"}
    assert by_name["pinakes_read"].input_schema["required"] == ["doc_id"]

    call = session.call_tool

    # pinakes_kbs
    kbs = ok(await call("pinakes_kbs", {}))["kbs"]
    assert [k["name"] for k in kbs] == ["lights"]
    assert kbs[0]["indexed"] and kbs[0]["documents"] == 4 and kbs[0]["chunks"] >= 6
    assert kbs[0]["last_sync"].endswith("Z")
    assert kbs[0]["folders"] == {"guide": 2, "ops": 2} and kbs[0]["tags"]["lighthouses"] == 2

    # pinakes_search: kb omitted (one KB served), structured hits, text rendering
    res = await call("pinakes_search", {"query": "prism rings that bend lamp light into a beam"})
    found = ok(res)
    # A probability from the calibration shipped for the default embedder (pnk eval).
    assert found["kb"] == "lights" and isinstance(found["confidence"], float)
    assert found["abstained"] is False and found["truncated"] is False
    top = found["hits"][0]
    assert top["doc_id"] == LENSES_ID and top["path"] == "guide/lenses.md"
    assert top["uri"] == f"pnk://{LENSES_ID}" and top["heading_path"] == ["Fresnel Lenses"]
    assert "Fresnel" in top["text"] and top["score"] > 0
    assert set(top["ranks"]) == {"lexical", "dense"}
    assert "Fresnel Lenses" in res.content[0].text
    # which graph channel, and why (no golden set here: the global default)
    assert found["channel_reason"].startswith(f"{found['channel']}: ")
    assert f"channel {found['channel_reason']}" in res.content[0].text
    named = ok(await call("pinakes_search", {"query": "keeper duties", "kb": "lights", "k": 2,
                                             "entities": ["fog signal"], "concepts": ["bad weather"]}))
    assert len(named["hits"]) == 2 and named["hits"][0]["path"] == "ops/storms.md"

    # a scoped search: only the documents under a folder, or carrying every tag
    scoped = await call("pinakes_search", {"query": "lamp light and storms", "within": ["ops"]})
    inside = ok(scoped)
    assert inside["hits"] and {h["path"].split("/")[0] for h in inside["hits"]} == {"ops"}
    assert inside["scope"] == {"within": ["ops"], "tags": [], "documents": 2}
    assert "searched 2 documents under ops" in scoped.content[0].text
    tagged = ok(await call("pinakes_search", {"query": "lamp light", "tags": ["#Lighthouses", "optics"]}))
    assert {h["path"] for h in tagged["hits"]} == {"guide/lenses.md"}
    assert "no document under 'ops' is tagged #optics" in err(
        await call("pinakes_search", {"query": "lamp", "within": ["ops"], "tags": ["optics"]}))
    assert "outside the knowledge base" in err(
        await call("pinakes_search", {"query": "lamp", "within": ["../outside"]}))

    # the k cap: 500 comes back as 50, and says so
    capped = ok(await call("pinakes_search", {"query": "lighthouse", "k": 500}))
    assert capped["k"] == 50 and any("capped at 50" in n for n in capped["notes"])

    # pinakes_read: by path, ULID and URI; whole document and one section
    whole = ok(await call("pinakes_read", {"doc_id": "guide/intro.md"}))
    assert whole["doc_id"] == GUIDE_ID and whole["section"] is None
    assert whole["text"].startswith("# Lighthouse Field Guide") and "Keepers trimmed" in whole["text"]
    assert whole["sections"] == ["Lighthouse Field Guide", "Lighthouse Field Guide > Background",
                                 "Lighthouse Field Guide > Background > History",
                                 "Lighthouse Field Guide > Keepers"]
    assert whole["tags"] == ["lighthouses"] and whole["stale"] is False
    section = ok(await call("pinakes_read", {"doc_id": GUIDE_ID,
                                             "section": "Lighthouse Field Guide > Background"}))
    assert section["section"] == ["Lighthouse Field Guide", "Background"]
    assert section["text"].startswith("## Background") and "Pharos" in section["text"]
    assert "Keepers" not in section["text"]
    listed_section = ok(await call("pinakes_read", {"doc_id": f"pnk://{GUIDE_ID}", "kb": "lights",
                                                    "section": ["History"]}))
    assert listed_section["text"].startswith("### History")
    lenses = ok(await call("pinakes_read", {"doc_id": "guide/lenses.md"}))
    assert {(link["to"], link["rel"]) for link in lenses["links"]} >= {("intro.md", "extends")}

    # pinakes_links: depth 10 is capped at 3 and says so; the documented structure
    links = ok(await call("pinakes_links", {"doc_id": LENSES_ID, "depth": 10}))
    assert links["depth"] == 3
    assert any("capped at 3" in n for n in links["notes"] + [links.get("note") or ""])
    assert {"neighbours", "frontier", "unresolved", "confidence", "truncated"} <= set(links)
    assert links["confidence"] == "unknown"
    out = {(n["doc_id"], n["rel"]) for n in links["neighbours"] if n["direction"] == "out"}
    assert (GUIDE_ID, "extends") in out and (STORMS_ID, "uses") in out
    assert any("missing.md" in u["target"] for u in links["unresolved"])
    one_hop = ok(await call("pinakes_links", {"doc_id": "guide/intro.md", "direction": "in"}))
    assert one_hop["depth"] == 1
    assert [(n["doc_id"], n["rel"]) for n in one_hop["neighbours"]] == [(LENSES_ID, "extends")]

    # errors: one line each, and the server stays up
    assert "unknown kb 'nope'" in err(await call("pinakes_search", {"query": "x", "kb": "nope"}))
    assert "unknown kb" in err(await call("pinakes_read", {"doc_id": LENSES_ID, "kb": "nope"}))
    missing = "01HZX5Z9Z9Z9Z9Z9Z9Z9Z9Z9Z9"
    assert "no document with id" in err(await call("pinakes_read", {"doc_id": missing}))
    assert "no document with id" in err(await call("pinakes_links", {"doc_id": missing}))
    assert "k:" in err(await call("pinakes_search", {"query": "x", "k": "many"}))
    assert "query:" in err(await call("pinakes_search", {"query": 123}))
    assert "doc_id:" in err(await call("pinakes_read", {}))
    assert "query is empty" in err(await call("pinakes_search", {"query": "   "}))
    assert "depth must be at least 1" in err(await call("pinakes_links", {"doc_id": LENSES_ID, "depth": 0}))
    assert "direction:" in err(await call("pinakes_links", {"doc_id": LENSES_ID, "direction": "up"}))
    assert "no section" in err(await call("pinakes_read", {"doc_id": GUIDE_ID, "section": "Nowhere"}))

    # containment: path-like ids, absolute paths, section tricks, a symlink swapped in after sync
    secret = tmp_path / "outside" / "secret.md"
    for bad in ("../../etc/passwd", "/etc/passwd", str(secret), "../outside/secret.md",
                "guide/../../outside/secret.md"):
        text = err(await call("pinakes_read", {"doc_id": bad}))
        assert "no document" in text and "TOPSECRET" not in text
    assert "no section" in err(await call("pinakes_read", {"doc_id": GUIDE_ID,
                                                           "section": "../../etc/passwd"}))
    swap = kb.root / "ops" / "swap.md"
    swap.unlink()
    swap.symlink_to(secret)
    refused = err(await call("pinakes_read", {"doc_id": "ops/swap.md"}))
    assert "outside the knowledge base" in refused and "TOPSECRET" not in refused
    swap.unlink()

    # still alive after all of that
    assert ok(await call("pinakes_kbs", {}))["kbs"][0]["documents"] == 4

    # a sync in progress: the server reads the last committed index, not an error
    store, _ = kb.open_store_for_write()
    try:
        with contextlib.suppress(_Rollback), store.transaction() as conn:
            conn.execute("DELETE FROM chunks")
            conn.execute("DELETE FROM documents")
            conn.execute("UPDATE meta SET value = '999' WHERE key = 'generation'")
            during = ok(await call("pinakes_search", {"query": "Fresnel lens"}))
            assert during["hits"] and during["hits"][0]["doc_id"] == LENSES_ID
            raise _Rollback
    finally:
        store.close()

    # freshness: a sync while the server is up is seen by the next call
    (kb.root / "ops" / "foghorns.md").write_text(
        "# Foghorns\n\nA diaphone foghorn groans twice a minute when visibility drops.\n",
        encoding="utf-8")
    before = ok(await call("pinakes_kbs", {}))["kbs"][0]["generation"]
    report = kb.sync()
    assert "ops/foghorns.md" in report.added
    after = ok(await call("pinakes_kbs", {}))["kbs"][0]
    assert after["generation"] > before and after["documents"] == 4  # swap.md removed, foghorns added
    fresh = ok(await call("pinakes_search", {"query": "diaphone foghorn groans", "k": 3}))
    assert fresh["hits"][0]["path"] == "ops/foghorns.md"
    assert fresh["hits"][0]["ranks"]["dense"] is not None  # the vector matrix was reloaded too
    assert "diaphone" in ok(await call("pinakes_read", {"doc_id": "ops/foghorns.md"}))["text"]

    # a rebuild replaces the store file under the server: the next call reopens it
    assert kb.sync(rebuild=True).rebuilt
    rebuilt = ok(await call("pinakes_search", {"query": "diaphone foghorn groans", "k": 3}))
    assert rebuilt["hits"][0]["path"] == "ops/foghorns.md"
    assert ok(await call("pinakes_kbs", {}))["kbs"][0]["documents"] == 4


class _Rollback(Exception):
    """Abort the simulated sync's transaction."""


# --- the tests ------------------------------------------------------------------------------------


def test_stdio_server_end_to_end(mcp_kb: KB, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with stdio_session(["--kb", str(mcp_kb.root)], tmp_path / "server.log") as session:
            await exercise(session, mcp_kb, tmp_path)

    try:
        anyio.run(scenario)
    except BaseException:
        print((tmp_path / "server.log").read_text(encoding="utf-8"), file=sys.stderr)
        raise


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"pnk serve --http exited: {log.read_text(encoding='utf-8')}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.1)
    raise AssertionError("pnk serve --http did not start listening within 30 s")


def test_http_server_with_and_without_token(mcp_kb: KB, tmp_path: Path) -> None:
    port = _free_port()
    token = "s3cret-token"
    log = tmp_path / "http.log"
    env = {**os.environ, "PINAKES_MCP_TOKEN": token}
    with open(log, "wb") as fh:
        proc = subprocess.Popen([PNK, "serve", "--kb", str(mcp_kb.root), "--http", "--port", str(port)],
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_for_port(proc, port, log)
        url = f"http://127.0.0.1:{port}/mcp"
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            resp = httpx2.post(url, json=init, headers={**accept, **headers}, timeout=10)
            assert resp.status_code == 401, (headers, resp.status_code)
            assert resp.headers["www-authenticate"].startswith("Bearer")
            assert "TOPSECRET" not in resp.text

        async def scenario() -> None:
            async with http_session(url, token) as session:
                await exercise(session, mcp_kb, tmp_path)

        anyio.run(scenario)
        assert proc.poll() is None, "the server must survive every error"
    except BaseException:
        proc.terminate()
        proc.wait(10)
        print(log.read_text(encoding="utf-8"), file=sys.stderr)
        raise
    proc.terminate()
    assert proc.wait(20) is not None


def _run_inspector(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # The Inspector gives a server 15 s to answer by default; a server starting on a busy
    # machine (a parallel test run on two cores) can take longer.
    cmd = ["npx", "-y", INSPECTOR, "--cli", "--connect-timeout", "120000", PNK, "serve", "--kb", str(cwd), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, env={**os.environ, **_env()})


@pytest.mark.slow
def test_mcp_inspector_cli(mcp_kb: KB) -> None:
    if shutil.which("npx") is None:
        pytest.skip("npx is not on PATH, so the MCP Inspector CLI cannot run")
    try:
        listed = _run_inspector(["--method", "tools/list"], mcp_kb.root)
    except subprocess.TimeoutExpired:
        pytest.skip(f"npx could not fetch and run {INSPECTOR} within 240 s")
    if listed.returncode != 0 and ("npm ERR" in listed.stderr or "npm error" in listed.stderr):
        reason = next((line for line in listed.stderr.splitlines()
                       if "npm ERR" in line or "npm error" in line), "npm failed")
        pytest.skip(f"npx could not fetch {INSPECTOR}: {reason.strip()}")
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert names == TOOLS
    called = _run_inspector(["--method", "tools/call", "--tool-name", "pinakes_search",
                             "--tool-arg", "query=Fresnel lens prism rings", "--tool-arg", "k=2"],
                            mcp_kb.root)
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert not result.get("isError")
    assert result["structuredContent"]["hits"][0]["doc_id"] == LENSES_ID
    assert "Fresnel Lenses" in result["content"][0]["text"]


# --- in-process: reading, budgets, CLI guards ---------------------------------------------------------


def test_read_sections_and_containment_in_process(mcp_kb: KB, tmp_path: Path) -> None:
    info = mcp_kb.read("guide/intro.md", "Keepers")
    assert info["section"] == ["Lighthouse Field Guide", "Keepers"]
    assert info["lines"][0] < info["lines"][1]
    assert mcp_kb.read("guide/intro.md", "background")["section"][-1] == "Background"
    assert mcp_kb.read("guide/intro.md", "   ")["section"] is None  # blank section: whole document
    with pytest.raises(SectionNotFound, match="no section"):
        mcp_kb.read("guide/intro.md", "Lighthouse Field Guide > History")
    (mcp_kb.root / "guide" / "intro.md").write_text(
        "# Lighthouse Field Guide\n\n## Keepers\nNow edited.\n", encoding="utf-8")
    assert mcp_kb.read(GUIDE_ID)["stale"] is True
    (mcp_kb.root / "ops" / "storms.md").unlink()
    with pytest.raises(DocumentNotFound, match="no longer on disk"):
        mcp_kb.read(STORMS_ID)
    # An indexed file replaced by a symlink out of the KB after sync is refused.
    (mcp_kb.root / "guide" / "lenses.md").unlink()
    (mcp_kb.root / "guide" / "lenses.md").symlink_to(tmp_path / "outside" / "secret.md")
    with pytest.raises(DocumentNotFound, match="outside the knowledge base"):
        mcp_kb.read(LENSES_ID)


def test_response_budget_truncates_and_says_so(make_kb) -> None:
    para = " ".join(f"beacon{i} signal lamp rotation period flash pattern" for i in range(10))
    # Identical sections share one content hash, so sync embeds a single chunk: fast.
    sections = [f"## Pattern\n\n{para}" for _ in range(36)]
    kb = make_kb({"big.md": "# Light Characteristics\n\n" + "\n\n".join(sections)}, name="big")
    kb.sync()
    server = PinakesServer([kb])
    out = server.search("flash pattern of the beacon", k=36)
    assert out["truncated"] is True and any("budget" in n for n in out["notes"])
    assert len(json.dumps(out).encode()) <= RESPONSE_BUDGET + 2000
    assert any(h["text_truncated"] for h in out["hits"])
    # Reading serves the file as it is now: grow it past the budget without re-syncing.
    more = [f"## Extra {i}\n\n{para} {para}" for i in range(40)]
    (kb.root / "big.md").write_text("# Light Characteristics\n\n" + "\n\n".join(sections + more),
                                    encoding="utf-8")
    read = server.read(None, "big.md")
    assert read["truncated"] is True and read["stale"] is True
    assert len(json.dumps(read).encode()) <= RESPONSE_BUDGET + 2000
    assert any("read one section" in n for n in read["notes"])
    one = server.read(None, "big.md", "Extra 3")
    assert one["truncated"] is False and one["text"].startswith("## Extra 3")


def test_serve_refuses_bad_flag_combinations(mcp_kb: KB) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["serve", "--kb", str(mcp_kb.root), "--token", "t"])
    assert result.exit_code == 2 and "only used with --http" in result.output
    result = runner.invoke(cli, ["serve", "--kb", str(mcp_kb.root), "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--token" in result.output
    result = runner.invoke(cli, ["serve", "--kb", str(mcp_kb.root), "--all"])
    assert result.exit_code == 2 and "not both" in result.output
    result = runner.invoke(cli, ["serve", "--kb", "no-such-kb"])
    assert result.exit_code == 1 and "no KB 'no-such-kb'" in result.output
