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
    band_pixel_areas,
    TRANSFORM_ERROR_PX,
)
from .class_tables import ClassNames, band_class_names  # noqa: F401
from .grid_transform import GridTransform, longitude_wrap  # noqa: F401
from .pixel_areas import PixelAreas, pixel_areas  # noqa: F401
from .polygons import (  # noqa: F401
    PolygonClassConfusion,
    polygon_class_confusion,
)

__all__ = [
    "AGREEMENT_CODES",
    "BLOCK_PIXELS",
    "ClassNames",
    "ClassTable",
    "GridTransform",
    "MAX_CLASSES",
    "NO_PREDICTION",
    "ORIENTATION",
    "OTHER",
    "PixelAreas",
    "PolygonClassConfusion",
    "RasterBand",
    "RasterConfusion",
    "SOURCE_WINDOW_PIXELS",
    "TRANSFORM_ERROR_PX",
    "accumulate",
    "band_pixel_areas",
    "band_class_names",
    "class_metrics",
    "confusion_matrix",
    "conventions",
    "grow",
    "inputs_left_untouched",
    "longitude_wrap",
    "new_matrix",
    "normalised",
    "open_band",
    "pixel_areas",
    "polygon_class_confusion",
    "raster_confusion",
    "read_class_table",
    "unique_codes",
]
