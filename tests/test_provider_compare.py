"""ioueval:comparepredictions through processing.run (values by hand)."""

import json

import pytest
from qgis.core import QgsProcessingException
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from qgis_layers import box_wkt, memory_layer, rows_of, run

# 20 reference squares of 10 x 10 m; "first" finds 10 of them, "second" 16.
REFERENCE = [box_wkt(20 * k, 0, 20 * k + 10, 10) for k in range(20)]


def test_layers_side_by_side_with_paired_differences(ioueval_provider, tmp_path):
    first = memory_layer(REFERENCE[:10], name="first")
    second = memory_layer(REFERENCE[:16], name="second")
    result = run(
        "ioueval:comparepredictions",
        {
            "PREDICTED_LAYERS": [first, second],
            "REFERENCE": memory_layer(REFERENCE, name="reference"),
            "BOOTSTRAP": 300,
            "SIZE_BINS": "0,0.02,1",  # every 100 m² (0.01 ha) field in the first class
            "OUTPUT_TABLE": "TEMPORARY_OUTPUT",
            "REPORT_JSON": str(tmp_path / "compare.json"),
            "REPORT_HTML": str(tmp_path / "compare.html"),
        },
    )
    rows = rows_of(result["OUTPUT_TABLE"])
    assert [r["layer"] for r in rows] == ["first", "second"]
    assert [r["recall"] for r in rows] == pytest.approx([0.5, 0.8])
    assert [r["count_tp"] for r in rows] == [10, 16]
    assert rows[0]["recall_diff"] is None or str(rows[0]["recall_diff"]) == "NULL"
    assert rows[1]["recall_diff"] == pytest.approx(0.3)
    # Paired: a resample's difference is the share of draws among the 6 extra fields, so
    # it is > 0 unless none of them is drawn (probability (14/20)^20 ≈ 8e-4).
    assert 0 < rows[1]["recall_diff_low"] <= 0.3 <= rows[1]["recall_diff_high"]
    assert rows[1]["recall_significant"]
    assert (result["BEST_LAYER"], result["BEST_F1"]) == (2, pytest.approx(2 * 0.8 / 1.8))
    report = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))
    assert report["metrics"]["per_layer"]["second"]["count_tp"] == 16
    assert report["metrics"]["per_layer"]["second"]["per_size_class"]["0-0.02"]["n"] == 20
    assert report["metrics"]["differences"]["second"]["recall"]["significant"] is True
    assert report["bootstrap"]["method"] == "paired percentile"
    assert report["inputs"]["predicted 2: second"]["feature_count"] == 16
    assert report["reproduce"]["algorithm"] == "ioueval:comparepredictions"
    html = (tmp_path / "compare.html").read_text(encoding="utf-8")
    assert "Differences against first" in html and "second" in html
    # Every number on the page is the JSON report's (the shared skeleton's check).
    from iou_evaluation.core.reports.html import format_number, lookup, shown_values

    shown = shown_values(html)
    assert len(shown) > 40
    for path, text in shown:
        value = lookup(report, path)
        assert text in (format_number(value), format_number(value, 2)), (path, text)
    for section in ("side-by-side", "differences"):
        assert f'id="{section}"' in html
    assert html.count("data:image/svg+xml;base64,") == 2


def test_one_layer_is_not_a_comparison(ioueval_provider):
    with pytest.raises(QgsProcessingException, match="at least two"):
        run(
            "ioueval:comparepredictions",
            {"PREDICTED_LAYERS": [memory_layer(REFERENCE)], "REFERENCE": memory_layer(REFERENCE)},
        )


def test_layers_of_one_geopackage_are_named_by_their_layer_name(ioueval_provider, tmp_path):
    # Opened from a path (as qgis_process does), a layer is named after the file
    # (csb_fields): the report's "What was compared" showed that for every layer of the
    # sample instead of the layer names written in the paths.
    run(
        "ioueval:comparepredictions",
        {
            "PREDICTED_LAYERS": [SAMPLE_PREDICTED, SAMPLE_REFERENCE],
            "REFERENCE": SAMPLE_REFERENCE,
            "BOOTSTRAP": 10,
            "REPORT_JSON": str(tmp_path / "compare.json"),
        },
    )
    inputs = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))["inputs"]
    assert inputs["predicted 1: csb_2017_2024"]["layer_name"] == "csb_2017_2024"
    assert inputs["predicted 2: csb_2016_2023"]["layer_name"] == "csb_2016_2023"
    assert inputs["reference"]["layer_name"] == "csb_2016_2023"
