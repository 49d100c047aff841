#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: on Debian 12's QGIS 3.22 (the venv), then
# on QGIS 3.40 and 3.44 in each Debian chroot that scripts/debian_chroot.sh has built
# (trixie, sid; see the README, Testing on newer QGIS). Arguments go to pytest, in each run.
# IOU_CHROOT_SUITES chooses the chroots (default "trixie sid"; empty: QGIS 3.22 only).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/env.sh"
cd "$ROOT"
status=0
echo "test: QGIS $(dpkg-query -W -f='${Version}' qgis) (Debian 12, venv .venv)"
"$ROOT/.venv/bin/python" -m pytest "$@" || status=$?
for suite in ${IOU_CHROOT_SUITES-trixie sid}; do
  if bash "$ROOT/scripts/debian_chroot.sh" ready "$suite"; then
    bash "$ROOT/scripts/debian_chroot.sh" test "$suite" "$@" || status=$?
  else
    echo "test: no $suite chroot (bash scripts/debian_chroot.sh build $suite): not run there"
  fi
done
exit "$status"
