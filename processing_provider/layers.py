"""QGIS feature sources <-> core arrays: reading geometries and attributes once."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

import numpy as np
import shapely
from qgis.core import QgsCoordinateReferenceSystem, QgsFeatureRequest, QgsProcessingFeedback

from .compat import SKIP_GEOMETRY_CHECKS


@dataclass
class SourceFeatures:
    """Everything evaluation and output need from one feature source, read in one pass.

    Attributes:
        geometries: object array (n,) of shapely geometries or None (null or unreadable).
        feature_ids: int64 array (n,) of QGIS feature ids.
        attributes: list (n) of attribute lists, in the source's field order.
        crs_wkt: the source CRS as WKT, or None when it has none (or only an undefined one).
    """

    geometries: np.ndarray
    feature_ids: np.ndarray
    attributes: list
    crs_wkt: str | None


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
    return crs.toWkt(QgsCoordinateReferenceSystem.WKT2_2019)


def crs_for_pyproj(crs: QgsCoordinateReferenceSystem) -> str | None:
    """A CRS as something pyproj accepts: its authority id, else WKT; None when it has none."""
    if crs.authid() and not crs.authid().startswith("USER:"):
        return crs.authid()
    return layer_crs_definition(crs)


def read_source(source, feedback: QgsProcessingFeedback, progress_range=(0.0, 100.0)):
    """Read every feature of a QgsProcessingFeatureSource (selection already honoured).

    Geometry validity checks are skipped so that every entry point (toolbox, processing.run,
    qgis_process) behaves the same: invalid geometries reach the core, which repairs them.
    Returns a SourceFeatures, or None if the user canceled.
    """
    total = max(source.featureCount(), 1)
    start, end = progress_range
    wkbs, ids, attributes = [], [], []
    request = QgsFeatureRequest()
    for k, feature in enumerate(source.getFeatures(request, SKIP_GEOMETRY_CHECKS)):
        if feedback.isCanceled():
            return None
        geometry = feature.geometry()
        wkbs.append(None if geometry.isNull() else bytes(geometry.asWkb()))
        ids.append(feature.id())
        attributes.append(feature.attributes())
        if k % 1000 == 0:
            feedback.setProgress(start + (end - start) * k / total)
    geometries = shapely.from_wkb(np.array(wkbs, dtype=object), on_invalid="ignore")
    return SourceFeatures(
        geometries=np.asarray(geometries, dtype=object).reshape(-1),
        feature_ids=np.array(ids, dtype=np.int64),
        attributes=attributes,
        crs_wkt=layer_crs_definition(source.sourceCrs()),
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
