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
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location(
    "iou_evaluation", {init!r}, submodule_search_locations=[{root!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["iou_evaluation"] = module
spec.loader.exec_module(module)
from iou_evaluation.core.classmaps.rasters import open_band, raster_confusion
from iou_evaluation.core.classmaps.confusion import class_metrics
p = open_band({predicted!r}, 1, "PREDICTED")
r = open_band({reference!r}, 1, "REFERENCE")
def status(key):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(key))
before = status("VmRSS")
start = time.perf_counter()
result = raster_confusion(p, r)
seconds = time.perf_counter() - start
peak = status("VmHWM")
metrics = class_metrics(result.counts)
print(json.dumps({{"seconds": seconds, "peak_kib": peak, "before_kib": before,
                  "pixels": int(result.counts.sum()), "miou": metrics["miou"]}}))
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


def measure(predicted: str, reference: str) -> dict:
    code = WORKER.format(init=str(ROOT / "__init__.py"), root=str(ROOT),
                         predicted=predicted, reference=reference)
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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    main()
