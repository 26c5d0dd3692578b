"""Graph benchmark: edge counts per chunk, and the extra latency of the expand channel.

One command::

    .venv/bin/python benchmarks/bench_graph.py [--quick]

builds synthetic KBs of 2k and 10k documents (10k and 50k chunks; see
``corpus.py``), adds two body links per document so authored edges exist,
syncs them with the fast ``bench-fake`` embedder (this measures Pinakes, not
the model), then reports edges per chunk (it must stay flat as the KB grows:
shared values go through hub nodes) and warm search latency with the channel
off and with ``expand``. Prints a table and writes ``benchmarks/results/graph.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import fake_embedder  # noqa: E402


def build(root: Path, n_docs: int) -> None:
    if (root / "pinakes.toml").exists():
        return
    corpus.write_kb(root, n_docs, fake_embedder.FAKE_ID)
    for i in range(n_docs):
        rel, _, _ = corpus.document(i)
        a, _, _ = corpus.document((i * 7 + 1) % n_docs)
        b, _, _ = corpus.document((i * 13 + 5) % n_docs)
        path = root / rel
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"\nSee also [{a}](/{a}) and [{b}](/{b}).\n")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(root: Path, n_queries: int) -> dict[str, object]:
    from pinakes import KB

    kb = KB.open(root)
    t = time.perf_counter()
    report = kb.sync()
    sync_s = time.perf_counter() - t
    store = kb.reader()
    conn = store.conn
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    edges = conn.execute("SELECT count(*) FROM edges").fetchone()[0]
    by_kind = dict(conn.execute("SELECT kind, count(*) FROM edges GROUP BY kind").fetchall())
    from pinakes.graph import GRAPH_CACHE, GraphIndex

    (store.state_dir / GRAPH_CACHE).unlink(missing_ok=True)
    t = time.perf_counter()
    graph = kb.graph_index(store)  # from SQL, leaving the cache file for the next process
    load_s = time.perf_counter() - t
    c0 = time.process_time()
    with store.snapshot() as snap:
        cached = GraphIndex.load(snap, store.generation, cache=store.state_dir)
    cached_cpu_s = time.process_time() - c0
    assert cached.n == graph.n and cached.n_edges == graph.n_edges
    queries = corpus.queries(n_queries)
    for q in queries[:5]:  # warm: vectors, graph arrays, caches
        kb.search(q, channel="expand")
    out: dict[str, object] = {
        "documents": conn.execute("SELECT count(*) FROM documents").fetchone()[0],
        "chunks": chunks,
        "edges": edges,
        "edges_per_chunk": round(edges / max(1, chunks), 3),
        "edges_by_kind": by_kind,
        "graph_nodes": graph.n,
        "graph_index_load_s": round(load_s, 3),
        "graph_index_cached_load_cpu_s": round(cached_cpu_s, 3),
        "graph_index_mb": round((graph.nbr.nbytes + graph.weight.nbytes + graph.edge_id.nbytes
                                 + graph.edge_kind.nbytes + graph.indptr.nbytes) / 1e6, 1),
        "sync_s": round(sync_s, 2) if (report.added or report.rebuilt) else None,
    }
    for channel in ("off", "expand"):
        totals, graph_ms, cpu = [], [], []
        for q in queries:
            c0 = time.process_time()
            r = kb.search(q, channel=channel)
            cpu.append((time.process_time() - c0) * 1000)
            totals.append(r.timings_ms["total"] - r.timings_ms.get("embed", 0.0))
            graph_ms.append(r.timings_ms.get("graph", 0.0))
        out[f"{channel}_p50_ms"] = round(statistics.median(totals), 2)
        out[f"{channel}_p95_ms"] = round(pct(totals, 0.95), 2)
        # CPU of the whole search (the fake query embedding included; it is ~0): on a
        # shared machine the wall figures above include waiting for a core.
        out[f"{channel}_cpu_p50_ms"] = round(statistics.median(cpu), 2)
        if channel == "expand":
            out["expand_channel_p50_ms"] = round(statistics.median(graph_ms), 2)
            out["expand_channel_p95_ms"] = round(pct(graph_ms, 0.95), 2)
    out["loadavg_1m"] = round(os.getloadavg()[0], 2)
    kb.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 2k documents, fewer queries")
    ap.add_argument("--workdir", default="/tmp/pinakes-bench-graph")
    ap.add_argument("--out", type=Path, help="JSON output (default benchmarks/results/graph[-quick].json)")
    args = ap.parse_args()
    fake_embedder.install()
    sizes = (1000, 2000) if args.quick else (2000, 10000)
    n_queries = 30 if args.quick else 100
    work = Path(args.workdir)
    results = {}
    for n in sizes:
        root = work / f"graph-{n}"
        print(f"building and syncing {n} documents in {root} ...", file=sys.stderr)
        build(root, n)
        results[str(n)] = measure(root, n_queries)
    print(f"\n{'docs':>6} {'chunks':>7} {'edges':>8} {'edges/chunk':>11} "
          f"{'off p50':>8} {'expand p50':>10} {'channel p50/p95':>16} {'CPU off/expand':>15} "
          f"{'graph MB':>8} {'load':>5}")
    for n, r in results.items():
        print(f"{n:>6} {r['chunks']:>7} {r['edges']:>8} {r['edges_per_chunk']:>11} "
              f"{r['off_p50_ms']:>8} {r['expand_p50_ms']:>10} "
              f"{str(r['expand_channel_p50_ms']) + ' / ' + str(r['expand_channel_p95_ms']):>16} "
              f"{str(r['off_cpu_p50_ms']) + ' / ' + str(r['expand_cpu_p50_ms']):>15} "
              f"{r['graph_index_mb']:>8} {r['loadavg_1m']:>5}")
    out = args.out or HERE / "results" / ("graph-quick.json" if args.quick else "graph.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "results": results}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
