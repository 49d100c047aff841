"""Cheap upper bounds on |r ∩ p| for candidate pairs, and a cheap proof that |r ∩ p| > 0.

Most intersecting pairs of two field layers are neighbours overlapping by a sliver (a
prediction crossing the edge it shares with the next field): at 50k fields that share
edges, four in five pairs have IoU < 0.05 and cost four fifths of the overlays. Their exact
area changes no result when it cannot reach the lowest IoU threshold, nor be any field's
largest overlap or best IoU (``overlap.settle`` decides that); what is needed is only an upper
bound, and proof that the pair overlaps at all (it is counted among a field's overlapping
predictions).

The bound: r lies inside each half-plane H bounded by a supporting line of r's convex hull,
so |r ∩ p| <= |p ∩ H|. For a line through a point o, |p ∩ H| is the sum over p's edges of
½ (q0 − o) × (q1 − o), where (q0, q1) is the part of the edge in H: along the line the
boundary of p ∩ H runs parallel to (q − o) and adds nothing (Green's theorem), so no polygon
is built and p may be any polygon, with holes. The line is the one of r's hull edges
beyond which p's box centre lies farthest: for a neighbour, the edge the two fields share.

The proof must convince GEOS too: a pair counts only if its overlay has positive area, and a
vertex of p one ulp inside r (neighbours whose shared corner or T-junction was rounded apart,
by reprojection say) overlaps r by a triangle about one ulp across, which the overlay rounds
to a line. So an overlap is shown only by a region of p ∩ r far wider than any rounding: at
one of p's vertices farthest inside r's lines, on the bisector of p's corner there, a
point T 2ρ from both of the corner's edges (ρ = 1e-10 × the pair's largest coordinate, 1 mm at
10,000 km) inside p, with the square of half-side ρ around T strictly inside r (its centre and
corners: prepared point-in-polygon tests). p's own edges, the ones it may share with r, are
then 2ρ from T by construction; only an edge meeting T by chance could come closer.
"""

from __future__ import annotations

import numpy as np
import shapely

from ..geometry.segments import budget_splits

#: At most this many supporting lines per reference: its simplified convex hull's longest
#: edges (any subset of supporting lines bounds; more lines only choose better).
MAX_LINES = 8

#: The hull is simplified (Douglas–Peucker) with this tolerance relative to the square root
#: of its area, and each kept edge is moved outward by the tolerance so that it still
#: supports the hull: a densified straight edge (18 vertices for a reprojected quadrilateral)
#: becomes one line, at a cost of tolerance × edge length to the bound.
_SIMPLIFY_RELATIVE = 1e-3

#: Added to each bound, relative to |p|.
_SLACK_RELATIVE = 1e-9

#: And relative to the sum over p's edges in the half-plane of ‖q0 − o‖₁ ‖q1 − o‖₁ (the
#: cross products' sizes, o on the line): more than the rounding of the cross products, of
#: the crossing points (an edge along the line may cross it anywhere) and of the line's
#: direction, and of their sum over up to 4e6 edges. The cross products are taken about the
#: line's origin, which may be as far from p as r's size: relative to |p| alone (a small
#: prediction at the far end of a long, thin reference) the rounding exceeded 1e-8 |p|.
_ROUNDING_RELATIVE = 1e-9

#: And relative to the pair's largest absolute coordinate times the length of the boundary
#: of p in the half-plane plus r's perimeter: more than the error of GEOS's overlay area,
#: whose vertices are rounded (or, on its fallback grid, snapped by at most 1e-11 of that
#: coordinate): the bound is compared with the areas the overlay gives, not exact ones.
_OVERLAY_RELATIVE = 1e-11

#: Half-side of the square of p ∩ r that shows an overlap, relative to the pair's largest
#: absolute coordinate: some 1e5 ulps, a hundred times the tolerance of GEOS's snapping
#: overlay (1e-12) and ten times ``overlap``'s fallback grid (at most 1e-11). (1e-9 showed
#: 2 % fewer of fields_50k's slivers, overlaps of a few cm at 1e7 m from the origin.)
_SHOWN_RELATIVE = 1e-10

#: The centre and corners of that square, in half-sides.
_SQUARE = np.array([(0.0, 0.0), (-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)])

#: Vertices of p tried per pair to show an overlap, the farthest inside r's lines first.
_SHOWN_TRIES = 2

#: Pairs are bounded in batches of about this many edges of their predictions (some 100
#: bytes each while a batch is measured).
_ROW_BATCH = 262_144


class SupportingLines:
    """Lines whose inner half-planes contain each geometry, shape (n_lines,) in groups.

    Attributes:
        start: int64, shape (n_geometries + 1,): geometry k's lines are start[k]:start[k+1].
        origin: float, shape (n_lines, 2): a point on each line.
        normal: float, shape (n_lines, 2): unit normals pointing into the half-plane.
        reach: float, shape (n_geometries,): each geometry's largest absolute coordinate.
        perimeter: float, shape (n_geometries,): each geometry's boundary length.
    """

    def __init__(self, geometries: np.ndarray):
        """``geometries``: object array, shape (n,), polygonal, non-empty, planar CRS."""
        hull = shapely.convex_hull(geometries)
        size = np.sqrt(shapely.area(hull))
        tolerance = _SIMPLIFY_RELATIVE * size
        simple = shapely.simplify(hull, tolerance, preserve_topology=False)
        kept = shapely.get_num_coordinates(simple)
        bad = (shapely.get_type_id(simple) != 3) | (kept < 4)
        simple[bad] = hull[bad]
        tolerance[bad] = 0.0
        xy, owner = shapely.get_coordinates(simple, return_index=True)
        same = owner[:-1] == owner[1:]
        a, b, owner = xy[:-1][same], xy[1:][same], owner[:-1][same]
        first = np.searchsorted(owner, owner)
        base = a[first]
        # Hull rings are closed; orientation from their signed area (a degenerate hull, a
        # segment or a point, gets no line).
        cross = ((a[:, 0] - base[:, 0]) * (b[:, 1] - base[:, 1])
                 - (b[:, 0] - base[:, 0]) * (a[:, 1] - base[:, 1]))
        n = len(geometries)
        orientation = np.sign(np.bincount(owner, cross, minlength=n))[owner]
        length = np.hypot(b[:, 0] - a[:, 0], b[:, 1] - a[:, 1])
        order = np.lexsort((-length, owner))
        owner, a, b, length, orientation = (
            v[order] for v in (owner, a, b, length, orientation))
        rank = np.arange(len(owner)) - np.searchsorted(owner, owner)
        keep = (rank < MAX_LINES) & (length > 0) & (orientation != 0)
        owner, a, b, length, orientation = (
            v[keep] for v in (owner, a, b, length, orientation))
        with np.errstate(invalid="ignore", divide="ignore"):
            direction = (b - a) / length[:, None] * orientation[:, None]
        self.normal = np.column_stack([-direction[:, 1], direction[:, 0]])
        self.origin = a - self.normal * tolerance[owner][:, None]
        self.start = np.searchsorted(owner, np.arange(n + 1))
        self.reach = np.abs(shapely.bounds(geometries)).max(axis=1)
        self.perimeter = shapely.length(geometries)

    def deepest(self, xy: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For points ``xy`` (float (m, 2)) and the geometry each is measured against
        (``group``, int64 (m,)): the least signed distance to that geometry's lines (>= 0
        inside every half-plane) and the first line giving it; inf and -1 without lines."""
        first = self.start[group]
        count = self.start[group + 1] - first
        depth = np.full(len(group), np.inf)
        line = np.full(len(group), -1, dtype=np.int64)
        for j in range(int(count.max(initial=0))):
            alive = np.flatnonzero(count > j)
            at = first[alive] + j
            d = ((xy[alive, 0] - self.origin[at, 0]) * self.normal[at, 0]
                 + (xy[alive, 1] - self.origin[at, 1]) * self.normal[at, 1])
            better = d < depth[alive]
            depth[alive[better]], line[alive[better]] = d[better], at[better]
        return depth, line


class Edges:
    """The edges of polygonal geometries, grouped by geometry, with each ring's sense.

    Attributes:
        start: int64, shape (n_geometries + 1,): geometry k's edges are start[k]:start[k+1].
        xy0, xy1: float, shape (n_edges, 2): edge ends.
        step: int64, shape (n_edges,): position of the next edge of the ring, relative.
        back: int64, shape (n_edges,): position of the previous edge of the ring, relative.
        sense: float, shape (n_edges,): +1 where the edge runs so that the polygon's inside
            is on its left (exterior counter-clockwise, holes clockwise), −1 otherwise, 0 on
            a ring of no area.
    """

    def __init__(self, geometries: np.ndarray):
        """``geometries``: object array, shape (n,), polygonal (Polygon or MultiPolygon)."""
        parts, part_owner = shapely.get_parts(geometries, return_index=True)
        rings, ring_part = shapely.get_rings(parts, return_index=True)
        exterior = np.r_[True, ring_part[1:] != ring_part[:-1]]
        xy, ring = shapely.get_coordinates(rings, return_index=True)
        same = ring[:-1] == ring[1:]
        self.xy0, self.xy1, ring = xy[:-1][same], xy[1:][same], ring[:-1][same]
        # Rings are closed: an edge's end is the next edge's start, the last's the first's.
        first = np.searchsorted(ring, ring)
        last = np.r_[ring[1:] != ring[:-1], True]
        self.step = np.where(last, first - np.arange(len(ring)), 1)
        start = first == np.arange(len(ring))
        self.back = np.full(len(ring), -1, dtype=np.int64)
        self.back[start] = np.flatnonzero(last) - np.flatnonzero(start)
        base = self.xy0[np.searchsorted(ring, ring)]
        cross = ((self.xy0[:, 0] - base[:, 0]) * (self.xy1[:, 1] - base[:, 1])
                 - (self.xy1[:, 0] - base[:, 0]) * (self.xy0[:, 1] - base[:, 1]))
        ring_sense = np.sign(np.bincount(ring, cross, minlength=len(rings)))
        ring_sense[~exterior] *= -1
        self.sense = ring_sense[ring]
        owner = part_owner[ring_part[ring]]
        self.start = np.searchsorted(owner, np.arange(len(geometries) + 1))


def bounded_slivers(lines: SupportingLines, predicted_geometries: np.ndarray,
                    reference: np.ndarray, predicted: np.ndarray, predicted_box: np.ndarray,
                    predicted_area: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Upper bounds on |r ∩ p| for pairs, and the vertices of p that may show an overlap.

    Args:
        lines: supporting lines of the references (indexed by ``reference``).
        predicted_geometries: object array, shape (n_pred,), polygonal, same planar CRS.
        reference, predicted: int64, shape (n,): the pairs.
        predicted_box: float, shape (n_pred, 4): (xmin, ymin, xmax, ymax) of the predictions.
        predicted_area: float, shape (n_pred,): |p| in the same (planar) units.

    Returns:
        (bound, candidates): float (n,) upper bounds in squared units (inf where none was
        worked out: a reference without a line, or p's box centre inside every line's
        half-plane); candidates = (xy, into, pair), sorted by pair: float (m, 2) up to
        ``_SHOWN_TRIES`` vertices of p per pair on r's side of the line used (where a
        sliver's vertices inside r are), the farthest inside all of r's lines first; float
        (m, 2) for each, the step into p along the bisector of p's corner there, in units
        of ``overlap_shown``'s ρ (see ``_into``); int64 (m,) their pairs (``overlap_shown``
        tests them).

    Memory: pairs are measured in batches of about ``_ROW_BATCH`` edges of their
    predictions, edges extracted per batch.
    """
    n = len(reference)
    bound = np.full(n, np.inf)
    # The line beyond which p's box centre lies farthest. A centre inside every line's
    # half-plane (p's own field, mostly) is left unbounded: its bound would be large.
    centre = (predicted_box[predicted, :2] + predicted_box[predicted, 2:]) / 2.0
    depth, best = lines.deepest(centre, reference)
    pairs = np.flatnonzero(depth < 0)
    size = shapely.get_num_coordinates(predicted_geometries)[predicted[pairs]]
    xy_parts, into_parts = [np.zeros((0, 2))], [np.zeros((0, 2))]
    pair_parts = [np.zeros(0, dtype=np.int64)]
    for lo, hi in budget_splits(size, _ROW_BATCH):
        batch = pairs[lo:hi]
        shapes, local = np.unique(predicted[batch], return_inverse=True)
        area, length, xy, into, owner = _clipped_areas(
            lines, Edges(predicted_geometries[shapes]), best[batch], local, reference[batch])
        reach = np.maximum(lines.reach[reference[batch]],
                           np.abs(predicted_box[predicted[batch]]).max(axis=1))
        bound[batch] = (area + _SLACK_RELATIVE * predicted_area[predicted[batch]]
                        + _OVERLAY_RELATIVE * reach
                        * (length + lines.perimeter[reference[batch]]))
        xy_parts.append(xy)
        into_parts.append(into)
        pair_parts.append(batch[owner])
    return bound, (np.concatenate(xy_parts), np.concatenate(into_parts),
                   np.concatenate(pair_parts))


def _clipped_areas(lines: SupportingLines, edges: Edges, line: np.ndarray, p: np.ndarray,
                   reference: np.ndarray):
    """|p ∩ H| (plus its rounding, ``_ROUNDING_RELATIVE``) for pairs of a line (its inner
    half-plane H) and a prediction (positions into ``edges``), with the deepest vertices of p
    in H: (areas (n,), lengths (L1) of p's boundary in H (n,), their xy (m, 2), their steps
    into p (m, 2) (``_into``), their pairs (m,), sorted, the deepest first in each pair).
    Deepest: farthest inside all of the reference's lines (``reference``, int64 (n,), the
    pairs' groups in ``lines``)."""
    per_pair = edges.start[p + 1] - edges.start[p]
    row_pair = np.repeat(np.arange(len(p)), per_pair)
    row_edge = (np.arange(len(row_pair))
                - np.repeat(np.cumsum(per_pair) - per_pair, per_pair)
                + np.repeat(edges.start[p], per_pair))
    # Which vertices lie in the half-plane: one product per vertex, relative to the line's
    # origin (exact to rounding of the polygon's own size, not of its coordinates).
    ox, oy = np.repeat(lines.origin[line, 0], per_pair), np.repeat(lines.origin[line, 1], per_pair)
    side = ((edges.xy0[row_edge, 0] - ox) * np.repeat(lines.normal[line, 0], per_pair)
            + (edges.xy0[row_edge, 1] - oy) * np.repeat(lines.normal[line, 1], per_pair)
            >= 0.0)
    del ox, oy
    in1 = side[np.arange(len(side)) + edges.step[row_edge]]
    part = np.flatnonzero(side | in1)
    in0, in1 = side[part], in1[part]
    edge, owner = row_edge[part], row_pair[part]
    del side, row_edge, row_pair
    origin, normal = lines.origin[line[owner]], lines.normal[line[owner]]
    u0x, u0y = edges.xy0[edge, 0] - origin[:, 0], edges.xy0[edge, 1] - origin[:, 1]
    u1x, u1y = edges.xy1[edge, 0] - origin[:, 0], edges.xy1[edge, 1] - origin[:, 1]
    d0 = u0x * normal[:, 0] + u0y * normal[:, 1]
    d1 = u1x * normal[:, 0] + u1y * normal[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.clip(d0 / (d0 - d1), 0.0, 1.0)
    cx, cy = u0x + (u1x - u0x) * f, u0y + (u1y - u0y) * f
    q0x, q0y = np.where(in0, u0x, cx), np.where(in0, u0y, cy)
    q1x, q1y = np.where(in1, u1x, cx), np.where(in1, u1y, cy)
    cross = (q0x * q1y - q1x * q0y) * edges.sense[edge]
    size = (np.abs(q0x) + np.abs(q0y)) * (np.abs(q1x) + np.abs(q1y))
    area = (np.maximum(np.bincount(owner, cross, minlength=len(p)) / 2.0, 0.0)
            + _ROUNDING_RELATIVE * np.bincount(owner, size, minlength=len(p)))
    length = np.bincount(owner, np.abs(q1x - q0x) + np.abs(q1y - q0y), minlength=len(p))
    # Vertices of p on r's side of the line, where a sliver's vertices inside r are: the
    # few of each pair farthest inside all of r's lines.
    vertex, owner = edge[in0], owner[in0]
    v = edges.xy0[vertex]
    depth, _ = lines.deepest(v, reference[owner])
    # Each pair's vertices are one run (owner is sorted): its deepest, then the next.
    n_in = len(owner)
    runs = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if n_in else np.zeros(0, int)
    run_length = np.diff(np.r_[runs, n_in])
    taken = np.zeros(n_in, dtype=bool)
    picked = [np.zeros(0, dtype=np.int64)]
    for _ in range(_SHOWN_TRIES if n_in else 0):
        left = np.where(taken, -np.inf, depth)
        top = np.repeat(np.maximum.reduceat(left, runs), run_length)
        choice = np.minimum.reduceat(
            np.where((left == top) & ~taken, np.arange(n_in), n_in), runs)
        choice = choice[choice < n_in]
        taken[choice] = True
        picked.append(choice)
    picked = np.concatenate(picked)
    picked = picked[np.argsort(owner[picked], kind="stable")]
    return area, length, v[picked], _into(edges, vertex[picked]), owner[picked]


def _into(edges: Edges, vertex: np.ndarray) -> np.ndarray:
    """For vertices V (edge starts, int64 (m,)), float (m, 2): 4 w / |w|², w the sum of the
    unit normals into p of the two edges at V. V + ρ × that is on the bisector of p's corner,
    2ρ from both edges' lines (the corners of a square of half-side ρ around it are ρ√2 away).
    NaN or inf for a corner that turns back on itself."""
    v = edges.xy0[vertex]
    d_in = v - edges.xy0[vertex + edges.back[vertex]]
    d_out = edges.xy1[vertex] - v
    with np.errstate(invalid="ignore", divide="ignore"):
        d_in /= np.hypot(d_in[:, 0], d_in[:, 1])[:, None]
        d_out /= np.hypot(d_out[:, 0], d_out[:, 1])[:, None]
        w = edges.sense[vertex][:, None] * np.column_stack(
            [-(d_in[:, 1] + d_out[:, 1]), d_in[:, 0] + d_out[:, 0]])
        return w * (4.0 / (w[:, 0] ** 2 + w[:, 1] ** 2))[:, None]


def overlap_shown(prepared_reference: np.ndarray, predicted: np.ndarray,
                  pair_predicted: np.ndarray, candidates, n: int) -> np.ndarray:
    """Pairs shown to overlap with positive area, even to GEOS's overlay: for one of the
    candidate vertices of p, the point T = vertex + ρ × its step into p (``_into``: 2ρ from
    the lines of p's two edges there), ρ = ``_SHOWN_RELATIVE`` × the pair's largest absolute
    coordinate, lies inside p, and the square of half-side ρ around T strictly inside r (its
    centre and corners). A corner of p thinner than that (a spike), or one less than about
    3ρ inside r, shows nothing.

    Args:
        prepared_reference: object array, shape (n,), each pair's reference (``shapely
            .prepare``d for speed).
        predicted: object array, shape (n_pred,), the predictions.
        pair_predicted: int64, shape (n,): each pair's position in ``predicted``.
        candidates: (xy, into, pair): float (m, 2) vertices of p, float (m, 2) their steps
            into p, int64 (m,) their pair positions, sorted, as ``bounded_slivers`` returns
            them; each pair's vertices are tried in order until one shows the overlap.
        n: number of pairs.

    Returns:
        bool (n,). False means only "not shown", not "no overlap".
    """
    xy, into, pair = candidates
    shown = np.zeros(n, dtype=bool)
    if len(pair) == 0:
        return shown
    box = np.abs(np.concatenate([shapely.bounds(prepared_reference),
                                 shapely.bounds(predicted)[pair_predicted]], axis=1))
    rho = _SHOWN_RELATIVE * box.max(axis=1)
    rank = np.arange(len(pair)) - np.searchsorted(pair, pair)
    with np.errstate(invalid="ignore"):
        centre = xy + into * rho[pair][:, None]
    finite = np.isfinite(centre).all(axis=1)
    for k in range(int(rank.max()) + 1):
        at = np.flatnonzero((rank == k) & ~shown[pair] & finite)
        square = (centre[at, None, :] + _SQUARE[None] * rho[pair[at], None, None]).reshape(-1, 2)
        in_r = shapely.contains_xy(np.repeat(prepared_reference[pair[at]], len(_SQUARE)),
                                   square[:, 0], square[:, 1])
        at = at[in_r.reshape(-1, len(_SQUARE)).all(axis=1)]
        inside = shapely.contains_xy(predicted[pair_predicted[pair[at]]], centre[at, 0],
                                     centre[at, 1])
        shown[pair[at[inside]]] = True
    return shown
