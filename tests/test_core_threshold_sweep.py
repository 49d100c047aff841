"""The IoU-threshold sweep, precision among overlapping predictions, and the one rule for
class labels (strip, then casefold) in matching, per-class counts, AP and the taxonomy."""

import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core import evaluate
from iou_evaluation.core.matching.labels import MISSING, class_key
from iou_evaluation.core.matching.threshold_sweep import SWEEP_THRESHOLDS

box = shapely.box


def _two_matches_and_a_stray():
    # A with P1: IoU 50/100 = 0.5; B with P2: IoU 80/100 = 0.8; P3 overlaps nothing.
    reference = [box(0, 0, 10, 10), box(20, 0, 30, 10)]
    predicted = [box(0, 0, 10, 5), box(20, 0, 30, 8), box(100, 0, 110, 10)]
    return predicted, reference


def test_sweep_thresholds_run_from_005_to_095():
    assert SWEEP_THRESHOLDS[0] == 0.05 and SWEEP_THRESHOLDS[-1] == 0.95
    assert len(SWEEP_THRESHOLDS) == 19


def test_sweep_of_two_pairs_at_iou_05_and_08_by_hand():
    evaluation = evaluate(*_two_matches_and_a_stray())
    sweep = evaluation.metrics["threshold_sweep"]
    for t, tp, fp, precision, recall in zip(
        sweep["iou_threshold"], sweep["count_tp"], sweep["count_fp"], sweep["precision"],
        sweep["recall"],
    ):
        if t <= 0.5:
            expected = (2, 1, 2 / 3, 1.0)
        elif t <= 0.8:
            expected = (1, 2, 1 / 3, 0.5)
        else:
            expected = (0, 3, 0.0, 0.0)
        assert (tp, fp) == expected[:2], t
        assert precision == pytest.approx(expected[2]) and recall == pytest.approx(expected[3])
    f1 = sweep["f1"][sweep["iou_threshold"].index(0.5)]
    assert f1 == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))


def test_precision_among_overlapping_leaves_out_predictions_that_overlap_nothing():
    metrics = evaluate(*_two_matches_and_a_stray()).metrics
    assert metrics["count_fp_unassigned"] == 1
    assert metrics["precision"] == pytest.approx(2 / 3)
    assert metrics["precision_among_overlapping"] == 1.0  # 2 / (2 + 1 - 1)


def test_precision_among_overlapping_of_empty_layers_follows_precision():
    assert evaluate([], []).metrics["precision_among_overlapping"] == 1.0
    assert evaluate([], [box(0, 0, 1, 1)]).metrics["precision_among_overlapping"] == 0.0
    stray_only = evaluate([box(5, 5, 6, 6)], [box(0, 0, 1, 1)]).metrics
    assert stray_only["precision_among_overlapping"] == 0.0


@st.composite
def _layers(draw):
    def boxes(n):
        out = []
        for _ in range(n):
            x, y = draw(st.integers(0, 12)), draw(st.integers(0, 12))
            w, h = draw(st.integers(1, 6)), draw(st.integers(1, 6))
            out.append(box(x, y, x + w, y + h))
        return out

    return boxes(draw(st.integers(0, 6))), boxes(draw(st.integers(0, 6)))


@settings(max_examples=25, deadline=None)
@given(_layers(), st.sampled_from(["one_to_one", "many_to_one", "optimal"]))
def test_sweep_equals_a_full_evaluation_at_each_threshold(layers, matching):
    predicted, reference = layers
    sweep = evaluate(predicted, reference, matching=matching).metrics["threshold_sweep"]
    for k in (0, 5, 9, 14, 18):
        threshold = sweep["iou_threshold"][k]
        metrics = evaluate(predicted, reference, matching=matching,
                           iou_threshold=threshold).metrics
        for key in ("count_tp", "count_fp", "count_fn", "precision", "recall", "f1"):
            assert sweep[key][k] == pytest.approx(metrics[key]), (key, threshold)


@st.composite
def _pairs(draw):
    n_ref, n_pred = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    cells = draw(st.lists(st.tuples(st.integers(0, n_ref - 1), st.integers(0, n_pred - 1)),
                          max_size=20, unique=True))
    cells.sort()
    # IoUs from a few values, so that ties (and values on a threshold) are common
    iou = [draw(st.sampled_from([0.05, 0.1, 0.3, 0.5, 0.5, 0.75, 0.95, 1.0])) for _ in cells]
    coverage = [draw(st.sampled_from([0.0, 0.0, 0.3, 0.6, 1.0])) for _ in range(n_pred)]
    return n_ref, n_pred, cells, iou, np.array(coverage)


@settings(max_examples=60, deadline=None)
@given(_pairs())
def test_one_greedy_pass_gives_the_greedy_matching_of_every_threshold(case):
    from iou_evaluation.core.pairs.overlap import OverlapPairs
    from iou_evaluation.core.matching.threshold_sweep import threshold_sweep

    n_ref, n_pred, cells, iou, coverage = case
    ref = np.array([c[0] for c in cells], dtype=np.int64)
    pred = np.array([c[1] for c in cells], dtype=np.int64)
    pairs = OverlapPairs(ref, pred, np.ones(len(cells)), np.array(iou, dtype=float))
    sweep = threshold_sweep(pairs, n_ref, n_pred, "one_to_one", coverage)
    for k, threshold in enumerate(SWEEP_THRESHOLDS):
        # The greedy rule written out: best IoU first, ties by reference then prediction.
        ref_done, pred_done = set(), set()
        for value, r, p in sorted(zip([-v for v in iou], ref.tolist(), pred.tolist())):
            if -value >= threshold * (1 - 1e-9) and r not in ref_done and p not in pred_done:
                ref_done.add(r)
                pred_done.add(p)
        ignored = [p not in pred_done and 0 < coverage[p] >= threshold * (1 - 1e-9)
                   for p in range(n_pred)]
        fp = sum(p not in pred_done and not ignored[p] for p in range(n_pred))
        assert (sweep["count_tp"][k], sweep["count_fp"][k], sweep["count_fn"][k]) == (
            len(ref_done), fp, n_ref - len(ref_done)), threshold


def test_sweep_with_an_ignore_region_equals_a_full_evaluation():
    reference = [box(0, 0, 10, 10), box(50, 0, 60, 10)]
    ignore = [False, True]
    # covers 60 % of itself with the ignore region: ignored at thresholds <= 0.6
    predicted = [box(0, 0, 10, 7), box(54, 0, 64, 10)]
    sweep = evaluate(predicted, reference, reference_ignore=ignore).metrics["threshold_sweep"]
    for k, threshold in enumerate(sweep["iou_threshold"]):
        metrics = evaluate(predicted, reference, reference_ignore=ignore,
                           iou_threshold=threshold).metrics
        assert sweep["count_fp"][k] == metrics["count_fp"], threshold
        assert sweep["precision"][k] == pytest.approx(metrics["precision"]), threshold
    assert sweep["count_fp"][sweep["iou_threshold"].index(0.6)] == 0
    assert sweep["count_fp"][sweep["iou_threshold"].index(0.65)] == 1


@pytest.mark.parametrize("value, key", [
    ("  Straße ", "strasse"), ("STRASSE", "strasse"), ("ǅ", "ǆ"), (12.0, "12"), (None, MISSING),
    (float("nan"), MISSING), ("   ", MISSING),
])
def test_class_key_strips_then_casefolds(value, key):
    assert class_key(value) == key


def test_date_values_of_a_date_field_are_iso_text():
    # A class field of type date (QGIS gives QDate, QDateTime): the class is "2020-01-01",
    # as Python's own date is, not "PyQt5.QtCore.QDate(2020, 1, 1)".
    import datetime

    qt = pytest.importorskip("qgis.PyQt.QtCore")
    QDate, QDateTime, QTime = qt.QDate, qt.QDateTime, qt.QTime  # noqa: N806

    assert class_key(QDate(2020, 1, 1)) == class_key(datetime.date(2020, 1, 1)) == "2020-01-01"
    assert class_key(QDateTime(QDate(2020, 1, 1), QTime(6, 30))) == "2020-01-01 06:30:00"
    assert class_key(QDate()) == MISSING  # an invalid (NULL) date is no class


def test_class_key_normalises_to_nfc_first():
    # "Forêt" as one code point (NFC) and as "e" + combining circumflex (NFD); "\u212b" is
    # the Angstrom sign, whose NFC is "\u00c5" (A with ring), casefolded "\u00e5".
    assert class_key("Fore\u0302t ") == class_key("For\u00eat") == "for\u00eat"
    assert class_key("\u212b") == class_key("A\u030a") == "\u00e5"


def test_nfd_and_nfc_class_names_match_in_f1_and_in_ap_alike():
    reference, predicted = [box(0, 0, 10, 10)], [box(0, 0, 10, 10)]
    metrics = evaluate(predicted, reference, reference_classes=["For\u00eat"],
                       predicted_classes=["Fore\u0302t"], predicted_scores=[0.9]).metrics
    assert metrics["count_tp"] == 1
    assert metrics["average_precision"]["ap"] == 1.0
    assert list(metrics["per_class"]) == ["for\u00eat"]


def test_strasse_matches_strasse_in_f1_and_in_ap_alike():
    reference, predicted = [box(0, 0, 10, 10)], [box(0, 0, 10, 10)]
    metrics = evaluate(predicted, reference, reference_classes=["straße"],
                       predicted_classes=[" STRASSE"], predicted_scores=[0.9]).metrics
    assert metrics["count_tp"] == 1
    assert metrics["average_precision"]["ap"] == 1.0
    assert list(metrics["per_class"]) == ["strasse"]


def test_taxonomy_names_follow_the_same_rule():
    reference, predicted = [box(0, 0, 10, 10)], [box(0, 0, 10, 10)]
    metrics = evaluate(predicted, reference, reference_classes=["Straße"],
                       predicted_classes=["Autobahn"], taxonomy={" AUTOBAHN": "STRASSE"},
                       predicted_scores=[0.9]).metrics
    assert metrics["count_tp"] == 1
    assert metrics["average_precision"]["ap"] == 1.0


def test_the_missing_class_has_one_spelling_in_per_class_and_ap():
    reference = [box(0, 0, 10, 10), box(20, 0, 30, 10)]
    predicted = [box(0, 0, 10, 10), box(20, 0, 30, 10)]
    metrics = evaluate(predicted, reference, reference_classes=[None, "(none)"],
                       predicted_classes=[None, "(NONE)"], predicted_scores=[0.9, 0.8]).metrics
    # a real class spelled "(none)" stays apart from the missing class
    assert set(metrics["per_class"]) == {MISSING, "(none)"}
    assert set(metrics["average_precision"]["per_class"]) == {MISSING, "(none)"}
    assert metrics["per_class"][MISSING]["count_tp"] == 1
    assert not math.isnan(metrics["average_precision"]["per_class"][MISSING]["ap"])
    assert np.all([entry["count_tp"] == 1 for entry in metrics["per_class"].values()])


def test_boundary_f1_by_tolerance_of_two_squares_3_m_apart_by_hand():
    # Reference 100 m square; prediction shifted 3 m along x. At tolerance t < 3 the left and
    # right edges are out except where the other square's top/bottom edges pass within t
    # (2t of the right edge); the top and bottom edges are within t except the first 3 - t m.
    # Boundary recall = (2t + 2 (97 + t)) / 400, the same for precision; from t = 3 all of it.
    reference, predicted = [box(0, 0, 100, 100)], [box(3, 0, 103, 100)]
    metrics = evaluate(predicted, reference, boundary_tolerance_m=1.0,
                       tolerance_multiples=(1.0, 2.0, 3.0, 4.0)).metrics
    curve = metrics["boundary_by_tolerance"]
    assert curve["tolerance_m"] == [1.0, 2.0, 3.0, 4.0]
    expected = [(2 * t + 2 * (97 + t)) / 400 if t < 3 else 1.0 for t in (1.0, 2.0, 3.0, 4.0)]
    assert curve["boundary_recall"] == pytest.approx(expected, abs=1e-9)
    assert curve["boundary_precision"] == pytest.approx(expected, abs=1e-9)
    assert curve["boundary_f1"] == pytest.approx(expected, abs=1e-9)
    assert curve["boundary_f1"][0] == metrics["boundary_f1"]


def test_no_boundary_curve_unless_asked_for():
    metrics = evaluate([box(3, 0, 103, 100)], [box(0, 0, 100, 100)],
                       boundary_tolerance_m=1.0).metrics
    assert "boundary_by_tolerance" not in metrics


@pytest.mark.parametrize("crs, origin, scale", [
    (None, (0.0, 0.0), 1.0),
    ("EPSG:4326", (-108.01, 35.0), 1e-5),  # across the border of UTM zones 12 and 13
])
def test_tolerances_in_one_pass_equal_one_run_each(crs, origin, scale):
    import pyproj
    from iou_evaluation.core.boundary.distances import zoned_layer
    from iou_evaluation.core.boundary.tolerance import (
        tolerance_lengths_in_utm,
        tolerance_lengths_in_utm_at,
    )

    rng = np.random.default_rng(3)
    x0, y0 = origin

    def polygons(n, jitter):
        out = []
        for k in range(n):
            x, y = x0 + (k % 10) * 120 * scale, y0 + (k // 10) * 120 * scale
            w, h = rng.uniform(60, 100, 2) * scale
            dx, dy = rng.uniform(-jitter, jitter, 2) * scale
            out.append(shapely.Polygon([(x + dx, y + dy), (x + w, y), (x + w + dx, y + h),
                                        (x, y + h + dy)]))
        return np.array(out, dtype=object)

    crs = pyproj.CRS(crs) if crs else None
    reference = zoned_layer(polygons(40, 0), crs)
    predicted = zoned_layer(polygons(40, 8), crs)
    tolerances = (2.0, 3.0, 8.0)
    within_ref, perimeter_ref, within_pred, perimeter_pred = tolerance_lengths_in_utm_at(
        reference, predicted, tolerances
    )
    assert within_ref.shape == (3, 40) and perimeter_ref.shape == (40,)
    for k, tol in enumerate(tolerances):
        wr, pr, wp, pp = tolerance_lengths_in_utm(reference, predicted, tol)
        np.testing.assert_allclose(within_ref[k], wr, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(within_pred[k], wp, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(perimeter_ref, pr, rtol=1e-12)
        np.testing.assert_allclose(perimeter_pred, pp, rtol=1e-12)
    assert np.all(np.diff(within_ref.sum(axis=1)) >= 0)  # grows with the tolerance


def test_f1_is_written_as_the_decimal_the_counts_give():
    # 86 exact matches, 14 predictions far from any reference, 14 references never predicted:
    # precision = recall = 86 / 100 and F1 = 2·86 / (2·86 + 14 + 14) = 172 / 200 = 0.86
    # exactly, where the harmonic mean of the floats 0.86 and 0.86 is 0.8599999999999999.
    assert 2 * 0.86 * 0.86 / (0.86 + 0.86) != 0.86
    reference = [box(20 * k, 0, 20 * k + 10, 10) for k in range(100)]
    predicted = reference[:86] + [box(20 * k, 100, 20 * k + 10, 110) for k in range(14)]
    metrics = evaluate(predicted, reference).metrics
    assert (metrics["count_tp"], metrics["count_fp"], metrics["count_fn"]) == (86, 14, 14)
    assert repr(metrics["f1"]) == "0.86"
    sweep = metrics["threshold_sweep"]
    assert [repr(f) for f in sweep["f1"]] == ["0.86"] * 19
    # the thresholds themselves are the decimals they name: 0.05, 0.1, ..., 0.95
    assert [repr(t) for t in sweep["iou_threshold"]] == [
        repr(k / 100) for k in range(5, 100, 5)]
    assert ", ".join(repr(t) for t in sweep["iou_threshold"][:3]) == "0.05, 0.1, 0.15"
