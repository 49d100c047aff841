"""What every IoU Evaluation algorithm shares: naming, grouping, help, translation."""

from qgis.core import QgsProcessingAlgorithm
from qgis.PyQt.QtCore import QCoreApplication


class IoUEvaluationAlgorithm(QgsProcessingAlgorithm):
    """Subclasses set NAME, DISPLAY_NAME and HELP (HTML with the formulas)."""

    NAME = ""
    DISPLAY_NAME = ""
    HELP = ""
    GROUP = "Object-level evaluation"
    GROUP_ID = "objectlevel"

    def name(self):
        return self.NAME

    def displayName(self):  # noqa: N802 (QGIS API)
        return self.tr(self.DISPLAY_NAME)

    def group(self):
        return self.tr(self.GROUP)

    def groupId(self):  # noqa: N802
        return self.GROUP_ID

    def shortHelpString(self):  # noqa: N802
        return self.tr(self.HELP)

    def tr(self, text):
        return QCoreApplication.translate(type(self).__name__, text)

    def createInstance(self):  # noqa: N802
        return type(self)()
