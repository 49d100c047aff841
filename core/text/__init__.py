"""Model text: geometries recovered from what a language or vision-language model wrote, and the
spatial match of answers against expected geometries.
"""

from .model_text import (  # noqa: F401
    COORDINATE_FORMATS,
    EMPTY,
    USABLE,
    Convention,
    CONVENTIONS,
    GeometryRecord,
    ParsedAnswer,
    parse_answer,
    RECORD_COLUMNS,
    FAILURE_COLUMNS,
    AnswerTables,
    answer_tables,
    image_size_problem,
    decode_png,
    mask_to_polygons,
    REGISTRY,
    Reader,
)
from .spatial_match import (  # noqa: F401
    ACCURACY_THRESHOLDS,
    SpatialMatch,
    ROW_COLUMNS,
    summarise,
)

__all__ = [
    "ACCURACY_THRESHOLDS",
    "AnswerTables",
    "CONVENTIONS",
    "COORDINATE_FORMATS",
    "Convention",
    "EMPTY",
    "FAILURE_COLUMNS",
    "GeometryRecord",
    "ParsedAnswer",
    "REGISTRY",
    "Reader",
    "RECORD_COLUMNS",
    "ROW_COLUMNS",
    "SpatialMatch",
    "USABLE",
    "answer_tables",
    "decode_png",
    "image_size_problem",
    "mask_to_polygons",
    "parse_answer",
    "summarise",
]
