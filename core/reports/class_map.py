"""The report of a class-map comparison (label rasters or categorised polygons): per-class
metrics, summary, the labelled confusion matrix, classes and coverage, as a JSON-ready dict.

Keys (a contract shared by ``ioueval:rasteriou`` and ``ioueval:classmapiou``): ``per_class``
keyed by class value as text (``iou``, ``dice``, ``precision``, ``recall``, ``tp``, ``fp``,
``fn``, ``areas``), ``miou``, ``fwiou``, ``pixel_accuracy``, ``confusion_matrix``,
``classes``, ``alignment``; and ``absent_classes``, ``conventions``, ``unit``,
``parameters``, ``inputs``, ``provenance``, ``warnings``.
"""

from __future__ import annotations

import numpy as np

from ..classmaps import confusion
from .data import library_versions


def class_value_text(value) -> str:
    """The key of a class in ``per_class``: 3 -> "3", 2.5 -> "2.5", "forest" -> "forest"."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    return str(value)


def build_class_map_report(
    classes: confusion.ClassTable,
    counts: np.ndarray,
    areas_m2: np.ndarray,
    unit: str,
    alignment: dict,
    parameters: dict,
    inputs: dict,
    provenance: dict,
    warnings=(),
    reproduce: dict | None = None,
) -> dict:
    """The report dict.

    Args:
        classes: the K classes, in matrix order.
        counts: (K + 2, K) matrix in ``unit`` ("pixels", or "m2" for polygons), rows =
            prediction (classes, OTHER, NO_PREDICTION), columns = reference. TP/FP/FN and the
            metrics are computed from it.
        areas_m2: (K + 2, K) matrix of the same cells in m².
        alignment: grids and coverage (raster) or area covered (polygons).
        parameters, inputs: as the caller read them.
        provenance: versions known only to the caller (plugin, QGIS); library versions are
            added.
        warnings: messages for the report's alerts.
        reproduce: {"algorithm", "parameters"} that rerun it (``reports.reproduce``), or None.

    Pixel accuracy is Σ TP / Σ matrix (an omission or an OTHER prediction counts as wrong);
    per-class ``areas`` hold ``tp_m2``, ``fp_m2``, ``fn_m2``, ``reference_m2`` and
    ``predicted_m2``.
    """
    metrics = confusion.class_metrics(counts)
    area_metrics = confusion.class_metrics(areas_m2)
    keys = [class_value_text(v) for v in classes.values]
    per_class, absent, class_rows = {}, [], []
    for k, key in enumerate(keys):
        present = bool(metrics["present"][k])
        in_reference = bool(metrics["reference_total"][k] > 0)
        in_prediction = bool(metrics["predicted_total"][k] > 0)
        status = (
            "present in both" if in_reference and in_prediction
            else "reference only" if in_reference
            else "prediction only" if in_prediction
            else "absent from both"
        )
        per_class[key] = {
            "name": classes.names[k],
            "iou": _value(metrics["iou"][k]),
            "dice": _value(metrics["dice"][k]),
            "precision": _value(metrics["precision"][k]),
            "recall": _value(metrics["recall"][k]),
            "tp": _value(metrics["tp"][k], unit),
            "fp": _value(metrics["fp"][k], unit),
            "fn": _value(metrics["fn"][k], unit),
            "areas": {
                "tp_m2": float(area_metrics["tp"][k]),
                "fp_m2": float(area_metrics["fp"][k]),
                "fn_m2": float(area_metrics["fn"][k]),
                "reference_m2": float(area_metrics["reference_total"][k]),
                "predicted_m2": float(area_metrics["predicted_total"][k]),
            },
            "present": present,
            "status": status,
        }
        if not in_reference or not in_prediction:
            absent.append({"value": key, "name": classes.names[k], "status": status})
        class_rows.append({"value": key, "name": classes.names[k], "status": status})
    labels = keys + [confusion.OTHER, confusion.NO_PREDICTION]
    report = {
        "per_class": per_class,
        "miou": metrics["miou"],
        "fwiou": metrics["fwiou"],
        "pixel_accuracy": metrics["pixel_accuracy"],
        "unit": unit,
        "confusion_matrix": {
            "orientation": confusion.ORIENTATION,
            "rows": labels,
            "columns": keys,
            "counts": np.asarray(counts).tolist(),
            "areas_m2": np.asarray(areas_m2).tolist(),
        },
        "classes": class_rows,
        "absent_classes": absent,
        "conventions": confusion.conventions(metrics),
        "alignment": alignment,
        "parameters": parameters,
        "inputs": inputs,
        "provenance": {**provenance, **library_versions()},
        "warnings": list(warnings),
    }
    if reproduce is not None:
        report["reproduce"] = reproduce
    return report


def _value(x, unit: str | None = None):
    """A JSON-ready number: int for pixel counts, float otherwise, None for NaN."""
    x = float(x)
    if np.isnan(x):
        return None
    return int(x) if unit == "pixels" else x
