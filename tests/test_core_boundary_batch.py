"""Batch independence of the boundary numbers (boundary/distances.py, boundary/_exact.py,
boundary/tolerance.py): a pair's Hausdorff and mean boundary distance, and a polygon's
boundary length within the tolerance and its perimeter, are the same bits whether it is
measured alone (with its own neighbours) or among many others, in any order, and whatever
the sizes of the blocks, tiles and batches the solvers cut their work into. This is what
makes a unit-by-unit run (core/evaluation/units.py) give the one-piece run's numbers."""

import numpy as np
import pyproj
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iou_evaluation.core.boundary import _exact, distances, tolerance
from iou_evaluation.core.boundary.distances import pair_boundary_distances
from iou_evaluation.core.boundary.tolerance import tolerance_lengths_in_utm_at
from iou_evaluation.core.boundary.zones import zoned_layer


def _ring(rng, cx, cy, radius, n, noise):
    """A noisy star-shaped polygon of n vertices (made valid)."""
    t = np.sort(rng.uniform(0, 2 * np.pi, n))
    r = radius * (1 + noise * rng.standard_normal(n))
    return shapely.make_valid(shapely.Polygon(np.column_stack([cx + r * np.cos(t),
                                                               cy + r * np.sin(t)])))


def _layers(seed, n=24, offset=(0.0, 0.0)):
    """Reference fields on a jittered grid (some finely cut: many short segments, which the
    tolerance stage sets aside by runs; some with a few long ones) and predictions: moved,
    noisier copies, a few merged with a neighbour, a few missing, a few extra."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    ref, pred = [], []
    for k in range(n):
        cx = offset[0] + (k % side) * 60.0 + rng.uniform(-5, 5)
        cy = offset[1] + (k // side) * 60.0 + rng.uniform(-5, 5)
        vertices = int(rng.choice([5, 12, 60, 400]))
        noise = float(rng.choice([0.0, 0.02, 0.1]))
        a = _ring(rng, cx, cy, rng.uniform(15, 32), vertices, noise)
        ref.append(a)
        if rng.random() < 0.1:
            continue
        b = _ring(rng, cx + rng.normal(0, 2), cy + rng.normal(0, 2), rng.uniform(15, 32),
                  int(rng.choice([6, 30, 300])), float(rng.choice([0.01, 0.05])))
        if rng.random() < 0.15:
            b = shapely.union(b, shapely.box(cx, cy - 5, cx + 60, cy + 5))
        pred.append(b)
    for _ in range(3):
        x, y = offset[0] + rng.uniform(0, side * 60), offset[1] + rng.uniform(0, side * 60)
        pred.append(shapely.box(x, y, x + 20, y + 7))
    return np.array(ref, dtype=object), np.array(pred, dtype=object)


def _pairs(ref, pred):
    r, p = shapely.STRtree(pred).query(ref, predicate="intersects")
    return ref[r], pred[p]


def _small_batches(monkeypatch):
    """Every chunk, batch and tile of the solvers that only bounds memory, as small as it
    goes: many of them, cut through pairs, polygons and rows."""
    for module, name, value in (
        (distances, "_CHUNK_VERTICES", 300), (_exact, "_REFINE_BLOCK", 16),
        (_exact, "_FEW_PIECES", 2), (_exact, "_ENVELOPE_BATCH", 8),
        (_exact, "_ENVELOPE_BLOCK", 16), (_exact, "_SEARCH_BATCH", 32),
        (_exact, "_ROW_BUDGET", 200), (tolerance, "_TILE_VERTICES", 200),
        (tolerance, "_QUERY_CHUNK", 64), (tolerance, "_BLOCK", 32),
        (tolerance, "_CANDIDATE_BUDGET", 500),
    ):
        monkeypatch.setattr(module, name, value)


def _small_pair_blocks(monkeypatch):
    """Pairs cut into blocks of their own pieces and rows (and simplified) as soon as they
    can be: the cuts change a pair's sums in the last bits, but the same for a pair alone as
    among others."""
    for module, name, value in (
        (_exact, "_PIECE_BLOCK", 40), (_exact, "_MIN_PIECE_BLOCK", 8),
        (_exact, "_FIRST_PIECE_BLOCK", 16), (_exact, "_REFINE_ROWS", 64),
        (distances, "_COARSE_MIN_SEGMENTS", 300),
    ):
        monkeypatch.setattr(module, name, value)


def _same(a, b):
    """Equal bits (NaN equal to NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), spacing=st.sampled_from([1.0, None, 0.25]))
def test_a_pairs_distances_are_the_same_alone_and_among_many_pairs(seed, spacing):
    ref, pred = _pairs(*_layers(seed))
    h, m, s = pair_boundary_distances(ref, pred, spacing)
    assert np.isfinite(h).all() and len(h) > 10
    order = np.random.default_rng(seed).permutation(len(ref))
    h2, m2, s2 = pair_boundary_distances(ref[order], pred[order], spacing)
    assert _same(h2, h[order]) and _same(m2, m[order]) and _same(s2, s[order])
    for k in range(0, len(ref), 3):
        alone = pair_boundary_distances(ref[k:k + 1], pred[k:k + 1], spacing)
        assert (alone[0][0], alone[1][0], alone[2][0]) == (h[k], m[k], s[k])


def test_distances_do_not_depend_on_the_solvers_batches(monkeypatch):
    """Chunks of pairs, envelope batches, search batches and refinement blocks cut as small as
    they go give the numbers of the default sizes, bit for bit; with pairs cut into blocks of
    their own pieces (and a large one simplified), each pair alone gets its numbers among
    the others."""
    ref, pred = _pairs(*_layers(7, n=16))
    rng = np.random.default_rng(3)
    big = _ring(rng, 500, 500, 80, 3_000, 0.01), _ring(rng, 502, 500, 80, 2_500, 0.02)
    ref, pred = np.append(ref, big[0]), np.append(pred, big[1])
    want = pair_boundary_distances(ref, pred, 1.0)
    _small_batches(monkeypatch)
    got = pair_boundary_distances(ref, pred, 1.0)
    for a, b in zip(got, want):
        assert _same(a, b)
    _small_pair_blocks(monkeypatch)
    cut = pair_boundary_distances(ref, pred, 1.0)
    for k in range(len(ref)):
        alone = pair_boundary_distances(ref[k:k + 1], pred[k:k + 1], 1.0)
        assert [v[0] for v in alone] == [v[k] for v in cut]


def test_distances_with_a_scale_factor_are_the_same_alone_and_among_many_pairs():
    """Pairs measured in a conformal CRS with a local scale factor (``boundary/wide.py``):
    pieces are shorter and searched by spans; each pair still gets its own numbers."""
    ref, pred = _pairs(*_layers(11, n=12, offset=(2e5, 1e5)))

    def scale(x, y):
        return 1.0 + 1e-7 * np.hypot(x - 2e5, y - 1e5)

    gradient = np.linspace(0.5, 4.0, len(ref))
    h, m, s = pair_boundary_distances(ref, pred, 1.0, scale=scale, scale_gradient=gradient)
    for k in range(len(ref)):
        alone = pair_boundary_distances(ref[k:k + 1], pred[k:k + 1], 1.0, scale=scale,
                                        scale_gradient=gradient[k:k + 1])
        assert (alone[0][0], alone[1][0]) == (h[k], m[k])


def _neighbours(geoms, others, reach):
    """Positions of ``others`` within ``reach`` of each geometry, as one sorted array."""
    present = np.flatnonzero(~shapely.is_missing(others) & ~shapely.is_empty(others))
    _, near = shapely.STRtree(others[present]).query(geoms, predicate="dwithin",
                                                      distance=reach)
    return present[np.unique(near)]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), tol=st.sampled_from([0.5, 2.0, 6.0]),
       crs=st.sampled_from([None, "EPSG:32613"]))
def test_a_polygons_lengths_within_the_tolerance_are_the_same_alone_and_in_its_layer(
        seed, tol, crs):
    """Each polygon measured alone against its neighbours (the other layer's polygons within
    the largest tolerance) gets the bits it gets in the whole layers, both ways, at several
    tolerances at once; in planar space and in a UTM zone."""
    offset = (0.0, 0.0) if crs is None else (320_000.0, 3_830_000.0)
    crs = None if crs is None else pyproj.CRS(crs)
    ref, pred = _layers(seed, offset=offset)
    tols = (tol, 2 * tol, 4 * tol)

    def lengths(a, b):
        return tolerance_lengths_in_utm_at(zoned_layer(a, crs), zoned_layer(b, crs), tols)

    within_r, perimeter_r, within_p, perimeter_p = lengths(ref, pred)
    assert (within_r > 0).any() and (within_r < perimeter_r).any()
    for k in range(0, len(ref), 2):
        near = _neighbours(ref[k:k + 1], pred, 4 * tol)
        w, p, _, _ = lengths(ref[k:k + 1], pred[near])
        assert _same(w[:, 0], within_r[:, k]) and p[0] == perimeter_r[k]
    for k in range(0, len(pred), 2):
        near = _neighbours(pred[k:k + 1], ref, 4 * tol)
        _, _, w, p = lengths(ref[near], pred[k:k + 1])
        assert _same(w[:, 0], within_p[:, k]) and p[0] == perimeter_p[k]


def test_lengths_within_the_tolerance_do_not_depend_on_tiles_batches_or_order(monkeypatch):
    """Tiles of a few polygons, small query chunks and candidate batches, certification in
    small chunks, and the layers in reverse order: the same bits."""
    ref, pred = _layers(5, n=30)
    tols = np.array([1.0, 2.0, 4.0])
    want = tolerance._lengths_within(ref, pred, tols, True)
    back = tolerance._lengths_within(ref[::-1], pred[::-1], tols, True)
    _small_batches(monkeypatch)
    small = tolerance._lengths_within(ref, pred, tols, True)
    for a, b, c in zip(want, back, small):
        assert _same(b, a[..., ::-1]) and _same(c, a)
    # Measured one way at a time (as a polygon near another UTM zone is): the same bits.
    one_way = tolerance._lengths_within(ref, pred, tols, False)
    other_way = tolerance._lengths_within(pred, ref, tols, False)
    assert _same(one_way[0], want[0]) and _same(other_way[0], want[2])


def test_runs_are_set_aside_polygon_by_polygon():
    """A finely cut polygon has runs set aside and a coarse one does not (each judged from
    itself: the layer's mix does not change it); either way the lengths are those of
    solving every pair."""
    rng = np.random.default_rng(2)
    fine = _ring(rng, 0, 0, 20, 2_000, 0.001)
    fine_other = shapely.affinity.translate(fine, 0.3, 0.1)
    coarse = shapely.box(100, 0, 140, 40)
    coarse_other = shapely.box(100.5, 0.5, 140, 40)
    a = np.array([fine, coarse], dtype=object)
    b = np.array([fine_other, coarse_other], dtype=object)
    assert tolerance._certifiable(a, 2.0).tolist() == [True, False]
    fast = tolerance._lengths_within(a, b, np.array([2.0]), True)
    exact = tolerance._lengths_within_exact(a, b, np.array([2.0]), True)
    for got, want in zip(fast, exact):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert fast[1][0] == pytest.approx(fine.length, rel=1e-12)
    # The coarse polygon alone: the same bits as beside the fine one.
    alone = tolerance._lengths_within(a[1:], b[1:], np.array([2.0]), True)
    assert alone[0][0, 0] == fast[0][0, 1] and alone[2][0, 0] == fast[2][0, 1]
