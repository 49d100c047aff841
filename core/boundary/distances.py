"""Boundary metrics: Hausdorff and symmetric mean boundary distance of matched pairs, measured
in the WGS 84 / UTM zone of each reference field (lengths within a tolerance: boundary/tolerance.py).

Definitions, zones and error bounds are those of the agribound 1.0 documentation, "Evaluation".
The seed samples every boundary at points at most
Δ apart; here the distances are integrated adaptively instead, with the seed's bounds as the
contract: the Hausdorff distance is underestimated by at most Δ/2 and never overestimated
beyond rounding, the mean boundary distance is within Δ/4 of its exact value, and the work
does not grow with the boundary length in metres; memory and time grow linearly with the
vertices of a pair. See ``pair_boundary_distances``. Pairs wider than a UTM zone: ``boundary/wide.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import shapely

from ..util.checks import check_positive
from ..util.memory import check_memory
from ..util.parallel import WORKERS, ProgressCallback, run_chunks
from ..util.wording import count_of
from ..geometry.segments import (
    Segments,
    boundary_curves,
    boundary_segments,
    group_ids,
    hypot,
    ranges,
    split_segments,
)
from ._exact import pair_distances
from .wide import (
    method_label,
    pairs_to_conformal,
    scale_factor,
    scale_group,
    wide_pairs,
)
from .zones import (  # noqa: F401 (the zones were defined here: re-exported)
    ZonedLayer,
    centroid_utm_epsg,
    utm_crs,
    utm_epsg,
    utm_epsg_codes,
    zoned_layer,
)

#: Default sample spacing Δ in metres (``boundary_sample_spacing_m``).
BOUNDARY_SAMPLE_SPACING_M = 1.0

#: With automatic spacing, Δ = max(BOUNDARY_SAMPLE_SPACING_M, perimeter / this).
BOUNDARY_MAX_SAMPLES = 1000

#: Pairs are processed in chunks of about this many vertices (both boundaries), some 0.3 s
#: of work and 80 MB of memory each; chunks run on both cores (``parallel.run_chunks``).
#: Smaller chunks cost more than their share: the two threads then take turns at the GIL
#: for many small numpy calls (40,000 vertices: 4 times the thread switches, ~20 % slower).
_CHUNK_VERTICES = 80_000

#: Bytes per vertex of a chunk held while it is measured (its segments, pieces and their
#: frames), and the working memory of a stage beyond that, for the memory check.
_BYTES_PER_VERTEX = 300
_WORKING_BYTES = 256 * 2**20
_WORKING_BYTES_PER_VERTEX = 1024  # the working memory of a small chunk: this per vertex
#: ... and this per candidate row (piece, segment) its pairs can gather at once: fewer than
#: n² for a pair of n vertices (its pieces, about n, each against its target segments). Per
#: vertex alone, a pair of 1,500 vertices whose nearest points are far (a hole the other
#: polygon lacks) counted 1.9 MB and took 75 MB (3,000 vertices: 3.8 MB and 274 MB).
_BYTES_PER_ROW = 200

#: Pairs with more segments than this are measured against simplified boundaries (the
#: targets of the distance), each side when that at least halves its segments: the target
#: is simplified (Douglas-Peucker) within ``_COARSE_FRACTION`` Δ, the pieces integrated with
#: ``_COARSE_DELTA`` Δ. See ``pair_boundary_distances`` for the error bounds.
_COARSE_MIN_SEGMENTS = 4096
_COARSE_GAIN = 0.5
_COARSE_FRACTION = 1.0 / 32.0
_COARSE_DELTA = 0.75

#: Douglas-Peucker simplifies a curve in runs of at most this many vertices (consecutive runs
#: share their end vertex). GEOS recurses once per kept vertex in the worst case and takes
#: time quadratic in the vertices of the line it is given: a comb-like ring of 16,000
#: vertices overflowed a 1 MB thread stack (the default for a thread on Windows) and killed
#: the process; 64,000 took 22 s, 128,000 89 s (8 MB stack: segfault).
_SIMPLIFY_RUN = 1024

#: With a local scale factor (a conformal CRS, ``boundary/wide.py``), pieces are at most
#: ``_SCALE_DRIFT`` R / g long in CRS units (g = R |∇ln k|, the pair's largest relative
#: gradient of k; R the Earth's radius): ln k, taken at a piece's middle, changes along it by
#: at most that drift (first order: a distance off by half of it), and a length measured with
#: k at the middle is off by its square. The drift is what 500 m gave at g = 3 (a pair across
#: the equator up to ±71°); pieces are never shorter than 500 m (above g = 3 the drift grows
#: with g, as before), and without a gradient they are 500 m, and never longer than
#: ``_SCALED_PIECE_MAX`` (g near 0: the equator in Mercator).
_EARTH_RADIUS_M = 6_371_000.0
_SCALED_PIECE = 500.0
_SCALE_DRIFT = 3.0 * _SCALED_PIECE / _EARTH_RADIUS_M
_SCALED_PIECE_MAX = 20_000.0


@dataclass(frozen=True)
class PairDistances:
    """Boundary distances of matched pairs; float arrays of shape (n_pairs,), metres.

    Attributes:
        hausdorff_m: Hausdorff distance between the two boundaries.
        mean_distance_m: symmetric mean boundary distance.
        spacing_m: the spacing Δ of each pair's error bounds.
        epsg: int64 UTM zone of each pair (the reference field's; 0 in planar space).
        distance_crs: object array of str: where each pair was measured, "EPSG:326zz" (its
            UTM zone), a scale-corrected conformal CRS for a pair wider than a zone or beyond
            ±80° (``boundary/wide.py``), "" in planar space or without distances.
    """

    hausdorff_m: np.ndarray
    mean_distance_m: np.ndarray
    spacing_m: np.ndarray
    epsg: np.ndarray
    distance_crs: np.ndarray | None = None


def matched_distances_in_utm(
    reference: ZonedLayer,
    predicted: ZonedLayer,
    reference_index,
    predicted_index,
    spacing_m: float | None = BOUNDARY_SAMPLE_SPACING_M,
    progress: ProgressCallback | None = None,
    describe_pairs=None,
) -> PairDistances:
    """Boundary distances of matched pairs, both polygons in the reference field's UTM zone.

    Args:
        reference, predicted: the two layers with their zones (``zoned_layer``).
        reference_index, predicted_index: int arrays, shape (n_pairs,): positions of each
            pair's polygons in the two layers.
        spacing_m: Δ in metres (> 0), or None for automatic, see ``pair_boundary_distances``.
        progress: optional callable(fraction done), see ``pair_boundary_distances``.
        describe_pairs: optional, see ``pair_boundary_distances``.

    Returns:
        PairDistances. A pair whose reference has no zone (zone 0 with a CRS) or whose
        geometries are missing, empty or not finite in the zone gets NaN. A pair whose
        longitudes span more than a UTM zone (6°) or that reaches beyond ±80° is measured in a
        conformal CRS corrected by its local scale factor instead (``boundary/wide.py``), in metres on
        the WGS 84 ellipsoid to 0.1 % (for distances up to 22 km in a pair within one
        hemisphere; the bound is stated there).

    Raises:
        ValueError: bad ``spacing_m``, index arrays of different shapes, one layer planar and
            the other not.

    Source: agribound 1.0 documentation, "Evaluation": "Distances (Hausdorff, boundary
    distances, tolerance metrics) are computed in the WGS 84 / UTM zone of each reference
    field".
    """
    ri = np.asarray(reference_index, dtype=np.int64).reshape(-1)
    pi = np.asarray(predicted_index, dtype=np.int64).reshape(-1)
    if ri.shape != pi.shape:
        raise ValueError("reference_index and predicted_index must have the same shape")
    check_same_space(reference, predicted)
    zones = reference.epsg[ri]
    ref_geoms = reference.local[ri].copy()
    pred_geoms = predicted.local[pi].copy()
    labels = np.full(len(ri), "", dtype=object)
    wide = np.zeros(len(ri), dtype=bool)
    proj4 = np.full(len(ri), "", dtype=object)
    gradient = np.full(len(ri), np.nan)
    if reference.crs is not None:
        wide, proj4, gradient = wide_pairs(reference.source[ri], reference.crs,
                                           predicted.source[pi], predicted.crs)
        ref_geoms[wide] = None
        pred_geoms[wide] = None
        for code in np.unique(zones):
            sel = np.flatnonzero((zones == code) & ~wide)
            pred_geoms[sel] = predicted.in_zone(pi[sel], int(code)) if code else None
            labels[sel] = f"EPSG:{int(code)}" if code else ""
    haus, mean, spacing = pair_boundary_distances(ref_geoms, pred_geoms, spacing_m, progress,
                                                  describe_pairs)
    # Pairs whose CRSs share a scale factor (every Mercator, both polar stereographic) are
    # measured in one call: the two cores then share the work of all of them.
    groups = np.array([scale_group(crs) for crs in proj4[wide]], dtype=object)
    for group in np.unique(groups) if len(groups) else []:
        sel = np.flatnonzero(wide)[groups == group]
        conformal_r, conformal_p = pairs_to_conformal(
            reference.source[ri[sel]], reference.crs, predicted.source[pi[sel]],
            predicted.crs, proj4[sel])
        haus[sel], mean[sel], spacing[sel] = pair_boundary_distances(
            conformal_r, conformal_p, spacing_m,
            describe_pairs=None if describe_pairs is None else lambda k: describe_pairs(sel[k]),
            scale=scale_factor(proj4[sel[0]]), scale_gradient=gradient[sel],
        )
        del conformal_r, conformal_p
        for crs in np.unique(proj4[sel]):
            labels[sel[proj4[sel] == crs]] = method_label(crs)
    return PairDistances(haus, mean, spacing, zones, labels)


def check_same_space(a: ZonedLayer, b: ZonedLayer) -> None:
    """Raises ValueError unless both layers have a CRS or both are planar (crs None)."""
    if (a.crs is None) != (b.crs is None):
        raise ValueError("both layers must have a CRS, or both be planar (crs None)")


def sample_spacing(length_m: np.ndarray, spacing_m: float | None) -> np.ndarray:
    """The spacing Δ of boundaries of the given lengths: ``spacing_m``, or when None,
    ``max(BOUNDARY_SAMPLE_SPACING_M, length / BOUNDARY_MAX_SAMPLES)`` (agribound 1.0)."""
    length_m = np.asarray(length_m, dtype=float)
    if spacing_m is None:
        return np.maximum(BOUNDARY_SAMPLE_SPACING_M, length_m / BOUNDARY_MAX_SAMPLES)
    return np.full(length_m.shape, float(spacing_m))


def pair_boundary_distances(
    reference,
    predicted,
    spacing_m: float | None = BOUNDARY_SAMPLE_SPACING_M,
    progress: ProgressCallback | None = None,
    describe_pairs=None,
    scale=None,
    scale_gradient=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hausdorff distance and symmetric mean distance between the boundaries of each pair.

    With ∂r, ∂p the boundaries (exterior and interior rings of every part) and d(x, B) the
    distance from a point to a boundary:

    - hausdorff = max(max over x in ∂r of d(x, ∂p), max over x in ∂p of d(x, ∂r)), the
      Hausdorff distance of the boundaries as curves (not of their vertices);
    - mean = (∫∂r d(x, ∂p) dx + ∫∂p d(x, ∂r) dx) / (|∂r| + |∂p|).

    Error bounds (the seed's, for its sampling at spacing Δ): the returned Hausdorff distance
    is at most Δ/2 below the exact one and not above it (beyond rounding); the returned mean
    is within Δ/4 of the exact one. Δ of a pair is the larger of its two boundaries' spacings
    (``sample_spacing``). The bounds are met without sampling, and the work does not grow with
    the boundary length in metres:

    - each boundary is cut into pieces (its segments, long ones split), and a grid search
      finds, for each piece, the segments of the other boundary within U of it, U an upper
      bound of the distance on the piece; no other segment can be nearest anywhere on it, so
      the distance there is min_t f_t, f_t the distance to candidate t;
    - with one candidate function left (after dropping end-vertex candidates that a
      neighbouring segment undercuts), f_t is convex along the piece: the maximum is at an end
      and the integral has a closed form (pieces of the distance to a point and of
      |linear|), so straight runs are exact;
    - with a few, the piece is cut where two of them cross (f_t² is piecewise quadratic in the
      position, so crossings are roots of quadratics) and each part is done as above: exact;
    - with more (rare), the integral and maximum are bracketed (chords above and tangents
      below each convex f_t, 1-Lipschitz bounds) and the piece halved until the brackets are
      within Δ/2 per unit length and Δ/2 of the largest lower bound of the Hausdorff distance,
      which holds at the latest once the piece is no longer than Δ (1-Lipschitz).

    So the results are exact up to rounding except on such pieces, where they stay within the
    bounds; the Hausdorff distance is the largest value of the distance actually attained.

    Memory and time grow linearly with a pair's vertices: the grid's cells follow the mean
    segment length of the pair (not its extent), a candidate search counts what it would
    gather and splits its batch to stay within ``_ROW_BUDGET`` rows, and a pair's pieces are
    done in blocks. A pair's numbers are the same bits alone or among any other pairs, in
    any order (``_exact._integrate``: blocks of whole pairs, sums per pair in piece order). A pair with more than ``_COARSE_MIN_SEGMENTS`` segments (a polygonised
    raster, a 10⁶-gon) is measured against its boundaries simplified within ε (each side
    where that halves its segments; the integrated boundaries stay whole), ε = Δ/32, or the
    longer boundary / 32,000 when that is smaller (layers in small units, where Δ's 1-unit
    floor exceeds the pair): distances to the simplified target are within ε of the exact
    ones, the pieces are integrated with Δ' = 3Δ/4, and the Hausdorff distance is lowered by
    ε, so it stays within [H - 2ε - Δ'/2, H] ⊆ [H - 7Δ/16, H] and the mean within ε + Δ'/4
    <= 7Δ/32 of exact: the same bounds.

    Args:
        reference, predicted: object arrays, shape (n_pairs,), of polygonal geometries (their
            boundaries are measured; linear geometries are measured as the curves themselves;
            None allowed); each pair in one common metric (or planar) CRS.
        spacing_m: Δ in CRS units (metres), > 0, or None for automatic
            ``max(1 m, perimeter / 1000)`` per boundary.
        progress: optional callable(fraction done in [0, 1]), called from the calling thread
            after each chunk of pairs; it may raise (``progress.EvaluationCanceled``) to stop.
        describe_pairs: optional callable(int array of pair positions) -> str naming those
            pairs' features, for the message of the memory check.
        scale: optional callable(x, y) -> float array: the local scale factor k (>= 1) of a
            conformal CRS the pairs are in. Each piece's distances are then divided by k at its
            middle, and its length too (pieces at most ``_SCALE_DRIFT`` R / g long, see
            ``scale_gradient``): metres on the ellipsoid to first order (see ``boundary/wide.py`` for
            the bound).
        scale_gradient: optional float array, shape (n_pairs,), with ``scale``: g = R |∇ln k|,
            the largest relative gradient of k over each pair (``wide.scale_gradients``); None:
            g = 3 for every pair (pieces of 500 m). Pieces along which k hardly changes are
            longer, so the work follows the vertices, not the metres of boundary.

    Returns:
        ``(hausdorff_m, mean_distance_m, spacing_m)``: float arrays, shape (n_pairs,). NaN for
        pairs with a missing or empty geometry, or with non-finite coordinates.

    Raises:
        ValueError: arrays of different shapes (``scale_gradient`` too), or ``spacing_m``
            not a positive finite number or None.
        memory.InsufficientMemoryError: before any work, when the largest chunks of pairs
            that run together would need more memory than is available
            (``memory.available_bytes``); the message names the largest pairs.

    Source: agribound 1.0 documentation, "Evaluation": hausdorff_m and
    boundary_mean_distance_m of the per-field table.
    """
    ref = np.asarray(reference, dtype=object).reshape(-1)
    pred = np.asarray(predicted, dtype=object).reshape(-1)
    if ref.shape != pred.shape:
        raise ValueError(
            f"reference and predicted must have the same shape, got {ref.shape} and {pred.shape}"
        )
    fixed = None if spacing_m is None else check_positive(spacing_m, "spacing_m")
    n = len(ref)
    scaled_piece = _scaled_piece(scale_gradient, n)
    hausdorff = np.full(n, np.nan)
    mean = np.full(n, np.nan)
    spacing = np.full(n, np.nan)
    if n == 0:
        return hausdorff, mean, spacing
    # Segments are built per chunk of pairs (not for all at once), so memory holds at most
    # the chunks in flight; the work of a pair grows with its number of vertices.
    cost = shapely.get_num_coordinates(ref) + shapely.get_num_coordinates(pred)
    chunks = _chunks(cost, _CHUNK_VERTICES)
    _check_chunk_memory(cost, chunks, describe_pairs)

    out = (hausdorff, mean, spacing)
    run_chunks(lambda bounds: _measure_chunk(ref, pred, bounds, fixed, scale, scaled_piece, out),
               chunks, progress)
    return hausdorff, mean, spacing


def _measure_chunk(ref, pred, bounds, fixed, scale, scaled_piece, out) -> None:
    """The distances of the pairs ``bounds`` = (lo, hi) of ``ref`` and ``pred``, written into
    ``out`` = (hausdorff, mean, spacing) (float arrays, shape (n_pairs,)); ``fixed``: Δ or
    None (automatic); ``scale``, ``scaled_piece``: see ``pair_boundary_distances``."""
    lo, hi = bounds
    piece = scaled_piece[lo:hi]
    segments, ok, length, delta, epsilon, coarse = _chunk_segments(ref[lo:hi], pred[lo:hi],
                                                                   fixed, scale, piece)
    integral, hmax = pair_distances(segments, np.where(coarse, _COARSE_DELTA, 1.0) * delta,
                                    scale, piece, large_pair=_COARSE_MIN_SEGMENTS)
    # Distances to a target simplified within ε are within ε of the exact ones: lowered by ε,
    # the Hausdorff distance is never above the exact one.
    hmax = np.where(coarse, np.maximum(hmax - epsilon, 0.0), hmax)
    rows = lo + np.flatnonzero(ok)
    hausdorff, mean, spacing = out
    hausdorff[rows] = hmax[ok]
    mean[rows] = integral[ok] / length[ok]
    spacing[rows] = delta[ok]


def _chunk_segments(ref, pred, fixed, scale, scaled_piece):
    """The segments of a chunk of m pairs (object arrays ``ref``, ``pred``, shape (m,)) and
    what their integration needs: ``(segments, ok, length, delta, epsilon, coarse)``, the
    list ``[seg_r, seg_p, target_r, target_p]`` that ``pair_distances`` empties (the segments
    are then freed once framed: for a large pair, a third of the memory), which pairs have
    segments on both sides (bool, (m,)), the two boundaries' total length, Δ, the
    simplification tolerance ε and which pairs have a simplified target (``_coarse_targets``).
    """
    seg_r, seg_p = boundary_segments(ref), boundary_segments(pred)
    ok = seg_r.valid & seg_p.valid
    if not ok.all():
        seg_r, seg_p = seg_r.select(ok), seg_p.select(ok)
    m = len(ref)
    len_r = _lengths(seg_r, m, scale, scaled_piece)
    len_p = _lengths(seg_p, m, scale, scaled_piece)
    delta = np.maximum(sample_spacing(len_r, fixed), sample_spacing(len_p, fixed))
    epsilon = _coarse_tolerance(delta, len_r, len_p)
    target_r, target_p, coarse = _coarse_targets(ref, pred, seg_r, seg_p, epsilon)
    return [seg_r, seg_p, target_r, target_p], ok, len_r + len_p, delta, epsilon, coarse


def _scaled_piece(scale_gradient, n: int) -> np.ndarray:
    """The longest piece (CRS units) of each of n pairs measured with a scale factor:
    ``_SCALE_DRIFT`` R / g, within [``_SCALED_PIECE`` (g unknown, or above 3),
    ``_SCALED_PIECE_MAX``]; float array, shape (n,)."""
    if scale_gradient is None:
        return np.full(n, _SCALED_PIECE)
    g = np.asarray(scale_gradient, dtype=float).reshape(-1)
    if g.shape != (n,):
        raise ValueError(f"scale_gradient must have shape ({n},), got {g.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        piece = _SCALE_DRIFT * _EARTH_RADIUS_M / g
    # NaN (an unknown gradient) gives the shortest piece.
    return np.where(piece >= _SCALED_PIECE, np.minimum(piece, _SCALED_PIECE_MAX), _SCALED_PIECE)


def _lengths(seg: Segments, m: int, scale=None, scaled_piece=None) -> np.ndarray:
    """Boundary length of each of m owners; with ``scale``, in metres: each piece of at most
    ``scaled_piece`` of its owner (float array, shape (m,)) divided by the scale factor at its
    middle."""
    if scale is None:
        return np.bincount(seg.owner, weights=seg.length, minlength=m)
    x0, y0, x1, y1, parent, _ = split_segments(seg.x0, seg.y0, seg.x1, seg.y1,
                                               scaled_piece[seg.owner])
    k = scale(0.5 * (x0 + x1), 0.5 * (y0 + y1))
    return np.bincount(seg.owner[parent], weights=hypot(x1 - x0, y1 - y0) / k, minlength=m)


def _check_chunk_memory(cost: np.ndarray, chunks, describe_pairs) -> None:
    """Raise ``InsufficientMemoryError`` (before any work) when the largest chunks that can be
    in flight together would need more memory than is available, naming the largest pairs."""
    if not chunks:
        return
    sizes = sorted((_chunk_bytes(cost[lo:hi]), lo, hi) for lo, hi in chunks)[-WORKERS:]
    needed = sum(size for size, _, _ in sizes)

    def what():
        _, lo, hi = sizes[-1]
        rows = lo + np.argsort(cost[lo:hi])[::-1][:5]
        if describe_pairs is not None:
            return describe_pairs(rows)
        return "matched pairs at positions " + ", ".join(str(int(r)) for r in rows) + (
            f" ({count_of(int(cost[lo:hi].sum()), 'vertex', 'vertices', thousands=True)})")

    check_memory("boundary distances", needed, what)


def _chunk_bytes(cost: np.ndarray) -> int:
    """Memory a chunk of pairs (``cost``: vertices of each) may need while it is measured:
    its vertices' share, and working memory up to ``_WORKING_BYTES``, from its vertices and
    the candidate rows its pairs can gather at once (at most n² for a pair of n vertices)."""
    size = int(cost.sum())
    rows = float(np.square(cost, dtype=float).sum())
    return int(_BYTES_PER_VERTEX * size + min(
        _WORKING_BYTES, _WORKING_BYTES_PER_VERTEX * size + _BYTES_PER_ROW * rows))


def _chunks(cost: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive ranges of rows whose total cost is about ``budget`` (at least one row)."""
    total = np.cumsum(cost)
    if len(total) == 0:
        return []
    cuts = np.searchsorted(total, np.arange(budget, int(total[-1]), budget), side="right")
    edges = np.unique(np.r_[0, cuts, len(cost)])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _coarse_tolerance(delta, len_r, len_p) -> np.ndarray:
    """ε of each pair, float array like ``delta``: ``_COARSE_FRACTION`` × the smaller of Δ
    and the longer boundary / ``BOUNDARY_MAX_SAMPLES``.

    Without the second term, Δ's floor of 1 unit (``sample_spacing``) makes ε larger than the
    pair itself in layers of small units (degrees, a model's 0-1 coordinates): every curve
    would collapse under simplification, be kept whole, and a pair of many vertices would
    cost the square of them. The term changes nothing where the perimeter is over 1,000
    units (``delta`` is at least that / 1,000) and never raises ε, so the bounds hold.
    """
    return _COARSE_FRACTION * np.minimum(delta,
                                         np.maximum(len_r, len_p) / BOUNDARY_MAX_SAMPLES)


def _coarse_targets(ref, pred, seg_r: Segments, seg_p: Segments, epsilon):
    """The boundaries each pair's distances are measured to: its own segments, or for a
    large pair (more than ``_COARSE_MIN_SEGMENTS``) on each side where that at least halves
    the segments, the boundary simplified within ``epsilon`` (float array, shape (m,),
    ``_coarse_tolerance``).

    Returns ``(target_r, target_p, coarse)``: Segments like ``seg_r`` and ``seg_p`` (owners
    0..m-1) and a bool array, shape (m,), True for the pairs with a simplified side.
    """
    m = len(epsilon)
    n_r = np.bincount(seg_r.owner, minlength=m)
    n_p = np.bincount(seg_p.owner, minlength=m)
    big = (n_r + n_p > _COARSE_MIN_SEGMENTS) & seg_r.valid & seg_p.valid
    coarse = np.zeros(m, dtype=bool)
    if not big.any():
        return seg_r, seg_p, coarse
    targets = []
    for geoms, seg, count in ((ref, seg_r, n_r), (pred, seg_p, n_p)):
        simple = np.full(m, None, dtype=object)
        simple[big] = simplified_boundaries(geoms[big], epsilon[big])
        small = boundary_segments(simple)
        use = big & small.valid & (np.bincount(small.owner, minlength=m) <= _COARSE_GAIN * count)
        if not use.any():
            targets.append(seg)
            continue
        coarse |= use
        targets.append(_combine(seg.select(~use), small.select(use)))
    return targets[0], targets[1], coarse


def simplified_boundaries(geometries, tolerance) -> np.ndarray:
    """The boundary curves of each geometry simplified (Douglas-Peucker, GEOS) within
    ``tolerance``, as MultiLineStrings.

    Every point of a simplified curve is within ``tolerance`` of the curve and every point of
    the curve within ``tolerance`` of the simplified one (the curve between two kept vertices
    stays within ``tolerance`` of their chord and runs from one end of it to the other), so
    distances to the two differ by at most ``tolerance``. A curve that would collapse to fewer
    than three vertices is kept whole.

    Args:
        geometries: object array, shape (n,), of polygonal or linear geometries.
        tolerance: float array, shape (n,), > 0, in CRS units.
    Returns:
        object array, shape (n,): MultiLineStrings (None for geometries without curves).
    """
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    out = np.full(len(geoms), None, dtype=object)
    curves, owner = boundary_curves(geoms)
    keep = shapely.get_num_coordinates(curves) >= 2
    curves, owner = curves[keep], owner[keep]
    if len(curves) == 0:
        return out
    order = np.argsort(owner, kind="stable")
    curves, owner = curves[order], owner[order]
    coords, index = shapely.get_coordinates(curves, return_index=True)
    lines = shapely.linestrings(coords, indices=index)
    simple = simplified_in_runs(coords, index, np.asarray(tolerance, dtype=float)[owner])
    del coords, index
    few = shapely.get_num_coordinates(simple) < 3
    simple[few] = lines[few]
    present, at = np.unique(owner, return_inverse=True)
    out[present] = shapely.multilinestrings(simple, indices=at)
    return out


def simplified_in_runs(coords, curve, tolerance) -> np.ndarray:
    """Douglas-Peucker (GEOS, ``preserve_topology=False``) of each curve within its
    ``tolerance``, done on runs of at most ``_SIMPLIFY_RUN`` vertices: the recursion depth
    and the time of a run stay bounded whatever the curve (see the constant).

    Each run keeps its end vertices, so the simplified runs joined are within the tolerance
    of the curve both ways, as one Douglas-Peucker of the whole curve would be (a curve of at
    most ``_SIMPLIFY_RUN`` vertices is one run: the same result).

    Args:
        coords: float array, shape (k, 2): the curves' vertices, grouped by curve.
        curve: int array, shape (k,): the curve of each vertex, 0..c-1, sorted, each curve
            with at least two vertices.
        tolerance: float array, shape (c,), > 0.
    Returns:
        object array, shape (c,), of LineStrings.
    """
    count = np.bincount(curve)
    per_run = _SIMPLIFY_RUN - 1
    runs = np.maximum(1, -(-(count - 1) // per_run))
    if (runs == 1).all():
        return shapely.simplify(shapely.linestrings(coords, indices=curve), tolerance,
                                preserve_topology=False)
    run_curve = group_ids(runs)
    rank = np.arange(len(run_curve)) - (np.cumsum(runs) - runs)[run_curve]
    first = (np.cumsum(count) - count)[run_curve] + rank * per_run
    size = np.minimum(_SIMPLIFY_RUN, count[run_curve] - rank * per_run)
    lines = shapely.linestrings(coords[ranges(first, size)], indices=group_ids(size))
    simple = shapely.simplify(lines, tolerance[run_curve], preserve_topology=False)
    xy, run = shapely.get_coordinates(simple, return_index=True)
    # A run after the first starts at the vertex the one before it ends at: once.
    again = np.zeros(len(run), dtype=bool)
    again[1:] = (run[1:] != run[:-1]) & (rank[run[1:]] > 0) & (xy[1:] == xy[:-1]).all(axis=1)
    return shapely.linestrings(xy[~again], indices=run_curve[run[~again]])


def _combine(a: Segments, b: Segments) -> Segments:
    """The segments of ``a`` and ``b`` (of different owners, both ``select``-ed from the same
    owners) in one Segments, ordered by owner."""
    owner = np.r_[a.owner, b.owner]
    order = np.argsort(owner, kind="stable")
    new_index = np.empty(len(order), dtype=np.int64)
    new_index[order] = np.arange(len(order))

    def links(la, lb):
        joined = np.r_[la, np.where(lb >= 0, lb + a.n, -1)]
        return np.where(joined >= 0, new_index[np.maximum(joined, 0)], -1)[order]

    return Segments(np.r_[a.x0, b.x0][order], np.r_[a.y0, b.y0][order],
                    np.r_[a.x1, b.x1][order], np.r_[a.y1, b.y1][order], owner[order],
                    links(a.next, b.next), links(a.prev, b.prev), a.valid | b.valid)
