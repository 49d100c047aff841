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


def _grid_with_one_miss():
    """A 3 × 3 grid of touching 10 m squares in WGS 84 / UTM 33N, each predicted exactly but
    the centre one, whose prediction is moved 5 m east: IoU 50 / 150 = 1/3 with the centre
    (a false positive at 0.5) and 1/3 with its east neighbour, which its own exact copy
    matches at IoU 1. So one field has a best IoU below 1.00: the centre."""
    import shapely

    x0, y0 = 500_000.0, 5_000_000.0
    squares = [shapely.box(x0 + 10 * i, y0 + 10 * j, x0 + 10 * i + 10, y0 + 10 * j + 10)
               for j in range(3) for i in range(3)]
    predicted = list(squares)
    predicted[4] = shapely.affinity.translate(squares[4], 5.0, 0.0)
    return predicted, squares


def test_only_fields_below_an_iou_of_1_are_listed_as_worst():
    import pytest
    from iou_evaluation.core.evaluation.evaluate import evaluate
    from iou_evaluation.core.reports.evaluate import report_extras

    predicted, reference = _grid_with_one_miss()
    evaluation = evaluate(predicted, reference, predicted_crs="EPSG:32633",
                          reference_crs="EPSG:32633")
    worst = report_extras(evaluation)["worst_reference_fields"]
    assert [w["id"] for w in worst] == [4]
    assert worst[0]["best_iou"] == pytest.approx(1 / 3, rel=1e-6)
    perfect = evaluate(reference, reference, predicted_crs="EPSG:32633",
                       reference_crs="EPSG:32633")
    assert report_extras(perfect)["worst_reference_fields"] == []


def test_the_worst_field_map_draws_its_neighbours_and_a_legend():
    import base64
    import re

    from iou_evaluation.core.evaluation.evaluate import evaluate
    from iou_evaluation.core.reports.data import build_report
    from iou_evaluation.core.reports.evaluate import (
        WORST_STYLES,
        _worst_panels,
        render_evaluation_html,
        report_extras,
    )

    predicted, reference = _grid_with_one_miss()
    evaluation = evaluate(predicted, reference, predicted_crs="EPSG:32633",
                          reference_crs="EPSG:32633")
    extras = report_extras(evaluation)
    (panel,) = _worst_panels(evaluation, extras["worst_reference_fields"])
    neighbours, tp, fp, field = (layer for layer, _ in panel["layers"])
    # the map around the centre square and its moved prediction (x 10…25 m, y 10…20 m from
    # the grid's corner; the square shown reaches 8.25 m from (17.5, 15)): all 8 others
    # reach into it; the moved prediction is the one FP, no TP overlaps the centre
    assert len(neighbours) == 8 and len(tp) == 0 and len(fp) == 1
    report = {**build_report(evaluation, {}, {"plugin": "test"}), **extras}
    page = render_evaluation_html(report, evaluation)
    uri = re.search(r'<figure id="fig-worst-fields"><img src="data:image/svg\+xml;base64,'
                    r'([^"]+)"', page)[1]
    svg = base64.b64decode(uri).decode("utf-8")
    grey = WORST_STYLES["neighbour"]["edgecolor"]
    assert svg.count(f"stroke: {grey}") == 8 + 1  # the neighbours and the legend's patch
    for label in ("reference field", "other reference fields", "matched prediction (TP)",
                  "unmatched prediction (FP)"):
        assert label in svg
    text = " ".join(re.sub(r"<[^>]+>", "", page).split())
    assert "The 1 worst reference field " in text
    assert "the other 8 have a best IoU of 1.00 and are not listed" in text
