"""Footprint IoU of two layers: each layer dissolved into one footprint, and optionally one
footprint per id shared by the two layers.

The robust function of ../shared/seeds/spatial_iou_guide.txt on whole layers: every row is
prepared by ``prepare_layer`` (repair first, then reprojection to the equal-area CRS, then
repair again; null, empty, non-polygonal and zero-area rows dropped and counted), the rows are
dissolved (``pair_metrics.dissolve``: a guarded overlay), and the footprints are scored by
``pair_metrics.pair_metrics`` (guarded overlay, ratios clamped to their ranges). Every
degenerate case has a defined value: a footprint without area on one side scores IoU = Dice =
0 and GIoU = DIoU = -1; without area on both sides, ``zero_division`` (0.0 by default, the
guide's value).
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass, field

import numpy as np

from .crs import (
    DEFAULT_EQUAL_AREA_CRS,
    check_layer_crs,
    crs_label,
    resolve_crs,
    resolve_equal_area_crs,
)
from .grouping import is_missing
from .pair_metrics import PairMetrics, cylindrical_x_period, dissolve, pair_metrics
from .prepare import PreparedLayer, geometry_array, prepare_layer
from .progress import Progress

#: Status of an id in the per-id table: rows with it in both layers, or in one layer only.
ID_STATUSES = ("both", "predicted_only", "reference_only")


@dataclass(frozen=True)
class FootprintIoU:
    """Footprint scores of a predicted and a reference layer.

    Attributes:
        overall: PairMetrics of one pair, the two dissolved layers (areas in m² in the
            equal-area CRS, squared planar units without a CRS).
        ids: per-id mode only: the ids, shape (n_ids,), reference ids first in their first
            order of appearance, then ids found only in the predicted layer; each is the
            first input value with its key (see ``id_key``). None without ids.
        status: object array of str, shape (n_ids,): one of ``ID_STATUSES``.
        by_id: PairMetrics of the n_ids pairs (predicted rows with the id dissolved,
            reference rows with the id dissolved).
        n_predicted_rows, n_reference_rows: int64, shape (n_ids,): input rows with each id.
        n_predicted_without_id, n_reference_without_id: input rows whose id is missing
            (None, NaN, NULL): in ``overall`` but in no per-id row.
        predicted, reference: the prepared layers (drop and repair counts).
        equal_area_crs: label of the CRS of the areas ("none (planar units)" without a CRS).
    """

    overall: PairMetrics
    predicted: PreparedLayer
    reference: PreparedLayer
    equal_area_crs: str
    ids: list | None = None
    status: np.ndarray | None = field(default=None, repr=False)
    by_id: PairMetrics | None = field(default=None, repr=False)
    n_predicted_rows: np.ndarray | None = field(default=None, repr=False)
    n_reference_rows: np.ndarray | None = field(default=None, repr=False)
    n_predicted_without_id: int = 0
    n_reference_without_id: int = 0


def footprint_iou(
    predicted,
    reference,
    *,
    predicted_crs=None,
    reference_crs=None,
    equal_area_crs=DEFAULT_EQUAL_AREA_CRS,
    predicted_ids=None,
    reference_ids=None,
    zero_division: float = 0.0,
    progress: Progress | None = None,
) -> FootprintIoU:
    """IoU, Dice, GIoU and DIoU of two layers' dissolved footprints, and per shared id.

    Args:
        predicted, reference: sequences of shapely geometries (None allowed), shapes
            (n_pred,) and (n_ref,), in their CRSs. Never modified.
        predicted_crs, reference_crs: anything pyproj accepts, or both None (planar units).
        equal_area_crs: projected CRS in metres for areas (default EPSG:6933).
        predicted_ids, reference_ids: one id per row (both or neither): the per-id mode.
            Ids match by ``id_key`` (1, 1.0 and "1" are one id); a missing id puts a row in
            the overall footprint only.
        zero_division: every metric's value when neither footprint has area, in [0, 1] or NaN.
        progress: receives progress and may cancel (EvaluationCanceled is raised).

    Returns:
        A FootprintIoU.

    Raises:
        ValueError: a CRS that is not one, exactly one layer with a CRS, an equal-area CRS not
            projected in metres, ids given for one layer only or of the wrong length.
        TypeError: a layer given as a single geometry or a non-sequence.

    Source: ../shared/seeds/spatial_iou_guide.txt (repair, reproject, guarded overlay, clamp);
    GIoU: Rezatofighi et al. (2019); DIoU: Zheng et al. (2020).
    """
    progress = progress or Progress()
    if (predicted_ids is None) != (reference_ids is None):
        raise ValueError("predicted_ids and reference_ids must be given together")
    predicted = geometry_array(predicted, "predicted")
    reference = geometry_array(reference, "reference")
    pred_crs = resolve_crs(predicted_crs, "predicted_crs")
    ref_crs = resolve_crs(reference_crs, "reference_crs")
    check_layer_crs(ref_crs, pred_crs)
    ea_crs = resolve_equal_area_crs(equal_area_crs) if ref_crs is not None else None
    x_period = cylindrical_x_period(ea_crs) if ea_crs is not None else None
    if predicted_ids is not None:
        predicted_ids = _ids(predicted_ids, len(predicted), "predicted_ids")
        reference_ids = _ids(reference_ids, len(reference), "reference_ids")

    progress.checkpoint(0, "Preparing geometries")
    ref = prepare_layer(reference, ref_crs, ea_crs, "reference", progress.span(0, 40))
    pred = prepare_layer(predicted, pred_crs, ea_crs, "predicted", progress.span(40, 80))
    progress.checkpoint(80, "Dissolving footprints")
    with quiet_prepare_log():
        overall = pair_metrics(
            dissolve(pred.geometries, "predicted"),
            dissolve(ref.geometries, "reference"),
            zero_division=zero_division,
            x_period=x_period,
        )
    result = FootprintIoU(overall, pred, ref, crs_label(ea_crs))
    if predicted_ids is None:
        progress.checkpoint(100, "Done")
        return result

    progress.checkpoint(90, "Footprints per id")
    pred_keys = np.array([id_key(v) for v in predicted_ids], dtype=object)
    ref_keys = np.array([id_key(v) for v in reference_ids], dtype=object)
    first_value = {}
    for keys, values in ((ref_keys, reference_ids), (pred_keys, predicted_ids)):
        for key, value in zip(keys, values):
            if key is not None and key not in first_value:
                first_value[key] = value
    order = list(first_value)
    code = {key: k for k, key in enumerate(order)}
    pred_codes = np.array([code.get(k, -1) if k is not None else -1 for k in pred_keys])
    ref_codes = np.array([code.get(k, -1) if k is not None else -1 for k in ref_keys])
    n_ids = len(order)
    n_pred_rows = np.bincount(pred_codes[pred_codes >= 0], minlength=n_ids).astype(np.int64)
    n_ref_rows = np.bincount(ref_codes[ref_codes >= 0], minlength=n_ids).astype(np.int64)
    status = np.where(
        (n_pred_rows > 0) & (n_ref_rows > 0),
        "both",
        np.where(n_pred_rows > 0, "predicted_only", "reference_only"),
    ).astype(object)
    with quiet_prepare_log():
        by_id = pair_metrics(
            _dissolve_by_code(pred.geometries, pred_codes[pred.keep], n_ids, "predicted"),
            _dissolve_by_code(ref.geometries, ref_codes[ref.keep], n_ids, "reference"),
            zero_division=zero_division,
            x_period=x_period,
        )
    progress.checkpoint(100, "Done")
    return FootprintIoU(
        overall,
        pred,
        ref,
        crs_label(ea_crs),
        ids=[first_value[key] for key in order],
        status=status,
        by_id=by_id,
        n_predicted_rows=n_pred_rows,
        n_reference_rows=n_ref_rows,
        n_predicted_without_id=int(np.count_nonzero(pred_codes < 0)),
        n_reference_without_id=int(np.count_nonzero(ref_codes < 0)),
    )


def id_key(value) -> str | None:
    """The key two ids are matched by: None for a missing id (None, NaN, QGIS NULL); a whole
    number as its integer text (1, 1.0 and "1" are one id); anything else as its text with
    surrounding spaces removed."""
    if is_missing(value):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    if isinstance(value, np.floating) and np.isfinite(value) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


@contextlib.contextmanager
def quiet_prepare_log():
    """Silence ``prepare_layer``'s drop log while ``pair_metrics`` checks the footprints again:
    they are prepared already, and the only rows it drops are the None of a side without
    area, which are no data error (the layers' own drops were logged once)."""
    prepare_logger = logging.getLogger(prepare_layer.__module__)
    level = prepare_logger.level
    prepare_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        prepare_logger.setLevel(level)


def _ids(values, n: int, name: str) -> list:
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} must have one value per row ({n}), got {len(values)}")
    return values


def _dissolve_by_code(geoms: np.ndarray, codes: np.ndarray, n_groups: int, name: str):
    """Object array, shape (n_groups,): the union of the geometries of each code (None for a
    code without any); geometries with code -1 are left out."""
    out = np.full(n_groups, None, dtype=object)
    inside = codes >= 0
    geoms, codes = geoms[inside], codes[inside]
    counts = np.bincount(codes, minlength=n_groups)
    single = counts[codes] == 1
    out[codes[single]] = geoms[single]
    several = ~single
    geoms, codes = geoms[several], codes[several]
    order = np.argsort(codes, kind="stable")
    geoms, codes = geoms[order], codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else []
    for start, stop in zip(starts, list(starts[1:]) + [len(codes)]):
        # A loop over ids with several rows only.
        out[codes[start]] = dissolve(geoms[start:stop], name)
    return out
