"""Dissolving a layer's prepared polygons into one footprint, with a precision-grid fallback
when GEOS cannot overlay them."""

from __future__ import annotations

import logging
import math

import numpy as np
import shapely

logger = logging.getLogger(__name__)


def dissolve(geoms: np.ndarray, name: str = "layer"):
    """The union of prepared polygonal geometries (valid, as ``prepare_layer`` leaves them).

    ``geoms``: object array, shape (n,). Returns one geometry, or None when ``geoms`` is
    empty or GEOS cannot overlay them even on a precision grid of 1e-12 of their largest
    coordinate (logged naming ``name``: the footprint then scores no area, as the spatial IoU
    guide scores an overlay that fails).
    """
    if len(geoms) == 0:
        return None
    if len(geoms) == 1:
        return geoms[0]
    try:
        return shapely.union_all(geoms)
    except shapely.errors.GEOSException:
        pass
    try:
        grid = _dissolve_grid(geoms)
        return shapely.union_all(geoms, grid_size=grid)
    except shapely.errors.GEOSException as exc:
        logger.warning("the %s footprint could not be dissolved and scores no area: %s", name, exc)
        return None


def _dissolve_grid(geoms: np.ndarray) -> float:
    """A power of ten near 1e-12 of the largest absolute coordinate."""
    largest = float(np.abs(shapely.bounds(geoms)).max())
    return 10.0 ** math.ceil(math.log10(max(largest, 1e-300) * 1e-12))
