"""core.evaluation.compare: layers side by side and paired bootstrap intervals of their differences."""

import numpy as np
import pytest
from shapely.geometry import box

from iou_evaluation.core.evaluation.compare import compare_predictions
from iou_evaluation.core.matching.grouping import bootstrap_weights

# 100 reference squares of 10 x 10 in a row (planar units).
REFERENCE = [box(20 * k, 0, 20 * k + 10, 10) for k in range(100)]
FIRST = REFERENCE[:50]  # finds fields 0-49: recall 0.5, precision 1
SECOND = REFERENCE[:80]  # finds fields 0-79: recall 0.8, precision 1


def test_side_by_side_values_and_differences_by_hand():
    comparison = compare_predictions(
        [FIRST, SECOND, FIRST], REFERENCE, names=["a", "b", "a"], bootstrap=200
    )
    assert comparison.names == ["a", "b", "a (2)"]
    table = comparison.side_by_side()
    assert table["recall"] == pytest.approx([0.5, 0.8, 0.5])
    assert table["precision"] == pytest.approx([1.0, 1.0, 1.0])
    assert table["f1"] == pytest.approx([2 / 3, 2 * 0.8 / 1.8, 2 / 3])
    assert table["count_tp"] == [50, 80, 50]
    diff = comparison.differences["b"]["recall"]
    assert diff["difference"] == pytest.approx(0.3)
    # Paired: in each resample the difference is the share of draws among fields 50-79.
    expected = np.concatenate(
        [w[:, 50:80].sum(axis=1) / 100 for _, w in bootstrap_weights(200, 42, np.zeros(100))]
    )
    low, high = np.percentile(expected, [2.5, 97.5])
    assert diff["ci"] == pytest.approx([low, high])
    assert diff["significant"] and low > 0.15
    # The same layer twice: no difference in any resample.
    same = comparison.differences["a (2)"]["f1"]
    assert same["difference"] == 0.0 and same["ci"] == [0.0, 0.0]
    assert not same["significant"]
    assert comparison.bootstrap["method"] == "paired percentile"


def test_a_small_difference_on_few_fields_is_not_significant():
    reference = REFERENCE[:4]
    comparison = compare_predictions([reference[:2], reference[:3]], reference, bootstrap=500)
    diff = comparison.differences["layer 2"]["recall"]
    assert diff["difference"] == pytest.approx(0.25)
    # One extra field of four: a resample without it (probability 0.75⁴ ≈ 0.32) differs by 0.
    assert diff["ci"][0] == 0.0 and not diff["significant"]


def test_without_bootstrap_the_differences_have_no_interval():
    comparison = compare_predictions([FIRST, SECOND], REFERENCE, bootstrap=0)
    diff = comparison.differences["layer 2"]["f1"]
    assert diff["difference"] == pytest.approx(2 * 0.8 / 1.8 - 2 / 3)
    assert all(np.isnan(diff["ci"]))


def test_strata_resample_within_strata_for_every_layer():
    strata = ["north"] * 50 + ["south"] * 50
    comparison = compare_predictions(
        [FIRST, SECOND], REFERENCE, strata=strata, bootstrap=100, iou_threshold=0.5
    )
    # Within strata, "north" holds all of the first layer's fields (recall 1 there) and
    # "south" fields 50-79 of the second: the first layer's recall is 0.5 in every resample.
    assert comparison.intervals["layer 1"]["recall"] == [0.5, 0.5]
    assert "within strata" in comparison.bootstrap["resampling"]
    per_stratum = comparison.evaluations[1].metrics["per_stratum"]
    assert per_stratum["south"]["recall"] == pytest.approx(0.6)


def test_programmer_errors():
    with pytest.raises(ValueError, match="at least two"):
        compare_predictions([FIRST], REFERENCE)
    with pytest.raises(ValueError, match="names"):
        compare_predictions([FIRST, SECOND], REFERENCE, names=["x"])
    with pytest.raises(ValueError, match="iou_threshold"):
        compare_predictions([FIRST, SECOND], REFERENCE, iou_threshold=2.0)


def test_release_thresholds_read_the_comparison_report():
    from iou_evaluation.core.evaluation.compare import comparison_report
    from iou_evaluation.core.reports.data import to_json_text
    from iou_evaluation.core.reports.thresholds import check_conditions
    import json

    comparison = compare_predictions([FIRST, SECOND], REFERENCE, names=["a", "b"], bootstrap=50)
    report = json.loads(to_json_text(comparison_report(comparison, {}, {"plugin": "test"})))
    results = check_conditions(
        report, "per_layer.*.recall >= 0.6; differences.b.recall.significant == 1"
    )
    assert [(r.path, r.value, r.passed) for r in results] == [
        ("per_layer.a.recall", 0.5, False),
        ("per_layer.b.recall", 0.8, True),
        ("differences.b.recall.significant", 1.0, True),
    ]


def test_renamed_layer_never_collides_with_a_given_name():
    # "a", "a", "a (2)": the second "a" becomes "a (2)", so the third cannot keep that name
    # (its intervals and differences would overwrite the second's).
    comparison = compare_predictions(
        [FIRST, SECOND, FIRST], REFERENCE, names=["a", "a", "a (2)"], bootstrap=0
    )
    assert comparison.names == ["a", "a (2)", "a (2) (2)"]
    assert len(comparison.differences) == 2
    assert comparison.differences["a (2)"]["recall"]["difference"] == pytest.approx(0.3)
    assert comparison.differences["a (2) (2)"]["recall"]["difference"] == pytest.approx(0.0)
