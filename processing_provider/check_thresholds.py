"""Processing algorithm ioueval:checkthresholds: conditions on a JSON report that fail the run
when one does not hold (a release gate in a model or a qgis_process batch file); an adapter
over core.reports.thresholds."""

from __future__ import annotations

import json

from qgis.core import (
    QgsProcessingException,
    QgsProcessingOutputNumber,
    QgsProcessingParameterBoolean,
    QgsProcessingParameterFile,
    QgsProcessingParameterString,
)

from ..core.reports.thresholds import (
    check_conditions,
    checked_nothing,
    failure_message,
    parse_conditions,
)
from .base import IoUEvaluationAlgorithm
from .compat import FIELD_BOOL, FIELD_DOUBLE, FIELD_STRING
from .parameters import advanced, requested, table_sink, with_help

HELP = """
<p>Checks conditions on a JSON report of any IoU Evaluation algorithm and <b>fails the run</b>
(an error in a model, a non-zero exit code in <code>qgis_process</code>) when one does not
hold, with a message listing every failed condition and its value. When all hold, it passes
quietly with a table of the conditions, values and results: a model's release gate, or a
nightly regression check in a batch file.</p>
<p>Conditions are separated by <code>;</code> or new lines, each <i>key operator number</i>
with operators <code>&gt;= &gt; &lt;= &lt; == !=</code>, for example
<code>f1 &gt;= 0.80; iou_p10 &gt;= 0.5; per_size_class.*.recall &gt;= 0.6</code>.</p>
<ul>
<li>Keys are looked up in the report's <code>metrics</code> first, then from the top
(<code>parameters.iou_threshold == 0.5</code> works too); nested keys are joined with dots.</li>
<li>A key is written as the report spells it, in any script and with spaces
(<code>per_class.Forêt dense.iou</code>); quote a key that holds one of
<code>. " ' * ? ; &lt; &gt; = !</code>. A key with dots (the size class 0.5-1) can be quoted:
<code>per_size_class."0.5-1".recall</code>; a number indexes a list
(<code>bootstrap.ci.f1.0</code>, the lower bound of F1's interval).</li>
<li><code>*</code> stands for every key at its level: <code>per_size_class.*.recall</code>
checks every size class.</li>
<li>Comparisons allow a relative tolerance of 1e-9 (as the IoU threshold does). A value that
is null in the report (an undefined metric) fails its condition, and a wildcard checks every
value it reaches, nulls included: <code>per_class.*.iou &gt;= 0.5</code> fails on a class
absent from both maps (its IoU is null). A <code>?</code> after the key skips null values
instead: <code>per_class.*.iou? &gt;= 0.5</code> checks the classes that have an IoU and lists
the others as skipped (SKIPPED_COUNT). A condition all of whose values are null checks
nothing: the run says so in a warning.</li>
</ul>
<p>A condition that cannot be read, or a key the report does not have, stops the run with a
message naming it (and the keys that are there).</p>
"""


class CheckThresholdsAlgorithm(IoUEvaluationAlgorithm):
    NAME = "checkthresholds"
    DISPLAY_NAME = "Check release thresholds"
    SHORT_HELP = "Fails the run when a JSON report misses a condition such as f1 >= 0.8."
    GROUP = "Reports"
    GROUP_ID = "reports"
    HELP = HELP
    REPORT = "REPORT"
    CONDITIONS = "CONDITIONS"
    FAIL_RUN = "FAIL_RUN"
    OUTPUT = "OUTPUT"

    def initAlgorithm(self, config=None):  # noqa: N802
        self.addParameter(
            with_help(
                QgsProcessingParameterFile(
                    self.REPORT, self.tr("JSON report"), extension="json"
                ),
                self.tr("A REPORT_JSON written by an IoU Evaluation algorithm (any JSON "
                        "object works)."),
            )
        )
        self.addParameter(
            with_help(
                QgsProcessingParameterString(
                    self.CONDITIONS,
                    self.tr("Conditions (e.g. f1 >= 0.80; per_size_class.*.recall >= 0.6)"),
                    multiLine=True,
                ),
                self.tr("key operator number, separated by ';' or new lines; operators >= > "
                        "<= < == !=; '*' for every key at a level; '?' after the key skips "
                        "null values (per_class.*.iou? >= 0.5)."),
            )
        )
        self.addParameter(
            advanced(
                with_help(
                    QgsProcessingParameterBoolean(
                        self.FAIL_RUN, self.tr("Fail the run when a condition fails"),
                        defaultValue=True,
                    ),
                    self.tr("Off: the run passes and FAILED_COUNT says how many failed."),
                )
            )
        )
        self.addParameter(
            table_sink(
                self.OUTPUT, "Threshold checks", self.tr,
                "One row per value checked: condition, key, operator, threshold, value, "
                "passed, skipped (a null value under a condition with '?').",
                optional=True,
            )
        )
        self.addOutput(QgsProcessingOutputNumber("FAILED_COUNT", self.tr("Failed checks")))
        self.addOutput(QgsProcessingOutputNumber("CHECK_COUNT", self.tr("Values checked")))
        self.addOutput(QgsProcessingOutputNumber(
            "SKIPPED_COUNT", self.tr("Null values skipped ('?' conditions)")))

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        try:
            parse_conditions(self.parameterAsString(parameters, self.CONDITIONS, context))
        except ValueError as exc:
            return False, f"CONDITIONS: {exc}"
        return True, ""

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        path = self.parameterAsFile(parameters, self.REPORT, context)
        try:
            with open(path, encoding="utf-8-sig") as handle:  # a BOM is not an error
                report = json.load(handle)
        except (OSError, ValueError) as exc:
            raise QgsProcessingException(f"REPORT: cannot read {path} as JSON: {exc}") from None
        try:
            results = check_conditions(
                report, self.parameterAsString(parameters, self.CONDITIONS, context)
            )
        except ValueError as exc:
            raise QgsProcessingException(f"CONDITIONS: {exc}") from None
        outputs = self._write_table(parameters, context, results)
        failed = sum(not r.passed for r in results)
        for r in results:
            verdict = "skip" if r.skipped else ("pass" if r.passed else "FAIL")
            feedback.pushInfo(
                f"{verdict}  {r.path} = {'null' if r.value is None else r.value} "
                f"({r.operator} {r.threshold:g})"
            )
        for condition in checked_nothing(results):
            # Not a pass: every value the condition reaches is null, so it checked nothing.
            feedback.pushWarning(
                f"{condition}: every value it reaches is null and was skipped ('?'): this "
                f"condition checked nothing")
        if failed and self.parameterAsBoolean(parameters, self.FAIL_RUN, context):
            # One line: QGIS shows an exception up to three times (log, error, qgis_process)
            head, *lines = failure_message(results).splitlines()
            raise QgsProcessingException(f"{head} {'; '.join(line.strip() for line in lines)}")
        if failed:
            feedback.pushWarning(failure_message(results))
        feedback.setProgress(100)
        skipped = sum(r.skipped for r in results)
        return {**outputs, "FAILED_COUNT": failed, "CHECK_COUNT": len(results) - skipped,
                "SKIPPED_COUNT": skipped}

    def _write_table(self, parameters, context, results) -> dict:
        if not requested(parameters, self.OUTPUT):
            return {}
        fields = (("condition", FIELD_STRING), ("key", FIELD_STRING), ("operator", FIELD_STRING),
                  ("threshold", FIELD_DOUBLE), ("value", FIELD_DOUBLE), ("passed", FIELD_BOOL),
                  ("skipped", FIELD_BOOL))
        rows = ([r.condition, r.path, r.operator, float(r.threshold), r.value, bool(r.passed),
                 bool(r.skipped)] for r in results)
        return {self.OUTPUT: self.write_table(parameters, self.OUTPUT, context, fields, rows)}
