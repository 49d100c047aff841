"""The small maps of the evaluatepolygons report on outlines that GEOS simplifies badly: they
are drawn without taking the process down (a stack overflow kills QGIS, not just the run)."""

import subprocess
import sys

from conftest import plugin_script


def test_the_worst_fields_map_of_a_comb_fits_a_small_thread_stack():
    """A comb of 5,000 teeth (20,004 vertices; teeth 0.5 wide, 100 high, 1 apart), matched to
    itself moved by 0.2: GEOS's topology-preserving simplification (the map keeps detail
    above a thousandth of the panel) recursed once per kept vertex and overflowed a 512 kB
    thread stack (macOS's default for a secondary thread; Windows: 1 MB) with 8,000
    vertices: a segmentation fault. With 8 MB, 80,000 vertices took 80 s. The map is drawn
    from at most the two combs' own vertices (the teeth, 100 high, are far above a
    thousandth of the 5,000 wide panel, so most stay)."""
    script = plugin_script("""
        import threading
        import numpy as np, shapely
        from iou_evaluation.core.evaluation.evaluate import evaluate
        from iou_evaluation.core.reports.evaluate import _worst_panels, report_extras
        teeth = 5_000
        x = np.arange(teeth, dtype=float)
        top = np.column_stack([np.repeat(x, 4) + np.tile([0.0, 0.0, 0.5, 0.5], teeth),
                               np.tile([0.0, 100.0, 100.0, 10.0], teeth)])
        ring = np.vstack([top, [[teeth, 10.0], [teeth, -10.0], [0.0, -10.0], [0.0, 0.0]]])
        comb = shapely.Polygon(ring)
        moved = shapely.affinity.translate(comb, 0.2, 0.0)
        evaluation = evaluate([moved], [comb])
        worst = report_extras(evaluation)["worst_reference_fields"]
        threading.stack_size(512 * 1024)
        out = []
        worker = threading.Thread(target=lambda: out.append(_worst_panels(evaluation, worst)))
        worker.start()
        worker.join()
        panel = out[0][0]
        drawn = sum(int(shapely.get_num_coordinates(g).sum())
                    for layer, _ in panel["layers"] for g in np.atleast_1d(layer))
        print(len(out[0]), drawn)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    panels, drawn = map(int, out.stdout.split())
    assert panels == 1
    assert 0 < drawn <= 2 * 20_004


def test_drawn_outlines_keep_holes_parts_and_what_is_not_a_polygon():
    """Rings simplified within 0.5: a 10 × 10 square with a 1 × 1 hole, two squares and a
    square with a vertex 0.1 off its side keep their shapes (the off vertex goes); None, an
    empty polygon and a collection are drawn as they are."""
    import numpy as np
    import shapely
    from iou_evaluation.core.reports.evaluate import _drawn

    holed = shapely.Polygon([(0, 0), (10, 0), (10, 10), (0, 10)],
                            [[(2, 2), (3, 2), (3, 3), (2, 3)]])
    pair = shapely.MultiPolygon([shapely.box(0, 0, 1, 1), shapely.box(5, 5, 6, 6)])
    bumpy = shapely.Polygon([(0, 0), (5, 0.1), (10, 0), (10, 10), (0, 10)])
    collection = shapely.GeometryCollection([shapely.Point(0, 0), shapely.box(0, 0, 1, 1)])
    drawn = _drawn(np.array([holed, None, collection, pair, shapely.Polygon(), bumpy],
                            dtype=object), 0.5)
    assert drawn[0].equals(holed) and drawn[3].equals(pair)
    assert drawn[5].equals(shapely.box(0, 0, 10, 10))
    assert drawn[1] is None and drawn[2] is collection and drawn[4].is_empty
