"""Layers kept on disk (core/geometry/stored.py): the geometries come back as they went in,
and an evaluation of stored layers (in work units, reading a unit at a time) gives the
one-piece run's numbers key by key."""

import pickle

import numpy as np
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_core_units import _differences, _fields, drawn_layers

from iou_evaluation.core import evaluate
from iou_evaluation.core.geometry.stored import StoredGeometries
from iou_evaluation.core.pairs.study_area import (
    select_in_study_area,
    select_stored_in_study_area,
)

GEOMETRIES = np.array([
    shapely.box(0, 0, 10, 5),
    None,
    shapely.Polygon(),
    shapely.MultiPolygon([shapely.box(20, 0, 21, 1), shapely.box(30, 30, 33, 34)]),
    shapely.Polygon([(0, 0, 1), (5, 0, 2), (5, 5, 3), (0, 0, 1)]),  # Z kept
    shapely.Polygon([(0, 0), (10, 10), (10, 0), (0, 10), (0, 0)]),  # a bow tie, as it is
    shapely.box(0.1, 0.2, 0.30000000000000004, 1e300),
], dtype=object)


def _store(geometries, *splits):
    store = StoredGeometries()
    for part in np.split(geometries, list(splits)):
        store.append(part)
    return store


def _assert_contain_envelopes(bounds, geometries):
    """``bounds`` hold each row's envelope within one float32 step outwards (NaN for None
    or empty), the store's rule (``outward_float32``), checked without it."""
    envelope = shapely.bounds(np.asarray(geometries, dtype=object))
    assert bounds.dtype == np.float64 and bounds.shape == envelope.shape
    np.testing.assert_array_equal(np.isnan(bounds), np.isnan(envelope))
    known = ~np.isnan(envelope)
    b, e = bounds[known], envelope[known]
    assert np.all(bounds.astype(np.float32)[known] == b)  # float32 values
    low = np.zeros(envelope.shape, dtype=bool)
    low[:, :2] = True
    low = low[known]
    assert np.all(b[low] <= e[low]) and np.all(b[~low] >= e[~low])
    # One float32 step inwards would no longer contain the value.
    inward = np.where(low, np.nextafter(b.astype(np.float32), np.float32(np.inf)),
                      np.nextafter(b.astype(np.float32), np.float32(-np.inf)))
    finite = np.isfinite(b)
    assert np.all(np.where(low, inward > e, inward < e)[finite & (b != e)])


def _same(a, b):
    """Element by element: both None, or the same WKB (coordinates bit for bit)."""
    return [x is y is None or (x is not None and y is not None
                               and shapely.to_wkb(x) == shapely.to_wkb(y))
            for x, y in zip(a, b)]


def test_stored_rows_come_back_bit_for_bit_with_their_envelopes_and_vertex_counts():
    with _store(GEOMETRIES, 2, 3) as store:
        assert len(store) == len(GEOMETRIES)
        assert all(_same(store.take(np.arange(len(GEOMETRIES))), GEOMETRIES))
        assert all(_same(store.take(slice(1, 5)), GEOMETRIES[1:5]))
        _assert_contain_envelopes(store.bounds, GEOMETRIES)
        assert store.num_coordinates.tolist() == [5, 0, 0, 10, 4, 5, 5]
        backwards = store.view(np.arange(len(GEOMETRIES))[::-1])
        assert all(_same(backwards.take(np.arange(len(GEOMETRIES))), GEOMETRIES[::-1]))
        assert store.wkb([0, 1]) == [shapely.to_wkb(GEOMETRIES[0]), None]
        assert len(store.take(np.zeros(0, dtype=np.int64))) == 0


def test_a_view_of_a_view_reads_the_rows_it_names():
    with _store(GEOMETRIES, 4) as store:
        backwards = store.view(np.arange(len(GEOMETRIES))[::-1])  # rows 6, 5, ..., 0
        some = backwards.view(np.array([0, 3, 6, 3]))  # rows 6, 3, 0, 3
        assert len(some) == 4
        assert all(_same(some.take(slice(None)), GEOMETRIES[[6, 3, 0, 3]]))
        _assert_contain_envelopes(some.bounds, GEOMETRIES[[6, 3, 0, 3]])
        assert some.num_coordinates.tolist() == [5, 10, 5, 10]
        assert some.wkb(slice(1, 3)) == [shapely.to_wkb(GEOMETRIES[3]),
                                         shapely.to_wkb(GEOMETRIES[0])]
        assert len(store.view(slice(2, 2))) == 0 and len(some.view([])) == 0


def test_a_store_is_written_once_and_never_pickled():
    store = _store(GEOMETRIES)
    store.take([0])
    with pytest.raises(RuntimeError, match="not yet read"):
        store.append(GEOMETRIES)
    with pytest.raises(RuntimeError):
        store.view([0]).append(GEOMETRIES)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(store)
    store.close()


def test_a_view_reads_its_replaced_rows_from_a_sibling_of_the_store():
    replacements = np.array([shapely.box(7, 7, 8, 9), None], dtype=object)
    with _store(GEOMETRIES, 3) as store:
        sibling = store.sibling()
        sibling.append(replacements)
        view = store.view(np.array([6, 0, 3, 5]), replaced=([1, 3], sibling, [1, 0]))
        expected = np.array([GEOMETRIES[6], None, GEOMETRIES[3], replacements[0]],
                            dtype=object)
        assert len(view) == 4
        assert all(_same(view.take(slice(None)), expected))
        _assert_contain_envelopes(view.bounds, expected)
        assert view.num_coordinates.tolist() == [5, 0, 10, 5]
        assert view.wkb([3, 1]) == [shapely.to_wkb(replacements[0]), None]
        # A view of it keeps the replacements: rows 3, 0 of the view.
        again = view.view(np.array([3, 0]))
        assert all(_same(again.take(slice(None)), expected[[3, 0]]))
        # Replacing rows in a slice of a view leaves that view as it was.
        backwards = store.view(np.arange(len(GEOMETRIES))[::-1])
        replaced = backwards.view(slice(0, 3), replaced=([0], sibling, [0]))
        assert all(_same(replaced.take(slice(None)),
                         [replacements[0], GEOMETRIES[5], GEOMETRIES[4]]))
        assert all(_same(backwards.take(slice(None)), GEOMETRIES[::-1]))
        other = _store(GEOMETRIES).sibling()
        with pytest.raises(ValueError, match="sibling"):
            store.view([0], replaced=([0], other, [0]))
        # Replacing rows of a view with replacements keeps both (a unit run's sources
        # given to another unit run).
        more = store.sibling()
        more.append(np.array([shapely.box(1, 1, 2, 2)], dtype=object))
        both = view.view(np.array([3, 2, 1]), replaced=([1], more, [0]))
        assert all(_same(both.take(slice(None)),
                         [replacements[0], shapely.box(1, 1, 2, 2), None]))
        with pytest.raises(RuntimeError, match="not yet read"):
            sibling.append(replacements)


def _with_faults(geometries, seed):
    """The geometries with about one in four changed by preparation: bow ties (repaired),
    3D rings (made 2D), collections of a polygon and a line (reduced to the polygon)."""
    rng = np.random.default_rng(seed)
    out = geometries.copy()
    for k in np.flatnonzero(rng.random(len(out)) < 0.25):
        if out[k] is None or out[k].is_empty:
            continue
        x0, y0, x1, y1 = out[k].bounds
        kind = rng.integers(3)
        if kind == 0:
            out[k] = shapely.Polygon([(x0, y0), (x1, y1), (x1, y0), (x0, y1)])
        elif kind == 1:
            out[k] = shapely.force_3d(out[k], z=float(rng.integers(1, 9)))
        else:
            out[k] = shapely.GeometryCollection(
                [out[k], shapely.LineString([(x0, y0), (x1, y1)])])
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sources_changed_by_preparation_are_the_one_piece_runs_on_disk_and_in_memory(seed):
    reference, predicted = _fields(5, 4, seed=seed)
    reference, predicted = _with_faults(reference, seed), _with_faults(predicted, seed + 10)
    kwargs = {"reference_ignore": [k % 6 == 1 for k in range(len(reference))]}
    one = evaluate(predicted, reference, **kwargs)
    stored = evaluate(_store(predicted), _store(reference, 7), work_unit_features=9, **kwargs)
    in_memory = evaluate(predicted, reference, work_unit_features=9, **kwargs)
    assert _differences(one, stored) == [] and _differences(one, in_memory) == []
    inputs = {"reference": reference, "predicted": predicted}
    for name in ("reference", "predicted"):
        expected = getattr(one, name).source
        assert expected.dtype == object and len(expected)
        changed = [s is not g for s, g in zip(expected, inputs[name][getattr(one, name).keep])]
        assert any(changed) and not all(changed)  # both kinds of row are written
        source = getattr(stored, name).source
        assert all(_same(source.take(np.arange(len(source))), expected))
        assert all(_same(getattr(in_memory, name).source, expected))


def test_the_sources_of_a_stored_unit_run_can_be_evaluated_again_in_units():
    bow_tie = shapely.Polygon([(0, 0), (10, 10), (10, 0), (0, 10)])
    reference = np.array([shapely.box(0, 0, 10, 10), bow_tie, shapely.box(20, 0, 30, 10)])
    predicted = np.array([shapely.box(1, 0, 11, 10), shapely.box(0, 0, 10, 10), bow_tie])
    with _store(reference) as r, _store(predicted) as p:
        first = evaluate(p, r, work_unit_features=2)
        again = evaluate(first.predicted.source, first.reference.source, work_unit_features=2)
        one = evaluate(first.predicted.source.take(slice(None)),
                       first.reference.source.take(slice(None)))
        assert _differences(one, again) == []


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_stored_layers_give_the_one_piece_run_key_by_key(data):
    reference, predicted, kwargs = drawn_layers(data, max_side=6)
    one = evaluate(predicted, reference, **kwargs)
    split = data.draw(st.integers(0, len(reference)))
    stored = evaluate(_store(predicted), _store(reference, split),
                      work_unit_features=data.draw(st.integers(1, 30)), **kwargs)
    assert _differences(one, stored) == []
    # The repaired source geometries (the TP/FP/FN outputs are written from) are on disk.
    for name in ("reference", "predicted"):
        source = getattr(stored, name).source
        assert isinstance(source, StoredGeometries)
        expected = getattr(one, name).source
        assert all(_same(source.take(np.arange(len(source))), expected))


def test_stored_layers_are_evaluated_in_units_of_the_default_size_without_being_asked():
    reference, predicted = _fields(4, 4, seed=1)
    stored = evaluate(_store(predicted), _store(reference))
    one = evaluate(predicted, reference)
    assert _differences(one, stored) == []
    assert isinstance(stored.reference.source, StoredGeometries)


def test_per_unit_row_counts_are_not_logged_only_the_whole_runs(caplog):
    reference, predicted = _fields(4, 4, seed=2)  # one null and one empty prediction
    with caplog.at_level("WARNING"):
        evaluate(_store(predicted), _store(reference), work_unit_features=3)
    dropped = [r.getMessage() for r in caplog.records if "not evaluated" in r.getMessage()]
    assert dropped == [f"2 of {len(predicted)} predicted rows are not evaluated "
                       "(null 1, empty 1)"]


@pytest.mark.parametrize("rule", ["intersects", "centroid_within", "clip"])
def test_a_stored_layer_is_selected_by_a_study_area_as_in_one_call(rule):
    reference, _ = _fields(6, 6, seed=4)
    area = shapely.box(120, 80, 480, 390)
    whole = select_in_study_area(reference, None, area, None, rule)
    chunked = select_stored_in_study_area(_store(reference), None, area, None, rule,
                                          chunk_rows=5)
    assert chunked.keep.tolist() == whole.keep.tolist()
    assert (chunked.n_outside, chunked.n_clipped) == (whole.n_outside, whole.n_clipped)
    assert all(_same(chunked.geometries.take(np.arange(len(whole.keep))), whole.geometries))


@given(st.lists(st.floats(allow_nan=False, width=64), min_size=4, max_size=4))
def test_outward_float32_boxes_contain_the_box_and_are_one_step_from_it(values):
    from iou_evaluation.core.geometry.stored import outward_float32

    xmin, xmax = sorted(values[::2])
    ymin, ymax = sorted(values[1::2])
    box = np.array([[xmin, ymin, xmax, ymax]])
    out = outward_float32(box)
    assert out.dtype == np.float32
    low, high = out[0, :2].astype(np.float64), out[0, 2:].astype(np.float64)
    assert np.all(low <= box[0, :2]) and np.all(high >= box[0, 2:])
    # No float32 lies strictly between a value and its rounding (within float32's range).
    inside = np.abs(box[0]) <= np.finfo(np.float32).max
    step_in = np.r_[np.nextafter(out[0, :2], np.float32(np.inf)),
                    np.nextafter(out[0, 2:], np.float32(-np.inf))].astype(np.float64)
    assert np.all(np.where(np.arange(4) < 2, step_in > box[0], step_in < box[0])[inside])
