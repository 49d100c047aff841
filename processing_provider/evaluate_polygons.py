"""Processing algorithm ioueval:evaluatepolygons: the main job, an adapter over core.evaluate."""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qgis.core import (
    QgsCoordinateTransform,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFile,
    QgsProcessingParameterString,
    QgsField,
    QgsProcessingException,
    QgsProcessingOutputNumber,
    QgsProcessingParameterCrs,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterNumber,
    QgsProviderRegistry,
)
from qgis.PyQt.QtCore import QVariant

from ..core import EvaluationCanceled, Progress, evaluate
from ..core.crs import DEFAULT_EQUAL_AREA_CRS, resolve_equal_area_crs
from ..core.grouping import parse_size_bins
from ..core.labels import ancestors_from_taxonomy
from ..core.matching import MATCHING_METHODS
from ..core.report import build_report, render_html, to_json_text, write_atomically
from .base import IoUEvaluationAlgorithm
from .compat import ADVANCED, FAST_INSERT, QGIS_VERSION, TABLE, VECTOR_POLYGON
from .geopackage import direct_location
from .layers import (
    crs_for_pyproj,
    feature_batches,
    forward_core_log,
    layer_crs_definition,
    read_source,
)
from .metadata import plugin_version
from .outputs import (
    FALSE_NEGATIVES,
    FALSE_POSITIVES,
    LAYER_OUTPUTS,
    PER_FIELD,
    STYLES,
    TRUE_POSITIVES,
    EvaluationOutputs,
)
from .validation import (
    destination_path,
    is_data_source_uri,
    polygon_source_error,
    same_destination_error,
    unwritable_destination_error,
)
from .styles import REPORT_TEMPLATE, StylePostProcessor, store_style_in_file, style_path
from .wkb import CURVE_SEGMENT_ANGLE

MATCHING_LABELS = (
    "One-to-one, greedy by descending IoU (default)",
    "Many-to-one (each reference takes its best prediction)",
    "Optimal one-to-one (most matches, then largest total IoU)",
)

HELP = """
<p>Matches predicted polygons to reference polygons by intersection over union (IoU) and
scores the result at the object level.</p>
<p><b>IoU</b>(P, R) = |P ∩ R| / |P ∪ R|, with areas in m² in the equal-area CRS (default
EPSG:6933; both layers are reprojected, edges first split at points of a 50 m grid where their image bends, areas within 1e-9
relative of 50 m pieces).
A pair can match when IoU ≥ threshold (relative tolerance 1e-9) and the intersection has
positive area. <b>One-to-one</b> matching: pairs sorted by descending IoU (ties by reference,
then prediction order), a pair is accepted when neither polygon is matched yet.</p>
<p>TP = matched reference features, FP = unmatched predictions, FN = unmatched references.
<b>Precision</b> = TP / (TP + FP), <b>recall</b> = TP / (TP + FN),
<b>F1</b> = 2·precision·recall / (precision + recall), <b>mean IoU</b> over matched pairs.
Empty denominators give 0; two empty layers give 1.</p>
<p>Bad data never stops the run: null, empty, non-polygonal and zero-area features are dropped
and counted; invalid geometries are repaired (make_valid, structure method) and counted;
Z and M are dropped; arcs (curve polygons) are cut into straight segments 1° of arc apart.
The report lists the counts. Layers without a CRS are evaluated in planar
units only when both lack one.</p>
<p><b>Boundaries</b> (in the WGS 84 / UTM zone of each reference field): Hausdorff distance
and symmetric mean boundary distance of matched pairs, measured to within Δ/2 and Δ/4 of their
exact values (Δ = boundary sample spacing, 1 m by default). With a <b>boundary tolerance</b>
t: boundary recall = length of reference boundaries within t of a predicted boundary / total
reference boundary length (exact, circular-arc buffers), boundary precision likewise for
predicted boundaries, their F1, and the share of references matched with a mean boundary
distance ≤ t (coverage within tolerance, also area-weighted).</p>
<p>With a <b>score field</b>, COCO-style average precision: AP averaged over IoU thresholds
0.50:0.05:0.95, AP50, AP75 and AR (101-point interpolated precision), per class too, and a
precision-recall curve in the HTML report.</p>
<p>Outputs: matched predictions (TP), unmatched predictions (FP, flagged when they overlap no
reference), unmatched references (FN), a per-field table keyed by the reference id (join it
to the reference layer), and JSON and HTML reports. Definitions follow agribound 1.0's
evaluation.</p>
"""


class EvaluatePolygonsAlgorithm(IoUEvaluationAlgorithm):
    NAME = "evaluatepolygons"
    DISPLAY_NAME = "Evaluate polygons (IoU matching)"
    HELP = HELP
    PREDICTED = "PREDICTED"
    REFERENCE = "REFERENCE"
    REFERENCE_ID_FIELD = "REFERENCE_ID_FIELD"
    IOU_THRESHOLD = "IOU_THRESHOLD"
    EQUAL_AREA_CRS = "EQUAL_AREA_CRS"
    MATCHING = "MATCHING"
    STRATA_FIELD = "STRATA_FIELD"
    SIZE_BINS = "SIZE_BINS"
    BOOTSTRAP = "BOOTSTRAP"
    BOOTSTRAP_SEED = "BOOTSTRAP_SEED"
    PREDICTED_CLASS_FIELD = "PREDICTED_CLASS_FIELD"
    REFERENCE_CLASS_FIELD = "REFERENCE_CLASS_FIELD"
    TAXONOMY = "TAXONOMY"
    REFERENCE_IGNORE_FIELD = "REFERENCE_IGNORE_FIELD"
    PREDICTED_GROUP_FIELD = "PREDICTED_GROUP_FIELD"
    REFERENCE_GROUP_FIELD = "REFERENCE_GROUP_FIELD"
    SCORE_FIELD = "SCORE_FIELD"
    BOUNDARY_TOLERANCE = "BOUNDARY_TOLERANCE"
    BOUNDARY_SAMPLE_SPACING = "BOUNDARY_SAMPLE_SPACING"
    TRUE_POSITIVES = TRUE_POSITIVES
    FALSE_POSITIVES = FALSE_POSITIVES
    FALSE_NEGATIVES = FALSE_NEGATIVES
    PER_FIELD = PER_FIELD
    REPORT_JSON = "REPORT_JSON"
    REPORT_HTML = "REPORT_HTML"
    REFERENCE_FIELDS = (
        REFERENCE_ID_FIELD,
        STRATA_FIELD,
        REFERENCE_CLASS_FIELD,
        REFERENCE_IGNORE_FIELD,
        REFERENCE_GROUP_FIELD,
    )
    PREDICTED_FIELDS = (PREDICTED_CLASS_FIELD, PREDICTED_GROUP_FIELD, SCORE_FIELD)
    DESTINATIONS = (
        TRUE_POSITIVES, FALSE_POSITIVES, FALSE_NEGATIVES, PER_FIELD, REPORT_JSON, REPORT_HTML
    )
    NUMERIC_OUTPUTS = {
        "PRECISION": ("precision", "Precision"),
        "RECALL": ("recall", "Recall"),
        "F1": ("f1", "F1"),
        "IOU_MEAN": ("iou_mean", "Mean IoU of matched pairs"),
        "COUNT_TP": ("count_tp", "True positives"),
        "COUNT_FP": ("count_fp", "False positives"),
        "COUNT_FN": ("count_fn", "False negatives"),
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(
            QgsProcessingParameterFeatureSource(
                self.PREDICTED, self.tr("Predicted polygons"), [VECTOR_POLYGON]
            )
        )
        self.addParameter(
            QgsProcessingParameterFeatureSource(
                self.REFERENCE, self.tr("Reference polygons"), [VECTOR_POLYGON]
            )
        )
        self.addParameter(
            QgsProcessingParameterField(
                self.REFERENCE_ID_FIELD,
                self.tr("Reference id field (keys the per-field table; default: feature id)"),
                parentLayerParameterName=self.REFERENCE,
                optional=True,
            )
        )
        self.addParameter(
            QgsProcessingParameterNumber(
                self.IOU_THRESHOLD,
                self.tr("IoU threshold for a match, in (0, 1]"),
                QgsProcessingParameterNumber.Double,
                defaultValue=0.5,
                minValue=0.0,
                maxValue=1.0,
            )
        )
        self.addParameter(
            QgsProcessingParameterCrs(
                self.EQUAL_AREA_CRS,
                self.tr("Equal-area CRS for areas and IoU (metres)"),
                defaultValue=DEFAULT_EQUAL_AREA_CRS,
                # Optional only so that an omitted value falls back to the default: 3.22
                # rejects a missing CRS value even when the parameter has a default.
                optional=True,
            )
        )
        advanced = [
            QgsProcessingParameterEnum(
                self.MATCHING,
                self.tr("Matching rule"),
                options=[self.tr(label) for label in MATCHING_LABELS],
                defaultValue=0,
            ),
            QgsProcessingParameterField(
                self.STRATA_FIELD,
                self.tr("Strata field of the reference layer (metrics per stratum)"),
                parentLayerParameterName=self.REFERENCE,
                optional=True,
            ),
            QgsProcessingParameterString(
                self.SIZE_BINS,
                self.tr("Size classes in ha: empty = off, 'auto', or edges such as 0,0.5,1,2,5,inf"),
                defaultValue="",
                optional=True,
            ),
            QgsProcessingParameterNumber(
                self.BOUNDARY_TOLERANCE,
                self.tr("Boundary tolerance in m for boundary precision/recall (0 = off)"),
                QgsProcessingParameterNumber.Double,
                defaultValue=0.0,
                minValue=0.0,
            ),
            QgsProcessingParameterNumber(
                self.BOUNDARY_SAMPLE_SPACING,
                self.tr("Boundary sample spacing Δ in m (0 = automatic: perimeter / 1000, ≥ 1 m)"),
                QgsProcessingParameterNumber.Double,
                defaultValue=1.0,
                minValue=0.0,
            ),
            QgsProcessingParameterNumber(
                self.BOOTSTRAP,
                self.tr("Bootstrap resamples for 95 % intervals (0 = off)"),
                QgsProcessingParameterNumber.Integer,
                defaultValue=0,
                minValue=0,
            ),
            QgsProcessingParameterNumber(
                self.BOOTSTRAP_SEED,
                self.tr("Bootstrap seed"),
                QgsProcessingParameterNumber.Integer,
                defaultValue=42,
                minValue=0,
            ),
            QgsProcessingParameterField(
                self.SCORE_FIELD,
                self.tr("Score field of the predicted layer (confidence: adds COCO-style AP)"),
                parentLayerParameterName=self.PREDICTED,
                type=QgsProcessingParameterField.Numeric,
                optional=True,
            ),
            QgsProcessingParameterField(
                self.PREDICTED_CLASS_FIELD,
                self.tr("Class field of the predicted layer (class-aware matching)"),
                parentLayerParameterName=self.PREDICTED,
                optional=True,
            ),
            QgsProcessingParameterField(
                self.REFERENCE_CLASS_FIELD,
                self.tr("Class field of the reference layer (class-aware matching)"),
                parentLayerParameterName=self.REFERENCE,
                optional=True,
            ),
            QgsProcessingParameterFile(
                self.TAXONOMY,
                self.tr("Taxonomy: JSON file mapping each class to its parent class(es)"),
                extension="json",
                optional=True,
            ),
            QgsProcessingParameterField(
                self.REFERENCE_IGNORE_FIELD,
                self.tr("Ignore-region field of the reference layer (true = ignore region)"),
                parentLayerParameterName=self.REFERENCE,
                optional=True,
            ),
            QgsProcessingParameterField(
                self.PREDICTED_GROUP_FIELD,
                self.tr("Group field of the predicted layer (image or tile id)"),
                parentLayerParameterName=self.PREDICTED,
                optional=True,
            ),
            QgsProcessingParameterField(
                self.REFERENCE_GROUP_FIELD,
                self.tr("Group field of the reference layer (image or tile id)"),
                parentLayerParameterName=self.REFERENCE,
                optional=True,
            ),
        ]
        for parameter in advanced:
            parameter.setFlags(parameter.flags() | ADVANCED)
            self.addParameter(parameter)
        for name, label in (
            (self.TRUE_POSITIVES, "True positives (matched predictions)"),
            (self.FALSE_POSITIVES, "False positives (unmatched predictions)"),
            (self.FALSE_NEGATIVES, "False negatives (unmatched references)"),
        ):
            self.addParameter(
                QgsProcessingParameterFeatureSink(
                    name, self.tr(label), VECTOR_POLYGON, optional=True, createByDefault=True
                )
            )
        self.addParameter(
            QgsProcessingParameterFeatureSink(
                self.PER_FIELD,
                self.tr("Per-field table (joins to the reference layer)"),
                TABLE,
                optional=True,
                createByDefault=True,
            )
        )
        self.addParameter(
            QgsProcessingParameterFileDestination(
                self.REPORT_JSON,
                self.tr("Metrics report (JSON)"),
                "JSON files (*.json)",
                optional=True,
                createByDefault=True,
            )
        )
        self.addParameter(
            QgsProcessingParameterFileDestination(
                self.REPORT_HTML,
                self.tr("Metrics report (HTML)"),
                "HTML files (*.html *.htm)",
                optional=True,
                createByDefault=True,
            )
        )
        for name, (_, label) in self.NUMERIC_OUTPUTS.items():
            self.addOutput(QgsProcessingOutputNumber(name, self.tr(label)))

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        threshold = self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context)
        if not 0.0 < threshold <= 1.0:
            return False, self.tr(f"IOU_THRESHOLD must be in (0, 1], got {threshold}")
        try:
            resolve_equal_area_crs(self._equal_area_crs(parameters, context))
        except ValueError as exc:
            return False, f"EQUAL_AREA_CRS: {exc}"
        try:
            parse_size_bins(self.parameterAsString(parameters, self.SIZE_BINS, context))
            self._taxonomy(parameters, context)
        except ValueError as exc:
            return False, str(exc)
        for first, second in (
            (self.PREDICTED_CLASS_FIELD, self.REFERENCE_CLASS_FIELD),
            (self.PREDICTED_GROUP_FIELD, self.REFERENCE_GROUP_FIELD),
        ):
            given = [bool(self.parameterAsString(parameters, n, context)) for n in (first, second)]
            if given[0] != given[1]:
                return False, self.tr(f"{first} and {second} must be given together")
        sources = {}
        for name in (self.PREDICTED, self.REFERENCE):
            sources[name] = self.parameterAsSource(parameters, name, context)
            if sources[name] is None:
                return False, self.tr(f"{name}: the layer could not be read")
            error = polygon_source_error(sources[name], name)
            if error:
                return False, error
        try:
            fields = self._fields_given(
                parameters, context, sources[self.PREDICTED], sources[self.REFERENCE]
            )
        except ValueError as exc:
            return False, str(exc)
        if self.SCORE_FIELD in fields:
            field = sources[self.PREDICTED].fields().at(fields[self.SCORE_FIELD][1])
            if not field.isNumeric():
                return False, self.tr(f"SCORE_FIELD: {field.name()} is not a numeric field")
        error = same_destination_error(parameters, self.DESTINATIONS) or next(
            filter(None, (unwritable_destination_error(parameters, n) for n in self.DESTINATIONS)),
            None,
        )
        if error:
            return False, error
        return True, ""

    def _fields_given(self, parameters, context, predicted_source, reference_source):
        """{parameter name: (field name, index)} for the field parameters that are set.

        Raises ValueError naming the parameter when its layer has no such field.
        """
        fields = {}
        for name in self.REFERENCE_FIELDS + self.PREDICTED_FIELDS:
            source = reference_source if name in self.REFERENCE_FIELDS else predicted_source
            field_name = self.parameterAsString(parameters, name, context)
            if not field_name:
                continue
            index = source.fields().lookupField(field_name)
            if index < 0:
                raise ValueError(f"{name}: the layer has no field {field_name!r}")
            fields[name] = (field_name, index)
        return fields

    def _attributes_to_read(self, parameters, fields, field_parameters, outputs):
        """Indices of the fields a layer must be read with: all of them (None) when one of
        ``outputs`` copies its features' attributes, else only the fields given in
        ``field_parameters``."""
        if any(_requested(parameters, name) for name in outputs):
            return None
        return [fields[name][1] for name in field_parameters if name in fields]

    def _geopackage(self, parameters, name, context):
        """(path, layer name) when the source is a whole GeoPackage layer read directly."""
        return direct_location(
            parameters.get(name), self.parameterAsVectorLayer(parameters, name, context)
        )

    def _taxonomy(self, parameters, context):
        """The TAXONOMY file as a dict (None when not given); raises ValueError naming it."""
        path = self.parameterAsFile(parameters, self.TAXONOMY, context)
        if not path:
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                taxonomy = json.load(handle)
        except (OSError, ValueError) as exc:
            raise ValueError(f"TAXONOMY: cannot read {path} as JSON: {exc}") from None
        if not isinstance(taxonomy, dict):
            raise ValueError("TAXONOMY: the file must hold a JSON object {class: parent}")
        ancestors_from_taxonomy(taxonomy)  # validates the values
        return taxonomy

    def _equal_area_crs(self, parameters, context):
        """The EQUAL_AREA_CRS parameter as a pyproj-readable definition (default EPSG:6933)."""
        crs = self.parameterAsCrs(parameters, self.EQUAL_AREA_CRS, context)
        return crs_for_pyproj(crs) if crs.isValid() else DEFAULT_EQUAL_AREA_CRS

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        predicted_source = self.parameterAsSource(parameters, self.PREDICTED, context)
        reference_source = self.parameterAsSource(parameters, self.REFERENCE, context)
        for name, source in ((self.PREDICTED, predicted_source), (self.REFERENCE, reference_source)):
            if source is None:
                raise QgsProcessingException(self.invalidSourceError(parameters, name))
        try:
            fields = self._fields_given(parameters, context, predicted_source, reference_source)
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from exc
        id_index = fields.get(self.REFERENCE_ID_FIELD, (None, -1))[1]
        try:
            size_bins = parse_size_bins(self.parameterAsString(parameters, self.SIZE_BINS, context))
            taxonomy = self._taxonomy(parameters, context)
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from exc
        options = {
            "iou_threshold": self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context),
            "equal_area_crs": self._equal_area_crs(parameters, context),
            "matching": MATCHING_METHODS[
                self.parameterAsEnum(parameters, self.MATCHING, context)
            ],
            "size_bins": size_bins,
            "bootstrap": self.parameterAsInt(parameters, self.BOOTSTRAP, context),
            "bootstrap_seed": self.parameterAsInt(parameters, self.BOOTSTRAP_SEED, context),
            "taxonomy": taxonomy,
            # 0 switches the tolerance metrics off and makes the spacing automatic.
            "boundary_tolerance_m": self.parameterAsDouble(
                parameters, self.BOUNDARY_TOLERANCE, context
            ) or None,
            "boundary_sample_spacing_m": self.parameterAsDouble(
                parameters, self.BOUNDARY_SAMPLE_SPACING, context
            ) or None,
        }

        feedback.setProgressText(self.tr("Reading layers"))
        reference = read_source(
            reference_source, feedback, (0, 10),
            self._attributes_to_read(parameters, fields, self.REFERENCE_FIELDS,
                                     (self.FALSE_NEGATIVES,)),
            self._geopackage(parameters, self.REFERENCE, context),
        )
        predicted = read_source(
            predicted_source, feedback, (10, 20),
            self._attributes_to_read(parameters, fields, self.PREDICTED_FIELDS,
                                     (self.TRUE_POSITIVES, self.FALSE_POSITIVES)),
            self._geopackage(parameters, self.PREDICTED, context),
        ) if reference else None
        if predicted is None:
            return {}
        for name, features in (("reference", reference), ("predicted", predicted)):
            if features.n_curved:
                feedback.pushInfo(
                    f"{features.n_curved} {name} geometries with arcs were cut into straight "
                    f"segments at most {math.degrees(CURVE_SEGMENT_ANGLE):g}° of arc apart"
                )

        def column(features, name):
            if name not in fields:
                return None
            index = fields[name][1]
            return [attributes[index] for attributes in features.attributes]

        try:
            with forward_core_log(feedback):
                evaluation = evaluate(
                    predicted.geometries,
                    reference.geometries,
                    predicted_crs=predicted.crs_wkt,
                    reference_crs=reference.crs_wkt,
                    strata=column(reference, self.STRATA_FIELD),
                    strata_name=fields.get(self.STRATA_FIELD, (None,))[0],
                    reference_classes=column(reference, self.REFERENCE_CLASS_FIELD),
                    predicted_classes=column(predicted, self.PREDICTED_CLASS_FIELD),
                    reference_groups=column(reference, self.REFERENCE_GROUP_FIELD),
                    predicted_groups=column(predicted, self.PREDICTED_GROUP_FIELD),
                    reference_ignore=column(reference, self.REFERENCE_IGNORE_FIELD),
                    predicted_scores=column(predicted, self.SCORE_FIELD),
                    progress=_FeedbackProgress(feedback, 20, 75),
                    **options,
                )
        except EvaluationCanceled:
            return {}
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from exc

        metrics = evaluation.metrics
        feedback.pushInfo(
            f"TP {metrics['count_tp']}, FP {metrics['count_fp']}, FN {metrics['count_fn']}; "
            f"precision {metrics['precision']:.4f}, recall {metrics['recall']:.4f}, "
            f"F1 {metrics['f1']:.4f}, mean IoU {metrics['iou_mean']:.4f}"
        )
        feedback.setProgressText(self.tr("Writing outputs"))
        writer = _OutputWriter(self, parameters, context, feedback)
        ref_ids = (
            [attrs[id_index] for attrs in reference.attributes]
            if id_index >= 0
            else reference.feature_ids.tolist()
        )
        if id_index >= 0 and len(set(map(str, ref_ids))) < len(ref_ids):
            feedback.pushWarning(
                f"REFERENCE_ID_FIELD: {fields[self.REFERENCE_ID_FIELD][0]} has repeated values: "
                "the per-field table cannot be joined back one to one"
            )
        id_qfield = (
            QgsField(reference_source.fields().at(id_index))
            if id_index >= 0
            else QgsField("ref_fid", QVariant.LongLong)
        )
        outputs = EvaluationOutputs(
            evaluation, predicted, reference, predicted_source.fields(),
            reference_source.fields(), ref_ids, id_qfield,
            _transform(predicted_source, reference_source, context),
        )
        results = writer.write_all(outputs, reference_source.sourceCrs())
        if results is None or feedback.isCanceled():
            return {}

        feedback.setProgressText(self.tr("Writing reports"))
        inputs = {
            "reference": _input_description(self, parameters, self.REFERENCE, context, reference),
            "predicted": _input_description(self, parameters, self.PREDICTED, context, predicted),
        }
        report = build_report(
            evaluation,
            inputs,
            {"plugin": plugin_version(), "qgis": QGIS_VERSION},
        )
        report["parameters"].update(
            {name.lower(): field_name for name, (field_name, _) in fields.items()}
        )
        for name, render in (
            (self.REPORT_JSON, to_json_text),
            (self.REPORT_HTML, lambda data: render_html(data, REPORT_TEMPLATE)),
        ):
            path = self.parameterAsFileOutput(parameters, name, context)
            if not _requested(parameters, name) or not path:
                continue
            try:
                write_atomically(path, render(report))
            except OSError as exc:
                raise QgsProcessingException(f"{name}: could not write {path}: {exc}") from exc
            results[name] = path
        for name, (key, _) in self.NUMERIC_OUTPUTS.items():
            results[name] = metrics[key]
        feedback.setProgress(100)
        return results


class _FeedbackProgress(Progress):
    """Forwards core progress (0-100) into a slice of the algorithm's progress bar."""

    def __init__(self, feedback, start, end):
        self.feedback, self.start, self.end = feedback, start, end

    def report(self, percent, message=""):
        if message:
            self.feedback.setProgressText(message)
        self.feedback.setProgress(self.start + (self.end - self.start) * percent / 100.0)

    def is_canceled(self):
        return self.feedback.isCanceled()


class _OutputWriter:
    """Creates the sinks after evaluation (so a failed or canceled run leaves none) and fills
    them in batches of features."""

    def __init__(self, algorithm, parameters, context, feedback, progress_range=(75.0, 95.0)):
        self.algorithm, self.parameters = algorithm, parameters
        self.context, self.feedback = context, feedback
        self.progress_range = progress_range

    def write_all(self, outputs, crs):
        """Write the requested layer outputs (an outputs.EvaluationOutputs) in ``crs``.

        Returns {output name: destination id}, or None when canceled.
        """
        names = [name for name in LAYER_OUTPUTS if _requested(self.parameters, name)]
        total = max(sum(outputs.row_count(name) for name in names), 1)
        start, end = self.progress_range
        results, written = {}, 0
        # A file output is closed (flushed, its spatial index built: a third of its writing
        # time) on a worker thread while the next one is written; QGIS releases the GIL
        # there. Only when every output is a file of its own (or a memory layer): other
        # destinations (databases, layers of one GeoPackage) close here, one after another.
        destinations = {name: destination_path(self.parameters, name) for name in names}
        own_files = all(_plain_file(path) for path in destinations.values() if path)
        with ThreadPoolExecutor(1) as closer:
            for name in names:
                if self.feedback.isCanceled():
                    return None
                fields = outputs.fields(name)
                sink, dest_id = self.algorithm.parameterAsSink(
                    self.parameters, name, self.context, fields, outputs.wkb_type(name), crs
                )
                if sink is None:
                    raise QgsProcessingException(
                        self.algorithm.invalidSinkError(self.parameters, name)
                    )
                rows = outputs.rows(name)
                for features in feature_batches(
                    rows.geometries, rows.own, rows.columns, rows.transform
                ):
                    if not sink.addFeatures(features, FAST_INSERT):
                        raise QgsProcessingException(
                            self.algorithm.writeFeatureError(sink, self.parameters, name)
                        )
                    written += len(features)
                    self.feedback.setProgress(start + (end - start) * written / total)
                    if self.feedback.isCanceled():
                        return None
                if own_files and destinations[name] and Path(dest_id).is_file():
                    last_reference = [sink]
                    del sink
                    closer.submit(last_reference.clear)  # the sink closes where it is freed
                else:
                    del sink
                results[name] = dest_id
        for name, dest_id in results.items():  # all closed: styles go into the files
            self._style(name, dest_id)
        return results

    def _style(self, name, dest_id):
        if name not in STYLES:
            return
        qml = style_path(STYLES[name])
        if self.context.willLoadLayerOnCompletion(dest_id):
            details = self.context.layerToLoadOnCompletionDetails(dest_id)
            details.setPostProcessor(StylePostProcessor.for_style(qml))
        store_style_in_file(dest_id, qml, self.feedback)


def _plain_file(destination: str) -> bool:
    """Whether an output destination is a file path alone: no layer name, no data source
    URI."""
    return "|" not in destination and not is_data_source_uri(destination)


def _requested(parameters, name) -> bool:
    """False when an optional output was left out (qgis_process) or skipped (toolbox)."""
    return parameters.get(name) not in (None, "")


def _transform(predicted_source, reference_source, context):
    source_crs, target_crs = predicted_source.sourceCrs(), reference_source.sourceCrs()
    if (
        layer_crs_definition(source_crs) is None
        or layer_crs_definition(target_crs) is None
        or source_crs == target_crs
    ):
        return None
    return QgsCoordinateTransform(source_crs, target_crs, context.transformContext())


def _input_description(algorithm, parameters, name, context, features):
    layer = algorithm.parameterAsVectorLayer(parameters, name, context)
    value = parameters.get(name)
    selected_only = bool(getattr(value, "selectedFeaturesOnly", False))
    parts = (
        QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
        if layer is not None
        else {}
    )
    return {
        "source": layer.publicSource() if layer is not None else str(value),
        "layer_name": parts.get("layerName") or (layer.name() if layer is not None else None),
        "feature_count": len(features.feature_ids),
        "selected_features_only": selected_only,
        "crs": layer.crs().authid() if layer is not None else None,
    }
