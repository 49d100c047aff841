# Source this file: the environment in which QGIS (qgis_process.bin, PyQGIS) sees the venv and
# the plugin. Made by scripts/setup.sh; see README.md.
IOU_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
export PROJ_DATA=/usr/share/proj  # Debian's pyproj inside a venv does not find its data
export PYTHONPATH="$IOU_ROOT/.venv/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}"
export QGIS_PLUGINPATH="$IOU_ROOT/.build/plugins"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/runtime-$(id -u)}"
# Two commands, not `a && b`: as the last line of a file sourced in a subshell, bash 5.2.15
# (Debian 12) skips the rest of that subshell after it.
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
