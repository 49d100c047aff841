"""ioueval:overlappairs through processing.run (values by hand)."""

import pytest
from qgis_layers import box_wkt, memory_layer, rows_of, run


def test_pairs_with_ids_and_intersections(ioueval_provider):
    reference = memory_layer([box_wkt(0, 0, 2, 2), box_wkt(10, 0, 12, 2)], ids=["A", "B"])
    predicted = memory_layer(
        [box_wkt(1, 0, 3, 2), box_wkt(2, 0, 4, 2), box_wkt(0, 0, 12, 2)], ids=["p", "q", "r"]
    )
    result = run(
        "ioueval:overlappairs",
        {
            "PREDICTED": predicted, "REFERENCE": reference,
            "PREDICTED_ID_FIELD": "id", "REFERENCE_ID_FIELD": "id",
            "OUTPUT": "TEMPORARY_OUTPUT", "INTERSECTIONS": "TEMPORARY_OUTPUT",
        },
    )
    assert result["COUNT_PAIRS"] == 3
    rows = {(r["pred_id"], r["ref_id"]): r for r in rows_of(result["OUTPUT"])}
    assert set(rows) == {("p", "A"), ("r", "A"), ("r", "B")}  # q only touches A
    assert rows[("p", "A")]["iou"] == pytest.approx(1 / 3)
    assert rows[("p", "A")]["intersection_m2"] == pytest.approx(2.0)
    assert rows[("r", "B")]["union_m2"] == pytest.approx(24.0)
    assert rows[("r", "B")]["dice"] == pytest.approx(8 / 28)
    assert {r["pred_fid"] for r in rows.values()} == {1, 3}  # memory layer ids start at 1
    layer = result["INTERSECTIONS"]
    areas = sorted(f.geometry().area() for f in layer.getFeatures())
    assert areas == pytest.approx([2.0, 4.0, 4.0])
    assert layer.crs().authid() == "EPSG:6933"


def test_a_perfect_match_of_a_non_convex_field_has_giou_below_iou(ioueval_provider):
    # An L: the 2 x 2 square without its top-right unit square, area 3. C, the convex hull,
    # adds the triangle (1,2)-(2,1)-(2,2): area 3.5. GIoU = 1 - 0.5 / 3.5 = 6/7; IoU = 1.
    ell = "POLYGON((0 0,2 0,2 1,1 1,1 2,0 2,0 0))"
    result = run("ioueval:overlappairs", {
        "PREDICTED": memory_layer([ell]), "REFERENCE": memory_layer([ell]),
        "OUTPUT": "TEMPORARY_OUTPUT",
    })
    (row,) = rows_of(result["OUTPUT"])
    assert row["iou"] == pytest.approx(1.0)
    assert row["giou"] == pytest.approx(6 / 7)


def test_overlappairs_and_spatialiou_helps_name_the_same_enclosing_shape():
    from iou_evaluation.processing_provider import overlap_pairs, spatial_iou

    for help_text in (overlap_pairs.HELP, spatial_iou.HELP):
        assert "C is the convex hull (not the bounding box)" in help_text
        assert "GIoU equals IoU only" in help_text
