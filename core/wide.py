"""Boundary distances of matched pairs too wide for one UTM zone: measured in a conformal CRS
and corrected by its local scale factor, in metres on the WGS 84 ellipsoid.

Fields keep the seed's rule (both polygons in the UTM zone of the reference field, so that
agribound parity holds). A UTM zone is 6° wide; its scale error grows without bound away from
the central meridian, so for a pair whose longitudes span more than ``WIDE_LONGITUDE_DEG`` or
that reaches beyond ±``POLAR_LATITUDE_DEG`` the distances are instead measured in

- Mercator on WGS 84 (``+proj=merc``), its central meridian at the pair's middle, or
- polar stereographic on WGS 84 (true scale at the pole),

whichever's scale factor k changes least over the pair's latitudes (``conformal_proj4``).
Both are conformal: a short distance or length at a point is the projected one divided by k
there (the same in every direction). Each piece of boundary (at most 1 km in the CRS, along
which k changes by less than 2e-4) has its distances and length divided by k at its middle
(``boundary.pair_boundary_distances(..., scale=)``).

Error bound (relative, first order): a distance D is off by at most g D / (2R), R ≈ 6371 km
and g = R |∇ln k| the largest relative gradient of the scale over the pair's latitudes
(``scale_gradients``: tan φ in Mercator; cos φ / (1 + sin φ) in polar stereographic): within
0.1 % for distances up to 2 × 0.001 × R / g. For a pair within one hemisphere g <= 0.58
(22 km), beyond 70° g <= 0.18 (70 km); a pair across the equator up to ±φ has g = tan φ (the
Americas, 55° S to 70° N: 4.6 km; longer distances there are off by D g / (2R)). Lengths (each piece
measured at its middle) and the mean boundary distance (the errors of the two boundaries
cancel to first order) are much closer: 1e-5 in the tests. Edges are transformed vertex by
vertex (as the seed does for UTM zones).
"""

from __future__ import annotations

import numpy as np
import pyproj
import shapely

from .crs import to_crs

#: Pairs whose longitudes span more than this (degrees) are measured here: a UTM zone.
WIDE_LONGITUDE_DEG = 6.0

#: Pairs reaching beyond this latitude (degrees, north or south) are measured here.
POLAR_LATITUDE_DEG = 80.0

#: Points per side of a bounding box transformed to find a pair's extent in longitude and
#: latitude (a coarse test: the threshold is 6°).
_BOX_POINTS = 8

_WGS84 = pyproj.CRS("EPSG:4326")

#: Geometries smaller than this (metres, in their CRS) and centred within this latitude are
#: neither wide nor polar (6° of longitude at 70° are 228 km): not looked at more closely.
_SMALL_M = 50_000.0
_LOW_LATITUDE_DEG = 70.0


def lonlat_extent(geometries, crs: pyproj.CRS) -> np.ndarray:
    """Longitude span, its middle, and the least and largest latitude of each geometry,
    from its bounding box's outline in ``crs`` transformed to WGS 84.

    Args:
        geometries: object array, shape (n,) (None allowed).
        crs: their CRS.
    Returns:
        float array, shape (n, 4): (span_deg, middle_lon_deg, lat_min, lat_max); NaN for
        missing or empty geometries. The span is the shorter of the spans with longitudes
        in [-180, 180) and in [0, 360), so a polygon across the antimeridian is narrow.
    """
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    out = np.full((len(geoms), 4), np.nan)
    with np.errstate(invalid="ignore"):
        bounds = shapely.bounds(geoms)
    ok = np.flatnonzero(np.isfinite(bounds).all(axis=1))
    if len(ok) == 0:
        return out
    x0, y0, x1, y1 = (bounds[ok, k : k + 1] for k in range(4))
    t = np.linspace(0.0, 1.0, _BOX_POINTS)
    xs = np.concatenate([x0 + (x1 - x0) * t, np.broadcast_to(x1, (len(ok), _BOX_POINTS)),
                         x0 + (x1 - x0) * t, np.broadcast_to(x0, (len(ok), _BOX_POINTS))], 1)
    ys = np.concatenate([np.broadcast_to(y0, (len(ok), _BOX_POINTS)), y0 + (y1 - y0) * t,
                         np.broadcast_to(y1, (len(ok), _BOX_POINTS)), y0 + (y1 - y0) * t], 1)
    if crs.is_geographic:
        lon, lat = xs, ys  # the prepared source keeps longitudes continuous across ±180°
    else:
        transformer = pyproj.Transformer.from_crs(crs, _WGS84, always_xy=True)
        lon, lat = transformer.transform(xs.ravel(), ys.ravel(), errcheck=False)
        lon = np.asarray(lon, dtype=float).reshape(xs.shape)
        lat = np.asarray(lat, dtype=float).reshape(xs.shape)
    with np.errstate(invalid="ignore"):
        spans = []
        for shift in (180.0, 0.0):  # longitudes in [-180, 180), then in [0, 360)
            wrapped = np.mod(lon + shift, 360.0) - shift
            lo, hi = np.nanmin(wrapped, axis=1), np.nanmax(wrapped, axis=1)
            spans.append((hi - lo, 0.5 * (lo + hi)))
        first = spans[0][0] <= spans[1][0]
        out[ok, 0] = np.where(first, spans[0][0], spans[1][0])
        out[ok, 1] = np.mod(np.where(first, spans[0][1], spans[1][1]) + 180.0, 360.0) - 180.0
        out[ok, 2] = np.nanmin(lat, axis=1)
        out[ok, 3] = np.nanmax(lat, axis=1)
    return out


def _lonlat_extent_of_large(geometries, crs: pyproj.CRS) -> np.ndarray:
    """``lonlat_extent`` for the geometries that may be wide or polar; the others (smaller
    than ``_SMALL_M`` and centred within ±``_LOW_LATITUDE_DEG``: less than 1.4° wide, within
    0.5° of their centre's latitude) get a span of 0 at their centre. Only one point per
    geometry is transformed for them (fields by the 100,000 cost nothing here)."""
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    out = np.full((len(geoms), 4), np.nan)
    with np.errstate(invalid="ignore"):
        bounds = shapely.bounds(geoms)
    ok = np.flatnonzero(np.isfinite(bounds).all(axis=1))
    if len(ok) == 0:
        return out
    b = bounds[ok]
    cx, cy = 0.5 * (b[:, 0] + b[:, 2]), 0.5 * (b[:, 1] + b[:, 3])
    if crs.is_geographic:
        lon, lat = cx, cy
        size_m = np.maximum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) * 111_320.0
    else:
        transformer = pyproj.Transformer.from_crs(crs, _WGS84, always_xy=True)
        lon, lat = (np.asarray(v, dtype=float) for v in transformer.transform(cx, cy,
                                                                              errcheck=False))
        unit = crs.axis_info[0].unit_conversion_factor if crs.axis_info else 1.0
        size_m = np.maximum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) * (unit or 1.0)
    with np.errstate(invalid="ignore"):
        small = (size_m < _SMALL_M) & (np.abs(lat) < _LOW_LATITUDE_DEG)
    out[ok[small]] = np.column_stack([np.zeros(small.sum()), lon[small], lat[small],
                                      lat[small]])
    large = ok[~small]
    if len(large):
        out[large] = lonlat_extent(geoms[large], crs)
    return out


def wide_pairs(reference, reference_crs: pyproj.CRS, predicted,
               predicted_crs: pyproj.CRS) -> tuple[np.ndarray, np.ndarray]:
    """Which pairs are wider than a UTM zone or reach beyond ±80°, and the CRS to measure each
    such pair in.

    Args:
        reference, predicted: object arrays, shape (n,), of each pair's polygons in
            ``reference_crs`` and ``predicted_crs`` (as ``boundary.ZonedLayer.source``).
    Returns:
        ``(wide, proj4)``: bool array, shape (n,); object array of PROJ strings ("" for the
        pairs that keep their UTM zone).
    """
    r = _lonlat_extent_of_large(reference, reference_crs)
    p = _lonlat_extent_of_large(predicted, predicted_crs)
    with np.errstate(invalid="ignore"):
        lat_min = np.fmin(r[:, 2], p[:, 2])
        lat_max = np.fmax(r[:, 3], p[:, 3])
        # Span of the two together: each span around its middle, joined on the circle.
        mid_r, mid_p = r[:, 1], p[:, 1]
        gap = np.mod(mid_p - mid_r + 180.0, 360.0) - 180.0  # p's middle from r's, in ±180
        lo = np.minimum(-0.5 * r[:, 0], gap - 0.5 * p[:, 0])
        hi = np.maximum(0.5 * r[:, 0], gap + 0.5 * p[:, 0])
        span = hi - lo
        middle = mid_r + 0.5 * (lo + hi)
        wide = (span > WIDE_LONGITUDE_DEG) | (lat_max > POLAR_LATITUDE_DEG) | (
            lat_min < -POLAR_LATITUDE_DEG)
    wide &= np.isfinite(r).all(axis=1) & np.isfinite(p).all(axis=1)
    proj4 = np.full(len(wide), "", dtype=object)
    for k in np.flatnonzero(wide):
        proj4[k] = conformal_proj4(float(middle[k]), float(lat_min[k]), float(lat_max[k]))
    return wide, proj4


def scale_gradients(lat_min: float, lat_max: float) -> dict[str, float]:
    """Largest relative gradient of the scale factor, |∇ ln k| times the Earth's radius, over
    the latitudes [lat_min, lat_max] (degrees), in Mercator and in the north and south polar
    stereographic CRSs (true scale at the pole; on the sphere: k = sec φ, d ln k / dφ =
    tan φ; k = 2 / (1 ± sin φ), |d ln k / dφ| = cos φ / (1 ± sin φ))."""
    lo, hi = np.radians(lat_min), np.radians(lat_max)
    with np.errstate(divide="ignore"):
        return {
            "merc": float(np.tan(max(abs(lo), abs(hi)))),
            "north": float(np.cos(lo) / (1 + np.sin(lo))) if lat_min > -90 else np.inf,
            "south": float(np.cos(hi) / (1 - np.sin(hi))) if lat_max < 90 else np.inf,
        }


def conformal_proj4(middle_lon: float, lat_min: float, lat_max: float) -> str:
    """PROJ string of the conformal CRS for a pair: of Mercator (centred on the pair's middle
    longitude, rounded to the degree so that pairs share CRSs) and the polar stereographic
    CRSs (true scale at the pole), the one whose scale factor changes least over the pair's
    latitudes (``scale_gradients``): Mercator near the equator, polar stereographic from
    about 25° to 35° of latitude on (and always beyond ±80°)."""
    gradients = scale_gradients(lat_min, lat_max)
    best = min(gradients, key=gradients.get)
    if best == "north":
        return "+proj=stere +lat_0=90 +lat_ts=90 +lon_0=0 +datum=WGS84 +units=m +no_defs"
    if best == "south":
        return "+proj=stere +lat_0=-90 +lat_ts=-90 +lon_0=0 +datum=WGS84 +units=m +no_defs"
    lon0 = int(np.round(middle_lon))
    lon0 = ((lon0 + 180) % 360) - 180
    return f"+proj=merc +lon_0={lon0} +datum=WGS84 +units=m +no_defs"


def scale_factor(proj4: str):
    """The local scale factor k(x, y) of a conformal CRS (PROJ string), vectorised: a
    callable taking float arrays of projected coordinates and returning k (float array)."""
    proj = pyproj.Proj(proj4)

    def k(x, y):
        lon, lat = proj(np.asarray(x, dtype=float), np.asarray(y, dtype=float), inverse=True,
                        errcheck=False)
        factors = proj.get_factors(lon, lat, errcheck=False)
        out = np.asarray(factors.parallel_scale, dtype=float)
        return np.where(np.isfinite(out) & (out > 0), out, np.inf)

    return k


def method_label(proj4: str) -> str:
    """Short name of a distance CRS for the per-field table."""
    if "+proj=stere" in proj4:
        pole = "north" if "+lat_0=90" in proj4 else "south"
        return f"{pole} polar stereographic, scale-corrected"
    lon0 = proj4.split("+lon_0=")[1].split()[0]
    return f"Mercator lon_0={lon0}, scale-corrected"


def to_conformal(geometries, crs: pyproj.CRS, proj4: str) -> np.ndarray:
    """Geometries transformed vertex by vertex from ``crs`` to the conformal CRS."""
    return to_crs(np.asarray(geometries, dtype=object), crs, pyproj.CRS.from_proj4(proj4))
