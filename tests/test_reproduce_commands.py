"""The commands the README and the HTML report give run as written: the README's standalone
PyQGIS script, and the report's qgis_process command line."""

import html
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


def test_the_reports_command_as_shown_runs_from_another_folder(
    qgis_process_env, tmp_path  # noqa: F811
):
    # Run as the README shows it: from the clone's root, with relative paths.
    out = tmp_path / "out"
    out.mkdir()
    relative = "resources/csb_fields/csb_fields.gpkg"
    done = subprocess.run(
        [QGIS_PROCESS, "run", "ioueval:evaluatepolygons", "--",
         f"PREDICTED={relative}|layername=csb_2017_2024",
         f"REFERENCE={relative}|layername=csb_2016_2023", "REFERENCE_ID_FIELD=CSBID",
         f"REPORT_JSON={out / 'report.json'}", f"REPORT_HTML={out / 'report.html'}"],
        cwd=ROOT, env=qgis_process_env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    first = json.loads((out / "report.json").read_text(encoding="utf-8"))
    block = first["reproduce"]
    # the program that ran: qgis_process.bin on Debian's 3.22, found on PATH by that name
    assert block["qgis_process"] == "qgis_process.bin"
    sample = str(ROOT / relative)
    assert block["parameters"]["PREDICTED"] == f"{sample}|layername=csb_2017_2024"
    assert block["parameters"]["REFERENCE"] == f"{sample}|layername=csb_2016_2023"
    assert block["parameters"]["REPORT_JSON"] == str(out / "report.json")
    page = (out / "report.html").read_text(encoding="utf-8")
    command = html.unescape(re.search(r'<pre id="qgis-process">(.*?)</pre>', page, re.S)[1])
    code = html.unescape(re.search(r'<pre id="processing-run">(.*?)</pre>', page, re.S)[1])
    assert command.startswith("qgis_process.bin run ioueval:evaluatepolygons")
    assert f'"PREDICTED": "{sample}|layername=csb_2017_2024"' in code
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = subprocess.run(["bash", "-c", command], cwd=elsewhere, env=qgis_process_env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    second = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert second["provenance"]["created_utc"] >= first["provenance"]["created_utc"]
    for key in ("count_tp", "count_fp", "count_fn", "f1", "iou_mean"):
        assert second["metrics"][key] == first["metrics"][key], key


def test_the_program_found_outside_qgis_process(ioueval_provider, tmp_path, monkeypatch):
    from iou_evaluation.processing_provider.reporting import qgis_process_program

    # This machine: Debian's QGIS 3.22 in /usr (the .bin beside the wrapper that fails).
    assert qgis_process_program() == "qgis_process.bin"
    # A QGIS whose bin folder is not on PATH: the full path, the .bin before the wrapper.
    for name in ("qgis_process", "qgis_process.bin"):
        (tmp_path / name).write_text("#!/bin/sh\n")
    assert qgis_process_program(folders=[tmp_path]) == str(tmp_path / "qgis_process.bin")
    (tmp_path / "qgis_process.bin").unlink()
    assert qgis_process_program(folders=[tmp_path]) == str(tmp_path / "qgis_process")
    # Under qgis_process: the program that runs, by name when PATH finds it.
    assert qgis_process_program(["/usr/bin/qgis_process.bin", "run"]) == "qgis_process.bin"
    assert qgis_process_program(folders=[tmp_path / "none"]) == "qgis_process"


def test_relative_sources_and_destinations_become_absolute(tmp_path, monkeypatch):
    from iou_evaluation.processing_provider.reporting import absolute_source

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.gpkg").write_bytes(b"")
    assert absolute_source("data/f.gpkg|layername=x") == f"{tmp_path}/data/f.gpkg|layername=x"
    assert absolute_source("data/report.json", destination=True) == f"{tmp_path}/data/report.json"
    assert absolute_source("data/report.json") == "data/report.json"  # a source must exist
    for unchanged in ("/abs/f.gpkg|layername=x", "TEMPORARY_OUTPUT", "memory:", "ogr:x",
                      "layer_id_1234", "missing/folder/out.csv", "",
                      "dbname='gis' host=db table=\"public\".\"fields\" (geom)"):
        assert absolute_source(unchanged) == unchanged
        assert absolute_source(unchanged, destination=True) == unchanged
