"""Strata, size classes, bootstrap, optimal matching, groups, classes and ignore regions,
on layers small enough to work out by hand."""

import math

import numpy as np
import pytest
import shapely
from iou_evaluation.core import evaluate
from iou_evaluation.core.matching.grouping import auto_size_edges, parse_size_bins

box = shapely.box


def test_optimal_matching_finds_the_match_greedy_misses():
    # IoU(r1,pA)=8/12, IoU(r1,pB)=6/14, IoU(r2,pA)=7/13, IoU(r2,pB)=1/19: greedy takes
    # (r1,pA) first and leaves r2 without a partner; the optimal assignment matches both.
    references = [box(0, 0, 10, 10), box(5, 0, 15, 10)]
    predictions = [box(2, 0, 12, 10), box(-4, 0, 6, 10)]
    greedy = evaluate(predictions, references, iou_threshold=0.4)
    optimal = evaluate(predictions, references, iou_threshold=0.4, matching="optimal")
    assert greedy.metrics["count_tp"] == 1
    assert optimal.metrics["count_tp"] == 2
    assert optimal.metrics["iou_mean"] == pytest.approx((6 / 14 + 7 / 13) / 2)


def test_optimal_prefers_the_larger_total_iou_among_maximum_matchings():
    # overlapping references r0=[0,10], r1=[2,12]; predictions p0=[1,11], p1=[0,10]:
    # {r0-p1, r1-p0} totals 1 + 9/11, {r0-p0, r1-p1} totals 9/11 + 8/12
    references = [box(0, 0, 10, 10), box(2, 0, 12, 10)]
    predictions = [box(1, 0, 11, 10), box(0, 0, 10, 10)]
    result = evaluate(predictions, references, matching="optimal")
    assert list(result.per_reference["pred_index"]) == [1, 0]
    assert result.metrics["iou_mean"] == pytest.approx((1 + 9 / 11) / 2)


def test_iou_distribution_median_and_10th_percentile():
    # 10 m squares offset by d = 0, 1, 2 give matched IoUs (10 - d) / (10 + d)
    references = [box(0, 0, 10, 10), box(100, 0, 110, 10), box(200, 0, 210, 10)]
    predictions = [box(0, 0, 10, 10), box(101, 0, 111, 10), box(202, 0, 212, 10)]
    m = evaluate(predictions, references).metrics
    ious = [1.0, 9 / 11, 8 / 12]
    assert m["iou_median"] == pytest.approx(9 / 11)
    assert m["iou_p10"] == pytest.approx(np.percentile(ious, 10))
    assert m["best_iou_median"] == pytest.approx(9 / 11)


def layer_with_strata():
    # stratum a: r0 matched exactly, r1 missed; stratum b: r2 matched at IoU 80/120;
    # r3 has no stratum. One spurious prediction overlaps nothing.
    references = [box(0, 0, 10, 10), box(20, 0, 30, 10), box(40, 0, 50, 10), box(60, 0, 70, 10)]
    predictions = [box(0, 0, 10, 10), box(42, 0, 52, 10), box(500, 500, 510, 510)]
    return references, predictions, ["a", "a", "b", None]


def test_metrics_per_stratum_by_hand():
    references, predictions, strata = layer_with_strata()
    m = evaluate(predictions, references, strata=strata, strata_name="zone").metrics
    assert m["strata_column"] == "zone"
    assert m["count_reference_no_stratum"] == 1
    a, b = m["per_stratum"]["a"], m["per_stratum"]["b"]
    assert (a["n"], a["count_tp"], a["count_fp"], a["count_fn"]) == (2, 1, 0, 1)
    assert a["recall"] == 0.5 and a["precision"] == 1.0
    assert (b["n"], b["count_tp"], b["count_fn"]) == (1, 1, 0)
    assert b["iou_mean"] == pytest.approx(80 / 120)
    # overall: the spurious prediction (no home field) counts only here
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (2, 1, 2)


def test_size_classes_are_half_open_except_the_last():
    # areas 1 ha, 2 ha and 4 ha (100x100, 100x200, 200x200 m) with edges 0, 2, 4 ha:
    # 1 ha in [0, 2), 2 ha in [2, 4], 4 ha in [2, 4] (the last class is closed)
    references = [box(0, 0, 100, 100), box(0, 1000, 100, 1200), box(0, 2000, 200, 2200)]
    result = evaluate([], references, size_bins=[0, 2, 4])
    classes = result.metrics["per_size_class"]
    assert classes["0-2"]["n"] == 1 and classes["2-4"]["n"] == 2
    assert list(result.per_reference["size_class"]) == ["0-2", "2-4", "2-4"]


def test_auto_size_edges_follow_the_1_2_5_series():
    assert list(auto_size_edges(np.array([0.3, 7.0]))) == [0.2, 0.5, 1, 2, 5, 10]


@pytest.mark.parametrize("text", ["1,0.5", "a,b", "-1,2", "0", "0,nan", "0,inf,5"])
def test_size_bin_text_that_is_not_increasing_edges_is_rejected(text):
    with pytest.raises(ValueError, match="SIZE_BINS"):
        parse_size_bins(text)


def test_size_bin_text_forms():
    assert parse_size_bins("") is None
    assert parse_size_bins("AUTO") == "auto"
    assert parse_size_bins("0, 0.5,1,inf") == [0, 0.5, 1, math.inf]


def test_bootstrap_interval_of_a_perfect_layer_is_a_point():
    references = [box(10 * k, 0, 10 * k + 5, 5) for k in range(20)]
    m = evaluate(references, references, bootstrap=50).metrics
    assert m["bootstrap"]["ci"]["f1"] == [1.0, 1.0]
    assert m["bootstrap"]["n_resamples"] == 50


def test_bootstrap_resamples_reference_fields_with_the_seeded_generator():
    # 4 fields, 2 matched: recall of a resample is (#draws of matched fields) / 4. Draw the
    # resamples independently from the documented scheme and compare the percentile interval.
    references = [box(10 * k, 0, 10 * k + 5, 5) for k in range(4)]
    predictions = references[:2]
    m = evaluate(predictions, references, bootstrap=200, bootstrap_seed=7).metrics
    recalls = []
    for child in np.random.SeedSequence(7).spawn(200):
        draw = np.random.default_rng(child).integers(0, 4, size=4)
        recalls.append(np.isin(draw, [0, 1]).sum() / 4)
    assert m["bootstrap"]["ci"]["recall"] == pytest.approx(np.percentile(recalls, [2.5, 97.5]))


def test_groups_restrict_matching_to_the_same_image():
    # the same box in two images: only same-image pairs match
    references = [box(0, 0, 10, 10), box(0, 0, 10, 10)]
    predictions = [box(0, 0, 10, 10)]
    m = evaluate(
        predictions, references, reference_groups=["img1", "img2"], predicted_groups=["img2"]
    ).metrics
    assert (m["count_tp"], m["count_fn"]) == (1, 1)
    assert m["per_group"]["img1"]["count_fn"] == 1
    assert m["per_group"]["img2"]["count_tp"] == 1


def test_numeric_and_text_group_ids_are_the_same_group():
    m = evaluate(
        [box(0, 0, 1, 1)], [box(0, 0, 1, 1)], reference_groups=[12], predicted_groups=["12"]
    ).metrics
    assert m["count_tp"] == 1


def test_classes_match_only_their_own_class_without_taxonomy():
    references = [box(0, 0, 10, 10)]
    predictions = [box(0, 0, 10, 10)]
    m = evaluate(
        predictions, references, reference_classes=["building"], predicted_classes=["tree"]
    ).metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (0, 1, 1)


def test_a_child_class_answers_for_its_parent_but_not_the_reverse():
    references = [box(0, 0, 10, 10), box(20, 0, 30, 10)]
    predictions = [box(0, 0, 10, 10), box(20, 0, 30, 10)]
    taxonomy = {"House": "Building", "building": ["structure"]}
    m = evaluate(
        predictions,
        references,
        reference_classes=["building", "house"],
        predicted_classes=["HOUSE", "Structure"],
        taxonomy=taxonomy,
    ).metrics
    # house→building matches; structure is an ancestor of house, not a child: no match
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (1, 1, 1)
    assert m["per_class"]["building"]["count_tp"] == 1
    assert m["per_class"]["house"]["count_fn"] == 1
    assert m["per_class"]["structure"]["count_fp"] == 1


def test_predictions_in_an_ignore_region_are_neither_tp_nor_fp():
    # r0 is a normal field matched exactly; r1 is a crowd region: two small predictions inside
    # it have |p ∩ r| / |p| = 1 and are ignored; one prediction outside is a FP.
    references = [box(0, 0, 10, 10), box(100, 0, 200, 100)]
    predictions = [box(0, 0, 10, 10), box(110, 10, 120, 20), box(150, 50, 160, 60),
                   box(500, 0, 510, 10)]
    result = evaluate(predictions, references, reference_ignore=[0, "true"])
    m = result.metrics
    assert (m["count_tp"], m["count_fp"], m["count_fn"]) == (1, 1, 0)
    assert m["count_reference"] == 1 and m["count_ignore_regions"] == 1
    assert m["count_predicted_ignored"] == 2
    assert m["precision"] == 0.5
    assert list(result.per_predicted["ignored"]) == [False, True, True, False]


def test_per_row_arrays_of_the_wrong_length_are_rejected():
    with pytest.raises(ValueError, match="strata"):
        evaluate([box(0, 0, 1, 1)], [box(0, 0, 1, 1)], strata=["a", "b"])
