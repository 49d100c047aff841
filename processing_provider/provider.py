"""The IoU Evaluation Processing provider (id ``ioueval``)."""

from pathlib import Path

from qgis.core import QgsProcessingProvider
from qgis.PyQt.QtGui import QIcon

from .check_thresholds import CheckThresholdsAlgorithm
from .classmap_iou import ClassMapIoUAlgorithm
from .compare_predictions import ComparePredictionsAlgorithm
from .evaluate_polygons import EvaluatePolygonsAlgorithm
from .metadata import plugin_version
from .overlap_pairs import OverlapPairsAlgorithm
from .parse_model_output import ParseModelOutputAlgorithm
from .pixels_per_field import PixelsPerFieldAlgorithm
from .raster_iou import RasterIoUAlgorithm
from .spatial_iou import SpatialIoUAlgorithm
from .qgis_process import hold_inputs_for_run
from .spatial_match import SpatialMatchAlgorithm

ICON_PATH = Path(__file__).resolve().parent.parent / "resources" / "icon.svg"


class IoUEvaluationProvider(QgsProcessingProvider):
    def id(self):
        return "ioueval"

    def name(self):
        return "IoU Evaluation"

    def longName(self):  # noqa: N802
        return f"IoU Evaluation {plugin_version()}"

    def icon(self):
        return QIcon(str(ICON_PATH))

    def svgIconPath(self):  # noqa: N802
        return str(ICON_PATH)

    def versionInfo(self):  # noqa: N802
        return plugin_version()

    def load(self):
        # Under `qgis_process run ioueval:...`, before qgis_process loads the inputs: GDAL
        # writes nothing beside them (qgis_process.py).
        hold_inputs_for_run()
        return super().load()

    def loadAlgorithms(self):  # noqa: N802
        self.addAlgorithm(EvaluatePolygonsAlgorithm())
        self.addAlgorithm(PixelsPerFieldAlgorithm())
        self.addAlgorithm(SpatialIoUAlgorithm())
        self.addAlgorithm(OverlapPairsAlgorithm())
        self.addAlgorithm(CheckThresholdsAlgorithm())
        self.addAlgorithm(ComparePredictionsAlgorithm())
        self.addAlgorithm(ParseModelOutputAlgorithm())
        self.addAlgorithm(SpatialMatchAlgorithm())
        self.addAlgorithm(RasterIoUAlgorithm())
        self.addAlgorithm(ClassMapIoUAlgorithm())
