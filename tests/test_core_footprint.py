"""core.pairs.footprint: footprint IoU of two layers (dissolved, and per shared id).

The first four tests are the spatial IoU guide's own ("Measuring Spatial IoU for LLM-Generated
Geometries"), with the values worked out by hand where the guide only asks for a range.
"""

import math

import numpy as np
import pyproj
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon, box

from iou_evaluation.core.pairs.footprint import footprint_iou, id_key
from iou_evaluation.core.pairs.pair_metrics import spatial_pair_metrics


def iou_of(predicted, reference, crs=6933, **kwargs):
    result = footprint_iou(
        [predicted], [reference], predicted_crs=crs, reference_crs=crs, equal_area_crs=6933,
        **kwargs,
    )
    return float(result.overall.iou[0])


def test_identical_footprints_score_one():
    a = box(0, 0, 10, 10)
    assert abs(iou_of(a, a) - 1.0) < 1e-9


def test_disjoint_footprints_score_zero():
    assert iou_of(box(0, 0, 1, 1), box(50, 50, 51, 51)) == 0.0


def test_self_intersecting_prediction_is_repaired_not_crashed():
    bowtie = Polygon([(0, 0), (2, 2), (2, 0), (0, 2), (0, 0)])  # invalid
    truth = box(0, 0, 2, 2)
    iou = iou_of(bowtie, truth)
    assert 0.0 <= iou <= 1.0
    # Repaired into its two triangles (area 1 each) inside the 2 x 2 square: 2 / 4.
    assert iou == pytest.approx(0.5, abs=1e-12)


def test_over_claim_is_penalised_more_than_partial_cover():
    truth = box(0, 0, 10, 10)
    spilled = box(0, 0, 20, 20)  # covers everything, claims four times the area: 100 / 400
    clipped = box(0, 0, 10, 5)  # covers half, claims nothing extra: 50 / 100
    assert iou_of(spilled, truth) == pytest.approx(0.25, abs=1e-12)
    assert iou_of(clipped, truth) == pytest.approx(0.5, abs=1e-12)
    assert iou_of(spilled, truth) < iou_of(clipped, truth)


def test_each_layer_is_dissolved_before_scoring():
    # Predicted: two overlapping 2 x 2 squares, union 4 + 4 - 1 = 7; reference 3 x 3 = 9.
    result = footprint_iou(
        [box(0, 0, 2, 2), box(1, 1, 3, 3)], [box(0, 0, 3, 3)],
        predicted_crs=None, reference_crs=None,
    )
    m = result.overall
    assert m.area_a[0] == pytest.approx(7.0)
    assert m.area_b[0] == pytest.approx(9.0)
    assert m.intersection[0] == pytest.approx(7.0)
    assert m.union[0] == pytest.approx(9.0)
    assert m.iou[0] == pytest.approx(7 / 9)
    assert m.dice[0] == pytest.approx(2 * 7 / (7 + 9))


def test_giou_and_diou_of_disjoint_squares_by_hand():
    # Hull of the unit squares at (0, 0) and (50, 50): shoelace area 101; union 2.
    # Centroids (0.5, 0.5) and (50.5, 50.5): rho² = 5000; enclosing box diagonal² 2·51².
    result = footprint_iou(
        [box(0, 0, 1, 1)], [box(50, 50, 51, 51)], predicted_crs=None, reference_crs=None
    )
    assert result.overall.giou[0] == pytest.approx(-(101 - 2) / 101)
    assert result.overall.diou[0] == pytest.approx(-5000 / (2 * 51**2))


def test_longitude_latitude_layers_are_scored_in_the_equal_area_crs():
    # EPSG:6933 is cylindrical equal-area: x is proportional to longitude, so a box of half
    # the longitudes has exactly half the area whatever the latitude.
    result = footprint_iou(
        [box(10, 40, 10.5, 41)], [box(10, 40, 11, 41)],
        predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
    )
    assert result.overall.iou[0] == pytest.approx(0.5, rel=1e-9)
    assert result.equal_area_crs == "EPSG:6933"
    # The 1° x 1° box's area on the WGS 84 ellipsoid, from pyproj's geodesic area with its
    # parallels followed closely (1,000 points each).
    lons = np.linspace(10, 11, 1001)
    geod = pyproj.Geod(ellps="WGS84")
    area, _ = geod.polygon_area_perimeter(
        np.r_[lons, lons[::-1]], np.r_[np.full(1001, 40.0), np.full(1001, 41.0)]
    )
    assert result.overall.area_b[0] == pytest.approx(abs(area), rel=1e-6)


def test_layers_in_different_crss_give_the_same_score_as_spatial_pair_metrics():
    predicted = [box(1_113_194.9, 4_865_942.3, 1_168_854.7, 4_920_000.0)]  # EPSG:3857
    reference = [box(10, 40, 10.5, 40.4)]
    result = footprint_iou(
        predicted, reference, predicted_crs="EPSG:3857", reference_crs="EPSG:4326"
    )
    expected = spatial_pair_metrics(predicted, reference, a_crs="EPSG:3857", b_crs="EPSG:4326")
    assert result.overall.iou[0] == pytest.approx(expected["iou"], rel=1e-12)
    assert result.overall.area_a[0] == pytest.approx(expected["area_a_m2"], rel=1e-12)


def test_degenerate_layers_have_defined_values():
    # Nothing usable on either side: the guide's 0.0.
    result = footprint_iou([None], [Polygon()], predicted_crs=None, reference_crs=None)
    assert result.overall.iou[0] == 0.0 and result.overall.giou[0] == 0.0
    assert result.predicted.n_dropped == 1 and result.reference.n_dropped == 1
    # Nothing predicted: IoU 0, GIoU at its worst, -1.
    result = footprint_iou([], [box(0, 0, 1, 1)], predicted_crs=None, reference_crs=None)
    assert (result.overall.iou[0], result.overall.dice[0]) == (0.0, 0.0)
    assert result.overall.giou[0] == -1.0 and result.overall.diou[0] == -1.0
    # A zero-width sliver collapses under repair: no area, no division by zero.
    sliver = Polygon([(0, 0), (1, 0), (2, 0), (0, 0)])
    assert iou_of(sliver, box(0, 0, 1, 1), crs=None) == 0.0


def test_per_id_rows_dissolve_each_id_and_list_ids_found_on_one_side():
    predicted = [box(0, 0, 1, 1), box(1, 0, 2, 1), box(5, 5, 6, 6), box(8, 8, 9, 9)]
    predicted_ids = [1, 1.0, "7", None]
    reference = [box(0, 0, 2, 1), box(5, 5, 7, 6), box(20, 20, 21, 21)]
    reference_ids = ["1", 7, "only_ref"]
    result = footprint_iou(
        predicted, reference, predicted_crs=None, reference_crs=None,
        predicted_ids=predicted_ids, reference_ids=reference_ids,
    )
    assert result.ids == ["1", 7, "only_ref"]
    assert list(result.status) == ["both", "both", "reference_only"]
    # id 1: two unit squares dissolved = the 2 x 1 reference; id 7: 1 of 2.
    assert list(result.by_id.iou) == pytest.approx([1.0, 0.5, 0.0])
    assert list(result.by_id.giou) == pytest.approx([1.0, 0.5, -1.0])
    assert list(result.n_predicted_rows) == [2, 1, 0]
    assert list(result.n_reference_rows) == [1, 1, 1]
    assert result.n_predicted_without_id == 1
    # The overall footprint counts every row: predicted 4, reference 2 + 2 + 1 = 5, ∩ 3.
    assert result.overall.iou[0] == pytest.approx(3 / 6)


def test_an_id_only_in_the_predicted_layer_scores_zero():
    result = footprint_iou(
        [box(0, 0, 1, 1)], [box(0, 0, 1, 1)], predicted_crs=None, reference_crs=None,
        predicted_ids=["a"], reference_ids=["b"],
    )
    assert result.ids == ["b", "a"]
    assert list(result.status) == ["reference_only", "predicted_only"]
    assert list(result.by_id.iou) == [0.0, 0.0]
    assert result.overall.iou[0] == 1.0


def test_programmer_errors_raise():
    with pytest.raises(ValueError, match="together"):
        footprint_iou([], [], predicted_ids=[])
    with pytest.raises(ValueError, match="one value per row"):
        footprint_iou([box(0, 0, 1, 1)], [], predicted_ids=[], reference_ids=[],
                      predicted_crs=None, reference_crs=None)
    with pytest.raises(ValueError, match="CRS"):
        footprint_iou([], [], predicted_crs="EPSG:4326", reference_crs=None)
    with pytest.raises(ValueError, match="metres"):
        footprint_iou([], [], predicted_crs=4326, reference_crs=4326, equal_area_crs=4326)


def test_id_keys():
    assert id_key(1) == id_key(1.0) == id_key("1") == id_key(" 1 ") == "1"
    assert id_key(None) is None and id_key(math.nan) is None
    assert id_key(1.5) == "1.5"


coordinate = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(coordinate, coordinate, st.floats(0.1, 50), coordinate, coordinate, st.floats(0.1, 50))
def test_scores_stay_in_range_and_are_symmetric(x1, y1, s1, x2, y2, s2):
    a, b = box(x1, y1, x1 + s1, y1 + s1), box(x2, y2, x2 + s2, y2 + s2)
    one = footprint_iou([a], [b], predicted_crs=None, reference_crs=None).overall
    two = footprint_iou([b], [a], predicted_crs=None, reference_crs=None).overall
    assert 0.0 <= one.iou[0] <= 1.0 and 0.0 <= one.dice[0] <= 1.0
    assert -1.0 <= one.giou[0] <= one.iou[0] + 1e-12
    assert -1.0 <= one.diou[0] <= 1.0
    assert one.iou[0] == pytest.approx(two.iou[0], abs=1e-12)
    assert one.dice[0] == pytest.approx(2 * one.iou[0] / (1 + one.iou[0]), abs=1e-9)


def test_tiled_measures_equal_one_dissolve(monkeypatch):
    # Overlapping boxes of both layers spread over several tiles: measured tile by tile (every
    # footprint of more than 0 rows) and dissolved whole, the metrics agree.
    from iou_evaluation.core.pairs import footprint

    rng = np.random.default_rng(7)
    corners = rng.uniform(0, 1000, size=(2, 300, 2))
    sizes = rng.uniform(5, 80, size=(2, 300, 2))
    a = [box(x, y, x + w, y + h) for (x, y), (w, h) in zip(corners[0], sizes[0])]
    b = [box(x, y, x + w, y + h) for (x, y), (w, h) in zip(corners[1], sizes[1])]
    ids_a, ids_b = list(rng.integers(0, 3, 300)), list(rng.integers(0, 3, 300))
    whole = footprint_iou(a, b, predicted_crs=None, reference_crs=None,
                          predicted_ids=ids_a, reference_ids=ids_b)
    monkeypatch.setattr(footprint, "TILED_ROWS", 0)
    monkeypatch.setattr(footprint, "_ROWS_PER_TILE", 20)
    tiled = footprint_iou(a, b, predicted_crs=None, reference_crs=None,
                          predicted_ids=ids_a, reference_ids=ids_b)
    for name in ("area_a", "area_b", "intersection", "union", "iou", "dice", "giou", "diou"):
        assert getattr(tiled.overall, name) == pytest.approx(getattr(whole.overall, name),
                                                             rel=1e-9), name
        assert getattr(tiled.by_id, name) == pytest.approx(getattr(whole.by_id, name),
                                                           rel=1e-9), name
    assert 0 < whole.overall.iou[0] < 1
