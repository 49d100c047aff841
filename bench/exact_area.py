"""Exact longitude/latitude areas (``core/geometry/exact_area.py``) against the chords of 50 m and
25 m pieces, on a bench GeoPackage in a geographic CRS, as JSON on stdout.

    .venv/bin/python bench/exact_area.py bench/data/real_counties.gpkg [--no-25m]

For each layer: the largest and the median relative difference of the polygons' areas
(pieces ÷ exact - 1). For the pairs with IoU ≥ 0.01 (found on the exact layers): the largest
relative difference of their IoU. With 25 m pieces too, the differences should shrink about
fourfold if they are the chords' sagitta (an error of the pieces, quadratic in their length),
not an error of the exact areas.
"""

from __future__ import annotations

import argparse
import functools
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
    parser.add_argument("--no-25m", action="store_true", help="50 m pieces only (faster)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(BENCH))
    import worker_core

    worker_core.import_plugin_package()
    from iou_evaluation.core.geometry import crs as crs_module
    from iou_evaluation.core.geometry import prepare as prepare_module
    from iou_evaluation.core.geometry.crs import DEFAULT_EQUAL_AREA_CRS, resolve_crs
    from iou_evaluation.core.geometry.exact_area import lonlat_area_for
    from iou_evaluation.core.pairs.overlap import intersection_area, iou_from_areas, overlap_pairs

    ea = resolve_crs(DEFAULT_EQUAL_AREA_CRS, "equal_area_crs")
    layers = {}
    for name in ("reference", "predicted"):
        geoms, _, crs = worker_core.read_layer(args.data, name)
        layers[name] = (geoms, resolve_crs(crs, name))
    lonlat = lonlat_area_for([c for _, c in layers.values()], ea)
    if lonlat is None:
        raise SystemExit("not a geographic layer pair in EPSG:6933's datum")
    exact = {n: prepare_module.prepare_layer(g, c, ea, n, lonlat_area=lonlat)
             for n, (g, c) in layers.items()}
    pairs = overlap_pairs(exact["reference"].overlay, exact["reference"].area_m2,
                          exact["predicted"].overlay, exact["predicted"].area_m2,
                          area=lonlat)
    pairs_kept = pairs.iou >= 0.01
    ri, pi = pairs.reference[pairs_kept], pairs.predicted[pairs_kept]
    out = {"data": str(args.data), "pairs_iou_at_least_0.01": int(len(ri))}
    original_adaptive = prepare_module.densify_adaptive
    original_step = crs_module.DENSIFY_M
    for metres in (50.0,) if args.no_25m else (50.0, 25.0):
        start = time.perf_counter()
        # Every grid point (relative_error=0): the pieces themselves.
        prepare_module.densify_adaptive = functools.partial(original_adaptive, relative_error=0.0)
        crs_module.DENSIFY_M = metres
        try:
            pieces = {n: prepare_module.prepare_layer(g, c, ea, n) for n, (g, c) in layers.items()}
        finally:
            prepare_module.densify_adaptive = original_adaptive
            crs_module.DENSIFY_M = original_step
        row = {}
        for name in layers:
            a, b = pieces[name], exact[name]
            same = np.array_equal(a.keep, b.keep)
            relative = a.area_m2 / b.area_m2 - 1 if same else np.array([np.nan])
            row[name] = {"same_rows": same, "max_abs_rel_area": float(np.abs(relative).max()),
                         "median_abs_rel_area": float(np.median(np.abs(relative)))}
        ref, pred = pieces["reference"], pieces["predicted"]
        inter = intersection_area(ref.geometries[ri], pred.geometries[pi])
        iou = iou_from_areas(inter, ref.area_m2[ri], pred.area_m2[pi])
        rel_iou = np.abs(iou / pairs.iou[pairs_kept] - 1)
        matched = pairs.iou[pairs_kept] >= 0.5
        row["max_abs_rel_iou"] = float(rel_iou.max()) if len(rel_iou) else None
        row["max_abs_rel_iou_at_least_0.5"] = (
            float(rel_iou[matched].max()) if matched.any() else None)
        row["vertices"] = [int(shapely.get_num_coordinates(x.geometries).sum())
                           for x in (ref, pred)]
        row["seconds"] = round(time.perf_counter() - start, 1)
        out[f"{metres:g}m_pieces_vs_exact"] = row
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
