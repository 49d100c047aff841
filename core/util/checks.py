"""Checks of caller-supplied numbers: programmer error raises ValueError naming the parameter."""

from __future__ import annotations

import math

import numpy as np


def _real(value) -> bool:
    """A real number (bools, which float() would accept as 0/1, excluded)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def check_positive(value, name: str) -> float:
    """``value`` as a float; ValueError naming ``name`` unless it is a positive finite number."""
    if not _real(value):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    out = float(value)
    if not (math.isfinite(out) and out > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return out


def check_non_negative_int(value, name: str) -> int:
    """``value`` as an int; ValueError naming ``name`` unless it is an integer >= 0."""
    if not _real(value) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def check_threshold(value, name: str = "iou_threshold") -> float:
    """An IoU threshold as a float; ValueError naming ``name`` unless it is in (0, 1]."""
    if not _real(value):
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    out = float(value)
    if not (math.isfinite(out) and 0.0 < out <= 1.0):
        raise ValueError(f"{name} must be in (0, 1], got {value!r}")
    return out


def is_missing(value) -> bool:
    """None, NaN, or a QGIS NULL (a QVariant whose isNull() is true)."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)) and math.isnan(value):  # float32 NaN too
        return True
    is_null = getattr(value, "isNull", None)
    return bool(is_null()) if callable(is_null) else False
