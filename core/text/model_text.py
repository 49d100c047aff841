"""Geometries from the text a language or vision-language model wrote: boxes, oriented boxes,
polygons, masks and points, each with the coordinate convention used and why, and a status.

An answer is read in three steps: ``_extract`` finds every geometry-like span (JSON, model
token syntaxes, WKT, GeoJSON) and returns raw numbers with the convention its syntax implies,
if any; ``_resolve_auto`` decides one convention for the numbers whose syntax implies none;
``_build`` turns numbers into shapely geometries in a coordinate frame:

- ``pixel``: image pixel coordinates, x to the right, y downwards, (0, 0) the top-left corner
  of the top-left pixel (GDAL's pixel-corner convention: pixel (i, j) spans [i, i + 1] ×
  [j, j + 1], its centre is (i + 0.5, j + 0.5));
- ``fraction``: fractions of the image width and height in [0, 1] (normalised coordinates when
  the image size is not known);
- ``map``: map coordinates (the ``map`` convention, GeoJSON, or pixels through a geotransform).

Nothing is guessed silently: every geometry carries the convention used, where it came from
(``given``, ``syntax`` or ``auto``) and a warning when the reading was ambiguous; text that
cannot be read is an ``unparseable`` record with its reason, never a zero box.

Sources: ../shared/seeds/galtea_spatial_match.txt (JSON boxes), groundset_eval.txt
("geometric recovery", OBB → HBB); the model formats as their model cards and reference code
describe them (Qwen2-VL / Qwen2.5-VL / Qwen3-VL, Gemini 2.x, Florence-2, PaliGemma,
DeepSeek-VL2, GeoChat, Molmo).
"""

from __future__ import annotations

import base64
import bisect
import json
import math
import re
import uuid
from dataclasses import dataclass, field

import numpy as np
import shapely

from ..util.wording import count_of

#: The COORDINATE_FORMAT choices, in the order of the Processing enum (a contract).
COORDINATE_FORMATS = (
    "auto",
    "pixel_xyxy",
    "normalized_1",
    "normalized_1000",
    "pixel_yxyx",
    "normalized_1000_yxyx",
    "map",
    "normalized_100",
    "normalized_1024_yxyx",
)

#: Status of one recovered geometry (or of an item that yielded none).
PARSED, REPAIRED, OUT_OF_BOUNDS, NON_FINITE, UNPARSEABLE = (
    "parsed", "repaired", "out_of_bounds", "non_finite", "unparseable",
)
#: Status of an answer with no geometry that says so (an empty list, "none found").
EMPTY = "empty"
#: Statuses of records that hold a geometry.
USABLE = (PARSED, REPAIRED, OUT_OF_BOUNDS)

#: Where a convention came from.
GIVEN, SYNTAX, AUTO = "given", "syntax", "auto"


@dataclass(frozen=True)
class Convention:
    """How raw numbers become coordinates.

    Attributes:
        name: a COORDINATE_FORMATS value or the name of a model's token syntax.
        y_first: numbers come as (y, x) pairs.
        divisor: a raw value v is the fraction (v + offset) / divisor of the image size; None
            for absolute coordinates (pixels, or map units when ``frame`` is "map").
        offset: added before dividing (Florence-2's bin centre: 0.5).
        maximum: the largest raw value the convention allows (bins: divisor - 1).
        frame: "pixel", "fraction" (becomes pixel when the image size is known) or "map".
    """

    name: str
    y_first: bool = False
    divisor: float | None = None
    offset: float = 0.0
    maximum: float | None = None
    frame: str = "pixel"


CONVENTIONS = {
    # Qwen2.5-VL's bbox_2d: absolute pixels of the image its processor resized (sides multiples
    # of 28), not of the original (QwenLM/Qwen2.5-VL issue 676); Qwen3-VL's are 0–1000.
    "pixel_xyxy": Convention("pixel_xyxy"),
    "pixel_yxyx": Convention("pixel_yxyx", y_first=True),
    "normalized_1": Convention("normalized_1", divisor=1.0, maximum=1.0, frame="fraction"),
    "normalized_100": Convention("normalized_100", divisor=100.0, maximum=100.0,
                                 frame="fraction"),
    "normalized_1000": Convention("normalized_1000", divisor=1000.0, maximum=1000.0,
                                  frame="fraction"),
    "normalized_1000_yxyx": Convention("normalized_1000_yxyx", y_first=True, divisor=1000.0,
                                       maximum=1000.0, frame="fraction"),
    # big_vision's PaliGemma decoding: <locNNNN> / 1024 of the image size, y first.
    "normalized_1024_yxyx": Convention("normalized_1024_yxyx", y_first=True, divisor=1024.0,
                                       maximum=1023.0, frame="fraction"),
    "map": Convention("map", frame="map"),
    # Token syntaxes: the convention is part of the format.
    "florence2_loc_1000": Convention("florence2_loc_1000", divisor=1000.0, offset=0.5,
                                     maximum=999.0, frame="fraction"),
    "deepseek_vl2_999": Convention("deepseek_vl2_999", divisor=999.0, maximum=999.0,
                                   frame="fraction"),
    "geojson": Convention("geojson", frame="map"),
}

#: Words that say "there is nothing" (an answer with no geometry that is not a failure).
_NONE_FOUND = re.compile(
    r"\b(none found|no (?:objects?|matches|match|instances?|results?|\w+s) (?:found|detected|"
    r"present|visible|in (?:the|this) image)|not found|nothing (?:found|detected)|"
    r"there (?:is|are) no\b(?! (?:doubt|question|need|way|problem|reason))|cannot find|"
    r"could not find|can't find|did not find|no such (?:object|thing)|none(?! other than))\b",
    re.IGNORECASE,
)


@dataclass
class GeometryRecord:
    """One geometry recovered from an answer, or one span that yielded none.

    Attributes:
        index: position within the answer (0, 1, ... in text order), over all records.
        kind: "box", "oriented_box", "polygon", "mask", "point", "wkt", "geojson".
        geometry: shapely geometry in ``frame`` (None for non_finite / unparseable records).
        frame: "pixel", "fraction" or "map" (see the module docstring); None without geometry.
        span: the raw text the record came from; ``start``, ``end``: its offsets.
        convention: the convention's name; ``convention_source``: given, syntax or auto.
        status: parsed, repaired, out_of_bounds, non_finite or unparseable.
        reason: why the status (repairs done, bounds exceeded, what could not be read).
        warning: set when the convention was an ambiguous inference.
        label: the object label the answer gave, if any.
    """

    index: int
    kind: str
    geometry: object
    frame: str | None
    span: str
    start: int
    end: int
    convention: str
    convention_source: str
    status: str
    reason: str = ""
    warning: str = ""
    label: str | None = None


@dataclass
class ParsedAnswer:
    """All records of one answer and the answer's status.

    ``status``: "parsed" (at least one usable geometry), "empty" (a valid answer with no
    geometry), or the status of the first failed record ("non_finite", "unparseable") when
    nothing usable was found; ``reason`` says why.
    """

    records: list
    status: str
    reason: str = ""

    @property
    def usable(self) -> list:
        """Records with a geometry (parsed, repaired, out_of_bounds)."""
        return [r for r in self.records if r.status in USABLE]

    @property
    def failures(self) -> list:
        return [r for r in self.records if r.status not in USABLE]


@dataclass
class _Raw:
    """A span before conversion: numbers in the answer's convention or in its own."""

    kind: str
    start: int
    end: int
    numbers: object = None  # list of floats (box, point, polygon ring) or other payload
    convention: str | None = None  # implied by the syntax; None: the row's / auto
    label: str | None = None
    angle_deg: float | None = None  # oriented box given as a box plus a rotation
    geometry: object = None  # for WKT and GeoJSON: a shapely geometry in raw coordinates
    mask: str | None = None  # base64 PNG inside a box
    obb_form: str = "centre"  # oriented box numbers: "centre" (cx, cy, w, h) or "corners"
    repaired: list = field(default_factory=list)
    failure: str | None = None  # unparseable, with this reason


def parse_answer(
    text,
    coordinate_format: str = "auto",
    image_width: float | None = None,
    image_height: float | None = None,
    *,
    obb_to_hbb: bool = False,
    geotransform=None,
) -> ParsedAnswer:
    """Every geometry in one model answer.

    Args:
        text: the answer (str; a dict or list, as QGIS reads a JSON field, is read as its
            JSON text; None, blank text or another type is an unparseable answer).
        coordinate_format: one of ``COORDINATE_FORMATS``, for numbers whose syntax implies no
            convention (JSON lists, WKT, polygons); token syntaxes and Gemini's ``box_2d`` /
            ``point`` keys always use their own.
        image_width, image_height: image size in pixels (> 0), or None when unknown:
            normalised coordinates then stay fractions of the image (frame "fraction").
        obb_to_hbb: replace oriented boxes by their axis-aligned envelopes (GroundSet's
            geometric recovery).
        geotransform: GDAL geotransform (6 numbers) of the georeferenced image: pixel
            geometries become map geometries, X = g0 + x·g1 + y·g2, Y = g3 + x·g4 + y·g5
            (x, y pixel-corner coordinates, so north-up and rotated rasters alike).

    Returns:
        ParsedAnswer. Never raises on the text.

    Raises:
        ValueError: an unknown coordinate_format, a non-positive image size, a geotransform
            that is not 6 finite numbers.
    """
    if coordinate_format not in COORDINATE_FORMATS:
        raise ValueError(
            f"coordinate_format must be one of {COORDINATE_FORMATS}, got {coordinate_format!r}"
        )
    size = _image_size(image_width, image_height)
    if geotransform is not None:
        geotransform = tuple(float(v) for v in geotransform)
        if len(geotransform) != 6 or not all(math.isfinite(v) for v in geotransform):
            raise ValueError(f"geotransform must be 6 finite numbers, got {geotransform!r}")
    if isinstance(text, (dict, list)):  # a JSON field, as QGIS reads it
        text = json.dumps(text)
    if text is None:
        return ParsedAnswer([], UNPARSEABLE, "no answer text (null)")
    if not isinstance(text, str):
        return ParsedAnswer([], UNPARSEABLE, f"the answer is not text ({type(text).__name__})")
    if not text.strip():
        # blank is no answer, as NULL is (QGIS reads an empty CSV cell as NULL, a GeoPackage
        # keeps ''): a blank expected cell must not become "nothing expected"
        return ParsedAnswer([], UNPARSEABLE, "no answer text (blank)")
    try:
        raws, note = _extract_answer(text)
        records = _convert(raws, text, coordinate_format, size, obb_to_hbb, geotransform)
    except Exception as exc:  # noqa: BLE001 - data never aborts a run; the reason is kept
        return ParsedAnswer([], UNPARSEABLE, f"the answer could not be read ({exc})")
    return _answer(records, text, note)


def _image_size(width, height):
    if width is None and height is None:
        return None
    try:
        width, height = float(width), float(height)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(width) and math.isfinite(height)):
        return None
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width} × {height}")
    return width, height


def _answer(records, text, note) -> ParsedAnswer:
    usable = [r for r in records if r.status in USABLE]
    if usable:
        return ParsedAnswer(records, PARSED, note)
    failures = [r for r in records if r.status not in USABLE]
    if failures:
        return ParsedAnswer(records, failures[0].status, failures[0].reason)
    if note == "empty" or _NONE_FOUND.search(_outside_think(text)):
        return ParsedAnswer(records, EMPTY, "the answer holds no geometry")
    if note == _NO_GEOMETRY_JSON:
        return ParsedAnswer(records, UNPARSEABLE, note)
    return ParsedAnswer(records, UNPARSEABLE, "no geometry found in the text")


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
                  raster_size=None, progress=None) -> AnswerTables:
    """``parse_answer`` over a table of answers, sorted into polygons, points and failures.

    Args:
        texts, row_ids: sequences (n,) of answers and their row ids.
        image_widths, image_heights: sequences (n,) of sizes in pixels (None where unknown),
            or None.
        coordinate_format, obb_to_hbb, geotransform: as for ``parse_answer``.
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
                              obb_to_hbb=obb_to_hbb,
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
        return _image_size(width, height)
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


# --- Extraction ---------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)


def _outside_think(text: str) -> str:
    """The text with <think>…</think> blocks (an unclosed one runs to the end) blanked out,
    offsets kept."""
    return _THINK.sub(lambda m: " " * len(m.group(0)), text)


def _extract_answer(text: str):
    """Raw spans of the final answer; those inside <think> blocks only when it has none."""
    outside = _outside_think(text)
    raws, note = _extract(outside)
    if raws or outside == text:
        return raws, note
    if note == "empty" or _NONE_FOUND.search(outside):
        return raws, "empty"  # the final answer says there is nothing: the reasoning is not it
    inside = "".join(c if o == " " and c != " " else " " for c, o in zip(text, outside))
    raws, inside_note = _extract(inside)
    if raws:
        return raws, "geometries read from the <think> block (the answer after it has none)"
    return raws, note or inside_note


_TOKEN_PATTERNS = [
    # Qwen2-VL: <|object_ref_start|>car<|object_ref_end|><|box_start|>(x1,y1),(x2,y2)<|box_end|>
    ("qwen2vl", re.compile(
        r"(?:<\|object_ref_start\|>(?P<label>.*?)<\|object_ref_end\|>\s*)?<\|box_start\|>"
        r"(?P<body>.*?)<\|box_end\|>", re.DOTALL)),
    # Qwen-VL (v1): <ref>car</ref><box>(x1,y1),(x2,y2)</box>, 0-1000
    ("qwen2vl", re.compile(
        r"(?:<ref>(?P<label>.*?)</ref>\s*)?<box>(?P<body>.*?)</box>", re.DOTALL)),
    # DeepSeek-VL2: <|ref|>car<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>
    ("deepseek", re.compile(
        r"(?:<\|ref\|>(?P<label>.*?)<\|/ref\|>\s*)?<\|det\|>(?P<body>.*?)(?:<\|/det\|>|\Z)",
        re.DOTALL)),
    # GeoChat: {<x1><y1><x2><y2>|<angle>}
    ("geochat", re.compile(
        r"\{\s*<(?P<a>-?\d+(?:\.\d+)?)>\s*<(?P<b>-?\d+(?:\.\d+)?)>\s*<(?P<c>-?\d+(?:\.\d+)?)>"
        r"\s*<(?P<d>-?\d+(?:\.\d+)?)>\s*(?:\|\s*<(?P<angle>-?\d+(?:\.\d+)?)>\s*)?\}")),
    # PaliGemma: <loc0393><loc0109><loc0859><loc0811> bird ; ...
    ("paligemma", re.compile(
        r"(?P<locs>(?:<loc\d{4}>){4})(?:<seg\d{3}>)*[ \t]*(?P<label>[^;<\n]*)")),
    # Florence-2: car<loc_52><loc_333><loc_932><loc_774> (4 bins a box, 2n >= 6 a polygon)
    ("florence", re.compile(r"(?P<locs>(?:<loc_\d+>){2,})")),
    # Molmo: <point x="52.3" y="61.0" alt="dog">dog</point>, <points x1=".." y1=".." ...>
    ("molmo", re.compile(r"<points?\b(?P<attrs>[^>]*)>(?P<label>[^<]*)(?:</points?>)?",
                         re.IGNORECASE)),
]

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_WKT_START = re.compile(
    r"\b(MULTIPOLYGON|MULTILINESTRING|MULTIPOINT|GEOMETRYCOLLECTION|POLYGON|LINESTRING|POINT)"
    r"\s*(?:Z|M|ZM)?\s*(\(|EMPTY\b)",
    re.IGNORECASE,
)


def _extract(text: str):
    """(raw spans in text order, note); token syntaxes first, then WKT, then JSON, each on
    the text the earlier ones did not claim."""
    raws, claimed = [], _Claims()
    for syntax, pattern in _TOKEN_PATTERNS:
        for match in pattern.finditer(text):
            if not claimed.free(match.start(), match.end()):
                continue
            found = _token_raws(syntax, match)
            if found:
                raws.extend(found)
                claimed.add(match.start(), match.end())
    for start, end in _wkt_spans(text):
        if claimed.free(start, end):
            raws.append(_wkt_raw(text, start, end))
            claimed.add(start, end)
    masked = list(text)
    for start, end in claimed.spans():
        masked[start:end] = " " * (end - start)
    json_raws, note = _json_raws("".join(masked))
    raws.extend(json_raws)
    raws.sort(key=lambda r: r.start)
    return raws, note


class _Claims:
    """Disjoint spans of text already read, sorted: a lookup costs a bisection, so an answer
    of many geometries is read in n log n rather than n² (50 000 WKT points took 2 minutes)."""

    def __init__(self):
        self.starts, self.ends = [], []

    def free(self, start: int, end: int) -> bool:
        k = bisect.bisect_right(self.starts, start)
        if k > 0 and self.ends[k - 1] > start:
            return False
        return k == len(self.starts) or self.starts[k] >= end

    def add(self, start: int, end: int):
        k = bisect.bisect_right(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)

    def spans(self):
        return zip(self.starts, self.ends)


def _token_raws(syntax: str, match) -> list:
    start, end = match.start(), match.end()
    label = (match.groupdict().get("label") or "").strip() or None
    if syntax == "qwen2vl":
        numbers = [float(v) for v in re.findall(_NUMBER, match.group("body"))]
        if not numbers or len(numbers) % 4:
            return [_Raw("box", start, end, failure=(
                f"Qwen-VL box tokens need 4 numbers a box, found {len(numbers)}"))]
        # InternVL writes several boxes in one tag: <ref>car</ref><box>[[..], [..]]</box>
        return [_Raw("box", start, end, numbers[k:k + 4], "normalized_1000", label)
                for k in range(0, len(numbers), 4)]
    if syntax == "deepseek":
        body = match.group("body")
        value, repaired = _load_json(body.strip())
        if value is None:
            return [_Raw("box", start, end, failure="DeepSeek-VL2 <|det|> holds no JSON list")]
        try:
            found = _json_value_raws(value, start, end, "deepseek_vl2_999")
        except RecursionError:
            return [_Raw("box", start, end, failure="JSON nested too deeply to read")]
        for raw in found:
            raw.label = raw.label or label
            if repaired:
                raw.repaired.append(repaired)
        return found or [_Raw("box", start, end, failure="DeepSeek-VL2 <|det|> holds no box")]
    if syntax == "geochat":
        numbers = [float(match.group(k)) for k in "abcd"]
        angle = match.group("angle")
        return [_Raw("oriented_box" if angle is not None else "box", start, end, numbers,
                     "normalized_100", None, float(angle) if angle is not None else None,
                     obb_form="corners")]
    if syntax == "paligemma":
        numbers = [float(v) for v in re.findall(r"<loc(\d{4})>", match.group("locs"))]
        label_text = (match.group("label") or "").strip()
        return [_Raw("box", start, end, numbers, "normalized_1024_yxyx", label_text or None)]
    if syntax == "florence":
        numbers = [float(v) for v in re.findall(r"<loc_(\d+)>", match.group("locs"))]
        # the label is the text before the tokens, back to the previous tag or line
        offset = max(0, start - 200)
        before = match.string[offset:start]
        cut = max(before.rfind(">"), before.rfind("\n")) + 1
        label = before[cut:].strip() or None
        label_start = offset + cut + len(before[cut:]) - len(before[cut:].lstrip())
        if len(numbers) == 4:
            kind = "box"
        elif len(numbers) >= 8 and len(numbers) % 4 == 0 and all(
                numbers[k] <= numbers[k + 2] and numbers[k + 1] <= numbers[k + 3]
                for k in range(0, len(numbers), 4)):
            # several boxes of one phrase, as Florence-2's phrase-grounding post-processor
            # reads them (every 4 tokens a box, x1 <= x2, y1 <= y2); a polygon's vertices
            # taken 4 at a time are not all such boxes (an OCR quad, 8 tokens, is not)
            return [_Raw("box", label_start, end, numbers[k:k + 4], "florence2_loc_1000", label)
                    for k in range(0, len(numbers), 4)]
        elif len(numbers) >= 6 and len(numbers) % 2 == 0:
            kind = "polygon"
        elif len(numbers) == 2:
            kind = "point"
        else:
            return [_Raw("polygon", label_start, end, failure=(
                f"{count_of(len(numbers), 'Florence-2 loc token')}: neither a box, a point "
                f"nor a polygon"))]
        return [_Raw(kind, label_start, end, numbers, "florence2_loc_1000", label)]
    if syntax == "molmo":
        attrs = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', match.group("attrs")))
        label = attrs.get("alt") or label
        pairs = []
        if "x" in attrs and "y" in attrs:
            pairs.append((attrs["x"], attrs["y"]))
        k = 1
        while f"x{k}" in attrs and f"y{k}" in attrs:
            pairs.append((attrs[f"x{k}"], attrs[f"y{k}"]))
            k += 1
        if not pairs:
            return []
        out = []
        for x, y in pairs:
            numbers = _floats([x, y])
            if numbers is None:
                out.append(_Raw("point", start, end, failure=f"Molmo point x={x!r} y={y!r}"))
            else:
                out.append(_Raw("point", start, end, numbers, "normalized_100", label))
        return out
    return []


def _floats(values):
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        return None


def _wkt_spans(text: str):
    """(start, end) of each WKT geometry: the keyword through its balanced parentheses."""
    position = 0
    while True:
        match = _WKT_START.search(text, position)
        if match is None:
            return
        if match.group(2).upper() == "EMPTY":
            yield match.start(), match.end()
            position = match.end()
            continue
        depth, k = 0, match.start(2)
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        end = min(k + 1, len(text))
        yield match.start(), end
        position = end


def _wkt_raw(text: str, start: int, end: int) -> _Raw:
    span = text[start:end]
    try:
        geometry = shapely.from_wkt(span.upper().replace("NAN", "NaN").replace("INF", "inf"))
    except (shapely.errors.ShapelyError, ValueError) as exc:
        return _Raw("wkt", start, end, failure=f"WKT could not be read ({exc})")
    return _Raw("wkt", start, end, geometry=geometry)


# JSON -----------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()


def _json_raws(text: str):
    """Raw spans of every top-level JSON value ([...] or {...}) in the text; a value cut off
    at the end of the text is repaired. Returns (raws, note)."""
    raws, note, k = [], "", 0
    found_json, nothing = False, True
    repair_attempts = _REPAIR_ATTEMPTS
    brackets = _Brackets(text)
    while True:
        k = brackets.next(k)
        if k < 0:
            break
        if not _may_start_json(text, k):
            k += 1
            continue
        try:
            value, end = _decode_at(text, k)
            repaired = None
        except RecursionError:  # nested deeper than Python's stack: not an answer's geometry
            k = _after_nested(text, k)
            continue
        except ValueError:
            value, end, repaired = None, k, None
            if repair_attempts > 0:
                repair_attempts -= 1
                value, end, repaired = _repair_truncated(text, k)
            if value is None:
                k += 1
                continue
        found_json = True
        try:
            found = _json_value_raws(value, k, end, None)
        except RecursionError:
            found = [_Raw("box", k, end, failure="JSON nested too deeply to read")]
        if not found:
            nothing = nothing and _holds_nothing(value)
        if repaired:
            for raw in found:
                raw.repaired.append(repaired)
            if repaired == _TRUNCATED:
                note = "truncated JSON: the complete part was read"
        raws.extend(found)
        k = end
    if found_json and not raws and not note:
        note = "empty" if nothing else _NO_GEOMETRY_JSON
    return raws, note


def _holds_nothing(value) -> bool:
    """A JSON value that says "no geometry": null, an empty list or object, or lists and
    objects whose only containers hold nothing ({"bboxes": []}, {"count": 0, "objects": []}).
    A value with content but no geometry ({"label": "car"}, {"x1": 10, ...} in a form not read)
    is not an empty answer."""
    if value is None:
        return True
    if isinstance(value, list):
        return all(_holds_nothing(v) for v in value)
    if isinstance(value, dict):
        containers = [v for v in value.values() if v is None or isinstance(v, (list, dict))]
        return not value or (bool(containers) and all(_holds_nothing(v) for v in containers))
    return False


class _Brackets:
    """Positions of the next "[" or "{" at or after a position, each character's next
    position kept, so that a scan through the text costs one pass per character rather than
    one per step (text full of "{" with no "[" was quadratic)."""

    def __init__(self, text: str):
        self.text = text
        self.found = {"[": -2, "{": -2}  # -2: not looked up yet; -1: none left

    def next(self, start: int) -> int:
        positions = []
        for c in "[{":
            p = self.found[c]
            if p == -2 or (0 <= p < start):
                p = self.found[c] = self.text.find(c, start)
            if p >= 0:
                positions.append(p)
        return min(positions) if positions else -1


#: What may follow "[" or "{" (after blanks) in JSON or in the slips _lenient repairs.
_JSON_AFTER = {"[": set('[{"]-0123456789tfnNIFT\''), "{": set('"}\'')}
#: First window of text decoded at a bracket; doubled while the value runs past it.
_DECODE_WINDOW = 4096


def _may_start_json(text: str, k: int) -> bool:
    """Whether the bracket at k may open a JSON value (a cheap test that spares the decoder,
    whose errors cost a pass over the text before them)."""
    j, n = k + 1, len(text)
    while j < n and text[j] in " \t\r\n":
        j += 1
    return j < n and text[j] in _JSON_AFTER[text[k]]


def _decode_at(text: str, k: int):
    """(value, end) of the JSON value starting at k, decoded in a window of the text that
    doubles while the value runs past it: a decoding error costs the window, not the text
    before it (json's error counts the lines from the start of the document). Raises
    ValueError (not JSON there) or RecursionError (nested too deep)."""
    window = _DECODE_WINDOW
    while True:
        part = text[k:k + window]
        truncated = k + window < len(text)
        try:
            value, end = _DECODER.raw_decode(part)
            return value, k + end
        except json.JSONDecodeError as exc:
            cut_off = exc.pos >= len(part) - 1 or exc.msg.startswith("Unterminated string")
            if not (truncated and cut_off):
                raise
        window *= 2


def _after_nested(text: str, k: int) -> int:
    """The position after the brackets opened at k close (brackets in strings ignored), or
    the end of the text."""
    depth, in_string, escape = 0, False, False
    for j in range(k, len(text)):
        c = text[j]
        if in_string:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth <= 0:
                return j + 1
    return len(text)


#: Repairs tried per answer, and prefixes tried per repair: each costs a pass over the rest
#: of the text, so text full of unclosed brackets stays linear rather than quadratic.
_REPAIR_ATTEMPTS = 20
_REPAIR_CUTS = 20
_TRUNCATED = "truncated JSON repaired (the incomplete tail dropped)"
_NO_GEOMETRY_JSON = "JSON without a geometry in a form this tool reads"
_MALFORMED = "malformed JSON repaired (trailing commas, single quotes or Python literals)"


def _load_json(text: str):
    """(value, repair reason or None) of a JSON text, repairing a truncated end or common
    slips; (None, None) if neither works."""
    try:
        return json.loads(text), None
    except RecursionError:
        return None, None
    except ValueError:
        if not text:
            return None, None
        value, _, repaired = _repair_truncated(text, 0)
        return value, repaired


def _lenient(span: str):
    """A balanced JSON-like span with common slips fixed (trailing commas; Python's single
    quotes, None, True, False), decoded; None if it still is not JSON."""
    fixed = re.sub(r",\s*([\]}])", r"\1", span)
    if '"' not in fixed:
        fixed = fixed.replace("'", '"')
        fixed = re.sub(r"\bNone\b", "null", fixed)
        fixed = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", fixed))
    if fixed == span:
        return None
    try:
        return json.loads(fixed)
    except (ValueError, RecursionError):
        return None


def _repair_truncated(text: str, start: int):
    """A JSON value starting at ``start`` that the text cuts off: the longest prefix ending
    after a complete element, closed with the brackets still open; or a complete value with
    common slips (``_lenient``). (value, end, repair reason) or (None, start, None). Only a
    value that runs to the end of the text is treated as truncated."""
    if text[start] not in "[{":
        return None, start, None
    stack, in_string, escape, cuts = [], False, False, []
    for k in range(start, len(text)):
        c = text[k]
        if in_string:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c in "[{":
            stack.append("]" if c == "[" else "}")
        elif c in "]}":
            if not stack or c != stack[-1]:
                return None, start, None  # malformed, not truncated
            stack.pop()
            if not stack:  # complete yet undecodable: common slips?
                value = _lenient(text[start:k + 1])
                return (value, k + 1, _MALFORMED) if value is not None else (None, start, None)
            cuts.append((k + 1, "".join(reversed(stack))))
    if not stack or not cuts:
        return None, start, None
    for cut, closers in reversed(cuts[-_REPAIR_CUTS:]):
        try:
            return json.loads(text[start:cut] + closers), len(text), _TRUNCATED
        except (ValueError, RecursionError):
            continue
    return None, start, None


_BOX_KEYS = ("bbox_2d", "bbox", "bboxes", "box", "boxes", "bounding_box", "bounding_boxes")
_POINT_KEYS = ("point_2d", "points_2d", "points")
_POLYGON_KEYS = ("polygon", "polygons", "segmentation", "contour", "mask")
_OBB_KEYS = ("obb", "rbox", "rotated_box", "oriented_box", "rotated_bbox", "obb_2d", "poly")
_LABEL_KEYS = ("label", "class", "category", "name", "object")
_GEOJSON_TYPES = {
    "point", "multipoint", "linestring", "multilinestring", "polygon", "multipolygon",
    "geometrycollection",
}


def _json_value_raws(value, start, end, convention, kind_hint=None, label=None) -> list:
    """Raw spans of a decoded JSON value (all with the value's text span)."""
    if isinstance(value, dict):
        return _json_object_raws(value, start, end, convention, label)
    if isinstance(value, list):
        return _json_list_raws(value, start, end, convention, kind_hint, label)
    return []


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _json_object_raws(obj: dict, start, end, convention, label) -> list:
    keys = {str(k).lower(): v for k, v in obj.items()}
    label = next((str(keys[k]) for k in _LABEL_KEYS if isinstance(keys.get(k), str)), label)
    geo_type = str(keys.get("type", "")).lower()
    if geo_type == "featurecollection":
        out = []
        for feature in keys.get("features") or []:
            out.extend(_json_value_raws(feature, start, end, convention, label=label))
        return out
    if geo_type == "feature":
        geometry = keys.get("geometry")
        properties = keys.get("properties") if isinstance(keys.get("properties"), dict) else {}
        label = next((str(properties[k]) for k in _LABEL_KEYS if k in properties), label)
        if geometry is None:
            return [_Raw("geojson", start, end, failure="GeoJSON Feature without geometry")]
        return _json_value_raws(geometry, start, end, convention, label=label)
    if geo_type in _GEOJSON_TYPES and ("coordinates" in keys or "geometries" in keys):
        try:
            geometry = shapely.geometry.shape({"type": obj.get("type"), **{
                k: v for k, v in obj.items() if k != "type"}})
        except Exception as exc:  # noqa: BLE001 - shapely raises several types on bad input
            return [_Raw("geojson", start, end, failure=f"GeoJSON could not be read ({exc})")]
        return [_Raw("geojson", start, end, convention="geojson", geometry=geometry,
                     label=label)]
    if "box_2d" in keys:
        raws = _json_list_raws(keys["box_2d"], start, end, "normalized_1000_yxyx", "box", label)
        mask = keys.get("mask")
        if isinstance(mask, str) and mask.strip().startswith("data:image/png;base64,"):
            for raw in raws:
                if raw.failure is None and raw.kind == "box":
                    raw.kind, raw.mask = "mask", mask
        return raws
    if "point" in keys and isinstance(keys["point"], list):
        return _json_list_raws(keys["point"], start, end, "normalized_1000_yxyx", "point", label)
    for key in _OBB_KEYS:
        if key in keys:
            return _json_list_raws(keys[key], start, end, convention, "oriented_box", label)
    obb = _centre_size_angle(keys)
    if obb is not None:
        return [_Raw("oriented_box", start, end, obb[:4], convention, label, obb[4])]
    keyed = _keyed_geometry(keys, start, end, convention, label)
    if keyed is not None:
        return [keyed]
    out = []
    for key in _BOX_KEYS:
        if key in keys:
            out += _json_list_raws(keys[key], start, end, convention, "box", label)
    for key in _POINT_KEYS:
        if key in keys:
            out += _json_list_raws(keys[key], start, end, convention, "point", label)
    for key in _POLYGON_KEYS:
        if key in keys and not isinstance(keys[key], str):
            out += _json_list_raws(keys[key], start, end, convention, "polygon", label)
    if out or any(k in keys for k in _BOX_KEYS + _POINT_KEYS + _POLYGON_KEYS):
        return out
    for key, value in obj.items():  # a wrapper such as {"objects": [...]} or {"car": [...]}
        if isinstance(value, (dict, list)):
            sub_label = label if str(key).lower() in ("objects", "detections", "results",
                                                      "answer", "output") else str(key)
            out += _json_value_raws(value, start, end, convention, label=sub_label)
    return out


def _centre_size_angle(keys: dict):
    """[cx, cy, w, h, angle] from keys such as cx/cy/w/h/angle or center/size/angle."""
    angle = next((keys[k] for k in ("angle", "theta", "rotation") if k in keys), None)
    if not _is_number(angle):
        return None
    centre = keys.get("center", keys.get("centre"))
    size = keys.get("size")
    if isinstance(centre, list) and isinstance(size, list) and len(centre) == len(size) == 2:
        values = centre + size
    else:
        values = [keys.get(k) for k in ("cx", "cy")] + [
            keys.get("w", keys.get("width")), keys.get("h", keys.get("height"))]
    if all(_is_number(v) for v in values):
        return [float(v) for v in values] + [float(angle)]
    return None


#: Keys of a box given by its corners, x1 y1 x2 y2 in that order.
_CORNER_KEYS = (("x1", "y1", "x2", "y2"), ("xmin", "ymin", "xmax", "ymax"),
                ("x_min", "y_min", "x_max", "y_max"), ("left", "top", "right", "bottom"))


def _keyed_geometry(keys: dict, start, end, convention, label):
    """A box from corner keys ({"x1": …, "y1": …, "x2": …, "y2": …}, xmin/ymin/xmax/ymax,
    x_min/…, left/top/right/bottom) or a point from {"x": …, "y": …}; a failure for x, y,
    width, height, which does not say whether (x, y) is the centre or a corner; None when the
    keys are none of these. Numbers given as strings are read (status repaired)."""
    for names in _CORNER_KEYS:
        if all(n in keys for n in names):
            return _keyed_numbers([keys[n] for n in names], start, end, convention, "box",
                                  label)
    if "x" in keys and "y" in keys:
        if any(k in keys for k in ("w", "h", "width", "height")):
            return _Raw("box", start, end, failure=(
                "x, y, width, height: whether (x, y) is the centre or the top-left corner is "
                "not stated"))
        return _keyed_numbers([keys["x"], keys["y"]], start, end, convention, "point", label)
    return None


def _keyed_numbers(values, start, end, convention, kind, label) -> _Raw:
    numbers = _floats(values) if all(
        _is_number(v) or isinstance(v, str) for v in values) else None
    if numbers is None:
        return _Raw(kind, start, end, failure=f"{kind} keys that are not numbers: "
                                              f"{json.dumps(values)[:80]}")
    raw = _numbers_raw(numbers, start, end, convention, kind, label)
    if any(isinstance(v, str) for v in values):
        raw.repaired.append("numbers given as strings")
    return raw


def _json_list_raws(value, start, end, convention, kind_hint, label) -> list:
    if not isinstance(value, list):
        if isinstance(value, dict):
            return _json_object_raws(value, start, end, convention, label)
        return []
    if not value:
        return []
    some_strings = any(isinstance(v, str) for v in value)
    if some_strings and all(isinstance(v, str) or _is_number(v) for v in value) and (
            kind_hint is not None or len(value) >= 4):
        numbers = _floats(value)  # {"bbox": ["10", "20", "30", "40"]}, [10, "NaN", 50, 40]
        if numbers is not None:
            raw = _numbers_raw(numbers, start, end, convention, kind_hint, label)
            raw.repaired.append("numbers given as strings")
            return [raw]
    if all(_is_number(v) for v in value):
        return [_numbers_raw([float(v) for v in value], start, end, convention, kind_hint,
                             label)]
    if len(value) >= 2 and all(_is_pair(v) for v in value):
        # [x, y] pairs: points; two corners of a box; four corners of an oriented box; a ring
        if kind_hint == "point":
            return [_numbers_raw([float(c) for c in p], start, end, convention, "point", label)
                    for p in value]
        flat = [float(c) for pair in value for c in pair]
        if kind_hint == "oriented_box":
            kind = "oriented_box" if len(value) == 4 else "polygon"
        elif kind_hint == "polygon":
            kind = "polygon"
        else:
            kind = "box" if len(value) == 2 else "polygon"
        return [_numbers_raw(flat, start, end, convention, kind, label)]
    out = []
    for item in value:
        if isinstance(item, (list, dict)):
            out += _json_value_raws(item, start, end, convention, kind_hint, label)
        elif isinstance(item, str) and kind_hint is None:
            continue  # a list of words in prose
        else:
            out.append(_Raw(kind_hint or "box", start, end, failure=(
                f"a list mixing numbers and other values: {json.dumps(value)[:80]}")))
            break
    return out


def _is_pair(v) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_is_number(c) for c in v)


def _numbers_raw(numbers, start, end, convention, kind_hint, label) -> _Raw:
    """A flat list of numbers as a box (4), point (2), oriented box (5: cx, cy, w, h, angle;
    8: four corners) or polygon ring (2n, n >= 3)."""
    n = len(numbers)
    if kind_hint == "oriented_box":
        if n == 5:
            return _Raw("oriented_box", start, end, numbers[:4], convention, label, numbers[4])
        if n == 8:
            return _Raw("oriented_box", start, end, numbers, convention, label)
        return _Raw("oriented_box", start, end, failure=(
            f"an oriented box needs 5 numbers (cx, cy, w, h, angle) or 8 (4 corners), got {n}"))
    if kind_hint == "point" or (kind_hint is None and n == 2):
        if n == 2:
            return _Raw("point", start, end, numbers, convention, label)
        return _Raw("point", start, end, failure=f"a point needs 2 numbers, got {n}")
    if kind_hint == "polygon" and n < 6:
        return _Raw("polygon", start, end, failure=(
            f"a polygon needs at least 3 points (6 numbers), got {count_of(n, 'number')} "
            f"{_short(numbers)}"))
    if n == 4 and kind_hint in (None, "box"):
        return _Raw("box", start, end, numbers, convention, label)
    if n >= 6 and n % 2 == 0 and kind_hint in (None, "polygon", "box"):
        return _Raw("polygon", start, end, numbers, convention, label)
    return _Raw(kind_hint or "box", start, end, failure=(
        f"{count_of(n, 'number')} {_short(numbers)}: neither a box (4), a point (2) nor a "
        f"polygon ring "
        f"(2n, n >= 3)"))


def _short(numbers) -> str:
    text = json.dumps([v if math.isfinite(v) else str(v) for v in numbers])
    return text if len(text) <= 60 else text[:57] + "..."


# --- Conventions and geometries -----------------------------------------------------------


def _convert(raws, text, coordinate_format, size, obb_to_hbb, geotransform) -> list:
    auto_name, auto_warning, auto_reason = None, "", ""
    if coordinate_format == "auto":
        untyped = [r for r in raws if r.failure is None and r.convention is None]
        auto_name, auto_warning, auto_reason = _resolve_auto(untyped, size)
    records = []
    for index, raw in enumerate(raws):
        records.append(_record(index, raw, text, coordinate_format, size, obb_to_hbb,
                               geotransform, auto_name, auto_warning, auto_reason))
    return records


def _raw_values(raw: _Raw) -> np.ndarray:
    if raw.geometry is not None:
        return shapely.get_coordinates(raw.geometry).reshape(-1)
    return np.asarray(raw.numbers if raw.numbers is not None else [], dtype=float)


def _resolve_auto(untyped, size):
    """(convention name, warning, reason) for the spans whose syntax implies none, from the
    range of their values; xy order is assumed (y-first orders cannot be told from values)."""
    if not untyped:
        return "pixel_xyxy", "", ""
    xs, ys = [], []
    for raw in untyped:
        values = _raw_values(raw)
        values = values[np.isfinite(values)]
        if raw.kind == "oriented_box" and raw.obb_form == "centre" and raw.angle_deg is not None:
            values = values[:2]  # centre only: the size is not a coordinate
        xs.extend(values[0::2].tolist())
        ys.extend(values[1::2].tolist())
    values = np.asarray(xs + ys)
    if len(values) == 0:
        return "pixel_xyxy", "", ""
    low, high = float(values.min()), float(values.max())
    if low >= 0 and high <= 1:
        warning = ""
        if size is not None and np.all(values == np.round(values)):
            warning = "auto: values are all 0 or 1; read as fractions of the image"
        return "normalized_1", warning, "auto: every value in [0, 1]"
    if size is None:
        if low >= 0 and high <= 1000:
            return ("pixel_xyxy", "auto: read as pixels; every value is within 0–1000, so it "
                    "could be a 0–1000 normalised answer (no image size given to tell)",
                    "auto: values above 1")
        return "pixel_xyxy", "", "auto: values above 1000"
    width, height = size
    fits_pixel = low >= 0 and max(xs, default=0) <= width and max(ys, default=0) <= height
    fits_1000 = low >= 0 and high <= 1000
    if fits_pixel and fits_1000 and (width, height) != (1000.0, 1000.0):
        return ("pixel_xyxy", f"auto: read as pixels; the values also fit 0–1000 normalised "
                f"coordinates (image {width:g} × {height:g})", "auto: within the image")
    if fits_pixel:
        return "pixel_xyxy", "", "auto: within the image, above 1000"
    if fits_1000:
        return ("normalized_1000", "", f"auto: values exceed the image "
                f"({width:g} × {height:g}) but not 1000: read as 0–1000 normalised")
    return "pixel_xyxy", "", "auto: values exceed both the image and 0–1000"


def _record(index, raw, text, coordinate_format, size, obb_to_hbb, geotransform,
            auto_name, auto_warning, auto_reason) -> GeometryRecord:
    span = text[raw.start:raw.end]
    if raw.convention is not None:
        name, source, warning, why = raw.convention, SYNTAX, "", ""
        if coordinate_format not in ("auto", name) and raw.kind != "geojson":
            warning = f"the syntax implies {name}; COORDINATE_FORMAT {coordinate_format} " \
                      f"not applied"
    elif coordinate_format == "auto":
        name, source, warning, why = auto_name, AUTO, auto_warning, auto_reason
    else:
        name, source, warning, why = coordinate_format, GIVEN, "", ""

    def record(status, geometry=None, frame=None, reason=""):
        return GeometryRecord(index, raw.kind, geometry, frame, span, raw.start, raw.end, name,
                              source, status, reason, warning, raw.label)

    if raw.failure is not None:
        return record(UNPARSEABLE, reason=raw.failure)
    convention = CONVENTIONS[name]
    values = _raw_values(raw)
    extra = [raw.angle_deg] if raw.angle_deg is not None else []
    if not np.all(np.isfinite(np.concatenate([values, extra]))):
        return record(NON_FINITE, reason=f"non-finite coordinate in {_short(values.tolist())}")
    if raw.geometry is not None and raw.geometry.is_empty:
        return record(UNPARSEABLE, reason="an empty geometry")
    repairs = list(raw.repaired)
    try:
        geometry, raw_bounds_ok = _geometry(raw, convention, size, repairs)
    except ValueError as exc:
        return record(UNPARSEABLE, reason=str(exc))
    frame = convention.frame
    if frame == "fraction" and size is not None:
        frame = "pixel"
    if geometry.geom_type in ("Polygon", "MultiPolygon") and not geometry.is_valid:
        geometry = shapely.make_valid(geometry, method="structure", keep_collapsed=False)
        repairs.append("invalid polygon made valid")
    geometry, problem = _polygons_or_points(geometry)
    if problem:
        return record(UNPARSEABLE, reason=problem)
    if obb_to_hbb and raw.kind == "oriented_box":
        geometry = shapely.box(*geometry.bounds)
        repairs.append("oriented box replaced by its axis-aligned envelope (OBB → HBB)")
    # An oriented box may turn past the image edge: only its centre has to be inside.
    checked = geometry.centroid if raw.kind == "oriented_box" else geometry
    outside = _outside(checked, frame, size, raw_bounds_ok, convention)
    if name == "map" and geotransform is not None and size is not None:
        outside = outside or _outside_raster(checked, geotransform, size)
    if geotransform is not None and frame == "pixel":
        geometry, frame = _georeference(geometry, geotransform), "map"
    reason = "; ".join(filter(None, [why] + repairs + [outside]))
    if outside:
        return record(OUT_OF_BOUNDS, geometry, frame, reason)
    return record(REPAIRED if repairs else PARSED, geometry, frame, reason)


def _scale(convention: Convention, size):
    """(sx, sy, offset): coordinate = (raw + offset) · s, in pixels or fractions."""
    if convention.divisor is None:
        return 1.0, 1.0, 0.0
    width, height = size if size is not None and convention.frame == "fraction" else (1.0, 1.0)
    return width / convention.divisor, height / convention.divisor, convention.offset


def _xy(numbers, convention: Convention, size) -> np.ndarray:
    """Pairs of raw numbers as (x, y) coordinates, shape (n, 2)."""
    pairs = np.asarray(numbers, dtype=float).reshape(-1, 2)
    if convention.y_first:
        pairs = pairs[:, ::-1]
    sx, sy, offset = _scale(convention, size)
    return (pairs + offset) * np.array([sx, sy])


def _geometry(raw: _Raw, convention: Convention, size, repairs):
    """(shapely geometry in the convention's frame, raw values within the convention's
    range); raises ValueError for numbers that make no geometry."""
    raw_ok = True
    if convention.maximum is not None:
        values = _raw_values(raw)
        if raw.kind == "oriented_box" and raw.obb_form == "centre" and raw.angle_deg is not None:
            values = values[:2]  # centre only: the size is not a coordinate
        raw_ok = bool(np.all(values >= 0) and np.all(values <= convention.maximum))
    if raw.geometry is not None:
        if convention.frame == "map" and raw.convention == "geojson":
            return raw.geometry, True
        return shapely.transform(raw.geometry, lambda xy: _xy(xy, convention, size)), raw_ok
    xy = _xy(raw.numbers, convention, size)
    if raw.kind == "point":
        return shapely.Point(xy[0]), raw_ok
    if raw.kind == "oriented_box" and raw.angle_deg is not None:
        return _rotated_box(raw, convention, size), raw_ok
    if raw.kind in ("box", "mask"):
        (x1, y1), (x2, y2) = xy
        if x1 > x2 or y1 > y2:
            repairs.append("corners reordered")
        x1, x2, y1, y2 = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
        if x1 == x2 or y1 == y2:
            raise ValueError(f"a box of zero width or height: {_short(raw.numbers)}")
        if raw.kind == "mask":
            return _mask_polygons(raw.mask, (x1, y1, x2, y2)), raw_ok
        return shapely.box(x1, y1, x2, y2), raw_ok
    if len(xy) < 3:
        raise ValueError(f"a polygon needs at least 3 points, got {len(xy)}")
    return shapely.Polygon(xy), raw_ok


def _polygons_or_points(geometry):
    """(geometry, problem): polygons with area, or points; a collection keeps its polygonal
    parts (else its points); anything else (lines, zero-area polygons) is a problem."""
    if geometry.geom_type == "GeometryCollection":
        parts = shapely.get_parts(geometry)
        polygons = [p for p in parts if p.geom_type in ("Polygon", "MultiPolygon")]
        points = [p for p in parts if p.geom_type in ("Point", "MultiPoint")]
        if polygons:
            geometry = shapely.union_all(polygons)
        elif points:
            geometry = shapely.union_all(points)
    kind = geometry.geom_type
    if kind in ("Polygon", "MultiPolygon"):
        if geometry.is_empty or geometry.area <= 0:
            return geometry, "a polygon of zero area"
        return geometry, ""
    if kind in ("Point", "MultiPoint") and not geometry.is_empty:
        return geometry, ""
    return geometry, f"a {kind}: neither a polygon nor a point"


def _rotated_box(raw: _Raw, convention: Convention, size):
    """An oriented box: GeoChat's corners (x1, y1, x2, y2) plus an angle, or a JSON box's
    centre and size (cx, cy, w, h) plus an angle, rotated by the angle in degrees about its
    centre: x' = cx + dx·cos θ − dy·sin θ, y' = cy + dx·sin θ + dy·cos θ in the image's
    (x right, y down) coordinates, so a positive angle turns clockwise as the image is seen.
    Without the image size the rotation is done in fractions of the image (exact only for a
    square image)."""
    pairs = np.asarray(raw.numbers, dtype=float).reshape(2, 2)
    if convention.y_first:
        pairs = pairs[:, ::-1]
    sx, sy, offset = _scale(convention, size)
    scale = np.array([sx, sy])
    if raw.obb_form == "corners":
        (x1, y1), (x2, y2) = (pairs + offset) * scale
        (cx, cy), (w, h) = ((x1 + x2) / 2, (y1 + y2) / 2), (abs(x2 - x1), abs(y2 - y1))
    else:
        (cx, cy), (w, h) = (pairs[0] + offset) * scale, np.abs(pairs[1] * scale)
    if w <= 0 or h <= 0:
        raise ValueError("an oriented box of zero width or height")
    theta = math.radians(raw.angle_deg)
    corners = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    rotation = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    return shapely.Polygon(corners @ rotation.T + np.array([cx, cy]))


def _outside(geometry, frame, size, raw_ok, convention) -> str:
    """Why the geometry lies outside the image (empty string when it does not)."""
    if not raw_ok:
        return (f"outside the {convention.name} range [0, {convention.maximum:g}]: a likely "
                f"hallucination")
    if frame == "map" or geometry.is_empty:
        return ""
    x1, y1, x2, y2 = geometry.bounds
    width, height = size if frame == "pixel" and size is not None else (
        (1.0, 1.0) if frame == "fraction" else (math.inf, math.inf))
    tolerance = 1e-9 * max(width if math.isfinite(width) else 1.0, 1.0)
    if x1 < -tolerance or y1 < -tolerance or x2 > width + tolerance or y2 > height + tolerance:
        if math.isfinite(width):
            return f"outside the image [0, {width:g}] × [0, {height:g}]: a likely hallucination"
        return "negative pixel coordinates: a likely hallucination"
    return ""


def _outside_raster(geometry, geotransform, size) -> str:
    """Why a map geometry lies outside the raster's footprint (empty string when inside)."""
    footprint = _georeference(shapely.box(0, 0, *size), geotransform)
    x1, y1, x2, y2 = footprint.bounds
    tolerance = 1e-9 * max(abs(x1), abs(y1), abs(x2), abs(y2), 1.0)
    if footprint.buffer(tolerance).covers(geometry):
        return ""
    return "outside the raster's footprint: a likely hallucination"


def _georeference(geometry, geotransform):
    g0, g1, g2, g3, g4, g5 = geotransform

    def to_map(xy):
        x, y = xy[:, 0], xy[:, 1]
        return np.column_stack([g0 + x * g1 + y * g2, g3 + x * g4 + y * g5])

    return shapely.transform(geometry, to_map)


def _mask_polygons(data_url: str, box):
    """Gemini 2.5's mask: a PNG of the box's area, probabilities 0–255, resized to the box;
    pixels > 127 are the object. Vectorised to polygons in the box's coordinates."""
    payload = data_url.split(",", 1)[1]
    try:
        png = base64.b64decode(payload, validate=False)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"the mask is not base64 ({exc})") from None
    array = decode_png(png)
    if array.ndim == 3:
        array = array[..., 0]
    inside = array > 127
    rows, cols = inside.shape
    if not inside.any():
        raise ValueError("the mask is empty (no pixel above 127)")
    x1, y1, x2, y2 = box
    geometry = mask_to_polygons(inside)
    sx, sy = (x2 - x1) / cols, (y2 - y1) / rows
    return shapely.transform(geometry, lambda xy: xy * np.array([sx, sy]) + np.array([x1, y1]))


def decode_png(png: bytes) -> np.ndarray:
    """A PNG image as a numpy array (rows, cols) or (rows, cols, bands), through GDAL's PNG
    driver in memory. Raises ValueError if it is not a PNG GDAL can read."""
    from osgeo import gdal

    path = f"/vsimem/ioueval_mask_{uuid.uuid4().hex}.png"
    gdal.FileFromMemBuffer(path, png)
    gdal.PushErrorHandler("CPLQuietErrorHandler")  # a bad PNG is data: no GDAL noise
    try:
        dataset = gdal.OpenEx(path, gdal.OF_RASTER, allowed_drivers=["PNG"])
        array = dataset.ReadAsArray() if dataset is not None else None
        dataset = None
    except RuntimeError as exc:  # GDAL with exceptions enabled
        raise ValueError(f"the mask is not a readable PNG ({exc})") from None
    finally:
        gdal.PopErrorHandler()
        gdal.Unlink(path)
    if array is None:
        raise ValueError("the mask is not a readable PNG")
    return np.moveaxis(array, 0, -1) if array.ndim == 3 else array


def mask_to_polygons(inside: np.ndarray):
    """The union of the True cells of a boolean array (rows, cols) as polygons, in cell units:
    cell (row r, column c) is the square [c, c + 1] × [r, r + 1]. Runs of True cells in each
    row become boxes, merged by one union (cost grows with the number of runs)."""
    boxes = []
    for r in range(inside.shape[0]):
        row = np.concatenate([[False], inside[r], [False]]).astype(np.int8)
        changes = np.flatnonzero(np.diff(row))
        for c0, c1 in zip(changes[0::2], changes[1::2]):
            boxes.append(shapely.box(c0, r, c1, r + 1))
    return shapely.union_all(np.array(boxes, dtype=object))


__all__ = [
    "COORDINATE_FORMATS", "CONVENTIONS", "Convention", "GeometryRecord", "ParsedAnswer",
    "parse_answer", "decode_png", "mask_to_polygons", "image_size_problem",
]
