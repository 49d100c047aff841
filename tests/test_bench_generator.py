"""The benchmark's field generator (bench/generate.py): deterministic, fields within the
size range it declares, and every fault kind it declares actually present."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import shapely
from conftest import ROOT

N_REFERENCE = 200


def _load_generator():
    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "bench" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _load_generator()


@pytest.fixture(scope="module")
def layers():
    return generate.generate_fields(N_REFERENCE, seed=3)


def _same_layers(a, b) -> bool:
    (ref_a, ref_attrs_a, pred_a, pred_attrs_a, crs_a) = a
    (ref_b, ref_attrs_b, pred_b, pred_attrs_b, crs_b) = b
    return (
        crs_a == crs_b
        and list(shapely.to_wkb(ref_a)) == list(shapely.to_wkb(ref_b))
        and list(shapely.to_wkb(pred_a)) == list(shapely.to_wkb(pred_b))
        and all(list(ref_attrs_a[k]) == list(ref_attrs_b[k]) for k in ref_attrs_a)
        and all(list(pred_attrs_a[k]) == list(pred_attrs_b[k]) for k in pred_attrs_a)
        and ref_attrs_a.keys() == ref_attrs_b.keys()
        and pred_attrs_a.keys() == pred_attrs_b.keys()
    )


def test_same_seed_gives_identical_wkb_and_attributes(layers):
    assert _same_layers(layers, generate.generate_fields(N_REFERENCE, seed=3))


def test_different_seed_gives_different_layers(layers):
    assert not _same_layers(layers, generate.generate_fields(N_REFERENCE, seed=4))


def test_reference_has_the_requested_rows_unique_ids_and_a_projected_crs(layers):
    reference, attrs, _, _, crs = layers
    assert crs == "EPSG:32613"
    assert len(reference) == N_REFERENCE
    assert len(np.unique(attrs["field_id"])) == N_REFERENCE
    assert set(attrs["layout"]) <= {"rectangular", "pivot", "pivot_corner", "irregular"}
    assert None in set(attrs["stratum"])  # a field without a stratum
    assert len({s for s in attrs["stratum"] if s is not None}) >= 2


def test_reference_fields_are_0_25_to_50_ha(layers):
    reference = layers[0]
    present = reference[~shapely.is_missing(reference)]
    area_ha = shapely.area(shapely.make_valid(present)) / 1e4
    assert area_ha.min() >= 0.25
    assert area_ha.max() <= 50.0
    assert np.all(np.isin(shapely.get_type_id(present), [3]))  # Polygons only


def test_reference_faults_are_nulls_and_self_touching_rings(layers):
    reference = layers[0]
    assert shapely.is_missing(reference).sum() >= 1
    present = reference[~shapely.is_missing(reference)]
    invalid = present[~shapely.is_valid(present)]
    assert len(invalid) >= 1
    assert all("Ring Self-intersection" in shapely.is_valid_reason(g) or "Self-intersection"
               in shapely.is_valid_reason(g) for g in invalid)


def test_reference_fields_overlap_only_where_a_field_is_recorded_twice(layers):
    reference = layers[0]
    fields = shapely.make_valid(reference[~shapely.is_missing(reference)])
    a, b = shapely.STRtree(fields).query(fields, predicate="intersects")
    a, b = a[a < b], b[a < b]
    iou = shapely.area(shapely.intersection(fields[a], fields[b])) / shapely.area(
        shapely.union(fields[a], fields[b])
    )
    duplicates = iou > 0.5
    assert np.count_nonzero(duplicates) == max(1, round(0.005 * N_REFERENCE))
    assert np.all(b[duplicates] == a[duplicates] + 1)  # the copy follows its original
    # Elsewhere only shared edges, and the shifted copy's slivers over its neighbours.
    assert np.all(iou[~duplicates] < 0.05)


def test_predicted_invalid_rows_are_exactly_the_declared_invalid_kinds(layers):
    predicted, kinds = layers[2], layers[3]["kind"]
    polygonal = np.isin(shapely.get_type_id(predicted), [3, 6]) & ~shapely.is_empty(predicted)
    invalid = polygonal & ~shapely.is_valid(predicted)
    assert set(kinds[invalid]) == set(generate.INVALID_KINDS)
    for kind in generate.INVALID_KINDS:
        assert np.all(invalid[kinds == kind]), kind


def test_predicted_has_nulls_empties_points_and_lines(layers):
    predicted, kinds = layers[2], layers[3]["kind"]
    assert np.all(shapely.is_missing(predicted[kinds == "null"]))
    assert np.count_nonzero(kinds == "null") >= 1
    assert np.all(shapely.is_empty(predicted[kinds == "empty"]))
    assert np.count_nonzero(kinds == "empty") >= 1
    type_ids = shapely.get_type_id(predicted)
    assert np.any(type_ids == 0) and np.all(kinds[type_ids == 0] == "point")
    assert np.any(type_ids == 1) and np.all(kinds[type_ids == 1] == "line")


def test_every_declared_kind_is_present(layers):
    assert set(layers[3]["kind"]) == set(generate.PREDICTED_KINDS)


def test_spurious_outside_overlaps_no_reference_and_inside_lies_in_the_area(layers):
    reference, _, predicted, pred_attrs, _ = layers
    kinds = pred_attrs["kind"]
    fields = shapely.make_valid(reference[~shapely.is_missing(reference)])
    tree = shapely.STRtree(fields)
    outside = predicted[kinds == "spurious_outside"]
    assert len(outside) >= 1
    assert len(tree.query(outside, predicate="intersects")[0]) == 0
    # Inside: within the fields' extent grown by the widest road (strips along edge roads).
    road_m = generate.ROAD_WIDTH_M[1]
    x0, y0, x1, y1 = shapely.total_bounds(fields) + np.array([-1, -1, 1, 1]) * road_m
    inside = shapely.bounds(predicted[kinds == "spurious_inside"])
    assert len(inside) >= 1
    centres = (inside[:, :2] + inside[:, 2:]) / 2
    assert np.all((centres >= [x0, y0]) & (centres <= [x1, y1]))


def test_predictions_include_splits_merges_and_staircase_outlines(layers):
    predicted, kinds = layers[2], layers[3]["kind"]
    for kind in ("split", "merge", "staircase_10m", "staircase_30m", "partial"):
        assert np.count_nonzero(kinds == kind) >= 1, kind
    stairs = predicted[kinds == "staircase_10m"]
    coords = shapely.get_coordinates(stairs)
    assert np.all(coords % 10.0 == 0.0)  # vertices on the 10 m pixel grid


def test_geopackage_round_trip_keeps_rows_crs_and_nulls(layers, tmp_path):
    ogr = pytest.importorskip("osgeo.ogr")
    path = tmp_path / "fields.gpkg"
    generate.write_geopackage(path, *layers)
    dataset = ogr.Open(str(path))
    reference, predicted = dataset.GetLayerByName("reference"), dataset.GetLayerByName("predicted")
    assert reference.GetFeatureCount() == len(layers[0])
    assert predicted.GetFeatureCount() == len(layers[2])
    assert reference.GetSpatialRef().GetAuthorityCode(None) == "32613"
    n_null = sum(feature.GetGeometryRef() is None for feature in predicted)
    assert n_null == int(shapely.is_missing(layers[2]).sum())
