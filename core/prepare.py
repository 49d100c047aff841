"""Prepare one layer's geometries for evaluation: drop unusable rows, repair, reproject.

Order of operations follows ../shared/seeds/spatial_iou_guide.txt and the agribound seed:
repair in the source CRS first, then split edges into pieces of at most 50 m, then reproject to
the equal-area CRS (and repair again, since reprojection can fold a ring), then drop zero areas.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyproj
import shapely

from .crs import densify_step, to_crs

logger = logging.getLogger(__name__)

#: Shapely geometry type ids.
POLYGON = 3
MULTIPOLYGON = 6
COLLECTION = 7


@dataclass(frozen=True)
class PreparedLayer:
    """The evaluated rows of one layer.

    Attributes:
        name: "reference" or "predicted", used in messages.
        keep: int64 array, shape (n,): position in the input of each evaluated row.
        source: object array, shape (n,): repaired polygonal geometries in the source CRS, 2D.
        geometries: object array, shape (n,): the same in the equal-area CRS (planar units when
            the evaluation has no CRS).
        area_m2: float array, shape (n,): areas in the equal-area CRS, all > 0.
        crs: source CRS, or None in planar (pixel) space.
        n_input: number of input rows.
        n_dropped: rows excluded as null, empty, non-polygonal, non-finite or of zero area.
        n_repaired: evaluated rows whose geometry was invalid and was repaired.
    """

    name: str
    keep: np.ndarray
    source: np.ndarray
    geometries: np.ndarray
    area_m2: np.ndarray
    crs: pyproj.CRS | None
    n_input: int
    n_dropped: int
    n_repaired: int

    @property
    def n(self) -> int:
        return len(self.keep)


def prepare_layer(
    geometries,
    crs: pyproj.CRS | None,
    equal_area_crs: pyproj.CRS | None,
    name: str,
) -> PreparedLayer:
    """Drop, repair and reproject one layer's geometries; the input is never modified.

    Args:
        geometries: sequence of shapely geometries or None, shape (n_input,), in ``crs``.
        crs: the layer's CRS, or None when the evaluation is in planar (pixel) space.
        equal_area_crs: CRS in which areas and IoU are computed (metres), or None for planar.
        name: "reference" or "predicted".

    Returns:
        A PreparedLayer. Null, empty, non-polygonal rows, rows with NaN or infinite coordinates
        and rows of zero area are dropped and counted; invalid geometries are repaired with
        ``make_valid(method="structure", keep_collapsed=False)`` keeping their polygonal parts
        and counted; Z and M values are dropped.
    """
    geoms = np.array(geometries, dtype=object).reshape(-1)
    n_input = len(geoms)
    geoms[~_is_geometry(geoms)] = None
    geoms = _drop_non_finite(geoms)
    geoms = shapely.force_2d(geoms)
    geoms, repaired = _repair(geoms)
    geoms = polygonal_parts(geoms)
    source = geoms

    if crs is not None and equal_area_crs is not None and crs != equal_area_crs:
        step = densify_step(crs)
        dense = shapely.segmentize(geoms, step) if step is not None else geoms
        geoms = _drop_non_finite(to_crs(dense, crs, equal_area_crs))
        geoms, repaired_again = _repair(geoms)
        geoms = polygonal_parts(geoms)
        repaired |= repaired_again

    area = np.zeros(n_input)
    present = ~shapely.is_missing(geoms)
    area[present] = shapely.area(geoms[present])
    ok = np.isfinite(area) & (area > 0)
    keep = np.flatnonzero(ok)
    layer = PreparedLayer(
        name=name,
        keep=keep,
        source=source[keep],
        geometries=geoms[keep],
        area_m2=area[keep],
        crs=crs,
        n_input=n_input,
        n_dropped=n_input - len(keep),
        n_repaired=int(np.count_nonzero(repaired & ok)),
    )
    if layer.n_dropped:
        logger.warning(
            "%d of %d %s rows are null, empty, non-polygonal, non-finite or of zero area "
            "and are not evaluated",
            layer.n_dropped,
            n_input,
            name,
        )
    if layer.n_repaired:
        logger.warning("%d %s geometries were invalid and were repaired", layer.n_repaired, name)
    return layer


def polygonal_parts(geoms: np.ndarray) -> np.ndarray:
    """Keep the polygonal parts of each geometry; geometries without any become None.

    ``geoms``: object array, shape (n,). A GeometryCollection becomes the union of its polygons
    and multipolygons (the loop runs only over collections, which only repair produces).
    """
    out = np.array(geoms, dtype=object, copy=True)
    type_id = shapely.get_type_id(out)
    for k in np.flatnonzero(type_id == COLLECTION):
        parts = shapely.get_parts(out[k])
        polys = parts[np.isin(shapely.get_type_id(parts), (POLYGON, MULTIPOLYGON))]
        out[k] = shapely.union_all(polys) if len(polys) else None
    out[~np.isin(type_id, (POLYGON, MULTIPOLYGON, COLLECTION))] = None
    return out


def _is_geometry(values: np.ndarray) -> np.ndarray:
    """True where a value is a non-empty shapely geometry."""
    is_geom = np.array([isinstance(v, shapely.Geometry) for v in values], dtype=bool)
    is_geom[is_geom] = ~shapely.is_empty(values[is_geom])
    return is_geom


def _drop_non_finite(geoms: np.ndarray) -> np.ndarray:
    """Replace geometries with any NaN or infinite coordinate by None."""
    coords, index = shapely.get_coordinates(geoms, return_index=True)
    bad_rows = np.unique(index[~np.isfinite(coords).all(axis=1)])
    if len(bad_rows) == 0:
        return geoms
    out = geoms.copy()
    out[bad_rows] = None
    return out


def _repair(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Repair invalid geometries; returns (geometries, repaired mask of shape (n,))."""
    present = ~shapely.is_missing(geoms)
    invalid = np.zeros(len(geoms), dtype=bool)
    invalid[present] = ~shapely.is_valid(geoms[present])
    if not invalid.any():
        return geoms, invalid
    out = geoms.copy()
    idx = np.flatnonzero(invalid)
    try:
        out[idx] = shapely.make_valid(geoms[idx], method="structure", keep_collapsed=False)
    except shapely.errors.GEOSException:
        # One geometry GEOS cannot repair must not cost the others their repair.
        for k in idx:
            out[k] = _repair_one(geoms[k])
    return out, invalid


def _repair_one(geom):
    try:
        return shapely.make_valid(geom, method="structure", keep_collapsed=False)
    except shapely.errors.GEOSException as exc:
        logger.warning("a geometry could not be repaired and is dropped: %s", exc)
        return None

