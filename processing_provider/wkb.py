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
    geometries = shapely.from_wkb(wkbs, on_invalid="ignore")
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
        linear = QgsGeometry(
            geometry.constGet().segmentize(CURVE_SEGMENT_ANGLE, QgsAbstractGeometry.MaximumAngle)
        )
        geometries[k] = shapely.from_wkb(linear.asWkb().data(), on_invalid="ignore")
        n_curved += has_arcs and geometries[k] is not None
    return geometries, n_curved
