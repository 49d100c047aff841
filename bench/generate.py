"""Deterministic generator of realistic field layers for the benchmark and the parity oracle.

The reference layer is a tessellation of agricultural fields in irrigated New Mexico, in
WGS 84 / UTM zone 13N (EPSG:32613, metres): square blocks of half a mile (805 m) separated by
roads 12-30 m wide, each block either rectangular fields (recursive splits, some with farm
tracks between them and a few with a farmstead hole), a centre pivot with some of its four
corners farmed as separate fields, four small pivots, irregular fields (oblique splits of a block
cut by a canal), or unfarmed rangeland. Every reference field is 0.25-50 ha. A ``stratum``
column names a synthetic county (six regions of the block grid).

The predicted layer holds what a field-delineation model and real files get wrong: boundaries
inset and wobbling by a few metres with a co-registration shift, staircase outlines from 10 m
and 30 m pixel grids, fields split in two or three, neighbouring fields merged, fields predicted
only in part, misses, spurious polygons inside the area (on rangeland and roads) and outside it,
invalid rings (bow-ties, self-touching rings), null and empty geometries, and a few points and
lines. The ``kind`` column says which; the rows are in random order.

Everything is drawn from ``numpy.random.default_rng(seed)`` (PCG64, the same stream on every
machine) and all coordinates are rounded to 1 cm, so identical (n, seed) give identical
geometries and attributes with the same numpy, shapely and GEOS versions.

Command line (project venv, which has shapely and GDAL's Python bindings)::

    .venv/bin/python bench/generate.py --n 50000 --seed 0 --out bench/data/fields_50k_seed0.gpkg
    .venv/bin/python bench/generate.py --county 3000 --seed 0 --out bench/data/counties.gpkg
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import shapely

#: CRS of the field layers: WGS 84 / UTM zone 13N, metres.
FIELDS_CRS = "EPSG:32613"
#: CRS of the county layers: WGS 84 geographic, degrees.
COUNTIES_CRS = "EPSG:4326"

#: South-west corner of the block grid (m, EPSG:32613), in the middle Rio Grande valley.
ORIGIN_E_M, ORIGIN_N_M = 320_000.0, 3_830_000.0
#: Distance between road centre lines (m): half a mile, a quarter-section side.
BLOCK_PITCH_M = 805.0
#: Road widths between blocks (m).
ROAD_WIDTH_M = (12.0, 30.0)
#: Reference field areas (m²): 0.25 ha to 50 ha.
MIN_FIELD_M2, MAX_FIELD_M2 = 2_500.0, 500_000.0
#: Areas the generator aims within, 1 % inside those bounds, so that rounding coordinates to
#: 1 cm never takes a field outside them.
_SAFE_MIN_M2, _SAFE_MAX_M2 = 1.01 * MIN_FIELD_M2, 0.99 * MAX_FIELD_M2
#: Narrowest side of a rectangular field and of the strips left by splits (m).
MIN_WIDTH_M = 30.0
#: Reference fields per block, averaged over layouts (sets the width of the block grid).
FIELDS_PER_BLOCK = 8.5

#: Share of blocks of each layout.
LAYOUTS = {"rectangular": 0.45, "pivot": 0.20, "quad_pivot": 0.05, "irregular": 0.22, "empty": 0.08}
#: Synthetic strata: the block grid is cut into 3 columns x 2 rows of "counties".
STRATA = (("Socorro", "Valencia", "Torrance"), ("Cibola", "Bernalillo", "Sandoval"))

#: Share of reference fields given each prediction outcome; "noisy" takes the rest.
OUTCOMES = {
    "staircase_10m": 0.12,
    "staircase_30m": 0.04,
    "split": 0.06,
    "merge": 0.06,
    "partial": 0.03,
    "miss": 0.07,
    "bowtie": 0.004,
    "self_touching": 0.004,
    "null": 0.004,
}
#: Extra predicted rows, as a share of the number of reference fields (at least one each).
EXTRA_ROWS = {
    "spurious_inside": 0.03,
    "spurious_outside": 0.01,
    "point": 0.002,
    "line": 0.002,
    "empty": 0.001,
}
#: Faults in the reference layer, as a share of its fields (at least one each).
#: A "duplicate" is a field recorded twice, the second copy shifted by about 1.5 m (the only
#: overlapping reference fields; with them many-to-one and one-to-one matching differ).
REFERENCE_FAULTS = {
    "null": 0.002, "self_touching": 0.003, "missing_stratum": 0.005, "duplicate": 0.005,
}

#: Every ``kind`` value of the predicted layer (a missed field has no row).
PREDICTED_KINDS = ("noisy",) + tuple(k for k in OUTCOMES if k != "miss") + tuple(EXTRA_ROWS)
#: Kinds whose geometry is an invalid ring.
INVALID_KINDS = ("bowtie", "self_touching")

_COORD_DECIMALS = 2  # 1 cm


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def generate_fields(n_reference: int, seed: int = 0):
    """Generate a reference layer of ``n_reference`` fields and its predicted layer.

    Args:
        n_reference: number of reference rows (fields, the copies of fields recorded twice
            and the null rows), >= 50.
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        (reference_geoms, reference_attrs, predicted_geoms, predicted_attrs, crs):
        ``reference_geoms``: object array, shape (n_reference,), shapely Polygons or None.
        ``reference_attrs``: dict of arrays of shape (n_reference,): ``field_id`` (int64,
        unique), ``stratum`` (object, str or None), ``layout`` (object: rectangular, pivot,
        pivot_corner, irregular).
        ``predicted_geoms``: object array, shape (n_pred,), any geometry type or None.
        ``predicted_attrs``: dict of arrays of shape (n_pred,): ``pred_id`` (int64, 1..n_pred in
        row order), ``score`` (float, model confidence in (0, 1)), ``kind`` (object, one of
        PREDICTED_KINDS).
        ``crs``: "EPSG:32613"; coordinates in metres, rounded to 1 cm.

    Raises:
        ValueError: if n_reference < 50 (too few fields for every fault kind).
    """
    if int(n_reference) != n_reference or n_reference < 50:
        raise ValueError(f"n_reference must be an integer >= 50, got {n_reference!r}")
    n_reference = int(n_reference)
    rng = np.random.default_rng(seed)
    n_duplicates = max(1, round(REFERENCE_FAULTS["duplicate"] * n_reference))
    tessellation = _tessellate(n_reference - n_duplicates, rng)
    reference_geoms, reference_attrs = _reference_layer(tessellation, n_duplicates, rng)
    predicted_geoms, predicted_attrs = _predicted_layer(tessellation, rng)
    return reference_geoms, reference_attrs, predicted_geoms, predicted_attrs, FIELDS_CRS


def generate_counties(n_counties: int = 3000, seed: int = 0):
    """Generate ~county-sized polygons in EPSG:4326 and a generalised predicted version.

    A jittered grid of cells about 0.62° x 0.5° (about 55 km x 55 km, 200-260 km of boundary
    each) spanning the conterminous United States' latitudes, whose shared edges wiggle like
    rivers (60-140 vertices per edge, so several hundred per county). Predicted counties are the
    reference counties simplified at 0.0003° (about 30 m), wobbled by about 100 m and shifted;
    3 % are missing and 1 % spurious polygons lie outside the grid.

    Returns:
        The same 5-tuple as generate_fields, with reference attributes ``county_id``,
        ``stratum`` (state-sized blocks of the grid) and predicted attributes ``pred_id``,
        ``score``, ``kind``; crs "EPSG:4326", coordinates in degrees.
    """
    rng = np.random.default_rng(seed)
    n_rows = max(1, round(math.sqrt(n_counties / 1.8)))
    n_cols = math.ceil(n_counties / n_rows)
    lon0, lat0, dlon, dlat = -121.0, 28.0, 0.62, 0.5
    shape = (n_rows + 1, n_cols + 1)
    node_lon = lon0 + dlon * (np.arange(n_cols + 1)[None, :] + rng.uniform(-0.15, 0.15, shape))
    node_lat = lat0 + dlat * (np.arange(n_rows + 1)[:, None] + rng.uniform(-0.15, 0.15, shape))
    nodes = np.stack([node_lon, node_lat], axis=-1)  # (rows + 1, cols + 1, 2)

    def edge_params():
        n_vertices = int(rng.integers(60, 141))
        freqs = np.arange(1, 6)
        amps = rng.uniform(0.3, 1.0, len(freqs)) * 0.03 / freqs
        phases = rng.uniform(0, 2 * np.pi, len(freqs))
        fine = rng.normal(0.0, 0.0015, n_vertices)
        return n_vertices, amps, phases, fine

    horizontal = {(r, c): edge_params() for r in range(n_rows + 1) for c in range(n_cols)}
    vertical = {(r, c): edge_params() for r in range(n_rows) for c in range(n_cols + 1)}
    straight: set = set()

    def edge(p0, p1, params, key):
        n_vertices, amps, phases, fine = params
        t = np.linspace(0.0, 1.0, n_vertices + 2)
        d = p1 - p0
        normal = np.array([-d[1], d[0]])
        if key in straight:
            offset = np.zeros_like(t)
        else:
            harmonics = np.sin(2 * np.pi * np.arange(1, 6)[:, None] * t + phases[:, None])
            wave = (amps[:, None] * harmonics).sum(0)
            wave[1:-1] += fine
            offset = np.sin(np.pi * t) * wave
        return p0 + t[:, None] * d + offset[:, None] * normal

    def county(r, c):
        south = edge(nodes[r, c], nodes[r, c + 1], horizontal[(r, c)], ("h", r, c))
        east = edge(nodes[r, c + 1], nodes[r + 1, c + 1], vertical[(r, c + 1)], ("v", r, c + 1))
        north = edge(nodes[r + 1, c], nodes[r + 1, c + 1], horizontal[(r + 1, c)], ("h", r + 1, c))
        west = edge(nodes[r, c], nodes[r + 1, c], vertical[(r, c)], ("v", r, c))
        ring = np.concatenate([south[:-1], east[:-1], north[::-1][:-1], west[::-1]])
        return shapely.polygons(np.round(ring, 6))

    cells = [(k // n_cols, k % n_cols) for k in range(n_counties)]
    reference = np.array([county(r, c) for r, c in cells], dtype=object)
    for _ in range(3):  # straighten the edges of the rare county whose wiggles cross
        bad = np.flatnonzero(~shapely.is_valid(reference))
        if len(bad) == 0:
            break
        for k in bad:
            r, c = cells[k]
            straight.update({("h", r, c), ("h", r + 1, c), ("v", r, c), ("v", r, c + 1)})
        for k, (r, c) in enumerate(cells):
            reference[k] = county(r, c)
    stratum = np.array(
        [f"state_{r // 8:02d}_{c // 8:02d}" for r, c in cells], dtype=object
    )
    reference_attrs = {
        "county_id": np.arange(1, n_counties + 1, dtype=np.int64),
        "stratum": stratum,
    }

    present = rng.random(n_counties) >= 0.03
    predicted = shapely.simplify(reference[present], 0.0003)
    coords, owner = shapely.get_coordinates(predicted, return_index=True)
    phases = rng.uniform(0, 2 * np.pi, (len(predicted), 2))
    shift = rng.normal(0.0, 0.0004, (len(predicted), 2))
    wobble = 0.0008 * np.stack(
        [np.sin(coords[:, 1] * 60.0 + phases[owner, 0]),
         np.sin(coords[:, 0] * 60.0 + phases[owner, 1])],
        axis=1,
    )
    wobbled = shapely.set_coordinates(predicted.copy(), np.round(coords + wobble + shift[owner], 6))
    ok = shapely.is_valid(wobbled)
    predicted = np.where(ok, wobbled, predicted)
    n_spurious = max(1, round(0.01 * n_counties))
    lon_s = rng.uniform(lon0, lon0 + n_cols * dlon, n_spurious)
    lat_s = lat0 - rng.uniform(0.5, 2.0, n_spurious)
    centres = shapely.points(np.round(np.stack([lon_s, lat_s], 1), 6))
    spurious = shapely.buffer(centres, 0.2, quad_segs=16)
    predicted = np.concatenate([predicted, spurious])
    kind = np.array(
        ["noisy"] * int(present.sum()) + ["spurious_outside"] * n_spurious, dtype=object
    )
    score = np.round(np.clip(rng.normal(0.8, 0.1, len(predicted)), 0.01, 0.999), 3)
    order = rng.permutation(len(predicted))
    predicted_attrs = {
        "pred_id": np.arange(1, len(predicted) + 1, dtype=np.int64),
        "score": score[order],
        "kind": kind[order],
    }
    return reference, reference_attrs, predicted[order], predicted_attrs, COUNTIES_CRS


def write_geopackage(path, reference_geoms, reference_attrs, predicted_geoms, predicted_attrs, crs):
    """Write layers ``reference`` (Polygon) and ``predicted`` (Geometry: any type) to a
    GeoPackage with GDAL's OGR; an existing file is replaced.

    Attribute arrays of integer dtype become Integer64 columns, floats Real, anything else
    String (None becomes NULL). Null geometries are written as NULL, invalid ones as they are.
    """
    from osgeo import ogr

    dataset, srs, tmp = new_geopackage(path, crs)
    for name, geoms, attrs, geometry_type in (
        ("reference", reference_geoms, reference_attrs, ogr.wkbPolygon),
        ("predicted", predicted_geoms, predicted_attrs, ogr.wkbUnknown),
    ):
        layer = create_layer(dataset, name, srs, geometry_type, attrs)
        append_rows(dataset, layer, geoms, attrs)
    dataset = None  # closed: then it takes the final name
    Path(tmp).replace(path)


def new_geopackage(path, crs):
    """(dataset, srs, tmp): a new GeoPackage ``tmp`` beside ``path``, ``<stem>.partial.gpkg``
    (so an interrupted write never looks finished; the caller closes it and renames it to
    ``path``), and the CRS as an osr.SpatialReference."""
    from osgeo import ogr, osr

    ogr.UseExceptions()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".partial.gpkg")
    if tmp.exists():
        tmp.unlink()
    srs = osr.SpatialReference()
    srs.SetFromUserInput(crs)
    srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    return ogr.GetDriverByName("GPKG").CreateDataSource(str(tmp)), srs, tmp


def create_layer(dataset, name, srs, geometry_type, attrs):
    """A layer with the columns of ``attrs``: integer arrays Integer64, floats Real, anything
    else String."""
    from osgeo import ogr

    layer = dataset.CreateLayer(name, srs, geometry_type, options=["FID=fid"])
    for column, values in attrs.items():
        kind = np.asarray(values).dtype.kind
        field_type = (ogr.OFTInteger64 if kind in "iu" else ogr.OFTReal if kind == "f"
                      else ogr.OFTString)
        layer.CreateField(ogr.FieldDefn(column, field_type))
    return layer


def append_rows(dataset, layer, geoms, attrs):
    """Append rows to ``layer`` in one transaction (None as NULL, null geometries as NULL,
    invalid ones as they are)."""
    from osgeo import ogr

    definition = layer.GetLayerDefn()
    columns = [(definition.GetFieldDefn(i).GetName(), definition.GetFieldDefn(i).GetType())
               for i in range(definition.GetFieldCount())]
    columns = [(column, np.asarray(attrs[column]), field_type) for column, field_type in columns]
    wkbs = shapely.to_wkb(np.asarray(geoms, dtype=object))
    dataset.StartTransaction()
    for k, wkb in enumerate(wkbs):
        feature = ogr.Feature(definition)
        for column, values, field_type in columns:
            value = values[k]
            if value is None:
                feature.SetFieldNull(column)
            elif field_type == ogr.OFTInteger64:
                feature.SetField(column, int(value))
            elif field_type == ogr.OFTReal:
                feature.SetField(column, float(value))
            else:
                feature.SetField(column, str(value))
        if wkb is not None:
            feature.SetGeometry(ogr.CreateGeometryFromWkb(wkb))
        layer.CreateFeature(feature)
    dataset.CommitTransaction()


# ---------------------------------------------------------------------------------------------
# Reference tessellation
# ---------------------------------------------------------------------------------------------


class _Tessellation:
    """Reference fields as coordinate arrays, before they become shapely geometries.

    Attributes:
        rings: list of (k, 2) float arrays, exterior rings (not closed), metres.
        holes: list of lists of (k, 2) arrays (farmstead holes; mostly empty).
        layout: list of str, the block layout each field comes from.
        stratum: list of str.
        siblings: list of (i, j, parent_ring): two leaf fields split from one parent, the
            parent being the ring a model merging them would outline.
        empty_blocks: list of (x0, y0, x1, y1) unfarmed blocks (m).
        roads: list of (x0, y0, x1, y1) road strips (m).
        extent: (x0, y0, x1, y1) of the block grid (m).
    """

    def __init__(self):
        self.rings, self.holes, self.layout, self.stratum = [], [], [], []
        self.siblings, self.empty_blocks, self.roads = [], [], []
        self.extent = None

    def add(self, ring, layout, stratum, holes=()):
        self.rings.append(np.asarray(ring, dtype=float))
        self.holes.append(list(holes))
        self.layout.append(layout)
        self.stratum.append(stratum)
        return len(self.rings) - 1


def _tessellate(n_reference: int, rng: np.random.Generator) -> _Tessellation:
    """Fill blocks row by row (south to north) until n_reference fields exist."""
    tess = _Tessellation()
    n_cols = max(2, math.ceil(math.sqrt(n_reference / FIELDS_PER_BLOCK)))
    n_rows_expected = n_cols
    road_x = rng.uniform(*ROAD_WIDTH_M, n_cols + 1)  # widths of the north-south roads
    layouts, shares = list(LAYOUTS), np.array(list(LAYOUTS.values()))
    row = 0
    while len(tess.rings) < n_reference:
        if row == 0:
            road_south, road_north = rng.uniform(*ROAD_WIDTH_M, 2)
        else:
            road_south, road_north = road_north, rng.uniform(*ROAD_WIDTH_M)
        y0 = ORIGIN_N_M + row * BLOCK_PITCH_M + road_south / 2
        y1 = ORIGIN_N_M + (row + 1) * BLOCK_PITCH_M - road_north / 2
        tess.roads.append(
            (ORIGIN_E_M, y1, ORIGIN_E_M + n_cols * BLOCK_PITCH_M, y1 + road_north)
        )
        for col in range(n_cols):
            x0 = ORIGIN_E_M + col * BLOCK_PITCH_M + road_x[col] / 2
            x1 = ORIGIN_E_M + (col + 1) * BLOCK_PITCH_M - road_x[col + 1] / 2
            stratum = STRATA[min(1, 2 * row // n_rows_expected)][min(2, 3 * col // n_cols)]
            layout = layouts[rng.choice(len(layouts), p=shares)]
            block = (x0, y0, x1, y1)
            if layout == "rectangular":
                _rectangular_block(tess, block, stratum, rng)
            elif layout == "pivot":
                _pivot_block(tess, block, stratum, rng)
            elif layout == "quad_pivot":
                _quad_pivot_block(tess, block, stratum, rng)
            elif layout == "irregular":
                _irregular_block(tess, block, stratum, rng)
            else:
                tess.empty_blocks.append(block)
        row += 1
    east_m, north_m = ORIGIN_E_M + n_cols * BLOCK_PITCH_M, ORIGIN_N_M + row * BLOCK_PITCH_M
    for col in range(n_cols + 1):
        x = ORIGIN_E_M + col * BLOCK_PITCH_M
        tess.roads.append((x - road_x[col] / 2, ORIGIN_N_M, x + road_x[col] / 2, north_m))
    tess.extent = (ORIGIN_E_M, ORIGIN_N_M, east_m, north_m)
    # The last row is cut where the count is reached.
    n = n_reference
    tess.rings, tess.holes = tess.rings[:n], tess.holes[:n]
    tess.layout, tess.stratum = tess.layout[:n], tess.stratum[:n]
    tess.siblings = [(i, j, parent) for i, j, parent in tess.siblings if i < n and j < n]
    return tess


def _rect_ring(x0, y0, x1, y1):
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


def _field_size_target_m2(rng) -> float:
    """Typical field size of one block (m²): log-normal, median 10 ha. Splitting stops at
    0.6-1.6 times it, so fields are about half of it on average."""
    return float(np.clip(rng.lognormal(math.log(100_000.0), 0.8), 6_000.0, 400_000.0))


def _rectangular_block(tess, block, stratum, rng):
    """Guillotine splits of the block into rectangles of 0.25-50 ha, some with farm tracks."""
    target = _field_size_target_m2(rng)
    stack = [(block, None)]  # (rectangle, index of the pending split it came from)
    splits = []  # [parent_rect, child_a_leaf_index or None, child_b_leaf_index or None]
    while stack:
        (x0, y0, x1, y1), origin = stack.pop()
        width, height = x1 - x0, y1 - y0
        area = width * height
        children = None
        if area > _SAFE_MAX_M2 or area > target * rng.uniform(0.6, 1.6):
            children = _split_rectangle((x0, y0, x1, y1), rng)
        if children is None:
            if area > _SAFE_MAX_M2:  # no acceptable cut: leave it unfarmed
                continue
            holes = []
            if area > 80_000 and rng.random() < 0.03:  # a farmstead inside the field
                hw, hh = rng.uniform(30, 60, 2)
                hx = rng.uniform(x0 + 20, x1 - 20 - hw)
                hy = rng.uniform(y0 + 20, y1 - 20 - hh)
                holes = [_rect_ring(hx, hy, hx + hw, hy + hh)]
            leaf = tess.add(_rect_ring(x0, y0, x1, y1), "rectangular", stratum, holes)
            if origin is not None:
                splits[origin[0]][1 + origin[1]] = leaf
            continue
        splits.append([_rect_ring(x0, y0, x1, y1), None, None])
        stack.append((children[0], (len(splits) - 1, 0)))
        stack.append((children[1], (len(splits) - 1, 1)))
    tess.siblings.extend(
        (a, b, parent) for parent, a, b in splits if a is not None and b is not None
    )


def _split_rectangle(rect, rng):
    """Two rectangles from one, cut across its longer side; None if no cut keeps both
    at least MIN_FIELD_M2 and MIN_WIDTH_M wide."""
    x0, y0, x1, y1 = rect
    gap = 0.0 if rng.random() < 0.7 else rng.uniform(3.0, 8.0)  # farm track
    along_x = (x1 - x0) >= (y1 - y0)
    lo, hi = (x0, x1) if along_x else (y0, y1)
    other = (y1 - y0) if along_x else (x1 - x0)
    for fraction in (rng.uniform(0.3, 0.7), 0.5):
        cut = round(lo + fraction * (hi - lo))
        a, b = cut - gap / 2 - lo, hi - cut - gap / 2
        if min(a, b) >= MIN_WIDTH_M and min(a, b) * other >= _SAFE_MIN_M2:
            if along_x:
                return (x0, y0, cut - gap / 2, y1), (cut + gap / 2, y0, x1, y1)
            return (x0, y0, x1, cut - gap / 2), (x0, cut + gap / 2, x1, y1)
    return None


def _circle(cx, cy, r, n_vertices, start=0.0):
    angles = start + 2 * np.pi * np.arange(n_vertices) / n_vertices
    return np.stack([cx + r * np.cos(angles), cy + r * np.sin(angles)], axis=1)


def _pivot_block(tess, block, stratum, rng):
    """One centre pivot (at most 49.5 ha) and some of the four corners as separate fields."""
    x0, y0, x1, y1 = block
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half = min(x1 - x0, y1 - y0) / 2
    r = min(half - rng.uniform(2.0, 15.0), math.sqrt(495_000.0 / math.pi))
    n_vertices = 4 * int(np.clip(round(2 * math.pi * r / 12.0 / 4), 8, 64))  # one every ~12 m
    circle = _circle(cx, cy, r, n_vertices)
    tess.add(circle, "pivot", stratum)
    quarter = n_vertices // 4
    for q in range(4):
        if rng.random() >= 0.45:
            continue
        arc = circle[np.arange(q * quarter, (q + 1) * quarter + 1) % n_vertices]
        sx, sy = (1 if q in (0, 3) else -1), (1 if q in (0, 1) else -1)
        corner = np.array([
            [cx, cy + sy * (y1 - y0) / 2] if q in (0, 2) else [cx + sx * (x1 - x0) / 2, cy],
            [cx + sx * (x1 - x0) / 2, cy + sy * (y1 - y0) / 2],
            [cx + sx * (x1 - x0) / 2, cy] if q in (0, 2) else [cx, cy + sy * (y1 - y0) / 2],
        ])
        ring = np.concatenate([arc, corner])
        if _shoelace_m2(ring) >= _SAFE_MIN_M2:
            tess.add(ring, "pivot_corner", stratum)


def _quad_pivot_block(tess, block, stratum, rng):
    """Four small pivots (about 11 ha each), one per quarter of the block."""
    x0, y0, x1, y1 = block
    w, h = (x1 - x0) / 2, (y1 - y0) / 2
    for qx in range(2):
        for qy in range(2):
            r = min(w, h) / 2 - rng.uniform(2.0, 10.0)
            n_vertices = 4 * int(np.clip(round(2 * math.pi * r / 12.0 / 4), 8, 64))
            tess.add(
                _circle(x0 + (qx + 0.5) * w, y0 + (qy + 0.5) * h, r, n_vertices),
                "pivot", stratum,
            )


def _irregular_block(tess, block, stratum, rng):
    """A block cut by a canal at an angle, then split recursively along oblique lines."""
    x0, y0, x1, y1 = block
    polygon = _rect_ring(x0, y0, x1, y1)
    if rng.random() < 0.6:
        theta = rng.uniform(0, 2 * np.pi)
        normal = np.array([math.cos(theta), math.sin(theta)])
        proj = polygon @ normal
        polygon = _clip(polygon, normal, proj.min() + rng.uniform(0.6, 0.9) * np.ptp(proj))
    target = _field_size_target_m2(rng)
    stack = [(polygon, None)]
    splits = []
    while stack:
        ring, origin = stack.pop()
        area = _shoelace_m2(ring)
        children = None
        if area > _SAFE_MAX_M2 or area > target * rng.uniform(0.6, 1.6):
            children = _split_oblique(ring, rng)
        if children is None:
            if area > _SAFE_MAX_M2:  # no acceptable cut: leave it unfarmed
                continue
            leaf = tess.add(ring, "irregular", stratum)
            if origin is not None:
                splits[origin[0]][1 + origin[1]] = leaf
            continue
        splits.append([ring, None, None])
        stack.append((children[0], (len(splits) - 1, 0)))
        stack.append((children[1], (len(splits) - 1, 1)))
    tess.siblings.extend(
        (a, b, parent) for parent, a, b in splits if a is not None and b is not None
    )


def _split_oblique(ring, rng, attempts=6):
    """Two convex polygons from one, cut across its longer extent at up to ±30° off square;
    None if no attempt keeps both at least MIN_FIELD_M2 and not sliver-like."""
    width, height = np.ptp(ring, axis=0)
    base = 0.0 if width >= height else math.pi / 2
    gap = 0.0 if rng.random() < 0.7 else rng.uniform(3.0, 8.0)
    for _ in range(attempts):
        theta = base + rng.uniform(-0.52, 0.52)
        normal = np.array([math.cos(theta), math.sin(theta)])
        proj = ring @ normal
        cut = proj.min() + rng.uniform(0.3, 0.7) * np.ptp(proj)
        a = _clip(ring, normal, cut - gap / 2)
        b = _clip(ring, -normal, -(cut + gap / 2))
        if len(a) >= 3 and len(b) >= 3 and all(
            _shoelace_m2(p) >= _SAFE_MIN_M2 and _compactness(p) >= 0.3 for p in (a, b)
        ):
            return a, b
    return None


def _clip(ring, normal, offset):
    """Sutherland-Hodgman: the part of convex polygon ``ring`` (k, 2) where normal·x <= offset."""
    d = ring @ normal - offset
    out = []
    k = len(ring)
    for i in range(k):
        j = (i + 1) % k
        if d[i] <= 0:
            out.append(ring[i])
        if (d[i] < 0 < d[j]) or (d[j] < 0 < d[i]):
            t = d[i] / (d[i] - d[j])
            out.append(ring[i] + t * (ring[j] - ring[i]))
    return np.array(out).reshape(-1, 2)


def _shoelace_m2(ring) -> float:
    """Area (m²) of a ring (k, 2), not closed."""
    x, y = ring[:, 0], ring[:, 1]
    twice = np.dot(x[:-1], y[1:]) - np.dot(x[1:], y[:-1]) + x[-1] * y[0] - x[0] * y[-1]
    return 0.5 * abs(float(twice))


def _compactness(ring) -> float:
    """4πA/P²: 1 for a circle, 0.785 for a square, 0.35 for a 8:1 rectangle."""
    closed = np.concatenate([ring, ring[:1]])
    perimeter = float(np.hypot(*np.diff(closed, axis=0).T).sum())
    return 4 * math.pi * _shoelace_m2(ring) / perimeter**2


def _field_polygons(tess):
    """The tessellation's fields as shapely Polygons, object array of shape (n_fields,)."""
    return np.array(
        [shapely.polygons(ring, holes=holes or None)
         for ring, holes in zip(tess.rings, tess.holes)],
        dtype=object,
    )


def _reference_layer(tess, n_duplicates, rng):
    """Shapely polygons and attributes of the reference fields, with the reference faults;
    each of the n_duplicates duplicated fields is followed by its shifted copy."""
    n = len(tess.rings)
    geoms = _field_polygons(tess)
    geoms = _round(geoms)
    stratum = np.array(tess.stratum, dtype=object)
    counts = {kind: max(1, round(share * n)) for kind, share in REFERENCE_FAULTS.items()}
    plain = np.flatnonzero(
        np.isin(np.array(tess.layout), ("rectangular", "irregular"))
        & np.array([not h for h in tess.holes])
        & (shapely.area(geoms) >= 20_000.0)
    )
    touching = rng.choice(plain, size=min(counts["self_touching"], len(plain)), replace=False)
    geoms[touching] = [_self_touching(g, rng, max_share=0.05) for g in geoms[touching]]
    nulls = rng.choice(np.setdiff1d(np.arange(n), touching), size=counts["null"], replace=False)
    geoms[nulls] = None
    stratum[rng.choice(n, size=counts["missing_stratum"], replace=False)] = None
    layout = np.array(tess.layout, dtype=object)

    originals = np.sort(rng.choice(
        np.setdiff1d(np.arange(n), np.r_[touching, nulls]), size=n_duplicates, replace=False
    ))
    shift = rng.normal(0.0, 1.5, (n_duplicates, 2))
    copies = _round(shapely.transform(
        geoms[originals],
        lambda xy: xy + np.repeat(shift, shapely.get_num_coordinates(geoms[originals]), axis=0),
    ))
    order = np.argsort(np.r_[np.arange(n), originals + 0.5], kind="stable")
    geoms = np.concatenate([geoms, copies])[order]
    stratum = np.concatenate([stratum, stratum[originals]])[order]
    layout = np.concatenate([layout, layout[originals]])[order]
    attrs = {
        "field_id": np.arange(100_001, 100_001 + len(geoms), dtype=np.int64),
        "stratum": stratum,
        "layout": layout,
    }
    return geoms, attrs


# ---------------------------------------------------------------------------------------------
# Predicted layer
# ---------------------------------------------------------------------------------------------


def _predicted_layer(tess, rng):
    """Predictions of the tessellation's fields, shuffled, with extra spurious and faulty rows."""
    n = len(tess.rings)
    fields = _field_polygons(tess)
    outcome = _assign_outcomes(tess, rng)
    geoms, kinds = [], []

    def emit(new_geoms, kind):
        for g in new_geoms:
            if g is not None and not shapely.is_empty(g):
                geoms.append(g)
                kinds.append(kind)

    noisy = np.flatnonzero(outcome == "noisy")
    emit(_noisy(fields[noisy], rng), "noisy")
    for kind, res in (("staircase_10m", 10.0), ("staircase_30m", 30.0)):
        idx = np.flatnonzero(outcome == kind)
        inset_m = rng.uniform(0.0, res / 2, len(idx))  # a raster model's boundary class
        inset = shapely.buffer(fields[idx], -inset_m, join_style="mitre")
        emit(_staircase(inset, res), kind)
    split = np.flatnonzero(outcome == "split")
    emit(_noisy(_split_parts(fields[split], rng), rng), "split")
    merged_parents = [
        shapely.polygons(parent) for i, _, parent in tess.siblings if outcome[i] == "merge_first"
    ]
    emit(_noisy(np.array(merged_parents, dtype=object), rng), "merge")
    partial = np.flatnonzero(outcome == "partial")
    emit(_noisy(_partial_parts(fields[partial], rng), rng), "partial")
    bowtie = np.flatnonzero(outcome == "bowtie")
    emit([_bowtie(g, rng) for g in fields[bowtie]], "bowtie")
    touching = np.flatnonzero(outcome == "self_touching")
    emit(
        [_self_touching(g, rng, max_share=0.15) for g in _noisy(fields[touching], rng)],
        "self_touching",
    )

    n_extra = {kind: max(1, round(share * n)) for kind, share in EXTRA_ROWS.items()}
    emit(_spurious_inside(tess, n_extra["spurious_inside"], rng), "spurious_inside")
    emit(_spurious_outside(tess, n_extra["spurious_outside"], rng), "spurious_outside")
    some = rng.choice(n, size=n_extra["point"] + n_extra["line"], replace=False)
    emit(shapely.centroid(fields[some[: n_extra["point"]]]), "point")
    emit(
        [shapely.LineString(shapely.get_coordinates(shapely.get_exterior_ring(g)))
         for g in fields[some[n_extra["point"]:]]],
        "line",
    )

    geoms = _round(np.array(geoms, dtype=object))
    kinds = np.array(kinds, dtype=object)
    n_null = int(np.count_nonzero(outcome == "null"))
    geoms = np.concatenate([geoms, [None] * n_null, [shapely.Polygon()] * n_extra["empty"]])
    kinds = np.concatenate([kinds, ["null"] * n_null, ["empty"] * n_extra["empty"]])
    score = _scores(kinds, rng)
    order = rng.permutation(len(geoms))
    attrs = {
        "pred_id": np.arange(1, len(geoms) + 1, dtype=np.int64),
        "score": score[order],
        "kind": kinds[order],
    }
    return geoms[order], attrs


def _assign_outcomes(tess, rng) -> np.ndarray:
    """The prediction outcome of every reference field (exact counts, at least one of each
    fault kind). Merged sibling pairs are "merge_first" and "merge_second"."""
    n = len(tess.rings)
    outcome = np.full(n, "noisy", dtype=object)
    free = np.ones(n, dtype=bool)
    n_merge_pairs = max(1, round(OUTCOMES["merge"] * n / 2))
    for k in rng.permutation(len(tess.siblings)):
        if n_merge_pairs == 0:
            break
        i, j, _ = tess.siblings[k]
        if free[i] and free[j]:
            outcome[i], outcome[j] = "merge_first", "merge_second"
            free[i] = free[j] = False
            n_merge_pairs -= 1
    layout = np.array(tess.layout)
    convex_plain = (
        free
        & np.isin(layout, ("rectangular", "irregular"))
        & np.array([not h and len(r) >= 4 for r, h in zip(tess.rings, tess.holes)])
    )
    for kind in ("bowtie", "self_touching"):
        pool = np.flatnonzero(convex_plain)
        chosen = rng.choice(pool, size=max(1, round(OUTCOMES[kind] * n)), replace=False)
        outcome[chosen] = kind
        free[chosen] = convex_plain[chosen] = False
    for kind in ("staircase_10m", "staircase_30m", "split", "partial", "miss", "null"):
        pool = np.flatnonzero(free)
        chosen = rng.choice(pool, size=max(1, round(OUTCOMES[kind] * n)), replace=False)
        outcome[chosen] = kind
        free[chosen] = False
    return outcome


def _noisy(geoms, rng):
    """Model-like outlines: inset 1-6 m (the boundary a model leaves between fields), wobbling
    0.3-2 m along 40-250 m waves, shifted ~1.5 m (co-registration). Shapes of (n,)."""
    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    if n == 0:
        return geoms
    inset = shapely.buffer(geoms, -rng.uniform(1.0, 6.0, n), join_style="mitre")
    dense = shapely.segmentize(inset, 25.0)
    coords, owner = shapely.get_coordinates(dense, return_index=True)
    n_waves = 4
    wavelength = rng.uniform(40.0, 250.0, n_waves)
    direction = rng.uniform(0, 2 * np.pi, n_waves)
    wave = np.stack([np.cos(direction), np.sin(direction)], 1) * (2 * np.pi / wavelength)[:, None]
    phase = rng.uniform(0, 2 * np.pi, (n, n_waves, 2))
    sigma = rng.uniform(0.3, 2.0, n)
    shift = rng.normal(0.0, 1.5, (n, 2))
    arg = coords @ wave.T  # (n_coords, n_waves); same point, same displacement: rings stay closed
    dx = np.sin(arg + phase[owner, :, 0]).sum(1)
    dy = np.sin(arg + phase[owner, :, 1]).sum(1)
    scale = sigma[owner] / math.sqrt(n_waves / 2)
    moved = coords + np.stack([dx, dy], 1) * scale[:, None] + shift[owner]
    out = shapely.set_coordinates(dense.copy(), moved)
    out = _round(out)
    bad = ~shapely.is_valid(out) | shapely.is_empty(out)
    out[bad] = _round(inset[bad])  # the rare wobble that folds a ring: inset only
    bad = ~shapely.is_valid(out) | shapely.is_empty(out)
    out[bad] = _round(geoms[bad])  # an inset that rounding folds: the outline itself
    return out


def _staircase(geoms, res_m):
    """Outlines of the res_m pixels (global grid) whose centres fall inside each geometry,
    as a raster model polygonised; None where no pixel centre is inside."""
    geoms = np.asarray(geoms, dtype=object)
    out = np.full(len(geoms), None, dtype=object)
    present = np.flatnonzero(~shapely.is_empty(geoms) & ~shapely.is_missing(geoms))
    if len(present) == 0:
        return out
    bounds = shapely.bounds(geoms[present])
    # Rows whose pixel centres lie within the geometry's y extent.
    row0 = np.ceil(bounds[:, 1] / res_m - 0.5).astype(np.int64)
    row1 = np.floor(bounds[:, 3] / res_m - 0.5).astype(np.int64)
    n_rows = np.maximum(row1 - row0 + 1, 0)
    owner = np.repeat(np.arange(len(present)), n_rows)
    row = row0[owner] + (np.arange(len(owner)) - np.repeat(np.cumsum(n_rows) - n_rows, n_rows))
    yc = (row + 0.5) * res_m
    xa, xb = bounds[owner, 0] - res_m, bounds[owner, 2] + res_m
    lines = shapely.linestrings(np.stack([np.stack([xa, yc], 1), np.stack([xb, yc], 1)], 1))
    crossing = shapely.intersection(lines, geoms[present][owner])
    parts, part_of = shapely.get_parts(crossing, return_index=True)
    is_line = (shapely.get_type_id(parts) == 1) & ~shapely.is_empty(parts)
    parts, part_of = parts[is_line], part_of[is_line]
    pb = shapely.bounds(parts)
    c0 = np.ceil(pb[:, 0] / res_m - 0.5).astype(np.int64)
    c1 = np.floor(pb[:, 2] / res_m - 0.5).astype(np.int64)
    ok = c1 >= c0
    run_row, c0, c1, run_owner = row[part_of][ok], c0[ok], c1[ok], owner[part_of][ok]
    order = np.lexsort((c0, run_row, run_owner))
    run_owner, run_row, c0, c1 = run_owner[order], run_row[order], c0[order], c1[order]
    starts = np.flatnonzero(np.r_[True, run_owner[1:] != run_owner[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(run_owner)]):
        rows, left, right = run_row[start:stop], c0[start:stop], c1[start:stop]
        out[present[run_owner[start]]] = _pixel_runs_outline(rows, left, right, res_m)
    return out


def _pixel_runs_outline(rows, left, right, res_m):
    """The polygon covered by pixel runs (row, first column, last column), sorted by row.

    One run per row on consecutive, overlapping rows (a convex field) is traced directly as a
    staircase ring, keeping only its corners; anything else is the union of the runs' boxes.
    """
    simple = (
        np.all(np.diff(rows) == 1)
        and np.all(np.maximum(left[1:], left[:-1]) <= np.minimum(right[1:], right[:-1]))
    )
    if not simple:
        boxes = shapely.box(left * res_m, rows * res_m, (right + 1) * res_m, (rows + 1) * res_m)
        return shapely.union_all(boxes)
    y_low, y_high = rows * res_m, (rows + 1) * res_m
    x_right, x_left = (right + 1) * res_m, left * res_m
    # Up the east side row by row, then down the west side.
    east = np.stack([np.repeat(x_right, 2), np.stack([y_low, y_high], 1).ravel()], 1)
    west = np.stack([np.repeat(x_left[::-1], 2), np.stack([y_high, y_low], 1)[::-1].ravel()], 1)
    ring = np.concatenate([east, west]).astype(float)
    ring = ring[np.r_[True, np.any(ring[1:] != ring[:-1], axis=1)]]  # repeated corners
    prev, nxt = np.roll(ring, 1, axis=0), np.roll(ring, -1, axis=0)
    corner = ~(((prev[:, 0] == ring[:, 0]) & (ring[:, 0] == nxt[:, 0]))
               | ((prev[:, 1] == ring[:, 1]) & (ring[:, 1] == nxt[:, 1])))
    return shapely.polygons(ring[corner])


def _long_axis_slabs(geoms, cuts_per_geom):
    """Intersections of each geometry with slabs across its longer bounding-box side.

    cuts_per_geom: list of increasing fractions in (0, 1) per geometry; returns the parts
    (fractions [0, c1], [c1, c2], ..., [ck, 1]) flattened, in order.
    """
    parts, owners = [], []
    bounds = shapely.bounds(geoms)
    for k, cuts in enumerate(cuts_per_geom):
        x0, y0, x1, y1 = bounds[k]
        edges = np.r_[0.0, cuts, 1.0]
        for a, b in zip(edges[:-1], edges[1:]):
            if x1 - x0 >= y1 - y0:
                slab = shapely.box(x0 + a * (x1 - x0), y0 - 1, x0 + b * (x1 - x0), y1 + 1)
            else:
                slab = shapely.box(x0 - 1, y0 + a * (y1 - y0), x1 + 1, y0 + b * (y1 - y0))
            parts.append(slab)
            owners.append(k)
    geoms = np.asarray(geoms, dtype=object)
    return shapely.intersection(geoms[owners], np.array(parts, dtype=object))


def _split_parts(geoms, rng):
    """Over-segmentation: each field cut into 2 (70 %) or 3 parts across its long side."""
    cuts = []
    for _ in range(len(geoms)):
        if rng.random() < 0.7:
            cuts.append([rng.uniform(0.3, 0.7)])
        else:
            cuts.append([rng.uniform(0.2, 0.4), rng.uniform(0.6, 0.8)])
    parts = _long_axis_slabs(geoms, cuts)
    return parts[shapely.area(parts) > 0]


def _partial_parts(geoms, rng):
    """A prediction covering only 25-45 % of the field's long side (IoU below 0.5)."""
    cuts = [[rng.uniform(0.25, 0.45)] for _ in range(len(geoms))]
    return _long_axis_slabs(geoms, cuts)[0::2]


def _bowtie(geom, rng):
    """A figure-eight: the field's outline with two consecutive corners swapped (a vertex
    order error), vertices moved by ~1 m."""
    ring = shapely.get_coordinates(shapely.get_exterior_ring(geom))[:-1]
    ring = ring + rng.normal(0.0, 1.0, ring.shape)
    for k in rng.permutation(len(ring)):  # the first swap that crosses two edges
        twisted = ring.copy()
        twisted[[k, (k + 1) % len(ring)]] = ring[[(k + 1) % len(ring), k]]
        bowtie = shapely.polygons(np.round(twisted, _COORD_DECIMALS))
        if not shapely.is_valid(bowtie):
            return bowtie
    return bowtie


def _self_touching(geom, rng, max_share):
    """The ring touches itself: at one vertex it runs into the field and back to the same
    vertex (an "inverted hole"), cutting out a triangle of at most max_share of the area."""
    ring = shapely.get_coordinates(shapely.get_exterior_ring(geom))[:-1]
    centroid = shapely.get_coordinates(shapely.centroid(geom))[0]
    k = int(rng.integers(len(ring)))
    v = ring[k]
    to_centre = centroid - v
    reach = rng.uniform(0.3, 0.6)
    angle = rng.uniform(0.15, 0.35)
    p1 = v + reach * _rotation(angle) @ to_centre
    p2 = v + reach * _rotation(-angle) @ to_centre
    triangle_m2 = _shoelace_m2(np.array([v, p1, p2]))
    shrink = min(1.0, math.sqrt(max_share * shapely.area(geom) / max(triangle_m2, 1e-9)))
    p1, p2 = v + shrink * (p1 - v), v + shrink * (p2 - v)
    looped = np.concatenate([ring[: k + 1], [p1, p2, v], ring[k + 1:]])
    return shapely.polygons(np.round(looped, _COORD_DECIMALS))


def _rotation(angle):
    """2 x 2 matrix of a counter-clockwise rotation by angle (radians)."""
    return np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


def _spurious_inside(tess, count, rng):
    """Polygons a model finds where no field is: rangeland patches in unfarmed blocks (or
    anywhere in the grid when there is none), pivot-like circles and stretches of road."""
    out = []
    x0, y0, x1, y1 = tess.extent
    for _ in range(count):
        shape = rng.random()
        if shape < 0.25 and tess.roads:
            rx0, ry0, rx1, ry1 = tess.roads[int(rng.integers(len(tess.roads)))]
            length = rng.uniform(200.0, 800.0)
            if rx1 - rx0 > ry1 - ry0:  # east-west road
                s = rng.uniform(rx0, max(rx0, rx1 - length))
                out.append(shapely.box(s, ry0 - 1, s + length, ry1 + 1))
            else:
                s = rng.uniform(ry0, max(ry0, ry1 - length))
                out.append(shapely.box(rx0 - 1, s, rx1 + 1, s + length))
            continue
        if tess.empty_blocks and rng.random() < 0.6:
            bx0, by0, bx1, by1 = tess.empty_blocks[int(rng.integers(len(tess.empty_blocks)))]
            cx, cy = rng.uniform(bx0 + 100, bx1 - 100), rng.uniform(by0 + 100, by1 - 100)
        else:
            cx, cy = rng.uniform(x0, x1), rng.uniform(y0, y1)
        out.append(_random_blob(cx, cy, rng))
    return out


def _spurious_outside(tess, count, rng):
    """Polygons 0.3-3 km outside the grid, where the reference layer has no field at all."""
    x0, y0, x1, y1 = tess.extent
    out = []
    for _ in range(count):
        side = int(rng.integers(4))
        d = rng.uniform(300.0, 3000.0)
        if side == 0:
            cx, cy = rng.uniform(x0, x1), y0 - d
        elif side == 1:
            cx, cy = rng.uniform(x0, x1), y1 + d
        elif side == 2:
            cx, cy = x0 - d, rng.uniform(y0, y1)
        else:
            cx, cy = x1 + d, rng.uniform(y0, y1)
        out.append(_random_blob(cx, cy, rng, max_size_m=250.0))
    return out


def _random_blob(cx, cy, rng, max_size_m=300.0):
    """A rotated rectangle (40-max_size_m sides) or a circle (radius 40-200 m)."""
    if rng.random() < 0.6:
        w, h = rng.uniform(40.0, max_size_m, 2)
        theta = rng.uniform(0, np.pi)
        c, s = math.cos(theta), math.sin(theta)
        corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2
        return shapely.polygons(corners @ np.array([[c, s], [-s, c]]) + [cx, cy])
    r = rng.uniform(40.0, min(200.0, max_size_m))
    return shapely.polygons(_circle(cx, cy, r, 48))


def _scores(kinds, rng):
    """Model confidence per predicted row in (0, 1), higher for good outlines (3 decimals)."""
    mean = np.select(
        [np.isin(kinds, ("noisy", "staircase_10m")),
         np.isin(kinds, ("split", "merge", "staircase_30m")),
         np.isin(kinds, ("spurious_inside", "spurious_outside", "partial"))],
        [0.85, 0.7, 0.45],
        0.6,
    )
    return np.round(np.clip(rng.normal(mean, 0.12), 0.01, 0.999), 3)


def _round(geoms):
    """Coordinates rounded to 1 cm (a ring's closing vertex rounds like its first)."""
    geoms = np.asarray(geoms, dtype=object)
    coords = shapely.get_coordinates(geoms)
    return shapely.set_coordinates(geoms.copy(), np.round(coords, _COORD_DECIMALS))


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--n", type=int, help="number of reference fields")
    group.add_argument("--county", type=int, metavar="N",
                       help="number of county polygons (EPSG:4326)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="GeoPackage to write")
    parser.add_argument("--summary", type=Path, help="also write the row counts as JSON here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.n is not None:
        layers = generate_fields(args.n, args.seed)
    else:
        layers = generate_counties(args.county, args.seed)
    generated = time.perf_counter()
    write_geopackage(args.out, *layers)
    if args.summary:
        args.summary.write_text(json.dumps({
            "n": args.n or args.county, "seed": args.seed, "county": args.county is not None,
            "n_reference": len(layers[0]), "n_predicted": len(layers[2]), "crs": layers[4],
        }, indent=2))
    print(
        f"{args.out}: {len(layers[0])} reference, {len(layers[2])} predicted rows "
        f"({layers[4]}); generated in {generated - start:.1f} s, "
        f"written in {time.perf_counter() - generated:.1f} s"
    )


if __name__ == "__main__":
    main()
