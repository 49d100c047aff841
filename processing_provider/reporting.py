"""What every algorithm's report says about its run, from Processing objects: the inputs
(source, layer, CRS, features read, selection or filter), the parameters as plain values (for
the report's "Reproduce" section), and the provenance (plugin, QGIS, libraries, date)."""

from __future__ import annotations

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsMapLayer,
    QgsProcessingFeatureSourceDefinition,
    QgsProcessingOutputLayerDefinition,
    QgsProperty,
    QgsProviderRegistry,
)

from ..core.report import library_versions
from ..core.report_html import utc_now
from .compat import QGIS_VERSION
from .metadata import plugin_version


def input_description(algorithm, parameters, name, context, feature_count=None) -> dict:
    """An input layer as the report's "What was compared" shows it.

    Returns {"source", "layer_name", "crs" (authid, or the CRS description, or None),
    "feature_count" (features read, when given), "selected_features_only", "filter"
    (the layer's subset string, or None)}.
    """
    layer = algorithm.parameterAsVectorLayer(parameters, name, context)
    value = parameters.get(name)
    selected_only = bool(getattr(value, "selectedFeaturesOnly", False))
    parts = (
        QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
        if layer is not None
        else {}
    )
    crs = layer.crs() if layer is not None else None
    return {
        "source": layer.publicSource() if layer is not None else str(value),
        "layer_name": parts.get("layerName") or (layer.name() if layer is not None else None),
        "crs": (crs.authid() or crs.description() or None) if crs and crs.isValid() else None,
        "feature_count": feature_count,
        "selected_features_only": selected_only,
        "filter": (layer.subsetString() or None) if layer is not None else None,
    }


def plain_parameters(algorithm, parameters, context) -> dict:
    """{NAME: plain value} of every parameter given, in declaration order: layers as their
    sources, CRSs as auth ids, output destinations as paths. For core.reproduce."""
    plain = {}
    for definition in algorithm.parameterDefinitions():
        name = definition.name()
        if name not in parameters:
            continue
        value = parameters[name]
        if isinstance(value, QgsProcessingFeatureSourceDefinition) or (
            isinstance(value, str) and definition.type() in ("source", "vector", "raster", "layer")
        ):
            layer = algorithm.parameterAsLayer(parameters, name, context)
            value = layer.source() if layer is not None else _plain(value)
        plain[name] = _plain(value)
    return plain


def provenance() -> dict:
    """Plugin, QGIS and library versions and the date (``created_utc``) of a report."""
    return {
        "plugin": plugin_version(),
        "qgis": QGIS_VERSION,
        **library_versions(),
        "created_utc": utc_now(),
    }


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, QgsProcessingFeatureSourceDefinition):
        return _plain(value.source)
    if isinstance(value, QgsProcessingOutputLayerDefinition):
        return _plain(value.sink)
    if isinstance(value, QgsProperty):
        return value.staticValue() if value.propertyType() == QgsProperty.StaticProperty else (
            value.asExpression()
        )
    if isinstance(value, QgsCoordinateReferenceSystem):
        return value.authid() or value.toWkt()
    if isinstance(value, QgsMapLayer):
        return value.source()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
