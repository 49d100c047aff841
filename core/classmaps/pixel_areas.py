"""Pixel areas of a class raster's grid on the ground, in m².

A pixel's area in the plane of a projected CRS is |det(geotransform)|; on the ground it is that
divided by the CRS's areal scale there (4.0 at 60° N in Web Mercator: a 2 km square of the
plane is 1 km² of ground). Areas are always on the ground, on the CRS's ellipsoid:

- **geographic CRS**: each row's cell, bounded by two parallels and two meridians, exactly
  (authalic-latitude formula, Snyder 1987, "Map Projections: A Working Manual", USGS PP 1395,
  eqs. 3-12 and p. 77): (a² Δλ / 2) (q(φ₂) − q(φ₁));
- **projected CRS**: the grid is cut into lattice cells of ``step`` × ``step`` pixels (edges
  of at most ``MAX_CELL_EDGE_M`` on the ground, at most ``MAX_CELLS`` cells); each cell's
  corners go to longitude/latitude through PROJ, then to the authalic sphere of the
  ellipsoid (same area as the ellipsoid, Snyder eq. 3-11), where the cell's area is that of
  its two spherical triangles (Van Oosterom & Strackee 1983, "The solid angle of a plane
  triangle", IEEE Trans. Biomed. Eng. 30(2)). A cell's pixels share its area equally: each
  cell's total is exact up to the bending of its edges (relative (edge / R)², below 1e-8
  for 500 m edges); one pixel's area is off by at most the change of scale across its cell,
  reported as ``per_pixel_relative_bound`` (the largest relative difference between two
  neighbouring cells). A CRS whose ground area equals its plane area within
  ``EQUAL_AREA_TOLERANCE`` everywhere on the grid (an equal-area CRS) keeps the plane area;
- **an engineering (local) CRS** (no geodetic datum): the plane area in m², with a note;
- **no CRS**: squared pixel units, with a note.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyproj

from ..geometry.crs import crs_label
from ..util.wording import count_of, plural

#: Lattice cells of a projected grid: edges of at most this on the ground (metres)...
MAX_CELL_EDGE_M = 500.0
#: ... and at most this many pixels on a side, and at most this many cells in all.
MAX_STEP = 64
MAX_CELLS = 1_000_000
#: Ground and plane areas within this (relative) everywhere: the CRS is taken as equal-area.
EQUAL_AREA_TOLERANCE = 1e-6
#: Plane areas further than this from the ground (relative) are reported in a note, as the
#: vector side reports an equal-area CRS that is not (core.crs.AREA_CHANGE_TOLERANCE).
NOTE_TOLERANCE = 1e-4


@dataclass(frozen=True)
class PixelAreas:
    """The ground area of every pixel of a grid.

    Attributes:
        uniform_m2: the area of every pixel when they are all equal, else None.
        rows_m2: float64 (height,) area of a pixel of each row (geographic CRS), else None.
        cells_m2: float64 (n_cell_rows, n_cell_columns) area of a pixel of each lattice cell
            of ``step`` × ``step`` pixels (projected CRS that is not equal-area), else None.
        step: lattice cell size in pixels.
        note: a sentence for the report ("" when none is needed).
        description: JSON-ready dict for the report's alignment section.
    """

    uniform_m2: float | None = None
    rows_m2: np.ndarray | None = None
    cells_m2: np.ndarray | None = None
    step: int = 1
    note: str = ""
    description: dict = field(default_factory=dict)

    @property
    def uniform(self) -> bool:
        return self.uniform_m2 is not None

    def block(self, r0: int, r1: int, width: int) -> np.ndarray:
        """Pixel areas of rows r0..r1: float64 of shape (r1 - r0, width), or broadcastable
        to it ((r1 - r0, 1) when a row's pixels are equal)."""
        if self.uniform_m2 is not None:
            return np.full((r1 - r0, 1), self.uniform_m2)
        if self.rows_m2 is not None:
            return self.rows_m2[r0:r1, None]
        rows = np.arange(r0, r1) // self.step
        columns = np.arange(width) // self.step
        return self.cells_m2[np.ix_(rows, columns)]

    def row_areas(self, height: int, width: int) -> np.ndarray:
        """Mean pixel area of each row, float64 (height,)."""
        if self.uniform_m2 is not None:
            return np.full(height, self.uniform_m2)
        if self.rows_m2 is not None:
            return self.rows_m2.copy()
        return self.block(0, height, width).mean(axis=1)


def pixel_areas(geotransform, width: int, height: int, crs: pyproj.CRS | None,
                rotated: bool = False) -> PixelAreas:
    """The ``PixelAreas`` of a grid of ``width`` × ``height`` pixels with GDAL's
    ``geotransform`` in ``crs`` (pyproj CRS or None). See the module docstring."""
    gt = geotransform
    det = abs(gt[1] * gt[5] - gt[2] * gt[4])
    if crs is None:
        return PixelAreas(uniform_m2=det, note="the rasters have no CRS: areas are in "
                          "squared pixel units, not m²", description={"method": "pixel units"})
    if crs.is_geographic:
        return _geographic(gt, height, crs, rotated)
    factor = crs.axis_info[0].unit_conversion_factor if crs.axis_info else 1.0
    plane_m2 = det * factor * factor
    if crs.geodetic_crs is None:
        # An engineering (local) CRS, as a site survey or a drone mosaic has: no ellipsoid to
        # place the grid on (PROJ has no transformation to longitude/latitude).
        return PixelAreas(uniform_m2=plane_m2, note=(
            f"the reference CRS {crs.name!r} is a local (engineering) CRS, not tied to "
            f"the Earth: areas are in its plane"),
            description={"method": "plane (engineering CRS)", "plane_pixel_m2": plane_m2})
    ground, step, failed = _lattice_ground_areas(gt, width, height, crs, plane_m2)
    ratio = plane_m2 / ground
    finite = np.isfinite(ratio)
    description = {"method": "ground", "plane_pixel_m2": plane_m2, "lattice_step_pixels": step}
    if not finite.any():
        return PixelAreas(uniform_m2=plane_m2, note=(
            f"PROJ cannot place the grid of {crs_label(crs)} on the ellipsoid: areas are in "
            f"the plane of the CRS"), description={"method": "plane", "plane_pixel_m2": plane_m2})
    low, high = float(ratio[finite].min()), float(ratio[finite].max())
    description["plane_to_ground_factor"] = [low, high]
    if max(abs(low - 1), abs(high - 1)) <= EQUAL_AREA_TOLERANCE and not failed:
        description["method"] = "plane (equal-area CRS)"
        return PixelAreas(uniform_m2=plane_m2, description=description)
    ground = np.where(np.isfinite(ground), ground, plane_m2)
    bound = _neighbour_spread(ground)
    description["per_pixel_relative_bound"] = bound
    note = ""
    if max(abs(low - 1), abs(high - 1)) > NOTE_TOLERANCE:
        spread = f"{low:.6g}" if high - low < 5e-6 * high else f"{low:.6g} to {high:.6g}"
        note = (f"the reference CRS {crs_label(crs)} is not equal-area: a pixel's area in its "
                f"plane is {spread} times its area on the ground; areas are on the ground "
                f"({_ellipsoid_name(crs)} ellipsoid)")
    if failed:
        note = (note + "; " if note else "") + (
            f"{count_of(failed, 'lattice cell')} of {step} × {step} "
            f"{plural(step * step, 'pixel')} could not be placed on the ellipsoid (PROJ): "
            f"their pixels keep the plane area")
    return PixelAreas(cells_m2=ground, step=step, note=note, description=description)


def _ellipsoid_name(crs) -> str:
    ellipsoid = crs.ellipsoid
    return ellipsoid.name if ellipsoid is not None else "its"


def _geographic(gt, height, crs, rotated) -> PixelAreas:
    ellipsoid = crs.ellipsoid
    a, inv_f = ellipsoid.semi_major_metre, ellipsoid.inverse_flattening
    e2 = 0.0 if not inv_f else (2 - 1 / inv_f) / inv_f
    radians = crs.axis_info[0].unit_conversion_factor
    lat_edges = (gt[3] + np.arange(height + 1) * gt[5]) * radians
    q = authalic_q(np.clip(lat_edges, -math.pi / 2, math.pi / 2), e2)
    areas = a * a * abs(gt[1] * radians) / 2 * np.abs(np.diff(q))
    note = "" if not rotated else (
        "the reference raster is rotated in a geographic CRS: cell areas ignore the rotation")
    return PixelAreas(rows_m2=areas, note=note,
                      description={"method": "ground (cells between parallels)"})


def _lattice_ground_areas(gt, width, height, crs, plane_m2):
    """(float64 (n_cell_rows, n_cell_columns) ground area of a pixel of each cell, NaN where
    PROJ fails; step; number of failed cells)."""
    pixel_m = math.sqrt(plane_m2) if plane_m2 > 0 else 1.0
    step = int(max(1, min(MAX_STEP, MAX_CELL_EDGE_M // pixel_m)))
    step = max(step, math.ceil(math.sqrt(width * height / MAX_CELLS)))
    col_nodes = np.unique(np.r_[np.arange(0, width, step), width]).astype(np.float64)
    row_nodes = np.unique(np.r_[np.arange(0, height, step), height]).astype(np.float64)
    cc, rr = np.meshgrid(col_nodes, row_nodes)
    x = gt[0] + cc * gt[1] + rr * gt[2]
    y = gt[3] + cc * gt[4] + rr * gt[5]
    geodetic = crs.geodetic_crs
    to_lonlat = pyproj.Transformer.from_crs(crs, geodetic, always_xy=True)
    lon, lat = to_lonlat.transform(x, y, errcheck=False)
    radians = geodetic.axis_info[0].unit_conversion_factor if geodetic.axis_info else (
        math.pi / 180)
    lon, lat = np.asarray(lon) * radians, np.asarray(lat) * radians
    ellipsoid = crs.ellipsoid
    a, inv_f = ellipsoid.semi_major_metre, ellipsoid.inverse_flattening
    e2 = 0.0 if not inv_f else (2 - 1 / inv_f) / inv_f
    with np.errstate(invalid="ignore"):
        q_pole = float(authalic_q(np.array([math.pi / 2]), e2)[0])
        beta = np.arcsin(np.clip(authalic_q(np.clip(lat, -math.pi / 2, math.pi / 2), e2)
                                 / q_pole, -1, 1))
        beta = np.where(np.isfinite(lat) & np.isfinite(lon), beta, np.nan)
    radius2 = a * a * q_pole / 2
    unit = np.stack([np.cos(beta) * np.cos(lon), np.cos(beta) * np.sin(lon), np.sin(beta)],
                    axis=-1)
    p00, p01 = unit[:-1, :-1], unit[:-1, 1:]
    p10, p11 = unit[1:, :-1], unit[1:, 1:]
    with np.errstate(invalid="ignore"):
        excess = _triangle_excess(p00, p01, p11) + _triangle_excess(p00, p11, p10)
    cell_m2 = np.abs(excess) * radius2
    pixels = np.outer(np.diff(row_nodes), np.diff(col_nodes))
    per_pixel = cell_m2 / pixels
    per_pixel = np.where(np.isfinite(per_pixel) & (per_pixel > 0), per_pixel, np.nan)
    return per_pixel, step, int(np.count_nonzero(np.isnan(per_pixel)))


def _triangle_excess(a, b, c) -> np.ndarray:
    """Signed spherical excess of triangles of unit vectors (..., 3) (Van Oosterom &
    Strackee): 2 atan2(a · (b × c), 1 + a·b + b·c + c·a), the triple product taken on the
    differences b − a, c − a so that small triangles keep their precision."""
    triple = np.einsum("...i,...i->...", a, np.cross(b - a, c - a))
    denominator = 1 + (np.einsum("...i,...i->...", a, b) + np.einsum("...i,...i->...", b, c)
                       + np.einsum("...i,...i->...", c, a))
    return 2 * np.arctan2(triple, denominator)


def _neighbour_spread(cells: np.ndarray) -> float:
    """Largest relative difference between the pixel areas of two neighbouring cells."""
    spreads = [0.0]
    for axis in (0, 1):
        if cells.shape[axis] > 1:
            a = np.take(cells, range(cells.shape[axis] - 1), axis=axis)
            b = np.take(cells, range(1, cells.shape[axis]), axis=axis)
            spreads.append(float(np.max(np.abs(b / a - 1))))
    return max(spreads)


def authalic_q(phi: np.ndarray, e2: float) -> np.ndarray:
    """Snyder's q(φ) (eq. 3-12): the sphere's 2 sin φ when e = 0."""
    s = np.sin(phi)
    if e2 == 0:
        return 2 * s
    e = math.sqrt(e2)
    return (1 - e2) * (s / (1 - e2 * s * s) - np.log((1 - e * s) / (1 + e * s)) / (2 * e))
