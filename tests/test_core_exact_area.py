"""Exact areas of longitude/latitude polygons in a cylindrical equal-area CRS
(core/geometry/exact_area.py) and the preparation path that uses them.

Expected values come from elsewhere: PROJ's projection of a box's corners (a meridian/parallel
box is a rectangle in the projection), the WGS 84 ellipsoid's surface area, the sphere's
zone formula R²·Δλ·(sin φ2 - sin φ1), and polygons densified to 1-2 m pieces and projected
by PROJ vertex by vertex (which converge to the exact value quadratically).
"""

import math

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core import evaluate
from iou_evaluation.core.geometry.exact_area import LonLatArea, lonlat_area_for
from iou_evaluation.core.pairs.overlap import overlap_pairs
from iou_evaluation.core.geometry.prepare import prepare_layer

EA = pyproj.CRS("EPSG:6933")
WGS84 = pyproj.CRS("EPSG:4326")
AREA = LonLatArea.for_crs(EA)

#: Surface area of the WGS 84 ellipsoid, m² (NIMA TR8350.2, table 3.5: 5.10065621724e14).
WGS84_SURFACE_M2 = 5.10065621724e14


def projected_area(geom, crs, piece_deg=None, target=EA):
    """Area of ``geom`` (in ``crs``) with its vertices (after optional segmentize) projected
    by PROJ; ``shapely`` shoelace on the projected polygon."""
    if piece_deg is not None:
        geom = shapely.segmentize(geom, piece_deg)
    transformer = pyproj.Transformer.from_crs(crs, target, always_xy=True)
    return shapely.transform(geom, lambda c: np.column_stack(
        transformer.transform(c[:, 0], c[:, 1]))).area


def test_cylindrical_equal_area_crss_are_recognised_and_others_not():
    assert AREA is not None
    assert LonLatArea.for_crs(pyproj.CRS("ESRI:54034")) is not None  # World Cylindrical EA
    for lon_0 in (20, -150, -179.5, 179.9):
        assert LonLatArea.for_crs(pyproj.CRS(f"+proj=cea +lat_ts=45 +lon_0={lon_0} +x_0=1000 "
                                             "+ellps=GRS80")) is not None, lon_0
    for other in ("EPSG:5070", "EPSG:3035", "EPSG:32633", "EPSG:4326", "EPSG:3857"):
        assert LonLatArea.for_crs(pyproj.CRS(other)) is None, other
    assert LonLatArea.for_crs(None) is None
    assert lonlat_area_for([WGS84, pyproj.CRS("EPSG:4269")], EA) is not None
    assert lonlat_area_for([WGS84, pyproj.CRS("EPSG:32633")], EA) is None
    assert lonlat_area_for([WGS84], pyproj.CRS("EPSG:5070")) is None


@pytest.mark.parametrize("box", [(10, 40, 12, 43), (-179.5, -89, 179.5, -60), (0, 0, 1e-4, 1e-4),
                                 (100, -5, 140, 5)])
def test_a_meridian_parallel_box_is_the_rectangle_of_its_projected_corners(box):
    transformer = pyproj.Transformer.from_crs(WGS84, EA, always_xy=True)
    x0, y0 = transformer.transform(box[0], box[1])
    x1, y1 = transformer.transform(box[2], box[3])
    got = AREA(np.array([shapely.box(*box)], dtype=object))[0]
    assert got == pytest.approx((x1 - x0) * (y1 - y0), rel=1e-10)  # PROJ's own rounding


def test_the_whole_world_is_the_surface_of_the_ellipsoid():
    world = shapely.box(-180, -90, 180, 90)
    assert AREA(np.array([world], dtype=object))[0] == pytest.approx(WGS84_SURFACE_M2, rel=1e-11)


def test_on_a_sphere_a_zone_has_the_archimedes_area():
    radius = 6_371_000.0
    sphere = LonLatArea.for_crs(pyproj.CRS(f"+proj=cea +R={radius} +lat_ts=0"))
    lon0, lat0, lon1, lat1 = -30.0, 12.5, 47.0, 71.25
    expected = radius**2 * math.radians(lon1 - lon0) * (
        math.sin(math.radians(lat1)) - math.sin(math.radians(lat0)))
    got = sphere(np.array([shapely.box(lon0, lat0, lon1, lat1)], dtype=object))[0]
    assert got == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("polygon", [
    shapely.Polygon([(0, 0), (20, 50), (-30, 60), (-5, 10)]),  # long diagonal edges
    shapely.Polygon([(-79.4619, 37.7650), (-79.4152, 37.7882), (-79.4300, 37.7700)]),  # 5 km
    shapely.Polygon([(170, -40), (175, -35), (178, -44), (171, -47)]),
])
def test_diagonal_edges_match_fine_pieces_projected_by_proj(polygon):
    got = AREA(np.array([polygon], dtype=object))[0]
    extent = max(polygon.bounds[2] - polygon.bounds[0], polygon.bounds[3] - polygon.bounds[1])
    piece = min(0.002, extent / 5000)  # at most about 220 m
    fine = projected_area(polygon, WGS84, piece_deg=piece)
    finer = projected_area(polygon, WGS84, piece_deg=piece / 2)
    # The pieces' error falls fourfold when they halve (down to rounding): the exact value
    # is their limit.
    assert abs(finer / got - 1) < 0.3 * abs(fine / got - 1) + 1e-12
    assert finer == pytest.approx(got, rel=2e-10)


def test_holes_parts_collections_and_missing_values():
    shell = shapely.box(0, 0, 10, 10)
    hole = shapely.box(2, 2, 4, 4)
    with_hole = shapely.Polygon(shell.exterior.coords, [hole.exterior.coords[::-1]])
    two = shapely.MultiPolygon([shell, shapely.box(20, 0, 30, 10)])
    mixed = shapely.GeometryCollection([with_hole, shapely.LineString([(0, 0), (5, 5)]),
                                        shapely.Point(1, 1)])
    a_shell, a_hole, a_other = (projected_area(g, WGS84) for g in
                                (shell, hole, shapely.box(20, 0, 30, 10)))
    got = AREA(np.array([with_hole, two, mixed, None, shapely.Polygon(),
                         shapely.LineString([(0, 0), (1, 1)])], dtype=object))
    np.testing.assert_allclose(got[:3], [a_shell - a_hole, a_shell + a_other, a_shell - a_hole],
                               rtol=1e-12)
    assert list(got[3:]) == [0.0, 0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(
    st.floats(-170, 170), st.floats(-80, 75), st.floats(0.001, 9), st.floats(0.001, 9),
    st.floats(-360, 360), st.floats(0.05, 0.95),
)
def test_area_is_additive_and_invariant_under_a_shift_in_longitude(lon, lat, w, h, shift, cut):
    """A triangle cut in two by a segment from a vertex: the parts add up to the whole (the
    cut edge cancels), and moving every longitude by the same amount changes nothing (the
    projection is a translation in x)."""
    a, b, c = (lon, lat), (lon + w, lat + 0.3 * h), (lon + 0.4 * w, lat + h)
    m = (b[0] + cut * (c[0] - b[0]), b[1] + cut * (c[1] - b[1]))
    whole, left, right = (shapely.Polygon(p) for p in ([a, b, c], [a, b, m], [a, m, c]))
    moved = shapely.transform(whole, lambda xy: xy + [shift, 0.0])
    area = AREA(np.array([whole, left, right, moved], dtype=object))
    # Up to rounding: of the coordinates themselves (an ulp of the largest longitude across
    # the triangle's height: a thin triangle far from 0° has few exact digits of Δλ), and of
    # y itself (up to 6.4e6 m near the poles) across the triangle's width.
    metres_per_degree, eps = 111_320.0, np.finfo(float).eps
    ulp_deg = 8 * eps * max(abs(lon) + w, abs(lon + shift) + w, 1.0)
    slack = (ulp_deg * metres_per_degree**2 * (h + w)
             + 8 * eps * 6.4e6 * metres_per_degree * (h + w))
    assert area[1] + area[2] == pytest.approx(area[0], rel=1e-12, abs=slack)
    assert area[3] == pytest.approx(area[0], rel=1e-12, abs=slack)


def test_overlay_in_longitude_latitude_gives_the_exact_intersection():
    """Two boxes crossing at slanted edges: the intersection measured by the exact area of the
    longitude/latitude overlay equals PROJ's projection of the overlay densified to ~1 m."""
    a = shapely.Polygon([(10, 40), (12, 40.5), (11.8, 43), (9.9, 42.7)])
    b = shapely.Polygon([(11, 41), (13, 41.2), (12.7, 44), (10.8, 43.1)])
    geoms = np.array([a], dtype=object), np.array([b], dtype=object)
    pairs = overlap_pairs(geoms[0], AREA(geoms[0]), geoms[1], AREA(geoms[1]), area=AREA)
    expected = projected_area(a.intersection(b), WGS84, piece_deg=1e-5)
    assert pairs.intersection_m2[0] == pytest.approx(expected, rel=1e-10)


def test_prepare_measures_a_datum_change_as_proj_maps_it():
    """NAD83 (EPSG:4269) in Hawaii: PROJ moves points by about a metre (a Helmert
    transformation) on the way to WGS 84. The prepared area is that of the transformed
    polygon (densified to 2 m and projected by PROJ), not of the coordinates read as WGS 84."""
    nad83 = pyproj.CRS("EPSG:4269")
    field = shapely.Polygon([(-157.30, 20.55), (-156.10, 20.60), (-156.00, 21.20),
                             (-157.20, 21.15)])
    layer = prepare_layer([field], nad83, EA, "reference",
                          lonlat_area=lonlat_area_for([nad83], EA))
    expected = projected_area(field, nad83, piece_deg=2 / 111_320)
    read_as_wgs84 = projected_area(field, WGS84, piece_deg=2 / 111_320)
    assert layer.lonlat is not None and layer.area_of is not shapely.area
    assert layer.area_m2[0] == pytest.approx(expected, rel=5e-11)
    assert abs(read_as_wgs84 / expected - 1) > 1e-7  # the datum change matters here


def test_prepare_cuts_at_the_antimeridian_and_keeps_the_area():
    across = shapely.box(178, -18, 182, -16)  # continuous longitudes beyond 180°
    layer = prepare_layer([across], WGS84, EA, "reference",
                          lonlat_area=lonlat_area_for([WGS84], EA))
    expected = (projected_area(shapely.box(178, -18, 180, -16), WGS84)
                + projected_area(shapely.box(-180, -18, -178, -16), WGS84))
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-12)
    assert shapely.get_num_geometries(layer.lonlat[0]) == 2
    assert shapely.bounds(layer.lonlat[0])[2] <= 180


def test_evaluate_in_longitude_latitude_gives_the_iou_of_the_projected_rectangles():
    """Geographic boxes in EPSG:6933 are rectangles there: IoU from PROJ's corners."""
    reference = [shapely.box(10, 40, 12, 43)]
    predicted = [shapely.box(10.5, 40, 12.5, 43.5)]
    transformer = pyproj.Transformer.from_crs(WGS84, EA, always_xy=True)

    def rect(box):
        x0, y0 = transformer.transform(box[0], box[1])
        x1, y1 = transformer.transform(box[2], box[3])
        return x0, y0, x1, y1

    r, p = rect((10, 40, 12, 43)), rect((10.5, 40, 12.5, 43.5))
    inter = (min(r[2], p[2]) - max(r[0], p[0])) * (min(r[3], p[3]) - max(r[1], p[1]))
    union = (r[2] - r[0]) * (r[3] - r[1]) + (p[2] - p[0]) * (p[3] - p[1]) - inter
    result = evaluate(predicted, reference, predicted_crs="EPSG:4326",
                      reference_crs="EPSG:4326", iou_threshold=0.5)
    assert result.metrics["iou_mean"] == pytest.approx(inter / union, rel=1e-12)
