"""Boundary precision, recall and F1 as the boundary tolerance grows from the chosen one to
four times it: the same boundary segments (each polygon in its UTM zone) measured exactly at
every tolerance in one pass."""

from __future__ import annotations

import numpy as np

from .boundary import ZonedLayer
from .metrics import f1_score, ratio
from .tolerance import tolerance_lengths_in_utm_at

#: Tolerances of the curve, as multiples of the chosen boundary tolerance.
TOLERANCE_MULTIPLES = (1.0, 1.5, 2.0, 3.0, 4.0)


def boundary_f1_by_tolerance(
    reference: ZonedLayer,
    predicted: ZonedLayer,
    tolerance_m: float,
    predicted_counted: np.ndarray | None = None,
    multiples=TOLERANCE_MULTIPLES,
    progress=None,
) -> dict:
    """Boundary precision, recall and F1 at ``tolerance_m`` times each of ``multiples``.

    All tolerances are measured in one pass over the boundaries
    (``tolerance.tolerance_lengths_in_utm_at``): the pairs of boundary pieces are found once,
    within the largest tolerance, and solved exactly at each.

    Args:
        reference, predicted: the layers as ``evaluate`` measured them (``zoned_layer``).
        tolerance_m: the chosen tolerance in m, > 0.
        predicted_counted: bool (predicted.n,): predictions that count (not on an ignore
            region); all when None.
        progress: optional callable(fraction in [0, 1]); may raise to cancel.

    Returns:
        {"multiple", "tolerance_m", "boundary_precision", "boundary_recall", "boundary_f1"}:
        lists of len(multiples). Boundary recall = Σ reference boundary length within the
        tolerance of a predicted boundary / Σ reference perimeter; precision likewise for
        predicted boundaries; F1 their harmonic mean; 0 on an empty denominator (1 when
        both layers are empty).

    Source: agribound seed, boundary_precision / boundary_recall / boundary_f1 ("With
    boundary_tolerance_m"), repeated at larger tolerances.
    """
    counted = (np.ones(predicted.n, dtype=bool) if predicted_counted is None
               else np.asarray(predicted_counted, dtype=bool))
    tolerances = [tolerance_m * float(m) for m in multiples]
    within_ref, perimeter_ref, within_pred, perimeter_pred = tolerance_lengths_in_utm_at(
        reference, predicted, tolerances, progress=progress
    )
    # Both layers empty: 1, as evaluate's rates (the agribound seed's 0.1.x convention).
    empty = 1.0 if reference.n == 0 and not counted.any() else 0.0
    out = {key: [] for key in ("multiple", "tolerance_m", "boundary_precision",
                               "boundary_recall", "boundary_f1")}
    for k, multiple in enumerate(multiples):
        precision = float(
            ratio(np.sum(within_pred[k][counted]), np.sum(perimeter_pred[counted]), empty)
        )
        recall = float(ratio(np.sum(within_ref[k]), np.sum(perimeter_ref), empty))
        out["multiple"].append(float(multiple))
        out["tolerance_m"].append(float(tolerances[k]))
        out["boundary_precision"].append(precision)
        out["boundary_recall"].append(recall)
        out["boundary_f1"].append(empty or float(f1_score(precision, recall)))
    return out
