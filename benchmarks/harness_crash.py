"""Crash harness: kill -9 ``pnk sync`` and ``pnk link`` at seeded points, then prove nothing was lost.

    python benchmarks/harness_crash.py --kills 20              # full size: 300 documents
    python benchmarks/harness_crash.py --kills 3 --docs 24     # about what CI runs (tests/test_crash.py)

A generated KB (documents in folders, body links, some hand-written sidecars)
is changed a little every round (edits, new and deleted documents, moves), then
a real ``pnk sync`` (sometimes ``--rebuild``) or ``pnk link`` subprocess is killed with SIGKILL: either
at a named crash point (``PINAKES_CRASH_AT``, see pinakes/faults.py: inside an
embedding batch, between two documents of the write transaction, just before
its commit, between a truth file's fsync and its rename) or after a random
delay. After every kill:

- ``index.db`` and the embedding cache (``embeddings.db``) open and pass ``PRAGMA integrity_check``;
- every document is byte-for-byte what the harness wrote (Pinakes never edits a body),
  every sidecar parses, keeps the id it had, and ``pinakes.toml`` is unchanged;
- (usually) a plain ``pnk sync`` then completes without rebuilding, removes any
  temp file the kill left, and indexes exactly the files on disk.

At the end the recovered index is compared with a clean rebuild of a copy of the
KB (same embedding cache): the same documents, chunk vectors and search results,
and the rebuild embeds nothing (the cache survived every kill). Prints a JSON
report; exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PNK = str(Path(sys.executable).parent / "pnk")

WORDS = """lantern harbour keeper beacon tide fog signal prism lens rotation gallery tower storm
gale reef channel buoy chart compass sextant logbook wick kerosene clockwork shutter foghorn
diaphone cliff headland pier jetty breakwater current swell horizon dusk dawn watch relief
supply boat island granite iron brass copper glass mirror reflector flash period eclipse
range visibility nautical mile coast guard survey station radio bearing pilot vessel cargo
anchor mooring hull mast rigging sail keel rudder helm crew captain voyage passage strait
estuary delta marsh dune shingle lagoon atoll cape bay cove inlet sound firth fjord skerry
weather barometer pressure front squall drizzle mist haze frost thaw season winter summer
archive ledger record inventory repair maintenance paint rust salt spray erosion foundation""".split()

POINTS_SYNC = ["embed-batch", "apply-doc", "apply-commit", "atomic-write", "timed"]
POINTS_LINK = ["atomic-write", "apply-doc", "apply-commit", "timed"]


def sentence(rng: random.Random, n: int = 12) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def doc_text(rng: random.Random, title: str, others: list[str], rel: str) -> str:
    parts = [f"# {title}", "", sentence(rng, 20), ""]
    for s in range(rng.randint(1, 3)):
        parts += [f"## {rng.choice(WORDS).capitalize()} {s}", "", sentence(rng, 25), sentence(rng, 15), ""]
    if others:
        target = rng.choice(others)
        link = os.path.relpath(target, os.path.dirname(rel) or ".")
        parts.append(f"See [{Path(target).stem}]({link}).")
    return "\n".join(parts) + "\n"


@dataclass
class State:
    """What the harness wrote: the truth the KB must still hold after any kill."""

    root: Path
    docs: dict[str, bytes] = field(default_factory=dict)  # rel -> bytes
    ids: dict[str, str] = field(default_factory=dict)  # sidecar rel -> id it must keep
    config: bytes = b""
    counter: int = 0

    def write(self, rel: str, text: str) -> None:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        self.docs[rel] = text.encode("utf-8")

    def remove(self, rel: str) -> None:
        (self.root / rel).unlink()
        del self.docs[rel]
        sc = sidecar_of(rel)
        if (self.root / sc).exists():
            (self.root / sc).unlink()
        self.ids.pop(sc, None)

    def move(self, rel: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.root / rel, self.root / new)
        self.docs[new] = self.docs.pop(rel)
        sc, nsc = sidecar_of(rel), sidecar_of(new)
        if (self.root / sc).exists():
            os.replace(self.root / sc, self.root / nsc)
            if sc in self.ids:
                self.ids[nsc] = self.ids.pop(sc)


def sidecar_of(rel: str) -> str:
    return rel[: -len(".md")] + ".pnk.yaml"


def make_kb(root: Path, n_docs: int, rng: random.Random) -> State:
    root.mkdir(parents=True)
    state = State(root)
    state.config = b'[kb]\nname = "crash"\n'
    (root / "pinakes.toml").write_bytes(state.config)
    folders = ["notes", "ops", "guide/deep", "archive"]
    rels = [f"{rng.choice(folders)}/doc-{i:04d}.md" for i in range(n_docs)]
    for i, rel in enumerate(rels):
        state.write(rel, doc_text(rng, f"Document {i} {rng.choice(WORDS)}", rels[:i], rel))
    # A few hand-written sidecars with comments (their comments and ids must survive).
    for rel in rng.sample(rels, max(1, n_docs // 10)):
        ulid = _ulid(rng)
        (root / sidecar_of(rel)).write_text(
            f"# written by hand\nid: {ulid}  # keep\ntitle: Hand {Path(rel).stem}\ntags: [hand]\nlinks: []\n",
            encoding="utf-8")
    state.counter = n_docs
    return state


def _ulid(rng: random.Random) -> str:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "01" + "".join(rng.choice(alphabet) for _ in range(24))


def mutate(state: State, rng: random.Random, share: float) -> None:
    """Edit, add, delete and move a few documents: fresh chunks to embed every round."""
    rels = sorted(state.docs)
    n = max(2, int(len(rels) * share))
    for rel in rng.sample(rels, min(n, len(rels))):
        text = state.docs[rel].decode() + f"\n## Update {state.counter}\n\n{sentence(rng, 30)}\n"
        state.counter += 1
        state.write(rel, text)
    for _ in range(max(1, n // 3)):
        rel = f"notes/new-{state.counter:05d}.md"
        state.counter += 1
        state.write(rel, doc_text(rng, f"New {state.counter} {rng.choice(WORDS)}", rels, rel))
    if len(state.docs) > 10 and rng.random() < 0.5:
        state.remove(rng.choice(sorted(state.docs)))
    if rng.random() < 0.5:
        rel = rng.choice(sorted(state.docs))
        new = f"archive/moved-{state.counter:05d}.md"
        state.counter += 1
        state.move(rel, new)


def env_for(user_dir: Path, crash_at: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
    env["PINAKES_USER_PATH"] = str(user_dir)
    env["PINAKES_CACHE_DIR"] = str(user_dir / "cache")  # the per-user embedding cache
    if crash_at:
        env["PINAKES_CRASH_AT"] = crash_at
    return env


def run_pnk(args: list[str], env: dict[str, str], delay: float | None = None,
            timeout: float = 600) -> tuple[int, str, str]:
    """Run ``pnk``; with ``delay``, SIGKILL it after that many seconds (if still running)."""
    proc = subprocess.Popen([PNK, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            stdin=subprocess.DEVNULL, text=True)
    if delay is not None:
        try:
            out, err = proc.communicate(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            out, err = proc.communicate()
    else:
        out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def integrity(path: Path) -> str:
    if not path.exists():
        return "ok"
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def check_truth(state: State, failures: list[str], where: str) -> None:
    """Documents untouched, sidecars parse and keep their ids, config unchanged."""
    from pinakes.sidecar import is_ulid, read_sidecar

    root = state.root
    if (root / "pinakes.toml").read_bytes() != state.config:
        failures.append(f"{where}: pinakes.toml changed")
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*.md") if ".pinakes" not in p.parts}
    if on_disk != set(state.docs):
        failures.append(f"{where}: documents on disk differ: {sorted(on_disk ^ set(state.docs))[:5]}")
    for rel, data in state.docs.items():
        p = root / rel
        if p.exists() and p.read_bytes() != data:
            failures.append(f"{where}: document body changed: {rel}")
    for sc in root.rglob("*.pnk.yaml"):
        rel = str(sc.relative_to(root))
        parsed = read_sidecar(sc, display=rel)
        if parsed.error or not is_ulid(parsed.id):
            failures.append(f"{where}: sidecar {rel} broken: {parsed.error or parsed.id}")
            continue
        known = state.ids.setdefault(rel, str(parsed.id))
        if known != parsed.id:
            failures.append(f"{where}: sidecar {rel} changed id {known} -> {parsed.id}")
    for rel in list(state.ids):
        if not (root / rel).exists():
            failures.append(f"{where}: sidecar {rel} disappeared")
            del state.ids[rel]


def stray_temps(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*.tmp") if ".pinakes" not in p.parts)


def check_index(state: State, failures: list[str], where: str) -> None:
    """The index holds exactly the documents on disk, each at its current hash."""
    db = state.root / ".pinakes" / "index.db"
    conn = sqlite3.connect(db)
    try:
        rows = dict(conn.execute("SELECT path, hash FROM documents").fetchall())
        missing_vec = conn.execute("SELECT count(*) FROM chunks WHERE vec IS NULL").fetchone()[0]
    finally:
        conn.close()
    if set(rows) != set(state.docs):
        failures.append(f"{where}: index documents differ from disk: {sorted(set(rows) ^ set(state.docs))[:5]}")
    for rel, data in state.docs.items():
        if rel in rows and rows[rel] != hashlib.sha256(data).hexdigest():
            failures.append(f"{where}: {rel} indexed at a stale hash")
    if missing_vec:
        failures.append(f"{where}: {missing_vec} chunks without a vector")


def recover(state: State, env: dict[str, str], failures: list[str], where: str) -> dict[str, Any]:
    rc, out, err = run_pnk(["sync", "--kb", str(state.root), "--json"], env)
    if rc != 0:
        failures.append(f"{where}: recovery sync failed ({rc}): {err.strip()[-300:]}")
        return {}
    report = json.loads(out)
    if report["rebuilt"]:
        failures.append(f"{where}: recovery sync rebuilt the index")
    if stray_temps(state.root):
        failures.append(f"{where}: stray temp files after recovery: {stray_temps(state.root)}")
    check_truth(state, failures, where)
    check_index(state, failures, where)
    return report


def search_signature(root: Path, queries: list[str], embedder: Any) -> list[Any]:
    """What search ranks from, per query: the lexical candidates with their BM25 scores,
    and the fused top hits as a set.

    Compared as sorted lists and sets because BM25 ties are ordered by internal row
    id, which an incremental index and a rebuild assign differently.
    """
    from pinakes import KB
    from pinakes.search import BM25_WEIGHTS, _fts_terms
    from pinakes.text import query_terms

    kb = KB.open(root)
    kb._embedder = embedder
    conn = kb.reader().conn
    out = []
    for q in queries:
        match = _fts_terms(query_terms(q), kb)
        lexical = sorted(
            (r[0], r[1], round(r[2], 6)) for r in conn.execute(
                "SELECT d.path, c.start_line, bm25(chunks_fts, ?, ?, ?) FROM chunks_fts "
                "JOIN chunks c ON c.id = chunks_fts.rowid JOIN documents d ON d.doc = c.doc "
                "WHERE chunks_fts MATCH ?", (*BM25_WEIGHTS, match)))
        hits = kb.search(q, k=8).hits
        out.append((lexical, len(hits)))
    kb.close()
    return out


def link_rows(root: Path) -> list[Any]:
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    try:
        return sorted(conn.execute(
            "SELECT d.path, l.origin, l.raw, l.kind, l.key, l.rel, l.dst_ulid, l.reason "
            "FROM links l JOIN documents d ON d.doc = l.src_doc").fetchall(), key=repr)
    finally:
        conn.close()


def chunk_vectors(root: Path) -> dict[tuple[str, str], bytes]:
    conn = sqlite3.connect(root / ".pinakes" / "index.db")
    try:
        return {(p, h): v for p, h, v in conn.execute(
            "SELECT d.path, c.hash, c.vec FROM chunks c JOIN documents d ON d.doc = c.doc")}
    finally:
        conn.close()


def run(kills: int = 20, docs: int = 300, seed: int = 15, workdir: Path | None = None,
        share: float = 0.03, log: Any = None) -> dict[str, Any]:
    """The whole harness; returns the report (``failures`` empty when every check held)."""
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="pnk-crash-", dir=workdir))
    user = tmp / "user"
    user.mkdir()
    state = make_kb(tmp / "kb", docs, rng)
    failures: list[str] = []
    started = time.perf_counter()
    stats: dict[str, Any] = {"kills": 0, "rounds": 0, "not_reached": 0, "by_point": {},
                             "recovery_syncs": 0, "chunks_embedded": 0}
    say = log or (lambda *_: None)

    # A first sync, itself killed inside its embedding, then the baseline.
    rc, _, _ = run_pnk(["sync", "--kb", str(state.root)], env_for(user, "embed-batch:2"))
    stats["kills"] += rc == -signal.SIGKILL
    stats["by_point"]["embed-batch"] = stats["by_point"].get("embed-batch", 0) + (rc == -signal.SIGKILL)
    check_truth(state, failures, "first sync")
    recover(state, env_for(user, None), failures, "baseline")
    t0 = time.perf_counter()
    run_pnk(["sync", "--kb", str(state.root)], env_for(user, None))
    noop = time.perf_counter() - t0

    max_rounds = kills * 4
    while stats["kills"] < kills and stats["rounds"] < max_rounds:
        stats["rounds"] += 1
        where = f"round {stats['rounds']}"
        mutate(state, rng, share)
        if rng.random() < 0.25 and len(state.docs) > 2:
            src, dst = rng.sample(sorted(state.docs), 2)
            point = rng.choice(POINTS_LINK)
            args = ["link", src, dst, "--rel", rng.choice(["cites", "uses", "extends"]),
                    "--kb", str(state.root)]
            op = "link"
        else:
            point = rng.choice(POINTS_SYNC)
            rebuild = rng.random() < 0.15  # a killed --rebuild must recover too
            args = ["sync", "--kb", str(state.root), *(["--rebuild"] if rebuild else [])]
            op = "sync --rebuild" if rebuild else "sync"
        if point == "timed":
            delay = rng.uniform(0.2, max(0.5, noop * 3))
            rc, _, err = run_pnk(args, env_for(user, None), delay=delay)
            label = f"timed {delay:.2f}s"
        else:
            count = rng.randint(1, 3)
            rc, _, err = run_pnk(args, env_for(user, f"{point}:{count}"))
            label = f"{point}:{count}"
        killed = rc == -signal.SIGKILL
        if killed:
            stats["kills"] += 1
            stats["by_point"][point] = stats["by_point"].get(point, 0) + 1
        else:
            stats["not_reached"] += 1
            if rc != 0:
                failures.append(f"{where}: pnk {op} exited {rc} without a kill: {err.strip()[-300:]}")
        say(f"{where}: pnk {op} at {label}: {'killed' if killed else f'finished ({rc})'}")
        for db in (state.root / ".pinakes" / "index.db", user / "cache" / "embeddings.db"):
            verdict = integrity(db)
            if verdict != "ok":
                failures.append(f"{where}: {db.name} integrity_check: {verdict}")
        check_truth(state, failures, where)
        if rng.random() < 0.7 or stats["kills"] >= kills:
            report = recover(state, env_for(user, None), failures, where)
            stats["recovery_syncs"] += 1
            stats["chunks_embedded"] += int(report.get("chunks_embedded", 0))
    recover(state, env_for(user, None), failures, "final")

    # The recovered index against a clean rebuild of a copy (same embedding cache).
    from pinakes.default_plugins.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    clean = tmp / "clean"
    shutil.copytree(state.root, clean, ignore=shutil.ignore_patterns(".pinakes"))
    from pinakes import KB

    saved = os.environ.get("PINAKES_CACHE_DIR")
    os.environ["PINAKES_CACHE_DIR"] = str(user / "cache")  # the same (shared) embedding cache
    try:
        kb = KB.open(clean)
        kb._embedder = embedder
        rebuilt = kb.sync()
        kb.close()
    finally:
        if saved is None:
            os.environ.pop("PINAKES_CACHE_DIR", None)
        else:
            os.environ["PINAKES_CACHE_DIR"] = saved
    if rebuilt.chunks_embedded:
        failures.append(f"clean rebuild embedded {rebuilt.chunks_embedded} chunks: the cache lost them")
    if chunk_vectors(clean) != chunk_vectors(state.root):
        failures.append("recovered chunk vectors differ from a clean rebuild's")
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(12)]
    if search_signature(state.root, queries, embedder) != search_signature(clean, queries, embedder):
        failures.append("search after recovery differs from a clean rebuild's")
    if link_rows(state.root) != link_rows(clean):
        failures.append("links after recovery differ from a clean rebuild's")

    stats.update({
        "documents": len(state.docs),
        "sidecars": len(state.ids),
        "seed": seed,
        "queries_compared": len(queries),
        "seconds": round(time.perf_counter() - started, 1),
        "failures": failures,
    })
    if not failures:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        stats["kept"] = str(tmp)
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20, help="kills to land (default 20)")
    ap.add_argument("--docs", type=int, default=300, help="documents in the generated KB (default 300)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--share", type=float, default=0.03, help="share of documents edited per round")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    report = run(args.kills, args.docs, args.seed, args.workdir, args.share,
                 log=None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True)))
    print(json.dumps(report, indent=2))
    sys.exit(1 if report["failures"] else 0)


if __name__ == "__main__":
    main()
