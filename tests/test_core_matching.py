"""Matching and the summary metrics on layers small enough to score by hand."""

import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core import evaluate

box = shapely.box
SUMMARY_KEYS = {
    "precision", "recall", "f1", "iou_mean", "over_segmentation", "under_segmentation",
    "area_error_mean_m2", "count_predicted", "count_reference", "count_tp", "count_fp",
    "count_fn", "iou_threshold",
}


def test_summary_has_every_foundation_key():
    result = evaluate([box(0, 0, 1, 1)], [box(0, 0, 1, 1)])
    assert SUMMARY_KEYS <= set(result.metrics)


def test_two_identical_predictions_on_one_reference_give_one_tp_one_fp():
    result = evaluate([box(0, 0, 10, 10), box(0, 0, 10, 10)], [box(0, 0, 10, 10)])
    m = result.metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (1, 1, 0)
    assert m["precision"] == pytest.approx(0.5)
    assert m["recall"] == pytest.approx(1.0)
    assert m["f1"] == pytest.approx(2 / 3)
    # the tie goes to the first prediction
    assert list(result.per_predicted["matched"]) == [True, False]


def test_greedy_matching_takes_the_best_pair_first_and_keeps_both_matches():
    # IoU(r1,p1)=1, IoU(r1,p2)=90/110, IoU(r2,p1)=70/130, IoU(r2,p2)=80/120
    references = [box(0, 0, 10, 10), box(3, 0, 13, 10)]
    predictions = [box(0, 0, 10, 10), box(1, 0, 11, 10)]
    result = evaluate(predictions, references)
    m = result.metrics
    assert m["count_tp"] == 2
    assert m["f1"] == pytest.approx(1.0)
    assert m["iou_mean"] == pytest.approx((1 + 80 / 120) / 2)
    assert list(result.per_reference["pred_index"]) == [0, 1]


def test_one_to_one_ties_go_to_the_lower_reference_position():
    # one prediction centred between two equal references: IoU 50/150 with each
    references = [box(0, 0, 10, 10), box(10, 0, 20, 10)]
    result = evaluate([box(5, 0, 15, 10)], references, iou_threshold=0.3)
    assert list(result.per_reference["matched"]) == [True, False]


def test_many_to_one_lets_one_prediction_match_several_references():
    references = [box(0, 0, 10, 10), box(10, 0, 20, 10)]
    result = evaluate([box(5, 0, 15, 10)], references, iou_threshold=0.3, matching="many_to_one")
    m = result.metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (2, 0, 0)
    assert m["precision"] == 1.0


def test_metrics_of_a_mixed_layer_by_hand():
    references = [box(0, 0, 10, 10), box(20, 0, 30, 10), box(40, 0, 50, 10)]
    predictions = [
        box(0, 0, 10, 10),  # exact: IoU 1
        box(22, 0, 32, 10),  # IoU 80/120
        box(100, 100, 110, 110),  # spurious, overlaps nothing
    ]
    m = evaluate(predictions, references).metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (2, 1, 1)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["iou_mean"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["area_error_mean_m2"] == pytest.approx(0.0)
    assert m["count_fp_unassigned"] == 1
    assert m["over_segmentation"] == 0.0 and m["under_segmentation"] == 0.0


def test_segmentation_errors_of_splits_and_merges():
    # R1 split into thirds; R2 and R3 covered by one box (the metrics issue's example)
    references = [box(0, 0, 3, 1), box(0, 2, 1.2, 3), box(1.2, 2, 2, 3)]
    predictions = [box(0, 0, 1, 1), box(1, 0, 2, 1), box(2, 0, 3, 1), box(0, 2, 2, 3)]
    result = evaluate(predictions, references)
    os_, us_ = result.per_reference["oversegmentation"], result.per_reference["undersegmentation"]
    assert os_ == pytest.approx([2 / 3, 0.0, 0.0])
    assert us_ == pytest.approx([0.0, 0.4, 0.6])
    assert result.metrics["oversegmentation_mean"] == pytest.approx(2 / 9)
    assert result.metrics["undersegmentation_mean"] == pytest.approx(1 / 3)


def test_null_point_and_line_rows_are_dropped_and_counted():
    references = [box(0, 0, 1, 1), None, shapely.Point(0, 0), shapely.LineString([(0, 0), (1, 1)])]
    predictions = [box(0, 0, 1, 1), shapely.Polygon(), box(5, 5, 5, 6)]  # empty, zero area
    m = evaluate(predictions, references).metrics
    assert (m["count_reference"], m["count_reference_dropped"]) == (1, 3)
    assert (m["count_predicted"], m["count_predicted_dropped"]) == (1, 2)
    assert m["count_tp"] == 1 and m["f1"] == 1.0
    reasons = m["dropped_by_reason"]
    assert (reasons["reference"]["null"], reasons["reference"]["not_polygonal"]) == (1, 2)
    assert (reasons["predicted"]["empty"], reasons["predicted"]["zero_area"]) == (1, 1)


def test_both_layers_empty_give_rates_of_one():
    m = evaluate([], [None]).metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (0, 0, 0)
    assert m["precision"] == m["recall"] == m["f1"] == m["iou_mean"] == 1.0


def test_one_layer_empty_gives_rates_of_zero():
    m = evaluate([], [box(0, 0, 1, 1)]).metrics
    assert (m["count_tp"], m["count_fn"]) == (0, 1)
    assert m["precision"] == m["recall"] == m["f1"] == m["iou_mean"] == 0.0
    assert m["area_error_mean_m2"] == 0.0
    assert math.isnan(m["area_error_signed_mean_m2"])


def test_layer_with_crs_against_one_without_is_an_error_naming_both():
    with pytest.raises(ValueError, match="predicted layer has no CRS but the reference"):
        evaluate([box(0, 0, 1, 1)], [box(0, 0, 1, 1)], reference_crs="EPSG:32632")


@pytest.mark.parametrize("threshold", [0, -0.1, 1.5, float("nan"), True, "0.5"])
def test_invalid_threshold_raises(threshold):
    with pytest.raises(ValueError, match="iou_threshold"):
        evaluate([box(0, 0, 1, 1)], [box(0, 0, 1, 1)], iou_threshold=threshold)


def test_inputs_are_not_modified():
    bow_tie = shapely.Polygon([(0, 0), (1, 1), (0, 1), (1, 0), (0, 0)])
    predictions = [bow_tie, None]
    evaluate(predictions, [box(0, 0, 1, 1)])
    assert predictions[0] is bow_tie and not bow_tie.is_valid and predictions[1] is None


def test_layers_whose_rows_are_all_dropped_score_by_convention_but_warn():
    # every row unusable (a point, a line): both layers are empty after dropping, so the
    # seed's rates of 1.0 apply, and the report says why they mean nothing
    result = evaluate([shapely.Point(0, 0)], [shapely.LineString([(0, 0), (1, 1)])])
    assert result.metrics["f1"] == 1.0
    assert "boundary_f1" not in result.metrics  # tolerance metrics only when asked for
    assert any("could be evaluated" in w for w in result.warnings)
    assert any("points or lines 1" in w for w in result.warnings)


def test_planar_coordinates_that_look_like_degrees_are_flagged():
    field = [box(-103.45, 35.81, -103.44, 35.82)]
    assert any("longitude/latitude" in w for w in evaluate(field, field).warnings)
    pixels = [box(100, 200, 400, 480)]
    assert not any("longitude/latitude" in w for w in evaluate(pixels, pixels).warnings)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(
    [0.0, -0.0, 0.25, 0.5, 0.5, 1.0, float("inf"), float("nan")]), st.integers(0, 9)),
    max_size=30))
def test_argmax_per_group_takes_the_largest_value_then_the_smallest_other(rows):
    from iou_evaluation.core.matching.rules import argmax_per_group

    group = np.array([r[0] for r in rows], dtype=np.int64)
    value = np.array([r[1] for r in rows], dtype=float)
    other = np.array([r[2] for r in rows], dtype=np.int64)
    expected = []
    for g in range(7):
        members = [(v, o) for gg, v, o in rows if gg == g]
        numbers = [(v, o) for v, o in members if not math.isnan(v)]
        if not members:
            expected.append(-1)
        elif numbers:  # NaN loses to any number
            top = max(v for v, _ in numbers)
            expected.append(min(o for v, o in numbers if v == top))
        else:
            expected.append(min(o for _, o in members))
    assert argmax_per_group(group, value, other, 7).tolist() == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=40),
       st.integers(1, 7))
def test_greedy_acceptance_in_blocks_is_the_sequential_rule(pairs, block):
    """Pairs taken a block at a time (``rules._GREEDY_BLOCK``) are accepted as by the rule
    applied pair by pair: accept a pair when its reference and prediction are both free."""
    from iou_evaluation.core.matching import rules

    ref = np.array([r for r, _ in pairs], dtype=np.int64)
    pred = np.array([p for _, p in pairs], dtype=np.int64)
    used_ref, used_pred, expected = set(), set(), []
    for k, (r, p) in enumerate(pairs):
        if r not in used_ref and p not in used_pred:
            used_ref.add(r)
            used_pred.add(p)
            expected.append(k)
    original = rules._GREEDY_BLOCK
    try:
        rules._GREEDY_BLOCK = block
        accepted = rules.greedy_accepted(ref, pred, 6, 6)
    finally:
        rules._GREEDY_BLOCK = original
    assert accepted.dtype == np.int64 and accepted.tolist() == expected
