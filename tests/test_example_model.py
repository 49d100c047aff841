"""resources/example_release_gate.model3 under qgis_process: fix geometries → evaluate →
check thresholds, passing and failing as a batch file would see it."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT, SAMPLE_PREDICTED, SAMPLE_REFERENCE
from test_qgis_process import QGIS_PROCESS, qgis_process_env  # noqa: F401 (fixture)

if sys.platform != "linux":  # qgis_process.bin is Debian's layout
    pytest.skip("qgis_process.bin path is Debian-specific", allow_module_level=True)

MODEL = ROOT / "resources" / "example_release_gate.model3"


def run_model(env, conditions, tmp_path):
    return subprocess.run(
        [QGIS_PROCESS, "run", str(MODEL), "--json", "--",
         f"predicted={SAMPLE_PREDICTED}", f"reference={SAMPLE_REFERENCE}",
         f"conditions={conditions}", f"evaluate:report={tmp_path / 'report.json'}",
         f"check:checks={tmp_path / 'checks.csv'}"],
        env=env, capture_output=True, text=True, timeout=300,
    )


def test_the_model_passes_the_sample_at_f1_0_8(qgis_process_env, tmp_path):  # noqa: F811
    done = run_model(qgis_process_env, "f1 >= 0.8; recall >= 0.8", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    metrics = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["metrics"]
    # agribound 1.0.1 on the sample (README): TP 85, FP 15, FN 15; Fix geometries repaired
    # the predicted layer before the evaluation saw it.
    assert (metrics["count_tp"], metrics["count_fp"], metrics["count_fn"]) == (85, 15, 15)
    assert metrics["count_predicted_repaired"] == 0
    lines = (tmp_path / "checks.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and lines[1].startswith("f1 >= 0.8,f1,>=,0.8,0.85")


def test_the_model_fails_the_run_on_a_missed_threshold(qgis_process_env, tmp_path):  # noqa: F811
    done = run_model(qgis_process_env, "f1 >= 0.9", tmp_path)
    assert done.returncode != 0
    assert "f1 = 0.85, needs >= 0.9" in done.stdout + done.stderr
