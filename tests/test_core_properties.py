"""Invariants of the metrics and the counts, checked on inputs hypothesis generates."""

import math

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st
from iou_evaluation.core import evaluate
from iou_evaluation.core.pairs.pair_metrics import box_polygons, pair_metrics
from iou_evaluation.core.geometry.prepare import DROP_REASONS, prepare_layer

#: No deadline: timing is not under test, and the first call of a test warms caches. The
#: number of examples comes from the active hypothesis profile (100 by default).
core_settings = settings(deadline=None)

coordinate = st.floats(-100, 100, allow_nan=False, allow_infinity=False)
#: Multiples of 1/128: every area and intersection is exact, so scaling by 2^k is exact too.
grid_coordinate = st.integers(-12_800, 12_800).map(lambda k: k / 128)


@st.composite
def boxes(draw, coordinate=coordinate):
    """Axis-aligned boxes, corners in any order, possibly of zero width."""
    return box_polygons(*(draw(coordinate) for _ in range(4)))[0]


@st.composite
def convex_polygons(draw, coordinate=coordinate, min_area=1e-3):
    """Convex hulls of 3 to 12 points, with area at least ``min_area``."""
    points = draw(st.lists(st.tuples(coordinate, coordinate), min_size=3, max_size=12))
    hull = shapely.convex_hull(shapely.MultiPoint(points))
    assume(hull.geom_type == "Polygon" and hull.area >= min_area)
    return hull


@st.composite
def messy_polygons(draw):
    """Rings from 3 to 10 arbitrary points: often self-intersecting, sometimes collapsed."""
    points = draw(st.lists(st.tuples(coordinate, coordinate), min_size=3, max_size=10))
    return shapely.Polygon(points)


any_polygon = st.one_of(boxes(), convex_polygons(), messy_polygons())
rows = st.one_of(
    boxes(), convex_polygons(), messy_polygons(), st.none(),
    st.builds(shapely.Point, coordinate, coordinate),
)


def _iou(a, b):
    note(f"a = {shapely.to_wkt(a, rounding_precision=-1) if a is not None else None}")
    note(f"b = {shapely.to_wkt(b, rounding_precision=-1) if b is not None else None}")
    return float(pair_metrics(a, b).iou[0])


@core_settings
@given(any_polygon, any_polygon)
def test_iou_dice_giou_and_diou_stay_in_their_ranges(a, b):
    m = pair_metrics(a, b)
    assert 0.0 <= m.iou[0] <= 1.0
    assert 0.0 <= m.dice[0] <= 1.0
    assert -1.0 <= m.giou[0] <= m.iou[0] + 1e-12
    assert -1.0 <= m.diou[0] <= 1.0
    assert not np.isnan([m.iou[0], m.dice[0], m.giou[0], m.diou[0]]).any()


@core_settings
@given(any_polygon, any_polygon)
def test_iou_is_symmetric(a, b):
    assert _iou(a, b) == pytest.approx(_iou(b, a), abs=1e-12)


@core_settings
@given(st.one_of(boxes(), convex_polygons(), messy_polygons()))
def test_identical_polygons_have_iou_one(a):
    assume(pair_metrics(a, a).area_a[0] > 0)
    assert _iou(a, a) == pytest.approx(1.0, abs=1e-12)


#: Polygons on the 1/128 grid: no feature below what doubles resolve once moved or scaled
#: (a 1e-17 high box at y = 0 has area; moved to y = 1 it has none).
grid_polygons = st.one_of(boxes(grid_coordinate), convex_polygons(grid_coordinate))


@core_settings
@given(grid_polygons, grid_polygons, st.floats(-1e3, 1e3), st.floats(-1e3, 1e3))
def test_iou_is_unchanged_by_translation(a, b, dx, dy):
    moved = [shapely.affinity.translate(g, dx, dy) for g in (a, b)]
    assert _iou(*moved) == pytest.approx(_iou(a, b), abs=1e-9)


@core_settings
@given(grid_polygons, grid_polygons, st.floats(1e-2, 1e2))
def test_iou_is_unchanged_by_uniform_scaling(a, b, factor):
    scaled = [shapely.affinity.scale(g, factor, factor, origin=(0, 0)) for g in (a, b)]
    assert _iou(*scaled) == pytest.approx(_iou(a, b), abs=1e-9)


@core_settings
@given(grid_polygons, grid_polygons, st.integers(-20, 20))
def test_iou_is_exactly_unchanged_by_scaling_with_a_power_of_two(a, b, exponent):
    # multiplying by 2^k is exact in floating point (away from underflow, which coordinates on
    # a 1/128 grid avoid), so every area scales exactly by 4^k
    factor = 2.0**exponent
    scaled = [shapely.affinity.scale(g, factor, factor, origin=(0, 0)) for g in (a, b)]
    assert _iou(*scaled) == _iou(a, b)


@core_settings
@given(any_polygon, any_polygon)
def test_dice_is_two_iou_over_one_plus_iou_for_single_pairs(a, b):
    m = pair_metrics(a, b)
    iou = m.iou[0]
    assert m.dice[0] == pytest.approx(2 * iou / (1 + iou), abs=1e-12)


@core_settings
@given(coordinate, coordinate, coordinate, coordinate)
def test_box_corners_in_any_order_give_the_same_box(x1, y1, x2, y2):
    orders = box_polygons([x1, x2, x1, x2], [y1, y1, y2, y2], [x2, x1, x2, x1], [y2, y2, y1, y1])
    assert shapely.equals_exact(orders, orders[0], tolerance=0).all()
    m = pair_metrics(orders, orders[0])
    assert (m.area_a >= 0).all() and (m.area_a == m.area_a[0]).all()
    if m.area_a[0] > 0:
        assert (m.iou == 1.0).all()


@core_settings
@given(st.lists(rows, max_size=12), st.lists(rows, max_size=12),
       st.sampled_from([0.1, 0.5, 0.75, 1.0]))
def test_counts_add_up_to_the_evaluated_rows(predicted, reference, threshold):
    m = evaluate(predicted, reference, iou_threshold=threshold).metrics
    assert m["count_tp"] + m["count_fn"] == m["count_reference"]
    assert m["count_tp"] + m["count_fp"] == m["count_predicted"]
    assert m["count_reference"] + m["count_reference_dropped"] == len(reference)
    assert m["count_predicted"] + m["count_predicted_dropped"] == len(predicted)


@core_settings
@given(st.lists(rows, max_size=12), st.lists(rows, max_size=12))
def test_many_to_one_counts_every_reference_once(predicted, reference):
    m = evaluate(predicted, reference, matching="many_to_one").metrics
    assert m["count_tp"] + m["count_fn"] == m["count_reference"]
    assert m["count_fp"] <= m["count_predicted"]


@core_settings
@given(st.lists(rows, max_size=20))
def test_every_input_row_is_evaluated_or_dropped_for_one_reason(geoms):
    layer = prepare_layer(geoms, None, None, "reference")
    assert layer.n + layer.n_dropped == len(geoms)
    assert sum(layer.n_dropped_by_reason.values()) == layer.n_dropped
    assert set(layer.drop_reason[layer.keep]) <= {""}
    assert set(np.delete(layer.drop_reason, layer.keep)) <= set(DROP_REASONS)
    assert (layer.area_m2 > 0).all() and shapely.is_valid(layer.geometries).all()


AUTHALIC_E2 = pyproj.Geod(ellps="WGS84").es


@settings(deadline=None, max_examples=30)
@given(
    st.floats(-180, 180),
    st.floats(0.01, 10),
    st.floats(-80, 75),
    st.floats(0.01, 5),
)
def test_lonlat_box_area_depends_only_on_latitudes_and_longitude_span(west, width, south, height):
    # a box crossing 180° (written with longitudes beyond it) has the area of the same box
    # moved to the prime meridian: a²/2 · Δλ · (q(φ2) - q(φ1)) on the WGS 84 ellipsoid
    a_m, e2 = 6378137.0, AUTHALIC_E2
    e = math.sqrt(e2)

    def q(lat):
        s = math.sin(math.radians(lat))
        return (1 - e2) * (s / (1 - e2 * s * s) - math.log((1 - e * s) / (1 + e * s)) / (2 * e))

    north = south + height
    expected = a_m**2 / 2 * math.radians(width) * (q(north) - q(south))
    wgs84, ea = pyproj.CRS("EPSG:4326"), pyproj.CRS("EPSG:6933")
    field = shapely.box(west, south, west + width, north)
    layer = prepare_layer([field], wgs84, ea, "predicted")
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-9)
