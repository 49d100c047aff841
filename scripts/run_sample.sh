#!/usr/bin/env bash
# Set up (idempotent) and run ioueval:evaluatepolygons through qgis_process on the bundled
# sample (USDA NASS Crop Sequence Boundaries), then print where the outputs went and the
# headline metrics. Usage: scripts/run_sample.sh [OUTPUT_FOLDER]   (default: sample_output/)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/sample_output}")"
bash "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/env.sh"
# A throw-away QGIS profile, so the run neither reads nor changes the user's own.
export QGIS_CUSTOM_CONFIG_PATH="$ROOT/.build/profile"
mkdir -p "$OUT" "$QGIS_CUSTOM_CONFIG_PATH"
rm -f "$OUT"/{true_positives,false_positives,false_negatives}.gpkg "$OUT"/per_field.csv \
      "$OUT"/report.json "$OUT"/report.html
# Exits non-zero when the plugin is already enabled (a second run): that is fine.
qgis_process.bin plugins enable iou_evaluation >/dev/null 2>&1 || true
SAMPLE="$ROOT/resources/csb_fields/csb_fields.gpkg"
qgis_process.bin run ioueval:evaluatepolygons -- \
  "PREDICTED=$SAMPLE|layername=csb_2017_2024" \
  "REFERENCE=$SAMPLE|layername=csb_2016_2023" \
  REFERENCE_ID_FIELD=CSBID \
  IOU_THRESHOLD=0.5 \
  "TRUE_POSITIVES=$OUT/true_positives.gpkg" \
  "FALSE_POSITIVES=$OUT/false_positives.gpkg" \
  "FALSE_NEGATIVES=$OUT/false_negatives.gpkg" \
  "PER_FIELD=$OUT/per_field.csv" \
  "REPORT_JSON=$OUT/report.json" \
  "REPORT_HTML=$OUT/report.html" > "$OUT/qgis_process.log" 2>&1 \
  || { cat "$OUT/qgis_process.log"; exit 1; }
"$ROOT/.venv/bin/python" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
m = json.loads((out / "report.json").read_text())["metrics"]
print(f"Outputs in {out}:")
for name in ("true_positives.gpkg", "false_positives.gpkg", "false_negatives.gpkg",
             "per_field.csv", "report.json", "report.html", "qgis_process.log"):
    print(f"  {out / name}")
print(f"TP {m['count_tp']}  FP {m['count_fp']}  FN {m['count_fn']}  "
      f"precision {m['precision']:.4f}  recall {m['recall']:.4f}  F1 {m['f1']:.4f}  "
      f"mean IoU {m['iou_mean']:.4f}")
PY
