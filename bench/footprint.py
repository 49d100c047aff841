"""Footprint IoU (ioueval:spatialiou's core) beside the straightforward computation, and beside
evaluate (ioueval:evaluatepolygons' core), on the bench's real and generated layers.

The straightforward computation (the issue's "simple alternative"), with shapely and pyproj
alone: each layer repaired (``make_valid``, structure method) and dissolved (``union_all``), the
intersection of the two, and each of the three measured in EPSG:6933 after cutting to the map
[-180, 180] × [-90, 90] and splitting edges every 0.01° (geographic layers) or 50 m (projected
ones). Times are wall-clock seconds in this process, after the layers are read; IoUs of both
are printed so that a wrong number shows.

Cases (each skipped, with a note, when its data is missing):

- ``ne_land``, ``ne_glaciated``, ``ne_countries``: Natural Earth 4.0.0 at 1:110m (predicted)
  against 1:50m (reference), EPSG:4326, as GeoJSON files in ``--ne-dir``: ``ne_110m_land.json``,
  ``ne_50m_land.json``, ``ne_110m_glaciated_areas.json``, ``ne_50m_glaciated_areas.json``,
  ``ne_110m_admin_0_countries.json``, ``ne_50m_admin_0_countries.json`` (from the repository
  martynafford/natural-earth-geojson, folders 110m/ and 50m/; the 50m countries are in its
  .7z archive);
- ``real_world``, ``real_counties``: bench/realdata.py's GeoPackages;
- ``fields50k``: bench/generate.py's 50,000 fields (bench/data/fields_50k_seed0.gpkg, made by
  run.py or ``generate.py --n 50000 --out ...``), EPSG:32613;
- ``shared50k``: bench/generate_shared.py's 50,000 fields (bench/data/shared_50k_seed0.gpkg,
  made by ``generate_shared.py --n 50000 --out ...``), EPSG:32613.

Each time is given as wall seconds and, after a slash, CPU seconds of all threads of this
process (what other jobs on the cores change least). ``--root`` measures another checkout's
core (a folder with the plugin's files, such as a ``git worktree`` of main) with this script.

Command (project venv)::

    .venv/bin/python bench/footprint.py --ne-dir DIR [--cases ...] [--skip-evaluate] \\
        [--skip-straightforward] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
import pyproj
import shapely

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import worker_core  # noqa: E402
from worker_core import import_plugin_package, read_layer  # noqa: E402

NE_CASES = {
    "ne_land": "land",
    "ne_glaciated": "glaciated_areas",
    "ne_countries": "admin_0_countries",
}
GPKG_CASES = {
    "real_world": "real_world.gpkg",
    "real_counties": "real_counties.gpkg",
    "fields50k": "fields_50k_seed0.gpkg",
    "shared50k": "shared_50k_seed0.gpkg",
}
CASES = tuple(NE_CASES) + tuple(GPKG_CASES)


def read_geojson(path: Path):
    features = json.loads(path.read_text())["features"]
    geoms = [shapely.geometry.shape(f["geometry"]) if f["geometry"] else None for f in features]
    return np.array(geoms, dtype=object), "EPSG:4326"


def load_case(case: str, ne_dir: Path | None):
    """(predicted, reference, crs) or None when the files are missing."""
    if case in NE_CASES:
        if ne_dir is None:
            return None
        paths = [ne_dir / f"ne_{scale}_{NE_CASES[case]}.json" for scale in ("110m", "50m")]
        if not all(p.exists() for p in paths):
            return None
        (pred, crs), (ref, _) = read_geojson(paths[0]), read_geojson(paths[1])
        return pred, ref, crs
    path = BENCH / "data" / GPKG_CASES[case]
    if not path.exists():
        return None
    ref, _, crs = read_layer(path, "reference")
    pred, _, _ = read_layer(path, "predicted")
    return pred, ref, crs


def straightforward(pred, ref, crs):
    """(IoU, intersection m², seconds): the computation of the module docstring."""
    start, cpu = time.perf_counter(), time.process_time()
    source = pyproj.CRS(crs)
    to_map = pyproj.Transformer.from_crs(source, "EPSG:6933", always_xy=True)

    def footprint(geoms):
        geoms = geoms[shapely.is_geometry(geoms)]
        geoms = geoms[np.isin(shapely.get_type_id(geoms), (3, 6))]
        return shapely.union_all(shapely.make_valid(geoms, method="structure",
                                                    keep_collapsed=False))

    def area(geom):
        if source.is_geographic:
            geom = shapely.segmentize(
                shapely.intersection(geom, shapely.box(-180, -90, 180, 90)), 0.01)
        else:
            geom = shapely.segmentize(geom, 50.0)
        projected = shapely.transform(geom, lambda x, y: to_map.transform(x, y),
                                      interleaved=False)
        return float(shapely.area(projected))

    a, b = footprint(pred), footprint(ref)
    inter = shapely.intersection(a, b)
    area_a, area_b, area_i = area(a), area(b), area(inter)
    return (area_i / (area_a + area_b - area_i), area_i,
            (time.perf_counter() - start, time.process_time() - cpu))


def ours(pred, ref, crs):
    from iou_evaluation.core.pairs.footprint import footprint_iou

    start, cpu = time.perf_counter(), time.process_time()
    result = footprint_iou(pred, ref, predicted_crs=crs, reference_crs=crs)
    return (float(result.overall.iou[0]), float(result.overall.intersection[0]),
            (time.perf_counter() - start, time.process_time() - cpu))


def evaluated(pred, ref, crs):
    from iou_evaluation.core import evaluate

    start, cpu = time.perf_counter(), time.process_time()
    evaluate(pred, ref, predicted_crs=crs, reference_crs=crs)
    return time.perf_counter() - start, time.process_time() - cpu


def seconds(wall_cpu) -> str:
    return f"{wall_cpu[0]:.1f} / {wall_cpu[1]:.1f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ne-dir", type=Path, help="folder of Natural Earth GeoJSON files")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--skip-evaluate", action="store_true")
    parser.add_argument("--skip-straightforward", action="store_true",
                        help="leave the straightforward columns empty (they need no core)")
    parser.add_argument("--root", type=Path, help="checkout whose core is measured")
    args = parser.parse_args(argv)
    if args.root is not None:
        worker_core.ROOT = args.root.resolve()
    import_plugin_package()
    logging.basicConfig(level=logging.ERROR)
    print("| case | rows pred / ref | vertices pred / ref | straightforward IoU | s wall / cpu | "
          "spatialiou IoU | s wall / cpu | evaluate s wall / cpu |")
    print("|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        data = load_case(case, args.ne_dir)
        if data is None:
            print(f"| {case} | (data missing) | | | | | | |")
            continue
        pred, ref, crs = data
        vertices = [int(shapely.get_num_coordinates(g[shapely.is_geometry(g)]).sum())
                    for g in (pred, ref)]
        simple = " |" if args.skip_straightforward else None
        if simple is None:
            simple_iou, _, simple_s = straightforward(pred, ref, crs)
            simple = f"{simple_iou:.6f} | {seconds(simple_s)}"
        our_iou, _, our_s = ours(pred, ref, crs)
        eval_s = "" if args.skip_evaluate else seconds(evaluated(pred, ref, crs))
        print(f"| {case} | {len(pred):,} / {len(ref):,} | {vertices[0]:,} / {vertices[1]:,} | "
              f"{simple} | {our_iou:.6f} | {seconds(our_s)} | "
              f"{eval_s} |",
              flush=True)


if __name__ == "__main__":
    main()
