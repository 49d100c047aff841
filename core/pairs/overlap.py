"""Candidate (reference, predicted) pairs and their IoU, vectorised."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import shapely

from .bounds import SupportingLines, bounded_slivers, overlap_shown
from ..util.parallel import ProgressCallback, run_chunks, split, split_weighted
from ..util.wording import count_of, plural

logger = logging.getLogger(__name__)

#: Ratios of areas (IoU, Dice, GIoU, DIoU) are rounded to this many significant digits.
#: Coordinates written in decimal are not exact in binary, so an IoU that is exactly 1/2 in
#: the coordinates as written (boxes (0, 0.6, 0.4, 0.8) and (0, 0.6, 0.4, 0.7)) computes as
#: 0.4999999999999997; rounding restores 0.5 and moves no ratio by more than 5e-14 of itself.
RATIO_SIGNIFICANT_DIGITS = 13

#: The grid for the rare overlay GEOS cannot node exactly, relative to the largest coordinate
#: of the pair: 1e-12 of it (10 µm at 10,000 km from the origin of a metric CRS).
_FALLBACK_GRID_RELATIVE = 1e-12

#: A function giving the areas of an object array of geometries, shape (n,) → float (n,).
AreaFunction = Callable[[np.ndarray], np.ndarray]

#: Candidate pairs are tested and overlaid this many at a time (progress, cancellation)...
_CHUNK_PAIRS = 10_000
#: ... and pairs of at most about this many vertices in all.
_CHUNK_VERTICES = 2_000_000


@dataclass(frozen=True)
class OverlapPairs:
    """Every (reference, predicted) pair whose intersection has positive area.

    All arrays have shape (n_pairs,) and are sorted by reference, then predicted position.

    Attributes:
        reference: int64 positions into the prepared reference layer.
        predicted: int64 positions into the prepared predicted layer.
        intersection_m2: intersection areas, > 0, in the equal-area CRS.
        iou: |r ∩ p| / |r ∪ p|, in (0, 1], rounded by ``round_ratio``.
        bounded: bool, or None when no pair is: True where ``intersection_m2`` and ``iou``
            are upper bounds, not values (``overlap_pairs``' ``iou_floor``; after ``settle``,
            pairs that change no count, best IoU or largest overlap).
    """

    reference: np.ndarray
    predicted: np.ndarray
    intersection_m2: np.ndarray
    iou: np.ndarray
    bounded: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.reference)

    def subset(self, mask: np.ndarray) -> OverlapPairs:
        """The pairs where ``mask`` (bool, shape (n_pairs,)) is True, in the same order."""
        return OverlapPairs(
            self.reference[mask], self.predicted[mask], self.intersection_m2[mask],
            self.iou[mask], None if self.bounded is None else self.bounded[mask],
        )

    def find(self, reference: np.ndarray, predicted: np.ndarray) -> np.ndarray:
        """Positions in these arrays of the given (reference, predicted) pairs, all present."""
        base = int(max(self.predicted.max(initial=-1), np.max(predicted, initial=-1))) + 1
        keys = self.reference * base + self.predicted
        return np.searchsorted(keys, np.asarray(reference) * base + np.asarray(predicted))


def overlap_pairs(
    reference: np.ndarray,
    reference_area_m2: np.ndarray,
    predicted: np.ndarray,
    predicted_area_m2: np.ndarray,
    progress: ProgressCallback | None = None,
    area: AreaFunction = shapely.area,
    iou_floor: float | None = None,
) -> OverlapPairs:
    """Candidate pairs from an STRtree query, with exact intersection areas and IoU.

    Args:
        reference: object array, shape (n_ref,), valid polygonal geometries.
        reference_area_m2: float array, shape (n_ref,), their areas, > 0.
        predicted: object array, shape (n_pred,), valid polygonal geometries, same CRS.
        predicted_area_m2: float array, shape (n_pred,), > 0.
        progress: optional callable(fraction done), may raise to cancel (``run_chunks``).
        area: the areas of geometries in the layers' space (``shapely.area`` for a planar
            equal-area CRS; ``exact_area.LonLatArea`` for longitude/latitude whose image in a
            cylindrical equal-area CRS is measured exactly).
        iou_floor: None (every pair exact), or an IoU in (0, 1] below which a pair's exact
            value is not needed (the lowest threshold of the caller's counts). With a planar
            ``area``, a pair shown to overlap (``overlap_bound.overlap_shown``) whose IoU
            bound (``overlap_bound.bounded_slivers``) is below it is not overlaid: it keeps
            its bounds and is marked ``bounded``. Pass the result through ``settle``
            before taking maxima over pairs.

    Returns:
        OverlapPairs; pairs that only touch (zero-area intersection) are not included.
    """
    empty = np.zeros(0, dtype=np.int64)
    if len(reference) == 0 or len(predicted) == 0:
        return OverlapPairs(empty, empty, np.zeros(0), np.zeros(0))
    # The tree query compares boxes only (fast, but it holds the GIL); the exact tests (on
    # prepared reference polygons, four times faster) and overlays then run in chunks on
    # both cores.
    ref_idx, pred_idx = shapely.STRtree(predicted).query(reference)
    order = np.lexsort((pred_idx, ref_idx))
    ref_idx = ref_idx[order].astype(np.int64)
    pred_idx = pred_idx[order].astype(np.int64)
    bounding = iou_floor is not None and area is shapely.area
    layers = _Layers(reference, reference_area_m2, _order_key(reference), predicted,
                     predicted_area_m2, _order_key(predicted), area,
                     iou_floor if bounding else None)
    # Chunks of at most _CHUNK_PAIRS pairs and _CHUNK_VERTICES vertices: a few pairs of large
    # polygons (countries) go to both cores too.
    vertices = (shapely.get_num_coordinates(reference)[ref_idx]
                + shapely.get_num_coordinates(predicted)[pred_idx])
    chunks = split_weighted(vertices, _CHUNK_VERTICES, _CHUNK_PAIRS, 200_000)
    parts = run_chunks(lambda part: _chunk_areas(layers, ref_idx[part], pred_idx[part]),
                       chunks, progress)
    inter = np.concatenate([np.zeros(0)] + [part[0] for part in parts])
    bounded = np.concatenate([np.zeros(0, dtype=bool)] + [part[1] for part in parts])
    positive = inter > 0
    ref_idx, pred_idx, inter = ref_idx[positive], pred_idx[positive], inter[positive]
    iou = iou_from_areas(inter, reference_area_m2[ref_idx], predicted_area_m2[pred_idx])
    return OverlapPairs(ref_idx, pred_idx, inter, iou, bounded[positive] if bounding else None)


@dataclass(frozen=True)
class _Layers:
    """What each chunk of ``overlap_pairs`` reads: both layers (object arrays), their areas
    (float arrays, m²) and order keys (``_order_key``), the area function, and the IoU floor
    below which a pair may stay bounded (None: every pair exact)."""

    reference: np.ndarray
    reference_area_m2: np.ndarray
    ref_key: np.ndarray
    predicted: np.ndarray
    predicted_area_m2: np.ndarray
    pred_key: np.ndarray
    area: AreaFunction
    iou_floor: float | None


def _chunk_areas(layers: _Layers, ri: np.ndarray, pi: np.ndarray):
    """Intersection areas of the candidate pairs (``ri[k]``, ``pi[k]``) of one chunk:
    ``(area, bounded)``, float and bool arrays of shape (len(ri),); 0 for pairs that do not
    overlap; where ``bounded``, an upper bound instead (``_leave_bounded``)."""
    out = np.zeros(len(ri))
    ref_key, pred_key, predicted = layers.ref_key, layers.pred_key, layers.predicted
    # Boxes that only touch (neighbours along a meridian or a parallel, say) bound an
    # intersection of zero area: no exact test, no overlay.
    lo = np.maximum(ref_key[ri, 1:3], pred_key[pi, 1:3])
    hi = np.minimum(ref_key[ri, 3:5], pred_key[pi, 3:5])
    candidate = np.flatnonzero((hi > lo).all(axis=1))
    # Copies of the chunk's references to prepare: the caller's geometries stay as they
    # are, and the prepared indexes live only as long as the chunk.
    refs, local = np.unique(ri[candidate], return_inverse=True)
    prepared = shapely.from_wkb(shapely.to_wkb(layers.reference[refs]))
    shapely.prepare(prepared)
    hit = shapely.intersects(prepared[local], predicted[pi[candidate]])
    meet, local = candidate[hit], local[hit]
    # A prediction inside the interior of a reference (a third of the pairs of extracted
    # fields) overlaps it by its own area: no overlay (which gives that area to ~1e-15).
    inside = shapely.contains_properly(prepared[local], predicted[pi[meet]])
    out[meet[inside]] = layers.area(predicted[pi[meet[inside]]])
    rest = meet[~inside]
    bounded = np.zeros(len(out), dtype=bool)
    if layers.iou_floor is not None and len(rest):
        rest = _leave_bounded(layers, ri, pi, rest, prepared[local[~inside]], out, bounded)
    del prepared
    ri, pi = ri[rest], pi[rest]
    out[rest] = _pair_areas(layers.reference[ri], predicted[pi], ref_key[ri], pred_key[pi],
                            layers.area)
    return out, bounded


def _leave_bounded(layers: _Layers, ri, pi, rest, prepared_ref, out, bounded) -> np.ndarray:
    """Of the chunk's pairs ``rest`` (positions; ``prepared_ref`` their prepared references)
    still to overlay, those whose IoU bound is below the floor and which are shown to
    overlap keep their bound in ``out`` and are marked in ``bounded`` (both in place).
    Returns the pairs left to overlay."""
    # A prediction whose box centre is in the reference is mostly its own field: its bound
    # would not be low, so it is not worked out.
    centre = (layers.pred_key[pi[rest], 1:3] + layers.pred_key[pi[rest], 3:5]) / 2.0
    own = shapely.contains_xy(prepared_ref, centre[:, 0], centre[:, 1])
    tried = np.flatnonzero(~own)
    try:
        skip = _bounded_pairs(layers, ri[rest[tried]], pi[rest[tried]], prepared_ref[tried],
                              out, rest[tried])
    except shapely.errors.GEOSException as exc:  # the bound is only a shortcut
        logger.debug("no overlap bounds for a chunk of pairs: %s", exc)
        skip = np.zeros(len(tried), dtype=bool)
    bounded[rest[tried[skip]]] = True
    return np.setdiff1d(rest, rest[tried[skip]], assume_unique=True)


def _bounded_pairs(layers: _Layers, ri, pi, prepared_ref, out, rows) -> np.ndarray:
    """Pairs to leave bounded (bool, shape (len(ri),)); their bounds go into out[rows]."""
    if len(ri) == 0:
        return np.zeros(0, dtype=bool)
    refs, local_r = np.unique(ri, return_inverse=True)
    preds, local_p = np.unique(pi, return_inverse=True)
    predicted, predicted_area_m2 = layers.predicted, layers.predicted_area_m2
    bound, (xy, into, pair) = bounded_slivers(
        SupportingLines(layers.reference[refs]), predicted[preds], local_r, local_p,
        layers.pred_key[preds, 1:5], predicted_area_m2[preds],
    )
    low = np.isfinite(bound) & (
        iou_from_areas(bound, layers.reference_area_m2[ri], predicted_area_m2[pi])
        < layers.iou_floor)
    tested = low[pair]
    skip = low & overlap_shown(prepared_ref, predicted[preds], local_p,
                               (xy[tested], into[tested], pair[tested]), len(ri))
    out[rows[skip]] = bound[skip]
    return skip


def settle(
    pairs: OverlapPairs,
    sets: tuple[np.ndarray, ...],
    reference: np.ndarray,
    reference_area_m2: np.ndarray,
    predicted: np.ndarray,
    predicted_area_m2: np.ndarray,
    area: AreaFunction = shapely.area,
) -> OverlapPairs:
    """Overlay the bounded pairs whose values could change a result; the others stay bounded.

    Within each set, a bounded pair keeps its bounds only when its reference and its
    prediction each have an exact pair in the set with a larger intersection and a larger
    IoU than those bounds: it is then nobody's best IoU or largest overlap, and (below
    ``overlap_pairs``' ``iou_floor``) it reaches no threshold. Overlaying a pair only raises
    these maxima, so one pass suffices.

    Args:
        pairs: from ``overlap_pairs`` on these layers.
        sets: bool arrays, shape (n_pairs,): the subsets of pairs whose maxima are taken on
            their own (all pairs; those of one group; those of compatible classes).
        reference, reference_area_m2, predicted, predicted_area_m2, area: as given to
            ``overlap_pairs``.

    Returns:
        OverlapPairs of the same pairs in the same order, except any whose overlay turns
        out to have no area (dropped, as ``overlap_pairs`` drops them).
    """
    if pairs.bounded is None or not pairs.bounded.any():
        return pairs
    bounded = pairs.bounded.copy()
    need = np.zeros(pairs.n, dtype=bool)
    for in_set in sets:
        exact = in_set & ~bounded
        loose = in_set & bounded
        for owner, size in ((pairs.reference, len(reference)), (pairs.predicted, len(predicted))):
            largest = np.full(size, -np.inf)
            np.maximum.at(largest, owner[exact], pairs.intersection_m2[exact])
            best = np.full(size, -np.inf)
            np.maximum.at(best, owner[exact], pairs.iou[exact])
            need |= loose & ((pairs.intersection_m2 >= largest[owner])
                             | (pairs.iou >= best[owner]))
    rows = np.flatnonzero(need)
    inter = pairs.intersection_m2.copy()
    inter[rows] = intersection_area(
        reference[pairs.reference[rows]], predicted[pairs.predicted[rows]], area
    )
    bounded[rows] = False
    iou = pairs.iou.copy()
    iou[rows] = iou_from_areas(
        inter[rows], reference_area_m2[pairs.reference[rows]],
        predicted_area_m2[pairs.predicted[rows]],
    )
    keep = inter > 0
    return OverlapPairs(pairs.reference, pairs.predicted, inter, iou, bounded).subset(keep)


def iou_from_areas(intersection, area_a, area_b, zero_division: float = 0.0) -> np.ndarray:
    """IoU = |a ∩ b| / (|a| + |b| - |a ∩ b|), clamped to [0, 1] and rounded (``round_ratio``).

    Float arrays of one shape (n,) in, float array (n,) out; ``zero_division`` where the union
    is 0 (both areas 0). The clamp absorbs an intersection that overlay arithmetic puts a few
    ulps above an area (the spatial IoU guide, "Measuring Spatial IoU for LLM-Generated
    Geometries", section "Floating-point overshoot").
    """
    intersection = np.asarray(intersection, dtype=float)
    union = np.asarray(area_a, dtype=float) + np.asarray(area_b, dtype=float) - intersection
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.clip(intersection / union, 0.0, 1.0)
    return np.where(union > 0, round_ratio(iou), zero_division)


def round_ratio(values) -> np.ndarray:
    """Round to ``RATIO_SIGNIFICANT_DIGITS`` significant digits; 0, NaN and ±inf unchanged.

    Float array in, float array of the same shape out. Values below 1e-10 in magnitude are
    left as they are (their rounding scale would not be an exact power of ten).
    """
    x = np.array(values, dtype=float)
    magnitude = np.abs(x)
    ok = np.isfinite(x) & (magnitude >= 1e-10)
    decimals = RATIO_SIGNIFICANT_DIGITS - 1 - np.floor(np.log10(magnitude[ok]))
    scale = 10.0 ** decimals  # exact: decimals <= 22
    x[ok] = np.round(x[ok] * scale) / scale
    return x


def intersection_area(a: np.ndarray, b: np.ndarray,
                      area: AreaFunction = shapely.area) -> np.ndarray:
    """Area of ``a[k] ∩ b[k]`` for each k; object arrays of equal shape (n,) → float (n,).
    ``area`` measures geometries in their space (see ``overlap_pairs``).

    Identical geometries (same coordinates in the same order) give their own area exactly.

    A pair GEOS cannot overlay exactly (a TopologyException on nearly coincident edges) is
    recomputed on a precision grid of 1e-12 of its largest coordinate rather than aborting the
    run; a pair that fails even then is scored as no overlap (area 0) and logged, as the
    spatial IoU guide does.
    """
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if len(a) == 0:
        return np.zeros(0)
    key_a, key_b = _order_key(a), _order_key(b)
    parts = run_chunks(
        lambda part: _pair_areas(a[part], b[part], key_a[part], key_b[part], area),
        split(len(a), 2_000, _CHUNK_PAIRS),
    )
    return np.concatenate(parts)


def _pair_areas(a, b, key_a, key_b, area: AreaFunction) -> np.ndarray:
    """``intersection_area`` given each geometry's ``_order_key`` row, shape (n, 7)."""
    # A geometry's overlay with itself is itself: take its area rather than the overlay's,
    # which for a thin polygon can differ in the 12th digit.
    same = shapely.equals_exact(a, b, tolerance=0.0)
    out = np.zeros(len(a))
    out[same] = area(a[same])
    differ = np.flatnonzero(~same)
    a, b, key_a, key_b = a[differ], b[differ], key_a[differ], key_b[differ]
    # GEOS's overlay is not exactly symmetric in its operands (thin shapes differ in the 11th
    # digit): put each pair in a canonical order so that swapping them changes nothing.
    swap = _ordered_after(a, b, key_a, key_b)
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    out[differ] = _chunk_area(a, b, area)
    return out


def _chunk_area(a: np.ndarray, b: np.ndarray, area: AreaFunction) -> np.ndarray:
    """Overlay areas of the pairs; a batch GEOS cannot overlay goes pair by pair."""
    if len(a) == 0:
        return np.zeros(0)
    try:
        # GEOS's arithmetic raises floating-point flags ("invalid" on disjoint pairs, "divide"
        # on degenerate segments) that numpy would turn into warnings: they are not errors.
        with np.errstate(all="ignore"):
            return area(shapely.intersection(a, b))
    except shapely.errors.GEOSException:
        pass
    out = np.empty(len(a))
    n_snapped = 0
    for k in range(len(a)):  # only after the vectorised call failed
        try:
            with np.errstate(all="ignore"):
                out[k] = area(np.array([shapely.intersection(a[k], b[k])], dtype=object))[0]
            continue
        except shapely.errors.GEOSException:
            pass
        try:
            grid = _fallback_grid(a[k], b[k])
            with np.errstate(all="ignore"):
                piece = shapely.intersection(a[k], b[k], grid_size=grid)
                out[k] = area(np.array([piece], dtype=object))[0]
            n_snapped += 1
        except shapely.errors.GEOSException as exc:
            logger.warning("an intersection failed and is scored as no overlap: %s", exc)
            out[k] = 0.0
    if n_snapped:
        logger.warning("%s %s computed on a precision grid",
                       count_of(n_snapped, "intersection"), plural(n_snapped, "was", "were"))
    return out


def _order_key(geoms: np.ndarray) -> np.ndarray:
    """(area, bounds) of each geometry, shape (n, 5); NaN for empty or missing."""
    return np.column_stack([shapely.area(geoms), shapely.bounds(geoms)])


def _ordered_after(a: np.ndarray, b: np.ndarray, key_a: np.ndarray, key_b: np.ndarray):
    """Boolean mask, shape (n,): ``a[k]`` comes after ``b[k]`` in the order of their
    ``_order_key`` rows compared lexicographically, ties broken by their centroids, then
    (the same ring from another vertex, say) by their WKB. Rows with NaN keys keep their
    order."""
    after = _after(key_a, key_b)
    tie = np.flatnonzero(~(key_a != key_b).any(axis=1))
    if len(tie):
        centroid_a = shapely.get_coordinates(shapely.centroid(a[tie]))
        centroid_b = shapely.get_coordinates(shapely.centroid(b[tie]))
        after[tie] = _after(centroid_a, centroid_b)
        same = tie[~(centroid_a != centroid_b).any(axis=1)]
        after[same] = shapely.to_wkb(a[same]) > shapely.to_wkb(b[same])
    return after


def _after(key_a: np.ndarray, key_b: np.ndarray) -> np.ndarray:
    """Rows of ``key_a`` that come after the same rows of ``key_b`` lexicographically."""
    differ = key_a != key_b
    first = np.argmax(differ, axis=1)
    rows = np.arange(len(key_a))
    return differ.any(axis=1) & (key_a[rows, first] > key_b[rows, first])


def _fallback_grid(a, b) -> float:
    """A power of ten near 1e-12 of the largest absolute coordinate of ``a`` and ``b``."""
    bounds = np.abs(np.concatenate([shapely.bounds(a), shapely.bounds(b)]))
    largest = float(np.nanmax(bounds)) if np.isfinite(bounds).any() else 1.0
    return 10.0 ** np.ceil(np.log10(max(largest, 1e-300) * _FALLBACK_GRID_RELATIVE))
