"""Adaptive densification: split an edge, straight in its source CRS, only where its image in
the equal-area CRS departs from the chord.

The seed's meaning is unchanged: an edge is a straight line in its source CRS, and the
equal-area geometry follows the image of that line, not the chord between the images of its
end points. The seed (and this module before) approximated that image by splitting every edge
into pieces of at most ``DENSIFY_M`` = 50 m before reprojection. Here an edge is split only at
points of that same 50 m grid (the points ``shapely.segmentize(edge, step)`` would add), and
only as far as the image needs them:

1. The edge's grid has n = ceil(L / step) pieces (L its length in source units, as GEOS's
   densifier counts them). The source point at the middle grid index n // 2 is projected,
   and its distance d from the chord between the projected ends is measured in the
   equal-area CRS.
2. Over a piece short against the Earth's radius the image is a parabola (below), which
   deviates d / k² from the chord over a k-th of the edge: the edge is cut at grid points
   into k = ceil(sqrt(d / (0.9·τ))) nearly equal pieces (τ: the row's tolerance, below; at
   most n pieces, so one grid piece is the finest this goes: the 50 m result).
3. On an edge longer than ``MAX_GRID_PIECES`` grid pieces (12.8 km at 50 m) the parabola
   read from the whole edge is not trusted: each of its k pieces is tested at its middle grid
   point and halved while the distance exceeds τ, level by level; a piece still longer than
   ``MAX_GRID_PIECES`` is kept whole only when its points at a quarter, a half and three
   quarters are all within τ / 2 of the chord (the quarter points see the cubic term, which
   the middle does not: with e(t) = a·t(1-t) + b·t(1-t)(2t-1), |e| ≤ |a|/4 + 0.1·|b| ≤ 2 ×
   the largest of the three), so a meridian or a parallel of any length stays one edge.
4. All edges of a chunk are handled together (numpy over the edges and pieces, one PROJ call
   for the edges' middles and one per level of step 3).

**Error bound.** Let γ be the image of one piece the edge is cut into, ℓ its chord length in the
equal-area CRS and e(t) the signed distance of γ(t) from the chord, t in [0, 1]. The map is
smooth, so over a piece short against the Earth's radius e is a parabola to relative accuracy
O(ℓ / R): e(t) ≈ 4·d·t·(1 - t), largest at the middle, and at most τ there (steps 2 and 3). The 50 m
grid points inside the piece lie on γ, so the polygon this module makes and the polygon the 50 m
pieces make differ, along this piece, by the region between the chord and the 50 m
polyline, of area at most ∫ |e| ℓ dt = (2/3)·d·ℓ ≤ (2/3)·τ·ℓ. Summed over a polygon's boundary,
of length P in the equal-area CRS:

    |A_adaptive - A_50m| ≤ (2/3)·τ·P.

With τ = (3/2)·ε·A/P for each polygon (A and P of the polygon with its vertices projected as
they are, before any split), the bound is ε·A: ``RELATIVE_AREA_ERROR`` relative to its own
area. An intersection of two polygons is bounded by pieces of both boundaries, so its area
moves by at most ε·(A_r + A_p), and IoU = I / (A_r + A_p - I) by at most about 3·ε·(A_r +
A_p) / (A_r + A_p - I) ≤ 6·ε (for any pair with positive IoU; the union is at least half of
A_r + A_p). With ε = 1e-9 every polygon's area is within 1e-9 relative of what the 50 m pieces
give. The IoU bound is a worst case (every piece's error of one sign inside the intersection,
of the other outside); on world countries, US counties, fields and the test polygons the IoU
and area differences measured are 0.2-0.5 ε (tests/test_core_densify.py; the bench run of
commit 38fd8cc, in the git history of bench/README.md).
ε = 1e-10 would make the IoU bound 6e-10 too, at about twice the vertices (world countries at
1:10m: 45× against 21× the input's vertices; 50 m pieces: 88×).

Where the grid is reached (d > τ even between neighbouring grid points) the result is the 50 m
result itself, vertex for vertex. What this saves: an edge whose image is straight (a meridian
or a parallel in a cylindrical equal-area CRS such as the default EPSG:6933, or an edge between
projected CRSs related by a near-linear map) gets no new vertex, and nor does an edge whose
image bends by less than τ over its length; the others stop
as soon as the chord is within τ. The O(ℓ / R) term (the parabola's cubic correction, which
the middle point does not see) is why edges longer than ``MAX_GRID_PIECES`` grid pieces
(12.8 km) are tested piece by piece (step 3): on shorter ones it is below 0.2 % of d, inside
the 0.9 margin of step 2. An edge or piece whose middle point or ends cannot be projected, or whose
image jumps (an edge across the antimeridian, which the equal-area CRS maps to both ends of
the world), has d = NaN or a huge d and is split down to the grid: the 50 m pieces again.
In a geographic CRS no piece is left wider than a quarter turn of longitude (an edge from 180°
to -180° along a parallel has d = 0, yet read whole it would jump by a full turn): such rings
are read by ``prepare`` as the 50 m pieces read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyproj
import shapely

from .crs import transformer

#: Each polygon's area may differ from the 50 m result by at most this fraction of itself
#: (first order in the pieces' length; see the module docstring).
RELATIVE_AREA_ERROR = 1e-9

#: Edges longer than this many grid pieces (12.8 km at 50 m) are not cut by the parabola read
#: from their middle point alone: their pieces are tested one by one (module docstring).
MAX_GRID_PIECES = 256

#: Pieces of an edge up to MAX_GRID_PIECES long are chosen so that the parabola read from the
#: edge's middle puts each within this fraction of τ (covers its O(ℓ / R) error, < 0.2 %).
PARABOLA_MARGIN = 0.9

_POLYGON = 3


class Projector:
    """Source CRS → longitude/latitude on the equal-area CRS's datum → equal-area CRS, for
    arrays of points: the path ``prepare._to_equal_area`` takes (always_xy, no error check:
    points PROJ cannot map come back infinite)."""

    def __init__(self, crs: pyproj.CRS, equal_area_crs: pyproj.CRS):
        lonlat = equal_area_crs.geodetic_crs
        if lonlat is None:
            self._steps = [transformer(crs, equal_area_crs)]
            return
        self._steps = []
        if crs != lonlat:
            self._steps.append(transformer(crs, lonlat))
        self._steps.append(transformer(lonlat, equal_area_crs))

    def __call__(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Float arrays of shape (n,) in source units → (x, y) in equal-area metres."""
        if len(x) == 0:
            return np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        for step in self._steps:
            x, y = step.transform(x, y, errcheck=False)
        return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def densify_adaptive(
    geoms: np.ndarray,
    project: Projector,
    step: float,
    relative_error: float = RELATIVE_AREA_ERROR,
    half_turn: float | None = None,
) -> tuple[np.ndarray, int]:
    """Add vertices of the ``step`` grid to each edge only where the projected image needs them.

    Stages (module docstring): the edges of the polygonal rows (``_edges``); each row's
    tolerance τ; the middle test of every edge long enough to split (``_middle_test``); rows
    whose every edge goes down to the grid, done by GEOS (``_full_rows``); the cut of the
    other edges into k pieces, with the bisection of the long ones (``_long_edge_points``);
    the insertion of the new points (``_insert``).

    Args:
        geoms: object array, shape (n,), Polygons and MultiPolygons (None and empty allowed)
            in the source CRS; in a geographic CRS with continuous longitudes.
        project: the map from source coordinates to equal-area metres.
        step: the grid spacing in source units (``crs.densify_step``: 50 m), > 0.
        relative_error: ε of the module docstring, ≥ 0 (0: every grid point, the 50 m result).
        half_turn: in a geographic source CRS, 180° in its units: no piece is left wider
            than half of it, so that an edge spanning half a turn of longitude or more (a ring
            drawn across the antimeridian the long way, a cap drawn flat round a pole) is
            read as the 50 m pieces read it, whatever its image.

    Returns:
        (geometries, n_added): a new object array, shape (n,), in the source CRS (rows with no
        new vertex are the same objects), and the number of vertices added.

    Raises:
        ValueError: ``step`` not positive and finite, or ``relative_error`` negative.
    """
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"step must be positive and finite, got {step!r}")
    if not relative_error >= 0:
        raise ValueError(f"relative_error must be >= 0, got {relative_error!r}")
    out = np.array(geoms, dtype=object, copy=True)
    edges = _edges(out, step)
    if edges is None:
        return out, 0
    tx, ty = project(edges.coords[:, 0], edges.coords[:, 1])
    tolerance = _tolerance(tx, ty, edges.coord_ring, edges.ring_part, edges.part_row,
                           len(edges.rows), relative_error)
    limit = tolerance[edges.row]
    grid = _Grid(edges.x0, edges.y0, edges.dx, edges.dy, edges.n_pieces, project)
    ends = _ProjectedEnds(tx, ty, edges.start)
    e, n, k = _middle_test(grid, ends, limit, edges.split, edges.dx, half_turn)
    (e, n, k), n_full = _full_rows(out, edges, step, e, n, k)
    long = n > MAX_GRID_PIECES
    cut = ~long & (k >= 2)
    added = [_cut_points(grid, e[cut], n[cut], k[cut])]
    if long.any():
        added += _long_edge_points(grid, ends, limit, e[long], n[long], k[long])
    return out, _insert(out, edges, added) + n_full


@dataclass(frozen=True)
class _Edges:
    """The edges of the polygonal rows of a layer: consecutive coordinates of one ring, each
    named by the position of its start in ``coords``.

    Attributes:
        rows: int array, (n_rows,): positions of the polygonal, non-empty rows in the layer.
        part_row, ring_part: int arrays: the row (0..n_rows-1) of each part, the part of each
            ring (shapely's ``return_index``).
        coords: float array, (n_coords, 2): every ring's coordinates, in the source CRS.
        coord_ring: int array, (n_coords,): the ring of each coordinate.
        start: int array, (n_edges,): the position in ``coords`` of each edge's start.
        x0, y0, dx, dy: float arrays, (n_edges,): each edge's start and extent, source units.
        n_pieces: float array, (n_edges,): ceil(length / step), GEOS's count of grid pieces
            (1 where the length is not finite).
        row: int array, (n_edges,): the row (0..n_rows-1) of each edge.
        split: int array: the edges of at least two grid pieces, the only ones tested.
    """

    rows: np.ndarray
    part_row: np.ndarray
    ring_part: np.ndarray
    coords: np.ndarray
    coord_ring: np.ndarray
    start: np.ndarray
    x0: np.ndarray
    y0: np.ndarray
    dx: np.ndarray
    dy: np.ndarray
    n_pieces: np.ndarray
    row: np.ndarray
    split: np.ndarray


def _edges(out: np.ndarray, step: float) -> _Edges | None:
    """The edges of the polygonal rows of ``out`` (object array, shape (n,)), or None when no
    edge is at least two grid pieces long (nothing to add)."""
    polygonal = np.isin(shapely.get_type_id(out), (_POLYGON, 6)) & ~shapely.is_empty(out)
    rows = np.flatnonzero(polygonal)
    if len(rows) == 0:
        return None
    parts, part_row = shapely.get_parts(out[rows], return_index=True)
    rings, ring_part = shapely.get_rings(parts, return_index=True)
    coords, coord_ring = shapely.get_coordinates(rings, return_index=True)
    if len(coords) < 2:
        return None
    same_ring = coord_ring[1:] == coord_ring[:-1]
    start = np.flatnonzero(same_ring)
    x0, y0 = coords[start, 0], coords[start, 1]
    dx, dy = coords[start + 1, 0] - x0, coords[start + 1, 1] - y0
    with np.errstate(invalid="ignore", over="ignore"):
        n_pieces = np.ceil(np.sqrt(dx * dx + dy * dy) / step)
    n_pieces = np.where(np.isfinite(n_pieces), n_pieces, 1.0)
    split = np.flatnonzero(n_pieces >= 2)
    if len(split) == 0:
        return None
    return _Edges(rows, part_row, ring_part, coords, coord_ring, start, x0, y0, dx, dy,
                  n_pieces, part_row[ring_part[coord_ring[start]]], split)


@dataclass(frozen=True)
class _ProjectedEnds:
    """The projected coordinates (``tx``, ``ty``, equal-area metres, per coordinate) and each
    edge's start position ``start``: edge e runs from ``tx[start[e]]`` to
    ``tx[start[e] + 1]``."""

    tx: np.ndarray
    ty: np.ndarray
    start: np.ndarray

    def of(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(x0, y0, x1, y1) of the projected ends of edges ``e``."""
        first = self.start[e]
        return self.tx[first], self.ty[first], self.tx[first + 1], self.ty[first + 1]


def _middle_test(grid: _Grid, ends: _ProjectedEnds, limit, e, dx, half_turn):
    """Step 2 of the module docstring, for edges ``e``: the middle grid point's distance d
    from the chord gives k = ceil(sqrt(d / (margin·τ))) equal pieces (an image bending like a
    parabola deviates d / k² over a k-th of its length), within [1, n]; in a geographic CRS
    (``half_turn``) at least one piece per quarter turn of longitude (``dx``: the edges'
    source extents in x). Returns ``(e, n, k)``: int arrays, n the edges' grid pieces."""
    n = grid.n[e].astype(np.int64)
    d = grid.distance(e, np.zeros_like(n), n, *ends.of(e))[0]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        k = np.ceil(np.sqrt(d / (PARABOLA_MARGIN * limit[e])))
    k = np.where(np.isfinite(k), k, n).astype(np.int64)
    if half_turn is not None:
        # No piece wider than a quarter turn: read piece by piece, a ring never jumps by half
        # a turn where the 50 m pieces did not (the reading of prepare._to_equal_area).
        k = np.maximum(k, np.ceil(np.abs(dx[e]) / (half_turn / 2)).astype(np.int64))
    return e, n, np.clip(k, 1, n)


def _full_rows(out: np.ndarray, edges: _Edges, step: float, e, n, k):
    """Rows whose every tested edge goes down to the grid (k = n; fields in UTM, say: their
    tolerance is micrometres) are the 50 m result itself: GEOS's densifier makes it faster.
    Those rows of ``out`` are replaced by ``shapely.segmentize``. Returns ``((e, n, k),
    n_full)``: the edges of the other rows and the vertices GEOS added."""
    n_rows = len(edges.rows)
    partial = np.zeros(n_rows, dtype=bool)
    partial[edges.row[e[k < n]]] = True
    full_rows = np.zeros(n_rows, dtype=bool)
    full_rows[edges.row[e]] = True
    full_rows &= ~partial
    if not full_rows.any():
        return (e, n, k), 0
    on_full = full_rows[edges.row[e]]
    n_full = int((n[on_full] - 1).sum())
    out[edges.rows[full_rows]] = shapely.segmentize(out[edges.rows[full_rows]], step)
    return (e[~on_full], n[~on_full], k[~on_full]), n_full


def _long_edge_points(grid: _Grid, ends: _ProjectedEnds, limit, e, n, k) -> list:
    """Step 3 of the module docstring: edges ``e`` longer than MAX_GRID_PIECES grid pieces,
    where the parabola is not trusted: each of their k pieces is tested and halved while it
    fails (``_bisect``). Returns the list of (edge, grid index, source x, source y) arrays of
    the points added: the cut points, then one per level of the bisection."""
    piece_edge = np.repeat(e, k + 1)
    j = np.arange(len(piece_edge)) - np.repeat(np.cumsum(k + 1) - (k + 1), k + 1)
    index = j * np.repeat(n, k + 1) // np.repeat(k, k + 1)
    inner = (j > 0) & (j < np.repeat(k, k + 1))
    px, py = np.empty(len(index)), np.empty(len(index))
    px[inner], py[inner] = grid.project(*grid.source(piece_edge[inner], index[inner]))
    at_start, at_end = j == 0, ~inner & (j > 0)
    x0, y0, x1, y1 = ends.of(e)
    px[at_start], py[at_start] = x0, y0
    px[at_end], py[at_end] = x1, y1
    starts = np.flatnonzero(~at_end)  # each piece by its first point
    return [_cut_points(grid, e, n, k)] + _bisect(
        grid, limit, piece_edge[starts], index[starts], index[starts + 1],
        px[starts], py[starts], px[starts + 1], py[starts + 1])


def _insert(out: np.ndarray, edges: _Edges, added: list) -> int:
    """Put the points ``added`` (a list of (edge, grid index, source x, source y) arrays) into
    their rings and replace the rows they changed in ``out``. Returns the number of points."""
    added_edge, added_index, added_x, added_y = (np.concatenate(c) for c in zip(*added))
    if len(added_edge) == 0:
        return 0
    # Each new point goes between its edge's ends: sort on (start position + fraction along).
    start = edges.start[added_edge]
    key = np.concatenate([np.arange(len(edges.coords), dtype=float),
                          start + added_index / edges.n_pieces[added_edge]])
    order = np.argsort(key, kind="stable")
    coords = np.concatenate([edges.coords, np.column_stack([added_x, added_y])])[order]
    coord_ring = np.concatenate([edges.coord_ring, edges.coord_ring[start]])[order]

    rows = edges.rows
    changed = np.zeros(len(rows), dtype=bool)
    changed[edges.row[added_edge]] = True
    polygons = shapely.polygons(
        shapely.linearrings(coords, indices=coord_ring), indices=edges.ring_part
    )
    rebuilt = shapely.multipolygons(polygons, indices=edges.part_row)
    single = (shapely.get_type_id(out[rows]) == _POLYGON) & (
        shapely.get_num_geometries(rebuilt) == 1
    )
    rebuilt[single] = shapely.get_geometry(rebuilt[single], 0)
    out[rows[changed]] = rebuilt[changed]
    return len(added_edge)


class _Grid:
    """The ``step`` grids of a set of edges: edge e runs from (x0[e], y0[e]) by (dx[e], dy[e])
    in source units and has n[e] pieces; grid point i of it is at fraction i / n[e] (as in
    GEOS's densifier)."""

    def __init__(self, x0, y0, dx, dy, n, project):
        self.x0, self.y0, self.dx, self.dy, self.n, self.project = x0, y0, dx, dy, n, project

    def source(self, e, i):
        """Source coordinates of grid point ``i[k]`` of edge ``e[k]``."""
        fraction = i / self.n[e]
        return self.x0[e] + fraction * self.dx[e], self.y0[e] + fraction * self.dy[e]

    def distance(self, e, i0, i1, x0, y0, x1, y1):
        """For the intervals [i0, i1] of edges e whose ends project to (x0, y0), (x1, y1):
        (d, m, sx, sy, px, py): the distance in the equal-area CRS of the projected middle
        grid point m = (i0 + i1) // 2 from the chord (NaN where not finite), m, its source
        and projected coordinates."""
        m = (i0 + i1) // 2
        sx, sy = self.source(e, m)
        px, py = self.project(sx, sy)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            cx, cy = x1 - x0, y1 - y0
            chord = np.sqrt(cx * cx + cy * cy)
            across = np.abs(cx * (py - y0) - cy * (px - x0)) / chord
            d = np.where(chord > 0, across, np.hypot(px - x0, py - y0))
        return d, m, sx, sy, px, py


def _cut_points(grid: _Grid, e, n, k) -> tuple:
    """The k - 1 inner points cutting edges e (of n grid pieces) into k nearly equal pieces,
    at grid indices j·n // k: (edge, grid index, source x, source y) arrays."""
    new_edge = np.repeat(e, k - 1)
    j = np.arange(1, len(new_edge) + 1) - np.repeat(np.cumsum(k - 1) - (k - 1), k - 1)
    new_index = j * np.repeat(n, k - 1) // np.repeat(k, k - 1)
    return (new_edge, new_index, *grid.source(new_edge, new_index))


def _bisect(grid: _Grid, limit, e, i0, i1, x0, y0, x1, y1) -> list:
    """Halve the intervals [i0, i1] of edges e (projected ends (x0, y0), (x1, y1)) while the
    middle grid point is farther than ``limit[e]`` from the chord; an interval of more than
    MAX_GRID_PIECES pieces is kept whole only if its quarter, middle and three-quarter grid
    points are all within ``limit[e] / 2``; intervals of one piece are never split. Returns a
    list of (edge, grid index, source x, source y) arrays of the points added, one a level."""
    added = []
    todo = i1 - i0 >= 2
    e, i0, i1, x0, y0, x1, y1 = (a[todo] for a in (e, i0, i1, x0, y0, x1, y1))
    while len(e):
        d, m, sx, sy, px, py = grid.distance(e, i0, i1, x0, y0, x1, y1)
        long = np.flatnonzero(i1 - i0 > MAX_GRID_PIECES)
        split = ~(d <= limit[e])
        if len(long):
            args = (e[long], x0[long], y0[long], x1[long], y1[long])
            quarter = grid.distance(args[0], i0[long], m[long], *args[1:])[0]
            three_quarter = grid.distance(args[0], m[long], i1[long], *args[1:])[0]
            worst = np.fmax(np.fmax(d[long], quarter), three_quarter)
            split[long] = ~(worst <= limit[e[long]] / 2)
        if not split.any():
            break
        e, i0, i1, x0, y0, x1, y1, m, sx, sy, px, py = (
            a[split] for a in (e, i0, i1, x0, y0, x1, y1, m, sx, sy, px, py)
        )
        added.append((e, m, sx, sy))
        # Each split interval becomes its two halves; halves of one grid piece are done.
        left, right = m - i0 >= 2, i1 - m >= 2
        e = np.concatenate([e[left], e[right]])
        i0, i1 = np.concatenate([i0[left], m[right]]), np.concatenate([m[left], i1[right]])
        x0, y0 = np.concatenate([x0[left], px[right]]), np.concatenate([y0[left], py[right]])
        x1, y1 = np.concatenate([px[left], x1[right]]), np.concatenate([py[left], y1[right]])
    return added


def _tolerance(x, y, coord_ring, ring_part, part_row, n_rows, relative_error):
    """τ of each row, shape (n_rows,): (3/2)·ε·A/P of the polygon with its vertices projected
    as they are (A: shells minus holes, P: all rings, in the equal-area CRS). 0 where A or P
    is not positive and finite (every grid point is then kept: the 50 m result)."""
    starts = np.flatnonzero(np.r_[True, coord_ring[1:] != coord_ring[:-1]])
    same = coord_ring[1:] == coord_ring[:-1]
    # (Vertices the CRS cannot take are infinite: their rows get no tolerance, then drop.)
    with np.errstate(invalid="ignore", over="ignore"):
        # Shoelace and length per ring, relative to each ring's first vertex (no
        # cancellation).
        x = x - np.repeat(x[starts], np.diff(np.r_[starts, len(x)]))
        y = y - np.repeat(y[starts], np.diff(np.r_[starts, len(y)]))
        cross = np.where(same, x[:-1] * y[1:] - x[1:] * y[:-1], 0.0)
        dx, dy = np.diff(x), np.diff(y)
        length = np.where(same, np.sqrt(dx * dx + dy * dy), 0.0)
    n_rings = int(coord_ring.max()) + 1 if len(coord_ring) else 0
    ring_area = np.abs(np.bincount(coord_ring[:-1], weights=cross, minlength=n_rings)) / 2.0
    ring_length = np.bincount(coord_ring[:-1], weights=length, minlength=n_rings)
    shell = np.r_[True, ring_part[1:] != ring_part[:-1]]
    signed = np.where(shell, ring_area, -ring_area)
    ring_row = part_row[ring_part]
    area = np.bincount(ring_row, weights=signed, minlength=n_rows)
    perimeter = np.bincount(ring_row, weights=ring_length, minlength=n_rows)
    with np.errstate(invalid="ignore", divide="ignore"):
        tolerance = 1.5 * relative_error * area / perimeter
    return np.where(np.isfinite(tolerance) & (tolerance > 0), tolerance, 0.0)
