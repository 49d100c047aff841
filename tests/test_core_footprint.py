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


@pytest.mark.parametrize("way", ["pieces", "tiles"])
def test_large_footprints_measured_in_parts_equal_one_dissolve(monkeypatch, way):
    # Overlapping boxes of both layers (every footprint of more than 0 rows measured in parts):
    # cut into disjoint pieces, or dissolved tile by tile (the way of densely overlapping
    # layers), and dissolved whole, the metrics agree.
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
    if way == "tiles":
        monkeypatch.setattr(footprint, "_DENSE_PAIRS_PER_ROW", -1)
    else:  # whatever the overlays would cost
        monkeypatch.setattr(footprint, "_PIECES_MAX_RATIO", math.inf)
    tiled = footprint_iou(a, b, predicted_crs=None, reference_crs=None,
                          predicted_ids=ids_a, reference_ids=ids_b)
    for name in ("area_a", "area_b", "intersection", "union", "iou", "dice", "giou", "diou"):
        assert getattr(tiled.overall, name) == pytest.approx(getattr(whole.overall, name),
                                                             rel=1e-9), name
        assert getattr(tiled.by_id, name) == pytest.approx(getattr(whole.by_id, name),
                                                           rel=1e-9), name
    assert 0 < whole.overall.iou[0] < 1


def test_disjoint_pieces_keep_the_union_and_share_no_interior():
    # Boxes overlapping in every way (partly, one inside another, exact copies, one box over
    # many, rows that only touch): the pieces' interiors are pairwise disjoint and their union
    # is shapely's union_all of the rows (areas by union_all and the pairwise overlays).
    import shapely

    from iou_evaluation.core.geometry.dissolve import _CUT_ONE_BY_ONE, disjoint_pieces

    rng = np.random.default_rng(11)
    x, y = rng.uniform(0, 100, 200), rng.uniform(0, 100, 200)
    rows = list(shapely.box(x, y, x + rng.uniform(1, 15, 200), y + rng.uniform(1, 15, 200)))
    rows += [rows[0], rows[5], shapely.box(20, 20, 60, 60), shapely.box(30, 30, 31, 31),
             shapely.box(200, 0, 210, 10), shapely.box(210, 0, 220, 10)]  # copies, touching
    rows += [shapely.box(300 + k, 0, 301 + k, 1) for k in range(3 * _CUT_ONE_BY_ONE)]
    rows.append(shapely.box(299.5, 0.25, 400, 0.75))  # over many, after them: cut by their union
    geoms = np.array(rows, dtype=object)
    pieces, source = disjoint_pieces(geoms)
    assert len(pieces) == len(source) and set(source) <= set(range(len(geoms)))
    union = shapely.union_all(geoms)
    assert shapely.area(pieces).sum() == pytest.approx(shapely.area(union), rel=1e-12)
    assert shapely.area(shapely.symmetric_difference(shapely.union_all(pieces), union)) \
        == pytest.approx(0.0, abs=1e-9)
    left, right = shapely.STRtree(pieces).query(pieces)
    later = left < right
    overlaps = shapely.area(shapely.intersection(pieces[left[later]], pieces[right[later]]))
    assert overlaps.max() == pytest.approx(0.0, abs=1e-9)
    # a row inside no other and overlapping none is its own piece, the same object
    alone = np.flatnonzero(source == len(rows) - 3 * _CUT_ONE_BY_ONE - 2)
    assert len(alone) == 1 and pieces[alone[0]] is geoms[len(rows) - 3 * _CUT_ONE_BY_ONE - 2]


def test_disjoint_pieces_give_up_on_stacked_copies():
    # 300 copies of one box: 44,850 pairs, far more than 8 per row, so no cutting is tried.
    import shapely

    from iou_evaluation.core.geometry.dissolve import disjoint_pieces

    geoms = np.array([shapely.box(0, 0, 1, 1)] * 300 + [shapely.box(5, 5, 6, 6)], dtype=object)
    assert disjoint_pieces(geoms, max_pairs_per_row=8) is None
    pieces, _ = disjoint_pieces(geoms)
    assert shapely.area(pieces).sum() == pytest.approx(2.0, rel=1e-12)


def test_hull_candidates_keep_the_hull_of_all_vertices():
    # Random boxes and triangles: the hull of the candidates is shapely's hull of every vertex.
    import shapely

    from iou_evaluation.core.pairs.footprint import _hull_candidates

    rng = np.random.default_rng(5)
    x, y = rng.normal(0, 50, 500), rng.normal(0, 50, 500)
    geoms = np.r_[shapely.box(x[:250], y[:250], x[:250] + 3, y[:250] + 2),
                  [Polygon([(a, b), (a + 4, b + 1), (a + 1, b + 5)])
                   for a, b in zip(x[250:], y[250:])]]
    everything = shapely.convex_hull(shapely.multipoints(shapely.get_coordinates(geoms)))
    candidates = _hull_candidates(geoms)
    assert len(candidates) < len(shapely.get_coordinates(geoms)) / 2
    assert shapely.equals(shapely.convex_hull(shapely.multipoints(candidates)), everything)


def test_layers_measured_in_parts_choose_pieces_or_tiles_by_their_overlays(monkeypatch):
    # Rows each meeting many detailed rows of the other layer (ratio above the limit) are
    # measured tile by tile, others piece by piece; both against values by hand.
    import shapely

    from iou_evaluation.core.pairs import footprint

    calls = []
    real_tiled = footprint._tiled_metrics
    monkeypatch.setattr(footprint, "_tiled_metrics",
                        lambda *args: calls.append("tiles") or real_tiled(*args))
    monkeypatch.setattr(footprint, "TILED_ROWS", 0)
    grid = [box(x, y, x + 1, y + 1) for x in range(20) for y in range(20)]
    fine = [shapely.segmentize(g, 0.01) for g in grid]  # 401 vertices each
    shifted = [box(x + 0.5, y + 0.5, x + 1.5, y + 1.5) for x in range(20) for y in range(20)]
    strips = [box(0.5, 0.1 * k, 19.5, 0.1 * k + 0.05) for k in range(200)]
    # a shifted square meets 4 squares (1,521 pairs of 400 rows); a detailed square ~10 strips
    assert footprint._overlay_vertices_ratio(np.array(shifted), np.array(grid)) < 5
    assert footprint._overlay_vertices_ratio(np.array(strips), np.array(fine)) > 5
    by_pieces = footprint_iou(shifted, grid, predicted_crs=None, reference_crs=None).overall
    assert calls == []
    by_tiles = footprint_iou(strips, fine, predicted_crs=None, reference_crs=None).overall
    assert calls == ["tiles"]
    # by hand: 400 unit squares against the same shifted by half: the overlap 19.5 × 19.5;
    # 200 strips 19 × 0.05 inside the 20 × 20 squares
    assert by_pieces.intersection[0] == pytest.approx(380.25, rel=1e-12)
    assert by_pieces.iou[0] == pytest.approx(380.25 / 419.75, rel=1e-9)
    assert by_tiles.intersection[0] == pytest.approx(190.0, rel=1e-12)
    assert by_tiles.iou[0] == pytest.approx(190.0 / 400.0, rel=1e-9)
