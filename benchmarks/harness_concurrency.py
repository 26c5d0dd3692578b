"""Concurrency harness: ``pnk serve`` answers a stream of calls while ``pnk sync`` runs again and again
and a file watcher (``pnk sync --watch``) syncs the edits landing in the KB.

    python benchmarks/harness_concurrency.py --calls 500            # full size
    python benchmarks/harness_concurrency.py --calls 80 --docs 12 --min-syncs 3   # about what CI runs

One stdio server and one ``--http`` server (127.0.0.1) serve the same KB; several
MCP SDK client sessions call ``pinakes_search``, ``pinakes_links`` and
``pinakes_kbs`` at once, while a loop rewrites a set of *canary* documents (all
of them carry the same round number) and runs a real ``pnk sync`` after each
rewrite, and an editor keeps editing the other documents (and adding new ones)
under a running ``pnk sync --watch``. The checks:

- zero errors: every call returns a result, never a tool error; every sync succeeds;
  the watcher reports no failed sync (it may find the store busy with another sync:
  it retries, as designed) and stops cleanly on SIGTERM;
- one generation per answer: a search for the canary token returns canary chunks
  that all carry the same round (sync applies a round in one transaction, so a
  mix would mean an answer read two index generations). The canaries are rewritten
  under the KB's sync lock, so no sync (the watcher's included) sees half a round;
- ``pinakes_kbs`` generations never go backwards within a client session;
- every edit lands: once the syncs and the editor stop, one more edit is made and the
  watcher alone brings the index to the files' current bytes.

Prints a JSON report with p50/p99 latency per transport; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

PNK = str(Path(sys.executable).parent / "pnk")
CANARY = "canarytoken"
ROUND_RE = re.compile(r"round-(\d+)")
WORDS = "lantern harbour keeper beacon tide fog signal prism lens rotation gallery tower storm".split()


def write_kb(root: Path, docs: int, canaries: int) -> None:
    root.mkdir(parents=True)
    (root / "pinakes.toml").write_text('[kb]\nname = "conc"\n', encoding="utf-8")
    for i in range(docs):
        body = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(60))
        link = f"\n\nSee [next](d{(i + 1) % docs:03d}.md).\n" if docs > 1 else "\n"
        (root / f"d{i:03d}.md").write_text(f"# Doc {i}\n\n{body}{link}", encoding="utf-8")
    write_canaries(root, canaries, 0)


def write_canaries(root: Path, n: int, rnd: int) -> None:
    for i in range(n):
        (root / f"canary{i}.md").write_text(
            f"# Canary {i}\n\n{CANARY} round-{rnd} the keeper logs this round.\n", encoding="utf-8")


def write_canaries_locked(root: Path, n: int, rnd: int) -> None:
    """Rewrite the canaries holding the KB's sync lock: a sync sees the whole round or none of it."""
    from pinakes.store import SyncLock

    with SyncLock(root / ".pinakes", wait=600):
        write_canaries(root, n, rnd)


def env_for(user: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(user)
    env["PINAKES_CACHE_DIR"] = str(user / "cache")
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def stdio_session(root: Path, user: Path, log: Any) -> AsyncIterator[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=PNK, args=["serve", "--kb", str(root)], env=env_for(user))
    async with stdio_client(params, errlog=log) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=120)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.calls = 0
        self.mixed: list[str] = []
        self.rounds_seen: set[int] = set()

    def add(self, transport: str, ms: float) -> None:
        with self.lock:
            self.latency.setdefault(transport, []).append(ms)
            self.calls += 1


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 1)


#: How long the clients keep calling, at most, while they wait for ``min_syncs`` syncs.
SYNC_WAIT_S = 240.0


async def client(session: Any, transport: str, calls: int, stats: Stats, canaries: int, seed: int,
                 synced: dict[str, Any], min_syncs: int) -> None:
    """``calls`` calls, and more until ``min_syncs`` syncs ran under the stream.

    The wait for syncs is bounded by time (:data:`SYNC_WAIT_S`), not by a count of
    calls: on a loaded machine one ``pnk sync`` can outlast hundreds of fast calls.
    """
    import random

    rng = random.Random(seed)
    last_gen = -1
    i = -1
    deadline = time.monotonic() + SYNC_WAIT_S
    while True:
        i += 1
        if i >= calls and (synced.get("syncs", 0) >= min_syncs or time.monotonic() > deadline):
            break
        kind = ("canary", "search", "links", "kbs")[i % 4] if i % 3 else "canary"
        if kind == "canary":
            name, args = "pinakes_search", {"query": f"{CANARY} keeper round", "k": canaries * 2}
        elif kind == "search":
            name, args = "pinakes_search", {"query": " ".join(rng.sample(WORDS, 3)), "k": 5}
        elif kind == "links":
            name, args = "pinakes_links", {"doc_id": f"d{rng.randrange(3):03d}.md"}
        else:
            name, args = "pinakes_kbs", {}
        t0 = time.perf_counter()
        try:
            result = await session.call_tool(name, args)
        except Exception as exc:  # noqa: BLE001 - a transport failure is an error to report
            stats.errors.append(f"{transport} {name}: {type(exc).__name__}: {exc}")
            continue
        stats.add(transport, (time.perf_counter() - t0) * 1000)
        if result.is_error:
            stats.errors.append(f"{transport} {name} {args}: {result.content[0].text[:200]}")
            continue
        data = result.structured_content or {}
        if kind == "canary":
            rounds = {int(m.group(1)) for h in data.get("hits", []) if h["path"].startswith("canary")
                      for m in [ROUND_RE.search(h["text"])] if m}
            if len(rounds) > 1:
                stats.mixed.append(f"{transport} call {i}: canary rounds {sorted(rounds)} in one answer")
            stats.rounds_seen |= rounds
        elif kind == "kbs":
            gen = int(data["kbs"][0]["generation"])
            if gen < last_gen:
                stats.errors.append(f"{transport}: generation went back {last_gen} -> {gen}")
            last_gen = gen


def sync_loop(root: Path, user: Path, canaries: int, stop: threading.Event, out: dict[str, Any]) -> None:
    rnd = 0
    while not stop.is_set():
        rnd += 1
        write_canaries_locked(root, canaries, rnd)
        run = subprocess.run([PNK, "sync", "--kb", str(root), "-q"], env=env_for(user),
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            out.setdefault("sync_errors", []).append(run.stderr.strip()[-300:])
        out["syncs"] = out.get("syncs", 0) + 1


def editor(root: Path, docs: int, stop: threading.Event, out: dict[str, Any], pause: float = 0.4) -> None:
    """Edit the plain documents (an appended line each time) and now and then add one, until ``stop``.

    Each edit is written to a temp file and renamed over, as editors save.
    """
    n = 0
    while not stop.wait(pause):
        n += 1
        if n % 5 == 0:
            rel = f"new{n:04d}.md"
            text = f"# New {n}\n\n{' '.join(WORDS[(n + j) % len(WORDS)] for j in range(30))}\n"
        else:
            rel = f"d{n % docs:03d}.md"
            text = (root / rel).read_text(encoding="utf-8") + f"\nedit-{n} the gallery log grows.\n"
        tmp = root / f".{rel}.edit"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, root / rel)
        out["edits"] = out.get("edits", 0) + 1


def caught_up(root: Path) -> list[str]:
    """Documents whose indexed hash is not their bytes on disk (empty: the index holds every edit)."""
    import hashlib
    import sqlite3

    conn = sqlite3.connect(f"file:{root / '.pinakes' / 'index.db'}?mode=ro", uri=True, timeout=30)
    try:
        rows = dict(conn.execute("SELECT path, hash FROM documents"))
    finally:
        conn.close()
    disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.glob("*.md")}
    return sorted(rel for rel in set(rows) | set(disk) if rows.get(rel) != disk.get(rel))


def watcher_report(path: Path) -> dict[str, Any]:
    """What ``pnk sync --watch --json`` said: syncs, busy retries, and any other error."""
    out: dict[str, Any] = {"syncs": 0, "busy": 0, "errors": []}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            out["errors"].append(f"not JSON: {line[:200]}")
            continue
        if "error" not in event:
            out["syncs"] += 1
        elif "another sync is running" in str(event["error"]):
            out["busy"] += 1  # the watcher retries on its next wake-up
        else:
            out["errors"].append(str(event["error"])[:300])
    return out


def run(calls: int = 500, docs: int = 40, clients: int = 4, canaries: int = 4,
        workdir: Path | None = None, min_syncs: int = 10, watch: bool = True) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="pnk-conc-", dir=workdir))
    user = tmp / "user"
    user.mkdir()
    root = tmp / "kb"
    write_kb(root, docs, canaries)
    subprocess.run([PNK, "sync", "--kb", str(root), "-q"], env=env_for(user), check=True,
                   capture_output=True, timeout=600)
    port = free_port()
    log = open(tmp / "serve.log", "w", encoding="utf-8")
    http = subprocess.Popen([PNK, "serve", "--kb", str(root), "--http", "--port", str(port)],
                            env=env_for(user), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    watcher = None
    if watch:
        watch_out = open(tmp / "watch.jsonl", "w", encoding="utf-8")
        watcher = subprocess.Popen([PNK, "sync", "--watch", "--kb", str(root), "--json"],
                                   env={**env_for(user), "PYTHONUNBUFFERED": "1"},  # a line per sync, at once
                                   stdin=subprocess.DEVNULL, stdout=watch_out, stderr=log)
    stats = Stats()
    sync_out: dict[str, Any] = {}
    edit_out: dict[str, Any] = {}
    stop = threading.Event()
    stop_edits = threading.Event()
    started = time.perf_counter()
    lagging: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if time.monotonic() > deadline or http.poll() is not None:
                raise RuntimeError("pnk serve --http did not start")
            time.sleep(0.1)
        if watcher is not None:  # its first report: it runs (and has made its initial sync)
            deadline = time.monotonic() + 180
            while not (tmp / "watch.jsonl").read_text(encoding="utf-8").strip():
                if time.monotonic() > deadline or watcher.poll() is not None:
                    raise RuntimeError("pnk sync --watch did not start")
                time.sleep(0.2)
        syncer = threading.Thread(target=sync_loop, args=(root, user, canaries, stop, sync_out))
        editing = threading.Thread(target=editor, args=(root, docs, stop_edits, edit_out))
        per = max(1, calls // clients)

        async def main() -> None:
            async with contextlib.AsyncExitStack() as stack:
                sessions = [("stdio", await stack.enter_async_context(stdio_session(root, user, log)))]
                url = f"http://127.0.0.1:{port}/mcp"
                for _ in range(clients - 1):
                    sessions.append(("http", await stack.enter_async_context(http_session(url))))
                syncer.start()
                if watcher is not None:
                    editing.start()
                async with anyio.create_task_group() as tg:
                    for n, (transport, session) in enumerate(sessions):
                        tg.start_soon(client, session, transport, per, stats, canaries, n, sync_out, min_syncs)

        anyio.run(main)
        stop.set()  # no more pnk sync: from here only the watcher syncs
        with contextlib.suppress(RuntimeError):
            syncer.join(timeout=600)
        stop_edits.set()
        with contextlib.suppress(RuntimeError):
            editing.join(timeout=60)
        if watcher is not None:  # the watcher alone must now bring the index to every edit
            final = root / "d000.md"  # one edit after the last pnk sync, for certain
            final.write_text(final.read_text(encoding="utf-8") + "\nthe last edit.\n", encoding="utf-8")
            edit_out["edits"] = edit_out.get("edits", 0) + 1
            deadline = time.monotonic() + 120
            while True:
                lagging = caught_up(root)
                if not lagging or time.monotonic() > deadline or watcher.poll() is not None:
                    break
                time.sleep(0.5)
    finally:
        stop_edits.set()
        stop.set()
        with contextlib.suppress(RuntimeError):
            syncer.join(timeout=600)
        if watcher is not None:
            watcher.terminate()  # SIGTERM: pnk sync --watch stops like Ctrl-C
            try:
                watcher.wait(60)
            except subprocess.TimeoutExpired:
                watcher.kill()
                watcher.wait()
            watch_out.close()
        http.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            http.wait(20)
        log.close()
    served = (tmp / "serve.log").read_text(encoding="utf-8")
    failures = list(stats.errors) + list(stats.mixed) + list(sync_out.get("sync_errors", []))
    if "Traceback" in served:
        failures.append("a server logged a traceback")
    if http.returncode not in (0, -15):
        failures.append(f"pnk serve --http exited {http.returncode}")
    watched: dict[str, Any] = {}
    if watcher is not None:
        watched = watcher_report(tmp / "watch.jsonl")
        failures += [f"pnk sync --watch: {e}" for e in watched["errors"]]
        if watcher.returncode != 0:
            failures.append(f"pnk sync --watch exited {watcher.returncode} on SIGTERM")
        if lagging:
            failures.append(f"the watcher never indexed the last edits of {lagging[:5]}")
        if edit_out.get("edits", 0) and not watched["syncs"]:
            failures.append("pnk sync --watch never synced")
    all_ms = [v for vals in stats.latency.values() for v in vals]
    report = {
        "calls": stats.calls,
        "clients": clients,
        "syncs_during": sync_out.get("syncs", 0),
        "canary_rounds_seen": len(stats.rounds_seen),
        "edits_during": edit_out.get("edits", 0),
        "watcher_syncs": watched.get("syncs", 0),
        "watcher_busy_retries": watched.get("busy", 0),
        "p50_ms": percentile(all_ms, 50),
        "p99_ms": percentile(all_ms, 99),
        "by_transport": {t: {"calls": len(v), "p50_ms": percentile(v, 50), "p99_ms": percentile(v, 99)}
                         for t, v in sorted(stats.latency.items())},
        "seconds": round(time.perf_counter() - started, 1),
        "failures": failures[:50],
    }
    if not failures:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        report["kept"] = str(tmp)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--docs", type=int, default=40)
    ap.add_argument("--clients", type=int, default=4, help="1 stdio session + N-1 HTTP sessions")
    ap.add_argument("--min-syncs", type=int, default=10, help="keep calling until this many syncs ran")
    ap.add_argument("--no-watch", action="store_true", help="without the pnk sync --watch and its editor")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    report = run(args.calls, args.docs, args.clients, workdir=args.workdir, min_syncs=args.min_syncs,
                 watch=not args.no_watch)
    print(json.dumps(report, indent=2))
    sys.exit(1 if report["failures"] else 0)


if __name__ == "__main__":
    main()
