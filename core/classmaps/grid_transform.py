"""Where each reference pixel centre falls on the predicted grid: fractional predicted pixel
coordinates, exact or approximated within a stated bound.

The map goes reference pixel → reference CRS (geotransform) → predicted CRS (PROJ, through
pyproj) → longitude wrap → predicted pixel (inverse geotransform). Nearest neighbour takes
the predicted pixel ⌊column⌋, ⌊row⌋.

**Longitude wrap, as GDAL does it.** When the predicted CRS is geographic, GDAL's warper
centres longitudes on the predicted raster (``InsertCenterLong`` in ``alg/gdaltransformer.cpp``:
CENTER_LONG = the middle of the longitudes of the raster's four corners, when they span at
most 360°): a longitude is moved by whole turns into [CENTER_LONG − 180°, CENTER_LONG +
180°]. A prediction stored in 0…360° then meets a reference in −180…180° pixel for pixel,
and the other way round.

**Approximate transform.** PROJ for every pixel centre costs about a microsecond each.
As GDAL's approximate transformer does (``GDALApproxTransform``: exact at the ends and the
middle of a run of points, linear in between when the middle is within the error threshold),
the block is cut into cells of 64 × 64 pixels (``CELL_PIXELS``); PROJ
places each cell's four corners and five check points (the centre and the middles of the four
edges) exactly, and the cell's pixels are interpolated bilinearly between the corners when
every check point is within ``max_error_px`` predicted pixels of its interpolated place (in
each coordinate). For a map whose second derivatives are about constant over a cell (any
projection at cell sizes far below its radius of curvature) the interpolation error is
largest at those points (it is u(1 − u)·f_uu/2 + v(1 − v)·f_vv/2, largest at u = v = 1/2, and
f_uv is interpolated exactly). A cell that fails (near a singularity, across the wrap
longitude or the edge of the projection's domain) is cut into cells of 16, then 4 pixels
tested the same way, and the pixels of a 4-pixel cell that fails are placed one by one. The default
threshold ``TRANSFORM_ERROR_PX`` = 0.01 pixel is far below GDAL's own default for gdalwarp
(0.125 pixel): only a pixel centre within 0.01 pixel of a predicted pixel edge can take its
neighbour.
"""

from __future__ import annotations

import math

import numpy as np
import pyproj

from ..geometry.crs import crs_label

#: Largest error of the approximate transform at the check points, in predicted pixels.
TRANSFORM_ERROR_PX = 0.01
#: Cell sizes of the approximate transform, in reference pixels: a cell that fails is cut
#: into cells of the next size; a cell of the last size that fails is placed pixel by pixel.
CELL_PIXELS = (64, 16, 4)


def invert_geotransform(gt) -> tuple:
    """GDAL's inverse geotransform: (col0, dcol/dx, dcol/dy, row0, drow/dx, drow/dy).

    Raises ValueError when the geotransform is degenerate (zero pixel size)."""
    det = gt[1] * gt[5] - gt[2] * gt[4]
    if det == 0:
        raise ValueError("a raster's geotransform is degenerate (zero pixel size)")
    a, b, c, d = gt[5] / det, -gt[2] / det, -gt[4] / det, gt[1] / det
    return (-(a * gt[0] + b * gt[3]), a, b, -(c * gt[0] + d * gt[3]), c, d)


def longitude_wrap(crs, geotransform, width: int, height: int):
    """(low, high, turn) of GDAL's CENTER_LONG wrap for a raster in a geographic CRS (its
    longitudes moved by whole turns into [low, high]), in the CRS's angular unit; None when
    the CRS is not geographic or the raster spans more than a turn."""
    if crs is None or not crs.is_geographic:
        return None
    unit = crs.axis_info[0].unit_conversion_factor if crs.axis_info else math.pi / 180
    turn = 2 * math.pi / unit
    gt = geotransform
    corners = [gt[0] + c * gt[1] + r * gt[2] for c in (0, width) for r in (0, height)]
    low, high = min(corners), max(corners)
    if high - low > turn:
        return None
    centre = (low + high) / 2
    return centre - turn / 2, centre + turn / 2, turn


def wrap_longitudes(x: np.ndarray, wrap) -> np.ndarray:
    """``x`` moved by whole turns into [low, high] (``longitude_wrap``)."""
    if wrap is None:
        return x
    low, high, turn = wrap
    with np.errstate(invalid="ignore"):
        x = np.where(x < low, x + turn * np.ceil((low - x) / turn), x)
        return np.where(x > high, x - turn * np.ceil((x - high) / turn), x)


class GridTransform:
    """Reference pixel coordinates → fractional predicted pixel coordinates.

    Args:
        reference, predicted: objects with ``geotransform``, ``width``, ``height`` and
            ``crs`` (pyproj CRS or None), as ``rasters.RasterBand``.
        max_error_px: error bound of the approximate transform in predicted pixels
            (``TRANSFORM_ERROR_PX``); 0 places every pixel centre through PROJ.

    Raises ValueError when the reference CRS cannot be transformed to the predicted one.
    """

    def __init__(self, reference, predicted, max_error_px: float = TRANSFORM_ERROR_PX):
        if max_error_px < 0 or not math.isfinite(max_error_px):
            raise ValueError(f"max_error_px must be a finite number ≥ 0, got {max_error_px}")
        self.reference, self.predicted = reference, predicted
        self.max_error_px = float(max_error_px)
        self.ref_gt = tuple(reference.geotransform)
        self.inverse = invert_geotransform(predicted.geotransform)
        self.transformer = None
        if reference.crs is not None and reference.crs != predicted.crs:
            try:
                self.transformer = pyproj.Transformer.from_crs(
                    reference.crs, predicted.crs, always_xy=True
                )
            except pyproj.exceptions.ProjError as exc:
                raise ValueError(
                    f"the reference CRS {crs_label(reference.crs)} cannot be transformed to "
                    f"the predicted CRS {crs_label(predicted.crs)}: {exc}"
                ) from None
        self.wrap = longitude_wrap(predicted.crs, predicted.geotransform, predicted.width,
                                   predicted.height)
        #: Work counts: points placed through PROJ, pixels interpolated, pixels placed
        #: exactly, and the largest error met at a check point of an accepted cell.
        self.stats = {"proj_points": 0, "interpolated_pixels": 0, "exact_pixels": 0,
                      "max_check_error_px": 0.0}

    def describe(self) -> dict:
        """The transform as the report's alignment section states it."""
        out = {
            "method": ("exact (PROJ for every pixel centre)" if not self.max_error_px else
                       f"approximate: PROJ at the corners of cells of "
                       f"{', '.join(map(str, CELL_PIXELS))} or 1 reference pixels, bilinear "
                       f"in between where the centre and edge middles are within "
                       f"{self.max_error_px} predicted pixel"),
            "max_error_predicted_pixels": self.max_error_px,
            "longitude_wrap": None if self.wrap is None else [self.wrap[0], self.wrap[1]],
        }
        out.update(self.stats)
        return out

    def exact(self, cols: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predicted pixel coordinates (float64, NaN where PROJ fails) of reference pixel
        coordinates ``cols``, ``rows`` (float arrays of one shape; centres are k + 0.5)."""
        gt = self.ref_gt
        x = gt[0] + cols * gt[1] + rows * gt[2]
        y = gt[3] + cols * gt[4] + rows * gt[5]
        if self.transformer is not None:
            x, y = self.transformer.transform(x, y, errcheck=False)
            x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
            self.stats["proj_points"] += int(np.size(x))
        x = wrap_longitudes(x, self.wrap)
        inv = self.inverse
        with np.errstate(invalid="ignore"):
            pc = inv[0] + x * inv[1] + y * inv[2]
            pr = inv[3] + x * inv[4] + y * inv[5]
        bad = ~(np.isfinite(pc) & np.isfinite(pr))
        if bad.any():
            pc, pr = np.where(bad, np.nan, pc), np.where(bad, np.nan, pr)
        return pc, pr

    def block(self, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        """Predicted pixel coordinates of the centres of reference lines r0..r1 (all
        columns): two float64 arrays (r1 - r0, width), NaN where the centre has no place."""
        width = self.reference.width
        if not self.max_error_px:
            cc, rr = np.meshgrid(np.arange(width) + 0.5, np.arange(r0, r1) + 0.5)
            self.stats["exact_pixels"] += cc.size
            return self.exact(cc, rr)
        exact_before = self.stats["exact_pixels"]
        size = CELL_PIXELS[0]
        n_rows, n_cols = -(-(r1 - r0) // size), -(-width // size)
        ci, cj = np.divmod(np.arange(n_rows * n_cols), n_cols)
        origins = (ci * size, cj * size)
        # First level: every cell at once, interpolated along columns then rows between the
        # lattice nodes (the cells' corners); the cells that fail are redone finer.
        ec, er, ok = self._check_cells(r0, origins, size)
        pc = _separable_fill(ec, n_rows, n_cols, size)
        pr = _separable_fill(er, n_rows, n_cols, size)
        origins = (origins[0][~ok], origins[1][~ok])
        for level, finer in zip(CELL_PIXELS, CELL_PIXELS[1:] + (1,)):
            if level != size:
                origins = self._fill_cells(pc, pr, r0, origins, level)
            if not len(origins[0]):
                break
            k = level // finer
            di, dj = np.divmod(np.arange(k * k), k)
            origins = ((origins[0][:, None] + di * finer).ravel(),
                       (origins[1][:, None] + dj * finer).ravel())
            keep = (origins[0] < r1 - r0) & (origins[1] < width)
            origins = (origins[0][keep], origins[1][keep])
        else:
            self._fill_exact(pc, pr, r0, origins)
        exact = self.stats["exact_pixels"] - exact_before
        self.stats["interpolated_pixels"] += (r1 - r0) * width - exact
        return pc[: r1 - r0, :width], pr[: r1 - r0, :width]

    def _check_cells(self, r0, origins, size):
        """PROJ at the 4 corners and 5 check points of cells of ``size`` pixels (local row
        and column origins, int arrays (n,)): (predicted columns (n, 9), rows (n, 9), mask
        (n,) of the cells whose check points are all within ``max_error_px``)."""
        i0, j0 = origins
        half = size / 2
        # Corners (4) then check points (5), at pixel centres: local (row, column) offsets.
        di = np.array([0, 0, size, size, 0, half, half, size, half])
        dj = np.array([0, size, 0, size, half, 0, half, half, size])
        rows = r0 + i0[:, None] + di + 0.5
        cols = j0[:, None] + dj + 0.5
        ec, er = self.exact(cols.astype(np.float64), rows.astype(np.float64))
        ok = np.isfinite(ec).all(axis=1) & np.isfinite(er).all(axis=1)
        u, v = dj[4:] / size, di[4:] / size
        error = np.zeros(len(i0))
        for exact_values in (ec, er):
            q00, q01, q10, q11 = (exact_values[:, k:k + 1] for k in range(4))
            guess = ((1 - v) * ((1 - u) * q00 + u * q01) + v * ((1 - u) * q10 + u * q11))
            with np.errstate(invalid="ignore"):
                error = np.maximum(error, np.abs(guess - exact_values[:, 4:]).max(axis=1))
        ok &= error <= self.max_error_px
        if ok.any():
            self.stats["max_check_error_px"] = max(self.stats["max_check_error_px"],
                                                   float(error[ok].max()))
        return ec, er, ok

    def _fill_cells(self, pc, pr, r0, origins, size):
        """Interpolate the cells (local row and column origins, int arrays (n,)) of
        ``size`` pixels whose check points pass; returns the origins of those that fail."""
        i0, j0 = origins
        if not len(i0):
            return origins
        ec, er, ok = self._check_cells(r0, origins, size)
        if ok.any():
            steps = np.arange(size) / size
            for out, exact_values in ((pc, ec), (pr, er)):
                q = exact_values[ok]
                top = q[:, 0, None] + steps * (q[:, 1, None] - q[:, 0, None])
                bottom = q[:, 2, None] + steps * (q[:, 3, None] - q[:, 2, None])
                cells = top[:, None, :] + steps[None, :, None] * (bottom - top)[:, None, :]
                grid = out.reshape(out.shape[0] // size, size, out.shape[1] // size, size)
                grid[i0[ok] // size, :, j0[ok] // size, :] = cells
        return i0[~ok], j0[~ok]

    def _fill_exact(self, pc, pr, r0, pixels):
        """Place the pixels at ``pixels`` (local rows, columns) through PROJ."""
        rows, cols = pixels
        if not len(rows):
            return
        ec, er = self.exact(cols + 0.5, r0 + rows + 0.5)
        pc[rows, cols] = ec
        pr[rows, cols] = er
        self.stats["exact_pixels"] += int(len(rows))


def _separable_fill(values: np.ndarray, n_rows: int, n_cols: int, size: int) -> np.ndarray:
    """Bilinear interpolation of a whole lattice of cells, (n_rows · size, n_cols · size).

    ``values``: (n_rows · n_cols, 9) exact values of each cell (row-major), its corners
    first (top left, top right, bottom left, bottom right). A cell's pixels depend on its own
    four corners only: where a cell's corners are not finite, so are its pixels."""
    corners = values[:, :4].reshape(n_rows, n_cols, 4)
    nodes = np.empty((n_rows + 1, n_cols + 1))
    nodes[:-1, :-1] = corners[:, :, 0]
    nodes[:-1, -1] = corners[:, -1, 1]
    nodes[-1, :-1] = corners[-1, :, 2]
    nodes[-1, -1] = corners[-1, -1, 3]
    steps = np.arange(size) / size
    with np.errstate(invalid="ignore"):
        along = (nodes[:, :-1, None] + steps * np.diff(nodes, axis=1)[:, :, None]).reshape(
            n_rows + 1, n_cols * size)
        out = along[:-1, None, :] + steps[None, :, None] * np.diff(along, axis=0)[:, None, :]
    return out.reshape(n_rows * size, n_cols * size)
