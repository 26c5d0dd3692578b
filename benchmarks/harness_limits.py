"""Limits harness: ``pnk sync`` of 100,000 small files in bounded memory (peak RSS reported).

    python benchmarks/harness_limits.py                  # 100,000 files (tens of minutes on 2 cores)
    python benchmarks/harness_limits.py --files 10000    # a quicker look

The files are small notes in 100 folders. Their bodies come from a pool of
``--distinct`` texts (default 400), so the real embedder embeds only that many
chunks: what is measured is the walk, the parse, the store and the embedding
batches at 100,000 documents, not hours of embedding. Memory does not depend on
how many chunks are embedded (batches are fixed-size and cached as they go).
Runs a second, no-op sync too, and prints a JSON report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PNK = str(Path(sys.executable).parent / "pnk")
WORDS = """lantern harbour keeper beacon tide fog signal prism lens rotation gallery tower storm
gale reef channel buoy chart compass sextant logbook wick kerosene clockwork shutter foghorn""".split()


def generate(root: Path, files: int, distinct: int, seed: int) -> None:
    rng = random.Random(seed)
    pool = [" ".join(rng.choice(WORDS) for _ in range(40)) + "." for _ in range(distinct)]
    root.mkdir(parents=True)
    (root / "pinakes.toml").write_text('[kb]\nname = "limits"\n', encoding="utf-8")
    for i in range(files):
        folder = root / f"f{i % 100:02d}"
        folder.mkdir(exist_ok=True)
        k = i % distinct
        (folder / f"n{i:06d}.md").write_text(f"# Note {k}\n\n{pool[k]}\n", encoding="utf-8")


def timed_sync(root: Path, env: dict[str, str]) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    run = subprocess.run([PNK, "sync", "--kb", str(root), "--json"], env=env, capture_output=True,
                         text=True)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if run.returncode != 0:
        raise SystemExit(f"pnk sync failed: {run.stderr.strip()[-500:]}")
    report = json.loads(run.stdout)
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(max(peak, before) / 1024, 1),
            "added": len(report["added"]), "unchanged": report["unchanged"],
            "chunks_embedded": report["chunks_embedded"], "problems": len(report["problems"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--distinct", type=int, default=400)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pnk-limits-", dir=args.workdir))
    try:
        root = tmp / "kb"
        t0 = time.perf_counter()
        generate(root, args.files, args.distinct, args.seed)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PINAKES_")}
        env["PINAKES_USER_PATH"] = str(tmp / "user")
        env["PINAKES_CACHE_DIR"] = str(tmp / "cache")
        out = {"files": args.files, "distinct_texts": args.distinct,
               "generate_seconds": round(time.perf_counter() - t0, 1)}
        out["first_sync"] = timed_sync(root, env)
        out["noop_sync"] = timed_sync(root, env)
        store = root / ".pinakes"
        out["store_mb"] = round(sum(f.stat().st_size for f in store.iterdir() if f.is_file()) / 1048576, 1)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
