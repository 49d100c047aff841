"""The per-reference quantity matrix the summary metrics are sums of (``matching.summary``'s
QUANTITIES), made block by block of reference rows rather than whole.

A national layer's matrix is 26 float64 columns, 208 MB per million fields; the summary, its
strata and size classes need only its column sums, so ``Quantities.sums`` makes the rows of
``BLOCK_ROWS`` reference fields at a time and adds them. Only the bootstrap (and compare.py's
paired bootstrap) needs every row at once (``Quantities.matrix``).

The sums are the same bits in every run of the same rows: rows are added in row order, one
block after the other from the first row (a block's rows by ``ndarray.sum(axis=0)``, which
adds rows one after the other, starting from the running sum), and a prediction's
quantities reach its home reference in input order, as ``np.bincount`` adds weights. A
one-piece run and a unit-by-unit run (``units``) reassemble the same columns, so their sums
agree to the last bit.
"""

from __future__ import annotations

import functools

import numpy as np

from ..matching.summary import Q, QUANTITIES

#: Reference rows per block of ``Quantities.sums``: 65,536 × 26 float64, 13.6 MB.
BLOCK_ROWS = 65_536

#: Per-prediction quantities, summed over the predictions of each home reference field.
_PREDICTED = ("n_pred", "n_pred_matched", "area_pred", "area_pred_matched",
              "legacy_underseg", "perim_pred", "within_len_pred")


class Quantities:
    """The per-reference quantities (n_ref, len(QUANTITIES)) of one evaluation, from its
    per-reference and per-prediction columns (held by reference, not copied).

    Args:
        ref_area: float (n_ref,), reference areas (m²).
        reference: the per-reference columns (``evaluate._Tables.reference``).
        n_above_ref: int (n_ref,): predictions at or above the threshold per reference.
        pred_area: float (n_pred,), predicted areas (m²).
        predicted: the per-prediction columns (``evaluate._Tables.predicted``).
        n_above_pred: int (n_pred,): references at or above the threshold per prediction.
        pred_home: int (n_pred,): home reference row of each prediction, -1 for none.
        tolerance_m: the boundary tolerance (m), or None: the tolerance columns stay 0.

    Attributes:
        unassigned: float (len(QUANTITIES),), the sums of counted predictions with no home
            reference field (predictions on ignore regions are neither TP nor FP).
    """

    def __init__(self, ref_area, reference, n_above_ref, pred_area, predicted, n_above_pred,
                 pred_home, tolerance_m):
        self._ref_area, self._r, self._n_above_ref = ref_area, reference, n_above_ref
        self._tolerance_m = tolerance_m
        self._pred_area, self._p, self._n_above_pred = pred_area, predicted, n_above_pred
        counted = ~predicted["ignored"]
        self._home = pred_home
        self._homed = np.flatnonzero((pred_home >= 0) & counted)
        unhomed = np.flatnonzero((pred_home < 0) & counted)
        self.unassigned = np.zeros(len(QUANTITIES))
        for name in _PREDICTED:
            self.unassigned[Q[name]] = self._predicted_values(name, unhomed).sum()

    def _predicted_values(self, name: str, at) -> np.ndarray:
        """Quantity ``name`` of the predictions at positions ``at`` (int array)."""
        p = self._p
        if name == "n_pred":
            return np.ones(len(at))
        if name == "n_pred_matched":
            return p["matched"][at].astype(float)
        if name == "area_pred":
            return self._pred_area[at]
        if name == "area_pred_matched":
            return self._pred_area[at] * p["matched"][at]
        if name == "legacy_underseg":
            return (self._n_above_pred[at] > 1).astype(float)
        column = {"perim_pred": "perimeter_m", "within_len_pred": "boundary_within_tolerance_m"}
        values = p.get(column[name])
        return np.zeros(len(at)) if values is None else values[at]

    def __len__(self) -> int:
        return len(self._ref_area)

    def rows(self, index) -> np.ndarray:
        """float (len(index), len(QUANTITIES)): the quantities of reference rows ``index``
        (int array, increasing, or a slice)."""
        index = np.arange(len(self))[index] if isinstance(index, slice) else index
        r = self._r
        matched = r["matched"][index]
        m = matched.astype(float)
        area = self._ref_area[index]
        iou, best = r["iou"][index], r["best_iou"][index]
        q = np.zeros((len(index), len(QUANTITIES)))
        q[:, Q["n_ref"]] = 1.0
        q[:, Q["area_ref"]] = area
        q[:, Q["tp"]] = m
        q[:, Q["iou_tp"]] = np.where(matched, iou, 0.0)
        q[:, Q["best_iou"]] = best
        area_error = np.where(matched, r["pred_area_m2"][index] - area, 0.0)
        q[:, Q["abs_area_err_tp"]] = np.abs(area_error)
        q[:, Q["signed_area_err_tp"]] = area_error
        q[:, Q["area_ref_tp"]] = area * m
        q[:, Q["os"]] = r["oversegmentation"][index]
        under = r["undersegmentation"][index]
        q[:, Q["us"]] = np.nan_to_num(under, nan=0.0)
        q[:, Q["us_defined"]] = np.isfinite(under)
        q[:, Q["legacy_overseg"]] = self._n_above_ref[index] > 1
        mean_distance = r["boundary_mean_distance_m"][index]
        has_distance = matched & np.isfinite(mean_distance)
        q[:, Q["n_dist"]] = has_distance
        q[:, Q["hausdorff"]] = np.where(has_distance, r["hausdorff_m"][index], 0.0)
        q[:, Q["mean_dist"]] = np.where(has_distance, mean_distance, 0.0)
        if self._tolerance_m is not None:
            within = r["within_tolerance"][index]
            q[:, Q["perim_ref"]] = r["perimeter_m"][index]
            q[:, Q["within_len_ref"]] = r["boundary_within_tolerance_m"][index]
            q[:, Q["within_tol"]] = within
            q[:, Q["area_within_tol"]] = area * within
        self._add_predicted(q, index)
        return q

    @functools.cached_property
    def _by_home(self):
        """The counted predictions with a home, ordered by home (input order within one):
        (their positions, where each reference row's start among them (n_ref + 1,)).

        Made once and kept (16 B per row): every block, stratum and size class sums its
        members through it, and sorting every prediction again for each would make a layer
        of thousands of strata quadratic."""
        home = self._home[self._homed]
        order = np.argsort(home, kind="stable")
        starts = np.searchsorted(home[order], np.arange(len(self) + 1))
        return self._homed[order], starts

    def _add_predicted(self, q, index) -> None:
        """Per-prediction quantities summed over each reference row of ``index`` that is
        their home, each row's in input order of the predictions (as ``np.bincount`` adds
        them, which a one-piece summary did over every row at once)."""
        if len(index) == len(self):  # every row: one bincount
            keep = self._homed
            label = self._home[keep]
        else:
            ordered, starts = self._by_home
            first, count = starts[index], starts[index + 1] - starts[index]
            label = np.repeat(np.arange(len(index)), count)
            offset = np.arange(len(label)) - np.repeat(np.cumsum(count) - count, count)
            keep = ordered[np.repeat(first, count) + offset]
        for name in _PREDICTED:
            q[:, Q[name]] = np.bincount(label, weights=self._predicted_values(name, keep),
                                        minlength=len(index))

    def sums(self, members=None) -> np.ndarray:
        """float (len(QUANTITIES),): column sums over reference rows ``members`` (int array,
        increasing), or over every row (None); rows added block by block in row order."""
        rows = np.arange(len(self)) if members is None else np.asarray(members, np.int64)
        total = np.zeros(len(QUANTITIES))
        for start in range(0, len(rows), BLOCK_ROWS):
            block = self.rows(rows[start:start + BLOCK_ROWS])
            total = block.sum(axis=0) if start == 0 else np.concatenate(
                [total[None], block]).sum(axis=0)
        return total

    def matrix(self) -> np.ndarray:
        """float (n_ref, len(QUANTITIES)): every row (208 MB per million fields), for the
        bootstrap's resampled sums."""
        return self.rows(slice(None))
