"""Reading a plain GeoPackage layer with GDAL's columnar (Arrow) interface: the same rows,
ids, geometries and attribute values the QGIS feature iterator gives, several times faster
(one call per batch of rows instead of several per feature).

Used only where the result is the same: a whole layer of a GeoPackage file, read by the OGR
provider, with no subset, selection, feature limit, pending edits or fields QGIS adds
(expressions, joins), and attributes of types whose values GDAL and QGIS give alike. Any
other source is read by the QGIS iterator (layers.read_source)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from qgis.core import (
    QgsProcessingFeatureSourceDefinition,
    QgsProviderRegistry,
    QgsVectorLayer,
)

from .attributes import AttributeTable
from .compat import ORIGIN_PROVIDER, field_type_id
from .wkb import GeometryBatches

#: Field types read directly, as QMetaType ids (compat.field_type_id): Int, LongLong,
#: Double, QString. Dates, times, binary, lists and maps are values QGIS makes its own
#: objects of, and GDAL 3.6 gives wrong values for booleans past the first few rows
#: (measured: [True, None, None, True, False, True] read as [True, --, --, False, False,
#: False]): such layers are read by QGIS.
DIRECT_FIELD_TYPES = frozenset({2, 4, 6, 10})
#: Rows per batch: bounds the memory of a batch (text columns come as fixed-width arrays).
BATCH_ROWS = 20_000
#: What read_geopackage returns when the user canceled.
CANCELED = "canceled"


def direct_location(value, layer) -> tuple[str, str] | None:
    """(path, layer name) of a GeoPackage layer to read directly, or None when the source must
    be read by QGIS.

    Args:
        value: the parameter's value (a layer, a string, or a QgsProcessingFeatureSourceDefinition).
        layer: the QgsVectorLayer the parameter resolves to (parameterAsVectorLayer), or None.
    """
    if isinstance(value, QgsProcessingFeatureSourceDefinition):
        if value.selectedFeaturesOnly or value.featureLimit not in (-1, None):
            return None
        if getattr(value, "filterExpression", ""):  # QGIS >= 3.32
            return None
    elif not isinstance(value, (str, QgsVectorLayer)):
        return None
    if not isinstance(layer, QgsVectorLayer) or not layer.isValid():
        return None
    if layer.providerType() != "ogr" or layer.subsetString() or layer.isEditable():
        return None
    if layer.dataProvider().storageType() != "GPKG":
        return None
    fields = layer.fields()
    if any(fields.fieldOrigin(i) != ORIGIN_PROVIDER for i in range(fields.count())):
        return None
    parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
    path, name = parts.get("path"), parts.get("layerName")
    if parts.get("subset") or not isinstance(name, str) or not name:
        return None
    if not isinstance(path, str) or not Path(path).is_file():
        return None
    return path, name


def read_geopackage(location, fields, attribute_indices, is_canceled, store=None):
    """Geometries, feature ids and attributes of a GeoPackage layer, or None when it cannot be
    read directly after all (then read it with QGIS).

    Args:
        location: (path, layer name), from ``direct_location``.
        fields: the layer's QgsFields (QGIS shows the FID column as a field too).
        attribute_indices: indices of the fields to read; None reads all. Fields not read are
            None, as the QGIS reader leaves them NULL.
        is_canceled: callable() -> bool, asked between batches.
        store: a ``StoredGeometries`` to write the geometries to, batch by batch (then it
            is returned in their place), or None.

    Returns:
        (geometries: object array (n,) of shapely geometries or None, feature_ids: int64 array
        (n,), attributes: a ``attributes.AttributeTable`` in field order (fields not read are
        NULL), n_curved: how many geometries with arcs were cut into straight segments,
        ``wkb.geometries_from_wkb``), or None;
        ``CANCELED`` when ``is_canceled`` said so.
    """
    try:
        from osgeo import gdal, ogr
    except ImportError:
        return None
    if not hasattr(ogr.Layer, "GetArrowStreamAsNumPy"):  # GDAL < 3.6
        return None
    wanted = range(fields.count()) if attribute_indices is None else sorted(set(attribute_indices))
    if any(field_type_id(fields.at(i).type()) not in DIRECT_FIELD_TYPES for i in wanted):
        return None
    gdal.PushErrorHandler("CPLQuietErrorHandler")  # failures fall back to QGIS, silently
    try:
        batches = GeometryBatches(store)
        read = _read_columns(gdal, ogr, location, [fields.at(i).name() for i in wanted],
                             is_canceled, batches)
    finally:
        gdal.PopErrorHandler()
    if read is None or read is CANCELED:
        return read
    ids, tables = read
    geometries, n_curved = batches.geometries()
    table = AttributeTable.concatenate(tables, len(wanted)).placed(wanted, fields.count())
    feature_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
    return geometries, feature_ids, table, n_curved


def _read_columns(gdal, ogr, location, names, is_canceled, batches):
    """(fid batches, one AttributeTable of the named fields per batch), None when the layer
    cannot be read directly, or CANCELED; each batch's geometries go to ``batches``
    (``wkb.GeometryBatches``). Values become compact columns batch by batch: a whole
    layer's as Python values would take about 40 B each."""
    dataset = gdal.OpenEx(location[0], gdal.OF_VECTOR | gdal.OF_READONLY,
                          allowed_drivers=["GPKG"])
    layer = dataset.GetLayerByName(location[1]) if dataset is not None else None
    if layer is None:
        return None
    fid_column, geometry_column = layer.GetFIDColumn(), layer.GetGeometryColumn()
    if not fid_column or not geometry_column:
        return None
    definition = layer.GetLayerDefn()
    field_definitions = {
        definition.GetFieldDefn(i).GetName(): definition.GetFieldDefn(i)
        for i in range(definition.GetFieldCount())
    }
    for name in names:
        if name == fid_column:
            continue
        field = field_definitions.get(name)
        # Float32 and Int16 columns would come narrowed (QGIS reads the stored value), and
        # booleans wrong (see DIRECT_FIELD_TYPES).
        if field is None or field.GetSubType() != ogr.OFSTNone:
            return None
    layer.SetIgnoredFields(sorted(set(field_definitions) - set(names)))
    stream = layer.GetArrowStreamAsNumPy(
        options=["INCLUDE_FID=YES", f"MAX_FEATURES_IN_BATCH={BATCH_ROWS}"]
    )
    if stream is None:
        return None
    ids, tables = [], []
    for batch in stream:
        if is_canceled():
            return CANCELED
        # A copy: a view would keep the whole Arrow batch, its WKB too, until the end.
        ids.append(np.array(batch[fid_column], dtype=np.int64))
        batches.add(_filled(batch[geometry_column]))
        tables.append(AttributeTable.from_columns(
            [_plain_values(batch[name]) for name in names], len(ids[-1])))
    # A stream that stopped on an error ends early: then the counts differ.
    if sum(len(part) for part in ids) != layer.GetFeatureCount(force=1):
        return None
    return ids, tables


def _filled(geometry_column) -> np.ndarray:
    """The WKB column as an object array, None where the geometry is null."""
    out = np.array(np.ma.getdata(geometry_column), dtype=object)
    # (filled(None) would put the object dtype's default fill value, "?", there.)
    out[np.ma.getmaskarray(geometry_column)] = None
    return out


def _plain_values(column) -> list:
    """One batch of an attribute column as the Python values QGIS gives: int, float, str
    (GDAL gives UTF-8 bytes), None for NULL."""
    values = column.tolist()  # masked entries become None
    if column.dtype.kind == "S":  # each distinct value decoded once, and shared
        decoded = {v: v.decode("utf-8", "replace") for v in set(values) if v is not None}
        return [None if v is None else decoded[v] for v in values]
    return values
