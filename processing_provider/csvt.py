"""Column types beside a CSV output (a ``.csvt`` file), so QGIS and GDAL read numbers as
numbers: without it every column of a CSV file is text."""

from __future__ import annotations

from pathlib import Path

from qgis.PyQt.QtCore import QVariant

#: GDAL's CSV column types (https://gdal.org/drivers/vector/csv.html) of QVariant types.
_CSVT_TYPES = {
    QVariant.Int: "Integer",
    QVariant.UInt: "Integer",
    QVariant.LongLong: "Integer64",
    QVariant.ULongLong: "Integer64",
    QVariant.Double: "Real",
    QVariant.Bool: "Integer(Boolean)",
    QVariant.Date: "Date",
    QVariant.Time: "Time",
    QVariant.DateTime: "DateTime",
}


def csv_path(destination: str) -> Path | None:
    """The CSV file an output was written to, or None when it is not a plain .csv file."""
    if not isinstance(destination, str) or "|" in destination:
        return None
    path = Path(destination)
    return path if path.suffix.lower() == ".csv" and path.is_file() else None


def csv_destination(destination) -> Path | None:
    """The CSV file an output is about to be written to (it need not exist yet), or None
    when the destination is not a plain .csv file path."""
    if not isinstance(destination, str) or "|" in destination:
        return None
    path = Path(destination)
    return path if path.suffix.lower() == ".csv" else None


def write_csvt(csv_file: Path, fields) -> Path:
    """Write ``<name>.csvt`` beside ``csv_file``: one quoted GDAL type per field of
    ``fields`` (QgsFields, in the CSV's column order); text for any other type.

    Raises OSError when the file cannot be written.
    """
    types = [_CSVT_TYPES.get(field.type(), "String") for field in fields]
    path = csv_file.with_suffix(".csvt")
    path.write_text(",".join(f'"{t}"' for t in types) + "\n", encoding="utf-8")
    return path
