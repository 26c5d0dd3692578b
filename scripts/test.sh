#!/usr/bin/env bash
# Set everything up and run the whole test suite (lint first).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -q "$@"
