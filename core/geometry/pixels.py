"""Pixels per field: how many pixels of a given ground sample distance a field spans."""

from __future__ import annotations

import numpy as np

from ..util.checks import check_positive
from .crs import check_equal_area, resolve_crs, resolve_equal_area_crs
from .prepare import prepare_layer


def pixels_per_field(geometries, crs, gsd_m: float, equal_area_crs="EPSG:6933") -> np.ndarray:
    """``A / gsd_m²`` per row: the number of gsd_m × gsd_m pixels whose total area equals the
    field area A (m² in ``equal_area_crs``), not a count of pixel centres.

    Args:
        geometries: sequence of shapely geometries (None allowed), shape (n,), in ``crs``.
        crs: the layer's CRS (anything pyproj accepts), or None for planar units (then
            ``gsd_m`` is in the same units).
        gsd_m: ground sample distance (pixel size) in metres, > 0.

    Returns:
        float array, shape (n,); NaN for rows that are dropped (null, empty, non-polygonal,
        zero area). Invalid geometries are repaired as in ``evaluate``.

    Raises:
        ValueError: ``gsd_m`` not a positive finite number, or a CRS that is not one.

    Source: agribound 1.0 evaluation, "Pixels per field".
    """
    gsd_m = check_positive(gsd_m, "gsd_m")
    source_crs = resolve_crs(crs, "crs")
    ea_crs = resolve_equal_area_crs(equal_area_crs) if source_crs is not None else None
    layer = prepare_layer(geometries, source_crs, ea_crs, "input")  # logged: "input geometries"
    check_equal_area(ea_crs, [layer.geometries])
    values = np.full(layer.n_input, np.nan)
    values[layer.keep] = layer.area_m2 / (float(gsd_m) ** 2)
    return values
