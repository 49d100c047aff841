"""Geometries for the core from WKB, curved ones cut into straight segments first."""

from __future__ import annotations

import math

import numpy as np
import shapely
from qgis.core import QgsAbstractGeometry, QgsGeometry

#: Curved geometries are cut into straight segments at most this angle of arc apart (QGIS's
#: default): a chord is then within r·(1 − cos 0.5°) = 3.8e-5·r of its arc (4 mm at 100 m).
CURVE_SEGMENT_ANGLE = math.pi / 180


def geometries_from_wkb(wkbs) -> tuple[np.ndarray, int]:
    """shapely geometries from WKB, curved ones included.

    Args:
        wkbs: object array (n,) of WKB bytes; None or empty bytes for a null geometry
            (anything else that is not bytes is taken as unreadable).

    Returns:
        ``(geometries, n_curved)``: an object array (n,) of shapely geometries, None where the
        geometry is null or its WKB cannot be read (the core drops those as null), an empty
        collection for an empty curved geometry (dropped as empty); and how many geometries
        with arcs were cut into straight segments (``CURVE_SEGMENT_ANGLE``) by QGIS first.
        Curve types (CircularString, CompoundCurve, CurvePolygon, MultiCurve, MultiSurface,
        collections holding them) and others shapely cannot read (Triangle) become their
        linear types (LineString, Polygon, ...), with or without arcs.
    """
    wkbs = np.asarray(wkbs, dtype=object).reshape(-1)
    geometries = _linear_from_wkb(wkbs)
    n_curved = 0
    for k in np.flatnonzero(shapely.is_missing(geometries)).tolist():
        if not isinstance(wkbs[k], (bytes, bytearray)) or not wkbs[k]:
            continue
        geometry = QgsGeometry()
        geometry.fromWkb(bytes(wkbs[k]))
        if geometry.isNull():
            continue
        if geometry.isEmpty():  # CURVEPOLYGON EMPTY, say: dropped as empty, not as null
            geometries[k] = shapely.GeometryCollection()
            continue
        # Curve types hold straight runs too (a MultiSurface of plain rings, say): every such
        # geometry becomes its linear type; only those with arcs are counted.
        has_arcs = geometry.requiresConversionToStraightSegments()
        linear = QgsGeometry(geometry.constGet().segmentize(
            CURVE_SEGMENT_ANGLE, QgsAbstractGeometry.SegmentationToleranceType.MaximumAngle
        ))
        geometries[k] = shapely.from_wkb(linear.asWkb().data(), on_invalid="ignore")
        n_curved += has_arcs and geometries[k] is not None
    return geometries, n_curved


def _linear_from_wkb(wkbs: np.ndarray) -> np.ndarray:
    """shapely.from_wkb of each WKB, None where it holds a curve type or cannot be read.

    GEOS 3.13 and later read curve types (CircularString, CurvePolygon, ...), which shapely
    does not support (measured on Debian 13: shapely 2.1.0, GEOS 3.13.1): from_wkb raises
    NotImplementedError for the whole array when one of them is a curve type, and gives a
    GeometryCollection that holds curves (its area the arcs' exact one) without complaint,
    where GEOS 3.11 fails to parse either and ``on_invalid="ignore"`` gives None. Here both
    give None, so that the caller cuts them into straight segments through QGIS.
    """
    try:
        geometries = shapely.from_wkb(wkbs, on_invalid="ignore")
    except NotImplementedError:
        geometries = np.empty(len(wkbs), dtype=object)
        for k, wkb in enumerate(wkbs.tolist()):
            try:
                geometries[k] = shapely.from_wkb(wkb, on_invalid="ignore")
            except NotImplementedError:
                geometries[k] = None
    for k in np.flatnonzero(shapely.get_type_id(geometries) == _COLLECTION).tolist():
        if _holds_curves(geometries[k]):
            geometries[k] = None
    return geometries


_COLLECTION = 7  # shapely.GeometryType.GEOMETRYCOLLECTION


def _holds_curves(collection) -> bool:
    """Whether a GeometryCollection holds (at any depth) a geometry shapely cannot handle."""
    try:
        parts = shapely.get_parts(collection)
    except NotImplementedError:
        return True
    return any(_holds_curves(part) for part in parts[shapely.get_type_id(parts) == _COLLECTION])


class GeometryBatches:
    """Geometries made from WKB batch by batch (``geometries_from_wkb``), into an array or,
    with ``store`` (a ``core.geometry.StoredGeometries``), onto disk: never a whole layer's
    WKB at once."""

    def __init__(self, store=None):
        self.store, self.parts, self.n_curved = store, [], 0

    def add(self, wkbs) -> None:
        """Make and keep one batch (a sequence of WKB bytes, None for a null geometry)."""
        if not len(wkbs):
            return
        geometries, curved = geometries_from_wkb(np.array(wkbs, dtype=object).reshape(-1))
        self.n_curved += curved
        if self.store is not None:
            self.store.append(geometries)
        else:
            self.parts.append(geometries)

    def geometries(self):
        """(object array or the store, how many geometries had arcs)."""
        if self.store is not None:
            return self.store, self.n_curved
        return np.concatenate(self.parts + [np.zeros(0, dtype=object)]), self.n_curved
