"""core.reports.thresholds: parsing conditions and checking them against a report."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iou_evaluation.core.reports.thresholds import (
    WILDCARD,
    check_conditions,
    failure_message,
    parse_conditions,
)

REPORT = {
    "metrics": {
        "f1": 0.85,
        "recall": 0.7999999999999999,  # 0.8 in decimal arithmetic
        "iou_p10": 0.42,
        "iou_mean": None,  # NaN written as null
        "per_size_class": {
            "0-0.5": {"n": 3, "recall": 0.5},
            "0.5-1": {"n": 10, "recall": 0.9},
        },
        "bootstrap": {"ci": {"f1": [0.81, 0.88]}},
        "matching": "one_to_one",
    },
    "parameters": {"iou_threshold": 0.5},
}


def test_parsing_splits_on_semicolons_and_newlines():
    conditions = parse_conditions("f1 >= 0.80; iou_p10>=0.5\n per_size_class.*.recall >= 0.6;")
    assert [c.path for c in conditions] == [
        ("f1",), ("iou_p10",), ("per_size_class", WILDCARD, "recall")
    ]
    assert [c.operator for c in conditions] == [">=", ">=", ">="]
    assert [c.threshold for c in conditions] == [0.8, 0.5, 0.6]


def test_every_operator():
    results = check_conditions(
        REPORT, "f1 > 0.8; f1 < 0.9; f1 <= 0.85; f1 == 0.85; f1 != 0.5; f1 > 0.85"
    )
    assert [r.passed for r in results] == [True, True, True, True, True, False]


def test_the_issues_example_with_a_wildcard():
    results = check_conditions(
        REPORT, "f1 >= 0.80; iou_p10 >= 0.5; per_size_class.*.recall >= 0.6"
    )
    assert [(r.path, r.value, r.passed) for r in results] == [
        ("f1", 0.85, True),
        ("iou_p10", 0.42, False),
        ("per_size_class.0-0.5.recall", 0.5, False),
        ("per_size_class.0.5-1.recall", 0.9, True),
    ]
    message = failure_message(results)
    assert message.startswith("2 of 4 threshold checks failed")
    assert "iou_p10 = 0.42, needs >= 0.5" in message
    assert "per_size_class.0-0.5.recall = 0.5, needs >= 0.6" in message
    assert "0.5-1" not in message


def test_a_value_a_rounding_error_below_the_threshold_passes():
    (result,) = check_conditions(REPORT, "recall >= 0.8")
    assert result.passed


def test_keys_with_dots_quoted_or_plain_lists_and_top_level_keys():
    results = check_conditions(
        REPORT,
        'per_size_class."0.5-1".recall == 0.9; per_size_class.0.5-1.n == 10; '
        "bootstrap.ci.f1.0 >= 0.8; metrics.f1 >= 0.8; parameters.iou_threshold == 0.5",
    )
    assert [r.value for r in results] == [0.9, 10, 0.81, 0.85, 0.5]
    assert all(r.passed for r in results)


def test_a_null_value_fails_and_says_so():
    (result,) = check_conditions(REPORT, "iou_mean >= 0.5")
    assert result.value is None and not result.passed
    assert "iou_mean = null (undefined)" in failure_message([result])


@pytest.mark.parametrize(
    "text, message",
    [
        ("f1 0.8", "no comparison operator"),
        ("f1 = 0.8", "'=' is not an operator"),
        ("f1 >= high", "'high' after >= is not a number"),
        (">= 0.8", "no key before >="),
        ("f1 >= nan", "NaN"),
        ("per_size_class.*x.recall >= 1", "unexpected 'x'"),
        ('"f1 >= 1', 'unclosed quote "'),  # the quote swallows the operator
        ("", "no condition given"),
        ("a..b >= 1", "a key name was expected"),
    ],
)
def test_bad_conditions_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        check_conditions(REPORT, text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("f2 >= 0.8",
         "no key 'f2' in the report's metrics \\(f1, recall.*top level \\(metrics, parameters"),
        ("per_size_class.*.precision >= 0.8", "no key 'precision' in per_size_class.0-0.5"),
        ("matching >= 1", "matching is text .*not a number"),
        ("per_size_class >= 1", "is an object, not a number"),
        ("bootstrap.ci.f1.5 >= 1", "not an index"),
        ("f1.x >= 1", "f1 is float, it has no key 'x'"),
        ("per size >= 1", "no key 'per size' in the report's metrics"),  # a key, not found
    ],
)
def test_missing_keys_and_non_numbers_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        check_conditions(REPORT, text)


def test_a_wildcard_that_matches_nothing_is_an_error():
    with pytest.raises(ValueError, match="matches no value"):
        check_conditions({"metrics": {"per_class": {}}}, "per_class.*.f1 >= 0.5")


@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6))
def test_opposite_operators_never_both_pass(value, threshold):
    report = {"metrics": {"x": value}}
    text = f"x >= {threshold!r}; x < {threshold!r}; x == {threshold!r}; x != {threshold!r}"
    ge, lt, eq, ne = (r.passed for r in check_conditions(report, text))
    assert ge != lt and eq != ne
    assert json.dumps(report)  # plain JSON values


def test_an_unclosed_quote_is_named_rather_than_a_missing_operator():
    # The quote swallows ">= 0.8": the message must name the quote, not the operator.
    with pytest.raises(ValueError, match=r"unclosed quote '"):
        parse_conditions("'f1 >= 0.8")
    with pytest.raises(ValueError, match=r'unclosed quote "'):
        parse_conditions('per_size_class."0.5-1.recall >= 0.6')


# A class-map report as rasteriou writes it: class 2 is absent from both maps, its IoU null
# (0/0), and the mIoU is over the other two.
CLASS_MAP = {
    "miou": 0.6,
    "per_class": {
        "0": {"name": "water", "iou": 0.8},
        "1": {"name": "Forêt dense", "iou": 0.4},
        "2": {"name": "snow", "iou": None},
    },
}
# An evaluation's per-class metrics keyed by class name as the data spells it.
NAMED_CLASSES = {
    "metrics": {"per_class": {"Forêt dense": {"f1": 0.75}, "Straße": {"f1": 0.5},
                              "Tree cover": {"f1": 0.9}, "岩石": {"f1": 0.25}}},
}


def test_a_wildcard_over_a_null_fails_it_and_a_question_mark_skips_it():
    plain = check_conditions(CLASS_MAP, "per_class.*.iou >= 0.3")
    assert [(r.path, r.value, r.passed, r.skipped) for r in plain] == [
        ("per_class.0.iou", 0.8, True, False),
        ("per_class.1.iou", 0.4, True, False),
        ("per_class.2.iou", None, False, False),
    ]
    skipping = check_conditions(CLASS_MAP, "per_class.*.iou? >= 0.3")
    assert [(r.path, r.value, r.passed, r.skipped) for r in skipping] == [
        ("per_class.0.iou", 0.8, True, False),
        ("per_class.1.iou", 0.4, True, False),
        ("per_class.2.iou", None, True, True),
    ]
    assert failure_message(skipping) == ""
    # A real value below the threshold still fails with "?"; the skipped one is not counted.
    results = check_conditions(CLASS_MAP, "per_class.*.iou ? >= 0.5")
    assert [r.passed for r in results] == [True, False, True]
    assert failure_message(results).startswith("1 of 2 threshold checks failed:")
    assert parse_conditions("per_class.*.iou? >= 0.5")[0].skip_null
    assert not parse_conditions("per_class.*.iou >= 0.5")[0].skip_null


def test_keys_in_any_script_and_with_spaces_are_named_as_written():
    results = check_conditions(
        NAMED_CLASSES,
        "per_class.Forêt dense.f1 == 0.75; per_class.Straße.f1 == 0.5; "
        "per_class.Tree cover.f1 == 0.9; per_class.岩石.f1 == 0.25",
    )
    assert [(r.path, r.value) for r in results] == [
        ("per_class.Forêt dense.f1", 0.75), ("per_class.Straße.f1", 0.5),
        ("per_class.Tree cover.f1", 0.9), ("per_class.岩石.f1", 0.25),
    ]
    assert all(r.passed for r in results)


def test_a_key_typed_in_decomposed_unicode_names_the_composed_key():
    decomposed = "per_class.Fore\u0302t dense.f1 >= 0.7"  # e + combining circumflex
    (result,) = check_conditions(NAMED_CLASSES, decomposed)
    assert result.path == "per_class.Forêt dense.f1" and result.value == 0.75


def test_one_failed_check_is_worded_in_the_singular():
    results = check_conditions(REPORT, "iou_p10 >= 0.5")
    assert failure_message(results).startswith("1 of 1 threshold check failed:")
