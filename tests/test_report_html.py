"""The shared report skeleton (core.reports.html), its figure helpers (core.reports.figures) and the
"Reproduce" formatting (core.reports.reproduce)."""

import base64
import html
import re
import shlex
from html.parser import HTMLParser

import pytest
import shapely
from iou_evaluation.core.reports import figures
from iou_evaluation.core.reports.html import (
    SHOWN_ALERTS,
    Alert,
    Definition,
    Section,
    format_number,
    render_report,
    shown_values,
)
from iou_evaluation.core.reports.reproduce import processing_run_code, qgis_process_command


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.images = [], set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "img":
            self.images.append(attrs)


def _minimal_report():
    return {
        "metrics": {"f1": 0.8571428571, "count_tp": 12345, "nothing": float("nan")},
        "inputs": {"reference": {"source": "/data/r.gpkg", "layer_name": "r", "crs": "EPSG:4326",
                                 "feature_count": 100, "selected_features_only": False}},
        "provenance": {"plugin": "9.9", "qgis": "3.22", "created_utc": "2026-01-02 03:04 UTC"},
        "reproduce": {"parameters": {"REFERENCE": "/data/r.gpkg", "IOU_THRESHOLD": 0.5,
                                     "NOTHING": None}},
    }


def test_skeleton_renders_header_alerts_sections_reproduce_and_definitions_in_order():
    uri = figures.line_chart([0, 1], {"F1": [0.2, 0.8]}, xlabel="IoU threshold (–)",
                             ylabel="F1 (–)")
    sections = [
        Section("first", "First", html="<p>one</p>"),
        Section("second", "Second", html="<p>F1 <b>{}</b></p>".format("x")),
    ]
    html = render_report(
        _minimal_report(), title="Demo", algorithm_id="ioueval:demo", sections=sections,
        summary="It <worked>.", alerts=["careful & look", Alert("fyi", "info")],
        definitions=[Definition("f1", "harmonic mean", "2PR/(P+R)", "agribound 1.0")],
    )
    collector = _Collector()
    collector.feed(html)
    ids = ["header", "compared", "alerts", "first", "second", "appendix", "inputs", "reproduce",
           "provenance", "definitions"]
    assert set(ids) <= collector.ids
    assert [html.index(f'id="{i}"') for i in ids] == sorted(html.index(f'id="{i}"') for i in ids)
    assert "It &lt;worked&gt;." in html and "careful &amp; look" in html  # escaped
    assert "2026-01-02 03:04 UTC" in html and "EPSG:4326" in html
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert uri.startswith("data:image/svg+xml;base64,")


def test_shown_numbers_carry_their_json_path():
    env_html = render_report(
        _minimal_report(), title="t", algorithm_id="ioueval:demo",
        sections=[Section("s", "S", template="test_section.html.j2")],
        templates_dir=_templates_with_section(
            "{{ shown('metrics', 'f1') }} {{ shown('metrics', 'count_tp') }} "
            "{{ shown('metrics', 'nothing') }} {{ shown('metrics', 'f1', percent=True) }}"
        ),
    )
    values = shown_values(env_html)
    assert (["metrics", "f1"], "0.8571") in values
    assert (["metrics", "count_tp"], "12,345") in values
    assert (["metrics", "nothing"], "–") in values
    assert (["metrics", "f1"], "85.7 %") in values
    assert (["inputs", "reference", "feature_count"], "100") in values


def _templates_with_section(text):
    import shutil
    import tempfile
    from pathlib import Path

    from iou_evaluation.core.reports.html import TEMPLATES_DIR

    folder = Path(tempfile.mkdtemp())
    shutil.copy(TEMPLATES_DIR / "base.html.j2", folder / "base.html.j2")
    (folder / "test_section.html.j2").write_text(text, encoding="utf-8")
    return folder


def test_a_missing_key_is_an_error_not_a_blank():
    with pytest.raises(KeyError):
        render_report(
            _minimal_report(), title="t", algorithm_id="a:b",
            sections=[Section("s", "S", template="test_section.html.j2")],
            templates_dir=_templates_with_section("{{ shown('metrics', 'absent') }}"),
        )


@pytest.mark.parametrize("value, text", [
    (None, "–"), (float("nan"), "–"), (3, "3"), (1234567, "1,234,567"), (0.5, "0.5000"),
    (12345.678, "12,345.7"), (True, "true"),
])
def test_format_number(value, text):
    assert format_number(value) == text


def test_processing_run_and_qgis_process_reproduce_the_parameters():
    parameters = {"PREDICTED": "/d/it's.gpkg|layername=p", "IOU_THRESHOLD": 0.5,
                  "MATCHING": 0, "EMPTY": "", "LAYERS": ["/a.shp", "/b.shp"], "FLAG": True}
    code = processing_run_code("ioueval:x", parameters)
    namespace = {"processing": type("P", (), {"run": staticmethod(lambda a, p: (a, p))})}
    algorithm, given = eval(code, namespace)  # the code is valid Python giving the values
    assert algorithm == "ioueval:x"
    assert given == {k: v for k, v in parameters.items() if k != "EMPTY"}
    words = shlex.split(qgis_process_command("ioueval:x", parameters).replace("\\\n", " "))
    assert words == ["qgis_process", "run", "ioueval:x", "--PREDICTED=/d/it's.gpkg|layername=p",
                     "--IOU_THRESHOLD=0.5", "--MATCHING=0", "--LAYERS=/a.shp", "--LAYERS=/b.shp",
                     "--FLAG=true"]


def test_figures_are_embedded_images_with_labelled_axes():
    uri = figures.histogram({"matched": [0.5, 0.6, 0.9], "best": [0.1, 0.5]},
                            xlabel="IoU (–)", bins=10, range_=(0, 1), vlines={"threshold": 0.5})
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert "IoU (–)" in svg and "Count" in svg
    bars = figures.bar_chart(["a", "b"], {"F1": [0.5, None]}, ylabel="F1 (–)",
                             intervals={"F1": [(0.4, 0.6), None]})
    assert bars.startswith("data:image/svg+xml;base64,")
    maps = figures.polygon_panels([{
        "title": "id 7",
        "layers": [([shapely.box(0, 0, 10, 10).difference(shapely.box(2, 2, 4, 4))],
                    {"edgecolor": "black"})],
        "extent": (0, 0, 10, 10),
    }], ncols=2)
    assert "11 m across" in base64.b64decode(maps.split(",", 1)[1]).decode()
    with pytest.raises(ValueError):
        figures.to_data_uri(figures.new_figure()[0], fmt="gif")


def test_definitions_cite_sources_by_name_not_by_unshipped_files():
    # The HTML reports once cited seeds/*.txt: development files the plugin does not ship.
    from iou_evaluation.core.reports import class_map_html, definitions as report_definitions, spatial_match as spatial_match_report

    for module in (report_definitions, class_map_html, spatial_match_report):
        for definition in module.DEFINITIONS:
            assert ".txt" not in definition.source and "seeds" not in definition.source, (
                module.__name__, definition.key, definition.source)
    sources = " ".join(d.source for d in report_definitions.DEFINITIONS)
    assert "agribound 1.0 evaluation documentation" in sources
    assert "Spatial IoU guide for LLM-generated geometries" in sources


def _histogram_uri():
    return figures.histogram({"a": [0.1, 0.5, 0.9, 0.95]}, xlabel="IoU (–)", bins=5)


def _draw_at_once(n_threads, draw):
    import threading

    barrier = threading.Barrier(n_threads)
    drawn = [None] * n_threads

    def run(k):
        barrier.wait()
        drawn[k] = draw(k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return drawn


def test_figures_drawn_on_several_threads_at_once_are_the_figures_drawn_alone():
    # Each figure is saved under matplotlib settings of its own (text kept as text, ids
    # salted): settings of the process, which one thread's figure must not undo for another.
    alone = _histogram_uri()
    svg = base64.b64decode(alone.split(",", 1)[1]).decode()
    assert "<text" in svg and "DejaVuSans-30" not in svg  # text as text, not as glyph paths
    for _ in range(3):
        drawn = _draw_at_once(6, lambda k: _histogram_uri())
        assert drawn == [alone] * 6


def test_definitions_are_a_collapsed_appendix_and_the_command_names_its_program():
    report = _minimal_report()
    report["reproduce"]["qgis_process"] = "/opt/QGIS 3/bin/qgis_process.bin"
    definitions = [Definition(f"key_{k}", f"meaning {k}", "a / b", "a paper") for k in range(40)]
    page = render_report(report, title="Demo", algorithm_id="ioueval:demo", sections=[],
                         definitions=definitions)
    start = page.index('<details class="more" id="definitions">')
    end = page.index("</details>", start)
    # every definition inside the closed <details> (no "open" attribute), and none outside
    assert all(f'id="def-key_{k}"' in page[start:end] for k in range(40))
    assert page.count('<dt id="def-') == 40
    assert "40 keys" in page[start:end]
    assert re.findall(r"<details[^>]*>", page) and \
        not [tag for tag in re.findall(r"<details[^>]*>", page) if "open" in tag]
    assert "<script" not in page
    command = re.search(r'<pre id="qgis-process">(.*?)</pre>', page, re.S)[1]
    words = shlex.split(html.unescape(command).replace("\\\n", " "))
    assert words[:3] == ["/opt/QGIS 3/bin/qgis_process.bin", "run", "ioueval:demo"]


def test_the_skeleton_folds_what_is_not_the_headline_and_counts_it_in_the_summaries():
    report = _minimal_report()
    report["inputs"]["predicted"] = {"source": "/data/p.gpkg", "layer_name": "p",
                                     "crs": "EPSG:4326", "feature_count": 1}
    alerts = [f"alert number {k}" for k in range(SHOWN_ALERTS + 3)]
    page = render_report(report, title="Demo", algorithm_id="ioueval:demo", alerts=alerts,
                         sections=[Section("first", "First", html="<p>one</p>", lead=True)],
                         definitions=[Definition("f1", "harmonic mean")])
    tags = re.findall(r"<details[^>]*>", page)
    assert len(tags) == 5 and not [tag for tag in tags if "open" in tag]
    first = page.index("<details")
    # the inputs in one line before the headline, with the number of features of each
    line = re.sub(r"<[^>]+>", "", page[page.index('id="compared"'):page.index('id="first"')])
    assert "reference r (100 features, EPSG:4326); predicted p (1 feature, EPSG:4326)" in \
        re.sub(r"\s+", " ", line)
    # the first SHOWN_ALERTS alerts open, the 3 others in "3 more alerts"
    assert all(f"alert number {k}<" in page[:first] for k in range(SHOWN_ALERTS))
    more = page[first:page.index("</details>", first)]
    assert 'id="alerts-more"' in more and "3 more alerts" in more
    assert all(f"alert number {k}<" in more for k in range(SHOWN_ALERTS, SHOWN_ALERTS + 3))
    # the appendix: inputs, reproduce (3 parameters), versions (2), definitions (1 key)
    summaries = dict(re.findall(r'<details class="more" id="([^"]+)">\s*<summary>(.*?)</summary>',
                                page, re.S))
    text = {k: re.sub(r"<[^>]+>", "", v) for k, v in summaries.items()}
    assert "(2 inputs)" in text["inputs"] and "(3 parameters)" in text["reproduce"]
    assert "(2 versions)" in text["provenance"] and "(1 key)" in text["definitions"]
    assert "/data/p.gpkg" in page[page.index('id="inputs"'):page.index('id="reproduce"')]
