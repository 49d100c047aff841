"""What every algorithm's report says about its run, from Processing objects: the inputs
(source, layer, CRS, features read, selection or filter), the parameters as plain values (for
the report's "Reproduce" section), and the provenance (plugin, QGIS, libraries, date)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsMapLayer,
    QgsProcessingException,
    QgsProcessingFeatureSourceDefinition,
    QgsProcessingOutputLayerDefinition,
    QgsProperty,
    QgsProviderRegistry,
)

from ..core.reports.data import library_versions, write_atomically
from ..core.reports.html import utc_now
from .compat import QGIS_VERSION, STATIC_PROPERTY
from .metadata import plugin_version
from .parameters import requested
from .qgis_process import in_qgis_process
from .raster_inputs import file_source


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


def reproduce(algorithm, parameters, context) -> dict:
    """The report's "reproduce" block: {"algorithm": id, "parameters": plain_parameters,
    "qgis_process": the program that reruns it from a shell on this QGIS}."""
    return {"algorithm": algorithm.id(),
            "parameters": plain_parameters(algorithm, parameters, context),
            "qgis_process": qgis_process_program()}


#: qgis_process programs, first found first: Debian's and Ubuntu's packages install the
#: program as qgis_process.bin beside a qgis_process wrapper that passes /etc/default/qgis's
#: QGIS_OPTS (--noversioncheck), which 3.22 rejects ("Command --noversioncheck not known!");
#: OSGeo4W installs .bat files.
QGIS_PROCESS_PROGRAMS = ("qgis_process.bin", "qgis_process", "qgis_process-qgis-ltr.bat",
                         "qgis_process-qgis.bat", "qgis_process.exe")


def qgis_process_program(arguments=None, folders=None) -> str:
    """The qgis_process command that works on the QGIS running this code: under qgis_process,
    the program itself; elsewhere the first of ``QGIS_PROCESS_PROGRAMS`` in QGIS's bin
    folders. Its name when the shell finds that same file on PATH, else its full path;
    "qgis_process" when none is found.

    Args:
        arguments: the command line (default: this process's, under qgis_process only).
        folders: where to look (default: QGIS's bin folders, from its prefix path).
    """
    if arguments is None and in_qgis_process():
        from qgis.PyQt.QtCore import QCoreApplication

        arguments = QCoreApplication.arguments()
    candidates = []
    if arguments:
        program = Path(arguments[0])
        candidates = [program if program.parent != Path("") else
                      Path(shutil.which(str(program)) or program)]
    else:
        for folder in folders if folders is not None else _qgis_bin_folders():
            candidates += [Path(folder) / name for name in QGIS_PROCESS_PROGRAMS]
    for candidate in candidates:
        if candidate.is_file():
            on_path = shutil.which(candidate.name)
            if on_path and Path(on_path).resolve() == candidate.resolve():
                return candidate.name
            return str(candidate.resolve())
    return "qgis_process"


def _qgis_bin_folders() -> list:
    from qgis.core import QgsApplication

    prefix = Path(QgsApplication.prefixPath() or sys.prefix)
    # Linux and macOS: <prefix>/bin; OSGeo4W: <root>/apps/qgis[-ltr] is the prefix, <root>/bin
    return [prefix / "bin", prefix.parent.parent / "bin",
            Path(QgsApplication.applicationDirPath() or sys.prefix)]


def plain_parameters(algorithm, parameters, context) -> dict:
    """{NAME: plain value} of every parameter, in declaration order: those given, and the
    defaults of the others (so a later version's defaults cannot change a rerun); layers as
    their sources, CRSs as auth ids, output destinations as paths (those given only). Paths
    of files (layer sources, files, destinations) are absolute, so that the code and the
    command run from any folder. For core.reports.reproduce."""
    plain = {}
    for definition in algorithm.parameterDefinitions():
        name = definition.name()
        if name not in parameters and definition.isDestination():
            continue
        value = parameters.get(name, definition.defaultValue())
        if value is None or value == "":
            plain[name] = None
            continue
        kind = definition.type()
        given = {**parameters, name: value}
        if kind == "raster" and file_source(value, context) is not None:
            # a raster file is not loaded as a layer (raster_inputs: inputs never touched)
            value = absolute_source(value)
        elif isinstance(value, QgsProcessingFeatureSourceDefinition) or (
            isinstance(value, str) and kind in ("source", "vector", "raster", "layer")
        ):
            layer = algorithm.parameterAsLayer(given, name, context)
            value = layer.source() if layer is not None else value
            if layer is not None and layer.providerType() in ("ogr", "gdal"):  # files
                value = absolute_source(value)
        elif kind == "multilayer" and isinstance(value, (list, tuple)):
            value = [absolute_source(_plain(v)) if isinstance(_plain(v), str) else v
                     for v in value]
        elif kind == "file" or definition.isDestination():
            value = _plain(value)
            if isinstance(value, str):
                value = absolute_source(value, destination=definition.isDestination())
        elif kind == "number":  # qgis_process gives text: the value as used
            number = algorithm.parameterAsDouble(given, name, context)
            value = int(number) if definition.dataType() == 0 else number
        elif kind == "enum":
            value = algorithm.parameterAsEnum(given, name, context)
        elif kind == "boolean":
            value = algorithm.parameterAsBool(given, name, context)
        elif kind == "crs":
            value = algorithm.parameterAsCrs(given, name, context)
        plain[name] = _plain(value)
    return plain


def write_reports(algorithm, parameters, context, report, renderers) -> dict:
    """Write ``report`` to each requested file destination, atomically (a failed write
    leaves no half file).

    Args:
        renderers: (destination parameter name, callable(report) -> str) pairs, in the
            order they are written; a destination left out or skipped is not rendered.

    Returns:
        {destination name: path} of the files written.

    Raises:
        QgsProcessingException naming the destination and the path when a file cannot be
        written.
    """
    written = {}
    for name, render in renderers:
        path = algorithm.parameterAsFileOutput(parameters, name, context)
        if not requested(parameters, name) or not path:
            continue
        try:
            write_atomically(path, render(report))
        except OSError as exc:
            raise QgsProcessingException(f"{name}: could not write {path}: {exc}") from exc
        written[name] = path
    return written


def provenance() -> dict:
    """Plugin, QGIS and library versions and the date (``created_utc``) of a report."""
    return {
        "plugin": plugin_version(),
        "qgis": QGIS_VERSION,
        **library_versions(),
        "created_utc": utc_now(),
    }


def absolute_source(source: str, destination: bool = False) -> str:
    """A file's layer source or path made absolute (from the current folder):
    "data/f.gpkg|layername=x" becomes "/home/me/data/f.gpkg|layername=x". Only a relative
    path to an existing file or folder changes, or with ``destination`` one to a file with
    an extension in an existing folder (a file to write); anything else is returned as it
    is: URIs, memory layers, TEMPORARY_OUTPUT, layer ids, database connections."""
    path, bar, rest = source.partition("|")
    if not path or os.path.isabs(path) or ":" in path.split("/")[0].split("\\")[0]:
        return source
    where = Path(path)
    if not (where.exists() or (destination and where.suffix and where.parent.is_dir()
                               and not any(c in path for c in "'\"= "))):
        return source  # e.g. TEMPORARY_OUTPUT, a layer id
    return str(where.resolve()) + bar + rest


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, QgsProcessingFeatureSourceDefinition):
        return _plain(value.source)
    if isinstance(value, QgsProcessingOutputLayerDefinition):
        return _plain(value.sink)
    if isinstance(value, QgsProperty):
        return value.staticValue() if value.propertyType() == STATIC_PROPERTY else (
            value.asExpression()
        )
    if isinstance(value, QgsCoordinateReferenceSystem):
        return value.authid() or value.toWkt()
    if isinstance(value, QgsMapLayer):
        return value.source()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def same_layer_warning(algorithm, parameters, context,
                       names=("PREDICTED", "REFERENCE")) -> str | None:
    """A warning when two layer parameters are the same data: the same layer, or the same
    source (file and layer, with the same filter and selection). Every feature then matches
    itself and the scores say nothing about a model."""
    layers = [algorithm.parameterAsVectorLayer(parameters, name, context) for name in names]
    if any(layer is None for layer in layers):
        return None

    def key(name, layer):
        selected = bool(getattr(parameters.get(name), "selectedFeaturesOnly", False))
        return (_data_source(layer), layer.subsetString(),
                tuple(sorted(layer.selectedFeatureIds())) if selected else None)

    first, second = (key(name, layer) for name, layer in zip(names, layers))
    if first != second:
        return None
    return (f"{names[0]} and {names[1]} are the same layer ({layers[0].publicSource()}): "
            "every feature matches itself, so the scores (F1 = 1) say nothing about a model")


def _data_source(layer):
    """What ``layer`` reads, written one way: for a file read by OGR, the real path of the
    file and the name of the layer in it (a path without ``|layername=`` opens the file's
    first layer, as OGR's provider does, and a relative path is the absolute one); for a
    memory layer the layer itself (memory layers of one schema share a source text); else
    the source text."""
    if layer.providerType() == "memory":
        return layer.id()
    if layer.providerType() != "ogr":
        return layer.source()
    parts = QgsProviderRegistry.instance().decodeUri("ogr", layer.source())
    path = parts.get("path") or ""
    if not os.path.exists(path):
        return layer.source()
    name = parts.get("layerName") or ""
    if not name:
        name = _ogr_layer_name(path, parts.get("layerId"))
    return (os.path.realpath(path), name)


def _ogr_layer_name(path: str, layer_id) -> str:
    """The name of layer number ``layer_id`` (default 0, the one OGR's provider opens) of the
    file at ``path``, or "" when GDAL cannot tell."""
    from osgeo import gdal

    try:
        dataset = gdal.OpenEx(path, gdal.OF_VECTOR | gdal.OF_READONLY)
        layer = dataset.GetLayer(int(layer_id or 0)) if dataset is not None else None
        return layer.GetName() if layer is not None else ""
    except (RuntimeError, ValueError, TypeError):
        return ""
