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
