"""ioueval:classmapiou through processing.run: the issue's values as polygons, report keys."""

import json

import pytest
from qgis.core import (
    QgsFeature,
    QgsGeometry,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)

from iou_evaluation.core.reports.html import lookup, shown_values

ALGORITHM = "ioueval:classmapiou"


def class_layer(crs, cells, name):
    layer = QgsVectorLayer(f"Polygon?crs={crs}&field=code:integer", name, "memory")
    features = []
    for wkt, code in cells:
        feature = QgsFeature(layer.fields())
        feature.setGeometry(QgsGeometry.fromWkt(wkt))
        feature.setAttributes([code])
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def square(x, y, side):
    return f"POLYGON(({x} {y},{x + side} {y},{x + side} {y + side},{x} {y + side},{x} {y}))"


def run(parameters):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(ALGORITHM, parameters, context=context,
                          feedback=QgsProcessingFeedback())


def test_issue_values_as_polygons(ioueval_provider, tmp_path):
    # Reference [0, 1, 0, 0] against prediction [0, 1, 0, 1] as 100 m squares in EPSG:6933.
    x0, y0 = 1_000_000, 4_000_000
    reference = class_layer("EPSG:6933", [(square(x0 + 100 * k, y0, 100), c)
                                          for k, c in enumerate([0, 1, 0, 0])], "ref")
    predicted = class_layer("EPSG:6933", [(square(x0 + 100 * k, y0, 100), c)
                                          for k, c in enumerate([0, 1, 0, 1])], "pred")
    result = run({
        "PREDICTED": predicted, "REFERENCE": reference,
        "PREDICTED_CLASS_FIELD": "code", "REFERENCE_CLASS_FIELD": "code",
        "OUTPUT_TABLE": str(tmp_path / "classes.csv"),
        "REPORT_JSON": str(tmp_path / "report.json"),
        "REPORT_HTML": str(tmp_path / "report.html"),
    })
    assert result["MIOU"] == pytest.approx(7 / 12)
    # Area-weighted overall accuracy: 3 of the 4 equal squares agree.
    assert result["PIXEL_ACCURACY"] == pytest.approx(3 / 4)
    report = json.loads((tmp_path / "report.json").read_text())
    for key in ("per_class", "miou", "fwiou", "pixel_accuracy", "confusion_matrix", "classes",
                "alignment"):
        assert key in report
    assert report["unit"] == "m2"
    assert report["per_class"]["0"]["iou"] == pytest.approx(2 / 3)
    assert report["per_class"]["0"]["tp"] == pytest.approx(20_000)  # m²
    assert report["per_class"]["1"]["fp"] == pytest.approx(10_000)
    assert QgsVectorLayer(str(tmp_path / "classes.csv"), "t", "ogr").featureCount() == 2
    html = (tmp_path / "report.html").read_text()
    assert 'id="confusion"' in html and 'id="classes"' in html
    for path, text in shown_values(html):
        lookup(report, path)


def test_unknown_class_field_is_named(ioueval_provider):
    from qgis.core import QgsProcessingException

    layer = class_layer("EPSG:6933", [(square(0, 0, 10), 1)], "l")
    # the parameter, the input, the layer and the fields it has, as evaluatepolygons says it
    with pytest.raises(QgsProcessingException, match=(
            "PREDICTED_CLASS_FIELD: the PREDICTED layer 'l' has no field 'nope'; "
            "its fields are: code")):
        run({"PREDICTED": layer, "REFERENCE": layer, "PREDICTED_CLASS_FIELD": "nope",
             "REFERENCE_CLASS_FIELD": "code", "REPORT_JSON": "TEMPORARY_OUTPUT"})


def test_classmapiou_and_rasteriou_agree_on_a_grid_class_map(ioueval_provider, tmp_path):
    import numpy as np
    from test_core_raster_confusion import write_raster

    rng = np.random.default_rng(11)
    reference = rng.integers(1, 5, (4, 5)).astype(np.uint8)
    predicted = np.where(rng.random((4, 5)) < 0.5, reference, rng.integers(1, 6, (4, 5)))
    predicted = predicted.astype(np.uint8)
    predicted[1, 2] = 0  # nodata: no prediction there
    x0, y0, size = 2_000_000, 3_000_000, 20

    def cells(values):
        return [(square(x0 + c * size, y0 - (r + 1) * size, size), int(v))
                for (r, c), v in np.ndenumerate(values) if v != 0]

    common = {"REPORT_HTML": str(tmp_path / "unused.html")}
    run({
        "PREDICTED": class_layer("EPSG:6933", cells(predicted), "pred"),
        "REFERENCE": class_layer("EPSG:6933", cells(reference), "ref"),
        "PREDICTED_CLASS_FIELD": "code", "REFERENCE_CLASS_FIELD": "code",
        "REPORT_JSON": str(tmp_path / "polygons.json"), **common,
    })
    import processing

    gt = (x0, size, 0, y0, 0, -size)
    processing.run("ioueval:rasteriou", {
        "PREDICTED": write_raster(tmp_path / "p.tif", predicted, gt, "EPSG:6933", nodata=0),
        "REFERENCE": write_raster(tmp_path / "r.tif", reference, gt, "EPSG:6933"),
        "REPORT_JSON": str(tmp_path / "raster.json"), **common,
    })
    polygons = json.loads((tmp_path / "polygons.json").read_text())
    raster = json.loads((tmp_path / "raster.json").read_text())
    assert polygons["per_class"].keys() == raster["per_class"].keys()
    assert polygons["miou"] == pytest.approx(raster["miou"], rel=1e-12)
    assert polygons["pixel_accuracy"] == pytest.approx(raster["pixel_accuracy"], rel=1e-12)
    for key, row in polygons["per_class"].items():
        other = raster["per_class"][key]
        assert row["iou"] == pytest.approx(other["iou"], rel=1e-12)
        for area in ("tp_m2", "fp_m2", "fn_m2"):
            assert row["areas"][area] == pytest.approx(other["areas"][area], rel=1e-9)


def test_class_values_keep_the_data_spelling_in_keys_and_table(ioueval_provider, tmp_path):
    # Classes 'A'/'B' stay 'A'/'B' (a gate on per_class.A.iou must find them); reference
    # 'Forest' and prediction 'forest' are one class keyed 'Forest'.
    x0, y0 = 1_000_000, 4_000_000
    cells = [square(x0 + 100 * k, y0, 100) for k in range(3)]

    def text_layer(codes, name):
        layer = QgsVectorLayer("Polygon?crs=EPSG:6933&field=code:string", name, "memory")
        features = []
        for wkt, code in zip(cells, codes):
            feature = QgsFeature(layer.fields())
            feature.setGeometry(QgsGeometry.fromWkt(wkt))
            feature.setAttributes([code])
            features.append(feature)
        layer.dataProvider().addFeatures(features)
        return layer

    run({
        "PREDICTED": text_layer(["A", "B", "forest"], "pred"),
        "REFERENCE": text_layer(["A", "A", "Forest"], "ref"),
        "PREDICTED_CLASS_FIELD": "code", "REFERENCE_CLASS_FIELD": "code",
        "OUTPUT_TABLE": str(tmp_path / "classes.csv"),
        "REPORT_JSON": str(tmp_path / "report.json"),
    })
    report = json.loads((tmp_path / "report.json").read_text())
    assert sorted(report["per_class"]) == ["A", "B", "Forest"]
    assert report["per_class"]["A"]["iou"] == pytest.approx(1 / 2)  # TP 1, FN 1
    assert report["per_class"]["Forest"]["iou"] == pytest.approx(1.0)
    table = QgsVectorLayer(str(tmp_path / "classes.csv"), "t", "ogr")
    assert sorted(f["class_value"] for f in table.getFeatures()) == ["A", "B", "Forest"]


def test_a_polygon_with_a_null_class_moves_nothing(ioueval_provider, tmp_path):
    # Reference class 0 over four 100 m squares; prediction class 0 over the first two and a
    # NULL-class polygon over the last two. The NULL row is dropped and moves nothing: the
    # area compared stays the first two squares (IoU 1), as without that row.
    x0, y0 = 1_000_000, 4_000_000
    reference = class_layer("EPSG:6933", [(square(x0 + 100 * k, y0, 100), 0)
                                          for k in range(4)], "ref")
    results = []
    for k, cells in enumerate((
            [(square(x0, y0, 100), 0), (square(x0 + 100, y0, 100), 0),
             (square(x0 + 200, y0, 100), None), (square(x0 + 300, y0, 100), None)],
            [(square(x0, y0, 100), 0), (square(x0 + 100, y0, 100), 0)])):
        results.append(run({
            "PREDICTED": class_layer("EPSG:6933", cells, "pred"), "REFERENCE": reference,
            "PREDICTED_CLASS_FIELD": "code", "REFERENCE_CLASS_FIELD": "code",
            "REPORT_JSON": str(tmp_path / f"report{k}.json"),
        }))
    assert results[0]["MIOU"] == results[1]["MIOU"] == pytest.approx(1.0)
    with_null, without = (json.loads((tmp_path / f"report{k}.json").read_text())
                          for k in (0, 1))
    assert with_null["alignment"]["area_compared_m2"] == pytest.approx(20_000)
    assert with_null["confusion_matrix"] == without["confusion_matrix"]
    assert with_null["alignment"]["predicted_rows"]["dropped_no_class"] == 2
