"""``parse_answer`` over a table of answers, sorted into polygons, points and failures."""

from __future__ import annotations

from dataclasses import dataclass

from .answers import image_size, parse_answer
from .conventions import EMPTY, NON_FINITE, OUT_OF_BOUNDS, PARSED, REPAIRED, UNPARSEABLE

#: Columns of the geometry and point tables of ``answer_tables``, after row_id.
RECORD_COLUMNS = ("index", "kind", "label", "status", "convention", "convention_source",
                  "frame", "warning", "reason", "span")
#: Columns of the failure table, after row_id.
FAILURE_COLUMNS = ("index", "status", "reason", "span")


@dataclass
class AnswerTables:
    """The geometries of a table of answers, as three tables (columns as lists).

    Attributes:
        polygons, points: {"row_id": [...], "geometry": [...], and ``RECORD_COLUMNS``}.
        failures: {"row_id": [...], and ``FAILURE_COLUMNS``}: every record without a usable
            geometry (non_finite, unparseable: lines too), and every answer that yielded
            nothing (index None; status empty or the failure status).
        counts: count_rows, count_rows_with_geometry, count_rows_empty, count_rows_failed,
            count_polygons, count_points, count_rows_bad_image_size (size fields given but not
            two numbers > 0: read without the size, each record warned), and one count per
            record status.
    """

    polygons: dict
    points: dict
    failures: dict
    counts: dict


def answer_tables(texts, row_ids, coordinate_format="auto", image_widths=None,
                  image_heights=None, *, obb_to_hbb=False, geotransform=None,
                  raster_size=None, progress=None, padded_square=False) -> AnswerTables:
    """``parse_answer`` over a table of answers, sorted into polygons, points and failures.

    Args:
        texts, row_ids: sequences (n,) of answers and their row ids.
        image_widths, image_heights: sequences (n,) of sizes in pixels (None where unknown),
            or None.
        coordinate_format, obb_to_hbb, geotransform, padded_square: as for
            ``parse_answer``.
        raster_size: (width, height) in pixels of the raster the geotransform belongs to, or
            None. A row whose image size differs (the model saw a resampled copy) has its
            pixel coordinates scaled by (raster width / row width, raster height / row
            height) before the geotransform, so the whole image maps onto the whole raster.
        progress: optional callable(fraction done); may raise to cancel.

    Raises:
        ValueError: as ``parse_answer``; sequences of different lengths.
    """
    texts, row_ids = list(texts), list(row_ids)
    n = len(texts)
    widths = list(image_widths) if image_widths is not None else [None] * n
    heights = list(image_heights) if image_heights is not None else [None] * n
    if not (len(row_ids) == len(widths) == len(heights) == n):
        raise ValueError("texts, row_ids and image sizes must have one value per row")
    record_keys = ("row_id", "geometry") + RECORD_COLUMNS
    polygons = {key: [] for key in record_keys}
    points = {key: [] for key in record_keys}
    failures = {key: [] for key in ("row_id",) + FAILURE_COLUMNS}
    counts = {"count_rows": n, "count_rows_with_geometry": 0, "count_rows_empty": 0,
              "count_rows_failed": 0, "count_polygons": 0, "count_points": 0,
              "count_rows_bad_image_size": 0}
    counts.update({f"count_{s}": 0 for s in (PARSED, REPAIRED, OUT_OF_BOUNDS, NON_FINITE,
                                              UNPARSEABLE)})
    for i in range(n):
        if progress is not None and i % 100 == 0:
            progress(i / max(n, 1))
        width, height = widths[i], heights[i]
        size_problem = image_size_problem(width, height)
        if size_problem:
            counts["count_rows_bad_image_size"] += 1
        if _image_size_or_none(width, height) is None:
            width = height = None
        answer = parse_answer(texts[i], coordinate_format, width, height,
                              obb_to_hbb=obb_to_hbb, padded_square=padded_square,
                              geotransform=_row_geotransform(geotransform, raster_size,
                                                             width, height))
        for record in answer.records:
            if size_problem:
                record.warning = "; ".join(filter(None, [record.warning, size_problem]))
            counts[f"count_{record.status}"] += 1
            kind = record.geometry.geom_type if record.geometry is not None else None
            if kind in ("Polygon", "MultiPolygon"):
                table, counts["count_polygons"] = polygons, counts["count_polygons"] + 1
            elif kind in ("Point", "MultiPoint"):
                table, counts["count_points"] = points, counts["count_points"] + 1
            else:
                _append(failures, row_ids[i], record.index, record.status, record.reason,
                        record.span)
                continue
            table["row_id"].append(row_ids[i])
            table["geometry"].append(record.geometry)
            for key in RECORD_COLUMNS:
                table[key].append(getattr(record, key))
        if answer.usable:
            counts["count_rows_with_geometry"] += 1
        elif answer.status == EMPTY:
            counts["count_rows_empty"] += 1
            _append(failures, row_ids[i], None, EMPTY, answer.reason, texts[i])
        else:
            counts["count_rows_failed"] += 1
            if not answer.records:
                _append(failures, row_ids[i], None, answer.status, answer.reason, texts[i])
    return AnswerTables(polygons, points, failures, counts)


def _append(table, row_id, index, status, reason, span):
    for key, value in zip(("row_id",) + FAILURE_COLUMNS, (row_id, index, status, reason,
                                                          span if isinstance(span, str)
                                                          else None)):
        table[key].append(value)


def _row_geotransform(geotransform, raster_size, width, height):
    """The geotransform of a row's image: the raster's, scaled when the row's image (width ×
    height pixels) is a resampled copy of the raster (raster_size)."""
    if geotransform is None or raster_size is None or width is None:
        return geotransform
    sx, sy = float(raster_size[0]) / float(width), float(raster_size[1]) / float(height)
    if sx == 1.0 and sy == 1.0:
        return geotransform
    g0, g1, g2, g3, g4, g5 = geotransform
    return (g0, g1 * sx, g2 * sy, g3, g4 * sx, g5 * sy)


def _image_size_or_none(width, height):
    try:
        return image_size(width, height)
    except ValueError:
        return None


def image_size_problem(width, height) -> str:
    """Why a row's image size fields cannot be used ("" when both are usable or both are
    missing): a size must be two finite numbers > 0 (numbers or text holding numbers)."""
    if _is_blank(width) and _is_blank(height):
        return ""
    if _image_size_or_none(width, height) is not None:
        return ""
    return (f"image size {width!r} × {height!r} not usable (two numbers > 0 are needed): "
            f"read without the image size")


def _is_blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


__all__ = ["AnswerTables", "answer_tables", "image_size_problem", "RECORD_COLUMNS",
           "FAILURE_COLUMNS"]
