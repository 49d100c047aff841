"""ioueval:rasteriou end to end through qgis_process: the contract's parameter names, bands
left at their default, numeric outputs in the JSON answer."""

import json
import subprocess

import numpy as np
import pytest
from test_core_confusion import seed_label_maps
from test_core_raster_confusion import write_raster
from test_qgis_process import QGIS_PROCESS, qgis_process_env  # noqa: F401 (fixture)


def test_qgis_process_rasteriou_on_the_seed_example(qgis_process_env, tmp_path):  # noqa: F811
    label, seg = seed_label_maps()
    outputs = {
        "OUTPUT_TABLE": tmp_path / "classes.csv",
        "AGREEMENT_RASTER": tmp_path / "agreement.tif",
        "REPORT_JSON": tmp_path / "report.json",
        "REPORT_HTML": tmp_path / "report.html",
    }
    args = [
        QGIS_PROCESS, "run", "ioueval:rasteriou", "--json", "--",
        f"PREDICTED={write_raster(tmp_path / 'p.tif', seg.astype(np.uint8))}",
        f"REFERENCE={write_raster(tmp_path / 'r.tif', label.astype(np.uint8))}",
        "IGNORE_VALUES=200",
    ] + [f"{name}={path}" for name, path in outputs.items()]
    done = subprocess.run(args, env=qgis_process_env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    assert round(results["MIOU"], 3) == 0.819
    assert round(results["PIXEL_ACCURACY"], 3) == 0.958
    report = json.loads(outputs["REPORT_JSON"].read_text(encoding="utf-8"))
    assert report["provenance"]["qgis"].startswith("3.")
    assert outputs["AGREEMENT_RASTER"].exists()
    assert outputs["REPORT_HTML"].read_text(encoding="utf-8").count('id="confusion"') == 1
    assert len(outputs["OUTPUT_TABLE"].read_text(encoding="utf-8").splitlines()) == 4
