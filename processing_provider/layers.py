"""QGIS feature sources and sinks <-> core arrays: reading geometries and attributes once,
writing rows in batches."""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from dataclasses import dataclass

import numpy as np
from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsCsException,
    QgsFeature,
    QgsFeatureRequest,
    QgsGeometry,
    QgsProcessingFeedback,
)

from ..core.geometry.stored import StoredGeometries, num_coordinates_of, wkb_of
from ..core.util import allocator
from .attributes import AttributeTable
from .compat import SKIP_GEOMETRY_CHECKS, WKT2_2019
from .geopackage import CANCELED, read_geopackage
from .wkb import GeometryBatches


@dataclass
class SourceFeatures:
    """Everything evaluation and output need from one feature source, read in one pass.

    Attributes:
        geometries: object array (n,) of shapely geometries or None (null or unreadable), or
            the same on disk (``StoredGeometries``, read with ``stored``).
        feature_ids: int64 array (n,) of QGIS feature ids.
        attributes: the rows' attribute values (an AttributeTable: reads like a list (n) of
            attribute lists, in the source's field order).
        crs_wkt: the source CRS as WKT, or None when it has none (or only an undefined one).
        n_curved: how many geometries with arcs were cut into straight segments
            (``wkb.geometries_from_wkb``).
    """

    geometries: np.ndarray | StoredGeometries
    feature_ids: np.ndarray
    attributes: AttributeTable
    crs_wkt: str | None
    n_curved: int = 0


def layer_crs_definition(crs: QgsCoordinateReferenceSystem) -> str | None:
    """The CRS as WKT for pyproj, or None when the layer has no usable CRS.

    A GeoPackage layer written without a CRS comes back "valid" but with no authority id: an
    "Undefined geographic SRS" (srs_id 0, "+proj=longlat" on no datum) or an empty
    definition. Both are treated as no CRS.
    """
    if not crs.isValid():
        return None
    if not crs.authid() and (not crs.toProj() or "undefined" in crs.description().lower()):
        return None
    return crs.toWkt(WKT2_2019)


def crs_for_pyproj(crs: QgsCoordinateReferenceSystem) -> str | None:
    """A CRS as something pyproj accepts: its authority id, else WKT; None when it has none."""
    if crs.authid() and not crs.authid().startswith("USER:"):
        return crs.authid()
    return layer_crs_definition(crs)


#: Longest stretch of reading, in seconds, between two cancellation checks and progress
#: updates (well within the half second a cancel may take).
CHECK_INTERVAL_S = 0.1
#: Geometries made from WKB per call: some tens of milliseconds.
FROM_WKB_CHUNK = 20_000


def read_source(
    source,
    feedback: QgsProcessingFeedback,
    progress_range=(0.0, 100.0),
    attribute_indices=None,
    geopackage=None,
    stored: bool = False,
):
    """Read every feature of a QgsProcessingFeatureSource (selection already honoured).

    Geometry validity checks are skipped so that every entry point (toolbox, processing.run,
    qgis_process) behaves the same: invalid geometries reach the core, which repairs them.
    Geometries cross as WKB and become shapely geometries in vectorised calls.

    Args:
        attribute_indices: indices of the fields to fetch; None fetches all. Fields not
            fetched are NULL in ``attributes``, which keeps the source's field order.
        geopackage: (path, layer name) when the source is a whole GeoPackage layer that
            GDAL can read directly (``geopackage.direct_location``); the same rows, faster.
        stored: keep the geometries on disk (``core.geometry.StoredGeometries``), made and
            written batch by batch, for layers too large to hold.

    Returns a SourceFeatures, or None if the user canceled.
    """
    try:
        return _read_source(source, feedback, progress_range, attribute_indices, geopackage,
                            stored)
    finally:
        allocator.trim()  # the batches' memory, which glibc would keep in its heap


def _read_source(source, feedback, progress_range, attribute_indices, geopackage, stored):
    crs_wkt = layer_crs_definition(source.sourceCrs())
    if geopackage is not None:
        read = read_geopackage(geopackage, source.fields(), attribute_indices,
                               feedback.isCanceled, StoredGeometries() if stored else None)
        if read is CANCELED:
            return None
        if read is not None:
            feedback.setProgress(progress_range[1])
            return SourceFeatures(*read[:3], crs_wkt, read[3])
    request = QgsFeatureRequest()
    if attribute_indices is not None:
        request.setSubsetOfAttributes(sorted(set(attribute_indices)))
    total = max(source.featureCount(), 1)
    start, end = progress_range
    wkbs, ids, attributes, tables = [], [], [], []
    n_fields = source.fields().count()
    add_wkb, add_id, add_attributes = wkbs.append, ids.append, attributes.append
    batches = GeometryBatches(StoredGeometries() if stored else None)
    next_check = time.monotonic() + CHECK_INTERVAL_S
    for k, feature in enumerate(source.getFeatures(request, SKIP_GEOMETRY_CHECKS)):
        # A null geometry gives empty WKB, which from_wkb turns into None.
        add_wkb(feature.geometry().asWkb().data())
        add_id(feature.id())
        add_attributes(feature.attributes())
        if len(wkbs) == FROM_WKB_CHUNK:
            batches.add(wkbs)
            wkbs.clear()
            tables.append(AttributeTable.from_rows(attributes, n_fields))
            attributes.clear()
        if time.monotonic() >= next_check:
            if feedback.isCanceled():
                return None
            feedback.setProgress(start + (end - start) * k / total)
            next_check = time.monotonic() + CHECK_INTERVAL_S
    batches.add(wkbs)
    tables.append(AttributeTable.from_rows(attributes, n_fields))
    geometries, n_curved = batches.geometries()
    feedback.setProgress(end)
    return SourceFeatures(
        geometries=geometries,
        feature_ids=np.array(ids, dtype=np.int64),
        attributes=AttributeTable.concatenate(tables, n_fields),
        crs_wkt=crs_wkt,
        n_curved=n_curved,
    )


def to_qgis_value(value):
    """A numpy scalar as a plain Python value QGIS accepts; NaN becomes None (NULL).

    QGIS silently drops a feature whose attributes hold numpy scalars.
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else float(value)
    return value


def qgis_values(values) -> list:
    """A column as a list of plain Python values QGIS accepts: ``[to_qgis_value(v) for v in
    values]``, done in bulk for numeric and boolean numpy arrays (NaN becomes None)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        plain = values.tolist()
        if values.dtype.kind == "f":
            for k in np.flatnonzero(np.isnan(values)).tolist():
                plain[k] = None
        return plain
    return [to_qgis_value(v) for v in values]


class LookupColumn:
    """A column of looked-up values, made plain batch by batch (``feature_batches``): row k
    is ``to_qgis_value(values[positions[k]])``, or None where ``positions[k]`` is -1. So
    that a layer's ids (feature ids of matched predictions, id-field values) are never a
    Python list of every row.

    Args:
        positions: int array (n,) of positions into ``values``, -1 for none.
        values: array or list of the values looked up (feature ids, an id field's values).
    """

    def __init__(self, positions, values):
        self.positions = np.asarray(positions, dtype=np.int64).reshape(-1)
        self.values = values

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, rows: slice) -> list:
        positions = self.positions[rows]
        plain = [None] * len(positions)
        found = np.flatnonzero(positions >= 0)
        at = positions[found]
        if isinstance(self.values, np.ndarray):
            looked_up = qgis_values(self.values[at])
        else:
            looked_up = [to_qgis_value(self.values[i]) for i in at.tolist()]
        for k, value in zip(found.tolist(), looked_up):
            plain[k] = value
        return plain


#: At most this many rows per addFeatures call, and at most this many vertices unless one
#: row has more: a batch is some tens of milliseconds of work (a few tenths of a second for
#: polygons of hundreds of thousands of vertices), between which the caller checks for
#: cancellation.
WRITE_BATCH_ROWS = 1000
WRITE_BATCH_VERTICES = 500_000


def feature_batches(geometries, own_attributes, columns, transform=None):
    """The rows of an output as lists of QgsFeature, batch by batch, for sink.addFeatures
    (whose fields are the own fields, then one per column).

    Args:
        geometries: object array (n,) of shapely polygonal geometries, or the same on disk
            (``StoredGeometries``), made multi-part on the way; None for a table without
            geometry.
        own_attributes: list (n,) of attribute lists (an input feature's own values, in
            field order), or an AttributeTable of n rows, or None when the rows have none.
        columns: list of columns, each a list (n,) of plain values, or an array (n,) or a
            ``LookupColumn`` made plain values batch by batch (``qgis_values``: a layer's
            columns are never all Python objects at once).
        transform: QgsCoordinateTransform applied to every geometry, or None; a geometry
            it cannot transform is written as a null geometry.

    Yields lists of at most WRITE_BATCH_ROWS features (WRITE_BATCH_VERTICES vertices).
    """
    n = len(geometries) if geometries is not None else len(columns[0]) if columns else 0
    for start, stop in _batch_bounds(n, geometries):
        # WKB made per batch: one vectorised call, and no copy of a whole layer at once.
        wkbs = wkb_of(geometries, slice(start, stop)) if geometries is not None else None
        values = zip(*(
            column[start:stop] if isinstance(column, (list, LookupColumn))
            else qgis_values(column[start:stop])
            for column in columns
        )) if columns else itertools.repeat(())
        own = (own_attributes.rows(slice(start, stop))
               if isinstance(own_attributes, AttributeTable)
               else own_attributes[start:stop] if own_attributes is not None else None)
        features = []
        for k, extra in zip(range(start, stop), values):
            # Without fields: sinks write attributes by position, and copying the fields
            # into each feature costs as much as setting its attributes.
            feature = QgsFeature()
            if wkbs is not None:
                feature.setGeometry(_multi_geometry(wkbs[k - start], transform))
            feature.setAttributes(
                [*own[k - start], *extra] if own is not None else list(extra)
            )
            features.append(feature)
        yield features


def _batch_bounds(n, geometries):
    """(start, stop) of consecutive batches of rows (see WRITE_BATCH_ROWS)."""
    ends = (
        np.cumsum(num_coordinates_of(geometries)) if geometries is not None
        else np.zeros(n)
    )
    start = 0
    while start < n:
        before = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, before + WRITE_BATCH_VERTICES, side="right"))
        stop = min(max(stop, start + 1), start + WRITE_BATCH_ROWS, n)
        yield start, stop
        start = stop


def _multi_geometry(wkb, transform):
    geometry = QgsGeometry()
    geometry.fromWkb(wkb)
    geometry.convertToMultiType()
    if transform is not None:
        try:
            geometry.transform(transform)
        except QgsCsException:
            return QgsGeometry()
    return geometry


class _FeedbackLogHandler(logging.Handler):
    def __init__(self, feedback):
        super().__init__(logging.INFO)
        self.feedback = feedback

    def emit(self, record):
        if record.levelno >= logging.WARNING:
            self.feedback.pushWarning(record.getMessage())
        else:
            self.feedback.pushInfo(record.getMessage())


@contextlib.contextmanager
def forward_core_log(feedback):
    """Show the core's log messages (drops, repairs) in the algorithm's log while inside."""
    core_logger = logging.getLogger(__name__.rsplit(".", 2)[0] + ".core")
    handler = _FeedbackLogHandler(feedback)
    core_logger.addHandler(handler)
    propagate, core_logger.propagate = core_logger.propagate, False
    try:
        yield
    finally:
        core_logger.removeHandler(handler)
        core_logger.propagate = propagate
