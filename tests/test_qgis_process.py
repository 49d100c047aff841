"""End to end through qgis_process: the plugin found via QGIS_PLUGINPATH in a throw-away
profile, file outputs, the JSON report parsed, styles stored in the GeoPackages."""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import shapely
from conftest import ROOT, SAMPLE_PREDICTED, SAMPLE_REFERENCE

QGIS_PROCESS = "/usr/bin/qgis_process.bin"  # /usr/bin/qgis_process passes a flag 3.22 rejects


@pytest.fixture(scope="module")
def qgis_process_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("qgis_process")
    plugins = base / "plugins"
    plugins.mkdir()
    (plugins / "iou_evaluation").symlink_to(ROOT)
    profile = base / "profile"
    profile.mkdir()
    site_packages = str(Path(shapely.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "QGIS_PLUGINPATH": str(plugins),
        "QGIS_CUSTOM_CONFIG_PATH": str(profile),
        "PROJ_DATA": os.environ.get("PROJ_DATA", "/usr/share/proj"),
        "PYTHONPATH": os.pathsep.join(
            [site_packages] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    }
    subprocess.run(
        [QGIS_PROCESS, "plugins", "enable", "iou_evaluation"],
        env=env, check=True, capture_output=True, timeout=120,
    )
    return env


def test_qgis_process_run_on_the_sample(qgis_process_env, tmp_path):
    outputs = {
        "TRUE_POSITIVES": tmp_path / "tp.gpkg",
        "FALSE_POSITIVES": tmp_path / "fp.gpkg",
        "FALSE_NEGATIVES": tmp_path / "fn.gpkg",
        "PER_FIELD": tmp_path / "per_field.csv",
        "REPORT_JSON": tmp_path / "report.json",
        "REPORT_HTML": tmp_path / "report.html",
    }
    args = [
        QGIS_PROCESS, "run", "ioueval:evaluatepolygons", "--json", "--",
        f"PREDICTED={SAMPLE_PREDICTED}", f"REFERENCE={SAMPLE_REFERENCE}",
        "REFERENCE_ID_FIELD=CSBID", "IOU_THRESHOLD=0.5",
    ] + [f"{name}={path}" for name, path in outputs.items()]
    done = subprocess.run(args, env=qgis_process_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    assert (results["COUNT_TP"], results["COUNT_FP"], results["COUNT_FN"]) == (85, 15, 15)
    assert results["F1"] == pytest.approx(0.85)
    report = json.loads(outputs["REPORT_JSON"].read_text(encoding="utf-8"))
    assert report["metrics"]["count_tp"] == 85
    assert report["provenance"]["geos"].startswith("3.")
    assert report["provenance"]["qgis"].startswith("3.")
    for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES"):
        with sqlite3.connect(outputs[name]) as db:
            styles = db.execute("SELECT stylename, useasdefault FROM layer_styles").fetchall()
        assert styles == [(name.lower(), 1)]
    lines = outputs["PER_FIELD"].read_text(encoding="utf-8").splitlines()
    assert len(lines) == 101 and lines[0].startswith("CSBID,")


def test_qgis_process_reports_a_bad_threshold_without_a_traceback(qgis_process_env, tmp_path):
    args = [
        QGIS_PROCESS, "run", "ioueval:evaluatepolygons", "--",
        f"PREDICTED={SAMPLE_PREDICTED}", f"REFERENCE={SAMPLE_REFERENCE}", "IOU_THRESHOLD=0",
        f"REPORT_JSON={tmp_path / 'report.json'}",
    ]
    done = subprocess.run(args, env=qgis_process_env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "IOU_THRESHOLD" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "report.json").exists()


if sys.platform != "linux":  # qgis_process.bin is Debian's layout
    pytest.skip("qgis_process.bin path is Debian-specific", allow_module_level=True)
