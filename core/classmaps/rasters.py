"""Label rasters: a predicted class raster scored against a reference class raster, streamed
in blocks into a confusion matrix (core.classmaps.confusion).

Reads with GDAL (``osgeo.gdal``); never imports qgis. The reference grid is the target: every
reference pixel takes the predicted pixel under its centre (nearest neighbour), located from
both geotransforms and, when the CRSs differ, a PROJ transformation of the centre, exact at
the corners of small cells and interpolated within ``grid_transform.TRANSFORM_ERROR_PX``
predicted pixel in between (``classmaps.grid_transform``; longitudes wrap on a geographic
prediction as GDAL wraps them). Nothing is resampled to a file. Only reference pixels whose
centre falls inside the predicted grid are scored; valid reference pixels outside it are
counted and reported.

Class codes are compared at each raster's own precision (a Float32 band's 0.1 is the class
0.1); names come from a class table file or the bands' attribute tables and category names
as GDAL and QGIS define them (``classmaps.class_tables``). Areas are on the ground, on the
reference CRS's ellipsoid (``classmaps.pixel_areas``), whatever the CRS.

Nodata is never guessed: a band's own nodata value (and NaN in a floating-point band) is
nodata. A reference pixel that is nodata or carries one of the ignore values (void) is left
out. A prediction that is nodata on a valid reference pixel counts in the NO_PREDICTION row (an
omission, never a silent drop). Class 0 is a class like any other.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pyproj

from ..geometry.crs import crs_label
from ..matching.labels import class_key
from ..util.parallel import ProgressCallback
from ..util.wording import count_of, plural
from . import confusion
from .class_tables import ClassNames, band_class_names, read_class_table
from .grid_transform import (
    CELL_PIXELS,
    TRANSFORM_ERROR_PX,
    GridTransform,
    invert_geotransform,
    wrap_longitudes,
)
from .pixel_areas import PixelAreas, pixel_areas

__all__ = [
    "AGREEMENT_CODES",
    "BLOCK_PIXELS",
    "MAX_CLASSES",
    "RasterBand",
    "RasterConfusion",
    "SOURCE_WINDOW_PIXELS",
    "TRANSFORM_ERROR_PX",
    "band_pixel_areas",
    "inputs_left_untouched",
    "open_band",
    "raster_confusion",
    "read_class_table",
]

logger = logging.getLogger(__name__)

#: Reference pixels per block (rows are whole lines): bounds the memory of a run whatever the
#: raster's size (about 60 bytes per pixel of temporaries: some 120 MB at most).
BLOCK_PIXELS = 1 << 21
#: At most this many predicted pixels are read for one block (a much finer prediction is read
#: in thinner blocks).
SOURCE_WINDOW_PIXELS = 1 << 24

#: More distinct values than this is not a class raster (a continuous band, or the wrong
#: band): the run stops with a message rather than grow a matrix of K² cells.
MAX_CLASSES = 1000

#: Codes of the agreement raster (Byte; 0 is its nodata).
AGREEMENT_CODES = {
    0: "not evaluated (reference nodata or void)",
    1: "correct",
    2: "wrong class",
    3: "predicted value not a class (other)",
    4: "no prediction (prediction nodata)",
    5: "outside the predicted raster",
}
#: (With a class table that lacks a value the reference holds, predicted pixels of that value
#: met before the reference shows it are coded 3 in the agreement raster; the matrix moves
#: them to the value's class at the end.)


@dataclass(frozen=True)
class RasterBand:
    """What is needed of one band of a class raster.

    Attributes:
        path: the GDAL dataset name.
        band: band number, from 1.
        width, height: size in pixels.
        geotransform: GDAL's six coefficients (x0, dx/dcol, dx/drow, y0, dy/dcol, dy/drow).
        crs: pyproj CRS, or None when the raster has none.
        nodata: the band's nodata value, or None.
        data_type: GDAL data type name ("Byte", "UInt16", "Float32", ...).
        class_names: ``class_tables.ClassNames``: the names the band's raster attribute
            table or category names give its values (``class_names.name(value)``).
        mask: "alpha band" or "mask band" when GDAL reports one for the band other than
            its nodata value (its zero pixels are nodata, as the band's own), else None.
        dtype: numpy dtype name of the band's pixels (class codes are compared in it).
    """

    path: str
    band: int
    width: int
    height: int
    geotransform: tuple
    crs: pyproj.CRS | None
    nodata: float | None
    data_type: str
    class_names: ClassNames = field(default_factory=ClassNames)
    mask: str | None = None
    dtype: str = "float64"

    @property
    def rotated(self) -> bool:
        return self.geotransform[2] != 0 or self.geotransform[4] != 0

    def describe(self) -> dict:
        gt = self.geotransform
        return {
            "source": self.path,
            "band": self.band,
            "size": [self.width, self.height],
            "crs": crs_label(self.crs),
            "pixel_size": [gt[1], gt[5]],
            "origin": [gt[0], gt[3]],
            "rotated": self.rotated,
            "nodata": self.nodata,
            "data_type": self.data_type,
            "mask": self.mask,
        }


@contextlib.contextmanager
def inputs_left_untouched():
    """Within the block, GDAL keeps no auxiliary ``.aux.xml`` file (PAM) for the datasets it
    opens: statistics that a reader computes (QGIS computes them to style a raster layer it
    loads), histograms or attribute tables are not written beside the input rasters. GDAL's
    ``GDAL_PAM_ENABLED`` configuration option is set to NO for this thread only (a
    thread-local option: a QGIS window drawing other rasters meanwhile keeps its PAM) and
    its previous value restored on leaving.

    A dataset opened inside the block stays without PAM until it is closed, even after."""
    from osgeo import gdal

    previous = gdal.GetThreadLocalConfigOption("GDAL_PAM_ENABLED", None)
    gdal.SetThreadLocalConfigOption("GDAL_PAM_ENABLED", "NO")
    try:
        yield
    finally:
        gdal.SetThreadLocalConfigOption("GDAL_PAM_ENABLED", previous)


def open_band(path: str, band: int, name: str) -> RasterBand:
    """Describe band ``band`` of the raster ``path``.

    Raises ValueError naming ``name`` when GDAL cannot open it, the band does not exist or
    holds complex numbers (not class codes). A raster without georeferencing has GDAL's
    default grid (origin 0, pixel size 1) and no CRS.
    """
    from osgeo import gdal

    gdal.UseExceptions()
    try:
        dataset = gdal.Open(str(path))
    except RuntimeError as exc:
        raise ValueError(f"{name}: GDAL cannot open {path}: {exc}") from None
    if not 1 <= band <= dataset.RasterCount:
        raise ValueError(f"{name}: band {band} does not exist "
                         f"({count_of(dataset.RasterCount, 'band')})")
    raster_band = dataset.GetRasterBand(band)
    wkt = dataset.GetProjection()
    crs = pyproj.CRS.from_wkt(wkt) if wkt else None
    from osgeo import gdal_array

    dtype = np.dtype(gdal_array.GDALTypeCodeToNumericTypeCode(raster_band.DataType)).name
    if gdal.DataTypeIsComplex(raster_band.DataType):
        # numpy would drop the imaginary part when codes are compared: 1+5j would be class 1.
        raise ValueError(f"{name}: band {band} of {path} holds complex numbers "
                         f"({gdal.GetDataTypeName(raster_band.DataType)}): a class raster "
                         f"holds real class codes (choose the band of class codes)")
    return RasterBand(
        path=str(path),
        band=band,
        width=dataset.RasterXSize,
        height=dataset.RasterYSize,
        geotransform=tuple(dataset.GetGeoTransform()),
        crs=crs,
        nodata=raster_band.GetNoDataValue(),
        data_type=gdal.GetDataTypeName(raster_band.DataType),
        class_names=band_class_names(raster_band, dtype),
        mask=_mask_kind(raster_band.GetMaskFlags()),
        dtype=dtype,
    )


def _mask_kind(flags: int) -> str | None:
    """What GDAL's mask flags of a band say beyond nodata: an alpha band, a mask band, or
    nothing (all valid, or the nodata value)."""
    from osgeo import gdal

    if flags & (gdal.GMF_ALL_VALID | gdal.GMF_NODATA):
        return None
    return "alpha band" if flags & gdal.GMF_ALPHA else "mask band"


@dataclass
class RasterConfusion:
    """Result of ``raster_confusion``.

    Attributes:
        classes: confusion.ClassTable (K classes).
        counts: int64 (K + 2, K) pixel counts, rows = prediction, columns = reference.
        areas_m2: float64 (K + 2, K) the same in m² on the ground (``pixel_areas``; squared
            pixel units when the rasters have no CRS).
        alignment: JSON-ready dict: both grids, the shift, coverage counts.
        warnings: messages for the report and the log.
    """

    classes: confusion.ClassTable
    counts: np.ndarray
    areas_m2: np.ndarray
    alignment: dict
    warnings: list


def raster_confusion(
    predicted: RasterBand,
    reference: RasterBand,
    ignore_values=(),
    class_table=None,
    agreement_path: str | None = None,
    progress: ProgressCallback | None = None,
    block_pixels: int = BLOCK_PIXELS,
    transform_error_px: float = TRANSFORM_ERROR_PX,
) -> RasterConfusion:
    """Stream both rasters in blocks of reference lines into a confusion matrix.

    Args:
        predicted, reference: ``open_band`` descriptions.
        ignore_values: numbers; reference pixels with them are void (left out). A predicted
            pixel with one is not a class: it counts in OTHER.
        class_table: optional list of (value, name); fixes the classes (predicted values not
            in it go to OTHER; a reference value not in it becomes a class, with a warning).
            None: every value met in either raster is a class, named from the rasters'
            attribute tables when they have one.
        agreement_path: optional GeoTIFF to write on the reference grid (``AGREEMENT_CODES``).
        progress: optional callable(fraction done); may raise to cancel (the agreement file
            is then removed).
        block_pixels: reference pixels per block (memory bound).
        transform_error_px: bound of the approximate transform between the grids, in
            predicted pixels (``grid_transform``); 0 places every pixel centre through PROJ.

    Returns a RasterConfusion.

    Raises ValueError when exactly one raster has a CRS, the CRSs cannot be transformed,
    ``transform_error_px`` is negative, two values of a class table are one number at a
    raster's precision, the rasters hold more than ``MAX_CLASSES`` distinct values, or
    ``agreement_path`` names a format GDAL cannot write block by block (.vrt, .png, .jpg).
    """
    if (predicted.crs is None) != (reference.crs is None):
        raise ValueError(
            "PREDICTED and REFERENCE: one raster has a CRS and the other has none; assign "
            "the missing CRS (or remove both to compare on pixel coordinates)"
        )
    if class_table:
        _check_distinct_at_precision([v for v, _ in class_table], (predicted, reference))
    areas = band_pixel_areas(reference)
    locate = _Locator(predicted, reference, transform_error_px)
    tally = _Tally(predicted, reference, [float(v) for v in ignore_values], class_table,
                   areas, agreement=bool(agreement_path))

    _stream(predicted, reference, locate, tally, agreement_path, block_pixels, progress)
    tally.finish()
    classes, warnings = tally.classes, tally.warnings
    if not class_table:
        for band in (reference, predicted):
            for k, value in enumerate(classes.values):
                if not classes.names[k]:
                    classes.names[k] = band.class_names.name(value)
    warnings.extend(_shared_names(classes))
    for name, band in (("REFERENCE", reference), ("PREDICTED", predicted)):
        if band.class_names.note and not class_table:
            warnings.append(f"{name}: {band.class_names.note}")
    if areas.note:
        warnings.append(areas.note)
    if not tally.counts.sum():
        warnings.append(_nothing_scored(tally.pixels))
    for name, band, role in (("PREDICTED", predicted, "count as no prediction"),
                             ("REFERENCE", reference, "are left out as nodata")):
        if band.mask:
            warnings.append(f"{name}: the raster has a GDAL {band.mask}: the pixels it masks "
                            f"{role}")
    for name, band in (("PREDICTED", predicted), ("REFERENCE", reference)):
        message = _nodata_not_held(band)
        if message:
            warnings.append(f"{name}: {message}")
    alignment = _alignment(predicted, reference, locate, tally.counts, tally.pixels)
    alignment["pixel_area"] = areas.description
    for message in warnings:
        logger.warning(message)
    return RasterConfusion(classes, tally.counts, tally.areas_m2(), alignment, warnings)


def _stream(predicted: RasterBand, reference: RasterBand, locate, tally, agreement_path,
            block_pixels: int, progress) -> None:
    """Read the reference in blocks of lines and the prediction under each block into the
    tally (``_Tally``), writing the agreement raster alongside (removed when a block fails
    or the run is canceled); GDAL's block cache is dropped after each tile row."""
    from osgeo import gdal

    gdal.UseExceptions()
    ref_ds, pred_ds = gdal.Open(reference.path), gdal.Open(predicted.path)
    ref_band = ref_ds.GetRasterBand(reference.band)
    pred_band = pred_ds.GetRasterBand(predicted.band)
    ref_mask_band = ref_band.GetMaskBand() if reference.mask else None
    pred_mask_band = pred_band.GetMaskBand() if predicted.mask else None
    writer = _AgreementWriter(agreement_path, reference, ref_ds) if agreement_path else None
    rows_per_block = max(1, block_pixels // max(reference.width, 1))
    rows_per_block = min(rows_per_block, locate.max_rows(SOURCE_WINDOW_PIXELS))
    if not locate.separable:
        # Predicted pixel coordinates of every centre (float64) are extra temporaries:
        # half the lines, in whole cells of the approximate transform.
        rows_per_block = max(1, rows_per_block // 2)
        if rows_per_block > CELL_PIXELS[0]:
            rows_per_block -= rows_per_block % CELL_PIXELS[0]
    try:
        for r0, r1, last_of_tile in _blocks(reference.height, rows_per_block,
                                            ref_band.GetBlockSize()[1]):
            ref = ref_band.ReadAsArray(0, r0, reference.width, r1 - r0)
            pred, inside = locate.read(pred_band, r0, r1)
            masks = (
                ref_mask_band.ReadAsArray(0, r0, reference.width, r1 - r0)
                if ref_mask_band is not None else None,
                locate.read(pred_mask_band, r0, r1)[0] if pred_mask_band is not None else None,
            )
            agreement = tally.add(ref, pred, inside, r0, r1, *masks)
            if writer is not None:
                writer.write(r0, agreement)
            del ref, pred, inside, agreement, masks
            if last_of_tile:
                # Drop the decoded blocks GDAL caches (up to 5 % of RAM by default): the
                # memory of a run stays that of a block whatever GDAL_CACHEMAX is.
                ref_band.FlushCache()
                pred_band.FlushCache()
            if progress is not None:
                progress(r1 / reference.height)
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    if writer is not None:
        writer.close()


def _shared_names(classes) -> list[str]:
    """Warnings for class values whose names are one label under the plugin's rule
    (``matching.labels.class_key``: NFC, stripped, casefolded): raster classes are their
    values, so those stay separate classes."""
    by_key = {}
    for value, name in zip(classes.values, classes.names):
        if name:
            by_key.setdefault(class_key(name), []).append(value)
    return [f"the class values {', '.join(map(str, values))} have one name "
            f"({classes.names[classes.position(values[0])]!r}, compared as labels are): "
            f"they are scored as separate classes"
            for values in by_key.values() if len(values) > 1]


def _nothing_scored(pixels: dict) -> str:
    """Why no pixel was scored, from the tally's coverage counts."""
    if pixels["outside_prediction"]:
        n = pixels["outside_prediction"]
        return (f"nothing is scored: {'the' if n == 1 else 'none of the'} "
                f"{count_of(n, 'valid reference pixel')} {'does not lie' if n == 1 else 'lies'} "
                f"on the predicted raster (the rasters do not overlap)")
    n = pixels["reference_void"]
    return (f"nothing is scored: {'the' if n == 1 else 'all'} "
            f"{count_of(n, 'reference pixel')} {plural(n, 'is', 'are')} nodata "
            f"or void (IGNORE_VALUES)")


def _blocks(height: int, rows_per_block: int, tile_rows: int):
    """(r0, r1, last_of_tile) of each block of reference lines.

    Blocks never straddle the file's own blocks (tiles or strips of ``tile_rows`` lines):
    thin blocks split one tile row evenly, thick ones hold whole tile rows, so a decoded tile
    is used up before the cache is dropped (``last_of_tile``). A file block taller than four
    reading blocks (an untiled compressed file) is not waited for: the cache is dropped after
    every block, memory first.
    """
    if rows_per_block >= tile_rows or tile_rows > 4 * rows_per_block:
        if rows_per_block > tile_rows:
            rows_per_block -= rows_per_block % tile_rows
        for r0 in range(0, height, rows_per_block):
            yield r0, min(height, r0 + rows_per_block), True
        return
    for t0 in range(0, height, tile_rows):
        t1 = min(height, t0 + tile_rows)
        n = -(-(t1 - t0) // rows_per_block)
        edges = [t0 + (t1 - t0) * k // n for k in range(n + 1)]
        for k in range(n):
            yield edges[k], edges[k + 1], k == n - 1


class _Tally:
    """The confusion matrix of the blocks seen so far, and the coverage counts."""

    def __init__(self, predicted, reference, ignore, class_table, areas: PixelAreas,
                 agreement):
        self.predicted, self.reference, self.ignore = predicted, reference, ignore
        self.agreement = agreement
        if class_table:
            self.classes = confusion.ClassTable([v for v, _ in class_table],
                                                [n for _, n in class_table], fixed=True)
        else:
            self.classes = confusion.ClassTable()
        self.counts = confusion.new_matrix(self.classes.k)
        self.areas = confusion.new_matrix(self.classes.k, np.float64)
        self.pixel_areas = areas
        # Equal cells (an equal-area CRS): areas are counts times one cell, no weighted pass.
        self.uniform_area = areas.uniform
        self.pixels = {"reference_void": 0, "outside_prediction": 0, "no_prediction": 0,
                       "other": 0}
        self.warnings = []
        self.other_by_code = {}

    def add(self, ref, pred, inside, r0, r1, ref_mask=None, pred_mask=None) -> np.ndarray:
        """Enter one block: reference values, predicted values under them and the mask of
        those on the predicted grid, all of shape (r1 - r0, width); optionally the GDAL mask
        bands' values of both (0: nodata), of the same shape. Returns the block's
        agreement codes (``AGREEMENT_CODES``), uint8 of the same shape, when the tally was made
        with ``agreement=True`` (else None)."""
        if (ref.dtype == np.uint8 and pred.dtype == np.uint8 and ref_mask is None
                and pred_mask is None and not self.agreement and self.uniform_area
                and inside.all()):
            self._add_histogram(ref, pred)
            return None
        valid = _valid(ref, self.reference.nodata, self.ignore)
        if ref_mask is not None:
            valid &= ref_mask != 0
        scored = valid & inside
        everything = bool(scored.all())  # the common case: views, no boolean copies
        self.pixels["reference_void"] += int(valid.size - np.count_nonzero(valid))
        self.pixels["outside_prediction"] += int(np.count_nonzero(valid & ~inside))
        ref_codes = ref.reshape(-1) if everything else ref[scored]
        pred_codes = pred.reshape(-1) if everything else pred[scored]
        ref_index = self._positions(ref_codes, from_reference=True)
        pred_ok = _valid(pred_codes, self.predicted.nodata, ())
        if pred_mask is not None:
            pred_ok &= (pred_mask.reshape(-1) if everything else pred_mask[scored]) != 0
        all_ok = bool(pred_ok.all())
        pred_codes_ok = pred_codes if all_ok else pred_codes[pred_ok]
        looked_up, unknown = self._predicted_rows(pred_codes_ok)
        k = self.classes.k
        if all_ok:
            pred_index = looked_up
        else:
            pred_index = np.full(len(pred_codes), k + 1, dtype=np.int32)  # NO_PREDICTION
            pred_index[pred_ok] = looked_up
        self.counts = confusion.grow(self.counts, k)
        self.areas = confusion.grow(self.areas, k)
        confusion.accumulate(self.counts, pred_index, ref_index)
        weights = None
        if not self.uniform_area:
            weights = np.broadcast_to(
                self.pixel_areas.block(r0, r1, self.reference.width), ref.shape)[scored]
            confusion.accumulate(self.areas, pred_index, ref_index, weights)
        if unknown.any():
            ok_ref = ref_index if all_ok else ref_index[pred_ok]
            ok_weights = weights if weights is None or all_ok else weights[pred_ok]
            self._remember_other(pred_codes_ok[unknown], ok_ref[unknown],
                                 None if ok_weights is None else ok_weights[unknown])
        self.pixels["no_prediction"] += int(len(pred_index) - np.count_nonzero(pred_ok))
        self.pixels["other"] += int(np.count_nonzero(pred_index == k))
        if not self.agreement:
            return None
        return _agreement_codes(ref.shape, valid, inside, scored, pred_index, ref_index, k)

    def _add_histogram(self, ref: np.ndarray, pred: np.ndarray) -> None:
        """``add`` for two Byte blocks wholly on the predicted grid, without masks, agreement
        raster or varying pixel areas: one histogram of the 256 × 256 (predicted, reference)
        code pairs, then the same rules as ``add`` applied to the codes instead of the
        pixels (same classes in the same order, same counts)."""
        key = (pred.astype(np.uint16) << 8) | ref
        hist = np.bincount(key.reshape(-1), minlength=1 << 16).reshape(256, 256)
        del key
        ref_totals = hist.sum(axis=0)
        codes = np.arange(256, dtype=np.uint8)
        valid = _valid(codes, self.reference.nodata, self.ignore)
        self.pixels["reference_void"] += int(ref_totals[~valid].sum())
        ref_codes = codes[valid & (ref_totals > 0)]
        if not len(ref_codes):
            return
        ref_index = self._positions(ref_codes, from_reference=True)
        sub = hist[:, ref_codes]  # (256 predicted codes, reference codes present)
        pred_codes = codes[sub.sum(axis=1) > 0]
        pred_ok = _valid(pred_codes, self.predicted.nodata, ())
        ok_codes = pred_codes[pred_ok]
        looked_up, unknown = self._predicted_rows(ok_codes)
        k = self.classes.k
        rows = np.full(len(pred_codes), k + 1, dtype=np.int64)  # NO_PREDICTION
        rows[pred_ok] = looked_up
        self.counts = confusion.grow(self.counts, k)
        self.areas = confusion.grow(self.areas, k)
        block = sub[pred_codes]
        np.add.at(self.counts, (rows[:, None], ref_index[None, :].astype(np.int64)), block)
        for code, counts in zip(ok_codes[unknown].tolist(), block[pred_ok][unknown]):
            per_column = np.bincount(ref_index, weights=counts, minlength=k).astype(np.int64)
            old = self.other_by_code.get(code)
            if old is not None:
                per_column[: len(old[0])] += old[0]
            self.other_by_code[code] = (per_column, None)
        self.pixels["no_prediction"] += int(block[~pred_ok].sum())
        self.pixels["other"] += int(block[rows == k].sum())

    def _predicted_rows(self, codes: np.ndarray):
        """(rows, unknown) of valid predicted ``codes`` (shape (n,)): each code's matrix row,
        its class's position, or OTHER (``classes.k`` after the look-up, which may add
        classes) for a code that is not a class or is an ignore value; ``unknown``: bool (n,),
        the codes counted as OTHER that are not ignore values (remembered per code)."""
        is_void = _among(codes, self.ignore) if self.ignore else None
        rows = self._positions(codes, from_reference=False, void=is_void)
        k = self.classes.k
        unknown = rows < 0
        rows[unknown] = k  # OTHER: not a class
        if is_void is not None:
            rows[is_void] = k
            unknown &= ~is_void
        return rows, unknown

    def _remember_other(self, codes, ref_index, weights) -> None:
        """Keep, per predicted code counted as OTHER, its pixels (and m²) per reference
        column: a code the reference only later shows to be a class (a fixed class table
        that lacks it) is moved to its row by ``finish``, whatever the order of the blocks."""
        for code in confusion.unique_codes(codes):
            here = codes == code
            counts = np.bincount(ref_index[here], minlength=self.classes.k)
            areas = (np.bincount(ref_index[here], weights[here], minlength=self.classes.k)
                     if weights is not None else None)
            old = self.other_by_code.get(code)
            if old is not None:
                counts[: len(old[0])] += old[0]
                if areas is not None:
                    areas[: len(old[1])] += old[1]
            self.other_by_code[code] = (counts, areas)

    def finish(self) -> None:
        """Move the OTHER pixels of codes that became classes to their rows."""
        k = self.classes.k
        for code, (counts, areas) in self.other_by_code.items():
            row = self.classes.position(code)
            if row is None:
                continue
            self.counts[row, : len(counts)] += counts
            self.counts[k, : len(counts)] -= counts
            self.pixels["other"] -= int(counts.sum())
            if areas is not None:
                self.areas[row, : len(areas)] += areas
                self.areas[k, : len(areas)] -= areas
        self.other_by_code = {}

    def _positions(self, codes, from_reference: bool, void=None) -> np.ndarray:
        """Matrix positions of codes (int32), -1 for codes that are not classes. Codes not
        met before become classes: reference codes always (with a warning when the class
        table is fixed), predicted ones (void excepted) unless it is fixed. Only the codes
        the lookup misses are searched for new values. Raises ValueError past
        ``MAX_CLASSES``."""
        classes = self.classes
        index = classes.lookup(codes, -1)
        missing = index < 0
        if void is not None:
            missing &= ~void
        if not missing.any() or (classes.fixed and not from_reference):
            return index
        new = classes.add(confusion.unique_codes(codes[missing]))
        if new and classes.fixed:
            self.warnings.append(f"reference values not in the class table are scored as "
                                 f"classes of their own: {new}")
        if classes.k > MAX_CLASSES:
            raise ValueError(
                f"more than {MAX_CLASSES} distinct values in the rasters: they do not look "
                f"like class rasters (check the bands: {self.reference.band} of "
                f"{self.reference.path}, {self.predicted.band} of {self.predicted.path})"
            )
        return classes.lookup(codes, -1)

    def areas_m2(self) -> np.ndarray:
        if self.uniform_area:
            return self.counts * float(self.pixel_areas.uniform_m2)
        return self.areas


def _agreement_codes(shape, valid, inside, scored, pred_index, ref_index, k) -> np.ndarray:
    """The agreement raster's codes of a block (``AGREEMENT_CODES``), uint8 of ``shape``."""
    agreement = np.zeros(shape, dtype=np.uint8)
    agreement[valid & ~inside] = 5
    codes = np.where(pred_index == ref_index, 1, 2).astype(np.uint8)
    codes[pred_index == k] = 3
    codes[pred_index == k + 1] = 4
    agreement[scored] = codes
    return agreement


def _nodata_not_held(band: RasterBand) -> str:
    """A sentence when an integer band's nodata value is not a number the band can hold
    (1.5 in Int16, 300 in Byte): no pixel equals it, so none is nodata, while GDAL's own mask
    of a fractional value takes the truncated integer (1 for 1.5) as nodata. "" otherwise."""
    dtype = np.dtype(band.dtype)
    nodata = band.nodata
    if nodata is None or dtype.kind not in "iu":
        return ""
    info = np.iinfo(dtype)
    if math.isfinite(nodata) and float(nodata).is_integer() and info.min <= nodata <= info.max:
        return ""
    article = "an" if band.data_type.startswith("I") else "a"  # an Int16, a UInt16, a Byte
    return (f"the band's nodata value {nodata!r} is not a value {article} {band.data_type} "
            f"band holds: no pixel is taken as nodata (GDAL's mask of a fractional value takes "
            f"its integer part); set the nodata value the raster uses")


def _valid(values: np.ndarray, nodata, ignore) -> np.ndarray:
    """Pixels that are neither nodata (the band's value, or NaN) nor one of ``ignore``
    (compared at the values' precision)."""
    valid = np.ones(values.shape, dtype=bool)
    if values.dtype.kind == "f":
        valid &= ~np.isnan(values)
    if nodata is not None and not (isinstance(nodata, float) and math.isnan(nodata)):
        valid &= values != _at_precision(nodata, values.dtype)
    for value in ignore:
        valid &= values != _at_precision(value, values.dtype)
    return valid


def _at_precision(number, dtype):
    """``number`` as a float array of ``dtype`` stores it (a Float32 band's 0.1); other
    dtypes compare with the number itself."""
    return dtype.type(number) if dtype.kind == "f" else number


def _among(values: np.ndarray, numbers) -> np.ndarray:
    """``np.isin`` of ``values`` in ``numbers``, compared at the values' precision."""
    if values.dtype.kind == "f":
        return np.isin(values, np.asarray(numbers, dtype=values.dtype))
    return np.isin(values, numbers)


def _check_distinct_at_precision(values, bands) -> None:
    """Raise ValueError (naming CLASS_NAMES) when two class table values are one number at
    the precision of a floating-point band."""
    for band in bands:
        dtype = np.dtype(band.dtype)
        if dtype.kind != "f" or dtype.itemsize >= 8:
            continue
        seen = {}
        for value in values:
            stored = dtype.type(value)
            if stored in seen and seen[stored] != value:
                raise ValueError(
                    f"CLASS_NAMES: the values {seen[stored]} and {value} are one number in "
                    f"{band.data_type} ({float(stored)!r}, band {band.band} of {band.path}): "
                    f"give each class one value")
            seen[stored] = value


class _Locator:
    """Which predicted pixel lies under each reference pixel centre, and reading it."""

    def __init__(self, predicted: RasterBand, reference: RasterBand,
                 transform_error_px: float = TRANSFORM_ERROR_PX):
        self.predicted, self.reference = predicted, reference
        self.grid = GridTransform(reference, predicted, transform_error_px)
        self.transformer = self.grid.transformer
        self.inverse = self.grid.inverse
        #: Columns and rows separate: each predicted column depends on the reference column
        #: only, each predicted row on the reference row only.
        self.separable = (
            self.transformer is None and not predicted.rotated and not reference.rotated
        )
        self._block = None  # (r0, r1, rows, columns, inside) of the last block placed
        if self.separable:
            gt = reference.geotransform
            x = wrap_longitudes(gt[0] + (np.arange(reference.width) + 0.5) * gt[1],
                                self.grid.wrap)
            self.columns = np.floor(self.inverse[0] + x * self.inverse[1]).astype(np.int64)
            self.column_ok = (self.columns >= 0) & (self.columns < predicted.width)
            self.columns_step_one = bool(np.all(np.diff(self.columns[self.column_ok]) == 1))

    def max_rows(self, window_pixels: int) -> int:
        """Reference lines per block such that a separable read window stays bounded."""
        if not self.separable:
            return 1 << 30
        p, r = self.predicted.geotransform, self.reference.geotransform
        inside = (self.columns >= 0) & (self.columns < self.predicted.width)
        width = int(np.ptp(self.columns[inside])) + 1 if inside.any() else 1
        rows_per_line = max(1.0, abs(r[5] / p[5]))
        return max(1, int(window_pixels // (width * rows_per_line)))

    def read(self, band, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        """The predicted values under reference lines r0..r1 (all columns) and a mask of the
        pixels whose centre lies on the predicted grid (values elsewhere are 0)."""
        shape = (r1 - r0, self.reference.width)
        if self.separable:
            return self._read_separable(band, r0, r1)
        r_in, c_in, inside, everywhere = self._place(r0, r1)
        if not inside.any():
            return np.zeros(shape, dtype=np.uint8), inside
        c0, c1, q0, q1 = int(c_in.min()), int(c_in.max()) + 1, int(r_in.min()), int(r_in.max()) + 1
        if everywhere and (c1 - c0) * (q1 - q0) <= SOURCE_WINDOW_PIXELS:
            # Every centre on the grid (the common case): one window, one flat gather.
            window = band.ReadAsArray(c0, q0, c1 - c0, q1 - q0)
            flat = (r_in - q0) * (c1 - c0) + (c_in - c0)
            return np.take(window.reshape(-1), flat), inside
        r_in, c_in = r_in.reshape(-1), c_in.reshape(-1)
        # The window round the block's footprint, read in strips of at most
        # SOURCE_WINDOW_PIXELS (a much finer or rotated prediction has a large footprint).
        strip = max(1, SOURCE_WINDOW_PIXELS // (c1 - c0))
        picked = None
        for s0 in range(q0, q1, strip):
            s1 = min(q1, s0 + strip)
            part = band.ReadAsArray(c0, s0, c1 - c0, s1 - s0)
            if picked is None:
                picked = np.zeros(len(r_in), dtype=part.dtype)
            here = (r_in >= s0) & (r_in < s1) if (s0, s1) != (q0, q1) else slice(None)
            picked[here] = part[r_in[here] - s0, c_in[here] - c0]
            del part
        values = np.zeros(shape, dtype=picked.dtype)
        values[inside] = picked
        return values, inside

    def _place(self, r0: int, r1: int):
        """(predicted rows, predicted columns of the pixels inside (int32, of the block's
        shape when every pixel is inside), inside mask (r1 - r0, width), every pixel
        inside) of reference lines r0..r1; the last block's are kept for its mask band."""
        if self._block is not None and self._block[:2] == (r0, r1):
            return self._block[2:]
        pc, pr = self.grid.block(r0, r1)
        pred = self.predicted
        with np.errstate(invalid="ignore"):
            # NaN (no place) compares False: outside.
            inside = (pc >= 0) & (pc < pred.width) & (pr >= 0) & (pr < pred.height)
            # Truncation is ⌊x⌋ for the coordinates inside (x ≥ 0); the others are dropped.
            cols, rows = pc.astype(np.int32), pr.astype(np.int32)
        del pc, pr
        everywhere = bool(inside.all())
        if not everywhere:
            rows, cols = rows[inside], cols[inside]
        self._block = (r0, r1, rows, cols, inside, everywhere)
        return rows, cols, inside, everywhere

    def _read_separable(self, band, r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        """``read`` when predicted rows and columns depend on reference rows and columns
        alone: one window, indexed by a row and a column vector (no copy when both step by
        one, as on the same or a shifted grid of the same pixel size)."""
        gt, pred = self.reference.geotransform, self.predicted
        shape = (r1 - r0, self.reference.width)
        y = gt[3] + (np.arange(r0, r1) + 0.5) * gt[5]
        rows = np.floor(self.inverse[3] + y * self.inverse[5]).astype(np.int64)
        row_ok = (rows >= 0) & (rows < pred.height)
        col_ok = self.column_ok
        if row_ok.all() and col_ok.all():
            inside = np.broadcast_to(True, shape)  # read-only: nothing writes to it
        else:
            inside = np.outer(row_ok, col_ok)
        if not row_ok.any() or not col_ok.any():
            return np.zeros(shape, dtype=np.uint8), inside
        rows, cols = rows[row_ok], self.columns[col_ok]
        q0, c0 = int(rows.min()), int(cols.min())
        window = band.ReadAsArray(c0, q0, int(cols.max()) + 1 - c0, int(rows.max()) + 1 - q0)
        if not (self.columns_step_one and np.all(np.diff(rows) == 1)):
            window = window[np.ix_(rows - q0, cols - c0)]
        if row_ok.all() and col_ok.all():
            return window, inside
        values = np.zeros(shape, dtype=window.dtype)
        values[np.ix_(row_ok, col_ok)] = window
        return values, inside


def band_pixel_areas(band: RasterBand) -> PixelAreas:
    """The ground area of every pixel of ``band``'s grid (``pixel_areas.pixel_areas``)."""
    return pixel_areas(band.geotransform, band.width, band.height, band.crs, band.rotated)


def _driver_for(path: str):
    """The GDAL driver that creates files with the extension of ``path`` (GeoTIFF when the
    extension is .tif, missing, or no raster driver claims it).

    Raises ValueError (naming AGREEMENT_RASTER) when the extension is a raster format that
    cannot be written block by block: a VRT holds no pixels of its own (GDAL refuses to
    write through it), and drivers that only copy a finished raster (PNG, JPEG, ASCII
    grid...) would get a GeoTIFF under their extension."""
    from osgeo import gdal

    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension and extension not in ("tif", "tiff"):
        copy_only = []
        for k in range(gdal.GetDriverCount()):
            driver = gdal.GetDriver(k)
            metadata = driver.GetMetadata() or {}
            if (metadata.get(gdal.DCAP_RASTER) != "YES"
                    or extension not in (metadata.get(gdal.DMD_EXTENSIONS) or "").split()):
                continue
            if metadata.get(gdal.DCAP_CREATE) == "YES" and driver.ShortName != "VRT":
                return driver
            copy_only.append(driver.ShortName)
        if copy_only:
            raise ValueError(
                f"AGREEMENT_RASTER: {path}: GDAL cannot write a .{extension} file "
                f"({', '.join(copy_only)}) block by block; give a .tif (GeoTIFF), .gpkg or "
                f".img name")
    return gdal.GetDriverByName("GTiff")


class _AgreementWriter:
    """The agreement raster, written block by block on the reference grid (GeoTIFF, Byte)."""

    def __init__(self, path: str, reference: RasterBand, ref_ds):
        from osgeo import gdal

        self.path = path
        driver = _driver_for(path)
        options = (["COMPRESS=DEFLATE", "TILED=YES", "BIGTIFF=IF_SAFER"]
                   if driver.ShortName == "GTiff" else [])
        self.dataset = driver.Create(
            path, reference.width, reference.height, 1, gdal.GDT_Byte, options
        )
        self.dataset.SetGeoTransform(reference.geotransform)
        self.dataset.SetProjection(ref_ds.GetProjection())
        self.band = self.dataset.GetRasterBand(1)
        self.band.SetNoDataValue(0)
        self.band.SetCategoryNames([AGREEMENT_CODES[k] for k in sorted(AGREEMENT_CODES)])

    def write(self, r0: int, agreement: np.ndarray):
        self.band.WriteArray(agreement, 0, r0)

    def close(self):
        self.band.FlushCache()
        self.band = None
        self.dataset = None

    def discard(self):
        self.close()
        if os.path.exists(self.path):
            os.remove(self.path)


def _alignment(predicted, reference, locate, counts, tally: dict) -> dict:
    """The alignment section of the report: both grids, the shift, coverage."""
    ref_gt, pred_gt = reference.geotransform, predicted.geotransform
    origin = (pred_gt[0], pred_gt[3])
    if locate.transformer is not None:
        back = pyproj.Transformer.from_crs(predicted.crs, reference.crs, always_xy=True)
        origin = back.transform(*origin)
    inv = invert_geotransform(ref_gt)
    col = inv[0] + origin[0] * inv[1] + origin[1] * inv[2]
    row = inv[3] + origin[0] * inv[4] + origin[1] * inv[5]
    # The predicted grid's corner may have no place in the reference CRS (the corner of a
    # full-disc satellite or orthographic grid lies off the Earth): no shift is given then.
    shift = ([round(float(col - round(col)), 6), round(float(row - round(row)), 6)]
             if math.isfinite(col) and math.isfinite(row) else None)
    scored = int(counts.sum())
    valid = scored + tally["outside_prediction"]
    same_grid = (
        locate.transformer is None and pred_gt == ref_gt
        and (predicted.width, predicted.height) == (reference.width, reference.height)
    )
    return {
        "reference": reference.describe(),
        "predicted": predicted.describe(),
        "target_grid": "reference",
        "same_crs": locate.transformer is None,
        "same_grid": same_grid,
        "resampling": "nearest neighbour: each reference pixel takes the predicted pixel "
                      "under its centre, computed on the fly (no file written)",
        "subpixel_shift_reference_pixels": shift,
        "reference_valid_pixels": valid,
        "reference_void_pixels": tally["reference_void"],
        "scored_pixels": scored,
        "reference_valid_outside_prediction": tally["outside_prediction"],
        "share_reference_outside_prediction": tally["outside_prediction"] / valid
        if valid else None,
        "no_prediction_pixels": tally["no_prediction"],
        "share_no_prediction": tally["no_prediction"] / scored if scored else None,
        "other_pixels": tally["other"],
        "transform": locate.grid.describe() if not locate.separable else {
            "method": "geotransforms only (one CRS, north-up grids)",
            "longitude_wrap": None if locate.grid.wrap is None else list(locate.grid.wrap[:2]),
        },
    }
