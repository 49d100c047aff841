#!/usr/bin/env bash
# The plugin's tests on newer QGIS, as a Debian user has it: a Debian chroot made with
# debootstrap from Debian's package archive, QGIS and the plugin's dependencies from Debian's
# packages (no venv), pytest-qgis from PyPI.
#
#   bash scripts/debian_chroot.sh build SUITE          make (or finish) the chroot
#   bash scripts/debian_chroot.sh test SUITE [ARGS]    run pytest ARGS (default: the whole
#                                                      suite) on a copy of this checkout
#   bash scripts/debian_chroot.sh ready SUITE          exit 0 when the chroot is built
#
# SUITE: trixie (Debian 13: QGIS 3.40 LTR, shapely 2.1, numpy 2.2, Python 3.13) or sid
# (QGIS 3.44, shapely 2.2, numpy 2.4, Python 3.14). Chroots go to $IOU_CHROOTS/SUITE
# (default .build/chroots/SUITE, about 2.7 GB each). Needs root, debootstrap (installed with
# apt-get when missing) and network access to Debian's archive and PyPI. A second build
# checks and finishes in seconds.
#
# Safe to delete: the chroot has no bind mount of the host. The checkout is copied in
# (tracked and untracked files git does not ignore), /proc is a fresh procfs and /dev a
# tmpfs with the few device nodes the tests use; all are unmounted when the command ends.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command="${1:?usage: debian_chroot.sh build|test|ready SUITE [pytest arguments]}"
suite="${2:?usage: debian_chroot.sh build|test|ready SUITE [pytest arguments]}"
shift 2
case "$suite" in trixie|sid) ;; *) echo "debian_chroot: SUITE is trixie or sid" >&2; exit 2;; esac
DIR="${IOU_CHROOTS:-$ROOT/.build/chroots}/$suite"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What the plugin uses (QGIS, its Python bindings, the packages of plugin/dependencies.py)
# and what the tests use (pytest, hypothesis, scikit-learn; GDAL's Python bindings come
# with QGIS). No recommended packages: they would bring a desktop.
PACKAGES=(qgis python3-qgis qgis-providers python3-shapely python3-pyproj python3-numpy
          python3-scipy python3-matplotlib python3-jinja2 proj-data python3-pytest
          python3-hypothesis python3-sklearn python3-pip ca-certificates)
PIP_PACKAGES=("pytest-qgis==5.0.2")
STAMP="$DIR/.iou-ready"
WANTED="$(printf '%s\n' "${PACKAGES[@]}" "${PIP_PACKAGES[@]}" | sha256sum | cut -d' ' -f1)"
# A clean environment inside: nothing of the host's Python, pip or QGIS settings.
CHROOT_ENV=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
            DEBIAN_FRONTEND=noninteractive)

is_ready() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANTED" ]; }

mounted=()
mount_fs() {  # mount_fs TYPE TARGET [OPTIONS]: a fresh filesystem, never the host's own
  mkdir -p "$2"
  mountpoint -q "$2" || { mount -t "$1" ${3:+-o "$3"} "$1" "$2"; mounted=("$2" "${mounted[@]}"); }
}
unmount_all() {
  local target
  for target in "${mounted[@]}"; do umount -l "$target" 2>/dev/null || true; done
  mounted=()
}
prepare_mounts() {
  trap unmount_all EXIT
  mount_fs proc "$DIR/proc"
  mount_fs tmpfs "$DIR/dev" mode=755
  local node
  for node in "null c 1 3" "zero c 1 5" "full c 1 7" "random c 1 8" "urandom c 1 9" \
              "tty c 5 0"; do
    set -- $node
    [ -e "$DIR/dev/$1" ] || { mknod -m 666 "$DIR/dev/$1" "$2" "$3" "$4"; }
  done
  ln -sfn /proc/self/fd "$DIR/dev/fd"
  mount_fs tmpfs "$DIR/dev/shm" mode=1777
}
in_chroot() { "${CHROOT_ENV[@]}" /usr/sbin/chroot "$DIR" "$@"; }

build() {
  if is_ready; then
    echo "debian_chroot: $suite ready ($DIR)"
    return
  fi
  local start=$SECONDS
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  if [ ! -x "$DIR/usr/bin/apt-get" ]; then
    echo "debian_chroot: debootstrap $suite into $DIR"
    rm -rf "$DIR"
    mkdir -p "$(dirname "$DIR")"
    debootstrap --variant=minbase "$suite" "$DIR" "$MIRROR" > "$DIR.debootstrap.log" 2>&1 \
      || { tail -20 "$DIR.debootstrap.log"; exit 1; }
  fi
  prepare_mounts
  # sid's Release file may be past its Valid-Until date in an archive snapshot.
  printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' \
    > "$DIR/etc/apt/apt.conf.d/99iou-no-valid-until"
  printf 'APT::Install-Recommends "false";\n' > "$DIR/etc/apt/apt.conf.d/99iou-no-recommends"
  echo "debian_chroot: installing Debian packages in $suite"
  in_chroot apt-get update -qq
  in_chroot apt-get install -y -qq "${PACKAGES[@]}" > "$DIR.apt.log" 2>&1 \
    || { tail -20 "$DIR.apt.log"; exit 1; }
  # This machine's own certificate authorities (a proxy's, say), so that pip reaches PyPI.
  mkdir -p "$DIR/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$DIR/usr/local/share/ca-certificates/" 2>/dev/null \
    || true
  in_chroot update-ca-certificates > /dev/null 2>&1
  in_chroot python3 -m pip install -q --no-deps --break-system-packages \
    --root-user-action=ignore --disable-pip-version-check "${PIP_PACKAGES[@]}"
  echo "$WANTED" > "$STAMP"
  echo "debian_chroot: $suite built in $((SECONDS - start)) s:" \
    "$(in_chroot dpkg-query -W -f='QGIS ${Version}' qgis)," \
    "$(in_chroot python3 -c 'import shapely, numpy, sys; print(f"shapely {shapely.__version__} (GEOS {shapely.geos_version_string}), numpy {numpy.__version__}, Python {sys.version.split()[0]}")')"
}

run_tests() {
  is_ready || { echo "debian_chroot: $suite is not built (bash scripts/debian_chroot.sh build $suite)" >&2; exit 2; }
  prepare_mounts
  local copy="$DIR/src/iou_evaluation"
  rm -rf "$DIR/src" "$DIR/tmp/"* 2>/dev/null || true
  mkdir -p "$copy"
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
     | xargs -0 -I{} sh -c 'test -f "{}" && printf "%s\0" "{}"' \
     | tar --null -T - -cf -) | tar -xf - -C "$copy"
  mkdir -p "$copy/.build/plugins"
  ln -sfn /src/iou_evaluation "$copy/.build/plugins/iou_evaluation"
  echo "debian_chroot: pytest on $suite ($(in_chroot dpkg-query -W -f='QGIS ${Version}' qgis))"
  # The environment scripts/env.sh makes on the host, less the venv: Debian's packages only.
  "${CHROOT_ENV[@]}" QT_QPA_PLATFORM=offscreen QGIS_PLUGINPATH=/src/iou_evaluation/.build/plugins \
    XDG_RUNTIME_DIR=/tmp/runtime-root IOU_CHROOT_SUITE="$suite" CI="${CI:-}" \
    /usr/sbin/chroot "$DIR" sh -c \
    'mkdir -p -m 700 "$XDG_RUNTIME_DIR" && cd /src/iou_evaluation && exec python3 -m pytest -p no:cacheprovider "$@"' \
    pytest "$@"
}

case "$command" in
  build) build ;;
  test) run_tests "$@" ;;
  ready) is_ready ;;
  *) echo "debian_chroot: unknown command $command (build, test, ready)" >&2; exit 2 ;;
esac
