"""IoU, Dice, GIoU and DIoU of geometry pairs, vectorised, and the robust spatial IoU of two
footprints that may be in different CRSs.

Every input is passed through ``prepare_layer`` first (null, empty, non-polygonal, non-finite
and zero-area geometries dropped, invalid ones repaired), so bad data gives a defined value,
never an exception; only programmer errors (a CRS that is not one, arrays that do not pair up,
an unknown option) raise.

Values when a pair has no polygonal area on one or both sides (documented decisions):

- area on both sides: the formulas;
- area on one side only (nothing predicted, or nothing to find): IoU = Dice = 0.0 and
  GIoU = DIoU = -1.0, their worst value, as for a prediction infinitely far away;
- area on neither side (0/0): every metric is ``zero_division``, 0.0 by default as in the
  spatial IoU guide; 1.0 reads "both agree there is nothing".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyproj
import shapely

from ..geometry.crs import (
    DEFAULT_EQUAL_AREA_CRS,
    crs_label,
    resolve_crs,
    resolve_equal_area_crs,
    transformer,
)
from .overlap import intersection_area, iou_from_areas, round_ratio
from ..util.rates import check_zero_division
from ..geometry.dissolve import dissolve
from ..geometry.prepare import geometry_array, prepare_layer

logger = logging.getLogger(__name__)

#: Enclosing shapes C for GIoU.
ENCLOSING = ("convex_hull", "box")


@dataclass(frozen=True)
class PairMetrics:
    """Metrics of n pairs (a[k], b[k]); every array is float, shape (n,).

    Attributes:
        area_a, area_b: areas of the repaired polygonal parts (0 where there are none), in
            squared units of the CRS (m² in a metric CRS).
        intersection, union: |a ∩ b| and |a ∪ b| = |a| + |b| - |a ∩ b|, same units.
        iou: |a ∩ b| / |a ∪ b|, in [0, 1].
        dice: 2 |a ∩ b| / (|a| + |b|) = 2 IoU / (1 + IoU), in [0, 1].
        giou: IoU - |C \\ (a ∪ b)| / |C|, C the enclosing shape, in [-1, IoU].
        diou: IoU - ρ² / c², ρ the distance between the centroids, c the diagonal of the
            smallest axis-aligned box enclosing both, in [-1, 1].
    """

    area_a: np.ndarray
    area_b: np.ndarray
    intersection: np.ndarray
    union: np.ndarray
    iou: np.ndarray
    dice: np.ndarray
    giou: np.ndarray
    diou: np.ndarray

    @property
    def n(self) -> int:
        return len(self.iou)


def box_polygons(x1, y1, x2, y2) -> np.ndarray:
    """Axis-aligned boxes from corner coordinates, corners sorted.

    Args:
        x1, y1, x2, y2: float arrays broadcastable to one shape (n,) (scalars allowed): two
            opposite corners in any order, so (x2, y2, x1, y1) is the same box as
            (x1, y1, x2, y2) rather than one of negative area.

    Returns:
        Object array, shape (n,): Polygons; None where a corner is NaN or infinite. A box of
        zero width or height is a Polygon of zero area, which the metrics treat as no area.

    Raises:
        ValueError: the arrays do not broadcast to one shape, or are not numbers.
    """
    try:
        corners = [np.atleast_1d(np.asarray(v, dtype=float)) for v in (x1, y1, x2, y2)]
        x1, y1, x2, y2 = (c.reshape(-1) for c in np.broadcast_arrays(*corners))
    except (TypeError, ValueError) as exc:
        message = f"box corners x1, y1, x2, y2 must be numbers of one shape ({exc})"
        raise ValueError(message) from None
    finite = np.isfinite(x1) & np.isfinite(y1) & np.isfinite(x2) & np.isfinite(y2)
    boxes = np.full(len(x1), None, dtype=object)
    boxes[finite] = shapely.box(
        np.minimum(x1, x2)[finite],
        np.minimum(y1, y2)[finite],
        np.maximum(x1, x2)[finite],
        np.maximum(y1, y2)[finite],
    )
    return boxes


def pair_metrics(
    a,
    b,
    *,
    zero_division: float = 0.0,
    enclosing: str = "convex_hull",
    x_period: float | None = None,
) -> PairMetrics:
    """IoU, Dice, GIoU and DIoU of each pair (a[k], b[k]) in one planar or metric CRS.

    Args:
        a, b: shapely geometries or None, sequences broadcastable to one shape (n,) (a single
            geometry pairs with every element of the other). No reprojection is done: for
            geographic coordinates use ``spatial_pair_metrics``.
        zero_division: every metric's value when neither side has area (see the module
            docstring); a number in [0, 1] or NaN.
        enclosing: GIoU's enclosing shape C: "convex_hull" (the smallest convex shape,
            Rezatofighi et al.'s general definition) or "box" (the smallest axis-aligned box,
            their bounding-box loss and what detection libraries compute). They agree for
            two boxes offset along one axis only; for boxes offset diagonally the hull is
            smaller (boxes (0, 0, 1, 1) and (2, 2, 3, 3): hull 5, box 9).
        x_period: for geometries cut at the antimeridian in a cylindrical CRS (as
            ``prepare_layer`` cuts them), the width of the world in x. A pair spread over more
            than half of it has its western half shifted east by it for GIoU and DIoU, so that
            the two sides of 180° are side by side; areas and IoU are unaffected. None: no
            shift.

    Returns:
        PairMetrics with arrays of shape (n,).

    Raises:
        ValueError: ``a`` and ``b`` do not pair up, or an option is out of range.

    Sources: the IoU article, "Intersection over Union"; Rezatofighi et al. (2019), Generalized
    intersection over union, CVPR; Zheng et al. (2020), Distance-IoU loss, AAAI.
    """
    zero_division = check_zero_division(zero_division)
    if enclosing not in ENCLOSING:
        raise ValueError(f"enclosing must be one of {ENCLOSING}, got {enclosing!r}")
    a, b = _pair_arrays(a, b)
    a, area_a = _polygonal(a, "a")
    b, area_b = _polygonal(b, "b")
    return _metrics(a, area_a, b, area_b, zero_division, enclosing, x_period)


def spatial_pair_metrics(
    a,
    b,
    *,
    a_crs=None,
    b_crs=None,
    equal_area_crs=DEFAULT_EQUAL_AREA_CRS,
    zero_division: float = 0.0,
    enclosing: str = "convex_hull",
) -> dict[str, float | int | str]:
    """IoU, Dice, GIoU and DIoU of two footprints, each possibly a whole layer, in any CRSs.

    Each side is prepared like a layer (repair first, then edges split on a 50 m grid where they bend,
    then reprojection to ``equal_area_crs``), dissolved into one footprint, and the pair is
    scored by ``pair_metrics`` with a guarded overlay and results clamped to their ranges.

    Args:
        a, b: a shapely geometry, None, or a sequence of them (dissolved into one footprint).
            Anything unusable is a data error: it counts as no area.
        a_crs, b_crs: their CRSs (anything pyproj accepts), or both None for planar units.
        equal_area_crs: projected CRS in metres for areas (default EPSG:6933).
        zero_division, enclosing: as for ``pair_metrics``.

    Returns:
        dict: iou, dice, giou, diou; area_a_m2, area_b_m2, intersection_m2, union_m2 (m² in
        ``equal_area_crs``, squared planar units without CRS); a_dropped, a_repaired,
        b_dropped, b_repaired (input geometries dropped or repaired); equal_area_crs.

    Raises:
        ValueError: a CRS that is not one, an equal-area CRS that is not projected in metres,
            exactly one side with a CRS, or an option out of range.

    Source: the spatial IoU guide, "Measuring Spatial IoU for LLM-Generated Geometries".
    """
    zero_division = check_zero_division(zero_division)
    if enclosing not in ENCLOSING:
        raise ValueError(f"enclosing must be one of {ENCLOSING}, got {enclosing!r}")
    a_crs = resolve_crs(a_crs, "a_crs")
    b_crs = resolve_crs(b_crs, "b_crs")
    if (a_crs is None) != (b_crs is None):
        with_crs, without = ("a", "b") if b_crs is None else ("b", "a")
        raise ValueError(
            f"{without} has no CRS but {with_crs} has one; give {without}_crs (or neither, "
            f"for planar units)"
        )
    ea_crs = resolve_equal_area_crs(equal_area_crs) if a_crs is not None else None
    fa, layer_a = _footprint(a, a_crs, ea_crs, "a")
    fb, layer_b = _footprint(b, b_crs, ea_crs, "b")
    geoms_a, area_a = _polygonal(np.array([fa], dtype=object), "a")
    geoms_b, area_b = _polygonal(np.array([fb], dtype=object), "b")
    x_period = cylindrical_x_period(ea_crs) if ea_crs is not None else None
    m = _metrics(geoms_a, area_a, geoms_b, area_b, zero_division, enclosing, x_period)
    return {
        "iou": float(m.iou[0]),
        "dice": float(m.dice[0]),
        "giou": float(m.giou[0]),
        "diou": float(m.diou[0]),
        "area_a_m2": float(m.area_a[0]),
        "area_b_m2": float(m.area_b[0]),
        "intersection_m2": float(m.intersection[0]),
        "union_m2": float(m.union[0]),
        "a_dropped": layer_a.n_dropped,
        "a_repaired": layer_a.n_repaired,
        "b_dropped": layer_b.n_dropped,
        "b_repaired": layer_b.n_repaired,
        "equal_area_crs": crs_label(ea_crs),
    }


def spatial_iou(a, b, crs=None, equal_area_crs=DEFAULT_EQUAL_AREA_CRS) -> float:
    """IoU in [0, 1] of two geometries (or layers, dissolved) in one CRS; never raises on data.

    ``crs``: the CRS of both (anything pyproj accepts), or None for planar units. Areas are
    taken in ``equal_area_crs``. A side without polygonal area scores 0.0, as does a pair with
    no area at all. Raises ValueError only for a CRS that is not one.

    Source: the spatial IoU guide, "Measuring Spatial IoU for LLM-Generated Geometries"
    (repair, reproject, guarded overlay, clamp).
    """
    metrics = spatial_pair_metrics(
        a, b, a_crs=crs, b_crs=crs, equal_area_crs=equal_area_crs, zero_division=0.0
    )
    return metrics["iou"]


def cylindrical_x_period(crs) -> float | None:
    """The world's width in x of a CRS whose meridians are vertical lines (EPSG:6933: about
    34,735 km), or None if it is not such a CRS or cannot be evaluated."""
    lonlat = crs.geodetic_crs
    if lonlat is None or not crs.is_projected:
        return None
    try:
        to_crs = transformer(lonlat, crs)
        x, _ = to_crs.transform([-180.0, 180.0, -180.0, 180.0], [0.0, 0.0, 60.0, 60.0])
    except pyproj.exceptions.ProjError:
        return None
    x = np.asarray(x)
    period = x[1] - x[0]
    vertical = np.allclose(x[:2], x[2:], rtol=0, atol=1e-6 * abs(period))
    return float(period) if np.isfinite(x).all() and period > 0 and vertical else None


def _metrics(
    a, area_a, b, area_b, zero_division: float, enclosing: str, x_period: float | None = None
) -> PairMetrics:
    """The metrics of prepared pairs (None or valid polygonal geometry, area > 0)."""
    has_a, has_b = area_a > 0, area_b > 0
    both = np.flatnonzero(has_a & has_b)
    n = len(a)
    inter = np.zeros(n)
    inter[both] = intersection_area(a[both], b[both])
    enclosing_area, rho2, c2 = np.zeros(n), np.zeros(n), np.ones(n)
    if len(both):
        enclosing_area[both], rho2[both], c2[both] = enclosing_measures(
            a[both], b[both], enclosing, x_period
        )
    return metrics_from_measures(area_a, area_b, inter, enclosing_area, rho2, c2, zero_division)


def enclosing_measures(a, b, enclosing: str = "convex_hull", x_period: float | None = None):
    """What GIoU and DIoU need of pairs (a[k], b[k]) of polygonal geometries with area.

    Args:
        a, b: object arrays, shape (n,), in one planar or metric CRS.
        enclosing, x_period: as for ``pair_metrics``.

    Returns (enclosing_area, rho2, c2), float arrays (n,): the area of the enclosing shape C,
    the squared distance between the centroids, and the squared diagonal of the smallest
    axis-aligned box enclosing both.
    """
    if x_period is not None:
        a, b = _side_by_side(a, b, x_period)
    bounds_a, bounds_b = shapely.bounds(a), shapely.bounds(b)
    low = np.minimum(bounds_a[:, :2], bounds_b[:, :2])
    high = np.maximum(bounds_a[:, 2:], bounds_b[:, 2:])
    if enclosing == "box":
        enclosing_area = np.prod(high - low, axis=1)
    else:
        pairs = np.empty(2 * len(a), dtype=object)
        pairs[0::2], pairs[1::2] = a, b
        hulls = shapely.convex_hull(
            shapely.geometrycollections(pairs, indices=np.repeat(np.arange(len(a)), 2))
        )
        enclosing_area = shapely.area(hulls)
    centre_a = shapely.get_coordinates(shapely.centroid(a))
    centre_b = shapely.get_coordinates(shapely.centroid(b))
    rho2 = np.sum((centre_a - centre_b) ** 2, axis=1)
    c2 = np.sum((high - low) ** 2, axis=1)
    return enclosing_area, rho2, c2


def metrics_from_measures(
    area_a, area_b, intersection, enclosing_area, rho2, c2, zero_division: float = 0.0
) -> PairMetrics:
    """IoU, Dice, GIoU and DIoU of n pairs from their measures (float arrays, shape (n,)).

    Args:
        area_a, area_b: areas, >= 0 (0: no area on that side).
        intersection: |a ∩ b|, clamped here to [0, min(area_a, area_b)].
        enclosing_area: |C|, the enclosing shape's area (raised to the union if below it).
        rho2: squared distance between the centroids of a and b.
        c2: squared diagonal of the smallest axis-aligned box enclosing both.
        zero_division: every metric where neither side has area.
        (The last four are read only where both sides have area.)

    Returns PairMetrics; ratios clamped and rounded by ``round_ratio``. The decisions for
    pairs without area on one or both sides are the module docstring's.
    Sources: as ``pair_metrics``.
    """
    area_a, area_b = np.asarray(area_a, dtype=float), np.asarray(area_b, dtype=float)
    has_a, has_b = area_a > 0, area_b > 0
    both = np.flatnonzero(has_a & has_b)
    one = has_a != has_b
    inter = np.zeros(len(area_a))
    inter[both] = np.clip(
        np.asarray(intersection, dtype=float)[both], 0.0,
        np.minimum(area_a[both], area_b[both]),
    )
    union = area_a + area_b - inter
    iou = iou_from_areas(inter, area_a, area_b, zero_division)
    with np.errstate(divide="ignore", invalid="ignore"):
        dice = np.where(
            union > 0, round_ratio(np.clip(2.0 * inter / (area_a + area_b), 0.0, 1.0)),
            zero_division,
        )
    giou = np.where(one, -1.0, zero_division)
    diou = np.where(one, -1.0, zero_division)
    if len(both):
        exact_iou = np.clip(inter[both] / union[both], 0.0, 1.0)
        enclosing = np.maximum(np.asarray(enclosing_area, dtype=float)[both], union[both])
        giou[both] = round_ratio(
            np.clip(exact_iou - (enclosing - union[both]) / enclosing, -1.0, 1.0)
        )
        rho2, c2 = np.asarray(rho2, dtype=float)[both], np.asarray(c2, dtype=float)[both]
        diou[both] = round_ratio(np.clip(exact_iou - rho2 / c2, -1.0, 1.0))
    return PairMetrics(area_a, area_b, inter, union, iou, dice, giou, diou)


def _side_by_side(a: np.ndarray, b: np.ndarray, x_period: float):
    """Copies of pairs spread over more than half the world in x with every vertex west of
    x = 0 moved east by ``x_period``: a field cut at 180° becomes one piece again (for its
    hull, box and centroid only; a pair that truly spans half the world is not expected)."""
    bounds_a, bounds_b = shapely.bounds(a), shapely.bounds(b)
    low = np.minimum(bounds_a[:, 0], bounds_b[:, 0])
    high = np.maximum(bounds_a[:, 2], bounds_b[:, 2])
    spread = np.flatnonzero(high - low > x_period / 2)
    if len(spread) == 0:
        return a, b

    def east(xy):
        xy = xy.copy()
        xy[xy[:, 0] < 0, 0] += x_period
        return xy

    a, b = a.copy(), b.copy()
    a[spread], b[spread] = shapely.transform(a[spread], east), shapely.transform(b[spread], east)
    return a, b


def _pair_arrays(a, b) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as object arrays of one shape (n,); a single geometry (or None) pairs
    with every element of the other."""
    a, b = geometry_array(_as_sequence(a), "a"), geometry_array(_as_sequence(b), "b")
    if len(a) != len(b) and 1 not in (len(a), len(b)):
        raise ValueError(
            f"a and b must have the same length or one of them length 1, got {len(a)} and "
            f"{len(b)}"
        )
    n = max(len(a), len(b))
    return (np.resize(a, n) if len(a) != n else a), (np.resize(b, n) if len(b) != n else b)


def _as_sequence(value):
    """A single value (geometry, None, string, number) as a one-element list."""
    if value is None or isinstance(value, (shapely.Geometry, str, bytes)):
        return [value]
    return value if hasattr(value, "__iter__") else [value]


def _polygonal(geoms: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Prepared geometries and areas, shape (n,): None and 0.0 where there is no area."""
    layer = prepare_layer(geoms, None, None, name)
    out = np.full(len(geoms), None, dtype=object)
    out[layer.keep] = layer.geometries
    area = np.zeros(len(geoms))
    area[layer.keep] = layer.area_m2
    return out, area


def _footprint(value, crs, equal_area_crs, name: str):
    """One side of ``spatial_pair_metrics``: (dissolved geometry in the equal-area CRS or
    None, the PreparedLayer it came from)."""
    layer = prepare_layer(_as_sequence(value), crs, equal_area_crs, name)
    return dissolve(layer.geometries, name), layer
