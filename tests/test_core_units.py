"""Exact work units (core/evaluation/units.py): a unit-by-unit run gives the one-piece run's
numbers, key by key; giant units; executors (threads, a local Dask cluster); cancellation."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dask_cluster import dask_scheduler

from iou_evaluation.core import EvaluationCanceled, Progress, evaluate
from iou_evaluation.core.evaluation.evaluate import Options, check_rows
from iou_evaluation.core.evaluation.units import split_units
from iou_evaluation.core.util.memory import MEMORY_LIMIT_ENV, InsufficientMemoryError


def _compare(a, b, path, out=None):
    """Differences between two results (nested dicts, lists, arrays, numbers) as paths:
    every value must be identical, floats bit for bit (NaN equal to NaN), boundary numbers
    included (boundary/distances.py and boundary/tolerance.py give each pair and polygon
    numbers that do not depend on its batch)."""
    out = [] if out is None else out
    if isinstance(a, dict):
        if list(a) != list(b):
            out.append(f"{path}: keys {sorted(set(a) ^ set(b))} or their order")
            return out
        for key in a:
            _compare(a[key], b[key], f"{path}.{key}", out)
        return out
    if isinstance(a, (list, tuple)) and not isinstance(b, np.ndarray):
        if len(a) != len(b):
            out.append(f"{path}: length")
            return out
        for k, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, f"{path}[{k}]", out)
        return out
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            out.append(f"{path}: shape or dtype {a.shape} {b.shape} {a.dtype} {b.dtype}")
        elif a.dtype.kind == "f":
            if not np.array_equal(a, b, equal_nan=True):
                out.append(f"{path}: values")
        elif not all(x == y for x, y in zip(a.tolist(), b.tolist())):
            out.append(f"{path}: values")
        return out
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return out
    if type(a) is not type(b) or a != b:
        out.append(f"{path}: {a!r} != {b!r}")
    return out


def _differences(one, units):
    out = []
    for name in ("metrics", "parameters", "per_reference", "per_predicted", "warnings",
                 "ignore_coverage", "unassigned"):
        _compare(getattr(one, name), getattr(units, name), name, out)
    _compare(one.quantities.matrix(), units.quantities.matrix(), "quantities", out)
    for name in ("reference", "predicted"):
        _compare(getattr(one, name).keep, getattr(units, name).keep, f"{name}.keep", out)
    for layer in ("pairs", "candidates"):
        for name in ("reference", "predicted", "intersection_m2", "iou"):
            _compare(getattr(getattr(one, layer), name), getattr(getattr(units, layer), name),
                     f"{layer}.{name}", out)
    return out


def _fields(nx, ny, seed, cell=100.0, gap=50.0):
    """Blocks of 2 × 2 jittered fields sharing edges, separated by roads ``gap`` wide (as
    the bench generator's), and predictions: shifted and shrunk copies, merges of
    neighbours (some across a road), splits, misses, extras. Components of the candidate
    graph are a block or a few blocks joined by a merge, so small units cut between them."""
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-0.2, 0.2, (nx + 1, ny + 1, 2)) * cell
    jitter[::2, :, 0] = 0  # block edges straight
    jitter[:, ::2, 1] = 0

    def corner(i, j, di, dj):
        # Corner (i + di, j + dj) of cell (i, j), on its own block's side of a road.
        x = (i + di) * cell + (i // 2) * gap + jitter[i + di, j + dj, 0]
        y = (j + dj) * cell + (j // 2) * gap + jitter[i + di, j + dj, 1]
        return x, y

    reference = []
    for i in range(nx):
        for j in range(ny):
            reference.append(shapely.Polygon(
                [corner(i, j, 0, 0), corner(i, j, 1, 0), corner(i, j, 1, 1), corner(i, j, 0, 1)]))
    reference = np.array(reference, dtype=object)
    predicted = []
    for k, field in enumerate(reference):
        outcome = rng.random()
        if outcome < 0.1:
            continue  # missed
        shift = np.clip(rng.normal(0, 0.05 * cell, 2), -0.1 * cell, 0.1 * cell)
        moved = shapely.affinity.translate(field, *shift)
        if outcome < 0.15 and k + 1 < len(reference):
            predicted.append(shapely.union(moved, shapely.affinity.translate(
                reference[k + 1], *shift)).buffer(0))
        elif outcome < 0.3:
            x0, y0, x1, y1 = moved.bounds
            half = shapely.box(x0, y0, (x0 + x1) / 2, y1)
            predicted += [moved.intersection(half), moved.difference(half)]
        else:
            predicted.append(shapely.affinity.scale(moved, 0.9, 0.95))
    for _ in range(max(1, len(reference) // 10)):
        x, y = rng.uniform(0, nx * cell * 1.2), rng.uniform(0, ny * cell * 1.2)
        predicted.append(shapely.box(x, y, x + 0.5 * cell, y + 0.3 * cell))
    predicted.append(None)
    predicted.append(shapely.Polygon())
    return reference, np.array(predicted, dtype=object)


def _options(data, n_ref, n_pred):
    """Keyword arguments of evaluate with every option hypothesis chooses to turn on."""
    kwargs = {
        "matching": data.draw(st.sampled_from(["one_to_one", "many_to_one", "optimal"])),
        "iou_threshold": data.draw(st.sampled_from([0.3, 0.5, 0.7])),
    }
    if data.draw(st.booleans()):
        kwargs["reference_ignore"] = [k % 7 == 3 for k in range(n_ref)]
    if data.draw(st.booleans()):
        kwargs["reference_groups"] = [k % 2 for k in range(n_ref)]
        kwargs["predicted_groups"] = [0] * n_pred
    if data.draw(st.booleans()):
        kwargs["reference_classes"] = ["wheat" if k % 3 else "crop" for k in range(n_ref)]
        kwargs["predicted_classes"] = ["wheat" if k % 4 else "barley" for k in range(n_pred)]
        kwargs["taxonomy"] = {"wheat": "crop", "barley": "crop"}
    if data.draw(st.booleans()):
        kwargs["strata"] = ["north" if k % 5 else None for k in range(n_ref)]
        kwargs["strata_name"] = "county"
    if data.draw(st.booleans()):
        kwargs["size_bins"] = data.draw(st.sampled_from(["auto", [0.3, 0.8, 1.5]]))
    if data.draw(st.booleans()):
        kwargs["bootstrap"] = 20
        kwargs["bootstrap_seed"] = data.draw(st.integers(0, 5))
    if data.draw(st.booleans()):
        kwargs["predicted_scores"] = [((k * 37) % 101) / 100 for k in range(n_pred)]
    if data.draw(st.booleans()):
        kwargs["boundary_tolerance_m"] = data.draw(st.sampled_from([2.0, 5.0]))
        if data.draw(st.booleans()):
            kwargs["tolerance_multiples"] = (1.0, 2.0, 4.0)
    return kwargs


def drawn_layers(data, max_side: int):
    """(reference, predicted, evaluate's keyword arguments) that hypothesis draws: blocks of
    ``_fields`` up to ``max_side`` fields a side, every option ``_options`` may turn on,
    planar or in a UTM zone (New Mexico, metres)."""
    nx, ny = data.draw(st.integers(2, max_side)), data.draw(st.integers(2, max_side))
    reference, predicted = _fields(nx, ny, data.draw(st.integers(0, 10_000)))
    kwargs = _options(data, len(reference), len(predicted))
    crs = data.draw(st.sampled_from([None, "EPSG:32613"]))
    if crs is not None:
        reference = shapely.transform(reference, lambda xy: xy + [320_000, 3_830_000])
        predicted = shapely.transform(predicted, lambda xy: xy + [320_000, 3_830_000])
    kwargs.update(predicted_crs=crs, reference_crs=crs)
    return reference, predicted, kwargs


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_unit_by_unit_run_equals_the_one_piece_run_key_by_key(data):
    reference, predicted, kwargs = drawn_layers(data, max_side=7)
    one = evaluate(predicted, reference, **kwargs)
    units = evaluate(predicted, reference, work_unit_features=data.draw(st.integers(1, 12)),
                     **kwargs)
    assert _differences(one, units) == []


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_boundary_numbers_of_many_small_units_equal_the_one_piece_run_bit_for_bit(data):
    """The boundary keys above with every boundary option on: a tolerance and the curve's
    multiples, distances at a fixed or automatic spacing, many units of a few rows (fields
    and merged predictions across the units' edges), planar and in a UTM zone. Every key of
    the report, the per-field and per-prediction boundary columns (hausdorff_m,
    boundary_mean_distance_m, perimeter_m, boundary_within_tolerance_m, boundary_recall)
    and the quantities are compared with ==."""
    nx, ny = data.draw(st.integers(3, 7)), data.draw(st.integers(3, 7))
    reference, predicted = _fields(nx, ny, data.draw(st.integers(0, 10_000)))
    crs = data.draw(st.sampled_from([None, "EPSG:32613"]))
    if crs is not None:
        reference = shapely.transform(reference, lambda xy: xy + [320_000, 3_830_000])
        predicted = shapely.transform(predicted, lambda xy: xy + [320_000, 3_830_000])
    kwargs = {
        "predicted_crs": crs, "reference_crs": crs,
        "boundary_tolerance_m": data.draw(st.sampled_from([1.0, 3.0, 8.0])),
        "tolerance_multiples": (1.0, 1.5, 2.0, 3.0, 4.0),
        "boundary_sample_spacing_m": data.draw(st.sampled_from([1.0, 0.3, None])),
        "matching": data.draw(st.sampled_from(["one_to_one", "many_to_one"])),
    }
    one = evaluate(predicted, reference, **kwargs)
    assert one.metrics["count_tp"] > 0
    assert np.isfinite(one.per_reference["hausdorff_m"]).any()
    units = evaluate(predicted, reference, work_unit_features=data.draw(st.integers(1, 6)),
                     **kwargs)
    assert _differences(one, units) == []
    for name in ("hausdorff_m", "boundary_mean_distance_m", "perimeter_m",
                 "boundary_within_tolerance_m", "boundary_recall"):
        assert np.array_equal(one.per_reference[name], units.per_reference[name],
                              equal_nan=True), name
    assert np.array_equal(one.per_predicted["boundary_within_tolerance_m"],
                          units.per_predicted["boundary_within_tolerance_m"], equal_nan=True)


def test_units_keep_whole_components_and_cover_every_row_once():
    reference, predicted = _fields(8, 8, seed=3)
    options = Options.check(iou_threshold=0.5, boundary_tolerance_m=5.0)
    rows = check_rows(predicted, reference)
    units = split_units(rows, options, max_features=10)
    assert len(units) > 5
    ref_seen = np.sort(np.concatenate([u.reference_rows for u in units]))
    pred_seen = np.sort(np.concatenate([u.predicted_rows for u in units]))
    assert ref_seen.tolist() == list(range(len(reference)))
    assert pred_seen.tolist() == list(range(len(predicted)))
    unit_of_ref = np.empty(len(reference), int)
    unit_of_pred = np.empty(len(predicted), int)
    for k, u in enumerate(units):
        unit_of_ref[u.reference_rows] = k
        unit_of_pred[u.predicted_rows] = k
    # Every pair within 5 m (the reach) is inside one unit.
    present = np.flatnonzero(~shapely.is_missing(predicted) & ~shapely.is_empty(predicted))
    r, p = shapely.STRtree(predicted[present]).query(reference, predicate="dwithin",
                                                     distance=5.0)
    assert np.array_equal(unit_of_ref[r], unit_of_pred[present[p]])


def test_a_giant_unit_is_evaluated_whole_and_gives_the_same_numbers():
    reference, predicted = _fields(6, 6, seed=5)
    # One prediction over every field: a single component, larger than the unit size.
    predicted = np.append(predicted, shapely.box(-50, -50, 800, 800))
    one = evaluate(predicted, reference, boundary_tolerance_m=3.0)
    units = evaluate(predicted, reference, boundary_tolerance_m=3.0, work_unit_features=4)
    assert _differences(one, units) == []


def test_a_giant_unit_beyond_the_memory_budget_stops_before_reading_naming_its_features(
        monkeypatch):
    reference, predicted = _fields(4, 4, seed=1)
    # A prediction of 200,000 vertices over every field (a polygonised raster, say), built
    # vertex by vertex: a buffer's vertex count depends on the GEOS version (3.13 caps it).
    angles = np.linspace(0.0, 2.0 * np.pi, 200_000, endpoint=False)
    giant = shapely.Polygon(np.column_stack([200 + 400 * np.cos(angles),
                                             200 + 400 * np.sin(angles)]))
    predicted = np.append(predicted, giant)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "10")  # 10 MiB: the unit needs ~80 MB
    with pytest.raises(InsufficientMemoryError) as caught:
        evaluate(predicted, reference, work_unit_features=5)
    message = str(caught.value)
    assert f"predicted row {len(predicted) - 1}" in message
    assert "200,001 vertices" in message
    assert "stopped before allocating" in message


def test_a_thread_pool_executor_gives_the_same_numbers():
    reference, predicted = _fields(6, 5, seed=11)
    kwargs = {"bootstrap": 10, "predicted_scores": list(np.linspace(0, 1, len(predicted)))}
    one = evaluate(predicted, reference, **kwargs)
    with ThreadPoolExecutor(2) as pool:
        units = evaluate(predicted, reference, executor=pool, work_unit_features=6, **kwargs)
    assert _differences(one, units) == []


class _CancelAfter(Progress):
    """Asks to cancel once progress passes ``percent``; records what it was told."""

    def __init__(self, percent):
        self.percent = percent
        self.seen = []

    def report(self, percent, message=""):
        self.seen.append(percent)

    def is_canceled(self):
        return bool(self.seen) and self.seen[-1] > self.percent


def test_cancelling_mid_run_stops_between_units():
    reference, predicted = _fields(8, 8, seed=2)
    progress = _CancelAfter(20)
    with pytest.raises(EvaluationCanceled):
        evaluate(predicted, reference, work_unit_features=8, progress=progress)
    assert 20 < progress.seen[-1] < 75  # during the units, before the summary


def test_a_dask_scheduler_and_two_worker_processes_give_the_same_numbers(tmp_path):
    """A scheduler and two workers started as the README says, each a process of its own:
    none is a child of a QGIS process."""
    distributed = pytest.importorskip("distributed")
    reference, predicted = _fields(6, 6, seed=7)
    kwargs = {"boundary_tolerance_m": 2.0, "tolerance_multiples": (1.0, 2.0), "bootstrap": 10,
              "predicted_scores": list(np.linspace(0, 1, len(predicted)))}
    one = evaluate(predicted, reference, **kwargs)
    with dask_scheduler(tmp_path, n_workers=2) as address, \
            distributed.Client(address, timeout=60) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        units = evaluate(predicted, reference, executor=client, work_unit_features=8, **kwargs)
    assert _differences(one, units) == []


def test_layers_in_two_crss_split_into_the_same_numbers():
    """Predicted envelopes are transformed to the reference CRS (densified, widened): the
    units still hold every overlapping pair."""
    import pyproj

    reference, predicted = _fields(6, 6, seed=13)
    reference = shapely.transform(reference, lambda xy: xy + [320_000, 3_830_000])
    predicted = shapely.transform(predicted, lambda xy: xy + [320_000, 3_830_000])
    to_lonlat = pyproj.Transformer.from_crs("EPSG:32613", "EPSG:4326", always_xy=True)
    predicted = shapely.transform(predicted, lambda xy: np.column_stack(
        to_lonlat.transform(xy[:, 0], xy[:, 1])))
    kwargs = {"reference_crs": "EPSG:32613", "predicted_crs": "EPSG:4326",
              "boundary_tolerance_m": 3.0}
    one = evaluate(predicted, reference, **kwargs)
    units = evaluate(predicted, reference, work_unit_features=5, **kwargs)
    assert one.metrics["count_tp"] > 0
    assert _differences(one, units) == []


def _squares(x0, y0, nx, ny, size, gap):
    """nx × ny squares ``size`` wide, ``gap`` apart (object array, row by row)."""
    return np.array([shapely.box(x0 + i * (size + gap), y0 + j * (size + gap),
                                 x0 + i * (size + gap) + size, y0 + j * (size + gap) + size)
                     for i in range(nx) for j in range(ny)], dtype=object)


def _units_give_the_one_piece_run(predicted, reference, **kwargs):
    """The one-piece evaluation, after checking that units of one row give it key by key."""
    one = evaluate(predicted, reference, **kwargs)
    assert _differences(one, evaluate(predicted, reference, work_unit_features=1,
                                      **kwargs)) == []
    return one


def test_units_in_web_mercator_far_north_reach_as_far_as_the_tolerance_on_the_ground():
    # Fields 100 m square, 15 m apart on the ground at 75° N, drawn in EPSG:3857, where a
    # metre on the ground is 3.9 m of the CRS: a 10 m tolerance reaches the neighbours.
    import pyproj

    to_mercator = pyproj.Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True)

    def mercator(geometries):
        dense = shapely.segmentize(geometries, 10.0)
        return shapely.transform(dense, lambda xy: np.column_stack(
            to_mercator.transform(xy[:, 0], xy[:, 1])))

    reference = _squares(500_000.0, 8_320_000.0, 4, 4, 100.0, 15.0)
    predicted = shapely.transform(reference, lambda xy: xy + [8.0, 8.0])  # 7 m from the next
    reference, predicted = mercator(reference), mercator(predicted)
    kwargs = dict(predicted_crs="EPSG:3857", reference_crs="EPSG:3857",
                  boundary_tolerance_m=10.0)
    one = _units_give_the_one_piece_run(predicted, reference, **kwargs)
    assert 0 < one.metrics["boundary_f1"] < 1


def test_units_near_a_pole_in_longitude_latitude_reach_every_longitude_they_must():
    # Cells 100 m square at 89.95° N, 20 m apart along the parallel, predictions 12 m east of
    # their own: 8 m from the next cell, within a 10 m tolerance (a metre there is 0.01° of
    # longitude).
    lat0, dlat = 89.95, 100 / 111_694.0
    metre = 1 / (111_320 * math.cos(math.radians(lat0 + dlat / 2)))  # of longitude
    reference = np.array([shapely.box(-170 + k * 120 * metre, lat0,
                                      -170 + (k * 120 + 100) * metre, lat0 + dlat)
                          for k in range(6)], dtype=object)
    predicted = shapely.transform(reference, lambda xy: xy + [12 * metre, 0])
    kwargs = dict(predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
                  boundary_tolerance_m=10.0)
    one = _units_give_the_one_piece_run(predicted, reference, **kwargs)
    assert 0 < one.metrics["boundary_f1"] < 1


def test_a_prediction_in_another_crs_meets_a_field_its_curved_image_reaches():
    # A predicted box 10° wide in EPSG:4326, its edge a vertex every 0.01°: in EPSG:5070 the
    # image of its bottom edge bends 17.8 m below the chord of 21 samples at -96°. A
    # reference square overlapping that image by 10 m must be in the prediction's unit.
    import pyproj

    lon = np.round(np.arange(-100.3, -90.3 + 1e-9, 0.01), 6)
    lat = np.round(np.arange(40.0, 41.0 + 1e-9, 0.01), 6)
    ring = ([(x, 40.0) for x in lon] + [(-90.3, y) for y in lat[1:]]
            + [(x, 41.0) for x in lon[::-1][1:]] + [(-100.3, y) for y in lat[::-1][1:]])
    predicted = np.array([shapely.Polygon(ring)], dtype=object)
    _, bottom = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:5070",
                                            always_xy=True).transform(-96.0, 40.0)
    top = bottom + 10.0
    reference = np.array([shapely.box(-100, top - 190, 100, top),
                          shapely.box(-100, top - 600, 100, top - 400)], dtype=object)
    kwargs = dict(predicted_crs="EPSG:4326", reference_crs="EPSG:5070")
    one = _units_give_the_one_piece_run(predicted, reference, **kwargs)
    assert one.per_reference["best_iou"][0] > 0  # the overlap, seen in one piece


@pytest.mark.parametrize("work_unit_features", [1, 2])
def test_a_hole_drawn_outside_its_shell_joins_the_unit_of_the_field_it_overlaps(
        work_unit_features):
    """GEOS takes a polygon's envelope from its shell; repair keeps the hole drawn outside
    it as a polygon of its own, which overlaps the field (found by a helper: 0 pairs in
    units, 1 in one piece)."""
    predicted = np.array([shapely.Polygon([(0, 0), (100, 0), (100, 100), (0, 100)],
                                          [[(120, 0), (140, 0), (140, 20)]])], dtype=object)
    reference = np.array([shapely.box(130, 0, 230, 100)], dtype=object)
    kwargs = {"predicted_crs": "EPSG:32633", "reference_crs": "EPSG:32633"}
    one = evaluate(predicted, reference, **kwargs)
    assert len(one.pairs.iou) == 1
    units = evaluate(predicted, reference, work_unit_features=work_unit_features, **kwargs)
    assert _differences(one, units) == []


def test_two_caps_drawn_round_the_pole_meet_in_one_unit():
    """A ring drawn round the pole at 85° N is read as the cap up to the pole: drawn, its
    envelope is a band of no height (found by a helper: TP 0 in units, 1 in one piece)."""
    def cap(lat):
        return shapely.Polygon([(lon, lat) for lon in (170, -170, -150, -90, 0, 90, 170)])

    reference = np.array([cap(85.0), shapely.box(10, 10, 11, 11)], dtype=object)
    predicted = np.array([cap(85.01), shapely.box(10, 10, 11, 11)], dtype=object)
    kwargs = {"predicted_crs": "EPSG:4326", "reference_crs": "EPSG:4326"}
    one = evaluate(predicted, reference, **kwargs)
    assert one.metrics["count_tp"] == 2
    units = evaluate(predicted, reference, work_unit_features=1, **kwargs)
    assert _differences(one, units) == []
