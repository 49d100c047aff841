"""ioueval:evaluatepolygons draws its HTML report on a thread of its own while the layers are
written: the page must be the one drawn in line from the same report, and a failed render
must still fail the run."""

import json

import pytest
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from qgis.core import QgsProcessingContext, QgsProcessingFeedback, QgsProject

ALGORITHM = "ioueval:evaluatepolygons"


def run(parameters):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(ALGORITHM, parameters, context=context,
                          feedback=QgsProcessingFeedback())


def test_the_page_drawn_beside_the_writing_is_the_page_drawn_in_line(
        ioueval_provider, tmp_path, monkeypatch):
    from iou_evaluation.core.report_evaluate import render_evaluation_html
    from iou_evaluation.processing_provider import evaluate_polygons

    evaluations = []

    def keep(*args, **kwargs):
        evaluations.append(real_evaluate(*args, **kwargs))
        return evaluations[-1]

    real_evaluate = evaluate_polygons.evaluate
    monkeypatch.setattr(evaluate_polygons, "evaluate", keep)
    outputs = {name: str(tmp_path / f"{name.lower()}.gpkg")
               for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD")}
    result = run({
        "PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
        "REFERENCE_ID_FIELD": "CSBID", **outputs,
        "REPORT_JSON": str(tmp_path / "report.json"),
        "REPORT_HTML": str(tmp_path / "report.html"),
    })
    # The JSON written beside it holds the date the page shows, so the two must agree to
    # the byte when the page is drawn again, in line, from that JSON and the same evaluation.
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert len(evaluations) == 1
    expected = render_evaluation_html(report, evaluations[0])
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == expected
    assert result["REPORT_HTML"] == str(tmp_path / "report.html")
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (85, 15, 15)


def test_a_page_that_cannot_be_drawn_fails_the_run_and_writes_no_report(
        ioueval_provider, tmp_path, monkeypatch):
    from iou_evaluation.processing_provider import evaluate_polygons

    def broken(report, evaluation):
        raise KeyError("metrics")

    monkeypatch.setattr(evaluate_polygons, "render_evaluation_html", broken)
    with pytest.raises(Exception, match="metrics"):
        run({
            "PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
            "TRUE_POSITIVES": "TEMPORARY_OUTPUT",
            "REPORT_HTML": str(tmp_path / "report.html"),
        })
    assert list(tmp_path.iterdir()) == []


def test_the_renderer_gives_the_text_and_the_error_of_its_render():
    from iou_evaluation.processing_provider.report_thread import ReportRenderer

    renderer = ReportRenderer()
    try:
        text = renderer.submit(lambda report: json.dumps(report, sort_keys=True), {"b": 2, "a": 1})
        failing = renderer.submit(lambda report: report["missing"], {})
        assert text({}) == '{"a": 1, "b": 2}'
        with pytest.raises(KeyError, match="missing"):
            failing({})
    finally:
        renderer.close()
