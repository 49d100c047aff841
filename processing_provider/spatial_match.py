"""Processing algorithm ioueval:spatialmatch: model answers scored row by row against expected
geometries, an adapter over core.text.spatial_match."""

from __future__ import annotations

from qgis.core import (
    QgsField,
    QgsFields,
    QgsProcessingException,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterNumber,
)

from ..core.reports.data import to_json_text
from ..core.text.spatial_match import ROW_COLUMNS, spatial_match
from ..core.reports.spatial_match import build_report, render_html
from ..core.util.wording import count_of, plural
from . import parameter_help
from .base import IoUEvaluationAlgorithm
from .compat import (
    FIELD_BOOL,
    FIELD_DOUBLE,
    FIELD_INT,
    FIELD_LONG,
    FIELD_PARAMETER_STRING,
    FIELD_STRING,
    NUMBER_DOUBLE,
    TABLE,
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
from .parameters import add_missing_help, report_destinations, requested
from .progress import fraction_progress
from .reporting import input_description, provenance, reproduce, write_reports
from .validation import (
    missing_package_error,
    same_destination_error,
    unwritable_destination_error,
)

HELP = """
<p>Scores a table of model answers against expected geometries, row by row (Galtea's spatial
match): the <b>best IoU</b> of any answered polygon against any expected polygon,
IoU = |A ∩ E| / |A ∪ E| in the row's coordinates (pixels, fractions of the image, or map
units), and <b>pass</b> when best IoU ≥ the threshold (default 0.5, relative tolerance 1e-9).
Both columns may hold any format ioueval:parsemodeloutput reads ({"bbox": …} for a single
expected box, a list of boxes when several are acceptable).</p>
<p>Per row also: <b>Dice</b> = 2 IoU / (1 + IoU) and <b>GIoU</b> = IoU − |C \\ (A ∪ E)| / |C|
(C the smallest enclosing axis-aligned box) of the best pair; <b>centre hit</b> (the expected
centroid lies in the answered polygon); for point answers, <b>point hit</b> (a point lies in an
expected polygon) and the distance to the nearest expected centre. A row whose answer yields
no polygon scores IoU 0, Dice 0, GIoU −1 and fails; a malformed or truncated answer is a
failed row with its reason, never an aborted run and never a zero box. A row expecting nothing
(an empty list, "none found") passes when nothing is answered. A row whose expected geometry
cannot be read is not scored (listed, counted).</p>
<p><b>Summary</b> over scored rows: pass rate, mean, median and 10th percentile of the best
IoU, Acc@τ for τ = 0.1, 0.3, 0.5, 0.7, 0.9 (share of rows with best IoU ≥ τ), cumulative IoU
(Σ intersections / Σ unions over rows; an answer on a row that expects nothing adds its
area to the unions), mean Dice and GIoU, centre-hit rate, parse-failure rate
(answers that could not be read), hallucination rate (answers with a geometry out of bounds),
empty-answer rate, point-hit rate; by group with a group field (model, prompt, class).</p>
""" + HELP_CONVENTIONS


class SpatialMatchAlgorithm(IoUEvaluationAlgorithm):
    NAME = "spatialmatch"
    DISPLAY_NAME = "Spatial match (text)"
    HELP = HELP
    SHORT_HELP = "Model answers scored row by row against expected geometries: best IoU, pass rate."
    GROUP = "Model output (text)"
    GROUP_ID = "modeltext"
    INPUT = "INPUT"
    ANSWER_FIELD = "ANSWER_FIELD"
    EXPECTED_FIELD = "EXPECTED_FIELD"
    ID_FIELD = "ID_FIELD"
    COORDINATE_FORMAT = "COORDINATE_FORMAT"
    IMAGE_WIDTH_FIELD = IMAGE_WIDTH_FIELD
    IMAGE_HEIGHT_FIELD = IMAGE_HEIGHT_FIELD
    IOU_THRESHOLD = "IOU_THRESHOLD"
    GROUP_FIELD = "GROUP_FIELD"
    OUTPUT = "OUTPUT"
    REPORT_JSON = "REPORT_JSON"
    REPORT_HTML = "REPORT_HTML"
    NUMERIC_OUTPUTS = {
        "PASS_RATE": ("pass_rate", "Pass rate"),
        "MEAN_IOU": ("iou_mean", "Mean best IoU"),
        "PARSE_FAILURE_RATE": ("parse_failure_rate", "Parse-failure rate"),
        "HALLUCINATION_RATE": ("hallucination_rate", "Hallucination rate"),
        "CUMULATIVE_IOU": ("cumulative_iou", "Cumulative IoU"),
        "COUNT_ROWS": ("count_rows", "Rows"),
        "COUNT_PASS": ("count_pass", "Rows that pass"),
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(QgsProcessingParameterFeatureSource(
            self.INPUT, self.tr("Evaluation table (answers and expected geometries)"), [TABLE]))
        for name, label in ((self.ANSWER_FIELD, "Answer text field"),
                            (self.EXPECTED_FIELD, "Expected geometry field")):
            self.addParameter(QgsProcessingParameterField(
                name, self.tr(label), parentLayerParameterName=self.INPUT,
                type=FIELD_PARAMETER_STRING))
        self.addParameter(QgsProcessingParameterField(
            self.ID_FIELD, self.tr("Row id field (default: feature id)"),
            parentLayerParameterName=self.INPUT, optional=True))
        self.addParameter(coordinate_format_parameter(
            self.tr("Coordinate format (both columns)")))
        for parameter in image_size_parameters(self.INPUT):
            self.addParameter(parameter)
        self.addParameter(padded_square_parameter())
        self.addParameter(QgsProcessingParameterNumber(
            self.IOU_THRESHOLD, self.tr("IoU threshold for a pass"),
            NUMBER_DOUBLE, defaultValue=0.5, minValue=0.0, maxValue=1.0))
        self.addParameter(QgsProcessingParameterField(
            self.GROUP_FIELD, self.tr("Group field (model, prompt, class)"),
            parentLayerParameterName=self.INPUT, optional=True))
        self.addParameter(QgsProcessingParameterFeatureSink(
            self.OUTPUT, self.tr("Scored rows"), TABLE, optional=True, createByDefault=True))
        for parameter in report_destinations(self.tr, self.REPORT_JSON, self.REPORT_HTML):
            self.addParameter(parameter)
        self.add_numeric_outputs()
        add_missing_help(self, parameter_help.SPATIAL_MATCH)

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        if not self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context) > 0:
            return False, self.tr("IOU_THRESHOLD must be in (0, 1]")
        for name in (self.REPORT_JSON, self.REPORT_HTML):
            error = unwritable_destination_error(parameters, name)
            if error:
                return False, error
        error = same_destination_error(parameters, (self.OUTPUT, self.REPORT_JSON,
                                                    self.REPORT_HTML))
        if not error and requested(parameters, self.REPORT_HTML):
            error = missing_package_error(self.REPORT_HTML, ("jinja2", "matplotlib"))
        return (False, error) if error else (True, "")

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(self.invalidSourceError(parameters, self.INPUT))
        indices = {
            "answer": field_index(self, source, parameters, self.ANSWER_FIELD, context, True),
            "expected": field_index(self, source, parameters, self.EXPECTED_FIELD, context,
                                    True),
            "id": field_index(self, source, parameters, self.ID_FIELD, context),
            "width": field_index(self, source, parameters, self.IMAGE_WIDTH_FIELD, context),
            "height": field_index(self, source, parameters, self.IMAGE_HEIGHT_FIELD, context),
            "group": field_index(self, source, parameters, self.GROUP_FIELD, context),
        }
        read = read_columns(source, indices, feedback, (0, 10))
        if read is None:
            return {}
        columns, fids = read
        row_ids = columns["id"] if indices["id"] >= 0 else fids

        result = self.run_core(
            feedback, spatial_match, columns["answer"], columns["expected"],
            coordinate_format=coordinate_format(self, parameters, context),
            image_widths=columns["width"], image_heights=columns["height"],
            iou_threshold=self.parameterAsDouble(parameters, self.IOU_THRESHOLD, context),
            groups=columns["group"] if indices["group"] >= 0 else None,
            progress=fraction_progress(feedback, 10, 85),
            padded_square=self.parameterAsBoolean(parameters, PADDED_SQUARE, context),
        )
        if result is None:
            return {}
        results = {}
        if requested(parameters, self.OUTPUT):
            results[self.OUTPUT] = self._write_rows(parameters, context, source, indices,
                                                    row_ids, result.rows)
        if feedback.isCanceled():
            return {}
        report = build_report(
            result,
            {"table": input_description(self, parameters, self.INPUT, context, len(row_ids))},
            provenance(),
            reproduce(self, parameters, context),
            row_ids,
        )
        best_iou = [v for v, scored in zip(result.rows["best_iou"], result.rows["scored"])
                    if scored]
        results.update(write_reports(self, parameters, context, report, (
            (self.REPORT_JSON, to_json_text),
            (self.REPORT_HTML, lambda data: render_html(data, best_iou)),
        )))
        metrics = result.metrics
        _log_result(feedback, report["warnings"], metrics)
        results.update(self.numeric_results(lambda key: qgis_values([metrics[key]])[0]))
        feedback.setProgress(100)
        return results

    def _write_rows(self, parameters, context, source, indices, row_ids, rows):
        types = {"str": FIELD_STRING, "int": FIELD_INT, "float": FIELD_DOUBLE,
                 "bool": FIELD_BOOL}
        fields = QgsFields()
        id_field = (QgsField(source.fields().at(indices["id"])) if indices["id"] >= 0
                    else QgsField("row_id", FIELD_LONG))
        id_field.setName("row_id")
        fields.append(id_field)
        for name, kind in ROW_COLUMNS:
            fields.append(QgsField(name, types[kind]))
        columns = [qgis_values(row_ids)] + [qgis_values(rows[name]) for name, _ in ROW_COLUMNS]
        return self.write_features(parameters, self.OUTPUT, context, fields, columns)


def _log_result(feedback, warnings, metrics) -> None:
    """The report's warnings and the pass count in the log."""
    for warning in warnings:
        feedback.pushWarning(warning)
    feedback.pushInfo(
        f"{metrics['count_pass']} of {count_of(metrics['count_scored'], 'row')} "
        f"{plural(metrics['count_pass'] or metrics['count_scored'], 'passes', 'pass')}; "
        f"mean best IoU "
        f"{metrics['iou_mean']:.4f}; parse failures {metrics['count_parse_failures']}, "
        f"hallucinated {metrics['count_hallucinated']}")
