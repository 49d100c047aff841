"""A study area applied alike to the predicted and the reference layer (agribound's
``aoi_selection``: "the reference polygons are first selected with the same rule as the
predictions, so a field crossing the outline is kept or dropped on both sides alike",
agribound 1.0 documentation, "Evaluation", section "In the pipeline").

Rules, for each row of a layer against the study area (all its polygons, dissolved):

- ``intersects``: the row is kept when it shares any point with the study area;
- ``centroid_within``: kept when its centroid lies inside the study area or on its outline;
- ``clip``: kept when it overlaps the study area with positive area, and cut to it.

The study area is repaired (make_valid, structure method) and reprojected into each layer's
CRS (edges first split into pieces of at most 50 m), so the test runs in the layer's own
coordinates. Rows without a usable geometry (null, empty) are kept: the evaluation drops and
counts them as data errors, whatever the study area.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyproj
import shapely

from ..geometry.crs import check_layer_crs, densify_step, resolve_crs, to_crs
from ..geometry.dissolve import dissolve
from ..geometry.prepare import geometry_array, polygonal_parts, prepare_layer
from ..geometry.stored import StoredGeometries

logger = logging.getLogger(__name__)

#: Selection rules, in the order of the algorithm's STUDY_AREA_RULE options.
STUDY_AREA_RULES = ("intersects", "centroid_within", "clip")


@dataclass(frozen=True)
class StudyAreaSelection:
    """The rows of one layer a study area keeps.

    Attributes:
        keep: int64, shape (n_kept,): input positions of the rows kept, increasing.
        geometries: object array, shape (n_kept,): their geometries (cut to the study area
            with the clip rule, else the input geometries).
        n_outside: rows left out.
        n_clipped: rows kept whose geometry was cut (clip rule only).
    """

    keep: np.ndarray
    geometries: np.ndarray
    n_outside: int
    n_clipped: int = 0


def study_area_footprint(geometries, crs) -> tuple[object, pyproj.CRS | None]:
    """The study area's polygons repaired and dissolved: (geometry or None, its CRS).

    ``geometries``: sequence of shapely geometries in ``crs`` (anything pyproj accepts, or
    None for planar units). Rows without a polygon are ignored; None when none is left.
    """
    crs = resolve_crs(crs, "study area crs")
    prepared = prepare_layer(geometry_array(geometries, "study area"), None, None, "study area")
    return dissolve(prepared.geometries, "study area"), crs


def select_in_study_area(
    geometries, crs, study_area, study_area_crs, rule: str = "intersects"
) -> StudyAreaSelection:
    """The rows of a layer a study area keeps, by ``rule``.

    Args:
        geometries: sequence of shapely geometries or None, shape (n,), in ``crs``.
        crs: the layer's CRS (anything pyproj accepts), or None for planar units.
        study_area: one shapely polygonal geometry (``study_area_footprint``), or None
            (nothing is inside).
        study_area_crs: its CRS, or None (only with a layer without CRS).
        rule: one of ``STUDY_AREA_RULES``.

    Returns:
        A StudyAreaSelection. Null and empty rows are always kept (see the module docstring).

    Raises:
        ValueError: an unknown rule, or exactly one of the layer and the study area with a
            CRS.
    """
    geoms = geometry_array(geometries, "layer")
    return _select(geoms, _area_for_layer(crs, study_area, study_area_crs, rule), rule)


def _area_for_layer(crs, study_area, study_area_crs, rule: str):
    """The study area in the layer's CRS, after checking the rule and the CRSs (raises
    ValueError as ``select_in_study_area``)."""
    if rule not in STUDY_AREA_RULES:
        raise ValueError(f"study area rule must be one of {STUDY_AREA_RULES}, got {rule!r}")
    crs = resolve_crs(crs, "layer crs")
    area_crs = resolve_crs(study_area_crs, "study area crs")
    try:
        check_layer_crs(crs, area_crs)
    except ValueError:
        raise ValueError(
            "The study area and the layers must all have a CRS or all have none"
        ) from None
    return _in_layer_crs(study_area, area_crs, crs)


def _select(geoms, area, rule: str) -> StudyAreaSelection:
    """The rows of ``geoms`` (object array) that ``area`` (in their CRS, or None) keeps."""
    present = shapely.is_geometry(geoms) & ~shapely.is_empty(geoms)
    inside = ~present  # null and empty rows are kept
    out = geoms.copy()
    n_clipped = 0
    rows = np.flatnonzero(present)
    if area is not None and len(rows):
        shapely.prepare(area)
        candidate = rows[shapely.intersects(area, geoms[rows])]
        if rule == "intersects":
            inside[candidate] = True
        elif rule == "centroid_within":
            centroids = shapely.centroid(geoms[candidate])
            inside[candidate[shapely.covers(area, centroids)]] = True
        else:
            covered = shapely.covers(area, geoms[candidate])
            inside[candidate[covered]] = True
            cut = candidate[~covered]
            pieces = polygonal_parts(_clip(geoms[cut], area))
            has_area = ~shapely.is_missing(pieces)
            has_area[has_area] = shapely.area(pieces[has_area]) > 0
            out[cut[has_area]] = pieces[has_area]
            inside[cut[has_area]] = True
            n_clipped = int(np.count_nonzero(has_area))
    keep = np.flatnonzero(inside)
    return StudyAreaSelection(keep, out[keep], int(len(geoms) - len(keep)), n_clipped)


def select_stored_in_study_area(stored, crs, study_area, study_area_crs,
                                rule: str = "intersects",
                                chunk_rows: int = 20_000) -> StudyAreaSelection:
    """``select_in_study_area`` on a layer kept on disk (``geometry.StoredGeometries``),
    ``chunk_rows`` rows at a time (every row's decision is its own, so the rows kept are
    those of one call on the whole layer); ``geometries`` of the result is a new store.

    Raises ValueError as ``select_in_study_area``.
    """
    kept, out = [np.zeros(0, dtype=np.int64)], StoredGeometries()
    n_outside = n_clipped = 0
    area = _area_for_layer(crs, study_area, study_area_crs, rule)  # once for every chunk
    for start in range(0, len(stored), chunk_rows):
        part = _select(stored.take(slice(start, start + chunk_rows)), area, rule)
        kept.append(part.keep + start)
        out.append(part.geometries)
        n_outside += part.n_outside
        n_clipped += part.n_clipped
    return StudyAreaSelection(np.concatenate(kept), out, n_outside, n_clipped)


def _in_layer_crs(area, area_crs, layer_crs):
    """The study area in the layer's CRS (edges split into <= 50 m pieces first)."""
    if area is None or area_crs is None or area_crs == layer_crs:
        return area
    step = densify_step(area_crs)
    dense = shapely.segmentize(area, step) if step is not None else area
    moved = to_crs(np.array([dense], dtype=object), area_crs, layer_crs)[0]
    if not np.isfinite(shapely.get_coordinates(moved)).all():
        raise ValueError("The study area cannot be transformed to the layers' CRS")
    return moved if moved.is_valid else shapely.make_valid(moved, method="structure")


def _clip(geoms: np.ndarray, area) -> np.ndarray:
    """``geoms[k] ∩ area``; an invalid row GEOS cannot cut is repaired first, a row that
    fails even then becomes None (left out, logged)."""
    try:
        with np.errstate(all="ignore"):
            return shapely.intersection(geoms, area)
    except shapely.errors.GEOSException:
        pass
    out = np.full(len(geoms), None, dtype=object)
    for k, geom in enumerate(geoms):  # only after the vectorised call failed
        try:
            with np.errstate(all="ignore"):
                if not geom.is_valid:
                    geom = shapely.make_valid(geom, method="structure", keep_collapsed=False)
                out[k] = shapely.intersection(geom, area)
        except shapely.errors.GEOSException as exc:
            logger.warning("a geometry could not be clipped to the study area: %s", exc)
    return out
