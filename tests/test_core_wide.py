"""Boundary distances of pairs wider than a UTM zone or beyond ±80°: metres on the WGS 84
ellipsoid to 0.1 %, checked against geodesic values from pyproj.Geod (independent of the
projection and of the code under test)."""

import numpy as np
import pyproj
import pytest
import shapely
from iou_evaluation.core.boundary.distances import matched_distances_in_utm, zoned_layer
from iou_evaluation.core.boundary.wide import lonlat_extent, wide_pairs

WGS84 = pyproj.CRS("EPSG:4326")
GEOD = pyproj.Geod(ellps="WGS84")


def band(lon0, lon1, lat0, lat1, step=0.5):
    """Polygon between two parallels and two meridians, vertices every ``step`` degrees."""
    lons = np.arange(lon0, lon1 + 1e-9, step)
    lats = np.arange(lat0, lat1 + 1e-9, step)
    ring = (
        [(x, lat0) for x in lons] + [(lon1, y) for y in lats[1:]]
        + [(x, lat1) for x in lons[::-1][1:]] + [(lon0, y) for y in lats[::-1][1:]]
    )
    return shapely.Polygon(ring)


def parallel_length(lon0, lon1, lat):
    lons = np.linspace(lon0, lon1, 20_001)
    return GEOD.line_length(lons, np.full(len(lons), lat))


def meridian_arc(lat0, lat1):
    return GEOD.inv(0.0, lat0, 0.0, lat1)[2]


def expected_band_distances(lon0, lon1, lat0, lat1, shift):
    """Hausdorff and mean boundary distance between a band and the same band moved north by
    ``shift`` degrees, on the ellipsoid.

    A point of a parallel edge is nearest to the other band's parallel edge straight north or
    south (meridians cross parallels at right angles), at the meridian arc between the two
    latitudes; the meridian sides overlap except for a ``shift`` long bit at one end of each,
    where the distance grows from 0 to that arc (integral arc² / 2). Near the corners of the
    edges inside the other band the other band's side is nearer than its edge, which takes off
    the same arc² / 2 each (exactly in the plane; here to a part in 10⁸): the two cancel. The
    largest distance is the arc at the higher (longer) latitude.
    """
    top, bottom = meridian_arc(lat1, lat1 + shift), meridian_arc(lat0, lat0 + shift)
    edges = {lat: parallel_length(lon0, lon1, lat)
             for lat in (lat0, lat0 + shift, lat1, lat1 + shift)}
    integral = (top * (edges[lat1] + edges[lat1 + shift])
                + bottom * (edges[lat0] + edges[lat0 + shift]))
    sides = 2 * meridian_arc(lat0, lat1) + 2 * meridian_arc(lat0 + shift, lat1 + shift)
    return max(top, bottom), integral / (sum(edges.values()) + sides)


def distances(reference, predicted, crs=WGS84):
    ref = zoned_layer(np.array([reference], dtype=object), crs)
    pred = zoned_layer(np.array([predicted], dtype=object), crs)
    return matched_distances_in_utm(ref, pred, [0], [0], 1.0)


@pytest.mark.parametrize("shift", [0.01, 0.1])
@pytest.mark.parametrize("lon0, lon1, lat0, lat1, method", [
    (-60.0, 60.0, 10.0, 20.0, "Mercator lon_0=0, scale-corrected"),
    (100.0, 250.0, -30.0, 20.0, "Mercator lon_0=175, scale-corrected"),
    (-60.0, 60.0, 40.0, 50.0, "north polar stereographic, scale-corrected"),
    (-170.0, 10.0, 60.0, 75.0, "north polar stereographic, scale-corrected"),
    (0.0, 30.0, 81.0, 82.0, "north polar stereographic, scale-corrected"),
    (-20.0, -10.0, -84.0, -82.0, "south polar stereographic, scale-corrected"),
    (-80.0, -30.0, -55.0, -35.0, "south polar stereographic, scale-corrected"),
])
def test_wide_pairs_are_measured_in_metres_on_the_ellipsoid(lon0, lon1, lat0, lat1, method,
                                                             shift):
    """Bands 10° to 180° wide moved north by 1.1 km or 11 km: within 0.1 %."""
    result = distances(band(lon0, lon1, lat0, lat1), band(lon0, lon1, lat0 + shift,
                                                          lat1 + shift))
    hausdorff, mean = expected_band_distances(lon0, lon1, lat0, lat1, shift)
    assert result.distance_crs[0] == method
    assert result.hausdorff_m[0] == pytest.approx(hausdorff, rel=1e-3)
    assert result.mean_distance_m[0] == pytest.approx(mean, rel=1e-3)


def test_fields_keep_the_utm_zone_of_the_reference():
    field = shapely.box(15.0, 50.0, 15.01, 50.01)
    result = distances(field, shapely.affinity.translate(field, 0.0001, 0.0))
    assert result.distance_crs[0] == "EPSG:32633"
    assert result.epsg[0] == 32633


def test_a_pair_across_the_antimeridian_is_narrow_when_it_is():
    """Longitudes 178..182 (the prepared source keeps them continuous) span 4°; 170..190
    span 20°: the span is measured on the circle, not from -180 to 180."""
    narrow = band(178.0, 182.0, 10.0, 11.0)
    broad = band(170.0, 190.0, 10.0, 11.0)
    extent = lonlat_extent(np.array([narrow, broad]), WGS84)
    assert extent[:, 0] == pytest.approx([4.0, 20.0])
    wide, proj4, _ = wide_pairs(np.array([narrow, broad]), WGS84, np.array([narrow, broad]),
                             WGS84)
    assert wide.tolist() == [False, True]
    assert "+lon_0=180" in proj4[1] or "+lon_0=-180" in proj4[1]


def test_wide_pairs_detected_from_a_projected_crs():
    mercator = pyproj.CRS("EPSG:3857")
    to = pyproj.Transformer.from_crs(WGS84, mercator, always_xy=True)
    poly = shapely.transform(band(-10.0, 10.0, 0.0, 5.0), lambda xy: np.column_stack(
        to.transform(xy[:, 0], xy[:, 1])))
    wide, proj4, _ = wide_pairs(np.array([poly]), mercator, np.array([poly]), mercator)
    assert wide.tolist() == [True]
    assert proj4[0].startswith("+proj=merc +lon_0=0 ")


@pytest.mark.parametrize(
    "proj4, lat_range",
    [
        ("+proj=merc +lon_0=20 +datum=WGS84 +units=m +no_defs", (-89.5, 89.5)),
        ("+proj=stere +lat_0=90 +lat_ts=90 +lon_0=0 +datum=WGS84 +units=m +no_defs", (-60, 90)),
        ("+proj=stere +lat_0=-90 +lat_ts=-90 +lon_0=0 +datum=WGS84 +units=m +no_defs",
         (-90, 60)),
    ],
)
def test_closed_form_scale_factor_agrees_with_proj_and_with_the_latitude_formula(
    proj4, lat_range
):
    """The scale factor from projected coordinates (no PROJ call) against PROJ's
    get_factors (numerical derivatives: 4e-10) and against the closed forms in the latitude
    (Snyder 1987: Mercator sqrt(1 - e² sin² φ) / cos φ; polar stereographic ρ / (a m))."""
    from iou_evaluation.core.boundary.wide import scale_factor

    rng = np.random.default_rng(1)
    lon = rng.uniform(-180, 180, 20_000)
    lat = rng.uniform(*lat_range, 20_000)
    proj = pyproj.Proj(proj4)
    x, y = proj(lon, lat)
    k = scale_factor(proj4)(x, y)
    np.testing.assert_allclose(k, proj.get_factors(lon, lat).parallel_scale, rtol=1e-9)
    a, f = 6378137.0, 1 / 298.257223563
    e2 = f * (2 - f)
    e = np.sqrt(e2)
    phi = np.radians(lat)
    if "merc" in proj4:
        expected = np.sqrt(1 - e2 * np.sin(phi) ** 2) / np.cos(phi)
    else:
        if "lat_0=-90" in proj4:
            phi = -phi  # the south pole's projection mirrors the north pole's
        t = np.tan(np.pi / 4 - phi / 2) / ((1 - e * np.sin(phi)) / (1 + e * np.sin(phi))) ** (
            e / 2)
        rho = 2 * a * t / np.sqrt((1 + e) ** (1 + e) * (1 - e) ** (1 - e))
        expected = np.where(phi >= np.radians(89.999999), 1.0,
                            rho * np.sqrt(1 - e2 * np.sin(phi) ** 2) / (a * np.cos(phi)))
        far = phi < np.radians(89.99)
        k, expected = k[far], expected[far]
    np.testing.assert_allclose(k, expected, rtol=1e-12)
    assert scale_factor(proj4)(np.zeros(1), np.zeros(1))[0] == pytest.approx(1.0, abs=1e-15)


def test_wide_pairs_of_several_crss_measured_together_equal_each_pair_alone():
    """Pairs in Mercator CRSs of different central meridians (and both polar stereographic
    CRSs) share a scale factor and are measured in one call; the predictions here are in
    another CRS than the references (each side transformed on its own). Each pair's values
    and CRS label are those of the pair measured alone."""
    mercator = pyproj.CRS("EPSG:3857")
    to = pyproj.Transformer.from_crs(WGS84, mercator, always_xy=True)

    def in_mercator(poly):
        return shapely.transform(poly, lambda xy: np.column_stack(to.transform(xy[:, 0],
                                                                                xy[:, 1])))

    bands = [(-60.0, 60.0, 10.0, 20.0), (100.0, 170.0, -30.0, 20.0), (-60.0, 60.0, 40.0, 50.0),
             (-80.0, -30.0, -55.0, -35.0), (15.0, 15.01, 50.0, 50.01)]
    ref = np.array([band(*b, step=0.25 if b[1] - b[0] > 1 else 0.005) for b in bands],
                   dtype=object)
    pred = np.array([in_mercator(shapely.affinity.translate(r, 0.0, 0.02)) for r in ref],
                    dtype=object)
    together = matched_distances_in_utm(zoned_layer(ref, WGS84), zoned_layer(pred, mercator),
                                        np.arange(5), np.arange(5), 1.0)
    assert len(set(together.distance_crs[:4])) == 4  # two Mercator, both polar
    assert together.distance_crs[4].startswith("EPSG:")
    for k in range(5):
        alone = matched_distances_in_utm(zoned_layer(ref[k:k + 1], WGS84),
                                         zoned_layer(pred[k:k + 1], mercator), [0], [0], 1.0)
        assert alone.distance_crs[0] == together.distance_crs[k]
        assert alone.hausdorff_m[0] == pytest.approx(together.hausdorff_m[k], rel=1e-12)
        assert alone.mean_distance_m[0] == pytest.approx(together.mean_distance_m[k], rel=1e-12)
        assert together.mean_distance_m[k] > 1000


@pytest.mark.parametrize("gradient, piece", [
    (3.0, 500.0), (0.5, 3_000.0), (0.1, 15_000.0), (0.01, 20_000.0), (6.0, 500.0),
    (np.nan, 500.0),
])
def test_scaled_pieces_follow_the_gradient_of_the_scale_factor(gradient, piece):
    """A piece may be as long as ln k changes by 3 × 500 m / R along it (what 500 m pieces
    allowed at g = 3): 1,500 m / g, from 500 m (also for an unknown gradient) to 20 km."""
    from iou_evaluation.core.boundary.distances import _scaled_piece

    assert _scaled_piece(np.array([gradient]), 1)[0] == pytest.approx(piece)
    assert _scaled_piece(None, 2).tolist() == [500.0, 500.0]


def test_a_wide_pair_of_few_vertices_costs_its_vertices_not_its_metres(monkeypatch):
    """A band 60° wide at the equator (Mercator, g = tan 5° = 0.087: pieces of 17 km), of 26
    vertices, moved north by 0.1°: about 2 × 2 × 14,460 km of boundary is cut into pieces
    twice (lengths, distances). At 500 m that was ~116,000 pieces; now fewer than 10,000,
    and the distances stay within 0.1 % of the geodesic ones."""
    from iou_evaluation.core.boundary import _exact, distances as boundary

    pieces = [0]
    split = boundary.split_segments

    def counting(*args):
        out = split(*args)
        pieces[0] += len(out[0])
        return out

    monkeypatch.setattr(boundary, "split_segments", counting)
    monkeypatch.setattr(_exact, "split_segments", counting)
    reference, predicted = band(0.0, 60.0, 0.0, 5.0, step=5.0), band(0.0, 60.0, 0.1, 5.1,
                                                                   step=5.0)
    result = distances(reference, predicted)
    hausdorff, mean = expected_band_distances(0.0, 60.0, 0.0, 5.0, 0.1)
    assert result.distance_crs[0] == "Mercator lon_0=30, scale-corrected"
    assert result.hausdorff_m[0] == pytest.approx(hausdorff, rel=1e-3)
    assert result.mean_distance_m[0] == pytest.approx(mean, rel=1e-3)
    assert pieces[0] < 10_000


def band_perimeter(lon0, lon1, lat0, lat1):
    return (parallel_length(lon0, lon1, lat0) + parallel_length(lon0, lon1, lat1)
            + 2 * meridian_arc(lat0, lat1))


@pytest.mark.parametrize("lon0, lon1, lat0, lat1, crs", [
    (-60.0, 60.0, 10.0, 20.0, WGS84),
    (170.0, 250.0, -30.0, -20.0, WGS84),  # across the antimeridian
    (-170.0, 10.0, 60.0, 75.0, WGS84),
    (-60.0, 60.0, 10.0, 20.0, pyproj.CRS("EPSG:3857")),
    (170.0, 250.0, -30.0, -20.0, pyproj.CRS("EPSG:3832")),  # Mercator centred on 150° E
])
def test_lengths_within_the_tolerance_of_wide_polygons_are_metres_on_the_ellipsoid(
        lon0, lon1, lat0, lat1, crs):
    """A band moved north by 0.01° (1.1 km), tolerance 2 km: every point of its boundary is
    within 1.1 km of the moved band's (``expected_band_distances``), so the length within is
    the geodesic perimeter. At 500 m, only the sides are: where they run on the other band's
    sides, the 500 m of their 1.1 km bit nearest the other band's edge, and 500 m of the edge
    at each corner the other band's sides cross: 2 arc(lat0 + 0.01°, lat1) + 2 km. Both
    within 0.1 % (UTM's own scale error at a zone's edge). Measured in the zone of the
    band's centroid, its perimeter came out 28 % long (the first band)."""
    from iou_evaluation.core.boundary.tolerance import tolerance_lengths_in_utm_at

    reference, predicted = band(lon0, lon1, lat0, lat1), band(lon0, lon1, lat0 + 0.01,
                                                              lat1 + 0.01)
    if crs != WGS84:
        reference, predicted = shapely.transform(
            np.array([reference, predicted]),
            lambda xy: np.column_stack(pyproj.Transformer.from_crs(
                WGS84, crs, always_xy=True).transform(xy[:, 0], xy[:, 1])))
    within_r, perimeter_r, within_p, perimeter_p = tolerance_lengths_in_utm_at(
        zoned_layer(np.array([reference]), crs), zoned_layer(np.array([predicted]), crs),
        (2000.0, 500.0))
    assert perimeter_r[0] == pytest.approx(band_perimeter(lon0, lon1, lat0, lat1), rel=1e-3)
    assert perimeter_p[0] == pytest.approx(
        band_perimeter(lon0, lon1, lat0 + 0.01, lat1 + 0.01), rel=1e-3)
    assert within_r[0, 0] == pytest.approx(perimeter_r[0], rel=1e-12)
    assert within_p[0, 0] == pytest.approx(perimeter_p[0], rel=1e-12)
    expected = 2 * meridian_arc(lat0 + 0.01, lat1) + 2000.0
    assert within_r[1, 0] == pytest.approx(expected, rel=1e-3)
    assert within_p[1, 0] == pytest.approx(expected, rel=1e-3)


def test_narrow_polygons_keep_their_zone_beside_a_wide_one():
    """A layer with a wide band and a field: the field's lengths are those it has alone (its
    boundary is not cut), the band's perimeter its parts' sum."""
    from iou_evaluation.core.boundary.tolerance import tolerance_lengths_in_utm

    field = shapely.box(15.0, 50.0, 15.01, 50.01)
    moved = shapely.affinity.translate(field, 0.0001, 0.0)
    wide_r, wide_p = band(-60.0, 60.0, 10.0, 20.0), band(-60.0, 60.0, 10.01, 20.01)
    alone = tolerance_lengths_in_utm(zoned_layer(np.array([field]), WGS84),
                                     zoned_layer(np.array([moved]), WGS84), 5.0)
    both = tolerance_lengths_in_utm(zoned_layer(np.array([wide_r, field]), WGS84),
                                    zoned_layer(np.array([moved, wide_p]), WGS84), 5.0)
    for side, row in ((0, 1), (1, 1), (2, 0), (3, 0)):  # the field's (sums: to rounding)
        assert both[side][row] == pytest.approx(alone[side][0], rel=1e-12)
    assert both[1][0] == pytest.approx(band_perimeter(-60.0, 60.0, 10.0, 20.0), rel=1e-3)


def test_only_geometries_within_reach_of_a_zone_are_transformed_into_it():
    """A zone's geometries lie within 6° of its central meridian; another geometry can come
    within the tolerance of them only if it reaches within 6° too. Transformed into a zone on
    the other side of the world, a coastline lands anywhere: on the world layer, Indonesia's
    image in zone 19 N (central meridian 69° W) crossed Puerto Rico and added 41 m to its
    length within 10 m (4,031 m against 3,990 m measured in its zone alone)."""
    from iou_evaluation.core.boundary.tolerance import _lon_reach, _near_zone

    geoms = np.array([
        shapely.box(110.0, -5.0, 120.0, 5.0),  # Indonesia-like: 10° wide, far from 69° W
        shapely.box(-63.5, 10.0, -62.5, 11.0),  # zone 20's middle: 6.0° from 69° W
        shapely.box(-55.0, 10.0, -54.0, 11.0),  # 14.5° from it, 0.5° wide
        band(-180.0, 180.0, 89.5, 89.9),  # round the pole: near every zone
        None,
    ], dtype=object)
    reach = _lon_reach(zoned_layer(geoms, WGS84), 10.0)
    assert _near_zone(reach, 32619).tolist() == [False, True, False, True, True]
    assert _near_zone(reach, 32750).tolist() == [True, False, False, True, True]
