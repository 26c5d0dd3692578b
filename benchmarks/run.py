#!/usr/bin/env python
"""Pinakes core benchmarks: one command, a printed table and a JSON file.

    .venv/bin/python benchmarks/run.py            # full run (~15 min on 2 cores)
    .venv/bin/python benchmarks/run.py --quick    # smoke run (~2 min)

What is measured (docs/performance.md lists the targets):

* full sync with the real embedder on a synthetic corpus: chunks/s and the
  share of wall time spent inside the embedder;
* no-op and one-edit re-sync at 1k and 10k documents, with ``bench-fake``, a
  deterministic stand-in embedder (``fake_embedder.py``), so that Pinakes' own
  overhead is what is timed;
* warm hybrid search latency p50/p95 in process at 10k and 50k chunks
  (synthetic vectors, real FTS5 over real-ish text), with and without the
  real query embedding;
* cold ``pnk search`` wall time on the example KB (process start to output);
* the graph channels at 10k and 50k chunks (section ``graph``): the default
  ``ppr`` channel's cost (``bench_ppr.py``) and the search latency ``expand``
  adds over ``off`` (``bench_graph.py``), both run as child scripts with the
  installed plugins, since the channels are plugins;
* peak RSS of each phase and the bytes of vectors held per chunk.

Each section runs in its own child process (``--section``), so peak RSS is
per phase and the fake embedder never leaks into another measurement. The
corpora are generated deterministically (``corpus.py``) in a temporary folder
(``--workdir`` keeps and reuses it). Results go to
``benchmarks/results/core.json`` (``core-quick.json`` for ``--quick``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

SIZES: dict[str, dict[str, Any]] = {
    "full": {
        "sync_docs": 300,
        "resync_docs": [1000, 10000],
        "search_docs": [2000, 10000],  # x 5 chunks = 10k and 50k chunks
        "queries": 200,
        "noop_runs": 5,
        "edit_runs": 3,
        "cold_runs": 5,
        "sweep_chunks": 200,
        "scale_docs": [200, 1000, 2000, 10000, 20000],  # 1k, 5k, 10k, 50k, 100k chunks
        "scale_queries": 100,
    },
    "quick": {
        "sync_docs": 40,
        "resync_docs": [1000],
        "search_docs": [1000],  # 5k chunks
        "queries": 50,
        "noop_runs": 3,
        "edit_runs": 2,
        "cold_runs": 5,
        "sweep_chunks": 48,
        "scale_docs": [200, 1000],
        "scale_queries": 30,
    },
}
COLD_QUERY = "how does late interaction score a document"
WITH_PLUGINS = False


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_now_mb() -> float:
    """Current resident set size of this process."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # KiB on Linux


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (linear interpolation), of a non-empty list."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def pnk_executable() -> list[str]:
    script = Path(sys.executable).parent / "pnk"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from pinakes.cli import main; main()"]


def fresh_kb(path: Path) -> Any:
    from pinakes import KB

    return KB.open(path)


def ensure_corpus(root: Path, n_docs: int, embedder: str) -> dict[str, Any]:
    """Generate and index a corpus once; later sections reuse it."""
    from pinakes import KB

    out: dict[str, Any] = {"docs": n_docs}
    if not (root / "pinakes.toml").exists():
        t = time.perf_counter()
        corpus.write_kb(root, n_docs, embedder)
        out["generate_s"] = round(time.perf_counter() - t, 2)
    # Index it (or bring a reused index up to date: a schema change rebuilds it).
    t = time.perf_counter()
    report = KB.open(root).sync()
    wall = time.perf_counter() - t
    if report.added or report.rebuilt:
        out["initial_sync_s"] = round(wall, 2)
        out["initial_sync_docs_per_s"] = round(n_docs / wall, 1)
    if report.problems:
        out["problems"] = report.problems[:5]
    return out


# --- sections (each runs in a child process) ----------------------------------


def section_full_sync(work: Path, n_docs: int) -> dict[str, Any]:
    """First sync of a committed KB (sidecars present) with the real embedder."""
    root = work / f"full-sync-{n_docs}"
    if root.exists():
        shutil.rmtree(root)
    # A first sync embeds everything: an empty embedding cache of its own, or the
    # per-user cache (warm from the last run) would make it a cache read.
    cache = work / f"full-sync-{n_docs}-cache"
    shutil.rmtree(cache, ignore_errors=True)
    os.environ["PINAKES_CACHE_DIR"] = str(cache)
    corpus.write_kb(root, n_docs, "minilm-l6-v2-int8")
    kb = fresh_kb(root)
    emb = kb.embedder
    spent = {"embed": 0.0, "count_tokens": 0.0, "model_load": 0.0}
    calls = {"embed": 0, "count_tokens": 0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.perf_counter() - t
                if name in calls:
                    calls[name] += 1
        return wrapper

    emb.embed = timed("embed", emb.embed)
    emb.count_tokens = timed("count_tokens", emb.count_tokens)
    if hasattr(emb, "_load_session"):
        emb._load_session = timed("model_load", emb._load_session)
    load_before = os.getloadavg()[0]
    marks: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        # The first embedding tick of phase 4 comes after the documents are committed.
        if stage == "embed" and "searchable" not in marks:
            marks["searchable"] = time.perf_counter() - t

    t = time.perf_counter()
    c = time.process_time()
    report = kb.sync(progress=progress)
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    texts = [r[0] for r in kb.reader().conn.execute("SELECT text FROM chunks")]
    chunks = len(texts)
    # The embedding cache this sync filled, on disk (main file + WAL), per vector held.
    cache_bytes = sum(p.stat().st_size for p in cache.glob("embeddings.db*") if p.is_file())
    with contextlib.closing(sqlite3.connect(cache / "embeddings.db")) as cconn:
        cache_vectors = cconn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    tokens = sum(emb.count_tokens(texts)) / max(1, chunks)
    inside = spent["embed"]
    inside_all = spent["embed"] + spent["count_tokens"]
    return {
        "docs": n_docs,
        "chunks": chunks,
        "chunks_embedded": report.chunks_embedded,
        "cache_bytes": cache_bytes,
        "cache_vectors": cache_vectors,
        "mean_chunk_tokens": round(tokens, 1) if tokens else None,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "searchable_after_s": round(marks.get("searchable", wall), 2),
        "embed_s": round(spent["embed"], 2),
        "model_load_s": round(spent["model_load"], 2),
        "count_tokens_s": round(spent["count_tokens"], 2),
        "count_tokens_calls": calls["count_tokens"],
        "outside_embedder_s": round(wall - inside_all, 2),
        "chunks_per_s": round(report.chunks_embedded / wall, 1),
        "chunks_per_s_embed_only": round(report.chunks_embedded / max(1e-9, inside - spent["model_load"]), 1),
        "share_inside_embed": round(inside / wall, 4),
        "share_inside_embedder_incl_token_counting": round(inside_all / wall, 4),
        "loadavg_before": round(load_before, 2),
        "loadavg_after": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(rss_peak_mb(), 1),
    }


def section_resync(work: Path, n_docs: int, noop_runs: int, edit_runs: int) -> dict[str, Any]:
    """No-op and one-edit re-sync with the fake embedder."""
    import fake_embedder

    fake_embedder.install()
    root = work / f"kb-{n_docs}"
    out = ensure_corpus(root, n_docs, fake_embedder.FAKE_ID)
    load_before = os.getloadavg()[0]

    noop, noop_cpu = [], []
    for _ in range(noop_runs):
        t, c = time.perf_counter(), time.process_time()
        report = fresh_kb(root).sync()
        noop.append(time.perf_counter() - t)
        noop_cpu.append(time.process_time() - c)
        assert not report.changed and not report.added, report.summary()
    out["noop_s"] = [round(x, 3) for x in noop]
    out["noop_median_s"] = round(statistics.median(noop), 3)
    out["noop_cpu_median_s"] = round(statistics.median(noop_cpu), 3)

    edits = []
    for rep in range(edit_runs):
        doc = (rep * 7919 + 17) % n_docs
        corpus.edit_document(root, doc, stamp=int(time.time() * 1000) + rep)
        t, c = time.perf_counter(), time.process_time()
        report = fresh_kb(root).sync()
        wall = time.perf_counter() - t
        cpu = time.process_time() - c
        assert report.changed and len(report.changed) == 1, report.summary()
        edits.append({
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "embed_s": round(report.embed_seconds, 4),
            "chunks_embedded": report.chunks_embedded,
            "chunks_cached": report.chunks_cached,
            "overhead_s": round(wall - report.embed_seconds, 3),
        })
    out["edit"] = edits
    out["edit_median_s"] = round(statistics.median(e["wall_s"] for e in edits), 3)
    out["edit_overhead_median_s"] = round(statistics.median(e["overhead_s"] for e in edits), 3)
    out["edit_cpu_median_s"] = round(statistics.median(e["cpu_s"] for e in edits), 3)

    # The same no-op through the CLI: process start, imports and all.
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import fake_embedder; "
        "fake_embedder.install(); from pinakes.cli import main; "
        f"sys.argv = ['pnk', 'sync', '-q', '--kb', {str(root)!r}]; main()"
    )
    cli = []
    env = _bytecode_env(work)
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)  # warm-up
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
        cli.append(time.perf_counter() - t)
    out["noop_cli_s"] = [round(x, 3) for x in cli]
    out["noop_cli_median_s"] = round(statistics.median(cli), 3)
    out["loadavg_before"] = round(load_before, 2)
    out["peak_rss_mb"] = round(rss_peak_mb(), 1)
    return out


def section_search(work: Path, n_docs: int, n_queries: int) -> dict[str, Any]:
    """Warm hybrid search in process; the dense part uses the fake corpus vectors."""
    import fake_embedder

    fake_embedder.install()
    root = work / f"kb-{n_docs}"
    out = ensure_corpus(root, n_docs, fake_embedder.FAKE_ID)
    out["rss_start_mb"] = round(rss_now_mb(), 1)
    kb = fresh_kb(root)
    qs = corpus.queries(n_queries + 20)
    warm, qs = qs[:20], qs[20:]

    rss_before = rss_now_mb()
    t = time.perf_counter()
    kb.search(warm[0])
    out["first_search_ms"] = round((time.perf_counter() - t) * 1000, 1)
    dense = kb._dense
    chunks = int(len(dense.ids))
    out["chunks"] = chunks
    out["rss_after_first_search_mb"] = round(rss_now_mb(), 1)
    out["rss_growth_first_search_mb"] = round(rss_now_mb() - rss_before, 1)
    out["peak_rss_after_load_mb"] = round(rss_peak_mb(), 1)
    held = dense.nbytes  # codes + per-row scales + ids (pinakes.quant)
    out["vector_matrix_bytes"] = int(dense.codes.nbytes + dense.scale.nbytes)
    out["vector_ids_bytes"] = int(dense.ids.nbytes)
    out["vector_bytes_per_chunk"] = round(held / chunks, 1)
    out["vector_mb_per_50k_chunks"] = round(held / chunks * 50_000 / 1e6, 2)
    for q in warm[1:]:
        kb.search(q)

    state = kb.config.state_dir
    out["index_db_bytes"] = sum(f.stat().st_size for f in state.iterdir() if f.name.startswith("index.db"))
    out["index_db_bytes_per_chunk"] = round(out["index_db_bytes"] / chunks, 1)

    def run(label: str, **scope: Any) -> None:
        lat, cpu, parts = [], [], {"embed": [], "embed_wait": [], "lexical": [], "dense": []}
        for q in qs:
            t0, c0 = time.perf_counter(), time.process_time()
            res = kb.search(q, **scope)
            lat.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            for key in parts:
                parts[key].append(res.timings_ms.get(key, 0.0))
        out[label] = {
            "queries": len(qs),
            "p50_ms": round(pct(lat, 50), 2),
            "p95_ms": round(pct(lat, 95), 2),
            "mean_ms": round(statistics.fmean(lat), 2),
            "cpu_p50_ms": round(pct(cpu, 50), 2),
            **{f"{k}_p50_ms": round(pct(v, 50), 2) for k, v in parts.items()},
        }

    load_before = os.getloadavg()[0]
    run("fake_query_embedding")
    # A scoped search (pnk search --in): one folder of the corpus's 20, a twentieth of it.
    run("fake_query_embedding_scoped", within=["topic-03"])
    # The confidence path too: the bench embedder has no calibration of its own, so the
    # one shipped for the default embedder stands in (its features, its cost; the value
    # means nothing here). Then without it again, so the runs below are as before.
    from pinakes.evaluation.calibration import Calibration, packaged_calibration_path

    shipped = packaged_calibration_path("minilm-l6-v2-int8")
    if shipped is not None:
        kb._calibration = (None, Calibration.load(shipped))  # KB.calibration()'s cache
        run("fake_query_embedding_calibrated")
        kb._calibration = None
    # Now the real query embedding (all-MiniLM-L6-v2), uncached: every query is new.
    from pinakes.default_plugins.minilm import MiniLMEmbedder

    real = MiniLMEmbedder()
    real.embed_query("warm up the model")
    kb.embedder.embed_query = real._embed_query_uncached
    # MiniLM is thread-safe, so search embeds the query while FTS5 runs (as with
    # the real embedder configured); the fake corpus embedder does not say so.
    kb.embedder.thread_safe = True
    for q in warm[:5]:
        kb.search(q + " again")
    run("real_query_embedding")
    out["loadavg_before"] = round(load_before, 2)
    out["rss_end_mb"] = round(rss_now_mb(), 1)
    out["peak_rss_mb"] = round(rss_peak_mb(), 1)
    return out


def section_embed_sweep(work: Path, n_chunks: int) -> dict[str, Any]:
    """The embedder alone (its floor): chunks/s by batch size and ORT thread count.

    The texts are a synthetic KB's chunks as sync hands them to the embedder
    (title and heading path prepended). Each setting runs on a fresh session
    after one warm-up batch; CPU seconds per chunk are reported beside wall
    time because the machine is shared.
    """
    from pinakes.default_plugins import minilm
    from pinakes.sync import embed_text

    root = work / "embed-sweep-kb"
    if not root.exists():
        corpus.write_kb(root, max(1, n_chunks // 5 + 1), "minilm-l6-v2-int8")
    kb = fresh_kb(root)
    from pinakes.markdown import parse_markdown

    texts: list[str] = []
    emb0 = minilm.MiniLMEmbedder()
    for md in sorted(root.rglob("*.md")):
        parsed = parse_markdown(md.read_text(encoding="utf-8"), max_tokens=216,
                                count_tokens=emb0.count_tokens)
        texts += [embed_text(parsed.title or md.stem, c.heading_path, c.text) for c in parsed.chunks]
    texts = texts[:n_chunks]
    del kb
    original = minilm._session_options
    out: dict[str, Any] = {"chunks": len(texts),
                           "mean_tokens": round(statistics.fmean(emb0.count_tokens(texts)), 1)}
    runs = []
    for threads, batch in [(2, 8), (1, 8), (2, 16), (2, 32), (2, 1), (1, 1)]:
        def opts(_threads: int = threads) -> Any:
            o = original()
            o.intra_op_num_threads = _threads
            return o

        minilm._session_options = opts
        minilm._SESSIONS.clear()
        emb = minilm.MiniLMEmbedder()
        emb.embed(texts[:8], batch_size=batch)  # session + warm-up
        load = os.getloadavg()[0]
        t, c = time.perf_counter(), time.process_time()
        emb.embed(texts, batch_size=batch)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        runs.append({"threads": threads, "batch_size": batch, "wall_s": round(wall, 2),
                     "chunks_per_s": round(len(texts) / wall, 1),
                     "cpu_ms_per_chunk": round(cpu / len(texts) * 1000, 1),
                     "loadavg": round(load, 2)})
        log(f"embed sweep: {runs[-1]}")
        del emb  # one session at a time (each holds ~200 MB of ORT arena)
        minilm._SESSIONS.clear()
    minilm._session_options = original
    minilm._SESSIONS.clear()
    out["runs"] = runs
    out["best"] = max(runs, key=lambda r: r["chunks_per_s"])
    return out


def section_scale(work: Path, docs: list[int], n_queries: int) -> dict[str, Any]:
    """The scale curve: sync time, search latency, RSS and disk from 1k to 100k chunks.

    Each size is its own corpus (5 chunks per document) indexed with the fake
    embedder, so the embedder's cost (reported by full_sync) is left out; the
    search runs with the fake query embedding. Sizes run in child processes so
    each RSS is its own.
    """
    rows = []
    for n in docs:
        code = (
            f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import run; "
            f"print(json.dumps(run._scale_point({str(work)!r}, {n}, {n_queries})))"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "PINAKES_LOAD_PLUGINS": os.environ.get(
                                  "PINAKES_LOAD_PLUGINS", "")})
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"scale point {n} failed")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        log(f"scale: {rows[-1]}")
    return {"points": rows}


def _scale_point(work: str, n_docs: int, n_queries: int) -> dict[str, Any]:
    import fake_embedder

    fake_embedder.install()
    root = Path(work) / f"kb-{n_docs}"
    fresh = not (root / ".pinakes" / "index.db").exists()
    t, c = time.perf_counter(), time.process_time()
    info = ensure_corpus(root, n_docs, fake_embedder.FAKE_ID)
    sync_wall, sync_cpu = time.perf_counter() - t, time.process_time() - c
    kb = fresh_kb(root)
    qs = corpus.queries(n_queries + 10)
    t = time.perf_counter()
    kb.search(qs[0])
    first = time.perf_counter() - t
    for q in qs[1:10]:
        kb.search(q)
    lat, cpu = [], []
    for q in qs[10:]:
        t0, c0 = time.perf_counter(), time.process_time()
        kb.search(q)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    state = kb.config.state_dir
    index_bytes = sum(f.stat().st_size for f in state.iterdir() if f.name.startswith("index.db"))
    chunks = int(len(kb._dense.ids))
    return {
        "docs": n_docs, "chunks": chunks,
        "sync_s": round(sync_wall, 2) if fresh else info.get("initial_sync_s"),
        "sync_cpu_s": round(sync_cpu, 2) if fresh else None,
        "first_search_s": round(first, 3),
        "search_p50_ms": round(pct(lat, 50), 2), "search_p95_ms": round(pct(lat, 95), 2),
        "search_cpu_p50_ms": round(pct(cpu, 50), 2),
        "rss_mb": round(rss_now_mb(), 1), "peak_rss_mb": round(rss_peak_mb(), 1),
        "index_db_mb": round(index_bytes / 1e6, 1),
        "index_bytes_per_chunk": round(index_bytes / max(1, chunks)),
        "loadavg": round(os.getloadavg()[0], 2),
    }


def _bytecode_env(work: Path, cached: bool = True) -> dict[str, str]:
    """Environment for CLI subprocesses; ``cached`` lets Python keep bytecode (as an install does)."""
    env = dict(os.environ)
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache-empty")
    return env


PHASES_SCRIPT = r"""
import sys, time
t0 = time.perf_counter()
import pinakes.cli  # noqa: F401
t1 = time.perf_counter()
from pinakes import plugins
plugins.load_plugins()
t2 = time.perf_counter()
from pinakes.fleet import resolve_kb
kb = resolve_kb(sys.argv[1])
emb = kb.embedder
if hasattr(emb, "_load_tokenizer"):
    emb._load_tokenizer(counting=False)  # what a query loads
t3 = time.perf_counter()
import onnxruntime  # noqa: F401
t4 = time.perf_counter()
if hasattr(emb, "_load_session"):
    emb._load_session()
t5 = time.perf_counter()
kb.search(sys.argv[2])
t6 = time.perf_counter()
ms = lambda a, b: round((b - a) * 1000, 1)
print({"import_pinakes_cli": ms(t0, t1), "load_plugins": ms(t1, t2),
       "open_kb_and_tokenizer": ms(t2, t3), "import_onnxruntime": ms(t3, t4),
       "onnx_session": ms(t4, t5), "first_search": ms(t5, t6)})
"""


def section_cold_search(work: Path, runs: int) -> dict[str, Any]:
    """``pnk search`` in a fresh process on a copy of the example KB, median of ``runs``.

    Measured twice: with the core alone (``PINAKES_LOAD_PLUGINS=""``, what the
    targets are about) and with every installed plugin loading, as after the
    README's setup. Each variant has its own copy of the KB because the plugin
    set is part of the store's signature; the per-user embedding cache serves
    both, so the second copy syncs without embedding anything.
    """
    pnk = pnk_executable()
    out: dict[str, Any] = {"kb": "examples/retrieval-kb (copy)", "query": COLD_QUERY}
    base = _bytecode_env(work)
    base.pop("PINAKES_LOAD_PLUGINS", None)
    variants = {"core": {**base, "PINAKES_LOAD_PLUGINS": ""}, "plugins": base}
    for variant, env in variants.items():
        root = work / f"example-kb-{variant}"
        if not (root / "pinakes.toml").exists():
            shutil.copytree(corpus.EXAMPLE_KB, root, ignore=shutil.ignore_patterns(".pinakes"))
        t = time.perf_counter()
        subprocess.run(pnk + ["sync", "-q", "--kb", str(root)], check=True, capture_output=True, env=env)
        out[f"{variant}_sync_s"] = round(time.perf_counter() - t, 2)
        listed = subprocess.run(pnk + ["plugins", "--json"], capture_output=True, text=True, env=env)
        out[f"{variant}_plugins"] = [p["name"] for p in json.loads(listed.stdout or "[]")]
        out["loadavg_before"] = round(os.getloadavg()[0], 2)
        search_args = ["search", COLD_QUERY, "--kb", str(root)]
        times, cpu = _timed_runs(pnk + search_args, env, runs)
        out[f"{variant}_search_s"] = [round(x, 3) for x in times]
        out[f"{variant}_search_median_s"] = round(statistics.median(times), 3)
        out[f"{variant}_search_cpu_median_s"] = round(statistics.median(cpu), 3)
        phases = subprocess.run([sys.executable, "-c", PHASES_SCRIPT, str(root), COLD_QUERY],
                                check=True, capture_output=True, text=True, env=env)
        out[f"{variant}_phases_ms"] = eval(phases.stdout.strip().splitlines()[-1])  # our own dict literal
        times, _ = _timed_runs(pnk + ["--help"], env, runs)
        out[f"{variant}_help_median_s"] = round(statistics.median(times), 3)
        if variant == "core":
            nocache = {**env, "PYTHONDONTWRITEBYTECODE": "1",
                       "PYTHONPYCACHEPREFIX": str(work / "pycache-empty")}
            times, _ = _timed_runs(pnk + search_args, nocache, runs)
            out["core_search_no_bytecode_cache_median_s"] = round(statistics.median(times), 3)
            top = subprocess.run(pnk + search_args + ["--json", "-k", "1"], check=True,
                                 capture_output=True, env=env)
            out["top_hit"] = json.loads(top.stdout)["hits"][0]["path"]
            with fresh_kb(root).reader().snapshot() as conn:
                out["chunks"] = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    times, _ = _timed_runs([sys.executable, "-c", "print(1)"], base, runs)
    out["python_startup_median_s"] = round(statistics.median(times), 3)
    return out


def _timed_runs(cmd: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of ``runs`` fresh processes, after one warm-up."""
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    wall, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, check=True, capture_output=True, env=env)
        wall.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert proc.stdout.strip(), f"{cmd} printed nothing"
    return wall, cpu


SECTIONS = {
    "embed_sweep": section_embed_sweep,
    "scale": section_scale,
    "full_sync": section_full_sync,
    "resync": section_resync,
    "search": section_search,
    "cold_search": section_cold_search,
}


# --- the parent: run sections, print the table, write JSON -------------------------


class SectionFailed(Exception):
    """A benchmark section's child process failed; the other sections still run."""


#: The graph benchmarks run as scripts of their own: they need the channel plugins.
GRAPH_SCRIPTS = ("bench_ppr", "bench_graph")


def run_graph_scripts(work: Path, quick: bool) -> dict[str, Any]:
    """Run ``bench_ppr.py`` and ``bench_graph.py`` (plugins loaded) and collect their JSON."""
    env = {k: v for k, v in os.environ.items() if k != "PINAKES_LOAD_PLUGINS"}
    out: dict[str, Any] = {}
    for name in GRAPH_SCRIPTS:
        log(name)
        t = time.perf_counter()
        dest = work / f"{name}.json"
        cmd = [sys.executable, str(HERE / f"{name}.py"), "--out", str(dest)]
        if name == "bench_graph":
            cmd += ["--workdir", str(work / "graph")]
        if quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SectionFailed(f"benchmark script {name}.py failed (exit {proc.returncode})")
        out[name] = json.loads(dest.read_text(encoding="utf-8"))
        log(f"{name} done in {time.perf_counter() - t:.1f} s")
    return out


def run_child(work: Path, name: str, **kwargs: Any) -> dict[str, Any]:
    log(f"{name} {kwargs or ''}".rstrip())
    t = time.perf_counter()
    cmd = [sys.executable, str(Path(__file__).resolve()), "--section", name,
           "--workdir", str(work), "--args", json.dumps(kwargs)]
    env = dict(os.environ)
    if not WITH_PLUGINS:
        env["PINAKES_LOAD_PLUGINS"] = ""  # the core alone; --with-plugins measures the install
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SectionFailed(f"benchmark section {name} failed (exit {proc.returncode})")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["section_s"] = round(time.perf_counter() - t, 1)
    log(f"{name} done in {result['section_s']} s")
    return result


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy
    import onnxruntime

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "onnxruntime": onnxruntime.__version__,
        "sqlite": __import__("sqlite3").sqlite_version,
        "mem_total_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1),
    }


def build_rows(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Target vs measured, one row per target (docs/performance.md) this benchmark covers."""
    rows: list[dict[str, Any]] = []

    def row(what: str, target: str, measured: str, ok: bool | None) -> None:
        rows.append({"what": what, "target": target, "measured": measured,
                     "status": "n/a" if ok is None else ("pass" if ok else "MISS")})

    fs = res.get("full_sync")
    if fs:
        row(f"full sync, {fs['docs']} docs / {fs['chunks']} chunks, real embedder", "report",
            f"{fs['chunks_per_s']} chunks/s ({fs['wall_s']} s)", None)
        if fs.get("cache_vectors"):
            per = fs["cache_bytes"] / fs["cache_vectors"]
            row(f"embedding cache on disk, {fs['cache_vectors']:,} vectors", "<= 2.2 KB per vector",
                f"{per:,.0f} B per vector ({fs['cache_bytes'] / 1e6:.2f} MB incl. WAL)", per <= 2200)
        row("first sync: searchable (lexically) after", "seconds, not minutes",
            f"{fs.get('searchable_after_s', fs['wall_s'])} s of {fs['wall_s']} s "
            f"(CPU {fs.get('cpu_s', '?')} s)", None)
        share = fs["share_inside_embedder_incl_token_counting"]
        row("full sync: share of wall time inside the embedder", ">= 90%",
            f"{share * 100:.1f}% (embed() {fs['share_inside_embed'] * 100:.1f}%, "
            f"outside {fs['outside_embedder_s']} s)", share >= 0.90)
    for r in res.get("resync", []):
        n = r["docs"]
        big = n >= 10_000
        row(f"no-op re-sync, {n:,} docs, in process", "<= 1 s" if big else "(<= 1 s at 10k)",
            f"{r['noop_median_s']:.3f} s (CPU {r['noop_cpu_median_s']:.3f} s)",
            r["noop_median_s"] <= 1.0 if big else None)
        row(f"no-op `pnk sync`, {n:,} docs, process start to exit", "report",
            f"{r['noop_cli_median_s']:.3f} s", None)
        embed = statistics.median(e["embed_s"] for e in r["edit"])
        row(f"one-edit re-sync, {n:,} docs, in process",
            "<= 0.5 s + embedding" if big else "(<= 0.5 s + emb. at 10k)",
            f"{r['edit_median_s']:.3f} s (CPU {r['edit_cpu_median_s']:.3f} s; "
            f"fake embedding {embed * 1000:.0f} ms)",
            r["edit_overhead_median_s"] <= 0.5 if big else None)
    for sr in res.get("search", []):
        n = sr["chunks"]
        big = n >= 50_000
        real = sr["real_query_embedding"]
        fake = sr["fake_query_embedding"]
        row(f"warm hybrid search, {n:,} chunks, incl. real query embedding",
            "p50 <= 15 ms" if big else "report",
            f"p50 {real['p50_ms']:.1f} / p95 {real['p95_ms']:.1f} ms "
            f"(embed {real['embed_p50_ms']:.1f}, lexical {real['lexical_p50_ms']:.1f}, "
            f"dense {real['dense_p50_ms']:.1f})",
            real["p50_ms"] <= 15 if big else None)
        row(f"warm hybrid search, {n:,} chunks, no query embedding", "report",
            f"p50 {fake['p50_ms']:.1f} / p95 {fake['p95_ms']:.1f} ms (CPU p50 {fake['cpu_p50_ms']:.1f}; "
            f"lexical {fake['lexical_p50_ms']:.1f}, dense {fake['dense_p50_ms']:.1f})", None)
        scoped = sr.get("fake_query_embedding_scoped")
        if scoped:
            row(f"scoped search (--in one folder of 20), {n:,} chunks, no query embedding", "report",
                f"p50 {scoped['p50_ms']:.1f} / p95 {scoped['p95_ms']:.1f} ms (CPU p50 {scoped['cpu_p50_ms']:.1f}; "
                f"lexical {scoped['lexical_p50_ms']:.1f}, dense {scoped['dense_p50_ms']:.1f})", None)
        matrix_mb_50k = sr["vector_matrix_bytes"] / n * 50_000 / 1e6
        row(f"vectors held, {n:,} chunks (384-d int8 + scale)", "<= 20 MB per 50k",
            f"{sr['vector_bytes_per_chunk']:.0f} B/chunk incl. id: {sr['vector_mb_per_50k_chunks']:.1f} MB "
            f"per 50k ({matrix_mb_50k:.1f} MB codes + scales)",
            sr["vector_mb_per_50k_chunks"] <= 20.0)
        row(f"peak RSS, search process, {n:,} chunks", "report",
            f"{sr['peak_rss_after_load_mb']:.0f} MB after loading vectors; "
            f"{sr['peak_rss_mb']:.0f} MB with the ONNX model", None)
    sw = res.get("embed_sweep")
    if sw:
        b = sw["best"]
        detail = "; ".join(f"t{r['threads']}/b{r['batch_size']} {r['chunks_per_s']}/s "
                           f"({r['cpu_ms_per_chunk']} ms CPU)" for r in sw["runs"])
        row(f"embedder alone, {sw['chunks']} chunks ({sw['mean_tokens']} tokens)", "report (the floor)",
            f"best {b['chunks_per_s']} chunks/s (threads {b['threads']}, batch {b['batch_size']}): {detail}",
            None)
    for sr in res.get("search", []):
        if "index_db_bytes_per_chunk" in sr:
            row(f"index.db on disk, {sr['chunks']:,} chunks", "report",
                f"{sr['index_db_bytes_per_chunk']:.0f} B/chunk ({sr['index_db_bytes'] / 1e6:.1f} MB)", None)
    for pt in (res.get("scale") or {}).get("points", []):
        row(f"scale: {pt['chunks']:,} chunks", "report",
            f"sync {pt['sync_s']} s; search p50 {pt['search_p50_ms']} ms (CPU {pt['search_cpu_p50_ms']}); "
            f"RSS {pt['rss_mb']:.0f} MB; index {pt['index_db_mb']} MB", None)
    gr = res.get("graph") or {}
    ppr = [r for r in (gr.get("bench_ppr") or {}).get("results", [])
           if r["shape"] == "structural+mentions" and r["backend"] == "scipy"]
    for r in ppr:
        big = r["chunks"] >= 50_000
        row(f"default graph channel `ppr`, {r['chunks']:,} chunks (structure + mentions)",
            "<= +10 ms p50" if big else "report",
            # Judged on the queries that walk, bridges included (the others name no entity:
            # they pay bridges only, reported beside).
            f"+{r['with_bridges_walked_p50_ms']} ms p50 for the {r['walked']} of {r['queries']} "
            f"queries that walk (walk {r['walked_p50_ms']}, CPU {r['walked_cpu_p50_ms']}; bridges "
            f"CPU {r['bridges_cpu_p50_ms']}); +{r['with_bridges_p50_ms']} ms over all",
            r["with_bridges_walked_p50_ms"] <= 10 if big else None)
    for r in ((gr.get("bench_graph") or {}).get("results") or {}).values():
        big = r["chunks"] >= 50_000
        added = r["expand_p50_ms"] - r["off_p50_ms"]
        row(f"`expand` channel, {r['chunks']:,} chunks: search p50 over `off`",
            "<= +5 ms" if big else "report",
            f"+{added:.1f} ms ({r['off_p50_ms']} -> {r['expand_p50_ms']} ms; CPU "
            f"{r['off_cpu_p50_ms']} -> {r['expand_cpu_p50_ms']}); channel p50 "
            f"{r['expand_channel_p50_ms']} ms", added <= 5 if big else None)
        if "graph_index_cached_load_cpu_s" in r:
            row(f"graph arrays, {r['chunks']:,} chunks: built from SQL / read from the cache file",
                "report", f"{r['graph_index_load_s']} s / {r['graph_index_cached_load_cpu_s']} s CPU",
                None)
    cs = res.get("cold_search")
    if cs:
        row(f"cold `pnk search`, example KB ({cs['chunks']} chunks), core, median of 5", "<= 1.0 s",
            f"{cs['core_search_median_s']:.3f} s (CPU {cs['core_search_cpu_median_s']:.3f} s)",
            cs["core_search_median_s"] <= 1.0)
        plugins = ", ".join(cs.get("plugins_plugins") or []) or "none"
        row(f"cold `pnk search`, with installed plugins ({plugins})", "(<= 1.0 s)",
            f"{cs['plugins_search_median_s']:.3f} s (CPU {cs['plugins_search_cpu_median_s']:.3f} s)",
            None)
        row("cold `pnk search`, core, no bytecode cache", "report",
            f"{cs['core_search_no_bytecode_cache_median_s']:.3f} s", None)
        row("`pnk --help`: core / with plugins", "report",
            f"{cs['core_help_median_s']:.3f} s / {cs['plugins_help_median_s']:.3f} s", None)
    if fs:
        row("peak RSS, full sync (real embedder)", "report", f"{fs['peak_rss_mb']:.0f} MB", None)
    for r in res.get("resync", []):
        row(f"peak RSS, indexing + re-sync, {r['docs']:,} docs", "report", f"{r['peak_rss_mb']:.0f} MB", None)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = ("what", "target", "measured", "status")
    width = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    line = "  ".join(c.ljust(width[c]) for c in cols)
    print(line)
    print("  ".join("-" * width[c] for c in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(width[c]) for c in cols))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run: small corpora (~2 min)")
    ap.add_argument("--workdir", type=Path, help="keep corpora and indexes here (reused next run)")
    ap.add_argument("--out", type=Path, help="JSON output (default benchmarks/results/core[-quick].json)")
    ap.add_argument("--only", action="append", choices=sorted([*SECTIONS, "graph"]),
                    help="run only these sections")
    ap.add_argument("--with-plugins", action="store_true",
                    help="load installed plugins in every section (default: the core alone)")
    ap.add_argument("--section", help=argparse.SUPPRESS)
    ap.add_argument("--args", default="{}", help=argparse.SUPPRESS)
    opts = ap.parse_args()

    if opts.section:  # child mode
        result = SECTIONS[opts.section](opts.workdir, **json.loads(opts.args))
        print(json.dumps(result))
        return

    global WITH_PLUGINS
    WITH_PLUGINS = opts.with_plugins
    mode = "quick" if opts.quick else "full"
    size = SIZES[mode]
    out_path = opts.out or HERE / "results" / ("core-quick.json" if opts.quick else "core.json")
    work = opts.workdir or Path(tempfile.mkdtemp(prefix="pinakes-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    only = set(opts.only or [*SECTIONS, "graph"])
    started = time.time()
    t0 = time.perf_counter()
    res: dict[str, Any] = {}
    failed: list[str] = []

    def write_json() -> dict[str, Any]:
        # Written after every section: a section that fails (or a kill) loses only itself.
        doc = {
            "command": " ".join([".venv/bin/python benchmarks/run.py", *sys.argv[1:]]),
            "mode": mode,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "total_s": round(time.perf_counter() - t0, 1),
            "machine": machine(),
            "sizes": size,
            "plugins": "installed" if WITH_PLUGINS else "core only (PINAKES_LOAD_PLUGINS='')",
            "failed_sections": failed,
            "rows": build_rows(res),
            "results": res,
        }
        out_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = out_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out_path)
        return doc

    def section(key: str, make: Any) -> None:
        try:
            res[key] = make()
        except SectionFailed as exc:
            failed.append(key)
            res[f"{key}_error"] = str(exc)
            log(str(exc))
        write_json()

    try:
        if "full_sync" in only:
            section("full_sync", lambda: run_child(work, "full_sync", n_docs=size["sync_docs"]))
        if "resync" in only:
            section("resync", lambda: [
                run_child(work, "resync", n_docs=n, noop_runs=size["noop_runs"], edit_runs=size["edit_runs"])
                for n in size["resync_docs"]
            ])
        if "search" in only:
            section("search", lambda: [run_child(work, "search", n_docs=n, n_queries=size["queries"])
                                       for n in size["search_docs"]])
        if "cold_search" in only:
            section("cold_search", lambda: run_child(work, "cold_search", runs=size["cold_runs"]))
        if "embed_sweep" in only:
            section("embed_sweep", lambda: run_child(work, "embed_sweep", n_chunks=size["sweep_chunks"]))
        if "graph" in only:
            section("graph", lambda: run_graph_scripts(work, opts.quick))
        if "scale" in only:
            section("scale", lambda: run_child(work, "scale", docs=size["scale_docs"],
                                               n_queries=size["scale_queries"]))
        doc = write_json()
        m = doc["machine"]
        print(f"Pinakes core benchmarks ({mode}): {m['nproc']} x {m['cpu']}, Python {m['python']}, "
              f"{doc['total_s']} s")
        print_table(doc["rows"])
        try:
            shown = out_path.relative_to(REPO)
        except ValueError:
            shown = out_path
        print(f"\nwrote {shown}", flush=True)
        if failed:
            raise SystemExit(f"benchmark sections failed: {', '.join(failed)}")
    finally:
        # After the table: deleting ~30k small files takes a minute on some disks.
        if opts.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
