"""ioueval:evaluatepolygons through processing.run: outputs, metrics, styles, bad input."""

import json
import sqlite3

import numpy as np
import pyproj
import pytest
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from qgis.core import (
    NULL,
    QgsCoordinateReferenceSystem,
    QgsFeature,
    QgsGeometry,
    QgsProcessingContext,
    QgsProcessingFeatureSourceDefinition,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)

ALGORITHM = "ioueval:evaluatepolygons"

# agribound 1.0.1 evaluate() (the seed's reference implementation, run in its own Python 3.12
# environment with geopandas reading the same GeoPackage) on the bundled sample.
AGRIBOUND_SAMPLE = {
    "count_tp": 85,
    "count_fp": 15,
    "count_fn": 15,
    "precision": 0.85,
    "recall": 0.85,
    "f1": 0.85,
    "iou_mean": 0.8811700679038841,
    "best_iou_mean": 0.7739516363837958,
    "area_error_mean_m2": 9036.279391120974,
    "oversegmentation_mean": 0.15093580780608332,
    "undersegmentation_mean": 0.15471914451315277,
    "count_reference_repaired": 5,
    "count_predicted_repaired": 4,
}


TEMPORARY_OUTPUTS = {
    name: "TEMPORARY_OUTPUT"
    for name in (
        "TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD", "REPORT_JSON",
        "REPORT_HTML",
    )
}


def run(parameters):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(
        ALGORITHM, {**TEMPORARY_OUTPUTS, **parameters}, context=context, feedback=QgsProcessingFeedback()
    )


def layer_of(value):
    return value if isinstance(value, QgsVectorLayer) else QgsVectorLayer(value, "out", "ogr")


def polygon_layer(crs, wkts, name="layer"):
    layer = QgsVectorLayer(f"MultiPolygon?crs={crs}&field=name:string", name, "memory")
    features = []
    for k, wkt in enumerate(wkts):
        feature = QgsFeature(layer.fields())
        if wkt is not None:
            feature.setGeometry(QgsGeometry.fromWkt(wkt))
        feature.setAttributes([f"{name}{k}"])
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def square_wkt(x, y, side):
    return f"POLYGON(({x} {y},{x + side} {y},{x + side} {y + side},{x} {y + side},{x} {y}))"


def test_sample_run_reproduces_agribound(ioueval_provider):
    result = run(
        {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE, "REFERENCE_ID_FIELD": "CSBID"}
    )
    assert layer_of(result["TRUE_POSITIVES"]).featureCount() == 85
    assert layer_of(result["FALSE_POSITIVES"]).featureCount() == 15
    assert layer_of(result["FALSE_NEGATIVES"]).featureCount() == 15
    per_field = layer_of(result["PER_FIELD"])
    assert per_field.featureCount() == 100
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (85, 15, 15)
    assert result["F1"] == pytest.approx(0.85, abs=1e-12)
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    for key, expected in AGRIBOUND_SAMPLE.items():
        assert report["metrics"][key] == pytest.approx(expected, rel=1e-6), key
    assert set(report) >= {"metrics", "parameters", "inputs", "provenance"}
    assert set(report["provenance"]) >= {
        "plugin", "qgis", "python", "shapely", "geos", "pyproj", "proj", "numpy"
    }
    assert report["inputs"]["reference"]["feature_count"] == 100
    assert "<html" in open(result["REPORT_HTML"], encoding="utf-8").read()


def test_per_field_table_joins_back_on_the_reference_id(ioueval_provider):
    result = run(
        {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE, "REFERENCE_ID_FIELD": "CSBID"}
    )
    per_field = layer_of(result["PER_FIELD"])
    reference = QgsVectorLayer(SAMPLE_REFERENCE, "reference", "ogr")
    table_ids = sorted(f["CSBID"] for f in per_field.getFeatures())
    assert table_ids == sorted(f["CSBID"] for f in reference.getFeatures())
    matched = sum(1 for f in per_field.getFeatures() if f["matched"])
    assert matched == 85
    tp_ref_ids = {f["ref_id"] for f in layer_of(result["TRUE_POSITIVES"]).getFeatures()}
    assert tp_ref_ids == {f["CSBID"] for f in per_field.getFeatures() if f["matched"]}


def test_outputs_written_in_small_batches_keep_every_row(ioueval_provider, monkeypatch):
    # At most 7 rows or 100 vertices per batch: every output spans many batches.
    from iou_evaluation.processing_provider import layers

    monkeypatch.setattr(layers, "WRITE_BATCH_ROWS", 7)
    monkeypatch.setattr(layers, "WRITE_BATCH_VERTICES", 100)
    result = run(
        {
            "PREDICTED": SAMPLE_PREDICTED,
            "REFERENCE": SAMPLE_REFERENCE,
            "REFERENCE_ID_FIELD": "CSBID",
        }
    )
    tp, fp, fn, per_field = (
        layer_of(result[name])
        for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD")
    )
    assert [layer.featureCount() for layer in (tp, fp, fn, per_field)] == [85, 15, 15, 100]
    table = {f["CSBID"]: f for f in per_field.getFeatures()}
    for feature in tp.getFeatures():
        assert table[feature["ref_id"]]["matched"]
        assert table[feature["ref_id"]]["iou"] == pytest.approx(feature["iou"], rel=1e-12)
    unmatched = {key for key, row in table.items() if not row["matched"]}
    assert {f["CSBID"] for f in fn.getFeatures()} == unmatched
    assert all(table[key]["iou"] == NULL and table[key]["pred_fid"] == NULL for key in unmatched)
    assert all(not f.geometry().isNull() for layer in (tp, fp, fn) for f in layer.getFeatures())


def small_layers():
    """Reference: three 100 m squares in UTM 32N. Predicted, in WGS 84: the first square,
    the second shifted 20 m east (IoU 80/120), nothing for the third, one spurious square."""
    x, y = 500_000, 5_300_000
    reference = polygon_layer(
        "EPSG:32632",
        [square_wkt(x, y, 100), square_wkt(x + 200, y, 100), square_wkt(x + 400, y, 100)],
        "ref",
    )
    to_wgs84 = pyproj.Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True)

    def wgs84_square(x0, y0, side):
        xs = np.array([x0, x0 + side, x0 + side, x0, x0], dtype=float)
        ys = np.array([y0, y0, y0 + side, y0 + side, y0], dtype=float)
        lon, lat = to_wgs84.transform(xs, ys)
        # float(): under numpy 2 a numpy scalar's repr is "np.float64(...)", not a number
        points = ",".join(f"{float(a)!r} {float(b)!r}" for a, b in zip(lon, lat))
        return f"POLYGON(({points}))"

    predicted = polygon_layer(
        "EPSG:4326",
        [wgs84_square(x, y, 100), wgs84_square(x + 220, y, 100), wgs84_square(x, y + 5000, 100)],
        "pred",
    )
    return reference, predicted


def test_layers_in_two_crss_are_scored_by_hand(ioueval_provider):
    reference, predicted = small_layers()
    result = run({"PREDICTED": predicted, "REFERENCE": reference})
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (2, 1, 1)
    assert result["PRECISION"] == pytest.approx(2 / 3)
    assert result["RECALL"] == pytest.approx(2 / 3)
    assert result["F1"] == pytest.approx(2 / 3)
    assert result["IOU_MEAN"] == pytest.approx((1 + 80 / 120) / 2, abs=5e-6)
    tp = layer_of(result["TRUE_POSITIVES"])
    assert tp.crs().authid() == "EPSG:32632"  # outputs in the reference layer's CRS
    areas = sorted(f.geometry().area() for f in tp.getFeatures())
    assert areas == pytest.approx([10_000, 10_000], rel=1e-5)
    fp = layer_of(result["FALSE_POSITIVES"])
    assert [f["overlaps_reference"] for f in fp.getFeatures()] == [False]
    fn = layer_of(result["FALSE_NEGATIVES"])
    assert [f["name"] for f in fn.getFeatures()] == ["ref2"]
    assert layer_of(result["PER_FIELD"]).fields().indexOf("ref_fid") >= 0


def test_selected_features_only_is_honoured(ioueval_provider):
    reference, predicted = small_layers()
    QgsProject.instance().addMapLayers([reference, predicted])
    try:
        first_two = [f.id() for f in reference.getFeatures()][:2]
        reference.selectByIds(first_two)
        result = run(
            {
                "PREDICTED": predicted,
                "REFERENCE": QgsProcessingFeatureSourceDefinition(reference.id(), True),
            }
        )
        assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (2, 1, 0)
    finally:
        QgsProject.instance().removeMapLayers([reference.id(), predicted.id()])


def test_bad_geometries_give_a_result_and_counts(ioueval_provider):
    reference = polygon_layer("EPSG:3857", [square_wkt(0, 0, 1), None, square_wkt(5, 0, 1)], "r")
    predicted = polygon_layer(
        "EPSG:3857",
        ["POLYGON((0 0, 1 1, 0 1, 1 0, 0 0))", None, "POLYGON((5 0, 6 0, 6 0, 5 0))"],
        "p",
    )
    result = run({"PREDICTED": predicted, "REFERENCE": reference, "IOU_THRESHOLD": 0.4})
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())["metrics"]
    assert report["count_reference_dropped"] == 1  # the null geometry
    assert report["count_predicted_dropped"] == 2  # null, and a ring of zero area
    assert report["count_predicted_repaired"] == 1  # the bow-tie, IoU 0.5 after repair
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (1, 0, 1)


def test_invalid_threshold_is_rejected_naming_the_parameter(ioueval_provider):
    from qgis.core import QgsApplication

    reference, predicted = small_layers()
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    context = QgsProcessingContext()
    ok, message = algorithm.checkParameterValues(
        {"PREDICTED": predicted, "REFERENCE": reference, "IOU_THRESHOLD": 0.0,
         **TEMPORARY_OUTPUTS},
        context,
    )
    assert not ok and "IOU_THRESHOLD" in message


def test_outputs_written_to_geopackage_carry_their_style(ioueval_provider, tmp_path):
    reference, predicted = small_layers()
    outputs = {
        name: str(tmp_path / f"{name.lower()}.gpkg")
        for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES")
    }
    run({"PREDICTED": predicted, "REFERENCE": reference, **outputs})
    for name, path in outputs.items():
        with sqlite3.connect(path) as db:
            rows = db.execute("SELECT stylename, useasdefault FROM layer_styles").fetchall()
        assert rows == [(name.lower(), 1)]
    # QGIS opens the file with its default style: TP in Okabe-Ito blue
    layer = QgsVectorLayer(outputs["TRUE_POSITIVES"], "tp", "ogr")
    color = layer.renderer().symbol().symbolLayer(0).strokeColor().name()
    assert color == "#0072b2"


def test_outputs_in_one_geopackage_and_in_files_of_their_own_are_complete_and_styled(
    ioueval_provider, tmp_path
):
    # TP and FP as two layers of one GeoPackage: the outputs are closed one after the other
    # (two writers on one file at once would lock each other out); every row and every
    # style must arrive. (With a file per output, as in the test above, each closes on a
    # worker thread while the next is written.)
    shared = tmp_path / "shared.gpkg"
    outputs = {
        "TRUE_POSITIVES": f"ogr:dbname='{shared}' table=\"tp\" (geom)",
        "FALSE_POSITIVES": f"ogr:dbname='{shared}' table=\"fp\" (geom)",
        "FALSE_NEGATIVES": str(tmp_path / "fn.gpkg"),
        "PER_FIELD": str(tmp_path / "per_field.gpkg"),
    }
    results = run({"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE, **outputs})
    counts = {
        name: layer_of(results[name]).featureCount() for name in outputs
    }
    assert counts == {"TRUE_POSITIVES": 85, "FALSE_POSITIVES": 15, "FALSE_NEGATIVES": 15,
                      "PER_FIELD": 100}
    with sqlite3.connect(shared) as db:
        styles = db.execute("SELECT f_table_name, stylename FROM layer_styles").fetchall()
    assert sorted(styles) == [("fp", "false_positives"), ("tp", "true_positives")]
    with sqlite3.connect(tmp_path / "fn.gpkg") as db:
        styles = db.execute("SELECT stylename FROM layer_styles").fetchall()
    assert styles == [("false_negatives",)]


def test_post_processor_styles_a_layer_loaded_into_a_project(ioueval_provider):
    from iou_evaluation.processing_provider.styles import StylePostProcessor, style_path

    layer = QgsVectorLayer("MultiPolygon?crs=EPSG:3857", "fp", "memory")
    StylePostProcessor.for_style(style_path("false_positives")).postProcessLayer(
        layer, QgsProcessingContext(), QgsProcessingFeedback()
    )
    assert layer.renderer().symbol().symbolLayer(0).strokeColor().name() == "#e69f00"


def test_layer_without_crs_against_one_with_is_a_clear_error(ioueval_provider):
    from qgis.core import QgsProcessingException

    reference, _ = small_layers()
    predicted = polygon_layer("", [square_wkt(0, 0, 1)], "p")
    predicted.setCrs(QgsCoordinateReferenceSystem())
    with pytest.raises(QgsProcessingException, match="predicted layer has no CRS"):
        run({"PREDICTED": predicted, "REFERENCE": reference})


# agribound 1.0.1 evaluate(pred, ref, strata="CDL2016", size_bins="auto", bootstrap=200,
# matching="many_to_one") on the bundled sample (its own environment, geopandas reading).
AGRIBOUND_SAMPLE_STRATA = {
    "4": {"n": 4, "count_tp": 3, "count_fp": 1, "count_fn": 1, "ci_recall": [0.25, 1.0]},
    "24": {"n": 59, "count_tp": 56, "count_fp": 5, "count_fn": 3,
           "ci_recall": [0.8813559322033898, 0.9834745762711866]},
    "36": {"n": 37, "count_tp": 26, "count_fp": 9, "count_fn": 11,
           "ci_recall": [0.539864864864865, 0.8378378378378378]},
}


def test_strata_size_classes_and_bootstrap_reproduce_agribound(ioueval_provider):
    result = run(
        {
            "PREDICTED": SAMPLE_PREDICTED,
            "REFERENCE": SAMPLE_REFERENCE,
            "STRATA_FIELD": "CDL2016",
            "SIZE_BINS": "auto",
            "BOOTSTRAP": 200,
            "MATCHING": 1,  # many_to_one
        }
    )
    metrics = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())["metrics"]
    assert metrics["matching"] == "many_to_one"
    assert metrics["size_class_edges_ha"] == [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
    assert metrics["bootstrap"]["ci"]["f1"] == pytest.approx(
        [0.7920182235614865, 0.9119618105783647], rel=1e-9
    )
    for key, expected in AGRIBOUND_SAMPLE_STRATA.items():
        stratum = metrics["per_stratum"][key]
        for name in ("n", "count_tp", "count_fp", "count_fn"):
            assert stratum[name] == expected[name]
        assert stratum["ci"]["recall"] == pytest.approx(expected["ci_recall"], rel=1e-9)
    size_class = metrics["per_size_class"]["20-50"]
    assert (size_class["n"], size_class["count_tp"], size_class["count_fp"]) == (5, 5, 8)
    per_field = layer_of(result["PER_FIELD"])
    assert {"stratum", "size_class"} <= set(per_field.fields().names())


def test_invalid_size_bins_are_rejected_naming_the_parameter(ioueval_provider):
    from qgis.core import QgsApplication

    reference, predicted = small_layers()
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    ok, message = algorithm.checkParameterValues(
        {"PREDICTED": predicted, "REFERENCE": reference, "SIZE_BINS": "5,1",
         **TEMPORARY_OUTPUTS},
        QgsProcessingContext(),
    )
    assert not ok and "SIZE_BINS" in message


def test_groups_classes_taxonomy_and_ignore_regions_through_the_algorithm(
    ioueval_provider, tmp_path
):
    # Two images with the same 10 m square: image a holds a house predicted as "House"
    # against a "building" reference (child answers for parent: TP); image b's reference is
    # a crowd region covering two small predictions (ignored) and a tree missed (FN).
    reference = QgsVectorLayer(
        "Polygon?crs=EPSG:3857&field=img:string&field=cls:string&field=crowd:integer",
        "ref", "memory",
    )
    predicted = QgsVectorLayer(
        "Polygon?crs=EPSG:3857&field=img:string&field=cls:string", "pred", "memory"
    )

    def add(layer, wkt, *attributes):
        feature = QgsFeature(layer.fields())
        feature.setGeometry(QgsGeometry.fromWkt(wkt))
        feature.setAttributes(list(attributes))
        layer.dataProvider().addFeatures([feature])

    add(reference, square_wkt(0, 0, 10), "a", "building", 0)
    add(reference, square_wkt(0, 0, 100), "b", "building", 1)
    add(reference, square_wkt(200, 0, 10), "b", "tree", 0)
    add(predicted, square_wkt(0, 0, 10), "a", "House")
    add(predicted, square_wkt(10, 10, 10), "b", "house")
    add(predicted, square_wkt(50, 50, 10), "b", "building")
    taxonomy = tmp_path / "taxonomy.json"
    taxonomy.write_text(json.dumps({"house": "building"}), encoding="utf-8")
    result = run(
        {
            "PREDICTED": predicted,
            "REFERENCE": reference,
            "PREDICTED_GROUP_FIELD": "img",
            "REFERENCE_GROUP_FIELD": "img",
            "PREDICTED_CLASS_FIELD": "cls",
            "REFERENCE_CLASS_FIELD": "cls",
            "TAXONOMY": str(taxonomy),
            "REFERENCE_IGNORE_FIELD": "crowd",
        }
    )
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (1, 0, 1)
    # The two predictions on the crowd region are in no layer output: neither TP nor FP.
    assert [layer_of(result[name]).featureCount() for name in
            ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES")] == [1, 0, 1]
    metrics = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())["metrics"]
    assert metrics["count_predicted_ignored"] == 2
    assert metrics["per_group"]["a"]["count_tp"] == 1
    assert metrics["per_group"]["b"]["count_fn"] == 1
    assert metrics["per_class"]["building"]["count_tp"] == 1
    assert metrics["per_class"]["tree"]["count_fn"] == 1


def test_a_taxonomy_that_is_not_a_json_object_is_rejected(ioueval_provider, tmp_path):
    from qgis.core import QgsApplication

    bad = tmp_path / "taxonomy.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    reference, predicted = small_layers()
    algorithm = QgsApplication.processingRegistry().createAlgorithmById(ALGORITHM)
    ok, message = algorithm.checkParameterValues(
        {"PREDICTED": predicted, "REFERENCE": reference, "TAXONOMY": str(bad),
         **TEMPORARY_OUTPUTS},
        QgsProcessingContext(),
    )
    assert not ok and "TAXONOMY" in message


def test_boundary_tolerance_through_the_algorithm_by_hand(ioueval_provider):
    # A 100 m square against the same square shifted 3 m east, in UTM 32N (its own zone):
    # with t = 5 m every boundary point lies within 3 m of the other boundary, so boundary
    # precision = recall = 1, and the Hausdorff distance is 3 m.
    x, y = 500_000, 5_300_000
    reference = polygon_layer("EPSG:32632", [square_wkt(x, y, 100)], "r")
    predicted = polygon_layer("EPSG:32632", [square_wkt(x + 3, y, 100)], "p")
    result = run(
        {"PREDICTED": predicted, "REFERENCE": reference, "BOUNDARY_TOLERANCE": 5.0}
    )
    metrics = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())["metrics"]
    assert metrics["boundary_precision"] == pytest.approx(1.0)
    assert metrics["boundary_recall"] == pytest.approx(1.0)
    assert metrics["hausdorff_mean_m"] == pytest.approx(3.0, abs=0.5)
    assert metrics["utm_epsg_codes"] == [32632]
    # with t = 2 m, reference square [0,100]², prediction [3,103]x[0,100]: the bottom and top
    # edges are within 2 m for x >= 1 (99 m each; before x = 3 the nearest point is the
    # prediction's corner or left edge, 3 - x away); the left edge is 3 m away; the right
    # edge x = 100 crosses the prediction's bottom and top edges, within 2 m for 2 m at each
    # end. (99 + 99 + 4) / 400, and the same for the prediction by symmetry.
    result = run(
        {"PREDICTED": predicted, "REFERENCE": reference, "BOUNDARY_TOLERANCE": 2.0}
    )
    metrics = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())["metrics"]
    assert metrics["boundary_recall"] == pytest.approx(202 / 400, rel=1e-6)
    assert metrics["boundary_precision"] == pytest.approx(202 / 400, rel=1e-6)


def test_the_predicted_id_names_predictions_in_every_output(ioueval_provider, tmp_path):
    from qgis_layers import box_wkt, memory_layer

    # r1 = [0,10]² matched by pA = [1,11]×[0,10] (IoU 90/110); r2 = [20,30]×[0,10] missed,
    # pB = [27,37]×[0,10] overlaps it (IoU 30/170); pC overlaps nothing.
    predicted = memory_layer([box_wkt(1, 0, 11, 10), box_wkt(27, 0, 37, 10),
                              box_wkt(50, 0, 60, 10)], ids=["pA", "pB", "pC"], name="p")
    reference = memory_layer([box_wkt(0, 0, 10, 10), box_wkt(20, 0, 30, 10)],
                             ids=["r1", "r2"], name="r")
    fid = {f["id"]: f.id() for f in predicted.getFeatures()}
    result = run({
        "PREDICTED": predicted, "REFERENCE": reference, "REFERENCE_ID_FIELD": "id",
        "PREDICTED_ID_FIELD": "id", "PER_FIELD": str(tmp_path / "per_field.csv"),
    })
    table = {f["id"]: f for f in layer_of(result["PER_FIELD"]).getFeatures()}
    assert (table["r1"]["pred_id"], table["r1"]["pred_fid"]) == ("pA", fid["pA"])
    assert table["r1"]["max_overlap_pred_id"] == "pA"
    assert table["r1"]["iou"] == pytest.approx(90 / 110)
    assert table["r2"]["pred_id"] in (NULL, None, "") and table["r2"]["pred_fid"] in (NULL, None)
    assert (table["r2"]["max_overlap_pred_id"], table["r2"]["max_overlap_pred_fid"]) == (
        "pB", fid["pB"])
    header = (tmp_path / "per_field.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[header.index("pred_fid") + 1] == "pred_id"
    tp = [(f["ref_id"], f["pred_id"], f["pred_fid"])
          for f in layer_of(result["TRUE_POSITIVES"]).getFeatures()]
    assert tp == [("r1", "pA", fid["pA"])]
    fp = sorted((f["pred_id"], f["pred_fid"])
                for f in layer_of(result["FALSE_POSITIVES"]).getFeatures())
    assert fp == [("pB", fid["pB"]), ("pC", fid["pC"])]
    fn = [(f["id"], f["max_overlap_pred_id"], f["max_overlap_pred_fid"])
          for f in layer_of(result["FALSE_NEGATIVES"]).getFeatures()]
    assert fn == [("r2", "pB", fid["pB"])]


def test_without_a_predicted_id_the_layers_still_name_the_prediction_by_feature_id(
        ioueval_provider):
    from qgis_layers import box_wkt, memory_layer

    predicted = memory_layer([box_wkt(1, 0, 11, 10), box_wkt(50, 0, 60, 10)], name="p")
    reference = memory_layer([box_wkt(0, 0, 10, 10)], name="r")
    fids = [f.id() for f in predicted.getFeatures()]
    result = run({"PREDICTED": predicted, "REFERENCE": reference})
    assert [f["pred_fid"] for f in layer_of(result["TRUE_POSITIVES"]).getFeatures()] == fids[:1]
    fp = layer_of(result["FALSE_POSITIVES"])
    assert [f["pred_fid"] for f in fp.getFeatures()] == fids[1:]
    assert "pred_id" not in fp.fields().names()


def test_null_ids_are_counted_apart_from_repeated_ones(ioueval_provider):
    # Five predictions with ids pA, NULL, pA, NULL, pB: two have no id (not "a repeated
    # value NULL") and one repeats pA; the reference ids r1, NULL have one NULL.
    from qgis.core import QgsProcessingFeedback
    from qgis_layers import box_wkt, memory_layer
    from qgis_layers import run as run_with

    class Warnings(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.warnings = []

        def pushWarning(self, text):  # noqa: N802
            self.warnings.append(text)

    predicted = memory_layer([box_wkt(20 * k, 0, 20 * k + 10, 10) for k in range(5)],
                             ids=["pA", None, "pA", None, "pB"], name="p")
    reference = memory_layer([box_wkt(0, 0, 10, 10), box_wkt(20, 0, 30, 10)],
                             ids=["r1", None], name="r")
    feedback = Warnings()
    run_with(ALGORITHM, {**TEMPORARY_OUTPUTS, "PREDICTED": predicted, "REFERENCE": reference,
                         "PREDICTED_ID_FIELD": "id", "REFERENCE_ID_FIELD": "id"},
             feedback=feedback)
    ids = [w for w in feedback.warnings if "_ID_FIELD" in w]
    assert ids == [
        "REFERENCE_ID_FIELD: id is NULL on 1 reference: the per-field table cannot be "
        "joined back one to one",
        "PREDICTED_ID_FIELD: id is NULL on 2 predictions: pred_id does not name one "
        "prediction (pred_fid does)",
        "PREDICTED_ID_FIELD: id has repeated values (1 row repeats an earlier value): "
        "pred_id does not name one prediction (pred_fid does)",
    ]


def test_a_missing_predicted_id_field_is_named(ioueval_provider):
    from qgis.core import QgsProcessingException
    from qgis_layers import box_wkt, memory_layer

    layer = memory_layer([box_wkt(0, 0, 1, 1)])
    with pytest.raises(QgsProcessingException, match="PREDICTED_ID_FIELD"):
        run({"PREDICTED": layer, "REFERENCE": memory_layer([box_wkt(0, 0, 1, 1)]),
             "PREDICTED_ID_FIELD": "no_such_field"})
