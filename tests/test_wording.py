"""Messages a first user reads: singular and plural agree with the count, each stage is
named once, a tool's messages speak of its own input."""

import logging

import shapely
from qgis.core import QgsProcessingFeedback
from iou_evaluation.core.geometry.pixels import pixels_per_field
from iou_evaluation.core.geometry.prepare import prepare_layer
from iou_evaluation.core.util.wording import count_of

BOWTIE = "POLYGON((0 0,2 2,2 0,0 2,0 0))"
SQUARE = "POLYGON((0 0,1 0,1 1,0 1,0 0))"


def test_count_of_agrees_with_the_number():
    assert count_of(1, "geometry", "geometries") == "1 geometry"
    assert count_of(0, "geometry", "geometries") == "0 geometries"
    assert count_of(2, "answer") == "2 answers"


def test_one_repaired_geometry_is_singular(caplog):
    geometries = shapely.from_wkt([BOWTIE, SQUARE])
    with caplog.at_level(logging.WARNING):
        prepare_layer(geometries, None, None, "reference")
    assert "1 reference geometry was invalid and was repaired" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        prepare_layer(shapely.from_wkt([BOWTIE, BOWTIE]), None, None, "reference")
    assert "2 reference geometries were invalid and were repaired" in caplog.text


def test_pixels_per_field_names_its_input_not_a_reference(caplog):
    with caplog.at_level(logging.WARNING):
        pixels_per_field(shapely.from_wkt([BOWTIE]), "EPSG:32613", 1.0)
    assert "1 input geometry was invalid" in caplog.text
    assert "reference" not in caplog.text


class _Texts(QgsProcessingFeedback):
    def __init__(self):
        super().__init__()
        self.texts = []

    def setProgressText(self, text):  # noqa: N802
        self.texts.append(text)
        super().setProgressText(text)


def test_bootstrap_stage_is_named_once(ioueval_provider):
    import processing
    from qgis_layers import box_wkt, memory_layer

    feedback = _Texts()
    processing.run("ioueval:evaluatepolygons", {
        "PREDICTED": memory_layer([box_wkt(0, 0, 10, 10), box_wkt(20, 0, 30, 10)]),
        "REFERENCE": memory_layer([box_wkt(1, 0, 11, 10), box_wkt(20, 1, 30, 11)]),
        "BOOTSTRAP": 200,
    }, feedback=feedback)
    assert feedback.texts.count("Bootstrap") == 1, feedback.texts
