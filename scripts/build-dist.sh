#!/usr/bin/env bash
# Build the release: a wheel and an sdist of the core and of every plugin under plugins/
# (each plugin is its own distribution), all of one version, into dist/ (or $DIST_DIR).
#
#   bash scripts/build-dist.sh
#   pip install --find-links dist 'pinakes[graph]'      # or [ner], [claudekb], [deep], [all]
#
# The same files are what a release uploads to an index. Each project is built by its
# PEP 517 backend from its sdist (python -m build), so a file missing from an sdist fails
# here and not on a user's machine. Extra arguments go to `python -m build`; the test
# suite passes --no-isolation to reuse the venv's setuptools instead of fetching it.
# Needs the development venv (bash scripts/setup.sh) or PYTHON pointing at an interpreter
# that has the `build` package.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${DIST_DIR:-dist}
if ! "$PY" -c "import build" 2>/dev/null; then
  echo "error: $PY has no 'build' package: run bash scripts/setup.sh (or pip install build)" >&2
  exit 1
fi
"$PY" scripts/versions.py >/dev/null   # refuses (and names the file) when versions differ
mkdir -p "$OUT"
projects=(.)
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && projects+=("${p%/}")
done
for p in "${projects[@]}"; do
  name=$("$PY" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["name"])' "$p/pyproject.toml")
  echo "building $name ($p)" >&2
  if ! log=$("$PY" -m build --outdir "$OUT" "$@" "$p" 2>&1); then
    echo "$log" >&2
    echo "error: building $name failed" >&2
    exit 1
  fi
  rm -rf "$p/build"   # setuptools' scratch folder (git-ignored, but stale files linger)
done
version=$("$PY" scripts/versions.py)
echo "built ${#projects[@]} distributions, version $version, into $OUT/:" >&2
ls "$OUT" | grep -F -- "-$version" >&2
