"""Bounds on sliver overlaps (core.pairs.bounds) and overlap_pairs' iou_floor + settle."""

import importlib
from fractions import Fraction

import numpy as np
import pytest
import shapely
import shapely.affinity
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core import evaluate
from iou_evaluation.core.pairs.overlap import overlap_pairs, settle
from iou_evaluation.core.pairs.bounds import (
    SupportingLines,
    bounded_slivers,
    overlap_shown,
)

evaluate_module = importlib.import_module("iou_evaluation.core.evaluation.evaluate")


def _bound(r, p):
    """bounded_slivers for the single pair (r, p)."""
    lines = SupportingLines(np.array([r], dtype=object))
    bound, candidates = bounded_slivers(
        lines, np.array([p], dtype=object), np.array([0]), np.array([0]),
        shapely.bounds(np.array([p], dtype=object)), np.array([p.area]),
    )
    return bound[0], candidates


def test_bound_of_a_neighbour_is_its_part_beyond_the_shared_edge():
    # r = unit square; p = [0.9, 2] x [0, 1] crosses r's east edge by 0.1. The line used is
    # x = 1 moved out by the simplification tolerance 1e-3 * sqrt(|hull|) = 0.001, so the
    # bound is |p ∩ {x <= 1.001}| = 0.101 * 1, plus the slack 1e-9 * |p| = 1.1e-9, plus the
    # rounding allowance 1e-9 * the sum of ‖q0 − o‖₁ ‖q1 − o‖₁ over p's boundary in the
    # half-plane, o = (1.001, 0) (or (1.001, 1), the same sum): (0, 1)-(-0.101, 1) gives
    # 1 * 1.101, (-0.101, 1)-(-0.101, 0) 1.101 * 0.101, (-0.101, 0)-(0, 0) 0: 1.212201e-9;
    # plus the overlay's error allowance, 1e-11 * the largest coordinate 2 * (those pieces'
    # L1 lengths 0.101 + 1 + 0.101 and r's perimeter 4): 1.0404e-10.
    r = shapely.box(0, 0, 1, 1)
    p = shapely.box(0.9, 0, 2, 1)
    bound, _ = _bound(r, p)
    assert bound == pytest.approx(0.101 + 1.1e-9 + 1.212201e-9 + 1.0404e-10, rel=1e-12)


def test_bound_counts_holes_and_parts():
    # p: a 3 x 1 bar from x = -1 to 2 with a hole of 0.25 x 0.5 (0.125), and a second part
    # far east; r = unit square. p's box centre (x = 6) is farthest beyond r's east edge,
    # moved out to x <= 1.001: p there is the bar's [-1, 1.001] part (2.001), less the hole
    # when the hole is on that side.
    east = shapely.box(12, 0, 13, 1)
    for hole, inside_hole in (((1.25, 1.5), 0.0), ((-0.5, -0.25), 0.125)):
        bar = shapely.Polygon(
            [(-1, 0), (2, 0), (2, 1), (-1, 1)],
            [[(hole[0], 0.25), (hole[1], 0.25), (hole[1], 0.75), (hole[0], 0.75)]],
        )
        p = shapely.MultiPolygon([bar, east])
        bound, _ = _bound(shapely.box(0, 0, 1, 1), p)
        # (the rounding allowances: 1e-9 x at most 10 products of L1 norms <= 3.1 + 1, and
        # 1e-11 x the largest coordinate 13 x at most 12 of boundary and 4 of r's perimeter)
        want = 2.001 - inside_hole + 1e-9 * p.area
        assert want < bound < want + 1e-9 * 10 * 4.1**2 + 1e-11 * 13 * 16


def test_densified_edges_make_one_line():
    # A square whose edges carry 9 extra vertices each, bulging out by up to 1e-6 (a
    # reprojected straight edge): simplified, each side is one supporting line (the side
    # where the ring starts two), the bulge inside them.
    t = np.linspace(0, 1, 11)[:-1]
    bulge = 1e-6 * np.sin(np.pi * t)
    ring = np.concatenate([
        np.column_stack([t, -bulge]), np.column_stack([1 + bulge, t]),
        np.column_stack([1 - t, 1 + bulge]), np.column_stack([-bulge, 1 - t]),
    ])
    r = shapely.Polygon(ring)
    lines = SupportingLines(np.array([r], dtype=object))
    assert lines.start[1] <= 5
    d = np.einsum("vlk,lk->vl", shapely.get_coordinates(r)[:, None, :] - lines.origin[None],
                  lines.normal)
    assert (d >= 0).all()


def _polygon(draw_values, cx, cy, radius):
    """A star-shaped polygon (simple) around (cx, cy) from radii in (0.2, 1] x radius."""
    k = len(draw_values)
    angle = np.linspace(0, 2 * np.pi, k, endpoint=False)
    rad = radius * np.asarray(draw_values)
    return shapely.Polygon(np.column_stack([cx + rad * np.cos(angle), cy + rad * np.sin(angle)]))


star = st.lists(st.floats(0.2, 1.0), min_size=3, max_size=12)


@settings(max_examples=200, deadline=None)
@given(star, star, st.floats(-2, 2), st.floats(-2, 2), st.floats(0.1, 3))
def test_bound_is_an_upper_bound_and_a_shown_overlap_is_real(a, b, dx, dy, scale):
    r = shapely.make_valid(_polygon(a, 0, 0, 1.0))
    p = shapely.make_valid(_polygon(b, dx, dy, scale))
    if r.area == 0 or p.area == 0 or r.geom_type not in ("Polygon", "MultiPolygon") \
            or p.geom_type not in ("Polygon", "MultiPolygon"):
        return
    bound, candidates = _bound(r, p)
    with np.errstate(all="ignore"):
        exact = shapely.intersection(r, p).area
    assert bound >= exact * (1 - 1e-12) - 1e-12
    prepared = np.array([r], dtype=object)
    shapely.prepare(prepared)
    if overlap_shown(prepared, np.array([p], dtype=object), np.array([0]), candidates, 1)[0]:
        assert exact > 0


def test_touching_neighbours_are_not_shown_to_overlap():
    r = shapely.box(0, 0, 1, 1)
    p = shapely.box(1, 0, 2, 1)  # shares r's east edge only
    _, candidates = _bound(r, p)
    prepared = np.array([r], dtype=object)
    shapely.prepare(prepared)
    assert not overlap_shown(prepared, np.array([p], dtype=object), np.array([0]), candidates, 1)[0]


def _exact_convex_area(r, p):
    """|r ∩ p| of two convex polygons, in exact rational arithmetic on their float
    coordinates (Sutherland–Hodgman clipping of p by r's edges, then the shoelace)."""
    def ring(g):
        xy = shapely.get_coordinates(shapely.geometry.polygon.orient(g, 1))[:-1]
        return [(Fraction(x), Fraction(y)) for x, y in xy]

    clipped, edges = ring(p), ring(r)
    for a, b in zip(edges, edges[1:] + edges[:1]):
        def side(q):
            return (b[0] - a[0]) * (q[1] - a[1]) - (b[1] - a[1]) * (q[0] - a[0])

        out = []
        for q0, q1 in zip(clipped, clipped[1:] + clipped[:1]):
            s0, s1 = side(q0), side(q1)
            if s0 >= 0:
                out.append(q0)
            if (s0 >= 0) != (s1 >= 0):
                t = s0 / (s0 - s1)
                out.append((q0[0] + (q1[0] - q0[0]) * t, q0[1] + (q1[1] - q0[1]) * t))
        clipped = out
    twice = sum(q0[0] * q1[1] - q1[0] * q0[1]
                for q0, q1 in zip(clipped, clipped[1:] + clipped[:1]))
    return twice / 2


def test_bound_of_a_small_prediction_at_the_far_end_of_a_thin_reference():
    # r: 1000 x 2.3e-6 (too thin to simplify: its hull's own edges are the lines, not moved
    # out); p: 1e-4 wide, crossing r's long side 999 from the line's origin and ending
    # 1e-6 inside. The cross products about the origin are ~1e3 times p's size squared, so
    # their rounding is some 1e-8 |p|: the bound must still be at least the exact overlap.
    for angle in np.linspace(0.5, 89.5, 60):
        r = shapely.affinity.rotate(shapely.box(0, 0, 1000, 2.3e-6), angle, origin=(0, 0))
        p = shapely.affinity.rotate(shapely.box(999 - 1e-4, -1e-5, 999, 1e-6), angle,
                                    origin=(0, 0))
        bound, _ = _bound(r, p)
        assert Fraction(bound) >= _exact_convex_area(r, p), angle


def _shown(r, p):
    """overlap_shown for the single pair (r, p)."""
    _, candidates = _bound(r, p)
    prepared = np.array([r], dtype=object)
    shapely.prepare(prepared)
    return overlap_shown(prepared, np.array([p], dtype=object), np.array([0]), candidates, 1)[0]


# Two neighbouring fields in UTM-sized coordinates whose shared corner was rounded apart: p's
# SW corner is one ulp (2.3e-10) west of r's NE corner, so inside r, and the two overlap by a
# triangle about one ulp across (some 1e-20), which the overlay rounds to a line.
_CORNER_R = shapely.Polygon([
    (1654241.0529984015, 6246648.842901763), (1654329.644118663, 6246647.805394218),
    (1654332.4716750425, 6246680.319138552), (1654243.8793471225, 6246681.356651466)])
_CORNER_P = shapely.Polygon([
    (1654332.4716750418, 6246680.319138552), (1654421.0639111407, 6246679.281181516),
    (1654423.8927670352, 6246711.794476022), (1654335.2993232426, 6246712.832438426)])


def test_a_corner_one_ulp_inside_shows_no_overlap():
    assert shapely.contains_xy(_CORNER_R, 1654332.4716750418, 6246680.319138552)
    assert not _shown(_CORNER_R, _CORNER_P)


def test_a_spike_one_ulp_inside_shows_no_overlap():
    # A spike 2 mm wide 100 m from its apex, the apex one ulp (9.3e-10) inside r's north
    # edge y = 5e6: the overlap is a triangle 1.9e-14 wide, narrower than an ulp of x.
    y = 5e6
    r = shapely.box(0, y - 1000, 1000, y)
    p = shapely.Polygon([(500 - 1e-3, y + 100), (500, y - np.spacing(y)), (500 + 1e-3, y + 100)])
    assert not _shown(r, p)


def test_a_real_sliver_far_from_the_origin_is_shown():
    # p crosses r's east edge x = 1e6 + 100 by 0.1: a square of half-side ρ = 1e-10 x 5e6
    # (5e-4) around a point 2ρ from both edges at p's corner fits in the overlap ...
    r = shapely.box(1e6, 5e6, 1e6 + 100, 5e6 + 100)
    p = shapely.box(1e6 + 99.9, 5e6 + 10, 1e6 + 200, 5e6 + 90)
    assert _shown(r, p)
    # ... and not when the crossing (5e-4) is narrower than the square's reach (3ρ, 1.5e-3).
    assert not _shown(r, shapely.box(1e6 + 99.9995, 5e6 + 10, 1e6 + 200, 5e6 + 90))


def test_fields_one_ulp_apart_at_a_corner_overlap_only_their_own_predictions():
    # Each field is predicted exactly; the corner contact is no overlap (pairs whose
    # intersection has no area do not overlap), with a CRS or without.
    for crs in (None, "EPSG:32633"):
        result = evaluate([_CORNER_R, _CORNER_P], [_CORNER_R, _CORNER_P],
                          predicted_crs=crs, reference_crs=crs)
        assert result.per_reference["n_overlapping_pred"].tolist() == [1, 1]
        assert result.per_reference["best_iou"].tolist() == [1.0, 1.0]


def _shared_edge_grid(n, seed):
    """Reference: a jittered grid of n x n quadrilaterals sharing corners; predicted: each
    field shifted by up to 5 % of the cell (so it crosses into its neighbours), some missing,
    one merged pair. Cells of 100 x 100 units."""
    rng = np.random.default_rng(seed)
    gx = 100.0 * np.arange(n + 1)[None, :] + rng.uniform(-15, 15, (n + 1, n + 1))
    gy = 100.0 * np.arange(n + 1)[:, None] + rng.uniform(-15, 15, (n + 1, n + 1))
    ref = []
    for i in range(n):
        for j in range(n):
            ref.append(shapely.Polygon([(gx[i, j], gy[i, j]), (gx[i, j + 1], gy[i, j + 1]),
                                        (gx[i + 1, j + 1], gy[i + 1, j + 1]),
                                        (gx[i + 1, j], gy[i + 1, j])]))
    pred = []
    for k, field in enumerate(ref):
        if rng.random() < 0.1:
            continue
        shift = rng.uniform(-5, 5, 2)
        pred.append(shapely.affinity.translate(field, *shift))
    pred.append(shapely.union(ref[0], ref[1]).buffer(2.0))
    return np.array(ref, dtype=object), np.array(pred, dtype=object)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 9), st.integers(0, 10_000), st.sampled_from([0.05, 0.3, 0.5, 0.9]))
def test_settled_pairs_give_the_maxima_of_exact_pairs(n, seed, floor):
    ref, pred = _shared_edge_grid(n, seed)
    ref_area, pred_area = shapely.area(ref), shapely.area(pred)
    exact = overlap_pairs(ref, ref_area, pred, pred_area)
    loose = overlap_pairs(ref, ref_area, pred, pred_area, iou_floor=floor)
    rng = np.random.default_rng(seed)
    group = rng.random(loose.n) < 0.7
    settled = settle(loose, (np.ones(loose.n, dtype=bool), group), ref, ref_area, pred,
                     pred_area)
    assert settled.reference.tolist() == exact.reference.tolist()
    assert settled.predicted.tolist() == exact.predicted.tolist()
    fixed = ~settled.bounded
    assert np.array_equal(settled.intersection_m2[fixed], exact.intersection_m2[fixed])
    assert np.array_equal(settled.iou[fixed], exact.iou[fixed])
    assert (settled.intersection_m2 >= exact.intersection_m2).all()
    assert (settled.iou[~fixed] < floor).all()
    # Per reference and per prediction, in all pairs and in the subset: the same maxima.
    group = group[np.searchsorted(loose.reference * len(pred) + loose.predicted,
                                  settled.reference * len(pred) + settled.predicted)]
    for in_set in (np.ones(exact.n, dtype=bool), group):
        for owner, size in ((exact.reference, len(ref)), (exact.predicted, len(pred))):
            for values in ("intersection_m2", "iou"):
                want = np.zeros(size)
                np.maximum.at(want, owner[in_set], getattr(exact, values)[in_set])
                got = np.zeros(size)
                np.maximum.at(got, owner[in_set], getattr(settled, values)[in_set])
                assert np.array_equal(got, want)


def test_evaluate_gives_the_same_tables_as_with_every_pair_overlaid():
    ref, pred = _shared_edge_grid(12, 3)
    bounded = evaluate(pred, ref)
    assert bounded.pairs.bounded.any()
    _assert_same_evaluation(bounded, _every_pair_overlaid(predicted=pred, reference=ref))


def _every_pair_overlaid(**kwargs):
    """evaluate(**kwargs) with overlap_pairs given no iou_floor: every pair overlaid."""
    original = evaluate_module.overlap_pairs

    def every_pair_exact(*args, **kw):
        kw.pop("iou_floor", None)
        return original(*args, **kw)

    evaluate_module.overlap_pairs = every_pair_exact
    try:
        return evaluate(**kwargs)
    finally:
        evaluate_module.overlap_pairs = original


def _assert_same_evaluation(a, b):
    """Every per-reference and per-predicted column (NaN equal to NaN) and every metric."""
    for table in ("per_reference", "per_predicted"):
        left, right = getattr(a, table), getattr(b, table)
        for key in left:
            x, y = np.asarray(left[key]), np.asarray(right[key])
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), key
    assert a.metrics == b.metrics


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([None, "EPSG:32633"]),
       st.sampled_from([0.01, 0.5]))
def test_fields_rounded_apart_give_the_same_tables_as_every_pair_overlaid(seed, crs, threshold):
    # UTM-sized coordinates; each prediction is a reference field, or a neighbour's, with
    # every vertex moved by up to 3 ulps (the same move for a vertex shared by two fields),
    # some shifted by 2 % of a field, some merged: corners and edges one ulp inside a
    # neighbour everywhere (differential fuzzing found 1 case in 3.5 counting such pairs).
    rng = np.random.default_rng(seed)
    ref, _ = _shared_edge_grid(4, seed)
    ref = np.array([shapely.affinity.translate(g, 1.65e6, 6.2e6) for g in ref], dtype=object)
    xy = shapely.get_coordinates(ref)
    unique, inverse = np.unique(xy, axis=0, return_inverse=True)
    moved = unique + np.spacing(np.abs(unique)) * rng.integers(-3, 4, unique.shape)
    nudged = shapely.set_coordinates(ref.copy(), moved[inverse.ravel()])
    pred = [g if rng.random() < 0.7 else shapely.affinity.translate(g, *rng.normal(0, 2, 2))
            for g in nudged]
    pred.append(shapely.union(nudged[0], nudged[1]))
    kwargs = dict(predicted=pred, reference=list(ref), predicted_crs=crs, reference_crs=crs,
                  iou_threshold=threshold, boundary_sample_spacing_m=None)
    _assert_same_evaluation(evaluate(**kwargs), _every_pair_overlaid(**kwargs))


def test_bounds_in_small_batches_are_the_same(monkeypatch):
    from iou_evaluation.core.pairs import bounds as overlap_bound

    ref, pred = _shared_edge_grid(6, 5)
    r, p = np.meshgrid(np.arange(len(ref)), np.arange(len(pred)), indexing="ij")
    r, p = r.ravel(), p.ravel()
    args = (SupportingLines(ref), pred, r, p, shapely.bounds(pred), shapely.area(pred))
    whole = bounded_slivers(*args)
    monkeypatch.setattr(overlap_bound, "_ROW_BATCH", 7)
    built = []
    edges = overlap_bound.Edges

    def recorded(geometries):
        built.append(int(shapely.get_num_coordinates(geometries).sum()))
        return edges(geometries)

    monkeypatch.setattr(overlap_bound, "Edges", recorded)
    batched = bounded_slivers(*args)
    # Edges are extracted batch by batch: one prediction at a time here (the batch of 7
    # coordinates holds one quadrilateral of 5; the merged field alone is larger).
    assert len(built) > 1
    assert max(built) == int(shapely.get_num_coordinates(pred).max())
    assert np.array_equal(whole[0], batched[0])
    def rows(candidates):
        xy, into, pair = candidates
        return sorted(zip(pair.tolist(), map(tuple, xy.tolist()), map(tuple, into.tolist())))

    assert rows(whole[1]) == rows(batched[1])
