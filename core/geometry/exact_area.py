"""Exact areas, in a cylindrical equal-area CRS, of polygons whose edges are straight in
longitude/latitude: no densification.

The seed's meaning of an edge is a straight line in its source CRS, and its area is the area
of that line's image in the equal-area CRS. ``core.geometry.densify`` approximates the image by chords
(between points of a 50 m grid). For a geographic layer evaluated in a cylindrical
equal-area CRS (the default EPSG:6933, "WGS 84 / NSIDC EASE-Grid 2.0 Global") the image can
be integrated exactly instead, because the projection separates its coordinates (Snyder
1987, *Map Projections: A Working Manual*, USGS PP 1395, eqs. 10-15 and 3-12):

    x = a·k0·(λ - λ0) + x0,       y = a·q(φ) / (2·k0) + y0 =: g(φ),
    q(φ) = (1 - e²)·[sin φ / (1 - e² sin² φ) - ln((1 - e sin φ) / (1 + e sin φ)) / (2e)]
         = (1 - e²)·[sin φ / (1 - e² sin² φ) + atanh(e sin φ) / e],
    k0 = cos φ1 / sqrt(1 - e² sin² φ1)   (φ1 the standard parallel).

Along an edge straight in (λ, φ), parametrised by t in [0, 1], x is linear in t, so the
edge's term of the shoelace integral ∮ x dy = -∮ y dx is

    -Δx · ∫₀¹ g(φ0 + t·Δφ) dt,

a one-dimensional integral of a smooth function, computed by 4-point Gauss-Legendre on pieces
of at most ``MAX_PIECE_DEG`` of latitude. Its error is below h⁹·max|g⁽⁸⁾|·5.6e-10 per piece
of h radians (Abramowitz & Stegun 25.4.30), with |g⁽⁸⁾| of the order of a: under 1e-12 m of
mean y per piece, far below the rounding of the sums. A ring's area is then exact to rounding
(relative 1e-13 or so), and because an overlay of two such polygons (done in
longitude/latitude, where the edges are straight) has edges that are pieces of the inputs'
edges, intersections are measured exactly too. Where the 50 m pieces of ``densify`` are
off, they are off by their chords' sagitta: on the bench's real layers they differ from these
areas by up to a few 1e-9 relative (bench/README.md).

``LonLatArea.for_crs`` accepts a CRS only when PROJ's own projection of a grid of points
agrees with these formulas within ``FIT_TOLERANCE_M``, so the values are those of the CRS the
analyst chose, not of a look-alike.
"""

from __future__ import annotations

import math

import numpy as np
import pyproj
import shapely

#: Gauss-Legendre nodes and weights on [0, 1] (4 points: exact for polynomials of degree 7).
_NODES = 0.5 + 0.5 * np.array(
    [-0.8611363115940526, -0.3399810435848563, 0.3399810435848563, 0.8611363115940526]
)
_WEIGHTS = 0.5 * np.array(
    [0.3478548451374538, 0.6521451548625461, 0.6521451548625461, 0.3478548451374538]
)

#: Edges spanning more latitude than this (degrees) are integrated in this many-degree pieces.
MAX_PIECE_DEG = 1.0

#: A CRS is taken as cylindrical equal-area when PROJ and the formulas above agree within this
#: (metres) on a grid of points from pole to pole.
FIT_TOLERANCE_M = 1e-6

_POLYGON = 3
_COLLECTIONS = (4, 5, 6, 7)  # multi-point, multi-line, multi-polygon, collection


class LonLatArea:
    """Areas (m²) in a cylindrical equal-area CRS of geometries given in its longitude/latitude.

    Call with an object array of geometries, shape (n,), whose coordinates are longitude and
    latitude in the equal-area CRS's geodetic CRS (``lonlat_crs``, in its angular unit;
    longitudes may run past ±180°); returns a float array, shape (n,): the exact area of each
    geometry's image (module docstring), 0 for None, empty or non-polygonal geometries. The
    polygons must be valid (holes inside their shells), as GEOS leaves overlays and
    ``prepare`` leaves layers.
    """

    def __init__(self, lonlat_crs: pyproj.CRS, a: float, e2: float, k0: float,
                 x0: float, y0: float, unit_rad: float, central_meridian: float = 0.0,
                 x_central: float = 0.0):
        self.lonlat_crs = lonlat_crs
        self._a, self._e2, self._k0 = a, e2, k0
        self._x0, self._y0, self._unit = x0, y0, unit_rad
        #: λ0, in the geodetic CRS's unit: the CRS's world runs from λ0 - 180° to λ0 + 180°
        #: (where PROJ wraps x), not from -180° to 180° unless λ0 = 0.
        self.central_meridian = central_meridian
        self._x_central = x_central  # x of the central meridian (the false easting)

    @property
    def world_width(self) -> float:
        """Width (m) of the CRS's world along x: one full turn of longitude."""
        return 2.0 * math.pi * self._a * self._k0

    @classmethod
    def for_crs(cls, equal_area_crs: pyproj.CRS | None) -> LonLatArea | None:
        """The area function of ``equal_area_crs`` if it is a cylindrical equal-area
        projection (checked against PROJ on a grid of points), else None."""
        if equal_area_crs is None or not equal_area_crs.is_projected:
            return None
        operation = equal_area_crs.coordinate_operation
        if operation is None or "cylindrical equal area" not in operation.method_name.lower():
            return None
        lonlat = equal_area_crs.geodetic_crs
        if lonlat is None or not lonlat.is_geographic:
            return None
        try:
            unit_rad = float(lonlat.axis_info[0].unit_conversion_factor)
            ellipsoid = equal_area_crs.ellipsoid
            a = float(ellipsoid.semi_major_metre)
            inverse_flattening = float(ellipsoid.inverse_flattening)
            flattening = 1.0 / inverse_flattening if inverse_flattening > 0 else 0.0
            e2 = flattening * (2.0 - flattening)
            to_map = pyproj.Transformer.from_crs(lonlat, equal_area_crs, always_xy=True)
            half_turn = math.pi / unit_rad
            lon = np.linspace(-half_turn, half_turn, 13)
            lat = np.linspace(-0.99 * half_turn / 2, 0.99 * half_turn / 2, 23)
            lon, lat = np.meshgrid(lon, lat)
            x, y = to_map.transform(lon.ravel(), lat.ravel(), errcheck=True)
            x0_, y0_ = to_map.transform(0.0, 0.0, errcheck=True)
            central = _central_meridian(equal_area_crs) / unit_rad
            xc_, _ = to_map.transform(central, 0.0, errcheck=True)
            x1_, _ = to_map.transform(central + half_turn / 2, 0.0, errcheck=True)
            west, _ = to_map.transform(central - 0.999 * half_turn, 0.0, errcheck=True)
            east, _ = to_map.transform(central + 0.999 * half_turn, 0.0, errcheck=True)
        except (pyproj.exceptions.ProjError, pyproj.exceptions.CRSError, ValueError,
                ZeroDivisionError):
            return None
        # x = a·k0·(λ - λ0) + x0: read a·k0 from two points on the equator, a quarter turn
        # apart from the central meridian on (from 0° on, PROJ wraps x for λ0 < -90°).
        scale = (x1_ - xc_) / (math.pi / 2)
        if not np.isfinite(scale) or scale <= 0:
            return None
        k0 = scale / a
        probe = cls(lonlat, a, e2, k0, x0_, 0.0, unit_rad, central, xc_)
        # PROJ's x must run without a wrap from λ0 - 180° to λ0 + 180° (λ0 read right).
        if not abs((east - west) / (2 * 0.999 * math.pi * scale) - 1.0) < 1e-9:
            return None
        y_formula = probe.northing(lat.ravel())
        probe._y0 = y0_ - float(probe.northing(np.array([0.0]))[0])
        # PROJ wraps x half a turn from the central meridian; the formula runs on (areas do
        # not depend on where a ring is along x).
        world = 2.0 * math.pi * scale
        x_off = probe.easting(lon.ravel()) - x
        x_off -= np.round(x_off / world) * world
        if not (np.abs(x_off) <= FIT_TOLERANCE_M).all():
            return None
        if not (np.abs(y_formula + probe._y0 - y) <= FIT_TOLERANCE_M).all():
            return None
        return probe

    def easting(self, lon: np.ndarray) -> np.ndarray:
        """x (m) of longitudes in the geodetic CRS's unit (λ0 is in the offset x0)."""
        return self._a * self._k0 * (np.asarray(lon) * self._unit) + self._x0

    def unwrap_easting(self, lon: np.ndarray, x: np.ndarray) -> np.ndarray:
        """PROJ's eastings ``x`` (m) of longitudes ``lon`` (any shape), moved by whole turns to
        run on from the central meridian: longitudes in [λ0 - 180°, λ0 + 180°] get eastings in
        the CRS's world extent (PROJ gives λ0 + 180° the easting of λ0 - 180°, and 100° the
        easting of 460°). Non-finite eastings are returned as they are."""
        continuous = (self._a * self._k0 * self._unit * (np.asarray(lon) - self.central_meridian)
                      + self._x_central)
        world = self.world_width
        with np.errstate(invalid="ignore"):
            turns = np.round((continuous - x) / world)
        # Infinite x (PROJ's mark of a point it cannot map) stays as it is, not NaN: the
        # closing point of a ring must stay equal to its first.
        return x + np.where(np.isfinite(turns), turns, 0.0) * world

    def northing(self, lat: np.ndarray) -> np.ndarray:
        """y (m) of latitudes in the geodetic CRS's unit (Snyder 10-15 with 3-12)."""
        s = np.sin(np.asarray(lat, dtype=float) * self._unit)
        e2 = self._e2
        if e2 < 1e-15:
            q = 2.0 * s
        else:
            e = math.sqrt(e2)
            # -ln((1 - e s) / (1 + e s)) / (2e) = atanh(e s) / e, without the log's loss of
            # digits near the equator.
            q = (1.0 - e2) * (s / (1.0 - e2 * s * s) + np.arctanh(e * s) / e)
        return self._a * q / (2.0 * self._k0) + self._y0

    def __call__(self, geoms) -> np.ndarray:
        geoms = np.asarray(geoms, dtype=object).reshape(-1)
        out = np.zeros(len(geoms))
        polygons, row = polygons_with_rows(geoms)
        if len(polygons) == 0:
            return out
        rings, ring_polygon = shapely.get_rings(polygons, return_index=True)
        coords, coord_ring = shapely.get_coordinates(rings, return_index=True)
        ring_area = self._ring_areas(coords, coord_ring, len(rings))
        shell = np.r_[True, ring_polygon[1:] != ring_polygon[:-1]]
        signed = np.where(shell, ring_area, -ring_area)
        polygon_area = np.bincount(ring_polygon, weights=signed, minlength=len(polygons))
        np.add.at(out, row, np.maximum(polygon_area, 0.0))
        return out

    def _ring_areas(self, coords: np.ndarray, coord_ring: np.ndarray, n_rings: int):
        """|area| of each closed ring, shape (n_rings,)."""
        if len(coords) < 2:
            return np.zeros(n_rings)
        same = coord_ring[1:] == coord_ring[:-1]
        edge_ring = coord_ring[1:][same]
        lon0, lon1 = coords[:-1, 0][same], coords[1:, 0][same]
        lat0, lat1 = coords[:-1, 1][same], coords[1:, 1][same]
        dx = self._a * self._k0 * self._unit * (lon1 - lon0)
        # Heights are measured from each ring's first latitude: the sum of dx over a closed
        # ring is 0, and the terms stay small (no cancellation of 10⁶ m products).
        first = np.flatnonzero(np.r_[True, edge_ring[1:] != edge_ring[:-1]])
        base = np.repeat(self.northing(lat0[first]), np.diff(np.r_[first, len(edge_ring)]))
        mean_y = self._mean_northing(lat0, lat1) - base
        return np.abs(np.bincount(edge_ring, weights=-dx * mean_y, minlength=n_rings))

    def _mean_northing(self, lat0: np.ndarray, lat1: np.ndarray) -> np.ndarray:
        """Mean of g(φ) over each edge's latitudes, shape (n_edges,)."""
        dlat = lat1 - lat0
        limit = MAX_PIECE_DEG * (math.pi / 180.0) / self._unit
        pieces = np.maximum(np.ceil(np.abs(dlat) / limit), 1.0).astype(np.int64)
        if (pieces == 1).all():
            t = lat0[:, None] + dlat[:, None] * _NODES[None, :]
            return self.northing(t) @ _WEIGHTS
        # Long edges: the mean over m pieces is the mean of the pieces' means.
        edge = np.repeat(np.arange(len(dlat)), pieces)
        k = np.arange(len(edge)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
        step = dlat[edge] / pieces[edge]
        start = lat0[edge] + k * step
        t = start[:, None] + step[:, None] * _NODES[None, :]
        piece_mean = self.northing(t) @ _WEIGHTS
        return np.bincount(edge, weights=piece_mean, minlength=len(dlat)) / pieces


def _central_meridian(crs: pyproj.CRS) -> float:
    """The CRS's longitude of natural origin (EPSG parameter 8802) in radians, 0 if absent."""
    for param in crs.coordinate_operation.params:
        if param.code == "8802" or param.name.lower() == "longitude of natural origin":
            return float(param.value) * float(param.unit_conversion_factor)
    return 0.0


def polygons_with_rows(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty polygons inside each geometry (through multi-parts and collections,
    nested up to four deep) and the row each came from: object array of shape (n,) in,
    (polygons, rows) of shapes (m,) out, in row order of first appearance."""
    present = np.flatnonzero(~shapely.is_missing(geoms))
    parts, row = geoms[present], present
    for _ in range(4):  # collections nest rarely, and never deeper in GEOS's overlay output
        nested = np.isin(shapely.get_type_id(parts), _COLLECTIONS)
        if not nested.any():
            break
        inner, at = shapely.get_parts(parts[nested], return_index=True)
        row = np.concatenate([row[~nested], row[nested][at]])
        parts = np.concatenate([parts[~nested], inner])
    keep = (shapely.get_type_id(parts) == _POLYGON) & ~shapely.is_empty(parts)
    return parts[keep], row[keep]


def lonlat_area_for(crs_list, equal_area_crs: pyproj.CRS | None) -> LonLatArea | None:
    """The exact longitude/latitude area function for layers in ``crs_list`` (pyproj CRSs)
    evaluated in ``equal_area_crs``, or None when it does not apply: the equal-area CRS is not
    cylindrical equal-area, or a layer's CRS is not geographic (its straight edges would be
    curves in longitude/latitude: ``densify`` handles those)."""
    area = LonLatArea.for_crs(equal_area_crs)
    if area is None:
        return None
    if not all(crs is not None and crs.is_geographic for crs in crs_list):
        return None
    return area
