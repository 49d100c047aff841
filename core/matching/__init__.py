"""From pairs to scores: matching rules, summary metrics, strata/size classes/bootstrap, class
labels, detection-style scores, the threshold sweep, average precision.
"""

from .rules import (  # noqa: F401
    MATCHING_METHODS,
    IOU_RTOL,
    Matches,
    at_or_above,
    match,
    greedy_order,
    greedy_accepted,
    argmax_per_group,
)
from .summary import (  # noqa: F401
    QUANTITIES,
    Q,
    RATE_KEYS,
    COUNT_KEYS,
    ratio,
    f1_score,
    f1_from_counts,
    metrics_from_sums,
    to_builtin,
    nan_median,
)
from .grouping import (  # noqa: F401
    BOOTSTRAP_CONFIDENCE_LEVEL,
    Groups,
    strata_groups,
    parse_size_bins,
    check_size_edges,
    auto_size_edges,
    size_groups,
    percentile_interval,
    bootstrap_weights,
)
from .labels import (  # noqa: F401
    MISSING,
    class_key,
    label_text,
    normalise_labels,
    is_true,
    ancestors_from_taxonomy,
    compatible_classes,
)
from .detection import (  # noqa: F401
    detection_scores,
)
from .threshold_sweep import (  # noqa: F401
    SWEEP_THRESHOLDS,
)
from .average_precision import (  # noqa: F401
    IOU_THRESHOLDS,
    RECALL_LEVELS,
    COCO_AREA_RANGES,
    COCO_MAX_DETECTIONS,
)

__all__ = [
    "BOOTSTRAP_CONFIDENCE_LEVEL",
    "COCO_AREA_RANGES",
    "COCO_MAX_DETECTIONS",
    "COUNT_KEYS",
    "Groups",
    "IOU_RTOL",
    "IOU_THRESHOLDS",
    "MATCHING_METHODS",
    "MISSING",
    "Matches",
    "Q",
    "QUANTITIES",
    "RATE_KEYS",
    "RECALL_LEVELS",
    "SWEEP_THRESHOLDS",
    "ancestors_from_taxonomy",
    "argmax_per_group",
    "at_or_above",
    "auto_size_edges",
    "bootstrap_weights",
    "check_size_edges",
    "class_key",
    "label_text",
    "compatible_classes",
    "detection_scores",
    "f1_score",
    "f1_from_counts",
    "greedy_accepted",
    "greedy_order",
    "is_true",
    "match",
    "metrics_from_sums",
    "nan_median",
    "normalise_labels",
    "parse_size_bins",
    "percentile_interval",
    "ratio",
    "size_groups",
    "strata_groups",
    "to_builtin",
]
