"""Processing algorithm ioueval:parsemodeloutput: geometries from a table of model answers,
an adapter over core.text.model_text.answer_tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsField,
    QgsProcessingException,
    QgsProcessingParameterBoolean,
    QgsProcessingParameterCrs,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
)

from ..core.text.model_text import FAILURE_COLUMNS, RECORD_COLUMNS, answer_tables
from ..core.classmaps.rasters import inputs_left_untouched
from ..core.util.wording import count_of
from . import parameter_help
from .base import IoUEvaluationAlgorithm
from .raster_inputs import RasterFileParameter, file_source
from .compat import (
    ADVANCED,
    FIELD_INT,
    FIELD_LONG,
    FIELD_PARAMETER_STRING,
    FIELD_STRING,
    MULTI_POINT,
    MULTI_POLYGON,
    NO_GEOMETRY,
    TABLE,
    VECTOR_POINT,
    VECTOR_POLYGON,
)
from .layers import qgis_values
from .model_text_parameters import (
    HELP_CONVENTIONS,
    IMAGE_HEIGHT_FIELD,
    IMAGE_WIDTH_FIELD,
    PADDED_SQUARE,
    coordinate_format,
    coordinate_format_parameter,
    field_index,
    image_size_parameters,
    padded_square_parameter,
    read_columns,
)
from .parameters import add_missing_help, requested
from .progress import fraction_progress

HELP = """
<p>Recovers every geometry a language or vision-language model wrote in its answers: boxes,
oriented boxes, polygons, masks and points, wherever they sit in prose, code fences or
&lt;think&gt; blocks (read only when the answer after them has none).</p>
<p>Formats: JSON boxes [x1, y1, x2, y2], lists of boxes, {"bbox": …}, {"bboxes": …},
{"bbox_2d": …, "label": …} (Qwen2.5/3-VL), {"box_2d": [ymin, xmin, ymax, xmax]} and
{"point": [y, x]} (Gemini, 0–1000), {"point_2d": [x, y]}, Gemini 2.5 "mask" PNGs (vectorised,
pixels &gt; 127), polygons as flat lists of 2n numbers (n ≥ 3) or lists of [x, y] pairs, oriented
boxes as four corners ({"obb": …}) or centre/size/angle; JSON cut off by a token limit
(the complete part is read, status repaired), trailing commas, comments and Python quotes
(repaired); Qwen-VL &lt;ref&gt;&lt;box&gt; and Qwen2-VL &lt;|box_start|&gt;, Florence-2
&lt;loc_N&gt;, PaliGemma &lt;locNNNN&gt; (objects separated by " ; "), DeepSeek-VL2
&lt;|det|&gt;, GeoChat {&lt;x1&gt;&lt;y1&gt;&lt;x2&gt;&lt;y2&gt;|&lt;θ&gt;} rotated boxes,
Molmo &lt;point x y&gt;, Kosmos-2 &lt;patch_index_N&gt; pairs (32 × 32 cells), Florence-2's
post-processed {'bboxes': …, 'labels': …};
WKT anywhere in the text (any case; other numbers in the sentence are not coordinates);
GeoJSON geometries, Features and FeatureCollections (map coordinates).</p>
""" + HELP_CONVENTIONS + """
<p><b>Raster.</b> With a georeferenced raster, pixel coordinates become map coordinates through
its geotransform: X = g0 + x·g1 + y·g2, Y = g3 + x·g4 + y·g5 (north-up and rotated rasters),
and the raster's size is the image size of rows without one. Without a raster, pixel outputs
are in pixel units with y downwards (they appear mirrored on a map) and no CRS; map
coordinates (format map, GeoJSON) take the CRS parameter.</p>
<p><b>Outputs.</b> OUTPUT: polygons (boxes, oriented boxes, polygons, masks); POINTS: point
answers; FAILURES: records without geometry (non_finite, unparseable) and answers that yielded
nothing (empty or failed), with the reason. Each feature keeps the row id, its index within the
answer, the raw text span, the convention used and its source (given, syntax or auto), the
frame (pixel, fraction, map), a warning when the reading was ambiguous, and its status.</p>
"""


class ParseModelOutputAlgorithm(IoUEvaluationAlgorithm):
    NAME = "parsemodeloutput"
    DISPLAY_NAME = "Geometries from model output"
    HELP = HELP
    SHORT_HELP = "Boxes, polygons, masks and points read from the text answers of a model."
    GROUP = "Model output (text)"
    GROUP_ID = "modeltext"
    INPUT = "INPUT"
    TEXT_FIELD = "TEXT_FIELD"
    ID_FIELD = "ID_FIELD"
    COORDINATE_FORMAT = "COORDINATE_FORMAT"
    CRS = "CRS"
    IMAGE_WIDTH_FIELD = IMAGE_WIDTH_FIELD
    IMAGE_HEIGHT_FIELD = IMAGE_HEIGHT_FIELD
    RASTER = "RASTER"
    OBB_TO_HBB = "OBB_TO_HBB"
    OUTPUT = "OUTPUT"
    POINTS = "POINTS"
    FAILURES = "FAILURES"
    NUMERIC_OUTPUTS = {
        "COUNT_ROWS": ("count_rows", "Rows read"),
        "COUNT_POLYGONS": ("count_polygons", "Polygons recovered"),
        "COUNT_POINTS": ("count_points", "Points recovered"),
        "COUNT_ROWS_EMPTY": ("count_rows_empty", "Answers with no geometry (empty)"),
        "COUNT_ROWS_FAILED": ("count_rows_failed", "Answers that could not be read"),
        "COUNT_OUT_OF_BOUNDS": ("count_out_of_bounds", "Geometries out of bounds"),
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(QgsProcessingParameterFeatureSource(
            self.INPUT, self.tr("Table of model answers"), [TABLE]))
        self.addParameter(QgsProcessingParameterField(
            self.TEXT_FIELD, self.tr("Answer text field"), parentLayerParameterName=self.INPUT,
            type=FIELD_PARAMETER_STRING))
        self.addParameter(QgsProcessingParameterField(
            self.ID_FIELD, self.tr("Row id field (default: feature id)"),
            parentLayerParameterName=self.INPUT, optional=True))
        self.addParameter(coordinate_format_parameter(self.tr("Coordinate format")))
        self.addParameter(QgsProcessingParameterCrs(
            self.CRS, self.tr("CRS of map coordinates"), optional=True))
        for parameter in image_size_parameters(self.INPUT):
            self.addParameter(parameter)
        self.addParameter(RasterFileParameter(
            self.RASTER, self.tr("Georeferenced image (pixels → map)"), optional=True))
        obb = QgsProcessingParameterBoolean(
            self.OBB_TO_HBB, self.tr("Replace oriented boxes by their envelopes (OBB → HBB)"),
            defaultValue=False)
        obb.setFlags(obb.flags() | ADVANCED)
        self.addParameter(obb)
        self.addParameter(padded_square_parameter())
        for name, label, kind in (
            (self.OUTPUT, "Geometries (polygons)", VECTOR_POLYGON),
            (self.POINTS, "Points", VECTOR_POINT),
            (self.FAILURES, "Failures (rows that yielded nothing)", TABLE),
        ):
            self.addParameter(QgsProcessingParameterFeatureSink(
                name, self.tr(label), kind, optional=True, createByDefault=True))
        self.add_numeric_outputs()
        add_missing_help(self, parameter_help.PARSE_MODEL_OUTPUT)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(self.invalidSourceError(parameters, self.INPUT))
        indices = {
            "text": field_index(self, source, parameters, self.TEXT_FIELD, context, True),
            "id": field_index(self, source, parameters, self.ID_FIELD, context),
            "width": field_index(self, source, parameters, self.IMAGE_WIDTH_FIELD, context),
            "height": field_index(self, source, parameters, self.IMAGE_HEIGHT_FIELD, context),
        }
        raster, geotransform, raster_size, raster_crs = self._raster(parameters, context)
        read = read_columns(source, indices, feedback, (0, 10))
        if read is None:
            return {}
        columns, fids = read
        row_ids = columns["id"] if indices["id"] >= 0 else fids
        widths, heights = _image_sizes(feedback, raster, raster_crs, geotransform, raster_size,
                                       columns["width"], columns["height"])
        tables = self.run_core(
            feedback, answer_tables,
            columns["text"], row_ids, coordinate_format(self, parameters, context),
            widths, heights,
            obb_to_hbb=self.parameterAsBoolean(parameters, self.OBB_TO_HBB, context),
            padded_square=self.parameterAsBoolean(parameters, PADDED_SQUARE, context),
            geotransform=geotransform, raster_size=raster_size,
            progress=fraction_progress(feedback, 10, 80),
        )
        if tables is None:
            return {}
        crs = raster_crs if raster is not None else self.parameterAsCrs(
            parameters, self.CRS, context)
        id_field = (QgsField(source.fields().at(indices["id"])) if indices["id"] >= 0
                    else QgsField("row_id", FIELD_LONG))
        id_field.setName("row_id")
        results = {}
        for name, table, kind, keys in (
            (self.OUTPUT, tables.polygons, MULTI_POLYGON, RECORD_COLUMNS),
            (self.POINTS, tables.points, MULTI_POINT, RECORD_COLUMNS),
            (self.FAILURES, tables.failures, NO_GEOMETRY, FAILURE_COLUMNS),
        ):
            if not requested(parameters, name):
                continue
            if feedback.isCanceled():
                return {}
            results[name] = self._write(parameters, context, name, table, kind, keys, id_field,
                                        crs if kind != NO_GEOMETRY else
                                        QgsCoordinateReferenceSystem())
        counts = tables.counts
        _log_counts(feedback, counts)
        results.update(self.numeric_results(lambda key: int(counts[key])))
        feedback.setProgress(100)
        return results

    def _raster(self, parameters, context):
        """(RASTER's name, its GDAL geotransform, (width, height), CRS), all None without
        one. A raster file is read by GDAL, not loaded as a QGIS layer (raster_inputs:
        inputs are never modified)."""
        source = file_source(parameters.get(self.RASTER), context)
        if source is not None:
            return _file_raster(source)
        with inputs_left_untouched():  # QGIS's raster statistics: no .aux.xml beside it
            raster = self.parameterAsRasterLayer(parameters, self.RASTER, context)
        if raster is None:
            return None, None, None, None
        geotransform, raster_size = raster_geotransform(raster)
        return raster.name(), geotransform, raster_size, _raster_crs(raster)

    def _write(self, parameters, context, name, table, kind, keys, id_field, crs):
        fields = [id_field] + [(key, FIELD_INT if key == "index" else FIELD_STRING)
                               for key in keys]
        columns = [qgis_values(table["row_id"])] + [qgis_values(table[k]) for k in keys]
        geometries = (np.array(table["geometry"] + [None], dtype=object)[:-1]
                      if kind != NO_GEOMETRY else None)
        return self.write_features(parameters, name, context, fields, columns, geometries,
                                   kind, crs)


def _image_sizes(feedback, raster, raster_crs, geotransform, raster_size, widths, heights):
    """Each row's image width and height: the fields' values, the RASTER's size where a row
    has none; warnings when the raster (its name, ``raster``) has no georeferencing or no
    CRS (``raster_crs``)."""
    if raster is not None and geotransform is None:
        feedback.pushWarning(
            f"RASTER {raster} is not georeferenced (no geotransform): its size is "
            f"the image size of rows without one; coordinates stay in pixels")
    if raster is not None and not raster_crs.isValid():
        feedback.pushWarning(f"RASTER {raster} has no CRS: the outputs carry none")
    if raster_size is not None:
        widths = [raster_size[0] if _blank(w) else w for w in widths]
        heights = [raster_size[1] if _blank(h) else h for h in heights]
    return widths, heights


def _log_counts(feedback, counts) -> None:
    """What the answers gave, in the log (a warning for unusable image sizes)."""
    if counts["count_rows_bad_image_size"]:
        feedback.pushWarning(
            f"{count_of(counts['count_rows_bad_image_size'], 'row')} with image width / "
            f"height fields "
            f"that are not two numbers > 0: read without the image size (see the warning "
            f"column)")
    feedback.pushInfo(
        f"{count_of(counts['count_rows'], 'answer')}: "
        f"{count_of(counts['count_polygons'], 'polygon')}, "
        f"{count_of(counts['count_points'], 'point')}; {counts['count_rows_empty']} empty, "
        f"{counts['count_rows_failed']} unreadable; "
        f"{count_of(counts['count_out_of_bounds'], 'geometry', 'geometries')} out of "
        f"bounds, {counts['count_non_finite']} non-finite")


def _blank(value) -> bool:
    """A missing size cell: NULL, or empty text (a CSV read without column types)."""
    return value is None or (isinstance(value, str) and not value.strip())


def _file_raster(source: str):
    """(name, GDAL geotransform or None, (width, height), CRS) of the raster file ``source``,
    read by GDAL read-only (an .aux.xml beside it is read: a PNG's georeferencing; nothing is
    computed, so nothing is written); the name is the file's as QGIS names a layer it loads
    (its base name). Raises QgsProcessingException when GDAL cannot open it."""
    from osgeo import gdal

    try:
        dataset = gdal.OpenEx(source, gdal.OF_RASTER | gdal.OF_READONLY)
    except RuntimeError as exc:
        raise QgsProcessingException(f"RASTER: GDAL cannot open {source}: {exc}") from None
    if dataset is None:
        raise QgsProcessingException(f"RASTER: GDAL cannot open {source}")
    geotransform = dataset.GetGeoTransform(can_return_null=True)
    wkt = dataset.GetProjection()
    name = Path(source.split("|")[0]).name.split(".")[0]
    return (name, tuple(geotransform) if geotransform is not None else None,
            (dataset.RasterXSize, dataset.RasterYSize),
            QgsCoordinateReferenceSystem.fromWkt(wkt) if wkt else QgsCoordinateReferenceSystem())


def _raster_crs(raster) -> QgsCoordinateReferenceSystem:
    """The raster layer's CRS, else the one GDAL reads for its file: under qgis_process the
    layer is loaded with GDAL's PAM off (qgis_process.py), so a CRS kept only in an
    .aux.xml beside a PNG or JPEG reaches GDAL's own reading, not the layer."""
    if raster.crs().isValid():
        return raster.crs()
    try:
        from osgeo import gdal

        dataset = gdal.Open(raster.source())
        wkt = dataset.GetProjection() if dataset is not None else ""
    except (ImportError, RuntimeError):
        wkt = ""
    return QgsCoordinateReferenceSystem.fromWkt(wkt) if wkt else raster.crs()


def raster_geotransform(raster):
    """(GDAL geotransform, (width, height)) of a raster layer: read by GDAL (rotated
    rasters too; None when the raster has no georeferencing), else north-up from the layer's
    extent and size."""
    width, height = raster.width(), raster.height()
    try:
        from osgeo import gdal

        dataset = gdal.Open(raster.source())
        if dataset is not None:
            geotransform = dataset.GetGeoTransform(can_return_null=True)
            return (tuple(geotransform) if geotransform is not None else None,
                    (dataset.RasterXSize, dataset.RasterYSize))
    except (ImportError, RuntimeError):
        pass
    extent = raster.extent()
    return (extent.xMinimum(), extent.width() / width, 0.0, extent.yMaximum(), 0.0,
            -extent.height() / height), (width, height)
