"""Processing algorithm ioueval:classmapiou: per-class IoU and mIoU of two categorised
polygon layers, from exact overlay areas."""

from __future__ import annotations

from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterCrs,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
)

from ..core.classmaps.polygons import polygon_class_confusion
from ..core.reports.class_map import build_class_map_report
from ..core.geometry.crs import DEFAULT_EQUAL_AREA_CRS
from ..core.util.wording import count_of
from . import parameter_help
from .class_maps import ClassMapAlgorithm
from .compat import VECTOR_POLYGON
from .layers import read_source
from .parameters import add_missing_help, equal_area_crs_value
from .reporting import input_description
from .validation import (
    equal_area_crs_error,
    layer_label,
    missing_field_error,
    polygon_source_error,
)

HELP = """
<p>Scores a categorised polygon layer (a land-cover or crop map) against a reference one,
class by class, from exact overlay areas in m² in the equal-area CRS (default EPSG:6933):
no rasterisation, no resampling error. Geometries are repaired and reprojected as in
<i>Evaluate polygons</i>; rows without a class value are dropped and counted, and move
nothing (not even the extent of the area compared).</p>
<p>Area compared: the overlap of the two layers' extents (of their rows with a class), or the
STUDY_AREA polygons. Cell
M[p, r] of the confusion matrix (<b>rows = prediction, columns = reference</b>) is the area
where the prediction says p and the reference says r; the <i>no prediction</i> row holds the
reference area no predicted polygon covers. Predicted ground without a reference polygon is
not scored (the reference says nothing there). Two polygons of different classes on the same
ground in one layer count once in each class, and are reported; polygons of one class that
overlap count once.</p>
<p>Per class: <b>IoU = TP / (TP + FP + FN)</b> (areas in m²), Dice = 2TP / (2TP + FP + FN),
precision (user's accuracy) = TP / (TP + FP), recall (producer's accuracy) = TP / (TP + FN).
<b>mIoU</b> over the classes present in either map (absent from both: reported, left out);
frequency-weighted IoU; overall accuracy by area = Σ TP area / Σ area compared (the
area-weighted overall accuracy, reported as <code>pixel_accuracy</code> and as the numeric
output <code>PIXEL_ACCURACY</code>, named as in <i>Label raster IoU</i>).
Class values are compared as text, in Unicode NFC, trimmed and case-insensitive (as
everywhere in the plugin): 3, 3.0 and "3" are one class, and so are "Forest" and "forest",
and "Forêt" typed with a combined or a separate accent. A class is keyed
(<code>per_class</code>, <code>class_value</code>) as the data spells it: its first spelling
in the reference layer, else in the predicted layer.</p>
"""


class ClassMapIoUAlgorithm(ClassMapAlgorithm):
    NAME = "classmapiou"
    DISPLAY_NAME = "Class map IoU (polygons)"
    HELP = HELP
    SHORT_HELP = "Per-class IoU and mIoU of two categorised polygon layers, from exact areas."
    PREDICTED = "PREDICTED"
    REFERENCE = "REFERENCE"
    PREDICTED_CLASS_FIELD = "PREDICTED_CLASS_FIELD"
    REFERENCE_CLASS_FIELD = "REFERENCE_CLASS_FIELD"
    EQUAL_AREA_CRS = "EQUAL_AREA_CRS"
    STUDY_AREA = "STUDY_AREA"
    NUMERIC_OUTPUTS = {
        **ClassMapAlgorithm.NUMERIC_OUTPUTS,
        "PIXEL_ACCURACY": ("pixel_accuracy",
                           "Overall accuracy by area (area-weighted; named as in rasteriou)"),
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        for layer, field, label in (
            (self.PREDICTED, self.PREDICTED_CLASS_FIELD, "Predicted class map (polygons)"),
            (self.REFERENCE, self.REFERENCE_CLASS_FIELD, "Reference class map (polygons)"),
        ):
            self.addParameter(QgsProcessingParameterFeatureSource(
                layer, self.tr(label), [VECTOR_POLYGON]
            ))
            self.addParameter(QgsProcessingParameterField(
                field, self.tr("{layer}: class field").format(layer=self.tr(label)),
                parentLayerParameterName=layer,
            ))
        self.addParameter(QgsProcessingParameterCrs(
            self.EQUAL_AREA_CRS, self.tr("Equal-area CRS for areas (metres)"),
            defaultValue=DEFAULT_EQUAL_AREA_CRS,
            optional=True,  # as in evaluatepolygons: an omitted value takes the default
        ))
        self.addParameter(QgsProcessingParameterFeatureSource(
            self.STUDY_AREA, self.tr("Study area (default: where the layers' extents overlap)"),
            [VECTOR_POLYGON], optional=True,
        ))
        self.add_class_map_outputs()
        add_missing_help(self, parameter_help.CLASSMAP_IOU)

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        error = equal_area_crs_error(self, parameters, context)
        if error:
            return False, error
        for name, field in ((self.PREDICTED, self.PREDICTED_CLASS_FIELD),
                            (self.REFERENCE, self.REFERENCE_CLASS_FIELD)):
            source = self.parameterAsSource(parameters, name, context)
            if source is None:
                return False, f"{name}: the layer could not be read"
            error = polygon_source_error(source, name)
            if error:
                return False, error
            field_name = self.parameterAsString(parameters, field, context)
            if source.fields().lookupField(field_name) < 0:
                layer = self.parameterAsVectorLayer(parameters, name, context)
                return False, missing_field_error(field, field_name, source, layer_label(layer),
                                                  input_name=name)
        error = self.destination_error(parameters)
        return (False, error) if error else (True, "")

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        layers = self._read_layers(parameters, context, feedback)
        if layers is None:
            return {}
        (reference, reference_classes), (predicted, predicted_classes), study = layers
        feedback.setProgressText(self.tr("Overlaying the class maps"))
        result = self.run_core(
            feedback, polygon_class_confusion,
            predicted.geometries, predicted_classes,
            reference.geometries, reference_classes,
            predicted_crs=predicted.crs_wkt, reference_crs=reference.crs_wkt,
            equal_area_crs=equal_area_crs_value(self, parameters, context),
            study_area=study.geometries if study is not None else None,
            study_area_crs=study.crs_wkt if study is not None else None,
            progress=self.progress(feedback, 25, 90),
        )
        if result is None:
            return {}
        inputs = {
            name: input_description(self, parameters, parameter, context,
                                    len(features.feature_ids))
            for name, parameter, features in (
                ("reference", self.REFERENCE, reference), ("predicted", self.PREDICTED, predicted),
                ("study_area", self.STUDY_AREA, study),
            ) if features is not None
        }
        report = build_class_map_report(
            result.classes, result.areas_m2, result.areas_m2, "m2", result.alignment,
            parameters={
                "predicted_class_field": self.parameterAsString(
                    parameters, self.PREDICTED_CLASS_FIELD, context),
                "reference_class_field": self.parameterAsString(
                    parameters, self.REFERENCE_CLASS_FIELD, context),
                "equal_area_crs": result.alignment["equal_area_crs"],
                "area_compared": result.alignment["extent"],
            },
            inputs=inputs, warnings=result.warnings,
            **self.report_arguments(parameters, context),
        )
        miou = report["miou"]
        feedback.pushInfo(
            f"mIoU {'–' if miou is None else f'{miou:.4f}'} over "
            f"{count_of(report['conventions']['n_classes_in_mean'], 'class', 'classes')} "
            f"(areas in m² in "
            f"{result.alignment['equal_area_crs']})"
        )
        return self.write_class_map_outputs(parameters, context, feedback, report)

    def _read_layers(self, parameters, context, feedback):
        """((reference, its classes), (predicted, its classes), study area or None), each layer
        read with its class field; None when canceled."""
        layers = []
        for k, (name, field) in enumerate(((self.REFERENCE, self.REFERENCE_CLASS_FIELD),
                                           (self.PREDICTED, self.PREDICTED_CLASS_FIELD))):
            source = self.parameterAsSource(parameters, name, context)
            if source is None:
                raise QgsProcessingException(self.invalidSourceError(parameters, name))
            index = source.fields().lookupField(
                self.parameterAsString(parameters, field, context)
            )
            features = read_source(source, feedback, (10 * k, 10 * k + 10), [index])
            if features is None:
                return None
            layers.append((features, features.attributes.column(index)))
        study = None
        study_source = self.parameterAsSource(parameters, self.STUDY_AREA, context)
        if study_source is not None:
            study = read_source(study_source, feedback, (20, 25), [])
            if study is None:
                return None
        return layers[0], layers[1], study
