"""Whole evaluations: ``evaluate`` (one predicted layer against a reference) and ``compare``
(several predicted layers side by side).
"""

from .evaluate import (  # noqa: F401
    BOOTSTRAP_KEYS,
    BOOTSTRAP_TOLERANCE_KEYS,
    Evaluation,
    precision_among_overlapping,
)
from .compare import (  # noqa: F401
    COMPARED_KEYS,
    Comparison,
    compare_predictions,
    comparison_report,
)

__all__ = [
    "BOOTSTRAP_KEYS",
    "BOOTSTRAP_TOLERANCE_KEYS",
    "COMPARED_KEYS",
    "Comparison",
    "Evaluation",
    "compare_predictions",
    "comparison_report",
    "precision_among_overlapping",
]
