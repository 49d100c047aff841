"""Geometries kept on disk: a layer too large to hold as shapely objects, written once as WKB
to a temporary file and read back by position, a work unit or an output batch at a time.

A shapely polygon of 30 vertices takes about 1 KB of memory and its WKB about 0.5 KB; what
stays in memory per row is its place in the file, a box containing its envelope (float32)
and its vertex count (32 B, so 32 MB per million rows). Reading a row back costs one read
call and ``shapely.from_wkb``: about 2 µs for a field of 30 vertices, against 30 µs or more
to evaluate it.

The file is a ``tempfile.TemporaryFile``: removed by the system when closed, or when the
process ends however it ends (on Windows, when it is closed).
"""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np
import shapely

from .segments import group_starts

#: Rows turned into WKB and written per call of ``append``'s inner loop.
_WRITE_CHUNK = 20_000


class SpillFile:
    """A temporary file written at its end and read by (offset, length), thread-safe: the
    file behind a store and its views (and the evaluation's other spills)."""

    def __init__(self, directory):
        self.file = tempfile.TemporaryFile(prefix="iou_evaluation_", dir=directory)
        self.size = 0
        self.lock = threading.Lock()
        self._unflushed = False

    def write(self, data: bytes) -> int:
        """Append ``data``; returns its offset."""
        with self.lock:
            self.file.seek(0, os.SEEK_END)
            self.file.write(data)
            offset, self.size = self.size, self.size + len(data)
            self._unflushed = True
        return offset

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (written before: the file's buffer is flushed
        first when needed)."""
        if self._unflushed:
            with self.lock:
                self.file.flush()
                self._unflushed = False
        if hasattr(os, "pread"):
            return os.pread(self.file.fileno(), length, offset)
        with self.lock:  # Windows: no pread
            self.file.flush()
            self.file.seek(offset)
            return self.file.read(length)

    def close(self) -> None:
        self.file.close()

    def __del__(self):  # the last store or view gone: the file goes, without a warning
        self.file.close()


class StoredGeometries:
    """A sequence of geometries (shapely or None) on disk, in the order appended.

    Built by ``append`` (any number of times), then read with ``take`` (rows as an object
    array) or narrowed with ``view`` (a store of some rows, sharing the file). ``bounds``
    and ``num_coordinates`` answer from memory. Not picklable on purpose: a worker gets the
    rows of its unit (``take``), never the file.
    """

    def __init__(self, directory: str | None = None, *, _spill=None, _columns=None,
                 _index=None, _replacements=None, _appendable=False):
        self._spill = _spill if _spill is not None else SpillFile(directory)
        self._owner = _spill is None
        self._appendable = self._owner or _appendable
        self._parts = []  # (offset, length, bounds, num_coordinates) per append
        self._columns = _columns  # (offset, length, bounds, num_coordinates), when frozen
        # A view: int64 positions into the owner's columns (8 B a row, not their 32 B); a
        # negative position -1 - j is row j of ``_replacements`` (a sibling's columns).
        self._index = _index
        self._replacements = _replacements

    def sibling(self) -> StoredGeometries:
        """An empty store that writes to this store's file: for the rows that replace some
        of this store's rows in a view (``view(..., replaced=...)``)."""
        return StoredGeometries(_spill=self._spill, _appendable=True)

    def append(self, geometries) -> None:
        """Write geometries (object array (n,) of shapely geometries or None) at the end.

        Raises RuntimeError on a view, or after the store has been read."""
        if not self._appendable or self._columns is not None:
            raise RuntimeError("geometries can only be appended to a store not yet read")
        geometries = np.asarray(geometries, dtype=object).reshape(-1)
        for start in range(0, len(geometries), _WRITE_CHUNK):
            chunk = geometries[start:start + _WRITE_CHUNK]
            wkbs = shapely.to_wkb(chunk)  # None stays None
            length = np.array([0 if w is None else len(w) for w in wkbs.tolist()],
                              dtype=np.int64)
            offset = self._spill.write(b"".join(w for w in wkbs.tolist() if w is not None))
            starts = offset + np.cumsum(length) - length
            if len(length) and length.max() <= np.iinfo(np.int32).max:
                length = length.astype(np.int32)  # concatenated with int64 parts: int64
            self._parts.append((starts, length, outward_float32(envelopes(chunk)),
                                shapely.get_num_coordinates(chunk).astype(np.int32)))

    def _frozen(self):
        if self._columns is None:
            parts = self._parts or [(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                     np.zeros((0, 4)), np.zeros(0, np.int32))]
            self._columns = tuple(np.concatenate([p[i] for p in parts]) for i in range(4))
            self._parts = []
            self._spill.file.flush()
        return self._columns

    def _column(self, i: int, positions=slice(None)) -> np.ndarray:
        """Column ``i`` of ``_frozen`` at ``positions`` among this store's rows."""
        column = self._frozen()[i]
        if self._index is None:
            return column[positions]
        index = self._index[positions]
        if self._replacements is None:
            return column[index]
        out = np.empty((len(index),) + column.shape[1:],
                       dtype=np.result_type(column, self._replacements[i]))
        own = index >= 0
        out[own] = column[index[own]]
        out[~own] = self._replacements[i][-1 - index[~own]]
        return out

    def __len__(self) -> int:
        return len(self._index) if self._index is not None else len(self._frozen()[0])

    @property
    def bounds(self) -> np.ndarray:
        """float64 (n, 4), a new array: a box containing each row's ``envelopes``, their
        float32 rounding outwards (kept as 16 B a row; NaN for None or empty). For filters
        that test the rows themselves after (work units' components, spatial queries)."""
        return self._column(2).astype(np.float64)

    @property
    def float32_bounds(self) -> np.ndarray:
        """float32 (n, 4): ``bounds`` as kept, half their size (of a view: a new array at
        each call). Compare with boxes made by ``outward_float32``."""
        return self._column(2)

    @property
    def num_coordinates(self) -> np.ndarray:
        """int32 (n,): vertices of each row (0 for None), as ``shapely.get_num_coordinates``
        (of a view: a new array at each call)."""
        return self._column(3)

    def wkb(self, positions) -> list:
        """The WKB (bytes, or None for a null row) of the rows at ``positions`` (int array
        or slice), as ``shapely.to_wkb`` wrote it."""
        offset, length = self._column(0, positions), self._column(1, positions)
        read = self._spill.read
        return [read(o, n) if n else None for o, n in zip(offset.tolist(), length.tolist())]

    def take(self, positions) -> np.ndarray:
        """The geometries at ``positions`` (int array or slice) as a new object array."""
        read = self.wkb(positions)
        wkbs = np.empty(len(read), dtype=object)
        wkbs[:] = read
        return shapely.from_wkb(wkbs)

    def view(self, positions, replaced=None) -> StoredGeometries:
        """A store of the rows at ``positions`` (int array or slice), in that order, reading
        the same file (which stays open while its owner is open).

        Args:
            replaced: None, or (at, sibling, rows): the view's rows at positions ``at`` (int
                array) are instead the rows ``rows`` (int array, as long) of ``sibling``, a
                ``sibling()`` of this store's owner: a layer's few changed rows over its
                unchanged ones, 8 B a row (``units._Sources``).

        Raises ValueError when ``sibling`` writes to another file.
        """
        index = np.arange(len(self), dtype=np.int64)[positions] if self._index is None \
            else self._index[positions]
        index = np.asarray(index, dtype=np.int64).reshape(-1)
        replacements = self._replacements
        if replaced is not None:
            at, sibling, rows = replaced
            if sibling._spill is not self._spill:
                raise ValueError("replacement rows must be a sibling() of this store's owner")
            rows = np.asarray(rows, dtype=np.int64)
            added = sibling._frozen()
            if replacements is not None:  # a view with replacements already: both kept
                rows = rows + len(replacements[0])
                added = tuple(np.concatenate([old, new]) for old, new in zip(replacements, added))
            index = index.copy()  # it may be this view's own index, sliced
            index[np.asarray(at, dtype=np.int64)] = -1 - rows
            replacements = added
        return StoredGeometries(_spill=self._spill, _columns=self._frozen(), _index=index,
                                _replacements=replacements)

    def close(self) -> None:
        """Remove the file (the owner only; its views cannot be read after)."""
        if self._owner:
            self._spill.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):
        raise TypeError("StoredGeometries cannot be pickled: send take() of its rows")


def take(geometries, positions) -> np.ndarray:
    """Rows of a layer's geometries, an object array or ``StoredGeometries``, as an object
    array (a copy for a store, a fancy-indexed array otherwise)."""
    if isinstance(geometries, StoredGeometries):
        return geometries.take(positions)
    return geometries[positions]


def rows_of(geometries, positions):
    """Rows of a layer's geometries of the same kind: a view of a store, else an array."""
    if isinstance(geometries, StoredGeometries):
        return geometries.view(positions)
    return geometries[positions]


def wkb_of(geometries, positions) -> list:
    """WKB (bytes or None) of rows of an object array or ``StoredGeometries``."""
    if isinstance(geometries, StoredGeometries):
        return geometries.wkb(positions)
    return shapely.to_wkb(geometries[positions]).tolist()


def envelopes(geometries) -> np.ndarray:
    """float64 (n, 4): xmin, ymin, xmax, ymax over every vertex of each row of an object
    array (NaN for None or empty). ``shapely.bounds``, except that every ring counts: GEOS
    takes a polygon's envelope from its shell, and an invalid polygon's hole outside its
    shell, which repair keeps as a polygon of its own, would lie outside it."""
    geometries = np.asarray(geometries, dtype=object).reshape(-1)
    out = shapely.bounds(geometries)
    type_id = shapely.get_type_id(geometries)
    rings = np.zeros(len(geometries), dtype=np.int64)
    polygons = type_id == shapely.GeometryType.POLYGON
    rings[polygons] = shapely.get_num_interior_rings(geometries[polygons])
    # Polygons without holes and points or lines: their bounds are their vertices'.
    other = np.flatnonzero(((rings > 0) | (type_id > shapely.GeometryType.POLYGON))
                           & ~shapely.is_empty(geometries))
    if len(other):
        xy, row = shapely.get_coordinates(geometries[other], return_index=True)
        if len(row):
            starts = group_starts(row)
            at = other[row[starts]]
            out[at, :2] = np.minimum.reduceat(xy, starts, axis=0)
            out[at, 2:] = np.maximum.reduceat(xy, starts, axis=0)
    return out


def outward_float32(boxes: np.ndarray) -> np.ndarray:
    """float32 (n, 4) boxes containing float64 ``boxes`` (xmin, ymin, xmax, ymax): each
    value rounded to float32 away from the box's inside (beyond float32's range: ±inf);
    NaN stays NaN."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    with np.errstate(over="ignore", invalid="ignore"):
        out = boxes.astype(np.float32)
        low, high = out[:, :2], out[:, 2:]
        down = low > boxes[:, :2]
        low[down] = np.nextafter(low[down], np.float32(-np.inf))
        up = high < boxes[:, 2:]
        high[up] = np.nextafter(high[up], np.float32(np.inf))
    return out


def bounds_of(geometries) -> np.ndarray:
    """float64 (n, 4): ``envelopes`` of an object array, or of ``StoredGeometries`` a box
    containing them (its ``bounds``, from memory)."""
    if isinstance(geometries, StoredGeometries):
        return geometries.bounds
    return envelopes(geometries)


def num_coordinates_of(geometries, positions=slice(None)) -> np.ndarray:
    """``shapely.get_num_coordinates`` of the rows at ``positions`` (all by default) of an
    object array or ``StoredGeometries`` (from memory)."""
    if isinstance(geometries, StoredGeometries):
        return geometries.num_coordinates[positions]
    return shapely.get_num_coordinates(geometries[positions])
