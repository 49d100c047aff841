"""Bad and unusual data through the longitude/latitude way (``prepare_layer(...,
lonlat_area=...)``, core/geometry/exact_area.py): faults found by trying to break it, pinned.

Expected values come from PROJ (the corners of a meridian/parallel box are a rectangle in a
cylindrical equal-area CRS, and moving a box along the parallels moves its rectangle along x)
or from hand formulas, never from our own output.
"""

import numpy as np
import pyproj
import pytest
import shapely
from iou_evaluation.core import evaluate
from iou_evaluation.core.geometry.exact_area import LonLatArea, lonlat_area_for
from iou_evaluation.core.geometry.prepare import prepare_layer

WGS84 = pyproj.CRS("EPSG:4326")


def rectangle_area(box, crs):
    """Area of the rectangle PROJ gives a longitude/latitude box's corners in ``crs``."""
    to_map = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)
    x0, y0 = to_map.transform(box[0], box[1])
    x1, y1 = to_map.transform(box[2], box[3])
    return abs((x1 - x0) * (y1 - y0))


def half_world_m(crs, central_meridian):
    """Half the width of a cylindrical CRS's world: twice PROJ's quarter turn on the equator."""
    to_map = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)
    xc, _ = to_map.transform(central_meridian, 0.0)
    xq, _ = to_map.transform(central_meridian + 90.0, 0.0)
    return 2.0 * (xq - xc), xc


def prepared(geoms, crs):
    return prepare_layer(geoms, WGS84, crs, "reference", lonlat_area=lonlat_area_for([WGS84], crs))


@pytest.mark.parametrize("proj, central, field, same_shape", [
    # A field across 80° W, where "+proj=cea +lon_0=100" wraps x (its own antimeridian).
    ("+proj=cea +lon_0=100 +lat_ts=45 +datum=WGS84", 100.0, (-82, 0, -78, 1), (98, 0, 102, 1)),
    # A Pacific-centred CRS: a field across Greenwich sits at both ends of its world.
    ("+proj=cea +lon_0=180 +lat_ts=30 +datum=WGS84", 180.0, (-2, 40, 2, 41), (178, 40, 182, 41)),
])
def test_a_field_across_the_equal_area_crs_own_antimeridian_is_cut_there(
        proj, central, field, same_shape):
    """Before: the projected vertices ran from one edge of the world to the other (a band 180
    times the field's area), and evaluate warned that the CRS "does not preserve area"."""
    crs = pyproj.CRS(proj)
    expected = rectangle_area(same_shape, crs)  # the projection is a translation along x
    layer = prepared([shapely.box(*field)], crs)
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-10)
    assert shapely.area(layer.geometries[0]) == pytest.approx(expected, rel=1e-9)
    half, xc = half_world_m(crs, central)
    bounds = shapely.bounds(layer.geometries[0])
    assert xc - half * (1 + 1e-12) <= bounds[0] and bounds[2] <= xc + half * (1 + 1e-12)
    assert shapely.get_num_geometries(layer.geometries[0]) == 2  # one part at each edge
    result = evaluate([shapely.box(*field)], [shapely.box(*field)], predicted_crs=WGS84,
                      reference_crs=WGS84, equal_area_crs=crs)
    assert result.metrics["count_tp"] == 1 and result.metrics["iou_mean"] == 1.0
    assert not any("does not preserve area" in w for w in result.warnings)


@pytest.mark.parametrize("central", [-180.0, -150.0, -91.0])
def test_a_cylindrical_equal_area_crs_centred_west_of_90w_is_recognised(central):
    """Before: a·k0 was read from x(90°) - x(0°), and PROJ wraps x(90°) for λ0 < -90°: the
    CRS was not recognised and its layers took the densified way."""
    crs = pyproj.CRS(f"+proj=cea +lon_0={central} +datum=WGS84")
    area = LonLatArea.for_crs(crs)
    assert area is not None
    box = (central + 1, 10, central + 3, 12)
    got = area(np.array([shapely.box(*box)], dtype=object))[0]
    assert got == pytest.approx(rectangle_area(box, crs), rel=1e-10)


def test_a_collection_holding_a_field_across_the_antimeridian_is_not_a_band_round_the_world():
    """Before: collections skipped the unwrapping, so the polygon jumping from 179° to -179°
    was read as a band from -179° to 179° (IoU 0.006 with the field it is)."""
    jump = shapely.Polygon([(179, 0), (-179, 0), (-179, 1), (179, 1)])
    collection = shapely.GeometryCollection([jump, shapely.Point(0, 0)])
    ea = pyproj.CRS("EPSG:6933")
    expected = rectangle_area((179, 0, 180, 1), ea) + rectangle_area((-180, 0, -179, 1), ea)
    layer = prepared([collection], ea)
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-10)
    assert layer.n_repaired == 1  # a collection reduced to its polygons is counted
    result = evaluate([collection], [shapely.box(179, 0, 181, 1)], predicted_crs=WGS84,
                      reference_crs=WGS84)
    assert result.metrics["count_tp"] == 1 and result.metrics["iou_mean"] == 1.0


def test_polygons_of_a_nested_collection_are_kept():
    """Before: a collection inside a collection was dropped with its polygons."""
    nested = shapely.GeometryCollection([
        shapely.GeometryCollection([shapely.box(0, 0, 1, 1)]),
        shapely.MultiPolygon([shapely.box(2, 0, 3, 1)]),
        shapely.LineString([(0, 0), (3, 3)]),
    ])
    ea = pyproj.CRS("EPSG:6933")
    expected = rectangle_area((0, 0, 1, 1), ea) + rectangle_area((2, 0, 3, 1), ea)
    assert prepared([nested], ea).area_m2[0] == pytest.approx(expected, rel=1e-10)
    only_lines = shapely.GeometryCollection([shapely.LineString([(0, 0), (1, 1)])])
    assert list(prepared([only_lines], ea).drop_reason) == ["not_polygonal"]


@pytest.mark.parametrize("proj", ["EPSG:6933", "+proj=cea +lon_0=100 +datum=WGS84"])
def test_latitudes_beyond_the_poles_are_dropped_and_counted(proj):
    """Before: the eastings PROJ cannot give (inf) became NaN, a ring's last point no longer
    equalled its first, and GEOS raised (qgis_process failed on such a row)."""
    crs = pyproj.CRS(proj)
    rows = [shapely.Polygon([(5, 95), (6, 95), (6, 96)]), shapely.box(0, -91, 1, -80),
            shapely.box(178, 85, 182, 90.5), shapely.box(0, 0, 1, 1)]
    layer = prepared(rows, crs)
    assert list(layer.drop_reason) == ["not_projectable"] * 3 + [""]
    assert layer.area_m2[0] == pytest.approx(rectangle_area((0, 0, 1, 1), crs), rel=1e-10)


def test_a_pacific_centred_equal_area_crs_raises_no_false_area_warning():
    """Before: the check reprojected the projected vertices to EPSG:6933, where a field across
    180° (inside "+proj=cea +lon_0=180") or a cap round the pole became a band round the world:
    "does not preserve area ... by up to 99 %" (or 1e18 %). A sphere is still flagged: its
    zones differ from the WGS 84 ellipsoid's by up to 0.3 % (more than the 0.01 % allowed)."""
    fields = [shapely.box(178, -18, 182, -16), shapely.box(-180, 80, 180, 90)]
    kwargs = dict(predicted_crs=WGS84, reference_crs=WGS84)
    result = evaluate(fields, fields, equal_area_crs="+proj=cea +lon_0=180 +datum=WGS84", **kwargs)
    assert result.metrics["count_tp"] == 2
    assert not any("does not preserve area" in w for w in result.warnings)
    sphere = evaluate(fields, fields, equal_area_crs="+proj=cea +lon_0=180 +R=6371000", **kwargs)
    assert any("does not preserve area" in w for w in sphere.warnings)


@pytest.mark.parametrize("equal_area_crs", ["EPSG:6933", "EPSG:5070"])  # both ways
def test_coordinates_off_the_globe_are_dropped_and_counted(equal_area_crs):
    """Before: a latitude of 1e300 made the densification raise (GEOS "Tolerance is too small"),
    a longitude of 1e300 overflowed the antimeridian bands (numpy "negative dimensions"), and
    box(-700, 0, 700, 1), wound round the world four times, crashed the boundary distances."""
    bad = [shapely.box(0, 0, 1, 1e300), shapely.box(0, 0, 1e300, 1),
           shapely.box(-700, 0, 700, 1), shapely.box(-1e9, 0, 1e9, 1)]
    good = [shapely.box(539, 0, 541, 1), shapely.box(-100, 40, -99, 41)]  # 540° is 180°
    result = evaluate(bad + good, good, predicted_crs=WGS84, reference_crs=WGS84,
                      equal_area_crs=equal_area_crs)
    assert list(result.predicted.drop_reason) == ["not_projectable"] * 4 + ["", ""]
    assert result.metrics["count_tp"] == 2 and result.metrics["iou_mean"] == 1.0
    if equal_area_crs == "EPSG:6933":  # a cylinder: box(539, 0, 541, 1) is box(-1, 0, 1, 1)
        expected = rectangle_area((-1, 0, 1, 1), pyproj.CRS(equal_area_crs))
        assert result.predicted.area_m2[0] == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("equal_area_crs", ["EPSG:6933", "EPSG:3035"])
def test_edges_longer_than_the_earth_in_a_projected_crs_are_dropped_and_counted(equal_area_crs):
    """In UTM, a square of 10¹² m, a bow-tie across it (repaired first) and a field with one
    vertex 10¹² m away stopped the run with GEOS's "Tolerance is too small compared to geometry
    length" (their edges cut into 50 m pieces: 2·10¹⁰ of them); an edge of 10⁸ m (100,000 km)
    also counts as no map's. They are dropped as not projectable; the field is scored."""
    utm = pyproj.CRS("EPSG:32632")
    field = shapely.box(500_000, 5_000_000, 500_300, 5_000_300)
    bad = [shapely.box(0, 0, 1e12, 1e12),
           shapely.Polygon([(0, 0), (1e12, 1e12), (1e12, 0), (0, 1e12)]),
           shapely.Polygon([(500_000, 5_000_000), (1e12, 5_000_000), (500_300, 5_000_300),
                            (500_000, 5_000_300)]),
           shapely.box(500_000, 5_000_000, 500_000 + 1e8, 5_000_300)]
    result = evaluate(bad + [field], [field], predicted_crs=utm, reference_crs=utm,
                      equal_area_crs=equal_area_crs, boundary_tolerance_m=10.0)
    assert list(result.predicted.drop_reason) == ["not_projectable"] * 4 + [""]
    assert result.metrics["count_tp"] == 1 and result.metrics["iou_mean"] == 1.0


@pytest.mark.parametrize("proj, field", [
    ("EPSG:8859", (-31, 64, -29, 65)),  # Equal Earth Asia-Pacific (150° E): its world ends at 30° W
    ("EPSG:5070", (-180, 80, 180, 90)),  # Conus Albers (96° W): a cap round the pole
    ("+proj=cea +lon_0=100 +datum=WGS84", (-82, 0, -78, 1)),
])
def test_the_densified_way_cuts_where_the_equal_area_crs_world_ends(proj, field):
    """The densified way (``lonlat_area=None``: other equal-area CRSs, projected layers).
    Before: cut at ±180° whatever the CRS's central meridian, so a field across 30° W in
    EPSG:8859 measured 1.9e12 m² instead of 8.0e9 (a band round the world), and a polar cap
    in EPSG:5070 was 16 % too large (or dropped). Every CRS here is equal-area on the WGS 84
    (or GRS80) ellipsoid: the area is the EPSG:6933 rectangle of PROJ's corners."""
    ring = shapely.Polygon([(lon, field[1]) for lon in range(-180, 180, 10)]) \
        if field[2] - field[0] == 360 else shapely.box(*field)
    layer = prepare_layer([ring], WGS84, pyproj.CRS(proj), "reference")
    expected = rectangle_area(field, pyproj.CRS("EPSG:6933"))
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-7)


def test_no_false_area_warning_for_polygons_across_the_antimeridian_on_the_densified_way():
    """Before: EPSG:8859 (equal-area on WGS 84) "changed polygon areas by up to 2e18 %": the
    check reprojected a field across 180° and a polar cap to EPSG:6933 vertex by vertex."""
    fields = [shapely.box(178, -18, 182, -16), shapely.box(-180, 80, 180, 90),
              shapely.box(10, 40, 11, 41)]
    result = evaluate(fields, fields, predicted_crs=WGS84, reference_crs=WGS84,
                      equal_area_crs="EPSG:8859")
    assert result.metrics["count_tp"] == 3
    assert not any("does not preserve area" in w for w in result.warnings)
    mollweide = evaluate(fields, fields, predicted_crs=WGS84, reference_crs=WGS84,
                         equal_area_crs="ESRI:54009")  # on a sphere: 0.3 % off, still flagged
    assert any("does not preserve area" in w for w in mollweide.warnings)
