"""Footprint IoU of two layers: each layer dissolved into one footprint, and optionally one
footprint per id shared by the two layers.

The robust function of the spatial IoU guide ("Measuring Spatial IoU for LLM-Generated
Geometries") on whole layers: every row is
prepared by ``prepare_layer`` (repair first, then reprojection to the equal-area CRS, then
repair again; null, empty, non-polygonal and zero-area rows dropped and counted), the rows are
dissolved (``geometry.dissolve``: a guarded overlay) or, above ``TILED_ROWS`` rows, cut into
pieces that share no interior (``geometry.dissolve.disjoint_pieces``) whose measures add up to
the dissolved footprints', and the footprints are scored as by ``pair_metrics.pair_metrics``
(guarded overlay, ratios clamped to their ranges). Every
degenerate case has a defined value: a footprint without area on one side scores IoU = Dice =
0 and GIoU = DIoU = -1; without area on both sides, ``zero_division`` (0.0 by default, the
guide's value).
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass, field, replace

import numpy as np
import shapely

from ..geometry.crs import (
    DEFAULT_EQUAL_AREA_CRS,
    crs_label,
    evaluation_crs,
    resolve_crs,
)
from ..geometry.dissolve import disjoint_pieces
from ..geometry.exact_area import lonlat_area_for
from ..util.checks import is_missing
from .overlap import AreaFunction, intersection_area
from .pair_metrics import (
    PairMetrics,
    cylindrical_x_period,
    dissolve,
    enclosing_measures,
    metrics_from_measures,
)
from ..util.parallel import run_chunks, split
from ..geometry.prepare import (
    PreparedLayer,
    geometry_array,
    guarded_intersection,
    polygonal_parts,
    prepare_layer,
)
from ..util.progress import Progress


#: A footprint of more rows than this (both layers together) is not dissolved whole: it is
#: measured piece by piece (``_piecewise_metrics``), or tile by tile (``_tiled_metrics``).
TILED_ROWS = 2_000
#: About this many rows per tile.
_ROWS_PER_TILE = 100
#: A layer with more pairs of intersecting rows than this many per row is
#: measured tile by tile (stacked copies of one shape, say): cutting each row by its many
#: neighbours would cost more than dissolving tiles.
_DENSE_PAIRS_PER_ROW = 8
#: Layers whose pairwise overlays would read more than this many times their vertices
#: (``_overlay_vertices_ratio``) are measured tile by tile: measured on the bench, 2.9 for
#: 50,000 fields (whole footprint IoU, pieces: 12 CPU s, tiles: 23), 7.5 for US counties
#: against a finer copy (footprint IoU, pieces: 5.0 CPU s, tiles: 2.4) and 8.1 for 50,000
#: fields sharing edges (pieces: 22.2, tiles: 13.0).
_PIECES_MAX_RATIO = 5.0

#: Status of an id in the per-id table: rows with it in both layers, or in one layer only.
ID_STATUSES = ("both", "predicted_only", "reference_only")


@dataclass(frozen=True)
class FootprintIoU:
    """Footprint scores of a predicted and a reference layer.

    Attributes:
        overall: PairMetrics of one pair, the two dissolved layers (areas in m² in the
            equal-area CRS, squared planar units without a CRS).
        ids: per-id mode only: the ids, shape (n_ids,), reference ids first in their first
            order of appearance, then ids found only in the predicted layer; each is the
            first input value with its key (see ``id_key``). None without ids.
        status: object array of str, shape (n_ids,): one of ``ID_STATUSES``.
        by_id: PairMetrics of the n_ids pairs (predicted rows with the id dissolved,
            reference rows with the id dissolved).
        n_predicted_rows, n_reference_rows: int64, shape (n_ids,): input rows with each id.
        n_predicted_without_id, n_reference_without_id: input rows whose id is missing
            (None, NaN, NULL): in ``overall`` but in no per-id row.
        predicted, reference: the prepared layers (drop and repair counts).
        equal_area_crs: label of the CRS of the areas ("none (planar units)" without a CRS).
    """

    overall: PairMetrics
    predicted: PreparedLayer
    reference: PreparedLayer
    equal_area_crs: str
    ids: list | None = None
    status: np.ndarray | None = field(default=None, repr=False)
    by_id: PairMetrics | None = field(default=None, repr=False)
    n_predicted_rows: np.ndarray | None = field(default=None, repr=False)
    n_reference_rows: np.ndarray | None = field(default=None, repr=False)
    n_predicted_without_id: int = 0
    n_reference_without_id: int = 0


def footprint_iou(
    predicted,
    reference,
    *,
    predicted_crs=None,
    reference_crs=None,
    equal_area_crs=DEFAULT_EQUAL_AREA_CRS,
    predicted_ids=None,
    reference_ids=None,
    zero_division: float = 0.0,
    progress: Progress | None = None,
) -> FootprintIoU:
    """IoU, Dice, GIoU and DIoU of two layers' dissolved footprints, and per shared id.

    Args:
        predicted, reference: sequences of shapely geometries (None allowed), shapes
            (n_pred,) and (n_ref,), in their CRSs. Never modified.
        predicted_crs, reference_crs: anything pyproj accepts, or both None (planar units).
        equal_area_crs: projected CRS in metres for areas (default EPSG:6933).
        predicted_ids, reference_ids: one id per row (both or neither): the per-id mode.
            Ids match by ``id_key`` (1, 1.0 and "1" are one id); a missing id puts a row in
            the overall footprint only.
        zero_division: every metric's value when neither footprint has area, in [0, 1] or NaN.
        progress: receives progress and may cancel (EvaluationCanceled is raised).

    Returns:
        A FootprintIoU.

    Raises:
        ValueError: a CRS that is not one, exactly one layer with a CRS, an equal-area CRS not
            projected in metres, ids given for one layer only or of the wrong length.
        TypeError: a layer given as a single geometry or a non-sequence.

    Source: the spatial IoU guide, "Measuring Spatial IoU for LLM-Generated Geometries"
    (repair, reproject, guarded overlay, clamp);
    GIoU: Rezatofighi et al. (2019); DIoU: Zheng et al. (2020).
    """
    progress = progress or Progress()
    if (predicted_ids is None) != (reference_ids is None):
        raise ValueError("predicted_ids and reference_ids must be given together")
    predicted = geometry_array(predicted, "predicted")
    reference = geometry_array(reference, "reference")
    pred_crs = resolve_crs(predicted_crs, "predicted_crs")
    ref_crs = resolve_crs(reference_crs, "reference_crs")
    ea_crs = evaluation_crs(ref_crs, pred_crs, equal_area_crs)
    x_period = cylindrical_x_period(ea_crs) if ea_crs is not None else None
    if predicted_ids is not None:
        predicted_ids = _ids(predicted_ids, len(predicted), "predicted_ids")
        reference_ids = _ids(reference_ids, len(reference), "reference_ids")

    progress.checkpoint(0, "Preparing geometries")
    # Geographic layers in a cylindrical equal-area CRS (the default) stay in
    # longitude/latitude and are measured exactly, as evaluate measures them: no densified
    # copies (world countries at 1:110m: 10.7k vertices, not 3.3 million).
    lonlat = lonlat_area_for([ref_crs, pred_crs], ea_crs) if ea_crs is not None else None
    ref = prepare_layer(reference, ref_crs, ea_crs, "reference", progress.span(0, 40), lonlat)
    pred = prepare_layer(predicted, pred_crs, ea_crs, "predicted", progress.span(40, 80),
                         lonlat)
    space = (ref.area_of, ref.to_map)
    progress.checkpoint(80, "Dissolving footprints")
    overall = footprint_pair_metrics(
        pred.overlay, ref.overlay, zero_division, x_period, progress.span(80, 90), *space
    )
    result = FootprintIoU(overall, pred, ref, crs_label(ea_crs))
    if predicted_ids is None:
        progress.checkpoint(100, "Done")
        return result

    progress.checkpoint(90, "Footprints per id")
    result = _per_id(result, predicted_ids, reference_ids, zero_division, x_period, space)
    progress.checkpoint(100, "Done")
    return result


def _per_id(result: FootprintIoU, predicted_ids, reference_ids, zero_division, x_period,
            space) -> FootprintIoU:
    """``result`` with the per-id footprints: ids matched by ``id_key`` (first spelling kept),
    each id's status, row counts and metrics (``space``: the layers' area and map functions)."""
    pred_keys = np.array([id_key(v) for v in predicted_ids], dtype=object)
    ref_keys = np.array([id_key(v) for v in reference_ids], dtype=object)
    first_value = {}
    for keys, values in ((ref_keys, reference_ids), (pred_keys, predicted_ids)):
        for key, value in zip(keys, values):
            if key is not None and key not in first_value:
                first_value[key] = value
    order = list(first_value)
    code = {key: k for k, key in enumerate(order)}
    pred_codes = np.array([code.get(k, -1) if k is not None else -1 for k in pred_keys])
    ref_codes = np.array([code.get(k, -1) if k is not None else -1 for k in ref_keys])
    n_ids = len(order)
    n_pred_rows = np.bincount(pred_codes[pred_codes >= 0], minlength=n_ids).astype(np.int64)
    n_ref_rows = np.bincount(ref_codes[ref_codes >= 0], minlength=n_ids).astype(np.int64)
    status = np.where(
        (n_pred_rows > 0) & (n_ref_rows > 0),
        "both",
        np.where(n_pred_rows > 0, "predicted_only", "reference_only"),
    ).astype(object)
    pred, ref = result.predicted, result.reference
    by_id = _metrics_by_code(
        pred.overlay, pred_codes[pred.keep], ref.overlay, ref_codes[ref.keep], n_ids,
        zero_division, x_period, *space,
    )
    return replace(
        result,
        ids=[first_value[key] for key in order],
        status=status,
        by_id=by_id,
        n_predicted_rows=n_pred_rows,
        n_reference_rows=n_ref_rows,
        n_predicted_without_id=int(np.count_nonzero(pred_codes < 0)),
        n_reference_without_id=int(np.count_nonzero(ref_codes < 0)),
    )


def id_key(value) -> str | None:
    """The key two ids are matched by: None for a missing id (None, NaN, QGIS NULL); a whole
    number as its integer text (1, 1.0 and "1" are one id); anything else as its text with
    surrounding spaces removed."""
    if is_missing(value):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    if isinstance(value, np.floating) and np.isfinite(value) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def footprint_pair_metrics(
    a: np.ndarray, b: np.ndarray, zero_division: float = 0.0, x_period: float | None = None,
    progress=None, area: AreaFunction = shapely.area, to_map=None,
) -> PairMetrics:
    """The metrics of one pair: the union of ``a`` against the union of ``b``.

    ``a``, ``b``: object arrays of prepared polygonal geometries (valid, area > 0, one space:
    a layer's ``PreparedLayer.overlay``). ``area``: the area function of that space
    (``PreparedLayer.area_of``: exact areas of longitude/latitude polygons, or
    ``shapely.area``); ``to_map``: geometries of that space to the equal-area CRS
    (``PreparedLayer.to_map``, for GIoU's hull and DIoU's centroids and box; None: the
    space is the equal-area CRS).
    Up to ``TILED_ROWS`` rows together the two are dissolved and scored by ``pair_metrics``.
    Beyond, no overlay ever holds a whole layer (dissolving 50,000 fields at once took 13
    minutes): each layer is cut into pieces that share no interior and have its union
    (``disjoint_pieces``: a row minus the rows it overlaps), so the union areas are sums of
    pieces' areas and the intersection area the sum of the overlays of the pairs of pieces
    that meet (``_piecewise_metrics``; on 50,000 fields whose neighbours overlap by slivers,
    under half the CPU time of GEOS unions of tiles: bench/README.md). A layer that overlaps
    itself densely (stacked copies), or layers whose rows each meet many detailed rows of the
    other (``_large_metrics``), are measured tile by tile on a square grid instead (each
    tile about ``_ROWS_PER_TILE`` rows, ``_tiled_metrics``): the tiles partition the plane, so the
    measures are sums over tiles. Either way the centroids are area-weighted means of the
    parts', the convex hull that of all vertices and the enclosing box their bounds.
    Ratios by ``metrics_from_measures``, as ``pair_metrics``.
    ``progress``: optional callable(fraction done), may raise to cancel.
    """
    if len(a) + len(b) <= TILED_ROWS:
        ua = np.array([dissolve(a, "predicted")], dtype=object)
        ub = np.array([dissolve(b, "reference")], dtype=object)
        return _union_metrics(ua, ub, zero_division, x_period, area, to_map)
    return _large_metrics(a, b, zero_division, x_period, progress, area, to_map)


def _large_metrics(a, b, zero_division, x_period, progress, area, to_map) -> PairMetrics:
    """The metrics of a pair of footprints of more than ``TILED_ROWS`` rows: piece by piece
    (``_piecewise_metrics``), or tile by tile (``_tiled_metrics``) for densely
    self-overlapping layers and for layers whose rows each meet many detailed rows of the
    other (``_overlay_vertices_ratio`` above ``_PIECES_MAX_RATIO``: counties against
    counties, where overlaying every pair costs more than dissolving tiles of the coverage)."""
    metrics = None
    if _overlay_vertices_ratio(a, b) <= _PIECES_MAX_RATIO:
        metrics = _piecewise_metrics(a, b, zero_division, x_period, progress, area, to_map)
    if metrics is None:
        metrics = _tiled_metrics(a, b, zero_division, x_period, progress, area, to_map)
    return metrics


def _union_metrics(ua, ub, zero_division, x_period, area, to_map) -> PairMetrics:
    """PairMetrics, shape (n,), of dissolved footprints ``ua[k]`` against ``ub[k]`` (object
    arrays, shape (n,); None or a geometry without area: no area on that side)."""
    ua, ub = np.asarray(ua, dtype=object), np.asarray(ub, dtype=object)
    area_a, area_b = _areas(ua, area), _areas(ub, area)
    both = np.flatnonzero((area_a > 0) & (area_b > 0))
    n = len(ua)
    inter, enclosing, rho2, c2 = np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n)
    if len(both):
        inter[both] = intersection_area(ua[both], ub[both], area)
        ma, mb = (ua[both], ub[both]) if to_map is None else (to_map(ua[both]),
                                                               to_map(ub[both]))
        enclosing[both], rho2[both], c2[both] = enclosing_measures(
            ma, mb, "convex_hull", x_period)
    return metrics_from_measures(area_a, area_b, inter, enclosing, rho2, c2, zero_division)


def _areas(geoms: np.ndarray, area: AreaFunction) -> np.ndarray:
    """Areas of geometries that may be None or empty (0 there), float array (n,)."""
    out = np.zeros(len(geoms))
    present = ~shapely.is_missing(geoms)
    present[present] = ~shapely.is_empty(geoms[present])
    if present.any():
        out[present] = area(geoms[present])
    return np.where(np.isfinite(out) & (out > 0), out, 0.0)


def _overlay_vertices_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """The vertices the overlays of pairs of rows of ``a`` and ``b`` with overlapping bounding
    boxes would read, over the vertices of both layers (each vertex read once: 1)."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    row_a, row_b = shapely.STRtree(b).query(a)
    vertices_a, vertices_b = shapely.get_num_coordinates(a), shapely.get_num_coordinates(b)
    total = float(vertices_a.sum() + vertices_b.sum())
    return float((vertices_a[row_a] + vertices_b[row_b]).sum()) / max(total, 1.0)


def _piecewise_metrics(a, b, zero_division, x_period, progress, area=shapely.area,
                       to_map=None) -> PairMetrics | None:
    """``footprint_pair_metrics`` from each layer's ``disjoint_pieces`` (see there), or None
    when a layer overlaps itself densely (more than ``_DENSE_PAIRS_PER_ROW`` pairs of
    intersecting rows per row: stacked copies, where cutting each row by its many neighbours
    would cost more than dissolving tiles).

    The pieces of a layer share no interior and have the layer's union, so the footprint's
    area is the sum of its pieces' areas and the intersection of the two footprints the sum of
    the overlays of the pairs of pieces that meet (an STRtree query; ``intersection_area``).
    The centroid of a footprint is the mean of its pieces' centroids weighted by their areas
    (both in the equal-area CRS); the convex hull and the enclosing box are those of all
    vertices. As for the tiles, a footprint spread over more than half the world in x has its
    vertices and centroids west of x = 0 moved east by ``x_period`` (pieces across x = 0
    cut there first, as no tile straddles it)."""
    def report(lo, hi):
        return None if progress is None else (lambda f: progress(lo + (hi - lo) * f))

    cut_a = disjoint_pieces(a, "predicted", report(0.0, 0.2), _DENSE_PAIRS_PER_ROW)
    cut_b = None if cut_a is None else disjoint_pieces(b, "reference", report(0.2, 0.5),
                                                       _DENSE_PAIRS_PER_ROW)
    if cut_b is None:
        return None
    pieces_a, pieces_b = cut_a[0], cut_b[0]
    area_a = float(_areas(pieces_a, area).sum())
    area_b = float(_areas(pieces_b, area).sum())
    if not (area_a > 0 and area_b > 0):
        return metrics_from_measures(np.array([area_a]), np.array([area_b]), np.zeros(1),
                                     np.zeros(1), np.zeros(1), np.ones(1), zero_division)
    tree = shapely.STRtree(pieces_b)
    # Chunks of a few thousand, many more than the threads, so that none waits long for the
    # last one.
    chunks = split(len(pieces_a), 1_000, 4_000)
    found = run_chunks(lambda part: tree.query(pieces_a[part], predicate="intersects"),
                       chunks, report(0.5, 0.6))
    row_a = np.concatenate([f[0] + part.start for f, part in zip(found, chunks)])
    row_b = np.concatenate([f[1] for f in found])
    parts = split(len(row_a), 1_000, 4_000)
    # Prepared once here, not in the threads (which share pieces), released after unless
    # they were prepared already.
    fresh = [p[~shapely.is_prepared(p)] for p in (pieces_a, pieces_b)]
    shapely.prepare(fresh[0])
    shapely.prepare(fresh[1])
    try:
        inter = float(sum(run_chunks(
            lambda part: _pieces_intersection(pieces_a, pieces_b, row_a[part], row_b[part],
                                              area),
            parts, report(0.6, 0.95))))
    finally:
        shapely.destroy_prepared(fresh[0])
        shapely.destroy_prepared(fresh[1])
    ma, mb = (pieces_a, pieces_b) if to_map is None else (to_map(pieces_a), to_map(pieces_b))
    everything = np.concatenate([ma, mb])
    side = np.r_[np.zeros(len(ma), dtype=bool), np.ones(len(mb), dtype=bool)]
    bounds = shapely.bounds(everything)
    shift = x_period is not None and bounds[:, 2].max() - bounds[:, 0].min() > x_period / 2
    if shift:
        everything, side = _cut_at_zero(everything, side, bounds)
    weights = shapely.area(everything)
    centres = shapely.get_coordinates(shapely.centroid(everything))
    if shift:
        # The western parts side by side with the eastern ones: every vertex and centroid
        # west of x = 0 moved east, as pair_metrics and the tiles do.
        centres[centres[:, 0] < 0, 0] += x_period

        def east(xy):
            xy = xy.copy()
            xy[xy[:, 0] < 0, 0] += x_period
            return xy

        everything = shapely.transform(everything, east)
    coords = _hull_candidates(everything)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_a = (centres[~side] * weights[~side, None]).sum(axis=0) / weights[~side].sum()
        mean_b = (centres[side] * weights[side, None]).sum(axis=0) / weights[side].sum()
    low, high = coords.min(axis=0), coords.max(axis=0)
    return metrics_from_measures(
        np.array([area_a]), np.array([area_b]), np.array([inter]),
        np.array([float(shapely.area(shapely.convex_hull(shapely.multipoints(coords))))
                  if len(coords) else 0.0]),
        np.array([np.sum((mean_a - mean_b) ** 2)]), np.array([np.sum((high - low) ** 2)]),
        zero_division,
    )


def _cut_at_zero(geoms: np.ndarray, side: np.ndarray, bounds: np.ndarray):
    """(geoms, side) with every geometry across x = 0 replaced by its parts west and east of
    it (polygonal parts with area only), ``side`` repeated for them."""
    across = (bounds[:, 0] < 0) & (bounds[:, 2] > 0)
    if not across.any():
        return geoms, side
    big = float(np.abs(bounds).max()) * 2 + 1.0
    cut = geoms[across]
    halves = np.concatenate([
        guarded_intersection(cut, np.full(len(cut), shapely.box(-big, -big, 0, big)),
                             "a footprint piece could not be cut at x = 0"),
        guarded_intersection(cut, np.full(len(cut), shapely.box(0, -big, big, big)),
                             "a footprint piece could not be cut at x = 0"),
    ])
    halves_side = np.r_[side[across], side[across]]
    present = ~shapely.is_missing(halves)
    present[present] = shapely.area(halves[present]) > 0
    return (np.concatenate([geoms[~across], halves[present]]),
            np.r_[side[~across], halves_side[present]])


def _pieces_intersection(pieces_a, pieces_b, row_a, row_b, area) -> float:
    """Sum of the overlay areas of the pairs ``(pieces_a[row_a[k]], pieces_b[row_b[k]])``; a
    piece inside the other (``covers``, tried where one's bounding box lies in the other's) is
    the overlay, measured without one."""
    a, b = pieces_a[row_a], pieces_b[row_b]
    bounds_a, bounds_b = shapely.bounds(a), shapely.bounds(b)
    in_b = (bounds_a[:, :2] >= bounds_b[:, :2]).all(axis=1) & (
        bounds_a[:, 2:] <= bounds_b[:, 2:]).all(axis=1)
    in_a = ~in_b & (bounds_b[:, :2] >= bounds_a[:, :2]).all(axis=1) & (
        bounds_b[:, 2:] <= bounds_a[:, 2:]).all(axis=1)
    covered = np.zeros(len(a), dtype=bool)
    with np.errstate(all="ignore"):
        covered[in_b] = _covers(b[in_b], a[in_b])
        covered[in_a] = _covers(a[in_a], b[in_a])
    inner = np.where(in_b, a, b)[covered]
    rest = ~covered
    return float(area(inner).sum() if len(inner) else 0.0) + float(
        intersection_area(a[rest], b[rest], area).sum())


def _covers(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """``outer[k]`` covers ``inner[k]`` (fast when ``outer`` is prepared); a batch GEOS
    cannot relate counts as not covered (its pairs are overlaid)."""
    if len(outer) == 0:
        return np.zeros(0, dtype=bool)
    try:
        return shapely.covers(outer, inner)
    except shapely.errors.GEOSException:
        return np.zeros(len(outer), dtype=bool)


def _hull_candidates(geoms: np.ndarray) -> np.ndarray:
    """Vertices of the polygonal geometries (object array, shape (n,)) whose convex hull is
    that of all their vertices, float array (m, 2): a geometry whose bounding box lies
    strictly inside the hull of the few geometries reaching the extremes of the boxes' corners
    in x, y, x + y and x - y gives none (every vertex of it is inside that hull)."""
    if len(geoms) == 0:
        return np.zeros((0, 2))
    bounds = shapely.bounds(geoms)
    corners = [bounds[:, [0, 1]], bounds[:, [0, 3]], bounds[:, [2, 1]], bounds[:, [2, 3]]]
    keys = np.column_stack([
        bounds[:, 0], bounds[:, 1], -bounds[:, 2], -bounds[:, 3],
        bounds[:, 0] + bounds[:, 1], -(bounds[:, 2] + bounds[:, 3]),
        bounds[:, 0] - bounds[:, 3], bounds[:, 1] - bounds[:, 2],
    ])
    extreme = np.unique(keys.argmin(axis=0))
    core = shapely.convex_hull(shapely.multipoints(shapely.get_coordinates(geoms[extreme])))
    inside = np.zeros(len(geoms), dtype=bool)
    if shapely.get_type_id(core) == 3 and shapely.area(core) > 0:
        shapely.prepare(core)
        inside[:] = True
        for corner in corners:
            inside &= shapely.contains_xy(core, corner[:, 0], corner[:, 1])
        inside[extreme] = False
    return shapely.get_coordinates(geoms[~inside])


def _tiled_metrics(a, b, zero_division, x_period, progress, area=shapely.area,
                   to_map=None) -> PairMetrics:
    """``footprint_pair_metrics`` tile by tile (see there: the way of densely self-overlapping
    layers); the tiles are squares of the
    geometries' own space (degrees for longitude/latitude layers), centroids and hulls are
    taken in the equal-area CRS."""
    xmin, ymin, xmax, ymax = shapely.total_bounds(np.concatenate([a, b]))
    side = max(xmax - xmin, ymax - ymin, 1e-300)
    n_side = max(1, int(math.ceil(math.sqrt((len(a) + len(b)) / _ROWS_PER_TILE))))
    step = side / n_side
    # Columns aligned on x = 0, so that no tile straddles it (see the shift below).
    x0 = math.floor(xmin / step) * step
    nx = max(1, int(math.ceil((xmax - x0) / step)))
    ny = max(1, int(math.ceil((ymax - ymin) / step)))
    i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    tiles = shapely.box(
        x0 + i.ravel() * step, ymin + j.ravel() * step,
        x0 + (i.ravel() + 1) * step, ymin + (j.ravel() + 1) * step,
    )
    pieces_a, tile_a = _cut_to_tiles(a, tiles)
    pieces_b, tile_b = _cut_to_tiles(b, tiles)
    order_a, order_b = np.argsort(tile_a, kind="stable"), np.argsort(tile_b, kind="stable")
    pieces_a, tile_a = pieces_a[order_a], tile_a[order_a]
    pieces_b, tile_b = pieces_b[order_b], tile_b[order_b]
    bounds_a = np.searchsorted(tile_a, np.arange(len(tiles) + 1))
    bounds_b = np.searchsorted(tile_b, np.arange(len(tiles) + 1))

    def run(part: slice):
        ua = np.array([dissolve(pieces_a[bounds_a[t]:bounds_a[t + 1]], "predicted")
                       for t in range(part.start, part.stop)], dtype=object)
        ub = np.array([dissolve(pieces_b[bounds_b[t]:bounds_b[t + 1]], "reference")
                       for t in range(part.start, part.stop)], dtype=object)
        area_a, area_b = _areas(ua, area), _areas(ub, area)
        has_a, has_b = area_a > 0, area_b > 0
        inter = np.zeros(len(ua))
        pair = np.flatnonzero(has_a & has_b)
        inter[pair] = intersection_area(ua[pair], ub[pair], area)
        ma, mb = ua[has_a], ub[has_b]
        if to_map is not None:
            ma, mb = to_map(ma), to_map(mb)
        centre_a, centre_b = np.zeros((len(ua), 2)), np.zeros((len(ub), 2))
        centre_a[has_a] = shapely.get_coordinates(shapely.centroid(ma))
        centre_b[has_b] = shapely.get_coordinates(shapely.centroid(mb))
        # The hull of the tiles' hulls is the hull of everything: only their vertices go on.
        hulls = shapely.convex_hull(np.r_[ma, mb])
        return area_a, area_b, inter, centre_a, centre_b, shapely.get_coordinates(hulls)

    chunks = run_chunks(run, split(len(tiles), 4, 64), progress)
    area_a, area_b, inter, centre_a, centre_b, coords = (
        np.concatenate([c[k] for c in chunks]) for k in range(6)
    )
    if x_period is not None and len(coords) and np.ptp(coords[:, 0]) > x_period / 2:
        # A footprint cut at the antimeridian: its western parts side by side with the
        # eastern ones, as pair_metrics does (tiles do not straddle x = 0).
        coords[coords[:, 0] < 0, 0] += x_period
        centre_a[centre_a[:, 0] < 0, 0] += x_period
        centre_b[centre_b[:, 0] < 0, 0] += x_period
    total_a, total_b = area_a.sum(), area_b.sum()
    hull = shapely.convex_hull(shapely.multipoints(coords)) if len(coords) else None
    low, high = coords.min(axis=0), coords.max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_a = (centre_a * area_a[:, None]).sum(axis=0) / total_a
        mean_b = (centre_b * area_b[:, None]).sum(axis=0) / total_b
    return metrics_from_measures(
        np.array([total_a]), np.array([total_b]), np.array([inter.sum()]),
        np.array([shapely.area(hull) if hull is not None else 0.0]),
        np.array([np.sum((mean_a - mean_b) ** 2)]), np.array([np.sum((high - low) ** 2)]),
        zero_division,
    )


def _cut_to_tiles(geoms: np.ndarray, tiles: np.ndarray):
    """(pieces, tile of each piece): each geometry cut into its parts in each tile it meets
    (a geometry inside one tile is its own piece); pieces without area are left out."""
    tile, row = shapely.STRtree(geoms).query(tiles)
    bounds = shapely.bounds(geoms[row])
    tile_bounds = shapely.bounds(tiles[tile])
    inside = (
        (bounds[:, 0] >= tile_bounds[:, 0]) & (bounds[:, 1] >= tile_bounds[:, 1])
        & (bounds[:, 2] <= tile_bounds[:, 2]) & (bounds[:, 3] <= tile_bounds[:, 3])
    )
    pieces = geoms[row].copy()
    cut = np.flatnonzero(~inside)
    if len(cut):
        pieces[cut] = guarded_intersection(geoms[row[cut]], tiles[tile[cut]],
                                           "a piece of a footprint could not be cut to its tile")
    pieces = polygonal_parts(pieces)
    keep = ~shapely.is_missing(pieces)
    keep[keep] = shapely.area(pieces[keep]) > 0
    return pieces[keep], tile[keep]


def _metrics_by_code(a, codes_a, b, codes_b, n_ids, zero_division, x_period,
                     area=shapely.area, to_map=None) -> PairMetrics:
    """PairMetrics, shape (n_ids,): the rows of each code of ``a`` against those of ``b``;
    ids with more than ``TILED_ROWS`` rows measured tile by tile. ``area``, ``to_map``: as
    for ``footprint_pair_metrics``."""
    metrics = _union_metrics(
        _dissolve_by_code(a, codes_a, n_ids, "predicted", TILED_ROWS),
        _dissolve_by_code(b, codes_b, n_ids, "reference", TILED_ROWS),
        zero_division, x_period, area, to_map,
    )
    rows = np.bincount(codes_a[codes_a >= 0], minlength=n_ids) + np.bincount(
        codes_b[codes_b >= 0], minlength=n_ids
    )
    for code in np.flatnonzero(rows > TILED_ROWS):  # a loop over very large ids only
        one = _large_metrics(a[codes_a == code], b[codes_b == code], zero_division, x_period,
                             None, area, to_map)
        for name in PairMetrics.__dataclass_fields__:
            getattr(metrics, name)[code] = getattr(one, name)[0]
    return metrics


@contextlib.contextmanager
def quiet_prepare_log():
    """Silence ``prepare_layer``'s drop log while ``pair_metrics`` checks the footprints again:
    they are prepared already, and the only rows it drops are the None of a side without
    area, which are no data error (the layers' own drops were logged once)."""
    prepare_logger = logging.getLogger(prepare_layer.__module__)
    level = prepare_logger.level
    prepare_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        prepare_logger.setLevel(level)


def _ids(values, n: int, name: str) -> list:
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} must have one value per row ({n}), got {len(values)}")
    return values


def _dissolve_by_code(geoms: np.ndarray, codes: np.ndarray, n_groups: int, name: str,
                      max_rows: int | None = None):
    """Object array, shape (n_groups,): the union of the geometries of each code (None for a
    code without any, or with more than ``max_rows`` geometries); geometries with code -1
    are left out."""
    out = np.full(n_groups, None, dtype=object)
    inside = codes >= 0
    geoms, codes = geoms[inside], codes[inside]
    counts = np.bincount(codes, minlength=n_groups)
    single = counts[codes] == 1
    out[codes[single]] = geoms[single]
    several = ~single
    geoms, codes = geoms[several], codes[several]
    order = np.argsort(codes, kind="stable")
    geoms, codes = geoms[order], codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else []
    for start, stop in zip(starts, list(starts[1:]) + [len(codes)]):
        # A loop over ids with several rows only.
        if max_rows is None or stop - start <= max_rows:
            out[codes[start]] = dissolve(geoms[start:stop], name)
    return out
