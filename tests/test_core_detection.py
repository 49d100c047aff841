"""Galtea's spatial match per reference and GroundSet's detection scores in evaluate(), on
layers small enough to work out by hand."""

import pytest
import shapely
from iou_evaluation.core import evaluate

box = shapely.box


def test_spatial_match_lets_one_prediction_serve_two_references():
    # r1 = r2 = [0,10]²: p = [0,10]² has IoU 1 with both, but one-to-one matches only one.
    references = [box(0, 0, 10, 10), box(0, 0, 10, 10), box(100, 0, 110, 10)]
    predictions = [box(0, 0, 10, 10), box(103, 0, 113, 10)]  # IoU 7/13 with r3
    result = evaluate(predictions, references, equal_area_crs=None)
    assert list(result.per_reference["spatial_match"]) == [True, True, True]
    assert result.metrics["spatial_match_rate"] == 1.0
    assert result.metrics["count_tp"] == 2  # one-to-one: r2 is a FN
    assert result.metrics["groundset_count_tp"] == 2
    assert result.metrics["groundset_count_fn"] == 1
    assert result.metrics["groundset_f1"] == pytest.approx(2 * 1.0 * (2 / 3) / (1 + 2 / 3))


def test_groundset_miou_counts_a_missed_reference_at_its_best_iou_and_0_without_overlap():
    # r1 exact (IoU 1), r2 shifted half (IoU 5/15 = 1/3: a false negative at threshold 0.5,
    # yet it counts 1/3, not 0), r3 nothing overlaps (counts 0): Σ best IoU / 3 references
    references = [box(0, 0, 10, 10), box(100, 0, 110, 10), box(200, 0, 210, 10)]
    predictions = [box(0, 0, 10, 10), box(105, 0, 115, 10)]
    result = evaluate(predictions, references, equal_area_crs=None)
    assert result.metrics["groundset_count_fn"] == 2
    assert result.metrics["groundset_miou"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert list(result.per_reference["spatial_match"]) == [True, False, False]
    # TP 1; the shifted prediction is a FP (IoU < 0.5); FN 2
    assert (result.metrics["groundset_count_tp"], result.metrics["groundset_count_fp"],
            result.metrics["groundset_count_fn"]) == (1, 1, 2)
    assert result.metrics["groundset_precision"] == 0.5
    assert result.metrics["groundset_recall"] == pytest.approx(1 / 3)


def test_groundset_uses_greedy_one_to_one_whatever_the_matching():
    references = [box(0, 0, 10, 10), box(0, 0, 10, 10)]
    predictions = [box(0, 0, 10, 10)]
    result = evaluate(predictions, references, matching="many_to_one", equal_area_crs=None)
    assert result.metrics["count_tp"] == 2  # many-to-one: both references take p
    assert result.metrics["groundset_count_tp"] == 1  # duplicate: the second is unmatched
    assert result.metrics["groundset_count_fn"] == 1


def test_true_negatives_are_groups_with_neither_references_nor_predictions():
    # image "a": a reference and its prediction; image "b": only null rows in both layers
    # (a "none" answer and a "nothing there" truth); image "c": a prediction, no reference
    # (a FP, not a TN); image "d": a reference only (FN); a row without image id (not a group)
    references = [box(0, 0, 10, 10), None, box(50, 50, 60, 60), None]
    reference_groups = ["a", "b", "d", None]
    predictions = [box(0, 0, 10, 10), None, box(20, 20, 30, 30)]
    predicted_groups = ["a", "b", "c"]
    result = evaluate(predictions, references, equal_area_crs=None,
                      predicted_groups=predicted_groups, reference_groups=reference_groups)
    assert result.metrics["count_groups"] == 4
    assert result.metrics["count_tn"] == 1
    assert result.metrics["groundset_count_tp"] == 1
    assert result.metrics["groundset_count_fp"] == 1
    assert result.metrics["groundset_count_fn"] == 1


def test_taxonomy_lets_a_child_class_answer_for_its_parent():
    references = [box(0, 0, 10, 10)]
    predictions = [box(0, 0, 10, 10)]
    result = evaluate(predictions, references, equal_area_crs=None,
                      predicted_classes=["church"], reference_classes=["building"],
                      taxonomy={"church": "building"})
    assert result.metrics["groundset_count_tp"] == 1
    assert result.metrics["spatial_match_rate"] == 1.0
    other = evaluate(predictions, references, equal_area_crs=None,
                     predicted_classes=["tree"], reference_classes=["building"],
                     taxonomy={"church": "building"})
    assert other.metrics["groundset_count_tp"] == 0
    assert other.metrics["groundset_miou"] == 0.0
    assert other.metrics["spatial_match_rate"] == 0.0
