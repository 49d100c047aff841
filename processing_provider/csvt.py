"""Column types beside a CSV output (a ``.csvt`` file), so QGIS and GDAL read numbers as
numbers: without it every column of a CSV file is text."""

from __future__ import annotations

from pathlib import Path

from .compat import (
    FIELD_BOOL,
    FIELD_DATE,
    FIELD_DATETIME,
    FIELD_DOUBLE,
    FIELD_INT,
    FIELD_LONG,
    FIELD_TIME,
    FIELD_UINT,
    FIELD_ULONG,
    field_type_id,
)

#: GDAL's CSV column types (https://gdal.org/drivers/vector/csv.html) of field type ids
#: (compat.field_type_id).
_CSVT_TYPES = {
    field_type_id(FIELD_INT): "Integer",
    field_type_id(FIELD_UINT): "Integer",
    field_type_id(FIELD_LONG): "Integer64",
    field_type_id(FIELD_ULONG): "Integer64",
    field_type_id(FIELD_DOUBLE): "Real",
    field_type_id(FIELD_BOOL): "Integer(Boolean)",
    field_type_id(FIELD_DATE): "Date",
    field_type_id(FIELD_TIME): "Time",
    field_type_id(FIELD_DATETIME): "DateTime",
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
    types = [_CSVT_TYPES.get(field_type_id(field.type()), "String") for field in fields]
    path = csv_file.with_suffix(".csvt")
    path.write_text(",".join(f'"{t}"' for t in types) + "\n", encoding="utf-8")
    return path
