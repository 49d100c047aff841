"""Matching rules: which (reference, predicted) pairs count as true positives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..pairs.overlap import OverlapPairs

#: Matching rules offered, in the order the Processing enum lists them.
MATCHING_METHODS = ("one_to_one", "many_to_one", "optimal")

#: IoU is compared with the threshold with this relative tolerance, so that an IoU equal to
#: the threshold in exact arithmetic (0.04 / 0.08 computes as 0.4999999999999997) still matches.
IOU_RTOL = 1e-9


@dataclass(frozen=True)
class Matches:
    """Result of matching.

    Attributes:
        reference_match: int64, shape (n_ref,): matched predicted position, -1 if unmatched.
        predicted_match: int64, shape (n_pred,): the reference it is matched to (in
            many_to_one, its highest-IoU matched reference), -1 if unmatched.
    """

    reference_match: np.ndarray
    predicted_match: np.ndarray


def at_or_above(iou: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Boolean mask of IoUs at or above the threshold, with relative tolerance ``IOU_RTOL``."""
    return iou >= iou_threshold * (1.0 - IOU_RTOL)


def match(
    pairs: OverlapPairs, n_reference: int, n_predicted: int, iou_threshold: float, method: str
) -> Matches:
    """Match predictions to reference polygons.

    ``one_to_one``: pairs at or above the threshold sorted by descending IoU (ties by reference,
    then predicted position) are accepted greedily when neither side is matched yet.
    ``many_to_one``: each reference takes its highest-IoU prediction at or above the threshold
    (ties: lowest predicted position); a prediction may match several references.
    ``optimal``: the one-to-one assignment with the most matches and, among those, the largest
    total IoU (the greedy rule can miss a match where polygons overlap).

    Source: agribound 1.0 documentation, "Evaluation", section "Matching";
    ``optimal`` is a maximum-weight bipartite matching (Kuhn 1955, via scipy).
    Raises ValueError for an unknown method.
    """
    above = at_or_above(pairs.iou, iou_threshold)
    ref, pred, iou = pairs.reference[above], pairs.predicted[above], pairs.iou[above]
    if method == "one_to_one":
        return _greedy_one_to_one(ref, pred, iou, n_reference, n_predicted)
    if method == "optimal":
        return _optimal_one_to_one(ref, pred, iou, n_reference, n_predicted)
    if method == "many_to_one":
        reference_match = argmax_per_group(ref, iou, pred, n_reference)
        matched = np.flatnonzero(reference_match >= 0)
        matched_iou = pairs.iou[pairs.find(matched, reference_match[matched])]
        predicted_match = argmax_per_group(
            reference_match[matched], matched_iou, matched, n_predicted
        )
        return Matches(reference_match, predicted_match)
    raise ValueError(f"matching must be one of {MATCHING_METHODS}, got {method!r}")


def _greedy_one_to_one(ref, pred, iou, n_reference, n_predicted) -> Matches:
    order = greedy_order(ref, pred, iou)
    ref, pred = ref[order], pred[order]
    accepted = greedy_accepted(ref, pred, n_reference, n_predicted)
    reference_match = np.full(n_reference, -1, dtype=np.int64)
    predicted_match = np.full(n_predicted, -1, dtype=np.int64)
    reference_match[ref[accepted]] = pred[accepted]
    predicted_match[pred[accepted]] = ref[accepted]
    return Matches(reference_match, predicted_match)


#: Pairs turned into Python lists at a time by ``greedy_accepted``.
_GREEDY_BLOCK = 65_536


def greedy_order(ref: np.ndarray, pred: np.ndarray, iou: np.ndarray) -> np.ndarray:
    """The order in which ``one_to_one`` considers pairs: descending IoU, ties by reference,
    then predicted position. Arrays of shape (n,) in, int64 positions (n,) out."""
    return np.lexsort((pred, ref, -iou))


def greedy_accepted(ref: np.ndarray, pred: np.ndarray, n_reference: int,
                    n_predicted: int) -> np.ndarray:
    """Positions (int64, increasing) of the pairs ``one_to_one`` accepts when it takes the
    pairs (``ref``, ``pred``: int arrays, shape (n,)) in the order given: each pair whose
    reference and prediction are both still free.

    A sequential rule (each acceptance depends on the ones before it), so the pairs accepted
    among the first k are those accepted when matching the first k alone.
    """
    # Plain Python lists and bytearrays: about ten times faster per pair than numpy scalars;
    # a block at a time, since a Python int takes 36 B (a national layer's pairs as lists
    # would take ~0.2 KB per field).
    ref_free = bytearray(b"\x01") * n_reference
    pred_free = bytearray(b"\x01") * n_predicted
    blocks = [np.zeros(0, dtype=np.int64)]
    for start in range(0, len(ref), _GREEDY_BLOCK):
        accepted = []
        stop = start + _GREEDY_BLOCK
        for k, r, p in zip(range(start, start + len(ref[start:stop])), ref[start:stop].tolist(),
                           pred[start:stop].tolist()):
            if ref_free[r] and pred_free[p]:
                ref_free[r] = 0
                pred_free[p] = 0
                accepted.append(k)
        blocks.append(np.array(accepted, dtype=np.int64))
    return np.concatenate(blocks)


def _optimal_one_to_one(ref, pred, iou, n_reference, n_predicted) -> Matches:
    """Most matches, then largest total IoU, solved per connected component of the pair graph."""
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    reference_match = np.full(n_reference, -1, dtype=np.int64)
    predicted_match = np.full(n_predicted, -1, dtype=np.int64)
    if len(ref) == 0:
        return Matches(reference_match, predicted_match)
    # Nodes 0..n_ref-1 are references, n_ref.. predictions.
    graph = coo_matrix(
        (np.ones(len(ref)), (ref, pred + n_reference)),
        shape=(n_reference + n_predicted,) * 2,
    )
    _, label = connected_components(graph, directed=False)
    component = label[ref]
    # A lone pair (most of them) has nothing to choose: matched at once, all together.
    size = np.bincount(component)
    lone = size[component] == 1
    reference_match[ref[lone]] = pred[lone]
    predicted_match[pred[lone]] = ref[lone]
    order = np.flatnonzero(~lone)
    order = order[np.argsort(component[order], kind="stable")]
    bounds = np.flatnonzero(np.r_[True, np.diff(component[order]) != 0, True])
    for start, stop in zip(bounds[:-1], bounds[1:]):
        k = order[start:stop]
        refs, r_local = np.unique(ref[k], return_inverse=True)
        preds, p_local = np.unique(pred[k], return_inverse=True)
        # Weight (pairs + 1) per match dominates any difference in total IoU (each <= 1).
        weight = np.zeros((len(refs), len(preds)))
        weight[r_local, p_local] = (len(k) + 1) + iou[k]
        rows, cols = linear_sum_assignment(weight, maximize=True)
        chosen = weight[rows, cols] > 0
        reference_match[refs[rows[chosen]]] = preds[cols[chosen]]
        predicted_match[preds[cols[chosen]]] = refs[rows[chosen]]
    return Matches(reference_match, predicted_match)


def argmax_per_group(
    group: np.ndarray, value: np.ndarray, other: np.ndarray, n_groups: int
) -> np.ndarray:
    """For each group id in 0..n_groups-1, the ``other`` id with the largest ``value``.

    Arrays ``group``, ``value``, ``other`` have shape (n,). Ties go to the smallest ``other``
    id; groups without elements get -1. Returns int64, shape (n_groups,).
    """
    out = np.full(n_groups, -1, dtype=np.int64)
    if len(group) == 0:
        return out
    # One stable sort by group (pairs often come sorted already), then per run of a group:
    # its largest value (NaN only when all are NaN, as a sort puts NaN last), and among the
    # elements equal to it the smallest ``other``: a three-key lexsort's answer, ~5x faster.
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    value, other = np.asarray(value, dtype=float)[order], np.asarray(other)[order]
    first = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    run = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(order)]))
    with np.errstate(invalid="ignore"):
        best = np.fmax.reduceat(value, first)
    is_best = (value == best[run]) | (np.isnan(value) & np.isnan(best[run]))
    candidate = np.where(is_best, other, np.iinfo(np.int64).max)
    out[sorted_group[first]] = np.minimum.reduceat(candidate, first)
    return out
