"""Precision, recall and F1 as the IoU threshold varies: the candidate pairs matched again at
each threshold ("what if we had chosen 0.3 or 0.75?")."""

from __future__ import annotations

import numpy as np

from .rules import at_or_above, greedy_accepted, greedy_order, match
from ..util.rates import safe_divide
from .summary import f1_from_counts
from ..pairs.overlap import OverlapPairs

#: IoU thresholds of the sweep: 0.05, 0.10, ..., 0.95.
SWEEP_THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 20))


def threshold_sweep(
    candidates: OverlapPairs,
    n_reference: int,
    n_predicted: int,
    matching: str,
    ignore_coverage: np.ndarray | None = None,
    thresholds=SWEEP_THRESHOLDS,
) -> dict:
    """TP, FP, FN, precision, recall and F1 at each IoU threshold, exactly as ``evaluate``
    would give them with that threshold (same candidate pairs, same matching rule).

    Args:
        candidates: the pairs that may match (after the group and class rules), IoU in [0, 1].
        n_reference, n_predicted: evaluated reference fields and predictions.
        matching: a matching.MATCHING_METHODS rule.
        ignore_coverage: float (n_predicted,): per prediction, the largest |p ∩ r| / |p| over
            the ignore regions it may be ignored by (0 for none); an unmatched prediction with
            coverage at or above the threshold is neither TP nor FP. None: no ignore regions.
        thresholds: increasing IoU thresholds in (0, 1].

    Returns:
        {"iou_threshold", "count_tp", "count_fp", "count_fn", "precision", "recall", "f1"},
        lists of the same length as ``thresholds``. Empty denominators give 0, and 1 when
        both layers are empty (agribound 1.0's rules, as in ``evaluate``).

    Source: agribound 1.0 evaluation ("Matching", "Summary metrics", "Empty denominators").
    """
    coverage = np.zeros(n_predicted) if ignore_coverage is None else np.asarray(ignore_coverage)
    out = {key: [] for key in ("iou_threshold", "count_tp", "count_fp", "count_fn",
                               "precision", "recall", "f1")}
    thresholds = [float(t) for t in thresholds]
    greedy = None
    if matching == "one_to_one" and thresholds:  # one greedy pass serves every threshold
        greedy = _greedy_by_threshold(candidates, n_reference, n_predicted, thresholds)
    for threshold in thresholds:
        if greedy is None:
            matches = match(candidates, n_reference, n_predicted, float(threshold), matching)
            pred_matched = matches.predicted_match >= 0
            tp = int(np.sum(matches.reference_match >= 0))
        else:
            pred_matched, tp = greedy(float(threshold))
        ignored = ~pred_matched & at_or_above(coverage, float(threshold)) & (coverage > 0)
        fp = int(np.sum(~pred_matched & ~ignored))
        n_counted = n_predicted - int(ignored.sum())
        empty = 1.0 if n_reference == 0 and n_counted == 0 else 0.0
        precision = float(safe_divide(tp, tp + fp, zero_division=empty))
        recall = float(safe_divide(tp, n_reference, zero_division=empty))
        out["iou_threshold"].append(float(threshold))
        out["count_tp"].append(tp)
        out["count_fp"].append(fp)
        out["count_fn"].append(n_reference - tp)
        out["precision"].append(precision)
        out["recall"].append(recall)
        out["f1"].append(float(f1_from_counts(tp, fp, n_reference - tp, precision, recall))
                         if not empty else 1.0)
    return out


def _greedy_by_threshold(candidates: OverlapPairs, n_reference: int, n_predicted: int,
                         thresholds):
    """``one_to_one`` at every threshold from one pass: the pairs at or above a threshold are
    the first ones of the greedy order (descending IoU), and the greedy rule accepts among
    the first k pairs what it accepts matching them alone. Returns a function of a threshold
    giving (matched predictions: bool (n_predicted,), count of matched references), equal to
    ``match(candidates, ..., threshold, "one_to_one")``'s."""
    above = at_or_above(candidates.iou, float(min(thresholds)))
    ref, pred, iou = (candidates.reference[above], candidates.predicted[above],
                      candidates.iou[above])
    order = greedy_order(ref, pred, iou)
    ref, pred, iou = ref[order], pred[order], iou[order]
    accepted = greedy_accepted(ref, pred, n_reference, n_predicted)
    # Position in the greedy order at which each prediction was matched (n: never).
    matched_at = np.full(n_predicted, len(ref), dtype=np.int64)
    matched_at[pred[accepted]] = accepted

    def at(threshold: float):
        first = int(np.count_nonzero(at_or_above(iou, threshold)))  # a prefix of the order
        return matched_at < first, int(np.searchsorted(accepted, first))

    return at
