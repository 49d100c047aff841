# Source this file: the environment in which QGIS (qgis_process.bin, PyQGIS) sees the venv and
# the plugin. Made by scripts/setup.sh; see README.md.
IOU_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
export PROJ_DATA=/usr/share/proj  # Debian's pyproj inside a venv does not find its data
export PYTHONPATH="$IOU_ROOT/.venv/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}"
export QGIS_PLUGINPATH="$IOU_ROOT/.build/plugins"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/runtime-$(id -u)}"
# The QGIS profile qgis_process reads: qgis_process loads only the plugins enabled in it.
# Unless QGIS_CUSTOM_CONFIG_PATH is set already, the clone's own profile (.build/profile, the
# one scripts/run_sample.sh uses), with the plugin enabled in it, so that
# `qgis_process.bin help ioueval:...` and `run` work at once and your own profile is left
# alone. A profile you choose yourself is not changed: enable the plugin there once with
# `qgis_process.bin plugins enable iou_evaluation`.
if [ -z "${QGIS_CUSTOM_CONFIG_PATH:-}" ]; then
  export QGIS_CUSTOM_CONFIG_PATH="$IOU_ROOT/.build/profile"
  IOU_INI="$QGIS_CUSTOM_CONFIG_PATH/profiles/default/QGIS/QGIS3.ini"
  if ! grep -qs '^iou_evaluation=true' "$IOU_INI"; then
    # What `qgis_process.bin plugins enable iou_evaluation` writes, without starting QGIS.
    mkdir -p "$(dirname "$IOU_INI")"
    if grep -qs '^\[PythonPlugins\]' "$IOU_INI"; then
      sed -i '/^iou_evaluation=/d; /^\[PythonPlugins\]/a iou_evaluation=true' "$IOU_INI"
    else
      printf '[PythonPlugins]\niou_evaluation=true\n\n' >> "$IOU_INI"
    fi
  fi
  unset IOU_INI
fi
# Two commands, not `a && b`: as the last line of a file sourced in a subshell, bash 5.2.15
# (Debian 12) skips the rest of that subshell after it.
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
