"""Dissolving a layer's prepared polygons into one footprint, with a precision-grid fallback
when GEOS cannot overlay them."""

from __future__ import annotations

import logging
import math
import threading

import numpy as np
import shapely

from ..util.parallel import run_chunks, split

logger = logging.getLogger(__name__)


def dissolve(geoms: np.ndarray, name: str = "layer"):
    """The union of prepared polygonal geometries (valid, as ``prepare_layer`` leaves them).

    ``geoms``: object array, shape (n,). Returns one geometry, or None when ``geoms`` is
    empty or GEOS cannot overlay them even on a precision grid of 1e-12 of their largest
    coordinate (logged naming ``name``: the footprint then scores no area, as the spatial IoU
    guide scores an overlay that fails).
    """
    if len(geoms) == 0:
        return None
    if len(geoms) == 1:
        return geoms[0]
    try:
        return shapely.union_all(geoms)
    except shapely.errors.GEOSException:
        pass
    try:
        grid = _dissolve_grid(geoms)
        return shapely.union_all(geoms, grid_size=grid)
    except shapely.errors.GEOSException as exc:
        logger.warning("the %s footprint could not be dissolved and scores no area: %s", name, exc)
        return None


def _dissolve_grid(geoms: np.ndarray) -> float:
    """A power of ten near 1e-12 of the largest absolute coordinate."""
    largest = float(np.abs(shapely.bounds(geoms)).max())
    return 10.0 ** math.ceil(math.log10(max(largest, 1e-300) * 1e-12))


#: A row with more earlier overlapping rows than this is cut by their union at once (one
#: overlay) rather than by each in turn (as many overlays of the row as it has neighbours).
_CUT_ONE_BY_ONE = 4


class _TooDense(Exception):
    """Raised inside ``disjoint_pieces`` when the rows overlap more than allowed."""


def disjoint_pieces(geoms: np.ndarray, name: str = "layer", progress=None,
                    max_pairs_per_row: float | None = None):
    """Pieces of prepared polygonal geometries with the same union and no two sharing
    interior: each row minus the rows before it whose interiors meet its own.

    ``geoms``: object array, shape (n,), valid polygonal geometries with area (as
    ``prepare_layer`` leaves them). Rows are ordered by vertices, most first (ties by
    position), so of two overlapping rows the one with more vertices stays whole and the
    other is cut; a row whose interior meets no other row's (a coverage: fields sharing
    edges) is its own piece, the same object. Pairs whose interiors meet are found by an
    STRtree query and the DE-9IM pattern ``T********`` (rows that only touch are not cut). A
    row is cut by each such earlier row in turn, or, with more than ``_CUT_ONE_BY_ONE`` of
    them, once by their ``dissolve``.

    The pieces' areas sum to the union's area and their overlays with another layer's pieces
    to the overlay of the two unions, without any overlay of many rows (``dissolve`` of 50,000
    fields whose neighbours overlap by slivers is the cost footprint IoU avoids with this).

    Returns (pieces, rows), or None (see ``max_pairs_per_row``): object array (m,) of the
    non-empty pieces and int64 array (m,) of the row each came from. A cut GEOS cannot make
    even on a precision grid of 1e-12 of the largest coordinate leaves that row whole (logged
    naming ``name``: its overlap is counted twice, at most the overlapping rows' shared
    area). ``progress``: optional callable(fraction done), may raise to cancel.
    ``max_pairs_per_row``: when given, None is returned (and nothing cut) as soon as the
    pairs of intersecting rows are found to be more than this many per row (stacked copies
    of one shape: each would be cut by all the others): first on 64 rows spread over the
    layer, then on all, in chunks of rows.
    """
    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    if n <= 1:
        return geoms.copy(), np.arange(n, dtype=np.int64)
    # position of each row in the order "most vertices first"
    order = np.lexsort((np.arange(n), -shapely.get_num_coordinates(geoms)))
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    tree = shapely.STRtree(geoms)
    # counted from both rows of a pair: twice the pairs
    budget = None if max_pairs_per_row is None else 2 * max_pairs_per_row * n
    if budget is not None:
        sample = np.unique(np.linspace(0, n - 1, 64).astype(int))
        hits = sum(len(tree.query(geoms[k])) - 1 for k in sample)  # one row at a time
        if hits > 2 * max_pairs_per_row * len(sample):
            return None
    found_pairs = [0]
    lock = threading.Lock()

    def meeting(part: slice):
        # (earlier, later) pairs of rows part whose interiors meet
        rows = np.arange(part.start, part.stop)
        hit, other = tree.query(geoms[rows], predicate="intersects")
        if budget is not None:
            with lock:
                found_pairs[0] += len(hit) - len(rows)
                if found_pairs[0] > budget:
                    raise _TooDense
        later, earlier = rows[hit], other
        keep = position[earlier] < position[later]
        later, earlier = later[keep], earlier[keep]
        with np.errstate(all="ignore"):
            meet = _interiors_meet(geoms[earlier], geoms[later])
        return earlier[meet], later[meet]

    def report(lo, hi):
        return None if progress is None else (lambda f: progress(lo + (hi - lo) * f))

    try:
        found = run_chunks(meeting, split(n, 1_000, 2_000), report(0.0, 0.4))
    except _TooDense:
        return None
    earlier = np.concatenate([f[0] for f in found])
    later = np.concatenate([f[1] for f in found])
    pieces = geoms.copy()
    if len(later) == 0:
        return pieces, np.arange(n, dtype=np.int64)
    by_row = np.lexsort((position[earlier], later))
    earlier, later = earlier[by_row], later[by_row]
    starts = np.searchsorted(later, np.arange(n + 1))
    degree = np.diff(starts)
    rank = np.arange(len(later)) - starts[later]
    grid = _dissolve_grid(geoms)
    failed = np.zeros(n, dtype=bool)

    def cut(part: slice):
        lo, hi = starts[part.start], starts[part.stop]
        pairs = np.arange(lo, hi)
        few = degree[later[pairs]] <= _CUT_ONE_BY_ONE
        one_by_one = pairs[few]
        for k in range(int(rank[one_by_one].max()) + 1 if len(one_by_one) else 0):
            step = one_by_one[rank[one_by_one] == k]
            rows = later[step]
            pieces[rows] = _differences(pieces[rows], geoms[earlier[step]], grid, failed, rows)
        many = pairs[~few]
        for row in np.unique(later[many]):  # a loop over rows with many overlaps only
            union = dissolve(geoms[earlier[starts[row]:starts[row + 1]]], name)
            if union is None:
                failed[row] = True
                continue
            pieces[[row]] = _differences(pieces[[row]], np.array([union], dtype=object),
                                         grid, failed, np.array([row]))

    run_chunks(cut, split(n, 1_000, 4_000), report(0.4, 1.0))
    if failed.any():
        logger.warning("%d %s rows could not be cut where they overlap other rows: their "
                       "overlaps count twice in the footprint", int(failed.sum()), name)
    keep = ~shapely.is_missing(pieces)
    keep[keep] = ~shapely.is_empty(pieces[keep])
    return pieces[keep], np.flatnonzero(keep).astype(np.int64)


def _interiors_meet(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Boolean mask, shape (n,): the interiors of ``a[k]`` and ``b[k]`` meet (a pair GEOS
    cannot relate counts as meeting: cutting it is harmless)."""
    try:
        return shapely.relate_pattern(a, b, "T********")
    except shapely.errors.GEOSException:
        pass
    out = np.ones(len(a), dtype=bool)
    for k in range(len(a)):  # only after the vectorised call failed
        try:
            out[k] = shapely.relate_pattern(a[k], b[k], "T********")
        except shapely.errors.GEOSException:
            pass
    return out


def _differences(a: np.ndarray, b: np.ndarray, grid: float, failed: np.ndarray,
                 rows: np.ndarray) -> np.ndarray:
    """``a[k] - b[k]`` (object arrays, shape (n,)); a pair GEOS cannot overlay is retried on
    the precision ``grid``, and if that fails too keeps ``a[k]`` (``failed[rows[k]]`` set)."""
    try:
        with np.errstate(all="ignore"):
            return shapely.difference(a, b)
    except shapely.errors.GEOSException:
        pass
    out = a.copy()
    for k in range(len(a)):  # only after the vectorised call failed
        for size in (None, grid):
            try:
                with np.errstate(all="ignore"):
                    out[k] = shapely.difference(a[k], b[k], grid_size=size)
                break
            except shapely.errors.GEOSException:
                continue
        else:
            failed[rows[k]] = True
    return out
