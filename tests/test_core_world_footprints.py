"""World layers read by one rule (core/geometry/prepare.py, "Reading longitude/latitude
polygons"): Natural Earth's Antarctica at two scales, polygons reaching a pole, running along
±180° or a hair beyond or short of it, through footprint IoU, overlap pairs and evaluate.

Expected values come from shapely and pyproj alone (make_valid, union_all, edges split every
0.01°, areas in EPSG:6933 or in a polar Lambert azimuthal equal-area CRS), never from our
output. Both ways of preparing are checked: the exact longitude/latitude way (EPSG:6933, the
default) and the densified way (an equal-area CRS that is not cylindrical).
"""

import json
import math
from pathlib import Path

import numpy as np
import pyproj
import pytest
import shapely
import shapely.affinity
from iou_evaluation.core import evaluate
from iou_evaluation.core.geometry.exact_area import lonlat_area_for
from iou_evaluation.core.geometry.prepare import (
    FULL_TURN_SNAP_DEG,
    prepare_layer,
    read_lonlat,
)
from iou_evaluation.core.pairs import footprint as footprint_module
from iou_evaluation.core.pairs.footprint import footprint_iou
from iou_evaluation.core.pairs.pair_table import overlap_pair_table

DATA = Path(__file__).resolve().parent / "data" / "natural_earth_antarctica" / "antarctica.geojson"
WGS84 = pyproj.CRS("EPSG:4326")
EASE = pyproj.CRS("EPSG:6933")
SOUTH_LAEA = "+proj=laea +lat_0=-90 +lon_0=0 +datum=WGS84"
LONLAT = dict(predicted_crs="EPSG:4326", reference_crs="EPSG:4326")


def antarctica():
    """{layer name: the Natural Earth feature} (README.md beside the file)."""
    features = json.loads(DATA.read_text())["features"]
    return {f["properties"]["layer"]: shapely.geometry.shape(f["geometry"]) for f in features}


def straightforward_area(geom, crs=EASE, step=0.01):
    """Area in m² of a longitude/latitude polygon drawn on the map [-180, 180] × [-90, 90]: cut
    to it (a longitude beyond ±180° wraps in PROJ), edges split every ``step`` degrees,
    projected by PROJ, shoelace."""
    geom = shapely.intersection(shapely.make_valid(geom), shapely.box(-180, -90, 180, 90))
    to_map = pyproj.Transformer.from_crs(WGS84, crs, always_xy=True)
    projected = shapely.transform(shapely.segmentize(geom, step),
                                  lambda x, y: to_map.transform(x, y), interleaved=False)
    return float(shapely.area(projected))


def straightforward_iou(a, b):
    """(IoU, |a|, |b|, |a ∩ b|) of two lists of longitude/latitude polygons, each dissolved."""
    ua, ub = (shapely.union_all(shapely.make_valid(np.array(g, dtype=object))) for g in (a, b))
    area_a, area_b = straightforward_area(ua), straightforward_area(ub)
    inter = straightforward_area(shapely.intersection(ua, ub))
    return inter / (area_a + area_b - inter), area_a, area_b, inter


def prepared(geoms, way):
    """One layer prepared the exact longitude/latitude way or the densified way (EPSG:6933
    either way: the densified way is forced by passing no area function)."""
    lonlat = lonlat_area_for([WGS84], EASE) if way == "lonlat" else None
    return prepare_layer(geoms, WGS84, EASE, "reference", lonlat_area=lonlat)


@pytest.mark.parametrize("way", ["lonlat", "densified"])
@pytest.mark.parametrize("layer", ["ne_110m_land", "ne_110m_glaciated_areas",
                                   "ne_50m_glaciated_areas"])
def test_natural_earth_antarctica_has_its_area(layer, way):
    """Before: ne_110m_land (180.00000000000014°) and ne_50m_glaciated_areas (-180.0000152° to
    180.0000004°) were dropped as not projectable, and ne_110m_glaciated_areas (one edge from
    179.99995° to -180°) was closed through the pole from its first vertex, on the Antarctic
    Peninsula, whose meridian crossed the continent: 3.5 % too large."""
    geom = antarctica()[layer]
    layer_ = prepared([geom], way)
    assert list(layer_.drop_reason) == [""]
    expected = straightforward_area(geom)
    # The same polygon in a polar equal-area CRS, where it is a plain polygon round the pole.
    assert straightforward_area(geom, SOUTH_LAEA) == pytest.approx(expected, rel=1e-7)
    # Within the snapping bound (two strips 1e-4° wide from 84° S down: < 1e8 m²) and the
    # 0.01° pieces' sagitta.
    assert layer_.area_m2[0] == pytest.approx(expected, rel=1e-7)


def test_antarctica_at_two_scales_scores_the_straightforward_iou():
    """Footprint IoU and the overlap pair of Natural Earth's glaciated Antarctica at 1:110m and
    1:50m: the issue's pair (intersection 1.19e13 m², IoU 0.955), which overlappairs missed."""
    ne = antarctica()
    small, large = ne["ne_110m_glaciated_areas"], ne["ne_50m_glaciated_areas"]
    iou, area_a, area_b, inter = straightforward_iou([small], [large])
    assert inter == pytest.approx(1.19e13, rel=1e-3) and iou == pytest.approx(0.955, abs=1e-3)
    overall = footprint_iou([small], [large], **LONLAT).overall
    assert overall.area_a[0] == pytest.approx(area_a, rel=1e-7)
    assert overall.area_b[0] == pytest.approx(area_b, rel=1e-7)
    assert overall.intersection[0] == pytest.approx(inter, rel=1e-7)
    assert overall.iou[0] == pytest.approx(iou, rel=1e-7)
    table = overlap_pair_table([small], [large], **LONLAT)
    assert table.n == 1
    assert table.metrics.intersection[0] == pytest.approx(inter, rel=1e-7)
    assert table.metrics.iou[0] == pytest.approx(iou, rel=1e-7)
    densified = footprint_iou([small], [large], equal_area_crs="EPSG:8859", **LONLAT).overall
    assert densified.iou[0] == pytest.approx(iou, rel=1e-6)  # Equal Earth: equal-area too


def test_evaluate_keeps_natural_earth_antarctica():
    """Before: ioueval:evaluatepolygons dropped ne_110m_land's Antarctica as unusable."""
    land = antarctica()["ne_110m_land"]
    result = evaluate([land], [land], **LONLAT)
    assert result.reference.n_dropped == 0 and result.predicted.n_dropped == 0
    assert result.metrics["count_tp"] == 1 and result.metrics["iou_mean"] == 1.0
    assert result.per_reference["area_m2"][0] == pytest.approx(straightforward_area(land),
                                                               rel=1e-7)


def cap_area(south, north):
    """Area of the band between two parallels in EPSG:6933: the rectangle of PROJ's corners."""
    to_map = pyproj.Transformer.from_crs(WGS84, EASE, always_xy=True)
    x0, y0 = to_map.transform(-180.0, south)
    x1, y1 = to_map.transform(180.0, north)
    return (x1 - x0) * (y1 - y0)


@pytest.mark.parametrize("equal_area_crs", ["EPSG:6933", "EPSG:8859"])
def test_caps_a_hair_beyond_or_short_of_the_map_edge_are_the_cap(equal_area_crs):
    """Before: box(-180 - 1e-13, 80, 180, 90) was dropped (a union of 0 m²) and
    box(-180, 80, 180 - 5e-5, 90) read as a sliver 5e-5° wide across 180° (IoU 1.4e-7 against
    the cap). Both are the cap to within the snapping bound: IoU ≥ 1 - 5e-5 / 360."""
    cap = shapely.box(-180, 80, 180, 90)
    expected = cap_area(80, 90)
    for drawn in (shapely.box(-180 - 1e-13, 80, 180, 90), shapely.box(-180, 80, 180 + 1e-13, 90),
                  shapely.box(-180, 80, 180 - 5e-5, 90), shapely.box(-180 + 5e-5, 80, 180, 90)):
        result = footprint_iou([drawn], [cap], equal_area_crs=equal_area_crs, **LONLAT)
        assert result.predicted.n_dropped == 0
        assert result.overall.iou[0] >= 1 - 5e-5 / 360 - 1e-9
        assert result.overall.union[0] == pytest.approx(expected, rel=2e-7)
        assert footprint_iou([drawn], [drawn], equal_area_crs=equal_area_crs,
                             **LONLAT).overall.iou[0] == pytest.approx(1.0, abs=1e-9)


#: A ring round the South Pole whose first vertex is the tip of a peninsula: the meridian from it
#: to the pole crosses the ring twice (at 70° S and 80° S), the meridians from its vertices at
#: 80° S cross nothing.
PENINSULA = [(0, -60), (10, -62), (10, -70), (-10, -70), (-10, -80), (90, -80), (180, -80),
             (-90, -80), (-30, -80), (-30, -65), (0, -60)]


@pytest.mark.parametrize("way", ["lonlat", "densified"])
def test_a_ring_round_the_pole_is_closed_where_the_closing_meridian_meets_nothing(way):
    ring = shapely.Polygon(PENINSULA)
    # Independent: the ring in a south polar equal-area CRS, where it is a plain polygon round
    # the pole (edges split every 0.01° in longitude/latitude first).
    unwrapped = np.array(PENINSULA, dtype=float)
    unwrapped[:, 0] = np.unwrap(unwrapped[:, 0], period=360)
    to_polar = pyproj.Transformer.from_crs(WGS84, SOUTH_LAEA, always_xy=True)
    dense = shapely.segmentize(shapely.LineString(unwrapped), 0.01)
    expected = shapely.Polygon(np.column_stack(
        to_polar.transform(*shapely.get_coordinates(dense).T))).area
    layer = prepared([ring], way)
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-7)
    # The same ring starting at any vertex, and written the other way round.
    for k in range(1, len(PENINSULA) - 1):
        turned = PENINSULA[k:-1] + PENINSULA[:k + 1]
        for coords in (turned, turned[::-1]):
            assert prepared([shapely.Polygon(coords)], way).area_m2[0] == pytest.approx(
                expected, rel=1e-7)


def test_parts_of_one_row_may_span_more_than_a_full_turn_together():
    """Before: a row was dropped as "longitudes spanning more than a full turn" when its parts
    did, though none did alone (a field written 179° to 181° beside one at 179.5° W)."""
    row = shapely.MultiPolygon([shapely.box(179, 0, 181, 1), shapely.box(-179.6, 2, -179.5, 3)])
    layer = prepared([row], "lonlat")
    expected = straightforward_area(shapely.MultiPolygon([
        shapely.box(179, 0, 180, 1), shapely.box(-180, 0, -179, 1),
        shapely.box(-179.6, 2, -179.5, 3)]))
    assert layer.area_m2[0] == pytest.approx(expected, rel=1e-9)
    too_wide = shapely.box(-180 - 2 * FULL_TURN_SNAP_DEG, 0, 180, 1)
    assert list(prepared([too_wide], "lonlat").drop_reason) == ["not_projectable"]


def test_the_reading_rule_on_edges_near_a_full_turn():
    """Rule 3 and its stated limit: the short way making a sliver narrower than 1e-4° is read
    as drawn; anything wider across 180° is read the short way, however close its vertices
    come to the antimeridian."""
    wide = shapely.Polygon([(179.95, 0), (-179.99999, 0), (-179.99999, 1), (179.95, 1)])
    sliver = shapely.Polygon([(179.99996, 0), (-179.99996, 0), (-179.99996, 1), (179.99996, 1)])
    read = read_lonlat(np.array([wide, sliver], dtype=object))
    assert shapely.bounds(read[0]).tolist() == pytest.approx([179.95, 0, 180.00001, 1])
    assert shapely.bounds(read[1]).tolist() == pytest.approx([-180, 0, 180, 1])  # drawn


@pytest.mark.parametrize("parts", ["pieces", "tiles"])
@pytest.mark.parametrize("way", ["lonlat", "densified"])
def test_world_spanning_footprints_in_parts(monkeypatch, way, parts):
    """The footprint measured in parts (above TILED_ROWS rows: disjoint pieces, or tiles for
    densely overlapping layers) on a layer with Antarctica, polygons across 180° and a cap
    round the North Pole, against the straightforward computation."""
    ne = antarctica()
    n = 300 if way == "lonlat" else 30  # the densified way is slower on Antarctica's edges
    rng = np.random.default_rng(3)
    lon, lat = rng.uniform(-180, 180, n), rng.uniform(-60, 70, n)
    boxes = list(shapely.box(lon, lat, lon + rng.uniform(0.5, 5, n), lat + 2))  # past 180°
    cap = shapely.box(-180, 84, 180, 90)
    south = ("ne_110m_glaciated_areas", "ne_50m_glaciated_areas" if way == "lonlat"
             else "ne_110m_land")
    pred = [ne[south[0]], cap] + boxes
    ref = [ne[south[1]], shapely.box(-180, 85, 180, 90)] + [
        shapely.affinity.translate(b, 0.3, 0.2) for b in boxes]
    split = [shapely.intersection(shapely.union_all([g, shapely.affinity.translate(g, -360, 0)]),
                                  shapely.box(-180, -90, 180, 90)) for g in pred + ref]
    iou, area_a, area_b, inter = straightforward_iou(split[:len(pred)], split[len(pred):])
    crs = "EPSG:6933" if way == "lonlat" else "EPSG:8859"
    whole = footprint_iou(pred, ref, equal_area_crs=crs, **LONLAT).overall
    monkeypatch.setattr(footprint_module, "TILED_ROWS", n // 6)
    monkeypatch.setattr(footprint_module, "_ROWS_PER_TILE", 10)  # 8 × 8 tiles, 4 × 4
    if parts == "tiles":
        monkeypatch.setattr(footprint_module, "_DENSE_PAIRS_PER_ROW", -1)
    else:  # whatever the overlays would cost
        monkeypatch.setattr(footprint_module, "_PIECES_MAX_RATIO", math.inf)
    tiled = footprint_iou(pred, ref, equal_area_crs=crs, **LONLAT).overall
    for metrics in (whole, tiled):
        assert metrics.area_a[0] == pytest.approx(area_a, rel=1e-6)
        assert metrics.area_b[0] == pytest.approx(area_b, rel=1e-6)
        assert metrics.intersection[0] == pytest.approx(inter, rel=1e-6)
        assert metrics.iou[0] == pytest.approx(iou, rel=1e-6)


def test_longitude_latitude_layers_are_not_densified():
    """The cost of the footprint and overlap-pair algorithms on geographic layers: they take
    evaluate's exact longitude/latitude way, so the prepared layers have the input's vertices
    (plus the cuts at ±180°), not densified copies (world countries at 1:110m were 10.7k
    vertices made 3.3 million)."""
    ne = antarctica()
    geoms = [ne["ne_110m_glaciated_areas"], shapely.box(179, -18, 181, -17)]
    given = int(shapely.get_num_coordinates(np.array(geoms, dtype=object)).sum())
    for prepared_pair in (footprint_iou(geoms, geoms, **LONLAT),
                          overlap_pair_table(geoms, geoms, **LONLAT)):
        for layer in (prepared_pair.predicted, prepared_pair.reference):
            assert layer.lonlat is not None
            assert shapely.get_num_coordinates(layer.overlay).sum() <= given + 20


@pytest.mark.parametrize("way", ["lonlat", "densified"])
def test_an_edge_of_a_full_turn_runs_along_the_antimeridian_or_its_parallel(way):
    """An edge from 180° to -180°: along ±180° in a part that the short way closes (the
    western half of Wrangel Island as world-atlas's TopoJSON cuts it: it was read as drawn, a
    band round the world 22 times the island's area, and Fiji 29 times its own); along its
    parallel in a part that the short way makes wind round the world (a band drawn from -180°
    to 180° along its southern edge)."""
    half_island = shapely.Polygon([(-180, 70.99), (179.87, 70.96), (178.8, 70.8), (178.62, 71.04),
                                   (179.77, 71.49), (180, 71.537), (-180, 70.99)])
    as_cut = shapely.Polygon([(180 if x == -180 else x, y)
                              for x, y in half_island.exterior.coords])
    band = shapely.Polygon([(-180, 70), (-60, 75), (60, 72), (180, 70), (180, 60), (-180, 60)])
    layer = prepared([half_island, band], way)
    assert list(layer.drop_reason) == ["", ""]
    assert layer.area_m2[0] == pytest.approx(straightforward_area(as_cut), rel=1e-7)
    assert layer.area_m2[1] == pytest.approx(straightforward_area(band), rel=1e-7)
