"""The benchmark's second field generator (bench/generate_shared.py) and the county refinement
of bench/realdata.py: deterministic, neighbours share their edges, predictions overlap their
neighbours. No network: realdata's download is not exercised here."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import shapely
from conftest import ROOT


def _load(name):
    sys.path.insert(0, str(ROOT / "bench"))  # generate_shared imports generate
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


shared = _load("generate_shared")
realdata = _load("realdata")


def test_shared_fields_are_deterministic_and_tile_without_gaps():
    ref, ref_attrs, pred, pred_attrs, crs = shared.generate_shared_fields(120, seed=1)
    again = shared.generate_shared_fields(120, seed=1)
    assert all(shapely.equals_exact(ref, again[0], tolerance=0))
    assert all(shapely.equals_exact(pred, again[2], tolerance=0))
    assert crs == "EPSG:32613" and len(ref) == 120
    assert shapely.is_valid(ref).all() and shapely.is_valid(pred).all()
    # neighbours share edges: the fields' union has the area of their sum (no overlap, no gap
    # inside), and a field touches its eastern neighbour along a whole edge
    union = shapely.union_all(ref)
    assert abs(union.area - shapely.area(ref).sum()) < 1e-9 * union.area
    assert union.geom_type == "Polygon" and len(union.interiors) == 0
    common = shapely.intersection(shapely.boundary(ref[0]), shapely.boundary(ref[1]))
    assert common.length > 100.0  # the shared edge, about 180 m


def test_noisy_predictions_have_about_fifty_vertices_and_overlap_neighbours():
    ref, _, pred, attrs, _ = shared.generate_shared_fields(400, seed=2)
    noisy = pred[attrs["kind"] == "noisy"]
    assert (shapely.get_num_coordinates(noisy) == shared.OUTLINE_VERTICES + 1).mean() > 0.95
    r, p = shapely.STRtree(pred).query(ref, predicate="intersects")
    assert len(r) > 3 * len(pred)  # each prediction crosses into its neighbours


def test_wiggled_edges_stay_shared_between_neighbours():
    a = shapely.Polygon([(0, 0), (1, 0.2), (1.1, 1), (0, 1)])
    b = shapely.Polygon([(1, 0.2), (2, 0), (2, 1), (1.1, 1)])  # shares the edge (1, 0.2)-(1.1, 1)
    out = realdata.wiggle_edges(np.array([a, b], dtype=object))
    shared_edge = shapely.intersection(shapely.boundary(out[0]), shapely.boundary(out[1]))
    assert shared_edge.length > shapely.LineString([(1, 0.2), (1.1, 1)]).length  # it wiggles
    # no gap and no overlap between the two: the edge is the same in both
    assert shapely.intersection(out[0], out[1]).area < 1e-12
    union = shapely.union_all(out)
    assert union.geom_type == "Polygon" and len(union.interiors) == 0
    assert abs(union.area - out[0].area - out[1].area) < 1e-12


def test_meridians_and_parallels_are_not_wiggled():
    box = shapely.box(-100, 40, -99, 41)
    out = realdata.wiggle_edges(np.array([box], dtype=object))
    assert shapely.get_num_coordinates(out[0]) == 5
