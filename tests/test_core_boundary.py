"""Boundary metrics (Hausdorff, mean boundary distance, length within a tolerance, UTM zones).

Expected values are worked out by hand (formulas in the comments), taken from the agribound
1.0 documentation ("Evaluation"), or from agribound 1.0.1 run on the same input
(values pasted with the script's settings), and the error bounds are checked against a dense
brute-force sampling computed inside the test.
"""

import math

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from iou_evaluation.core.boundary.distances import (
    centroid_utm_epsg,
    matched_distances_in_utm,
    pair_boundary_distances,
    utm_epsg,
    utm_epsg_codes,
    zoned_layer,
)
from iou_evaluation.core.geometry.crs import to_crs
from iou_evaluation.core.geometry.prepare import prepare_layer
from iou_evaluation.core.boundary import tolerance
from iou_evaluation.core.util.progress import EvaluationCanceled
from iou_evaluation.core.boundary.tolerance import boundary_within_tolerance, tolerance_lengths_in_utm

WGS84 = pyproj.CRS("EPSG:4326")
EASE = pyproj.CRS("EPSG:6933")


def distances(a, b, spacing=1.0):
    h, m, s = pair_boundary_distances(np.array([a], dtype=object), np.array([b], dtype=object),
                                      spacing)
    return float(h[0]), float(m[0]), float(s[0])


def within(a, others, tol):
    w, p = boundary_within_tolerance(np.array([a], dtype=object),
                                     np.array(others, dtype=object), tol)
    return float(w[0]), float(p[0])


# --- UTM zones ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lon, lat, epsg",
    [
        (3.0, 45.0, 32631),  # zone floor((3 + 180) / 6) + 1 = 31, north
        (3.0, -10.0, 32731),  # south of the equator: 327zz
        (-180.0, 10.0, 32601),
        (179.9, 10.0, 32660),
        (180.0, 10.0, 32601),  # wraps to -180
        (5.9999, 0.0, 32631),  # latitude 0 counts as north; 6°E starts zone 32
        (6.0, -0.0001, 32732),
        (-105.5, 35.8, 32613),  # New Mexico
    ],
)
def test_utm_zone_rule(lon, lat, epsg):
    assert utm_epsg(lon, lat).tolist() == [epsg]


def test_utm_zone_is_vectorised_and_non_finite_gives_zero():
    got = utm_epsg(np.array([3.0, np.nan, 9.0]), np.array([45.0, 1.0, -1.0]))
    assert got.dtype == np.int64
    assert got.tolist() == [32631, 0, 32732]


def test_centroid_zone_is_none_in_planar_space():
    assert centroid_utm_epsg([shapely.box(0, 0, 1, 1)], None).tolist() == [0]


# --- Distances of pairs, by hand ------------------------------------------------------------


def test_hausdorff_is_between_curves_not_vertices():
    # The seed example: vertex-only Hausdorff 4.95, between the curves 9.918.
    a = shapely.from_wkt("LINESTRING (26 8, 13 -2, 13 19, 10 19, 10 23, 1 17)")
    b = shapely.from_wkt("LINESTRING (15 1, 28 11, 13 26, 1 18)")
    assert shapely.hausdorff_distance(a, b) == pytest.approx(4.95, abs=0.005)
    h_fine, _, _ = distances(a, b, 0.01)
    assert h_fine == pytest.approx(9.918, abs=0.001)
    h, _, spacing = distances(a, b, 1.0)
    assert spacing == 1.0
    assert 9.918 - 0.5 <= h <= 9.918 + 0.001


def test_concentric_squares():
    # 10 x 10 inside 12 x 12, gap 1. Hausdorff: outer corner to inner corner, sqrt(2).
    # Inner boundary: 1 everywhere, ∫ = 40. Outer edge: 1 over its middle 10 m and
    # sqrt(1 + t²) over 1 m at each end: 10 + 2 ∫0^1 sqrt(1 + t²) dt = 10 + sqrt(2) + asinh(1).
    inner, outer = shapely.box(0, 0, 10, 10), shapely.box(-1, -1, 11, 11)
    h, m, _ = distances(inner, outer)
    assert h == pytest.approx(math.sqrt(2), rel=1e-12)
    assert m == pytest.approx((40 + 40 + 4 * (math.sqrt(2) + math.asinh(1))) / 88, rel=1e-12)


@pytest.mark.parametrize("side, shift", [(10, 2), (100, 7.5), (50, 25)])
def test_square_and_the_same_square_shifted(side, shift):
    # Reference boundary: left edge at distance d (s d), bottom and top d²/2 each, right edge
    # (inside the shifted square) min(d, y, s - y): s d - d². Total 2 s d, the same for the
    # shifted one, over 8 s of boundary: mean d / 2. Hausdorff d.
    h, m, _ = distances(shapely.box(0, 0, side, side), shapely.box(shift, 0, side + shift, side))
    assert h == pytest.approx(shift, rel=1e-12)
    assert m == pytest.approx(shift / 2, rel=1e-12)


def test_interior_rings_are_boundary():
    # A 2 x 2 hole in the middle of a 10 x 10 square: every hole point is 4 from the outer
    # ring, the outer rings coincide. Mean 8 * 4 / (40 + 8 + 40).
    holed = shapely.Polygon(
        [(0, 0), (10, 0), (10, 10), (0, 10)], [[(4, 4), (6, 4), (6, 6), (4, 6)]]
    )
    h, m, _ = distances(holed, shapely.box(0, 0, 10, 10))
    assert h == pytest.approx(4.0, rel=1e-12)
    assert m == pytest.approx(32 / 88, rel=1e-12)


def test_multipolygon_parts_are_all_measured():
    # Two squares, each shifted by 2 (mean d/2 = 1 for each part, as above), far apart.
    a = shapely.MultiPolygon([shapely.box(0, 0, 10, 10), shapely.box(100, 0, 110, 10)])
    b = shapely.MultiPolygon([shapely.box(2, 0, 12, 10), shapely.box(102, 0, 112, 10)])
    h, m, _ = distances(a, b)
    assert h == pytest.approx(2.0, rel=1e-12)
    assert m == pytest.approx(1.0, rel=1e-12)


def test_identical_polygons_are_at_distance_zero():
    poly = shapely.Polygon([(0, 0), (7, 1), (9, 8), (3, 11), (-2, 5)])
    h, m, _ = distances(poly, poly)
    assert h == pytest.approx(0.0, abs=1e-12) and m == pytest.approx(0.0, abs=1e-12)


def test_automatic_spacing_is_perimeter_over_1000_at_least_1_m():
    small, big = shapely.box(0, 0, 100, 100), shapely.box(0, 0, 1000, 1000)
    assert distances(small, shapely.box(1, 1, 101, 101), None)[2] == 1.0
    # the larger of the two boundaries' spacings: 4000 / 1000
    assert distances(small, big, None)[2] == pytest.approx(4.0)


def test_missing_empty_and_non_finite_geometries_give_nan_not_errors():
    good = shapely.box(0, 0, 1, 1)
    ref = np.array([good, None, shapely.Polygon(), good], dtype=object)
    pred = np.array([good, good, good, shapely.box(0, 0, np.inf, 1)], dtype=object)
    h, m, s = pair_boundary_distances(ref, pred, 1.0)
    assert h[0] == 0.0 and m[0] == 0.0 and s[0] == 1.0
    assert np.isnan(h[1:]).all() and np.isnan(m[1:]).all() and np.isnan(s[1:]).all()


def test_vertices_closer_than_rounding_do_not_break_the_result():
    # Vertices 1e-53 and 2e-313 (subnormal) apart merge when the pair is moved to its frame;
    # the result is that of the polygon without them: square shifted by 2 (mean d / 2 = 1).
    tiny = shapely.Polygon([(0, 0), (10, 0), (10, 10), (0, 10), (0, 1e-53), (0, 2e-313)])
    h, m, _ = distances(tiny, shapely.box(2, 0, 12, 10))
    assert h == pytest.approx(2.0, rel=1e-12) and m == pytest.approx(1.0, rel=1e-12)
    w, p = within(tiny, [shapely.box(2, 0, 12, 10)], 0.5)
    assert w == pytest.approx(18.0, rel=1e-12) and p == pytest.approx(40.0, rel=1e-12)


def test_empty_input():
    h, m, s = pair_boundary_distances(np.array([], dtype=object), np.array([], dtype=object))
    assert h.shape == m.shape == s.shape == (0,)
    w, p = boundary_within_tolerance(np.array([], dtype=object), [shapely.box(0, 0, 1, 1)], 1.0)
    assert w.shape == p.shape == (0,)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_bad_spacing_or_tolerance_raises(bad):
    box = np.array([shapely.box(0, 0, 1, 1)], dtype=object)
    with pytest.raises(ValueError, match="spacing_m"):
        pair_boundary_distances(box, box, bad)
    with pytest.raises(ValueError, match="tolerance_m"):
        boundary_within_tolerance(box, box, bad)


def test_pairs_of_different_lengths_raise():
    with pytest.raises(ValueError, match="same shape"):
        pair_boundary_distances(np.array([shapely.box(0, 0, 1, 1)], dtype=object),
                                np.array([], dtype=object))


# --- Length within a tolerance, by hand -----------------------------------------------------


@pytest.mark.parametrize("gap, tol, expected", [(2.0, 5.0, 10 + 2 * 3.0), (6.0, 5.0, 0.0)])
def test_parallel_edges_at_distance_gap(gap, tol, expected):
    # Top edge of the first square (10 m) faces the second's bottom edge at distance `gap`;
    # on each side edge the points within tol of that edge are the last tol - gap metres.
    w, p = within(shapely.box(0, 0, 10, 10), [shapely.box(0, 10 + gap, 10, 20 + gap)], tol)
    assert p == pytest.approx(40.0)
    assert w == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("tol", [4.5, 5.0, 6.0])
def test_corner_arc_gives_exact_lengths(tol):
    # Corner (10, 10) faces corner (13, 13). A point (x, 10) of the top edge is within tol of
    # the other square iff (13 - x)² + 9 <= tol²: the last sqrt(tol² - 9) - 3 metres; the same
    # on the right edge. Exact only with circular arcs (no polygonal buffer).
    w, _ = within(shapely.box(0, 0, 10, 10), [shapely.box(13, 13, 20, 20)], tol)
    assert w == pytest.approx(2 * (math.sqrt(tol * tol - 9) - 3), rel=1e-12)


def test_within_counts_any_boundary_of_the_other_layer_once():
    # Both neighbours cover the same top edge: the union counts it once.
    others = [shapely.box(0, 11, 10, 21), shapely.box(0, 10.5, 10, 12)]
    w, _ = within(shapely.box(0, 0, 10, 10), others, 2.0)
    # top edge 10, side edges: last 2 - 0.5 = 1.5 m each
    assert w == pytest.approx(13.0, rel=1e-12)


# --- UTM zones end to end, against agribound 1.0.1 ------------------------------------------

# Fields in lon/lat. Field 1 straddles 6°E: its centroid is in zone 31, its prediction's in 32.
REF_LONLAT = [
    shapely.Polygon([(3.000, 45.000), (3.004, 45.000), (3.004, 45.003), (3.000, 45.003)]),
    shapely.Polygon([(5.9990, 44.500), (6.0008, 44.500), (6.0008, 44.502), (5.9990, 44.502)]),
    shapely.Polygon([(3.010, 45.010), (3.0125, 45.0102), (3.013, 45.0125), (3.011, 45.0131),
                     (3.0095, 45.012)]),
]
PRED_LONLAT = [
    shapely.Polygon([(3.0001, 45.0001), (3.0042, 45.0000), (3.0041, 45.0031), (3.0000, 45.0029)]),
    shapely.Polygon([(5.9993, 44.5001), (6.0011, 44.5001), (6.0011, 44.5021), (5.9993, 44.5021)]),
    shapely.Polygon([(3.0102, 45.0101), (3.0126, 45.0104), (3.0129, 45.0124), (3.0108, 45.0129),
                     (3.0097, 45.0118)]),
]
# agribound 1.0.1: evaluate_frame(pred, ref, boundary_tolerance_m=10,
# boundary_sample_spacing_m=0.05) and evaluate(...) with the same arguments.
AGRIBOUND_HAUSDORFF = [15.763059292, 26.327555278, 26.077419064]
AGRIBOUND_MEAN_AT_5_CM = [6.853048112, 18.240509112, 12.504510399]
AGRIBOUND_PERIMETER = [1297.030043476, 731.008493589, 1023.533601699]
AGRIBOUND_WITHIN = [988.083453569, 40.000000001, 307.236475315]
AGRIBOUND_RECALL = 0.43758425761021785
AGRIBOUND_PRECISION = 0.4476861196813212


def zoned(geoms):
    # Zones from the centroid in the equal-area CRS, as the seed does.
    prepared = prepare_layer(geoms, WGS84, EASE, "layer")
    return zoned_layer(geoms, WGS84, centroid_utm_epsg(prepared.geometries, EASE))


def test_zones_of_each_polygon():
    ref, pred = zoned(REF_LONLAT), zoned(PRED_LONLAT)
    assert ref.epsg.tolist() == [32631, 32631, 32631]
    assert pred.epsg.tolist() == [32631, 32632, 32631]
    assert utm_epsg_codes(ref, pred) == [32631, 32632]


@pytest.mark.parametrize("spacing", [1.0, 0.2])
def test_matched_distances_in_utm_agree_with_agribound(spacing):
    d = matched_distances_in_utm(zoned(REF_LONLAT), zoned(PRED_LONLAT), [0, 1, 2], [0, 1, 2],
                                 spacing)
    assert d.epsg.tolist() == [32631, 32631, 32631]  # the reference field's zone
    assert d.spacing_m.tolist() == [spacing] * 3
    # agribound's Hausdorff (at a vertex here) is exact; its mean is within 0.05 / 4.
    assert d.hausdorff_m == pytest.approx(AGRIBOUND_HAUSDORFF, abs=1e-6)
    assert np.all(np.abs(d.mean_distance_m - AGRIBOUND_MEAN_AT_5_CM) <= spacing / 4 + 0.0125)


def test_prediction_in_another_zone_is_measured_in_the_reference_zone():
    ref, pred = zoned(REF_LONLAT), zoned(PRED_LONLAT)
    d = matched_distances_in_utm(ref, pred, [1], [1], 1.0)
    utm31 = pyproj.CRS("EPSG:32631")
    a = to_crs(np.array(REF_LONLAT[1:2], dtype=object), WGS84, utm31)
    b = to_crs(np.array(PRED_LONLAT[1:2], dtype=object), WGS84, utm31)
    h, m, _ = pair_boundary_distances(a, b, 1.0)
    assert d.hausdorff_m[0] == h[0] and d.mean_distance_m[0] == m[0]


def test_tolerance_lengths_in_utm_agree_with_agribound():
    ref, pred = zoned(REF_LONLAT), zoned(PRED_LONLAT)
    w_ref, p_ref, w_pred, p_pred = tolerance_lengths_in_utm(ref, pred, 10.0)
    assert p_ref == pytest.approx(AGRIBOUND_PERIMETER, rel=1e-9)
    assert w_ref == pytest.approx(AGRIBOUND_WITHIN, rel=1e-9)
    assert w_ref.sum() / p_ref.sum() == pytest.approx(AGRIBOUND_RECALL, rel=1e-9)
    assert w_pred.sum() / p_pred.sum() == pytest.approx(AGRIBOUND_PRECISION, rel=1e-9)


def test_planar_layers_need_no_crs():
    ref = zoned_layer([shapely.box(0, 0, 10, 10)], None)
    pred = zoned_layer([shapely.box(2, 0, 12, 10)], None)
    d = matched_distances_in_utm(ref, pred, [0], [0], 1.0)
    assert d.hausdorff_m.tolist() == [2.0] and d.mean_distance_m.tolist() == [1.0]
    assert d.epsg.tolist() == [0]
    w, p, _, _ = tolerance_lengths_in_utm(ref, pred, 0.5)
    # bottom and top: 8 m shared plus 0.5 m before the other's corner, each; right edge (inside
    # the other square): its last 0.5 m at each end
    assert p.tolist() == [40.0] and w == pytest.approx([8.5 + 8.5 + 1.0], rel=1e-12)
    with pytest.raises(ValueError, match="planar"):
        matched_distances_in_utm(ref, zoned(PRED_LONLAT), [0], [0])


# --- Error bounds against a dense brute force -----------------------------------------------


def star_polygon(draw_radii, centre, radius):
    n = len(draw_radii)
    angles = np.linspace(0, 2 * np.pi, n, endpoint=False)
    r = radius * np.asarray(draw_radii)
    return shapely.Polygon(np.column_stack([centre[0] + r * np.cos(angles),
                                            centre[1] + r * np.sin(angles)]))


radii = st.lists(st.floats(0.3, 1.0), min_size=3, max_size=25)
offsets = st.tuples(st.floats(-8, 8), st.floats(-8, 8))
spacings = st.sampled_from([0.1, 0.5, 1.0, 4.0])


def brute_force(a, b, step):
    """Dense sampling at most `step` apart: (max, integral) of d(x, other) over both
    boundaries; the max is within step/2 below the exact one, the integral within
    step/4 x length (trapezoids of a 1-Lipschitz function)."""
    top, total = 0.0, 0.0
    for x, y in ((a, b), (b, a)):
        other = shapely.boundary(y)
        for ring in shapely.get_parts(shapely.boundary(x)):
            pts = shapely.get_coordinates(shapely.segmentize(ring, step))
            d = shapely.distance(shapely.points(pts), other)
            seg = np.hypot(*np.diff(pts, axis=0).T)
            top = max(top, float(d.max()))
            total += float(np.sum(seg * (d[1:] + d[:-1]) / 2))
    return top, total


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(radii, radii, offsets, spacings)
def test_hausdorff_and_mean_meet_the_seed_bounds(ra, rb, offset, spacing):
    a = star_polygon(ra, (0.0, 0.0), 40.0)
    b = star_polygon(rb, offset, 40.0)
    h, m, s = distances(a, b, spacing)
    step = 0.01
    top, total = brute_force(a, b, step)
    length = shapely.length(shapely.boundary(a)) + shapely.length(shapely.boundary(b))
    # exact Hausdorff H in [top, top + step/2]; ours in [H - Δ/2, H]
    assert h <= top + step / 2 + 1e-9
    assert h >= top - spacing / 2
    # exact mean within step/4 of the brute force; ours within Δ/4 of the exact mean
    assert abs(m - total / length) <= spacing / 4 + step / 4
    assert s == spacing


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(radii, radii, offsets, st.floats(0.5, 15.0))
def test_within_tolerance_matches_dense_sampling(ra, rb, offset, tol):
    a = star_polygon(ra, (0.0, 0.0), 40.0)
    b = star_polygon(rb, offset, 40.0)
    w, p = within(a, [b], tol)
    assert 0.0 <= w <= p + 1e-9
    assert p == pytest.approx(shapely.length(a.exterior), rel=1e-12)
    # Dense sampling: each sample stands for `step` of boundary; the estimate is off by at
    # most one step at each end of each covered stretch (at most 2 per pair of segments).
    step = 0.01
    pts = shapely.get_coordinates(shapely.segmentize(a.exterior, step))
    dist = shapely.distance(shapely.points(pts), b.exterior)
    # Whole stretches exactly at the tolerance (an edge parallel to one of the others at
    # distance tol) are in or out by rounding; compare elsewhere only.
    assume(np.mean(np.abs(dist - tol) < 1e-6) < 0.001)
    inside = dist <= tol
    mid = 0.5 * (inside[1:].astype(float) + inside[:-1])
    seg = np.hypot(*np.diff(pts, axis=0).T)
    n_pairs = len(ra) * len(rb)
    assert abs(w - float(np.sum(seg * mid))) <= 2 * step * n_pairs


# --- Length within a tolerance: both layers at once, tiles, zones ----------------------------


def staircase(x0, y0, steps, step, rise):
    """A polygon whose lower-right side is a staircase (axis-aligned steps), as raster
    outlines are; many of its edges are parallel or perpendicular to a box's."""
    pts = [(x0, y0)]
    for _ in range(steps):
        x, y = pts[-1]
        pts += [(x + step, y), (x + step, y + rise)]
    pts.append((x0, pts[-1][1]))
    return shapely.Polygon(pts)


def test_edges_exactly_at_the_tolerance_count_from_both_sides():
    # A's right edge (x = 360, y 706..800.68) faces B's left edge (x = 370, y 700..790) at
    # exactly 10 m: the overlap, y 706..790, is within on both (84 m); corners are further.
    a = shapely.box(324.23, 706, 360, 800.68)
    b = shapely.box(370, 700, 430, 790)
    ref, pred = zoned_layer([a], None), zoned_layer([b], None)
    w_a, _, w_b, _ = tolerance_lengths_in_utm(ref, pred, 10.0)
    assert w_a.tolist() == pytest.approx([84.0], rel=1e-12)
    assert w_b.tolist() == pytest.approx([84.0], rel=1e-12)
    assert within(a, [b], 10.0)[0] == pytest.approx(84.0, rel=1e-12)
    assert within(b, [a], 10.0)[0] == pytest.approx(84.0, rel=1e-12)


def test_a_vertex_at_exactly_the_tolerance_adds_no_length():
    # UTM-like coordinates in centimetres. B's top edge runs 10 m below A's bottom edge, from
    # 1.73 m left of A to 238.27 m right of A's left end; its corners are exactly 10 m from
    # A's edge, so their discs only touch it: both lengths are the overlap, 238.27 m (a
    # rounded corner would add a chord of sqrt(rounding), some 1e-6 m). B's right edges have
    # lengths cut into sevenths, so their pieces start between decimals.
    a, b = [], []
    for k in range(40):
        x, y = 320011.73 + 731.17 * k, 3837621.0 + 523.11 * (k % 7)
        drop = 181 + 0.71 * k
        a.append(shapely.segmentize(shapely.box(x, y, x + 246.36, y + 89), 5.0))
        b.append(shapely.Polygon([(x + 238.27, y - 10 - drop), (x + 238.27, y - 10),
                                  (x - 1.73, y - 10), (x - 1.73, y - 10 - drop)]))
    a, b = np.array(a, dtype=object), np.array(b, dtype=object)
    w_a, _, w_b, _ = tolerance_lengths_in_utm(zoned_layer(a, None), zoned_layer(b, None), 10.0)
    assert w_a == pytest.approx(np.full(40, 238.27), rel=1e-12)
    assert w_b == pytest.approx(np.full(40, 238.27), rel=1e-12)
    assert boundary_within_tolerance(a, b, 10.0)[0] == pytest.approx(np.full(40, 238.27),
                                                                     rel=1e-12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(1, 6),
                          st.sampled_from([1.0, 2.5, 5.0]), st.sampled_from([1.0, 2.5, 5.0])),
                min_size=1, max_size=6),
       radii, offsets, st.sampled_from([1.0, 2.5, 5.0, 10.0]))
def test_both_layers_at_once_equal_each_layer_alone(stairs, rb, offset, tol):
    # Staircases on a 5 m lattice (edges parallel, perpendicular and at exactly the
    # tolerance from each other) against each other and a star polygon; the one-pass result
    # of each layer is the one-layer result (which measures it as the querying layer).
    a = np.array([staircase(5.0 * i, 5.0 * j, n, s, r) for i, j, n, s, r in stairs], dtype=object)
    b = np.array([staircase(5.0 * j + 2.5, 5.0 * i, n, r, s) for i, j, n, s, r in stairs]
                 + [star_polygon(rb, (20 + offset[0], 20 + offset[1]), 15.0)], dtype=object)
    w_a, p_a, w_b, p_b = tolerance_lengths_in_utm(zoned_layer(a, None), zoned_layer(b, None), tol)
    one_a, perimeter_a = boundary_within_tolerance(a, b, tol)
    one_b, perimeter_b = boundary_within_tolerance(b, a, tol)
    assert w_a == pytest.approx(one_a, rel=1e-9, abs=1e-9)
    assert w_b == pytest.approx(one_b, rel=1e-9, abs=1e-9)
    assert p_a == pytest.approx(perimeter_a, rel=1e-12)
    assert p_b == pytest.approx(perimeter_b, rel=1e-12)
    assert p_a == pytest.approx(shapely.length(a), rel=1e-12)


def test_tiles_do_not_change_the_result(monkeypatch):
    # Many small tiles (a piece belongs to the tile of its start point, and is measured
    # against the pieces near that tile) give what one tile gives.
    rng = np.random.default_rng(5)
    centres = rng.uniform(0, 400, (60, 2))
    a = np.array([shapely.Polygon(c + rng.uniform(-20, 20, (7, 2))).buffer(0) for c in centres]
                 + [staircase(0, 0, 40, 10.0, 10.0)], dtype=object)
    b = np.array([shapely.box(*(c - 15), *(c + 15)) for c in centres + rng.normal(0, 4, (60, 2))]
                 + [shapely.box(-3, -3, 150, 40)], dtype=object)
    ref, pred = zoned_layer(a, None), zoned_layer(b, None)
    whole = tolerance_lengths_in_utm(ref, pred, 6.0)
    monkeypatch.setattr(tolerance, "_TILE_VERTICES", 25)
    tiled = tolerance_lengths_in_utm(ref, pred, 6.0)
    assert len(tolerance._tiles(centres, np.full(60, 10.0), 25)) > 20
    for x, y in zip(whole, tiled):
        assert x == pytest.approx(y, rel=1e-9, abs=1e-9)
    assert whole[0].sum() > 100 and whole[2].sum() > 100


def test_each_polygon_is_measured_in_its_own_zone():
    # Polygons on both sides of 6°E (zones 31 and 32): each one's length within the
    # tolerance is the one-layer result in its zone against every polygon of the other
    # layer, transformed there.
    ref_geoms = REF_LONLAT + [shapely.box(5.9985, 44.4995, 5.99985, 44.5022)]
    pred_geoms = PRED_LONLAT + [shapely.box(6.00005, 44.4998, 6.0018, 44.5019)]
    ref, pred = zoned(ref_geoms), zoned(pred_geoms)
    assert len(set(ref.epsg.tolist()) | set(pred.epsg.tolist())) == 2
    w_ref, p_ref, w_pred, p_pred = tolerance_lengths_in_utm(ref, pred, 10.0)
    for layer, other, w, p in ((ref, pred, w_ref, p_ref), (pred, ref, w_pred, p_pred)):
        for i in range(layer.n):
            code = int(layer.epsg[i])
            expected = boundary_within_tolerance(
                layer.local[i : i + 1], other.in_zone(np.arange(other.n), code), 10.0
            )
            assert w[i] == pytest.approx(expected[0][0], rel=1e-9, abs=1e-9)
            assert p[i] == pytest.approx(expected[1][0], rel=1e-12)
    assert (w_ref > 0).sum() >= 3 and (w_pred > 0).sum() >= 3


def test_tolerance_lengths_report_progress_and_can_be_canceled(monkeypatch):
    monkeypatch.setattr(tolerance, "_TILE_VERTICES", 40)  # several tiles
    a = np.array([shapely.box(20 * i, 0, 20 * i + 18, 18) for i in range(50)], dtype=object)
    ref, pred = zoned_layer(a, None), zoned_layer(a, None)
    seen = []
    tolerance_lengths_in_utm(ref, pred, 1.0, progress=seen.append)
    assert len(seen) > 3 and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)

    def cancel(fraction):
        raise EvaluationCanceled("stop")

    with pytest.raises(EvaluationCanceled):
        tolerance_lengths_in_utm(ref, pred, 1.0, progress=cancel)


# --- Boundary distances: pieces through a vertex of the other boundary, progress -------------


def test_piece_through_a_vertex_of_the_other_boundary_is_exact():
    # B's lower side is a V whose vertex (4, 0) lies on A's bottom edge. Along that edge the
    # distance to B comes from the arm on the left of the vertex, then from the one on the
    # right; both are 0 at the vertex and their squares touch there (a double root, which
    # rounding can turn into none). Exact Hausdorff distance: 2, from A's top edge (y = 10)
    # to B's (y = 12); A's bottom corners are 4/√5 and 6/√10 from the arms, B's points at most
    # 2 from A. Rotated so that the frames carry rounding.
    a = shapely.affinity.rotate(shapely.box(0, 0, 10, 10), 3.0, origin=(0, 0), use_radians=True)
    b = shapely.affinity.rotate(
        shapely.Polygon([(0, 2), (4, 0), (10, 2), (10, 12), (0, 12)]), 3.0, origin=(0, 0),
        use_radians=True,
    )
    h, m, _ = distances(a, b, 1.0)
    assert h == pytest.approx(2.0, abs=1e-9)
    step = 0.001
    _, total = brute_force(a, b, step)
    length = shapely.length(shapely.boundary(a)) + shapely.length(shapely.boundary(b))
    assert abs(m - total / length) <= step / 4


def test_pair_distances_report_progress_and_can_be_canceled(monkeypatch):
    monkeypatch.setattr("iou_evaluation.core.boundary.distances._CHUNK_VERTICES", 40)  # several chunks
    a = np.array([shapely.box(20 * i, 0, 20 * i + 18, 18) for i in range(30)], dtype=object)
    b = np.array([shapely.box(20 * i + 1, 0, 20 * i + 18, 17) for i in range(30)], dtype=object)
    seen = []
    h, m, _ = pair_boundary_distances(a, b, 1.0, progress=seen.append)
    assert len(seen) > 3 and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    # A's top left corner is √2 from B's: the Hausdorff distance; B is 1 inside A elsewhere.
    assert h.tolist() == pytest.approx([math.sqrt(2)] * 30, abs=1e-12)

    def cancel(fraction):
        raise EvaluationCanceled("stop")

    with pytest.raises(EvaluationCanceled):
        pair_boundary_distances(a, b, 1.0, progress=cancel)
    with pytest.raises(EvaluationCanceled):
        matched_distances_in_utm(zoned_layer(a, None), zoned_layer(b, None), np.arange(30),
                                 np.arange(30), 1.0, progress=cancel)


def test_spans_of_short_pieces_give_what_each_piece_searched_alone_gives(monkeypatch):
    # With a scale factor the pieces are at most 500 m; their candidates are searched once per
    # span of pieces along a segment and handed to the pieces (boundary._span_candidates).
    # The same distances as when every piece is its own span (searched alone), and some
    # pieces are not sure from their span and searched alone (the second path is run).
    from iou_evaluation.core.boundary import _exact as boundary

    rng = np.random.default_rng(7)
    angles = np.sort(rng.uniform(0, 2 * np.pi, 40))
    radii = 20_000 + rng.normal(0, 1500, 40)
    a = shapely.Polygon(np.column_stack([radii * np.cos(angles), radii * np.sin(angles)]))
    b = shapely.Point(800, -300).buffer(20_000, 16)
    star = shapely.Polygon([(0, 0), (30_000, 2_000), (4_000, 5_000), (2_000, 30_000),
                            (-3_000, 4_000)])
    ref = np.array([a, star, b], dtype=object)
    pred = np.array([b, star.buffer(700, 2), a], dtype=object)

    def scale(x, y):
        return 1.0 + 1e-5 * (np.asarray(x) / 1000.0) ** 2 + 3e-6 * np.asarray(y) / 1000.0

    unsure = []
    original = boundary._piece_candidates

    def counted(search, pieces, length, query_group):
        unsure.append(len(length))
        return original(search, pieces, length, query_group)

    monkeypatch.setattr(boundary, "_piece_candidates", counted)
    spans = pair_boundary_distances(ref, pred, 1.0, scale=scale)
    searches = len(unsure)
    monkeypatch.setattr(boundary, "_spans", lambda pieces, *_: np.arange(len(pieces.pair)))
    alone = pair_boundary_distances(ref, pred, 1.0, scale=scale)
    assert searches >= 2  # the spans, then the pieces not sure from them
    for x, y in zip(spans, alone):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    assert np.all(spans[0] > 0)
