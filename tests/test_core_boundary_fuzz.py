"""Regressions found by fuzzing the boundary-distance stage (issue 12): shapes and scales whose
cost grew with the square of the vertices, or that took the process down.

Each test builds its input in a few lines and asserts values worked out from the geometry, or
counts of work (never wall-clock times). Tests marked xfail(strict=True) pin a defect that is
not fixed yet: they pass once it is.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import shapely
from iou_evaluation.core import boundary
from iou_evaluation.core.boundary import pair_boundary_distances, simplified_boundaries

ROOT = Path(__file__).resolve().parent.parent


def comb_ring(teeth):
    """Vertices of a comb: ``teeth`` teeth 0.5 wide and 100 high, 1 apart, whose gaps end on
    a slant 10 above the base, on a bar 10 deep; a closed ring (first vertex repeated)."""
    x = np.arange(teeth, dtype=float)
    top = np.column_stack([np.repeat(x, 4) + np.tile([0.0, 0.0, 0.5, 0.5], teeth),
                           np.tile([0.0, 100.0, 100.0, 10.0], teeth)])
    return np.vstack([top, [[teeth, 10.0], [teeth, -10.0], [0.0, -10.0], [0.0, 0.0]]])


def test_simplifying_a_comb_of_20000_vertices_fits_a_small_thread_stack():
    """GEOS's Douglas-Peucker recurses once per kept vertex: on a comb it goes as deep as the
    ring is long, and took time quadratic in it (64k vertices 22 s, 128k 89 s). In a thread
    with a 512 kB stack (the default for a secondary thread on macOS; Windows: 1 MB) a comb
    of 8,000 vertices overflowed it: a segmentation fault, the whole process (QGIS) gone.
    Done in runs of ``_SIMPLIFY_RUN`` vertices it returns; every vertex of the comb is a
    corner at least 0.5 from the chord of its neighbours, so within 0.01 each one is kept:
    the simplified ring is the comb itself."""
    script = textwrap.dedent(f"""
        import importlib.util, sys, threading
        import numpy as np, shapely
        spec = importlib.util.spec_from_file_location(
            "iou_evaluation", {str(ROOT / "__init__.py")!r},
            submodule_search_locations=[{str(ROOT)!r}])
        module = importlib.util.module_from_spec(spec)
        sys.modules["iou_evaluation"] = module
        spec.loader.exec_module(module)
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_core_boundary_fuzz import comb_ring
        from iou_evaluation.core.boundary import simplified_boundaries
        ring = comb_ring(5_000)
        threading.stack_size(512 * 1024)
        out = []
        worker = threading.Thread(target=lambda: out.append(simplified_boundaries(
            np.array([shapely.Polygon(ring)]), np.array([0.01]))[0]))
        worker.start()
        worker.join()
        coords = shapely.get_coordinates(out[0])
        print(len(ring), len(coords), bool(np.array_equal(coords, ring)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.split() == ["20004", "20004", "True"]


def test_simplified_runs_stay_within_the_tolerance_and_match_geos_on_short_rings():
    """Runs joined at shared vertices: a noisy 6,000-gon simplified within ε stays within ε of
    the ring both ways (shapely's Hausdorff distance on densified copies) with fewer vertices;
    a ring of at most ``_SIMPLIFY_RUN`` vertices is one run, GEOS's result unchanged."""
    rng = np.random.default_rng(3)
    t = 2 * np.pi * np.arange(6_000) / 6_000
    r = 500 + rng.uniform(-0.2, 0.2, len(t))
    ring = shapely.Polygon(np.column_stack([r * np.cos(t), r * np.sin(t)]))
    simple = simplified_boundaries(np.array([ring]), np.array([0.3]))[0]
    assert shapely.get_num_coordinates(simple) < 0.5 * shapely.get_num_coordinates(ring)
    assert shapely.hausdorff_distance(ring.boundary, simple, densify=0.05) <= 0.3
    small = shapely.Polygon(np.column_stack([r[:1000] * np.cos(t[:1000] * 6),
                                             r[:1000] * np.sin(t[:1000] * 6)]))
    expected = shapely.simplify(shapely.LineString(small.exterior.coords), 0.3,
                                preserve_topology=False)
    got = simplified_boundaries(np.array([small]), np.array([0.3]))[0]
    np.testing.assert_array_equal(shapely.get_coordinates(got),
                                  shapely.get_coordinates(expected))


def disc_with_central_hole(n_outer, n_hole, radius=1000.0, seed=0):
    """A disc whose outline is noisy (±1 m: not simplified, every vertex counts), with a
    round hole of radius 10 at its centre; and the same disc without the hole (a matched
    prediction that missed a pond). Every point of the hole is about 990 from the outline,
    nearly as near to a fifth of its vertices."""
    rng = np.random.default_rng(seed)
    t = 2 * np.pi * np.arange(n_outer) / n_outer
    r = radius + rng.uniform(-1.0, 1.0, n_outer)
    outline = np.column_stack([r * np.cos(t), r * np.sin(t)])
    s = 2 * np.pi * np.arange(n_hole) / n_hole
    hole = np.column_stack([10.0 * np.cos(s), 10.0 * np.sin(s)])[::-1]
    return shapely.Polygon(outline, [hole]), shapely.Polygon(outline)


def test_memory_check_counts_the_candidate_rows_of_a_pair(monkeypatch):
    """The check counted 1,024 bytes of working memory per vertex for a small chunk. A pair
    whose nearest points are far gathers many candidate rows per vertex: the disc with a
    central hole (500 vertices each) against the disc (1,503 vertices) counted 1.9 MB and
    allocated 75 MB (tracemalloc; 3,003 vertices: 3.8 MB counted, 274 MB taken). With 32 MB
    available the check let it run. It now counts the rows the pair can gather (fewer than
    n², 200 bytes each, up to the 256 MB budget) and stops before the work; two 100-gons
    (40,000 rows at most: 8 MB) still run."""
    from iou_evaluation.core.memory import MEMORY_LIMIT_ENV, InsufficientMemoryError

    monkeypatch.setenv(MEMORY_LIMIT_ENV, "32")
    ref, pred = disc_with_central_hole(500, 500)
    with pytest.raises(InsufficientMemoryError,
                       match=r"boundary distances: matched pairs at positions 0 \(1,503 "):
        pair_boundary_distances(np.array([ref]), np.array([pred]))
    t = 2 * np.pi * np.arange(100) / 100
    a = shapely.Polygon(np.column_stack([np.cos(t), np.sin(t)]) * 100)
    b = shapely.Polygon(np.column_stack([np.cos(t) + 0.05, np.sin(t)]) * 100)
    h, _, _ = pair_boundary_distances(np.array([a]), np.array([b]))
    # Hausdorff distance of two circles of radius R whose centres are c apart: c (here 5,
    # within the sagitta 100 (1 - cos(π/100)) = 0.05 of it for the 100-gons).
    assert h[0] == pytest.approx(5.0, abs=0.05)
