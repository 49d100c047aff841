"""STUDY_AREA on ioueval:evaluatepolygons: one rule for both layers."""

import json

import pytest
from qgis_layers import box_wkt, memory_layer, rows_of, run

# A inside the study area [0, 10]², B crossing its outline with its centroid outside, C far.
FIELDS = [box_wkt(1, 1, 3, 3), box_wkt(9, 0, 13, 1), box_wkt(50, 50, 52, 52)]


def evaluate(rule, tmp_path, feedback=None):
    return run(
        "ioueval:evaluatepolygons",
        {
            "PREDICTED": memory_layer(FIELDS, name="predicted"),
            "REFERENCE": memory_layer(FIELDS, name="reference"),
            "STUDY_AREA": memory_layer([box_wkt(0, 0, 10, 10)], name="area"),
            "STUDY_AREA_RULE": rule,
            "PER_FIELD": "TEMPORARY_OUTPUT",
            "REPORT_JSON": str(tmp_path / "report.json"),
        },
        feedback,
    )


@pytest.mark.parametrize("rule, tp, outside", [(0, 2, 1), (1, 1, 2), (2, 2, 1)])
def test_both_layers_are_selected_alike(ioueval_provider, tmp_path, rule, tp, outside):
    result = evaluate(rule, tmp_path)
    # The same rows leave both layers: whatever is kept matches, nothing is FP or FN.
    assert (result["COUNT_TP"], result["COUNT_FP"], result["COUNT_FN"]) == (tp, 0, 0)
    metrics = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["count_reference_outside_study_area"] == outside
    assert metrics["count_predicted_outside_study_area"] == outside
    assert metrics["study_area_rule"] == ["intersects", "centroid_within", "clip"][rule]


def test_clip_measures_the_part_inside(ioueval_provider, tmp_path):
    result = evaluate(2, tmp_path)
    areas = sorted(row["area_m2"] for row in rows_of(result["PER_FIELD"]))
    assert areas == pytest.approx([1.0, 4.0])  # B cut to [9, 10] x [0, 1]; A 2 x 2
    metrics = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["metrics"]
    assert metrics["count_reference_clipped"] == 1


def test_reading_the_study_area_does_not_move_the_progress_bar_back(ioueval_provider, tmp_path):
    from qgis.core import QgsProcessingFeedback

    feedback = QgsProcessingFeedback()
    seen = []
    feedback.progressChanged.connect(seen.append)
    evaluate(0, tmp_path, feedback)
    # it was read from 0 to 100 % after both layers (20 %), then the evaluation went on at 20
    assert seen == sorted(seen) and seen[-1] == 100, seen
