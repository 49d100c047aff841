"""Geometries from model answers: the public names of ``core.text`` in one module (the
reading itself lives in ``conventions``, ``extraction``, ``readers``, ``json_forms``,
``answers`` and ``tables``)."""

from __future__ import annotations

from .answers import (
    SPAN_EXCERPT,
    GeometryRecord,
    ParsedAnswer,
    decode_png,
    mask_to_polygons,
    parse_answer,
)
from .conventions import (
    AUTO,
    CONVENTIONS,
    COORDINATE_FORMATS,
    EMPTY,
    GIVEN,
    NON_FINITE,
    OUT_OF_BOUNDS,
    PARSED,
    REPAIRED,
    SYNTAX,
    UNPARSEABLE,
    USABLE,
    Convention,
)
from .readers import REGISTRY, Reader
from .tables import FAILURE_COLUMNS, RECORD_COLUMNS, AnswerTables, answer_tables, image_size_problem

__all__ = [
    "COORDINATE_FORMATS", "CONVENTIONS", "Convention", "GeometryRecord", "ParsedAnswer",
    "parse_answer", "decode_png", "mask_to_polygons", "image_size_problem", "answer_tables",
    "AnswerTables", "RECORD_COLUMNS", "FAILURE_COLUMNS", "REGISTRY", "Reader", "PARSED",
    "REPAIRED", "OUT_OF_BOUNDS", "NON_FINITE", "UNPARSEABLE", "EMPTY", "USABLE", "GIVEN",
    "SYNTAX", "AUTO", "SPAN_EXCERPT",
]
