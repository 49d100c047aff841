"""Straight segments of boundaries, a grid index over them, and exact vectorised geometry on
segments: distances, distance integrals and tolerance intervals.

The kernels behind the boundary metrics of ``boundary.py``. Coordinates are kept as separate
contiguous x and y arrays (one row per segment, or per (piece, segment) candidate pair): numpy
is several times faster on those than on strided (n, 2) columns. Nothing loops in Python over
geometries or samples.

Most kernels work in the frame of a segment [a, b] measured from a point moving along another
segment, x(s) = p + s u with |u| = 1 (``segment_frame``): ``tau(s) = tau0 + alpha s`` is the
position of x(s) along [a, b] (0 at a, ``seg_len`` at b) and ``eta(s) = eta0 + beta s`` its
signed distance from the line (a, b), so alpha² + beta² = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import shapely

#: Shapely geometry type ids of a Polygon and of curves (LineString, LinearRing).
_POLYGON = 3
_LINES = (1, 2)

#: Above this many cells per indexed piece (plus ``_DENSE_GRID_MIN_CELLS``) the grid is
#: searched with ``np.searchsorted`` instead of a dense table of cell starts.
_DENSE_GRID_CELLS_PER_PIECE = 16
_DENSE_GRID_MIN_CELLS = 1 << 20

#: Indexed pieces are at most this fraction of the cell size, so that a piece's box never
#: spans more than two cells per axis, even after rounding.
_PIECE_FRACTION = 0.999


@dataclass(frozen=True)
class Segments:
    """The straight segments of the boundaries (exterior and interior rings) of polygons, or
    of curves.

    Attributes:
        x0, y0, x1, y1: float arrays, shape (n,): start and end points, in the geometries' CRS.
        owner: int64 array, shape (n,): position of the geometry each segment belongs to.
        next: int64 array, shape (n,): the segment that starts where this one ends
            (its start equals this end exactly), -1 at the end of an open curve.
        prev: int64 array, shape (n,): the segment that ends where this one starts, -1 at the
            start of an open curve.
        valid: bool array, shape (n_geometries,): geometries with at least one segment and only
            finite coordinates. The others have no segments here.

    Repeated consecutive vertices are removed, so every segment has a positive length.
    """

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    owner: np.ndarray
    next: np.ndarray
    prev: np.ndarray
    valid: np.ndarray

    @property
    def n(self) -> int:
        return len(self.owner)

    @property
    def length(self) -> np.ndarray:
        return hypot(self.x1 - self.x0, self.y1 - self.y0)

    def select(self, owners: np.ndarray) -> Segments:
        """The segments of the owners where the bool mask ``owners`` (n_geometries,) is True;
        owner numbers are unchanged and ``valid`` becomes ``valid & owners``."""
        keep = owners[self.owner]
        new_index = np.cumsum(keep) - 1
        return Segments(
            self.x0[keep], self.y0[keep], self.x1[keep], self.y1[keep], self.owner[keep],
            _renumber(self.next[keep], new_index), _renumber(self.prev[keep], new_index),
            self.valid & owners,
        )

    def take(self, owners_lo: int, owners_hi: int) -> Segments:
        """The segments of geometries ``owners_lo <= owner < owners_hi``, renumbered from 0."""
        lo, hi = np.searchsorted(self.owner, [owners_lo, owners_hi])
        nxt, prv = self.next[lo:hi], self.prev[lo:hi]
        return Segments(
            self.x0[lo:hi], self.y0[lo:hi], self.x1[lo:hi], self.y1[lo:hi],
            self.owner[lo:hi] - owners_lo,
            np.where(nxt >= 0, nxt - lo, -1), np.where(prv >= 0, prv - lo, -1),
            self.valid[owners_lo:owners_hi],
        )


def _renumber(links: np.ndarray, new_index: np.ndarray) -> np.ndarray:
    return np.where(links >= 0, new_index[np.maximum(links, 0)], -1)


def boundary_segments(geometries) -> Segments:
    """Split the boundaries of polygonal geometries (or linear geometries) into segments.

    Args:
        geometries: object array, shape (n,), of Polygons and MultiPolygons (their exterior
            and interior rings), LineStrings, LinearRings and MultiLineStrings (the curves
            themselves), None or empty geometries (these have no segments and are not
            ``valid``). Points are ignored.

    Returns:
        Segments ordered by owner, then curve, then along the curve.
    """
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    n_geoms = len(geoms)
    parts, part_owner = shapely.get_parts(geoms, return_index=True)
    type_id = shapely.get_type_id(parts)
    polygon = type_id == _POLYGON
    line = np.isin(type_id, _LINES)
    rings, ring_part = shapely.get_rings(parts[polygon], return_index=True)
    curves = np.concatenate([rings, parts[line]])
    curve_owner = np.concatenate([part_owner[polygon][ring_part], part_owner[line]])
    order = np.argsort(curve_owner, kind="stable")
    curves, curve_owner = curves[order], curve_owner[order].astype(np.int64)
    coords, coord_curve = shapely.get_coordinates(curves, return_index=True)
    coord_owner = curve_owner[coord_curve]

    finite = np.isfinite(coords).all(axis=1)
    bad_owner = np.bincount(coord_owner[~finite], minlength=n_geoms) > 0
    keep = ~bad_owner[coord_owner]
    coords, coord_curve, coord_owner = coords[keep], coord_curve[keep], coord_owner[keep]
    if len(coords) < 2:
        none, empty = np.zeros(0, dtype=np.int64), np.zeros(0)
        return Segments(empty, empty, empty, empty, none, none, none, np.zeros(n_geoms, bool))

    # Drop repeated consecutive vertices within a curve.
    new_curve = np.r_[True, coord_curve[1:] != coord_curve[:-1]]
    moved = np.r_[True, (coords[1:] != coords[:-1]).any(axis=1)]
    keep = new_curve | moved
    coords, coord_curve, coord_owner = coords[keep], coord_curve[keep], coord_owner[keep]

    # A segment joins consecutive vertices of the same curve.
    same = coord_curve[1:] == coord_curve[:-1]
    x, y = np.ascontiguousarray(coords[:, 0]), np.ascontiguousarray(coords[:, 1])
    x0, y0, x1, y1 = x[:-1][same], y[:-1][same], x[1:][same], y[1:][same]
    owner = coord_owner[:-1][same]
    seg_curve = coord_curve[:-1][same]
    n = len(owner)
    index = np.arange(n, dtype=np.int64)
    curve_first = np.r_[True, seg_curve[1:] != seg_curve[:-1]] if n else np.zeros(0, bool)
    curve_last = np.r_[seg_curve[1:] != seg_curve[:-1], True] if n else np.zeros(0, bool)
    first_index = np.maximum.accumulate(np.where(curve_first, index, 0)) if n else index
    # A closed curve (every ring) ends where it starts: its last segment is followed by its
    # first. Open curves have no segment before the first and after the last (-1).
    closed = curve_last & (x1 == x0[first_index]) & (y1 == y0[first_index])
    nxt = index + 1
    nxt[curve_last] = np.where(closed[curve_last], first_index[curve_last], -1)
    prv = np.full(n, -1, dtype=np.int64)
    has_next = nxt >= 0
    prv[nxt[has_next]] = index[has_next]
    valid = np.bincount(owner, minlength=n_geoms) > 0
    return Segments(x0, y0, x1, y1, owner, nxt, prv, valid & ~bad_owner)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[k], starts[k] + counts[k])`` over k (int64)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.asarray(starts, dtype=np.int64) - (np.cumsum(counts) - counts)
    return np.arange(total, dtype=np.int64) + np.repeat(offsets, counts)


def group_starts(sorted_ids: np.ndarray) -> np.ndarray:
    """Positions where a new run of equal values starts in a grouped array."""
    if len(sorted_ids) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])


def hypot(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """sqrt(dx² + dy²); ``np.hypot`` is much slower and its overflow care is not needed."""
    return np.sqrt(dx * dx + dy * dy)


def split_segments(x0, y0, x1, y1, max_length):
    """Cut each segment into equal pieces no longer than ``max_length`` (one value a segment).

    Returns ``(px0, py0, px1, py1, parent, sub)``: the pieces in order along each segment, the
    segment each comes from and its rank along it (0 first). End points of a segment are kept
    exactly.
    """
    length = hypot(x1 - x0, y1 - y0)
    m = np.maximum(1, np.ceil(length / (_PIECE_FRACTION * max_length))).astype(np.int64)
    if np.all(m == 1):
        index = np.arange(len(m), dtype=np.int64)
        return x0, y0, x1, y1, index, np.zeros(len(m), dtype=np.int64)
    parent = np.repeat(np.arange(len(m), dtype=np.int64), m)
    sub = ranges(np.zeros(len(m), dtype=np.int64), m)
    mm = m[parent].astype(float)
    t0, t1 = sub / mm, (sub + 1) / mm
    last = sub + 1 == m[parent]
    ax, ay, dx, dy = x0[parent], y0[parent], (x1 - x0)[parent], (y1 - y0)[parent]
    px0 = np.where(sub == 0, ax, ax + t0 * dx)
    py0 = np.where(sub == 0, ay, ay + t0 * dy)
    px1 = np.where(last, x1[parent], ax + t1 * dx)
    py1 = np.where(last, y1[parent], ay + t1 * dy)
    return px0, py0, px1, py1, parent, sub


class SegmentGrid:
    """A uniform grid over segments, one grid per group, to find the segments near boxes.

    Each segment is cut into pieces no longer than its group's cell size and every piece is
    filed under the cell of its lower-left corner. A box query scans, on each row of cells the
    box spans, the cells that can hold the lower-left corner of a piece meeting the box (from
    one cell left of and below the box to its upper-right corner), so it finds every segment
    with a piece whose bounding box meets the query box, once.
    """

    def __init__(self, x0, y0, x1, y1, group, cell, origin, extent):
        """
        Args:
            x0, y0, x1, y1: float arrays, shape (n,): the indexed segments.
            group: int64 array, shape (n,): group of each segment; a query sees only its own.
            cell: float array, shape (n_groups,): cell size of each group, > 0.
            origin, extent: float arrays, shape (n_groups, 2): lower-left corner and size of a
                box holding every segment of the group.
        """
        self.cell = cell
        self.ox = np.ascontiguousarray(origin[:, 0])
        self.oy = np.ascontiguousarray(origin[:, 1])
        self.ncol = np.floor(extent[:, 0] / cell).astype(np.int64) + 1
        self.nrow = np.floor(extent[:, 1] / cell).astype(np.int64) + 1
        n_cells = self.ncol * self.nrow
        self.base = np.cumsum(n_cells) - n_cells
        total_cells = int(n_cells.sum())

        px0, py0, px1, py1, parent, sub = split_segments(x0, y0, x1, y1, cell[group])
        pgroup = group[parent]
        ix = self._column(np.minimum(px0, px1), pgroup)
        iy = self._row(np.minimum(py0, py1), pgroup)
        key = self.base[pgroup] + iy * self.ncol[pgroup] + ix
        self.order = np.argsort(key, kind="stable")
        self.parent, self.sub, self.ix, self.iy = parent, sub, ix, iy
        self.split = len(parent) > len(x0)
        self.dense = total_cells <= _DENSE_GRID_CELLS_PER_PIECE * len(key) + _DENSE_GRID_MIN_CELLS
        if self.dense:
            counts = np.bincount(key, minlength=total_cells)
            self.cell_start = np.r_[0, np.cumsum(counts)].astype(np.int64)
        else:
            self.sorted_key = key[self.order]

    def cell_key(self, x, y, group) -> np.ndarray:
        """Key of the cell holding each point (x, y) of the given group: sorting queries by it
        keeps the grid's memory accesses local."""
        return self.base[group] + self._row(y, group) * self.ncol[group] + self._column(x, group)

    def _column(self, x, group, shift=0):
        ix = np.floor((x - self.ox[group]) / self.cell[group]) - shift
        return np.minimum(np.maximum(ix, 0), self.ncol[group] - 1).astype(np.int64)

    def _row(self, y, group, shift=0):
        iy = np.floor((y - self.oy[group]) / self.cell[group]) - shift
        return np.minimum(np.maximum(iy, 0), self.nrow[group] - 1).astype(np.int64)

    def query(self, bx0, by0, bx1, by1, group) -> tuple[np.ndarray, np.ndarray]:
        """Segments with a piece whose bounding box meets each query box.

        Args:
            bx0, by0, bx1, by1: float arrays, shape (q,): the query boxes.
            group: int64 array, shape (q,): group of each query.

        Returns:
            ``(query, segment)`` int64 arrays, grouped by query in increasing order; each
            segment of the query's group with a piece in the scanned cells, once. A superset of
            the segments meeting the box.
        """
        ix_lo, ix_hi = self._column(bx0, group, 1), self._column(bx1, group)
        iy_lo, iy_hi = self._row(by0, group, 1), self._row(by1, group)
        n_rows = iy_hi - iy_lo + 1
        q_of_row = np.repeat(np.arange(len(bx0), dtype=np.int64), n_rows)
        row_base = self.base[group][q_of_row] + ranges(iy_lo, n_rows) * self.ncol[group][q_of_row]
        k_lo = row_base + ix_lo[q_of_row]
        k_hi = row_base + ix_hi[q_of_row]
        if self.dense:
            lo = self.cell_start[k_lo]
            hi = self.cell_start[k_hi + 1]
        else:
            lo = np.searchsorted(self.sorted_key, k_lo, side="left")
            hi = np.searchsorted(self.sorted_key, k_hi, side="right")
        count = hi - lo
        query = np.repeat(q_of_row, count)
        piece = self.order[ranges(lo, count)]
        if not self.split:
            return query, self.parent[piece]
        # A segment cut into pieces is reported by the first of its pieces that the scan sees:
        # drop a piece when the previous piece of the same segment is in a scanned cell.
        later = np.flatnonzero(self.sub[piece] > 0)
        prev, q = piece[later] - 1, query[later]
        px, py = self.ix[prev], self.iy[prev]
        seen = (px >= ix_lo[q]) & (px <= ix_hi[q]) & (py >= iy_lo[q]) & (py <= iy_hi[q])
        keep = np.ones(len(query), dtype=bool)
        keep[later[seen]] = False
        return query[keep], self.parent[piece[keep]]


# ---------------------------------------------------------------------------
# Exact geometry. Every argument is a float array of shape (n,), one row per row.
# ---------------------------------------------------------------------------


def point_segment_distance(x, y, ax, ay, bx, by) -> np.ndarray:
    """Distance from each point (x, y) to the segment [a, b] (a != b)."""
    wx, wy = bx - ax, by - ay
    dx, dy = x - ax, y - ay
    t = np.minimum(np.maximum((dx * wx + dy * wy) / (wx * wx + wy * wy), 0.0), 1.0)
    return hypot(dx - t * wx, dy - t * wy)


def segment_distance(px, py, qx, qy, ax, ay, bx, by, d_p, d_q) -> np.ndarray:
    """Distance between segments [p, q] and [a, b], given the distances of p and q to [a, b]:
    0 when they cross, else the least distance from an end point to the other segment."""
    d = np.minimum(
        np.minimum(d_p, d_q),
        np.minimum(
            point_segment_distance(ax, ay, px, py, qx, qy),
            point_segment_distance(bx, by, px, py, qx, qy),
        ),
    )
    ux, uy, wx, wy = qx - px, qy - py, bx - ax, by - ay
    side_a = ux * (ay - py) - uy * (ax - px)
    side_b = ux * (by - py) - uy * (bx - px)
    side_p = wx * (py - ay) - wy * (px - ax)
    side_q = wx * (qy - ay) - wy * (qx - ax)
    crossing = (side_a * side_b < 0) & (side_p * side_q < 0)
    return np.where(crossing, 0.0, d)


def segment_frame(px, py, ux, uy, ax, ay, bx, by):
    """The frame of segment [a, b] seen from x(s) = p + s u (see the module docstring).

    Returns ``(tau0, alpha, eta0, beta, seg_len)``.
    """
    wx, wy = bx - ax, by - ay
    seg_len = hypot(wx, wy)
    wx, wy = wx / seg_len, wy / seg_len
    dx, dy = px - ax, py - ay
    return dx * wx + dy * wy, ux * wx + uy * wy, wx * dy - wy * dx, wx * uy - wy * ux, seg_len


def frame_distance(tau0, alpha, eta0, beta, seg_len, s):
    """Distance from x(s) to the segment, and its derivative in s (a subgradient, 0 where the
    distance is 0)."""
    tau = tau0 + alpha * s
    eta = eta0 + beta * s
    over = tau - np.minimum(np.maximum(tau, 0.0), seg_len)  # beyond an end, else 0
    d = hypot(over, eta)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(d > 0, (over * alpha + eta * beta) / d, 0.0)
    return d, slope


def linear_range(c0, c1, lo, hi, length):
    """The s in [0, length] with lo <= c0 + c1 s <= hi, as (start, stop); empty: start >= stop.
    ``lo`` and ``hi`` may be infinite."""
    with np.errstate(divide="ignore", invalid="ignore"):
        s1 = (lo - c0) / c1
        s2 = (hi - c0) / c1
    flat = c1 == 0
    inside = (c0 >= lo) & (c0 <= hi)
    start = np.where(flat, np.where(inside, -np.inf, np.inf), np.minimum(s1, s2))
    stop = np.where(flat, np.where(inside, np.inf, -np.inf), np.maximum(s1, s2))
    return np.minimum(np.maximum(start, 0.0), length), np.minimum(np.maximum(stop, 0.0), length)


def abs_linear_integral(y0, y1, width):
    """Integral of |y| over an interval of the given width where y is linear from y0 to y1."""
    a0, a1 = np.abs(y0), np.abs(y1)
    total = a0 + a1
    with np.errstate(divide="ignore", invalid="ignore"):
        opposite = width * (y0 * y0 + y1 * y1) / (2.0 * total)
    return np.where(y0 * y1 >= 0, 0.5 * width * total, np.where(total > 0, opposite, 0.0))


def _hypot_antiderivative(x, h):
    """An antiderivative in x of sqrt(x² + h²), h >= 0."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_term = np.where(h > 0, h * h * np.arcsinh(x / h), 0.0)
    return 0.5 * (x * hypot(x, h) + log_term)


def frame_integral(tau0, alpha, eta0, beta, seg_len, length):
    """Exact integral of the distance to the segment over x(s), 0 <= s <= length.

    While the projection of x(s) falls before a (tau < 0) the distance is |x(s) - a|, on the
    segment it is |eta(s)|, after b it is |x(s) - b|; each has a closed-form integral
    (for a point at offset c along the line and distance h from it, ∫ sqrt((s - c)² + h²)).
    """
    total = np.zeros(len(tau0))
    for lo, hi, t0 in ((-np.inf, 0.0, tau0), (seg_len, np.inf, tau0 - seg_len)):
        s0, s1 = linear_range(tau0, alpha, lo, hi, length)
        s1 = np.maximum(s0, s1)
        centre = -(t0 * alpha + eta0 * beta)  # where x(s) is closest to the end point
        h = np.abs(alpha * eta0 - beta * t0)  # distance of the end point from the line
        part = _hypot_antiderivative(s1 - centre, h) - _hypot_antiderivative(s0 - centre, h)
        total += np.where(s1 > s0, part, 0.0)
    s0, s1 = linear_range(tau0, alpha, 0.0, seg_len, length)
    s1 = np.maximum(s0, s1)
    total += abs_linear_integral(eta0 + beta * s0, eta0 + beta * s1, s1 - s0)
    return total


def frame_capsule(tau0, alpha, eta0, beta, seg_len, length, radius):
    """The s in [0, length] with x(s) within ``radius`` of the segment, as (start, stop);
    empty when start >= stop.

    The points within ``radius`` of a segment form a capsule (a rectangle and two discs); it is
    convex, so it cuts the line in one interval: the hull of the rectangle's and the discs'.
    """
    along0, along1 = linear_range(tau0, alpha, 0.0, seg_len, length)
    across0, across1 = linear_range(eta0, beta, -radius, radius, length)
    start = np.maximum(along0, across0)
    stop = np.minimum(along1, across1)
    empty = start >= stop
    start = np.where(empty, np.inf, start)
    stop = np.where(empty, -np.inf, stop)
    r2 = radius * radius
    for t0 in (tau0, tau0 - seg_len):
        centre = -(t0 * alpha + eta0 * beta)
        h = alpha * eta0 - beta * t0
        half2 = r2 - h * h
        hit = half2 >= 0
        half = np.sqrt(np.where(hit, half2, 0.0))
        start = np.where(hit, np.minimum(start, centre - half), start)
        stop = np.where(hit, np.maximum(stop, centre + half), stop)
    return np.minimum(np.maximum(start, 0.0), length), np.minimum(np.maximum(stop, 0.0), length)


def frame_quadratic(tau0, alpha, eta0, beta, seg_len, s):
    """Coefficients (c2, c1, c0) of the squared distance c2 s² + c1 s + c0 in the regime
    (before a, on the segment, after b) that x(s) is in at the given s."""
    tau = tau0 + alpha * s
    before, after = tau < 0, tau > seg_len
    end = np.where(after, tau0 - seg_len, tau0)  # tau relative to the end point nearest
    point = before | after
    c2 = np.where(point, 1.0, beta * beta)
    c1 = np.where(point, 2.0 * (end * alpha + eta0 * beta), 2.0 * eta0 * beta)
    c0 = np.where(point, end * end + eta0 * eta0, eta0 * eta0)
    return c2, c1, c0


def quadratic_roots(a, b, c):
    """Both real roots of a x² + b x + c (a may be 0); NaN where a root does not exist."""
    disc = b * b - 4.0 * a * c
    ok = disc >= 0
    root = np.sqrt(np.where(ok, disc, 0.0))
    q = -0.5 * (b + np.where(b >= 0, root, -root))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(ok & (a != 0), q / a, np.nan)
        r2 = np.where(ok & (q != 0), c / q, np.nan)
    return r1, r2


def union_length(group: np.ndarray, start: np.ndarray, stop: np.ndarray, span: np.ndarray):
    """Length of the union of the intervals [start, stop] of each group.

    Args:
        group: int64 array, shape (k,), ids in 0..n-1; start, stop: float arrays, shape (k,),
            within [0, span[group]].
        span: float array, shape (n,), > 0.
    Returns:
        float array, shape (n,).
    """
    n = len(span)
    keep = stop > start
    group, start, stop = group[keep], start[keep], stop[keep]
    if len(group) == 0:
        return np.zeros(n)
    # By group, then start: the key keeps groups apart (fractions below 1/2); starts closer
    # than its resolution may swap, which the sweep below tolerates (it adds what lies beyond
    # the furthest stop seen, whatever the order within such a tie).
    order = np.argsort(group + 0.5 * (start / span[group]))
    group, start, stop = group[order], start[order], stop[order]
    # Sweep each group by increasing start: an interval adds what lies beyond the furthest
    # stop before it in its group.
    first = np.r_[True, group[1:] != group[:-1]]
    head = np.maximum.accumulate(np.where(first, np.arange(len(group)), 0))
    reach = running_max(stop, head)
    before = np.r_[-np.inf, reach[:-1]]
    before[first] = -np.inf
    added = np.maximum(0.0, stop - np.maximum(start, before))
    return np.bincount(group, weights=added, minlength=n)


def running_max(values: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Inclusive running maximum of ``values`` restarted at each group.

    ``head[i]`` is the position of the first element of i's group (groups are contiguous).
    Exact, by doubling: log2(largest group) passes.
    """
    out = values.copy()
    index = np.arange(len(values))
    step = 1
    while True:
        src = index - step
        ok = src >= head
        if not ok.any():
            return out
        out[ok] = np.maximum(out[ok], out[src[ok]])
        step *= 2
