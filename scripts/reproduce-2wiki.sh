#!/usr/bin/env bash
# Reproduce the 2WikiMultiHopQA figures of docs/benchmarks.md from a local copy of the data.
#
#   bash scripts/reproduce-2wiki.sh PATH/TO/2wiki [OUT_DIR] [-- extra pnk eval options]
#
# PATH/TO/2wiki is a folder holding corpus.jsonl and queries.jsonl (the format
# `pnk eval --dataset` reads; golden/README.md describes it). This script fetches nothing:
# it runs `pnk eval --dataset` on that folder, offline, for the 2Wiki figures of
# docs/benchmarks.md, "The default search": the matrix of settings with the default title
# mentions (the 2Wiki columns of "The three matrices"), the same channel on structure alone
# (`--graph '!mentions'`), and with spaCy NER entities (when the `ner` plugin is installed:
# pip install 'pinakes[ner]'): the rows of "Entity edges per channel on 2Wiki".
# Each run's JSON lands in OUT_DIR (default benchmarks/results/2wiki), with an HTML report
# for the first, and a summary table of recall@2 / recall@5 per class is printed at the end.
#
# The first run turns the 6,119 passages into a cached KB and embeds them: minutes on a
# laptop (about 2.5 on an idle 2-core machine); later runs reuse it and take about a minute
# each. Options after `--` go to every `pnk eval` call, e.g. `-- --limit 100` for a quick
# look at a sample, or `-- --cache DIR` to keep the materialised KB elsewhere.
# STAGES="default structure" runs only some of the stages (default structure ner).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PNK=${PNK:-}
if [ -z "$PNK" ]; then
  if [ -x "$ROOT/.venv/bin/pnk" ]; then PNK="$ROOT/.venv/bin/pnk"; else PNK=pnk; fi
fi
PY=${PYTHON:-$(dirname "$(command -v "$PNK")")/python}
[ -x "$PY" ] || PY=python3

usage() { echo "usage: bash scripts/reproduce-2wiki.sh PATH/TO/2wiki [OUT_DIR] [-- pnk eval options]" >&2; exit 2; }
[ $# -ge 1 ] || usage
DATA=$1; shift
OUT="$ROOT/benchmarks/results/2wiki"
if [ $# -ge 1 ] && [ "$1" != "--" ]; then OUT=$1; shift; fi
if [ $# -ge 1 ]; then [ "$1" = "--" ] || usage; shift; fi
EXTRA=("$@")

for f in corpus.jsonl queries.jsonl; do
  if [ ! -f "$DATA/$f" ]; then
    echo "error: $DATA/$f not found: pass the folder that holds the dataset's corpus.jsonl and queries.jsonl" >&2
    exit 1
  fi
done
command -v "$PNK" >/dev/null || { echo "error: no pnk ($PNK): run bash scripts/setup.sh first" >&2; exit 1; }
mkdir -p "$OUT"

run() {  # name, then pnk eval arguments
  local name=$1; shift
  echo "== $name: pnk eval --dataset $DATA $* ${EXTRA[*]:-}" >&2
  nice -n 10 "$PNK" eval --dataset "$DATA" "$@" "${EXTRA[@]}" --json > "$OUT/$name.json"
}

STAGES=" ${STAGES:-default structure ner} "
want() { [[ "$STAGES" == *" $1 "* ]]; }
MATRIX='off,bm25,dense,expand,ppr,ppr+ppr_seed_kinds=tag|heading|entity+ppr_seed_match=label,ppr+ppr_centrality_power=0,ppr+final,ppr+rrf'
# The matrix was measured with title mentions: pinned with '!ner', so it reproduces whether or
# not pinakes[ner] (on by default once installed) is; the ner stage gives NER's row.
want default && run default --graph '!ner' --matrix "$MATRIX" --report "$OUT/default.html"
want structure && run structure --graph '!mentions' --graph '!ner' --matrix off,ppr
if ! want ner; then
  :
elif "$PNK" plugins --json | "$PY" -c 'import json, sys; sys.exit(0 if any(p["name"] == "ner" for p in json.load(sys.stdin)) else 1)'; then
  run ner --graph ner --matrix off,ppr
else
  echo "== ner: skipped, the ner plugin is not installed (pip install 'pinakes[ner]')" >&2
fi

"$PY" - "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
def pct(v):
    return "–" if v is None else f"{100 * v:.1f}"
print("\n| edges | setting | multi-hop R@2 / R@5 | simple R@2 / R@5 | all-R@5 multi-hop |")
print("|---|---|---|---|---|")
for name in ("default", "structure", "ner"):
    path = out / f"{name}.json"
    if not path.exists():
        continue
    run = json.loads(path.read_text())
    for s in run["settings"]:
        by = s["metrics"]["by_class"]
        m, si = by.get("multi-hop", {}), by.get("simple", {})
        print(f"| {name} | {s['name']} | {pct(m.get('recall@2'))} / {pct(m.get('recall@5'))} | "
              f"{pct(si.get('recall@2'))} / {pct(si.get('recall@5'))} | {pct(m.get('all_recall@5'))} |")
    for gate in run.get("gates") or []:
        print(f"|  | gate: {gate.get('gate')} ({gate.get('setting')}) | {gate.get('verdict')} | "
              f"{gate.get('summary', '')} | |")
print(f"\nJSON and HTML in {out}/")
PYEOF
