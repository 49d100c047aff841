"""Benchmark worker: read a GeoPackage with GDAL's OGR and evaluate it with our core.

Run by bench/run.py in a subprocess of its own (project venv), so that its wall time and peak
memory are its own. Reading and evaluation are timed separately; the result is written as JSON:

    .venv/bin/python bench/worker_core.py DATA.gpkg --kwargs '{"boundary_tolerance_m": 10}' \
        --out result.json

A keyword the installed core.evaluate does not accept is not an error: the result then has
status "unsupported" and lists the missing keywords, and no evaluation runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import shapely
from worker_common import REPORTED_KEYS, peak_rss_mib

ROOT = Path(__file__).resolve().parent.parent

def import_plugin_package():
    """Import the repository root as the package ``iou_evaluation``, as tests/conftest.py
    does (and as QGIS would), whatever the checkout folder is called."""
    if "iou_evaluation" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "iou_evaluation", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["iou_evaluation"] = module
        spec.loader.exec_module(module)
    return sys.modules["iou_evaluation"]


def plugin_version() -> str:
    """The ``version=`` of the plugin's metadata.txt."""
    for line in (ROOT / "metadata.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("version="):
            return line.split("=", 1)[1].strip()
    return "unknown"


def read_layer(path, layer_name):
    """Geometries, attribute columns and CRS of one GeoPackage layer via OGR's Arrow stream.

    Returns (geometries: object array (n,) of shapely geometries or None, columns: dict of
    arrays (n,), crs: "AUTHORITY:CODE" or WKT).
    """
    from osgeo import ogr

    ogr.UseExceptions()
    dataset = ogr.Open(str(path))
    layer = dataset.GetLayerByName(layer_name)
    wkbs, columns = [], {}
    geometry_column = layer.GetGeometryColumn() or "geom"
    for batch in layer.GetArrowStreamAsNumPy(options=["USE_MASKED_ARRAYS=NO"]):
        for name, values in batch.items():
            if name == geometry_column:
                wkbs.append(values)
            else:
                columns.setdefault(name, []).append(values)
    wkb = np.concatenate(wkbs) if wkbs else np.zeros(0, dtype=object)
    geometries = shapely.from_wkb(wkb, on_invalid="ignore")
    columns = {name: np.concatenate(parts) for name, parts in columns.items()}
    srs = layer.GetSpatialRef()
    name, code = srs.GetAuthorityName(None), srs.GetAuthorityCode(None)
    crs = f"{name}:{code}" if name and code else srs.ExportToWkt()
    return np.asarray(geometries, dtype=object), columns, crs


def to_json_value(value):
    """A metric as JSON: NaN and infinities become None, numpy scalars plain numbers."""
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="GeoPackage with layers reference, predicted")
    parser.add_argument("--kwargs", default="{}", help="JSON object of core.evaluate keywords")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    kwargs = json.loads(args.kwargs)

    start = time.perf_counter()
    import_plugin_package()
    from iou_evaluation.core import evaluate

    import_s = time.perf_counter() - start
    accepted = inspect.signature(evaluate).parameters
    missing = sorted(k for k in kwargs if k not in accepted)
    result = {
        "tool": "core",
        "kwargs": kwargs,
        "versions": {
            "python": sys.version.split()[0],
            "shapely": shapely.__version__,
            "geos": shapely.geos_version_string,
            "numpy": np.__version__,
            "plugin": plugin_version(),
        },
        "import_s": import_s,
    }
    if missing:
        result.update(status="unsupported", missing_keywords=missing)
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
        return

    start = time.perf_counter()
    reference, _, reference_crs = read_layer(args.data, "reference")
    predicted, _, predicted_crs = read_layer(args.data, "predicted")
    read_s = time.perf_counter() - start

    start = time.perf_counter()
    evaluation = evaluate(
        predicted, reference, predicted_crs=predicted_crs, reference_crs=reference_crs, **kwargs
    )
    evaluate_s = time.perf_counter() - start

    metrics = evaluation.metrics
    result.update(
        status="ok",
        read_s=read_s,
        evaluate_s=evaluate_s,
        self_peak_rss_mib=peak_rss_mib(),
        metrics={k: to_json_value(metrics[k]) for k in REPORTED_KEYS if k in metrics},
        computes_boundary_distances="boundary_distance_mean_m" in metrics,
        computes_tolerance_metrics="boundary_f1" in metrics,
    )
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
