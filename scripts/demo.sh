#!/usr/bin/env bash
# Set everything up, index the bundled example KB and run a search on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
kb=examples/retrieval-kb
query="why fuse keyword and embedding rankings by rank instead of score"
.venv/bin/pnk sync --kb "$kb"
echo
echo "Searching $kb (notes on search and retrieval) for: \"$query\""
echo "Each hit is a document at its best-matching section (title, path:line, heading path, snippet),"
echo "its fused score and rank in each list (lexical = BM25, dense = embeddings, graph = the walk)"
echo "and its other matching sections; the last line is the calibrated confidence that they hold the answer."
echo
.venv/bin/pnk search --kb "$kb" "$query" -k 5
echo
echo "Try your own: .venv/bin/pnk search --kb $kb \"...\"   (or pnk init your own folder: README.md)"
echo "Narrow it to part of the KB with --in dense or --tag rag (pnk status --kb $kb lists its folders and tags)."
