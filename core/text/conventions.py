"""Coordinate conventions of model answers: how raw numbers become coordinates, and the
statuses a recovered geometry can have.

Frames (``Convention.frame``):

- ``pixel``: image pixel coordinates, x to the right, y downwards, (0, 0) the top-left corner
  of the top-left pixel (GDAL's pixel-corner convention: pixel (i, j) spans [i, i + 1] ×
  [j, j + 1], its centre is (i + 0.5, j + 0.5));
- ``fraction``: fractions of the image width and height in [0, 1] (normalised coordinates
  when the image size is not known);
- ``map``: map coordinates (the ``map`` convention, GeoJSON, or pixels through a geotransform).

A normalised raw value v is the fraction (v + offset) / divisor of the image side. Each
model's own source fixes its convention; ``README.md`` ("Model answer formats") lists them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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
        name: a COORDINATE_FORMATS value or the name of a model's token convention.
        y_first: numbers come as (y, x) pairs.
        divisor: a raw value v is the fraction (v + offset) / divisor of the image size; None
            for absolute coordinates (pixels, or map units when ``frame`` is "map").
        offset: added before dividing (a bin's centre: 0.5).
        maximum: the largest raw value the convention allows (bins: divisor - 1).
        frame: "pixel", "fraction" (becomes pixel when the image size is known) or "map".
    """

    name: str
    y_first: bool = False
    divisor: float | None = None
    offset: float = 0.0
    maximum: float | None = None
    frame: str = "pixel"


def _grid(name, divisor, maximum=None, *, y_first=False, offset=0.0):
    return Convention(name, y_first=y_first, divisor=divisor, offset=offset,
                      maximum=divisor if maximum is None else maximum, frame="fraction")


CONVENTIONS = {
    # Qwen2.5-VL's bbox_2d: absolute pixels of the image its processor resized (sides multiples
    # of 28), not of the original (QwenLM/Qwen2.5-VL issue 676); Qwen3-VL's are 0–1000.
    "pixel_xyxy": Convention("pixel_xyxy"),
    "pixel_yxyx": Convention("pixel_yxyx", y_first=True),
    "normalized_1": _grid("normalized_1", 1.0),
    "normalized_100": _grid("normalized_100", 100.0),
    "normalized_1000": _grid("normalized_1000", 1000.0),
    "normalized_1000_yxyx": _grid("normalized_1000_yxyx", 1000.0, y_first=True),
    # big_vision's PaliGemma decoding: <locNNNN> / 1024 of the image size, y first.
    "normalized_1024_yxyx": _grid("normalized_1024_yxyx", 1024.0, 1023.0, y_first=True),
    "map": Convention("map", frame="map"),
    # Token conventions: the model's vocabulary fixes the grid.
    "florence2_loc_1000": _grid("florence2_loc_1000", 1000.0, 999.0, offset=0.5),
    "deepseek_vl2_999": _grid("deepseek_vl2_999", 999.0),
    "falcon_bins_1000": _grid("falcon_bins_1000", 1000.0, 999.0, offset=0.5),
    "geojson": Convention("geojson", frame="map"),
}


def scale(convention: Convention, size):
    """(sx, sy, offset): coordinate = (raw + offset) · s, in pixels or fractions."""
    if convention.divisor is None:
        return 1.0, 1.0, 0.0
    width, height = size if size is not None and convention.frame == "fraction" else (1.0, 1.0)
    return width / convention.divisor, height / convention.divisor, convention.offset


def to_xy(numbers, convention: Convention, size) -> np.ndarray:
    """Pairs of raw numbers as (x, y) coordinates, shape (n, 2)."""
    pairs = np.asarray(numbers, dtype=float).reshape(-1, 2)
    if convention.y_first:
        pairs = pairs[:, ::-1]
    sx, sy, offset = scale(convention, size)
    return (pairs + offset) * np.array([sx, sy])


def rotated_corners(cx, cy, w, h, angle_deg, turn) -> np.ndarray:
    """The 4 corners (4, 2) of a w × h box centred on (cx, cy), turned by ``angle_deg``.

    ``turn`` = "clockwise" or "counterclockwise": the sense in which a positive angle turns
    the box on screen (image coordinates, y downwards). Clockwise on screen is
    x' = cx + dx·cos θ − dy·sin θ, y' = cy + dx·sin θ + dy·cos θ (mmrotate's "oc" boxes,
    SkySenseGPT); counter-clockwise is OpenCV's ``getRotationMatrix2D`` (GeoChat's demo,
    EarthDial's evaluation): x' = cx + dx·cos θ + dy·sin θ, y' = cy − dx·sin θ + dy·cos θ.
    """
    if turn not in ("clockwise", "counterclockwise"):
        raise ValueError(f"turn must be 'clockwise' or 'counterclockwise', got {turn!r}")
    theta = math.radians(angle_deg) * (1.0 if turn == "clockwise" else -1.0)
    corners = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    c, s = math.cos(theta), math.sin(theta)
    return corners @ np.array([[c, -s], [s, c]]).T + np.array([cx, cy])


def unpad_square(xy: np.ndarray, size) -> np.ndarray:
    """Pixel coordinates (n, 2) on an image padded to a square (its long side S, the short
    side centred: offset (S − side) // 2, as Shikra's and LLaVA-1.5's ``expand2square``)
    back on the image (width × height pixels). ``xy`` are fractions of the square."""
    width, height = size
    side = max(width, height)
    offset = np.array([(side - width) // 2, (side - height) // 2], dtype=float)
    return np.asarray(xy, dtype=float) * side - offset


__all__ = [
    "COORDINATE_FORMATS", "CONVENTIONS", "Convention", "PARSED", "REPAIRED", "OUT_OF_BOUNDS",
    "NON_FINITE", "UNPARSEABLE", "EMPTY", "USABLE", "GIVEN", "SYNTAX", "AUTO", "scale",
    "to_xy", "rotated_corners", "unpad_square",
]
