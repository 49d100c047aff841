"""Attribute values of a layer's rows, held column by column."""

from __future__ import annotations

import datetime
import itertools

import numpy as np
from qgis.PyQt.QtCore import QByteArray, QDate, QDateTime, QTime, QVariant


class AttributeTable:
    """The attribute values of a layer's rows, held column by column: a column of whole
    numbers as int64, of floats as float64, anything else as objects with repeated strings
    shared (about 8 bytes per value, where a list per row of Python values takes about 60).

    Reads like a list of rows: ``table[k]`` and iteration give one row's values as a list in
    field order (plain Python values: ints, floats, str, QGIS's NULL...), ``len(table)``.
    """

    def __init__(self, columns: list, n: int):
        self._columns, self._n = columns, n

    @classmethod
    def from_columns(cls, columns: list, n: int) -> "AttributeTable":
        """From one sequence (n,) of values per field (None: a field not read, all NULL)."""
        return cls([None if c is None else _column_array(c) for c in columns], n)

    @classmethod
    def from_rows(cls, rows: list, n_fields: int) -> "AttributeTable":
        """From a list of rows, each a list of ``n_fields`` values."""
        return cls.from_columns([[row[i] for row in rows] for i in range(n_fields)]
                                if rows else [[] for _ in range(n_fields)], len(rows))

    @classmethod
    def concatenate(cls, tables: list, n_fields: int) -> "AttributeTable":
        if not tables:
            return cls([None] * n_fields, 0)
        columns = []
        for i in range(n_fields):
            parts = [t._columns[i] for t in tables]
            if all(p is None for p in parts):
                columns.append(None)
                continue
            parts = [np.full(len(t), None, dtype=object) if p is None else p
                     for p, t in zip(parts, tables)]
            if len({p.dtype for p in parts}) > 1:
                parts = [p.astype(object) for p in parts]
            columns.append(np.concatenate(parts))
        return cls(columns, sum(len(t) for t in tables))

    def placed(self, indices, n_fields: int) -> "AttributeTable":
        """This table's columns as the fields at ``indices`` among ``n_fields`` fields, the
        others NULL (not read)."""
        columns = [None] * n_fields
        for index, column in zip(indices, self._columns):
            columns[index] = column
        return AttributeTable(columns, self._n)

    def __len__(self) -> int:
        return self._n

    def column(self, index: int) -> list:
        """One field's values, plain (a list of n)."""
        values = self._columns[index]
        return [None] * self._n if values is None else values.tolist()

    def labels(self, index: int) -> list:
        """One field's values as labels a report can name and write (a list of n): dates
        and times as ISO 8601 text, binary values as hex, NULL as None (``label_value``)."""
        values = self._columns[index]
        if values is None:
            return [None] * self._n
        if values.dtype != object:
            return values.tolist()
        return [label_value(v) for v in values.tolist()]

    def rows(self, positions) -> list:
        """The rows at ``positions`` (int array or slice), each a list of plain values."""
        n = len(range(self._n)[positions]) if isinstance(positions, slice) else len(positions)
        columns = [itertools.repeat(None, n) if c is None else c[positions].tolist()
                   for c in self._columns]
        return [list(row) for row in zip(*columns)] if columns else [[] for _ in range(n)]

    def take(self, positions) -> "AttributeTable":
        """A table of the rows at ``positions`` (int array)."""
        positions = np.asarray(positions, dtype=np.int64)
        return AttributeTable([None if c is None else c[positions] for c in self._columns],
                              len(positions))

    def __getitem__(self, k: int) -> list:
        return self.rows([int(k)])[0]

    def __iter__(self):
        for start in range(0, self._n, 10_000):
            yield from self.rows(slice(start, start + 10_000))


def label_value(value):
    """An attribute value as JSON and a text label can hold it: QDate, QDateTime, QTime
    (and Python's dates and times) as ISO 8601 text, binary as hex, NULL or an invalid date
    as None; anything else as it is. Without this a Date field's values reached the JSON
    report as QDate objects, which it cannot write, and stratum names read
    "PyQt5.QtCore.QDate(2020, 1, 1)"."""
    value = plain_null(value)
    if isinstance(value, (QDate, QDateTime, QTime)):
        if value.isNull() or not value.isValid():
            return None
        value = (value.toPyDate() if isinstance(value, QDate) else
                 value.toPyDateTime() if isinstance(value, QDateTime) else value.toPyTime())
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, (QByteArray, bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


class LabelLookup:
    """Item k of ``values`` (a list or array) as ``label_value`` gives it, converted only
    when looked up: the report names a few fields of a layer of millions by their id."""

    def __init__(self, values):
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, k: int):
        return label_value(self.values[k])


def plain_null(value):
    """An attribute value with QGIS's NULL (a null QVariant, which the feature iterator
    gives) as None; any other value as it is."""
    if isinstance(value, QVariant) and value.isNull():
        return None
    return value


def _column_array(values) -> np.ndarray:
    """A column as int64 (every value a plain int in range), float64 (every value a
    float), else objects, repeated strings stored once; QGIS's NULL (a null QVariant, which
    the feature iterator gives) becomes None, as the GeoPackage reader gives it."""
    values = list(values)
    kinds = {type(v) for v in values}
    if QVariant in kinds:
        values = [plain_null(v) for v in values]
        kinds = {type(v) for v in values}
    if kinds == {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    if kinds == {float}:
        return np.array(values, dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    if str in kinds:
        shared = {}
        values = [shared.setdefault(v, v) if type(v) is str else v for v in values]
    out[:] = values
    return out
