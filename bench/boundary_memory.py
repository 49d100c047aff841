"""Peak memory and time of the boundary-distance stage for one matched pair.

For each case one subprocess builds the pair, then runs ``core.boundary.distances.pair_boundary_distances``
(Hausdorff and mean boundary distance, Δ = 1 m) and reports the peak of numpy's allocations
during the stage (tracemalloc), the growth of the process's peak resident set (ru_maxrss) over
what it was before the stage, and the wall time. Cases:

- ``circle``: two regular n-gons of radius 1000 m, centres 100 m apart (no CRS); analytic
  Hausdorff 100 m, mean boundary distance 63.635388 m (see tests/test_core_boundary_memory.py);
- ``staircase``: a square field rotated by 30°, polygonised from 0.5 m pixels (its outline
  follows the pixel edges), matched to the same field one pixel (0.5 m) off in x; the side is
  chosen for about n vertices.

Usage: python bench/boundary_memory.py [--sizes 10000 100000 1000000] [--shapes circle staircase]
       [--tolerance 1]   (the lengths within a tolerance of 1 m instead, both ways)
       [--qgis-process]  (each pair end to end through qgis_process, defaults, every output)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import shapely

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def regular_polygon(n: int, radius: float, cx: float = 0.0, cy: float = 0.0):
    """Regular n-gon of circumradius ``radius`` centred at (cx, cy)."""
    t = 2 * np.pi * np.arange(n) / n
    return shapely.Polygon(np.column_stack([cx + radius * np.cos(t), cy + radius * np.sin(t)]))


def staircase_square(side: float, angle_deg: float, pixel: float, shift_px: int = 0):
    """A square of side ``side`` rotated by ``angle_deg``, as the union of the pixels (size
    ``pixel``) whose centre is inside it, shifted by ``shift_px`` pixels in x: its outline is a
    staircase along the pixel edges (one span of pixels per row: the square is convex)."""
    a = np.radians(angle_deg)
    c, s = np.cos(a), np.sin(a)
    h = side / 2
    corners = np.array([[-h, -h], [h, -h], [h, h], [-h, h]]) @ np.array([[c, s], [-s, c]])
    lo_y, hi_y = corners[:, 1].min(), corners[:, 1].max()
    rows = np.arange(np.floor(lo_y / pixel), np.ceil(hi_y / pixel))
    yc = (rows + 0.5) * pixel
    # The span of the square on each row's centre line: intersect with the 4 edges.
    xs = []
    for k in range(4):
        (x0, y0), (x1, y1) = corners[k], corners[(k + 1) % 4]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (yc - y0) / (y1 - y0)
        x = np.where((t >= 0) & (t <= 1), x0 + t * (x1 - x0), np.nan)
        xs.append(x)
    xs = np.array(xs)
    lo = np.where(np.isnan(xs), np.inf, xs).min(axis=0)
    hi = np.where(np.isnan(xs), -np.inf, xs).max(axis=0)
    i_lo = np.ceil(lo / pixel - 0.5)
    i_hi = np.floor(hi / pixel - 0.5)
    ok = i_hi >= i_lo
    rows, i_lo, i_hi = rows[ok], i_lo[ok], i_hi[ok]
    x_lo, x_hi = (i_lo + shift_px) * pixel, (i_hi + 1 + shift_px) * pixel
    y0, y1 = rows * pixel, (rows + 1) * pixel
    right = np.column_stack([np.repeat(x_hi, 2), np.column_stack([y0, y1]).ravel()])
    left = np.column_stack([np.repeat(x_lo, 2)[::-1], np.column_stack([y0, y1]).ravel()[::-1]])
    ring = np.concatenate([right, left])
    # Drop repeated and collinear vertices (a polygonised outline has neither).
    keep = np.ones(len(ring), bool)
    keep[1:] = np.any(ring[1:] != ring[:-1], axis=1)
    ring = ring[keep]
    prev, nxt = np.roll(ring, 1, axis=0), np.roll(ring, -1, axis=0)
    cross = (ring[:, 0] - prev[:, 0]) * (nxt[:, 1] - ring[:, 1]) - (
        ring[:, 1] - prev[:, 1]) * (nxt[:, 0] - ring[:, 0])
    return shapely.Polygon(ring[cross != 0])


def make_pair(shape: str, n: int):
    if shape == "circle":
        return regular_polygon(n, 1000.0), regular_polygon(n, 1000.0, 100.0, 0.0)
    if shape == "staircase":
        side = n / 8.0  # about 8 vertices per metre of side at 30° and 0.5 m pixels
        return (staircase_square(side, 30.0, 0.5), staircase_square(side, 30.0, 0.5, 1))
    raise ValueError(f"unknown shape {shape!r}")


def measure(shape: str, n: int, tolerance_m: float = 0.0) -> dict:
    """The boundary distances of the pair (or with ``tolerance_m`` > 0 the lengths of both
    boundaries within it of the other, ``core.boundary.tolerance``), measured."""
    sys.path.insert(0, ROOT)
    from core.boundary.distances import pair_boundary_distances
    from core.boundary.tolerance import boundary_within_tolerance

    ref, pred = make_pair(shape, n)
    vertices = int(shapely.get_num_coordinates(ref) + shapely.get_num_coordinates(pred))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t0 = time.perf_counter()
    if tolerance_m > 0:
        haus = boundary_within_tolerance(np.array([ref]), np.array([pred]), tolerance_m)[0]
        mean = boundary_within_tolerance(np.array([pred]), np.array([ref]), tolerance_m)[0]
    else:
        haus, mean, spacing = pair_boundary_distances(np.array([ref]), np.array([pred]), 1.0)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    haus, mean = np.ravel(haus)[0], np.ravel(mean)[0]
    return {"shape": shape, "n": n, "vertices": vertices, "seconds": round(seconds, 2),
            "traced_peak_mb": round(peak / 2**20, 1),
            "rss_growth_mb": round((rss_after - rss_before) / 1024, 1),
            "hausdorff_m": float(haus), "mean_distance_m": float(mean)}


QGIS_PROCESS = "/usr/bin/qgis_process.bin"  # /usr/bin/qgis_process passes a flag 3.22 rejects


def write_pair_gpkg(path: str, ref, pred) -> None:
    """One GeoPackage, layers ``reference`` and ``predicted`` of one polygon each, no CRS."""
    from osgeo import ogr

    driver = ogr.GetDriverByName("GPKG")
    ds = driver.CreateDataSource(path)
    for name, geom in (("reference", ref), ("predicted", pred)):
        layer = ds.CreateLayer(name, None, ogr.wkbPolygon)
        feature = ogr.Feature(layer.GetLayerDefn())
        feature.SetGeometry(ogr.CreateGeometryFromWkb(shapely.to_wkb(geom)))
        layer.CreateFeature(feature)
    ds = None


def run_qgis_process(shape: str, n: int) -> dict:
    """The pair end to end through ``qgis_process`` (defaults, every output), in a throw-away
    profile: wall time and the peak resident memory of the qgis_process process."""
    import tempfile

    ref, pred = make_pair(shape, n)
    with tempfile.TemporaryDirectory() as tmp:
        gpkg = os.path.join(tmp, "pair.gpkg")
        write_pair_gpkg(gpkg, ref, pred)
        del ref, pred
        plugins = os.path.join(tmp, "plugins")
        os.makedirs(plugins)
        os.symlink(ROOT, os.path.join(plugins, "iou_evaluation"))
        site = os.path.dirname(os.path.dirname(os.path.abspath(shapely.__file__)))
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QGIS_PLUGINPATH": plugins,
               "QGIS_CUSTOM_CONFIG_PATH": os.path.join(tmp, "profile"),
               "PYTHONPATH": os.pathsep.join([site, os.environ.get("PYTHONPATH", "")])}
        os.makedirs(env["QGIS_CUSTOM_CONFIG_PATH"])
        subprocess.run([QGIS_PROCESS, "plugins", "enable", "iou_evaluation"], env=env,
                       check=True, capture_output=True)
        outputs = {"TRUE_POSITIVES": "tp.gpkg", "FALSE_POSITIVES": "fp.gpkg",
                   "FALSE_NEGATIVES": "fn.gpkg", "PER_FIELD": "per_field.csv",
                   "REPORT_JSON": "report.json", "REPORT_HTML": "report.html"}
        args = [QGIS_PROCESS, "run", "ioueval:evaluatepolygons", "--json", "--",
                f"PREDICTED={gpkg}|layername=predicted", f"REFERENCE={gpkg}|layername=reference"]
        args += [f"{k}={os.path.join(tmp, v)}" for k, v in outputs.items()]
        # Through a small Python parent that reports its child's peak resident memory (this
        # process's RUSAGE_CHILDREN would hold the largest of every run so far).
        measure_child = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
                         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
                         "file=sys.stderr); sys.exit(r.returncode)")
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", measure_child, *args], env=env,
                              capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
        peak = int(done.stderr.strip().splitlines()[-1]) / 1024
        with open(os.path.join(tmp, "report.json"), encoding="utf-8") as f:
            metrics = json.load(f)["metrics"]
        import csv
        with open(os.path.join(tmp, "per_field.csv"), encoding="utf-8") as f:
            row = next(csv.DictReader(f))
    return {"shape": shape, "n": n, "seconds": round(seconds, 1), "peak_rss_mb": round(peak),
            "iou": float(row["iou"]), "hausdorff_m": float(row["hausdorff_m"]),
            "mean_distance_m": float(row["boundary_mean_distance_m"]),
            "count_tp": metrics["count_tp"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--shapes", nargs="+", default=["circle", "staircase"])
    parser.add_argument("--qgis-process", action="store_true",
                        help="run each pair end to end through qgis_process instead")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="measure the lengths within this tolerance (m) instead")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), float(args.one[2]))))
        return
    if args.qgis_process:
        print("| shape | n per polygon | qgis_process s | peak RSS MB | IoU | Hausdorff m "
              "| mean distance m | TP |")
        print("|---|---|---|---|---|---|---|---|")
        for shape in args.shapes:
            for n in args.sizes:
                r = run_qgis_process(shape, n)
                print(f"| {shape} | {n} | {r['seconds']} | {r['peak_rss_mb']} | {r['iou']:.10f} "
                      f"| {r['hausdorff_m']:.6f} | {r['mean_distance_m']:.6f} "
                      f"| {r['count_tp']} |", flush=True)
        return
    what = ("reference within m | predicted within m" if args.tolerance > 0
            else "Hausdorff m | mean distance m")
    print(f"| shape | n | vertices (both) | time s | traced peak MB | RSS growth MB | {what} |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in args.shapes:
        for n in args.sizes:
            out = subprocess.run([sys.executable, __file__, "--one", shape, str(n),
                                  str(args.tolerance)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"| {shape} | {n} | failed: {out.stderr.strip().splitlines()[-1:]} |")
                continue
            r = json.loads(out.stdout)
            print(f"| {shape} | {n} | {r['vertices']} | {r['seconds']} | {r['traced_peak_mb']} "
                  f"| {r['rss_growth_mb']} | {float(r['hausdorff_m']):.6f} "
                  f"| {float(r['mean_distance_m']):.6f} |",
                  flush=True)


if __name__ == "__main__":
    main()
