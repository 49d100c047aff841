"""Messy model output and messier GIS data: every case has a defined, counted result.

Expected values are worked out by hand, from closed forms (the authalic latitude function for
areas of longitude/latitude boxes on the WGS 84 ellipsoid, the sagitta of a curved edge), from
the numbers printed in the IoU article ("Intersection over Union"), or from pyproj.Geod (Karney's geodesic
areas), never from this code's own output.
"""

import logging
import math
import struct

import numpy as np
import pyproj
import pytest
import shapely
from iou_evaluation.core import evaluate
from iou_evaluation.core.pairs import overlap as overlap_module
from iou_evaluation.core.pairs.overlap import intersection_area, overlap_pairs, round_ratio
from iou_evaluation.core.pairs.pair_metrics import (
    box_polygons,
    pair_metrics,
    spatial_iou,
    spatial_pair_metrics,
)
from iou_evaluation.core.geometry.prepare import DROP_REASONS, prepare_layer
from iou_evaluation.core.util.progress import EvaluationCanceled, Progress

box = shapely.box
WGS84 = pyproj.CRS("EPSG:4326")
EQUAL_AREA = pyproj.CRS("EPSG:6933")
GEOD = pyproj.Geod(ellps="WGS84")
A_M, E2 = GEOD.a, GEOD.es  # WGS 84 semi-major axis and squared eccentricity
BOW_TIE = "POLYGON ((0 0, 1 1, 0 1, 1 0, 0 0))"


def authalic_q(lat_deg):
    """Snyder's q(φ): the area of a longitude/latitude box on the ellipsoid is
    a²/2 · Δλ · (q(φ2) − q(φ1)) (Snyder 1987, eq. 3-12)."""
    e = math.sqrt(E2)
    s = math.sin(math.radians(lat_deg))
    return (1 - E2) * (s / (1 - E2 * s * s) - math.log((1 - e * s) / (1 + e * s)) / (2 * e))


def lonlat_box_area_m2(west, south, east, north):
    return A_M**2 / 2 * math.radians(east - west) * (authalic_q(north) - authalic_q(south))


def geod_area_m2(polygon, crs="EPSG:4326", step=0.001):
    """Karney's geodesic area of a polygon whose edges are straight in ``crs``, split into
    pieces of ``step`` CRS units first so that geodesic pieces follow the straight edges."""
    to_lonlat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    total = 0.0
    for part in shapely.get_parts(shapely.segmentize(polygon, step)):
        for k, ring in enumerate([part.exterior, *part.interiors]):
            lon, lat = to_lonlat.transform(*shapely.get_coordinates(ring).T)
            area = abs(GEOD.polygon_area_perimeter(lon, lat)[0])
            total += area if k == 0 else -area
    return total


def transform(geom, source, target, densify=None):
    """``geom`` from ``source`` to ``target`` (vertices only, or after splitting edges into
    pieces of ``densify`` source units, which keeps the same region)."""
    t = pyproj.Transformer.from_crs(source, target, always_xy=True)
    if densify is not None:
        geom = shapely.segmentize(geom, densify)
    return shapely.transform(geom, lambda xy: np.column_stack(t.transform(*xy.T)))


def layer(geoms, crs=None):
    crs = pyproj.CRS(crs) if crs is not None else None
    return prepare_layer(geoms, crs, EQUAL_AREA if crs is not None else None, "reference")


def area_of(geom, crs=None):
    prepared = layer([geom], crs)
    assert prepared.n == 1
    return float(prepared.area_m2[0])


def iou_of(a, b, a_crs=None, b_crs=None):
    return spatial_pair_metrics(a, b, a_crs=a_crs, b_crs=b_crs)["iou"]


# ---------------------------------------------------------------------------------------------
# The cases 1-8


def test_case1_iou_at_the_threshold_is_exactly_one_half_and_matches():
    a, b = box(0, 0.6, 0.4, 0.8), box(0, 0.6, 0.4, 0.7)
    # the article's box formula: intersection 0.4 x (0.7 - 0.6), union 0.4 x (0.8 - 0.6)
    naive = (0.4 * (0.7 - 0.6)) / (0.4 * (0.8 - 0.6))
    assert naive == 0.4999999999999997  # the trap
    assert pair_metrics(a, b).iou[0] == 0.5
    result = evaluate([b], [a], iou_threshold=0.5)
    assert result.per_reference["iou"][0] == 0.5
    assert result.metrics["count_tp"] == 1


def test_case2_box_with_reversed_corners_is_the_same_box():
    canonical = box_polygons(0, 0.6, 0.4, 0.8)
    for x1, y1, x2, y2 in [(0.4, 0.6, 0, 0.8), (0, 0.8, 0.4, 0.6), (0.4, 0.8, 0, 0.6)]:
        for reversed_box in (box_polygons(x1, y1, x2, y2)[0], box(x1, y1, x2, y2)):
            m = pair_metrics(reversed_box, canonical)
            assert m.area_a[0] == pytest.approx(0.08)  # never negative
            assert m.iou[0] == 1.0


def test_case2_box_with_a_non_finite_corner_is_missing_not_nan():
    boxes = box_polygons([0, np.nan, 0], [0, 0, 0], [1, 1, np.inf], [1, 1, 1])
    assert boxes[0] is not None and boxes[1] is None and boxes[2] is None
    m = pair_metrics(boxes, box(0, 0, 1, 1))
    assert list(m.iou) == [1.0, 0.0, 0.0]
    assert not np.isnan(m.iou).any()


def test_case3_touching_squares_have_zero_iou_and_giou_and_do_not_match():
    a, b = box(0, 0, 1, 1), box(1, 0, 2, 1)
    m = pair_metrics(a, b)
    assert (m.iou[0], m.giou[0]) == (0.0, 0.0)  # C = (0,0)-(2,1) = union
    result = evaluate([b], [a], iou_threshold=1e-6)
    assert result.metrics["count_tp"] == 0


def test_case3_separated_squares_have_negative_giou_and_diou():
    m = pair_metrics(box(0, 0, 1, 1), box(2, 0, 3, 1))
    assert m.iou[0] == 0.0
    # C = (0,0)-(3,1): |C| = 3, |A ∪ B| = 2, GIoU = 0 - 1/3
    assert m.giou[0] == pytest.approx(-1 / 3, rel=1e-12)
    # centres (0.5, 0.5), (2.5, 0.5): ρ² = 4; c² = 3² + 1² = 10; DIoU = 0 - 0.4
    assert m.diou[0] == pytest.approx(-0.4, rel=1e-12)


def test_case4_two_identical_predictions_on_one_reference():
    m = evaluate([box(0, 0, 10, 10)] * 2, [box(0, 0, 10, 10)]).metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (1, 1, 0)
    assert m["f1"] == pytest.approx(2 / 3)


def test_case5_greedy_matching_keeps_both_matches():
    # IoU(r1,p1) = 1, IoU(r2,p2) = 80/120: both pass 0.5 once r1-p1 is taken
    references = [box(0, 0, 10, 10), box(3, 0, 13, 10)]
    predictions = [box(0, 0, 10, 10), box(1, 0, 11, 10)]
    m = evaluate(predictions, references).metrics
    assert m["count_tp"] == 2
    assert m["f1"] == 1.0


def test_case6_bow_tie_is_repaired_to_both_triangles():
    bow_tie = shapely.from_wkt(BOW_TIE)
    metrics = spatial_pair_metrics(bow_tie, box(0, 0, 1, 1))
    assert metrics["area_a_m2"] == pytest.approx(0.5)  # buffer(0) would keep one triangle, 0.25
    assert metrics["iou"] == pytest.approx(0.5)
    assert metrics["a_repaired"] == 1


UTM_SQUARE = box(500000, 5300000, 500100, 5300100)


def test_case7_same_square_in_utm_and_wgs84_has_iou_one():
    # "The same square" in EPSG:4326 is the same region: its edges, straight in UTM, are
    # followed to 1 m before the vertices are transformed (a 1 m chord departs from them by
    # ~2e-8 m). What remains is this pipeline's own error: the UTM edges reach EPSG:6933 as
    # 50 m chords (sagitta κL²/8 with κ = tanφ/N = 1.7e-7 /m: 0.05 mm, 7e-7 of the IoU).
    wgs84 = transform(UTM_SQUARE, "EPSG:32632", "EPSG:4326", densify=1.0)
    result = evaluate(
        [wgs84], [UTM_SQUARE], predicted_crs="EPSG:4326", reference_crs="EPSG:32632"
    )
    assert result.per_reference["iou"][0] == pytest.approx(1.0, abs=1e-6)
    assert iou_of(wgs84, UTM_SQUARE, "EPSG:4326", "EPSG:32632") == pytest.approx(1.0, abs=1e-6)


def test_case7_corner_only_wgs84_square_differs_by_the_sagitta_of_its_edges():
    # With only its corners transformed, the EPSG:4326 square's east-west edges are straight in
    # longitude/latitude: parallels, of geodesic curvature tanφ/N, where the UTM edges (on the
    # central meridian) are geodesics. Each 100 m edge bulges by L² tanφ / (8N) ≈ 0.2 mm; the
    # two lens-shaped areas (2/3 · L · sagitta each) make 1 - IoU = L tanφ / (6N) ≈ 2.9e-6.
    corners = transform(UTM_SQUARE, "EPSG:32632", "EPSG:4326")
    lat = math.radians(shapely.get_coordinates(corners)[:, 1].mean())
    n_m = A_M / math.sqrt(1 - E2 * math.sin(lat) ** 2)
    expected = 1 - 100 * math.tan(lat) / (6 * n_m)
    got = iou_of(corners, UTM_SQUARE, "EPSG:4326", "EPSG:32632")
    assert got == pytest.approx(expected, abs=1e-6)
    assert got < 1 - 1e-6  # not the same region


def test_case8_null_empty_point_and_line_rows_are_dropped_and_counted():
    references = [
        box(0, 0, 1, 1),
        None,
        shapely.Polygon(),
        shapely.Point(0, 0),
        shapely.LineString([(0, 0), (1, 1)]),
        "POLYGON ((0 0, 1 0, 1 1, 0 0))",  # text where a geometry belongs
    ]
    prepared = layer(references)
    assert prepared.n == 1
    assert prepared.n_dropped_by_reason == {
        "null": 2, "empty": 1, "not_polygonal": 2, "non_finite": 0, "zero_area": 0,
        "not_projectable": 0,
    }
    m = evaluate([box(0, 0, 1, 1), shapely.MultiPoint([(0, 0), (1, 1)])], references).metrics
    assert (m["count_reference"], m["count_reference_dropped"]) == (1, 5)
    assert (m["count_predicted"], m["count_predicted_dropped"]) == (1, 1)
    assert m["f1"] == 1.0


def test_case8_layer_whose_every_row_is_invalid_is_empty_not_an_error():
    junk = [None, shapely.Point(1, 1), box(2, 2, 2, 3), shapely.Polygon([(0, 0), (1, 0), (2, 0)])]
    m = evaluate([box(0, 0, 1, 1)], junk).metrics
    assert (m["count_reference"], m["count_reference_dropped"]) == (0, 4)
    assert (m["count_tp"], m["count_fp"]) == (0, 1)
    # the seed's empty-denominator rule: rates 0.0
    assert m["precision"] == m["recall"] == m["f1"] == 0.0


def test_case8_both_layers_empty_or_all_invalid_give_rates_of_one():
    for predicted, reference in [([], []), ([None], [shapely.Point(0, 0)])]:
        m = evaluate(predicted, reference).metrics
        assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (0, 0, 0)
        assert m["precision"] == m["recall"] == m["f1"] == 1.0


def test_case8_both_layers_empty_say_so_once():
    """Each empty layer said what its emptiness makes of the rates ("every prediction is a
    false positive, recall is 0") even when both were empty and the rates are 1.0: one
    message now says that."""
    warnings = evaluate([], []).warnings
    assert [w for w in warnings if "empty" in w] == [
        "Both layers are empty (no features): nothing is scored; precision, recall and F1 are "
        "1.0 by convention"]
    assert any("predicted layer is empty" in w for w in evaluate([], [box(0, 0, 1, 1)]).warnings)


def test_case8_one_layer_empty_gives_rates_of_zero():
    m = evaluate([box(0, 0, 1, 1)], []).metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (0, 1, 0)
    assert m["precision"] == m["recall"] == m["f1"] == 0.0


# ---------------------------------------------------------------------------------------------
# Geometry


@pytest.mark.parametrize(
    "wkt, area",
    [
        (BOW_TIE, 0.5),  # two triangles of 1/4
        # figure eight: two 2 x 1 lobes crossing at (2, 1)
        ("POLYGON ((0 0, 2 0, 2 2, 4 2, 4 1, 0 1, 0 0))", 4.0),
        # a hole sharing part of the shell's edge: the hole is cut out, 100 - 3 x 3
        ("POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (0 2, 3 2, 3 5, 0 5, 0 2))", 91.0),
        # a spike out of the top edge and back: the square alone
        ("POLYGON ((0 0, 10 0, 10 10, 5 10, 5 15, 5 10, 0 10, 0 0))", 100.0),
        # a spike into the square: still the square
        ("POLYGON ((0 0, 10 0, 10 10, 5 10, 5 5, 5 10, 0 10, 0 0))", 100.0),
        # two overlapping parts of one multipolygon: their union, 4 + 4 - 1
        ("MULTIPOLYGON (((0 0, 2 0, 2 2, 0 2, 0 0)), ((1 1, 3 1, 3 3, 1 3, 1 1)))", 7.0),
        # a part that has collapsed to a line is dropped, the square kept
        ("MULTIPOLYGON (((0 0, 1 0, 1 1, 0 1, 0 0)), ((5 5, 6 5, 7 5, 5 5)))", 1.0),
    ],
)
def test_invalid_geometry_is_repaired_and_counted(wkt, area):
    prepared = layer([shapely.from_wkt(wkt)])
    assert prepared.n == 1 and prepared.n_repaired == 1
    assert prepared.area_m2[0] == pytest.approx(area, rel=1e-12)
    assert shapely.is_valid(prepared.geometries[0])


@pytest.mark.parametrize(
    "wkt, area",
    [
        # a hole touching the shell at one point is valid (OGC): nothing to repair, 100 - 9
        ("POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (0 5, 3 2, 3 8, 0 5))", 91.0),
        # repeated vertices are valid
        ("POLYGON ((0 0, 10 0, 10 0, 10 10, 0 10, 0 10, 0 0))", 100.0),
    ],
)
def test_valid_oddities_are_kept_unrepaired(wkt, area):
    prepared = layer([shapely.from_wkt(wkt)])
    assert (prepared.n, prepared.n_repaired) == (1, 0)
    assert prepared.area_m2[0] == pytest.approx(area, rel=1e-12)


@pytest.mark.parametrize(
    "sliver",
    [
        "POLYGON ((0 0, 1 0, 2 0, 0 0))",  # collinear: no area at all
        "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (0 0, 10 0, 10 10, 0 10, 0 0))",  # hole = shell
        "POLYGON ((5 5, 5 5, 5 5, 5 5))",  # one point repeated
    ],
)
def test_collapsed_sliver_vanishes_under_repair_and_is_dropped_as_zero_area(sliver):
    prepared = layer([shapely.from_wkt(sliver), box(0, 0, 1, 1)])
    assert prepared.n == 1 and list(prepared.keep) == [1]
    assert prepared.drop_reason[0] == "zero_area"


def test_mixed_geometry_collection_keeps_its_polygons_and_counts_a_repair():
    collection = shapely.GeometryCollection(
        [box(0, 0, 1, 1), shapely.LineString([(0, 0), (5, 5)]), shapely.Point(9, 9)]
    )
    prepared = layer([collection])
    assert prepared.area_m2[0] == 1.0
    assert prepared.n_repaired == 1
    assert prepared.geometries[0].geom_type == "Polygon"


def test_geometry_collection_from_a_linework_repair_keeps_its_polygonal_part():
    # QGIS's Fix geometries (the "linework" method) turns a shell-touching hole into a
    # collection of the shell and the hole's boundary: the polygon, area 100, is what counts.
    hole_on_edge = shapely.from_wkt(
        "POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0), (0 2, 3 2, 3 5, 0 5, 0 2))"
    )
    fixed = shapely.make_valid(hole_on_edge, method="linework")
    assert fixed.geom_type == "GeometryCollection"
    prepared = layer([fixed])
    assert prepared.area_m2[0] == pytest.approx(100.0)


def test_collection_without_polygons_is_not_polygonal():
    collection = shapely.GeometryCollection(
        [shapely.Point(0, 0), shapely.LineString([(0, 0), (1, 1)])]
    )
    prepared = layer([collection])
    assert prepared.n == 0 and prepared.drop_reason[0] == "not_polygonal"


def test_z_values_are_dropped_and_the_area_is_planar():
    tilted = shapely.Polygon([(0, 0, 0), (2, 0, 100), (2, 3, 100), (0, 3, 0)])
    prepared = layer([tilted])
    assert prepared.area_m2[0] == 6.0  # the footprint, not the tilted surface
    assert not shapely.has_z(prepared.geometries[0])


def _wkb_polygon(type_code, ring):
    header = struct.pack("<bII", 1, type_code, 1)
    dims = len(ring[0])
    return header + struct.pack("<I", len(ring)) + b"".join(
        struct.pack("<" + "d" * dims, *c) for c in ring
    )


def test_m_and_zm_values_are_dropped():
    square = [(0, 0), (2, 0), (2, 2), (0, 2), (0, 0)]
    polygon_m = shapely.from_wkb(_wkb_polygon(2003, [(x, y, 7.0) for x, y in square]))
    polygon_zm = shapely.from_wkb(_wkb_polygon(3003, [(x, y, 1.0, 7.0) for x, y in square]))
    as_wkt = shapely.from_wkt("POLYGON M ((0 0 7, 2 0 7, 2 2 7, 0 2 7, 0 0 7))")
    prepared = layer([polygon_m, polygon_zm, as_wkt])
    assert list(prepared.area_m2) == [4.0, 4.0, 4.0]
    assert not shapely.has_z(prepared.geometries).any()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_coordinates_drop_the_row_not_the_run(bad):
    broken = shapely.Polygon([(0, 0), (1, 0), (1, bad), (0, 1)])
    prepared = layer([broken, box(0, 0, 1, 1)])
    assert list(prepared.keep) == [1]
    assert prepared.drop_reason[0] == "non_finite"
    m = evaluate([box(0, 0, 1, 1)], [broken, box(0, 0, 1, 1)]).metrics
    assert (m["count_tp"], m["count_reference_dropped"]) == (1, 1)


def test_non_finite_z_alone_does_not_drop_the_row():
    polygon = shapely.Polygon([(0, 0, np.nan), (1, 0, 0), (1, 1, 0), (0, 1, 0)])
    assert layer([polygon]).area_m2[0] == 1.0


def _circle(n, radius=1.0, centre=(0.0, 0.0)):
    t = np.arange(n) * 2 * np.pi / n
    return shapely.Polygon(np.column_stack([centre[0] + radius * np.cos(t),
                                            centre[1] + radius * np.sin(t)]))


def test_iou_of_a_100000_gon_circle_against_its_bounding_square_is_pi_over_4():
    n = 100_000
    circle, square = _circle(n), box(-1, -1, 1, 1)
    # the inscribed regular n-gon has area n/2 · sin(2π/n); the square, 4
    exact = n / 2 * math.sin(2 * math.pi / n) / 4
    iou = spatial_iou(circle, square)
    assert iou == pytest.approx(exact, abs=1e-12)
    assert iou == pytest.approx(math.pi / 4, abs=1e-9)
    result = evaluate([circle], [square], iou_threshold=0.5)
    assert result.per_reference["iou"][0] == pytest.approx(math.pi / 4, abs=1e-9)


def test_100000_gon_circle_in_utm_keeps_its_area():
    # a 1 km circle on UTM 32N's central meridian: its true area is its planar UTM area over
    # k², k the UTM scale factor, 0.9996 there (and within 1.3e-8 of it 1 km away)
    circle = _circle(100_000, 1000.0, (500000.0, 5300000.0))
    planar = 100_000 / 2 * 1000.0**2 * math.sin(2 * math.pi / 100_000)
    assert area_of(circle, "EPSG:32632") == pytest.approx(planar / 0.9996**2, rel=1e-6)


def test_multipart_features_are_scored_as_one_feature():
    two_squares = shapely.MultiPolygon([box(0, 0, 1, 1), box(2, 0, 3, 1)])
    assert pair_metrics(two_squares, box(0, 0, 1, 1)).iou[0] == 0.5  # 1 / 2
    result = evaluate([two_squares], [box(0, 0, 1, 1), box(2, 0, 3, 1)], iou_threshold=0.5)
    assert result.metrics["count_tp"] == 1 and result.metrics["count_fn"] == 1


# ---------------------------------------------------------------------------------------------
# Coordinate reference systems


def test_geographic_area_is_geodesic_not_square_degrees():
    square = box(10, 45, 11, 46)
    area = area_of(square, "EPSG:4326")
    assert area == pytest.approx(lonlat_box_area_m2(10, 45, 11, 46), rel=1e-9)
    assert area == pytest.approx(geod_area_m2(square), rel=1e-8)


def test_layers_in_different_crss_are_compared_in_one_equal_area_crs():
    # Web Mercator and longitude/latitude are both cylindrical: a box straight in one is
    # straight in the other, so the corner-transformed box is the same region.
    lonlat = box(5, 40, 6, 41)
    mercator = transform(lonlat, "EPSG:4326", "EPSG:3857")
    assert iou_of(mercator, lonlat, "EPSG:3857", "EPSG:4326") == pytest.approx(1.0, abs=1e-9)
    half = box(5, 40, 5.5, 41)  # half the longitude span of the same band: half the area
    assert iou_of(mercator, half, "EPSG:3857", "EPSG:4326") == pytest.approx(0.5, abs=1e-9)


def test_planar_layers_without_crs_use_their_own_units():
    assert area_of(box(0, 0, 640, 480)) == 640 * 480


def test_a_layer_with_a_crs_against_one_without_is_an_error_naming_both():
    with pytest.raises(ValueError, match="predicted layer has no CRS but the reference"):
        evaluate([box(0, 0, 1, 1)], [box(0, 0, 1, 1)], reference_crs="EPSG:32632")
    with pytest.raises(ValueError, match="b has no CRS but a has one"):
        spatial_pair_metrics(box(0, 0, 1, 1), box(0, 0, 1, 1), a_crs="EPSG:32632")


def test_a_crs_that_is_not_one_is_an_error_naming_the_parameter():
    with pytest.raises(ValueError, match="a_crs"):
        spatial_pair_metrics(box(0, 0, 1, 1), box(0, 0, 1, 1), a_crs="EPSG:0", b_crs="EPSG:0")
    with pytest.raises(ValueError, match="equal_area_crs"):
        spatial_iou(box(0, 0, 1, 1), box(0, 0, 1, 1), crs="EPSG:4326", equal_area_crs="EPSG:4326")


def test_a_crs_with_no_way_to_the_equal_area_crs_is_an_error_naming_the_layer():
    local = pyproj.CRS(
        'ENGCRS["site grid",EDATUM["site"],CS[Cartesian,2],'
        'AXIS["x",east,LENGTHUNIT["metre",1]],AXIS["y",north,LENGTHUNIT["metre",1]]]'
    )
    with pytest.raises(ValueError, match="predicted layer's CRS .* cannot be transformed"):
        prepare_layer([box(0, 0, 1, 1)], local, EQUAL_AREA, "predicted")


def test_geographic_layer_without_an_equal_area_crs_is_an_error_not_square_degrees():
    with pytest.raises(ValueError, match="square degrees"):
        prepare_layer([box(0, 0, 1, 1)], WGS84, None, "reference")


def test_very_large_polygon_spanning_several_utm_zones():
    # 30° x 20°: five UTM zones. Straight edges in longitude/latitude.
    lonlat = box(0, 40, 30, 60)
    assert area_of(lonlat, "EPSG:4326") == pytest.approx(
        lonlat_box_area_m2(0, 40, 30, 60), rel=1e-9
    )
    # the same box in Web Mercator (edges still meridians and parallels)
    mercator = transform(lonlat, "EPSG:4326", "EPSG:3857")
    assert area_of(mercator, "EPSG:3857") == pytest.approx(
        lonlat_box_area_m2(0, 40, 30, 60), rel=1e-9
    )
    # a 2000 km square in Lambert azimuthal equal-area Europe: edges straight in EPSG:3035
    laea = box(3.5e6, 2.5e6, 5.5e6, 4.5e6)
    assert area_of(laea, "EPSG:3035") == pytest.approx(
        geod_area_m2(laea, "EPSG:3035", step=500.0), rel=1e-8
    )
    assert area_of(laea, "EPSG:3035") == pytest.approx(2e6**2, rel=1e-8)  # it is equal-area


@pytest.mark.parametrize(
    "crs, square",
    [
        ("EPSG:3031", box(-500e3, -500e3, 500e3, 500e3)),  # contains the South Pole
        ("EPSG:3413", box(-500e3, -500e3, 500e3, 500e3)),  # contains the North Pole
        ("EPSG:3031", box(-500e3, 100e3, 500e3, 1100e3)),  # near the pole, crosses 180°
        ("EPSG:3413", box(200e3, 200e3, 400e3, 400e3)),  # polar, not containing the pole
    ],
)
def test_polar_stereographic_polygons_have_their_geodesic_area(crs, square):
    assert area_of(square, crs) == pytest.approx(geod_area_m2(square, crs, step=1000.0), rel=1e-8)


def test_polar_annulus_keeps_its_hole_round_the_pole():
    outer, inner = box(-800e3, -800e3, 800e3, 800e3), box(-300e3, -300e3, 300e3, 300e3)
    annulus = shapely.Polygon(outer.exterior.coords, [inner.exterior.coords])
    expected = geod_area_m2(outer, "EPSG:3413", 1000.0) - geod_area_m2(inner, "EPSG:3413", 1000.0)
    assert area_of(annulus, "EPSG:3413") == pytest.approx(expected, rel=1e-8)


def test_polar_cap_drawn_flat_in_lonlat_has_the_cap_area():
    cap = lonlat_box_area_m2(-180, 80, 180, 90)
    assert area_of(box(-180, 80, 180, 90), "EPSG:4326") == pytest.approx(cap, rel=1e-9)


def test_ring_round_the_pole_in_lonlat_encloses_the_cap():
    ring = shapely.Polygon([(lon, 80) for lon in range(-170, 180, 10)])
    cap = lonlat_box_area_m2(-180, 80, 180, 90)
    assert area_of(ring, "EPSG:4326") == pytest.approx(cap, rel=1e-9)
    south = shapely.Polygon([(lon, -75) for lon in range(180, -180, -15)])
    assert area_of(south, "EPSG:4326") == pytest.approx(
        lonlat_box_area_m2(-180, -90, 180, -75), rel=1e-9
    )


# Antimeridian: one field 2° wide from 179°E to 179°W, written three ways.
ACROSS_180 = {
    "beyond_180": box(179, -18, 181, -17),
    "jumping": shapely.Polygon([(179, -18), (-179, -18), (-179, -17), (179, -17)]),
    "split": shapely.MultiPolygon([box(179, -18, 180, -17), box(-180, -18, -179, -17)]),
}


@pytest.mark.parametrize("form", sorted(ACROSS_180))
def test_polygon_across_the_antimeridian_has_its_true_area(form):
    prepared = layer([ACROSS_180[form]], "EPSG:4326")
    assert prepared.area_m2[0] == pytest.approx(lonlat_box_area_m2(179, -18, 181, -17), rel=1e-9)
    assert prepared.n_repaired == 0  # normalising is not a repair
    ea_bounds = shapely.bounds(prepared.geometries[0])
    assert -17367531 < ea_bounds[0] and ea_bounds[2] < 17367531  # inside EPSG:6933's world


def test_forms_of_the_same_field_across_180_match_each_other():
    forms = [ACROSS_180[k] for k in sorted(ACROSS_180)]
    result = evaluate(forms, forms, predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
                      iou_threshold=0.99)
    assert result.metrics["count_tp"] == 3
    assert result.per_reference["iou"] == pytest.approx([1.0, 1.0, 1.0], abs=1e-9)


def test_iou_across_180_is_the_ratio_of_longitude_spans():
    # same latitude band: areas are proportional to longitude spans, 1° shared of 3°
    field = ACROSS_180["jumping"]
    shifted = box(-180, -18, -178, -17)  # 180° to 178°W
    assert iou_of(field, shifted, "EPSG:4326", "EPSG:4326") == pytest.approx(1 / 3, abs=1e-9)


def test_giou_and_diou_across_180_equal_those_of_the_same_pair_moved_to_10_degrees():
    # EPSG:6933 is cylindrical: moving a pair along the equator's direction is a translation,
    # which changes none of the metrics; the split at 180° must not change them either.
    across = spatial_pair_metrics(ACROSS_180["split"], box(180, -18, 182, -17),
                                  a_crs="EPSG:4326", b_crs="EPSG:4326")
    moved = spatial_pair_metrics(box(9, -18, 11, -17), box(10, -18, 12, -17),
                                 a_crs="EPSG:4326", b_crs="EPSG:4326")
    for key in ("iou", "dice", "giou", "diou"):
        assert across[key] == pytest.approx(moved[key], abs=1e-9)
    assert across["giou"] == pytest.approx(1 / 3, abs=1e-9)  # the hull is the union


def test_hole_across_180_is_kept_with_its_shell():
    field = shapely.Polygon(
        [(178, -18), (-178, -18), (-178, -17), (178, -17)],
        [[(179.5, -17.8), (-179.5, -17.8), (-179.5, -17.2), (179.5, -17.2)]],
    )
    expected = lonlat_box_area_m2(178, -18, 182, -17) - lonlat_box_area_m2(
        179.5, -17.8, 180.5, -17.2
    )
    assert area_of(field, "EPSG:4326") == pytest.approx(expected, rel=1e-9)


def test_utm_square_across_180_against_its_lonlat_twin():
    to_utm60 = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:32660", always_xy=True)
    x, y = to_utm60.transform(180.0, -17.0)  # Fiji
    square = box(x - 5000, y - 5000, x + 5000, y + 5000)
    assert area_of(square, "EPSG:32660") == pytest.approx(
        geod_area_m2(square, "EPSG:32660", step=10.0), rel=1e-9
    )
    twin = transform(square, "EPSG:32660", "EPSG:4326", densify=1.0)  # longitudes jump
    assert np.ptp(shapely.get_coordinates(twin)[:, 0]) > 359
    assert iou_of(twin, square, "EPSG:4326", "EPSG:32660") == pytest.approx(1.0, abs=1e-6)


def test_multipart_feature_with_one_part_across_180():
    parts = shapely.MultiPolygon([box(179, 10, 181, 11), box(10, 10, 12, 11)])
    assert area_of(parts, "EPSG:4326") == pytest.approx(
        2 * lonlat_box_area_m2(0, 10, 2, 11), rel=1e-9
    )


def test_source_geometry_across_180_stays_continuous_for_distances():
    prepared = layer([ACROSS_180["jumping"]], "EPSG:4326")
    west, _, east, _ = prepared.source[0].bounds
    assert (west, east) == (179, 181)


# ---------------------------------------------------------------------------------------------
# Run-level robustness


def test_inputs_are_never_modified():
    bow_tie = shapely.from_wkt(BOW_TIE)
    jumping = ACROSS_180["jumping"]
    rows = np.array([bow_tie, None, jumping, shapely.Point(0, 0)], dtype=object)
    before = [shapely.to_wkb(g) if g is not None else None for g in rows]
    prepare_layer(rows, WGS84, EQUAL_AREA, "predicted")
    pair_metrics(rows, rows[::-1])
    assert rows[0] is bow_tie and rows[2] is jumping and rows[1] is None
    assert [shapely.to_wkb(g) if g is not None else None for g in rows] == before


def test_a_thousand_messy_rows_are_all_accounted_for():
    rng = np.random.default_rng(7)
    kinds = [
        lambda k: box(k, 0, k + 1, 1),
        lambda k: None,
        lambda k: shapely.Polygon(),
        lambda k: shapely.Point(k, 0),
        lambda k: shapely.Polygon([(k, 0), (k + 1, 1), (k, 1), (k + 1, 0)]),  # bow-tie
        lambda k: shapely.Polygon([(k, 0), (k + 1, 0), (k + 1, np.nan)]),
        lambda k: box(k, 0, k, 1),  # zero width
        lambda k: "not a geometry",
    ]
    choice = rng.integers(0, len(kinds), 1000)
    rows = [kinds[c](k) for k, c in enumerate(choice)]
    prepared = prepare_layer(rows, None, None, "predicted")
    counts = prepared.n_dropped_by_reason
    assert prepared.n + sum(counts.values()) == 1000
    assert set(counts) == set(DROP_REASONS)
    assert counts["null"] == np.isin(choice, [1, 7]).sum()
    assert counts["empty"] == (choice == 2).sum()
    assert counts["not_polygonal"] == (choice == 3).sum()
    assert counts["non_finite"] == (choice == 5).sum()
    assert counts["zero_area"] == (choice == 6).sum()
    assert prepared.n_repaired == (choice == 4).sum()
    m = evaluate(rows, rows).metrics
    assert m["count_tp"] == prepared.n


def test_an_overlay_geos_cannot_do_is_retried_on_a_grid_then_scored_zero(monkeypatch, caplog):
    real = shapely.intersection
    retry_on_grid, never = box(10, 0, 11, 1), box(30, 0, 31, 1)

    def flaky(a, b, grid_size=None, **kwargs):
        operands = np.concatenate([np.atleast_1d(a), np.atleast_1d(b)])
        if np.any(shapely.equals_exact(operands, never, 0)) or (
            np.any(shapely.equals_exact(operands, retry_on_grid, 0)) and grid_size is None
        ):
            raise shapely.errors.GEOSException("TopologyException: side location conflict")
        return real(a, b, grid_size=grid_size, **kwargs)

    monkeypatch.setattr(overlap_module.shapely, "intersection", flaky)
    a = np.array([box(0, 0, 1, 1), retry_on_grid, never, box(20, 0, 21, 1)], dtype=object)
    b = np.array(
        [box(0, 0, 1, 0.5), box(10, 0, 11, 0.25), box(30, 0, 31, 0.5), box(20, 0, 20.5, 1)],
        dtype=object,
    )
    with caplog.at_level(logging.WARNING):
        assert list(intersection_area(a, b)) == pytest.approx([0.5, 0.25, 0.0, 0.5])
    assert "1 intersection was computed on a precision grid" in caplog.text
    assert "scored as no overlap" in caplog.text


def test_prepare_layer_rejects_a_single_geometry_as_programmer_error():
    with pytest.raises(TypeError, match="reference geometries must be a sequence"):
        prepare_layer(box(0, 0, 1, 1), None, None, "reference")
    with pytest.raises(TypeError, match="sequence"):
        prepare_layer(42, None, None, "reference")


# ---------------------------------------------------------------------------------------------
# Pair metrics


def test_giou_of_the_articles_disjoint_boxes():
    # The IoU article ("Intersection over Union"), part 5: gaps 2, 10, 40 print GIoU -0.048, -0.200, -0.500
    truth = box(10, 10, 30, 30)
    predictions = [box(30 + gap, 10, 50 + gap, 30) for gap in (2, 10, 40)]
    m = pair_metrics(predictions, truth)
    assert list(m.iou) == [0.0, 0.0, 0.0]
    assert m.giou == pytest.approx([-0.048, -0.200, -0.500], abs=5e-4)


def test_dice_of_overlapping_squares_by_hand():
    # 10 x 10 squares offset by 2: intersection 80, Dice 160/200, IoU 80/120
    m = pair_metrics(box(0, 0, 10, 10), box(2, 0, 12, 10))
    assert m.dice[0] == pytest.approx(0.8, rel=1e-12)
    assert m.iou[0] == pytest.approx(2 / 3, rel=1e-12)
    assert (m.intersection[0], m.union[0]) == (80.0, 120.0)


def test_giou_hull_and_box_differ_for_diagonal_offsets():
    # squares (0,0)-(1,1), (2,2)-(3,3): hull = 9 - two corner triangles of 2 = 5; box 9
    a, b = box(0, 0, 1, 1), box(2, 2, 3, 3)
    assert pair_metrics(a, b).giou[0] == pytest.approx(-(5 - 2) / 5, rel=1e-12)
    assert pair_metrics(a, b, enclosing="box").giou[0] == pytest.approx(-(9 - 2) / 9, rel=1e-12)


def test_diou_of_nested_squares_penalises_the_offset_centre():
    # 4 x 4 square containing a 2 x 2 at its corner: IoU 4/16, centres (2,2) and (1,1): ρ² = 2,
    # c² = 4² + 4² = 32; GIoU = IoU (C is the big square); DIoU = 1/4 - 2/32
    m = pair_metrics(box(0, 0, 4, 4), box(0, 0, 2, 2))
    assert m.giou[0] == pytest.approx(0.25, rel=1e-12)
    assert m.diou[0] == pytest.approx(0.25 - 2 / 32, rel=1e-12)


def test_pairs_without_area_have_the_documented_values():
    square = box(0, 0, 1, 1)
    a = [None, square, shapely.Point(0, 0), None, box(0, 0, 0, 1)]
    b = [square, None, shapely.LineString([(0, 0), (1, 1)]), None, box(0, 0, 0, 2)]
    m = pair_metrics(a, b)
    assert list(m.iou) == list(m.dice) == [0.0] * 5
    assert list(m.giou) == list(m.diou) == [-1.0, -1.0, 0.0, 0.0, 0.0]
    agree = pair_metrics(a, b, zero_division=1.0)
    assert list(agree.iou) == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert list(agree.giou) == [-1.0, -1.0, 1.0, 1.0, 1.0]


def test_pair_metrics_rejects_mismatched_arrays_and_bad_options():
    with pytest.raises(ValueError, match="same length"):
        pair_metrics([box(0, 0, 1, 1)] * 2, [box(0, 0, 1, 1)] * 3)
    with pytest.raises(ValueError, match="zero_division"):
        pair_metrics(box(0, 0, 1, 1), box(0, 0, 1, 1), zero_division=2)
    with pytest.raises(ValueError, match="enclosing"):
        pair_metrics(box(0, 0, 1, 1), box(0, 0, 1, 1), enclosing="circle")


def test_one_geometry_pairs_with_every_element_of_the_other():
    m = pair_metrics(box(0, 0, 2, 1), [box(0, 0, 1, 1), box(0, 0, 2, 1), None])
    assert list(m.iou) == [0.5, 1.0, 0.0]


def test_round_ratio_restores_decimal_values_and_keeps_the_rest():
    assert round_ratio([0.4999999999999997, 0.9999999999999998])[:2].tolist() == [0.5, 1.0]
    third = round_ratio([1 / 3])[0]
    assert abs(third - 1 / 3) < 1e-13 * (1 / 3)
    assert round_ratio([1e-300, 0.0, -0.4])[:].tolist() == [1e-300, 0.0, -0.4]


def test_overlap_pairs_report_the_rounded_iou():
    a = np.array([box(0, 0.6, 0.4, 0.8)], dtype=object)
    b = np.array([box(0, 0.6, 0.4, 0.7)], dtype=object)
    pairs = overlap_pairs(a, shapely.area(a), b, shapely.area(b))
    assert pairs.iou.tolist() == [0.5]


# ---------------------------------------------------------------------------------------------
# spatial_iou: the seed guide's tests, and beyond


def test_guide_identical_footprints_score_one():
    a = box(0, 0, 10, 10)
    assert spatial_iou(a, a, crs="EPSG:6933") == pytest.approx(1.0, abs=1e-9)


def test_guide_disjoint_footprints_score_zero():
    assert spatial_iou(box(0, 0, 1, 1), box(50, 50, 51, 51), crs="EPSG:6933") == 0.0


def test_guide_self_intersecting_prediction_is_repaired_not_crashed():
    bow_tie = shapely.Polygon([(0, 0), (2, 2), (2, 0), (0, 2), (0, 0)])
    assert spatial_iou(bow_tie, box(0, 0, 2, 2), crs="EPSG:6933") == pytest.approx(0.5)


def test_guide_over_claim_is_penalised_more_than_partial_cover():
    truth = box(0, 0, 10, 10)
    spilled = spatial_iou(box(0, 0, 20, 20), truth, crs="EPSG:6933")
    clipped = spatial_iou(box(0, 0, 10, 5), truth, crs="EPSG:6933")
    assert (spilled, clipped) == (0.25, 0.5)


@pytest.mark.parametrize("junk", [None, "POLYGON ((0 0", shapely.Point(0, 0), shapely.Polygon(), 7])
def test_spatial_iou_scores_data_errors_zero(junk):
    assert spatial_iou(junk, box(0, 0, 1, 1), crs="EPSG:32632") == 0.0
    assert spatial_iou(junk, junk) == 0.0


def test_spatial_pair_metrics_dissolves_layers_into_footprints():
    # two halves of a square against the square: one footprint each, IoU 1, GIoU 1
    halves = [box(0, 0, 1, 2), box(1, 0, 2, 2), None]
    metrics = spatial_pair_metrics(halves, [box(0, 0, 2, 2)])
    assert (metrics["iou"], metrics["giou"], metrics["dice"]) == (1.0, 1.0, 1.0)
    assert (metrics["area_a_m2"], metrics["a_dropped"]) == (4.0, 1)


class _CancelInside(Progress):
    """Records every report; asks to cancel once a report falls strictly inside (lo, hi)."""

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi
        self.reports = []

    def report(self, percent, message=""):
        self.reports.append(percent)

    def is_canceled(self):
        return self.lo < self.reports[-1] < self.hi


@pytest.mark.parametrize(
    "lo, hi, tolerance",
    [(0, 9, None), (9, 19, None), (20, 39, None), (45, 75, None), (45, 75, 1.0)],
    ids=["prepare reference", "prepare predicted", "overlaps", "distances",
         "distances beside the tolerance"],
)
def test_a_cancel_request_is_seen_inside_each_long_stage(monkeypatch, lo, hi, tolerance):
    # Tiny chunks so that each stage has many: the run must stop at the first check inside
    # the stage (its chunks report progress and cancellation between them), not at its end.
    from iou_evaluation.core.boundary import distances as boundary, tolerance as tolerance_module
    from iou_evaluation.core.geometry import prepare

    monkeypatch.setattr(prepare, "_CHUNK_ROWS", 5)
    monkeypatch.setattr(overlap_module, "_CHUNK_PAIRS", 5)
    monkeypatch.setattr(boundary, "_CHUNK_VERTICES", 50)
    monkeypatch.setattr(tolerance_module, "_TILE_VERTICES", 50)
    reference = [shapely.box(20 * i, 0, 20 * i + 10, 10) for i in range(60)]
    predicted = [shapely.box(20 * i + 1, 1, 20 * i + 11, 11) for i in range(60)]
    progress = _CancelInside(lo, hi)
    with pytest.raises(EvaluationCanceled):
        evaluate(predicted, reference, boundary_tolerance_m=tolerance, progress=progress)
    inside = [p for p in progress.reports if lo < p < hi]
    assert len(inside) == 1 and progress.reports[-1] == inside[0]
