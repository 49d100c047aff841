"""The class-map HTML report's IoU chart: classes without a visible bar are marked."""

import base64
import re

import numpy as np

from iou_evaluation.core.reports.class_map_html import render_class_map_html
from iou_evaluation.core.reports.class_map import build_class_map_report
from iou_evaluation.core.classmaps.confusion import ClassTable


def _svg_texts(html: str, figure_id: str) -> list:
    block = html[html.index(f'id="{figure_id}"'):]
    data = re.search(r'data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)', block).group(1)
    svg = base64.b64decode(data).decode("utf-8")
    return [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_iou_chart_marks_zero_iou_and_absent_classes():
    # Reference [a, a, b] against prediction [a, c, c]; d is in neither map.
    # a: TP 1, FN 1 -> IoU 1/2; b: reference only -> IoU 0; c: prediction only -> IoU 0;
    # d: 0/0, absent from both. Rows = prediction (a, b, c, d, other, no prediction).
    counts = np.zeros((6, 4), dtype=np.int64)
    counts[0, 0] = 1  # predicted a, reference a
    counts[2, 0] = 1  # predicted c, reference a
    counts[2, 1] = 1  # predicted c, reference b
    report = build_class_map_report(
        ClassTable(["a", "b", "c", "d"]), counts, counts.astype(float), "pixels",
        alignment={}, parameters={}, inputs={}, provenance={"plugin": "test", "qgis": "test"},
    )
    assert [report["per_class"][k]["iou"] for k in "abcd"] == [0.5, 0.0, 0.0, None]
    html = render_class_map_html(report, title="t", algorithm_id="ioueval:rasteriou")
    texts = _svg_texts(html, "fig-iou")
    assert texts.count("0") == 2  # b and c: IoU 0, no bar, marked
    assert texts.count("absent") == 1  # d
    assert "no bar: absent from both maps" not in html
    assert "marked absent" in html
