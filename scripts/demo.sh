#!/usr/bin/env bash
# Set everything up, index the bundled example KB and run a search on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/pnk sync --kb examples/retrieval-kb
.venv/bin/pnk search --kb examples/retrieval-kb "why fuse keyword and embedding rankings by rank instead of score" -k 5
