"""What ioueval:rasteriou and ioueval:classmapiou share: their toolbox group, the per-class
table output, the JSON and HTML reports, the numeric outputs and progress forwarding."""

from __future__ import annotations

from qgis.core import (
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFileDestination,
)

from ..core.reports.class_map_html import render_class_map_html
from ..core.reports.data import to_json_text
from .base import IoUEvaluationAlgorithm
from .compat import FIELD_DOUBLE, FIELD_LONG, FIELD_STRING, TABLE
from .parameters import requested
from .progress import fraction_progress
from .reporting import provenance, reproduce, write_reports
from .validation import (
    missing_package_error,
    same_destination_error,
    unwritable_destination_error,
)

#: Per-class table columns after class_value and class_name: (key in per_class, type).
_METRIC_COLUMNS = ("iou", "dice", "precision", "recall")
_AREA_COLUMNS = ("tp_m2", "fp_m2", "fn_m2", "reference_m2", "predicted_m2")


class ClassMapAlgorithm(IoUEvaluationAlgorithm):
    """Base of the class-map algorithms: subclasses declare their inputs, then call
    ``add_class_map_outputs``; ``processAlgorithm`` ends with ``write_class_map_outputs``."""

    GROUP = "Class maps"
    GROUP_ID = "classmaps"
    OUTPUT_TABLE = "OUTPUT_TABLE"
    REPORT_JSON = "REPORT_JSON"
    REPORT_HTML = "REPORT_HTML"
    #: {output name: (report key, label)}
    NUMERIC_OUTPUTS = {"MIOU": ("miou", "Mean IoU over classes present in either map")}
    #: Extra file destinations of a subclass, checked with the reports.
    EXTRA_DESTINATIONS = ()

    def add_class_map_outputs(self):
        self.addParameter(QgsProcessingParameterFeatureSink(
            self.OUTPUT_TABLE, self.tr("Per-class table"), TABLE, optional=True,
            createByDefault=True,
        ))
        for name, label, file_filter in (
            (self.REPORT_JSON, "Class-map report (JSON)", "JSON files (*.json)"),
            (self.REPORT_HTML, "Class-map report (HTML)", "HTML files (*.html *.htm)"),
        ):
            self.addParameter(QgsProcessingParameterFileDestination(
                name, self.tr(label), file_filter, optional=True, createByDefault=True,
            ))
        self.add_numeric_outputs()

    def destination_error(self, parameters) -> str | None:
        """A message when two outputs share a file, an output folder cannot be written, or
        the HTML report needs a package that is missing (jinja2, matplotlib)."""
        names = (self.OUTPUT_TABLE, self.REPORT_JSON, self.REPORT_HTML) + self.EXTRA_DESTINATIONS
        error = same_destination_error(parameters, names) or next(
            filter(None, (unwritable_destination_error(parameters, n) for n in names)), None
        )
        if not error and requested(parameters, self.REPORT_HTML):
            error = missing_package_error(self.REPORT_HTML, ("jinja2", "matplotlib"))
        return error

    def progress(self, feedback, start: float, end: float):
        """A core progress callable(fraction) into [start, end] % that raises
        EvaluationCanceled when the user cancels."""
        return fraction_progress(feedback, start, end)

    def report_arguments(self, parameters, context) -> dict:
        """The provenance and the "reproduce" block of a class-map report, as keyword
        arguments of ``build_class_map_report``."""
        return {"provenance": provenance(), "reproduce": reproduce(self, parameters, context)}

    def write_class_map_outputs(self, parameters, context, feedback, report) -> dict:
        """Write the per-class table and the reports; returns the results dict (outputs and
        numbers)."""
        results = {}
        if requested(parameters, self.OUTPUT_TABLE):
            results[self.OUTPUT_TABLE] = self._write_table(parameters, context, report)
        results.update(write_reports(self, parameters, context, report, (
            (self.REPORT_JSON, to_json_text),
            (self.REPORT_HTML, lambda data: render_class_map_html(
                data, title=self.displayName(), algorithm_id=self.id())),
        )))
        results.update(self.numeric_results(
            lambda key: float(report[key]) if report[key] is not None else None
        ))
        feedback.setProgress(100)
        return results

    def _write_table(self, parameters, context, report) -> str:
        count_type = FIELD_LONG if report["unit"] == "pixels" else FIELD_DOUBLE
        suffix = "" if report["unit"] == "pixels" else "_m2"
        fields = (
            [("class_value", FIELD_STRING), ("class_name", FIELD_STRING),
             ("status", FIELD_STRING)]
            + [(key, FIELD_DOUBLE) for key in _METRIC_COLUMNS]
            + [(f"{key}{suffix}" if suffix else key, count_type) for key in ("tp", "fp", "fn")]
            + ([(key, FIELD_DOUBLE) for key in _AREA_COLUMNS] if not suffix else [])
        )
        rows = []
        for value, row in report["per_class"].items():
            attributes = [value, row["name"], row["status"]]
            attributes += [_plain(row[key]) for key in _METRIC_COLUMNS]
            attributes += [_plain(row[key]) for key in ("tp", "fp", "fn")]
            if not suffix:
                attributes += [_plain(row["areas"][key]) for key in _AREA_COLUMNS]
            rows.append(attributes)
        return self.write_table(parameters, self.OUTPUT_TABLE, context, fields, rows)


def _plain(value):
    """A QGIS-safe attribute (numpy scalars would drop the feature); None stays NULL."""
    if value is None:
        return None
    return int(value) if isinstance(value, int) else float(value)
