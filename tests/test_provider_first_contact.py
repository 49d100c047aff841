"""What a new user meets first: messages that name the problem, empty layers, the same layer
twice, the CSV per-field table, missing dependencies."""

import csv
import json

import pytest
from qgis.core import (
    QgsApplication,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)
from test_provider import ALGORITHM, polygon_layer, run, square_wkt


def check(parameters):
    """(ok, message) of checkParameterValues, as the toolbox and processing.run see it."""
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return algorithm.checkParameterValues(parameters, context)


def _layers():
    reference = polygon_layer("EPSG:32613", [square_wkt(0, 0, 100)], "ref")
    predicted = polygon_layer("EPSG:32613", [square_wkt(10, 0, 100)], "pred")
    return predicted, reference


@pytest.mark.parametrize("threshold", [1.5, -0.2, 0.0])
def test_an_out_of_range_iou_threshold_is_named_with_its_range(ioueval_provider, threshold):
    predicted, reference = _layers()
    ok, message = check({"PREDICTED": predicted, "REFERENCE": reference,
                         "IOU_THRESHOLD": threshold})
    assert not ok
    assert "IOU_THRESHOLD" in message and "(0, 1]" in message and f"{threshold:g}" in message


def test_an_unknown_field_names_the_field_the_layer_and_its_fields(ioueval_provider):
    predicted, reference = _layers()
    ok, message = check({"PREDICTED": predicted, "REFERENCE": reference,
                         "REFERENCE_ID_FIELD": "field_id"})
    assert not ok
    assert "REFERENCE_ID_FIELD" in message and "'field_id'" in message
    assert "ref" in message  # the layer's name
    assert "name" in message  # the fields it has
    ok, message = check({"PREDICTED": predicted, "REFERENCE": reference,
                         "PREDICTED_CLASS_FIELD": "kind", "REFERENCE_CLASS_FIELD": "name"})
    assert not ok and "PREDICTED_CLASS_FIELD" in message and "'kind'" in message
    assert "pred" in message


def test_a_geojson_without_features_is_called_empty_and_scored(ioueval_provider, tmp_path):
    path = tmp_path / "empty.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": []}))
    _, reference = _layers()
    empty = QgsVectorLayer(str(path), "empty", "ogr")
    ok, message = check({"PREDICTED": empty, "REFERENCE": reference})
    assert "no geometry" not in message
    assert ok, message
    result = run({"PREDICTED": str(path), "REFERENCE": reference})
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    # the seed's empty-denominator rules: nothing predicted, one reference missed
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (0, 0, 1)
    assert result["PRECISION"] == 0.0 and result["RECALL"] == 0.0
    assert any("predicted layer is empty" in w for w in report["warnings"])


def test_an_empty_polygon_layer_warns_in_the_report_and_the_log(ioueval_provider):
    predicted = polygon_layer("EPSG:32613", [], "pred")
    _, reference = _layers()
    feedback = _RecordingFeedback()
    import processing
    from test_provider import TEMPORARY_OUTPUTS

    context = QgsProcessingContext()
    result = processing.run(ALGORITHM, {**TEMPORARY_OUTPUTS, "PREDICTED": predicted,
                                        "REFERENCE": reference}, context=context,
                            feedback=feedback)
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    assert any("predicted layer is empty" in w for w in report["warnings"])
    assert any("predicted layer is empty" in w for w in feedback.warnings)
    html = open(result["REPORT_HTML"], encoding="utf-8").read()
    assert "predicted layer is empty" in html
    # both empty: the rates of the 0.1.x convention, 1.0, and a warning for each layer
    both = run({"PREDICTED": predicted, "REFERENCE": polygon_layer("EPSG:32613", [], "ref")})
    assert both["F1"] == 1.0


def test_the_same_layer_as_both_inputs_warns(ioueval_provider):
    _, reference = _layers()
    feedback = _RecordingFeedback()
    import processing
    from test_provider import TEMPORARY_OUTPUTS

    result = processing.run(ALGORITHM, {**TEMPORARY_OUTPUTS, "PREDICTED": reference,
                                        "REFERENCE": reference},
                            context=QgsProcessingContext(), feedback=feedback)
    assert result["F1"] == 1.0
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    assert any("same layer" in w for w in report["warnings"])
    assert any("same layer" in w for w in feedback.warnings)


def test_the_per_field_csv_has_numeric_types_qgis_reads(ioueval_provider, tmp_path):
    predicted, reference = _layers()
    path = tmp_path / "per_field.csv"
    run({"PREDICTED": predicted, "REFERENCE": reference, "PER_FIELD": str(path)})
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][0] == "ref_fid"
    layer = QgsVectorLayer(str(path), "csv", "ogr")
    assert layer.isValid()
    fields = layer.fields()
    for name in ("ref_fid", "n_overlapping_pred", "utm_epsg"):
        assert fields.field(name).isNumeric(), (name, fields.field(name).typeName())
    for name in ("area_m2", "iou", "best_iou", "oversegmentation"):
        assert fields.field(name).isNumeric(), (name, fields.field(name).typeName())
    feature = next(layer.getFeatures())
    assert feature["iou"] == pytest.approx(90 * 100 / (110 * 100))  # 0.818..., a number


class _RecordingFeedback(QgsProcessingFeedback):
    def __init__(self):
        super().__init__()
        self.warnings = []

    def pushWarning(self, text):  # noqa: N802
        self.warnings.append(text)
        super().pushWarning(text)

    def reportError(self, text, fatal=False):  # noqa: N802
        self.warnings.append(text)
        super().reportError(text, fatal)


def test_a_geopackage_named_without_its_layer_is_its_first_layer_and_warns(ioueval_provider):
    # The sample GeoPackage holds csb_2016_2023 (first) and csb_2017_2024: the file alone
    # opens its first layer, which is the reference itself, given by a relative path too.
    import os

    import processing
    from conftest import ROOT, SAMPLE_GPKG
    from test_provider import TEMPORARY_OUTPUTS

    relative = os.path.relpath(SAMPLE_GPKG, os.getcwd())
    for predicted in (str(SAMPLE_GPKG), relative):
        feedback = _RecordingFeedback()
        result = processing.run(ALGORITHM, {
            **TEMPORARY_OUTPUTS, "PREDICTED": predicted,
            "REFERENCE": f"{ROOT / 'resources' / 'csb_fields' / 'csb_fields.gpkg'}"
                         "|layername=csb_2016_2023"}, context=QgsProcessingContext(),
            feedback=feedback)
        assert result["F1"] == 1.0
        assert any("same layer" in w for w in feedback.warnings), predicted
    # The other layer of the same file is not the same layer.
    feedback = _RecordingFeedback()
    processing.run(ALGORITHM, {**TEMPORARY_OUTPUTS,
                               "PREDICTED": f"{SAMPLE_GPKG}|layername=csb_2017_2024",
                               "REFERENCE": str(SAMPLE_GPKG)},
                   context=QgsProcessingContext(), feedback=feedback)
    assert not any("same layer" in w for w in feedback.warnings)
