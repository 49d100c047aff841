"""core.classmaps.confusion: the class-map confusion matrix and its per-class metrics."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iou_evaluation.core.classmaps.confusion import (
    ClassTable,
    accumulate,
    class_metrics,
    confusion_matrix,
    conventions,
    new_matrix,
    normalised,
    unique_codes,
)


def test_issue_values_absent_class_left_out_of_the_mean():
    # Issue #16: reference [0, 1, 0, 0] against prediction [0, 1, 0, 1], classes {0, 1, 2}.
    classes = ClassTable([0, 1, 2], fixed=True)
    matrix = confusion_matrix([0, 1, 0, 1], [0, 1, 0, 0], classes)
    metrics = class_metrics(matrix)
    assert metrics["iou"][0] == pytest.approx(2 / 3)
    assert metrics["iou"][1] == pytest.approx(1 / 2)
    assert np.isnan(metrics["iou"][2])
    assert metrics["present"].tolist() == [True, True, False]
    assert metrics["miou"] == pytest.approx(7 / 12)
    # scikit-learn / torchmetrics convention (absent counted 0): (2/3 + 1/2 + 0) / 3.
    assert metrics["miou_absent_as_zero"] == pytest.approx(7 / 18)
    assert conventions(metrics)["scikit_learn"]["miou"] == pytest.approx(7 / 18)


def test_issue_values_with_zero_ignored_give_miou_one():
    # Reference [2, 1, 0, 0] against [2, 1, 0, 1] with 0 void: the void pixels are left out.
    reference = np.array([2, 1, 0, 0])
    predicted = np.array([2, 1, 0, 1])
    valid = reference != 0
    matrix = confusion_matrix(predicted[valid], reference[valid], ClassTable())
    assert class_metrics(matrix)["miou"] == 1.0


def test_orientation_rows_prediction_columns_reference():
    classes = ClassTable([0, 1], fixed=True)
    matrix = confusion_matrix([1], [0], classes)  # predicted 1 where the reference is 0
    assert matrix[1, 0] == 1 and matrix.sum() == 1
    assert matrix.shape == (4, 2)


def test_unknown_prediction_goes_to_other_and_nodata_to_no_prediction():
    classes = ClassTable([0, 1], fixed=True)
    predicted = np.array([0, 7, 1, 1])
    valid = np.array([True, True, True, False])
    matrix = confusion_matrix(predicted, [0, 0, 1, 1], classes, predicted_valid=valid)
    assert matrix[2].tolist() == [1, 0]  # OTHER: the 7
    assert matrix[3].tolist() == [0, 1]  # NO_PREDICTION
    metrics = class_metrics(matrix)
    assert metrics["fn"].tolist() == [1, 1]  # both are omissions of the reference class
    assert metrics["pixel_accuracy"] == pytest.approx(2 / 4)


def test_class_zero_is_a_class():
    matrix = confusion_matrix([0, 0], [0, 0], ClassTable())
    assert class_metrics(matrix)["iou"].tolist() == [1.0]


def test_seed_article_worked_example():
    # The IoU article ("Intersection over Union"), "Example", part 4: the seed's own inputs; its
    # printed output is "per-class IoU [0.951 0.803 0.703]  mean IoU 0.819  pixel accuracy 0.958".
    label, seg = seed_label_maps()
    matrix = confusion_matrix(seg, label, ClassTable([0, 1, 2], fixed=True))
    metrics = class_metrics(matrix)
    assert np.round(metrics["iou"], 3).tolist() == [0.951, 0.803, 0.703]
    assert round(metrics["miou"], 3) == 0.819
    assert round(metrics["pixel_accuracy"], 3) == 0.958


def seed_label_maps():
    """The seed article's 120 × 80 label map and segmentation (its code, part 1 and 4)."""
    h, w = 80, 120
    yy, xx = np.mgrid[0:h, 0:w] + 0.5

    def ellipse(cx, cy, a, b, deg=0.0):
        t = np.deg2rad(deg)
        u = (xx - cx) * np.cos(t) + (yy - cy) * np.sin(t)
        v = -(xx - cx) * np.sin(t) + (yy - cy) * np.cos(t)
        return (u / a) ** 2 + (v / b) ** 2 <= 1.0

    gt = ellipse(60, 40, 30, 12, deg=30)
    pred = ellipse(64, 43, 30, 12, deg=30)
    label = np.zeros((h, w), int)
    label[gt] = 1
    label[10:30, 90:112] = 2
    seg = np.zeros((h, w), int)
    seg[pred] = 1
    seg[12:30, 92:116] = 2
    return label, seg


def test_dice_precision_recall_by_hand():
    # Class 1: TP 2, FP 1, FN 3.
    matrix = confusion_matrix([1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 1, 1], ClassTable([0, 1]))
    metrics = class_metrics(matrix)
    assert metrics["tp"][1] == 2 and metrics["fp"][1] == 1 and metrics["fn"][1] == 3
    assert metrics["dice"][1] == pytest.approx(4 / 8)
    assert metrics["precision"][1] == pytest.approx(2 / 3)
    assert metrics["recall"][1] == pytest.approx(2 / 5)


def test_frequency_weighted_iou_by_hand():
    # Reference: three pixels of class 0, one of class 1; IoU 0 = 2/3, IoU 1 = 1/2.
    matrix = confusion_matrix([0, 1, 0, 1], [0, 1, 0, 0], ClassTable([0, 1]))
    assert class_metrics(matrix)["fwiou"] == pytest.approx(0.75 * 2 / 3 + 0.25 * 1 / 2)


def test_counts_are_int64_past_two_billion():
    matrix = new_matrix(1)
    matrix[0, 0] = 2**31 - 1
    accumulate(matrix, np.array([0, 0]), np.array([0, 0]))
    assert matrix.dtype == np.int64 and matrix[0, 0] == 2**31 + 1


def test_float_and_wide_integer_codes():
    for dtype in (np.float32, np.int32, np.uint16, np.int8):
        codes = np.array([3, -1 if dtype != np.uint16 else 9, 3, 70], dtype=dtype)
        table = ClassTable()
        table.add(unique_codes(codes))
        assert table.lookup(codes, 99).tolist() == [
            table.position(v) for v in (3, int(codes[1]), 3, 70)
        ]


def test_normalised_rows_sum_to_one():
    matrix = np.array([[2, 1], [0, 3], [0, 0], [1, 0]])
    rows = normalised(matrix, axis=1)
    assert rows[0].tolist() == pytest.approx([2 / 3, 1 / 3])
    assert np.isnan(rows[2]).all()
    assert normalised(matrix, axis=0)[:, 0].tolist() == pytest.approx([2 / 3, 0, 0, 1 / 3])


def test_against_scikit_learn():
    metrics_module = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    reference = rng.integers(0, 5, 500)
    predicted = np.where(rng.random(500) < 0.7, reference, rng.integers(0, 5, 500))
    classes = ClassTable([0, 1, 2, 3, 4, 5], fixed=True)  # 5 is absent from both
    matrix = confusion_matrix(predicted, reference, classes)
    ours = class_metrics(matrix)
    theirs = metrics_module.confusion_matrix(reference, predicted, labels=[0, 1, 2, 3, 4, 5])
    assert (matrix[:6] == theirs.T).all()  # scikit-learn: rows = reference
    jaccard = metrics_module.jaccard_score(
        reference, predicted, labels=[0, 1, 2, 3, 4], average=None
    )
    assert ours["iou"][:5] == pytest.approx(jaccard)
    macro = metrics_module.jaccard_score(
        reference, predicted, labels=[0, 1, 2, 3, 4, 5], average="macro", zero_division=0
    )
    assert ours["miou_absent_as_zero"] == pytest.approx(macro)


labels = st.lists(st.integers(0, 4), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(labels, st.data())
def test_iou_in_unit_interval_and_dice_is_two_iou_over_one_plus_iou(reference, data):
    predicted = data.draw(st.lists(st.integers(0, 5), min_size=len(reference),
                                   max_size=len(reference)))
    matrix = confusion_matrix(predicted, reference, ClassTable())
    metrics = class_metrics(matrix)
    assert matrix.sum() == len(reference)
    present = metrics["present"]
    iou = metrics["iou"][present]
    assert ((iou >= 0) & (iou <= 1)).all()
    assert metrics["dice"][present] == pytest.approx(2 * iou / (1 + iou))
    assert iou.min() - 1e-12 <= metrics["miou"] <= iou.max() + 1e-12
    assert 0 <= metrics["pixel_accuracy"] <= 1


@settings(max_examples=60, deadline=None)
@given(labels, st.data())
def test_swapping_maps_transposes_and_keeps_iou(reference, data):
    predicted = data.draw(st.lists(st.integers(0, 4), min_size=len(reference),
                                   max_size=len(reference)))
    classes = ClassTable([0, 1, 2, 3, 4], fixed=True)
    forward = confusion_matrix(predicted, reference, classes)
    backward = confusion_matrix(reference, predicted, classes)
    assert (forward[:5] == backward[:5].T).all()
    a, b = class_metrics(forward), class_metrics(backward)
    assert np.array_equal(a["iou"], b["iou"], equal_nan=True)
    assert a["precision"] == pytest.approx(b["recall"], nan_ok=True)


@settings(max_examples=40, deadline=None)
@given(labels, st.data(), st.integers(1, 10))
def test_blocks_accumulate_to_the_whole(reference, data, block):
    predicted = data.draw(st.lists(st.integers(0, 4), min_size=len(reference),
                                   max_size=len(reference)))
    classes = ClassTable([0, 1, 2, 3, 4], fixed=True)
    whole = confusion_matrix(predicted, reference, classes)
    parts = new_matrix(5)
    p, r = classes.lookup(np.array(predicted), 5), classes.lookup(np.array(reference), -1)
    for start in range(0, len(reference), block):
        accumulate(parts, p[start:start + block], r[start:start + block])
    assert (parts == whole).all()


def test_find_compares_at_the_precision_of_the_array():
    from iou_evaluation.core.classmaps.confusion import ClassTable

    table = ClassTable([0.1, 2, 300])
    assert table.find(0.10000000149011612, "float32") == 0  # Float32's 0.1
    assert table.find(0.10000000149011612, "float64") is None
    assert table.find(2.0, "uint8") == 1
    assert table.find(2.5, "uint8") is None
    assert table.find(300, "uint8") is None  # not a Byte value
    assert table.find(300, "int16") == 2
