"""COCO-style average precision (AP, AP50, AP75, AR) of scored predicted polygons.

The evaluation is pycocotools' ``COCOeval`` (Lin et al. 2014, "Microsoft COCO: Common Objects
in Context", and the COCO API's ``cocoeval.py``) on polygons: images are the *groups*,
categories the *classes*, ``iscrowd`` the *reference ignore* flag. It reproduces COCO's
summary values (to 1e-15 on the COCO API's demo boxes), with two decisions of its own:

- IoU thresholds are k/100 for k = 50, 55, ..., 95, addressed by position, so AP50 and AP75
  are never looked up by float equality in ``np.linspace(.5, .95, 10)`` (where 0.90 is
  0.8999999999999999), and IoU is compared with a threshold with the project's relative
  tolerance ``IOU_RTOL``, so an IoU equal to the threshold in exact arithmetic matches.
- Recall levels are COCO's own ``np.linspace(0, 1, 101)``, compared with recall as floats as
  COCO does. Ten of them (0.35, 0.41, 0.47, 0.57, 0.69, 0.70, 0.82, 0.83, 0.94, 0.95) lie one
  ulp above k/100, so a recall of exactly 7/20 does not reach level 0.35 and the next
  precision is read; levels built from integers would move AP50 on the COCO sample by 1.1e-4,
  more than published COCO values allow, so COCO's grid is kept for comparability.

Everything else follows ``COCOeval.evaluateImg``, ``accumulate`` and ``summarize``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import shapely

from .labels import MISSING, class_key
from .rules import IOU_RTOL
from ..pairs.overlap import intersection_area

#: IoU thresholds 0.50:0.05:0.95, each the double nearest to k/100.
IOU_THRESHOLDS = np.arange(50, 100, 5) / 100
#: Recall levels of the 101-point interpolated precision: COCO's grid, see the module docstring.
RECALL_LEVELS = np.linspace(0.0, 1.0, 101)
#: COCO's area ranges in CRS units² (COCO: pixels²), bounds included at both ends.
COCO_AREA_RANGES = {"small": (0.0, 32.0**2), "medium": (32.0**2, 96.0**2), "large": (96.0**2, 1e10)}
#: COCO's largest number of detections per image and category.
COCO_MAX_DETECTIONS = 100

_T50 = 0  # position of 0.50 in IOU_THRESHOLDS
_T75 = 5  # position of 0.75


def average_precision(
    predicted,
    scores,
    reference,
    *,
    predicted_class=None,
    reference_class=None,
    predicted_group=None,
    reference_group=None,
    reference_ignore=None,
    reference_area=None,
    class_ancestors: Mapping | None = None,
    max_detections: int | None = COCO_MAX_DETECTIONS,
    area_ranges: Mapping | None = COCO_AREA_RANGES,
    area=None,
) -> dict:
    """COCO-style AP@[.50:.95], AP50, AP75, AR and per-class values of scored predictions.

    Matching (``COCOeval.evaluateImg``), per IoU threshold t, in each group separately:
    predictions are taken by descending score (stable: ties keep input order), at most
    ``max_detections`` per group and predicted class; each takes the reference of highest IoU
    that is at or above t, compatible in class and not yet taken, preferring any non-ignored
    reference to an ignored one (on equal IoU the later reference in input order wins, as in
    COCO). An ignore reference (``reference_ignore``, COCO's ``iscrowd``) may be taken by any
    number of predictions, its IoU is |p ∩ r| / |p|, predictions on it are neither TP nor FP
    and it is never a FN. A reference outside an area range is ignored in that range (but is
    taken only once), and so is an unmatched prediction outside it.

    Precision and recall (``COCOeval.accumulate``): per class, the class's predictions of all
    groups in descending score order (ties: group order, then input order) give cumulative
    TP and FP; precision is made non-increasing from the right and read at the first rank
    whose recall reaches each of the 101 ``RECALL_LEVELS`` (0 where recall never does; COCO's
    float grid, see the module docstring). AP of a class is the mean over
    the 10 thresholds and 101 recall levels, AR the mean over thresholds of the final recall.
    Summary values are means over the classes that have non-ignored references in the range.

    Classes and taxonomy: a prediction of class k may match a reference of class c when
    c == k or c is an ancestor of k (GroundSet's rule). Matching is joint over the classes
    of a group, so a prediction matches at most one reference. A TP counts for the class of
    the reference it matched, an unmatched prediction as a FP of its own class: AP of class c
    is over the references of class c and the predictions that matched them or, unmatched,
    are of class c. Without a taxonomy this is exactly COCO's per-category evaluation.

    Args:
        predicted: object array, shape (n_pred,), polygonal shapely geometries in the same
            planar CRS as ``reference`` (metres or pixels; the caller reprojects). None or
            empty geometries overlap nothing.
        scores: float array, shape (n_pred,), higher = more confident. NaN (or None) scores
            rank below every number (also -inf), ties in input order, as NumPy sorts them in
            COCO; they are counted in ``count_predicted_nan_score``.
        reference: object array, shape (n_ref,), polygonal shapely geometries.
        predicted_class, reference_class: arrays of hashable labels, shapes (n_pred,) and
            (n_ref,), or both None for one class. Strings compare case-insensitively; None and
            NaN are a class of their own (None).
        predicted_group, reference_group: arrays of hashable labels (image or tile id), or both
            None for one group. Matching never crosses groups.
        reference_ignore: bool array, shape (n_ref,), True for an ignore region (None or NaN
            count as False), or None for none.
        reference_area: float array, shape (n_ref,), the area deciding a reference's size range
            (COCO: the annotation's ``area``), or None for the geometric area. IoU always uses
            geometric areas. A NaN area is in no size range.
        class_ancestors: mapping class -> iterable of its ancestor classes (see
            ``labels.ancestors_from_taxonomy``; closed transitively here), or None.
        max_detections: predictions kept per group and predicted class (COCO: 100 per image
            and category), the highest scored; None keeps all. AR_1 and AR_10 use at most 1
            and 10. With one group (no group field) the default truncates the whole layer:
            pass None there.
        area_ranges: mapping label -> (low, high) in CRS units², bounds included (COCO's
            defaults, meant for pixels), or None for no size breakdown. The range "all" has
            no bounds (COCO's is [0, 1e10]).
        area: the area function of the geometries' space (``prepare.PreparedLayer.area_of``),
            or None for planar areas (``shapely.area``).

    Returns:
        dict with
        ``ap``, ``ap50``, ``ap75``: AP over IoU 0.50:0.95, at 0.50 and at 0.75;
        ``ap_<label>``, ``ar_<label>`` for each area range;
        ``ar_1``, ``ar_10``, ``ar``: AR with at most 1, 10, ``max_detections`` predictions;
        ``per_class``: {class label (first spelling seen): {"ap", "ap50", "ap75", "ar",
        "count_reference", "count_predicted"}} ({} without class fields);
        ``pr_curve_50``, ``pr_curve``: 101 {"recall", "precision"} points, precision averaged
        over classes, at IoU 0.50 and averaged over the 10 thresholds;
        ``iou_thresholds``, ``max_detections``, ``count_reference`` (not ignored),
        ``count_reference_ignored``, ``count_predicted``, ``count_predicted_nan_score``,
        ``count_predicted_beyond_max_detections``, ``count_class_with_reference``.
        All values are Python floats or ints. A value without any class that has references
        (COCO's -1) is NaN; so is the per-class AP of a class without references, and a
        PR point without such a class. No predictions with references give 0.0.

    Raises:
        ValueError: an argument of the wrong type or shape (named in the message), only one of
            a pair of class or group arrays, ``max_detections`` < 1, a malformed area range,
            non-numeric scores or a taxonomy with a cycle.

    Source: Lin et al. (2014), Microsoft COCO; pycocotools ``COCOeval`` (evaluateImg,
    accumulate, summarize); GroundSet (Ferrod et al. 2026) for the taxonomy rule.
    """
    inputs = check_inputs(
        predicted, scores, reference, predicted_class=predicted_class,
        reference_class=reference_class, predicted_group=predicted_group,
        reference_group=reference_group, reference_ignore=reference_ignore,
        reference_area=reference_area, class_ancestors=class_ancestors,
        max_detections=max_detections, area_ranges=area_ranges, area=area,
    )
    order = _detection_order(inputs)
    pairs = _candidate_ious(inputs, order.kept)
    precision, recall, count_reference = _accumulate(inputs, order, pairs)
    return _result(inputs, order, precision, recall, count_reference)


@dataclass(frozen=True)
class APInputs:
    """The checked inputs of ``average_precision``: labels as integer codes, areas measured.

    Attributes:
        predicted, reference: object arrays, (n_pred,) and (n_ref,), of geometries or None.
        scores: float array, (n_pred,); None scores are NaN.
        max_detections: int >= 1, or None (keep all).
        ranges: {label: (low, high)} of the size ranges, CRS units², "all" not among them.
        pred_class, ref_class: int64 codes, (n_pred,) and (n_ref,), into ``class_names``.
        class_names: the display label of each class code ([None] without class fields).
        pred_group, ref_group: int64 group codes (all 0 without group fields).
        crowd: bool array, (n_ref,): the ignore regions.
        pred_area: float array, (n_pred,): geometric areas (0 where not finite).
        ref_geometric_area: float array, (n_ref,): the same for the references (for IoU).
        ref_area: float array, (n_ref,): the area deciding a reference's size range.
        ancestor_keys: int64 keys ``child * K + ancestor`` of compatible class codes.
        area: the area function of the geometries' space, or None for ``shapely.area``.
        classes_given: whether class fields were given (per-class values are reported).
    """

    predicted: np.ndarray
    reference: np.ndarray
    scores: np.ndarray
    max_detections: int | None
    ranges: dict
    pred_class: np.ndarray
    ref_class: np.ndarray
    class_names: list
    pred_group: np.ndarray
    ref_group: np.ndarray
    crowd: np.ndarray
    pred_area: np.ndarray
    ref_geometric_area: np.ndarray
    ref_area: np.ndarray
    ancestor_keys: np.ndarray
    area: Callable | None
    classes_given: bool

    @property
    def n_pred(self) -> int:
        return len(self.predicted)

    @property
    def n_ref(self) -> int:
        return len(self.reference)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)


def check_inputs(
    predicted,
    scores,
    reference,
    *,
    predicted_class=None,
    reference_class=None,
    predicted_group=None,
    reference_group=None,
    reference_ignore=None,
    reference_area=None,
    class_ancestors: Mapping | None = None,
    max_detections: int | None = COCO_MAX_DETECTIONS,
    area_ranges: Mapping | None = COCO_AREA_RANGES,
    area=None,
) -> APInputs:
    """The arguments of ``average_precision`` (same names and meanings) checked once, as an
    ``APInputs`` record. Raises ValueError as ``average_precision`` documents."""
    predicted = _geometries(predicted, "predicted")
    reference = _geometries(reference, "reference")
    n_pred, n_ref = len(predicted), len(reference)
    scores = _scores(scores, n_pred)
    max_detections = _check_max_detections(max_detections)
    ranges = _check_area_ranges(area_ranges)
    pred_class, ref_class, class_names = _encode_pair(
        predicted_class, reference_class, n_pred, n_ref, "predicted_class", "reference_class"
    )
    pred_group, ref_group, _ = _encode_pair(
        predicted_group, reference_group, n_pred, n_ref, "predicted_group", "reference_group"
    )
    crowd = _flags(reference_ignore, n_ref, "reference_ignore")
    pred_area = _areas(predicted, area)
    ref_geometric_area = _areas(reference, area)
    ref_area = (
        ref_geometric_area if reference_area is None else _reference_area(reference_area, n_ref)
    )
    return APInputs(
        predicted, reference, scores, max_detections, ranges, pred_class, ref_class,
        class_names, pred_group, ref_group, crowd, pred_area, ref_geometric_area, ref_area,
        _ancestor_keys(class_ancestors, class_names), area, predicted_class is not None,
    )


@dataclass(frozen=True)
class _DetectionOrder:
    """The predictions in COCO's order: ``rank`` (int64, (n_pred,)), the global position by
    score descending, then group, then input position (``COCOeval.accumulate``);
    ``rank_in_group_class``, the position within its (group, predicted class); ``cap``, the
    detections kept per group and class; ``kept``, bool (n_pred,), those within the cap."""

    rank: np.ndarray
    rank_in_group_class: np.ndarray
    cap: int
    kept: np.ndarray


def _detection_order(inputs: APInputs) -> _DetectionOrder:
    n_pred = inputs.n_pred
    rank = np.empty(n_pred, dtype=np.int64)
    rank[np.lexsort((np.arange(n_pred), inputs.pred_group, -inputs.scores))] = np.arange(n_pred)
    rank_in_group_class = _rank_within(rank, inputs.pred_group, inputs.pred_class)
    cap = inputs.max_detections or max(n_pred, 1)
    return _DetectionOrder(rank, rank_in_group_class, cap, rank_in_group_class < cap)


def _accumulate(inputs: APInputs, order: _DetectionOrder, pairs):
    """Matching and ``COCOeval.accumulate`` per area range (and, for "all", per detection
    limit 1, 10, cap). Returns ``(precision, recall, count_reference)``: {(range, limit):
    float (T, K, R), NaN for classes without references}, {(range, limit): float (T, K)},
    {range: int (K,)}."""
    pair_pred, pair_ref, pair_iou = pairs
    cap, kept, rank = order.cap, order.kept, order.rank
    crowd, ref_area, pred_area = inputs.crowd, inputs.ref_area, inputs.pred_area
    limits = sorted({1, min(10, cap), cap})
    range_masks = {"all": (np.ones(inputs.n_ref, dtype=bool), np.ones(inputs.n_pred, dtype=bool))}
    for label, (low, high) in inputs.ranges.items():
        range_masks[label] = (
            (ref_area >= low) & (ref_area <= high),
            (pred_area >= low) & (pred_area <= high),
        )
    precision, recall, count_reference, matches = {}, {}, {}, {}
    for label, (ref_in, pred_in) in range_masks.items():
        ref_ignored = crowd | ~ref_in
        count_reference[label] = np.bincount(inputs.ref_class[~ref_ignored],
                                             minlength=inputs.n_classes)
        # Matching depends only on which candidate pairs' references are ignored, so ranges
        # that agree on them (in metres, often "all" and "large") share one.
        key = ref_ignored[pair_ref].tobytes()
        if key not in matches:
            matches[key] = _greedy_match(
                pair_pred, pair_ref, pair_iou, rank, crowd, ref_ignored, inputs.n_pred
            )
        match = matches[key]
        for limit in limits if label == "all" else (cap,):
            precision[label, limit], recall[label, limit] = _precision_recall(
                match, rank, kept & (order.rank_in_group_class < limit), pred_in,
                inputs.pred_class, inputs.ref_class, ref_ignored, count_reference[label],
            )
    return precision, recall, count_reference


def _result(inputs: APInputs, order: _DetectionOrder, precision, recall, count_reference):
    """The dict ``average_precision`` returns (see there)."""
    cap = order.cap
    result = _summary(precision, recall, inputs.ranges, cap)
    result["per_class"] = {}
    if inputs.classes_given:
        result["per_class"] = _per_class(
            precision["all", cap], recall["all", cap], count_reference["all"],
            np.bincount(inputs.pred_class, minlength=inputs.n_classes), inputs.class_names,
        )
    result["pr_curve_50"] = _curve(precision["all", cap][_T50])
    result["pr_curve"] = _curve(np.mean(precision["all", cap], axis=0))
    result.update(
        iou_thresholds=IOU_THRESHOLDS.tolist(),
        max_detections=inputs.max_detections,
        count_reference=int(count_reference["all"].sum()),
        count_reference_ignored=int(inputs.crowd.sum()),
        count_predicted=inputs.n_pred,
        count_predicted_nan_score=int(np.isnan(inputs.scores).sum()),
        count_predicted_beyond_max_detections=int((~order.kept).sum()),
        count_class_with_reference=int((count_reference["all"] > 0).sum()),
    )
    return result


# --- matching -------------------------------------------------------------------------------


def _candidate_ious(inputs: APInputs, kept: np.ndarray):
    """(pred, ref, iou) of same-group, class-compatible pairs whose IoU can reach 0.50, among
    the predictions ``kept`` (bool, (n_pred,)).

    Groups are laid side by side along x (each group's envelopes shifted by a multiple of the
    data's width) so that one STRtree query returns same-group candidates only, whatever the
    number of groups.
    """
    predicted, reference, area = inputs.predicted, inputs.reference, inputs.area
    pred_area, ref_area, crowd = inputs.pred_area, inputs.ref_geometric_area, inputs.crowd
    pred_group, ref_group = inputs.pred_group, inputs.ref_group
    pred_class, ref_class = inputs.pred_class, inputs.ref_class
    empty = np.zeros(0, dtype=np.int64)
    pred_idx = np.flatnonzero(kept & (pred_area > 0))
    ref_idx = np.flatnonzero(ref_area > 0)
    if len(pred_idx) == 0 or len(ref_idx) == 0:
        return empty, empty, np.zeros(0)
    pred_bounds = shapely.bounds(predicted[pred_idx])
    ref_bounds = shapely.bounds(reference[ref_idx])
    pred_boxes, ref_boxes = _grouped_envelopes(
        pred_bounds, ref_bounds, pred_group[pred_idx], ref_group[ref_idx]
    )
    q_pred, q_ref = shapely.STRtree(ref_boxes).query(pred_boxes)
    p, r = pred_idx[q_pred], ref_idx[q_ref]
    same = pred_group[p] == ref_group[r]  # already so by the shift; kept as the rule's statement
    compatible = pred_class[p] == ref_class[r]
    if len(inputs.ancestor_keys):
        compatible |= np.isin(pred_class[p] * inputs.n_classes + ref_class[r],
                              inputs.ancestor_keys)
    q_pred, q_ref = q_pred[same & compatible], q_ref[same & compatible]
    p, r = pred_idx[q_pred], ref_idx[q_ref]
    # Skip the overlay where even the envelopes' overlap cannot give an IoU of 0.50 (planar
    # areas only: a box in longitude/latitude has no area in the units of ``area``).
    inter_bound = np.minimum(pred_area[p], ref_area[r])
    if area is None:
        inter_bound = np.minimum(
            _envelope_overlap(pred_bounds[q_pred], ref_bounds[q_ref]), inter_bound
        )
    lowest = IOU_THRESHOLDS[0] * (1.0 - IOU_RTOL)
    possible = _iou(inter_bound, pred_area[p], ref_area[r], crowd[r]) >= lowest
    p, r = p[possible], r[possible]
    inter = intersection_area(predicted[p], reference[r], area or shapely.area)
    iou = _iou(inter, pred_area[p], ref_area[r], crowd[r])
    keep = (inter > 0) & (iou >= lowest)
    return p[keep].astype(np.int64), r[keep].astype(np.int64), iou[keep]


def _iou(inter, pred_area, ref_area, crowd):
    """|p ∩ r| / |p ∪ r|, or |p ∩ r| / |p| for an ignore reference (COCO's iscrowd rule)."""
    union = np.where(crowd, pred_area, pred_area + ref_area - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(inter / union, 0.0, 1.0)


def _envelope_overlap(a, b):
    """Area of the overlap of envelopes given as bounds, float (n, 4) each -> (n,)."""
    width = np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0])
    height = np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1])
    return np.clip(width, 0.0, None) * np.clip(height, 0.0, None)


def _grouped_envelopes(pred_bounds, ref_bounds, pred_group, ref_group):
    """Envelope boxes with x shifted by group so that different groups never intersect."""
    both = np.concatenate([pred_bounds, ref_bounds])
    x_lo = both[:, 0].min()
    stride = 2.0 * (both[:, 2].max() - x_lo) + 1.0  # wider than the data: groups never touch
    boxes = []
    for bounds, group in ((pred_bounds, pred_group), (ref_bounds, ref_group)):
        shift = group * stride - x_lo
        x0, x1 = bounds[:, 0] + shift, bounds[:, 2] + shift
        # Widen by a few ulps so that rounding of the shift can only add candidates.
        pad = 4 * np.spacing(np.abs(x1) + 1.0)
        boxes.append(shapely.box(x0 - pad, bounds[:, 1], x1 + pad, bounds[:, 3]))
    return boxes


def _greedy_match(pair_pred, pair_ref, pair_iou, rank, crowd, ref_ignored, n_pred):
    """COCOeval.evaluateImg's greedy matching at every IoU threshold.

    Returns int64 (T, n_pred): the matched reference of each prediction, -1 if unmatched.
    """
    n_thr = len(IOU_THRESHOLDS)
    match = np.full((n_thr, n_pred), -1, dtype=np.int64)
    if len(pair_pred) == 0:
        return match
    thresholds = IOU_THRESHOLDS * (1.0 - IOU_RTOL)
    pair_crowd = crowd[pair_ref]
    pair_ignored = ref_ignored[pair_ref]

    # A prediction with one candidate that no other prediction contends for (or an ignore
    # region, which is never used up) matches wherever its IoU reaches the threshold.
    pred_count = np.bincount(pair_pred, minlength=n_pred)
    ref_count = np.bincount(pair_ref)
    alone = (pred_count[pair_pred] == 1) & ((ref_count[pair_ref] == 1) | pair_crowd)
    above = pair_iou[alone][None, :] >= thresholds[:, None]
    t_idx, k = np.nonzero(above)
    match[t_idx, pair_pred[alone][k]] = pair_ref[alone][k]

    # The rest, in score order; each prediction tries its candidate references non-ignored
    # first, then by input position, as COCO sorts its ground truth.
    rest = np.flatnonzero(~alone)
    if len(rest) == 0:
        return match
    rest = rest[np.lexsort((pair_ref[rest], pair_ignored[rest], rank[pair_pred[rest]]))]
    preds = pair_pred[rest].tolist()
    refs = pair_ref[rest].tolist()
    ious = pair_iou[rest].tolist()
    is_crowd = pair_crowd[rest].tolist()
    ignored = pair_ignored[rest].tolist()
    thresholds = thresholds.tolist()
    taken = [0] * (int(pair_ref.max()) + 1)  # bit t set: taken at threshold t
    out_t, out_p, out_r = [], [], []
    start, n = 0, len(rest)
    while start < n:
        p = preds[start]
        end = start + 1
        while end < n and preds[end] == p:
            end += 1
        top = max(ious[start:end])
        for t, threshold in enumerate(thresholds):
            if threshold > top:
                break
            bit = 1 << t
            best, m, m_ignored = threshold, -1, False
            for j in range(start, end):
                if taken[refs[j]] & bit and not is_crowd[j]:
                    continue
                if m >= 0 and not m_ignored and ignored[j]:
                    break
                if ious[j] < best:
                    continue
                best, m, m_ignored = ious[j], j, ignored[j]
            if m >= 0:
                out_t.append(t)
                out_p.append(p)
                out_r.append(refs[m])
                taken[refs[m]] |= bit
        start = end
    match[out_t, out_p] = out_r
    return match


# --- precision and recall -------------------------------------------------------------------


def _precision_recall(
    match, rank, included, pred_in_range, pred_class, ref_class, ref_ignored, count_reference
):
    """COCOeval.accumulate for one area range and detection limit.

    Returns precision, float (T, K, R) interpolated at RECALL_LEVELS, and recall, float (T, K);
    NaN for classes without references.
    """
    n_thr, n_classes, n_rec = len(IOU_THRESHOLDS), len(count_reference), len(RECALL_LEVELS)
    precision = np.full((n_thr, n_classes, n_rec), np.nan)
    recall = np.full((n_thr, n_classes), np.nan)
    valid_class = count_reference > 0
    precision[:, valid_class] = 0.0
    recall[:, valid_class] = 0.0
    order = np.argsort(rank)
    order = order[included[order]]
    levels = np.arange(n_rec, dtype=np.int64)
    # A sentinel at position -1, so that "unmatched" (-1) indexes safely.
    ref_ignored = np.append(ref_ignored, False)
    ref_class = np.append(ref_class, -1)
    for t in range(n_thr):
        m = match[t, order]
        matched = m >= 0
        ignored = np.where(matched, ref_ignored[m], ~pred_in_range[order])
        cls = np.where(matched, ref_class[m], pred_class[order])[~ignored]
        tp = matched[~ignored]
        by_class = np.argsort(cls, kind="stable")
        cls, tp = cls[by_class], tp[by_class]
        n = len(cls)
        if n == 0:
            continue
        first = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
        seg_start = np.repeat(first, np.diff(np.r_[first, n]))
        position = np.arange(n) - seg_start + 1
        tp_cum = np.cumsum(tp)
        tp_cum = tp_cum - np.r_[0, tp_cum][seg_start]
        prec = tp_cum / position
        # Non-increasing from the right within each class: offset segments so the running
        # maximum (taken from the right) never carries over from another class.
        segments_after = len(first) - np.cumsum(np.r_[True, cls[1:] != cls[:-1]])
        offset = 2.0 * segments_after
        envelope = np.maximum.accumulate((prec + offset)[::-1])[::-1] - offset
        last = np.r_[first[1:], n] - 1
        classes = cls[first]
        counts = count_reference[classes]
        has_ref = counts > 0
        recall[t, classes[has_ref]] = tp_cum[last][has_ref] / counts[has_ref]
        # Levels reached (recall >= level, compared as floats as COCO does) at each rank, then
        # the first rank of each class reaching level k, searched in integer (class, count) keys.
        recall_at = tp_cum / np.maximum(count_reference[cls], 1)
        n_reached = np.searchsorted(RECALL_LEVELS, recall_at, side="right")
        keys = cls * (n_rec + 1) + n_reached
        queries = classes[has_ref, None] * (n_rec + 1) + levels[None, :] + 1
        at = np.searchsorted(keys, queries, side="left")
        reached = at <= last[has_ref, None]
        values = np.where(reached, envelope[np.minimum(at, n - 1)], 0.0)
        precision[t, classes[has_ref]] = values
    return precision, recall


def _summary(precision, recall, ranges, cap):
    """COCOeval.summarize: the 12 values, as means over classes that have references."""

    def ap(label, thresholds=slice(None)):
        # (T', K, R) -> mean per class -> mean over classes with references
        return _nan_mean(np.mean(precision[label, cap][thresholds], axis=(0, 2)))

    def ar(label, limit=cap):
        return _nan_mean(np.mean(recall[label, limit], axis=0))

    out = {
        "ap": ap("all"),
        "ap50": ap("all", slice(_T50, _T50 + 1)),
        "ap75": ap("all", slice(_T75, _T75 + 1)),
    }
    out.update({f"ap_{label}": ap(label) for label in ranges})
    out.update(ar_1=ar("all", 1), ar_10=ar("all", min(10, cap)), ar=ar("all"))
    out.update({f"ar_{label}": ar(label) for label in ranges})
    return out


def _per_class(precision, recall, count_reference, count_predicted, class_names):
    """{class label: {"ap", "ap50", "ap75", "ar", "count_reference", "count_predicted"}}."""
    return {
        name: {
            "ap": float(np.mean(precision[:, k])),
            "ap50": float(np.mean(precision[_T50, k])),
            "ap75": float(np.mean(precision[_T75, k])),
            "ar": float(np.mean(recall[:, k])),
            "count_reference": int(count_reference[k]),
            "count_predicted": int(count_predicted[k]),
        }
        for k, name in enumerate(class_names)
    }


def _curve(precision_by_class):
    """101 {"recall", "precision"} points from float (K, R), averaged over defined classes."""
    values = [_nan_mean(column) for column in precision_by_class.T]
    return [
        {"recall": float(level), "precision": value}
        for level, value in zip(RECALL_LEVELS, values)
    ]


def _nan_mean(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else math.nan


def _rank_within(rank, group, cls):
    """Position of each prediction in score order within its (group, class)."""
    n = len(rank)
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    order = np.lexsort((rank, cls, group))
    g, c = group[order], cls[order]
    first = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (c[1:] != c[:-1])])
    out[order] = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))
    return out


# --- argument checks and label encoding -----------------------------------------------------


def _geometries(values, name):
    if values is None or isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be an array of shapely geometries, got {values!r}")
    geoms = np.asarray(values, dtype=object)
    if geoms.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of shapely geometries, got {geoms.shape}")
    ok = shapely.is_geometry(geoms) | shapely.is_missing(geoms)
    if not ok.all():
        bad = geoms[~ok][0]
        raise ValueError(f"{name} must hold shapely geometries or None, got {type(bad).__name__}")
    return geoms


def _scores(values, n):
    values = _array(values, n, "scores")
    try:
        if values.dtype == object:
            return np.array([math.nan if v is None else v for v in values.tolist()], dtype=float)
        return values.astype(float)
    except (TypeError, ValueError):
        raise ValueError("scores must be numbers (None and NaN allowed)") from None


def _check_max_detections(value):
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"max_detections must be an integer >= 1 or None, got {value!r}")
    return int(value)


def _check_area_ranges(ranges):
    if ranges is None:
        return {}
    if not isinstance(ranges, Mapping):
        raise ValueError(f"area_ranges must be a mapping label -> (low, high), got {ranges!r}")
    out = {}
    for label, bounds in ranges.items():
        if not isinstance(label, str) or not label or label == "all":
            raise ValueError(
                f"area_ranges labels must be non-empty strings other than 'all', got {label!r}"
            )
        try:
            low, high = (float(b) for b in bounds)
        except (TypeError, ValueError):
            message = f"area_ranges[{label!r}] must be (low, high), got {bounds!r}"
            raise ValueError(message) from None
        if math.isnan(low) or math.isnan(high) or low > high:
            raise ValueError(f"area_ranges[{label!r}] must have low <= high, got {bounds!r}")
        out[label] = (low, high)
    return out


def _flags(values, n, name):
    if values is None:
        return np.zeros(n, dtype=bool)
    values = _array(values, n, name)
    return np.array([_label_key(v) is not None and bool(v) for v in values.tolist()], dtype=bool)


def _reference_area(values, n):
    values = _array(values, n, "reference_area")
    try:
        return values.astype(float)
    except (TypeError, ValueError):
        raise ValueError("reference_area must be numbers") from None


def _areas(geoms, area=None):
    areas = (area or shapely.area)(geoms)
    return np.where(np.isfinite(areas), areas, 0.0)


def _array(values, n, name):
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be an array, got {values!r}")
    out = np.asarray(values)
    if out.ndim != 1 or len(out) != n:
        raise ValueError(f"{name} must have shape ({n},), got {out.shape}")
    return out


def _label_key(value):
    """Normalised label: strings by labels.class_key's rule (NFC, stripped, casefolded), NaN,
    None and blank text as None, NumPy scalars unwrapped."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        return class_key(value) or None
    return value


def _encode_pair(predicted_labels, reference_labels, n_pred, n_ref, pred_name, ref_name):
    """Integer codes (shared by both layers) and the display label of each code.

    Codes follow sorted labels when the labels sort (as COCO sorts image ids), else first
    appearance. Both None: every row gets code 0.
    """
    if predicted_labels is None and reference_labels is None:
        return np.zeros(n_pred, dtype=np.int64), np.zeros(n_ref, dtype=np.int64), [None]
    if predicted_labels is None or reference_labels is None:
        raise ValueError(f"{pred_name} and {ref_name} must be given together")
    pred = _array(predicted_labels, n_pred, pred_name)
    ref = _array(reference_labels, n_ref, ref_name)
    keys, names = {}, {}
    codes = []
    for values in (pred, ref):
        column = []
        for value in values.tolist():
            key = _label_key(value)
            try:
                code = keys.setdefault(key, len(keys))
            except TypeError:
                raise ValueError(f"{pred_name}/{ref_name} labels must be hashable") from None
            # The missing label is labels.MISSING ("") in per_class, as in evaluate.
            names.setdefault(code, value if key is not None else MISSING)
            column.append(code)
        codes.append(np.array(column, dtype=np.int64))
    try:
        order = sorted(keys, key=lambda k: (k is None, k))
    except TypeError:
        order = list(keys)
    remap = np.empty(max(len(keys), 1), dtype=np.int64)
    remap[[keys[k] for k in order]] = np.arange(len(order))
    labels = [names[keys[k]] for k in order] or [None]
    return remap[codes[0]], remap[codes[1]], labels


def _ancestor_keys(class_ancestors, class_names):
    """int64 keys ``child * K + ancestor`` of the compatible (child, ancestor) class codes."""
    if class_ancestors is None:
        return np.zeros(0, dtype=np.int64)
    if not isinstance(class_ancestors, Mapping):
        kind = type(class_ancestors).__name__
        raise ValueError(f"class_ancestors must be a mapping class -> ancestors, got {kind}")
    direct = {}
    for child, ancestors in class_ancestors.items():
        if isinstance(ancestors, (str, bytes)) or not hasattr(ancestors, "__iter__"):
            raise ValueError(f"class_ancestors[{child!r}] must be an iterable of classes")
        direct.setdefault(_label_key(child), set()).update(_label_key(a) for a in ancestors)
    code = {_label_key(name): k for k, name in enumerate(class_names)}
    n_classes = len(class_names)
    keys = []
    for child, k in code.items():
        seen, stack = set(), list(direct.get(child, ()))
        while stack:
            ancestor = stack.pop()
            if ancestor == child:
                raise ValueError(f"class_ancestors: {child!r} is its own ancestor")
            if ancestor in seen:
                continue
            seen.add(ancestor)
            stack.extend(direct.get(ancestor, ()))
        keys.extend(k * n_classes + code[a] for a in seen if a in code)
    return np.array(sorted(keys), dtype=np.int64)
