"""Every overlapping (predicted, reference) pair of two layers with its areas, IoU, Dice, GIoU
and DIoU: the table behind ioueval:overlappairs.

Candidate pairs and their intersection areas come from ``overlap.overlap_pairs`` (STRtree
query, pairs with an intersection of positive area: the pairs ``evaluate`` matches on); the
ratios are ``pair_metrics.metrics_from_measures``', on geometries prepared by
``prepare.prepare_layer`` (repair, reprojection to the equal-area CRS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely

from ..geometry.crs import (
    DEFAULT_EQUAL_AREA_CRS,
    crs_label,
    densify_step,
    evaluation_crs,
    resolve_crs,
)
from ..geometry.densify import Projector, densify_adaptive
from ..geometry.exact_area import lonlat_area_for
from .overlap import overlap_pairs
from .pair_metrics import (
    PairMetrics,
    cylindrical_x_period,
    enclosing_measures,
    metrics_from_measures,
)
from ..geometry.prepare import (
    PreparedLayer,
    geometry_array,
    guarded_intersection,
    polygonal_parts,
    prepare_layer,
)
from ..util.progress import Progress


@dataclass(frozen=True)
class PairTable:
    """Overlapping pairs, sorted by reference, then predicted input position.

    Attributes:
        predicted_index, reference_index: int64, shape (n_pairs,): input positions.
        metrics: PairMetrics of the pairs (a = predicted, b = reference; areas in m² in the
            equal-area CRS, squared planar units without a CRS).
        intersections: object array, shape (n_pairs,), the polygonal parts of each
            intersection in the equal-area CRS (an empty polygon where GEOS could not compute
            one), or None when not asked for.
        predicted, reference: the prepared layers (drop and repair counts).
        equal_area_crs: its label ("none (planar units)" without a CRS).
    """

    predicted_index: np.ndarray
    reference_index: np.ndarray
    metrics: PairMetrics
    intersections: np.ndarray | None
    predicted: PreparedLayer
    reference: PreparedLayer
    equal_area_crs: str

    @property
    def n(self) -> int:
        return len(self.predicted_index)


def overlap_pair_table(
    predicted,
    reference,
    *,
    predicted_crs=None,
    reference_crs=None,
    equal_area_crs=DEFAULT_EQUAL_AREA_CRS,
    with_intersections: bool = False,
    progress: Progress | None = None,
) -> PairTable:
    """Every (predicted, reference) pair whose intersection has positive area, scored.

    Args:
        predicted, reference: sequences of shapely geometries (None allowed), shapes
            (n_pred,) and (n_ref,), in their CRSs. Never modified.
        predicted_crs, reference_crs: anything pyproj accepts, or both None (planar units).
        equal_area_crs: projected CRS in metres for areas (default EPSG:6933).
        with_intersections: also return the intersection geometries.
        progress: receives progress and may cancel (EvaluationCanceled is raised).

    Returns:
        A PairTable. Pairs that only touch are not in it; rows dropped as unusable (null,
        empty, zero area...) are in no pair and counted in the prepared layers.

    Raises:
        ValueError: a CRS that is not one, exactly one layer with a CRS, or an equal-area CRS
            that is not projected in metres.
        TypeError: a layer given as a single geometry or a non-sequence.

    Source: IoU, Dice, GIoU, DIoU as in ``pair_metrics`` (the IoU article, "Intersection over
    Union"; Rezatofighi et al. 2019; Zheng et al. 2020).
    """
    progress = progress or Progress()
    predicted = geometry_array(predicted, "predicted")
    reference = geometry_array(reference, "reference")
    pred_crs = resolve_crs(predicted_crs, "predicted_crs")
    ref_crs = resolve_crs(reference_crs, "reference_crs")
    ea_crs = evaluation_crs(ref_crs, pred_crs, equal_area_crs)

    progress.checkpoint(0, "Preparing geometries")
    # Geographic layers in a cylindrical equal-area CRS stay in longitude/latitude and are
    # measured exactly, as evaluate measures them (no densified copies).
    lonlat = lonlat_area_for([ref_crs, pred_crs], ea_crs) if ea_crs is not None else None
    ref = prepare_layer(reference, ref_crs, ea_crs, "reference", progress.span(0, 30), lonlat)
    pred = prepare_layer(predicted, pred_crs, ea_crs, "predicted", progress.span(30, 60),
                         lonlat)
    progress.checkpoint(60, "Computing overlaps")
    pairs = overlap_pairs(
        ref.overlay, ref.area_m2, pred.overlay, pred.area_m2, progress.span(60, 85),
        area=ref.area_of,
    )
    progress.checkpoint(85, "Scoring pairs")
    a, b = pred.overlay[pairs.predicted], ref.overlay[pairs.reference]
    # The intersections overlap_pairs measured (the ones evaluate matches on): no second
    # overlay; GIoU's hull and DIoU's centroids are measured here, in the equal-area CRS.
    metrics = metrics_from_measures(
        pred.area_m2[pairs.predicted],
        ref.area_m2[pairs.reference],
        pairs.intersection_m2,
        *enclosing_measures(
            pred.to_map(a), ref.to_map(b),
            x_period=cylindrical_x_period(ea_crs) if ea_crs is not None else None,
        ),
    )
    intersections = None
    if with_intersections:
        # Polygonal parts only (a pair can also share an edge beside its overlap); a pair
        # GEOS cannot overlay gets an empty polygon.
        intersections = polygonal_parts(
            guarded_intersection(a, b, "an intersection geometry could not be computed"))
        if lonlat is not None:
            intersections = _lonlat_drawing(intersections, ref, lonlat)
        intersections[shapely.is_missing(intersections)] = shapely.Polygon()
    progress.checkpoint(100, "Done")
    return PairTable(
        predicted_index=pred.keep[pairs.predicted],
        reference_index=ref.keep[pairs.reference],
        metrics=metrics,
        intersections=intersections,
        predicted=pred,
        reference=ref,
        equal_area_crs=crs_label(ea_crs),
    )


def _lonlat_drawing(geoms: np.ndarray, layer: PreparedLayer, lonlat) -> np.ndarray:
    """Longitude/latitude polygons (object array, shape (n,), None allowed) drawn in the
    equal-area CRS: edges split on the 50 m grid where their image bends
    (``densify.densify_adaptive``), then the vertices projected (``PreparedLayer.to_map``)."""
    out = np.array(geoms, dtype=object, copy=True)
    present = np.flatnonzero(~shapely.is_missing(out))
    if len(present) == 0:
        return out
    step = densify_step(lonlat.lonlat_crs)
    if step is not None:
        out[present] = densify_adaptive(
            out[present], Projector(lonlat.lonlat_crs, layer.equal_area_crs), step,
            half_turn=math.pi / float(lonlat.lonlat_crs.axis_info[0].unit_conversion_factor),
        )[0]
    out[present] = layer.to_map(out[present])
    return out
