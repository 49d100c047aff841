"""What every IoU Evaluation algorithm shares: naming, grouping, help, icon, translation, and
the plumbing around the core: calling it under the feedback (``run_core``) and writing its
tables and layers into sinks (``write_table``, ``write_features``)."""

from pathlib import Path

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsField,
    QgsFields,
    QgsProcessingAlgorithm,
    QgsProcessingException,
    QgsProcessingOutputNumber,
)
from qgis.PyQt.QtCore import QCoreApplication
from qgis.PyQt.QtGui import QIcon

from ..core import EvaluationCanceled
from ..core.classmaps.rasters import inputs_left_untouched
from ..core.util.memory import InsufficientMemoryError
from .compat import FAST_INSERT, NO_GEOMETRY
from .csvt import csv_destination, write_csvt
from .help_text import html_to_text
from .layers import feature_batches, forward_core_log
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

    def run_core(self, feedback, function, *args, **kwargs):
        """``function(*args, **kwargs)`` (a core function) with the core's log messages shown
        in the algorithm's log. Returns its result, or None when the user canceled
        (``EvaluationCanceled``: ``processAlgorithm`` then returns ``{}``). ``ValueError`` and
        ``InsufficientMemoryError`` (bad parameters or data the core refuses, not enough
        memory) become ``QgsProcessingException`` with the core's message."""
        try:
            with forward_core_log(feedback):
                return function(*args, **kwargs)
        except EvaluationCanceled:
            return None
        except (ValueError, InsufficientMemoryError) as exc:
            raise QgsProcessingException(str(exc)) from exc

    def checked(self, function, *args, **kwargs):
        """``function(*args, **kwargs)`` with a ``ValueError`` (a parameter read by the
        provider itself, named in the message) raised as ``QgsProcessingException``."""
        try:
            return function(*args, **kwargs)
        except ValueError as exc:
            raise QgsProcessingException(str(exc)) from exc

    def write_table(self, parameters, name, context, fields, rows, crs=None) -> str:
        """Create the table (no geometry) output ``name`` with ``fields`` (a QgsFields, or
        (field name, FIELD_* type) pairs) and write ``rows`` (lists of QGIS-safe values, in
        field order) into it; ``crs``: the sink's CRS (None: none). Returns the destination
        id; raises QgsProcessingException when the sink cannot be made or written."""
        fields = _fields(fields)
        rows = [list(row) for row in rows]
        columns = [list(column) for column in zip(*rows)] if rows else []
        return self.write_features(parameters, name, context, fields, columns, crs=crs)

    def write_features(self, parameters, name, context, fields, columns, geometries=None,
                       wkb_type=NO_GEOMETRY, crs=None, feedback=None, progress=None):
        """Create the output ``name`` and write one feature per row into it, in batches
        (``layers.feature_batches``: multi-part geometries, attributes by position).

        Args:
            fields: QgsFields, or (field name, FIELD_* type) pairs.
            columns: list of columns, each a list (n,) of QGIS-safe values (``qgis_values``).
            geometries: object array (n,) of shapely geometries, or None for a table.
            wkb_type, crs: the sink's geometry type and CRS (None: no CRS).
            feedback: when given, writing stops between batches when the user cancels.
            progress: (start, end) % of the progress bar the writing moves through, with
                ``feedback``.

        Returns the destination id, or None when canceled.

        Raises QgsProcessingException when the sink cannot be made or a batch not written.
        """
        fields = _fields(fields)
        sink, dest_id = self.parameterAsSink(parameters, name, context, fields, wkb_type,
                                             QgsCoordinateReferenceSystem() if crs is None else crs)
        if sink is None:
            raise QgsProcessingException(self.invalidSinkError(parameters, name))
        total = len(geometries) if geometries is not None else len(columns[0]) if columns else 0
        written = 0
        for batch in feature_batches(geometries, None, columns):
            if not sink.addFeatures(batch, FAST_INSERT):
                raise QgsProcessingException(self.writeFeatureError(sink, parameters, name))
            written += len(batch)
            if feedback is not None:
                if progress is not None:
                    start, end = progress
                    feedback.setProgress(start + (end - start) * written / max(total, 1))
                if feedback.isCanceled():
                    return None
        return dest_id

    def createInstance(self):  # noqa: N802
        return type(self)()


def _fields(fields) -> QgsFields:
    """``fields`` as QgsFields: a QgsFields as it is, else (name, FIELD_* type) pairs or
    QgsField objects."""
    if isinstance(fields, QgsFields):
        return fields
    out = QgsFields()
    for field in fields:
        out.append(field if isinstance(field, QgsField) else QgsField(*field))
    return out
