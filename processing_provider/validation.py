"""Checks run before any work: each failure names the parameter it is about."""

from __future__ import annotations

import os

from qgis.core import QgsProcessingOutputLayerDefinition, QgsWkbTypes

from ..core.geometry.crs import resolve_equal_area_crs
from ..plugin.dependencies import DEPENDENCIES, dependency_problems
from .compat import GEOMETRY_NULL, GEOMETRY_POLYGON, GEOMETRY_UNKNOWN
from .parameters import equal_area_crs_value

#: Destination values that are not files (memory layers, temporary files QGIS chooses).
_NOT_FILES = ("TEMPORARY_OUTPUT", "memory:")


def polygon_source_error(source, name: str) -> str | None:
    """A message when a feature source cannot hold polygons (points, lines, tables). A table
    without features is accepted (a GeoJSON file without features has no geometry type): it
    is scored as an empty layer, with a warning."""
    geometry_type = QgsWkbTypes.geometryType(source.wkbType())
    if source.featureCount() == 0 and geometry_type == GEOMETRY_NULL:
        return None
    if geometry_type in (GEOMETRY_POLYGON, GEOMETRY_UNKNOWN):
        return None  # an untyped layer ("Geometry") may hold polygons: the core sorts rows
    kind = QgsWkbTypes.geometryDisplayString(geometry_type)
    return f"{name}: a polygon layer is needed, got a {kind.lower()} layer"


def polygon_sources(algorithm, parameters, context, names=("PREDICTED", "REFERENCE")):
    """The polygon layer parameters ``names`` as feature sources, checked (for
    checkParameterValues).

    Returns ({name: QgsProcessingFeatureSource}, None) when every one can be read and may
    hold polygons; otherwise (the sources read so far, a message naming the first parameter
    that cannot be read or holds no polygons).
    """
    sources = {}
    for name in names:
        sources[name] = algorithm.parameterAsSource(parameters, name, context)
        if sources[name] is None:
            return sources, algorithm.tr("{name}: the layer could not be read").format(name=name)
        error = polygon_source_error(sources[name], name)
        if error:
            return sources, error
    return sources, None


def equal_area_crs_error(algorithm, parameters, context, name: str = "EQUAL_AREA_CRS"):
    """A message naming the parameter when the equal-area CRS cannot be used (geographic,
    unknown to PROJ, not equal-area...); None when it can."""
    try:
        resolve_equal_area_crs(equal_area_crs_value(algorithm, parameters, context, name))
    except ValueError as exc:
        return f"{name}: {exc}"
    return None


def threshold_error(value, name: str) -> str | None:
    """A message when an IoU threshold (a number or text) is not a number in (0, 1]."""
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        return f"{name} must be a number in (0, 1], got {value!r}"
    if not 0.0 < threshold <= 1.0:
        return f"{name} must be in (0, 1], got {threshold:g}"
    return None


def missing_field_error(name: str, field_name: str, source, layer_name: str = "",
                        input_name: str = "") -> str:
    """The message for a field parameter naming a field the layer does not have: the
    parameter, the input it is about (``input_name``, e.g. "REFERENCE"), the layer, and the
    fields the layer has."""
    layer_name = layer_name or source.sourceName()
    names = ", ".join(source.fields().names()) or "none"
    layer = f"the {input_name} layer" if input_name else "the layer"
    return (f"{name}: {layer} '{layer_name}' has no field {field_name!r}; "
            f"its fields are: {names}")


def layer_label(layer) -> str:
    """A layer as a message names it: its name, and for one layer of a multi-layer file
    (GeoPackage) the layer inside the file, e.g. "csb_fields|layername=csb_2016_2023"
    (both inputs of the bundled sample are named "csb_fields")."""
    if layer is None:
        return ""
    from qgis.core import QgsProviderRegistry

    parts = QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
    inner = parts.get("layerName") if isinstance(parts, dict) else None
    return f"{layer.name()}|layername={inner}" if inner else layer.name()


def is_data_source_uri(destination: str) -> bool:
    """A database or service destination (``ogr:dbname=... table=...``, ``postgres://...``),
    not a file path."""
    return destination.startswith("ogr:") or "://" in destination


def destination_path(parameters: dict, name: str) -> str | None:
    """The file (and layer) an output parameter writes to; None for memory/temporary ones."""
    value = parameters.get(name)
    if isinstance(value, QgsProcessingOutputLayerDefinition):
        value = value.sink.staticValue()
    if not isinstance(value, str) or not value or value.startswith(_NOT_FILES):
        return None
    return value


def same_destination_error(parameters: dict, names) -> str | None:
    """A message when two outputs would write the same file (the second would replace the
    first); outputs to different layers of one GeoPackage (``|layername=``) are fine."""
    seen = {}
    for name in names:
        path = destination_path(parameters, name)
        if path is None:
            continue
        file_name, _, layer = path.partition("|")
        key = (os.path.abspath(file_name), layer)
        if key in seen:
            return f"{name}: {path} is also the destination of {seen[key]}"
        seen[key] = name
    return None


def unwritable_destination_error(parameters: dict, name: str) -> str | None:
    """A message when an output file's folder does not exist or cannot be written."""
    value = destination_path(parameters, name)
    if value is None:
        return None
    path = value.split("|")[0]
    if is_data_source_uri(path):
        return None  # the provider reports its own errors
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(folder):
        return f"{name}: the folder {folder} does not exist"
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return f"{name}: {path} cannot be written"
    return None


def missing_package_error(name: str, modules, import_module=None) -> str | None:
    """A message when a package that parameter ``name`` needs (``modules``, import names of
    plugin.dependencies.DEPENDENCIES such as "matplotlib") is missing or too old: which one,
    and how to install it. None when all are there. Checked before any work, so a run that
    asks for an HTML report without matplotlib stops at once, not with a traceback at the end.
    """
    wanted = [d for d in DEPENDENCIES if d.module in modules]
    kwargs = {"import_module": import_module} if import_module else {}
    problems = dependency_problems(wanted, **kwargs)
    return f"{name}: {problems[0].message}" if problems else None
