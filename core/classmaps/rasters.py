"""Label rasters: a predicted class raster scored against a reference class raster, streamed
in blocks into a confusion matrix (core.classmaps.confusion).

Reads with GDAL (``osgeo.gdal``); never imports qgis. The reference grid is the target: every
reference pixel takes the predicted pixel under its centre (nearest neighbour), located from
both geotransforms and, when the CRSs differ, a pyproj transformation of the centre. Nothing is
resampled to a file. Only reference pixels whose centre falls inside the predicted grid are
scored; valid reference pixels outside it are counted and reported.

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

from . import confusion
from ..geometry.crs import crs_label
from ..util.parallel import ProgressCallback
from ..util.wording import count_of, plural

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
        class_names: {class value: name} from the band's raster attribute table or category
            names; empty when it has neither.
        mask: "alpha band" or "mask band" when GDAL reports one for the band other than
            its nodata value (its zero pixels are nodata, as the band's own), else None.
    """

    path: str
    band: int
    width: int
    height: int
    geotransform: tuple
    crs: pyproj.CRS | None
    nodata: float | None
    data_type: str
    class_names: dict = field(default_factory=dict)
    mask: str | None = None

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

    Raises ValueError naming ``name`` when GDAL cannot open it or the band does not exist. A
    raster without georeferencing has GDAL's default grid (origin 0, pixel size 1) and no CRS.
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
    return RasterBand(
        path=str(path),
        band=band,
        width=dataset.RasterXSize,
        height=dataset.RasterYSize,
        geotransform=tuple(dataset.GetGeoTransform()),
        crs=crs,
        nodata=raster_band.GetNoDataValue(),
        data_type=gdal.GetDataTypeName(raster_band.DataType),
        class_names=_band_class_names(raster_band),
        mask=_mask_kind(raster_band.GetMaskFlags()),
    )


def _mask_kind(flags: int) -> str | None:
    """What GDAL's mask flags of a band say beyond nodata: an alpha band, a mask band, or
    nothing (all valid, or the nodata value)."""
    from osgeo import gdal

    if flags & (gdal.GMF_ALL_VALID | gdal.GMF_NODATA):
        return None
    return "alpha band" if flags & gdal.GMF_ALPHA else "mask band"


def _band_class_names(raster_band) -> dict:
    """{value: name} from a raster attribute table (its Name column and its value or min/max
    column, or its row index) or from the band's category names; {} when there are none."""
    from osgeo import gdal

    names = {}
    rat = raster_band.GetDefaultRAT()
    if rat is not None and rat.GetRowCount():
        usage = [rat.GetUsageOfCol(i) for i in range(rat.GetColumnCount())]
        name_col = usage.index(gdal.GFU_Name) if gdal.GFU_Name in usage else None
        value_col = next(
            (usage.index(u) for u in (gdal.GFU_MinMax, gdal.GFU_Min) if u in usage), None
        )
        if name_col is not None:
            for row in range(rat.GetRowCount()):
                value = rat.GetValueAsDouble(row, value_col) if value_col is not None else row
                names[_plain(value)] = rat.GetValueAsString(row, name_col)
            return {k: v for k, v in names.items() if v}
    categories = raster_band.GetCategoryNames() or []
    return {k: text for k, text in enumerate(categories) if text}


def read_class_table(path: str) -> list[tuple]:
    """(value, name) rows of a class table file.

    Accepted lines: ``value,name`` (comma, semicolon or tab), a QGIS colour map export
    (``value,r,g,b,a,label``; its ``INTERPOLATION:`` line is skipped), ``#`` comments, and a
    header row whose first field is not a number. Values are numbers (int when integral).

    Raises ValueError naming the file and line when a value is repeated, not finite (NaN,
    infinity) or a line has a number but no usable structure, and naming the file when it is
    not UTF-8 text.
    """
    try:
        with open(path, encoding="utf-8-sig") as handle:
            lines = handle.readlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"CLASS_NAMES: {path} is not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start}); save it as UTF-8") from None
    rows, seen, header = [], set(), None
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#") or text.upper().startswith("INTERPOLATION"):
            continue
        separator = "\t" if "\t" in text else (";" if ";" in text else ",")
        parts = [p.strip() for p in text.split(separator)]
        try:
            value = _plain(float(parts[0]))
        except ValueError:
            if not rows and not header:
                header = text  # one header row; a second non-numeric row is an error
                continue
            raise ValueError(f"CLASS_NAMES: {path} line {number}: {parts[0]!r} is not a "
                             f"class value") from None
        if not math.isfinite(value):
            raise ValueError(f"CLASS_NAMES: {path} line {number}: {parts[0]!r} is not a "
                             f"class value (NaN and infinity are never class codes)")
        if len(parts) >= 5:  # value,red,green,blue,alpha[,label]
            name = parts[5] if len(parts) > 5 else ""
        else:
            name = parts[1] if len(parts) > 1 else ""
        if value in seen:
            raise ValueError(f"CLASS_NAMES: {path} line {number}: value {value} repeated")
        seen.add(value)
        rows.append((value, name))
    return rows


def _plain(value):
    value = float(value)
    return int(value) if value.is_integer() else value


@dataclass
class RasterConfusion:
    """Result of ``raster_confusion``.

    Attributes:
        classes: confusion.ClassTable (K classes).
        counts: int64 (K + 2, K) pixel counts, rows = prediction, columns = reference.
        areas_m2: float64 (K + 2, K) the same in m² (CRS units² when the raster has no CRS).
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

    Returns a RasterConfusion.

    Raises ValueError when exactly one raster has a CRS, the CRSs cannot be transformed, or
    the rasters hold more than ``MAX_CLASSES`` distinct values.
    """
    if (predicted.crs is None) != (reference.crs is None):
        raise ValueError(
            "PREDICTED and REFERENCE: one raster has a CRS and the other has none; assign "
            "the missing CRS (or remove both to compare on pixel coordinates)"
        )
    row_area_m2, area_note = cell_areas_m2(reference)
    locate = _Locator(predicted, reference)
    tally = _Tally(predicted, reference, [float(v) for v in ignore_values], class_table,
                   row_area_m2, agreement=bool(agreement_path))

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
        # Every pixel centre goes through PROJ (float64 coordinates, ~10 times slower):
        # smaller blocks keep a cancel as quick and the temporaries as small.
        rows_per_block = max(1, rows_per_block // 4)
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
    tally.finish()
    classes, warnings = tally.classes, tally.warnings
    if not class_table:
        for band in (reference, predicted):
            for value, name in band.class_names.items():
                k = classes.position(value)
                if k is not None and not classes.names[k]:
                    classes.names[k] = name
    if area_note:
        warnings.append(area_note)
    if not tally.counts.sum():
        warnings.append(_nothing_scored(tally.pixels))
    for name, band, role in (("PREDICTED", predicted, "count as no prediction"),
                             ("REFERENCE", reference, "are left out as nodata")):
        if band.mask:
            warnings.append(f"{name}: the raster has a GDAL {band.mask}: the pixels it masks "
                            f"{role}")
    alignment = _alignment(predicted, reference, locate, tally.counts, tally.pixels)
    for message in warnings:
        logger.warning(message)
    return RasterConfusion(classes, tally.counts, tally.areas_m2(), alignment, warnings)


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

    def __init__(self, predicted, reference, ignore, class_table, row_area_m2, agreement):
        self.predicted, self.reference, self.ignore = predicted, reference, ignore
        self.agreement = agreement
        if class_table:
            self.classes = confusion.ClassTable([v for v, _ in class_table],
                                                [n for _, n in class_table], fixed=True)
        else:
            self.classes = confusion.ClassTable()
        self.counts = confusion.new_matrix(self.classes.k)
        self.areas = confusion.new_matrix(self.classes.k, np.float64)
        self.row_area_m2 = row_area_m2
        # Equal cells (a projected CRS): areas are counts times one cell, no weighted pass.
        self.uniform_area = (
            bool(np.all(row_area_m2 == row_area_m2[0])) if len(row_area_m2) else True
        )
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
        is_void = np.isin(pred_codes_ok, self.ignore) if self.ignore else None
        looked_up = self._positions(pred_codes_ok, from_reference=False, void=is_void)
        k = self.classes.k
        unknown = looked_up < 0
        looked_up[unknown] = k  # OTHER: not a class
        if is_void is not None:
            looked_up[is_void] = k
            unknown &= ~is_void
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
            weights = np.broadcast_to(self.row_area_m2[r0:r1, None], ref.shape)[scored]
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
            cell = float(self.row_area_m2[0]) if len(self.row_area_m2) else 0.0
            return self.counts * cell
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


def _valid(values: np.ndarray, nodata, ignore) -> np.ndarray:
    """Pixels that are neither nodata (the band's value, or NaN) nor one of ``ignore``."""
    valid = np.ones(values.shape, dtype=bool)
    if values.dtype.kind == "f":
        valid &= ~np.isnan(values)
    if nodata is not None and not (isinstance(nodata, float) and math.isnan(nodata)):
        valid &= values != nodata
    for value in ignore:
        valid &= values != value
    return valid


class _Locator:
    """Which predicted pixel lies under each reference pixel centre, and reading it."""

    def __init__(self, predicted: RasterBand, reference: RasterBand):
        self.predicted, self.reference = predicted, reference
        self.inverse = _invert(predicted.geotransform)
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
        #: Columns and rows separate: each predicted column depends on the reference column
        #: only, each predicted row on the reference row only.
        self.separable = (
            self.transformer is None and not predicted.rotated and not reference.rotated
        )
        if self.separable:
            gt = reference.geotransform
            x = gt[0] + (np.arange(reference.width) + 0.5) * gt[1]
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
        ref = self.reference
        shape = (r1 - r0, ref.width)
        if self.separable:
            return self._read_separable(band, r0, r1)
        cc, rr = np.meshgrid(np.arange(ref.width) + 0.5, np.arange(r0, r1) + 0.5)
        gt = ref.geotransform
        x = gt[0] + cc * gt[1] + rr * gt[2]
        y = gt[3] + cc * gt[4] + rr * gt[5]
        del cc, rr
        if self.transformer is not None:
            x, y = self.transformer.transform(x, y, errcheck=False)
        inv = self.inverse
        with np.errstate(invalid="ignore"):
            cols = np.floor(inv[0] + x * inv[1] + y * inv[2])
            rows = np.floor(inv[3] + x * inv[4] + y * inv[5])
        bad = ~(np.isfinite(cols) & np.isfinite(rows))
        cols = np.where(bad, -1, cols).astype(np.int64)
        rows = np.where(bad, -1, rows).astype(np.int64)
        pred = self.predicted
        inside = (cols >= 0) & (cols < pred.width) & (rows >= 0) & (rows < pred.height)
        if not inside.any():
            return np.zeros(shape, dtype=np.uint8), inside
        c_in, r_in = cols[inside], rows[inside]
        del cols, rows
        c0, c1, q0, q1 = int(c_in.min()), int(c_in.max()) + 1, int(r_in.min()), int(r_in.max()) + 1
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


def _invert(gt) -> tuple:
    """GDAL's inverse geotransform: (col0, dcol/dx, dcol/dy, row0, drow/dx, drow/dy)."""
    det = gt[1] * gt[5] - gt[2] * gt[4]
    if det == 0:
        raise ValueError("a raster's geotransform is degenerate (zero pixel size)")
    a, b, c, d = gt[5] / det, -gt[2] / det, -gt[4] / det, gt[1] / det
    return (-(a * gt[0] + b * gt[3]), a, b, -(c * gt[0] + d * gt[3]), c, d)


def cell_areas_m2(band: RasterBand) -> tuple[np.ndarray, str]:
    """Area of one pixel of each row, float array (height,), and a note for the report ("" if
    none).

    Geographic CRS: the exact area on the CRS's ellipsoid of the cell bounded by two
    parallels and two meridians (authalic-latitude formula, Snyder 1987, "Map Projections: A
    Working Manual", USGS PP 1395, eqs. 3-12 and p. 77): (a² Δλ / 2) (q(φ₂) - q(φ₁)). Projected
    CRS: |det(geotransform)| in m² of the projection plane (not corrected for its scale
    factor). No CRS: in pixel units², with a note.
    """
    gt, height = band.geotransform, band.height
    det = abs(gt[1] * gt[5] - gt[2] * gt[4])
    crs = band.crs
    if crs is None:
        return np.full(height, det), (
            "the rasters have no CRS: areas are in squared pixel units, not m²"
        )
    if crs.is_geographic:
        ellipsoid = crs.ellipsoid
        a, inv_f = ellipsoid.semi_major_metre, ellipsoid.inverse_flattening
        e2 = 0.0 if not inv_f else (2 - 1 / inv_f) / inv_f
        radians = crs.axis_info[0].unit_conversion_factor
        lat_edges = (gt[3] + np.arange(height + 1) * gt[5]) * radians
        q = _authalic_q(np.clip(lat_edges, -math.pi / 2, math.pi / 2), e2)
        areas = a * a * abs(gt[1] * radians) / 2 * np.abs(np.diff(q))
        note = "" if not band.rotated else (
            "the reference raster is rotated in a geographic CRS: cell areas ignore the rotation"
        )
        return areas, note
    factor = crs.axis_info[0].unit_conversion_factor if crs.axis_info else 1.0
    return np.full(height, det * factor * factor), ""


def _authalic_q(phi: np.ndarray, e2: float) -> np.ndarray:
    """Snyder's q(φ) (eq. 3-12): the sphere's 2 sin φ when e = 0."""
    s = np.sin(phi)
    if e2 == 0:
        return 2 * s
    e = math.sqrt(e2)
    return (1 - e2) * (s / (1 - e2 * s * s) - np.log((1 - e * s) / (1 + e * s)) / (2 * e))


def _driver_for(path: str):
    """The GDAL driver that creates files with the extension of ``path`` (GeoTIFF when the
    extension is .tif, missing, or no creating driver claims it)."""
    from osgeo import gdal

    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if extension and extension not in ("tif", "tiff"):
        for k in range(gdal.GetDriverCount()):
            driver = gdal.GetDriver(k)
            metadata = driver.GetMetadata() or {}
            if (metadata.get(gdal.DCAP_RASTER) == "YES"
                    and metadata.get(gdal.DCAP_CREATE) == "YES"
                    and extension in (metadata.get(gdal.DMD_EXTENSIONS) or "").split()):
                return driver
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
    inv = _invert(ref_gt)
    col = inv[0] + origin[0] * inv[1] + origin[1] * inv[2]
    row = inv[3] + origin[0] * inv[4] + origin[1] * inv[5]
    shift = [round(float(col - round(col)), 6), round(float(row - round(row)), 6)]
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
    }
