"""The HTML report of ioueval:evaluatepolygons, rendered through processing.run: it parses,
every section and figure is there, every number shown is the JSON report's, every key
of the JSON report is defined, and the page reads in two screens: the headline, alerts and
the first two figures open, every other table, figure and the definitions in closed
<details> sections whose summaries count what they hold."""

import json
import math
import re
from html.parser import HTMLParser

import pytest
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from iou_evaluation.core.reports.definitions import DEFINITIONS, definition_keys
from iou_evaluation.core.reports.evaluate import HEADLINE
from iou_evaluation.core.reports.html import lookup, shown_values
from markupsafe import escape
from test_provider import run

_VOID = {"meta", "img", "br", "hr", "link", "input", "col", "source", "wbr"}
_OPTIONAL_END = {"li", "dt", "dd", "tr", "td", "th", "p"}

SECTIONS = ["header", "compared", "headline", "alerts", "iou", "failures", "boundaries",
            "appendix", "inputs", "reproduce", "provenance", "definitions"]
FIGURES = ["fig-iou-histogram", "fig-threshold-sweep", "fig-worst-fields",
           "fig-boundary-distances"]
FULL_FIGURES = FIGURES + ["fig-per_size_class", "fig-per_stratum", "fig-boundary-curve",
                          "fig-precision-recall"]
#: The run with every optional section: strata, size classes, classes, groups, bootstrap,
#: boundary tolerance and scores (average precision).
EVERYTHING = {
    "STRATA_FIELD": "CNTY", "SIZE_BINS": "auto", "BOOTSTRAP": 20, "BOUNDARY_TOLERANCE": 5.0,
    "SCORE_FIELD": "CSBACRES", "PREDICTED_CLASS_FIELD": "CDL2023",
    "REFERENCE_CLASS_FIELD": "CDL2023", "PREDICTED_GROUP_FIELD": "CNTY",
    "REFERENCE_GROUP_FIELD": "CNTY",
}
#: Shown open, on the first screen or just below it (the rest is in closed <details>).
OPEN_IDS = ["summary", "compared", "alerts", "fig-iou-histogram", "fig-threshold-sweep",
            "table-outcomes", "table-ap"] + [f"card-{key}" for key, *_ in HEADLINE]
#: Every other table and figure of the page, each in a closed <details>.
FOLDED_TABLES = ["table-threshold-sweep", "table-segmentation", "table-per_size_class",
                 "table-per_stratum", "table-per_class", "table-per_group", "table-worst",
                 "table-distances", "table-tolerance", "table-boundary-curve",
                 "table-ap-per-class"]
FOLDED_FIGURES = ["fig-per_size_class", "fig-per_stratum", "fig-worst-fields",
                  "fig-boundary-distances", "fig-boundary-curve", "fig-precision-recall"]


class _Folds(HTMLParser):
    """For each id: the id of the <details> it is in (None: outside any); each <details>'s
    attributes and summary text; and the ids of the tables and figures of the page."""

    def __init__(self):
        super().__init__()
        self.inside, self.details, self.summaries = {}, {}, {}
        self.tables, self.figures = [], []
        self._open, self._summary = [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.inside[attrs["id"]] = self._open[-1] if self._open else None
            if tag == "table":
                self.tables.append(attrs["id"])
            if tag == "figure":
                self.figures.append(attrs["id"])
        if tag == "details":
            self._open.append(attrs.get("id"))
            self.details[attrs.get("id")] = attrs
        if tag == "summary":
            self._summary = self._open[-1]
            self.summaries[self._summary] = ""

    def handle_endtag(self, tag):
        if tag == "details":
            self._open.pop()
        if tag == "summary":
            self._summary = None

    def handle_data(self, data):
        if self._summary is not None:
            self.summaries[self._summary] += data


def _rows(n, word="row"):
    return f"({n} {word}{'' if n == 1 else 's'}"


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


def test_the_page_reads_in_two_screens_and_keeps_every_table_figure_and_definition(
        ioueval_provider):
    report, html = _render(EVERYTHING)
    _check_page(report, html, FULL_FIGURES)
    metrics = report["metrics"]
    folds = _Folds()
    folds.feed(html)
    # every collapsible is closed, has an id and a summary saying what it holds
    assert len(folds.details) >= 15
    assert None not in folds.details
    assert [d for d, attrs in folds.details.items() if "open" in attrs] == []
    assert all(len(text.split()) >= 2 for text in folds.summaries.values()), folds.summaries
    assert set(folds.summaries) == set(folds.details)
    # open: the headline, the alerts and the first figures; everything else folded
    assert [i for i in OPEN_IDS if folds.inside.get(i, "absent") is not None] == []
    assert [i for i in FOLDED_TABLES + FOLDED_FIGURES if folds.inside.get(i) is None] == []
    assert sorted(folds.tables) == sorted(FOLDED_TABLES + ["table-outcomes", "table-ap"])
    assert sorted(folds.figures) == sorted(FOLDED_FIGURES + OPEN_IDS[3:5])
    # the headline numbers and every alert come before the first <details>
    first = html.index("<details")
    before = [path for path, _ in shown_values(html[:first])]
    for key, *_ in HEADLINE:
        assert ["metrics", key] in before, key
    for key in ("precision", "recall", "f1", "iou_mean"):
        assert ["metrics", "bootstrap", "ci", key, 0] in before, key
    assert report["warnings"]
    for warning in report["warnings"]:
        assert escape(warning) in html[:first], warning
    # every definition, in the closed appendix
    assert [d.key for d in DEFINITIONS if folds.inside.get(f"def-{d.key}") != "definitions"] == []
    assert html.count('<dt id="def-') == len(DEFINITIONS)
    assert _rows(len(DEFINITIONS), "key") in folds.summaries["definitions"]
    # the summaries count what they hold, as the JSON has it
    for kind in ("per_size_class", "per_stratum", "per_class", "per_group"):
        assert _rows(len(metrics[kind])) in folds.summaries[f"by-{kind}"], kind
    assert _rows(len(metrics["threshold_sweep"]["iou_threshold"])) in \
        folds.summaries["threshold-sweep-numbers"]
    n_worst = len(report["worst_reference_fields"])
    assert f"The {n_worst} worst reference fields (maps" in folds.summaries["worst-fields"]
    assert _rows(len(metrics["average_precision"]["per_class"])) in \
        folds.summaries["ap-per-class"]
    assert _rows(len(report["reproduce"]["parameters"]), "parameter") in \
        folds.summaries["reproduce"]
    # printed, every <details> is printed open
    print_css = re.search(r"@media print \{(.*?)\n  \}", html, re.S).group(1)
    assert re.search(r"details::details-content \{[^}]*content-visibility: visible", print_css)
