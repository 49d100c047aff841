"""The HTML report of ioueval:evaluatepolygons, rendered through processing.run: it parses,
every section and figure is there, every number shown is the JSON report's, and every key
of the JSON report is defined."""

import json
import math
import re
from html.parser import HTMLParser

import pytest
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from iou_evaluation.core.reports.definitions import definition_keys
from iou_evaluation.core.reports.html import lookup, shown_values
from test_provider import run

_VOID = {"meta", "img", "br", "hr", "link", "input", "col", "source", "wbr"}
_OPTIONAL_END = {"li", "dt", "dd", "tr", "td", "th", "p"}

SECTIONS = ["header", "compared", "headline", "alerts", "iou", "failures", "boundaries",
            "reproduce", "provenance", "definitions"]
FIGURES = ["fig-iou-histogram", "fig-threshold-sweep", "fig-worst-fields",
           "fig-boundary-distances"]
FULL_FIGURES = FIGURES + ["fig-per_size_class", "fig-per_stratum", "fig-boundary-curve",
                          "fig-precision-recall"]


class _StrictParser(HTMLParser):
    """Collects ids, images and td.num cells, and fails on a tag closed out of order."""

    def __init__(self):
        super().__init__()
        self.stack, self.ids, self.images, self.errors = [], [], {}, []
        self.num_cells, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "img":
            figure_id = next((i for t, i in reversed(self.stack) if t == "figure"), None)
            self.images[figure_id] = attrs
        if tag == "td" and "num" in (attrs.get("class") or ""):
            self._cell = [0, ""]  # shown spans inside, bare text
        if tag == "span" and self._cell is not None and "data-key" in attrs:
            self._cell[0] += 1
        if tag not in _VOID:
            self.stack.append((tag, attrs.get("id")))

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.num_cells.append(tuple(self._cell))
            self._cell = None
        while self.stack and self.stack[-1][0] != tag and self.stack[-1][0] in _OPTIONAL_END:
            self.stack.pop()
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else None}")
            return
        self.stack.pop()

    def handle_data(self, data):
        if self._cell is not None and not self._cell[0]:
            self._cell[1] += data.strip()


def _number(text, kind):
    text = text.strip()
    if text == "–":
        return None, 0
    if kind == "percent":
        text = text.removesuffix("%").strip()
    text = text.replace(",", "")
    if text in ("true", "false"):
        return text == "true", 0
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text), decimals


def _check_shown_numbers(html, report):
    values = shown_values(html)
    assert len(values) > 50
    kinds = re.findall(r'data-kind="(\w+)"', html)
    assert len(kinds) == len(values)
    for (path, text), kind in zip(values, kinds):
        expected = lookup(report, path)
        shown, decimals = _number(text, kind)
        if expected is None:
            assert shown is None, (path, text)
            continue
        assert shown is not None, (path, text, expected)
        if kind == "percent":
            expected = 100 * expected
        assert abs(shown - expected) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9), (path, text, expected)


def _check_definitions(report):
    defined = definition_keys()
    missing = [k for k in report if k != "metrics" and k not in defined]
    metrics = report["metrics"]
    missing += [k for k in metrics if k not in defined]
    for k in metrics.get("average_precision") or {}:
        if f"average_precision.{k}" not in defined:
            missing.append(f"average_precision.{k}")
    for k in metrics.get("bootstrap") or {}:
        if f"bootstrap.{k}" not in defined:
            missing.append(f"bootstrap.{k}")
    for kind in ("per_stratum", "per_size_class", "per_class", "per_group"):
        for entry in (metrics.get(kind) or {}).values():
            for k in entry:
                if k not in defined and not any(f"{g}.*.{k}" in defined for g in (
                        "per_stratum", "per_size_class", "per_class")):
                    missing.append(f"{kind}.*.{k}")
    assert not missing, sorted(set(missing))


def _render(parameters):
    result = run({"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE, **parameters})
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    html = open(result["REPORT_HTML"], encoding="utf-8").read()
    return report, html


def _check_page(report, html, figures):
    parser = _StrictParser()
    parser.feed(html)
    parser.close()
    assert not parser.errors, parser.errors[:5]
    ids = parser.ids
    order = [ids.index(section) for section in SECTIONS if section in ids]
    assert set(SECTIONS) <= set(ids) or "alerts" not in SECTIONS
    assert order == sorted(order)
    for figure in figures:
        assert figure in ids, figure
        assert parser.images[figure]["src"].startswith("data:image/svg+xml;base64,")
        assert parser.images[figure]["alt"]
    # every number cell shows a JSON value (or a dash for none)
    bare = [text for spans, text in parser.num_cells if not spans and text not in ("", "–")]
    assert not bare, bare[:5]
    _check_shown_numbers(html, report)
    _check_definitions(report)
    assert "<script" not in html and "src=\"http" not in html and "href=\"http" not in html


def test_report_of_the_sample(ioueval_provider):
    report, html = _render({})
    _check_page(report, html, FIGURES)
    metrics = report["metrics"]
    # the summary sentence of the issue: 85 of 100 found, 15 predictions match nothing
    text = re.sub(r"<[^>]+>", "", html)
    assert "85 of 100 reference fields were found" in text
    assert "15 of 100 predictions match nothing" in text
    assert metrics["precision_among_overlapping"] == pytest.approx(85 / (85 + 15 - 0))
    assert 'id="card-precision_among_overlapping"' in html
    assert len(report["worst_reference_fields"]) == 12
    best = [w["best_iou"] for w in report["worst_reference_fields"]]
    assert best == sorted(best)
    assert "processing.run(&#34;ioueval:evaluatepolygons&#34;" in html or \
        'processing.run("ioueval:evaluatepolygons"' in html
    # the program that works on this QGIS (Debian's 3.22: the wrapper qgis_process fails)
    assert "qgis_process.bin run ioueval:evaluatepolygons" in html
    for key in ("plugin", "qgis", "shapely", "geos", "pyproj", "proj", "numpy", "matplotlib",
                "python", "created_utc"):
        assert key in report["provenance"], key


def test_report_with_strata_sizes_bootstrap_tolerance_and_scores(ioueval_provider):
    report, html = _render({
        "STRATA_FIELD": "CNTY", "SIZE_BINS": "auto", "BOOTSTRAP": 100,
        "BOUNDARY_TOLERANCE": 5.0, "SCORE_FIELD": "CSBACRES",
    })
    _check_page(report, html, FULL_FIGURES)
    metrics = report["metrics"]
    assert "average-precision" in html
    curve = metrics["boundary_by_tolerance"]
    assert curve["tolerance_m"] == [5.0, 7.5, 10.0, 15.0, 20.0]
    assert curve["boundary_f1"][0] == metrics["boundary_f1"]
    assert all(b >= a - 1e-12 for a, b in zip(curve["boundary_recall"],
                                               curve["boundary_recall"][1:]))
    # the intervals on the cards are the JSON's
    low, high = metrics["bootstrap"]["ci"]["f1"]
    assert low <= metrics["f1"] <= high
    assert 'id="card-f1"' in html and "95 % CI" in html
    assert not math.isnan(metrics["precision_among_overlapping"])
