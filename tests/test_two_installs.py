"""Two installs on one KB do not fight: readers search what they find, only writers rebuild.

A core-only install and a full one are simulated by the real ``pnk`` console script
with ``PINAKES_LOAD_PLUGINS`` choosing the plugin set (empty: the core alone), in
subprocesses, as two venvs would run them; the MCP server is the real ``pnk serve``
driven by the MCP SDK's client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from pinakes.store import index_signature, read_compatibility

PNK = str(Path(sys.executable).parent / "pnk")

DOCS = {
    "tides.md": "# Tides\n\nThe moon raises the tides twice a day; see [the bore](bore.md).\n",
    "bore.md": "# Tidal Bore\n\nA tidal bore is a wave running up a river as the tide comes in.\n",
    "moon.md": "# The Moon\n\nEarth's only natural satellite keeps the [tides](tides.md) moving.\n",
}


def env_for(install: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PINAKES_LOAD_PLUGINS"}
    if install == "core":
        env["PINAKES_LOAD_PLUGINS"] = ""  # no plugin: the core's own embedder only
    return env


def pnk(install: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PNK, *args], capture_output=True, text=True, env=env_for(install), timeout=300)


def index_state(root: Path) -> tuple[int, int, str | None]:
    db = root / ".pinakes" / "index.db"
    st = db.stat()
    return st.st_ino, st.st_mtime_ns, index_signature(root / ".pinakes")


def notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("pnk: note:")]


def test_core_and_full_installs_share_one_kb(make_kb) -> None:
    kb = make_kb(DOCS)
    root = str(kb.root)
    full = pnk("full", "sync", "--kb", root)
    assert full.returncode == 0, full.stderr
    built_full = index_state(kb.root)
    assert "deriver=structural" in str(built_full[2])
    # A core-only reader searches the full index as it is, says so once, and rebuilds nothing.
    res = pnk("core", "search", "--kb", root, "what wave runs up a river", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["hits"][0]["path"] == "bore.md"
    said = notes(res.stderr)
    assert len(said) == 1 and "structural" in said[0] and "without them" in said[0], res.stderr
    for args in (["links", "tides.md", "--kb", root], ["status", "--kb", root], ["show", "moon.md", "--kb", root]):
        res = pnk("core", *args)
        assert res.returncode == 0 and "run `pnk sync`" not in res.stdout + res.stderr, (args, res.stderr)
    assert "bore.md" in pnk("core", "links", "tides.md", "--kb", root).stdout
    doctor = pnk("core", "doctor", "--kb", root, "--json")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["store"]["current"], doctor.stderr
    assert index_state(kb.root) == built_full
    # A core-only *writer* stores no graph: it rebuilds (what it stores differs).
    res = pnk("core", "sync", "--kb", root)
    assert res.returncode == 0 and "rebuilt the index" in res.stdout, res.stdout + res.stderr
    built_core = index_state(kb.root)
    assert "deriver=" not in str(built_core[2])
    # A full reader searches the core index, graph channel and all, and rebuilds nothing either.
    res = pnk("full", "search", "--kb", root, "what wave runs up a river", "--channel", "ppr", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["hits"][0]["path"] == "bore.md"
    said = notes(res.stderr)
    assert len(said) == 1 and "without this install's" in said[0] and "structural" in said[0]
    assert index_state(kb.root) == built_core
    # The same writer again: nothing to rebuild.
    res = pnk("core", "sync", "--kb", root)
    assert "rebuilt" not in res.stdout and index_state(kb.root)[0] == built_core[0]


def test_an_mcp_server_from_one_install_and_a_cli_from_another(make_kb, tmp_path: Path) -> None:
    kb = make_kb(DOCS)
    assert pnk("full", "sync", "--kb", str(kb.root)).returncode == 0
    log = tmp_path / "serve.log"
    answers: list[dict] = []

    async def scenario() -> None:
        params = StdioServerParameters(command=PNK, args=["serve", "--kb", str(kb.root)], env=env_for("core"))
        with open(log, "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for _ in range(2):
                        result = await session.call_tool("pinakes_search", {"query": "tidal bore wave"})
                        assert not result.is_error, result.content
                        answers.append(result.structured_content or {})
                    # The full CLI edits and syncs under the core server: the server follows.
                    (kb.root / "estuary.md").write_text("# Estuary\n\nWhere the river meets the sea.\n")
                    assert pnk("full", "sync", "--kb", str(kb.root)).returncode == 0
                    result = await session.call_tool("pinakes_search", {"query": "where the river meets the sea"})
                    assert not result.is_error, result.content
                    answers.append(result.structured_content or {})

    anyio.run(scenario)
    assert [a["hits"][0]["path"] for a in answers] == ["bore.md", "bore.md", "estuary.md"]
    said = notes(log.read_text())
    assert len(said) == 1 and "structural" in said[0], log.read_text()  # once, not per call


def test_read_compatibility_needs_the_same_schema_tokenizer_embedder_and_settings() -> None:
    base = "schema=6;tokenizer=porter;embedder=m"
    assert read_compatibility(base, base) == (True, "")
    ok, note = read_compatibility(base + ";mentions=2;deriver=structural:1", base)
    assert ok and "mentions, structural" in note and "does not have" in note
    ok, note = read_compatibility(base, base + ";deriver=structural:1")
    assert ok and "without this install's structural" in note
    ok, note = read_compatibility(base + ";deriver=structural:1", base + ";deriver=structural:2")
    assert ok and "other versions of structural" in note
    for other in ("schema=5;tokenizer=porter;embedder=m", "schema=6;tokenizer=trigram;embedder=m",
                  "schema=6;tokenizer=porter;embedder=e5", base + ";setting=bundle_root=docs"):
        ok, note = read_compatibility(other, base)
        assert not ok and "run `pnk sync`" in note
