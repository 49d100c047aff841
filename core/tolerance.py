"""Boundary length within a tolerance: the length of each polygon's boundary within a
distance of the other layer's boundaries, measured in the WGS 84 / UTM zone of each polygon.

Exact up to rounding (the agribound seed: "the length of one layer's boundary inside the union
of circular-arc buffers of the other layer's boundaries, without polygonal buffer
approximation"); see ``boundary_within_tolerance``.
"""

from __future__ import annotations

import numpy as np
import pyproj
import shapely

from .boundary import ZonedLayer, _TINY, _check_same_space, _utm_crs
from .checks import check_positive
from .parallel import run_chunks
from .segments import (
    SegmentGrid,
    boundary_segments,
    frame_capsule,
    hypot,
    segment_frame,
    split_segments,
    union_length,
)

#: A grid has at most this many cells along an axis (keys stay well inside int64).
_MAX_CELLS_PER_AXIS = 1 << 24

#: Query pieces of the tolerance computation are processed this many at a time.
_TOLERANCE_CHUNK = 100_000


def tolerance_lengths_in_utm(
    layer: ZonedLayer, other: ZonedLayer, tolerance_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Boundary length of each polygon of ``layer`` within ``tolerance_m`` of ``other``'s
    boundaries, and its perimeter, each polygon measured in its own UTM zone.

    For the polygons of one zone, the polygons of ``other`` that can be near them are
    transformed into that zone (those already in it are reused).

    Args:
        layer: the polygons measured (reference for boundary recall, predicted for precision).
        other: the other layer.
        tolerance_m: the tolerance in metres, > 0.

    Returns:
        ``(within_m, perimeter_m)``: float arrays, shape (layer.n,), 0 for rows without a
        boundary (missing, empty, non-finite, no zone).

    Raises:
        ValueError: bad ``tolerance_m``, one layer planar and the other not.

    Source: agribound seed, boundary_recall / boundary_precision.
    """
    tol = check_positive(tolerance_m, "tolerance_m")
    _check_same_space(layer, other)
    within = np.zeros(layer.n)
    perimeter = np.zeros(layer.n)
    if layer.n == 0:
        return within, perimeter
    if layer.crs is None:
        return boundary_within_tolerance(layer.local, other.local, tol)
    other_boxes = _source_box_outlines(other) if other.n else None
    for code in np.unique(layer.epsg):
        if code == 0:
            continue
        sel = np.flatnonzero(layer.epsg == code)
        geoms = layer.local[sel]
        near = _near_in_zone(geoms, other, int(code), other_boxes, tol)
        within[sel], perimeter[sel] = boundary_within_tolerance(
            geoms, other.in_zone(near, int(code)), tol
        )
    return within, perimeter


def _source_box_outlines(layer: ZonedLayer, per_side: int = 16) -> np.ndarray:
    """Outline points of each geometry's bounding box in its source CRS, shape (n, 4k, 2)."""
    bounds = shapely.bounds(layer.source)  # NaN for missing geometries
    t = np.arange(per_side) / per_side
    x0, y0, x1, y1 = (bounds[:, k : k + 1] for k in range(4))
    xs = np.concatenate([x0 + (x1 - x0) * t, np.broadcast_to(x1, (len(x0), per_side)),
                         x1 - (x1 - x0) * t, np.broadcast_to(x0, (len(x0), per_side))], axis=1)
    ys = np.concatenate([np.broadcast_to(y0, (len(y0), per_side)), y0 + (y1 - y0) * t,
                         np.broadcast_to(y1, (len(y0), per_side)), y1 - (y1 - y0) * t], axis=1)
    return np.stack([xs, ys], axis=-1)


def _near_in_zone(
    geoms: np.ndarray, other: ZonedLayer, epsg: int, outlines: np.ndarray, tol: float
) -> np.ndarray:
    """Positions in ``other`` of the polygons whose zone-``epsg`` box comes within ``tol``
    (plus a margin) of the box of all ``geoms``.

    A polygon's box in the zone is the box of its source box's outline (16 points a side)
    transformed to the zone, grown by 1 % and 1 m for the curvature of the outline's image.
    A coarse filter only: the exact test is the segment-level one.
    """
    if other.n == 0:
        return np.zeros(0, dtype=np.int64)
    bounds = shapely.bounds(geoms)
    ok = np.isfinite(bounds).all(axis=1)
    if not ok.any():
        return np.zeros(0, dtype=np.int64)
    lo = bounds[ok, :2].min(axis=0) - tol
    hi = bounds[ok, 2:].max(axis=0) + tol
    box = np.full((other.n, 4), np.nan)
    same = other.epsg == epsg
    local_bounds = shapely.bounds(other.local[same])
    box[same] = local_bounds
    rest = np.flatnonzero(~same & np.isfinite(outlines).all(axis=(1, 2)))
    if len(rest):
        pts = outlines[rest].reshape(-1, 2)
        transformer = pyproj.Transformer.from_crs(other.crs, _utm_crs(epsg), always_xy=True)
        x, y = transformer.transform(pts[:, 0], pts[:, 1], errcheck=False)
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
    with np.errstate(invalid="ignore"):
        hit = (box[:, 0] <= hi[0]) & (box[:, 2] >= lo[0]) & (box[:, 1] <= hi[1]) & (
            box[:, 3] >= lo[1]
        )
    return np.flatnonzero(hit)



def boundary_within_tolerance(
    polygons, others, tolerance_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Length of each polygon's boundary within ``tolerance_m`` of any boundary of ``others``.

    Exact up to rounding: the boundary is split into straight segments; the part of a segment
    within the tolerance of a segment of ``others`` is its intersection with that segment's
    capsule (a rectangle capped by two half-discs, convex, so one interval, solved in closed
    form), and the intervals of each segment are united. No polygonal buffer is built.

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

    Source: agribound seed, boundary_recall / boundary_precision ("the length of one layer's
    boundary inside the union of circular-arc buffers of the other layer's boundaries").
    """
    tol = check_positive(tolerance_m, "tolerance_m")
    polys = np.asarray(polygons, dtype=object).reshape(-1)
    oth = np.asarray(others, dtype=object).reshape(-1)
    n = len(polys)
    seg_a = boundary_segments(polys)
    perimeter = np.bincount(seg_a.owner, weights=seg_a.length, minlength=n)
    within = np.zeros(n)
    seg_b = boundary_segments(oth)
    if seg_a.n == 0 or seg_b.n == 0:
        return within, perimeter
    # Only the segments of others near the box of all polygons matter; coordinates are
    # taken from that box's lower-left corner.
    lo_x = min(seg_a.x0.min(), seg_a.x1.min()) - tol
    lo_y = min(seg_a.y0.min(), seg_a.y1.min()) - tol
    hi_x = max(seg_a.x0.max(), seg_a.x1.max()) + tol
    hi_y = max(seg_a.y0.max(), seg_a.y1.max()) + tol
    b = seg_b
    near = (
        (np.minimum(b.x0, b.x1) <= hi_x) & (np.maximum(b.x0, b.x1) >= lo_x)
        & (np.minimum(b.y0, b.y1) <= hi_y) & (np.maximum(b.y0, b.y1) >= lo_y)
    )
    if not near.any():
        return within, perimeter
    bx0, by0, bx1, by1 = b.x0[near] - lo_x, b.y0[near] - lo_y, b.x1[near] - lo_x, b.y1[near] - lo_y
    extent = np.array([[hi_x - lo_x, hi_y - lo_y]])
    b_len = hypot(bx1 - bx0, by1 - by0)
    long_enough = b_len > _TINY * extent.max()  # shorter ones are covered by their neighbours
    bx0, by0, bx1, by1, b_len = (v[long_enough] for v in (bx0, by0, bx1, by1, b_len))
    if len(bx0) == 0:
        return within, perimeter
    cell = max(2.0 * tol, float(np.mean(b_len)), float(extent.max()) / _MAX_CELLS_PER_AXIS)
    grid = SegmentGrid(bx0, by0, bx1, by1, np.zeros(len(bx0), np.int64), np.array([cell]),
                       np.zeros((1, 2)), extent)
    qx0, qy0, qx1, qy1, parent, _ = split_segments(
        seg_a.x0 - lo_x, seg_a.y0 - lo_y, seg_a.x1 - lo_x, seg_a.y1 - lo_y, np.full(seg_a.n, cell)
    )
    # Query in cell order, for local memory access in the grid; pieces of no length cover none.
    order = np.argsort(grid.cell_key(qx0, qy0, np.zeros(len(qx0), np.int64)), kind="stable")
    order = order[hypot(qx1 - qx0, qy1 - qy0)[order] > 0]
    qx0, qy0, qx1, qy1, parent = qx0[order], qy0[order], qx1[order], qy1[order], parent[order]
    covered = np.zeros(len(qx0))

    def run(start: int) -> None:
        stop = min(start + _TOLERANCE_CHUNK, len(qx0))
        covered[start:stop] = _covered_length(
            grid, qx0[start:stop], qy0[start:stop], qx1[start:stop], qy1[start:stop],
            bx0, by0, bx1, by1, tol,
        )

    run_chunks(run, range(0, len(qx0), _TOLERANCE_CHUNK))
    within = np.bincount(seg_a.owner[parent], weights=covered, minlength=n)
    return np.minimum(within, perimeter), perimeter


def _covered_length(grid, px, py, qx, qy, bx0, by0, bx1, by1, tol) -> np.ndarray:
    """Length of each piece [p, q] within ``tol`` of the grid's segments (b0, b1)."""
    zero = np.zeros(len(px), np.int64)
    qi, seg = grid.query(np.minimum(px, qx) - tol, np.minimum(py, qy) - tol,
                         np.maximum(px, qx) + tol, np.maximum(py, qy) + tol, zero)
    ax, ay, bx, by = bx0[seg], by0[seg], bx1[seg], by1[seg]
    near = (
        (np.minimum(ax, bx) <= np.maximum(px, qx)[qi] + tol)
        & (np.maximum(ax, bx) >= np.minimum(px, qx)[qi] - tol)
        & (np.minimum(ay, by) <= np.maximum(py, qy)[qi] + tol)
        & (np.maximum(ay, by) >= np.minimum(py, qy)[qi] - tol)
    )
    qi, ax, ay, bx, by = qi[near], ax[near], ay[near], bx[near], by[near]
    if len(qi) == 0:
        return np.zeros(len(px))
    length = hypot(qx - px, qy - py)
    ux, uy = (qx - px) / length, (qy - py) / length
    frame = segment_frame(px[qi], py[qi], ux[qi], uy[qi], ax, ay, bx, by)
    lo, hi = frame_capsule(*frame, length[qi], tol)
    return union_length(qi, lo, hi, length)

