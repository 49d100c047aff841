"""Processing algorithm ioueval:comparepredictions: several predicted layers against one
reference, side by side, with paired bootstrap intervals of the differences; an adapter over
core.evaluation.compare."""

from __future__ import annotations

from pathlib import Path

from qgis.core import (
    QgsProcessingException,
    QgsProcessingFeatureSource,
    QgsProcessingOutputNumber,
    QgsProcessingParameterMultipleLayers,
    QgsProviderRegistry,
    QgsVectorLayer,
)

from ..core.util.checks import check_threshold
from ..core.evaluation.compare import COMPARED_KEYS, compare_predictions, comparison_report
from ..core.matching.grouping import parse_size_bins
from ..core.matching.rules import MATCHING_METHODS
from ..core.reports.data import to_json_text
from ..core.reports.compare import render_comparison_html
from .base import IoUEvaluationAlgorithm
from .compat import (
    FIELD_BOOL,
    FIELD_DOUBLE,
    FIELD_LONG,
    FIELD_STRING,
    VECTOR_POLYGON,
)
from .layers import qgis_values, read_source
from .parameters import (
    advanced,
    bootstrap_parameters,
    boundary_parameters,
    equal_area_crs_parameter,
    equal_area_crs_value,
    iou_threshold_parameter,
    matching_parameter,
    polygon_source,
    report_destinations,
    requested,
    size_bins_parameter,
    strata_field_parameter,
    table_sink,
    with_help,
)
from .progress import FeedbackProgress
from .reporting import input_description, provenance, reproduce, write_reports
from .validation import (
    equal_area_crs_error,
    missing_package_error,
    polygon_source_error,
    same_destination_error,
    unwritable_destination_error,
)

#: Metrics whose difference against the first layer gets columns in the table.
DIFFERENCE_COLUMNS = ("precision", "recall", "f1", "iou_mean", "best_iou_mean", "area_weighted_f1")

HELP = """
<p>Evaluates two or more predicted layers against one reference layer, each exactly as
<i>Evaluate polygons</i> does (same IoU threshold, matching rule, equal-area CRS, boundary
settings), and shows them side by side: one table row per layer with precision, recall, F1,
mean, median and 10th-percentile IoU, best IoU, area-weighted scores, segmentation and
counts. One model on several sensors, two engines, a filter on or off: which is better, and
is the difference more than chance?</p>
<p><b>Differences</b> are against the first layer: d = metric(layer) − metric(first).
<b>Paired bootstrap</b> (default 1,000 resamples, seed 42): each resample draws the reference
fields with replacement (within strata when a strata field is given) and the same draw scores
every layer; the 95 % percentile interval of d over the resamples is its interval, and the
difference is <b>significant at 95 %</b> when the interval excludes 0. Pairing removes the
variation the layers share (the same hard fields), so it detects smaller differences than two
separate intervals would.</p>
<p>Outputs: the table (one row per layer; <code>&lt;metric&gt;_diff</code>,
<code>_diff_low</code>, <code>_diff_high</code>, <code>_significant</code> for precision,
recall, F1, mean IoU, best IoU and area-weighted F1), and JSON and HTML reports with every
metric of every layer (<code>metrics.per_layer</code>), the differences and intervals of all
bootstrapped metrics (<code>metrics.differences</code>) and the provenance. Bad geometries are
repaired or dropped and counted per layer.</p>
"""


class ComparePredictionsAlgorithm(IoUEvaluationAlgorithm):
    NAME = "comparepredictions"
    DISPLAY_NAME = "Compare predictions"
    SHORT_HELP = (
        "Several predicted layers against one reference, with paired bootstrap differences."
    )
    HELP = HELP
    PREDICTED_LAYERS = "PREDICTED_LAYERS"
    REFERENCE = "REFERENCE"
    IOU_THRESHOLD = "IOU_THRESHOLD"
    EQUAL_AREA_CRS = "EQUAL_AREA_CRS"
    MATCHING = "MATCHING"
    STRATA_FIELD = "STRATA_FIELD"
    SIZE_BINS = "SIZE_BINS"
    BOUNDARY_TOLERANCE = "BOUNDARY_TOLERANCE"
    BOUNDARY_SAMPLE_SPACING = "BOUNDARY_SAMPLE_SPACING"
    BOOTSTRAP = "BOOTSTRAP"
    BOOTSTRAP_SEED = "BOOTSTRAP_SEED"
    OUTPUT_TABLE = "OUTPUT_TABLE"
    REPORT_JSON = "REPORT_JSON"
    REPORT_HTML = "REPORT_HTML"
    DESTINATIONS = (OUTPUT_TABLE, REPORT_JSON, REPORT_HTML)

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(
            with_help(
                QgsProcessingParameterMultipleLayers(
                    self.PREDICTED_LAYERS,
                    self.tr("Predicted layers (the first is the baseline)"),
                    VECTOR_POLYGON,
                ),
                self.tr("Two or more polygon layers; differences are against the first."),
            )
        )
        self.addParameter(
            polygon_source(self.REFERENCE, "Reference polygons", self.tr,
                           "The reference (ground truth) polygons, shared by all layers.")
        )
        self.addParameter(iou_threshold_parameter(self.tr))
        self.addParameter(equal_area_crs_parameter(self.tr))
        for parameter in [
            matching_parameter(self.tr),
            strata_field_parameter(self.tr),
            size_bins_parameter(self.tr),
            *boundary_parameters(self.tr),
        ]:
            self.addParameter(advanced(parameter))
        for parameter in bootstrap_parameters(self.tr, default_resamples=1000):
            self.addParameter(parameter)
        self.addParameter(
            table_sink(
                self.OUTPUT_TABLE, "Comparison table", self.tr,
                "One row per predicted layer: its metrics and the paired bootstrap "
                "differences against the first layer.",
                optional=True,
            )
        )
        for parameter in report_destinations(self.tr):
            self.addParameter(parameter)
        for name, label in (
            ("BEST_LAYER", "Layer with the highest F1 (1 = first)"),
            ("BEST_F1", "Highest F1"),
            ("COUNT_SIGNIFICANT", "Differences significant at 95 %"),
        ):
            self.addOutput(QgsProcessingOutputNumber(name, self.tr(label)))

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        layers = self.parameterAsLayerList(parameters, self.PREDICTED_LAYERS, context)
        if len(layers) < 2:
            return False, self.tr(
                "PREDICTED_LAYERS: give at least two layers to compare, got {count}"
            ).format(count=len(layers))
        for layer in layers:
            if not isinstance(layer, QgsVectorLayer):
                return False, self.tr("PREDICTED_LAYERS: {layer} is not a vector layer").format(
                    layer=layer.name()
                )
            error = polygon_source_error(layer, f"PREDICTED_LAYERS ({layer.name()})")
            if error:
                return False, error
        reference = self.parameterAsSource(parameters, self.REFERENCE, context)
        if reference is None:
            return False, self.tr("REFERENCE: the layer could not be read")
        error = polygon_source_error(reference, self.REFERENCE)
        if error:
            return False, error
        try:
            parse_size_bins(self.parameterAsString(parameters, self.SIZE_BINS, context))
            check_threshold(
                self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context), "IOU_THRESHOLD"
            )
        except ValueError as exc:
            return False, str(exc)
        error = equal_area_crs_error(self, parameters, context) or same_destination_error(
            parameters, self.DESTINATIONS
        ) or next(
            filter(None, (unwritable_destination_error(parameters, n) for n in self.DESTINATIONS)),
            None,
        )
        if not error and requested(parameters, self.REPORT_HTML):
            error = missing_package_error(self.REPORT_HTML, ("jinja2", "matplotlib"))
        return (False, error) if error else (True, "")

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        reference_source = self.parameterAsSource(parameters, self.REFERENCE, context)
        if reference_source is None:
            raise QgsProcessingException(self.invalidSourceError(parameters, self.REFERENCE))
        layers = self.parameterAsLayerList(parameters, self.PREDICTED_LAYERS, context)
        strata_field = self.parameterAsString(parameters, self.STRATA_FIELD, context)
        strata_index = reference_source.fields().lookupField(strata_field) if strata_field else -1
        if strata_field and strata_index < 0:
            raise QgsProcessingException(
                f"STRATA_FIELD: the reference layer has no field {strata_field!r}"
            )
        read = self._read_layers(feedback, context, reference_source, layers, strata_index)
        if read is None:
            return {}
        reference, predicted = read
        comparison = self.run_core(
            feedback, compare_predictions,
            [p.geometries for p in predicted],
            reference.geometries,
            names=[_layer_name(layer) for layer in layers],
            predicted_crss=[p.crs_wkt for p in predicted],
            reference_crs=reference.crs_wkt,
            strata=reference.attributes.labels(strata_index)
            if strata_index >= 0 else None,
            strata_name=strata_field or None,
            progress=FeedbackProgress(feedback, 20, 90),
            **self.checked(self._options, parameters, context),
        )
        if comparison is None:
            return {}
        _log_comparison(feedback, comparison)
        feedback.setProgressText(self.tr("Writing outputs"))
        results = self._write_table(parameters, context, comparison, layers)
        inputs = {
            "reference": input_description(
                self, parameters, self.REFERENCE, context, len(reference.feature_ids)
            )
        }
        for k, (name, layer, features) in enumerate(zip(comparison.names, layers, predicted)):
            inputs[f"predicted {k + 1}: {name}"] = _layer_description(layer, features)
        report = comparison_report(comparison, inputs, provenance(),
                                   reproduce=reproduce(self, parameters, context))
        results.update(write_reports(self, parameters, context, report, (
            (self.REPORT_JSON, to_json_text),
            (self.REPORT_HTML, render_comparison_html),
        )))
        results.update(_best(comparison))
        feedback.setProgress(100)
        return results

    def _read_layers(self, feedback, context, reference_source, layers, strata_index):
        """(reference, [predicted layers]) as read, or None when canceled."""
        feedback.setProgressText(self.tr("Reading layers"))
        reference = read_source(
            reference_source, feedback, (0, 5), [strata_index] if strata_index >= 0 else []
        )
        predicted = []
        for k, layer in enumerate(layers):
            if reference is None or feedback.isCanceled():
                return None
            span = (5 + 15 * k / len(layers), 5 + 15 * (k + 1) / len(layers))
            features = read_source(QgsProcessingFeatureSource(layer, context), feedback, span, [])
            if features is None:
                return None
            predicted.append(features)
        return (reference, predicted) if reference is not None else None

    def _options(self, parameters, context) -> dict:
        """The keyword arguments of ``compare_predictions`` read from plain parameters."""
        return {
            "iou_threshold": self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context),
            "equal_area_crs": equal_area_crs_value(self, parameters, context),
            "size_bins": parse_size_bins(
                self.parameterAsString(parameters, self.SIZE_BINS, context)
            ),
            "matching": MATCHING_METHODS[
                self.parameterAsEnum(parameters, self.MATCHING, context)
            ],
            "boundary_tolerance_m": self.parameterAsDouble(
                parameters, self.BOUNDARY_TOLERANCE, context
            ) or None,
            "boundary_sample_spacing_m": self.parameterAsDouble(
                parameters, self.BOUNDARY_SAMPLE_SPACING, context
            ) or None,
            "bootstrap": self.parameterAsInt(parameters, self.BOOTSTRAP, context),
            "bootstrap_seed": self.parameterAsInt(parameters, self.BOOTSTRAP_SEED, context),
        }

    def _write_table(self, parameters, context, comparison, layers) -> dict:
        if not requested(parameters, self.OUTPUT_TABLE):
            return {}
        keys = [k for k in COMPARED_KEYS if k in comparison.evaluations[0].metrics]
        fields = [("layer", FIELD_STRING), ("source", FIELD_STRING)]
        fields += [(key, FIELD_LONG if key.startswith("count_") else FIELD_DOUBLE) for key in keys]
        for key in DIFFERENCE_COLUMNS:
            fields += [(key + suffix, FIELD_DOUBLE) for suffix in ("_diff", "_diff_low",
                                                                   "_diff_high")]
            fields.append((key + "_significant", FIELD_BOOL))
        rows = []
        for k, (name, evaluation, layer) in enumerate(
            zip(comparison.names, comparison.evaluations, layers)
        ):
            row = [name, layer.publicSource()]
            row += qgis_values([evaluation.metrics[key] for key in keys])
            for key in DIFFERENCE_COLUMNS:
                if k == 0:
                    row += [None, None, None, None]
                    continue
                d = comparison.differences[name][key]
                row += qgis_values([d["difference"], *d["ci"]]) + [bool(d["significant"])]
            rows.append(row)
        return {self.OUTPUT_TABLE: self.write_table(parameters, self.OUTPUT_TABLE, context,
                                                    fields, rows)}


def _log_comparison(feedback, comparison) -> None:
    """Each layer's scores, and each difference against the first layer, in the log."""
    for name, evaluation in zip(comparison.names, comparison.evaluations):
        m = evaluation.metrics
        feedback.pushInfo(
            f"{name}: precision {m['precision']:.4f}, recall {m['recall']:.4f}, "
            f"F1 {m['f1']:.4f}, mean IoU {m['iou_mean']:.4f}"
        )
    for name, keys in comparison.differences.items():
        significant = [key for key, d in keys.items() if d["significant"]]
        feedback.pushInfo(
            f"{name} against {comparison.names[0]}: F1 {keys['f1']['difference']:+.4f} "
            f"[{keys['f1']['ci'][0]:+.4f}, {keys['f1']['ci'][1]:+.4f}]; significant at "
            f"95 %: {', '.join(significant) or 'none'}"
        )


def _best(comparison) -> dict:
    """The numeric outputs: the layer of the best F1 (1-based), that F1, and the number of
    significant differences."""
    f1 = [e.metrics["f1"] for e in comparison.evaluations]
    best = max(range(len(f1)), key=lambda k: f1[k])
    return {
        "BEST_LAYER": best + 1,
        "BEST_F1": f1[best],
        "COUNT_SIGNIFICANT": sum(
            d["significant"] for keys in comparison.differences.values() for d in keys.values()
        ),
    }


def _layer_name(layer) -> str:
    """The layer's name; for a layer opened from a path (qgis_process), whose name is the
    file's, the name of the layer inside the file when there is one (csb_2017_2024 rather
    than csb_fields for csb_fields.gpkg|layername=csb_2017_2024)."""
    parts = QgsProviderRegistry.instance().decodeUri(layer.providerType(), layer.source())
    inner, path = parts.get("layerName"), parts.get("path") or ""
    if inner and layer.name() == Path(path).stem:
        return inner
    return layer.name()


def _layer_description(layer, features) -> dict:
    """A predicted layer as the report's "What was compared" shows it (the keys of
    reporting.input_description)."""
    crs = layer.crs()
    return {
        "source": layer.publicSource(),
        "layer_name": _layer_name(layer),
        "crs": (crs.authid() or crs.description() or None) if crs.isValid() else None,
        "feature_count": len(features.feature_ids),
        "selected_features_only": False,
        "filter": layer.subsetString() or None,
    }
