"""Dependency problems shown where a QGIS user looks: the message log, the message bar and,
for qgis_process (which shows neither), standard error."""

import sys

from qgis.core import Qgis, QgsMessageLog

LOG_TAG = "IoU Evaluation"


def show_problems(problems, iface=None) -> None:
    """Log every problem (critical when a required package, else a warning) and push it to
    the message bar when there is one (``iface``)."""
    for problem in problems:
        level = (Qgis.MessageLevel.Critical if problem.dependency.required
                 else Qgis.MessageLevel.Warning)
        QgsMessageLog.logMessage(problem.message, LOG_TAG, level)
        if iface is not None:
            iface.messageBar().pushMessage(LOG_TAG, problem.message, level=level, duration=0)


def print_problems(problems, stream=None) -> None:
    """Write every problem to ``stream`` (standard error by default), one per line: what
    qgis_process shows of a plugin that registers no algorithm."""
    stream = sys.stderr if stream is None else stream
    for problem in problems:
        print(problem.message, file=stream)


class UnavailablePlugin:
    """What QGIS loads when a required package is missing: it says so, registers nothing."""

    def __init__(self, iface, problems):
        self.iface, self.problems = iface, problems
        self.provider = None
        print_problems(problems)  # qgis_process calls initProcessing only and logs nowhere

    def initProcessing(self):  # noqa: N802 (QGIS API)
        pass

    def initGui(self):  # noqa: N802
        show_problems(self.problems, self.iface)

    def unload(self):
        pass
