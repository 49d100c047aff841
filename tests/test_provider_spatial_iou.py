"""ioueval:spatialiou through processing.run: the guide's four cases, per-id rows."""

import pytest
from qgis.core import QgsProcessingException
from qgis_layers import box_wkt, memory_layer, rows_of, run

ALGORITHM = "ioueval:spatialiou"
BOWTIE = "POLYGON((0 0,2 2,2 0,0 2,0 0))"


def spatial_iou(predicted, reference, **parameters):
    return run(
        ALGORITHM,
        {"PREDICTED": predicted, "REFERENCE": reference, "OUTPUT": "TEMPORARY_OUTPUT",
         **parameters},
    )


@pytest.mark.parametrize(
    "predicted, reference, expected",
    [
        ([box_wkt(0, 0, 10, 10)], [box_wkt(0, 0, 10, 10)], 1.0),  # identical
        ([box_wkt(0, 0, 1, 1)], [box_wkt(50, 50, 51, 51)], 0.0),  # disjoint
        ([BOWTIE], [box_wkt(0, 0, 2, 2)], 0.5),  # repaired: two triangles of area 1, of 4
        ([box_wkt(0, 0, 20, 20)], [box_wkt(0, 0, 10, 10)], 0.25),  # over-claim: 100 / 400
        ([box_wkt(0, 0, 10, 5)], [box_wkt(0, 0, 10, 10)], 0.5),  # partial cover: 50 / 100
    ],
)
def test_the_guides_cases(ioueval_provider, predicted, reference, expected):
    result = spatial_iou(memory_layer(predicted), memory_layer(reference))
    assert result["IOU"] == pytest.approx(expected, abs=1e-12)
    assert result["DICE"] == pytest.approx(2 * expected / (1 + expected), abs=1e-12)
    (row,) = rows_of(result["OUTPUT"])
    assert row["status"] == "all" and row["iou"] == pytest.approx(expected, abs=1e-12)


def test_areas_are_square_metres_of_the_dissolved_layers(ioueval_provider):
    # Predicted squares 2 x 2 overlapping by 1: union 7; reference 3 x 3 = 9.
    result = spatial_iou(
        memory_layer([box_wkt(0, 0, 2, 2), box_wkt(1, 1, 3, 3)]),
        memory_layer([box_wkt(0, 0, 3, 3)]),
    )
    assert result["INTERSECTION_AREA_M2"] == pytest.approx(7.0)
    assert result["UNION_AREA_M2"] == pytest.approx(9.0)
    assert result["IOU"] == pytest.approx(7 / 9)
    # Hull = union (the 3 x 3 square): GIoU = IoU.
    assert result["GIOU"] == pytest.approx(7 / 9)


def test_per_id_rows_with_ids_on_one_side_only(ioueval_provider):
    predicted = memory_layer(
        [box_wkt(0, 0, 1, 1), box_wkt(1, 0, 2, 1), box_wkt(5, 5, 6, 6), box_wkt(9, 9, 10, 10)],
        ids=["a", "a", "b", "p"],
    )
    reference = memory_layer(
        [box_wkt(0, 0, 2, 1), box_wkt(5, 5, 7, 6), box_wkt(20, 20, 21, 21)],
        ids=["a", "b", "r"],
    )
    result = spatial_iou(predicted, reference, ID_FIELD="id")
    rows = {row["id"]: row for row in rows_of(result["OUTPUT"]) if row["status"] != "all"}
    assert rows["a"]["iou"] == pytest.approx(1.0) and rows["a"]["n_predicted"] == 2
    assert rows["b"]["iou"] == pytest.approx(0.5)
    assert (rows["p"]["status"], rows["p"]["iou"]) == ("predicted_only", 0.0)
    assert (rows["r"]["status"], rows["r"]["iou"], rows["r"]["giou"]) == (
        "reference_only", 0.0, -1.0
    )
    # Whole layers: predicted 4, reference 2 + 2 + 1 = 5, intersection 3.
    assert result["IOU"] == pytest.approx(3 / 6)


def test_an_id_field_missing_from_the_predicted_layer_is_named(ioueval_provider):
    from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer

    predicted = QgsVectorLayer("Polygon?crs=EPSG:6933&field=other:string", "p", "memory")
    feature = QgsFeature(predicted.fields())
    feature.setGeometry(QgsGeometry.fromWkt(box_wkt(0, 0, 1, 1)))
    predicted.dataProvider().addFeatures([feature])
    with pytest.raises(QgsProcessingException, match="ID_FIELD.*predicted"):
        spatial_iou(predicted, memory_layer([box_wkt(0, 0, 1, 1)], ids=["a"]), ID_FIELD="id")


def test_layers_in_different_crss(ioueval_provider):
    # The same 1° x 1° box, once in longitude/latitude and once in EPSG:6933 (x ∝ longitude):
    # the half box in the second layer covers exactly half.
    import pyproj

    to_6933 = pyproj.Transformer.from_crs(4326, 6933, always_xy=True)
    x0, y0 = to_6933.transform(10, 40)
    x1, y1 = to_6933.transform(10.5, 41)
    result = spatial_iou(
        memory_layer([box_wkt(x0, y0, x1, y1)]),
        memory_layer([box_wkt(10, 40, 11, 41)], crs="EPSG:4326"),
    )
    assert result["IOU"] == pytest.approx(0.5, rel=1e-6)


def test_an_empty_predicted_layer_scores_zero_and_worst_giou(ioueval_provider):
    result = spatial_iou(memory_layer([]), memory_layer([box_wkt(0, 0, 1, 1)]))
    assert (result["IOU"], result["DICE"], result["GIOU"], result["DIOU"]) == (0, 0, -1, -1)
    assert result["UNION_AREA_M2"] == pytest.approx(1.0)


def test_bad_rows_are_dropped_not_fatal(ioueval_provider):
    # A null geometry and a bow-tie (repaired into two triangles of area 1) beside a square.
    predicted = memory_layer([None, BOWTIE, box_wkt(10, 10, 12, 12)])
    reference = memory_layer([box_wkt(0, 0, 2, 2), box_wkt(10, 10, 12, 12)])
    result = spatial_iou(predicted, reference)
    # Intersection 2 + 4, union 4 + 4 (the triangles lie inside the first square).
    assert result["IOU"] == pytest.approx(6 / 8)
