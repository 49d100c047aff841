"""CPU seconds of each step of ``core.pairs.overlap.overlap_pairs`` on one thread, as JSON on stdout.

    .venv/bin/python bench/overlap_parts.py bench/data/shared_50k_seed0.gpkg

The layers are prepared as ``core.evaluate`` prepares projected layers (defaults), then each
step runs on all pairs at once on the calling thread: the tree query, the box pruning, the
copy and preparation of the references, the exact test (``intersects``), ``contains_properly``,
``equals_exact``, GEOS's overlay (``intersection``) and the areas; with the pairs counted at
each step and the overlay's cost per pair, split at IoU 0.5 (matched-like pairs and the rest).
Shows where the overlap stage's time goes; the stage runs these in chunks on both cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import shapely

BENCH = Path(__file__).resolve().parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(BENCH))
    import worker_core

    worker_core.import_plugin_package()
    from iou_evaluation.core.geometry.crs import evaluation_crs, resolve_crs
    from iou_evaluation.core.geometry.prepare import prepare_layer

    layers = []
    for name in ("reference", "predicted"):
        geoms, _, crs = worker_core.read_layer(args.data, name)
        layers.append((geoms, resolve_crs(crs, name)))
    ea_crs = evaluation_crs(layers[0][1], layers[1][1], "EPSG:6933")
    ref, pred = (prepare_layer(g, crs, ea_crs, name)
                 for (g, crs), name in zip(layers, ("reference", "predicted")))
    # PreparedLayer.overlay and .area_of where the core has them (geographic layers overlaid
    # in longitude/latitude); here the layers are prepared without that, as projected ones.
    reference = getattr(ref, "overlay", ref.geometries)
    predicted = getattr(pred, "overlay", pred.geometries)
    area_of = getattr(ref, "area_of", shapely.area)
    cpu, counts = {}, {}

    def timed(step, run):
        start = time.process_time()
        value = run()
        cpu[step] = round(time.process_time() - start, 3)
        return value

    ri, pi = timed("tree query", lambda: shapely.STRtree(predicted).query(reference))
    counts["box candidates"] = len(ri)
    rb, pb = shapely.bounds(reference)[ri], shapely.bounds(predicted)[pi]
    keep = (np.minimum(rb[:, 2:], pb[:, 2:]) > np.maximum(rb[:, :2], pb[:, :2])).all(axis=1)
    ri, pi = ri[keep], pi[keep]
    prepared = timed("copy references (WKB)", lambda: shapely.from_wkb(shapely.to_wkb(reference)))
    timed("prepare", lambda: shapely.prepare(prepared))
    hit = timed("intersects (prepared)", lambda: shapely.intersects(prepared[ri], predicted[pi]))
    ri, pi = ri[hit], pi[hit]
    counts["intersecting"] = len(ri)
    inside = timed("contains_properly (prepared)",
                   lambda: shapely.contains_properly(prepared[ri], predicted[pi]))
    counts["prediction inside"] = int(inside.sum())
    ri, pi = ri[~inside], pi[~inside]
    a, b = reference[ri], predicted[pi]
    timed("equals_exact", lambda: shapely.equals_exact(a, b, tolerance=0.0))
    overlays = timed("intersection (GEOS overlay)", lambda: shapely.intersection(a, b))
    counts["overlays"] = len(a)
    inter = timed("area", lambda: area_of(overlays))
    iou = inter / (ref.area_m2[ri] + pred.area_m2[pi] - inter)
    per_pair = {}
    for label, part in (("IoU >= 0.5", iou >= 0.5), ("IoU < 0.5", iou < 0.5)):
        start = time.process_time()
        shapely.intersection(a[part], b[part])
        per_pair[label] = {"pairs": int(part.sum()), "us_per_overlay": round(
            (time.process_time() - start) / max(int(part.sum()), 1) * 1e6, 1)}
    print(json.dumps({"data": str(args.data), "cpu_s": cpu, "pairs": counts,
                      "overlay_by_iou": per_pair}))


if __name__ == "__main__":
    main()
