"""Object-level evaluation of predicted polygons against reference polygons."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .crs import check_layer_crs, crs_label, resolve_crs, resolve_equal_area_crs
from .matching import MATCHING_METHODS, argmax_per_group, at_or_above, match
from .metrics import Q, QUANTITIES, RATE_KEYS, metrics_from_sums, nan_median, to_builtin
from .overlap import overlap_pairs
from .prepare import PreparedLayer, prepare_layer
from .progress import Progress


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation computed.

    Attributes:
        metrics: summary metrics under the agribound seed's key names (floats, ints, strings).
        parameters: the parameters as used (threshold, matching, equal-area CRS).
        reference, predicted: the prepared layers; ``keep`` maps rows below to input positions.
        per_reference: columns of shape (reference.n,), one row per evaluated reference field:
            area_m2, area_ha, matched, pred_index (input position of the matched prediction,
            -1), iou (NaN if unmatched), pred_area_m2, best_iou, n_overlapping_pred,
            max_overlap_pred_index (input position, -1), oversegmentation, undersegmentation.
        per_predicted: columns of shape (predicted.n,): area_m2, matched, ref_index (input
            position of the matched reference, -1), iou, ref_area_m2, best_iou,
            overlaps_reference.
    """

    metrics: dict
    parameters: dict
    reference: PreparedLayer
    predicted: PreparedLayer
    per_reference: dict[str, np.ndarray] = field(repr=False)
    per_predicted: dict[str, np.ndarray] = field(repr=False)


def evaluate(
    predicted,
    reference,
    *,
    predicted_crs=None,
    reference_crs=None,
    iou_threshold: float = 0.5,
    matching: str = "one_to_one",
    equal_area_crs="EPSG:6933",
    progress: Progress | None = None,
) -> Evaluation:
    """Match predicted polygons to reference polygons by IoU and compute the summary metrics.

    Args:
        predicted: sequence of shapely geometries (None allowed), shape (n_pred,), in
            ``predicted_crs``. Never modified.
        reference: the same for the reference layer, in ``reference_crs``.
        predicted_crs, reference_crs: anything ``pyproj.CRS.from_user_input`` accepts, or None
            for both to evaluate in planar (pixel) units.
        iou_threshold: minimum IoU for a match, in (0, 1], compared with relative tolerance 1e-9.
        matching: "one_to_one" (greedy by descending IoU) or "many_to_one".
        equal_area_crs: projected CRS in metres for areas and IoU (default EPSG:6933).
        progress: receives progress and may cancel (EvaluationCanceled is raised).

    Returns:
        An Evaluation. Areas in m² (ha where the key says so) in ``equal_area_crs``.

    Raises:
        ValueError: threshold outside (0, 1], unknown matching rule, a CRS that is not one,
            or exactly one of the layers without a CRS.

    Source: agribound 1.0 evaluation (../shared/seeds/agribound_evaluation.txt).
    """
    progress = progress or Progress()
    iou_threshold = _check_threshold(iou_threshold)
    if matching not in MATCHING_METHODS:
        raise ValueError(f"matching must be one of {MATCHING_METHODS}, got {matching!r}")
    ref_crs = resolve_crs(reference_crs, "reference_crs")
    pred_crs = resolve_crs(predicted_crs, "predicted_crs")
    check_layer_crs(ref_crs, pred_crs)
    ea_crs = resolve_equal_area_crs(equal_area_crs) if ref_crs is not None else None

    progress.checkpoint(0, "Preparing reference geometries")
    ref = prepare_layer(reference, ref_crs, ea_crs, "reference")
    progress.checkpoint(15, "Preparing predicted geometries")
    pred = prepare_layer(predicted, pred_crs, ea_crs, "predicted")
    progress.checkpoint(30, "Computing overlaps")
    pairs = overlap_pairs(ref.geometries, ref.area_m2, pred.geometries, pred.area_m2)
    progress.checkpoint(70, "Matching")
    matches = match(pairs, ref.n, pred.n, iou_threshold, matching)
    progress.checkpoint(85, "Summarising")

    ref_match = matches.reference_match
    pred_match = matches.predicted_match
    ref_matched = ref_match >= 0
    pred_matched = pred_match >= 0
    mr = np.flatnonzero(ref_matched)
    mp = np.flatnonzero(pred_matched)

    ref_iou = np.full(ref.n, np.nan)
    ref_iou[mr] = pairs.iou[pairs.find(mr, ref_match[mr])]
    pred_iou = np.full(pred.n, np.nan)
    pred_iou[mp] = pairs.iou[pairs.find(pred_match[mp], mp)]
    pred_area_matched = np.full(ref.n, np.nan)
    pred_area_matched[mr] = pred.area_m2[ref_match[mr]]

    best_iou_ref = np.zeros(ref.n)
    np.maximum.at(best_iou_ref, pairs.reference, pairs.iou)
    best_iou_pred = np.zeros(pred.n)
    np.maximum.at(best_iou_pred, pairs.predicted, pairs.iou)
    n_overlap = np.bincount(pairs.reference, minlength=ref.n)
    max_overlap_pred = argmax_per_group(
        pairs.reference, pairs.intersection_m2, pairs.predicted, ref.n
    )
    max_overlap_ref = argmax_per_group(
        pairs.predicted, pairs.intersection_m2, pairs.reference, pred.n
    )

    # Persello & Bruzzone (2010) maximum-overlap pairing: p' maximises |r ∩ p'|.
    inter_max = np.zeros(ref.n)
    np.maximum.at(inter_max, pairs.reference, pairs.intersection_m2)
    has_overlap = max_overlap_pred >= 0
    oversegmentation = np.clip(1.0 - inter_max / ref.area_m2, 0.0, 1.0)
    undersegmentation = np.full(ref.n, np.nan)
    undersegmentation[has_overlap] = np.clip(
        1.0 - inter_max[has_overlap] / pred.area_m2[max_overlap_pred[has_overlap]], 0.0, 1.0
    )

    above = at_or_above(pairs.iou, iou_threshold)
    n_above_ref = np.bincount(pairs.reference[above], minlength=ref.n)
    n_above_pred = np.bincount(pairs.predicted[above], minlength=pred.n)

    # Home reference of a prediction: its match, else the reference it overlaps most.
    pred_home = np.where(pred_matched, pred_match, max_overlap_ref)

    quantities = np.zeros((ref.n, len(QUANTITIES)))
    m = ref_matched.astype(float)
    quantities[:, Q["n_ref"]] = 1.0
    quantities[:, Q["area_ref"]] = ref.area_m2
    quantities[:, Q["tp"]] = m
    quantities[:, Q["iou_tp"]] = np.where(ref_matched, ref_iou, 0.0)
    quantities[:, Q["best_iou"]] = best_iou_ref
    area_error = np.where(ref_matched, pred_area_matched - ref.area_m2, 0.0)
    quantities[:, Q["abs_area_err_tp"]] = np.abs(area_error)
    quantities[:, Q["signed_area_err_tp"]] = area_error
    quantities[:, Q["area_ref_tp"]] = ref.area_m2 * m
    quantities[:, Q["os"]] = oversegmentation
    quantities[:, Q["us"]] = np.nan_to_num(undersegmentation, nan=0.0)
    quantities[:, Q["us_defined"]] = np.isfinite(undersegmentation)
    quantities[:, Q["legacy_overseg"]] = n_above_ref > 1
    homed = pred_home >= 0
    unassigned = np.zeros(len(QUANTITIES))
    for name, values in {
        "n_pred": np.ones(pred.n),
        "n_pred_matched": pred_matched.astype(float),
        "area_pred": pred.area_m2,
        "area_pred_matched": pred.area_m2 * pred_matched,
        "legacy_underseg": (n_above_pred > 1).astype(float),
    }.items():
        quantities[:, Q[name]] = np.bincount(
            pred_home[homed], weights=values[homed], minlength=ref.n
        )
        unassigned[Q[name]] = values[~homed].sum()

    metrics = to_builtin(metrics_from_sums(quantities.sum(axis=0) + unassigned))
    if ref.n == 0 and pred.n == 0:
        metrics.update({key: 1.0 for key in RATE_KEYS})
    metrics["iou_threshold"] = iou_threshold
    metrics["median_area_ha"] = nan_median(ref.area_m2 / 1e4)
    metrics["count_fp_unassigned"] = int(
        round(unassigned[Q["n_pred"]] - unassigned[Q["n_pred_matched"]])
    )
    metrics["count_reference_dropped"] = ref.n_dropped
    metrics["count_predicted_dropped"] = pred.n_dropped
    metrics["count_reference_repaired"] = ref.n_repaired
    metrics["count_predicted_repaired"] = pred.n_repaired
    metrics["matching"] = matching
    metrics["equal_area_crs"] = crs_label(ea_crs)

    per_reference = {
        "area_m2": ref.area_m2,
        "area_ha": ref.area_m2 / 1e4,
        "matched": ref_matched,
        "pred_index": _input_position(pred, ref_match),
        "iou": ref_iou,
        "pred_area_m2": pred_area_matched,
        "best_iou": best_iou_ref,
        "n_overlapping_pred": n_overlap,
        "max_overlap_pred_index": _input_position(pred, max_overlap_pred),
        "oversegmentation": oversegmentation,
        "undersegmentation": undersegmentation,
    }
    ref_area_matched = np.full(pred.n, np.nan)
    ref_area_matched[mp] = ref.area_m2[pred_match[mp]]
    per_predicted = {
        "area_m2": pred.area_m2,
        "matched": pred_matched,
        "ref_index": _input_position(ref, pred_match),
        "iou": pred_iou,
        "ref_area_m2": ref_area_matched,
        "best_iou": best_iou_pred,
        "overlaps_reference": max_overlap_ref >= 0,
    }
    parameters = {
        "iou_threshold": iou_threshold,
        "matching": matching,
        "equal_area_crs": crs_label(ea_crs),
    }
    progress.checkpoint(100, "Evaluation done")
    return Evaluation(metrics, parameters, ref, pred, per_reference, per_predicted)


def _check_threshold(value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"iou_threshold must be a number in (0, 1], got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise ValueError(f"iou_threshold must be in (0, 1], got {value!r}")
    return value


def _input_position(layer: PreparedLayer, positions: np.ndarray) -> np.ndarray:
    """Map positions among a layer's evaluated rows to input positions; -1 stays -1."""
    out = np.full(len(positions), -1, dtype=np.int64)
    valid = positions >= 0
    out[valid] = layer.keep[positions[valid]]
    return out
