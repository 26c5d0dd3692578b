"""I/O faults: disk full, a read-only KB, unreadable sidecars, the store deleted under ``pnk serve``.

Each fault must give a clear one-line error (or a reported skip) and a non-zero
exit, never a traceback, and lose nothing: documents and sidecars keep their
bytes, the index passes ``integrity_check``, and once the fault is gone a plain
``pnk sync`` completes without ``--rebuild``.

Real faults, not mocks: a size-limited tmpfs (``mount -t tmpfs``, as root) for a
full disk and a read-only remount; as root, permissions are enforced by running
the command without the DAC-override capabilities (``setpriv``), so root meets
the same "Permission denied" as any user. A test skips, saying why, only when
the kernel refuses the mount or setpriv is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from pinakes.sidecar import read_sidecar

PNK = str(Path(sys.executable).parent / "pnk")
WORDS = "lantern harbour keeper beacon tide fog signal prism lens rotation gallery tower storm".split()
# Counted for docs/reliability.md.
INJECTED: dict[str, int] = {}


def _env(user: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(user)
    env["PINAKES_CACHE_DIR"] = os.environ.get("PINAKES_CACHE_DIR", str(user / "cache"))  # never the real home
    return env


def pnk(args: list[str], user: Path, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, PNK, *args], env=_env(user), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def one_line_error(run: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert run.returncode != 0, run.stdout
    assert "Traceback" not in run.stderr, run.stderr
    lines = [ln for ln in run.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("Error: ") and "unexpected" not in lines[0], lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def write_kb(root: Path, n: int, words: int = 40) -> dict[str, bytes]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pinakes.toml").write_text('[kb]\nname = "faults"\n', encoding="utf-8")
    docs = {}
    for i in range(n):
        body = "\n\n".join(" ".join(WORDS[(i * 7 + j * 3 + k) % len(WORDS)] for k in range(words))
                           for j in range(6))
        text = f"# Doc {i}\n\n{body}\n"
        (root / f"d{i:02d}.md").write_text(text, encoding="utf-8")
        docs[f"d{i:02d}.md"] = text.encode()
    return docs


def assert_intact(root: Path, docs: dict[str, bytes]) -> None:
    for rel, data in docs.items():
        assert (root / rel).read_bytes() == data, rel
    for sc in root.glob("*.pnk.yaml"):
        if sc.is_file():
            assert read_sidecar(sc).error is None, sc
    assert not [p for p in root.rglob(".*.tmp")], "a temp file was left"
    for name in ("index.db", "cache.db"):
        db = root / ".pinakes" / name
        if db.exists():
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            conn.close()


def indexed(root: Path) -> set[str]:
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    try:
        return {r[0] for r in conn.execute("SELECT path FROM documents")}
    finally:
        conn.close()


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    """A fresh tmpfs of ``size``; skips (saying why) when the kernel refuses to mount one."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot make a small disk to fill")
    where = Path(tempfile.mkdtemp(prefix="pnk-tmpfs-"))
    run = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        where.rmdir()
        pytest.skip(f"the kernel refused a tmpfs mount ({run.stderr.strip() or run.returncode}); "
                    "the disk-full and read-only tests need one (run as root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
        with contextlib.suppress(OSError):
            where.rmdir()


def without_dac() -> tuple[str, ...]:
    """A command prefix under which permissions bind (root drops its DAC-override capabilities)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be enforced")
    caps = "-dac_override,-dac_read_search"
    return ("setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}")


# -- disk full -------------------------------------------------------------------------------


@pytest.mark.slow
def test_disk_full_at_every_stage_is_one_line_and_loses_nothing(tmp_path: Path) -> None:
    user = tmp_path / "user"
    with tmpfs("6m") as disk:
        root = disk / "kb"
        docs = write_kb(root, 24)
        used = sum(len(d) for d in docs.values())
        free = shutil.disk_usage(disk).free
        failed = 0
        # Leave less and less room: the sidecars, the store, the embedding cache and the
        # WAL each run out at some level.
        for leave in (0, 30_000, 150_000, 600_000):
            filler = disk / "filler"
            with contextlib.suppress(FileNotFoundError):
                filler.unlink()
            room = shutil.disk_usage(disk).free
            if room > leave:
                with open(filler, "wb") as fh, contextlib.suppress(OSError):
                    fh.write(b"\0" * (room - leave))
            for rel in list(docs):  # new content every round, so there is always work to write
                text = docs[rel].decode() + f"\nround {leave} {rel}\n"
                with contextlib.suppress(OSError):
                    (root / rel).write_text(text, encoding="utf-8")
                    docs[rel] = text.encode()
            run = pnk(["sync", "--kb", str(root)], user)
            INJECTED["disk full"] = INJECTED.get("disk full", 0) + 1
            if run.returncode != 0:
                failed += 1
                one_line_error(run, "the disk is full")
            filler.unlink(missing_ok=True)
            assert_intact(root, docs)
            ok = pnk(["sync", "--kb", str(root), "--json"], user)
            assert ok.returncode == 0, ok.stderr
            assert json.loads(ok.stdout)["rebuilt"] is False
            assert indexed(root) == set(docs)
            assert_intact(root, docs)
        assert failed >= 3, f"only {failed} syncs hit the full disk (free {free}, docs {used})"


# -- a read-only KB ---------------------------------------------------------------------------


def test_read_only_disk_searches_and_refuses_writes_clearly(tmp_path: Path) -> None:
    user = tmp_path / "user"
    with tmpfs("20m") as disk:
        root = disk / "kb"
        docs = write_kb(root, 3)
        assert pnk(["sync", "--kb", str(root)], user).returncode == 0
        before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}
        assert subprocess.run(["mount", "-o", "remount,ro", str(disk)]).returncode == 0
        INJECTED["read-only disk"] = INJECTED.get("read-only disk", 0) + 1
        found = pnk(["search", "lantern harbour", "--kb", str(root), "--json"], user)
        assert found.returncode == 0, found.stderr  # regression: "unable to open database file"
        assert json.loads(found.stdout)["hits"]
        assert pnk(["status", "--kb", str(root)], user).returncode == 0
        for args in (["sync"], ["link", "d00.md", "d01.md", "--rel", "cites"], ["sync", "--rebuild"]):
            one_line_error(pnk([*args, "--kb", str(root)], user), "read-only file system")
        after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}
        assert after == before
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
        assert pnk(["sync", "--kb", str(root)], user).returncode == 0
        assert_intact(root, docs)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder outside pytest's private (0700) tmp, so a capability-less process can reach it."""
    where = Path(tempfile.mkdtemp(prefix="pnk-perm-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        for p in where.rglob("*"):
            with contextlib.suppress(OSError):
                p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(where, ignore_errors=True)


def test_unwritable_kb_folder_searches_and_refuses_sync(tmp_path: Path, shared_dir: Path) -> None:
    prefix = without_dac()
    user = tmp_path / "user"
    root = shared_dir / "kb"
    docs = write_kb(root, 3)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    (root / "d03.md").write_text("# New\n\nA new note.\n", encoding="utf-8")
    docs["d03.md"] = (root / "d03.md").read_bytes()
    for p in [root, root / ".pinakes", *root.glob("*.pnk.yaml")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    INJECTED["read-only folder"] = INJECTED.get("read-only folder", 0) + 1
    found = pnk(["search", "lantern", "--kb", str(root), "--json"], user, prefix)
    assert found.returncode == 0, found.stderr
    one_line_error(pnk(["sync", "--kb", str(root)], user, prefix), "permission denied")
    one_line_error(pnk(["link", "d00.md", "d01.md", "--rel", "cites", "--kb", str(root)], user, prefix))
    assert_intact(root, docs)
    for p in [root, root / ".pinakes"]:
        p.chmod(0o755)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    assert indexed(root) == set(docs)


def test_unreadable_sidecar_is_reported_and_never_rewritten(tmp_path: Path, shared_dir: Path) -> None:
    prefix = without_dac()
    user = tmp_path / "user"
    root = shared_dir / "kb"
    docs = write_kb(root, 2)
    sc = root / "d00.pnk.yaml"
    sc.write_text("# mine\nid: 01HZX5A8Q7W3K1V9XQ2M4B7N0C\ntitle: Zero\n", encoding="utf-8")
    sc.chmod(0o000)
    INJECTED["unreadable sidecar"] = INJECTED.get("unreadable sidecar", 0) + 1
    run = pnk(["sync", "--kb", str(root), "--json"], user, prefix)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert any("d00.pnk.yaml: cannot read: Permission denied" in p for p in report["problems"])
    assert sorted(report["added"]) == ["d00.md", "d01.md"]
    one_line_error(pnk(["link", "d00.md", "d01.md", "--rel", "cites", "--kb", str(root)], user, prefix),
                   "d00.pnk.yaml")
    sc.chmod(0o644)
    assert sc.read_text(encoding="utf-8").startswith("# mine\nid: 01HZX5A8Q7W3K1V9XQ2M4B7N0C")
    assert_intact(root, docs)


def test_a_folder_where_a_sidecar_should_be(tmp_path: Path) -> None:
    """Works as root too: a directory cannot be read as a file by anyone."""
    user = tmp_path / "user"
    root = tmp_path / "kb"
    docs = write_kb(root, 2)
    (root / "d00.pnk.yaml").mkdir()
    (root / "d00.pnk.yaml" / "keep.txt").write_text("mine", encoding="utf-8")
    INJECTED["sidecar is a folder"] = INJECTED.get("sidecar is a folder", 0) + 1
    run = pnk(["sync", "--kb", str(root), "--json"], user)
    assert run.returncode == 0, run.stderr
    assert any("d00.pnk.yaml: cannot read" in p for p in json.loads(run.stdout)["problems"])
    one_line_error(pnk(["link", "d00.md", "d01.md", "--rel", "cites", "--kb", str(root)], user))
    assert (root / "d00.pnk.yaml" / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert_intact(root, docs)


# -- the store deleted under a running server ----------------------------------------------------


def test_store_deleted_while_serving(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    user = tmp_path / "user"
    root = tmp_path / "kb"
    write_kb(root, 3)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    params = StdioServerParameters(command=PNK, args=["serve", "--kb", str(root)], env=_env(user))

    async def scenario() -> None:
        with open(tmp_path / "serve.log", "w", encoding="utf-8") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    first = await session.call_tool("pinakes_search", {"query": "lantern"})
                    assert not first.is_error and first.structured_content["hits"]
                    for suffix in ("", "-wal", "-shm"):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(root / ".pinakes" / f"index.db{suffix}")
                    INJECTED["store deleted under serve"] = INJECTED.get("store deleted under serve", 0) + 1
                    for tool, args in (("pinakes_search", {"query": "lantern"}),
                                       ("pinakes_read", {"doc_id": "d00.md"}),
                                       ("pinakes_links", {"doc_id": "d00.md"})):
                        gone = await session.call_tool(tool, args)
                        assert gone.is_error, tool
                        text = gone.content[0].text
                        assert "\n" not in text and "pnk sync" in text and "unexpected" not in text, text
                    kbs = await session.call_tool("pinakes_kbs", {})
                    assert not kbs.is_error and kbs.structured_content["kbs"][0]["indexed"] is False
                    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
                    again = await session.call_tool("pinakes_search", {"query": "lantern"})
                    assert not again.is_error and again.structured_content["hits"]

    anyio.run(scenario)
    assert "Traceback" not in (tmp_path / "serve.log").read_text(encoding="utf-8")


# -- a damaged index heals itself (pinakes/health.py; benchmarks/harness_damage.py) ---------------


def _damage_harness():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "harness_damage.py"
    spec = importlib.util.spec_from_file_location("harness_damage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _search(root: Path, user: Path, query: str = "lantern harbour") -> subprocess.CompletedProcess[str]:
    return pnk(["search", "--kb", str(root), query, "--json", "-k", "3"], user)


def _hits(run: subprocess.CompletedProcess[str]) -> list[tuple[str, int]]:
    assert run.returncode == 0, run.stderr
    return [(h["path"], h["start_line"]) for h in json.loads(run.stdout)["hits"]]


def _synced(tmp_path: Path, n: int = 6) -> tuple[Path, Path, list[tuple[str, int]]]:
    """A synced KB of ``n`` documents, its user folder, and its clean answer to the test query."""
    user = tmp_path / "user"
    root = tmp_path / "kb"
    write_kb(root, n)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    return root, user, _hits(_search(root, user))


def _heals(root: Path, user: Path, clean: list[tuple[str, int]], *needles: str) -> str:
    """The plain `pnk sync` a user tries first: succeeds, says in its one summary line that it
    rebuilt a damaged index, and the search answers as before."""
    run = pnk(["sync", "--kb", str(root)], user)
    assert run.returncode == 0 and "Traceback" not in run.stderr and "unexpected" not in run.stderr, run.stderr
    line = [ln for ln in run.stdout.splitlines() if "damaged" in ln]
    assert len(line) == 1 and "rebuilt it from your files" in line[0], run.stdout
    for needle in needles:
        assert needle in line[0], line[0]
    assert "0 chunks embedded" in line[0]  # the embedding cache gave every vector back
    assert _hits(_search(root, user)) == clean
    assert not (root / ".pinakes" / "index.damaged").exists()
    return line[0]


def test_flipped_bytes_in_the_index_are_refused_by_search_and_healed_by_sync(tmp_path: Path) -> None:
    """The issue's case: bytes of a synced index.db flipped; search says so, a plain sync heals."""
    user = tmp_path / "user"
    root = tmp_path / "kb"
    docs = write_kb(root, 6)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    ids = {p.name: read_sidecar(p).id for p in root.glob("*.pnk.yaml")}
    clean = _hits(_search(root, user))
    db = root / ".pinakes" / "index.db"
    data = bytearray(db.read_bytes())
    at = data.find(b"d03.md")  # a document's path, as SQLite stores it
    assert at > 0
    data[at : at + 6] = b"\xff" * 6
    db.write_bytes(bytes(data))
    INJECTED["index bytes flipped"] = INJECTED.get("index bytes flipped", 0) + 1
    # The KB was opened by its folder and no fleet names it: the hint names the folder.
    line = one_line_error(_search(root, user), "damaged", f"run `pnk sync --kb {root}`")
    assert "--rebuild" not in line
    _heals(root, user, clean, "not UTF-8")
    assert {p.name: read_sidecar(p).id for p in root.glob("*.pnk.yaml")} == ids  # identity kept
    assert_intact(root, docs)


def test_damage_sqlite_cannot_see_is_caught_by_content_checks(tmp_path: Path) -> None:
    """A chunk's text and a vector changed inside valid pages: the hash and the CRC catch them."""
    root, user, clean = _synced(tmp_path)
    db = root / ".pinakes" / "index.db"
    conn = sqlite3.connect(db)
    (cid,) = conn.execute("SELECT c.id FROM chunks c JOIN documents d ON d.doc = c.doc "
                          "WHERE d.path = ? ORDER BY c.ordinal LIMIT 1", (clean[0][0],)).fetchone()
    conn.execute("UPDATE chunks SET text = replace(text, 'lantern', 'lanterN') WHERE id = ?", (cid,))
    conn.commit()
    conn.close()
    one_line_error(_search(root, user), "damaged", "does not match its content hash")
    _heals(root, user, clean, "content hash")
    conn = sqlite3.connect(db)
    (blob,) = conn.execute("SELECT vec FROM chunks WHERE id = (SELECT min(id) FROM chunks)").fetchone()
    bad = bytearray(blob)
    bad[-6] ^= 0x7F  # the scale's top byte: this chunk would rank first for everything
    conn.execute("UPDATE chunks SET vec = ? WHERE id = (SELECT min(id) FROM chunks)", (bytes(bad),))
    conn.commit()
    conn.close()
    one_line_error(_search(root, user), "damaged", "checksum")
    _heals(root, user, clean, "checksum")
    INJECTED["rows changed inside valid pages"] = INJECTED.get("rows changed inside valid pages", 0) + 2


def test_a_path_changed_into_another_valid_one_is_caught(tmp_path: Path) -> None:
    """One bit flipped in a path can leave valid text (d03.md read as d02.md): the row checksum."""
    root, user, clean = _synced(tmp_path)
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    conn.execute("UPDATE documents SET path = 'd9' || substr(path, 3) WHERE path = ?", (clean[0][0],))
    conn.commit()
    conn.close()
    INJECTED["rows changed inside valid pages"] = INJECTED.get("rows changed inside valid pages", 0) + 1
    one_line_error(_search(root, user), "damaged", "checksum")
    _heals(root, user, clean, "checksum")


def test_a_damaged_graph_cache_is_rebuilt_by_the_reader(tmp_path: Path) -> None:
    """The zip's version field flipped made zipfile raise NotImplementedError, which escaped every
    search ("unexpected"), and no sync removed the file (found by the damage harness)."""
    root, user, clean = _synced(tmp_path)
    cache = root / ".pinakes" / "graph-cache.npz"
    assert cache.exists()  # left by that search
    data = bytearray(cache.read_bytes())
    central = data.find(b"PK\x01\x02")
    data[central + 6 : central + 8] = b"\xff\xff"  # "version needed to extract"
    cache.write_bytes(bytes(data))
    INJECTED["graph cache damaged"] = INJECTED.get("graph cache damaged", 0) + 1
    assert _hits(_search(root, user)) == clean  # built from SQL, and the file written again
    assert _hits(_search(root, user)) == clean


def test_a_reader_never_searches_an_index_a_rebuild_has_not_filled(tmp_path: Path) -> None:
    """A rebuild's new file exists before its first commit: reading it would answer nothing."""
    from pinakes import KB
    from pinakes.errors import NotSynced

    root = tmp_path / "kb"
    write_kb(root, 3)
    kb = KB.open(root)
    kb.sync()
    store, rebuilt = kb.open_store_for_write(rebuild=True)  # as a rebuild begins
    try:
        assert rebuilt
        with pytest.raises(NotSynced, match="being built"):
            KB.open(root).search("lantern")
    finally:
        store.close()
    kb.sync()
    assert KB.open(root).search("lantern").hits


def test_an_index_that_lost_its_last_writes_is_rebuilt(tmp_path: Path) -> None:
    """The WAL of the last sync lost: the index is an older generation than the last sync left."""
    user = tmp_path / "user"
    root = tmp_path / "kb"
    write_kb(root, 6)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    state = root / ".pinakes"
    before = (state / "index.db").read_bytes()
    (root / "d02.md").write_text("# Doc 2\n\nlantern harbour keeper, rewritten\n", encoding="utf-8")
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    clean = _hits(_search(root, user))
    (state / "index.db").write_bytes(before)  # the main file without the last sync's frames
    INJECTED["write-ahead log lost"] = INJECTED.get("write-ahead log lost", 0) + 1
    one_line_error(_search(root, user), "damaged", "write-ahead log")
    _heals(root, user, clean, "write-ahead log")


def test_a_damaged_embedding_cache_row_is_embedded_again(tmp_path: Path) -> None:
    user = tmp_path / "user"
    root = tmp_path / "kb"
    write_kb(root, 4)
    assert pnk(["sync", "--kb", str(root)], user).returncode == 0
    db = root / ".pinakes" / "index.db"
    conn = sqlite3.connect(db)
    clean = dict(conn.execute("SELECT hash, vec FROM chunks"))
    conn.close()
    cache = Path(_env(user)["PINAKES_CACHE_DIR"]) / "embeddings.db"
    conn = sqlite3.connect(cache)
    rid, blob = conn.execute("SELECT id, vec FROM vectors ORDER BY id LIMIT 1").fetchone()
    conn.execute("UPDATE vectors SET vec = ? WHERE id = ?", (bytes([blob[0] ^ 0x40]) + blob[1:], rid))
    conn.commit()
    conn.close()
    INJECTED["embedding cache row changed"] = INJECTED.get("embedding cache row changed", 0) + 1
    run = pnk(["sync", "--kb", str(root), "--rebuild", "--json"], user)
    assert run.returncode == 0, run.stderr
    assert "1 damaged vector in the embedding cache" in run.stderr
    assert json.loads(run.stdout)["chunks_embedded"] == 1  # that one, and only that one
    conn = sqlite3.connect(db)
    assert dict(conn.execute("SELECT hash, vec FROM chunks")) == clean
    conn.close()


def test_damage_harness_ci_size(tmp_path: Path) -> None:
    """benchmarks/harness_damage.py at CI size: every file, a way each, every face it has."""
    plan = [("index.db", "flip200", "search"), ("index.db", "truncate-half", "sync"),
            ("index.db", "zero-page", "serve"), ("index.db-wal", "stale", "sync"),
            ("graph-cache.npz", "run200", "serve"), ("embeddings.db", "flip200", "sync")]
    report = _damage_harness().run(seeds=1, small=True, workdir=tmp_path, plan=plan, queries=1)
    assert report["failures"] == [], json.dumps(report, indent=2)
    assert report["cases"] == len(plan)
