"""The commands the README and the HTML report give run as written: the README's standalone
PyQGIS script, and the report's qgis_process command line."""

import json
import re
import shlex
import subprocess

from conftest import ROOT, SAMPLE_PREDICTED, SAMPLE_REFERENCE
from iou_evaluation.core.reports.reproduce import qgis_process_command
from test_qgis_process import QGIS_PROCESS, qgis_process_env  # noqa: F401 (fixture)


def test_the_readme_standalone_pyqgis_script_runs(qgis_process_env, tmp_path):  # noqa: F811
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    script = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S)
                  if "QgsApplication([], False)" in block)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "iou_evaluation").symlink_to(ROOT)
    script = (script.replace('"/path/to/plugins"', repr(str(plugins)))
              .replace('"/data/fields.gpkg|layername=predicted"', repr(SAMPLE_PREDICTED))
              .replace('"/data/fields.gpkg|layername=registry"', repr(SAMPLE_REFERENCE))
              .replace('"/data/report.html"', repr(str(tmp_path / "report.html"))))
    path = tmp_path / "script.py"
    path.write_text(script, encoding="utf-8")
    done = subprocess.run(["/usr/bin/python3", str(path)], env=qgis_process_env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0.85"
    assert (tmp_path / "report.html").stat().st_size > 10_000


def test_the_reports_qgis_process_command_reruns_the_evaluation(
    qgis_process_env, tmp_path  # noqa: F811
):
    first = tmp_path / "first.json"
    done = subprocess.run(
        [QGIS_PROCESS, "run", "ioueval:evaluatepolygons", "--json", "--",
         f"PREDICTED={SAMPLE_PREDICTED}", f"REFERENCE={SAMPLE_REFERENCE}", "IOU_THRESHOLD=0.6",
         f"REPORT_JSON={first}"],
        env=qgis_process_env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(first.read_text(encoding="utf-8"))
    parameters = dict(report["reproduce"]["parameters"])
    assert parameters["IOU_THRESHOLD"] == 0.6 and parameters["MATCHING"] == 0  # default too
    parameters["REPORT_JSON"] = str(tmp_path / "second.json")
    words = shlex.split(qgis_process_command("ioueval:evaluatepolygons", parameters)
                        .replace("\\\n", " "))
    assert words[0] == "qgis_process"
    again = subprocess.run([QGIS_PROCESS] + words[1:], env=qgis_process_env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    second = json.loads((tmp_path / "second.json").read_text(encoding="utf-8"))
    for key in ("count_tp", "count_fp", "count_fn", "f1", "iou_mean"):
        assert second["metrics"][key] == report["metrics"][key], key
