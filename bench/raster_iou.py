"""Peak memory and time of core.classmaps.rasters on a large label-raster pair.

    .venv/bin/python bench/raster_iou.py --size 20000 --folder /tmp/raster_bench

Writes (or reuses) two Byte GeoTIFFs of size × size pixels (tiled, DEFLATE) in ``--folder``:
a reference of 5 classes in 500-pixel patches with 20 % of its pixels changed in the
prediction, and runs each case in a fresh subprocess, printing a Markdown table:

- ``same grid``: the prediction on the reference grid;
- ``shifted``: the prediction's origin moved by 0.3 pixel in x and 0.6 in y (the separable
  nearest-neighbour path: a read window per block, rows and columns looked up apart);
- ``other CRS`` (``--other-crs``): the prediction's pixels placed in EPSG:3857 between the
  Web Mercator images of the reference's corners (EPSG:32633), so each block's pixel centres
  go through PROJ (the general path; the mIoU differs, the grids do not match pixel for
  pixel).

Peak memory is the worker's ``VmHWM`` (/proc/self/status: the resident high-water mark since
the worker started, interpreter and imports included; ``ru_maxrss`` would also count the
parent it was forked from), beside its resident set before the run; "run" is the time of
``raster_confusion`` alone.

``--reprojected EPSG:xxxx`` (issue 26) benches instead a reference in ``--crs`` (default
EPSG:3035, 10 m pixels round 10° E 51° N) against a prediction in another CRS: the
reference's patches warped there by GDAL (nearest), 20 % of the pixels changed, and against
the same changes on the reference grid. Each pair runs through rasteriou's core (approximate
transform, and ``--exact`` also PROJ for every pixel centre) and through the simple
alternative: ``gdal.Warp`` of the prediction onto the reference grid (nearest neighbour,
GDAL's default error threshold of 0.125 pixel, into memory) and one ``numpy.bincount`` of
reference × 256 + prediction per block of lines. ``--moved`` counts the reference pixels
whose predicted pixel differs between the approximate transform and PROJ for every centre.

    nice -n 10 .venv/bin/python bench/raster_iou.py --size 10000 --folder bench/data/r3035 \
        --reprojected EPSG:32632 --exact --moved
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The start of every worker: the plugin imported as ``iou_evaluation`` (as tests/conftest.py).
IMPORT_PLUGIN = """
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location(
    "iou_evaluation", {init!r}, submodule_search_locations=[{root!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["iou_evaluation"] = module
spec.loader.exec_module(module)
"""

WORKER = IMPORT_PLUGIN + """
from iou_evaluation.core.classmaps.rasters import open_band, raster_confusion
from iou_evaluation.core.classmaps.confusion import class_metrics
p = open_band({predicted!r}, 1, "PREDICTED")
r = open_band({reference!r}, 1, "REFERENCE")
def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(key))
before = status("VmRSS")
start = time.perf_counter()
result = raster_confusion(p, r, **{options!r})
seconds = time.perf_counter() - start
peak = status("VmHWM")
metrics = class_metrics(result.counts)
print(json.dumps({{"seconds": seconds, "peak_kib": peak, "before_kib": before,
                  "pixels": int(result.counts.sum()), "miou": metrics["miou"]}}))
"""

#: The simple alternative: gdal.Warp onto the reference grid, then numpy.bincount.
SIMPLE = """
import json, time
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(key))
before = status("VmRSS")
start = time.perf_counter()
ref = gdal.Open({reference!r})
pred = gdal.Open({predicted!r})
gt = ref.GetGeoTransform()
if {warp!r}:
    bounds = (gt[0], gt[3] + ref.RasterYSize * gt[5], gt[0] + ref.RasterXSize * gt[1], gt[3])
    pred = gdal.Warp("", pred, format="MEM", dstSRS=ref.GetProjection(), outputBounds=bounds,
                     width=ref.RasterXSize, height=ref.RasterYSize, resampleAlg="near",
                     dstNodata=255)
counts = np.zeros(256 * 256, np.int64)
rows = max(1, (1 << 21) // ref.RasterXSize)
for r0 in range(0, ref.RasterYSize, rows):
    n = min(rows, ref.RasterYSize - r0)
    a = ref.GetRasterBand(1).ReadAsArray(0, r0, ref.RasterXSize, n).astype(np.int64)
    b = pred.GetRasterBand(1).ReadAsArray(0, r0, ref.RasterXSize, n).astype(np.int64)
    counts += np.bincount((a * 256 + b).ravel(), minlength=256 * 256)
matrix = counts.reshape(256, 256)  # [reference, prediction]
seconds = time.perf_counter() - start
k = 5  # classes 0..4; 255 is the prediction's nodata (outside it, or warped outside)
tp = np.diag(matrix)[:k].astype(float)
fn = matrix[:k].sum(axis=1) - tp
fp = matrix[:k, :k].sum(axis=0) - tp
present = tp + fp + fn > 0
miou = float(np.mean(tp[present] / (tp + fp + fn)[present]))
print(json.dumps({{"seconds": seconds, "peak_kib": status("VmHWM"), "before_kib": before,
                  "pixels": int(matrix[:k].sum() - matrix[:k, 255].sum()), "miou": miou}}))
"""

#: Reference pixels whose predicted pixel moves between the approximate transform and PROJ
#: for every centre.
MOVED = IMPORT_PLUGIN + """
import numpy as np
from iou_evaluation.core.classmaps.grid_transform import GridTransform
from iou_evaluation.core.classmaps.rasters import open_band
p = open_band({predicted!r}, 1, "PREDICTED")
r = open_band({reference!r}, 1, "REFERENCE")
approximate, exact = GridTransform(r, p), GridTransform(r, p, max_error_px=0)
moved = inside = 0
largest = 0.0
for r0 in range(0, r.height, 128):
    r1 = min(r.height, r0 + 128)
    (ac, ar), (ec, er) = approximate.block(r0, r1), exact.block(r0, r1)
    ok = np.isfinite(ec)
    inside += int(ok.sum())
    moved += int(((np.floor(ac) != np.floor(ec)) | (np.floor(ar) != np.floor(er)))[ok].sum())
    largest = max(largest, float(np.max(np.maximum(np.abs(ac - ec), np.abs(ar - er))[ok])))
print(json.dumps({{"pixels": inside, "moved": moved, "largest_error_px": largest,
                  "proj_points": approximate.stats["proj_points"]}}))
"""


def write_pair(folder: Path, size: int, shift=(0.0, 0.0), crs="EPSG:32633", tag="same"):
    """Write the reference (once) and a prediction on a grid shifted by ``shift`` pixels."""
    import numpy as np
    import pyproj
    from osgeo import gdal

    gdal.UseExceptions()
    folder.mkdir(parents=True, exist_ok=True)
    reference = folder / f"reference_{size}.tif"
    predicted = folder / f"predicted_{size}_{tag}.tif"
    pixel, x0, y0 = 10.0, 400_000.0, 5_000_000.0
    rng = np.random.default_rng(0)
    patch = rng.integers(0, 5, (size // 500 + 1, size // 500 + 1)).astype(np.uint8)
    rows = 1000
    targets = [(reference, (x0, pixel, 0, y0, 0, -pixel), "EPSG:32633", False)]
    if tag == "other_crs":
        # About the same ground in Web Mercator: the corners transformed, pixels in between.
        to_merc = pyproj.Transformer.from_crs("EPSG:32633", "EPSG:3857", always_xy=True)
        (mx0, my0), (mx1, my1) = (to_merc.transform(x0, y0),
                                  to_merc.transform(x0 + size * pixel, y0 - size * pixel))
        gt = (mx0, (mx1 - mx0) / size, 0, my0, 0, (my1 - my0) / size)
        targets.append((predicted, gt, "EPSG:3857", True))
    else:
        gt = (x0 + shift[0] * pixel, pixel, 0, y0 - shift[1] * pixel, 0, -pixel)
        targets.append((predicted, gt, crs, True))
    for path, geotransform, target_crs, noisy in targets:
        if path.exists():
            continue
        dataset = gdal.GetDriverByName("GTiff").Create(
            str(path), size, size, 1, gdal.GDT_Byte,
            ["TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=YES"],
        )
        dataset.SetGeoTransform(geotransform)
        dataset.SetProjection(pyproj.CRS(target_crs).to_wkt())
        band = dataset.GetRasterBand(1)
        noise = np.random.default_rng(1)
        for r0 in range(0, size, rows):
            n = min(rows, size - r0)
            r = (np.arange(r0, r0 + n) // 500)[:, None]
            c = (np.arange(size) // 500)[None, :]
            block = patch[r, c]
            if noisy:
                change = noise.random(block.shape) < 0.2
                block = np.where(change, noise.integers(0, 5, block.shape, dtype=np.uint8),
                                 block)
            band.WriteArray(block.astype(np.uint8), 0, r0)
        dataset = None
    return str(predicted), str(reference)


def write_reprojected(folder: Path, size: int, crs: str, predicted_crs: str):
    """(reference, prediction on the reference grid, prediction in ``predicted_crs``): the
    reference's 500-pixel patches of 5 classes (10 m pixels), the predictions 20 % changed;
    the reprojected one is the reference warped by GDAL (nearest), then changed."""
    import numpy as np
    import pyproj
    from osgeo import gdal

    gdal.UseExceptions()
    folder.mkdir(parents=True, exist_ok=True)
    tag = crs.replace(":", "") + "_" + predicted_crs.replace(":", "")
    reference = folder / f"reference_{size}_{crs.replace(':', '')}.tif"
    same = folder / f"predicted_{size}_{crs.replace(':', '')}_same.tif"
    reprojected = folder / f"predicted_{size}_{tag}.tif"
    pixel = 10.0
    x0, y0 = {"EPSG:3035": (4_250_000.0, 3_100_000.0)}.get(crs, (400_000.0, 5_000_000.0))
    creation = ["TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=YES"]
    rng = np.random.default_rng(0)
    patch = rng.integers(0, 5, (size // 500 + 1, size // 500 + 1)).astype(np.uint8)

    def write(path, source, gt, wkt, noisy, seed, nodata=None):
        dataset = gdal.GetDriverByName("GTiff").Create(str(path), source[0], source[1], 1,
                                                       gdal.GDT_Byte, creation)
        dataset.SetGeoTransform(gt)
        dataset.SetProjection(wkt)
        band = dataset.GetRasterBand(1)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        noise = np.random.default_rng(seed)
        for r0 in range(0, source[1], 1000):
            block = source[2](r0, min(1000, source[1] - r0))
            if noisy:
                change = noise.random(block.shape) < 0.2
                block = np.where(change & (block != 255),
                                 noise.integers(0, 5, block.shape, dtype=np.uint8), block)
            band.WriteArray(block.astype(np.uint8), 0, r0)
        dataset = None

    def patches(r0, n):
        return patch[(np.arange(r0, r0 + n) // 500)[:, None], (np.arange(size) // 500)[None, :]]

    wkt = pyproj.CRS(crs).to_wkt()
    gt = (x0, pixel, 0, y0, 0, -pixel)
    if not reference.exists():
        write(reference, (size, size, patches), gt, wkt, False, 1)
    if not same.exists():
        write(same, (size, size, patches), gt, wkt, True, 2)
    if not reprojected.exists():
        warped = gdal.Warp("", str(reference), format="MEM", dstSRS=predicted_crs,
                           xRes=pixel, yRes=pixel, resampleAlg="near", dstNodata=255)
        band = warped.GetRasterBand(1)
        write(reprojected, (warped.RasterXSize, warped.RasterYSize,
                            lambda r0, n: band.ReadAsArray(0, r0, warped.RasterXSize, n)),
              warped.GetGeoTransform(), warped.GetProjection(), True, 3, nodata=255)
        warped = band = None
    return str(reference), str(same), str(reprojected)


def measure(predicted: str, reference: str, options=None, simple=None) -> dict:
    if simple is None:
        code = WORKER.format(init=str(ROOT / "__init__.py"), root=str(ROOT),
                             predicted=predicted, reference=reference, options=options or {})
    else:
        code = SIMPLE.format(predicted=predicted, reference=reference, warp=simple == "warp")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - start
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/raster_bench"))
    parser.add_argument("--other-crs", action="store_true")
    parser.add_argument("--reprojected", metavar="CRS",
                        help="bench a reference in --crs against a prediction in CRS")
    parser.add_argument("--crs", default="EPSG:3035", help="reference CRS of --reprojected")
    parser.add_argument("--exact", action="store_true",
                        help="with --reprojected: also PROJ for every pixel centre")
    parser.add_argument("--moved", action="store_true",
                        help="with --reprojected: count pixels moved against PROJ per centre")
    args = parser.parse_args(argv)
    if args.reprojected:
        return bench_reprojected(args)
    cases = [("same grid", {}), ("shifted", {"shift": (0.3, 0.6), "tag": "shifted"})]
    if args.other_crs:
        cases.append(("other CRS", {"tag": "other_crs"}))
    print("| case | pixels | run s | process s | peak RSS MiB | RSS before run MiB | mIoU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, options in cases:
        predicted, reference = write_pair(args.folder, args.size, **options)
        m = measure(predicted, reference)
        print(f"| {label} | {m['pixels']:,} | {m['seconds']:.1f} | {m['wall_s']:.1f} | "
              f"{m['peak_kib'] / 1024:.0f} | {m['before_kib'] / 1024:.0f} | {m['miou']:.4f} |",
              flush=True)


def bench_reprojected(args):
    reference, same, reprojected = write_reprojected(args.folder, args.size, args.crs,
                                                     args.reprojected)
    cases = [("same grid", same, "rasteriou", {}, None),
             ("same grid", same, "read + bincount", None, "read"),
             (f"prediction in {args.reprojected}", reprojected, "rasteriou", {}, None),
             (f"prediction in {args.reprojected}", reprojected, "gdal.Warp + bincount", None,
              "warp")]
    if args.exact:
        cases.insert(3, (f"prediction in {args.reprojected}", reprojected,
                         "rasteriou, PROJ for every centre", {"transform_error_px": 0}, None))
    print(f"| reference {args.crs}, {args.size:,} × {args.size:,} | method | pixels | run s | "
          f"process s | peak RSS MiB | mIoU |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, predicted, method, options, simple in cases:
        m = measure(predicted, reference, options, simple)
        print(f"| {label} | {method} | {m['pixels']:,} | {m['seconds']:.1f} | {m['wall_s']:.1f} "
              f"| {m['peak_kib'] / 1024:.0f} | {m['miou']:.4f} |", flush=True)
    if args.moved:
        code = MOVED.format(init=str(ROOT / "__init__.py"), root=str(ROOT),
                            predicted=reprojected, reference=reference)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True)
        out = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"\nmoved against PROJ for every centre: {out['moved']:,} of {out['pixels']:,} "
              f"pixels ({out['moved'] / out['pixels']:.2e}); largest error "
              f"{out['largest_error_px']:.2e} predicted pixel; {out['proj_points']:,} PROJ "
              f"points for the approximate transform")


if __name__ == "__main__":
    main()
