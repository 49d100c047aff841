"""The provider helpers every algorithm shares (which outputs were requested, the report
files, the numeric outputs, the checks) and translatable texts."""

import re
from pathlib import Path

import pytest
from qgis.core import QgsProcessingContext, QgsProcessingException

from iou_evaluation.processing_provider.parameters import requested
from iou_evaluation.processing_provider.reporting import write_reports
from iou_evaluation.processing_provider.validation import equal_area_crs_error


@pytest.mark.parametrize("value, expected", [
    (None, False), ("", False), ("TEMPORARY_OUTPUT", True), ("/tmp/x.json", True),
])
def test_an_output_left_out_or_skipped_is_not_requested(value, expected):
    parameters = {} if value is None else {"REPORT_JSON": value}
    assert requested(parameters, "REPORT_JSON") is expected


def test_reports_are_written_only_where_requested(ioueval_provider, tmp_path):
    algorithm = ioueval_provider.algorithm("spatialmatch")
    path = tmp_path / "report.json"
    parameters = {"REPORT_JSON": str(path), "REPORT_HTML": ""}
    written = write_reports(algorithm, parameters, QgsProcessingContext(), {"a": 1}, (
        ("REPORT_JSON", lambda report: f"json {report['a']}"),
        ("REPORT_HTML", lambda report: pytest.fail("a skipped report is not rendered")),
    ))
    assert written == {"REPORT_JSON": str(path)}
    assert path.read_text(encoding="utf-8") == "json 1"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_a_report_that_cannot_be_written_names_its_output(ioueval_provider, tmp_path):
    algorithm = ioueval_provider.algorithm("spatialmatch")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    parameters = {"REPORT_HTML": str(blocker / "report.html")}
    with pytest.raises(QgsProcessingException, match="REPORT_HTML: could not write"):
        write_reports(algorithm, parameters, QgsProcessingContext(), {},
                      (("REPORT_HTML", lambda report: "<p>"),))


def test_numeric_results_name_every_numeric_output(ioueval_provider):
    algorithm = ioueval_provider.algorithm("spatialiou")
    values = {"iou": 0.5, "dice": 2 / 3, "giou": 0.25, "diou": 0.4, "intersection": 10.0,
              "union": 20.0}
    assert algorithm.numeric_results(values.__getitem__) == {
        "IOU": 0.5, "DICE": 2 / 3, "GIOU": 0.25, "DIOU": 0.4, "INTERSECTION_AREA_M2": 10.0,
        "UNION_AREA_M2": 20.0,
    }
    assert {o.name() for o in algorithm.outputDefinitions()} >= {
        "IOU", "DICE", "GIOU", "DIOU", "INTERSECTION_AREA_M2", "UNION_AREA_M2"}


def test_a_geographic_equal_area_crs_is_refused_naming_the_parameter(ioueval_provider):
    algorithm = ioueval_provider.algorithm("overlappairs")
    context = QgsProcessingContext()
    error = equal_area_crs_error(algorithm, {"EQUAL_AREA_CRS": "EPSG:4326"}, context)
    assert error is not None and error.startswith("EQUAL_AREA_CRS: ")
    assert equal_area_crs_error(algorithm, {"EQUAL_AREA_CRS": "EPSG:6933"}, context) is None


def test_no_message_is_an_f_string_inside_tr():
    # tr(f"...") hands the translator the formatted text, which no catalogue holds:
    # translatable texts are tr("... {name} ...").format(name=...).
    provider_dir = Path(__file__).resolve().parent.parent / "processing_provider"
    found = [f"{path.name}:{text[:match.start()].count(chr(10)) + 1}"
             for path in sorted(provider_dir.glob("*.py"))
             for text in [path.read_text(encoding="utf-8")]
             for match in re.finditer(r"\btr\(\s*f[\"']", text)]
    assert found == []


def test_labels_built_from_templates_read_as_before(ioueval_provider):
    overlap = ioueval_provider.algorithm("overlappairs")
    parameter = overlap.parameterDefinition("PREDICTED_ID_FIELD")
    assert parameter.description() == "Id field of the predicted layer (default: feature id only)"
    assert parameter.help() == "Written as pred_id beside the feature id pred_fid."
    raster = ioueval_provider.algorithm("rasteriou")
    assert raster.parameterDefinition("REFERENCE_BAND").description() == (
        "Reference class raster: band")
    classes = ioueval_provider.algorithm("classmapiou")
    assert classes.parameterDefinition("PREDICTED_CLASS_FIELD").description() == (
        "Predicted class map (polygons): class field")
