#!/usr/bin/env bash
# Create .venv/ at the repo root and install Pinakes with every plugin under plugins/ (editable).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
args=(-e ".[test]")
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && args+=(-e "$p")
done
.venv/bin/python -m pip install --quiet "${args[@]}"
