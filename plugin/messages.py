"""Dependency problems shown where a QGIS user looks: the message log and the message bar."""

from qgis.core import Qgis, QgsMessageLog

LOG_TAG = "IoU Evaluation"


def show_problems(problems, iface=None) -> None:
    """Log every problem (critical when a required package, else a warning) and push it to
    the message bar when there is one (``iface``)."""
    for problem in problems:
        level = Qgis.Critical if problem.dependency.required else Qgis.Warning
        QgsMessageLog.logMessage(problem.message, LOG_TAG, level)
        if iface is not None:
            iface.messageBar().pushMessage(LOG_TAG, problem.message, level=level, duration=0)


class UnavailablePlugin:
    """What QGIS loads when a required package is missing: it says so, registers nothing."""

    def __init__(self, iface, problems):
        self.iface, self.problems = iface, problems
        self.provider = None

    def initProcessing(self):  # noqa: N802 (QGIS API)
        pass

    def initGui(self):  # noqa: N802
        show_problems(self.problems, self.iface)

    def unload(self):
        pass
