"""UTM zones: the WGS 84 / UTM zone of each geometry (its centroid's, as the agribound 1.0
documentation, "Evaluation", takes it), and each layer's geometries in their own zone, where the
boundary distances and tolerance lengths are measured.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyproj
import shapely

from ..geometry.crs import to_crs, transformer
from .wide import to_crs_in_parts

_WGS84 = pyproj.CRS("EPSG:4326")


def utm_epsg(lon, lat) -> np.ndarray:
    """EPSG code of the WGS 84 / UTM zone of each (longitude, latitude), vectorised.

    Args:
        lon, lat: degrees, array-likes of equal shape (n,) (scalars allowed). Longitudes are
            wrapped to [-180, 180).

    Returns:
        int64 array, shape (n,): 326zz north of the equator (lat >= 0), 327zz south, zone
        zz = floor((lon + 180) / 6) + 1 in 1..60. Non-finite inputs give 0.

    Source: agribound ``utm_epsg`` (no Norway/Svalbard exceptions).
    """
    lon = np.atleast_1d(np.asarray(lon, dtype=float))
    lat = np.atleast_1d(np.asarray(lat, dtype=float))
    finite = np.isfinite(lon) & np.isfinite(lat)
    wrapped = np.mod(np.where(finite, lon, 0.0) + 180.0, 360.0) - 180.0
    zone = np.mod(np.floor((wrapped + 180.0) / 6.0).astype(np.int64), 60) + 1
    code = np.where(lat < 0, 32700, 32600).astype(np.int64) + zone
    return np.where(finite, code, 0)


def centroid_utm_epsg(geometries, crs: pyproj.CRS | None) -> np.ndarray:
    """UTM zone (EPSG code) of each geometry's centroid.

    Args:
        geometries: object array, shape (n,), of geometries in ``crs`` (None allowed).
        crs: their CRS; None (planar space) gives zone 0 for every row.

    Returns:
        int64 array, shape (n,). 0 for missing or empty geometries and centroids that cannot
        be transformed to longitude/latitude. The agribound seed takes the centroid in the
        equal-area CRS, so pass the equal-area geometries for parity.
    """
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    out = np.zeros(len(geoms), dtype=np.int64)
    if crs is None or len(geoms) == 0:
        return out
    present = ~shapely.is_missing(geoms)
    present[present] = ~shapely.is_empty(geoms[present])
    if not present.any():
        return out
    centroids = shapely.centroid(geoms[present])
    x, y = shapely.get_x(centroids), shapely.get_y(centroids)
    lon, lat = transformer(crs, _WGS84).transform(x, y, errcheck=False)
    out[present] = utm_epsg(lon, lat)
    return out


@dataclass(frozen=True)
class ZonedLayer:
    """One layer's geometries, each also in the UTM zone of its own centroid.

    Attributes:
        source: object array, shape (n,): geometries in ``crs``.
        crs: their CRS, or None in planar space (then ``local`` is ``source``).
        epsg: int64 array, shape (n,): EPSG code of each geometry's UTM zone (0 in planar
            space).
        local: object array, shape (n,): each geometry transformed directly (vertex by vertex,
            no densification, as in the seed) from ``crs`` to its zone.
    """

    source: np.ndarray
    crs: pyproj.CRS | None
    epsg: np.ndarray
    local: np.ndarray

    @property
    def n(self) -> int:
        return len(self.source)

    def in_zone(self, index: np.ndarray, epsg: int) -> np.ndarray:
        """Geometries ``source[index]`` in UTM zone ``epsg`` (reusing those already in it)."""
        index = np.asarray(index, dtype=np.int64)
        out = self.local[index].copy()
        if self.crs is None:
            return out
        other = self.epsg[index] != epsg
        if other.any():
            out[other] = to_crs(self.source[index[other]], self.crs, utm_crs(epsg))
        return out


def zoned_layer(source, crs: pyproj.CRS | None, epsg=None) -> ZonedLayer:
    """Transform each geometry to the UTM zone of its centroid.

    Args:
        source: sequence of polygonal geometries (None allowed), shape (n,), in ``crs``.
        crs: pyproj CRS, or None for planar (pixel) space: no zones, distances in CRS units.
        epsg: optional int array, shape (n,): the zone of each geometry; default
            ``centroid_utm_epsg(source, crs)``. The seed takes the centroid in the equal-area
            CRS: pass ``centroid_utm_epsg(equal_area_geometries, equal_area_crs)`` for parity.

    Returns:
        A ZonedLayer. Rows with zone 0 (no centroid) keep their source geometry in ``local``
        and get no distances.

    Raises:
        ValueError: ``epsg`` of the wrong shape.
    """
    geoms = np.asarray(source, dtype=object).reshape(-1)
    if crs is None:
        return ZonedLayer(geoms, None, np.zeros(len(geoms), dtype=np.int64), geoms)
    if epsg is None:
        zones = centroid_utm_epsg(geoms, crs)
    else:
        zones = np.asarray(epsg, dtype=np.int64).reshape(-1)
        if zones.shape != geoms.shape:
            raise ValueError(f"epsg must have shape {geoms.shape}, got {zones.shape}")
    # Zone by zone, in parts on both cores (``wide.to_crs_in_parts``); no zone: None.
    zoned = np.flatnonzero(zones != 0)
    local = np.full(len(geoms), None, dtype=object)
    local[zoned] = to_crs_in_parts(geoms[zoned], crs, zones[zoned], lambda code: utm_crs(code))
    return ZonedLayer(geoms, crs, zones, local)


def utm_epsg_codes(*layers: ZonedLayer) -> list[int]:
    """Sorted UTM EPSG codes used by the given layers (the seed's ``utm_epsg_codes``)."""
    codes = np.unique(np.concatenate([layer.epsg for layer in layers] + [np.zeros(0, np.int64)]))
    return [int(c) for c in codes if c != 0]


def utm_crs(epsg: int) -> pyproj.CRS:
    """The pyproj CRS of an EPSG code (a WGS 84 / UTM zone, 326xx or 327xx, here), made once
    per code: making one reads PROJ's database (~2 ms), and a world layer asks for each of
    its ~100 zones many times. (pyproj's CRS objects are thread-safe since 3.1.)"""
    return _utm_crs(int(epsg))


@functools.lru_cache(maxsize=None)
def _utm_crs(epsg: int) -> pyproj.CRS:
    return pyproj.CRS.from_epsg(epsg)
