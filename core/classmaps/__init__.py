"""Class maps: confusion matrices of label rasters and of categorised polygon layers, and the
per-class metrics read from them.
"""

from .confusion import (  # noqa: F401
    OTHER,
    NO_PREDICTION,
    ORIENTATION,
    ClassTable,
    unique_codes,
    new_matrix,
    grow,
    accumulate,
    confusion_matrix,
    class_metrics,
    normalised,
    conventions,
)
from .rasters import (  # noqa: F401
    BLOCK_PIXELS,
    SOURCE_WINDOW_PIXELS,
    MAX_CLASSES,
    AGREEMENT_CODES,
    RasterBand,
    inputs_left_untouched,
    open_band,
    read_class_table,
    RasterConfusion,
    raster_confusion,
    cell_areas_m2,
)
from .polygons import (  # noqa: F401
    PolygonClassConfusion,
    polygon_class_confusion,
)

__all__ = [
    "AGREEMENT_CODES",
    "BLOCK_PIXELS",
    "ClassTable",
    "MAX_CLASSES",
    "NO_PREDICTION",
    "ORIENTATION",
    "OTHER",
    "PolygonClassConfusion",
    "RasterBand",
    "RasterConfusion",
    "SOURCE_WINDOW_PIXELS",
    "accumulate",
    "cell_areas_m2",
    "class_metrics",
    "confusion_matrix",
    "conventions",
    "grow",
    "inputs_left_untouched",
    "new_matrix",
    "normalised",
    "open_band",
    "polygon_class_confusion",
    "raster_confusion",
    "read_class_table",
    "unique_codes",
]
