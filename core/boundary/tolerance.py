"""Boundary length within a tolerance: the length of each polygon's boundary within a
distance of the other layer's boundaries, measured in the WGS 84 / UTM zone of each polygon
(of each part of it, for a polygon wider than a zone: ``_split_wide``).

Exact up to rounding (agribound 1.0: "the length of one layer's boundary inside the union
of circular-arc buffers of the other layer's boundaries, without polygonal buffer
approximation"); see ``boundary_within_tolerance``.

Both layers are measured in one pass: the pairs of boundary pieces (one of each layer) within
the tolerance of each other are found once, and each pair gives both the part of the first
piece inside the second one's capsule and the part of the second inside the first one's. The
plane is cut into tiles that each hold the boundaries near them, so memory stays bounded and
tiles run on both cores.

A polygon's numbers depend only on its boundary and the other layer's boundaries near it,
to the last bit, whatever else is in the call: pieces of a fixed length, in frames of a
fixed lattice, unions of intervals sorted exactly, lengths summed exactly per polygon
(``_word_sums``) and runs set aside polygon by polygon (the work units of
evaluation/units.py rely on it).
"""

from __future__ import annotations

import math

import numpy as np
import pyproj
import shapely

from .distances import check_same_space
from .zones import ZonedLayer, utm_crs, utm_epsg
from ..util.checks import check_positive
from ..geometry.crs import to_crs, transformer
from ..util.memory import check_memory
from ..util.parallel import WORKERS, ProgressCallback, run_chunks
from ..util.wording import count_of
from ..geometry.segments import (
    boundary_curves,
    budget_splits,
    hypot,
    ranges,
    run_starts,
    split_segments,
)
from .wide import WIDE_LONGITUDE_DEG, lonlat_extent_of_large, to_crs_in_parts

#: A tile holds about this many boundary vertices of both layers: about 0.06 s of work and
#: 50 MB of memory.
_TILE_VERTICES = 50_000

#: Segments are cut into pieces no longer than this many tolerances, or ``_PIECE_MIN`` CRS
#: units (metres) when that is longer. Pieces are the unit of the search; short ones are
#: often wholly inside one capsule, which spares solving the others, and the candidates of a
#: short piece are few (a long diagonal piece's box holds many). The floor keeps the pieces
#: few at small tolerances. Until issue 23 the floor was the batch's mean segment length (a
#: polygon's pieces, and its numbers' last bits, then depended on its batch); on bench's
#: fields_50k at 10 m and 2 m, 32, 40, 64 and 128 m were tried: 64 and 128 fastest, alike.
_PIECE_TOLERANCES = 3.0
_PIECE_MIN = 64.0

#: The cells of a tile's grid are this many tolerances wide (and at least half a piece).
_CELL_TOLERANCES = 2.0

#: A tile's grid has at most this many cells (coarser cells beyond).
_MAX_TILE_CELLS = 1 << 20

#: Pieces query the grid this many at a time, and candidate pairs are solved this many at a
#: time (a bound on the memory of a tile). Smaller batches stay in the processor's cache but
#: make many more small numpy calls, at which the two threads take turns at the GIL: 8,192 /
#: 16,384 made the stage ~20 % slower on two cores.
_QUERY_CHUNK = 65_536
_BLOCK = 65_536

#: A query chunk gathers at most this many candidate pieces at once (more are split off).
_CANDIDATE_BUDGET = 2_000_000

#: Bytes per vertex of a tile while it is measured, and working memory beyond, for the
#: memory check.
_BYTES_PER_VERTEX = 400
_WORKING_BYTES = 256 * 2**20
_WORKING_BYTES_PER_VERTEX = 1024  # the working memory of a small chunk: this per vertex
#: Bytes per vertex of a tile for each tolerance beyond the first
#: (``tolerance_lengths_in_utm_at``): the intervals of the pieces and their flags are kept per
#: tolerance until the tile is summed (tracemalloc: 26 to 60 bytes per vertex per extra one).
_BYTES_PER_VERTEX_PER_EXTRA_TOLERANCE = 64

#: Relative slack for the box filters (of the coordinates' magnitude): they may keep a few
#: more candidates than needed, never fewer.
_SLACK = 1e-9

#: Slopes (sine or cosine of the angle between two pieces) below this count as 0.
_FLAT = 1e-300

#: Pieces are placed in frames of a fixed lattice of this spacing (CRS units): each segment's
#: coordinates are taken from the lattice point next to its start on the side of 0 (0 within
#: one spacing of it), so a piece's numbers do not depend on which other polygons share its
#: tile (a tile-wide origin would round them differently in every batch). Pairs of pieces
#: in different frames add the frames' exact offset.
_FRAME = 2.0**16

#: Lengths are summed per polygon exactly (independent of the order of the pieces and of the
#: tiles they fall in): each length is cut into integer words of these weights (2^-12, 2^-38
#: and 2^-64 units; below that a length is truncated), the words are summed as float64
#: integers (exact below 2^53) and carried, and the words' sum is rounded once at the end.
_WORD_BITS = 26
_WORD_FIRST = 2.0**12


def tolerance_lengths_in_utm(
    reference: ZonedLayer,
    predicted: ZonedLayer,
    tolerance_m: float,
    progress: ProgressCallback | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Boundary length of each polygon of both layers within ``tolerance_m`` of the other
    layer's boundaries, and its perimeter, each polygon measured in its own UTM zone.

    The polygons of one zone are measured against the other layer's polygons of that zone in
    one pass, both ways. A polygon near polygons of the other layer from another zone (near a
    zone border) is then measured again against all the polygons near it, those from other
    zones transformed into its zone. A polygon wider than a UTM zone is measured in parts, one
    per zone it crosses, each in that zone (``_split_wide``): within 0.1 % of lengths on the
    ellipsoid, where its centroid's zone would be off by tens of percent.

    Args:
        reference, predicted: the two layers with their zones (``zoned_layer``).
        tolerance_m: the tolerance in metres, > 0.
        progress: optional callable(fraction done, in [0, 1]), called between tiles; it may
            raise (``progress.EvaluationCanceled``) to stop the work.

    Returns:
        ``(within_ref_m, perimeter_ref_m, within_pred_m, perimeter_pred_m)``: float arrays of
        shapes (reference.n,) and (predicted.n,); 0 for rows without a boundary (missing,
        empty, non-finite, no zone). ``within <= perimeter``.

    Raises:
        ValueError: bad ``tolerance_m``, one layer planar and the other not.

    Source: agribound 1.0 documentation, "Evaluation": boundary_recall (reference) and
    boundary_precision (predicted).
    """
    tol = check_positive(tolerance_m, "tolerance_m")
    within_ref, perimeter_ref, within_pred, perimeter_pred = tolerance_lengths_in_utm_at(
        reference, predicted, (tol,), progress
    )
    return within_ref[0], perimeter_ref, within_pred[0], perimeter_pred


def tolerance_lengths_in_utm_at(
    reference: ZonedLayer,
    predicted: ZonedLayer,
    tolerances_m,
    progress: ProgressCallback | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``tolerance_lengths_in_utm`` at several tolerances in one pass: the pairs of boundary
    pieces are found once, within the largest tolerance, and each pair is solved exactly at
    every tolerance.

    Args:
        tolerances_m: K tolerances in metres, each > 0.

    Returns:
        ``(within_ref_m, perimeter_ref_m, within_pred_m, perimeter_pred_m)``: the within
        lengths of shapes (K, reference.n) and (K, predicted.n), row k at ``tolerances_m[k]``;
        the perimeters of shapes (reference.n,) and (predicted.n,).

    Raises:
        ValueError: a tolerance that is not positive and finite, no tolerance, one layer
            planar and the other not.
    """
    tols = np.array([check_positive(t, "tolerance_m") for t in tolerances_m], dtype=float)
    if len(tols) == 0:
        raise ValueError("tolerances_m must hold at least one tolerance")
    check_same_space(reference, predicted)
    if reference.crs is None:
        return _lengths_within(reference.local, predicted.local, tols, True, progress)
    n_ref, n_pred = reference.n, predicted.n
    (reference, ref_owner), (predicted, pred_owner) = _split_wide(reference), _split_wide(
        predicted)
    within_ref, perimeter_ref, within_pred, perimeter_pred = _lengths_by_zone(
        reference, predicted, tols, progress)
    return (_by_owner(within_ref, ref_owner, n_ref), _by_owner(perimeter_ref, ref_owner, n_ref),
            _by_owner(within_pred, pred_owner, n_pred),
            _by_owner(perimeter_pred, pred_owner, n_pred))


def _lengths_by_zone(reference: ZonedLayer, predicted: ZonedLayer, tols, progress):
    """``tolerance_lengths_in_utm_at`` of two layers with CRSs, zone by zone."""
    tol = float(tols.max())
    k_tols = len(tols)
    within_ref, perimeter_ref = np.zeros((k_tols, reference.n)), np.zeros(reference.n)
    within_pred, perimeter_pred = np.zeros((k_tols, predicted.n)), np.zeros(predicted.n)
    codes = [int(c) for c in np.unique(np.r_[reference.epsg, predicted.epsg]) if c != 0]
    weights = [np.sum(reference.epsg == c) + np.sum(predicted.epsg == c) for c in codes]
    done = np.cumsum([0] + weights) / max(sum(weights), 1)
    reach_ref, reach_pred = _lon_reach(reference, tol), _lon_reach(predicted, tol)
    for k, code in enumerate(codes):
        ri = np.flatnonzero(reference.epsg == code)
        pi = np.flatnonzero(predicted.epsg == code)
        within_ref[:, ri], perimeter_ref[ri], within_pred[:, pi], perimeter_pred[pi] = (
            _lengths_within(reference.local[ri], predicted.local[pi], tols, True,
                            _part(progress, done[k], done[k + 1]))
        )
        for layer, other, other_reach, rows, within in (
            (reference, predicted, reach_pred, ri, within_ref),
            (predicted, reference, reach_ref, pi, within_pred),
        ):
            if np.all(other.epsg == code):
                continue
            boxes = _zone_boxes(other, code, _near_zone(other_reach, code))
            foreign = boxes.copy()
            foreign[other.epsg == code] = np.nan
            mixed = rows[_near_boxes(layer.local[rows], foreign, tol)[0]]
            if len(mixed):
                near = _near_boxes(layer.local[mixed], boxes, tol)[1]
                within[:, mixed] = _lengths_within(
                    layer.local[mixed], other.in_zone(near, code), tols, False
                )[0]
    return within_ref, perimeter_ref, within_pred, perimeter_pred


def boundary_within_tolerance(
    polygons, others, tolerance_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Length of each polygon's boundary within ``tolerance_m`` of any boundary of ``others``.

    Exact up to rounding: the boundary is split into straight pieces; the part of a piece
    within the tolerance of a piece of ``others`` is its intersection with that piece's
    capsule (a rectangle capped by two half-discs, convex, so one interval, solved in closed
    form), and the intervals of each piece are united. No polygonal buffer is built.

    Args:
        polygons: object array, shape (n,), of polygonal geometries (None allowed).
        others: object array, shape (m,), of polygonal geometries in the same metric CRS.
        tolerance_m: the tolerance, > 0, in CRS units (metres).

    Returns:
        ``(within_m, perimeter_m)``: float arrays, shape (n,): the length within the
        tolerance and the boundary length (exterior and interior rings) of each polygon;
        0 for missing, empty or non-finite geometries. ``within_m <= perimeter_m``.

    Raises:
        ValueError: ``tolerance_m`` not a positive finite number.

    Source: agribound 1.0 documentation, "Evaluation": boundary_recall / boundary_precision
    ("the length of one layer's boundary inside the union of circular-arc buffers of the other
    layer's boundaries").
    """
    tol = check_positive(tolerance_m, "tolerance_m")
    within, perimeter, _, _ = _lengths_within(
        np.asarray(polygons, dtype=object).reshape(-1),
        np.asarray(others, dtype=object).reshape(-1), np.array([tol]), False,
    )
    return within[0], perimeter


#: Meridians where wide boundaries are cut: the UTM zones' edges, moved east by this many
#: degrees so that an edge running along a zone's edge (a band's side on whole degrees) lies
#: in one zone, not in both.
_ZONE_EDGE_SHIFT_DEG = math.pi * 1e-7


def _split_wide(layer: ZonedLayer) -> tuple[ZonedLayer, np.ndarray | None]:
    """``layer`` with each geometry wider than a UTM zone (``wide.WIDE_LONGITUDE_DEG``) in
    parts: its boundary cut along the UTM zones' meridians, one MultiLineString per zone it
    crosses, in that zone. In the zone of its centroid a polygon 100° wide is measured with
    a scale error of tens of percent (a band 120° wide: its perimeter 28 % long); in the
    zone it lies in, each part within UTM's own 0.1 %. Lengths add up over the parts, and the
    other layer's boundaries near each part are found as for any polygon near a zone's edge.

    The cut is made in longitude and latitude (the layer's own if it is geographic, else
    WGS 84's, each vertex transformed, longitudes kept continuous along each ring); each part
    is then transformed to its zone vertex by vertex, as every geometry is.

    Returns:
        ``(layer, owner)``: the narrow geometries (in their order) then the parts, and for
        each of its rows the row of ``layer`` it belongs to; ``(layer, None)`` when no
        geometry is wide.
    """
    extent = lonlat_extent_of_large(layer.source, layer.crs)
    with np.errstate(invalid="ignore"):
        wide = np.flatnonzero(extent[:, 0] > WIDE_LONGITUDE_DEG)
    if len(wide) == 0:
        return layer, None
    lonlat = layer.crs if layer.crs.is_geographic else pyproj.CRS("EPSG:4326")
    curves, curve_owner = boundary_curves(layer.source[wide])
    coords, curve = shapely.get_coordinates(curves, return_index=True)
    x, y = coords[:, 0], coords[:, 1]
    if not layer.crs.is_geographic:
        x, y = (np.asarray(v, dtype=float) for v in transformer(layer.crs, lonlat).transform(
            x, y, errcheck=False))
        # Continuous along each ring: a jump of more than 180° is the antimeridian.
        step = np.diff(x, prepend=x[:1])
        step[np.r_[True, curve[1:] != curve[:-1]]] = 0.0
        x = x - 360.0 * np.cumsum(np.round(step / 360.0))
    finite = np.isfinite(x) & np.isfinite(y)
    bad = np.zeros(len(curves), dtype=bool)
    bad[curve[~finite]] = True
    keep = ~bad[curve]
    lines = shapely.linestrings(np.column_stack([x[keep], y[keep]]), indices=curve[keep])
    owners = curve_owner[np.unique(curve[keep])]
    parts, part_owner, part_zone = [], [], []
    for row in np.unique(owners):
        boundary = shapely.multilinestrings(lines[owners == row])
        lon0, _, lon1, _ = shapely.bounds(boundary)
        first = math.floor((lon0 + 180.0 - _ZONE_EDGE_SHIFT_DEG) / 6.0)
        last = math.floor((lon1 + 180.0 - _ZONE_EDGE_SHIFT_DEG) / 6.0)
        west = -180.0 + _ZONE_EDGE_SHIFT_DEG + 6.0 * np.arange(first, last + 1)
        cut = shapely.intersection(boundary, shapely.box(west, -90.0, west + 6.0, 90.0))
        cut = cut[~shapely.is_empty(cut) & (shapely.length(cut) > 0)]
        if len(cut) == 0:
            continue
        middle = shapely.bounds(cut)
        parts.append(cut)
        part_owner.append(np.full(len(cut), wide[row]))
        part_zone.append(utm_epsg(0.5 * (middle[:, 0] + middle[:, 2]),
                                  0.5 * (middle[:, 1] + middle[:, 3])))
    narrow = np.setdiff1d(np.arange(layer.n), wide)
    owner = np.concatenate([narrow] + part_owner).astype(np.int64)
    # The new layer's source CRS is the longitude/latitude of the cut (a part taken back to a
    # projected CRS could wrap at its antimeridian); the narrow geometries keep their zones.
    parts = np.concatenate(parts) if parts else np.zeros(0, dtype=object)
    zones = np.concatenate(part_zone) if part_zone else np.zeros(0, dtype=np.int64)
    return ZonedLayer(np.concatenate([to_crs(layer.source[narrow], layer.crs, lonlat), parts]),
                      lonlat, np.concatenate([layer.epsg[narrow], zones]),
                      np.concatenate([layer.local[narrow],
                                      to_crs_in_parts(parts, lonlat, zones, utm_crs)])), owner


def _by_owner(values: np.ndarray, owner: np.ndarray | None, n: int) -> np.ndarray:
    """Sums of ``values`` (shape (..., rows)) over the rows of each of n owners
    (``_split_wide``; an owner without rows gets 0); ``values`` itself when ``owner`` is
    None."""
    if owner is None:
        return values
    out = np.zeros(values.shape[:-1] + (n,))
    np.add.at(out, (..., owner), values)
    return out


def _part(progress, lo: float, hi: float):
    """``progress`` rescaled so that this part reports from ``lo`` to ``hi`` of the whole."""
    if progress is None:
        return None
    return lambda fraction: progress(lo + (hi - lo) * fraction)


# ---------------------------------------------------------------------------
# Zones
# ---------------------------------------------------------------------------


def _lon_reach(layer: ZonedLayer, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """The middle longitude of each geometry (``wide.lonlat_extent``, its source box's outline)
    and how far from it in longitude (degrees) it reaches, ``tol`` metres included: half its
    span, plus ``tol`` as degrees of longitude at its latitude farthest from the equator,
    plus 0.5° for the outline's sampling. inf near a pole and for geometries without an
    extent (they are always looked at)."""
    extent = lonlat_extent_of_large(layer.source, layer.crs)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos_lat = np.cos(np.radians(np.fmax(np.abs(extent[:, 2]), np.abs(extent[:, 3]))))
        tol_deg = np.degrees(tol / (6_371_000.0 * cos_lat))
        reach = 0.5 * extent[:, 0] + tol_deg + 0.5
    reach = np.where(np.isfinite(reach) & (cos_lat > 1e-3), reach, np.inf)
    return np.nan_to_num(extent[:, 1]), reach


def _near_zone(lon_reach, epsg: int) -> np.ndarray:
    """Which geometries (``_lon_reach``) may come near the geometries of UTM zone ``epsg``:
    those lie within 6° of its central meridian (each within 3° of its centroid's zone, and
    narrower than 6° or cut into zones, ``_split_wide``)."""
    middle, reach = lon_reach
    central = -183.0 + 6.0 * (int(epsg) % 100)
    apart = np.abs(np.mod(middle - central + 180.0, 360.0) - 180.0)
    return apart <= reach + 6.0


def _zone_boxes(layer: ZonedLayer, epsg: int, candidates=None) -> np.ndarray:
    """Bounding box of each geometry of ``layer`` in UTM zone ``epsg``, shape (n, 4); NaN for
    missing geometries, and for those outside ``candidates`` (bool array, shape (n,), or None
    for all) that are not in the zone.

    Geometries of the zone give their own box; the others the box of their source box's
    outline (16 points a side) transformed to the zone, grown by 1 % and 1 m for the curvature
    of the outline's image. A coarse filter only: the exact test is the piece-level one.
    """
    box = np.full((layer.n, 4), np.nan)
    same = layer.epsg == epsg
    box[same] = shapely.bounds(layer.local[same])
    rest = np.flatnonzero(~same if candidates is None else ~same & candidates)
    bounds = shapely.bounds(layer.source[rest])
    finite = np.isfinite(bounds).all(axis=1)
    rest, bounds = rest[finite], bounds[finite]
    if len(rest):
        x, y = _box_outlines(bounds)
        x, y = transformer(layer.crs, utm_crs(epsg)).transform(x.ravel(), y.ravel(),
                                                                errcheck=False)
        x = np.asarray(x, dtype=float).reshape(len(rest), -1)
        y = np.asarray(y, dtype=float).reshape(len(rest), -1)
        with np.errstate(invalid="ignore"):
            good = (np.isfinite(x) & np.isfinite(y)).all(axis=1)
            bx = np.column_stack([x.min(1), y.min(1), x.max(1), y.max(1)])
        margin = 0.01 * np.maximum(bx[:, 2] - bx[:, 0], bx[:, 3] - bx[:, 1]) + 1.0
        bx[:, :2] -= margin[:, None]
        bx[:, 2:] += margin[:, None]
        bx[~good] = np.nan
        box[rest] = bx
    return box


def _box_outlines(bounds: np.ndarray, per_side: int = 16):
    """x and y of points along the outline of each box (xmin, ymin, xmax, ymax) of
    ``bounds`` (shape (n, 4)), each of shape (n, 4 per_side)."""
    t = np.arange(per_side) / per_side
    x0, y0, x1, y1 = (bounds[:, k : k + 1] for k in range(4))
    n = len(bounds)
    xs = np.concatenate([x0 + (x1 - x0) * t, np.broadcast_to(x1, (n, per_side)),
                         x1 - (x1 - x0) * t, np.broadcast_to(x0, (n, per_side))], axis=1)
    ys = np.concatenate([np.broadcast_to(y0, (n, per_side)), y0 + (y1 - y0) * t,
                         np.broadcast_to(y1, (n, per_side)), y1 - (y1 - y0) * t], axis=1)
    return xs, ys


def _near_boxes(geoms: np.ndarray, boxes: np.ndarray, tol: float):
    """Which geometries and which boxes come within ``tol`` of each other (box against box).

    Args:
        geoms: object array, shape (n,), of geometries.
        boxes: float array, shape (m, 4); rows with NaN are ignored.

    Returns:
        ``(geometry_rows, box_rows)``: sorted int arrays of the geometries near some box and
        of the boxes near some geometry.
    """
    none = np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(np.isfinite(boxes).all(axis=1))
    mine = shapely.bounds(geoms)
    fine = np.flatnonzero(np.isfinite(mine).all(axis=1))
    if len(rows) == 0 or len(fine) == 0:
        return none, none
    tree = shapely.STRtree(shapely.box(*boxes[rows].T))
    m = mine[fine]
    grown = shapely.box(m[:, 0] - tol, m[:, 1] - tol, m[:, 2] + tol, m[:, 3] + tol)
    hit_geom, hit_box = tree.query(grown, predicate="intersects")
    return fine[np.unique(hit_geom)], rows[np.unique(hit_box)]


# ---------------------------------------------------------------------------
# Both layers in one metric CRS, by tiles
# ---------------------------------------------------------------------------


#: Runs of boundary segments shorter than this many tolerances are certified whole (below).
_RUN_TOLERANCES = 0.25

#: The certified runs are set aside when they hold at least this share of a layer's segments.
_CERTIFIED_SHARE = 0.5

#: Runs are certified in chunks of polygons of at most this many pieces and points (about
#: 80 bytes each: 240 MB); a polygon with more is solved exactly, tile by tile.
_CERTIFY_MAX_ITEMS = 3_000_000

#: Polygons with fewer vertices are solved exactly as they are: the pairs of a few hundred
#: short segments cost less than setting their runs aside (a k-d tree of the other
#: boundaries near them, cut at the run length).
_CERTIFY_MIN_VERTICES = 256


def _lengths_within(a: np.ndarray, b: np.ndarray, tols: np.ndarray, both: bool, progress=None):
    """``_lengths_within_exact``, with the parts of the boundaries that are certainly within
    the smallest tolerance set aside first.

    A boundary cut finely (a field polygonised from 1 cm pixels: 9,300 vertices for 10 m of
    side) has every one of its segments within a 10 m tolerance of hundreds or thousands of
    the other boundary's, and each such pair was solved: the work grew with the square of the
    vertices (19 s for that field). Here the boundary, cut into pieces no longer than
    ``_RUN_TOLERANCES`` of the smallest tolerance t, is grouped in runs of consecutive pieces
    about that long; a run of length ρ from its first point c lies within t of the other
    boundary when a point of the other boundary is within t - ρ of c (every point of the run
    is within ρ of c). Such points are looked up in a k-d tree of the other boundary's
    vertices and of points along its segments (at most a run length apart), and the run
    counts whole. Only the rest is measured exactly: the same result up to rounding, and
    work linear in the vertices where the boundaries are near each other. Polygons whose
    segments are long against t (fields drawn by hand) are measured exactly as they are.

    Every choice is made polygon by polygon from the polygon and the other layer's
    boundaries near it (``_certifiable``, ``_certified_runs``), and lengths are summed
    exactly (``_word_sums``), so each polygon's lengths do not depend on the other polygons
    of its layer in the call. Measuring one side against the other, or both in one pass,
    gives the same numbers (``_pair_block`` solves a pair the same way in either role).
    """
    t = float(np.min(tols))
    cert_a = _certifiable(a, t)
    cert_b = _certifiable(b, t) if both else np.zeros(len(b), dtype=bool)
    if not (cert_a.any() or cert_b.any()):
        return _lengths_within_exact(a, b, tols, both, progress)
    rest_a, whole_a, set_a = _set_aside(a, b, cert_a, t)
    rest_b, whole_b, set_b = _set_aside(b, a, cert_b, t)
    # One pass for the polygons left whole (both ways when ``both``; the others' boundaries
    # still count as the other layer's), then the remaining pieces of the others.
    within_a, perimeter_a, within_b, perimeter_b = _lengths_within_words(
        a, b, tols, both, progress, skip=(set_a, set_b))
    for within, rest, whole, rows, other in ((within_a, rest_a, whole_a, set_a, b),
                                              (within_b, rest_b, whole_b, set_b, a)):
        rows = np.flatnonzero(rows)
        if len(rows):
            near = _near_boxes(other, shapely.bounds(a if other is b else b)[rows],
                               2 * _PIECE_TOLERANCES * np.max(tols) + t)[0]
            within[:, :, rows] += _lengths_within_words(rest[rows], other[near], tols, False)[0]
            within[:, :, rows] += whole[:, None, rows]
    perimeter_a, perimeter_b = _from_words(perimeter_a), _from_words(perimeter_b)
    return (np.minimum(_from_words(within_a), perimeter_a), perimeter_a,
            np.minimum(_from_words(within_b), perimeter_b), perimeter_b)


def _certifiable(a: np.ndarray, tol: float) -> np.ndarray:
    """Which polygons of ``a`` may have runs set aside (bool, shape (len(a),)): those of at
    least ``_CERTIFY_MIN_VERTICES`` vertices whose mean segment is at most two run lengths
    (boundaries cut finely), told from the geometry alone, and whose pieces and points stay
    within ``_CERTIFY_MAX_ITEMS``."""
    run_length = _RUN_TOLERANCES * tol
    vertices = shapely.get_num_coordinates(a)
    out = vertices >= _CERTIFY_MIN_VERTICES
    rows = np.flatnonzero(out)
    if len(rows):
        with np.errstate(invalid="ignore"):
            length = shapely.length(a[rows])
            out[rows] = ((length <= 2.0 * run_length * vertices[rows])
                         & (length / run_length + vertices[rows] <= _CERTIFY_MAX_ITEMS))
    return out


def _set_aside(a: np.ndarray, b: np.ndarray, candidates: np.ndarray, tol: float):
    """The polygons ``candidates`` of ``a`` (bool, shape (len(a),)) without their runs
    certainly within ``tol`` of ``b``'s boundaries (``_certified_runs``), in chunks of about
    ``_CERTIFY_MAX_ITEMS`` pieces and points, each against the polygons of ``b`` near it.

    Returns ``(rest, whole, replaced)``: ``a`` with those polygons replaced by
    MultiLineStrings of their remaining pieces (None for none) where that sets at least
    ``_CERTIFIED_SHARE`` of their pieces aside, the words (``_word_sums``, shape
    (3, len(a))) of the lengths set aside, and which polygons were replaced (bool).
    """
    rest = a.copy()
    whole = np.zeros((3, len(a)))
    replaced = np.zeros(len(a), dtype=bool)
    rows = np.flatnonzero(candidates)
    with np.errstate(invalid="ignore"):
        box_b = shapely.bounds(b)
    ok_b = np.flatnonzero(np.isfinite(box_b).all(axis=1))
    if len(rows) == 0 or len(ok_b) == 0:
        return rest, whole, replaced
    tree = shapely.STRtree(shapely.box(*box_b[ok_b].T))
    run_length = _RUN_TOLERANCES * tol
    items = shapely.length(a[rows]) / run_length + shapely.get_num_coordinates(a[rows])
    for lo, hi in budget_splits(items, _CERTIFY_MAX_ITEMS):
        chunk = rows[lo:hi]
        box = shapely.bounds(a[chunk])
        grown = shapely.box(box[:, 0] - tol, box[:, 1] - tol, box[:, 2] + tol, box[:, 3] + tol)
        near = ok_b[np.unique(tree.query(grown, predicate="intersects")[1])]
        if len(near) == 0:
            continue
        kept, set_aside, certified = _certified_runs(_segments(a[chunk]), _segments(b[near]),
                                                     len(chunk), tol)
        rest[chunk[certified]] = kept[certified]
        whole[:, chunk] = set_aside
        replaced[chunk] = certified
    return rest, whole, replaced


def _certified_runs(seg_a, seg_b, n: int, tol: float):
    """The runs of the boundaries of n geometries (``seg_a``: their ``_segments``) certainly
    within ``tol`` of the other layer's boundaries (``seg_b``), polygon by polygon.

    Returns ``(rest, whole, certified)``: object array (n,) of MultiLineStrings of each
    certified geometry's remaining pieces (None for none); the words (``_word_sums``, (3, n))
    of the lengths set aside; bool (n,), the geometries with at least ``_CERTIFIED_SHARE`` of
    their pieces set aside (the others are left whole: nothing gained, and nothing set aside
    for them)."""
    from scipy.spatial import cKDTree

    run_length = _RUN_TOLERANCES * tol
    x0, y0, x1, y1, owner = seg_a
    bx0, by0, bx1, by1, _ = seg_b
    rest = np.full(n, None, dtype=object)
    if len(x0) == 0 or len(bx0) == 0:
        return rest, np.zeros((3, n)), np.zeros(n, dtype=bool)
    # Longer segments cut into pieces of at most the run length, so that they are certified
    # in parts too.
    x0, y0, x1, y1, parent, _ = split_segments(x0, y0, x1, y1, np.full(len(x0), run_length))
    owner = owner[parent]
    length = hypot(x1 - x0, y1 - y0)
    # Runs: consecutive pieces of one geometry, each starting where the one before ends, cut
    # where their length along the geometry's boundary passes a multiple of the run length.
    # The position along the boundary is summed in exact integer steps (of 2^-24 run
    # lengths) from the geometry's first piece: the same whatever comes before it.
    joined = np.zeros(len(x0), dtype=bool)
    joined[1:] = (x0[1:] == x1[:-1]) & (y0[1:] == y1[:-1]) & (owner[1:] == owner[:-1])
    steps = np.floor(length * (2.0**24 / run_length)).astype(np.int64)
    position = np.cumsum(steps) - steps
    first_of = np.flatnonzero(run_starts(owner))
    position -= np.repeat(position[first_of], np.diff(np.append(first_of, len(owner))))
    band = position >> 24
    joined[1:] &= band[1:] == band[:-1]
    run = np.cumsum(~joined) - 1
    first = np.flatnonzero(~joined)
    rho = np.bincount(run, weights=length)  # every point of a run is within ρ of its start
    # Points on the other boundary, at most a run length apart along it (its vertices alone
    # would leave the middle of a long segment uncertified).
    bx0, by0, bx1, by1, _, _ = split_segments(bx0, by0, bx1, by1, np.full(len(bx0), run_length))
    tree = cKDTree(np.column_stack([np.r_[bx0, bx1], np.r_[by0, by1]]))
    near, _ = tree.query(np.column_stack([x0[first], y0[first]]), k=1,
                         distance_upper_bound=tol)
    set_aside = (near + rho <= tol * (1 - 1e-12))[run]
    pieces = np.bincount(owner, minlength=n)
    certified = (np.bincount(owner, weights=set_aside, minlength=n)
                 >= _CERTIFIED_SHARE * pieces) & (pieces > 0)
    set_aside &= certified[owner]
    kept = np.flatnonzero(~set_aside & certified[owner])
    if len(kept):
        lines = shapely.linestrings(np.stack([np.column_stack([x0[kept], y0[kept]]),
                                              np.column_stack([x1[kept], y1[kept]])], axis=1))
        present, at = np.unique(owner[kept], return_inverse=True)
        rest[present] = shapely.multilinestrings(lines, indices=at)
    whole = _word_sums(owner[set_aside], length[set_aside], n)
    return rest, whole, certified


def _piece_lengths(geometries: np.ndarray, tol: float) -> np.ndarray:
    """The longest piece of each geometry's boundary (float, shape (n,)): ``_PIECE_TOLERANCES``
    tolerances, at least ``_PIECE_MIN`` (the same for every geometry: a geometry's pieces do
    not depend on the others of its batch)."""
    return np.full(len(geometries), max(_PIECE_TOLERANCES * tol, _PIECE_MIN))


def _lengths_within_exact(a: np.ndarray, b: np.ndarray, tols: np.ndarray, both: bool,
                          progress=None):
    """Boundary length of each polygon of ``a`` within each tolerance of ``tols`` (float
    array, shape (K,)) of ``b``'s boundaries and its perimeter, and when ``both`` the same for
    ``b`` against ``a``.

    The plane is cut into tiles of about ``_TILE_VERTICES`` vertices (``_tiles``). A piece of
    boundary (``_Pieces``) belongs to the tile holding its start point and is measured there
    against the pieces of the other layer near the tile. The lengths of a polygon's pieces
    are summed exactly (``_word_sums``): its numbers do not depend on the tiles.

    Returns:
        ``(within_a, perimeter_a, within_b, perimeter_b)``: float arrays, shapes (K, len(a)),
        (len(a),), (K, len(b)) and (len(b),); the ``b`` ones are zeros unless ``both``.
    """
    within_a, perimeter_a, within_b, perimeter_b = _lengths_within_words(a, b, tols, both,
                                                                         progress)
    perimeter_a, perimeter_b = _from_words(perimeter_a), _from_words(perimeter_b)
    return (np.minimum(_from_words(within_a), perimeter_a), perimeter_a,
            np.minimum(_from_words(within_b), perimeter_b), perimeter_b)


def _lengths_within_words(a: np.ndarray, b: np.ndarray, tols: np.ndarray, both: bool,
                          progress=None, skip=(None, None)):
    """``_lengths_within_exact`` as words (``_word_sums``): shapes (3, K, len(a)),
    (3, len(a)), (3, K, len(b)), (3, len(b)); the lengths within are not yet clipped to the
    perimeters. ``skip``: bool arrays (or None) of the polygons of ``a`` and ``b`` whose
    lengths within are not measured (0; their boundaries still count as the other layer's
    and their perimeters are measured)."""
    na, nb, k_tols = len(a), len(b), len(tols)
    tol = float(np.max(tols))  # pieces, margins and searches reach the largest tolerance
    within_a, perimeter_a = np.zeros((3, k_tols, na)), np.zeros((3, na))
    within_b, perimeter_b = np.zeros((3, k_tols, nb)), np.zeros((3, nb))
    with np.errstate(invalid="ignore"):
        box_a, box_b = shapely.bounds(a), shapely.bounds(b)  # NaN for missing or empty
        ok_a, ok_b = np.isfinite(box_a).all(axis=1), np.isfinite(box_b).all(axis=1)
    if not (ok_a.any() or (both and ok_b.any())):
        return within_a, perimeter_a, within_b, perimeter_b
    # Tiles over the polygons measured (one-way: those of ``a`` alone).
    measured_b = ok_b if both else np.zeros(nb, dtype=bool)
    boxes = np.concatenate([box_a[ok_a], box_b[measured_b]])
    vertices = np.concatenate([shapely.get_num_coordinates(a[ok_a]),
                               shapely.get_num_coordinates(b[measured_b])]).astype(float)
    if len(boxes) == 0:
        return within_a, perimeter_a, within_b, perimeter_b
    piece_a, piece_b = _piece_lengths(a, tol), _piece_lengths(b, tol)
    slack = _SLACK * max(float(np.abs(boxes).max()), 1.0)
    tiles = _tiles(0.5 * (boxes[:, :2] + boxes[:, 2:]), vertices, _TILE_VERTICES)

    margins = {}

    def near_tile(box, ok, tile, margin=None):
        if margin is None:
            if tile not in margins:
                margins[tile] = tile_margin(tile)
            margin = margins[tile]
        x0, y0, x1, y1 = tile
        return np.flatnonzero(ok & (box[:, 0] <= x1 + margin) & (box[:, 2] >= x0 - margin)
                              & (box[:, 1] <= y1 + margin) & (box[:, 3] >= y0 - margin))

    def tile_margin(tile):
        # The tile's pieces start in it (on boundaries whose box meets it) and are at most
        # their polygon's piece long; what is within ``tol`` of them is within the margin of
        # the tile (with slack for rounding).
        own = [piece_a[near_tile(box_a, ok_a, tile, slack)]]
        if both:
            own.append(piece_b[near_tile(box_b, ok_b, tile, slack)])
        longest = max(float(p.max(initial=0.0)) for p in own)
        return (longest + tol) * (1 + _SLACK) + slack

    def run(tile):
        margin = margins[tile] if tile in margins else tile_margin(tile)
        ia, ib = near_tile(box_a, ok_a, tile, margin), near_tile(box_b, ok_b, tile, margin)
        skipped = tuple(None if k is None else k[i] for k, i in zip(skip, (ia, ib)))
        return ia, ib, _tile_lengths(a[ia], b[ib], tile, tols, (piece_a[ia], piece_b[ib]),
                                     margin, both, skipped)

    _check_tile_memory(a, b, tiles, near_tile, box_a, ok_a, box_b, ok_b, k_tols)
    for ia, ib, (wa, pa, wb, pb) in run_chunks(run, tiles, progress):
        within_a[:, :, ia] += wa
        perimeter_a[:, ia] += pa
        within_b[:, :, ib] += wb
        perimeter_b[:, ib] += pb
    for words in (within_a, perimeter_a, within_b, perimeter_b):
        _carried(words)
    return within_a, perimeter_a, within_b, perimeter_b


def _check_tile_memory(a, b, tiles, near_tile, box_a, ok_a, box_b, ok_b, k_tols: int) -> None:
    """Raise ``InsufficientMemoryError`` before any work when the largest tiles that run
    together would need more memory than is available (a tile holds whole polygons, so one
    huge polygon makes a huge tile), naming the largest polygons of the largest tile.
    ``k_tols``: the number of tolerances measured at once (each beyond the first keeps its
    own intervals per tile)."""
    sizes = []
    for tile in tiles:
        ia, ib = near_tile(box_a, ok_a, tile), near_tile(box_b, ok_b, tile)
        va, vb = shapely.get_num_coordinates(a[ia]), shapely.get_num_coordinates(b[ib])
        sizes.append((int(va.sum() + vb.sum()), ia[np.argsort(va)[::-1][:3]],
                      ib[np.argsort(vb)[::-1][:3]]))
    sizes.sort(key=lambda item: item[0])
    largest = sizes[-WORKERS:]
    per_vertex = _BYTES_PER_VERTEX + (k_tols - 1) * _BYTES_PER_VERTEX_PER_EXTRA_TOLERANCE
    needed = sum(per_vertex * size
                 + min(_WORKING_BYTES, _WORKING_BYTES_PER_VERTEX * size)
                 for size, _, _ in largest)

    def what():
        size, ia, ib = largest[-1]
        vertices = count_of(size, "vertex", "vertices", thousands=True)
        return (f"the polygons near one tile ({vertices}; largest: first layer "
                f"positions {', '.join(map(str, ia.tolist()))}, second layer positions "
                f"{', '.join(map(str, ib.tolist()))})")

    check_memory("boundary lengths within the tolerance", needed, what)


def _tiles(centres: np.ndarray, weights: np.ndarray, budget: float) -> list[tuple]:
    """Rectangles ``(x0, y0, x1, y1)`` (half-open, the outer ones unbounded) that cut the
    plane into tiles of about ``budget`` weight each: strips at weighted quantiles of the
    centres' x, each strip cut at weighted quantiles of its centres' y."""
    k = max(1, math.ceil(float(weights.sum()) / budget))
    kx = math.ceil(math.sqrt(k))
    ky = math.ceil(k / kx)
    xs = [-np.inf, *_cuts(centres[:, 0], weights, kx), np.inf]
    tiles = []
    for left, right in zip(xs[:-1], xs[1:]):
        inside = (centres[:, 0] >= left) & (centres[:, 0] < right)
        ys = [-np.inf, *_cuts(centres[inside, 1], weights[inside], ky), np.inf]
        tiles += [(left, bottom, right, top) for bottom, top in zip(ys[:-1], ys[1:])]
    return tiles


def _cuts(values: np.ndarray, weights: np.ndarray, k: int) -> list[float]:
    """At most k - 1 increasing values that cut ``values`` into k parts of about equal
    weight."""
    if k <= 1 or len(values) == 0:
        return []
    order = np.argsort(values, kind="stable")
    total = np.cumsum(weights[order])
    at = np.searchsorted(total, total[-1] * np.arange(1, k) / k)
    return [float(v) for v in np.unique(values[order][np.minimum(at, len(values) - 1)])]


def _inside(x: np.ndarray, y: np.ndarray, tile) -> np.ndarray:
    x0, y0, x1, y1 = tile
    return (x >= x0) & (x < x1) & (y >= y0) & (y < y1)


def _segments(geometries: np.ndarray):
    """Straight segments of the boundaries (exterior and interior rings) of polygonal
    geometries, or of curves, as ``segments.boundary_segments`` finds them: geometries with
    a non-finite coordinate have none, repeated vertices make none.

    Returns:
        ``(x0, y0, x1, y1, owner)``: float arrays and an int array (position of the geometry),
        shape (n_segments,).
    """
    curves, curve_owner = boundary_curves(geometries)
    coords, curve = shapely.get_coordinates(curves, return_index=True)
    x, y = coords[:, 0], coords[:, 1]
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.all():
        bad = np.zeros(len(geometries), dtype=bool)
        bad[curve_owner[curve[~finite]]] = True
        keep = ~bad[curve_owner[curve]]
        x, y, curve = x[keep], y[keep], curve[keep]
    seg = np.flatnonzero((curve[1:] == curve[:-1]) & ((x[1:] != x[:-1]) | (y[1:] != y[:-1])))
    return x[seg], y[seg], x[seg + 1], y[seg + 1], curve_owner[curve[seg]]


class _Pieces:
    """The pieces of a tile's segments that matter to the tile.

    Each segment is cut into m equal pieces no longer than its polygon's piece length
    (``_piece_lengths``). A piece belongs to the tile holding its start point (computed from
    the source coordinates, so the same in every tile: each piece belongs to exactly one
    tile). The pieces kept are the tile's own and, if not ``own_only``, those whose box comes
    within ``margin`` of the tile. Pieces of the polygons ``skip`` (bool per polygon, or None)
    are never the tile's own.

    Attributes (arrays over the kept pieces): ``px, py`` start and ``ex, ey`` end in the frame
    of its segment (``_FRAME``: the same numbers whatever the tile), ``fx, fy`` that frame's
    offset from the tile's ``origin`` (exact multiples of ``_FRAME``), ``ux, uy`` unit
    direction, ``length``, ``xlo, ylo, xhi, yhi`` box from the tile's origin (for the grid and
    the box filters), ``owner`` geometry, ``own`` whether the piece belongs to the tile.
    """

    _FIELDS = ("own", "px", "py", "ex", "ey", "fx", "fy", "ux", "uy", "length", "xlo", "xhi",
               "ylo", "yhi", "owner")

    def __init__(self, segments, tile, piece, margin: float, origin, own_only: bool,
                 skip=None):
        x0, y0, x1, y1, owner = segments
        dx, dy = x1 - x0, y1 - y0
        seg_len = hypot(dx, dy)
        # Segments shorter than rounding (the square of their length underflows) have no
        # direction; their ends are those of their neighbours, whose capsules cover them.
        if not np.all(seg_len > 0):
            long = np.flatnonzero(seg_len > 0)
            x0, y0, x1, y1, dx, dy, seg_len, owner = (
                v[long] for v in (x0, y0, x1, y1, dx, dy, seg_len, owner)
            )
        m = np.maximum(1, np.ceil(seg_len / piece[owner])).astype(np.int64)
        parent = np.repeat(np.arange(len(m)), m)
        sub = ranges(np.zeros(len(m), dtype=np.int64), m)
        f0 = sub / m[parent]
        f1 = (sub + 1) / m[parent]
        own = _inside(x0[parent] + f0 * dx[parent], y0[parent] + f0 * dy[parent], tile)
        if skip is not None:  # not measured: the other layer's boundaries only
            own &= ~skip[owner[parent]]
        # Each segment in the frame of its lattice point (exact differences: the point is a
        # multiple of _FRAME within _FRAME of the start, towards 0).
        frame_x, frame_y = np.trunc(x0 / _FRAME) * _FRAME, np.trunc(y0 / _FRAME) * _FRAME
        ox, oy = origin
        sx, sy = (x0 - frame_x)[parent], (y0 - frame_y)[parent]
        fx, fy = (frame_x - ox)[parent], (frame_y - oy)[parent]
        dx, dy = dx[parent], dy[parent]
        px, py = sx + f0 * dx, sy + f0 * dy
        # Vertices stay exact (the first piece starts at one, the last ends at one): where
        # the other layer's boundary passes at exactly the tolerance from a vertex, as with
        # coordinates in decimals, the discs' chords are sqrt(rounding) long.
        last = sub + 1 == m[parent]
        ex = np.where(last, (x1 - frame_x)[parent], sx + f1 * dx)
        ey = np.where(last, (y1 - frame_y)[parent], sy + f1 * dy)
        xlo, xhi = np.minimum(px, ex) + fx, np.maximum(px, ex) + fx
        ylo, yhi = np.minimum(py, ey) + fy, np.maximum(py, ey) + fy
        if own_only:
            keep = np.flatnonzero(own)
        else:
            left, bottom, right, top = tile
            keep = np.flatnonzero(own | (
                (xlo <= right - ox + margin) & (xhi >= left - ox - margin)
                & (ylo <= top - oy + margin) & (yhi >= bottom - oy - margin)
            ))
        parent = parent[keep]
        self.own, self.px, self.py, self.ex, self.ey, self.fx, self.fy = (
            own[keep], px[keep], py[keep], ex[keep], ey[keep], fx[keep], fy[keep]
        )
        self.ux, self.uy = dx[keep] / seg_len[parent], dy[keep] / seg_len[parent]
        self.length = (seg_len / m)[parent]
        self.xlo, self.xhi, self.ylo, self.yhi = xlo[keep], xhi[keep], ylo[keep], yhi[keep]
        self.owner = owner[parent]
        self.n = len(keep)

    def take(self, order: np.ndarray) -> None:
        """Reorder every attribute."""
        for name in self._FIELDS:
            setattr(self, name, getattr(self, name)[order])


def _tile_lengths(a, b, tile, tols, piece, margin: float, both: bool, skip=(None, None)):
    """Lengths within each of ``tols`` (shape (K,)) of the boundary pieces that belong to
    ``tile``, summed per polygon of ``a`` (and of ``b`` when ``both``), and the perimeters of
    the segments that start in it, as words (``_word_sums``): ``(within_a, perimeter_a,
    within_b, perimeter_b)``, shapes (3, K, len(a)), (3, len(a)), (3, K, len(b)),
    (3, len(b)). ``a`` and ``b`` are the polygons near the tile; ``piece``: the piece length
    of each polygon of ``a`` and of ``b`` (``_piece_lengths``); ``skip``: see
    ``_lengths_within_words``."""
    na, nb, k_tols = len(a), len(b), len(tols)
    wa, wb, pb = np.zeros((3, k_tols, na)), np.zeros((3, k_tols, nb)), np.zeros((3, nb))
    seg_a, seg_b = _segments(a), _segments(b)
    pa = _own_lengths(seg_a, tile, na)
    if both:
        pb = _own_lengths(seg_b, tile, nb)
    if len(seg_a[0]) == 0 or len(seg_b[0]) == 0:
        return wa, pa, wb, pb
    # The box coordinates from a lattice point below the segments (exact offsets).
    origin = tuple(np.floor(min(sa.min(), ea.min(), sb.min(), eb.min()) / _FRAME) * _FRAME
                   for sa, ea, sb, eb in ((seg_a[0], seg_a[2], seg_b[0], seg_b[2]),
                                          (seg_a[1], seg_a[3], seg_b[1], seg_b[3])))
    piece_a, piece_b = piece
    A = _Pieces(seg_a, tile, piece_a, margin, origin, own_only=not both, skip=skip[0])
    B = _Pieces(seg_b, tile, piece_b, margin, origin, own_only=False, skip=skip[1])
    if not both:
        B.own[:] = False
    if A.n == 0 or B.n == 0 or not (A.own.any() or B.own.any()):
        return wa, pa, wb, pb
    covered_a, covered_b = _covered(A, B, tols, float(B.length.mean()))
    for k in range(k_tols):
        wa[:, k] = _word_sums(A.owner[A.own], covered_a[k][A.own], na)
        if both:
            wb[:, k] = _word_sums(B.owner[B.own], covered_b[k][B.own], nb)
    return wa, pa, wb, pb


def _own_lengths(segments, tile, n: int) -> np.ndarray:
    """Length of the segments that start in ``tile`` (their first piece is the tile's),
    summed per geometry as words (``_word_sums``), shape (3, n)."""
    x0, y0, x1, y1, owner = segments
    own = _inside(x0, y0, tile)
    return _word_sums(owner[own], hypot(x1 - x0, y1 - y0)[own], n)


def _word_sums(owner: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The sums per owner (0..n-1) of ``values`` (float, >= 0) as exact integer words: a float
    array of shape (3, n) to add to others as it is and to read with ``_from_words``. The
    sums do not depend on the order of the values (``_WORD_BITS``)."""
    out = np.zeros((3, n))
    if len(values) == 0:
        return out
    scaled = values * _WORD_FIRST
    for k in range(3):
        word = np.floor(scaled)
        out[k] = np.bincount(owner, weights=word, minlength=n)
        scaled -= word
        scaled *= 2.0**_WORD_BITS
    return _carried(out)


def _carried(words: np.ndarray) -> np.ndarray:
    """Words (shape (3, ...)) with the lower two brought below 2^_WORD_BITS, in place: the
    same sum, and room for adding many more."""
    base = 2.0**_WORD_BITS
    for k in (2, 1):
        carry = np.floor(words[k] / base)
        words[k] -= carry * base
        words[k - 1] += carry
    return words


def _from_words(words: np.ndarray) -> np.ndarray:
    """The sums that words (``_word_sums``, shape (3, ...)) hold, rounded once."""
    words = _carried(words.copy())
    first = 1.0 / _WORD_FIRST
    return (words[0] * first + words[1] * (first / 2.0**_WORD_BITS)) + words[2] * (
        first / 2.0**(2 * _WORD_BITS))


# ---------------------------------------------------------------------------
# Pairs of pieces and their capsule intervals
# ---------------------------------------------------------------------------


def _covered(A: _Pieces, B: _Pieces, tols, piece: float):
    """Length of each piece of A within each of ``tols`` (shape (K,)) of B's pieces, and of
    each piece of B within it of A's (computed for the pieces that belong to the tile, 0 for
    the others): arrays of shapes (K, A.n) and (K, B.n). ``piece``: a typical piece length
    (the grid's cells are at least half of it).

    B is filed in a grid and the pieces of A query it (both are reordered by cell, in place);
    each pair whose boxes come within ``tol`` of each other is solved both ways
    (``_pair_block``), at each tolerance; the search reaches the largest.
    """
    tol = float(np.max(tols))
    # Whether the pieces' frames differ (``_pair_block`` then adds their offsets).
    A.shifted = bool(np.ptp(np.r_[A.fx, B.fx]) > 0 or np.ptp(np.r_[A.fy, B.fy]) > 0)
    gx, gy = min(A.xlo.min(), B.xlo.min()), min(A.ylo.min(), B.ylo.min())
    width = max(A.xhi.max(), B.xhi.max()) - gx
    height = max(A.yhi.max(), B.yhi.max()) - gy
    # (w/c + 1)(h/c + 1) cells: at most twice _MAX_TILE_CELLS, plus one.
    cell = max(_CELL_TOLERANCES * tol, 0.5 * piece,
               math.sqrt(width * height / _MAX_TILE_CELLS), (width + height) / _MAX_TILE_CELLS)
    ncol, nrow = int(width / cell) + 1, int(height / cell) + 1
    # B under the cell of its box's lower-left corner, in cell order.
    key = _cell(B.ylo, gy, cell, nrow) * ncol + _cell(B.xlo, gx, cell, ncol)
    B.take(_counting_order(key, ncol * nrow))
    cell_start = np.r_[0, np.cumsum(np.bincount(key, minlength=ncol * nrow))]
    # A in cell order too: neighbouring queries read neighbouring pieces of B.
    A.take(_counting_order(_cell(A.ylo, gy, cell, nrow) * ncol + _cell(A.xlo, gx, cell, ncol),
                           ncol * nrow))
    # A piece of B whose box meets a query box has its lower-left corner at most its own
    # width left of the box and its height below; the slack covers rounding.
    reach = tol + _SLACK * max(width, height, 1.0)
    wide = float((B.xhi - B.xlo).max()) + reach
    tall = float((B.yhi - B.ylo).max()) + reach
    k_tols = len(tols)
    full_a, full_b = np.zeros((k_tols, A.n), dtype=bool), np.zeros((k_tols, B.n), dtype=bool)
    parts_a, parts_b = [[] for _ in range(k_tols)], [[] for _ in range(k_tols)]
    for start in range(0, A.n, _QUERY_CHUNK):
        q = np.arange(start, min(start + _QUERY_CHUNK, A.n))
        ix_lo = _cell(A.xlo[q] - wide, gx, cell, ncol)
        ix_hi = _cell(A.xhi[q] + reach, gx, cell, ncol)
        iy_lo = _cell(A.ylo[q] - tall, gy, cell, nrow)
        n_rows = _cell(A.yhi[q] + reach, gy, cell, nrow) - iy_lo + 1
        q_row = np.repeat(q - start, n_rows)
        base = ranges(iy_lo, n_rows) * ncol
        all_first = cell_start[base + ix_lo[q_row]]
        all_count = cell_start[base + ix_hi[q_row] + 1] - all_first
        # Candidates counted before they are gathered: the memory of a query chunk stays
        # bounded however many pieces a cell holds.
        for lo, hi in budget_splits(all_count, _CANDIDATE_BUDGET):
            rows = slice(lo, hi)
            first, count = all_first[rows], all_count[rows]
            qi = np.repeat(q_row[rows] + start, count)
            bj = ranges(first, count)
            _candidate_pairs(A, B, qi, bj, reach, tols, full_a, full_b, parts_a, parts_b)
    return (np.array([_union(parts_a[t], full_a[t], A.length) for t in range(k_tols)]),
            np.array([_union(parts_b[t], full_b[t], B.length) for t in range(k_tols)]))


def _candidate_pairs(A, B, qi, bj, reach, tols, full_a, full_b, parts_a, parts_b):
    """The candidate pairs (qi, bj) whose boxes come within ``reach`` of each other, solved
    in blocks (``_pair_block``) at each tolerance of ``tols`` (per-tolerance rows of
    ``full_a``, ``full_b``, ``parts_a``, ``parts_b``)."""
    # The boxes within the tolerance of each other (x first: cells are wide).
    # (np.compress: much faster than boolean indexing.)
    ok = B.xlo[bj] <= A.xhi[qi] + reach
    qi, bj = np.compress(ok, qi), np.compress(ok, bj)
    ok = B.xhi[bj] >= A.xlo[qi] - reach
    qi, bj = np.compress(ok, qi), np.compress(ok, bj)
    ok = ((B.ylo[bj] <= A.yhi[qi] + reach) & (B.yhi[bj] >= A.ylo[qi] - reach)
          & (A.own[qi] | B.own[bj]))
    qi, bj = np.compress(ok, qi), np.compress(ok, bj)
    for k in range(0, len(qi), _BLOCK):
        for t, r in enumerate(tols):
            r = float(r)
            _pair_block(A, B, qi[k : k + _BLOCK], bj[k : k + _BLOCK], r, r * r,
                        full_a[t], full_b[t], parts_a[t], parts_b[t])


def _cell(v: np.ndarray, origin: float, cell: float, n: int) -> np.ndarray:
    """Cell index, 0..n-1, of coordinates ``v`` along one axis."""
    return np.minimum(np.maximum((v - origin) / cell, 0.0), n - 1).astype(np.int64)


def _counting_order(key: np.ndarray, n_keys: int) -> np.ndarray:
    """A permutation sorting ``key`` (ints in 0..n_keys-1, n_keys <= 2**32): stable sorts
    on its two 16-bit digits, which numpy does by radix sort, in linear time."""
    low = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
    if n_keys <= 1 << 16:
        return low
    return low[np.argsort((key[low] >> 16).astype(np.uint16), kind="stable")]


def _near(t, e, seg_len, r2) -> np.ndarray:
    """Whether the point at (t, e) in a segment's frame (along from its start, across) is
    within sqrt(r2) of the segment, of length ``seg_len``."""
    over = t - np.minimum(np.maximum(t, 0.0), seg_len)
    return over * over + e * e <= r2


def _pair_block(A, B, a, b, tol, r2, full_a, full_b, parts_a, parts_b) -> None:
    """Both intervals of each candidate pair (piece a of A, piece b of B): the part of a in
    b's capsule (when a belongs to the tile) and of b in a's capsule (when b does).

    With x(s) = p + s u along a (0 <= s <= length_a) and y(t) = q + t w along b, ``tau`` and
    ``eta`` are the positions of a's end points along and across b, ``sig`` and ``zet`` those
    of b's end points along and across a. A piece whose two end points are in the other's
    capsule is wholly in it (the capsule is convex): it is flagged in ``full_a`` / ``full_b``
    and needs no more intervals. Otherwise the interval (``_capsule``: the other's end points
    are the centres of its discs) goes to ``parts_a`` / ``parts_b`` as (piece, start, stop).
    """
    px, py, ux, uy, la = A.px[a], A.py[a], A.ux[a], A.uy[a], A.length[a]
    qx, qy, wx, wy, lb = B.px[b], B.py[b], B.ux[b], B.uy[b], B.length[b]
    alpha = ux * wx + uy * wy  # u along w
    beta = wx * uy - wy * ux  # u across w
    # Each end point from its own coordinates (not start + length u): exact differences
    # where the coordinates allow it (see _Pieces).
    # Pieces in different frames (``_Pieces``): the frames' offset, exact, added to each
    # difference; in one frame it is 0 and left out.
    shift_x = shift_y = 0.0
    if A.shifted:
        shift_x, shift_y = A.fx[a] - B.fx[b], A.fy[a] - B.fy[b]
    dx, dy = (px - qx) + shift_x, (py - qy) + shift_y
    tau0, eta0 = dx * wx + dy * wy, wx * dy - wy * dx
    sig0, zet0 = -(dx * ux + dy * uy), uy * dx - ux * dy
    dx, dy = (A.ex[a] - qx) + shift_x, (A.ey[a] - qy) + shift_y
    tau1, eta1 = dx * wx + dy * wy, wx * dy - wy * dx
    dx, dy = (px - B.ex[b]) + shift_x, (py - B.ey[b]) + shift_y
    sig1, zet1 = -(dx * ux + dy * uy), uy * dx - ux * dy
    own = A.own[a]
    whole = own & _near(tau0, eta0, lb, r2) & _near(tau1, eta1, lb, r2)
    full_a[np.compress(whole, a)] = True
    rest = np.flatnonzero(own & ~full_a[a])
    if len(rest):
        keep, start, stop = _capsule(
            la[rest], lb[rest], tau0[rest], eta0[rest], alpha[rest], beta[rest],
            sig0[rest], zet0[rest], sig1[rest], zet1[rest], tol, r2,
        )
        parts_a.append((a[rest[keep]], start, stop))
    own = B.own[b]
    if not own.any():
        return
    whole = own & _near(sig0, zet0, la, r2) & _near(sig1, zet1, la, r2)
    full_b[np.compress(whole, b)] = True
    rest = np.flatnonzero(own & ~full_b[b])
    if len(rest):
        keep, start, stop = _capsule(
            lb[rest], la[rest], sig0[rest], zet0[rest], alpha[rest], -beta[rest],
            tau0[rest], eta0[rest], tau1[rest], eta1[rest], tol, r2,
        )
        parts_b.append((b[rest[keep]], start, stop))


def _capsule(length, seg_len, t0, e0, alpha, beta, c0, h0, c1, h1, r, r2):
    """The part of a piece inside a segment's capsule of radius r.

    The piece is x(s), 0 <= s <= ``length``; in the segment's frame x(s) is at t0 + alpha s
    along it (0 at its start, ``seg_len`` at its end) and e0 + beta s across it. The
    segment's end points are at c0 and c1 along the piece's line, h0 and h1 across it. The
    capsule is convex, so it cuts the line in one interval: the hull of the cuts of its
    rectangle and of its two discs.

    Returns:
        ``(rows, start, stop)``: the rows whose part is not empty, and its ends.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        along = 1.0 / alpha
        across = 1.0 / beta
        s1 = -t0 * along
        s2 = (seg_len - t0) * along
        s3 = (-r - e0) * across
        s4 = (r - e0) * across
    # A line parallel to a side of the rectangle is inside its strip everywhere or nowhere
    # (slopes below _FLAT count as 0: their reciprocal may overflow, and 0 * inf is NaN).
    flat = np.flatnonzero(np.abs(alpha) < _FLAT)
    if len(flat):
        t = t0[flat]
        s1[flat] = np.where((t >= 0) & (t <= seg_len[flat]), -np.inf, np.inf)
        s2[flat] = np.inf
    flat = np.flatnonzero(np.abs(beta) < _FLAT)
    if len(flat):
        e = e0[flat]
        s3[flat] = np.where((e >= -r) & (e <= r), -np.inf, np.inf)
        s4[flat] = np.inf
    start = np.maximum(np.minimum(s1, s2), np.minimum(s3, s4))
    stop = np.minimum(np.maximum(s1, s2), np.maximum(s3, s4))
    empty = start >= stop
    np.putmask(start, empty, np.inf)
    np.putmask(stop, empty, -np.inf)
    with np.errstate(invalid="ignore"):
        for c, h in ((c0, h0), (c1, h1)):
            half = np.sqrt(r2 - h * h)  # NaN where the disc misses the line: fmin/fmax skip it
            start = np.fmin(start, c - half)
            stop = np.fmax(stop, c + half)
    start = np.minimum(np.maximum(start, 0.0), length)
    stop = np.minimum(np.maximum(stop, 0.0), length)
    rows = np.flatnonzero(stop > start)
    return rows, start[rows], stop[rows]


def _union(parts: list, full: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Length of the union of each piece's intervals (``parts``: (piece, start, stop)
    arrays, the intervals within [0, length[piece]]); the whole length for ``full`` pieces.
    The result does not depend on the order of the intervals (``_union_length``)."""
    n = len(length)
    out = np.zeros(n)
    if parts:
        piece, start, stop = (np.concatenate([p[k] for p in parts]) for k in range(3))
        keep = np.flatnonzero(~full[piece])
        piece, start, stop = piece[keep], start[keep], stop[keep]
        alone = np.bincount(piece, minlength=n)[piece] == 1
        out[piece[alone]] = (stop - start)[alone]
        several = np.flatnonzero(~alone)
        if len(several):
            out += _union_length(piece[several], start[several], stop[several], length)
    out[full] = length[full]
    return out


def _union_length(group, start, stop, span) -> np.ndarray:
    """Length of the union of the intervals [start, stop] (start < stop) of each group,
    shape (len(span),), the intervals within [0, span[group]]: the sum, over the runs of overlapping intervals in order of their start, of
    the run's furthest stop less its first start. Sorted exactly by group and start, so the
    runs and the sums are those of the intervals whatever their order (intervals with equal
    starts always fall in one run)."""
    # By group, then start: first by a key that keeps groups apart (fractions below 1/2),
    # which orders starts closer than its resolution either way; exactly when it did not
    # order them.
    order = np.argsort(group + 0.5 * (start / span[group]))
    sorted_start = start[order]
    same = group[order][1:] == group[order][:-1]
    if np.any(same & (sorted_start[1:] < sorted_start[:-1])):
        order = np.lexsort((start, group))
    group, start, stop = group[order], start[order], stop[order]
    first = run_starts(group)
    head = np.maximum.accumulate(np.where(first, np.arange(len(group)), 0))
    # The furthest stop up to each interval in its group: a running maximum restarted at
    # each group, by doubling, over the intervals that still have predecessors to look at.
    reach = stop.copy()
    active = np.flatnonzero(~first)
    step = 1
    while len(active):
        reach[active] = np.maximum(reach[active], reach[active - step])
        step *= 2
        active = active[active - step >= head[active]]
    # A run starts with a group, and where an interval starts beyond every stop before it.
    new = first.copy()
    new[1:] |= start[1:] > reach[:-1]
    begin = np.flatnonzero(new)
    end = np.append(begin[1:], len(group)) - 1
    return np.bincount(group[begin], weights=reach[end] - start[begin], minlength=len(span))
