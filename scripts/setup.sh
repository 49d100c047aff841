#!/usr/bin/env bash
# Idempotent set-up on Debian 12: QGIS 3.22 LTR from Debian's packages and a project-local
# virtual environment (.venv) with what the plugin and its tests need. Run as root or with sudo
# available. A second run checks and finishes in seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQUIREMENTS="$ROOT/scripts/requirements-dev.txt"
APT_PACKAGES=(qgis python3-qgis qgis-providers libgeos-dev python3-venv python3-dev gcc
              python3-numpy python3-pyproj python3-jinja2 python3-scipy python3-matplotlib
              proj-data)

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian's python3 (the one QGIS embeds), never a pyenv or other python on PATH.
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi

stamp="$VENV/.requirements.sha256"
wanted="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || ! "$VENV/bin/python" - <<'PY'
import shapely, sys
from pathlib import Path
# Built from source: no bundled GEOS next to the package, and GEOS is the system's.
bundled = list(Path(shapely.__file__).parent.parent.glob("shapely.libs"))
sys.exit(0 if shapely.__version__ >= "2.1" and not bundled else 1)
PY
then
  echo "setup: installing Python packages into $VENV (builds shapely, about 30 s)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    --no-binary shapely -r "$REQUIREMENTS"
  echo "$wanted" > "$stamp"
fi

# PyQt6 from PyPI in a venv of its own (never on QGIS's path): tests/test_qt6_readiness.py
# looks every Qt name the plugin uses up in it.
PYQT6_VENV="$ROOT/.build/pyqt6"
PYQT6_PIN="PyQt6==6.11.0"
if ! "$PYQT6_VENV/bin/python" -c "import PyQt6.QtCore, sys; sys.exit(PyQt6.QtCore.PYQT_VERSION_STR != '${PYQT6_PIN#*==}')" 2>/dev/null; then
  echo "setup: installing $PYQT6_PIN into $PYQT6_VENV"
  /usr/bin/python3 -m venv "$PYQT6_VENV"
  "$PYQT6_VENV/bin/python" -m pip install -q --disable-pip-version-check "$PYQT6_PIN"
fi

# The plugin as QGIS finds it: a folder named iou_evaluation inside QGIS_PLUGINPATH.
mkdir -p "$ROOT/.build/plugins"
ln -sfn "$ROOT" "$ROOT/.build/plugins/iou_evaluation"
echo "setup: ready (QGIS $(dpkg-query -W -f='${Version}' qgis), venv $VENV)"
