"""Detection-style scores of an evaluation: Galtea's spatial match per reference and
GroundSet's F1 / precision / recall at the IoU threshold, mIoU and true negatives.

- **Spatial match** (Galtea): a reference passes when the best IoU of any prediction that may
  match it (same group, compatible class) is at least the threshold; no one-to-one rule, so
  one prediction may serve several references. ``spatial_match_rate`` = passing references /
  references (0 with no reference, the evaluation's empty-denominator rule).
- **GroundSet** detection: "We select the candidate with maximum IoU per target … TP: IoU ≥
  0.5 with an unclaimed ground truth. FP: IoU < 0.5 or duplicate prediction for the same
  ground truth. FN: Unmatched ground truth object. TN: Correct rejection (no object predicted
  when none exists)." That is one-to-one greedy matching by descending IoU among candidates
  (whatever MATCHING the main evaluation used), taxonomy-aware through the candidates (a
  child class answers for its parent); predictions on ignore regions are neither TP nor FP.
  Empty denominators give 0, as in the seed's recipe (so two empty layers score F1 0 here,
  where the main metrics use the agribound convention of 1).
  ``groundset_miou`` = Σ best candidate IoU / count of references: every reference counts the
  best IoU of any candidate prediction, matched or not (a false negative that a prediction
  overlaps partly counts that IoU); only a reference that no candidate overlaps counts 0.
  ``count_tn`` (with groups only) = groups (images) with neither an
  evaluated reference nor a counted prediction: a group value that appears in either layer
  only on rows without a usable geometry (an answer "none" stored as a null geometry, say) or
  on ignore regions. Rows without a group value are not a group.

Sources: the Galtea documentation, "Spatial Match" (the spatial_match metric); Ferrod et al.
(2026), "GroundSet: A Cadastral-Grounded Dataset for Spatial Understanding with Vector Data",
arXiv:2603.14609.
"""

from __future__ import annotations

import numpy as np

from .labels import MISSING
from .rules import Matches, at_or_above, match
from ..util.rates import safe_divide
from .summary import f1_score
from ..pairs.overlap import OverlapPairs


def detection_scores(
    candidates: OverlapPairs,
    n_reference: int,
    n_predicted: int,
    iou_threshold: float,
    ignore_coverage: np.ndarray | None = None,
    groups=None,
    greedy: Matches | None = None,
) -> tuple[dict, dict]:
    """Spatial match per reference and GroundSet's detection scores.

    Args:
        candidates: pairs that may match (same group, compatible classes), positions into the
            evaluated reference (n_reference) and predicted (n_predicted) rows.
        iou_threshold: in (0, 1] (compared with ``at_or_above``'s relative tolerance).
        ignore_coverage: float (n_predicted,), largest |p ∩ r| / |p| over ignore regions, or
            None: an unmatched prediction with coverage >= threshold is not counted.
        groups: None, or (reference labels of every input row, predicted labels of every
            input row, reference evaluated positions ``keep`` into the first, predicted
            ``keep`` into the second): labels normalised by ``labels.normalise_labels``.
        greedy: the ``one_to_one`` matching of these candidates at ``iou_threshold`` when
            the caller has it already (evaluate with MATCHING one_to_one); matched here when
            None.

    Returns:
        (metrics, per_reference): metrics spatial_match_rate, count_spatial_match,
        groundset_count_tp / _fp / _fn, groundset_precision, groundset_recall, groundset_f1,
        groundset_miou, and with groups count_tn and count_groups; per_reference
        {"spatial_match": bool (n_reference,)}.
    """
    best = np.zeros(n_reference)
    np.maximum.at(best, candidates.reference, candidates.iou)
    passes = at_or_above(best, iou_threshold) & (best > 0)

    if greedy is None:
        greedy = match(candidates, n_reference, n_predicted, iou_threshold, "one_to_one")
    pred_matched = greedy.predicted_match >= 0
    counted = np.ones(n_predicted, dtype=bool)
    if ignore_coverage is not None:
        coverage = np.asarray(ignore_coverage, dtype=float)
        counted = pred_matched | ~(at_or_above(coverage, iou_threshold) & (coverage > 0))
    tp = int(np.sum(greedy.reference_match >= 0))
    fp = int(np.sum(counted & ~pred_matched))
    fn = n_reference - tp
    precision = float(safe_divide(tp, tp + fp, zero_division=0.0))
    recall = float(safe_divide(tp, tp + fn, zero_division=0.0))
    metrics = {
        "count_spatial_match": int(passes.sum()),
        "spatial_match_rate": float(safe_divide(int(passes.sum()), n_reference, zero_division=0.0)),
        "groundset_count_tp": tp,
        "groundset_count_fp": fp,
        "groundset_count_fn": fn,
        "groundset_precision": precision,
        "groundset_recall": recall,
        "groundset_f1": float(f1_score(precision, recall)),
        "groundset_miou": float(best.mean()) if n_reference else 0.0,
    }
    if groups is not None:
        ref_labels, pred_labels, ref_keep, pred_keep = groups
        every = (set(np.asarray(ref_labels, dtype=object).tolist())
                 | set(np.asarray(pred_labels, dtype=object).tolist())) - {MISSING}
        with_reference = set(np.asarray(ref_labels, dtype=object)[ref_keep].tolist())
        with_prediction = set(np.asarray(pred_labels, dtype=object)[pred_keep][counted].tolist())
        metrics["count_groups"] = len(every)
        metrics["count_tn"] = len(every - with_reference - with_prediction)
    return metrics, {"spatial_match": passes}
