"""IoU Evaluation core: object-level evaluation of predicted against reference polygons.

Pure Python on shapely >= 2.1, pyproj and numpy; it never imports qgis.
"""

from .evaluate import Evaluation, evaluate
from .progress import EvaluationCanceled, Progress

__all__ = ["Evaluation", "EvaluationCanceled", "Progress", "evaluate"]
