"""Straight segments of boundaries, a grid index over them, and exact vectorised geometry on
segments: distances and distance integrals.

The kernels behind the boundary metrics of ``boundary/distances.py``. Coordinates are kept as separate
contiguous x and y arrays (one row per segment, or per (piece, segment) candidate pair): numpy
is several times faster on those than on strided (n, 2) columns. Nothing loops in Python over
geometries or samples.

Most kernels work in the frame of a segment [a, b] measured from a point moving along another
segment, x(s) = p + s u with |u| = 1 (``axis_frame``): ``tau(s) = tau0 + alpha s`` is the
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

#: A floor for quantities that must stay positive (logarithms).
_TINY_POSITIVE = 1e-300

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


def _renumber(links: np.ndarray, new_index: np.ndarray) -> np.ndarray:
    return np.where(links >= 0, new_index[np.maximum(links, 0)], -1)


def boundary_curves(geometries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The curves whose segments make the boundaries of ``geometries`` (object array, shape
    (n,)): the exterior and interior rings of every polygon, and linear parts themselves.

    Returns ``(curves, owner)``: object array of LinearRings and LineStrings, and the int
    position in ``geometries`` of each; rings first, then lines (not sorted by owner).
    """
    parts, part_owner = shapely.get_parts(geometries, return_index=True)
    type_id = shapely.get_type_id(parts)
    polygon = type_id == _POLYGON
    line = np.isin(type_id, _LINES)
    rings, ring_part = shapely.get_rings(parts[polygon], return_index=True)
    curves = np.concatenate([rings, parts[line]])
    owner = np.concatenate([part_owner[polygon][ring_part], part_owner[line]])
    return curves, owner


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
    curves, curve_owner = boundary_curves(geoms)
    order = np.argsort(curve_owner, kind="stable")
    curves, curve_owner = curves[order], curve_owner[order].astype(np.int64)
    coords, coord_curve = shapely.get_coordinates(curves, return_index=True)
    coord_owner = curve_owner[coord_curve]

    bad_owner = np.zeros(n_geoms, dtype=bool)
    if not np.isfinite(coords).all():  # rare: skip the filtering otherwise
        finite = np.isfinite(coords).all(axis=1)
        bad_owner = np.bincount(coord_owner[~finite], minlength=n_geoms) > 0
        keep = ~bad_owner[coord_owner]
        coords, coord_curve, coord_owner = coords[keep], coord_curve[keep], coord_owner[keep]
    if len(coords) < 2:
        none, empty = np.zeros(0, dtype=np.int64), np.zeros(0)
        return Segments(empty, empty, empty, empty, none, none, none, np.zeros(n_geoms, bool))
    x, y = np.ascontiguousarray(coords[:, 0]), np.ascontiguousarray(coords[:, 1])
    del coords

    # Drop repeated consecutive vertices within a curve.
    keep = run_starts(coord_curve)
    keep[1:] |= x[1:] != x[:-1]
    keep[1:] |= y[1:] != y[:-1]
    if not keep.all():
        keep = np.flatnonzero(keep)
        x, y, coord_curve, coord_owner = x[keep], y[keep], coord_curve[keep], coord_owner[keep]

    # A segment joins consecutive vertices of the same curve.
    start = np.flatnonzero(coord_curve[1:] == coord_curve[:-1])  # positions gather faster
    end = start + 1
    x0, y0, x1, y1 = x[start], y[start], x[end], y[end]
    owner = coord_owner[start]
    seg_curve = coord_curve[start]
    n = len(owner)
    index = np.arange(n, dtype=np.int64)
    # The first and last segment of each curve (curves are runs of segments).
    first = group_starts(seg_curve)
    last = np.append(first[1:] - 1, n - 1) if n else first
    # A closed curve (every ring) ends where it starts: its last segment is followed by its
    # first. Open curves have no segment before the first and after the last (-1).
    closed = (x1[last] == x0[first]) & (y1[last] == y0[first])
    nxt = index + 1
    nxt[last] = np.where(closed, first, -1)
    prv = index - 1
    prv[first] = np.where(closed, last, -1)
    valid = np.bincount(owner, minlength=n_geoms) > 0
    return Segments(x0, y0, x1, y1, owner, nxt, prv, valid & ~bad_owner)


def group_ids(counts: np.ndarray) -> np.ndarray:
    """``np.repeat(np.arange(len(counts)), counts)`` (int64), by a cumulative sum: faster than
    np.repeat, which also holds the GIL while it copies (other threads wait)."""
    ends = np.cumsum(np.asarray(counts, dtype=np.int64))
    total = int(ends[-1]) if len(ends) else 0
    return np.cumsum(np.bincount(ends[:-1], minlength=total + 1)[:total])


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[k], starts[k] + counts[k])`` over k (int64)."""
    counts = np.asarray(counts, dtype=np.int64)
    offsets = np.asarray(starts, dtype=np.int64) - (np.cumsum(counts) - counts)
    group = group_ids(counts)
    return np.arange(len(group), dtype=np.int64) + offsets[group]


def run_starts(ids: np.ndarray) -> np.ndarray:
    """Bool array, True where a run of equal values starts (and at 0)."""
    first = np.empty(len(ids), dtype=bool)
    first[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return first


def budget_splits(cost: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive ranges [a, b) of positions whose total ``cost`` is at most ``budget``, or
    of one position when that alone exceeds it."""
    total = np.cumsum(cost)
    splits, a = [], 0
    while a < len(cost):
        before = total[a - 1] if a else 0
        b = max(int(np.searchsorted(total, before + budget, side="right")), a + 1)
        splits.append((a, b))
        a = b
    return splits


def group_starts(sorted_ids: np.ndarray) -> np.ndarray:
    """Positions where a new run of equal values starts in a grouped array."""
    return np.flatnonzero(run_starts(sorted_ids))


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
    parent = group_ids(m)
    first = np.cumsum(m) - m
    sub = np.arange(len(parent), dtype=np.int64) - first[parent]
    px0, py0, px1, py1 = x0[parent], y0[parent], x1[parent], y1[parent]
    # Only the inner cut points are computed (most segments are not cut): the cut after
    # piece k of a segment ends piece k and starts piece k + 1.
    cut = np.flatnonzero(sub)
    cp = parent[cut]
    t = sub[cut] / m[cp].astype(float)
    px0[cut] = x0[cp] + t * (x1[cp] - x0[cp])
    py0[cut] = y0[cp] + t * (y1[cp] - y0[cp])
    px1[cut - 1] = px0[cut]
    py1[cut - 1] = py0[cut]
    return px0, py0, px1, py1, parent, sub


class SegmentGrid:
    """A uniform grid over segments, one grid per group, to find the segments near boxes.

    Each segment is cut into pieces no longer than its group's cell size and every piece is
    filed under the cell of its lower-left corner. A box query scans, on each row of cells the
    box spans, the cells that can hold the lower-left corner of a piece meeting the box (from
    one cell left of and below the box to its upper-right corner), so it finds every segment
    with a piece whose bounding box meets the query box, once.
    """

    def __init__(self, x0, y0, x1, y1, group, cell, origin, extent, split=None):
        """
        Args:
            x0, y0, x1, y1: float arrays, shape (n,): the indexed segments.
            group: int64 array, shape (n,): group of each segment; a query sees only its own.
            cell: float array, shape (n_groups,): cell size of each group, > 0.
            origin, extent: float arrays, shape (n_groups, 2): lower-left corner and size of a
                box holding every segment of the group.
            split: optional, ``split_segments(x0, y0, x1, y1, cell[group])`` if the caller
                already has it.
        """
        self.cell = cell
        self.ox = np.ascontiguousarray(origin[:, 0])
        self.oy = np.ascontiguousarray(origin[:, 1])
        self.ncol = np.floor(extent[:, 0] / cell).astype(np.int64) + 1
        self.nrow = np.floor(extent[:, 1] / cell).astype(np.int64) + 1
        n_cells = self.ncol * self.nrow
        self.base = np.cumsum(n_cells) - n_cells
        total_cells = int(n_cells.sum())

        if split is None:
            split = split_segments(x0, y0, x1, y1, cell[group])
        px0, py0, px1, py1, parent, sub = split
        pgroup = group[parent]
        ix = self._column(np.minimum(px0, px1), pgroup)
        iy = self._row(np.minimum(py0, py1), pgroup)
        key = self.base[pgroup] + iy * self.ncol[pgroup] + ix
        order = np.argsort(key, kind="stable")
        # What a query reads, in cell order: each piece's segment (as ~segment, negative, for
        # a piece after the first of its segment) and, for such a piece, the cell of the
        # piece before it.
        self.parent = parent[order]
        self.split = len(parent) > len(x0)
        if self.split:
            before = np.maximum(order - 1, 0)
            later = sub[order] > 0
            np.invert(self.parent, out=self.parent, where=later)
            self.prev_ix = ix[before]
            self.prev_iy = iy[before]
        self.dense = total_cells <= _DENSE_GRID_CELLS_PER_PIECE * len(key) + _DENSE_GRID_MIN_CELLS
        if self.dense:
            counts = np.bincount(key, minlength=total_cells)
            self.cell_start = np.r_[0, np.cumsum(counts)].astype(np.int64)
        else:
            self.sorted_key = key[order]

    def _column(self, x, group, shift=0):
        return _cell_index(x, self.ox[group], self.cell[group], self.ncol[group], shift)

    def _row(self, y, group, shift=0):
        return _cell_index(y, self.oy[group], self.cell[group], self.nrow[group], shift)

    def scan_rows(self, by0, by1, group) -> np.ndarray:
        """Number of rows of cells a query scans, per query box (int64, shape (q,)): the
        length of the arrays ``count`` and ``query`` need per query, before any result."""
        oy, cell, nrow = self.oy[group], self.cell[group], self.nrow[group]
        return _cell_index(by1, oy, cell, nrow) - _cell_index(by0, oy, cell, nrow, 1) + 1

    def count(self, bx0, by0, bx1, by1, group, keep_scan=False):
        """Number of indexed pieces in the cells each query scans (int64, shape (q,)): an
        upper bound of the number of segments ``query`` returns for it, found without
        gathering them (memory: one value per row of cells scanned).

        With ``keep_scan``, returns ``(count, scan)``: ``scan`` is what ``query`` of the same
        boxes needs (pass it as ``query(..., scan=scan)`` not to scan them twice)."""
        scan = self._scanned(bx0, by0, bx1, by1, group)
        lo, hi = self._cell_range(scan[0], scan[1])
        count = np.bincount(scan[2], weights=hi - lo, minlength=len(group)).astype(np.int64)
        return (count, scan[2:] + (lo, hi)) if keep_scan else count

    def _scanned(self, bx0, by0, bx1, by1, group):
        """Keys of the first and last scanned cell of each row of cells of each query, the
        query of each row, and the query's scanned columns and rows."""
        ox, oy, cell = self.ox[group], self.oy[group], self.cell[group]
        ncol, nrow = self.ncol[group], self.nrow[group]
        ix_lo, ix_hi = _cell_index(bx0, ox, cell, ncol, 1), _cell_index(bx1, ox, cell, ncol)
        iy_lo, iy_hi = _cell_index(by0, oy, cell, nrow, 1), _cell_index(by1, oy, cell, nrow)
        n_rows = iy_hi - iy_lo + 1
        q_of_row = group_ids(n_rows)
        # Key of the first scanned cell of each row of cells (``ranges`` without a second
        # group_ids), and of the last.
        first_row = np.cumsum(n_rows) - n_rows
        k_lo = np.arange(len(q_of_row), dtype=np.int64)
        k_lo -= first_row[q_of_row]
        k_lo *= ncol[q_of_row]
        k_lo += (self.base[group] + iy_lo * ncol + ix_lo)[q_of_row]
        k_hi = k_lo + (ix_hi - ix_lo)[q_of_row]
        return k_lo, k_hi, q_of_row, ix_lo, ix_hi, iy_lo, iy_hi

    def _cell_range(self, k_lo, k_hi):
        """Positions [lo, hi) of the pieces filed in the cells k_lo..k_hi (one row of cells)."""
        if self.dense:
            return self.cell_start[k_lo], self.cell_start[k_hi + 1]
        return (np.searchsorted(self.sorted_key, k_lo, side="left"),
                np.searchsorted(self.sorted_key, k_hi, side="right"))

    def query(self, bx0, by0, bx1, by1, group, scan=None) -> tuple[np.ndarray, np.ndarray]:
        """Segments with a piece whose bounding box meets each query box.

        Args:
            bx0, by0, bx1, by1: float arrays, shape (q,): the query boxes.
            group: int64 array, shape (q,): group of each query.
            scan: optional, the ``scan`` of ``count(..., keep_scan=True)`` for these boxes.

        Returns:
            ``(query, segment)`` int64 arrays, grouped by query in increasing order; each
            segment of the query's group with a piece in the scanned cells, once. A superset of
            the segments meeting the box.
        """
        if scan is None:
            k_lo, k_hi, q_of_row, ix_lo, ix_hi, iy_lo, iy_hi = self._scanned(bx0, by0, bx1,
                                                                             by1, group)
            lo, hi = self._cell_range(k_lo, k_hi)
            del k_lo, k_hi
        else:
            q_of_row, ix_lo, ix_hi, iy_lo, iy_hi, lo, hi = scan
        count = hi - lo
        row = group_ids(count)
        query = q_of_row[row]
        at = np.arange(len(row), dtype=np.int64)
        at += (lo - (np.cumsum(count) - count))[row]
        if not self.split:
            return query, self.parent[at]
        # A segment cut into pieces is reported by the first of its pieces that the scan sees:
        # drop a piece when the previous piece of the same segment is in a scanned cell.
        segment = self.parent[at]
        later = np.flatnonzero(segment < 0)
        segment[later] = ~segment[later]
        q = query[later]
        at = at[later]
        px, py = self.prev_ix[at], self.prev_iy[at]
        seen = (px >= ix_lo[q]) & (px <= ix_hi[q]) & (py >= iy_lo[q]) & (py <= iy_hi[q])
        if not seen.any():
            return query, segment
        keep = np.ones(len(query), dtype=bool)
        keep[later[seen]] = False
        keep = np.flatnonzero(keep)
        return query[keep], segment[keep]


def _cell_index(x, origin, cell, n_cells, shift=0):
    """Column (or row) of the cells holding coordinates x, minus ``shift``, clipped to the
    grid (int64)."""
    ix = np.subtract(x, origin)  # then in place
    ix /= cell
    np.floor(ix, out=ix)
    if shift:
        ix -= shift
    np.maximum(ix, 0, out=ix)
    np.minimum(ix, n_cells - 1, out=ix)
    return ix.astype(np.int64)


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


def segment_axes(ax, ay, bx, by):
    """Start a, unit direction w and length of each segment [a, b]: the rows ``(ax, ay, wx,
    wy, seg_len)`` of one (5, n) float array, the part of a frame (``axis_frame``) that
    depends on the segment only (computed once per segment, then gathered per row)."""
    out = np.empty((5, len(ax)))
    out[0], out[1] = ax, ay
    wx, wy, seg_len = out[2:]
    np.subtract(bx, ax, out=wx)
    np.subtract(by, ay, out=wy)
    np.sqrt(wx * wx + wy * wy, out=seg_len)  # hypot
    wx /= seg_len
    wy /= seg_len
    return out


def axis_frame(px, py, ux, uy, ax, ay, wx, wy, seg_len):
    """The frame of segment [a, b] seen from x(s) = p + s u (see the module docstring), from
    the segment's axes (``segment_axes``).

    Returns ``(tau0, alpha, eta0, beta, seg_len)`` as the rows of one (5, n) float array (one
    ``np.take`` then gathers all five), computed in place.
    """
    out = np.empty((5, len(px)))
    tau0, alpha, eta0, beta, out_len = out
    out_len[:] = seg_len
    dx, dy = px - ax, py - ay
    t = np.empty(len(px))  # the one temporary of the products
    np.multiply(dx, wx, out=tau0)
    tau0 += np.multiply(dy, wy, out=t)
    np.multiply(ux, wx, out=alpha)
    alpha += np.multiply(uy, wy, out=t)
    np.multiply(wx, dy, out=eta0)
    eta0 -= np.multiply(wy, dx, out=t)
    np.multiply(wx, uy, out=beta)
    beta -= np.multiply(wy, ux, out=t)
    return out


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


def abs_linear_integral(y0, y1, width):
    """Integral of |y| over an interval of the given width where y is linear from y0 to y1."""
    total = np.abs(y0)
    total += np.abs(y1)
    out = 0.5 * width * total
    # Opposite signs (seldom): the two triangles on either side of the zero (total > 0).
    k = np.flatnonzero(~(y0 * y1 >= 0))
    if len(k):
        w = width[k] if np.ndim(width) else width
        out[k] = w * (y0[k] * y0[k] + y1[k] * y1[k]) / (2.0 * total[k])
    return out


def regime_cuts(tau0, alpha, seg_len, length):
    """Where x(s), 0 <= s <= length, passes from one regime of a segment to the next.

    Returns ``(e1, e2, backward)``: 0 <= e1 <= e2 <= length. On [0, e1] the projection of x(s)
    falls before a (after b where ``backward``, i.e. alpha is negative, -0 included), on
    [e1, e2] on the segment, on [e2, length] after b (before a where ``backward``).
    """
    # In place: fewer temporaries.
    ca = np.negative(tau0)
    cb = np.subtract(seg_len, tau0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ca /= alpha
        cb /= alpha
    # With alpha = ±0 the regime is the same all along: the cuts are ±inf, clipped to an end,
    # or 0/0 = NaN when x(s) stays level with a, which fmax turns into 0 (a subnormal alpha
    # overflows to ±inf alike).
    for c in (ca, cb):
        np.fmax(c, 0.0, out=c)
        np.fmin(c, length, out=c)
    return np.minimum(ca, cb), np.maximum(ca, cb), np.signbit(alpha)


def _point_integral(t0, alpha, eta0, beta, s0, s1):
    """Integral over s0 <= s <= s1 of the distance from x(s) to the point at position t0 along
    the segment's line: ∫ sqrt((s - c)² + h²) ds, c the foot of the point on x's line and h
    its distance from that line."""
    centre = -(t0 * alpha + eta0 * beta)
    h = np.abs(alpha * eta0 - beta * t0)
    h2 = h * h
    x0, x1 = s0 - centre, s1 - centre
    r0, r1 = hypot(x0, h), hypot(x1, h)
    # The antiderivative is (x r + h² asinh(x / h)) / 2 and asinh(x / h) = ln((x + r) / h): the
    # difference needs one logarithm of (x1 + r1) / (x0 + r0); x + r is h² / (r - x) for
    # x < 0, without cancellation. Where h = 0 the term vanishes (the floor keeps it finite).
    with np.errstate(divide="ignore", invalid="ignore"):
        g0 = np.where(x0 >= 0, x0 + r0, h2 / (r0 - x0))
        g1 = np.where(x1 >= 0, x1 + r1, h2 / (r1 - x1))
    ratio = np.maximum(g1, _TINY_POSITIVE) / np.maximum(g0, _TINY_POSITIVE)
    return 0.5 * (x1 * r1 - x0 * r0 + h2 * np.log(ratio))


def frame_integral(tau0, alpha, eta0, beta, seg_len, length):
    """Exact integral of the distance to the segment over x(s), 0 <= s <= length.

    While the projection of x(s) falls before a (tau < 0) the distance is |x(s) - a|, on the
    segment it is |eta(s)|, after b it is |x(s) - b|; each has a closed-form integral
    (for a point at offset c along the line and distance h from it, ∫ sqrt((s - c)² + h²)).
    """
    e1, e2, backward = regime_cuts(tau0, alpha, seg_len, length)
    length = np.broadcast_to(length, e2.shape)
    # The end point met first along s and the one met last: a then b, or b then a. Most rows
    # stay on the segment, so the point integrals are done only where their interval is not
    # empty (elsewhere they are exactly 0).
    total = np.zeros(len(e1))
    k = np.flatnonzero(e1 > 0)
    if len(k):
        first = tau0[k] - seg_len[k] * backward[k]
        total[k] = _point_integral(first, alpha[k], eta0[k], beta[k], 0.0, e1[k])
    k = np.flatnonzero(e2 < length)
    if len(k):
        last = tau0[k] - seg_len[k] * ~backward[k]
        total[k] += _point_integral(last, alpha[k], eta0[k], beta[k], e2[k], length[k])
    total += abs_linear_integral(eta0 + beta * e1, eta0 + beta * e2, e2 - e1)
    return total


def frame_point_distance(tau0, alpha, eta0, beta, seg_len, s):
    """Distance from x(s) to the segment."""
    tau = tau0 + alpha * s
    eta = eta0 + beta * s
    over = tau - np.minimum(np.maximum(tau, 0.0), seg_len)  # beyond an end, else 0
    return hypot(over, eta)


def quadratic_roots(a, b, c, slack=0.0):
    """Both real roots of a x² + b x + c (a may be 0); NaN where a root does not exist.

    A discriminant down to -slack (b² + 4 |a c|) counts as 0: a double root, which rounding
    can turn into a pair of complex ones when two curves touch.
    """
    # In place where it can be: fewer temporaries.
    bb = b * b
    four_ac = 4.0 * a
    four_ac *= c
    disc = bb - four_ac
    np.abs(four_ac, out=four_ac)
    bb += four_ac
    bb *= -slack
    ok = disc >= bb
    del bb, four_ac
    np.maximum(disc, 0.0, out=disc)
    root = np.sqrt(disc, out=disc)
    q = np.copysign(root, b, out=root)
    q += b
    q *= -0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.divide(q, a)
        r1[~(ok & (a != 0))] = np.nan
        r2 = np.divide(c, q)
        r2[~(ok & (q != 0))] = np.nan
    return r1, r2
