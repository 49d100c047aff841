"""Geometries from the text a language or vision-language model wrote: boxes, oriented boxes,
polygons, masks and points, each with the coordinate convention used and why, and a status.

An answer is read in three steps: ``extract`` finds every geometry-like span (the model
syntaxes of ``readers.REGISTRY``, WKT, JSON) as raw numbers with the convention its syntax
implies, if any; ``resolve_auto`` decides one convention for the numbers whose syntax implies
none; ``build_record`` turns numbers into shapely geometries in a coordinate frame (pixel,
fraction or map: ``conventions``).

Nothing is guessed silently: every geometry carries the convention used, where it came from
(``given``, ``syntax`` or ``auto``) and a warning when the reading was ambiguous; text that
cannot be read is an ``unparseable`` record with its reason, never a zero box; values outside
the image or grid are ``out_of_bounds`` (kept as written, never clipped).

Cost: linear in the text (``extraction``, ``readers``); each record keeps a bounded excerpt
of its span (``SPAN_EXCERPT`` characters) with the span's offsets into the answer.

Sources: the Galtea spatial_match documentation (JSON boxes); Ferrod et al. 2026, GroundSet,
arXiv:2603.14609 ("geometric recovery", OBB → HBB); each model syntax's own source
(``readers.REGISTRY``, and the README's table of model answer formats).
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from dataclasses import dataclass

import numpy as np
import shapely

from . import extraction as ex
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
    rotated_corners,
    scale,
    to_xy,
    unpad_square,
)
from .json_forms import value_raws
from .readers import read_syntaxes

#: Characters of a record's span kept in the record (the offsets give the whole span).
SPAN_EXCERPT = 200


@dataclass
class GeometryRecord:
    """One geometry recovered from an answer, or one span that yielded none.

    Attributes:
        index: position within the answer (0, 1, ... in text order), over all records.
        kind: "box", "oriented_box", "polygon", "mask", "point", "wkt", "geojson".
        geometry: shapely geometry in ``frame`` (None for non_finite / unparseable records).
        frame: "pixel", "fraction" or "map"; None without geometry.
        span: the text the record came from, at most ``SPAN_EXCERPT`` characters (longer
            spans end with "…"), or "(the span of record k)" when an earlier record of the
            answer came from the same span; ``start``, ``end``: the span's offsets in the
            answer.
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


def parse_answer(
    text,
    coordinate_format: str = "auto",
    image_width: float | None = None,
    image_height: float | None = None,
    *,
    obb_to_hbb: bool = False,
    geotransform=None,
    padded_square: bool = False,
) -> ParsedAnswer:
    """Every geometry in one model answer.

    Args:
        text: the answer (str; a dict or list, as QGIS reads a JSON field, is read as its
            JSON text; None, blank text or another type is an unparseable answer).
        coordinate_format: one of ``COORDINATE_FORMATS``. ``auto``: each syntax's own
            convention, and the value range for plain numbers; a bare list of numbers in
            prose is then no geometry unless it stands alone (its own line, a code fence,
            between tags). Another value applies to plain numbers and replaces the
            convention a syntax implies, except where the model's vocabulary fixes the grid
            (Florence-2 and PaliGemma loc tokens, bare bin tokens: a warning says so); bare
            lists in prose are then read too (Gemini's box_2d / point keys keep their y-first
            0–1000 grid as well).
        image_width, image_height: image size in pixels (> 0), or None when unknown:
            normalised coordinates then stay fractions of the image (frame "fraction").
        obb_to_hbb: replace oriented boxes by their axis-aligned envelopes (GroundSet's
            geometric recovery).
        geotransform: GDAL geotransform (6 numbers) of the georeferenced image: pixel
            geometries become map geometries, X = g0 + x·g1 + y·g2, Y = g3 + x·g4 + y·g5.
        padded_square: the model saw the image padded to a square (its long side, the short
            side centred: LLaVA-1.5's and Shikra's ``expand2square``), so its normalised
            numbers are fractions of that square; the padding is undone, which needs the
            image size (without it such geometries are unparseable). Shikra's own
            ``[x1,y1,x2,y2;…]`` syntax always is.

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
    size = image_size(image_width, image_height)
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
        # blank is no answer, as NULL is: a blank expected cell must not become "nothing
        # expected"
        return ParsedAnswer([], UNPARSEABLE, "no answer text (blank)")
    options = _Options(coordinate_format, size, obb_to_hbb, geotransform, padded_square)
    try:
        raws, note = extract_answer(text, prose_numbers=coordinate_format != "auto")
        records = convert(raws, text, options)
    except Exception as exc:  # noqa: BLE001 - data never aborts a run; the reason is kept
        return ParsedAnswer([], UNPARSEABLE, f"the answer could not be read ({exc})")
    return _answer(records, text, note)


@dataclass(frozen=True)
class _Options:
    coordinate_format: str
    size: tuple | None
    obb_to_hbb: bool
    geotransform: tuple | None
    padded_square: bool


def image_size(width, height):
    """(width, height) as floats, or None when unknown (None, not numbers, not finite).

    Raises ValueError for a size that is not positive."""
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
        return ParsedAnswer(records, PARSED, note if note != ex.PROSE_NUMBERS else "")
    failures = [r for r in records if r.status not in USABLE]
    if failures:
        return ParsedAnswer(records, failures[0].status, failures[0].reason)
    if note == "empty" or ex.NONE_FOUND.search(ex.outside_think(text)):
        return ParsedAnswer(records, EMPTY, "the answer holds no geometry")
    if note in (ex.NO_GEOMETRY_JSON, ex.PROSE_NUMBERS):
        return ParsedAnswer(records, UNPARSEABLE, note)
    return ParsedAnswer(records, UNPARSEABLE, "no geometry found in the text")


# --- Extraction -------------------------------------------------------------------------------

def extract_answer(text: str, prose_numbers: bool):
    """Raw spans of the final answer; those inside <think> blocks only when it has none."""
    outside = ex.outside_think(text)
    raws, note = extract(outside, prose_numbers)
    if raws or outside == text:
        return raws, note
    if note == "empty" or ex.NONE_FOUND.search(outside):
        return raws, "empty"  # the final answer says there is nothing: the reasoning is not it
    raws, inside_note = extract(ex.inside_think(text), prose_numbers)
    if raws:
        return raws, "geometries read from the <think> block (the answer after it has none)"
    return raws, note or inside_note


def extract(text: str, prose_numbers: bool):
    """(raw spans in text order, note): the registered syntaxes first, then WKT, then JSON,
    each on the text the earlier ones did not claim."""
    claims = ex.Claims()
    raws = read_syntaxes(text, claims)
    spans = []
    for start, end in ex.wkt_spans(text):
        if claims.free(start, end):
            spans.append((start, end))
            claims.add(start, end)
    raws.extend(ex.wkt_raws(text, spans))
    json_raws, note = _json_raws(ex.blank(text, claims.spans()), prose_numbers)
    raws.extend(json_raws)
    raws.sort(key=lambda r: r.start)
    return raws, note


def _json_raws(text: str, prose_numbers: bool):
    """Raw spans of every top-level JSON value in the text. Returns (raws, note)."""
    values = list(ex.json_values(text))
    raws, note, found_json, nothing, skipped = [], "", False, True, False
    for k, (value, start, end, repaired) in enumerate(values):
        if value is RecursionError:  # counted, not skipped silently
            raws.append(ex.Raw("box", start, end, syntax="json", failure=(
                "JSON nested too deeply to read (past Python's recursion limit)")))
            found_json = True
            continue
        if not prose_numbers and ex.is_bare_numbers(value):
            before = values[k - 1][2] if k > 0 else 0
            after = values[k + 1][1] if k + 1 < len(values) else len(text)
            if not ex.standalone(text, start, end, before, after) or (
                    len(value) == 1 and ex.is_number(value[0])):
                # "the image is [1920, 1080]": prose, not a geometry; nor is one number alone
                # ("[1]" a footnote, "Confidence:\n[0.95]"), which no syntax makes a geometry
                skipped = True
                continue
        found_json = True
        found = value_raws(value, start, end)
        if not found:
            nothing = nothing and ex.holds_nothing(value)
        if repaired:
            for raw in found:
                raw.repaired.append(repaired)
            if repaired == ex.TRUNCATED:
                note = "truncated JSON: the complete part was read"
        raws.extend(found)
    if found_json and not raws and not note:
        note = "empty" if nothing else ex.NO_GEOMETRY_JSON
    if skipped and not raws and not note:
        note = ex.PROSE_NUMBERS
    return raws, note


# --- Conventions ------------------------------------------------------------------------------

def convert(raws, text, options: _Options) -> list:
    """GeometryRecords of the raw spans, in order: plain boxes, points and oriented boxes in
    batches (``_batch_records``: one shapely call per batch, so that an answer of 50 000 boxes
    costs milliseconds of GEOS, not a second of per-call overhead), the rest one by one."""
    auto = (None, "", "")
    if options.coordinate_format == "auto":
        untyped = [r for r in raws if r.failure is None and r.convention is None]
        auto = resolve_auto(untyped, options.size)
    records, batches, cache = [None] * len(raws), {}, {}
    for index, raw in enumerate(raws):
        key = (raw.convention, raw.syntax, raw.fixed, raw.note, raw.kind)
        if key not in cache:
            cache[key] = _convention_of(raw, options, auto)
        convention = cache[key]
        if _batchable(raw, options, convention[0]):
            batches.setdefault((raw.kind, raw.obb_form, convention), []).append(index)
        elif _batchable_geometry(raw, options, convention[0]):
            batches.setdefault(("geometry", "", convention), []).append(index)
        else:
            records[index] = build_record(index, raw, text, options, auto)
    for (kind, form, convention), indices in batches.items():
        if kind == "geometry":
            _batch_geometries(convention, indices, raws, text, options, auto, records)
        else:
            _batch_records(kind, form, convention, indices, raws, text, options, records)
    return _span_once(records)


def _span_once(records) -> list:
    """Records sharing one span (the boxes of one JSON list) keep its excerpt on the first
    only; the others name that record, so the output stays a small multiple of the text."""
    first = {}
    for record in records:
        key = (record.start, record.end)
        if key in first:
            record.span = f"(the span of record {first[key]})"
        else:
            first[key] = record.index
    return records


def _batchable_geometry(raw, options, name) -> bool:
    return (raw.failure is None and raw.geometry is not None and not options.padded_square
            and not (name == "map" and options.geotransform is not None))


def _batch_geometries(convention_of, indices, raws, text, options, auto, records):
    """The records of WKT and GeoJSON geometries of one convention: finiteness, emptiness,
    range, transform, validity and bounds each in one shapely call; an invalid polygon or a
    collection is built one by one (``build_record``)."""
    name, source, warning, why = convention_of
    convention, size = CONVENTIONS[name], options.size
    geometries = np.array([raws[i].geometry for i in indices], dtype=object)
    coordinates, owner = shapely.get_coordinates(geometries, return_index=True)
    n = len(indices)
    bad = np.zeros(n, dtype=bool)
    np.logical_or.at(bad, owner, ~np.isfinite(coordinates).all(axis=1))
    out_of_range = np.zeros(n, dtype=bool)
    if convention.maximum is not None and not (convention.frame == "map"
                                               and raw_convention_is_geojson(raws, indices)):
        np.logical_or.at(out_of_range, owner,
                         ((coordinates < 0) | (coordinates > convention.maximum)).any(axis=1))
    types = shapely.get_type_id(geometries)
    simple = np.isin(types, (0, 3, 4, 6)) & ~shapely.is_empty(geometries) & ~bad
    if convention.frame == "map" and name == "geojson":
        built = geometries
    else:
        built = geometries.copy()
        built[simple] = shapely.transform(geometries[simple],
                                          lambda xy: to_xy(xy, convention, size))
    polygonal = np.isin(types, (3, 6))
    simple &= ~polygonal | (shapely.is_valid(built) & (shapely.area(built) > 0))
    frame = "pixel" if convention.frame == "fraction" and size is not None else convention.frame
    bounds = shapely.bounds(built)
    chosen = np.flatnonzero(simple)
    outside = [""] * n
    if len(chosen):
        found = _batch_outside(bounds[chosen, :2], bounds[chosen, 2:], frame, size,
                               ~out_of_range[chosen], convention)
        for k, message in zip(chosen.tolist(), found):
            outside[k] = message
    if options.geotransform is not None and frame == "pixel" and len(chosen):
        built[chosen] = _georeference(built[chosen], options.geotransform)
        frame_out = "map"
    else:
        frame_out = frame
    for k, i in enumerate(indices):
        raw = raws[i]
        if not simple[k]:
            records[i] = build_record(i, raw, text, options, (name, warning, why))
            continue
        repairs = list(raw.repaired)
        reason = "; ".join(filter(None, [why] + repairs + [outside[k]]))
        status = OUT_OF_BOUNDS if outside[k] else (REPAIRED if repairs else PARSED)
        records[i] = GeometryRecord(i, raw.kind, built[k], frame_out,
                                    _excerpt(text, raw.start, raw.end), raw.start, raw.end,
                                    name, source, status, reason, warning, raw.label)


def raw_convention_is_geojson(raws, indices) -> bool:
    return all(raws[i].convention == "geojson" for i in indices)


_BATCH_SIZES = {"box": 4, "point": 2, "oriented_box": 4}


def _batchable(raw, options, name) -> bool:
    return (raw.failure is None and raw.geometry is None and raw.mask is None
            and raw.kind in _BATCH_SIZES and not raw.padded_square
            and not options.padded_square
            and (raw.kind != "oriented_box" or raw.angle_deg is not None)
            and len(raw.numbers) == _BATCH_SIZES[raw.kind]
            and not (name == "map" and options.geotransform is not None))


def _batch_records(kind, form, convention_of, indices, raws, text, options, records):
    """The records of raw spans of one kind and convention, geometries made in one call each;
    the same statuses and reasons as ``build_record``."""
    name, source, warning, why = convention_of
    convention, size = CONVENTIONS[name], options.size
    numbers = np.array([raws[i].numbers for i in indices], dtype=float)
    angles = np.array([raws[i].angle_deg if raws[i].angle_deg is not None else 0.0
                       for i in indices]) if kind == "oriented_box" else np.zeros(len(indices))
    finite = np.isfinite(numbers).all(axis=1) & np.isfinite(angles)
    for k in np.flatnonzero(~finite).tolist():  # non_finite: one by one
        i = indices[k]
        records[i] = build_record(i, raws[i], text, options, (name, warning, why))
    keep = np.flatnonzero(finite)
    indices = [indices[k] for k in keep.tolist()]
    numbers, angles = numbers[keep], angles[keep]
    if not indices:
        return
    frame = "pixel" if convention.frame == "fraction" and size is not None else convention.frame
    checked = numbers[:, :2] if kind == "oriented_box" and form == "centre" else numbers
    if convention.maximum is not None:
        raw_ok = ((checked >= 0) & (checked <= convention.maximum)).all(axis=1)
    else:
        raw_ok = np.ones(len(indices), dtype=bool)
    notes = [[] for _ in indices]
    problems = [""] * len(indices)
    if kind == "point":
        xy = to_xy(numbers, convention, size)
        geometries = shapely.points(xy)
        low, high = xy, xy
    elif kind == "box":
        xy = to_xy(numbers.reshape(-1), convention, size).reshape(-1, 4)
        reordered = (xy[:, 0] > xy[:, 2]) | (xy[:, 1] > xy[:, 3])
        low = np.minimum(xy[:, :2], xy[:, 2:])
        high = np.maximum(xy[:, :2], xy[:, 2:])
        for k in np.flatnonzero(reordered).tolist():
            notes[k].append("corners reordered")
        for k in np.flatnonzero((low == high).any(axis=1)).tolist():
            problems[k] = f"a box of zero width or height: {ex.short(raws[indices[k]].numbers)}"
        geometries = shapely.box(low[:, 0], low[:, 1], high[:, 0], high[:, 1])
    else:
        geometries, low, problems = _batch_rotated(form, numbers, angles, convention, size,
                                                   [raws[i].turn for i in indices], notes)
        high = low  # the centre: only it has to be inside the image
        if options.obb_to_hbb:
            bounds = shapely.bounds(geometries)
            geometries = shapely.box(bounds[:, 0], bounds[:, 1], bounds[:, 2], bounds[:, 3])
            for k in range(len(indices)):
                notes[k].append("oriented box replaced by its axis-aligned envelope "
                                "(OBB → HBB)")
    outside = _batch_outside(low, high, frame, size, raw_ok, convention)
    if options.geotransform is not None and frame == "pixel":
        g0, g1, g2, g3, g4, g5 = options.geotransform
        geometries = shapely.transform(geometries, lambda c: np.column_stack(
            [g0 + c[:, 0] * g1 + c[:, 1] * g2, g3 + c[:, 0] * g4 + c[:, 1] * g5]))
        frame = "map"
    for k, i in enumerate(indices):
        raw = raws[i]
        span = _excerpt(text, raw.start, raw.end)
        if problems[k]:
            records[i] = GeometryRecord(i, raw.kind, None, None, span, raw.start, raw.end,
                                        name, source, UNPARSEABLE, problems[k], warning,
                                        raw.label)
            continue
        repairs = list(raw.repaired) + notes[k]
        reason = "; ".join(filter(None, [why] + repairs + [outside[k]]))
        status = OUT_OF_BOUNDS if outside[k] else (REPAIRED if repairs else PARSED)
        records[i] = GeometryRecord(i, raw.kind, geometries[k], frame, span, raw.start, raw.end,
                                    name, source, status, reason, warning, raw.label)


def _batch_rotated(form, numbers, angles, convention, size, turns, notes):
    """(polygons, centres (n, 2), problems) of oriented boxes given by corners or by centre
    and size, as ``_rotated_box`` makes them one at a time."""
    if form == "corners":
        xy = to_xy(numbers.reshape(-1), convention, size).reshape(-1, 4)
        centre = (xy[:, :2] + xy[:, 2:]) / 2
        extent = np.abs(xy[:, 2:] - xy[:, :2])
    else:
        centre = to_xy(numbers[:, :2].reshape(-1), convention, size)
        sizes = numbers[:, 2:][:, ::-1] if convention.y_first else numbers[:, 2:]
        sx, sy, _ = scale(convention, size)
        extent = sizes * np.array([sx, sy])
        for k in np.flatnonzero((extent < 0).any(axis=1)).tolist():
            notes[k].append("negative width or height made positive")
        extent = np.abs(extent)
    problems = ["" if (w > 0 and h > 0) else "an oriented box of zero width or height"
                for w, h in extent.tolist()]
    sign = np.array([1.0 if t == "clockwise" else -1.0 for t in turns])
    theta = np.radians(angles) * sign
    c, s = np.cos(theta)[:, None], np.sin(theta)[:, None]
    half = extent / 2
    dx = np.array([-1.0, 1.0, 1.0, -1.0])[None, :] * half[:, :1]
    dy = np.array([-1.0, -1.0, 1.0, 1.0])[None, :] * half[:, 1:]
    x = centre[:, :1] + dx * c - dy * s
    y = centre[:, 1:] + dx * s + dy * c
    rings = np.stack([x, y], axis=-1)  # (n, 4, 2)
    rings = np.concatenate([rings, rings[:, :1]], axis=1)
    return shapely.polygons(rings), centre, problems


def _batch_outside(low, high, frame, size, raw_ok, convention) -> list:
    """``_outside`` for n geometries given by their bounds (low (n, 2), high (n, 2))."""
    out = [""] * len(low)
    if convention.maximum is not None:
        message = (f"outside the {convention.name} range [0, {convention.maximum:g}]: a likely "
                   f"hallucination")
        for k in np.flatnonzero(~raw_ok).tolist():
            out[k] = message
    if frame == "map":
        return out
    if frame == "pixel" and size is not None:
        width, height = size
        message = f"outside the image [0, {width:g}] × [0, {height:g}]: a likely hallucination"
    elif frame == "fraction":
        width, height = 1.0, 1.0
        message = "outside the image [0, 1] × [0, 1]: a likely hallucination"
    else:
        width, height = math.inf, math.inf
        message = "negative pixel coordinates: a likely hallucination"
    tolerance = 1e-9 * max(width if math.isfinite(width) else 1.0, 1.0)
    beyond = ((low < -tolerance).any(axis=1) | (high[:, 0] > width + tolerance)
              | (high[:, 1] > height + tolerance))
    for k in np.flatnonzero(beyond & raw_ok).tolist():
        out[k] = message
    return out


def _raw_values(raw) -> np.ndarray:
    if raw.geometry is not None:
        return shapely.get_coordinates(raw.geometry).reshape(-1)
    return np.asarray(raw.numbers if raw.numbers is not None else [], dtype=float)


def _coordinate_values(raw) -> np.ndarray:
    values = _raw_values(raw)
    if raw.kind == "oriented_box" and raw.obb_form == "centre" and raw.angle_deg is not None:
        values = values[:2]  # centre only: the size is not a coordinate
    return values


def resolve_auto(untyped, size):
    """(convention name, warning, reason) for the spans whose syntax implies none, from the
    range of their values; xy order is assumed (y-first orders cannot be told from values)."""
    if not untyped:
        return "pixel_xyxy", "", ""
    xs, ys = [], []
    for raw in untyped:
        values = _coordinate_values(raw)
        values = values[np.isfinite(values)]
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
    if fits_pixel and fits_1000:  # a 1000 × 1000 image: both readings give the same numbers
        return "pixel_xyxy", "", "auto: within the image (1000 × 1000: pixels and 0–1000 agree)"
    if fits_pixel:
        return "pixel_xyxy", "", "auto: within the image, above 1000"
    if fits_1000:
        return ("normalized_1000", "", f"auto: values exceed the image "
                f"({width:g} × {height:g}) but not 1000: read as 0–1000 normalised")
    return "pixel_xyxy", "", "auto: values exceed both the image and 0–1000"


def _convention_of(raw, options: _Options, auto):
    """(name, source, warning, why) of a raw span's convention."""
    given = options.coordinate_format
    if raw.convention is not None:
        if given == "auto" or given == raw.convention or raw.kind == "geojson":
            return raw.convention, SYNTAX, raw.note, ""
        if raw.fixed:
            return raw.convention, SYNTAX, "; ".join(filter(None, [raw.note, (
                f"the {raw.syntax} syntax fixes {raw.convention}; COORDINATE_FORMAT {given} "
                f"not applied")])), ""
        return given, GIVEN, "", (f"COORDINATE_FORMAT {given} replaces the {raw.convention} "
                                  f"of the {raw.syntax} syntax")
    if given == "auto":
        name, warning, why = auto
        return name, AUTO, "; ".join(filter(None, [raw.note, warning])), why
    return given, GIVEN, raw.note, ""


def _excerpt(text, start, end) -> str:
    if end - start <= SPAN_EXCERPT:
        return text[start:end]
    return text[start:start + SPAN_EXCERPT - 1] + "…"


def build_record(index, raw, text, options: _Options, auto) -> GeometryRecord:
    """The GeometryRecord of one raw span: its geometry in its frame, status and reasons."""
    name, source, warning, why = _convention_of(raw, options, auto)
    span = _excerpt(text, raw.start, raw.end)

    def record(status, geometry=None, frame=None, reason=""):
        return GeometryRecord(index, raw.kind, geometry, frame, span, raw.start, raw.end, name,
                              source, status, reason, warning, raw.label)

    if raw.failure is not None:
        return record(UNPARSEABLE, reason=raw.failure)
    convention = CONVENTIONS[name]
    values = _raw_values(raw)
    extra = [raw.angle_deg] if raw.angle_deg is not None else []
    if not np.all(np.isfinite(np.concatenate([values, extra]))):
        return record(NON_FINITE, reason=f"non-finite coordinate in {ex.short(values.tolist())}")
    if raw.geometry is not None and raw.geometry.is_empty:
        return record(UNPARSEABLE, reason="an empty geometry")
    padded = (raw.padded_square and source == SYNTAX) or (
        options.padded_square and convention.frame == "fraction")
    if padded and options.size is None:
        return record(UNPARSEABLE, reason=(
            "fractions of the image padded to a square: the image width and height are "
            "needed to undo the padding"))
    repairs = list(raw.repaired)
    try:
        geometry, kind, raw_ok = _geometry(raw, convention, options.size, repairs, padded)
    except ValueError as exc:
        return record(UNPARSEABLE, reason=str(exc))
    frame = convention.frame
    if frame == "fraction" and (options.size is not None):
        frame = "pixel"
    if padded:
        repairs.append("padding to a square undone")
    if kind in ("polygon", "other"):
        if geometry.geom_type in ("Polygon", "MultiPolygon") and not geometry.is_valid:
            geometry = shapely.make_valid(geometry, method="structure", keep_collapsed=False)
            repairs.append("invalid polygon made valid")
        geometry, problem = _polygons_or_points(geometry)
        if problem:
            return record(UNPARSEABLE, reason=problem)
    if options.obb_to_hbb and raw.kind == "oriented_box":
        geometry = shapely.box(*geometry.bounds)
        repairs.append("oriented box replaced by its axis-aligned envelope (OBB → HBB)")
    # An oriented box may turn past the image edge: only its centre has to be inside.
    checked = geometry.centroid if raw.kind == "oriented_box" else geometry
    outside = _outside(checked, frame, options.size, raw_ok, convention)
    geotransform = options.geotransform
    if name == "map" and geotransform is not None and options.size is not None:
        outside = outside or _outside_raster(checked, geotransform, options.size)
    if geotransform is not None and frame == "pixel":
        geometry, frame = _georeference(geometry, geotransform), "map"
    reason = "; ".join(filter(None, [why] + repairs + [outside]))
    if outside:
        return record(OUT_OF_BOUNDS, geometry, frame, reason)
    return record(REPAIRED if repairs else PARSED, geometry, frame, reason)


# --- Geometries -------------------------------------------------------------------------------

def _xy(numbers, convention, size, padded):
    xy = to_xy(numbers, convention, None if padded else size)
    return unpad_square(xy, size) if padded else xy


def _geometry(raw, convention, size, repairs, padded):
    """(shapely geometry in the convention's frame, kind: "box", "point", "polygon" or
    "other", raw values within the convention's range); raises ValueError for numbers that
    make no geometry."""
    raw_ok = True
    if convention.maximum is not None:
        values = _coordinate_values(raw)
        raw_ok = bool(np.all(values >= 0) and np.all(values <= convention.maximum))
    if raw.geometry is not None:
        if convention.frame == "map" and raw.convention == "geojson":
            return raw.geometry, "other", True
        return shapely.transform(raw.geometry, lambda xy: _xy(xy, convention, size, padded)), \
            "other", raw_ok
    if raw.kind == "oriented_box" and raw.angle_deg is not None:
        return _rotated_box(raw, convention, size, repairs, padded), "polygon", raw_ok
    xy = _xy(raw.numbers, convention, size, padded)
    if raw.kind == "point":
        return shapely.Point(xy[0]), "point", raw_ok
    if raw.kind in ("box", "mask"):
        (x1, y1), (x2, y2) = xy
        if x1 > x2 or y1 > y2:
            repairs.append("corners reordered")
        x1, x2, y1, y2 = min(x1, x2), max(x1, x2), min(y1, y2), max(y1, y2)
        if x1 == x2 or y1 == y2:
            raise ValueError(f"a box of zero width or height: {ex.short(raw.numbers)}")
        if raw.kind == "mask":
            mask = _mask_polygons(raw.mask, (x1, y1, x2, y2), repairs)
            if mask is not None:
                return mask, "other", raw_ok
        return shapely.box(x1, y1, x2, y2), "box", raw_ok
    if len(xy) < 3:
        raise ValueError(f"a polygon needs at least 3 points, got {len(xy)}")
    return shapely.Polygon(xy), "polygon", raw_ok


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


def _rotated_box(raw, convention, size, repairs, padded):
    """An oriented box: corners (x1, y1, x2, y2) plus an angle (GeoChat, EarthDial), or its
    centre and size (cx, cy, w, h) plus an angle (JSON, SkySenseGPT), turned about its centre
    by the angle in degrees in the sense of ``raw.turn`` (``conventions.rotated_corners``).
    Without the image size the rotation is done in fractions of the image (exact only for a
    square image). A negative width or height is made positive (repaired)."""
    pairs = np.asarray(raw.numbers, dtype=float).reshape(2, 2)
    if raw.obb_form == "corners":
        (x1, y1), (x2, y2) = _xy(pairs.reshape(-1), convention, size, padded)
        (cx, cy), (w, h) = ((x1 + x2) / 2, (y1 + y2) / 2), (abs(x2 - x1), abs(y2 - y1))
    else:
        (cx, cy), = _xy(pairs[0], convention, size, padded)
        if convention.y_first:
            pairs = pairs[:, ::-1]
        sx, sy, _ = scale(convention, None if padded else size)
        if padded:
            side = max(size)
            sx, sy = sx * side, sy * side
        w, h = pairs[1] * np.array([sx, sy])
        if w < 0 or h < 0:
            repairs.append("negative width or height made positive")
            w, h = abs(w), abs(h)
    if w <= 0 or h <= 0:
        raise ValueError("an oriented box of zero width or height")
    return shapely.Polygon(rotated_corners(cx, cy, w, h, raw.angle_deg, raw.turn))


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


def _mask_polygons(data_url: str, box, repairs):
    """Gemini 2.5's mask: a PNG of the box's area, probabilities 0–255, resized to the box;
    pixels > 127 are the object. Vectorised to polygons in the box's coordinates; None (and
    a note in ``repairs``) when the mask is empty or unreadable: the box is kept."""
    payload = data_url.split(",", 1)[1]
    try:
        array = decode_png(base64.b64decode(payload, validate=False))
    except (ValueError, TypeError) as exc:
        repairs.append(f"the mask could not be read ({str(exc)[:80]}): the box is kept")
        return None
    if array.ndim == 3:
        array = array[..., 0]
    inside = array > 127
    if not inside.any():
        repairs.append("the mask is empty (no pixel above 127): the box is kept")
        return None
    rows, cols = inside.shape
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
    "GeometryRecord", "ParsedAnswer", "parse_answer", "image_size", "decode_png",
    "mask_to_polygons", "extract_answer", "extract", "convert", "resolve_auto",
    "build_record", "SPAN_EXCERPT",
]
