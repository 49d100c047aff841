"""The toolbox algorithms under qgis_process: exit codes a batch file can rely on."""

import json
import subprocess
import sys

import pytest
from test_qgis_process import QGIS_PROCESS, qgis_process_env  # noqa: F401 (fixture)

if sys.platform != "linux":  # qgis_process.bin is Debian's layout
    pytest.skip("qgis_process.bin path is Debian-specific", allow_module_level=True)


def qgis_process(env, algorithm, *arguments):
    return subprocess.run(
        [QGIS_PROCESS, "run", algorithm, "--json", "--", *arguments],
        env=env, capture_output=True, text=True, timeout=300,
    )


def test_check_thresholds_exit_code(qgis_process_env, tmp_path):  # noqa: F811
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"metrics": {"f1": 0.85, "iou_p10": 0.42}}), encoding="utf-8")
    passed = qgis_process(
        qgis_process_env, "ioueval:checkthresholds", f"REPORT={report}", "CONDITIONS=f1 >= 0.8"
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert json.loads(passed.stdout)["results"]["FAILED_COUNT"] == 0
    failed = qgis_process(
        qgis_process_env, "ioueval:checkthresholds", f"REPORT={report}",
        "CONDITIONS=f1 >= 0.8; iou_p10 >= 0.5",
    )
    assert failed.returncode != 0
    assert "iou_p10 = 0.42, needs >= 0.5" in failed.stdout + failed.stderr
    assert "Traceback" not in failed.stdout + failed.stderr
