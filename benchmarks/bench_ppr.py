#!/usr/bin/env python
"""The PPR channel's cost: one command, a printed table and ``benchmarks/results/ppr.json``.

    .venv/bin/python benchmarks/bench_ppr.py            # 10k and 50k chunks (~2-4 min)
    .venv/bin/python benchmarks/bench_ppr.py --quick    # 10k chunks only

For each graph size and shape, and for each matvec backend (``scipy``: a CSR
product; ``numpy``: a gather plus ``np.bincount`` scatter), it reports:

* the graph: nodes and edges (structural edges from the real structural
  deriver over synthetic documents shaped like ``corpus.py``'s; optionally
  title-mention ``mentions`` edges shaped like the mentions plugin's);
* the operator: build time and bytes held; the seed label index's build time;
* one matvec (and the ``np.add.at`` variant, for the record);
* the whole channel per query (seed matching, reset vector, power iteration to
  the default L1 tolerance 1e-4, top-100 selection): p50 / p95 ms, iterations to
  converge, and the iterations a 1e-6 tolerance would take.

Documents are synthetic but shaped like the benchmark corpus: 5 chunks each
(an H1 intro then H2/H3 sections with headings from the example KB), two
tags from the example KB's vocabulary, 20 folders, and one authored link per
document on average. The ``mentions`` shape adds one entity per document
(its title), mentioned by every chunk of that document and by about two
chunks elsewhere (Zipf popularity), with the mentions plugin's hub cap
(max(12, 0.2% of documents)) and count/mentions-in-chunk weights. Query
cosines are drawn like MiniLM's (mostly 0-0.3, a few high); each query names
two labels of the graph so that seed matching does real work.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

from pinakes.graph import (  # noqa: E402
    GRAPH_SCHEMA,
    ChunkView,
    DocView,
    Edge,
    GraphIndex,
    GraphWriter,
    Node,
    chunk_node,
    doc_node,
)

CHUNKS_PER_DOC = 5
TOLERANCE = float(os.environ.get("PPR_TOLERANCE", "0.003"))  # the default ppr_tolerance
STRICT = 1e-6  # iterations reported for this one too
TARGET_MS = 30.0


def build_graph(n_docs: int, mentions: bool, seed: int = 0) -> tuple[GraphIndex, sqlite3.Connection,
                                                                       dict[str, float]]:
    """A graph store of ``n_docs`` synthetic documents, loaded as a :class:`GraphIndex`."""
    from pinakes_structural import StructuralDeriver

    rng = random.Random(seed)
    pool = corpus.pool()
    conn = sqlite3.connect(":memory:")
    conn.executescript(GRAPH_SCHEMA)
    writer = GraphWriter(conn)
    deriver = StructuralDeriver()
    t0 = time.perf_counter()
    titles = []
    chunk_id = 0
    docs: list[DocView] = []
    for i in range(n_docs):
        title = f"{rng.choice(pool.titles)} {rng.choice(pool.headings)} {i}"
        titles.append(title)
        doc = DocView(i + 1, f"D{i:025d}", f"topic-{i % corpus.FOLDERS:02d}/note-{i:05d}.md",
                      title, sorted(rng.sample(pool.words, 2)), {})
        h2 = rng.choice(pool.headings)
        path: tuple[str, ...] = (title,)
        for k in range(CHUNKS_PER_DOC):
            if k:
                if k > 1 and rng.random() < 0.3:
                    path = (title, h2, rng.choice(pool.headings))
                else:
                    h2 = rng.choice(pool.headings)
                    path = (title, h2)
            chunk_id += 1
            doc.chunks.append(ChunkView(chunk_id, k, path, ""))
        docs.append(doc)
    _bridge_schema(conn, docs)  # the structural deriver reads documents (dotted hierarchies)
    for doc in docs:
        writer.add(deriver.derive(doc, conn), "structural", doc.key)
        other = rng.randrange(n_docs) + 1
        if other != doc.key and rng.random() < 0.7:
            writer.add([Edge(doc.node, doc_node(other), "authored", 2.0)], "structural", doc.key)
    if mentions:
        cap = max(12, int(0.002 * n_docs))
        popularity = np.random.default_rng(seed).zipf(1.6, size=n_docs * CHUNKS_PER_DOC * 8)
        named: dict[int, list[int]] = {}  # chunk -> entity (doc index) it names
        for doc in docs:
            for c in doc.chunks:
                named.setdefault(c.id, []).append(doc.key - 1)
        j = 0
        for doc in docs:
            for c in doc.chunks:
                for _ in range(int(rng.random() * 8)):  # ~3.5 others per chunk on average
                    named[c.id].append(int((popularity[j] * 7919 + doc.key) % n_docs))
                    j += 1
        df: dict[int, int] = {}
        for _cid, ents in named.items():
            for e in set(ents):
                df[e] = df.get(e, 0) + 1
        for doc in docs:
            edges = []
            for c in doc.chunks:
                ents = [e for e in named[c.id] if df[e] <= cap * CHUNKS_PER_DOC]
                for e in sorted(set(ents)):
                    w = ents.count(e) / len(ents)
                    edges.append(Edge(chunk_node(c.id), Node("entity", f"e{e}", titles[e]),
                                      "mentions", w))
            writer.add(edges, "mentions", doc.key)
    writer.finish()
    _bridge_tables(conn, docs, rng, pool, titles if mentions else None)
    t1 = time.perf_counter()
    graph = GraphIndex.load(conn, 1)
    t2 = time.perf_counter()
    return graph, conn, {"derive_s": round(t1 - t0, 2), "load_index_s": round(t2 - t1, 2)}


def _bridge_schema(conn: sqlite3.Connection, docs: list[DocView]) -> None:
    """The store tables beside the graph that derivers and bridges read, with the documents."""
    conn.executescript("""
        CREATE TABLE documents (doc INTEGER PRIMARY KEY, ulid TEXT, title TEXT, path TEXT);
        CREATE INDEX documents_ulid ON documents(ulid);
        CREATE INDEX documents_path ON documents(path);
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, doc INTEGER, ordinal INTEGER, heading_path TEXT);
        CREATE INDEX chunks_doc ON chunks(doc, ordinal);
        CREATE TABLE links (id INTEGER PRIMARY KEY, src_doc INTEGER, origin TEXT, raw TEXT, rel TEXT,
            form TEXT, label TEXT, context TEXT, chunk INTEGER, dst_ulid TEXT, dst_kb TEXT DEFAULT '',
            provenance TEXT DEFAULT '');
        CREATE INDEX links_src ON links(src_doc);
        CREATE INDEX links_dst ON links(dst_ulid);
        CREATE TABLE entity_names (key TEXT, doc INTEGER, source TEXT, label TEXT);
        CREATE INDEX entity_names_key ON entity_names(key);
        CREATE INDEX entity_names_doc ON entity_names(doc);
        CREATE TABLE entity_context (doc INTEGER, chunk INTEGER, key TEXT, words TEXT);
        CREATE INDEX entity_context_doc ON entity_context(doc);
        CREATE INDEX entity_context_doc_key ON entity_context(doc, key);
    """)
    conn.executemany("INSERT INTO documents VALUES (?, ?, ?, ?)",
                     [(d.key, d.ulid, d.title, d.path) for d in docs])
    conn.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?)", [
        (c.id, d.key, c.ordinal, json.dumps(list(c.heading_path))) for d in docs for c in d.chunks])


def _bridge_tables(conn: sqlite3.Connection, docs: list[DocView], rng: random.Random, pool: Any,
                   titles: list[str] | None) -> None:
    """The rows bridges read (documents, chunks, links with their context, title owners).

    Shaped like a synced KB's: every authored edge of the graph is a body link in
    its source's first section, with a label and up to 24 context words; each
    entity's owner is its document; each mention of a title has context words.
    """
    ulid = {d.key: d.ulid for d in docs}
    words = pool.words
    rows = []
    for src, dst in conn.execute(
            "SELECT a.key, b.key FROM edges e JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst "
            "WHERE e.kind = 'authored'").fetchall():
        context = " ".join(rng.sample(words, min(len(words), 24)))
        rows.append((int(src), "reverse-scan", "x.md", "links-to", "wikilink", "", context, 0,
                     ulid[int(dst)]))
    conn.executemany("INSERT INTO links (src_doc, origin, raw, rel, form, label, context, chunk, "
                     "dst_ulid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    if titles is not None:
        conn.executemany("INSERT INTO entity_names VALUES (?, ?, 'title', ?)",
                         [(f"e{i}", i + 1, t) for i, t in enumerate(titles)])
        ctx = []
        for r in conn.execute(
                "SELECT c.key, n.key FROM edges e JOIN nodes c ON c.id = e.src JOIN nodes n ON n.id = e.dst "
                "WHERE e.kind = 'mentions'"):
            chunk = int(r[0])
            ctx.append((chunk, r[1], " ".join(rng.sample(words, 4))))
        doc_of = {c.id: d.key for d in docs for c in d.chunks}
        conn.executemany("INSERT INTO entity_context VALUES (?, ?, ?, ?)",
                         [(doc_of[c], c, k, w) for c, k, w in ctx])


def queries(graph: GraphIndex, conn: sqlite3.Connection, n: int, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """``n`` (query text, cosine vector over chunk ids) pairs."""
    rng = np.random.default_rng(seed)
    labels = [r[0] for r in conn.execute(
        "SELECT label FROM nodes WHERE kind IN ('heading', 'entity', 'tag') AND label != ''")]
    n_chunks = int((graph.chunk_of >= 0).sum())
    out = []
    for _ in range(n):
        cos = np.clip(rng.normal(0.12, 0.08, n_chunks), -0.2, 0.95).astype(np.float32)
        top = rng.choice(n_chunks, 20, replace=False)
        cos[top] = rng.uniform(0.35, 0.7, 20)
        words = " ".join(labels[int(i)] for i in rng.choice(len(labels), 2))
        out.append((f"what does {words} say about it", cos))
    return out


def timed(fn: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


def measure(graph: GraphIndex, conn: sqlite3.Connection, backend: str, qs: list[tuple[str, np.ndarray]],
            ) -> dict[str, Any]:
    import pinakes_ppr as P

    t = time.perf_counter()
    op = P.build_operator(graph, backend)
    build_ms = (time.perf_counter() - t) * 1000
    settings = P.Settings(tolerance=TOLERANCE)
    dense_ids = np.sort(op.chunk_ids)
    t = time.perf_counter()
    op.name_index(conn, graph, settings.seed_kinds)
    seed_ms = (time.perf_counter() - t) * 1000
    x = np.full(op.n, 1.0 / max(1, op.n))
    matvec = timed(lambda: op.matvec(x), 30)
    rows = op.rows if op.rows is not None else np.repeat(
        np.arange(op.n, dtype=np.int32), np.diff(op.indptr))

    def add_at() -> None:
        y = np.zeros(op.n)
        np.add.at(y, rows, op.coef * x[op.cols])

    add_at_ms = timed(add_at, 5)
    def fused_of(cos: np.ndarray) -> list[tuple[int, float]]:
        """A stand-in for the hybrid's fused list (the default path blends with it)."""
        top = np.argsort(-cos)[:100]
        return [(int(dense_ids[i]), float(cos[i])) for i in top]

    for q, cos in qs[:3]:  # warm up (first gathers, the dense-row map, the baseline walk)
        P.run_ppr(op, graph, settings, query=q, dense_ids=dense_ids, cosines=cos, conn=conn,
                  fused=fused_of(cos))
    channel = P.PPRChannel()
    t = time.perf_counter()
    P.doc_graph(conn, graph)  # built once per generation, like the operator
    bridges_build_ms = (time.perf_counter() - t) * 1000

    def bridged(q: str, cos: np.ndarray, walked: list[tuple[int, float]],
                fused: list[tuple[int, float]]) -> list[tuple[int, float]]:
        ctx = SimpleNamespace(query=q, cosines=cos, dense=SimpleNamespace(ids=dense_ids),
                              store=SimpleNamespace(conn=conn),
                              term_idf={w: 5.0 for w in q.split()[2:-3]})
        return channel._bridged(op, graph, settings, ctx, walked, fused)

    lat, cpu, iters, seeds, total, total_cpu, bridge_cpu, lifted = [], [], [], [], [], [], [], 0
    for q, cos in qs:
        trace = P.Trace()
        fused = fused_of(cos)
        w0, c0 = time.perf_counter(), time.process_time()
        walked = P.run_ppr(op, graph, settings, query=q, dense_ids=dense_ids, cosines=cos,
                           conn=conn, limit=100, trace=trace, fused=fused)
        cpu.append((time.process_time() - c0) * 1000)
        c1 = time.process_time()
        bridged(q, cos, walked, fused)
        bridge_cpu.append((time.process_time() - c1) * 1000)
        total.append((time.perf_counter() - w0) * 1000)
        total_cpu.append((time.process_time() - c0) * 1000)
        lifted += bool(channel.last.lifts)
        lat.append(trace.ms)
        iters.append(trace.iterations)
        seeds.append(len(trace.seeds))
    strict = P.Settings(tolerance=STRICT)
    strict_iters = []
    for q, cos in qs[:10]:
        trace = P.Trace()
        P.run_ppr(op, graph, strict, query=q, dense_ids=dense_ids, cosines=cos, conn=conn,
                  trace=trace)
        strict_iters.append(trace.iterations)
    return {
        "backend": backend, "dtype": str(getattr(op, "dtype", "float64")),
        "operator_build_ms": round(build_ms, 1),
        "operator_mb": round(op.nbytes / 2**20, 2), "seed_index_build_ms": round(seed_ms, 1),
        "matvec_ms": round(statistics.median(matvec), 3),
        "matvec_add_at_ms": round(statistics.median(add_at_ms), 3),
        "channel_p50_ms": round(pct(lat, 50), 2), "channel_p95_ms": round(pct(lat, 95), 2),
        "channel_cpu_p50_ms": round(pct(cpu, 50), 2),
        # The whole channel as a search runs it: the walk (when a name seeds it), then bridges
        # (on every query: over the walk's ranking, or the hybrid's when nothing walked).
        "with_bridges_p50_ms": round(pct(total, 50), 2),
        "with_bridges_cpu_p50_ms": round(pct(total_cpu, 50), 2),
        "with_bridges_walked_p50_ms": round(pct(
            [t for t, i in zip(total, iters, strict=True) if i] or [0.0], 50), 2),
        "bridges_cpu_p50_ms": round(pct(bridge_cpu, 50), 3),
        "bridges_build_ms": round(bridges_build_ms, 1), "bridged_queries": lifted,
        # The queries that named a seed and walked (the others cost ~0: no seed, no walk).
        "queries": len(qs), "walked": sum(1 for i in iters if i),
        "walked_p50_ms": round(pct([t for t, i in zip(lat, iters, strict=True) if i] or [0.0], 50), 2),
        "walked_cpu_p50_ms": round(pct([c for c, i in zip(cpu, iters, strict=True) if i] or [0.0], 50), 2),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "iterations_median": int(statistics.median(iters)), "iterations_max": max(iters),
        "seed_nodes_median": int(statistics.median(seeds)),
        "iterations_at_1e-6_median": int(statistics.median(strict_iters)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10k chunks only")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ppr.json")
    args = ap.parse_args()
    started = time.time()
    sizes = [2000] if args.quick else [2000, 10000]
    results = []
    for n_docs in sizes:
        for shape in ("structural", "structural+mentions"):
            graph, conn, built = build_graph(n_docs, mentions=shape.endswith("mentions"))
            qs = queries(graph, conn, args.queries)
            info = {"chunks": n_docs * CHUNKS_PER_DOC, "docs": n_docs, "shape": shape,
                    "nodes": graph.n, "edges": graph.n_edges, **built}
            for backend in ("scipy", "numpy"):
                row = {**info, **measure(graph, conn, backend, qs)}
                results.append(row)
                print(f"  {row['chunks']:>6} chunks {shape:<20} {backend:<6} "
                      f"channel p50 {row['channel_p50_ms']:7.2f} ms", file=sys.stderr)
            conn.close()
    header = ("chunks", "shape", "nodes", "edges", "backend", "dtype", "build ms", "MB",
              "matvec ms", "add.at ms", "p50 ms", "p95 ms", "CPU p50", "walked p50 / CPU",
              "+bridges p50 / CPU (walked)", "bridges CPU", "iters", "iters@1e-6", "load")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in results:
        print(" | ".join(str(v) for v in (
            r["chunks"], r["shape"], r["nodes"], r["edges"], r["backend"], r["dtype"],
            r["operator_build_ms"], r["operator_mb"], r["matvec_ms"], r["matvec_add_at_ms"],
            r["channel_p50_ms"], r["channel_p95_ms"], r["channel_cpu_p50_ms"],
            f"{r['walked_p50_ms']} / {r['walked_cpu_p50_ms']} ({r['walked']} of {r['queries']})",
            f"{r['with_bridges_p50_ms']} / {r['with_bridges_cpu_p50_ms']} "
            f"({r['with_bridges_walked_p50_ms']})",
            f"{r['bridges_cpu_p50_ms']} ({r['bridged_queries']} lifted)",
            f"{r['iterations_median']} (max {r['iterations_max']})",
            r["iterations_at_1e-6_median"], r["loadavg_1m"])))
    big = [r for r in results if r["chunks"] == max(x["chunks"] for x in results)
           and r["backend"] == "scipy"]
    payload = {
        "command": ".venv/bin/python benchmarks/bench_ppr.py" + (" --quick" if args.quick else ""),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "total_s": round(time.time() - started, 1),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "scipy": _scipy_version(),
                    "loadavg_1m_at_start": round(os.getloadavg()[0], 2)},
        "tolerance": TOLERANCE, "target_ms": TARGET_MS,
        "meets_target": all(r["channel_p50_ms"] <= TARGET_MS for r in big),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\nwritten to {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")


def _scipy_version() -> str | None:
    try:
        import scipy
    except ImportError:
        return None
    return str(scipy.__version__)


if __name__ == "__main__":
    main()
