"""Spatial match of model answers against expected geometries: hand-worked values."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iou_evaluation.core.text.spatial_match import spatial_match


def one(answer, expected, **options):
    result = spatial_match([answer], [expected], **options)
    return {name: values[0] for name, values in result.rows.items()}, result.metrics


def test_galtea_examples_best_of_several_boxes():
    row, _ = one("[[10, 10, 50, 50], [100, 100, 120, 120]]", "[10, 10, 50, 50]")
    assert row["best_iou"] == 1.0 and row["passed"]
    row, _ = one('{"bboxes": [[10, 10, 50, 50]]}', '{"bbox": [30, 10, 70, 50]}')
    # overlap 20 × 40 = 800; union 1600 + 1600 - 800 = 2400
    assert row["best_iou"] == pytest.approx(1 / 3)
    assert not row["passed"]


def test_iou_exactly_at_the_threshold_passes():
    row, _ = one("[0, 0, 10, 10]", "[0, 0, 10, 20]")
    assert row["best_iou"] == 0.5 and row["passed"]


def test_dice_giou_and_centre_hit_of_the_best_pair():
    row, _ = one("[5, 5, 15, 15]", "[0, 0, 10, 10]")
    # I = 25, U = 175: IoU 1/7, Dice 2·25/200 = 0.25; C = [0, 15]² = 225: GIoU 1/7 - 50/225
    assert row["best_iou"] == pytest.approx(1 / 7)
    assert row["dice"] == pytest.approx(0.25)
    assert row["giou"] == pytest.approx(1 / 7 - 50 / 225)
    assert row["centre_hit"] is True  # the centre (5, 5) is the answer's corner: covered
    row, _ = one("[6, 6, 15, 15]", "[0, 0, 10, 10]")
    assert row["centre_hit"] is False


def test_a_row_without_answer_geometry_scores_zero_and_fails_with_its_reason():
    row, metrics = one('{"bboxes": [[0, 0, 1', "[0, 0, 10, 10]")
    assert row["best_iou"] == 0.0 and row["dice"] == 0.0 and row["giou"] == -1.0
    assert not row["passed"]
    assert row["answer_status"] == "unparseable"
    assert "unreadable" in row["reason"]
    assert metrics["parse_failure_rate"] == 1.0


def test_empty_answer_against_empty_expected_is_a_correct_rejection():
    row, metrics = one("No objects found.", "[]")
    assert row["passed"] and row["best_iou"] == 1.0
    assert metrics["count_true_negative"] == 1
    assert metrics["count_empty_answers"] == 1 and metrics["empty_answer_rate"] == 1.0
    row, _ = one("[0, 0, 5, 5]", "[]")
    assert not row["passed"] and "none is expected" in row["reason"]


def test_unreadable_expected_is_not_scored():
    _, metrics = one("[0, 0, 5, 5]", "garbage")
    assert metrics["count_scored"] == 0
    assert metrics["count_expected_unreadable"] == 1
    assert math.isnan(metrics["pass_rate"])


def test_point_answers_hit_and_distance():
    row, metrics = one('{"point_2d": [3, 4]}', "[0, 0, 10, 10]")
    assert row["point_hit"] is True
    assert row["point_distance"] == pytest.approx(math.hypot(2, 1))  # to the centre (5, 5)
    assert row["best_iou"] == 0.0 and not row["passed"]
    assert metrics["point_hit_rate"] == 1.0


def test_expected_point_passes_when_an_answered_box_contains_it():
    row, _ = one("[0, 0, 10, 10]", '{"point_2d": [2, 3]}')
    assert row["passed"] and row["point_hit"]
    assert row["point_distance"] == pytest.approx(math.hypot(3, 2))  # from the centre (5, 5)
    row, _ = one("[10, 10, 20, 20]", '{"point_2d": [2, 3]}')
    assert not row["passed"] and row["point_hit"] is False


def test_out_of_bounds_answer_is_a_hallucination():
    row, metrics = one("[600, 10, 700, 50]", "[10, 10, 50, 50]", image_widths=[640],
                       image_heights=[480], coordinate_format="pixel_xyxy")
    assert row["n_out_of_bounds"] == 1
    assert metrics["hallucination_rate"] == 1.0


def test_pixels_against_fractions_without_image_size_fail_with_a_reason():
    row, _ = one("[0.1, 0.1, 0.5, 0.5]", "[10, 10, 50, 50]")
    assert not row["passed"] and "image width and height" in row["reason"]
    row, _ = one("[0.1, 0.1, 0.5, 0.5]", "[10, 10, 50, 50]", image_widths=[100],
                 image_heights=[100])
    assert row["best_iou"] == 1.0


def test_summary_rates_and_accuracy_at_thresholds():
    answers = ["[0, 0, 10, 10]", "[0, 0, 10, 10]", "[0, 0, 10, 10]", "oops"]
    expected = ["[0, 0, 10, 10]", "[0, 0, 10, 20]", "[0, 0, 10, 50]", "[0, 0, 10, 10]"]
    result = spatial_match(answers, expected, groups=["a", "a", "b", "b"])
    m = result.metrics
    # best IoU: 1, 0.5, 0.2, 0
    assert m["pass_rate"] == 0.5
    assert m["iou_mean"] == pytest.approx(1.7 / 4)
    assert m["iou_median"] == pytest.approx(0.35)
    assert (m["acc_at_0.1"], m["acc_at_0.3"], m["acc_at_0.5"], m["acc_at_0.7"],
            m["acc_at_0.9"]) == (0.75, 0.5, 0.5, 0.25, 0.25)
    # Σ I / Σ U = (100 + 100 + 100 + 0) / (100 + 200 + 500 + 100)
    assert m["cumulative_iou"] == pytest.approx(300 / 900)
    assert m["parse_failure_rate"] == 0.25
    assert result.per_group["a"]["pass_rate"] == 1.0
    assert result.per_group["b"]["iou_mean"] == pytest.approx(0.1)


def test_programmer_errors_raise():
    with pytest.raises(ValueError, match="iou_threshold"):
        spatial_match(["[0,0,1,1]"], ["[0,0,1,1]"], iou_threshold=0)
    with pytest.raises(ValueError, match="length"):
        spatial_match(["[0,0,1,1]"], [])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=40), st.text(max_size=40)), max_size=5))
def test_scores_stay_in_range_on_arbitrary_text(pairs):
    result = spatial_match([a for a, _ in pairs], [e for _, e in pairs])
    for iou, scored in zip(result.rows["best_iou"], result.rows["scored"]):
        assert (iou is None) != scored or iou is None
        if scored:
            assert 0.0 <= iou <= 1.0


def test_a_blank_expected_cell_is_not_scored():
    # blank is a missing expected geometry (as NULL), not "nothing expected": the row is not
    # scored, so a hallucinated box is not failed against it nor a blank answer passed
    result = spatial_match(["[0, 0, 10, 10]", "", "[0, 0, 10, 10]"],
                           ["", "", "[0, 0, 10, 20]"])
    assert result.rows["scored"] == [False, False, True]
    assert result.metrics["count_expected_unreadable"] == 2
    assert result.metrics["count_true_negative"] == 0
    assert result.metrics["pass_rate"] == 1.0  # the one scored row: IoU 100/200 = 0.5


def test_a_blank_answer_is_a_parse_failure():
    row, metrics = one("", "[0, 0, 10, 10]")
    assert row["answer_status"] == "unparseable" and not row["passed"]
    assert metrics["parse_failure_rate"] == 1.0


def test_an_unusable_image_size_is_warned_in_the_row():
    row, _ = one("[0.1, 0.1, 0.2, 0.2]", "[0.1, 0.1, 0.2, 0.2]", image_widths=[0],
                 image_heights=[100])
    assert "not usable" in row["warning"]
    assert row["best_iou"] == 1.0  # both sides in fractions of the image: comparable


def test_a_table_without_rows_or_scored_rows_says_so():
    from iou_evaluation.core.reports.spatial_match import build_report

    for answers, expected, words in (([], [], "no rows"),
                                     (["[0, 0, 1, 1]"], [None], "no row could be scored")):
        result = spatial_match(answers, expected)
        assert math.isnan(result.metrics["pass_rate"])
        report = build_report(result, {}, {}, {}, list(range(len(answers))))
        assert any(words in w for w in report["warnings"])


def test_a_row_in_another_frame_adds_its_expected_area_to_the_cumulative_union():
    # row 1: I = U = 100; row 2: fractions against pixels (no image size), IoU 0, its
    # expected 10 × 10 box in the union as a row without an answer: 100 / (100 + 100)
    result = spatial_match(["[0, 0, 10, 10]", "[0.1, 0.1, 0.2, 0.2]"],
                           ["[0, 0, 10, 10]", "[10, 10, 20, 20]"])
    assert "different frames" in result.rows["reason"][1]
    assert result.metrics["cumulative_iou"] == pytest.approx(0.5)


def test_a_row_without_a_group_is_null_and_in_no_group():
    # Two rows of group "a" (IoU 1 and 0.5), two with a NULL group (None, NaN; IoU 1 and 0):
    # those two count in the totals (4 rows scored, 3 pass at 0.5) and in no group, as a
    # field without a stratum in evaluate; without a group field every row's group is NULL,
    # never the text "(null)".
    from iou_evaluation.core.reports.spatial_match import build_report

    answers = ["[0, 0, 10, 10]"] * 4
    expected = ["[0, 0, 10, 10]", "[0, 0, 10, 20]", "[0, 0, 10, 10]", "[50, 50, 60, 60]"]
    result = spatial_match(answers, expected, groups=["a", "a", None, float("nan")])
    assert result.rows["group"] == ["a", "a", None, None]
    assert list(result.per_group) == ["a"]
    assert result.per_group["a"]["count_scored"] == 2
    assert result.metrics["count_scored"] == 4 and result.metrics["count_pass"] == 3
    report = build_report(result, {}, {})
    assert "2 rows without a group (NULL group field): counted in the totals, " \
           "in no group" in report["warnings"]
    assert [row["group"] for row in report["failed_rows"]] == [None]
    assert spatial_match(answers, expected).rows["group"] == [None] * 4
