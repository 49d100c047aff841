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


def test_a_class_absent_from_both_maps_is_skipped_with_a_question_mark(ioueval_provider,
                                                                      tmp_path):
    # rasteriou's report: class 2 is absent from both maps, so its IoU is null (0 / 0).
    path = tmp_path / "classes.json"
    path.write_text(json.dumps({"miou": 0.6, "per_class": {
        "0": {"iou": 0.8}, "1": {"iou": 0.4}, "2": {"iou": None}}}), encoding="utf-8")
    with pytest.raises(QgsProcessingException, match="per_class.2.iou = null"):
        check(str(path), "per_class.*.iou >= 0.3")
    result = check(str(path), "per_class.*.iou? >= 0.3")
    assert (result["FAILED_COUNT"], result["CHECK_COUNT"], result["SKIPPED_COUNT"]) == (0, 2, 1)
    rows = rows_of(result["OUTPUT"])
    assert [(r["key"], r["passed"], r["skipped"]) for r in rows] == [
        ("per_class.0.iou", True, False), ("per_class.1.iou", True, False),
        ("per_class.2.iou", True, True),
    ]


def test_a_skipping_condition_that_meets_only_nulls_says_it_checked_nothing(ioueval_provider,
                                                                          tmp_path):
    # Nothing was scored: every class's IoU is null. "per_class.*.iou? >= 0.3" skips all
    # three, so the gate passes with nothing checked: the run must say so.
    from qgis.core import QgsProcessingFeedback

    class Warnings(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.warnings = []

        def pushWarning(self, text):  # noqa: N802
            self.warnings.append(text)

    path = tmp_path / "classes.json"
    path.write_text(json.dumps({"miou": None, "per_class": {
        "0": {"iou": None}, "1": {"iou": None}, "2": {"iou": None}}}), encoding="utf-8")
    feedback = Warnings()
    result = run("ioueval:checkthresholds",
                 {"REPORT": str(path), "CONDITIONS": "per_class.*.iou? >= 0.3; miou? >= 0"},
                 feedback=feedback)
    assert (result["FAILED_COUNT"], result["CHECK_COUNT"], result["SKIPPED_COUNT"]) == (0, 0, 4)
    assert [w.split(":")[0] for w in feedback.warnings if "checked nothing" in w] == [
        "per_class.*.iou? >= 0.3", "miou? >= 0"]


def test_a_key_with_accents_and_spaces_needs_no_quotes(ioueval_provider, tmp_path):
    path = tmp_path / "named.json"
    path.write_text(json.dumps({"metrics": {"per_class": {"Forêt dense": {"f1": 0.75}}}},
                               ensure_ascii=False), encoding="utf-8")
    result = check(str(path), "per_class.Forêt dense.f1 >= 0.7")
    assert (result["FAILED_COUNT"], result["CHECK_COUNT"]) == (0, 1)
