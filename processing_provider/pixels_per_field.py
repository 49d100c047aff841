"""Processing algorithm ioueval:pixelsperfield: area / GSD² as a new column."""

from __future__ import annotations

from qgis.core import (
    QgsFeature,
    QgsFeatureRequest,
    QgsField,
    QgsFields,
    QgsProcessingException,
    QgsProcessingParameterCrs,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterNumber,
    QgsProcessingParameterString,
    QgsProcessingUtils,
)

from ..core.geometry.crs import DEFAULT_EQUAL_AREA_CRS
from ..core.geometry.pixels import pixels_per_field
from . import parameter_help
from .base import IoUEvaluationAlgorithm
from .parameters import add_missing_help
from .compat import FAST_INSERT, FIELD_DOUBLE, NUMBER_DOUBLE, SKIP_GEOMETRY_CHECKS, VECTOR_POLYGON
from .validation import polygon_source_error
from .layers import (
    WRITE_BATCH_ROWS,
    crs_for_pyproj,
    qgis_values,
    read_source,
)

HELP = """
<p>Adds to each polygon the number of pixels it spans at a ground sample distance (GSD):
<b>pixels = A / GSD²</b>, with A the area in m² in the equal-area CRS (default EPSG:6933): the
number of GSD × GSD pixels whose total area equals the field area. A quick measure of how well
a sensor can resolve the fields (a 10 m sensor sees a 1 ha field as 100 pixels).</p>
<p>Invalid geometries are repaired before measuring; null, empty and zero-area features get
NULL. All features are kept, with their attributes. Definition: agribound 1.0's
pixels_per_field.</p>
"""


class PixelsPerFieldAlgorithm(IoUEvaluationAlgorithm):
    NAME = "pixelsperfield"
    DISPLAY_NAME = "Pixels per field"
    SHORT_HELP = "Adds area / GSD² to each polygon: how many pixels of a sensor it spans."
    HELP = HELP
    INPUT = "INPUT"
    GSD = "GSD"
    FIELD_NAME = "FIELD_NAME"
    EQUAL_AREA_CRS = "EQUAL_AREA_CRS"
    OUTPUT = "OUTPUT"

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(
            QgsProcessingParameterFeatureSource(
                self.INPUT, self.tr("Polygons (fields)"), [VECTOR_POLYGON]
            )
        )
        self.addParameter(
            QgsProcessingParameterNumber(
                self.GSD,
                self.tr("Ground sample distance (pixel size) in m"),
                NUMBER_DOUBLE,
                defaultValue=10.0,
                minValue=0.0,
            )
        )
        self.addParameter(
            QgsProcessingParameterString(
                self.FIELD_NAME, self.tr("Name of the new column"), "pixels_per_field"
            )
        )
        self.addParameter(
            QgsProcessingParameterCrs(
                self.EQUAL_AREA_CRS,
                self.tr("Equal-area CRS for areas (metres)"),
                defaultValue=DEFAULT_EQUAL_AREA_CRS,
                optional=True,  # see evaluatepolygons: lets an omitted value take the default
            )
        )
        self.addParameter(
            QgsProcessingParameterFeatureSink(
                self.OUTPUT, self.tr("Polygons with pixels per field"), VECTOR_POLYGON
            )
        )
        add_missing_help(self, parameter_help.PIXELS_PER_FIELD)

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        source = self.parameterAsSource(parameters, self.INPUT, context) if ok else None
        if source is not None:
            error = polygon_source_error(source, self.INPUT)
            if error:
                return False, error
        if ok and not self.parameterAsDouble(parameters, self.GSD, context) > 0:
            return False, self.tr("GSD must be a positive number of metres")
        if ok and not self.parameterAsString(parameters, self.FIELD_NAME, context).strip():
            return False, self.tr("FIELD_NAME must not be empty")
        return ok, message

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(self.invalidSourceError(parameters, self.INPUT))
        gsd_m = self.parameterAsDouble(parameters, self.GSD, context)
        crs = self.parameterAsCrs(parameters, self.EQUAL_AREA_CRS, context)
        equal_area_crs = crs_for_pyproj(crs) if crs.isValid() else DEFAULT_EQUAL_AREA_CRS
        features = read_source(source, feedback, (0, 50))
        if features is None:
            return {}
        values = self.run_core(feedback, pixels_per_field, features.geometries,
                               features.crs_wkt, gsd_m, equal_area_crs)
        if values is None:
            return {}
        name = self.parameterAsString(parameters, self.FIELD_NAME, context).strip()
        new_field = QgsFields()
        new_field.append(QgsField(name, FIELD_DOUBLE))
        fields = QgsProcessingUtils.combineFields(source.fields(), new_field)
        sink, dest_id = self.parameterAsSink(
            parameters, self.OUTPUT, context, fields, source.wkbType(), source.sourceCrs()
        )
        if sink is None:
            raise QgsProcessingException(self.invalidSinkError(parameters, self.OUTPUT))
        # Same request and flags as read_source, so the k-th feature is the k-th value.
        originals = source.getFeatures(QgsFeatureRequest(), SKIP_GEOMETRY_CHECKS)
        plain = qgis_values(values)
        batch, written = [], 0

        def write(features) -> bool:
            """Add a batch; False when the user canceled."""
            if feedback.isCanceled():
                return False
            if not sink.addFeatures(features, FAST_INSERT):
                raise QgsProcessingException(self.writeFeatureError(sink, parameters, self.OUTPUT))
            feedback.setProgress(50 + 50 * (written + len(features)) / max(len(plain), 1))
            return True

        for k, original in enumerate(originals):
            # Without fields: sinks write attributes by position (see feature_batches).
            feature = QgsFeature()
            feature.setGeometry(original.geometry())
            feature.setAttributes(original.attributes() + [plain[k]])
            batch.append(feature)
            if len(batch) == WRITE_BATCH_ROWS:
                if not write(batch):
                    return {}
                written, batch = written + len(batch), []
        if batch and not write(batch):
            return {}
        return {self.OUTPUT: dest_id}

