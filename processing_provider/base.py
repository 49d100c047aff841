"""What every IoU Evaluation algorithm shares: naming, grouping, help, icon, translation."""

from pathlib import Path

from qgis.core import QgsProcessingAlgorithm, QgsProcessingOutputNumber
from qgis.PyQt.QtCore import QCoreApplication
from qgis.PyQt.QtGui import QIcon

from ..core.classmaps.rasters import inputs_left_untouched
from .csvt import csv_destination, write_csvt
from .help_text import html_to_text
from .qgis_process import in_qgis_process, release_inputs

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
    #: Numbers for the model builder: {output name: (key of the value, label)}.
    NUMERIC_OUTPUTS = {}

    def name(self):
        return self.NAME

    def displayName(self):  # noqa: N802 (QGIS API)
        return self.tr(self.DISPLAY_NAME)

    def group(self):
        return self.tr(self.GROUP)

    def groupId(self):  # noqa: N802
        return self.GROUP_ID

    def shortHelpString(self):  # noqa: N802
        # qgis_process prints it in a terminal as it is: plain text there, HTML elsewhere
        text = self.tr(self.HELP)
        # (after a blank line: qgis_process prints it right under the one-line description)
        return "\n" + html_to_text(text) if in_qgis_process() else text

    def checkParameterValues(self, parameters, context):  # noqa: N802
        release_inputs()  # qgis_process has loaded the inputs: see qgis_process.py
        # QGIS's own check loads the input layers: a raster it loads computes statistics,
        # which GDAL would save beside the input (inputs are never modified).
        with inputs_left_untouched():
            return super().checkParameterValues(parameters, context)

    def prepareAlgorithm(self, parameters, context, feedback):  # noqa: N802
        release_inputs()
        return super().prepareAlgorithm(parameters, context, feedback)

    def shortDescription(self):  # noqa: N802
        return self.tr(self.SHORT_HELP) if self.SHORT_HELP else super().shortDescription()

    def svgIconPath(self):  # noqa: N802
        path = RESOURCES_DIR / "icons" / f"{self.NAME}.svg"
        return str(path if path.is_file() else RESOURCES_DIR / "icon.svg")

    def icon(self):
        return QIcon(self.svgIconPath())

    def tr(self, text):
        return QCoreApplication.translate(type(self).__name__, text)

    def add_numeric_outputs(self):
        """Declare every NUMERIC_OUTPUTS entry as a number output (in initAlgorithm)."""
        for name, (_, label) in self.NUMERIC_OUTPUTS.items():
            self.addOutput(QgsProcessingOutputNumber(name, self.tr(label)))

    def numeric_results(self, value_of) -> dict:
        """{output name: value_of(key)} of every NUMERIC_OUTPUTS entry, for the results."""
        return {name: value_of(key) for name, (key, _) in self.NUMERIC_OUTPUTS.items()}

    def parameterAsSink(self, parameters, name, context, fields, *args, **kwargs):  # noqa: N802
        """QgsProcessingAlgorithm.parameterAsSink, and for a CSV file destination the
        ``.csvt`` of ``fields`` beside it: without it QGIS reads every column as text. GDAL
        keeps a .csvt written before the CSV file itself. Geometry is not written to a CSV
        file by default, so the types are those of ``fields`` alone."""
        sink, dest_id = super().parameterAsSink(parameters, name, context, fields, *args, **kwargs)
        csv_file = csv_destination(dest_id) if sink is not None else None
        if csv_file is not None:
            write_csvt(csv_file, fields)
        return sink, dest_id

    def createInstance(self):  # noqa: N802
        return type(self)()
