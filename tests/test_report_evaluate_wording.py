"""What the evaluatepolygons HTML report says, looked at as an analyst: units without a CRS,
runs where nothing matched, identical boundaries, map titles, and numbers near zero."""

import base64
import json
import re

import numpy as np
import pytest
from iou_evaluation.core.reports.evaluate import worst_panel_title
from iou_evaluation.core.reports.html import format_number
from qgis.core import QgsCoordinateReferenceSystem
from test_provider import polygon_layer, run, square_wkt


def _page(parameters):
    result = run(parameters)
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    html = open(result["REPORT_HTML"], encoding="utf-8").read()
    return report, html


def _text(html):
    """The visible text of the page before the definitions (figures left out)."""
    body = html.split('id="definitions"')[0].split("</style>")[-1]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body))


def _figure_svg(html, figure_id):
    start = html.index(f'id="{figure_id}"')
    uri = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html[start:]).group(1)
    return base64.b64decode(uri).decode("utf-8")


@pytest.mark.parametrize("value, digits, shown", [
    (-0.4, 0, "0"), (-1e-7, None, "0.0000"), (-0.0, 2, "0.00"),
    (-0.6, 0, "-1"), (-4298.3, 0, "-4,298"), (-0.00005, 4, "-0.0001"),
])
def test_a_negative_number_that_rounds_to_zero_is_shown_without_a_sign(value, digits, shown):
    assert format_number(value, digits) == shown


def test_small_map_titles_fit_their_panel():
    # 15-digit ids (the sample's CSBID) overlapped the neighbouring titles on one line
    assert worst_panel_title("351623000000096", 0.0) == "id 351623000000096\nbest IoU 0.00"
    long_id = "field-" + "x" * 40
    first = worst_panel_title(long_id, 0.1234).split("\n")[0]
    assert len(first) == 22 and "…" in first
    assert first.startswith("id field-") and first.endswith("xxxx")


def _no_crs(layer):
    layer.setCrs(QgsCoordinateReferenceSystem())
    return layer


def test_a_run_without_crs_names_planar_units_not_metres(ioueval_provider):
    # 100 x 100 squares 10 units apart: IoU = 9,000 / 11,000, Hausdorff distance 10 units
    reference = _no_crs(polygon_layer("", [square_wkt(0, 0, 100)], "ref"))
    predicted = _no_crs(polygon_layer("", [square_wkt(10, 0, 100)], "pred"))
    report, html = _page({"PREDICTED": predicted, "REFERENCE": reference})
    assert report["metrics"]["iou_mean"] == pytest.approx(9000 / 11000)
    assert report["metrics"]["hausdorff_mean_m"] == pytest.approx(10, abs=0.5)
    text = _text(html)
    assert "Areas in none" not in text
    assert "planar units" in text and "no CRS" in text
    assert "Area (10⁴ units²)" in text and "Distance (units)" in text
    assert "(ha)" not in text and "UTM" not in text and "m²" not in text
    assert "units across" in _figure_svg(html, "fig-worst-fields")
    assert "Distance (units" in _figure_svg(html, "fig-boundary-distances")


def test_a_run_with_a_crs_keeps_metres_and_hectares(ioueval_provider):
    reference = polygon_layer("EPSG:32613", [square_wkt(500000, 0, 100)], "ref")
    predicted = polygon_layer("EPSG:32613", [square_wkt(500010, 0, 100)], "pred")
    _, html = _page({"PREDICTED": predicted, "REFERENCE": reference})
    text = _text(html)
    assert "Areas in EPSG:6933" in text and "Area (ha)" in text and "Distance (m)" in text
    assert "UTM zone" in text
    assert "m across" in _figure_svg(html, "fig-worst-fields")
    # Debian's qgis_process wrapper fails on 3.22 ("Command --noversioncheck not known!")
    reproduce = _text(html[html.index('id="reproduce"'):])
    assert "qgis_process.bin" in reproduce and "plugins enable iou_evaluation" in reproduce


def test_printing_keeps_subheadings_with_their_figures(ioueval_provider):
    # printed, "By stratum" and "The 12 worst reference fields" ended a page without their
    # figure: h3 headings must not be followed by a break, figures not be cut
    reference = polygon_layer("EPSG:32613", [square_wkt(500000, 0, 100)], "ref")
    _, html = _page({"PREDICTED": reference, "REFERENCE": reference})
    print_css = re.search(r"@media print \{(.*?)\n  \}", html, re.S).group(1)
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", print_css))
    after = next(v for k, v in rules.items() if "h3" in k)
    assert "break-after: avoid" in after
    inside = next(v for k, v in rules.items() if "figure" in k)
    assert "break-inside: avoid" in inside


def test_the_summary_of_an_empty_predicted_layer_claims_no_mean_iou(ioueval_provider):
    reference = polygon_layer("EPSG:32613", [square_wkt(0, 0, 100), square_wkt(200, 0, 100)],
                              "ref")
    predicted = polygon_layer("EPSG:32613", [], "pred")
    report, html = _page({"PREDICTED": predicted, "REFERENCE": reference})
    assert report["metrics"]["count_fn"] == 2 and report["metrics"]["iou_mean"] == 0
    text = _text(html)
    assert "0 of 2 reference fields were found" in text
    assert "there was no prediction to evaluate" in text
    assert "0 of 0 predictions" not in text
    assert "mean IoU of 0.0000" not in text and "no pair matched" in text
    # no "sampled every – m" nor "– m² on average" where nothing matched
    assert "– m" not in text
    assert "No pair matched: there are no boundary distances" in text


def test_identical_boundaries_draw_distances_on_a_plain_axis(ioueval_provider):
    layer_wkts = [square_wkt(0, 0, 100), square_wkt(300, 0, 50)]
    reference = polygon_layer("EPSG:32613", layer_wkts, "ref")
    predicted = polygon_layer("EPSG:32613", layer_wkts, "pred")
    report, html = _page({"PREDICTED": predicted, "REFERENCE": reference})
    assert report["metrics"]["hausdorff_mean_m"] == pytest.approx(0, abs=1e-6)
    svg = _figure_svg(html, "fig-boundary-distances")
    # was "Distance (m; values above 0.0 m in the last bin)" on an axis 0 … 1e−9
    assert "values above" not in svg and "Distance (m)" in svg
    assert "1e−9" not in svg and "1e-9" not in svg


def test_a_field_of_many_vertices_is_drawn_simplified(ioueval_provider):
    """A 50,000-vertex outline (a staircase of 0.1 m steps, as polygonised rasters have): its
    small map keeps only detail above a thousandth of the panel (drawn whole, a pair of
    million-vertex outlines made a 62 MB page and took 26 s), so the page stays under 1 MB."""
    import shapely

    steps = 25_000
    x = np.repeat(np.arange(steps + 1) * 0.1, 2)[1:-1]
    y = np.repeat(np.arange(steps) * 0.1, 2)
    stairs = np.column_stack([x, y])
    ring = np.vstack([stairs, [[steps * 0.1, 0.0]], stairs[:1]])
    field = shapely.Polygon(ring)
    assert shapely.get_num_coordinates(field) > 50_000
    shifted = shapely.affinity.translate(field, 0.1, 0.0)
    reference = polygon_layer("EPSG:32613", [field.wkt], "ref")
    predicted = polygon_layer("EPSG:32613", [shifted.wkt], "pred")
    report, html = _page({"PREDICTED": predicted, "REFERENCE": reference})
    assert report["metrics"]["count_tp"] == 1
    assert len(html.encode("utf-8")) < 1_000_000


def _card(html: str, key: str) -> str:
    """The text of headline card ``key`` (tags dropped, spaces collapsed)."""
    import re

    block = html.split(f'id="card-{key}">', 1)[1].split('<div class="card', 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", block.split("</div>\n  </div>")[0]).split())


def test_a_rate_with_no_denominator_is_shown_as_na_with_its_reason():
    # No prediction against two reference fields: TP = FP = 0, FN = 2. Mean IoU (no matched
    # pair) and precision (no prediction) have no denominator: the JSON keeps agribound's
    # 0, the page says n/a and why. Recall 0 / 2 and F1 2·0 / (0 + 0 + 2) are measured: 0.
    import shapely
    from iou_evaluation.core import evaluate
    from iou_evaluation.core.reports.data import build_report
    from iou_evaluation.core.reports.evaluate import render_evaluation_html, report_extras

    result = evaluate([], [shapely.box(0, 0, 2, 1), shapely.box(5, 0, 7, 1)],
                      equal_area_crs=None)
    report = {**build_report(result, {}, {"plugin": "test"}), **report_extras(result)}
    assert report["metrics"]["iou_mean"] == 0.0 and report["metrics"]["precision"] == 0.0
    html = render_evaluation_html(report, result)
    assert _card(html, "iou_mean").startswith(
        "Mean IoU n/a no pair matched: there is no matched pair to average "
        "(0 in the JSON by convention)")
    assert _card(html, "precision").startswith(
        "Precision n/a no prediction was evaluated (0 in the JSON by convention)")
    assert "n/a" not in _card(html, "recall") and "0.0000" in _card(html, "recall")
    assert "n/a" not in _card(html, "f1") and "0.0000" in _card(html, "f1")


def test_both_layers_empty_every_rate_is_na():
    # Nothing on either side: agribound's convention gives 1 to every rate; none is measured.
    from iou_evaluation.core import evaluate
    from iou_evaluation.core.reports.data import build_report
    from iou_evaluation.core.reports.evaluate import render_evaluation_html, report_extras

    result = evaluate([], [], equal_area_crs=None)
    report = {**build_report(result, {}, {"plugin": "test"}), **report_extras(result)}
    html = render_evaluation_html(report, result)
    for key in ("precision", "recall", "f1", "iou_mean"):
        card = _card(html, key)
        assert " n/a " in f" {card} ", card
        assert f"({report['metrics'][key]:g} in the JSON by convention)" in card, card
