#!/usr/bin/env bash
# Create .venv/ at the repo root and install Pinakes with every plugin under plugins/ (editable).
#
# The install is editable, so code changes need no reinstall; only a change to a
# pyproject.toml (dependencies, entry points, a new plugin) does. A stamp of those files
# in .venv/ lets a second run skip pip (about 2 minutes here) when none changed.
# PINAKES_SETUP_FORCE=1 reinstalls anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
projects=(pyproject.toml)
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && projects+=("$p/pyproject.toml")
done
stamp=$(.venv/bin/python - "${projects[@]}" <<'PY'
import hashlib, sys
h = hashlib.sha256(sys.version.encode())
for path in sys.argv[1:]:
    h.update(path.encode() + b"\0" + open(path, "rb").read())
print(h.hexdigest())
PY
)
if [ "${PINAKES_SETUP_FORCE:-}" != "1" ] && [ -f .venv/.pinakes-setup ] \
   && [ "$(cat .venv/.pinakes-setup)" = "$stamp" ] && .venv/bin/python -c "import pinakes" 2>/dev/null; then
  exit 0
fi
rm -f .venv/.pinakes-setup
.venv/bin/python -m pip install --quiet --upgrade pip
args=(-e ".[test]")
for p in plugins/*/; do
  [ -f "$p/pyproject.toml" ] && args+=(-e "$p")
done
.venv/bin/python -m pip install --quiet "${args[@]}"
echo "$stamp" > .venv/.pinakes-setup
