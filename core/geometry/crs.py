"""Coordinate reference systems: resolving them, splitting edges, reprojecting arrays."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pyproj
import shapely

from .exact_area import LonLatArea

#: Default CRS for areas and IoU: WGS 84 / NSIDC EASE-Grid 2.0 Global, equal-area, metres.
DEFAULT_EQUAL_AREA_CRS = "EPSG:6933"

#: Edges are split at points of a grid of this many metres before reprojection, so that a
#: straight edge is not replaced by one long chord in the target CRS (agribound 1.0 splits
#: every edge into such pieces; ``core.geometry.densify`` keeps only the points the image needs).
DENSIFY_M = 50.0

_WGS84_SEMI_MAJOR_M = 6_378_137.0

#: An equal-area CRS is reported when it changes any polygon's area by more than this
#: (relative) against EPSG:6933, equal-area on the WGS 84 ellipsoid (agribound 1.0).
AREA_CHANGE_TOLERANCE = 1e-4

logger = logging.getLogger(__name__)


def resolve_crs(value, name: str) -> pyproj.CRS | None:
    """A pyproj CRS from anything ``pyproj.CRS.from_user_input`` takes; None stays None.

    Raises ValueError naming ``name`` if the value is not a CRS.
    """
    if value is None:
        return None
    try:
        return pyproj.CRS.from_user_input(value)
    except pyproj.exceptions.CRSError as exc:
        raise ValueError(f"{name}: {value!r} is not a valid CRS ({exc})") from None


def resolve_equal_area_crs(value) -> pyproj.CRS:
    """The CRS for areas and IoU; raises ValueError unless it is projected with axes in metres."""
    crs = resolve_crs(DEFAULT_EQUAL_AREA_CRS if value is None else value, "equal_area_crs")
    if not crs.is_projected:
        raise ValueError(
            f"equal_area_crs must be a projected CRS with axes in metres, got {crs_label(crs)}"
        )
    if any(axis.unit_conversion_factor != 1.0 for axis in crs.axis_info):
        raise ValueError(f"equal_area_crs must have axes in metres, got {crs_label(crs)}")
    return crs


def check_layer_crs(reference_crs, predicted_crs) -> None:
    """Raise ValueError when exactly one of the two layers has a CRS.

    Both without a CRS is planar (image or pixel) space; one without is ambiguous.
    """
    if (reference_crs is None) != (predicted_crs is None):
        with_crs, without = (
            ("reference", "predicted") if predicted_crs is None else ("predicted", "reference")
        )
        raise ValueError(
            f"The {without} layer has no CRS but the {with_crs} layer has one; assign the "
            f"{without} layer its CRS (or remove both CRSs to evaluate in planar pixel units)"
        )


def evaluation_crs(reference_crs, predicted_crs, equal_area_crs) -> pyproj.CRS | None:
    """The equal-area CRS two layers are measured in, or None in planar (pixel) space when
    neither has a CRS. Raises ValueError when only one layer has a CRS (``check_layer_crs``)
    or the equal-area CRS is not projected in metres (``resolve_equal_area_crs``)."""
    check_layer_crs(reference_crs, predicted_crs)
    return resolve_equal_area_crs(equal_area_crs) if reference_crs is not None else None


def crs_label(crs: pyproj.CRS | None) -> str:
    """``"AUTHORITY:CODE"`` when the CRS matches one exactly, else its PROJ string or name."""
    if crs is None:
        return "none (planar units)"
    authority = crs.to_authority(min_confidence=100)
    if authority is not None:
        return f"{authority[0]}:{authority[1]}"
    return crs.to_string() or crs.name


def densify_step(crs: pyproj.CRS) -> float | None:
    """``DENSIFY_M`` in units of ``crs``, or None when its axis unit is unknown.

    For a geographic CRS, the angle subtending 50 m on a sphere of the WGS 84 semi-major axis:
    50 m along a meridian and less along a parallel.
    """
    axes = crs.axis_info
    factor = axes[0].unit_conversion_factor if axes else float("nan")
    if not (np.isfinite(factor) and factor > 0):
        return None
    if crs.is_geographic:
        return DENSIFY_M / (_WGS84_SEMI_MAJOR_M * factor)  # factor: radians per unit
    if crs.is_projected:
        return DENSIFY_M / factor  # factor: metres per unit
    return None


_per_thread = threading.local()

#: Transformers kept per thread (a new pair of CRSs beyond this many starts afresh): a world
#: layer's boundaries go to and from ~120 UTM zones.
_MAX_TRANSFORMERS = 512


def transformer(source: pyproj.CRS, target: pyproj.CRS) -> pyproj.Transformer:
    """``pyproj.Transformer.from_crs(source, target, always_xy=True)``, made once per thread
    and CRS pair: making one takes 1-25 ms (PROJ's database), which chunked reprojection (50k
    fields: ~50 chunks of two layers, 4 transformers each) and a layer spread over many UTM
    zones (a national layer's boundary stage and report maps) would otherwise pay again and
    again. A Transformer is
    not shared between threads (pyproj: not thread-safe); the same CRSs give the same
    transformation, so results are the same as with a new one."""
    cache = getattr(_per_thread, "transformers", None)
    if cache is None or len(cache) >= _MAX_TRANSFORMERS:
        cache = _per_thread.transformers = {}
    key = (source.to_wkt(), target.to_wkt())  # pyproj keeps the WKT: ~10 µs
    if key not in cache:
        cache[key] = pyproj.Transformer.from_crs(source, target, always_xy=True)
    return cache[key]


def to_crs(geoms: np.ndarray, source: pyproj.CRS, target: pyproj.CRS) -> np.ndarray:
    """Reproject an object array of geometries (None allowed), vectorised over all vertices.

    Points PROJ cannot transform come back as infinite coordinates; callers drop those rows.
    """
    if len(geoms) == 0 or source == target:
        return geoms
    to_target = transformer(source, target)

    def transform(x, y):
        if len(x) == 0:
            return x, y
        return to_target.transform(x, y, errcheck=False)

    return shapely.transform(geoms, transform, interleaved=False)


def check_equal_area(equal_area_crs: pyproj.CRS | None, layers, lonlat_area=None) -> list[str]:
    """Warn when ``equal_area_crs`` changes any polygon's area by more than 0.01 %.

    ``layers``: object arrays of polygons in ``equal_area_crs``. Each polygon's area there is
    compared with the area of the same vertices reprojected to EPSG:6933. With
    ``lonlat_area`` (the ``exact_area.LonLatArea`` of ``equal_area_crs``), the layers are its
    longitude/latitude polygons instead and both areas are exact: no vertex reprojection,
    which reads a polygon across either CRS's antimeridian, or round a pole, as a band round
    the world. Returns the warning messages (also logged); none for EPSG:6933 itself or
    planar evaluations.
    """
    return area_change_warnings(equal_area_crs,
                                worst_area_change(equal_area_crs, layers, lonlat_area))


def worst_area_change(equal_area_crs: pyproj.CRS | None, layers, lonlat_area=None):
    """The largest relative change of a polygon's area in ``equal_area_crs`` against
    EPSG:6933 (``check_equal_area``'s measure): a float (NaN when no change is finite), or
    None when nothing is compared; maxima of pieces of the layers combine to that of the
    whole (work units)."""
    reference = pyproj.CRS(DEFAULT_EQUAL_AREA_CRS)
    if equal_area_crs is None or equal_area_crs == reference:
        return None
    geoms = np.concatenate([np.asarray(g, dtype=object) for g in layers]) if layers else []
    if len(geoms) == 0:
        return None
    if lonlat_area is not None:
        area, reference_area = lonlat_area(geoms), LonLatArea.for_crs(reference)(geoms)
    else:
        area = shapely.area(geoms)
        projected = to_crs(geoms, equal_area_crs, reference)
        # A polygon across EPSG:6933's antimeridian (or round a pole) comes back as a band
        # round the world, its vertices not cut there: wider than half the world, not compared.
        half_world, _ = transformer(reference.geodetic_crs, reference).transform(180, 0)
        with np.errstate(invalid="ignore"):
            reference_area = shapely.area(projected)
            bounds = shapely.bounds(projected)
            band = bounds[:, 2] - bounds[:, 0] > half_world
        reference_area[band] = area[band]
    with np.errstate(divide="ignore", invalid="ignore"):
        change = area / reference_area - 1
    return float(np.nanmax(np.abs(change))) if np.any(np.isfinite(change)) else float("nan")


def area_change_warnings(equal_area_crs: pyproj.CRS | None, worst: float) -> list[str]:
    """``check_equal_area``'s message (also logged) for a ``worst_area_change``."""
    if worst is None or worst <= AREA_CHANGE_TOLERANCE:
        return []
    message = (
        f"EQUAL_AREA_CRS {crs_label(equal_area_crs)} does not preserve area here: it changes "
        f"polygon areas by up to {worst:.3%} against {DEFAULT_EQUAL_AREA_CRS} (equal-area on "
        f"the WGS 84 ellipsoid); areas, area errors and size classes use the areas in "
        f"{crs_label(equal_area_crs)}"
    )
    logger.warning(message)
    return [message]
