"""`pnk serve --allow-writes`: pinakes_link / pinakes_unlink through the MCP SDK's own client.

The real console script serves a real KB over stdio; the tests check what an
agent sees (tools, annotations, one-line errors) and what lands on disk
(sidecars edited with comments kept, document bodies never touched).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import anyio
import pytest

from pinakes import KB
from tests.test_mcp import DOCS, GUIDE_ID, LENSES_ID, STORMS_ID, TOOLS, err, ok, stdio_session

WRITE_TOOLS = {"pinakes_link", "pinakes_unlink"}


@pytest.fixture
def kb(make_kb, tmp_path: Path) -> KB:
    docs = dict(DOCS)
    docs["ops/storms.pnk.yaml"] = f"""
        # Written by hand: this comment must survive tool edits.
        id: {STORMS_ID}
        title: Storm Procedures
        tags: [operations]   # kept too
        links: []
        """
    kb = make_kb(docs, name="lights")
    kb.sync()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("# Secret\n\nTOPSECRET\n", encoding="utf-8")
    return kb


def _bodies(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*.md")) if ".pinakes" not in p.parts}


def _run(scenario, log: Path) -> None:
    try:
        anyio.run(scenario)
    except BaseException:
        print(log.read_text(encoding="utf-8"), file=sys.stderr)
        raise


def test_link_tools_are_absent_without_the_flag(kb: KB, tmp_path: Path) -> None:
    log = tmp_path / "server.log"

    async def scenario() -> None:
        async with stdio_session(["--kb", str(kb.root)], log) as session:
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            res = await session.call_tool("pinakes_link", {"source": "guide/intro.md",
                                                           "target": "ops/storms.md", "rel": "uses"})
            assert res.is_error and "pinakes_link" in res.content[0].text

    _run(scenario, log)
    assert "to: ../ops/storms.md" not in (kb.root / "guide" / "intro.pnk.yaml").read_text()


def test_agents_record_and_remove_links(kb: KB, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    bodies = _bodies(kb.root)
    storms_sidecar = kb.root / "ops" / "storms.pnk.yaml"

    async def scenario() -> None:
        async with stdio_session(["--kb", str(kb.root), "--allow-writes"], log) as session:
            listed = {t.name: t for t in (await session.list_tools()).tools}
            assert set(listed) == TOOLS | WRITE_TOOLS
            for name in WRITE_TOOLS:
                ann = listed[name].annotations
                assert ann.read_only_hint is False and ann.destructive_hint is False
                assert ann.idempotent_hint is True and listed[name].output_schema
            assert set(listed["pinakes_link"].input_schema["required"]) == {"source", "target", "rel"}
            call = session.call_tool

            # by path: written to the source's sidecar as a path relative to it, comments kept
            added = ok(await call("pinakes_link", {"source": "ops/storms.md", "target": "guide/intro.md",
                                                   "rel": "cites", "note": "background"}))
            assert added["action"] == "added" and added["kb"] == "lights"
            assert added["source"]["doc_id"] == STORMS_ID and added["target"]["doc_id"] == GUIDE_ID
            assert added["to"] == "../guide/intro.md" and added["sidecar"] == "ops/storms.pnk.yaml"
            assert added["sync"]
            text = storms_sidecar.read_text(encoding="utf-8")
            assert "# Written by hand: this comment must survive tool edits." in text
            assert "# kept too" in text and "to: ../guide/intro.md" in text and "rel: cites" in text
            # the index knows at once
            out = ok(await call("pinakes_links", {"doc_id": STORMS_ID, "direction": "out"}))
            assert (GUIDE_ID, "cites") in {(n["doc_id"], n["rel"]) for n in out["neighbours"]}

            # idempotent: the same call again changes nothing on disk
            before = storms_sidecar.read_bytes()
            again = ok(await call("pinakes_link", {"source": STORMS_ID, "target": f"pnk://{GUIDE_ID}",
                                                   "rel": "cites", "note": "background"}))
            assert again["action"] == "exists" and again["sync"] is None
            assert storms_sidecar.read_bytes() == before
            updated = ok(await call("pinakes_link", {"source": "ops/storms.md", "target": "guide/intro.md",
                                                     "rel": "cites", "note": "the history section"}))
            assert updated["action"] == "updated" and "note: the history section" in storms_sidecar.read_text()

            # by id: a pnk:// URI is written; a dangling path only when asked for
            by_id = ok(await call("pinakes_link", {"source": f"pnk://{STORMS_ID}", "target": LENSES_ID,
                                                   "rel": "uses"}))
            assert by_id["action"] == "added" and by_id["to"] == f"pnk://{LENSES_ID}"
            assert "no document" in err(await call("pinakes_link", {
                "source": "ops/storms.md", "target": "ops/future.md", "rel": "cites"}))
            dangling = ok(await call("pinakes_link", {"source": "ops/storms.md", "target": "ops/future.md",
                                                      "rel": "cites", "allow_dangling": True}))
            assert dangling["target"] == {"target": "future.md", "dangling": True}  # as written
            assert dangling["to"] == "future.md"

            # bad arguments: one line each, nothing written
            snapshot = storms_sidecar.read_bytes()
            bad_rel = err(await call("pinakes_link", {"source": "ops/storms.md",
                                                      "target": "guide/intro.md", "rel": "is about"}))
            assert "invalid relation 'is about'" in bad_rel
            assert "rel:" in err(await call("pinakes_link", {"source": "ops/storms.md",
                                                             "target": "guide/intro.md"}))
            secret = str(tmp_path / "outside" / "secret.md")
            for field, value in (("source", "../../etc/passwd"), ("source", "/etc/passwd"),
                                 ("target", secret), ("target", "../outside/secret.md"),
                                 ("target", "guide/../../outside/secret.md"), ("source", "~/notes.md")):
                args = {"source": "ops/storms.md", "target": "guide/intro.md", "rel": "cites",
                        "allow_dangling": True, field: value}
                message = err(await call("pinakes_link", args))
                assert f"{field} {value!r} is outside the knowledge base" in message, message
            assert "use a document id" in err(await call("pinakes_link", {
                "source": "ops/storms.md", "target": "https://example.com/x.md", "rel": "cites"}))
            assert "link to itself" in err(await call("pinakes_link", {
                "source": "ops/storms.md", "target": STORMS_ID, "rel": "cites"}))
            missing = err(await call("pinakes_link", {
                "source": "ops/nothing.md", "target": "guide/intro.md", "rel": "cites"}))
            assert "no document 'ops/nothing.md'" in missing and str(kb.root) not in missing
            assert "note is" in err(await call("pinakes_link", {
                "source": "ops/storms.md", "target": "guide/intro.md", "rel": "cites", "note": "x" * 600}))
            assert "unknown kb" in err(await call("pinakes_link", {
                "source": "ops/storms.md", "target": "guide/intro.md", "rel": "cites", "kb": "nope"}))
            assert storms_sidecar.read_bytes() == snapshot

            # unlink: one relation, then everything to a target; then nothing left to do
            gone = ok(await call("pinakes_unlink", {"source": "ops/storms.md", "target": "ops/future.md",
                                                    "rel": "cites"}))
            assert gone["action"] == "removed" and gone["removed"] == [{"to": "future.md", "rel": "cites"}]
            absent = ok(await call("pinakes_unlink", {"source": "ops/storms.md", "target": "ops/future.md"}))
            assert absent["action"] == "absent" and absent["sync"] is None
            ok(await call("pinakes_link", {"source": "ops/storms.md", "target": "guide/intro.md", "rel": "extends"}))
            both = ok(await call("pinakes_unlink", {"source": STORMS_ID, "target": "guide/intro.md"}))
            assert sorted(r["rel"] for r in both["removed"]) == ["cites", "extends"]
            assert "outside the knowledge base" in err(await call("pinakes_unlink", {
                "source": "ops/storms.md", "target": "../../etc/passwd"}))
            out = ok(await call("pinakes_links", {"doc_id": STORMS_ID, "direction": "out"}))
            assert {(n["doc_id"], n["rel"]) for n in out["neighbours"]} == {(LENSES_ID, "uses")}

    _run(scenario, log)
    text = storms_sidecar.read_text(encoding="utf-8")
    assert "# Written by hand: this comment must survive tool edits." in text
    assert f"to: pnk://{LENSES_ID}" in text and "intro.md" not in text
    assert _bodies(kb.root) == bodies  # never a document body
    leftovers = [p.name for p in kb.root.rglob("*") if p.name.endswith((".tmp", "~")) or ".tmp" in p.name]
    assert leftovers == []  # atomic writes leave no temp files behind
