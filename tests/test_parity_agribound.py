"""Parity with agribound 1.0.1, the seed's reference implementation, on 1,000 generated fields
(bench/parity: the layers and agribound's own output, committed as the oracle).

Every key both report must agree: counts exactly, other numbers within 1e-6 relative, and the
sampled boundary distances within the seed's bounds (agribound samples every 1 m: its Hausdorff
distance is low by at most Δ/2 and its mean boundary distance within Δ/4 of exact; ours is held
to the same bounds, so the two may differ by up to Δ/2 and Δ/2).
"""

import json
import math
from pathlib import Path

import pytest
import shapely
from iou_evaluation.core import evaluate
from osgeo import ogr

PARITY = Path(__file__).resolve().parent.parent / "bench" / "parity"
CRS = "EPSG:32613"
SPACING_M = 1.0
# Keys that are sampled distances in agribound, with the allowed absolute difference in m.
SAMPLED = {
    "hausdorff_mean_m": SPACING_M / 2,
    "hausdorff_median_m": SPACING_M / 2,
    "boundary_distance_mean_m": SPACING_M / 2,
    "boundary_distance_median_m": SPACING_M / 2,
}
# Bookkeeping keys whose form differs on purpose: agribound's CI dict has no per-key source.
NOT_COMPARED = {"boundary_sample_spacing_max_m"}


def read_layer(name, fields):
    dataset = ogr.Open(str(PARITY / "fields_1k.gpkg"))
    layer = dataset.GetLayerByName(name)
    geometries, attributes = [], {f: [] for f in fields}
    for feature in layer:  # GeoPackage order = agribound's (geopandas) row order
        geometry = feature.GetGeometryRef()
        geometries.append(None if geometry is None else shapely.from_wkb(bytes(geometry.ExportToIsoWkb())))
        for f in fields:
            attributes[f].append(feature.GetField(f))
    return geometries, attributes


@pytest.fixture(scope="module")
def layers():
    reference, ref_attributes = read_layer("reference", ["stratum"])
    predicted, _ = read_layer("predicted", [])
    return reference, predicted, ref_attributes["stratum"]


CONFIGS = {
    "defaults": {},
    "tolerance10": {"boundary_tolerance_m": 10.0},
    "strata_sizes_bootstrap": {"strata": True, "size_bins": "auto", "bootstrap": 200,
                               "bootstrap_seed": 42},
    "many_to_one": {"matching": "many_to_one"},
}


def compare(ours, theirs, path=""):
    """Assert that every key of agribound's report agrees with ours (recursively)."""
    if isinstance(theirs, dict):
        for key, value in theirs.items():
            if key in NOT_COMPARED:
                continue
            assert key in ours, f"missing {path}/{key}"
            compare(ours[key], value, f"{path}/{key}")
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), path
        for k, (a, b) in enumerate(zip(ours, theirs)):
            compare(a, b, f"{path}[{k}]")
    elif isinstance(theirs, bool) or isinstance(theirs, str) or theirs is None:
        if theirs is None:  # NaN in agribound's JSON
            assert ours is None or (isinstance(ours, float) and math.isnan(ours)), path
        else:
            assert ours == theirs, path
    elif isinstance(theirs, int) and not path.split("/")[-1].endswith("_m"):
        assert ours == theirs, path
    else:
        key = path.split("/")[-1]
        bound = SAMPLED.get(key)
        if bound is None and "/ci/" in path and key.split("[")[0] in SAMPLED:
            bound = SAMPLED[key.split("[")[0]]
        if bound is not None:
            assert abs(ours - theirs) <= bound, (path, ours, theirs)
        else:  # 1e-6 relative; areas near zero (m²) to within 1e-4 m²
            assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-4 if "area" in key else 1e-12), (
                path, ours, theirs)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_shared_key_agrees_with_agribound(layers, config):
    reference, predicted, strata = layers
    options = dict(CONFIGS[config])
    if options.pop("strata", False):
        options["strata"] = strata
        options["strata_name"] = "stratum"
    result = evaluate(predicted, reference, predicted_crs=CRS, reference_crs=CRS, **options)
    oracle = json.loads((PARITY / f"agribound_{config}.json").read_text(encoding="utf-8"))
    compare(result.metrics, oracle)


def test_per_field_table_agrees_with_agribound_evaluate_frame(layers):
    import csv

    reference, predicted, _ = layers
    result = evaluate(predicted, reference, predicted_crs=CRS, reference_crs=CRS)
    with open(PARITY / "agribound_defaults_per_field.csv", newline="", encoding="utf-8") as f:
        oracle = {int(row["ref_index"]): row for row in csv.DictReader(f)}
    table = result.per_reference
    rows = list(result.reference.keep)
    assert sorted(rows) == sorted(oracle)

    def number(text):
        return float("nan") if text == "" else float(text)

    for k, position in enumerate(rows):
        row = oracle[position]
        assert bool(table["matched"][k]) == (row["matched"] == "True")
        assert table["pred_index"][k] == (int(row["pred_index"]) if row["pred_index"] else -1)
        assert table["utm_epsg"][k] == int(row["utm_epsg"])
        assert table["n_overlapping_pred"][k] == int(row["n_overlapping_pred"])
        for name in ("area_m2", "iou", "best_iou", "perimeter_m", "pred_area_m2"):
            assert table[name][k] == pytest.approx(number(row[name]), rel=1e-6, nan_ok=True), name
        for name in ("oversegmentation", "undersegmentation"):
            assert table[name][k] == pytest.approx(number(row[name]), abs=1e-9, nan_ok=True), name
        for name in ("hausdorff_m", "boundary_mean_distance_m"):  # sampled: within Δ/2
            theirs, ours = number(row[name]), table[name][k]
            assert math.isnan(theirs) == math.isnan(ours), name
            if not math.isnan(theirs):
                assert abs(ours - theirs) <= SPACING_M / 2, (name, position, ours, theirs)
