"""Boundary precision, recall and F1 as the boundary tolerance grows from the chosen one to
four times it: the same boundary segments (each polygon in its UTM zone) measured exactly at
every tolerance in one pass.

On large layers the curve is measured on a random sample of polygons of each layer (the
sampled polygons' within-tolerance lengths are exact: every polygon of the other layer near
them takes part). Measured whole, it would cost several times the tolerance stage itself (the
search reaches four times as far: on 50,000 fields sharing edges, 40 s against 6 s), for a
figure whose sampling error at 2,000 polygons is a few tenths of a percent.
"""

from __future__ import annotations

import math

import numpy as np
import shapely

from .zones import ZonedLayer
from ..matching.summary import f1_score
from ..util.rates import safe_divide
from .tolerance import tolerance_lengths_in_utm_at

#: Tolerances of the curve, as multiples of the chosen boundary tolerance.
TOLERANCE_MULTIPLES = (1.0, 1.5, 2.0, 3.0, 4.0)

#: Layers with more polygons than this are measured on a random sample of this many.
CURVE_SAMPLE_SIZE = 2_000

#: Seed of the sample (the same layers give the same curve).
CURVE_SAMPLE_SEED = 0

_METRES_PER_DEGREE = 111_320.0  # at the equator; a degree of longitude is shorter elsewhere


def boundary_f1_by_tolerance(
    reference: ZonedLayer,
    predicted: ZonedLayer,
    tolerance_m: float,
    predicted_counted: np.ndarray | None = None,
    multiples=TOLERANCE_MULTIPLES,
    progress=None,
    sample_size: int | None = CURVE_SAMPLE_SIZE,
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
        sample_size: a layer with more polygons (counted predictions) than this is measured
            on this many of them, drawn at random (``CURVE_SAMPLE_SEED``); None: all.

    Returns:
        {"multiple", "tolerance_m", "boundary_precision", "boundary_recall", "boundary_f1"}:
        lists of len(multiples); and "sample": None when measured whole, else
        {"reference", "predicted": polygons measured, "reference_of", "predicted_of": of
        how many, "seed"}. Boundary recall = Σ reference boundary length within the
        tolerance of a predicted boundary / Σ reference perimeter; precision likewise for
        predicted boundaries; F1 their harmonic mean; 0 on an empty denominator (1 when
        both layers are empty).

    Source: agribound 1.0 documentation, "Evaluation": boundary_precision / boundary_recall /
    boundary_f1 ("With boundary_tolerance_m"), repeated at larger tolerances.
    """
    counted = (np.ones(predicted.n, dtype=bool) if predicted_counted is None
               else np.asarray(predicted_counted, dtype=bool))
    tolerances = [tolerance_m * float(m) for m in multiples]
    counted_rows = np.flatnonzero(counted)
    sampled = sample_size is not None and max(reference.n, len(counted_rows)) > sample_size
    if not sampled:
        within_ref, perimeter_ref, within_pred, perimeter_pred = tolerance_lengths_in_utm_at(
            reference, predicted, tolerances, progress=progress
        )
        sample = None
    else:
        rng = np.random.default_rng(CURVE_SAMPLE_SEED)
        ref_rows = _draw(rng, np.arange(reference.n), sample_size)
        pred_rows = _draw(rng, counted_rows, sample_size)
        reach = max(tolerances)
        half = None if progress is None else (lambda f: progress(0.5 * f),
                                              lambda f: progress(0.5 + 0.5 * f))
        within_ref, perimeter_ref = _sampled_side(
            reference, predicted, ref_rows, tolerances, reach, half and half[0], first=True)
        within_pred, perimeter_pred = _sampled_side(
            predicted, reference, pred_rows, tolerances, reach, half and half[1], first=False)
        counted = np.ones(len(pred_rows), dtype=bool)
        sample = {"reference": int(len(ref_rows)), "predicted": int(len(pred_rows)),
                  "reference_of": int(reference.n), "predicted_of": int(len(counted_rows)),
                  "seed": CURVE_SAMPLE_SEED}
    # Both layers empty: 1, as evaluate's rates (the agribound seed's 0.1.x convention).
    empty = 1.0 if reference.n == 0 and not counted.any() else 0.0
    out = {key: [] for key in ("multiple", "tolerance_m", "boundary_precision",
                               "boundary_recall", "boundary_f1")}
    out["sample"] = sample
    for k, multiple in enumerate(multiples):
        precision = float(
            safe_divide(np.sum(within_pred[k][counted]), np.sum(perimeter_pred[counted]),
                        zero_division=empty)
        )
        recall = float(safe_divide(np.sum(within_ref[k]), np.sum(perimeter_ref),
                                   zero_division=empty))
        out["multiple"].append(float(multiple))
        out["tolerance_m"].append(float(tolerances[k]))
        out["boundary_precision"].append(precision)
        out["boundary_recall"].append(recall)
        out["boundary_f1"].append(empty or float(f1_score(precision, recall)))
    return out


def _draw(rng, rows: np.ndarray, size: int) -> np.ndarray:
    """``size`` of ``rows`` (int array) at random without replacement, sorted; all if fewer."""
    if len(rows) <= size:
        return rows
    return np.sort(rng.choice(rows, size=size, replace=False))


def _sampled_side(layer: ZonedLayer, other: ZonedLayer, rows, tolerances, reach, progress,
                  first: bool):
    """Within lengths (K, len(rows)) and perimeters (len(rows),) of ``layer``'s ``rows``
    against every polygon of ``other`` that may come within ``reach`` metres of them."""
    mine = _subset(layer, rows)
    near = _subset(other, _near(layer, other, rows, reach))
    if first:
        within, perimeter, _, _ = tolerance_lengths_in_utm_at(mine, near, tolerances,
                                                              progress=progress)
    else:
        _, _, within, perimeter = tolerance_lengths_in_utm_at(near, mine, tolerances,
                                                              progress=progress)
    return within, perimeter


def _subset(layer: ZonedLayer, rows: np.ndarray) -> ZonedLayer:
    return ZonedLayer(layer.source[rows], layer.crs, layer.epsg[rows], layer.local[rows])


def _near(layer: ZonedLayer, other: ZonedLayer, rows: np.ndarray, reach_m: float):
    """Rows of ``other`` whose box comes within ``reach_m`` (metres, widened to source units
    generously: more rows cost time, never a value) of the boxes of ``layer``'s ``rows``."""
    present = ~shapely.is_missing(other.source)
    if not present.any() or len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    boxes = shapely.bounds(layer.source[rows])
    ok = np.isfinite(boxes).all(axis=1)
    boxes = boxes[ok]
    crs = layer.crs
    if crs is None:
        margin = np.full(len(boxes), reach_m)
        margin_y = margin
    elif crs.is_geographic:
        unit_deg = math.degrees(float(crs.axis_info[0].unit_conversion_factor))
        margin_y = np.full(len(boxes), reach_m / _METRES_PER_DEGREE / unit_deg * 1.01)
        # A degree of longitude is cos φ of one at the equator: widen by the box's nearest
        # approach to a pole (capped at 89.9°, where the whole band is taken anyway).
        lat = np.minimum(np.maximum(np.abs(boxes[:, 1]), np.abs(boxes[:, 3])) * unit_deg + 1,
                         89.9)
        margin = margin_y / np.cos(np.radians(lat))
    else:
        margin = np.full(len(boxes), reach_m / float(crs.axis_info[0].unit_conversion_factor)
                         * 1.01)
        margin_y = margin
    widened = shapely.box(boxes[:, 0] - margin, boxes[:, 1] - margin_y,
                          boxes[:, 2] + margin, boxes[:, 3] + margin_y)
    if crs is not None and crs.is_geographic:
        # Longitudes run on past ±180° along a ring that crosses it: look a turn away too.
        turn = 360.0 / unit_deg
        widened = np.concatenate([widened, shapely.transform(widened, lambda xy: xy + [turn, 0]),
                                  shapely.transform(widened, lambda xy: xy - [turn, 0])])
    candidates = np.flatnonzero(present)
    tree = shapely.STRtree(other.source[candidates])
    hits = tree.query(widened)[1]
    return candidates[np.unique(hits)]
