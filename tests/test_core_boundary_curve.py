"""The boundary F1 curve on large layers: measured on a random sample of polygons, each
exactly (every polygon of the other layer near it takes part).

The expected values are those of the whole layers measured by ``tolerance_lengths_in_utm_at``
(itself checked by hand in tests/test_core_threshold_sweep.py), read at the sampled rows, and
the two-squares-3-m-apart formula worked out by hand there.
"""

import numpy as np
import pytest
import shapely
from iou_evaluation.core.boundary import curve as boundary_curve
from iou_evaluation.core.boundary.distances import zoned_layer
from iou_evaluation.core.boundary.curve import _sampled_side, boundary_f1_by_tolerance
from iou_evaluation.core.boundary.tolerance import tolerance_lengths_in_utm_at

TOLERANCES = [2.0, 3.0, 4.0, 6.0, 8.0]


def grid_of_fields(crs, origin, unit, n=6, size=100.0, shift=3.0):
    """n×n touching square fields (side ``size`` m) and predictions shifted ``shift`` m in x
    with a 2 m inset, in ``crs`` with ``unit`` source units per metre."""
    x0, y0 = origin
    ref, pred = [], []
    for i in range(n):
        for j in range(n):
            x, y = x0 + i * size * unit, y0 + j * size * unit
            ref.append(shapely.box(x, y, x + size * unit, y + size * unit))
            pred.append(shapely.box(x + (shift + 2) * unit, y + 2 * unit,
                                    x + (size + shift - 2) * unit, y + (size - 2) * unit))
    return zoned_layer(ref, crs), zoned_layer(pred, crs)


@pytest.mark.parametrize("crs, origin, unit", [
    (None, (0.0, 0.0), 1.0),
    ("EPSG:32633", (500_000.0, 5_000_000.0), 1.0),
    ("EPSG:4326", (179.996, 60.0), 1e-5),  # across the antimeridian at 60° N
])
def test_a_sampled_side_measures_its_rows_as_the_whole_layers_do(crs, origin, unit):
    import pyproj
    crs = pyproj.CRS(crs) if crs else None
    ref, pred = grid_of_fields(crs, origin, unit)
    if crs is not None and crs.is_geographic:  # put half the fields beyond 180°, continuous
        ref = zoned_layer(ref.source, crs)
        wrapped = [shapely.transform(g, lambda xy: xy - [360.0, 0]) if g.bounds[0] >= 180
                   else g for g in pred.source]
        pred = zoned_layer(np.array(wrapped, dtype=object), crs)
    whole = tolerance_lengths_in_utm_at(ref, pred, TOLERANCES)
    rows = np.array([0, 7, 14, 21, 35])
    within, perimeter = _sampled_side(ref, pred, rows, TOLERANCES, max(TOLERANCES), None,
                                      first=True)
    np.testing.assert_allclose(within, whole[0][:, rows], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(perimeter, whole[1][rows], rtol=1e-12)
    within, perimeter = _sampled_side(pred, ref, rows, TOLERANCES, max(TOLERANCES), None,
                                      first=False)
    np.testing.assert_allclose(within, whole[2][:, rows], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(perimeter, whole[3][rows], rtol=1e-12)


def test_large_layers_are_sampled_and_say_so(monkeypatch):
    # Every field is the hand case of two squares 3 m apart (tests/test_core_threshold_sweep):
    # recall = precision = (2t + 2 (97 + t)) / 400 below t = 3 m, whatever the sample.
    fields = [shapely.box(i * 200.0, 0, i * 200.0 + 100, 100) for i in range(40)]
    shifted = [shapely.box(i * 200.0 + 3, 0, i * 200.0 + 103, 100) for i in range(40)]
    ref, pred = zoned_layer(fields, None), zoned_layer(shifted, None)
    curve = boundary_f1_by_tolerance(ref, pred, 1.0, multiples=(1.0, 2.0), sample_size=10)
    assert curve["sample"] == {"reference": 10, "predicted": 10, "reference_of": 40,
                               "predicted_of": 40, "seed": boundary_curve.CURVE_SAMPLE_SEED}
    expected = [(2 * t + 2 * (97 + t)) / 400 for t in (1.0, 2.0)]
    assert curve["boundary_recall"] == pytest.approx(expected, abs=1e-9)
    assert curve["boundary_precision"] == pytest.approx(expected, abs=1e-9)
    whole = boundary_f1_by_tolerance(ref, pred, 1.0, multiples=(1.0, 2.0), sample_size=None)
    assert whole["sample"] is None
    assert whole["boundary_f1"] == pytest.approx(expected, abs=1e-9)


def test_only_counted_predictions_are_sampled():
    fields = [shapely.box(i * 200.0, 0, i * 200.0 + 100, 100) for i in range(30)]
    ref, pred = zoned_layer(fields, None), zoned_layer(fields, None)
    counted = np.arange(30) < 12
    curve = boundary_f1_by_tolerance(ref, pred, 1.0, predicted_counted=counted,
                                     multiples=(1.0,), sample_size=10)
    assert curve["sample"]["predicted_of"] == 12
    assert curve["boundary_precision"] == [1.0]
