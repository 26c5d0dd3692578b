"""Containment corpus: path-traversal and escape attempts against every face that takes a document.

Table-driven: every attempt in :func:`attempts` goes to ``pnk show``, ``pnk links``,
``pnk link`` (as source and as target), and the MCP tools ``pinakes_read``,
``pinakes_links``, ``pinakes_link`` (source, target) and ``pinakes_unlink`` through the
SDK's own client. Each one is either refused with
one clear line, or names a document that really is inside the KB. Nothing
outside the KB is ever read (its marker never appears in any output) or written
(the outside folder is byte-for-byte unchanged, and every sidecar written stays
inside the KB with targets inside it).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pinakes import KB
from pinakes.cli import cli
from pinakes.links import classify, is_outside

SECRET = "TOPSECRET-7d1f"
GUIDE_ID = "01HZX5B2A8R4T6Y8V0W2E4R6T8"
UNKNOWN_ID = "01HZX5Z9Z9Z9Z9Z9Z9Z9Z9Z9Z9"

# Counted for docs/reliability.md (the full run prints them).
REFUSED: dict[str, int] = {}


def attempts(outside: Path) -> list[tuple[str, str]]:
    """(label, reference) pairs. ``outside`` is the absolute folder holding the secret."""
    secret = outside / "secret.md"
    return [
        ("dotdot", "../outside/secret.md"),
        ("dotdot-deep", "../../../../../../outside/secret.md"),
        ("dotdot-inner", "guide/../../outside/secret.md"),
        ("dotdot-only", ".."),
        ("absolute-secret", str(secret)),
        ("absolute-etc", "/etc/passwd"),
        ("absolute-root", "/"),
        ("home", "~/secret.md"),
        ("symlink-out", "notes/link-out.md"),
        ("symlink-dir-out", "notes/dir-out/secret.md"),
        ("symlink-loop", "loop/self/x.md"),  # a loop inside the KB: may name loop/x.md
        ("symlink-eloop", "loop/spin/x.md"),  # spin -> spin2 -> spin: ELOOP
        ("symlink-sidecar-out", "notes/sc-escape.md"),
        ("url-encoded", "%2e%2e/outside/secret.md"),
        ("url-encoded-slash", "..%2foutside%2fsecret.md"),
        ("double-encoded", "%252e%252e%252foutside%252fsecret.md"),
        ("utf8-overlong", "%c0%ae%c0%ae/outside/secret.md"),
        ("nul", "guide.md\x00../outside/secret.md"),
        ("nul-only", "\x00"),
        ("windows-sep", "..\\outside\\secret.md"),
        ("windows-drive", "C:\\Windows\\win.ini"),
        ("windows-drive-fwd", "C:/Windows/win.ini"),
        ("unc", "\\\\server\\share\\secret.md"),
        ("overlong-name", "a" * 5000 + ".md"),
        ("overlong-path", "a/" * 3000 + "b.md"),
        ("case-upper", "GUIDE.MD"),
        ("case-mixed-dotdot", "Notes/../../OUTSIDE/secret.md"),
        ("pnk-unknown-id", f"pnk://{UNKNOWN_ID}"),
        ("pnk-traversal", "pnk://../outside/secret.md"),
        ("pnk-lower", f"pnk://{GUIDE_ID.lower()}"),
        ("kb-unregistered", "kb://unregistered/secret.md"),
        ("kb-traversal", "kb://contain/../outside/secret.md"),
        ("file-url", f"file://{secret}"),
        ("store", ".pinakes/index.db"),
        ("config", "pinakes.toml"),
        ("sidecar-file", "guide.pnk.yaml"),
        ("secret-title", SECRET),
        ("whitespace", "  ../outside/secret.md  "),
        ("newline", "guide.md\n../outside/secret.md"),
    ]
    # EXTEND HERE: more attempts; every face in FACES meets each one.


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("contain")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# {SECRET}\n\n{SECRET} must never be served.\n", encoding="utf-8")
    (outside / "secret.pnk.yaml").write_text(
        f"id: 01HZX5C3D5F7H9K1M3P5R7T9V1\ntitle: {SECRET}\ntags: [{SECRET}]\n"
        f"links:\n  - to: ../outside/secret.md\n    rel: cites\n    note: {SECRET}\n", encoding="utf-8")
    root = base / "kb"
    (root / "notes").mkdir(parents=True)
    (root / "pinakes.toml").write_text('[kb]\nname = "contain"\n', encoding="utf-8")
    (root / "guide.md").write_text("# Guide\n\nHow the lighthouse works.\n\n## Lamps\nOil lamps.\n",
                                   encoding="utf-8")
    (root / "guide.pnk.yaml").write_text(
        f"# the guide's sidecar\nid: {GUIDE_ID}\ntitle: Guide\ntags: []\nlinks: []\n", encoding="utf-8")
    (root / "notes" / "a.md").write_text("# Notes A\n\nKeepers and [the guide](../guide.md).\n",
                                         encoding="utf-8")
    (root / "notes" / "sc-escape.md").write_text("# Escape Note\n\nIts sidecar is a symlink out.\n",
                                                 encoding="utf-8")
    (root / "notes" / "sc-escape.pnk.yaml").symlink_to(outside / "secret.pnk.yaml")
    (root / "notes" / "link-out.md").symlink_to(outside / "secret.md")
    (root / "notes" / "dir-out").symlink_to(outside, target_is_directory=True)
    (root / "loop").mkdir()
    (root / "loop" / "self").symlink_to(root / "loop", target_is_directory=True)
    (root / "loop" / "spin").symlink_to(root / "loop" / "spin2", target_is_directory=True)
    (root / "loop" / "spin2").symlink_to(root / "loop" / "spin", target_is_directory=True)
    (root / "loop" / "x.md").write_text("# Loop X\n\nInside a looping folder.\n", encoding="utf-8")
    kb = KB.open(root)
    kb._embedder = embedder
    report = kb.sync()
    assert not any(SECRET in p for p in report.problems)
    yield {"root": root, "outside": outside, "kb": kb, "report": report}
    kb.close()


@pytest.fixture(scope="module", autouse=True)
def _report_refusals() -> Iterator[None]:
    yield
    out = os.environ.get("PINAKES_CONTAINMENT_REPORT")
    if out:
        Path(out).write_text(json.dumps({"attempts": len(attempts(Path("/x"))), "faces": len(FACES),
                                         "refused": REFUSED}, indent=1), encoding="utf-8")


def _tree_digest(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _indexed_paths(kb: KB) -> set[str]:
    return {r[0] for r in kb.reader().conn.execute("SELECT path FROM documents")}


def _check(face: str, label: str, ref: str, refused: bool, text: str) -> None:
    """The contract: a refusal is one clear line; anything else names only in-KB documents."""
    assert SECRET not in text.replace(repr(ref), "").replace(ref, ""), f"{face} {label}: leaked the outside file: {text[:300]}"
    assert "Traceback" not in text, f"{face} {label}: {text}"
    if refused:
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        assert len(lines) == 1, f"{face} {label}: refusal is not one line: {text!r}"
        assert "unexpected" not in lines[0], f"{face} {label}: a bug, not a refusal: {lines[0]}"
        REFUSED[face] = REFUSED.get(face, 0) + 1


def _cli(args: list[str]) -> tuple[bool, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"pnk {args[:2]}: {type(result.exception).__name__}: {result.exception}")
    return result.exit_code != 0, result.output


def face_show(ref: str, corpus: dict[str, Any]) -> tuple[bool, str]:
    refused, out = _cli(["show", ref, "--kb", str(corpus["root"]), "--json"])
    if not refused:
        assert json.loads(out)["path"] in _indexed_paths(corpus["kb"])
    return refused, out


def face_links(ref: str, corpus: dict[str, Any]) -> tuple[bool, str]:
    refused, out = _cli(["links", ref, "--kb", str(corpus["root"]), "--json", "--depth", "2"])
    if not refused:
        data = json.loads(out)
        ids = {r[0] for r in corpus["kb"].reader().conn.execute("SELECT ulid FROM documents")}
        assert all(n["doc_id"] in ids or n.get("kb") for n in data["neighbours"])
    return refused, out


def _sidecar_targets_inside(corpus: dict[str, Any]) -> None:
    """Every sidecar link target `pnk link` wrote stays inside the KB (or names an id / KB)."""
    kb: KB = corpus["kb"]
    for sc in corpus["root"].rglob("*.pnk.yaml"):
        if sc.is_symlink():
            continue
        from pinakes.sidecar import read_sidecar

        src = str(sc.relative_to(corpus["root"])).replace(".pnk.yaml", ".md")
        for link in read_sidecar(sc).links:
            t = classify(str(link.get("to", "")), src, kb.name, sidecar=True)
            assert t is None or t.kind != "path" or not is_outside(t.key), (sc, link)


def face_link_dst(ref: str, corpus: dict[str, Any]) -> tuple[bool, str]:
    refused, out = _cli(["link", "notes/a.md", ref, "--rel", "cites", "--allow-dangling",
                         "--kb", str(corpus["root"])])
    _sidecar_targets_inside(corpus)
    return refused, out


def face_link_src(ref: str, corpus: dict[str, Any]) -> tuple[bool, str]:
    refused, out = _cli(["link", ref, "guide.md", "--rel", "uses", "--kb", str(corpus["root"])])
    _sidecar_targets_inside(corpus)
    return refused, out


@pytest.fixture(scope="module")
def mcp(corpus: dict[str, Any]) -> Iterator[Callable[[str, dict[str, Any]], Any]]:
    """The real SDK client, connected in-process to the server over memory streams."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from pinakes.mcp_server import PinakesServer

    kb = KB.open(corpus["root"])
    kb._embedder = corpus["kb"]._embedder
    server = PinakesServer([kb], allow_writes=True)  # the write tools join the corpus too
    with start_blocking_portal() as portal:
        client = Client(server.mcp, mode="legacy")  # JSON-RPC over in-memory streams
        with portal.wrap_async_context_manager(client) as session:
            yield lambda name, args: portal.call(session.call_tool, name, args)


def _mcp_face(tool: str, key: str) -> Callable[[str, dict[str, Any]], tuple[bool, str]]:
    def face(ref: str, corpus: dict[str, Any]) -> tuple[bool, str]:
        result = corpus["mcp"](tool, {key: ref})
        text = "\n".join(c.text for c in result.content if c.type == "text")
        if result.is_error:
            return True, text
        data = result.structured_content or {}
        body = json.dumps(data, ensure_ascii=False)
        if tool == "pinakes_read":
            assert data["path"] in _indexed_paths(corpus["kb"])
        return False, text + body

    return face


def _mcp_write_face(tool: str, role: str) -> Callable[[str, dict[str, Any]], tuple[bool, str]]:
    """``pinakes_link`` / ``pinakes_unlink`` with the attempt as source or as target."""

    def face(ref: str, corpus: dict[str, Any]) -> tuple[bool, str]:
        args: dict[str, Any] = {"source": "notes/a.md", "target": "guide.md"}
        args[role] = ref
        if tool == "pinakes_link":
            args.update(rel="cites", allow_dangling=True)
        result = corpus["mcp"](tool, args)
        text = "\n".join(c.text for c in result.content if c.type == "text")
        _sidecar_targets_inside(corpus)
        if result.is_error:
            return True, text
        return False, text + json.dumps(result.structured_content or {}, ensure_ascii=False)

    return face


FACES: dict[str, Callable[[str, dict[str, Any]], tuple[bool, str]]] = {
    "pnk show": face_show,
    "pnk links": face_links,
    "pnk link (dst)": face_link_dst,
    "pnk link (src)": face_link_src,
    "pinakes_read": _mcp_face("pinakes_read", "doc_id"),
    "pinakes_links": _mcp_face("pinakes_links", "doc_id"),
    "pinakes_link (source)": _mcp_write_face("pinakes_link", "source"),
    "pinakes_link (target)": _mcp_write_face("pinakes_link", "target"),
    "pinakes_unlink (source)": _mcp_write_face("pinakes_unlink", "source"),
    # EXTEND HERE: any new tool that takes a document reference.
}

# An attempt every face must refuse (the rest may resolve to an in-KB document:
# "GUIDE.MD" finds nothing on a case-sensitive disk, "pnk://<lower-case id>" finds the guide).
MUST_REFUSE = {
    "dotdot", "dotdot-deep", "dotdot-inner", "absolute-secret", "absolute-etc", "home",
    "symlink-out", "symlink-dir-out", "url-encoded", "url-encoded-slash", "double-encoded",
    "utf8-overlong", "nul", "nul-only", "windows-sep", "windows-drive", "unc", "overlong-name",
    "overlong-path", "case-mixed-dotdot", "pnk-unknown-id", "pnk-traversal", "kb-traversal",
    "file-url", "store", "config", "sidecar-file", "secret-title", "whitespace", "newline",
    "kb-unregistered", "windows-drive-fwd", "symlink-eloop",
}


@pytest.mark.parametrize("face", list(FACES))
def test_containment_corpus(face: str, corpus: dict[str, Any], mcp) -> None:
    corpus["mcp"] = mcp
    before = _tree_digest(corpus["outside"])
    fn = FACES[face]
    for label, ref in attempts(corpus["outside"]):
        refused, text = fn(ref, corpus)
        _check(face, label, ref, refused, text)
        # `pnk link --allow-dangling` may write a target that is lexically inside the KB
        # (a folder named "~" or "%2e%2e" could exist): _sidecar_targets_inside checks it.
        if label in MUST_REFUSE and face not in ("pnk link (dst)", "pinakes_link (target)"):
            assert refused, f"{face} accepted {label}: {text[:300]}"
    assert _tree_digest(corpus["outside"]) == before, "something outside the KB was written"
    # The sidecar symlinked out of the KB was never read: nothing of it is indexed.
    conn = corpus["kb"].reader().conn
    for row in conn.execute("SELECT title, tags, meta FROM documents"):
        assert SECRET not in " ".join(map(str, row))


def test_sidecar_symlink_out_of_the_kb_is_reported_not_read(corpus: dict[str, Any]) -> None:
    """Regression: sync used to follow a sidecar symlink out of the KB and index its title and links."""
    problems = corpus["report"].problems
    assert any("sc-escape.pnk.yaml" in p and "outside the knowledge base" in p for p in problems), problems
    row = corpus["kb"].resolve("notes/sc-escape.md")
    assert row["title"] == "Escape Note"
    assert (corpus["root"] / "notes" / "sc-escape.pnk.yaml").is_symlink()  # never replaced either


@pytest.mark.parametrize("folder", ["../escape", "meta/../../escape", "..\\\\escape", ".."])
def test_sidecar_folder_outside_the_kb_is_a_config_error(tmp_path: Path, folder: str) -> None:
    """Regression: ``[kb] sidecars = "../x"`` made sync write sidecars outside the KB."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "pinakes.toml").write_text(f'[kb]\nname = "k"\nsidecars = {json.dumps(folder)}\n',
                                       encoding="utf-8")
    (root / "a.md").write_text("# A\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["sync", "--kb", str(root)])
    assert result.exit_code == 1, result.output
    assert "[kb] sidecars must be" in result.output and len(result.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb"]
    assert sorted(p.name for p in root.iterdir()) == ["a.md", "pinakes.toml"]
