"""Processing algorithm ioueval:evaluatepolygons: the main job, an adapter over core.evaluate."""

from __future__ import annotations

import contextlib
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qgis.core import (
    QgsCoordinateTransform,
    QgsField,
    QgsProcessingException,
    QgsProcessingParameterFile,
    QgsProcessingParameterString,
)

from ..core import evaluate
from ..core.matching.grouping import parse_size_bins
from ..core.matching.labels import ancestors_from_taxonomy
from ..core.matching.rules import MATCHING_METHODS
from ..core.boundary.curve import TOLERANCE_MULTIPLES
from ..core.evaluation.units import UNIT_FEATURES
from ..core.util.checks import is_missing
from ..core.util.wording import count_of, plural
from ..core.reports.data import build_report, to_json_text
from ..core.reports.evaluate import render_evaluation_html, report_extras
from .attributes import LabelLookup
from .base import IoUEvaluationAlgorithm
from .compat import FAST_INSERT, FIELD_LONG
from .file_sync import sync_files, unsynced_sqlite
from .geopackage import direct_location
from .layers import (
    feature_batches,
    layer_crs_definition,
    read_source,
)
from . import parameter_help
from .parameters import (
    add_missing_help,
    advanced,
    bootstrap_parameters,
    boundary_parameters,
    equal_area_crs_parameter,
    equal_area_crs_value,
    evaluation_sinks,
    iou_threshold_parameter,
    matching_parameter,
    optional_field,
    polygon_source,
    report_destinations,
    requested,
    size_bins_parameter,
    strata_field_parameter,
)
from .progress import FeedbackProgress as _FeedbackProgress
from .study_area import apply_study_area, study_area_error, study_area_parameters
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
    equal_area_crs_error,
    is_data_source_uri,
    layer_label,
    missing_field_error,
    missing_package_error,
    threshold_error,
    polygon_sources,
    same_destination_error,
    unwritable_destination_error,
)
from .reporting import (
    input_description,
    provenance,
    reproduce,
    same_layer_warning,
    write_reports,
)
from .styles import StylePostProcessor, store_style_in_file, style_path
from .wkb import CURVE_SEGMENT_ANGLE

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
<p><b>Study area</b> (optional polygon layer, dissolved): the same rule selects the rows of
both layers, so a field crossing the outline is kept or dropped on both sides alike:
intersects (default), centroid within, or clip (rows cut at the outline, areas measured
inside). The report counts the rows left out on each side.</p>
<p><b>Detection-style scores.</b> Spatial match (Galtea): a reference passes when the best
IoU of any prediction that may match it reaches the threshold (column spatial_match of the
per-field table, spatial_match_rate). GroundSet: greedy one-to-one matching among candidates
(taxonomy-aware), groundset_precision / recall / f1 at the threshold, groundset_miou = Σ best
candidate IoU / count of references (a missed reference counts its best IoU with any candidate,
0 only when none overlaps it); with group fields,
count_tn = groups (images) with neither an evaluated reference nor a prediction, such as a
group whose rows all have null geometries.</p>
<p>Outputs: matched predictions (TP), unmatched predictions (FP, flagged when they overlap no
reference), unmatched references (FN), a per-field table keyed by the reference id (join it
to the reference layer), and JSON and HTML reports. Predictions are named by their input
feature id (pred_fid, max_overlap_pred_fid) and, with a predicted id field, by their own id
too (pred_id, max_overlap_pred_id). Definitions follow agribound 1.0's
evaluation.</p>
"""


class EvaluatePolygonsAlgorithm(IoUEvaluationAlgorithm):
    NAME = "evaluatepolygons"
    DISPLAY_NAME = "Evaluate polygons (IoU matching)"
    SHORT_HELP = (
        "Matches predicted to reference polygons by IoU: precision, recall, F1, TP/FP/FN "
        "layers, reports."
    )
    HELP = HELP
    PREDICTED = "PREDICTED"
    REFERENCE = "REFERENCE"
    REFERENCE_ID_FIELD = "REFERENCE_ID_FIELD"
    PREDICTED_ID_FIELD = "PREDICTED_ID_FIELD"
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
    DASK_SCHEDULER = "DASK_SCHEDULER"
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
    PREDICTED_FIELDS = (
        PREDICTED_ID_FIELD, PREDICTED_CLASS_FIELD, PREDICTED_GROUP_FIELD, SCORE_FIELD
    )
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
        "SPATIAL_MATCH_RATE": ("spatial_match_rate", "Spatial match rate (Galtea)"),
        "GROUNDSET_F1": ("groundset_f1", "GroundSet F1 at the threshold"),
        "GROUNDSET_MIOU": ("groundset_miou", "GroundSet mIoU (Σ best IoU / references)"),
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        texts = parameter_help.EVALUATE_POLYGONS
        self.addParameter(polygon_source(self.PREDICTED, "Predicted polygons", self.tr,
                                         texts[self.PREDICTED]))
        self.addParameter(polygon_source(self.REFERENCE, "Reference polygons", self.tr,
                                         texts[self.REFERENCE]))
        self.addParameter(optional_field(
            self.REFERENCE_ID_FIELD,
            "Reference id field (keys the per-field table; default: feature id)", self.tr,
            self.REFERENCE))
        self.addParameter(optional_field(
            self.PREDICTED_ID_FIELD,
            "Predicted id field (names predictions in every output; default: feature id only)",
            self.tr, self.PREDICTED))
        self.addParameter(iou_threshold_parameter(self.tr))
        self.addParameter(equal_area_crs_parameter(self.tr))
        for parameter in self._advanced_parameters():
            self.addParameter(advanced(parameter))
        for parameter in study_area_parameters(self.tr) + evaluation_sinks(self.tr):
            self.addParameter(parameter)
        for parameter in report_destinations(
            self.tr, labels=("Metrics report (JSON)", "Metrics report (HTML)"),
            help_texts=(texts[self.REPORT_JSON], texts[self.REPORT_HTML]),
        ):
            self.addParameter(parameter)
        self.add_numeric_outputs()
        add_missing_help(self, texts)

    def _advanced_parameters(self) -> list:
        """The advanced parameters, in the order the dialog shows them."""
        tr, predicted, reference = self.tr, self.PREDICTED, self.REFERENCE
        return [
            matching_parameter(tr),
            strata_field_parameter(tr),
            size_bins_parameter(tr),
            *boundary_parameters(tr),
            *bootstrap_parameters(tr),
            optional_field(self.SCORE_FIELD,
                           "Score field of the predicted layer (confidence: adds COCO-style AP)",
                           tr, predicted, numeric=True),
            optional_field(self.PREDICTED_CLASS_FIELD,
                           "Class field of the predicted layer (class-aware matching)", tr,
                           predicted),
            optional_field(self.REFERENCE_CLASS_FIELD,
                           "Class field of the reference layer (class-aware matching)", tr,
                           reference),
            QgsProcessingParameterFile(
                self.TAXONOMY,
                tr("Taxonomy: JSON file mapping each class to its parent class(es)"),
                extension="json",
                optional=True,
            ),
            optional_field(self.REFERENCE_IGNORE_FIELD,
                           "Ignore-region field of the reference layer (true = ignore region)",
                           tr, reference),
            optional_field(self.PREDICTED_GROUP_FIELD,
                           "Group field of the predicted layer (image or tile id)", tr,
                           predicted),
            optional_field(self.REFERENCE_GROUP_FIELD,
                           "Group field of the reference layer (image or tile id)", tr,
                           reference),
            QgsProcessingParameterString(
                self.DASK_SCHEDULER,
                tr("Dask scheduler address (empty: this machine)"),
                optional=True,
            ),
        ]

    def checkParameterValues(self, parameters, context):  # noqa: N802
        # Before QGIS's own checks, whose messages do not say what is wrong.
        error = threshold_error(
            parameters.get(self.IOU_THRESHOLD, 0.5), self.IOU_THRESHOLD
        ) or self._missing_field_error(parameters, context)
        if error:
            return False, self.tr(error)
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        error = equal_area_crs_error(self, parameters, context)
        if error:
            return False, error
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
                return False, self.tr("{first} and {second} must be given together").format(
                    first=first, second=second
                )
        sources, error = polygon_sources(self, parameters, context)
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
                return False, self.tr("SCORE_FIELD: {field} is not a numeric field").format(
                    field=field.name()
                )
        error = study_area_error(self, parameters, context) or same_destination_error(
            parameters, self.DESTINATIONS
        ) or next(
            filter(None, (unwritable_destination_error(parameters, n) for n in self.DESTINATIONS)),
            None,
        )
        if error:
            return False, error
        error = self._missing_package_error(parameters, context)
        return (False, error) if error else (True, "")

    def _missing_package_error(self, parameters, context):
        """The optional packages this run needs: jinja2 and matplotlib for the HTML report,
        scipy for optimal matching."""
        if requested(parameters, self.REPORT_HTML):
            error = missing_package_error(self.REPORT_HTML, ("jinja2", "matplotlib"))
            if error:
                return error
        if MATCHING_METHODS[self.parameterAsEnum(parameters, self.MATCHING, context)] == "optimal":
            return missing_package_error(self.MATCHING, ("scipy",))
        return None

    def _missing_field_error(self, parameters, context):
        """The message for the first field parameter naming a field its layer lacks."""
        for names, layer_name in ((self.REFERENCE_FIELDS, self.REFERENCE),
                                  (self.PREDICTED_FIELDS, self.PREDICTED)):
            given = [n for n in names if parameters.get(n) not in (None, "")]
            if not given:
                continue
            try:
                source = self.parameterAsSource(parameters, layer_name, context)
            except Exception:  # noqa: BLE001 (an unreadable layer is QGIS's to report)
                source = None
            if source is None:
                continue
            layer = self.parameterAsVectorLayer(parameters, layer_name, context)
            for name in given:
                field_name = self.parameterAsString(parameters, name, context)
                if source.fields().lookupField(field_name) < 0:
                    return missing_field_error(
                        name, field_name, source, layer_label(layer), input_name=layer_name
                    )
        return None

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
                raise ValueError(missing_field_error(
                    name, field_name, source,
                    input_name=self.REFERENCE if name in self.REFERENCE_FIELDS else self.PREDICTED,
                ))
            fields[name] = (field_name, index)
        return fields

    def _attributes_to_read(self, parameters, fields, field_parameters, outputs):
        """Indices of the fields a layer must be read with: all of them (None) when one of
        ``outputs`` copies its features' attributes, else only the fields given in
        ``field_parameters``."""
        if any(requested(parameters, name) for name in outputs):
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
        return equal_area_crs_value(self, parameters, context)

    def _scheduler(self, parameters, context) -> str:
        """The DASK_SCHEDULER address ("" for this machine); raises QgsProcessingException
        when the inputs cannot go to a cluster (``_scheduler_error``)."""
        scheduler = self.parameterAsString(parameters, self.DASK_SCHEDULER, context).strip()
        error = scheduler and self._scheduler_error(parameters, context)
        if error:
            raise QgsProcessingException(error)
        return scheduler

    def _scheduler_error(self, parameters, context) -> str | None:
        """Why the inputs cannot go to a Dask cluster: a selection, or a memory layer (the
        workers open the layers' files themselves); None when they can."""
        for name in (self.PREDICTED, self.REFERENCE):
            value = parameters.get(name)
            layer = self.parameterAsVectorLayer(parameters, name, context)
            if getattr(value, "selectedFeaturesOnly", False):
                return (f"{name}: with a DASK_SCHEDULER the layers must be files the workers "
                        "can open; a selection cannot be sent. Save the selected features to "
                        "a file (GeoPackage) and evaluate that file")
            if layer is not None and layer.providerType() == "memory":
                return (f"{name}: with a DASK_SCHEDULER the layers must be files the workers "
                        f"can open; {layer.name()} is a temporary (memory) layer. Save it to "
                        "a file (GeoPackage) and evaluate that file")
        return None

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        predicted_source, reference_source = self._sources(parameters, context)
        fields = self.checked(self._fields_given, parameters, context, predicted_source,
                              reference_source)
        options = self.checked(self._options, parameters, context)
        unit_rows = work_unit_rows(predicted_source.featureCount()
                                   + reference_source.featureCount())
        layers = self._read_layers(parameters, context, feedback, fields, predicted_source,
                                   reference_source, stored=unit_rows is not None)
        if layers is None:
            return {}
        predicted, reference, study_area, run_warnings = layers
        with _dask_client(self._scheduler(parameters, context)) as executor:
            evaluation = self.run_core(
                feedback, evaluate, predicted.geometries, reference.geometries,
                predicted_crs=predicted.crs_wkt, reference_crs=reference.crs_wkt,
                **self._columns(fields, predicted, reference),
                progress=_FeedbackProgress(feedback, 20, 75),
                # The curve of boundary F1 against the tolerance is drawn in the HTML.
                tolerance_multiples=TOLERANCE_MULTIPLES
                if requested(parameters, self.REPORT_HTML) else None,
                executor=executor, work_unit_features=unit_rows, **options,
            )
        if evaluation is None:
            return {}
        metrics = evaluation.metrics
        feedback.pushInfo(
            f"TP {metrics['count_tp']}, FP {metrics['count_fp']}, FN {metrics['count_fn']}; "
            f"precision {metrics['precision']:.4f}, recall {metrics['recall']:.4f}, "
            f"F1 {metrics['f1']:.4f}, mean IoU {metrics['iou_mean']:.4f}"
        )
        feedback.setProgressText(self.tr("Writing outputs"))
        ref_ids, id_qfield = self._reference_ids(feedback, fields, reference, reference_source)
        outputs = EvaluationOutputs(
            evaluation, predicted, reference, predicted_source.fields(),
            reference_source.fields(), ref_ids, id_qfield,
            _transform(predicted_source, reference_source, context),
            *self._predicted_ids(feedback, fields, predicted, predicted_source),
        )
        results = _OutputWriter(self, parameters, context, feedback).write_all(
            outputs, reference_source.sourceCrs())
        if results is None or feedback.isCanceled():
            return {}
        feedback.setProgressText(self.tr("Writing reports"))
        report = self._report(parameters, context, evaluation, fields, (predicted, reference),
                              study_area, run_warnings, ref_ids)
        results.update(write_reports(self, parameters, context, report, (
            (self.REPORT_JSON, to_json_text),
            (self.REPORT_HTML,
             lambda data: render_evaluation_html(json.loads(to_json_text(data)), evaluation)),
        )))
        results.update(self.numeric_results(lambda key: metrics[key]))
        feedback.setProgress(100)
        return results

    def _sources(self, parameters, context):
        """The PREDICTED and REFERENCE sources; raises QgsProcessingException when one cannot
        be read."""
        sources = []
        for name in (self.PREDICTED, self.REFERENCE):
            source = self.parameterAsSource(parameters, name, context)
            if source is None:
                raise QgsProcessingException(self.invalidSourceError(parameters, name))
            sources.append(source)
        return sources

    def _options(self, parameters, context) -> dict:
        """The keyword arguments of ``evaluate`` read from plain parameters; raises ValueError
        naming SIZE_BINS or TAXONOMY."""
        return {
            "iou_threshold": self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context),
            "equal_area_crs": self._equal_area_crs(parameters, context),
            "matching": MATCHING_METHODS[
                self.parameterAsEnum(parameters, self.MATCHING, context)
            ],
            "size_bins": parse_size_bins(
                self.parameterAsString(parameters, self.SIZE_BINS, context)),
            "bootstrap": self.parameterAsInt(parameters, self.BOOTSTRAP, context),
            "bootstrap_seed": self.parameterAsInt(parameters, self.BOOTSTRAP_SEED, context),
            "taxonomy": self._taxonomy(parameters, context),
            # 0 switches the tolerance metrics off and makes the spacing automatic.
            "boundary_tolerance_m": self.parameterAsDouble(
                parameters, self.BOUNDARY_TOLERANCE, context
            ) or None,
            "boundary_sample_spacing_m": self.parameterAsDouble(
                parameters, self.BOUNDARY_SAMPLE_SPACING, context
            ) or None,
        }

    def _read_layers(self, parameters, context, feedback, fields, predicted_source,
                     reference_source, stored=False):
        """(predicted, reference, study-area counts, the provider's warnings): both layers
        read with the fields they need and selected by the study area; None when canceled.
        With ``stored``, their geometries are kept on disk (``layers.read_source``)."""
        feedback.setProgressText(self.tr("Reading layers"))
        if stored:
            feedback.pushInfo(
                f"{predicted_source.featureCount() + reference_source.featureCount():,} "
                "features: the geometries are read to a temporary file and evaluated in "
                f"exact work units ({WORK_UNITS_ENV} sets their size, 0 one piece)")
        reference = read_source(
            reference_source, feedback, (0, 10),
            self._attributes_to_read(parameters, fields, self.REFERENCE_FIELDS,
                                     (self.FALSE_NEGATIVES,)),
            self._geopackage(parameters, self.REFERENCE, context), stored,
        )
        predicted = read_source(
            predicted_source, feedback, (10, 20),
            self._attributes_to_read(parameters, fields, self.PREDICTED_FIELDS,
                                     (self.TRUE_POSITIVES, self.FALSE_POSITIVES)),
            self._geopackage(parameters, self.PREDICTED, context), stored,
        ) if reference else None
        if predicted is None:
            return None
        run_warnings = self._read_warnings(parameters, context, feedback, predicted, reference)
        # A layer without features (an empty GeoJSON file has no CRS) takes the other's CRS.
        for features, other in ((reference, predicted), (predicted, reference)):
            if len(features.geometries) == 0 and features.crs_wkt is None:
                features.crs_wkt = other.crs_wkt
        predicted, reference, study_area = self.checked(
            apply_study_area, self, parameters, context, feedback, predicted, reference, (20, 20)
        )
        if predicted is None:
            return None
        return predicted, reference, study_area, run_warnings

    def _read_warnings(self, parameters, context, feedback, predicted, reference) -> list:
        """Warnings of the provider's own (arcs cut, the same layer twice), logged and for the
        report's alerts."""
        run_warnings = []
        for name, features in (("reference", reference), ("predicted", predicted)):
            if features.n_curved:
                curved = count_of(features.n_curved, f"{name} geometry with arcs",
                                  f"{name} geometries with arcs")
                run_warnings.append(
                    f"{curved} {plural(features.n_curved, 'was', 'were')} cut into straight "
                    f"segments at most {math.degrees(CURVE_SEGMENT_ANGLE):g}° of arc apart"
                )
                feedback.pushInfo(run_warnings[-1])
        same = same_layer_warning(self, parameters, context)
        if same:
            run_warnings.append(same)
            feedback.pushWarning(same)
        return run_warnings

    def _columns(self, fields, predicted, reference) -> dict:
        """The per-row keyword arguments of ``evaluate`` from the field parameters given."""

        def column(features, name, as_labels=True):
            """The field's values; as labels (``AttributeTable.labels``) where they name
            strata, classes and groups."""
            if name not in fields:
                return None
            index = fields[name][1]
            attributes = features.attributes
            return attributes.labels(index) if as_labels else attributes.column(index)

        return {
            "strata": column(reference, self.STRATA_FIELD),
            "strata_name": fields.get(self.STRATA_FIELD, (None,))[0],
            "reference_classes": column(reference, self.REFERENCE_CLASS_FIELD),
            "predicted_classes": column(predicted, self.PREDICTED_CLASS_FIELD),
            "reference_groups": column(reference, self.REFERENCE_GROUP_FIELD),
            "predicted_groups": column(predicted, self.PREDICTED_GROUP_FIELD),
            "reference_ignore": column(reference, self.REFERENCE_IGNORE_FIELD, as_labels=False),
            "predicted_scores": column(predicted, self.SCORE_FIELD, as_labels=False),
        }

    def _reference_ids(self, feedback, fields, reference, reference_source):
        """(the id of each reference row, which keys the per-field table, and its QgsField):
        the REFERENCE_ID_FIELD's values (warnings when they are NULL or repeat), else the
        feature ids."""
        id_index = fields.get(self.REFERENCE_ID_FIELD, (None, -1))[1]
        if id_index < 0:
            return reference.feature_ids.tolist(), QgsField("ref_fid", FIELD_LONG)
        ref_ids = reference.attributes.column(id_index)
        for message in _id_warnings(
                "REFERENCE_ID_FIELD", fields[self.REFERENCE_ID_FIELD][0], ref_ids, "reference",
                "the per-field table cannot be joined back one to one"):
            feedback.pushWarning(message)
        return ref_ids, QgsField(reference_source.fields().at(id_index))

    def _predicted_ids(self, feedback, fields, predicted, predicted_source):
        """(the PREDICTED_ID_FIELD's value of each prediction and its QgsField; warnings when
        they are NULL or repeat), or (None, None) without that field."""
        if self.PREDICTED_ID_FIELD not in fields:
            return None, None
        pred_name, pred_index = fields[self.PREDICTED_ID_FIELD]
        pred_ids = predicted.attributes.column(pred_index)
        for message in _id_warnings("PREDICTED_ID_FIELD", pred_name, pred_ids, "prediction",
                                    "pred_id does not name one prediction (pred_fid does)"):
            feedback.pushWarning(message)
        return pred_ids, QgsField(predicted_source.fields().at(pred_index))

    def _report(self, parameters, context, evaluation, fields, layers, study_area,
                run_warnings, ref_ids) -> dict:
        """The JSON report: the core's, with the inputs, the field names used, the study
        area's counts, the provider's warnings and the reproduce block passed in."""
        inputs = {
            name: input_description(self, parameters, parameter, context,
                                    len(features.feature_ids))
            for name, parameter, features in (("reference", self.REFERENCE, layers[1]),
                                              ("predicted", self.PREDICTED, layers[0]))
        }
        return build_report(
            evaluation, inputs, provenance(),
            metrics=study_area,
            parameters={name.lower(): field_name for name, (field_name, _) in fields.items()},
            warnings=run_warnings,
            extras=report_extras(evaluation, LabelLookup(ref_ids)),
            reproduce=reproduce(self, parameters, context),
        )


def _id_warnings(parameter: str, field_name: str, ids: list, what: str, consequence: str):
    """Warnings for an id field whose values do not name one row each: NULL ids (counted,
    never taken for one repeated value) and values that repeat among the others."""
    missing = sum(1 for value in ids if is_missing(value))
    present = [str(value) for value in ids if not is_missing(value)]
    repeated = len(present) - len(set(present))
    messages = []
    if missing:
        messages.append(f"{parameter}: {field_name} is NULL on {count_of(missing, what)}: "
                        f"{consequence}")
    if repeated:
        messages.append(f"{parameter}: {field_name} has repeated values "
                        f"({count_of(repeated, 'row')} {plural(repeated, 'repeats', 'repeat')} an "
                        f"earlier value): {consequence}")
    return messages


class _OutputWriter:
    """Creates the sinks after evaluation (so a failed or canceled run leaves none) and fills
    them in batches of features."""

    def __init__(self, algorithm, parameters, context, feedback, progress_range=(75.0, 95.0)):
        self.algorithm, self.parameters = algorithm, parameters
        self.context, self.feedback = context, feedback
        self.progress_range = progress_range

    def write_all(self, outputs, crs):
        """Write the requested layer outputs (an outputs.EvaluationOutputs) in ``crs``.

        Returns {output name: destination id}, or None when canceled (then the files of
        the outputs begun are removed: a canceled run leaves none that looks finished).
        """
        names = [name for name in LAYER_OUTPUTS if requested(self.parameters, name)]
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
            written_files = []
            for name in names:
                if self.feedback.isCanceled():
                    return _discarded(written_files, closer)
                fields = outputs.fields(name)
                # A new file of its own is synced to disk once, when complete (file_sync).
                with unsynced_sqlite(own_files and bool(destinations[name])):
                    sink, dest_id = self.algorithm.parameterAsSink(
                        self.parameters, name, self.context, fields, outputs.wkb_type(name),
                        crs,
                    )
                if sink is None:
                    raise QgsProcessingException(
                        self.algorithm.invalidSinkError(self.parameters, name)
                    )
                if own_files and destinations[name]:
                    written_files.append(dest_id)
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
                        del sink
                        return _discarded(written_files, closer)
                if own_files and destinations[name] and Path(dest_id).is_file():
                    last_reference = [sink]
                    del sink
                    closer.submit(last_reference.clear)  # the sink closes where it is freed
                else:
                    del sink
                results[name] = dest_id
        with unsynced_sqlite(own_files):
            for name, dest_id in results.items():  # all closed: styles go into the files
                self._style(name, dest_id)
        if own_files:
            sync_files(dest_id for name, dest_id in results.items() if destinations[name])
        return results

    def _style(self, name, dest_id):
        if name not in STYLES:
            return
        qml = style_path(STYLES[name])
        if self.context.willLoadLayerOnCompletion(dest_id):
            details = self.context.layerToLoadOnCompletionDetails(dest_id)
            details.setPostProcessor(StylePostProcessor.for_style(qml))
        store_style_in_file(dest_id, qml, self.feedback)


def _discarded(paths, closer) -> None:
    """Remove the files of a canceled run's outputs (none looks finished): after the sinks
    being closed on ``closer`` are closed. Returns None, what a canceled write returns."""
    closer.submit(lambda: None).result()
    for path in paths:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.remove(path + suffix)
    return None


def _plain_file(destination: str) -> bool:
    """Whether an output destination is a file path alone: no layer name, no data source
    URI."""
    return "|" not in destination and not is_data_source_uri(destination)


def _transform(predicted_source, reference_source, context):
    source_crs, target_crs = predicted_source.sourceCrs(), reference_source.sourceCrs()
    if (
        layer_crs_definition(source_crs) is None
        or layer_crs_definition(target_crs) is None
        or source_crs == target_crs
    ):
        return None
    return QgsCoordinateTransform(source_crs, target_crs, context.transformContext())


#: Above this many features (both layers together), a run reads the geometries to disk and
#: evaluates in exact work units (core.evaluation.units), so that its memory does not grow
#: with the layers' vertices: under it, one piece (no slower, and the layers fit).
STORED_ABOVE_FEATURES = 250_000
#: Environment variable that overrides the choice: 0 evaluates in one piece whatever the
#: size; a positive number, in work units of that many rows, whatever the size.
WORK_UNITS_ENV = "IOU_EVALUATION_WORK_UNITS"


def work_unit_rows(n_features: int) -> int | None:
    """Rows per work unit for a run on ``n_features`` features (None: one piece), from
    ``WORK_UNITS_ENV`` or the size (``STORED_ABOVE_FEATURES``).

    Raises QgsProcessingException when the variable is not a whole number >= 0.
    """
    value = os.environ.get(WORK_UNITS_ENV, "").strip()
    if value:
        try:
            rows = int(value)
        except ValueError:
            rows = -1
        if rows < 0:
            raise QgsProcessingException(
                f"{WORK_UNITS_ENV} must be 0 (one piece) or a number of rows per work unit, "
                f"got {value!r}")
        return rows or None
    return UNIT_FEATURES if n_features > STORED_ABOVE_FEATURES else None


@contextlib.contextmanager
def _dask_client(address: str):
    """A ``distributed.Client`` connected to the scheduler at ``address`` (closed after), or
    None for an empty address. Dask is optional: imported only here. Never starts workers
    (a child process of QGIS relaunches QGIS on Windows and macOS)."""
    if not address:
        yield None
        return
    try:
        import distributed
    except ImportError as exc:
        raise QgsProcessingException(
            "DASK_SCHEDULER needs the Dask distributed package in QGIS's Python: "
            'pip install "dask[distributed]"'
        ) from exc
    try:
        client = distributed.Client(address, timeout=30, set_as_default=False)
    except OSError as exc:
        raise QgsProcessingException(
            f"DASK_SCHEDULER: no Dask scheduler answers at {address} ({exc})"
        ) from exc
    try:
        yield client
    finally:
        client.close()
