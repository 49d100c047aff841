"""What every IoU Evaluation algorithm shares: naming, grouping, help, icon, translation."""

from pathlib import Path

from qgis.core import QgsProcessingAlgorithm
from qgis.PyQt.QtCore import QCoreApplication
from qgis.PyQt.QtGui import QIcon

RESOURCES_DIR = Path(__file__).resolve().parent.parent / "resources"


class IoUEvaluationAlgorithm(QgsProcessingAlgorithm):
    """Subclasses set NAME, DISPLAY_NAME and HELP (HTML with the formulas); SHORT_HELP is
    the one-line description shown in the toolbox. The icon is resources/icons/NAME.svg
    (the provider's icon when there is none)."""

    NAME = ""
    DISPLAY_NAME = ""
    HELP = ""
    GROUP = "Object-level evaluation"
    GROUP_ID = "objectlevel"
    SHORT_HELP = ""

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

    def shortDescription(self):  # noqa: N802
        return self.tr(self.SHORT_HELP) if self.SHORT_HELP else super().shortDescription()

    def svgIconPath(self):  # noqa: N802
        path = RESOURCES_DIR / "icons" / f"{self.NAME}.svg"
        return str(path if path.is_file() else RESOURCES_DIR / "icon.svg")

    def icon(self):
        return QIcon(self.svgIconPath())

    def tr(self, text):
        return QCoreApplication.translate(type(self).__name__, text)

    def createInstance(self):  # noqa: N802
        return type(self)()
