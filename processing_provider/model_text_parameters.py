"""Parameters and reading shared by the algorithms over tables of model answers
(ioueval:parsemodeloutput, ioueval:spatialmatch): the coordinate format enum, the image size
fields, and the rows of a table read as plain values."""

from __future__ import annotations

import time

from qgis.core import (
    QgsFeatureRequest,
    QgsProcessingException,
    QgsProcessingParameterBoolean,
    QgsProcessingParameterEnum,
    QgsProcessingParameterField,
)

from ..core.text.model_text import COORDINATE_FORMATS
from .compat import ADVANCED, FIELD_PARAMETER_ANY, REQUEST_NO_GEOMETRY, parameter_as_fields
from .attributes import plain_null

COORDINATE_FORMAT = "COORDINATE_FORMAT"
IMAGE_WIDTH_FIELD = "IMAGE_WIDTH_FIELD"
IMAGE_HEIGHT_FIELD = "IMAGE_HEIGHT_FIELD"
PADDED_SQUARE = "PADDED_SQUARE"

COORDINATE_FORMAT_LABELS = (
    "auto (from the syntax, else from the value range, with a warning when ambiguous)",
    "pixel_xyxy (pixels, x1 y1 x2 y2, Qwen2.5-VL)",
    "normalized_1 (fractions 0–1)",
    "normalized_1000 (0–1000 grid, Qwen3-VL)",
    "pixel_yxyx (pixels, y first)",
    "normalized_1000_yxyx (0–1000 grid, y first, Gemini)",
    "map (map coordinates in CRS)",
    "normalized_100 (percent)",
    "normalized_1024_yxyx (1024 bins, y first, PaliGemma)",
)
if len(COORDINATE_FORMAT_LABELS) != len(COORDINATE_FORMATS):
    raise RuntimeError("COORDINATE_FORMAT_LABELS needs one label per COORDINATE_FORMATS entry")

HELP_CONVENTIONS = """
<p><b>Coordinate conventions.</b> Pixel coordinates have (0, 0) at the top-left corner of the
top-left pixel, x to the right, y downwards (GDAL's pixel-corner convention: pixel (i, j) spans
[i, i+1] × [j, j+1]). A normalised value v on a grid of N is the fraction v / N of the image
width or height. Each model syntax is read with the convention of the model's own source:
Qwen2-VL &lt;|box_start|&gt;, Qwen-VL / InternVL / MiniCPM-V &lt;box&gt;, &lt;quad&gt;,
&lt;point&gt;, CogVLM [[x1,y1,x2,y2]] (three digits), GLM &lt;|begin_of_box|&gt;, Molmo2
&lt;points coords="…"&gt;: 0–1000; Gemini box_2d / point: 0–1000, y first; DeepSeek-VL2
&lt;|det|&gt;: v / 999; Florence-2 &lt;loc_N&gt; and Falcon &lt;N&gt; bins: (b + 0.5) / 1000, the
bin centre (pairs of more than four tokens: a polygon); PaliGemma &lt;locNNNN&gt;: b / 1024, y
first; GeoChat {&lt;x1&gt;&lt;y1&gt;&lt;x2&gt;&lt;y2&gt;|&lt;θ&gt;} and EarthDial
[[x1, y1, x2, y2, θ]]: percent, θ counter-clockwise on screen; SkySenseGPT
&lt;rbox&gt;({&lt;cx&gt;&lt;cy&gt;&lt;w&gt;&lt;h&gt;|&lt;θ&gt;}): centre and size in percent, θ
clockwise on screen; Molmo &lt;point x y&gt;:
percent (values above 100: Qwen3-VL's 0–1000); Shikra [x1,y1,x2,y2;…]: fractions of the image
padded to a square.</p>
<p><b>COORDINATE_FORMAT auto</b> reads each syntax with its convention, and plain numbers
(JSON lists, bbox / bbox_2d / bboxes / point_2d keys, polygons, WKT) by their range: values in
[0, 1] as fractions; above 1, as pixels when they fit the image, as 0–1000 when they exceed the
image but not 1000, with a warning when both readings fit (or when there is no image size to
tell). Under auto a bare list of numbers in prose ("the image is [1920, 1080]", "values in
[0, 1]") is no geometry: only a list that stands alone (the whole answer, its own line, a code
fence, between tags) or under a key is read. <b>Another COORDINATE_FORMAT</b> applies to plain
numbers, bare lists in prose included, and replaces the convention a syntax implies, except
where the model's vocabulary or API fixes it (Florence-2, PaliGemma and Falcon bin tokens,
Gemini's box_2d / point keys: a warning says it was not applied). With the image width and height, normalised
coordinates become pixels; without them they stay fractions of the image. Qwen2.5-VL writes
absolute pixels of the image as its processor resized it (sides multiples of 28), not of the
original (QwenLM/Qwen2.5-VL issue 676): give that size, and with a RASTER the pixels are scaled
onto it. <b>PADDED_SQUARE</b>: LLaVA-1.5 and Shikra saw the image padded to a square (its long
side, the short side centred), so their fractions are of that square; the padding is undone
with the image width and height (without them such a geometry is unparseable).</p>
<p><b>Status</b> of each geometry: parsed; repaired (corners reordered, truncated JSON,
invalid polygon made valid, a negative width made positive, OBB → HBB, an empty Gemini mask:
the box kept); out_of_bounds (outside the image or its grid: a likely hallucination, kept as
written, never clipped); non_finite (NaN or infinite coordinate: no geometry); unparseable (no
geometry, with the reason: a wrong number of values, an unclosed tag). An empty list or an
explicit "none found" is a valid answer with no geometry (status empty), never a failure and
never a zero box.</p>
"""


def coordinate_format_parameter(description="Coordinate format of plain numbers"):
    return QgsProcessingParameterEnum(
        COORDINATE_FORMAT, description, options=list(COORDINATE_FORMAT_LABELS), defaultValue=0
    )


def padded_square_parameter():
    """The PADDED_SQUARE option (advanced): answers in fractions of the image padded to a
    square (LLaVA-1.5, Shikra); undone with the image size fields."""
    parameter = QgsProcessingParameterBoolean(
        PADDED_SQUARE, "Answers are fractions of the image padded to a square (LLaVA-1.5, "
        "Shikra): undo the padding (needs the image width and height)", defaultValue=False)
    parameter.setFlags(parameter.flags() | ADVANCED)
    return parameter


def image_size_parameters(parent: str):
    """The optional image width and height fields (pixels) of the table ``parent``: numbers,
    or text holding numbers (a CSV read without column types); other values count as an
    unknown size."""
    return [
        QgsProcessingParameterField(
            name, label, parentLayerParameterName=parent,
            type=FIELD_PARAMETER_ANY, optional=True,
        )
        for name, label in (
            (IMAGE_WIDTH_FIELD, "Image width field (pixels)"),
            (IMAGE_HEIGHT_FIELD, "Image height field (pixels)"),
        )
    ]


def coordinate_format(algorithm, parameters, context) -> str:
    return COORDINATE_FORMATS[algorithm.parameterAsEnum(parameters, COORDINATE_FORMAT, context)]


def field_index(algorithm, source, parameters, name, context, required=False) -> int:
    """Index of the field a field parameter names in ``source``; -1 when none is given.

    Raises QgsProcessingException naming the parameter when a required one is missing or the
    field is not in the table."""
    names = parameter_as_fields(algorithm, parameters, name, context)
    if not names:
        if required:
            raise QgsProcessingException(f"{name}: a field is needed")
        return -1
    index = source.fields().lookupField(names[0])
    if index < 0:
        raise QgsProcessingException(f"{name}: no field {names[0]!r} in the table")
    return index


def read_columns(source, indices: dict, feedback, progress_range=(0.0, 20.0)):
    """The values of some fields of every feature, as plain Python values.

    Args:
        indices: {column name: field index or -1}; -1 gives None for every row (the feature
            id for the column named "id").

    Returns:
        ({column name: list (n,)}, feature ids list), or None when the user canceled.
    """
    request = QgsFeatureRequest().setFlags(REQUEST_NO_GEOMETRY)
    wanted = sorted({i for i in indices.values() if i >= 0})
    request.setSubsetOfAttributes(wanted)
    columns = {name: [] for name in indices}
    ids = []
    total = max(source.featureCount(), 1)
    start, end = progress_range
    next_check = time.monotonic() + 0.1
    for k, feature in enumerate(source.getFeatures(request)):
        attributes = feature.attributes()
        ids.append(feature.id())
        for name, index in indices.items():
            value = attributes[index] if index >= 0 else None
            columns[name].append(plain_null(value))
        if time.monotonic() >= next_check:
            if feedback.isCanceled():
                return None
            feedback.setProgress(start + (end - start) * k / total)
            next_check = time.monotonic() + 0.1
    return columns, ids
