"""Adaptive densification (core/geometry/densify.py) against splitting every edge into 50 m pieces.

The reference values come from the old construction itself, rebuilt here from shapely and
pyproj directly (segmentize every edge at 50 m in the source CRS, reproject vertex by vertex),
not from the code under test.
"""

import math

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core.geometry.crs import densify_step
from iou_evaluation.core.geometry.densify import (
    MAX_GRID_PIECES,
    RELATIVE_AREA_ERROR,
    Projector,
    densify_adaptive,
)
from iou_evaluation.core.geometry.prepare import (
    _to_equal_area,
    prepare_layer,
    split_at_antimeridian,
    unwrap_antimeridian,
)

EA = pyproj.CRS("EPSG:6933")


def fifty_metre_geometries(geoms, crs):
    """The old construction: every edge in 50 m pieces, then reprojected (antimeridian rows
    made continuous first, as prepare does)."""
    crs = pyproj.CRS(crs)
    geoms = np.asarray(geoms, dtype=object)
    if crs.is_geographic:
        geoms = unwrap_antimeridian(geoms)
    dense = shapely.segmentize(geoms, densify_step(crs))
    return _to_equal_area(dense, crs, EA, "test")


def adaptive_geometries(geoms, crs):
    return prepare_layer(list(geoms), crs, EA, "reference").geometries


def relative(a, b):
    return np.abs(np.asarray(a) / np.asarray(b) - 1.0)


# Polygons in a geographic CRS: long diagonal edges, high latitudes, a hole, several parts,
# one across the antimeridian, a country-sized one.
GEOGRAPHIC = [
    shapely.Polygon([(10, 40), (11, 40), (10, 41)]),  # 1° right triangle
    shapely.Polygon([(-120, 30), (-80, 48), (-100, 25)]),  # edges of thousands of km
    shapely.Polygon([(20, 75), (40, 78), (60, 74), (35, 70)]),  # high latitudes
    shapely.Polygon([(-60, -70), (-30, -82), (10, -75)]),  # Antarctic
    shapely.Polygon(
        [(0, 0), (4, 0.5), (4, 4), (0, 3)], [[(1, 1), (2, 1.2), (2, 2), (1, 2)]]
    ),  # a hole
    shapely.MultiPolygon(
        [shapely.Polygon([(100, 10), (101, 10.3), (100.5, 11)]),
         shapely.Polygon([(102, 12), (103, 12.5), (102, 13)])]
    ),
    shapely.Polygon([(179.5, -17.0), (-179.2, -16.5), (-179.5, -15.8), (179.8, -16.0)]),  # across 180°
    shapely.Polygon([(30, 50), (180, 55), (179, 70), (40, 68)]),  # 150° of longitude wide
    shapely.Polygon([(10, 40), (10.003, 40), (10, 40.002)]),  # a field-sized triangle
    shapely.box(-180, 80, 180, 90),  # a cap drawn flat: edges of a full turn, read as drawn
    shapely.Polygon([(-180, -16.5), (180, -16.5), (180, -16.0), (-180, -16.2)]),  # a band
]


def test_areas_within_1e9_of_fifty_metre_pieces_in_a_geographic_crs():
    old = shapely.area(fifty_metre_geometries(GEOGRAPHIC, "EPSG:4326"))
    new = shapely.area(adaptive_geometries(GEOGRAPHIC, "EPSG:4326"))
    assert np.all(relative(new, old) <= 1e-9)


def test_areas_within_1e9_of_fifty_metre_pieces_in_nad83():
    geoms = [shapely.affinity.translate(g, -100, 0) for g in GEOGRAPHIC[:6]]
    old = shapely.area(fifty_metre_geometries(geoms, "EPSG:4269"))
    new = shapely.area(adaptive_geometries(geoms, "EPSG:4269"))
    assert np.all(relative(new, old) <= 1e-9)


def test_areas_within_1e9_of_fifty_metre_pieces_from_utm():
    fields = [
        shapely.Polygon([(350000, 3850000), (350300, 3850000), (350000, 3850250)]),
        shapely.box(340000, 3840000, 340805, 3840805),
        shapely.Polygon([(100000, 3850000), (600000, 3850000), (600000, 4350000)]),
        shapely.Point(500000, 4000000).buffer(3000, quad_segs=64),
    ]
    old = shapely.area(fifty_metre_geometries(fields, "EPSG:32613"))
    new = shapely.area(adaptive_geometries(fields, "EPSG:32613"))
    assert np.all(relative(new, old) <= 1e-9)


def test_iou_of_shifted_pairs_within_1e9_of_fifty_metre_pieces():
    def ious(reference, predicted):
        inter = shapely.area(shapely.intersection(reference, predicted))
        union = shapely.area(reference) + shapely.area(predicted) - inter
        return inter / union

    predicted = [shapely.affinity.translate(g, 0.0003, 0.0002) for g in GEOGRAPHIC[:6]]
    predicted += [shapely.affinity.scale(g, 0.9, 0.95) for g in GEOGRAPHIC[:6]]
    reference = GEOGRAPHIC[:6] * 2
    old = ious(fifty_metre_geometries(reference, "EPSG:4326"),
               fifty_metre_geometries(predicted, "EPSG:4326"))
    new = ious(adaptive_geometries(reference, "EPSG:4326"),
               adaptive_geometries(predicted, "EPSG:4326"))
    assert np.all(relative(new, old) <= 1e-9)


def test_the_antimeridian_polygon_is_cut_as_before():
    polygon = GEOGRAPHIC[6]
    new = adaptive_geometries([polygon], "EPSG:4326")[0]
    assert shapely.get_num_geometries(new) == 2  # one part each side of 180°
    old = fifty_metre_geometries([polygon], "EPSG:4326")[0]
    assert shapely.area(new) == pytest.approx(shapely.area(old), rel=1e-9)
    lonlat = split_at_antimeridian(unwrap_antimeridian(np.array([polygon], dtype=object)))
    assert shapely.get_num_geometries(lonlat[0]) == 2


def test_meridians_and_parallels_need_no_vertex():
    # In a cylindrical equal-area CRS a meridian or a parallel is a straight line, of any
    # length: the box's edges (111 km and 85 km, hundreds of grid pieces) stay single edges.
    box = shapely.box(10, 40, 11, 41)
    step = densify_step(pyproj.CRS("EPSG:4326"))
    assert math.ceil(1.0 / step) > MAX_GRID_PIECES
    dense, added = densify_adaptive(
        np.array([box], dtype=object), Projector(pyproj.CRS("EPSG:4326"), EA), step
    )
    assert added == 0
    assert dense[0] is box


def test_a_long_diagonal_edge_is_cut_where_it_bends():
    # 40° of longitude and 18° of latitude: the image bends by kilometres; every piece's
    # middle ends within the tolerance, and the result is far leaner than 50 m pieces.
    crs = pyproj.CRS("EPSG:4326")
    polygon = GEOGRAPHIC[1]
    step = densify_step(crs)
    dense, added = densify_adaptive(np.array([polygon], dtype=object), Projector(crs, EA), step)
    n_fifty = shapely.get_num_coordinates(shapely.segmentize(polygon, step))
    assert 100 < added < n_fifty / 4


def test_a_translation_between_projected_crss_needs_no_vertex():
    shifted = pyproj.CRS("+proj=cea +lat_ts=30 +lon_0=0 +x_0=1000 +y_0=500 +ellps=WGS84 +units=m")
    triangle = shapely.Polygon([(0, 3_000_000), (9_000, 3_000_000), (0, 3_005_000)])
    dense, added = densify_adaptive(
        np.array([triangle], dtype=object), Projector(shifted, EA), 50.0
    )
    assert added == 0
    assert dense[0] is triangle


def test_with_no_error_allowed_every_grid_point_is_kept():
    crs = pyproj.CRS("EPSG:4326")
    polygon = GEOGRAPHIC[0]
    step = densify_step(crs)
    dense, _ = densify_adaptive(
        np.array([polygon], dtype=object), Projector(crs, EA), step, relative_error=0.0
    )
    expected = shapely.get_coordinates(shapely.segmentize(polygon, step))
    got = shapely.get_coordinates(dense[0])
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_fewer_vertices_than_fifty_metre_pieces():
    geoms = GEOGRAPHIC[:6]
    old = shapely.get_num_coordinates(fifty_metre_geometries(geoms, "EPSG:4326")).sum()
    new = shapely.get_num_coordinates(adaptive_geometries(geoms, "EPSG:4326")).sum()
    assert new < old / 4


def test_bad_arguments_raise():
    projector = Projector(pyproj.CRS("EPSG:4326"), EA)
    with pytest.raises(ValueError, match="step"):
        densify_adaptive(np.array([GEOGRAPHIC[0]], dtype=object), projector, 0.0)
    with pytest.raises(ValueError, match="relative_error"):
        densify_adaptive(np.array([GEOGRAPHIC[0]], dtype=object), projector, 1.0, -1.0)


def test_missing_and_empty_rows_pass_through():
    projector = Projector(pyproj.CRS("EPSG:4326"), EA)
    geoms = np.array([None, shapely.Polygon(), GEOGRAPHIC[0]], dtype=object)
    dense, _ = densify_adaptive(geoms, projector, densify_step(pyproj.CRS("EPSG:4326")))
    assert dense[0] is None and dense[1].is_empty
    assert shapely.get_num_coordinates(dense[2]) > 4


@settings(max_examples=40, deadline=None)
@given(
    lon=st.floats(-170, 170), lat=st.floats(-80, 80), size=st.floats(0.001, 5.0),
    shape=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=6),
)
def test_area_differs_from_fifty_metre_pieces_by_at_most_the_bound(lon, lat, size, shape):
    polygon = shapely.convex_hull(
        shapely.MultiPoint([(lon + size * u, lat + size * v) for u, v in shape])
    )
    if polygon.geom_type != "Polygon" or polygon.area < 1e-4 * size * size:
        return
    old = shapely.area(fifty_metre_geometries([polygon], "EPSG:4326"))[0]
    new = shapely.area(adaptive_geometries([polygon], "EPSG:4326"))[0]
    # first order in the pieces' length: a margin of 1 % for the higher-order terms
    assert abs(new - old) <= 1.01 * RELATIVE_AREA_ERROR * old + 1e-12 * old
