"""Summary metrics from per-reference quantity sums.

Every summary metric is a ratio of sums of per-reference-field quantities (predictions are
attributed to their home reference field), so the same function serves the whole layer,
strata, size classes and bootstrap resamples. Definitions, names and empty-denominator rules
are those of the agribound 1.0 documentation, "Evaluation".
"""

from __future__ import annotations

import numpy as np

from ..util.rates import safe_divide

#: Per-reference quantities whose sums define the metrics. "*pred*" quantities and
#: "legacy_underseg" belong to predictions, summed onto their home reference field.
QUANTITIES = (
    "n_ref",
    "area_ref",
    "tp",
    "iou_tp",
    "best_iou",
    "abs_area_err_tp",
    "signed_area_err_tp",
    "area_ref_tp",
    "os",
    "us",
    "us_defined",
    "legacy_overseg",
    "n_dist",
    "hausdorff",
    "mean_dist",
    "perim_ref",
    "within_len_ref",
    "within_tol",
    "area_within_tol",
    "n_pred",
    "n_pred_matched",
    "area_pred",
    "area_pred_matched",
    "legacy_underseg",
    "perim_pred",
    "within_len_pred",
)
Q = {name: k for k, name in enumerate(QUANTITIES)}

#: Keys that are rates: 0.0 on an empty denominator, 1.0 when both layers are empty.
RATE_KEYS = (
    "precision",
    "recall",
    "f1",
    "iou_mean",
    "area_weighted_precision",
    "area_weighted_recall",
    "area_weighted_f1",
    "boundary_precision",
    "boundary_recall",
    "boundary_f1",
    "coverage_within_tolerance",
    "coverage_within_tolerance_area",
)
COUNT_KEYS = ("count_predicted", "count_reference", "count_tp", "count_fp", "count_fn")


#: The one zero-division rule (``util.rates.safe_divide``), under the name evaluate.py and
#: older callers import: ``ratio(num, den, zero_division)``.
ratio = safe_divide


def f1_score(precision, recall) -> np.ndarray:
    """Harmonic mean of precision and recall; 0.0 when both are 0."""
    precision = np.asarray(precision, dtype=float)
    recall = np.asarray(recall, dtype=float)
    return safe_divide(2.0 * precision * recall, precision + recall, zero_division=0.0)


def f1_from_counts(tp, fp, fn, precision, recall, zero_division: float = 0.0) -> np.ndarray:
    """F1 of counts: 2·TP / (2·TP + FP + FN), the harmonic mean of precision TP / (TP + FP)
    and recall TP / (TP + FN) written with the counts, so that it is the correctly rounded
    decimal (172 / 200 = 0.86, where the harmonic mean of the floats 0.86 and 0.86 is
    0.8599999999999999).

    Args: ``tp``, ``fp``, ``fn``: counts (arrays of one shape, or numbers); ``precision``,
    ``recall``: the rates reported beside it, each with its own empty-denominator value.
    Returns f1_score(precision, recall) wherever a rate is NaN or the counts are all 0 (the
    empty-denominator rules of the rates decide), else the count formula; same shape.

    Source: van Rijsbergen, Information Retrieval (1979), the F-measure; scikit-learn's
    ``f1_score`` documentation gives the same count form.
    """
    tp, fp, fn = (np.asarray(v, dtype=float) for v in (tp, fp, fn))
    harmonic = f1_score(precision, recall)
    counted = safe_divide(2.0 * tp, 2.0 * tp + fp + fn, zero_division=np.nan)
    return np.where(np.isnan(counted) | np.isnan(harmonic), harmonic, counted)


def metrics_from_sums(
    sums: np.ndarray, zero_division: float = 0.0, tolerance: bool = False, *,
    empty_rate: float | None = None,
) -> dict[str, np.ndarray]:
    """Summary metrics from quantity sums.

    Args:
        sums: float array, shape (..., len(QUANTITIES)): sums over reference fields (and their
            home predictions) of each quantity in ``QUANTITIES``.
        zero_division: value of a rate whose denominator is 0 (0.0 for reported metrics).
        tolerance: add the boundary-tolerance metrics (boundary_precision, boundary_recall,
            boundary_f1, coverage_within_tolerance and its area-weighted form).
        empty_rate: the former name of ``zero_division`` (evaluate.py still passes it);
            when given, it is used.

    Returns:
        dict of arrays of shape (...). Rates and the 0.1.x keys over_segmentation,
        under_segmentation and area_error_mean_m2 take ``zero_division`` on an empty
        denominator; other means are NaN. Areas in ha, area errors in m².

    Source: agribound 1.0 evaluation, "Summary metrics" and "Empty denominators".
    """

    if empty_rate is not None:
        zero_division = empty_rate

    def q(name):
        return sums[..., Q[name]]

    def rate(num, den):
        return safe_divide(num, den, zero_division=zero_division)

    def mean(num, den):
        return safe_divide(num, den, zero_division=np.nan)

    tp = q("tp")
    n_ref = q("n_ref")
    n_pred = q("n_pred")
    fp = n_pred - q("n_pred_matched")
    precision = rate(tp, tp + fp)
    recall = rate(tp, n_ref)
    aw_precision = rate(q("area_pred_matched"), q("area_pred"))
    aw_recall = rate(q("area_ref_tp"), q("area_ref"))
    out = {
        "precision": precision,
        "recall": recall,
        "f1": f1_from_counts(tp, fp, n_ref - tp, precision, recall),
        "iou_mean": rate(q("iou_tp"), tp),
        "over_segmentation": rate(q("legacy_overseg"), n_ref),
        "under_segmentation": rate(q("legacy_underseg"), n_pred),
        "area_error_mean_m2": rate(q("abs_area_err_tp"), tp),
        "count_predicted": n_pred,
        "count_reference": n_ref,
        "count_tp": tp,
        "count_fp": fp,
        "count_fn": n_ref - tp,
        "best_iou_mean": mean(q("best_iou"), n_ref),
        "area_weighted_precision": aw_precision,
        "area_weighted_recall": aw_recall,
        "area_weighted_f1": f1_score(aw_precision, aw_recall),
        "reference_area_ha": q("area_ref") / 1e4,
        "predicted_area_ha": q("area_pred") / 1e4,
        "area_error_signed_mean_m2": mean(q("signed_area_err_tp"), tp),
        "oversegmentation_mean": mean(q("os"), n_ref),
        "undersegmentation_mean": mean(q("us"), q("us_defined")),
        "hausdorff_mean_m": mean(q("hausdorff"), q("n_dist")),
        "boundary_distance_mean_m": mean(q("mean_dist"), q("n_dist")),
    }
    if tolerance:
        boundary_precision = rate(q("within_len_pred"), q("perim_pred"))
        boundary_recall = rate(q("within_len_ref"), q("perim_ref"))
        out.update(
            {
                "boundary_precision": boundary_precision,
                "boundary_recall": boundary_recall,
                "boundary_f1": f1_score(boundary_precision, boundary_recall),
                "coverage_within_tolerance": rate(q("within_tol"), n_ref),
                "coverage_within_tolerance_area": rate(q("area_within_tol"), q("area_ref")),
            }
        )
    return out


def to_builtin(metrics: dict[str, np.ndarray]) -> dict[str, float | int]:
    """Scalar metrics as Python floats, counts as ints."""
    return {
        key: int(round(float(value))) if key in COUNT_KEYS else float(value)
        for key, value in metrics.items()
    }


def nan_median(values: np.ndarray) -> float:
    """Median of the finite values, NaN when there are none."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else float("nan")
