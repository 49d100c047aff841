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


def test_plural_picks_the_form_that_agrees():
    from iou_evaluation.core.util.wording import plural

    assert [plural(n, "was", "were") for n in (0, 1, 2)] == ["were", "was", "were"]
    assert plural(1, "field") == "field" and plural(3, "field") == "fields"
    assert count_of(1024, "vertex", "vertices", thousands=True) == "1,024 vertices"


def _squares(n, dx=0.0):
    return [shapely.box(10 * k + dx, 0, 10 * k + 9 + dx, 9) for k in range(n)]


def test_one_repaired_and_one_dropped_row_are_worded_in_the_singular():
    from iou_evaluation.core import evaluate

    reference = [shapely.from_wkt("POLYGON((0 0,9 9,9 0,0 9,0 0))"), shapely.box(20, 0, 29, 9),
                 None]
    result = evaluate(_squares(3), reference, equal_area_crs=None)
    text = " | ".join(result.warnings)
    assert "1 invalid reference geometry was repaired" in text, text
    assert "1 of 3 reference rows was not evaluated" in text, text
    reference[2] = shapely.from_wkt("POLYGON((20 0,29 9,29 0,20 9,20 0))")
    text = " | ".join(evaluate(_squares(3), reference, equal_area_crs=None).warnings)
    assert "2 invalid reference geometries were repaired" in text, text


def test_the_evaluation_summary_agrees_with_one_field_and_one_prediction():
    from iou_evaluation.core import evaluate
    from iou_evaluation.core.reports.data import build_report
    from iou_evaluation.core.reports.evaluate import render_evaluation_html, report_extras

    # one reference, one prediction that overlaps it by 1/3 of their union: not matched
    result = evaluate([shapely.box(0, 0, 2, 1)], [shapely.box(1, 0, 3, 1)],
                      equal_area_crs=None)
    report = {**build_report(result, {}, {"plugin": "test"}), **report_extras(result)}
    html = render_evaluation_html(report, result)
    words = " ".join(html.split())
    assert "0 of 1 reference field was found" in _plain(words)
    assert "1 of 1 prediction matches nothing" in _plain(words)
    assert "1 reference field has" not in _plain(words)  # Galtea: 0 fields pass
    assert "0 reference fields (0.0 %) have a prediction that may match them" in _plain(words)


def test_one_answer_that_could_not_be_read_is_singular():
    from iou_evaluation.core.reports.spatial_match import build_report, render_html
    from iou_evaluation.core.text.spatial_match import spatial_match

    result = spatial_match(["[0, 0, 10, 10]", "no box here"], ["[0, 0, 10, 10]", "[0, 0, 5, 5]"])
    assert result.metrics["count_parse_failures"] == 1
    report = build_report(result, {}, {"plugin": "test"}, {}, [0, 1])
    words = _plain(" ".join(render_html(report, result.rows["best_iou"]).split()))
    assert "1 answer could not be read" in words
    assert "1 of 2 answers passes" in words
    assert "1 answers" not in words


def _plain(html: str) -> str:
    """The text of a page: tags dropped (numbers are wrapped in spans)."""
    import re

    return re.sub(r"<[^>]+>", "", html)


def test_groundset_miou_is_described_as_what_it_computes():
    # groundset_miou = Σ best IoU / references: a false negative overlapped by a prediction
    # counts its IoU (tests/test_core_detection.py), so "missed references count 0" is wrong.
    import re
    from pathlib import Path

    from iou_evaluation.core.reports.definitions import DEFINITIONS
    from iou_evaluation.processing_provider.evaluate_polygons import HELP

    root = Path(__file__).resolve().parent.parent
    texts = {"README.md": (root / "README.md").read_text(encoding="utf-8"), "help": HELP,
             "iou.html.j2": (root / "resources/templates/evaluatepolygons/iou.html.j2")
             .read_text(encoding="utf-8"),
             "definition": next(d.meaning for d in DEFINITIONS if d.key == "groundset_miou")}
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert not re.search(r"missed reference[a-z ]*counts? 0", flat), name
        assert "its best IoU" in flat, name
