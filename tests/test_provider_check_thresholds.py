"""ioueval:checkthresholds through processing.run and qgis_process (exit code)."""

import json
import pytest
from qgis.core import QgsProcessingException
from qgis_layers import rows_of, run

REPORT = {"metrics": {"f1": 0.85, "iou_p10": 0.42,
                      "per_size_class": {"0-1": {"recall": 0.5}, "1-2": {"recall": 0.9}}}}


@pytest.fixture
def report_path(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(REPORT), encoding="utf-8")
    return str(path)


def check(report_path, conditions, **parameters):
    return run(
        "ioueval:checkthresholds",
        {"REPORT": report_path, "CONDITIONS": conditions, "OUTPUT": "TEMPORARY_OUTPUT",
         **parameters},
    )


def test_passing_conditions_give_a_table(ioueval_provider, report_path):
    result = check(report_path, "f1 >= 0.8\nper_size_class.*.recall >= 0.5")
    assert (result["FAILED_COUNT"], result["CHECK_COUNT"]) == (0, 3)
    rows = rows_of(result["OUTPUT"])
    assert [(r["key"], r["value"], r["passed"]) for r in rows] == [
        ("f1", 0.85, True),
        ("per_size_class.0-1.recall", 0.5, True),
        ("per_size_class.1-2.recall", 0.9, True),
    ]


def test_a_failed_condition_fails_the_run_listing_each_failure(ioueval_provider, report_path):
    with pytest.raises(QgsProcessingException) as error:
        check(report_path, "f1 >= 0.80; iou_p10 >= 0.5; per_size_class.*.recall >= 0.6")
    message = str(error.value)
    assert "2 of 4 threshold checks failed" in message
    assert "iou_p10 = 0.42" in message and "per_size_class.0-1.recall = 0.5" in message
    # one line: QGIS repeats an exception's text (log, error, qgis_process's own print)
    assert "\n" not in message


def test_without_failing_the_run_the_count_says_it(ioueval_provider, report_path):
    result = check(report_path, "f1 >= 0.9", FAIL_RUN=False)
    assert result["FAILED_COUNT"] == 1


def test_a_missing_key_is_named(ioueval_provider, report_path):
    with pytest.raises(QgsProcessingException, match="no key 'f2'"):
        check(report_path, "f2 >= 0.9")


def test_a_report_saved_with_a_byte_order_mark_is_read(ioueval_provider, tmp_path):
    # Windows editors (Notepad, PowerShell's Out-File) save UTF-8 with a BOM: still JSON.
    path = tmp_path / "report_bom.json"
    path.write_text(json.dumps(REPORT), encoding="utf-8-sig")
    result = check(str(path), "f1 >= 0.8")
    assert (result["FAILED_COUNT"], result["CHECK_COUNT"]) == (0, 1)
