"""The bundled table of model answers (resources/model_answers) through ioueval:parsemodeloutput
and ioueval:spatialmatch under qgis_process. Every expected value is worked out by hand from
the rows (see resources/model_answers/README.md)."""

import csv
import json
import math
import subprocess
import sys

import pytest
from conftest import ROOT
from test_qgis_process import QGIS_PROCESS, qgis_process_env  # noqa: F401 (fixture)

TABLE = ROOT / "resources" / "model_answers" / "model_answers.csv"

# Best IoU of each scored row (row 29's expected box is truncated: not scored).
_leg = 400 - 200 * math.sqrt(2)  # GeoChat 45°: the corner triangles' legs
_octagon = 160000 - 2 * _leg**2
HAND_IOU = {
    1: 1.0, 2: 1.0,
    3: (199.5 * 99.75) / (2 * 20000 - 199.5 * 99.75),  # Florence-2 bin centres
    4: 0.0,  # Qwen2-VL 0-1000 y 400..800 → pixels 200..400: touches the car, no overlap
    5: ((300 - 100000 / 999) * (200 - 100000 / 999))
    / (20000 + (200000 / 999) * (100000 / 999) - (300 - 100000 / 999) * (200 - 100000 / 999)),
    6: 1.0, 7: 0.0, 8: 0.0,
    9: 1.0, 10: 0.5, 11: 1.0,
    12: (494 * 244) / (131072 + 125000 - 494 * 244),
    13: 0.0, 14: 1.0, 15: 0.0, 16: 0.0,
    17: 1.0, 18: _octagon / (320000 - _octagon), 19: 1.0, 20: 1.0, 21: 0.5, 22: 0.5,
    23: 1 / 7, 24: 0.0,
    25: 1.0, 26: 1.0, 27: 0.0, 28: 0.0,
}


def run(env, algorithm, parameters):
    args = [QGIS_PROCESS, "run", algorithm, "--json", "--"] + [
        f"{k}={v}" for k, v in parameters.items()]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["results"]


def test_bundled_answers_parse(qgis_process_env, tmp_path):  # noqa: F811
    results = run(qgis_process_env, "ioueval:parsemodeloutput", {
        "INPUT": TABLE, "TEXT_FIELD": "answer", "ID_FIELD": "id",
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height", "COORDINATE_FORMAT": 0,
        "OUTPUT": tmp_path / "geometries.gpkg", "POINTS": tmp_path / "points.gpkg",
        "FAILURES": tmp_path / "failures.csv",
    })
    # 29 answers: 2 point answers (8, 24); 3 empty (15, 25, 26); 2 unreadable (7, 16);
    # polygons: 24 boxes, oriented boxes and polygons, of which row 10 and row 23 give two
    # and rows 6 and 28 one each from truncated JSON
    assert results["COUNT_ROWS"] == 29
    assert results["COUNT_POINTS"] == 2
    assert results["COUNT_ROWS_EMPTY"] == 3
    assert results["COUNT_ROWS_FAILED"] == 2
    assert results["COUNT_POLYGONS"] == 29 - 2 - 3 - 2 + 2
    assert results["COUNT_OUT_OF_BOUNDS"] == 1  # row 13: x to 1300 on a 1024 image
    with open(tmp_path / "failures.csv", encoding="utf-8") as handle:
        failures = {(r["row_id"], r["status"]) for r in csv.DictReader(handle)}
    assert failures == {("7", "unparseable"), ("15", "empty"), ("16", "non_finite"),
                        ("25", "empty"), ("26", "empty")}


def test_bundled_answers_spatial_match(qgis_process_env, tmp_path):  # noqa: F811
    results = run(qgis_process_env, "ioueval:spatialmatch", {
        "INPUT": TABLE, "ANSWER_FIELD": "answer", "EXPECTED_FIELD": "expected",
        "ID_FIELD": "id", "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height",
        "GROUP_FIELD": "model", "COORDINATE_FORMAT": 0, "IOU_THRESHOLD": 0.5,
        "OUTPUT": tmp_path / "scored.csv", "REPORT_JSON": tmp_path / "report.json",
        "REPORT_HTML": tmp_path / "report.html",
    })
    ious = list(HAND_IOU.values())
    passes = [iou >= 0.5 - 1e-12 for iou in ious]
    assert results["COUNT_PASS"] == sum(passes) == 18
    assert results["PASS_RATE"] == pytest.approx(18 / 28)
    assert results["MEAN_IOU"] == pytest.approx(sum(ious) / 28)
    assert results["PARSE_FAILURE_RATE"] == pytest.approx(2 / 28)  # rows 7 and 16
    assert results["HALLUCINATION_RATE"] == pytest.approx(1 / 28)  # row 13
    with open(tmp_path / "scored.csv", encoding="utf-8") as handle:
        rows = {int(r["row_id"]): r for r in csv.DictReader(handle)}
    for row_id, iou in HAND_IOU.items():
        assert float(rows[row_id]["best_iou"]) == pytest.approx(iou, abs=1e-12), row_id
    assert rows[29]["best_iou"] == "" and rows[29]["scored"] in ("0", "false")
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["metrics"]["count_expected_unreadable"] == 1
    assert report["metrics"]["count_true_negative"] == 2
    assert report["per_group"]["geochat"]["pass_rate"] == 1.0
    assert 'id="summary"' in (tmp_path / "report.html").read_text(encoding="utf-8")


if sys.platform != "linux":
    pytest.skip("qgis_process.bin path is Debian-specific", allow_module_level=True)
