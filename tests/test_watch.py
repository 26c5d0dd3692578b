"""Watch mode, driven by real file-system events (watchfiles' own backend, no mocks).

The watch loop runs in a thread (with the session's embedder) or as the real
`pnk sync --watch` / `pnk serve --watch` process. Nothing sleeps a fixed time
waiting for a result: every check polls with a generous timeout, so a loaded
machine only makes the tests slower, not flaky.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from pinakes import KB
from pinakes.sidecar import new_ulid
from pinakes.watch import KBGone, watch

PNK = str(Path(sys.executable).parent / "pnk")
TIMEOUT = 60.0

DOCS = {
    "notes/bees.md": """
        # Honey Bees

        A colony of honey bees keeps its brood nest at about thirty-five degrees by
        fanning its wings and clustering together when the weather turns cold.
        """,
    "notes/bread.md": """
        # Sourdough Starter

        Feed the starter flour and water every day; it is ready when it doubles in
        size within a few hours of feeding and smells pleasantly sour.
        """,
}


def poll(pred: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


class Watcher:
    """``pinakes.watch.watch`` in a thread, with its own KB object (SQLite is per-thread)."""

    def __init__(self, root: Path, embedder: Any, first_timeout: float = TIMEOUT, **kw: Any) -> None:
        self.kb = KB.open(root)
        self.kb._embedder = embedder
        self.reports: list[Any] = []
        self.errors: list[str] = []
        self.exc: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, kwargs=kw, daemon=True)
        self.thread.start()
        poll(lambda: self.reports or self.errors or self.exc, first_timeout, "the initial sync")

    def _run(self, **kw: Any) -> None:
        try:
            watch([self.kb], self._on_sync, stop=self.stop, **kw)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.exc = exc

    def _on_sync(self, kb, report, error) -> None:
        if report is not None:
            self.reports.append(report)
        else:
            self.errors.append(error)

    def wait(self, pred: Callable[[Any], bool], what: str) -> Any:
        def found() -> Any:
            if self.exc is not None:
                raise AssertionError(f"the watcher died: {self.exc!r}")
            return next((r for r in self.reports if pred(r)), None)

        return poll(found, what=what)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=TIMEOUT)
        assert not self.thread.is_alive()


def did_something(report) -> bool:
    return bool(report.added or report.changed or report.removed or report.renamed)


@pytest.fixture
def watched(make_kb, embedder):
    made: list[Watcher] = []

    def start(files: dict[str, str] = DOCS, first_timeout: float = TIMEOUT, config: str = "",
              **kw: Any) -> tuple[KB, Watcher]:
        kb = make_kb(files, config=config)
        w = Watcher(kb.root, embedder, first_timeout, **kw)
        made.append(w)
        return kb, w

    yield start
    for w in made:
        w.stop.set()
        w.thread.join(timeout=TIMEOUT)


def test_add_edit_delete_and_no_feedback_loop(watched) -> None:
    kb, w = watched()
    assert sorted(w.reports[0].added) == sorted(DOCS)  # the first sync indexes everything
    (kb.root / "notes/wax.md").write_text("# Beeswax\n\nWorker bees secrete wax flakes.\n")
    w.wait(lambda r: r.added == ["notes/wax.md"], "the new file")
    assert (kb.root / "notes/wax.pnk.yaml").exists()
    n = len(w.reports)
    time.sleep(1.5)  # the sidecar that sync just wrote raised events: they must not sync again
    assert len(w.reports) == n, [r.summary() for r in w.reports]
    p = kb.root / "notes/bread.md"
    p.write_text(p.read_text() + "\nKeep a spoonful back for the next loaf.\n")
    w.wait(lambda r: r.changed == ["notes/bread.md"], "the edit")
    os.remove(kb.root / "notes/bees.md")
    w.wait(lambda r: r.removed == ["notes/bees.md"], "the delete")
    n = len(w.reports)
    # The sidecar sync wrote and the store's own files raise events too; none may sync again.
    time.sleep(1.5)
    w.close()
    assert len(w.reports) == n
    assert all(did_something(r) for r in w.reports), [r.summary() for r in w.reports]
    assert w.errors == []


def test_parallel_sidecar_tree_writes_cause_no_sync(watched) -> None:
    kb, w = watched(config='sidecars = ".pinakes-meta"\n')
    (kb.root / "garden").mkdir()
    (kb.root / "garden/comfrey.md").write_text("# Comfrey\n\nA deep-rooted plant for compost tea.\n")
    w.wait(lambda r: r.added == ["garden/comfrey.md"], "the new file")
    assert (kb.root / ".pinakes-meta/garden/comfrey.pnk.yaml").exists()
    (kb.root / "plants").mkdir()
    os.rename(kb.root / "garden/comfrey.md", kb.root / "plants/comfrey.md")
    w.wait(lambda r: r.renamed == [("garden/comfrey.md", "plants/comfrey.md")], "the move")
    assert (kb.root / ".pinakes-meta/plants/comfrey.pnk.yaml").exists()
    assert not (kb.root / ".pinakes-meta/garden").exists()
    n = len(w.reports)
    time.sleep(1.5)  # room for a feedback loop to show itself
    w.close()
    assert len(w.reports) == n and all(did_something(r) for r in w.reports), [
        r.summary() for r in w.reports]


def test_editor_atomic_save_and_rename(watched, embedder) -> None:
    kb, w = watched()
    target = kb.root / "notes/bees.md"
    ulid = KB.open(kb.root).show("notes/bees.md")["doc_id"]
    tmp = kb.root / "notes/.bees.md.swp-1234.tmp"
    tmp.write_text(target.read_text() + "\nDrones do not sting.\n")
    os.replace(tmp, target)  # how vim, VS Code and friends save
    w.wait(lambda r: r.changed == ["notes/bees.md"], "the atomic save")
    os.rename(target, kb.root / "notes/honey-bees.md")  # a move without its sidecar
    r = w.wait(lambda r: r.renamed, "the rename")
    assert r.renamed == [("notes/bees.md", "notes/honey-bees.md")] and r.added == []
    reader = KB.open(kb.root)
    reader._embedder = embedder
    assert reader.show("notes/honey-bees.md")["doc_id"] == ulid
    assert "Drones" in reader.search("do drones sting").hits[0].text
    w.close()
    assert not any(".swp" in rel for r in w.reports for rel in r.added)


def test_half_written_and_malformed_files_settle(watched, embedder) -> None:
    kb, w = watched()
    half = kb.root / "notes/euro.md"
    full = "# Prices\n\nA loaf costs three €, a jar of honey nine €.\n".encode()
    half.write_bytes(full[: full.index("€".encode()) + 1])  # cut inside a multi-byte character
    w.wait(lambda r: any("euro.md" in p and "UTF-8" in p for p in r.problems), "the problem line")
    half.write_bytes(full)
    w.wait(lambda r: r.added == ["notes/euro.md"], "the completed file")
    sc = kb.root / "notes/bread.pnk.yaml"
    good = sc.read_text()
    sc.write_text(good.replace("tags: []", "tags: [unclosed"))
    w.wait(lambda r: any("bread.pnk.yaml" in p for p in r.problems), "the malformed sidecar")
    sc.write_text(good.replace("tags: []", "tags: [baking]"))
    w.wait(lambda r: r.changed == ["notes/bread.md"] and not r.problems, "the fixed sidecar")
    reader = KB.open(kb.root)
    reader._embedder = embedder
    assert reader.show("notes/bread.md")["tags"] == ["baking"]
    assert "honey nine" in reader.search("price of a jar of honey").hits[0].text
    w.close()
    assert w.exc is None


def test_burst_of_a_thousand_changed_files_is_coalesced(watched) -> None:
    # Like a `git checkout` of another branch: 1,000 indexed notes rewritten at once.
    # Sidecars are written up front (minting 1,000 is sync's cost, not the watcher's),
    # and the notes share a body: the test is about events, not embedding.
    files: dict[str, str] = {}
    for i in range(1000):
        files[f"burst/n{i:04d}.md"] = "# Burst\n\nOne of many small notes.\n"
        files[f"burst/n{i:04d}.pnk.yaml"] = f"id: {new_ulid()}\n"  # no title: one text to embed
    kb, w = watched(files, first_timeout=120)  # a few seconds idle; far more on a loaded machine
    assert len(w.reports[0].added) == 1000 and not w.reports[0].sidecars_created
    started = len(w.reports)
    for i in range(1000):
        (kb.root / f"burst/n{i:04d}.md").write_text("# Burst\n\nOne of many rewritten notes.\n")
    def rewritten() -> int:
        reader = KB.open(kb.root)
        try:
            with reader.reader().snapshot() as conn:
                return conn.execute(
                    "SELECT count(*) FROM chunks WHERE text LIKE '%rewritten%'").fetchone()[0]
        finally:
            reader.close()

    notes = {f for f in files if f.endswith(".md")}
    # A note caught half-written by one sync is synced again by the next: paths may repeat.
    synced = lambda: {rel for r in w.reports[started:] for rel in r.changed}  # noqa: E731
    poll(lambda: synced() == notes and rewritten() == 1000, timeout=120, what="all 1,000 changes")
    syncs = w.reports[started:]
    assert len(syncs) <= 5, [r.summary() for r in syncs]
    w.close()


def test_kb_folder_moved_away_stops_the_watch(watched, tmp_path) -> None:
    kb, w = watched()
    os.rename(kb.root, tmp_path / "elsewhere")
    poll(lambda: w.exc is not None, what="the watch to stop")
    assert isinstance(w.exc, KBGone) and "gone" in str(w.exc)
    w.thread.join(timeout=TIMEOUT)
    assert not w.thread.is_alive()


# --- the real commands -------------------------------------------------------------


def _env() -> dict[str, str]:
    # PINAKES_CACHE_DIR: the suite's own embedding cache (conftest), never the user's, which
    # another process (a second test run, a sync) may hold locked for seconds at a time.
    keep = ("HOME", "PATH", "TMPDIR", "PINAKES_LOAD_PLUGINS", "PINAKES_CACHE_DIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PINAKES_USER_PATH"] = os.environ["PINAKES_USER_PATH"]
    return env


#: Run argv[1:] with SIGINT at its default disposition (see Proc).
_DEFAULT_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "os.execv(sys.argv[1], sys.argv[1:])")


class Proc:
    """`pnk sync --watch --json` with its stdout lines gathered by a thread."""

    def __init__(self, root: Path) -> None:
        # Started as a terminal starts it, with Ctrl-C's default: a shell's background job (the
        # suite run as `bash scripts/test.sh &`) has SIGINT ignored, an ignored signal stays
        # ignored across exec, and Python then installs no KeyboardInterrupt handler at all.
        self.p = subprocess.Popen([sys.executable, "-c", _DEFAULT_SIGINT, PNK, "sync", "--watch", "--json",
                                   "--kb", str(root)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        self.lines: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put(json.loads(line))

    def wait(self, pred: Callable[[dict], bool], what: str) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                item = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.p.poll() is None, f"pnk exited early: {self.p.stderr.read()}"
                continue
            self.seen.append(item)
            if pred(item):
                return item
        raise AssertionError(f"timed out waiting for {what}; saw {self.seen}")

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, str]:
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise AssertionError("pnk sync --watch did not exit") from None
        assert self.p.stderr is not None
        return self.p.returncode, self.p.stderr.read()


def test_cli_watch_ctrl_c_exits_cleanly(make_kb) -> None:
    kb = make_kb(DOCS)
    proc = Proc(kb.root)
    first = proc.wait(lambda d: "added" in d, "the first sync")
    assert sorted(first["added"]) == sorted(DOCS) and first["kb"] == "test-kb"
    (kb.root / "notes/new.md").write_text("# New\n\nfresh words\n")
    proc.wait(lambda d: d.get("added") == ["notes/new.md"], "the new file")
    proc.p.send_signal(signal.SIGINT)
    code, err = proc.finish()
    assert code == 0, err
    assert "stopped watching" in err and "Traceback" not in err


def test_cli_watch_exits_nonzero_when_the_kb_folder_goes(make_kb, tmp_path) -> None:
    kb = make_kb(DOCS)
    proc = Proc(kb.root)
    proc.wait(lambda d: "added" in d, "the first sync")
    os.rename(kb.root, tmp_path / "moved-away")
    code, err = proc.finish()
    assert code == 1
    assert "gone" in err and str(kb.root) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1  # the one-line reason (--json keeps stderr quiet)


def test_serve_watch_keeps_the_index_fresh(make_kb, tmp_path) -> None:
    kb = make_kb(DOCS, name="hive")  # never synced: the server's watcher indexes it

    async def search(session: ClientSession, query: str) -> list[str]:
        result = await session.call_tool("pinakes_search", {"query": query, "k": 3})
        if result.is_error:
            return []
        return [h["path"] for h in result.structured_content["hits"]]

    async def scenario() -> None:
        params = StdioServerParameters(command=PNK, args=["serve", "--watch", "--kb", str(kb.root)],
                                       env=_env())
        with open(tmp_path / "serve.log", "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()

                    async def until(query: str, path: str) -> None:
                        with anyio.fail_after(TIMEOUT):
                            while path not in await search(session, query):
                                await anyio.sleep(0.1)

                    await until("brood nest temperature", "notes/bees.md")
                    (kb.root / "notes/moths.md").write_text(
                        "# Wax Moths\n\nWax moth larvae tunnel through old comb in weak hives.\n")
                    await until("larvae tunnelling through comb", "notes/moths.md")

    anyio.run(scenario)
    log = (tmp_path / "serve.log").read_text()
    assert "hive: 1 added" in log and "Traceback" not in log


def test_an_index_with_no_vectors_yet_searches_empty(make_kb) -> None:
    # What a served KB looks like to a search that lands during its first sync.
    kb = make_kb({"notes/.hidden/skip.md": "# Skipped\n"})  # dot-folders are excluded
    assert kb.sync().added == []
    assert kb.search("anything at all").hits == []
