"""core.pairs.pair_table: every overlapping pair, scored (values by hand)."""

import pytest
import shapely
from shapely.geometry import box

from iou_evaluation.core.pairs.pair_table import overlap_pair_table

# Reference A = [0, 2] x [0, 2], B = [10, 12] x [0, 2].
REFERENCE = [box(0, 0, 2, 2), None, box(10, 0, 12, 2)]
PREDICTED = [
    box(1, 0, 3, 2),  # overlaps A by 2: IoU 2 / 6
    box(2, 0, 4, 2),  # touches A along x = 2 only: no pair
    box(11, 0, 12, 2),  # inside B: IoU 2 / 4
    box(0, 0, 12, 2),  # covers A and B: IoU 4 / 24 each
]


def table(**kwargs):
    return overlap_pair_table(PREDICTED, REFERENCE, predicted_crs=None, reference_crs=None,
                              **kwargs)


def test_every_overlapping_pair_with_hand_values():
    t = table()
    pairs = list(zip(t.predicted_index.tolist(), t.reference_index.tolist()))
    assert pairs == [(0, 0), (3, 0), (2, 2), (3, 2)]  # by reference, then prediction
    m = t.metrics
    assert list(m.intersection) == pytest.approx([2, 4, 2, 4])
    assert list(m.union) == pytest.approx([6, 24, 4, 24])
    assert list(m.iou) == pytest.approx([1 / 3, 1 / 6, 1 / 2, 1 / 6])
    assert list(m.dice) == pytest.approx([2 * 2 / 8, 2 * 4 / 28, 2 * 2 / 6, 2 * 4 / 28])
    assert list(m.area_a) == pytest.approx([4, 24, 2, 24])
    assert list(m.area_b) == pytest.approx([4, 4, 4, 4])
    # Pair (0, A): hull [0, 3] x [0, 2] = union, so GIoU = IoU; centroids 1 apart along x,
    # enclosing box diagonal² 3² + 2² = 13.
    assert m.giou[0] == pytest.approx(1 / 3)
    assert m.diou[0] == pytest.approx(1 / 3 - 1 / 13)
    assert t.reference.n_dropped == 1


def test_intersection_geometries_on_request():
    assert table().intersections is None
    t = table(with_intersections=True)
    assert list(shapely.area(t.intersections)) == pytest.approx([2, 4, 2, 4])
    assert t.intersections[0].equals(box(1, 0, 2, 2))


def test_no_pairs_when_a_layer_is_empty():
    t = overlap_pair_table([], REFERENCE, predicted_crs=None, reference_crs=None)
    assert t.n == 0 and len(t.metrics.iou) == 0
