"""Core ``evaluate`` on a GeoPackage of bench/generate.py or bench/tile_fields.py, one piece or
in exact work units (optionally on a local Dask cluster): time, peak RSS, and whether the
reports agree.

Each run is a process of its own (peak RSS is the process's ``ru_maxrss``; with Dask, the
workers' peaks are read from them). The layers are read with OGR into shapely first; the
reading is timed apart.

    .venv/bin/python bench/units.py bench/data/tiled_4x50k.gpkg --mode one
    .venv/bin/python bench/units.py bench/data/tiled_4x50k.gpkg --mode units
    .venv/bin/python bench/units.py bench/data/tiled_20x50k.gpkg --mode dask --workers 2

Prints one JSON line: mode, n_reference, n_predicted, read_s, evaluate_s, peak_rss_mib (this
process), worker_peak_rss_mib (Dask), load (1-minute load average before the run), and a
digest of the metrics (sha256 of the report's metrics as JSON, boundary keys included) so
that runs can be compared; the metrics themselves go to ``<gpkg stem>.<mode>.metrics.json``
beside the GeoPackage.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import shapely

ROOT = Path(__file__).resolve().parents[1]


def read_layer(path, name, columns=()):
    """(geometries, {column: list}, CRS WKT) of a GeoPackage layer, with OGR."""
    from osgeo import ogr

    ogr.UseExceptions()
    dataset = ogr.Open(str(path))
    layer = dataset.GetLayerByName(name)
    wkbs, values = [], {c: [] for c in columns}
    for feature in layer:
        geometry = feature.GetGeometryRef()
        wkbs.append(None if geometry is None else bytes(geometry.ExportToIsoWkb()))
        for c in columns:
            values[c].append(feature.GetField(c))
    srs = layer.GetSpatialRef()
    return shapely.from_wkb(np.array(wkbs, dtype=object)), values, (
        srs.ExportToWkt() if srs else None)


def digest(metrics) -> str:
    from iou_evaluation.core.reports.data import to_json_text

    return hashlib.sha256(to_json_text(metrics).encode()).hexdigest()[:16]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gpkg", type=Path)
    parser.add_argument("--mode", choices=("one", "units", "dask"), required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--unit-features", type=int, default=None)
    parser.add_argument("--tolerance", type=float, default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    import conftest  # noqa: F401  the plugin as iou_evaluation
    from iou_evaluation.core import evaluate

    load = os.getloadavg()[0]
    start = time.perf_counter()
    reference, _, ref_crs = read_layer(args.gpkg, "reference")
    predicted, _, pred_crs = read_layer(args.gpkg, "predicted")
    read_s = time.perf_counter() - start
    kwargs = dict(predicted_crs=pred_crs, reference_crs=ref_crs,
                  boundary_tolerance_m=args.tolerance)
    worker_rss = None
    start = time.perf_counter()
    if args.mode == "one":
        result = evaluate(predicted, reference, **kwargs)
    elif args.mode == "units":
        result = evaluate(predicted, reference, work_unit_features=args.unit_features or 20_000,
                          **kwargs)
    else:
        import distributed
        from dask_cluster import dask_scheduler

        with tempfile.TemporaryDirectory() as tmp, \
                dask_scheduler(Path(tmp), args.workers) as address, \
                distributed.Client(address) as client:
            start = time.perf_counter()
            result = evaluate(predicted, reference, executor=client,
                              work_unit_features=args.unit_features, **kwargs)
            worker_rss = sorted(
                v / 1024 for v in client.run(
                    lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())
    evaluate_s = time.perf_counter() - start
    from iou_evaluation.core.reports.data import to_json_text

    suffix = f"{args.mode}{args.workers if args.mode == 'dask' else ''}"
    out = args.gpkg.with_name(f"{args.gpkg.stem}.{suffix}.metrics.json")
    out.write_text(to_json_text(result.metrics))
    print(json.dumps({
        "mode": args.mode, "workers": args.workers if args.mode == "dask" else None,
        "gpkg": args.gpkg.name, "n_reference": len(reference), "n_predicted": len(predicted),
        "read_s": round(read_s, 1), "evaluate_s": round(evaluate_s, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "worker_peak_rss_mib": worker_rss, "load": round(load, 2),
        "f1": result.metrics["f1"], "metrics_digest": digest(result.metrics),
    }))


if __name__ == "__main__":
    main()
