#!/usr/bin/env bash
# Idempotent: agribound 1.0.1 in its own virtual environment, bench/.venv-agribound, for
# bench/run.py and bench/parity/make_oracle.py. agribound needs Python >= 3.12 (the project
# venv is Debian's 3.11, which QGIS embeds), so a python3.12 is looked for: $PYTHON312, then
# pyenv's 3.12 versions, then python3.12 on PATH. A second run checks and finishes in seconds.
set -euo pipefail
BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$BENCH/.venv-agribound"
AGRIBOUND_VERSION="1.0.1"

find_python312() {
  local candidate
  for candidate in "${PYTHON312:-}" \
      "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python \
      /root/.pyenv/versions/3.12*/bin/python \
      "$(command -v python3.12 || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] \
        && "$candidate" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

installed_version() {
  "$VENV/bin/python" -c 'import agribound; print(agribound.__version__)' 2>/dev/null || true
}

if [ -x "$VENV/bin/python" ] && [ "$(installed_version)" = "$AGRIBOUND_VERSION" ]; then
  echo "setup_agribound: ready (agribound $AGRIBOUND_VERSION, $("$VENV/bin/python" --version), $VENV)"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  PYTHON="$(find_python312)" || {
    echo "setup_agribound: no Python 3.12 found; set PYTHON312=/path/to/python3.12" >&2
    exit 1
  }
  echo "setup_agribound: creating $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV"
fi
echo "setup_agribound: installing agribound==$AGRIBOUND_VERSION (about a minute)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "agribound==$AGRIBOUND_VERSION"
test "$(installed_version)" = "$AGRIBOUND_VERSION"
echo "setup_agribound: ready (agribound $AGRIBOUND_VERSION, $("$VENV/bin/python" --version), $VENV)"
