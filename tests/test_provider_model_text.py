"""ioueval:parsemodeloutput and ioueval:spatialmatch through processing.run."""

import csv
import io
import json

import numpy as np
import pytest
from qgis.core import (
    QgsFeature,
    QgsField,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)
from iou_evaluation.processing_provider.compat import FIELD_DOUBLE, FIELD_INT, FIELD_STRING


def table(rows, fields=("id", "answer", "expected", "width", "height", "model")):
    layer = QgsVectorLayer("None", "answers", "memory")
    types = {"id": FIELD_INT, "width": FIELD_DOUBLE, "height": FIELD_DOUBLE}
    layer.dataProvider().addAttributes([QgsField(f, types.get(f, FIELD_STRING))
                                        for f in fields])
    layer.updateFields()
    features = []
    for row in rows:
        feature = QgsFeature(layer.fields())
        feature.setAttributes(list(row))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def run(algorithm, parameters):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(algorithm, parameters, context=context,
                          feedback=QgsProcessingFeedback())


def test_parsemodeloutput_sorts_geometries_points_and_failures(ioueval_provider):
    layer = table([
        (1, '```json\n{"bboxes": [[10, 20, 110, 220], [50.5, 60, 70, 80.25]]}\n```', None,
         None, None, "a"),
        (2, '{"bboxes": []}', None, None, None, "a"),
        (3, "[[10, 10, 50, 40], [10, NaN, 50, 40], [12, 10, Infinity, 40]]", None, None,
         None, "a"),
        (4, '<point x="50" y="25" alt="dog">dog</point>', None, 200, 100, "b"),
        (5, "I cannot see any coordinates to give.", None, None, None, "b"),
    ])
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "ID_FIELD": "id", "COORDINATE_FORMAT": 1,
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height",
        "OUTPUT": "TEMPORARY_OUTPUT", "POINTS": "TEMPORARY_OUTPUT",
        "FAILURES": "TEMPORARY_OUTPUT",
    })
    polygons = list(result["OUTPUT"].getFeatures())
    assert [(f["row_id"], f["index"]) for f in polygons] == [(1, 0), (1, 1), (3, 0)]
    assert [f.geometry().boundingBox().toRectF().getCoords() for f in polygons] == [
        (10, 20, 110, 220), (50.5, 60, 70, 80.25), (10, 10, 50, 40)]
    assert {f["convention"] for f in polygons} == {"pixel_xyxy"}
    assert {f["convention_source"] for f in polygons} == {"given"}
    points = list(result["POINTS"].getFeatures())
    # COORDINATE_FORMAT pixel_xyxy was chosen: it wins over Molmo's percent (issue 25), so
    # x="50" y="25" are pixels
    assert [(f["row_id"], f.geometry().asWkt()) for f in points] == [(4, "MultiPoint ((50 25))")]
    failures = {(f["row_id"], f["status"]) for f in result["FAILURES"].getFeatures()}
    assert failures == {(2, "empty"), (3, "non_finite"), (5, "unparseable")}
    assert sum(1 for f in result["FAILURES"].getFeatures() if f["row_id"] == 3) == 2
    assert result["COUNT_ROWS"] == 5
    assert result["COUNT_POLYGONS"] == 3
    assert result["COUNT_ROWS_EMPTY"] == 1
    assert result["COUNT_ROWS_FAILED"] == 1


def test_parsemodeloutput_georeferences_pixels_through_the_raster(ioueval_provider, tmp_path):
    from osgeo import gdal, osr

    path = str(tmp_path / "image.tif")
    dataset = gdal.GetDriverByName("GTiff").Create(path, 200, 100, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform((500000.0, 0.5, 0.0, 4000000.0, 0.0, -0.5))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    dataset.SetProjection(srs.ExportToWkt())
    dataset = None
    layer = table([(1, '{"box_2d": [0, 0, 500, 500]}', None, None, None, "a")])
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "RASTER": path, "OUTPUT": "TEMPORARY_OUTPUT",
    })
    feature = next(result["OUTPUT"].getFeatures())
    # half of 200 × 100 px = 100 × 50 px from the top-left corner; 0.5 m pixels
    assert feature.geometry().boundingBox().toRectF().getCoords() == (
        500000, 3999975, 500050, 4000000)
    assert result["OUTPUT"].crs().authid() == "EPSG:32633"


def test_raster_size_fills_blank_size_cells_and_scales_resampled_images(ioueval_provider,
                                                                           tmp_path):
    from osgeo import gdal

    path = str(tmp_path / "image.tif")
    dataset = gdal.GetDriverByName("GTiff").Create(path, 100, 50, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform((1000.0, 2.0, 0.0, 2000.0, 0.0, -2.0))  # no CRS
    dataset = None
    fields = ("id", "answer", "width", "height")
    layer = QgsVectorLayer("None", "answers", "memory")
    layer.dataProvider().addAttributes([QgsField(f, FIELD_STRING) for f in fields])
    layer.updateFields()
    features = []
    for row in [("1", "[0.5, 0.5, 1, 1]", "", ""),  # blank text cells: the raster's size
                ("2", "[0.5, 0.5, 1, 1]", "50", "25")]:  # a half-size copy of the raster
        feature = QgsFeature(layer.fields())
        feature.setAttributes(list(row))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "ID_FIELD": "id", "COORDINATE_FORMAT": 2,
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height", "RASTER": path,
        "OUTPUT": "TEMPORARY_OUTPUT",
    })
    # both rows: the lower-right quarter of the raster, pixels 50–100 × 25–50:
    # X = 1000 + 2·50 … 1000 + 2·100, Y = 2000 - 2·50 … 2000 - 2·25
    boxes = [f.geometry().boundingBox().toRectF().getCoords()
             for f in result["OUTPUT"].getFeatures()]
    assert boxes == [(1100, 1900, 1200, 1950)] * 2
    assert [f["frame"] for f in result["OUTPUT"].getFeatures()] == ["map", "map"]


def test_a_raster_without_georeferencing_keeps_pixels(ioueval_provider, tmp_path):
    from osgeo import gdal

    path = str(tmp_path / "plain.tif")
    gdal.GetDriverByName("GTiff").Create(path, 100, 50, 1, gdal.GDT_Byte)
    layer = table([(1, "[0.5, 0.5, 1, 1]", None, None, None, "a")])
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "COORDINATE_FORMAT": 2, "RASTER": path,
        "OUTPUT": "TEMPORARY_OUTPUT",
    })
    feature = next(result["OUTPUT"].getFeatures())
    # the raster's size is the image size; no geotransform: pixels, not "map"
    assert feature.geometry().boundingBox().toRectF().getCoords() == (50, 25, 100, 50)
    assert feature["frame"] == "pixel"


def test_spatialmatch_scores_rows_and_writes_reports(ioueval_provider, tmp_path):
    layer = table([
        # IoU 1 (the first of two boxes is exact)
        (1, "[[10, 10, 50, 50], [100, 100, 120, 120]]", "[10, 10, 50, 50]", None, None, "m1"),
        # |[0,0,10,10] ∩ [0,0,10,20]| = 100, union 200: IoU 0.5, passes at 0.5
        (2, '{"bboxes": [[0, 0, 10, 10]]}', '{"bbox": [0, 0, 10, 20]}', None, None, "m1"),
        # truncated in the only box: unreadable, IoU 0
        (3, '{"bboxes": [[0, 0, 1', '{"bbox": [0, 0, 10, 10]}', None, None, "m2"),
        # [5,5,15,15] vs [0,0,10,10]: 25 / 175 = 1/7
        (4, "[5, 5, 15, 15]", "[0, 0, 10, 10]", None, None, "m2"),
    ])
    json_path, html_path = tmp_path / "report.json", tmp_path / "report.html"
    result = run("ioueval:spatialmatch", {
        "INPUT": layer, "ANSWER_FIELD": "answer", "EXPECTED_FIELD": "expected",
        "ID_FIELD": "id", "COORDINATE_FORMAT": 1, "GROUP_FIELD": "model",
        "OUTPUT": "TEMPORARY_OUTPUT", "REPORT_JSON": str(json_path),
        "REPORT_HTML": str(html_path),
    })
    rows = {f["row_id"]: f for f in result["OUTPUT"].getFeatures()}
    assert rows[1]["best_iou"] == pytest.approx(1.0)
    assert rows[2]["best_iou"] == pytest.approx(0.5) and rows[2]["passed"]
    assert rows[3]["answer_status"] == "unparseable" and not rows[3]["passed"]
    assert rows[4]["best_iou"] == pytest.approx(1 / 7)
    assert result["PASS_RATE"] == pytest.approx(0.5)
    assert result["MEAN_IOU"] == pytest.approx((1 + 0.5 + 0 + 1 / 7) / 4)
    assert result["PARSE_FAILURE_RATE"] == pytest.approx(0.25)
    report = json.loads(json_path.read_text(encoding="utf-8"))
    assert report["per_group"]["m1"]["pass_rate"] == 1.0
    assert report["per_group"]["m2"]["iou_mean"] == pytest.approx((0 + 1 / 7) / 2)
    # cumulative IoU: (1600 + 100 + 0 + 25) / (1600 + 200 + 100 + 175)
    assert report["metrics"]["cumulative_iou"] == pytest.approx(1725 / 2075)
    from iou_evaluation.core.reports.html import (
        format_number,
        format_percent,
        lookup,
        shown_values,
    )

    html = html_path.read_text(encoding="utf-8")
    assert 'id="summary"' in html and 'id="groups"' in html
    shown = shown_values(html)
    assert (["metrics", "pass_rate"], "50.0 %") in shown
    for path, text in shown:  # every number shown is the JSON's
        value = lookup(report, path)
        assert text in (format_number(value), format_percent(value)), (path, text)


def test_evaluatepolygons_reports_spatial_match_per_reference(ioueval_provider):
    from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE

    result = run("ioueval:evaluatepolygons", {
        "PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
        "REFERENCE_ID_FIELD": "CSBID", "PER_FIELD": "TEMPORARY_OUTPUT",
    })
    rows = list(result["PER_FIELD"].getFeatures())
    # Galtea's rule on the agribound-checked best IoU per reference field
    passing = sum(1 for f in rows if f["best_iou"] >= 0.5)
    assert sum(1 for f in rows if f["spatial_match"]) == passing
    assert result["SPATIAL_MATCH_RATE"] == pytest.approx(passing / 100)
    # one-to-one greedy matching is the main algorithm's default: the same TP, FP, FN
    assert result["GROUNDSET_F1"] == pytest.approx(result["F1"])
    assert result["GROUNDSET_MIOU"] == pytest.approx(
        sum(f["best_iou"] for f in rows) / 100)


@pytest.mark.parametrize("algorithm, parameters, outputs", [
    ("ioueval:parsemodeloutput",
     {"INPUT", "TEXT_FIELD", "ID_FIELD", "COORDINATE_FORMAT", "CRS", "IMAGE_WIDTH_FIELD",
      "IMAGE_HEIGHT_FIELD", "RASTER", "OUTPUT", "POINTS", "FAILURES"},
     {"OUTPUT", "POINTS", "FAILURES"}),
    ("ioueval:spatialmatch",
     {"INPUT", "ANSWER_FIELD", "EXPECTED_FIELD", "ID_FIELD", "COORDINATE_FORMAT",
      "IMAGE_WIDTH_FIELD", "IMAGE_HEIGHT_FIELD", "IOU_THRESHOLD", "GROUP_FIELD", "OUTPUT",
      "REPORT_JSON", "REPORT_HTML"},
     {"OUTPUT", "REPORT_JSON", "REPORT_HTML", "PASS_RATE", "MEAN_IOU", "PARSE_FAILURE_RATE"}),
])
def test_contract_names(ioueval_provider, algorithm, parameters, outputs):
    from qgis.core import QgsApplication

    from iou_evaluation.core.text.model_text import COORDINATE_FORMATS

    alg = QgsApplication.processingRegistry().algorithmById(algorithm)
    names = {p.name() for p in alg.parameterDefinitions()}
    assert parameters <= names
    assert outputs <= {o.name() for o in alg.outputDefinitions()}
    options = alg.parameterDefinition("COORDINATE_FORMAT").options()
    assert [o.split(" ")[0] for o in options] == list(COORDINATE_FORMATS)
    if algorithm == "ioueval:spatialmatch":
        assert alg.parameterDefinition("IOU_THRESHOLD").defaultValue() == 0.5



def test_fraction_progress_maps_into_its_slice_and_cancels(ioueval_provider):
    # the progress callable parsemodeloutput, spatialmatch and the class-map algorithms give
    # their core function
    from iou_evaluation.core.util.progress import EvaluationCanceled
    from iou_evaluation.processing_provider.progress import fraction_progress

    feedback = QgsProcessingFeedback()
    advance = fraction_progress(feedback, 10, 80)
    advance(0.5)
    assert feedback.progress() == pytest.approx(45.0)  # 10 + (80 - 10) * 0.5
    feedback.cancel()
    with pytest.raises(EvaluationCanceled):
        advance(0.75)


def test_padded_square_undoes_llava_padding_in_both_algorithms(ioueval_provider, tmp_path):
    # LLaVA-1.5's "[0.23, 0.31, 0.55, 0.78]" on 800 × 600: the square is 800 wide, the image
    # pasted at y (800 - 600) // 2 = 100: x · 800, y · 800 - 100 → (184, 148, 440, 524)
    layer = table([(1, "[0.23, 0.31, 0.55, 0.78]", '{"bbox": [184, 148, 440, 524]}', 800, 600,
                    "llava")])
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "ID_FIELD": "id", "COORDINATE_FORMAT": 0,
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height", "PADDED_SQUARE": True,
        "OUTPUT": "TEMPORARY_OUTPUT", "POINTS": "TEMPORARY_OUTPUT",
        "FAILURES": "TEMPORARY_OUTPUT",
    })
    (feature,) = result["OUTPUT"].getFeatures()
    assert feature.geometry().boundingBox().toRectF().getCoords() == pytest.approx(
        (184, 148, 440, 524))
    scored = run("ioueval:spatialmatch", {
        "INPUT": layer, "ANSWER_FIELD": "answer", "EXPECTED_FIELD": "expected",
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height", "PADDED_SQUARE": True,
        "OUTPUT": "TEMPORARY_OUTPUT",
    })
    assert scored["MEAN_IOU"] == pytest.approx(1.0)


def test_a_long_answer_writes_a_geopackage_of_its_own_size(ioueval_provider, tmp_path):
    # every box of a 250 KB JSON list once stored the whole list as its span (1.27 GB); now a
    # bounded excerpt once per span: the file stays a small multiple of the answer
    text = json.dumps([[10, 20, 30, 40]] * 14_000)  # 252 KB, 14 000 boxes
    layer = table([(1, text, None, 1000, 1000, "m")])
    out = tmp_path / "boxes.gpkg"
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "ID_FIELD": "id", "COORDINATE_FORMAT": 1,
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height",
        "OUTPUT": str(out), "POINTS": "TEMPORARY_OUTPUT", "FAILURES": "TEMPORARY_OUTPUT",
    })
    assert result["COUNT_POLYGONS"] == 14_000
    assert out.stat().st_size < 40 * len(text)


def test_spatialmatch_writes_a_missing_group_as_null(ioueval_provider, tmp_path):
    # Without GROUP_FIELD, and with a NULL group value: the group column is NULL (an empty
    # CSV cell), as other algorithms write a missing value, not the text "(null)".
    layer = table([(1, "[0, 0, 10, 10]", "[0, 0, 10, 10]", None, None, None),
                   (2, "[0, 0, 10, 10]", "[0, 0, 10, 20]", None, None, "m1")])
    for extra in ({}, {"GROUP_FIELD": "model"}):
        out = tmp_path / f"rows{len(extra)}.csv"
        html = tmp_path / f"report{len(extra)}.html"
        run("ioueval:spatialmatch", {
            "INPUT": layer, "ANSWER_FIELD": "answer", "EXPECTED_FIELD": "expected",
            "ID_FIELD": "id", "COORDINATE_FORMAT": 1, "OUTPUT": str(out),
            "REPORT_HTML": str(html), **extra})
        text = out.read_text(encoding="utf-8")
        assert "(null)" not in text and "(null)" not in html.read_text(encoding="utf-8")
        groups = [row["group"] for row in csv.DictReader(io.StringIO(text))]
        assert groups == (["", ""] if not extra else ["", "m1"])
