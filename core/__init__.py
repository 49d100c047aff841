"""IoU Evaluation core: object-level evaluation of predicted against reference polygons.

Pure Python on shapely >= 2.1, pyproj and numpy; it never imports qgis.

Concept packages, each importing only packages before it in this order (tests/test_core_layout.py
holds them to it):

    util        checks, rates (the zero-division rule), progress and cancellation, threads,
                memory, allocator, wording, library versions
    geometry    CRSs, segments, exact lon/lat areas, densification, preparation, dissolve, pixels
    pairs       candidate pairs and IoU, overlap bounds, pair metrics, pair table, footprints,
                study area
    matching    matching rules, summary metrics, grouping, labels, detection, threshold sweep,
                average precision
    boundary    UTM zones, boundary distances (the exact solver in _exact), tolerance lengths,
                wide pairs, the boundary F1 curve
    evaluation  evaluate, compare
    text        model text, spatial match
    classmaps   confusion matrices of label rasters and categorised polygons
    reports     report data, HTML, figures, reproduce, definitions, each algorithm's report,
                release thresholds (never imported by an evaluation: matplotlib and jinja2
                stay out of it)
"""

from .evaluation.evaluate import Evaluation, evaluate
from .util.progress import EvaluationCanceled, Progress

__all__ = ["Evaluation", "EvaluationCanceled", "Progress", "evaluate"]
