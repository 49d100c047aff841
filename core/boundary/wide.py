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
there (the same in every direction). Each piece of boundary has its distances and length
divided by k at its middle (``boundary.pair_boundary_distances(..., scale=,
scale_gradient=)``); pieces are at most 1.5 km / g long in the CRS (500 m to 20 km), so ln k
changes along one by at most 2.4e-4 (for g <= 3). k is computed in closed form from the
projected coordinates (``mercator_scale``, ``polar_stereographic_scale``; no PROJ call per
piece), and every Mercator (whatever its central meridian) shares one k(y), both polar
stereographic CRSs one k(ρ): the pairs of each kind are measured together (``scale_group``).

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

from ..geometry.crs import to_crs, transformer
from ..util.parallel import run_chunks

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
        to_lonlat = transformer(crs, _WGS84)
        lon, lat = to_lonlat.transform(xs.ravel(), ys.ravel(), errcheck=False)
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


def lonlat_extent_of_large(geometries, crs: pyproj.CRS) -> np.ndarray:
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
        to_lonlat = transformer(crs, _WGS84)
        lon, lat = (np.asarray(v, dtype=float)
                    for v in to_lonlat.transform(cx, cy, errcheck=False))
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
               predicted_crs: pyproj.CRS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which pairs are wider than a UTM zone or reach beyond ±80°, the CRS to measure each
    such pair in, and the largest relative gradient of its scale factor over the pair.

    Args:
        reference, predicted: object arrays, shape (n,), of each pair's polygons in
            ``reference_crs`` and ``predicted_crs`` (as ``boundary.ZonedLayer.source``).
    Returns:
        ``(wide, proj4, gradient)``: bool array, shape (n,); object array of PROJ strings (""
        for the pairs that keep their UTM zone); float array, shape (n,): g = R |∇ln k| over
        the pair's latitudes in its CRS (``scale_gradients``), NaN for the other pairs.
    """
    r = lonlat_extent_of_large(reference, reference_crs)
    p = lonlat_extent_of_large(predicted, predicted_crs)
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
    gradient = np.full(len(wide), np.nan)
    for k in np.flatnonzero(wide):
        proj4[k], gradient[k] = _conformal_choice(float(middle[k]), float(lat_min[k]),
                                                  float(lat_max[k]))
    return wide, proj4, gradient


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
    return _conformal_choice(middle_lon, lat_min, lat_max)[0]


def _conformal_choice(middle_lon: float, lat_min: float, lat_max: float) -> tuple[str, float]:
    """``conformal_proj4`` and the gradient g of its scale factor over the latitudes."""
    gradients = scale_gradients(lat_min, lat_max)
    best = min(gradients, key=gradients.get)
    if best == "north":
        return ("+proj=stere +lat_0=90 +lat_ts=90 +lon_0=0 +datum=WGS84 +units=m +no_defs",
                gradients[best])
    if best == "south":
        return ("+proj=stere +lat_0=-90 +lat_ts=-90 +lon_0=0 +datum=WGS84 +units=m +no_defs",
                gradients[best])
    lon0 = int(np.round(middle_lon))
    lon0 = ((lon0 + 180) % 360) - 180
    return f"+proj=merc +lon_0={lon0} +datum=WGS84 +units=m +no_defs", gradients[best]


def scale_group(proj4: str) -> str:
    """A key shared by the conformal CRSs that have the same ``scale_factor`` as a function
    of their projected coordinates: "merc" for every Mercator of ``conformal_proj4`` (k
    depends on the northing only, not on the central meridian), "stere" for both polar
    stereographic ones (k depends on the distance from the pole), the string itself for any
    other CRS. Pairs measured in CRSs of one group can be measured together."""
    kind = _closed_form(proj4)
    return kind if kind is not None else proj4


def _closed_form(proj4: str) -> str | None:
    """"merc" or "stere" when ``scale_factor`` has a closed form for this PROJ string."""
    params = dict(item.lstrip("+").partition("=")[::2] for item in proj4.split())
    if params.get("datum") != "WGS84" or params.get("units") != "m" or any(
        params.get(key, "0") not in ("0", "0.0") for key in ("x_0", "y_0")
    ) or params.get("k", "1") not in ("1", "1.0") or params.get("k_0", "1") not in ("1", "1.0"):
        return None
    if params.get("proj") == "merc" and params.get("lat_ts", "0") in ("0", "0.0"):
        return "merc"
    if (params.get("proj") == "stere" and params.get("lat_0") in ("90", "-90")
            and params.get("lat_ts") == params.get("lat_0")):
        return "stere"
    return None


def scale_factor(proj4: str):
    """The local scale factor k(x, y) of a conformal CRS (PROJ string), vectorised: a
    callable taking float arrays of projected coordinates and returning k (float array).

    For the CRSs of ``conformal_proj4`` (Mercator, polar stereographic true at the pole, on
    WGS 84) k is computed in closed form from the projected coordinates
    (``mercator_scale``, ``polar_stereographic_scale``); any other CRS asks PROJ (inverse
    projection, then ``Proj.get_factors``). Non-finite or non-positive factors give inf.
    """
    kind = _closed_form(proj4)
    if kind == "merc":
        return lambda x, y: _finite_scale(mercator_scale(y))
    if kind == "stere":
        return lambda x, y: _finite_scale(polar_stereographic_scale(x, y))
    proj = pyproj.Proj(proj4)

    def k(x, y):
        lon, lat = proj(np.asarray(x, dtype=float), np.asarray(y, dtype=float), inverse=True,
                        errcheck=False)
        factors = proj.get_factors(lon, lat, errcheck=False)
        return _finite_scale(np.asarray(factors.parallel_scale, dtype=float))

    return k


def _finite_scale(k):
    return np.where(np.isfinite(k) & (k > 0), k, np.inf)


#: WGS 84: semi-major axis (m), first eccentricity.
_A = 6378137.0
_E = float(np.sqrt((1.0 / 298.257223563) * (2.0 - 1.0 / 298.257223563)))

_E2 = _E * _E

#: The series of the latitude in the conformal latitude (Snyder 1987, eq. 3-5): coefficients
#: of sin 2χ, sin 4χ, sin 6χ, sin 8χ; it is within 1e-11 of the latitude (terms in e¹⁰).
_SERIES = (
    _E2 / 2 + 5 * _E2**2 / 24 + _E2**3 / 12 + 13 * _E2**4 / 360,
    7 * _E2**2 / 48 + 29 * _E2**3 / 240 + 811 * _E2**4 / 11520,
    7 * _E2**3 / 120 + 81 * _E2**4 / 1120,
    4279 * _E2**4 / 161280,
)

#: Fixed-point steps after the series: each gains a factor of about e² (6.7e-3), so one
#: takes the series' 2e-12 rad to 2e-14 rad.
_LATITUDE_STEPS = 1


def _colatitude(t):
    """Geodetic colatitude θ = 90° - φ (radians, in [0, π]) from t = tan(θ'/2) of the
    conformal colatitude θ' (t >= 0): the series in θ' (Snyder 1987, eq. 3-5, written for
    the colatitude: sin 2kχ = (-1)^(k+1) sin 2kθ'), then steps of the fixed point
    θ = 2 atan(t ((1 - e cos θ) / (1 + e cos θ))^(e/2)) (eq. 7-9). In the colatitude there
    is no cancellation near the pole."""
    theta_c = 2.0 * np.arctan(t)
    s2, c2 = np.sin(2.0 * theta_c), np.cos(2.0 * theta_c)
    s4, c4 = 2.0 * s2 * c2, 2.0 * c2 * c2 - 1.0
    s6 = s4 * c2 + c4 * s2
    s8 = 2.0 * s4 * c4
    a1, a2, a3, a4 = _SERIES
    theta = theta_c - (a1 * s2 - a2 * s4 + a3 * s6 - a4 * s8)
    for _ in range(_LATITUDE_STEPS):
        c = _E * np.cos(theta)
        theta = 2.0 * np.arctan(t * ((1.0 - c) / (1.0 + c)) ** (0.5 * _E))
    return theta


def mercator_scale(y) -> np.ndarray:
    """Scale factor of Mercator on WGS 84 (``+proj=merc``, true scale at the equator, no
    false northing) at projected northings ``y`` (metres, float array): k = sqrt(1 - e² sin²
    φ) / cos φ, φ the latitude of y (y = a ψ, ψ the isometric latitude, t = exp(-ψ)).
    Source: Snyder 1987, Map Projections: A Working Manual, eqs. 7-9 and 7-8."""
    with np.errstate(over="ignore", invalid="ignore"):
        theta = _colatitude(np.exp(-np.asarray(y, dtype=float) / _A))
        c = _E * np.cos(theta)
        return np.sqrt(1.0 - c * c) / np.sin(theta)


def polar_stereographic_scale(x, y) -> np.ndarray:
    """Scale factor of the polar stereographic projection on WGS 84, true scale at the pole
    (``+proj=stere +lat_0=±90 +lat_ts=±90``, no false easting or northing), at projected
    coordinates (metres, float arrays): k = ρ sqrt(1 - e² sin² φ) / (a cos φ), ρ the distance
    from the pole, t = ρ sqrt((1 + e)^(1 + e) (1 - e)^(1 - e)) / (2 a); 1 at the pole.
    The same for both poles (symmetry). Source: Snyder 1987, eqs. 21-33, 21-39 and 7-9."""
    rho = np.hypot(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    c_e = np.sqrt((1.0 + _E) ** (1.0 + _E) * (1.0 - _E) ** (1.0 - _E))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        theta = _colatitude(rho * c_e / (2.0 * _A))
        c = _E * np.cos(theta)
        k = rho * np.sqrt(1.0 - c * c) / (_A * np.sin(theta))
    return np.where(rho > 0, k, 1.0)


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


#: Reprojections of many geometries run in parts of about this many vertices, on both
#: cores (PROJ's transformation releases the GIL).
_TRANSFORM_VERTICES = 100_000


def to_crs_in_parts(geometries, source: pyproj.CRS, keys, crs_of) -> np.ndarray:
    """Each geometry transformed vertex by vertex from ``source`` to its own CRS.

    Args:
        geometries: object array, shape (n,) (None allowed).
        source: their CRS.
        keys: array, shape (n,), of hashable, sortable keys (EPSG codes, PROJ strings): the
            target of each geometry.
        crs_of: callable(key) -> pyproj.CRS.
    Returns:
        object array, shape (n,): the geometries in their targets (each vertex transformed
        as ``crs.to_crs`` does; the parts change nothing but the time).
    """
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    keys = np.asarray(keys).reshape(-1)
    out = np.empty(len(geoms), dtype=object)
    parts = []
    for key in np.unique(keys) if len(keys) else []:
        sel = np.flatnonzero(keys == key)
        total = np.cumsum(shapely.get_num_coordinates(geoms[sel]))
        cuts = np.searchsorted(total, np.arange(_TRANSFORM_VERTICES, int(total[-1]),
                                                _TRANSFORM_VERTICES), side="right")
        edges = np.unique(np.r_[0, cuts, len(sel)])
        parts += [(key, sel[a:b]) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    targets = {key: crs_of(key) for key in {part[0] for part in parts}}

    def run(part):
        key, sel = part
        out[sel] = to_crs(geoms[sel], source, targets[key])

    run_chunks(run, parts)
    return out


def pairs_to_conformal(reference, reference_crs: pyproj.CRS, predicted,
                       predicted_crs: pyproj.CRS, proj4) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's two polygons transformed vertex by vertex to its conformal CRS.

    Args:
        reference, predicted: object arrays, shape (n,), in their CRSs.
        proj4: object array, shape (n,): the PROJ string of each pair (``wide_pairs``).
    Returns:
        ``(reference, predicted)``: object arrays, shape (n,). With one source CRS, both
        sides are transformed together (``to_crs_in_parts``: on both cores).
    """
    ref = np.asarray(reference, dtype=object).reshape(-1)
    pred = np.asarray(predicted, dtype=object).reshape(-1)
    keys = np.asarray(proj4, dtype=object).reshape(-1).astype(str)
    n = len(ref)

    def crs_of(key):
        return pyproj.CRS.from_proj4(str(key))

    if reference_crs == predicted_crs:
        both = to_crs_in_parts(np.concatenate([ref, pred]), reference_crs,
                               np.concatenate([keys, keys]), crs_of)
        return both[:n], both[n:]
    return (to_crs_in_parts(ref, reference_crs, keys, crs_of),
            to_crs_in_parts(pred, predicted_crs, keys, crs_of))
