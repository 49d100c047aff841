"""Class names of label rasters, read the way GDAL and QGIS write them.

Two sources, both giving {class value: name}:

- **a class table file** (``read_class_table``): ``value,name`` lines (comma, semicolon or
  tab), QGIS's colour map file (``QgsRasterRendererUtils::saveColorMapFile``: a ``#``
  comment, an ``INTERPOLATION:`` line, then ``value,red,green,blue,alpha,label`` with the
  label everything after the fifth comma) and QGIS's paletted renderer export
  (``QgsPalettedRasterRenderer::classDataToString``: ``value red green blue alpha label``
  separated by spaces, the label the rest of the line);
- **the band itself** (``band_class_names``): its raster attribute table (RAT) or its
  category names.

A RAT row applies to the pixel values GDAL's ``GDALRasterAttributeTable::GetRowOfValue``
gives it (GDAL, ``gcore/gdal_rat.cpp``): with linear binning, row ⌊(v − row0_min) /
bin_size⌋; otherwise the first row whose ``GFU_Min`` (else ``GFU_MinMax``) column is at most
v and whose ``GFU_Max`` (else ``GFU_MinMax``) column is at least v; with none of these, no
row. A table whose columns are all of generic usage (as ArcGIS writes ``.aux.xml`` tables)
is read with QGIS's rule for such tables (``QgsRasterAttributeTable::guessFieldUsage``): a
numeric column called ``value`` holds the class values, ``min``/``max`` (and their
``min_value``, ``value_min`` ... spellings) the bounds. The name is the ``GFU_Name`` column,
else the first text column of generic usage. GDAL's category names are indexed by pixel
value (name k is the name of value k). Values are compared at the band's own precision (a
Float32 band's 0.1 is the RAT's 0.1), and names are NFC-normalised text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from ..matching.labels import label_text

#: QGIS's names of generic columns that hold the lower and upper bounds of a row
#: (``QgsRasterAttributeTable::guessFieldUsage``), and of a row's single value.
_QGIS_MIN_NAMES = ("min", "min_value", "min value", "value min", "value_min")
_QGIS_MAX_NAMES = ("max", "max_value", "max value", "value max", "value_max")
_QGIS_VALUE_NAME = "value"


@dataclass(frozen=True)
class ClassNames:
    """The names a band's own metadata gives its pixel values.

    Attributes:
        source: "raster attribute table", "category names" or "" (none).
        names: tuple (n_rows,) of names ("" where a row has none).
        low, high: tuples (n_rows,) of each row's bounds (inclusive), or None when the rows
            are linear bins or category indices.
        linear_binning: (row0_min, bin_size) when the rows are linear bins, else None.
        dtype: numpy dtype name of the band's pixels (values are compared in it).
        note: why a table was not used ("" when it was, or there is none).
    """

    source: str = ""
    names: tuple = ()
    low: tuple | None = None
    high: tuple | None = None
    linear_binning: tuple | None = None
    dtype: str = "float64"
    note: str = ""

    def name(self, value) -> str:
        """The name of pixel value ``value``, "" when no row applies."""
        row = self.row_of_value(value)
        return self.names[row] if row is not None else ""

    def row_of_value(self, value) -> int | None:
        """The row that applies to ``value`` (GDAL's ``GetRowOfValue`` rule, compared at the
        band's precision), or None."""
        if not self.names:
            return None
        if self.linear_binning is not None:
            row0, size = self.linear_binning
            if not size:
                return None
            position = (float(value) - row0) / size
            if not math.isfinite(position):  # an infinite pixel value lies in no bin
                return None
            row = math.floor(position)
            return row if 0 <= row < len(self.names) else None
        if self.low is None and self.high is None:  # category names: indexed by value
            number = float(value)
            row = int(number) if number.is_integer() else -1
            return row if 0 <= row < len(self.names) else None
        # GDAL's scan (skip rows whose minimum is above v, then rows whose maximum is below
        # it) returns the first row with minimum <= v <= maximum. A floating-point band's
        # values are compared at its precision (its 0.1 is the bound 0.1); an integer
        # band's in float64, as GDAL compares them: its integers are exact there, while a
        # bound cast to the band's type would be truncated (1.5 to 1) or wrap (-1000 to 24
        # in Byte).
        compare = self.dtype if np.dtype(self.dtype).kind == "f" else "float64"
        v = np.dtype(compare).type(value)
        fits = np.ones(len(self.names), dtype=bool)
        with np.errstate(over="ignore"):  # a bound beyond Float32 is ±inf there
            if self.low is not None:
                fits &= np.asarray(self.low, dtype=compare) <= v
            if self.high is not None:
                fits &= v <= np.asarray(self.high, dtype=compare)
        return int(np.argmax(fits)) if fits.any() else None


def band_class_names(raster_band, dtype: str) -> ClassNames:
    """The ``ClassNames`` of a GDAL band: its default RAT when it has a name column and a
    rule that maps values to rows, else its category names, else none.

    ``raster_band``: an ``osgeo.gdal.Band``; ``dtype``: numpy dtype name of its pixels.
    """
    from osgeo import gdal

    note = ""
    rat = raster_band.GetDefaultRAT()
    if rat is not None and rat.GetRowCount():
        columns = range(rat.GetColumnCount())
        usage = [rat.GetUsageOfCol(i) for i in columns]
        text = [rat.GetTypeOfCol(i) == gdal.GFT_String for i in columns]
        lower = [rat.GetNameOfCol(i).strip().lower() for i in columns]
        name_col = _first(i for i in columns if usage[i] == gdal.GFU_Name)
        if name_col is None:  # QGIS: a text column of generic usage holds names
            name_col = _first(i for i in columns if usage[i] == gdal.GFU_Generic and text[i])
        n = rat.GetRowCount()
        if name_col is not None:
            names = tuple(_text(rat.GetValueAsString(r, name_col)) for r in range(n))
            found, binning = rat.GetLinearBinning(), None
            if isinstance(found, (list, tuple)) and found and found[0]:
                binning = (float(found[1]), float(found[2]))
            if binning is not None:
                return ClassNames("raster attribute table", names, linear_binning=binning,
                                  dtype=dtype)
            min_col = _column(usage, gdal.GFU_Min, gdal.GFU_MinMax)
            max_col = _column(usage, gdal.GFU_Max, gdal.GFU_MinMax)
            if min_col is None and max_col is None and all(u == gdal.GFU_Generic
                                                           for u in usage):
                numeric = [i for i in columns if not text[i]]
                value_col = _first(i for i in numeric if lower[i] == _QGIS_VALUE_NAME)
                min_col = _first(i for i in numeric if lower[i] in _QGIS_MIN_NAMES)
                max_col = _first(i for i in numeric if lower[i] in _QGIS_MAX_NAMES)
                if min_col is None and max_col is None:
                    min_col = max_col = value_col
            if min_col is not None or max_col is not None:
                def column(i):
                    return None if i is None else tuple(
                        rat.GetValueAsDouble(r, i) for r in range(n))
                return ClassNames("raster attribute table", names, column(min_col),
                                  column(max_col), dtype=dtype)
            note = ("its raster attribute table has no value column (GFU_MinMax, GFU_Min or "
                    "GFU_Max) and no linear binning: GDAL gives none of its rows to a pixel "
                    "value, so its names are not used")
    categories = raster_band.GetCategoryNames() or []
    if any(categories):
        return ClassNames("category names", tuple(_text(c) for c in categories), dtype=dtype,
                          note=note)
    return ClassNames(note=note, dtype=dtype)


def _first(iterable):
    return next(iter(iterable), None)


def _column(usage: list, first, fallback):
    """Index of the first column of usage ``first``, else of ``fallback``, else None."""
    for wanted in (first, fallback):
        if wanted in usage:
            return usage.index(wanted)
    return None


def _text(value) -> str:
    """A name as the plugin spells labels (``matching.labels.label_text``: NFC, stripped)."""
    return label_text(value, casefold=False)


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
#: QGIS colour map file line: value,red,green,blue,alpha,label (label: the rest, commas too).
_COLOUR_MAP_LINE = re.compile(rf"^\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,\s*({_NUMBER})\s*,"
                              rf"\s*({_NUMBER})\s*,\s*({_NUMBER})\s*(?:,(.*))?$")
#: QGIS paletted renderer export line: value red green blue [alpha [label]], separated by
#: spaces (QGIS also reads commas and colons there: ``[\\s,:]+``).
_PALETTE_LINE = re.compile(rf"^\s*({_NUMBER})[\s,:]+({_NUMBER})[\s,:]+({_NUMBER})[\s,:]+"
                           rf"({_NUMBER})(?:[\s,:]+({_NUMBER}))?(?:[\s,:]+(.*))?$")


def read_class_table(path: str) -> list[tuple]:
    """(value, name) rows of a class table file.

    Accepted lines: ``value,name`` (comma, semicolon or tab; ``value name`` with spaces);
    a QGIS colour map file (``value,red,green,blue,alpha,label``, the label everything
    after the fifth comma, commas included; its ``INTERPOLATION:`` line skipped); a QGIS
    paletted renderer export (``value red green blue alpha label``, the label the rest of
    the line); ``#`` comments; and one header row whose first field is not a number. Values
    are numbers (int when integral); names are NFC-normalised, stripped text.

    Raises ValueError naming the file and line when a value is repeated, not finite (NaN,
    infinity) or a line has no usable structure, and naming the file when it is not UTF-8
    text or holds no class row.
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
        parsed = _class_line(text)
        if parsed is None:
            if not rows and not header:
                header = text  # one header row; a second non-numeric row is an error
                continue
            raise ValueError(f"CLASS_NAMES: {path} line {number}: {_first_field(text)!r} "
                             f"is not a class value")
        value, name = parsed
        if not math.isfinite(value):
            raise ValueError(f"CLASS_NAMES: {path} line {number}: {value!r} is not a "
                             f"class value (NaN and infinity are never class codes)")
        value = plain_number(value)
        if value in seen:
            raise ValueError(f"CLASS_NAMES: {path} line {number}: value {value} repeated")
        seen.add(value)
        rows.append((value, _text(name)))
    if not rows:
        # An empty file, or a single line that is not a class row (names and values swapped,
        # a hexadecimal code): fixing the classes to none would silently score every value
        # found instead.
        found = (f"only the line {header!r}, taken as a header" if header else
                 "only comments and blank lines" if any(line.strip() for line in lines) else
                 "it is empty")
        raise ValueError(f"CLASS_NAMES: {path} holds no class row ({found}); give one "
                         f"'value,name' line per class")
    return rows


def _split(text: str) -> list:
    """A ``value,name`` line cut at its first separator (tab, else semicolon, else comma,
    else spaces)."""
    separator = next((s for s in ("\t", ";", ",") if s in text), None)
    return text.split(separator, 1) if separator else text.split(None, 1)


def _first_field(text: str) -> str:
    """The value field of a line as ``_class_line`` reads it."""
    return _split(text)[0].strip()


def _class_line(text: str):
    """(value as float, name) of one line, or None when its first field is not a number."""
    for pattern in (_COLOUR_MAP_LINE, _PALETTE_LINE):
        match = pattern.match(text)
        if match:
            return float(match.group(1)), (match.group(6) or "")
    parts = _split(text)
    try:
        value = float(parts[0])
    except ValueError:
        return None
    return value, (parts[1] if len(parts) > 1 else "")


def plain_number(value):
    """A class value as a Python number: int when integral, else float."""
    value = float(value)
    return int(value) if value.is_integer() else value
