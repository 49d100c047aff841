"""One rule for a ratio whose denominator is zero, used by every metric.

A metric divides counts, areas or lengths, and its denominator is sometimes zero: precision
with no prediction, recall with no reference, the IoU of two empty shapes. Each metric states
its decision as the ``zero_division`` value (scikit-learn's argument name, and torchmetrics'
``_safe_divide``): 0.0 for agribound's reported rates, NaN for a mean over nothing, 1.0 for
two empty layers, and so on. The rule is the same everywhere: ``num / den`` where ``den`` is
not 0, ``zero_division`` where it is, NaN propagating from either.
"""

from __future__ import annotations

import math

import numpy as np


def safe_divide(num, den, zero_division: float = 0.0) -> np.ndarray:
    """``num / den`` elementwise, ``zero_division`` where ``den == 0``.

    Args:
        num, den: array-likes of numbers broadcasting together (counts, areas, lengths).
        zero_division: the value where ``den`` is 0 (a float; NaN allowed).

    Returns:
        float array of the broadcast shape. NaN in ``num`` or ``den`` gives NaN (never the
        ``zero_division`` value); a nonzero number over 0 is never computed.
    """
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den == 0, zero_division, out)


def check_zero_division(value, name: str = "zero_division") -> float:
    """``value`` as a float when it is a number in [0, 1] or NaN (the values a rate may take
    on an empty denominator); raises ValueError naming ``name`` otherwise (bools too)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"{name} must be a number in [0, 1] or NaN, got {value!r}")
    value = float(value)
    if not (math.isnan(value) or 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1] or NaN, got {value!r}")
    return value
