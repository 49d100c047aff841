"""Benchmark worker: read a GeoPackage with geopandas and evaluate it with agribound.

Runs in agribound's own environment (bench/.venv-agribound, Python >= 3.12; made by
bench/setup_agribound.sh), in a subprocess of its own started by bench/run.py. Only
``agribound.evaluate.evaluate`` is timed as the evaluation; reading is timed separately:

    bench/.venv-agribound/bin/python bench/worker_agribound.py DATA.gpkg \
        --kwargs '{"boundary_tolerance_m": 10}' --out result.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from worker_common import REPORTED_KEYS, peak_rss_mib

def to_json_value(value):
    """A metric as JSON: NaN and infinities become None, numpy scalars plain numbers."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="GeoPackage with layers reference, predicted")
    parser.add_argument("--kwargs", default="{}", help="JSON object of evaluate keywords")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    kwargs = json.loads(args.kwargs)

    start = time.perf_counter()
    import geopandas as gpd
    import numpy as np
    import shapely
    from agribound import __version__ as agribound_version
    from agribound.evaluate import evaluate

    import_s = time.perf_counter() - start

    start = time.perf_counter()
    reference = gpd.read_file(args.data, layer="reference")
    predicted = gpd.read_file(args.data, layer="predicted")
    read_s = time.perf_counter() - start

    start = time.perf_counter()
    metrics = evaluate(predicted, reference, **kwargs)
    evaluate_s = time.perf_counter() - start

    result = {
        "tool": "agribound",
        "kwargs": kwargs,
        "status": "ok",
        "versions": {
            "python": sys.version.split()[0],
            "agribound": agribound_version,
            "geopandas": gpd.__version__,
            "shapely": shapely.__version__,
            "geos": shapely.geos_version_string,
            "numpy": np.__version__,
        },
        "import_s": import_s,
        "read_s": read_s,
        "evaluate_s": evaluate_s,
        "self_peak_rss_mib": peak_rss_mib(),
        "metrics": {k: to_json_value(metrics[k]) for k in REPORTED_KEYS if k in metrics},
        "computes_boundary_distances": "boundary_distance_mean_m" in metrics,
        "computes_tolerance_metrics": "boundary_f1" in metrics,
    }
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
