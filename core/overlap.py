"""Candidate (reference, predicted) pairs and their IoU, vectorised."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import shapely

logger = logging.getLogger(__name__)

#: Grid (in CRS units: 1 mm in metres) for the rare overlay GEOS cannot node exactly.
_FALLBACK_GRID_SIZE = 1e-3


@dataclass(frozen=True)
class OverlapPairs:
    """Every (reference, predicted) pair whose intersection has positive area.

    All arrays have shape (n_pairs,) and are sorted by reference, then predicted position.

    Attributes:
        reference: int64 positions into the prepared reference layer.
        predicted: int64 positions into the prepared predicted layer.
        intersection_m2: intersection areas, > 0, in the equal-area CRS.
        iou: |r ∩ p| / |r ∪ p|, in (0, 1].
    """

    reference: np.ndarray
    predicted: np.ndarray
    intersection_m2: np.ndarray
    iou: np.ndarray

    @property
    def n(self) -> int:
        return len(self.reference)

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
) -> OverlapPairs:
    """Candidate pairs from an STRtree query, with exact intersection areas and IoU.

    Args:
        reference: object array, shape (n_ref,), valid polygonal geometries.
        reference_area_m2: float array, shape (n_ref,), their areas.
        predicted: object array, shape (n_pred,), valid polygonal geometries, same CRS.
        predicted_area_m2: float array, shape (n_pred,).

    Returns:
        OverlapPairs; pairs that only touch (zero-area intersection) are not included.
    """
    empty = np.zeros(0, dtype=np.int64)
    if len(reference) == 0 or len(predicted) == 0:
        return OverlapPairs(empty, empty, np.zeros(0), np.zeros(0))
    tree = shapely.STRtree(predicted)
    ref_idx, pred_idx = tree.query(reference, predicate="intersects")
    order = np.lexsort((pred_idx, ref_idx))
    ref_idx = ref_idx[order].astype(np.int64)
    pred_idx = pred_idx[order].astype(np.int64)
    inter = intersection_area(reference[ref_idx], predicted[pred_idx])
    positive = inter > 0
    ref_idx, pred_idx, inter = ref_idx[positive], pred_idx[positive], inter[positive]
    union = reference_area_m2[ref_idx] + predicted_area_m2[pred_idx] - inter
    iou = np.clip(inter / union, 0.0, 1.0)
    return OverlapPairs(ref_idx, pred_idx, inter, iou)


def intersection_area(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Area of ``a[k] ∩ b[k]`` for each k; object arrays of equal shape (n,) → float (n,).

    A pair GEOS cannot overlay exactly (a TopologyException on nearly coincident edges) is
    recomputed on a 1 mm precision grid rather than aborting the run.
    """
    if len(a) == 0:
        return np.zeros(0)
    try:
        return shapely.area(shapely.intersection(a, b))
    except shapely.errors.GEOSException:
        pass
    out = np.empty(len(a))
    n_snapped = 0
    for k in range(len(a)):
        try:
            out[k] = shapely.area(shapely.intersection(a[k], b[k]))
        except shapely.errors.GEOSException:
            out[k] = shapely.area(shapely.intersection(a[k], b[k], grid_size=_FALLBACK_GRID_SIZE))
            n_snapped += 1
    logger.warning("%d intersections were computed on a 1 mm precision grid", n_snapped)
    return out
