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


LONG_NAMES = [
    "Deciduous broadleaf forest", "Evergreen needleleaf forest", "Mixed forest",
    "Closed shrubland", "Open shrubland", "Woody savannas", "Savannas", "Grasslands",
    "Permanent wetlands", "Croplands", "Urban and built-up lands",
    "Cropland/natural vegetation mosaics", "Permanent snow and ice", "Barren", "Water bodies",
    "Evergreen broadleaf forest", "Deciduous needleleaf forest", "Irrigated croplands",
    "Rainfed croplands with scattered trees and hedgerows", "Unclassified"]


def test_iou_chart_labels_of_20_long_class_names_do_not_overlap():
    # Each label's box as drawn (renderer extents, in pixels) is apart from its neighbours',
    # inside the figure, and horizontal; a name longer than 40 characters ends in "…".
    from iou_evaluation.core.reports.class_map_html import IOU_LABEL_MAX_CHARS, iou_bars_figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    labels = [f"{k} {name}" for k, name in enumerate(LONG_NAMES)]
    figure = iou_bars_figure(labels, [0.05 * k for k in range(19)] + [None])
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = figure.axes[0]
    ticks = [t for t in ax.get_yticklabels() if t.get_text()]
    assert [t.get_text() for t in ticks][:3] == labels[:3]
    assert len(ticks) == 20 and all(t.get_rotation() == 0 for t in ticks)
    assert ticks[18].get_text() == labels[18][:IOU_LABEL_MAX_CHARS - 1].rstrip() + "…"
    boxes = sorted((t.get_window_extent(renderer) for t in ticks), key=lambda b: b.y0)
    for lower, upper in zip(boxes, boxes[1:]):
        assert lower.y1 <= upper.y0, (lower, upper)
    width, height = canvas.get_width_height()
    assert all(b.x0 >= 0 and b.y0 >= 0 and b.x1 <= width and b.y1 <= height for b in boxes)
    # the labels do not run into the bars either
    axes_box = ax.get_window_extent(renderer)
    assert all(b.x1 <= axes_box.x0 for b in boxes)
