"""Regenerate the agribound 1.0.1 parity oracle from bench/parity/fields_1k.gpkg.

Runs agribound's ``evaluate`` on the layers ``predicted`` and ``reference`` for the four
configurations of CONFIGS and writes, beside this script:

- ``agribound_<config>.json``: the result dict as agribound returns it, NaN as null (and
  ±infinity as the strings "inf" / "-inf", which JSON cannot hold otherwise);
- ``agribound_defaults_per_field.csv``: ``evaluate_frame`` with the defaults, one row per
  evaluated reference field. ``ref_index`` is the row's position in the reference layer
  (0-based; the GeoPackage fid is ref_index + 1) and ``field_id`` its id; ``pred_index`` and
  ``max_overlap_pred_index`` are 0-based positions in the predicted layer (empty when none);
- ``manifest.json``: agribound's and its dependencies' versions, the input's SHA-256, the
  keyword arguments of every configuration and the command.

Run it in agribound's environment (bench/setup_agribound.sh makes it), from the repository root:

    bench/.venv-agribound/bin/python bench/parity/make_oracle.py
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pyproj
import shapely
from agribound import __version__ as agribound_version
from agribound.evaluate import evaluate, evaluate_frame

HERE = Path(__file__).resolve().parent
DATA = HERE / "fields_1k.gpkg"

#: Keyword arguments of agribound.evaluate.evaluate per configuration (file name suffix).
CONFIGS = {
    "defaults": {},
    "tolerance10": {"boundary_tolerance_m": 10.0},
    "strata_sizes_bootstrap": {
        "strata": "stratum", "size_bins": "auto", "bootstrap": 200, "bootstrap_seed": 42,
    },
    "many_to_one": {"matching": "many_to_one"},
}


def to_json(value):
    """agribound's result as plain JSON: numpy scalars and arrays become numbers and lists,
    NaN None, ±inf "inf" / "-inf"."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [to_json(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def main():
    if agribound_version != "1.0.1":
        sys.exit(f"agribound 1.0.1 is the oracle; this environment has {agribound_version}")
    reference = gpd.read_file(DATA, layer="reference")
    predicted = gpd.read_file(DATA, layer="predicted")
    for name, kwargs in CONFIGS.items():
        metrics = evaluate(predicted, reference, **kwargs)
        path = HERE / f"agribound_{name}.json"
        path.write_text(json.dumps(to_json(metrics), indent=1, allow_nan=False) + "\n")
        print(f"{path.name}: TP {metrics['count_tp']} FP {metrics['count_fp']} "
              f"FN {metrics['count_fn']} F1 {metrics['f1']:.6f}")

    frame = evaluate_frame(predicted, reference)
    frame.insert(0, "field_id", reference.loc[frame.index, "field_id"].to_numpy())
    frame.index.name = "ref_index"
    for column in ("pred_index", "max_overlap_pred_index"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    csv = HERE / "agribound_defaults_per_field.csv"
    frame.to_csv(csv, float_format="%.17g")
    print(f"{csv.name}: {len(frame)} rows, columns {', '.join(frame.columns)}")

    manifest = {
        "input": DATA.name,
        "input_sha256": hashlib.sha256(DATA.read_bytes()).hexdigest(),
        "rows": {"reference": len(reference), "predicted": len(predicted)},
        "configs": CONFIGS,
        "versions": {
            "agribound": agribound_version,
            "python": sys.version.split()[0],
            "geopandas": gpd.__version__,
            "shapely": shapely.__version__,
            "geos": shapely.geos_version_string,
            "pyproj": pyproj.__version__,
            "proj": pyproj.proj_version_str,
            "numpy": np.__version__,
            "pandas": pd.__version__,
        },
        "command": "bench/.venv-agribound/bin/python bench/parity/make_oracle.py",
    }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
