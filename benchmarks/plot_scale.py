#!/usr/bin/env python
"""Plot the scale curve of a ``benchmarks/run.py`` result (its ``scale`` section).

    python benchmarks/plot_scale.py benchmarks/results/scale.json docs/performance-scale.png

Needs matplotlib, which Pinakes does not depend on: run it with any Python that
has it. Without matplotlib it prints the same numbers as a text table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def points(path: Path) -> list[dict]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    res = doc.get("results", doc)
    return list((res.get("scale") or {}).get("points", []))


def table(rows: list[dict]) -> str:
    head = f"{'chunks':>8} {'sync s':>8} {'search p50 ms':>14} {'CPU p50 ms':>11} {'RSS MB':>7} {'index MB':>9}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['chunks']:>8,} {r['sync_s']!s:>8} {r['search_p50_ms']:>14} "
                     f"{r['search_cpu_p50_ms']:>11} {r['rss_mb']:>7.0f} {r['index_db_mb']:>9}")
    return "\n".join(lines)


def main() -> None:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/scale.json")
    dst = Path(sys.argv[2] if len(sys.argv) > 2 else "docs/performance-scale.png")
    rows = points(src)
    if not rows:
        raise SystemExit(f"{src}: no scale section")
    print(table(rows))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: text table only")
        return
    x = [r["chunks"] for r in rows]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    series = [
        ("first sync (s, fake embedder)", [r["sync_s"] for r in rows],
         ("CPU", [r["sync_cpu_s"] for r in rows])),
        ("warm search p50 (ms)", [r["search_p50_ms"] for r in rows],
         ("CPU p50", [r["search_cpu_p50_ms"] for r in rows])),
        ("RSS of the search process (MB)", [r["rss_mb"] for r in rows], None),
        ("index.db (MB)", [r["index_db_mb"] for r in rows], None),
    ]
    for ax, (title, ys, extra) in zip(axes, series, strict=True):
        ax.plot(x, ys, marker="o", label="wall" if extra else None)
        if extra:
            ax.plot(x, extra[1], marker="s", linestyle="--", label=extra[0])
            ax.legend(fontsize=8)
        ax.set_xscale("log")
        ax.set_yscale("log")  # log-log: a straight line of slope 1 is linear growth
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("chunks", fontsize=8)
        ax.grid(True, alpha=0.3)
    load = max(r.get("loadavg", 0) for r in rows)
    fig.suptitle(f"Pinakes scale curve (2 cores, load average up to {load:.1f})", fontsize=10)
    fig.tight_layout()
    dst.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
