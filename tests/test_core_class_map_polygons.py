"""core.classmaps.polygons: exact class-map confusion of two categorised polygon layers."""

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from test_core_raster_confusion import write_raster

from iou_evaluation.core.classmaps.polygons import polygon_class_confusion
from iou_evaluation.core.reports.class_map import build_class_map_report
from iou_evaluation.core.classmaps.confusion import class_metrics
from iou_evaluation.core.classmaps.rasters import open_band, raster_confusion


def test_overlap_of_extents_by_default_study_area_when_given():
    reference = [shapely.box(0, 0, 10, 10)]
    predicted = [shapely.box(5, 0, 15, 10)]
    # Default: only the overlap of the two extents, [5, 10] × [0, 10], which both cover.
    result = polygon_class_confusion(predicted, ["a"], reference, ["a"])
    assert class_metrics(result.areas_m2)["iou"].tolist() == [1.0]
    # A study area over both: TP 50, FN 50 (reference without prediction); the predicted
    # ground without reference, [10, 15], is not scored (as reference nodata in a raster).
    result = polygon_class_confusion(predicted, ["a"], reference, ["a"],
                                     study_area=[shapely.box(0, 0, 15, 10)])
    metrics = class_metrics(result.areas_m2)
    assert (metrics["tp"][0], metrics["fp"][0], metrics["fn"][0]) == (50, 0, 50)
    assert metrics["iou"][0] == pytest.approx(1 / 2)
    assert result.areas_m2[-1].tolist() == [50.0]  # reference without a prediction


def test_issue_values_as_polygons():
    # The issue's 1 × 4 maps as unit squares: reference [0, 1, 0, 0], prediction [0, 1, 0, 1].
    cells = [shapely.box(x, 0, x + 1, 1) for x in range(4)]
    result = polygon_class_confusion(cells, [0, 1, 0, 1], cells, [0, 1, 0, 0])
    metrics = class_metrics(result.areas_m2)
    assert result.classes.values == ["0", "1"]
    assert metrics["iou"].tolist() == pytest.approx([2 / 3, 1 / 2])
    assert metrics["miou"] == pytest.approx(7 / 12)


def test_overlap_of_two_classes_in_one_layer_counts_once_per_class_and_is_reported():
    # Reference: "a" on [0, 2] × [0, 1] and "b" on [1, 3] × [0, 1]: [1, 2] is both.
    reference = [shapely.box(0, 0, 2, 1), shapely.box(1, 0, 3, 1)]
    predicted = [shapely.box(0, 0, 1.5, 1), shapely.box(1.5, 0, 3, 1)]
    result = polygon_class_confusion(predicted, ["a", "b"], reference, ["a", "b"])
    overlaps = result.alignment["reference_overlaps"]
    assert overlaps["between_classes_m2"] == pytest.approx(1.0)
    assert overlaps["class_pairs"] == [{"classes": ["a", "b"], "area_m2": pytest.approx(1.0)}]
    metrics = class_metrics(result.areas_m2)
    # M[a, a] = |[0, 1.5] ∩ [0, 2]| = 1.5, M[b, a] = 0.5, M[a, b] = |[0, 1.5] ∩ [1, 3]| = 0.5,
    # M[b, b] = 1.5: class a has TP 1.5, FP 0.5 (on reference b's ground), FN 0.5: IoU 0.6.
    assert result.areas_m2[:2] == pytest.approx(np.array([[1.5, 0.5], [0.5, 1.5]]))
    assert metrics["iou"].tolist() == pytest.approx([0.6, 0.6])
    assert any("different classes" in w for w in result.warnings)


def test_same_class_overlap_counted_once():
    reference = [shapely.box(0, 0, 2, 1), shapely.box(1, 0, 3, 1)]
    predicted = [shapely.box(0, 0, 3, 1)]
    result = polygon_class_confusion(predicted, [1], reference, [1, 1])
    assert result.areas_m2[0, 0] == pytest.approx(3.0)
    assert result.alignment["reference_overlaps"]["within_classes_m2"] == pytest.approx(1.0)


def test_rows_without_class_dropped_and_counted():
    cells = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1), shapely.box(2, 0, 3, 1)]
    result = polygon_class_confusion(cells, ["x", None, "x"], cells, ["x", "x", "x"])
    assert result.alignment["predicted_rows"]["dropped_no_class"] == 1
    assert result.areas_m2[-1].tolist() == [1.0]  # the unclassified cell: no prediction


def test_a_row_without_class_moves_nothing():
    # Reference class a over 0..20; prediction a over 0..10 and a NULL row over 10..20. The
    # area compared is the overlap of the classed rows' extents (0..10): with the NULL row
    # counted in the extent, the reference's 10..20 would become a miss (IoU 1/2).
    reference = [shapely.box(0, 0, 20, 10)]
    predicted = [shapely.box(0, 0, 10, 10), shapely.box(10, 0, 20, 10)]
    with_null = polygon_class_confusion(predicted, ["a", None], reference, ["a"])
    without = polygon_class_confusion(predicted[:1], ["a"], reference, ["a"])
    assert with_null.alignment["area_compared_m2"] == 100.0
    assert class_metrics(with_null.areas_m2)["iou"].tolist() == [1.0]
    assert (with_null.areas_m2 == without.areas_m2).all()
    # The same for a reference row without a class, beyond the other rows.
    more_ref = polygon_class_confusion(predicted[:1], ["a"], reference + [
        shapely.box(-50, 0, -40, 10)], ["a", ""])
    assert more_ref.alignment["area_compared_m2"] == 100.0
    assert (more_ref.areas_m2 == without.areas_m2).all()


def test_class_names_differing_only_by_unicode_normalisation_are_one_class():
    import unicodedata

    nfc, nfd = (unicodedata.normalize(form, "Forêt") for form in ("NFC", "NFD"))
    assert nfc != nfd
    cells = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)]
    result = polygon_class_confusion(cells, [nfd, "eau"], cells, [nfc, " EAU"])
    assert result.classes.values == ["EAU", nfc]  # the reference's spelling, in NFC
    assert class_metrics(result.areas_m2)["iou"].tolist() == [1.0, 1.0]


def test_polygons_and_raster_agree_on_a_grid_class_map(tmp_path):
    # A 7 × 6 grid of 30 m cells in EPSG:6933 (equal-area): the same class map as polygons
    # (one square per cell) and as rasters; two interior cells have no prediction.
    rng = np.random.default_rng(5)
    reference = rng.integers(0, 4, (6, 7)).astype(np.uint8)
    predicted = np.where(rng.random((6, 7)) < 0.6, reference, rng.integers(0, 5, (6, 7)))
    predicted = predicted.astype(np.uint8)
    predicted[2, 3] = predicted[3, 4] = 255
    x0, y0, size = 1_200_000.0, 4_500_000.0, 30.0

    def cells(values, skip=None):
        geoms, classes = [], []
        for (r, c), value in np.ndenumerate(values):
            if value == skip:
                continue
            geoms.append(shapely.box(x0 + c * size, y0 - (r + 1) * size,
                                     x0 + (c + 1) * size, y0 - r * size))
            classes.append(int(value))
        return geoms, classes

    ref_geoms, ref_classes = cells(reference)
    pred_geoms, pred_classes = cells(predicted, skip=255)
    polygons = polygon_class_confusion(pred_geoms, pred_classes, ref_geoms, ref_classes,
                                       "EPSG:6933", "EPSG:6933", "EPSG:6933")
    gt = (x0, size, 0, y0, 0, -size)
    raster = raster_confusion(
        open_band(write_raster(tmp_path / "p.tif", predicted, gt, "EPSG:6933", nodata=255), 1,
                  "PREDICTED"),
        open_band(write_raster(tmp_path / "r.tif", reference, gt, "EPSG:6933"), 1, "REFERENCE"),
    )
    assert polygons.classes.values == [str(v) for v in raster.classes.values]
    assert polygons.areas_m2 == pytest.approx(raster.areas_m2, rel=1e-9, abs=1e-6)
    a = build_class_map_report(polygons.classes, polygons.areas_m2, polygons.areas_m2, "m2",
                               polygons.alignment, {}, {}, {})
    b = build_class_map_report(raster.classes, raster.counts, raster.areas_m2, "pixels",
                               raster.alignment, {}, {}, {})
    assert a["miou"] == pytest.approx(b["miou"], rel=1e-12)
    assert a["pixel_accuracy"] == pytest.approx(b["pixel_accuracy"], rel=1e-12)
    for key, row in a["per_class"].items():
        assert row["iou"] == pytest.approx(b["per_class"][key]["iou"], rel=1e-12, nan_ok=True)
        assert row["tp"] == pytest.approx(b["per_class"][key]["areas"]["tp_m2"], rel=1e-9)


def test_geographic_layers_are_measured_in_the_equal_area_crs():
    # Two 0.01° squares at 45° N: areas in m² (EPSG:6933), never square degrees.
    square = shapely.box(10.0, 45.0, 10.01, 45.01)
    result = polygon_class_confusion([square], ["a"], [square], ["a"], "EPSG:4326",
                                     "EPSG:4326")
    assert 700_000 < result.areas_m2[0, 0] < 900_000


def test_class_values_compared_as_the_plugin_compares_labels():
    cells = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1)]
    result = polygon_class_confusion(cells, ["forest", 3.0], cells, ["Forest ", "3"])
    # One class per caseless key, shown as the reference spells it (stripped; 3.0 is "3").
    assert result.classes.values == ["3", "Forest"]
    assert class_metrics(result.areas_m2)["iou"].tolist() == [1.0, 1.0]


def test_class_spelled_as_the_reference_first_spells_it_else_the_prediction():
    cells = [shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1), shapely.box(2, 0, 3, 1)]
    # Reference 'Forest' and prediction 'forest' are one class keyed 'Forest'; 'WATER' is
    # only predicted, so the prediction's spelling is kept.
    result = polygon_class_confusion(cells, ["forest", "forest", "WATER"], cells,
                                     ["Forest", "FOREST", "forest"])
    assert result.classes.values == ["Forest", "WATER"]
    # Forest: TP 2 (cells 0, 1), FN 1 (cell 2 predicted WATER) -> IoU 2/3; WATER: FP only.
    assert class_metrics(result.areas_m2)["iou"].tolist() == pytest.approx([2 / 3, 0.0])


def test_study_area_away_from_the_layers_warns_that_nothing_is_compared():
    square = [shapely.box(0, 0, 10, 10)]
    result = polygon_class_confusion(square, ["a"], square, ["a"],
                                     study_area=[shapely.box(100, 100, 110, 110)])
    assert result.areas_m2.sum() == 0
    assert any("no reference polygon with a class lies in the area compared (study area)"
               in w for w in result.warnings)


def test_an_empty_layer_is_named_as_the_reason_nothing_is_compared():
    result = polygon_class_confusion([], [], [shapely.box(0, 0, 10, 10)], ["a"])
    assert result.areas_m2.sum() == 0
    assert any("the predicted layer has no polygon to score (0 rows read" in w
               for w in result.warnings)
    assert not any("extents do not overlap" in w for w in result.warnings)


@pytest.mark.parametrize("reference_classes, reason", [
    ([None, "  "], "none of the 2 reference polygons has a class value"),
    ([None], "the reference layer's only polygon has no class value"),
])
def test_a_layer_without_any_class_value_is_named_as_the_reason(reference_classes, reason):
    # The two layers lie on the same ground: the reason is the missing classes, not the
    # extents (which were said not to overlap).
    squares = [shapely.box(10 * k, 0, 10 * k + 10, 10) for k in range(len(reference_classes))]
    result = polygon_class_confusion(squares, ["a"] * len(squares), squares, reference_classes)
    assert result.areas_m2.sum() == 0
    assert any(f"{reason}: nothing is compared" in w for w in result.warnings)
    assert not any("extents do not overlap" in w for w in result.warnings)


def test_float32_class_values_match_as_numbers_and_float32_nan_is_no_class():
    # A float32 column (numpy, GDAL, pandas): 3.0 is the class "3", NaN is no class. Before,
    # np.float32 was neither a float nor missing: classes "3.0" and "nan" appeared.
    squares = [shapely.box(0, 0, 10, 10), shapely.box(10, 0, 20, 10)]
    predicted_classes = list(np.array([3.0, np.nan], dtype=np.float32))  # np.float32 items
    result = polygon_class_confusion(squares, predicted_classes, squares, [3, None])
    assert result.classes.values == ["3"]
    # Class 3: TP 100 on the first square; the second has no class on either side.
    assert result.areas_m2[0, 0] == pytest.approx(100.0)
    assert result.alignment["predicted_rows"]["dropped_no_class"] == 1


def test_a_study_area_without_crs_is_never_taken_to_be_in_the_layers_crs():
    # The layers are in UTM; a study area without CRS could be in degrees or in metres:
    # refused with a message naming STUDY_AREA (as evaluatepolygons' study area does).
    square = [shapely.box(0, 0, 10, 10)]
    with pytest.raises(ValueError, match="STUDY_AREA: the study area has no CRS"):
        polygon_class_confusion(square, ["a"], square, ["a"], "EPSG:32633", "EPSG:32633",
                                study_area=[shapely.box(0, 0, 5, 10)])
    with pytest.raises(ValueError, match="STUDY_AREA: the study area has a CRS"):
        polygon_class_confusion(square, ["a"], square, ["a"], study_area=square,
                                study_area_crs="EPSG:32633")
    # Given its CRS, it is used: [0, 5] × [0, 10] of the square, TP only (in EPSG:6933 m²).
    result = polygon_class_confusion(square, ["a"], square, ["a"], "EPSG:32633", "EPSG:32633",
                                     study_area=[shapely.box(0, 0, 5, 10)],
                                     study_area_crs="EPSG:32633")
    assert class_metrics(result.areas_m2)["iou"].tolist() == [1.0]
    assert result.areas_m2[0, 0] == pytest.approx(result.alignment["area_compared_m2"])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(1, 4),
                          st.integers(1, 4), st.sampled_from(["a", "b", None]),
                          st.booleans()), min_size=2, max_size=8))
def test_rows_without_class_never_move_the_result(rows):
    # Each row: a box, a class (None: no class), and whether it is a reference row.
    layers = {True: ([], []), False: ([], [])}
    for x, y, w, h, label, is_reference in rows:
        layers[is_reference][0].append(shapely.box(x, y, x + w, y + h))
        layers[is_reference][1].append(label)

    def scored(geoms, labels):
        keep = [k for k, label in enumerate(labels) if label is not None]
        return [geoms[k] for k in keep], [labels[k] for k in keep]

    full = polygon_class_confusion(*layers[False], *layers[True])
    classed = polygon_class_confusion(*scored(*layers[False]), *scored(*layers[True]))
    assert full.classes.values == classed.classes.values
    assert full.areas_m2 == pytest.approx(classed.areas_m2)
    assert full.alignment["area_compared_m2"] == pytest.approx(
        classed.alignment["area_compared_m2"])


def test_a_tiling_of_classes_reports_no_overlap_of_rounding_size():
    # 100 unit cells of lon/lat 0.01° (about 1.2 km² each) in alternating classes tile the
    # ground: no ground is covered twice, so both overlap areas are exactly 0 and no
    # warning says otherwise (the sums of the reprojected areas and their union differ by
    # rounding only, ~1e-9 m², which used to be reported, even as a negative area).
    cells = [shapely.box(10 + 0.01 * i, 45 + 0.01 * j, 10 + 0.01 * (i + 1), 45 + 0.01 * (j + 1))
             for i in range(10) for j in range(10)]
    classes = [("a", "b", "c")[(i * 7 + j * 3) % 3] for i in range(10) for j in range(10)]
    result = polygon_class_confusion(cells, classes, cells, classes, predicted_crs="EPSG:4326",
                                     reference_crs="EPSG:4326")
    for side in ("reference_overlaps", "predicted_overlaps"):
        overlaps = result.alignment[side]
        assert overlaps["between_classes_m2"] == 0.0
        assert overlaps["within_classes_m2"] == 0.0
        assert overlaps["class_pairs"] == []
    assert not any("same ground" in w for w in result.warnings)


def test_longitude_latitude_layers_have_the_exact_areas_of_their_cylindrical_image():
    # In a cylindrical equal-area CRS (EPSG:6933) a lon/lat box is a rectangle: its area is
    # Δx·Δy of its corners projected by PROJ. Reference "a" on [10, 11] × [45, 46]; the
    # prediction "a" on [10.5, 11.5] × [45, 46]: TP is [10.5, 11] × [45, 46], FN the
    # reference's other half (no prediction there); the prediction's other half has no
    # reference and is not scored (as reference nodata in a raster): FP 0.
    import pyproj

    to_map = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:6933", always_xy=True)

    def rectangle(x0, x1, y0, y1):
        (ax, bx), (ay, by) = to_map.transform([x0, x1], [y0, y1])
        return (bx - ax) * (by - ay)

    result = polygon_class_confusion([shapely.box(10.5, 45, 11.5, 46)], ["a"],
                                     [shapely.box(10, 45, 11, 46)], ["a"],
                                     predicted_crs="EPSG:4326", reference_crs="EPSG:4326",
                                     study_area=[shapely.box(9, 44, 12, 47)],
                                     study_area_crs="EPSG:4326")
    metrics = class_metrics(result.areas_m2)
    assert metrics["tp"][0] == pytest.approx(rectangle(10.5, 11, 45, 46), rel=1e-9)
    assert metrics["fp"][0] == 0.0
    assert metrics["fn"][0] == pytest.approx(rectangle(10, 10.5, 45, 46), rel=1e-9)
    assert result.alignment["area_compared_m2"] == pytest.approx(rectangle(9, 12, 44, 47),
                                                                  rel=1e-9)
