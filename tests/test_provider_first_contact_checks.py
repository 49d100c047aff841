"""Checks before any work, as a first-time user meets them: an optional package missing when
the run needs it stops the run with a message naming the package and the command that
installs it (not a traceback at the end); an unknown field names the input and, for one layer
of a GeoPackage, the layer inside the file."""

import sys

import pytest
from qgis.core import QgsApplication, QgsProcessingContext, QgsProject
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from test_provider import ALGORITHM, polygon_layer, square_wkt


def _check(algorithm_id, parameters):
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(algorithm_id)
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return algorithm.checkParameterValues(parameters, context)


def _layers():
    reference = polygon_layer("EPSG:32613", [square_wkt(0, 0, 100)], "ref")
    predicted = polygon_layer("EPSG:32613", [square_wkt(10, 0, 100)], "pred")
    return {"PREDICTED": predicted, "REFERENCE": reference}


@pytest.mark.parametrize("package", ["matplotlib", "jinja2"])
def test_an_html_report_without_its_package_is_refused_naming_it(ioueval_provider, tmp_path,
                                                                   monkeypatch, package):
    monkeypatch.setitem(sys.modules, package, None)  # import fails as when not installed
    ok, message = _check(ALGORITHM, {**_layers(), "REPORT_HTML": str(tmp_path / "r.html")})
    assert not ok
    assert message.startswith("REPORT_HTML: ")
    assert f"package {package} is not installed" in message and "pip install" in message
    # without the HTML report the run needs neither
    ok, message = _check(ALGORITHM, {**_layers(), "REPORT_JSON": str(tmp_path / "r.json")})
    assert ok, message


def test_optimal_matching_without_scipy_is_refused_naming_it(ioueval_provider, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    ok, message = _check(ALGORITHM, {**_layers(), "MATCHING": 2})
    assert not ok
    assert message.startswith("MATCHING: ") and "package scipy is not installed" in message
    assert 'pip install "scipy>=1.6"' in message  # not --user: Debian 12 refuses it
    ok, message = _check(ALGORITHM, {**_layers(), "MATCHING": 0})
    assert ok, message


def test_spatial_match_html_report_without_matplotlib_is_refused(ioueval_provider, tmp_path,
                                                                 monkeypatch):
    table = tmp_path / "answers.csv"
    table.write_text('id,answer,expected\n1,"[0, 0, 10, 10]","[0, 0, 10, 10]"\n')
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    ok, message = _check("ioueval:spatialmatch", {
        "INPUT": str(table), "ANSWER_FIELD": "answer", "EXPECTED_FIELD": "expected",
        "REPORT_HTML": str(tmp_path / "m.html")})
    assert not ok and "package matplotlib is not installed" in message


def test_an_unknown_field_names_the_input_and_the_layer_inside_the_geopackage(ioueval_provider):
    # both inputs of the sample are layers of csb_fields.gpkg: "the layer 'csb_fields'" did
    # not say which
    ok, message = _check(ALGORITHM, {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
                                     "REFERENCE_ID_FIELD": "CSB_ID"})
    assert not ok
    assert message.startswith("REFERENCE_ID_FIELD: the REFERENCE layer "
                              "'csb_fields|layername=csb_2016_2023' has no field 'CSB_ID'")
    assert "CSBID" in message
    ok, message = _check(ALGORITHM, {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
                                     "PREDICTED_CLASS_FIELD": "crop",
                                     "REFERENCE_CLASS_FIELD": "CNTY"})
    assert not ok
    assert "the PREDICTED layer 'csb_fields|layername=csb_2017_2024' has no field 'crop'" in message


def _class_map_parameters(algorithm_id, tmp_path):
    if algorithm_id == "ioueval:rasteriou":
        import numpy as np
        from test_core_raster_confusion import write_raster

        cells = np.array([0, 1, 0, 1], np.uint8)
        return {"PREDICTED": write_raster(tmp_path / "p.tif", cells),
                "REFERENCE": write_raster(tmp_path / "r.tif", cells)}
    from test_provider_classmap_iou import class_layer, square

    return {"PREDICTED": class_layer("EPSG:6933", [(square(0, 0, 10), 1)], "p"),
            "REFERENCE": class_layer("EPSG:6933", [(square(0, 0, 10), 1)], "r"),
            "PREDICTED_CLASS_FIELD": "code", "REFERENCE_CLASS_FIELD": "code"}


@pytest.mark.parametrize("algorithm_id", ["ioueval:classmapiou", "ioueval:rasteriou"])
def test_class_map_html_report_without_matplotlib_is_refused(ioueval_provider, tmp_path,
                                                             monkeypatch, algorithm_id):
    parameters = _class_map_parameters(algorithm_id, tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    ok, message = _check(algorithm_id, {**parameters, "REPORT_HTML": str(tmp_path / "c.html")})
    assert not ok and message.startswith("REPORT_HTML: ")
    assert "package matplotlib is not installed" in message
    ok, message = _check(algorithm_id, {**parameters, "REPORT_HTML": None,
                                        "REPORT_JSON": str(tmp_path / "c.json")})
    assert ok, message


def test_compare_predictions_html_report_without_jinja2_is_refused(ioueval_provider, tmp_path,
                                                                   monkeypatch):
    layers = _layers()
    parameters = {"PREDICTED_LAYERS": [layers["PREDICTED"], layers["PREDICTED"]],
                  "REFERENCE": layers["REFERENCE"]}
    monkeypatch.setitem(sys.modules, "jinja2", None)
    ok, message = _check("ioueval:comparepredictions",
                         {**parameters, "REPORT_HTML": str(tmp_path / "c.html")})
    assert not ok and message.startswith("REPORT_HTML: ")
    assert "package jinja2 is not installed" in message
    ok, message = _check("ioueval:comparepredictions", {**parameters, "REPORT_HTML": None})
    assert ok, message


def test_compare_predictions_names_a_geographic_equal_area_crs(ioueval_provider):
    layers = _layers()
    ok, message = _check("ioueval:comparepredictions", {
        "PREDICTED_LAYERS": [layers["PREDICTED"], layers["PREDICTED"]],
        "REFERENCE": layers["REFERENCE"], "EQUAL_AREA_CRS": "EPSG:4326"})
    assert not ok and message.startswith("EQUAL_AREA_CRS: "), message
