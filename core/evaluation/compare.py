"""Several predicted layers against one reference: each evaluated by ``evaluate``, side by
side, with the paired bootstrap interval of each difference against the first layer.

Paired bootstrap: every resample draws reference fields with replacement (within strata, as
``grouping.bootstrap_weights`` does) and the SAME draw scores every layer, so that the
difference of two layers' metrics in one resample is the difference on one sample of fields.
Its 95 % percentile interval is the interval of the difference; a difference is significant
at 95 % when the interval excludes 0. Every metric is a ratio of per-reference sums
(``metrics.metrics_from_sums``), so a resample costs one matrix product per layer.

Source: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 13 (percentile
intervals) and 16 (paired comparisons); agribound 1.0's bootstrap of reference fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..util.checks import check_non_negative_int
from .evaluate import BOOTSTRAP_KEYS, BOOTSTRAP_TOLERANCE_KEYS, Evaluation, evaluate
from ..matching.grouping import (
    BOOTSTRAP_CONFIDENCE_LEVEL,
    bootstrap_weights,
    percentile_interval,
    strata_groups,
)
from ..matching.summary import metrics_from_sums
from ..util.progress import Progress
from ..util.versions import library_versions

#: Metrics shown side by side (the headline of the main evaluation and the distribution).
COMPARED_KEYS = (
    "precision",
    "recall",
    "f1",
    "iou_mean",
    "iou_median",
    "iou_p10",
    "best_iou_mean",
    "area_weighted_precision",
    "area_weighted_recall",
    "area_weighted_f1",
    "oversegmentation_mean",
    "undersegmentation_mean",
    "count_predicted",
    "count_tp",
    "count_fp",
    "count_fn",
)


@dataclass(frozen=True)
class Comparison:
    """The comparison of n_layers predicted layers against one reference.

    Attributes:
        names: the layers' names, shape (n_layers,), unique.
        evaluations: one Evaluation per layer (its ``metrics`` are the whole evaluation's).
        differences: {name of layer k >= 1: {metric: {"difference": value_k - value_0,
            "ci": [low, high] (95 % paired bootstrap, NaN without bootstrap), "significant":
            bool (the interval excludes 0), "n_undefined": resamples where it was NaN}}}.
        intervals: {name: {metric: [low, high]}}: each layer's own 95 % interval.
        bootstrap: n_resamples, seed, confidence_level, method, resampling.
    """

    names: list
    evaluations: list
    differences: dict = field(repr=False)
    intervals: dict = field(repr=False)
    bootstrap: dict = field(repr=False)

    def side_by_side(self, keys=COMPARED_KEYS) -> dict:
        """{metric: [value of each layer]} for ``keys`` the evaluations have."""
        return {
            key: [e.metrics.get(key) for e in self.evaluations]
            for key in keys
            if key in self.evaluations[0].metrics
        }


def compare_predictions(
    predicted_layers,
    reference,
    *,
    names=None,
    predicted_crss=None,
    reference_crs=None,
    strata=None,
    strata_name: str | None = None,
    bootstrap: int = 1000,
    bootstrap_seed: int = 42,
    progress: Progress | None = None,
    **evaluate_options,
) -> Comparison:
    """Evaluate each predicted layer against the reference, and bootstrap the differences.

    Args:
        predicted_layers: a list (n_layers >= 2) of sequences of shapely geometries.
        reference: sequence of shapely geometries (the reference layer), shape (n_ref,).
        names: one name per predicted layer (default "layer 1", "layer 2", ...); repeated
            names get " (2)", " (3)"...
        predicted_crss: one CRS per predicted layer (None: all None, planar units).
        reference_crs: the reference CRS.
        strata: one value per reference row (bootstrap within strata, metrics per stratum).
        bootstrap: number of paired resamples (0: differences without intervals).
        bootstrap_seed: their seed (>= 0).
        progress: receives progress and may cancel (EvaluationCanceled is raised).
        **evaluate_options: passed to ``evaluate`` (iou_threshold, matching, equal_area_crs,
            size_bins, boundary_tolerance_m, boundary_sample_spacing_m, ...), alike for all.

    Returns:
        A Comparison.

    Raises:
        ValueError: fewer than two predicted layers, names or CRSs not one per layer, a
            bootstrap count or seed that is not a non-negative integer, or anything
            ``evaluate`` raises for its parameters (the message names them).
    """
    progress = progress or Progress()
    predicted_layers = list(predicted_layers)
    n_layers = len(predicted_layers)
    if n_layers < 2:
        raise ValueError(f"predicted_layers: give at least two layers to compare, got {n_layers}")
    names = _unique_names(names or [f"layer {k + 1}" for k in range(n_layers)], n_layers)
    predicted_crss = [None] * n_layers if predicted_crss is None else list(predicted_crss)
    if len(predicted_crss) != n_layers:
        raise ValueError(
            f"predicted_crss: one CRS per layer ({n_layers}), got {len(predicted_crss)}"
        )
    bootstrap = check_non_negative_int(bootstrap, "bootstrap")
    bootstrap_seed = check_non_negative_int(bootstrap_seed, "bootstrap_seed")

    evaluations = []
    share = 85.0 / n_layers
    for k, (geometries, crs) in enumerate(zip(predicted_layers, predicted_crss)):
        progress.checkpoint(k * share, f"Evaluating {names[k]}")
        evaluations.append(
            evaluate(
                geometries, reference, predicted_crs=crs, reference_crs=reference_crs,
                strata=strata, strata_name=strata_name, bootstrap=0,
                progress=_Slice(progress, k * share, (k + 1) * share),
                **evaluate_options,
            )
        )
    progress.checkpoint(85, "Paired bootstrap")
    tolerance = evaluate_options.get("boundary_tolerance_m") is not None
    keys = BOOTSTRAP_KEYS + (BOOTSTRAP_TOLERANCE_KEYS if tolerance else ())
    first = evaluations[0]
    pool = (
        strata_groups(np.asarray(list(strata), dtype=object)[first.reference.keep]).codes
        if strata is not None
        else np.zeros(first.reference.n, dtype=np.int64)
    )
    replicates = _paired_replicates(
        evaluations, keys, bootstrap, bootstrap_seed, pool, tolerance,
        progress.span(85, 99),
    )
    differences, intervals = _differences(evaluations, names, keys, replicates)
    info = {
        "n_resamples": bootstrap,
        "seed": bootstrap_seed,
        "confidence_level": BOOTSTRAP_CONFIDENCE_LEVEL,
        "method": "paired percentile",
        "resampling": "reference fields with replacement"
        + (" within strata" if strata is not None else "")
        + ", the same resample for every layer",
        "baseline": names[0],
    }
    progress.checkpoint(100, "Comparison done")
    return Comparison(names, evaluations, differences, intervals, info)


def _differences(evaluations, names, keys, replicates):
    """``(differences, intervals)`` of ``Comparison``: each later layer's difference from
    the first per key (point value, paired percentile interval, significance), and each
    layer's own intervals; ``replicates``: ``_paired_replicates``' array."""
    first = evaluations[0]
    differences, intervals = {}, {}
    for k, name in enumerate(names):
        intervals[name] = {
            key: percentile_interval(replicates[:, k, j])[0] for j, key in enumerate(keys)
        }
        if k == 0:
            continue
        differences[name] = {}
        for j, key in enumerate(keys):
            point = _difference(evaluations[k].metrics.get(key), first.metrics.get(key))
            ci, n_undefined = percentile_interval(replicates[:, k, j] - replicates[:, 0, j])
            differences[name][key] = {
                "difference": point,
                "ci": ci,
                "significant": bool(ci[0] > 0 or ci[1] < 0),
                "n_undefined": n_undefined,
            }
    return differences, intervals


def _paired_replicates(evaluations, keys, n_resamples, seed, pool, tolerance, advance):
    """Float array, shape (n_resamples, n_layers, len(keys)): each layer's metrics in each
    resample, every layer scored on the same resampled reference fields."""
    n_ref = evaluations[0].reference.n
    for e in evaluations[1:]:
        same = np.array_equal(e.reference.keep, evaluations[0].reference.keep)
        if e.reference.n != n_ref or not same:
            raise RuntimeError("the reference was prepared differently for two layers")
    out = np.full((n_resamples, len(evaluations), len(keys)), np.nan)
    if n_resamples == 0 or n_ref == 0:
        return out
    matrices = [e.quantities.matrix() for e in evaluations]
    for start, weights in bootstrap_weights(n_resamples, seed, pool, advance):
        stop = start + len(weights)
        for k, e in enumerate(evaluations):
            values = metrics_from_sums(
                weights @ matrices[k] + e.unassigned, zero_division=np.nan,
                tolerance=tolerance,
            )
            out[start:stop, k] = np.column_stack([values[key] for key in keys])
    return out


def _difference(value, baseline) -> float:
    try:
        return float(value) - float(baseline)
    except (TypeError, ValueError):
        return float("nan")


def _unique_names(names, n: int) -> list:
    names = [str(name) for name in names]
    if len(names) != n:
        raise ValueError(f"names: one name per layer ({n}), got {len(names)}")
    out, taken = [], set()
    for name in names:
        unique, k = name, 1
        while unique in taken:  # "a", "a", "a (2)" -> "a", "a (2)", "a (2) (2)"
            k += 1
            unique = f"{name} ({k})"
        taken.add(unique)
        out.append(unique)
    return out


class _Slice(Progress):
    """One layer's evaluation inside the comparison's progress (0-100 → start-end)."""

    def __init__(self, parent: Progress, start: float, end: float):
        self.parent, self.start, self.end = parent, start, end

    def report(self, percent, message=""):
        self.parent.report(self.start + (self.end - self.start) * percent / 100.0, message)

    def is_canceled(self):
        return self.parent.is_canceled()


def comparison_report(comparison: Comparison, inputs: dict, provenance: dict,
                      reproduce: dict | None = None) -> dict:
    """The comparison as a JSON-ready report.

    ``metrics.per_layer`` holds each layer's full metrics (so ``per_layer.*.f1 >= 0.8`` is a
    release threshold), ``metrics.differences`` the differences against the first layer,
    ``metrics.intervals`` each layer's own 95 % intervals, ``metrics.side_by_side`` the
    compared metrics per layer; ``inputs`` ({role: description}) and ``provenance`` are the
    caller's (library versions are added when missing); ``warnings`` name their layer;
    ``reproduce`` ({"algorithm", "parameters"} that rerun it), when given, last.
    """
    first = comparison.evaluations[0]
    warnings = [
        f"{name}: {message}"
        for name, evaluation in zip(comparison.names, comparison.evaluations)
        for message in evaluation.warnings
    ]
    report = {
        "metrics": {
            "per_layer": dict(zip(comparison.names, (e.metrics for e in comparison.evaluations))),
            "differences": comparison.differences,
            "intervals": comparison.intervals,
            "side_by_side": comparison.side_by_side(),
        },
        "layers": comparison.names,
        "bootstrap": comparison.bootstrap,
        "parameters": {**first.parameters, "bootstrap": comparison.bootstrap["n_resamples"]},
        "inputs": inputs,
        "provenance": {**library_versions(), **provenance},
        "warnings": warnings,
    }
    if reproduce is not None:
        report["reproduce"] = reproduce
    return report
