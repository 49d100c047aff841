"""Pairs of geometries: candidate pairs and their IoU, cheap overlap bounds, IoU/Dice/GIoU/DIoU
of pairs, the overlap-pair table, footprint IoU, the study area.
"""

from .overlap import (  # noqa: F401
    RATIO_SIGNIFICANT_DIGITS,
    AreaFunction,
    OverlapPairs,
    overlap_pairs,
    settle,
    iou_from_areas,
    round_ratio,
    intersection_area,
)
from .bounds import (  # noqa: F401
    MAX_LINES,
    SupportingLines,
    Edges,
    bounded_slivers,
    overlap_shown,
)
from .pair_metrics import (  # noqa: F401
    ENCLOSING,
    PairMetrics,
    box_polygons,
    spatial_pair_metrics,
    spatial_iou,
    cylindrical_x_period,
    enclosing_measures,
    metrics_from_measures,
)
from .pair_table import (  # noqa: F401
    PairTable,
    overlap_pair_table,
)
from .footprint import (  # noqa: F401
    TILED_ROWS,
    ID_STATUSES,
    FootprintIoU,
    footprint_iou,
    id_key,
    footprint_pair_metrics,
    quiet_prepare_log,
)
from .study_area import (  # noqa: F401
    STUDY_AREA_RULES,
    StudyAreaSelection,
    study_area_footprint,
    select_in_study_area,
    select_stored_in_study_area,
)

__all__ = [
    "AreaFunction",
    "ENCLOSING",
    "Edges",
    "FootprintIoU",
    "ID_STATUSES",
    "MAX_LINES",
    "OverlapPairs",
    "PairMetrics",
    "PairTable",
    "RATIO_SIGNIFICANT_DIGITS",
    "STUDY_AREA_RULES",
    "StudyAreaSelection",
    "SupportingLines",
    "TILED_ROWS",
    "bounded_slivers",
    "box_polygons",
    "cylindrical_x_period",
    "enclosing_measures",
    "footprint_iou",
    "footprint_pair_metrics",
    "id_key",
    "intersection_area",
    "iou_from_areas",
    "metrics_from_measures",
    "overlap_pair_table",
    "overlap_pairs",
    "overlap_shown",
    "quiet_prepare_log",
    "round_ratio",
    "select_in_study_area",
    "select_stored_in_study_area",
    "settle",
    "spatial_iou",
    "spatial_pair_metrics",
    "study_area_footprint",
]
