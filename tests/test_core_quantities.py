"""The per-reference quantities made block by block (core/evaluation/quantities.py): the
same rows and the same sums, to the last bit, as the whole matrix added row after row."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iou_evaluation.core.evaluation import quantities as quantities_module
from iou_evaluation.core.evaluation.quantities import Quantities
from iou_evaluation.core.matching.summary import Q, QUANTITIES


def _tables(rng, n_ref, n_pred, tolerance):
    matched = rng.random(n_ref) < 0.6
    reference = {
        "matched": matched,
        "iou": np.where(matched, rng.random(n_ref), np.nan),
        "best_iou": rng.random(n_ref),
        "pred_area_m2": np.where(matched, rng.random(n_ref) * 1e4, np.nan),
        "oversegmentation": rng.random(n_ref),
        "undersegmentation": np.where(rng.random(n_ref) < 0.2, np.nan, rng.random(n_ref)),
        "boundary_mean_distance_m": np.where(rng.random(n_ref) < 0.1, np.nan,
                                             rng.random(n_ref) * 5),
        "hausdorff_m": rng.random(n_ref) * 20,
    }
    predicted = {"matched": rng.random(n_pred) < 0.5, "ignored": rng.random(n_pred) < 0.1}
    if tolerance:
        reference.update(perimeter_m=rng.random(n_ref) * 400,
                         boundary_within_tolerance_m=rng.random(n_ref) * 300,
                         within_tolerance=rng.random(n_ref) < 0.5)
        predicted.update(perimeter_m=rng.random(n_pred) * 400,
                         boundary_within_tolerance_m=rng.random(n_pred) * 300)
    home = rng.integers(-1, max(n_ref, 1), n_pred) if n_ref else np.full(n_pred, -1)
    return (rng.random(n_ref) * 1e4 * 10.0 ** rng.integers(-3, 4, n_ref), reference,
            rng.integers(0, 3, n_ref), rng.random(n_pred) * 1e4, predicted,
            rng.integers(0, 3, n_pred), home.astype(np.int64), 2.0 if tolerance else None)


def test_a_small_layer_by_hand():
    # Two references (areas 100 and 300 m²), the first matched (IoU 0.5, prediction 120 m²);
    # three predictions: two at home in the first reference, one with no home.
    reference = {
        "matched": np.array([True, False]), "iou": np.array([0.5, np.nan]),
        "best_iou": np.array([0.5, 0.25]), "pred_area_m2": np.array([120.0, np.nan]),
        "oversegmentation": np.array([0.1, 0.0]),
        "undersegmentation": np.array([0.2, np.nan]),
        "boundary_mean_distance_m": np.array([1.5, np.nan]),
        "hausdorff_m": np.array([4.0, np.nan]),
    }
    predicted = {"matched": np.array([True, False, False]),
                 "ignored": np.array([False, False, False])}
    q = Quantities(np.array([100.0, 300.0]), reference, np.array([2, 0]),
                   np.array([120.0, 30.0, 50.0]), predicted, np.array([1, 0, 0]),
                   np.array([0, 0, -1]), None)
    sums = q.sums()
    expected = {"n_ref": 2, "area_ref": 400, "tp": 1, "iou_tp": 0.5, "best_iou": 0.75,
                "abs_area_err_tp": 20, "signed_area_err_tp": 20, "area_ref_tp": 100,
                "os": 0.1, "us": 0.2, "us_defined": 1, "legacy_overseg": 1, "n_dist": 1,
                "hausdorff": 4, "mean_dist": 1.5, "n_pred": 2, "n_pred_matched": 1,
                "area_pred": 150, "area_pred_matched": 120, "legacy_underseg": 0}
    for name, value in expected.items():
        assert sums[Q[name]] == pytest.approx(value), name
    assert q.unassigned[Q["n_pred"]] == 1 and q.unassigned[Q["area_pred"]] == 50
    assert q.sums(np.array([1]))[Q["area_ref"]] == 300
    assert q.sums(np.array([], dtype=np.int64)).tolist() == [0.0] * len(QUANTITIES)


@settings(max_examples=60, deadline=None)
@given(n_ref=st.integers(0, 40), n_pred=st.integers(0, 60), seed=st.integers(0, 2**32 - 1),
       tolerance=st.booleans(), block=st.integers(1, 7), data=st.data())
def test_blocks_give_the_whole_matrix_bits(n_ref, n_pred, seed, tolerance, block, data,
                                           monkeypatch_module):
    monkeypatch_module.setattr(quantities_module, "BLOCK_ROWS", block)
    q = Quantities(*_tables(np.random.default_rng(seed), n_ref, n_pred, tolerance))
    matrix = q.matrix()
    assert matrix.shape == (n_ref, len(QUANTITIES))
    members = np.array(sorted(data.draw(st.sets(st.integers(0, max(n_ref - 1, 0)))))
                       if n_ref else [], dtype=np.int64)
    assert np.array_equal(q.rows(members), matrix[members])
    # Rows added one after the other (np.cumsum is sequential), whatever the blocks.
    for rows in (np.arange(n_ref), members):
        sequential = (np.cumsum(matrix[rows], axis=0)[-1] if len(rows)
                      else np.zeros(len(QUANTITIES)))
        got = q.sums(rows)
        for j in range(len(QUANTITIES)):
            assert got[j] == pytest.approx(math.fsum(matrix[rows, j]), rel=1e-12, abs=1e-9)
        assert np.array_equal(got, sequential)
    assert np.array_equal(q.sums(), q.sums(np.arange(n_ref)))


def test_many_groups_sort_the_predictions_once(monkeypatch):
    # A stratum's sums need the predictions by home; sorting all of them again for every
    # stratum would make thousands of strata (counties of a national layer) quadratic.
    q = Quantities(*_tables(np.random.default_rng(7), 300, 400, False))
    sorts = []
    argsort = np.argsort
    monkeypatch.setattr(np, "argsort", lambda *a, **k: sorts.append(1) or argsort(*a, **k))
    matrix = q.matrix()
    for stratum in np.array_split(np.arange(300), 100):
        assert np.array_equal(q.sums(stratum), np.cumsum(matrix[stratum], axis=0)[-1])
    assert len(sorts) == 1


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch
