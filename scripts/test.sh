#!/usr/bin/env bash
# Set everything up, then run ruff and the whole test suite, in parallel.
#
#   bash scripts/test.sh             # everything: what .ci/run runs
#   bash scripts/test.sh --quick     # without the tests marked slow, while you iterate
#   bash scripts/test.sh -k ledger   # any other argument goes to pytest
#
# The suite runs in PINAKES_TEST_WORKERS processes (pytest-xdist; default: two per CPU
# core, since many tests wait on subprocesses and servers rather than compute). What
# makes a test safe to run beside the others is in tests/conftest.py.
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
args=()
for a in "$@"; do
  if [ "$a" = "--quick" ]; then select=(-m "not slow"); else args+=("$a"); fi
done
bash scripts/setup.sh
.venv/bin/ruff check .
workers=${PINAKES_TEST_WORKERS:-$(.venv/bin/python -c 'import os; print(max(2, 2 * (os.cpu_count() or 1)))')}
.venv/bin/python -m pytest -q -n "$workers" --dist worksteal "${select[@]}" "${args[@]}"
