"""Bad parameters are rejected before any work, runs never corrupt inputs, cancellation
leaves no finished-looking report, and the same inputs give the same outputs."""

import hashlib
import math
import json
import shutil

import pytest
from conftest import SAMPLE_GPKG
from qgis.core import (
    QgsApplication,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)
from test_provider import TEMPORARY_OUTPUTS, run, small_layers

ALGORITHM = "ioueval:evaluatepolygons"


def check(parameters):
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return algorithm.checkParameterValues({**TEMPORARY_OUTPUTS, **parameters}, context)


@pytest.mark.parametrize(
    "override, parameter",
    [
        ({"IOU_THRESHOLD": 0.0}, "IOU_THRESHOLD"),
        ({"IOU_THRESHOLD": 1.5}, "IOU_THRESHOLD"),
        ({"STRATA_FIELD": "no_such_field"}, "STRATA_FIELD"),
        ({"REFERENCE_ID_FIELD": "no_such_field"}, "REFERENCE_ID_FIELD"),
        ({"SIZE_BINS": "0,2,1"}, "SIZE_BINS"),
        ({"SIZE_BINS": "small"}, "SIZE_BINS"),
        ({"EQUAL_AREA_CRS": "EPSG:4326"}, "EQUAL_AREA_CRS"),
        ({"REPORT_JSON": "/no/such/folder/report.json"}, "REPORT_JSON"),
        ({"TRUE_POSITIVES": "/no/such/folder/tp.gpkg"}, "TRUE_POSITIVES"),
        ({"PREDICTED_CLASS_FIELD": "name"}, "REFERENCE_CLASS_FIELD"),
    ],
)
def test_invalid_parameters_are_rejected_naming_the_parameter(
    ioueval_provider, override, parameter
):
    reference, predicted = small_layers()
    ok, message = check({"PREDICTED": predicted, "REFERENCE": reference, **override})
    assert not ok
    assert parameter in message


def test_a_point_layer_is_rejected_as_predicted(ioueval_provider):
    reference, _ = small_layers()
    points = QgsVectorLayer("Point?crs=EPSG:32632", "points", "memory")
    ok, message = check({"PREDICTED": points, "REFERENCE": reference})
    assert not ok and "PREDICTED" in message and "polygon" in message


class CancelAt(QgsProcessingFeedback):
    """Asks to cancel once progress passes a given percentage."""

    def __init__(self, percent):
        super().__init__()
        self.percent = percent
        self.progressChanged.connect(self._maybe_cancel)

    def _maybe_cancel(self, value):
        if value >= self.percent:
            self.cancel()


@pytest.mark.parametrize("percent", [5, 40, 85])
def test_cancelled_run_leaves_no_report(ioueval_provider, tmp_path, percent):
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    context = QgsProcessingContext()
    parameters = {
        **TEMPORARY_OUTPUTS,
        "PREDICTED": f"{SAMPLE_GPKG}|layername=csb_2017_2024",
        "REFERENCE": f"{SAMPLE_GPKG}|layername=csb_2016_2023",
        "BOOTSTRAP": 50,
        "REPORT_JSON": str(tmp_path / "report.json"),
        "REPORT_HTML": str(tmp_path / "report.html"),
    }
    results, ok = algorithm.run(parameters, context, CancelAt(percent))
    assert not (tmp_path / "report.json").exists()
    assert not (tmp_path / "report.html").exists()
    assert list(tmp_path.iterdir()) == []  # no half-written temporary files either
    assert "COUNT_TP" not in (results or {})


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_input_geopackage_is_byte_identical_after_a_run(ioueval_provider, tmp_path):
    gpkg = tmp_path / "fields.gpkg"
    shutil.copy(SAMPLE_GPKG, gpkg)
    before = sha256(gpkg)
    run(
        {
            "PREDICTED": f"{gpkg}|layername=csb_2017_2024",
            "REFERENCE": f"{gpkg}|layername=csb_2016_2023",
            "REFERENCE_ID_FIELD": "CSBID",
        }
    )
    assert sha256(gpkg) == before


def test_same_inputs_and_seed_give_the_same_report(ioueval_provider, tmp_path):
    reports = []
    for k in range(2):
        path = tmp_path / f"report{k}.json"
        run(
            {
                "PREDICTED": f"{SAMPLE_GPKG}|layername=csb_2017_2024",
                "REFERENCE": f"{SAMPLE_GPKG}|layername=csb_2016_2023",
                "STRATA_FIELD": "CDL2016",
                "BOOTSTRAP": 100,
                "BOOTSTRAP_SEED": 3,
                "REPORT_JSON": str(path),
            }
        )
        reports.append(json.loads(path.read_text(encoding="utf-8")))
    assert reports[0]["metrics"] == reports[1]["metrics"]
    assert reports[0]["parameters"] == reports[1]["parameters"]


def test_two_outputs_to_one_file_are_rejected(ioueval_provider, tmp_path):
    reference, predicted = small_layers()
    same = str(tmp_path / "same.gpkg")
    ok, message = check(
        {"PREDICTED": predicted, "REFERENCE": reference, "TRUE_POSITIVES": same,
         "FALSE_POSITIVES": same}
    )
    assert not ok and "FALSE_POSITIVES" in message and "TRUE_POSITIVES" in message


def test_a_text_score_field_is_rejected(ioueval_provider):
    reference, predicted = small_layers()  # predicted has a text field "name"
    ok, message = check({"PREDICTED": predicted, "REFERENCE": reference, "SCORE_FIELD": "name"})
    assert not ok and "SCORE_FIELD" in message


def test_geopackage_layers_written_without_crs_are_planar(ioueval_provider, tmp_path):
    # OGR writes srs_id 0, which QGIS reads as a valid "Undefined geographic SRS": both
    # layers without a CRS must be evaluated in their own (planar) units, here metres.
    from osgeo import ogr

    path = str(tmp_path / "nocrs.gpkg")
    dataset = ogr.GetDriverByName("GPKG").CreateDataSource(path)
    for name, shift in (("ref", 0), ("pred", 10)):
        layer = dataset.CreateLayer(name, srs=None, geom_type=ogr.wkbPolygon)
        feature = ogr.Feature(layer.GetLayerDefn())
        feature.SetGeometry(ogr.CreateGeometryFromWkt(
            f"POLYGON(({shift} 0,{shift + 100} 0,{shift + 100} 100,{shift} 100,{shift} 0))"
        ))
        layer.CreateFeature(feature)
    dataset = None
    result = run({"PREDICTED": f"{path}|layername=pred", "REFERENCE": f"{path}|layername=ref"})
    assert result["COUNT_TP"] == 1
    assert result["IOU_MEAN"] == pytest.approx(90 / 110)


def test_a_reference_with_arcs_is_evaluated_as_its_straight_segments(ioueval_provider, tmp_path):
    # A CurvePolygon circle of radius 100 (two half-circle arcs) inside a 200 m square: read
    # as the inscribed 360-gon (1° chords), area 180·100²·sin(1°); IoU = that / 200².
    from osgeo import ogr

    path = str(tmp_path / "arcs.gpkg")
    dataset = ogr.GetDriverByName("GPKG").CreateDataSource(path)
    for name, wkt in (
        ("ref", "CURVEPOLYGON (CIRCULARSTRING (-100 0, 0 100, 100 0, 0 -100, -100 0))"),
        ("pred", "POLYGON ((-100 -100, 100 -100, 100 100, -100 100, -100 -100))"),
    ):
        layer = dataset.CreateLayer(name, srs=None, geom_type=ogr.wkbUnknown)
        feature = ogr.Feature(layer.GetLayerDefn())
        feature.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
        layer.CreateFeature(feature)
    dataset = None
    result = run({"PREDICTED": f"{path}|layername=pred", "REFERENCE": f"{path}|layername=ref"})
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (1, 0, 0)
    assert result["IOU_MEAN"] == pytest.approx(180 * 100**2 * math.sin(math.radians(1)) / 200**2,
                                               rel=1e-9)


@pytest.mark.parametrize("units", ["0", "9"])
def test_a_run_cancelled_while_writing_leaves_no_output_file(ioueval_provider, tmp_path,
                                                             monkeypatch, units):
    monkeypatch.setenv("IOU_EVALUATION_WORK_UNITS", units)  # one piece, or units on disk
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    outputs = {name: str(tmp_path / f"{name.lower()}.gpkg")
               for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD")}
    parameters = {
        **outputs,
        "PREDICTED": f"{SAMPLE_GPKG}|layername=csb_2017_2024",
        "REFERENCE": f"{SAMPLE_GPKG}|layername=csb_2016_2023",
        "REPORT_JSON": str(tmp_path / "report.json"),
    }
    results, ok = algorithm.run(parameters, QgsProcessingContext(), CancelAt(80))
    assert list(tmp_path.iterdir()) == []
    assert "COUNT_TP" not in (results or {})


def test_null_reference_ids_are_null_in_every_output_and_the_report(ioueval_provider, tmp_path):
    from qgis_layers import box_wkt, memory_layer

    reference = memory_layer([box_wkt(0, 0, 100, 100), box_wkt(200, 0, 300, 100)],
                             crs="EPSG:32613", ids=["a", None], name="reference")
    predicted = memory_layer([box_wkt(0, 0, 100, 100)], crs="EPSG:32613", name="predicted")
    run({"PREDICTED": predicted, "REFERENCE": reference, "REFERENCE_ID_FIELD": "id",
         "REPORT_JSON": str(tmp_path / "report.json"),
         "REPORT_HTML": str(tmp_path / "report.html")})
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["metrics"]["count_fn"] == 1  # the field with the NULL id, as JSON null


def test_an_empty_reference_with_bootstrap_and_a_tolerance_writes_its_html_report(
        ioueval_provider, tmp_path):
    from qgis_layers import box_wkt, memory_layer

    reference = memory_layer([], crs="EPSG:32613", name="reference")
    predicted = memory_layer([box_wkt(0, 0, 100, 100)], crs="EPSG:32613", name="predicted")
    run({"PREDICTED": predicted, "REFERENCE": reference, "BOOTSTRAP": 20,
         "BOUNDARY_TOLERANCE": 5, "REPORT_HTML": str(tmp_path / "report.html")})
    assert "n/a" in (tmp_path / "report.html").read_text(encoding="utf-8")
