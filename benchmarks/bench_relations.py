#!/usr/bin/env python
"""What relation-aware mention weights (``ppr_relation_weight``) cost the ppr channel per query.

    .venv/bin/python benchmarks/bench_relations.py            # 10k and 50k chunks
    .venv/bin/python benchmarks/bench_relations.py --quick    # 10k chunks only

The graph is ``bench_ppr.py``'s structural + title-mentions shape. Every
mention edge gets a synthetic context (the ``entity_context`` rows the mentions
deriver writes; real ones exist only for other documents' names): one to six
words drawn from a 300-word vocabulary with Zipf popularity, so a few words
("film") are next to many mentions and most to few. Each query names two entity
labels (both seed) and two context words. Reported: the relation index's build
time (once per graph generation), the channel's p50 / p95 per query with the
weights off and at ``--weight`` (20) / ``--hops`` (1), the defaults, and how many
mention edges a query reweights.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_ppr  # noqa: E402

VOCAB = 300


def add_contexts(conn, seed: int = 0) -> list[str]:  # type: ignore[no-untyped-def]
    """Write synthetic ``entity_context`` rows for every chunk → foreign entity edge."""
    rng = np.random.default_rng(seed)
    vocab = [f"rel{i}word" for i in range(VOCAB)]
    conn.execute("CREATE TABLE IF NOT EXISTS entity_context "
                 "(doc INTEGER, chunk INTEGER, key TEXT, words TEXT)")
    rows = conn.execute(
        "SELECT c.key, e.key FROM edges x JOIN nodes c ON c.id = x.src JOIN nodes e ON e.id = x.dst "
        "WHERE x.kind = 'mentions' AND c.kind = 'chunk' AND e.kind = 'entity'").fetchall()
    out = []
    for chunk, key in rows:
        n = int(rng.integers(1, 7))
        picks = np.minimum(rng.zipf(1.3, size=n), VOCAB) - 1
        out.append((0, int(chunk), key, " ".join(vocab[int(p)] for p in picks)))
    conn.executemany("INSERT INTO entity_context VALUES (?,?,?,?)", out)
    return vocab


def main() -> None:
    import pinakes_ppr as P
    from pinakes_ppr.relations import RelationIndex

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10k chunks only")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--weight", type=float, default=20.0)
    ap.add_argument("--hops", type=int, default=1)
    args = ap.parse_args()
    sizes = [2000] if args.quick else [2000, 10000]
    print("chunks | mention edges | contexts | index build ms | p50 off | p50 on | p95 off | "
          "p95 on | edges reweighted (median)")
    print(" | ".join(["---"] * 9))
    for n_docs in sizes:
        graph, conn, _ = bench_ppr.build_graph(n_docs, mentions=True)
        vocab = add_contexts(conn)
        rng = np.random.default_rng(1)
        labels = [r[0] for r in conn.execute("SELECT label FROM nodes WHERE kind = 'entity'")]
        qs = []
        for _, cos in bench_ppr.queries(graph, conn, args.queries):
            a, b = (labels[int(i)] for i in rng.choice(len(labels), 2))
            w1 = vocab[min(int(rng.zipf(1.3)), VOCAB) - 1]
            w2 = vocab[int(rng.integers(0, VOCAB))]
            qs.append((f"what {w1} of {a} has the {w2} of {b}", cos))
        op = P.build_operator(graph, "scipy")
        dense_ids = np.sort(op.chunk_ids)
        t = time.perf_counter()
        index = RelationIndex.build(conn, graph)
        build_ms = (time.perf_counter() - t) * 1000
        P.relations._INDEXES[graph] = index
        row = [n_docs * bench_ppr.CHUNKS_PER_DOC,
               int(conn.execute("SELECT count(*) FROM edges WHERE kind = 'mentions'").fetchone()[0]),
               index.size, round(build_ms, 1)]
        lat: dict[float, list[float]] = {}
        touched: list[int] = []
        for weight in (0.0, args.weight):
            settings = P.Settings(relation_weight=weight, relation_hops=args.hops)
            for q, cos in qs[:3]:
                P.run_ppr(op, graph, settings, query=q, dense_ids=dense_ids, cosines=cos, conn=conn)
            lat[weight] = []
            for q, cos in qs:
                trace = P.Trace()
                top = np.argsort(-cos)[:100]
                P.run_ppr(op, graph, settings, query=q, dense_ids=dense_ids, cosines=cos, conn=conn,
                          trace=trace, fused=[(int(dense_ids[i]), float(cos[i])) for i in top])
                lat[weight].append(trace.ms)
                if weight:
                    touched.append(trace.relation_edges)
        off, on = lat[0.0], lat[args.weight]
        row += [round(bench_ppr.pct(off, 50), 2), round(bench_ppr.pct(on, 50), 2),
                round(bench_ppr.pct(off, 95), 2), round(bench_ppr.pct(on, 95), 2),
                int(statistics.median(touched))]
        print(" | ".join(str(v) for v in row))
        conn.close()


if __name__ == "__main__":
    main()
