"""core.classmaps.rasters: label rasters streamed into a confusion matrix."""

import json
import math
import subprocess
import sys

import numpy as np
import pyproj
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_core_confusion import seed_label_maps

from iou_evaluation.core.reports.class_map import build_class_map_report
from iou_evaluation.core.classmaps.confusion import class_metrics
from iou_evaluation.core.util.progress import EvaluationCanceled
from iou_evaluation.core.classmaps.rasters import (
    band_pixel_areas,
    open_band,
    raster_confusion,
    read_class_table,
)

gdal = pytest.importorskip("osgeo.gdal")


def write_raster(path, array, geotransform=(0, 1, 0, 0, 0, -1), crs="EPSG:6933",
                 nodata=None, categories=None):
    """A one-band GeoTIFF; by default 1 m pixels of an equal-area CRS (EPSG:6933 at its
    origin), whose pixel areas on the ground are those of the plane."""
    array = np.asarray(array)
    if array.ndim == 1:
        array = array[None, :]
    types = {np.uint8: gdal.GDT_Byte, np.int16: gdal.GDT_Int16, np.float32: gdal.GDT_Float32,
             np.int64: gdal.GDT_Int32, np.uint16: gdal.GDT_UInt16}
    dtype = {np.int64: np.int32}.get(array.dtype.type, array.dtype.type)
    dataset = gdal.GetDriverByName("GTiff").Create(
        str(path), array.shape[1], array.shape[0], 1, types[array.dtype.type]
    )
    dataset.SetGeoTransform(geotransform)
    if crs:
        dataset.SetProjection(pyproj.CRS(crs).to_wkt())
    band = dataset.GetRasterBand(1)
    if nodata is not None:
        band.SetNoDataValue(nodata)
    if categories:
        band.SetCategoryNames(categories)
    band.WriteArray(array.astype(dtype))
    dataset = None
    return str(path)


def run(tmp_path, predicted, reference, **kwargs):
    pred_kw = kwargs.pop("predicted_raster", {})
    ref_kw = kwargs.pop("reference_raster", {})
    p = open_band(write_raster(tmp_path / "p.tif", predicted, **pred_kw), 1, "PREDICTED")
    r = open_band(write_raster(tmp_path / "r.tif", reference, **ref_kw), 1, "REFERENCE")
    return raster_confusion(p, r, **kwargs)


def test_issue_values_from_rasters(tmp_path):
    result = run(tmp_path, np.array([0, 1, 0, 1], np.uint8), np.array([0, 1, 0, 0], np.uint8),
                 class_table=[(0, "a"), (1, "b"), (2, "c")])
    metrics = class_metrics(result.counts)
    assert metrics["iou"][:2] == pytest.approx([2 / 3, 1 / 2])
    assert np.isnan(metrics["iou"][2])
    assert metrics["miou"] == pytest.approx(7 / 12)


def test_issue_values_zero_ignored(tmp_path):
    result = run(tmp_path, np.array([2, 1, 0, 1], np.uint8), np.array([2, 1, 0, 0], np.uint8),
                 ignore_values=[0])
    assert class_metrics(result.counts)["miou"] == 1.0
    assert result.alignment["reference_void_pixels"] == 2


def test_seed_article_example_from_rasters(tmp_path):
    label, seg = seed_label_maps()
    result = run(tmp_path, seg.astype(np.uint8), label.astype(np.uint8))
    metrics = class_metrics(result.counts)
    assert result.classes.values == [0, 1, 2]
    assert np.round(metrics["iou"], 3).tolist() == [0.951, 0.803, 0.703]
    assert round(metrics["miou"], 3) == 0.819
    assert round(metrics["pixel_accuracy"], 3) == 0.958


def test_nodata_is_never_guessed(tmp_path):
    # Prediction nodata 255 on a valid reference pixel: NO PREDICTION; reference nodata 9 is
    # left out; class 0 is a class.
    result = run(
        tmp_path, np.array([0, 255, 1, 1], np.uint8), np.array([0, 0, 1, 9], np.uint8),
        predicted_raster={"nodata": 255}, reference_raster={"nodata": 9},
    )
    k = result.classes.k
    assert result.classes.values == [0, 1]
    assert result.counts[k + 1].tolist() == [1, 0]
    assert result.counts.sum() == 3
    assert result.alignment["no_prediction_pixels"] == 1
    assert class_metrics(result.counts)["iou"].tolist() == [0.5, 1.0]


def test_unknown_predicted_value_goes_to_other(tmp_path):
    result = run(tmp_path, np.array([0, 7, 1], np.uint8), np.array([0, 0, 1], np.uint8),
                 class_table=[(0, "water"), (1, "forest")])
    assert result.counts[2].tolist() == [1, 0]
    assert result.alignment["other_pixels"] == 1


def test_finer_prediction_takes_the_pixel_under_each_centre(tmp_path):
    rng = np.random.default_rng(0)
    fine = rng.integers(0, 4, (40, 60)).astype(np.uint8)
    reference = rng.integers(0, 4, (20, 30)).astype(np.uint8)
    result = run(
        tmp_path, fine, reference,
        predicted_raster={"geotransform": (0, 0.5, 0, 0, 0, -0.5)},
    )
    # Reference pixel (r, c) has its centre at (c + 0.5, -(r + 0.5)): fine pixel (2r+1, 2c+1).
    expected = class_metrics(_matrix(fine[1::2, 1::2], reference))
    assert class_metrics(result.counts)["iou"] == pytest.approx(expected["iou"], nan_ok=True)
    assert result.counts.sum() == 600


def _matrix(predicted, reference):
    from iou_evaluation.core.classmaps.confusion import ClassTable, confusion_matrix

    return confusion_matrix(predicted, reference, ClassTable([0, 1, 2, 3], fixed=True))


def test_partial_cover_and_subpixel_shift_reported(tmp_path):
    reference = np.ones((10, 10), np.uint8)
    predicted = np.ones((10, 5), np.uint8)
    result = run(tmp_path, predicted, reference,
                 predicted_raster={"geotransform": (0.25, 1, 0, 0, 0, -1)})
    # Columns 0..4 have centres 0.5..4.5, inside [0.25, 5.25): half the reference is covered.
    assert result.alignment["share_reference_outside_prediction"] == 0.5
    assert result.alignment["subpixel_shift_reference_pixels"] == [0.25, 0.0]
    assert result.counts.sum() == 50


def test_different_crs_resampled_through_pyproj(tmp_path):
    # Reference: 0.01° cells in EPSG:4326 from 10.0° E; class 1 east of 10.5° E. Prediction:
    # 100 m cells in EPSG:3857 with the same rule; every reference centre lies > 500 m from
    # the boundary, so nearest neighbour cannot blur it.
    lon = 10.005 + 0.01 * np.arange(100)
    reference = np.tile((lon > 10.5).astype(np.uint8), (50, 1))
    to_merc = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x0, y1 = to_merc.transform(9.9, 45.6)
    x1, y0 = to_merc.transform(11.1, 44.4)
    width, height = int((x1 - x0) // 100), int((y1 - y0) // 100)
    xc = x0 + (np.arange(width) + 0.5) * 100
    boundary = to_merc.transform(10.5, 45.0)[0]
    predicted = np.tile((xc > boundary).astype(np.uint8), (height, 1))
    result = run(
        tmp_path, predicted, reference,
        predicted_raster={"geotransform": (x0, 100, 0, y1, 0, -100), "crs": "EPSG:3857"},
        reference_raster={"geotransform": (10.0, 0.01, 0, 45.5, 0, -0.01), "crs": "EPSG:4326"},
    )
    assert result.alignment["same_crs"] is False
    assert class_metrics(result.counts)["iou"].tolist() == [1.0, 1.0]


def test_geographic_cell_area_on_the_ellipsoid(tmp_path):
    path = write_raster(tmp_path / "g.tif", np.zeros((3, 2), np.uint8),
                        geotransform=(5.0, 0.5, 0, 60.0, 0, -0.5), crs="EPSG:4326")
    areas = band_pixel_areas(open_band(path, 1, "REFERENCE"))
    geod = pyproj.Geod(ellps="WGS84")
    for row in range(3):
        top, bottom = 60.0 - 0.5 * row, 59.5 - 0.5 * row
        # The cell bounded by parallels, densified so that geodesic edges follow them.
        lons = np.linspace(5.0, 5.5, 2001)
        ring_lon = np.r_[lons, lons[::-1]]
        ring_lat = np.r_[np.full(2001, bottom), np.full(2001, top)]
        expected = abs(geod.polygon_area_perimeter(ring_lon, ring_lat)[0])
        assert areas.rows_m2[row] == pytest.approx(expected, rel=1e-6)
    assert areas.note == ""


def ground_area_m2(crs, geotransform, c0, r0, c1, r1, n=400):
    """Geodesic area (Karney, pyproj.Geod) on the CRS's ellipsoid of the grid rectangle
    between pixel corners (c0, r0) and (c1, r1), its edges densified in the CRS's plane."""
    crs = pyproj.CRS(crs)
    cols = np.r_[np.linspace(c0, c1, n), np.full(n, c1), np.linspace(c1, c0, n), np.full(n, c0)]
    rows = np.r_[np.full(n, r0), np.linspace(r0, r1, n), np.full(n, r1), np.linspace(r1, r0, n)]
    gt = geotransform
    x, y = gt[0] + cols * gt[1] + rows * gt[2], gt[3] + cols * gt[4] + rows * gt[5]
    lon, lat = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True).transform(x, y)
    return abs(crs.geodetic_crs.get_geod().polygon_area_perimeter(lon, lat)[0])


def test_web_mercator_pixel_areas_are_on_the_ground(tmp_path):
    # A 2 km square at 60° N in EPSG:3857 is 4 km² in the plane, about 1 km² on the ground
    # (sec² 60° = 4 on the sphere; 3.986 on the WGS 84 ellipsoid).
    x, y = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform(10, 60)
    gt = (x - 1000, 20.0, 0, y + 1000, 0, -20.0)
    path = write_raster(tmp_path / "m.tif", np.zeros((100, 100), np.uint8), gt, "EPSG:3857")
    areas = band_pixel_areas(open_band(path, 1, "REFERENCE"))
    whole = areas.block(0, 100, 100).sum()
    assert whole == pytest.approx(ground_area_m2("EPSG:3857", gt, 0, 0, 100, 100), rel=1e-6)
    assert 0.99e6 < whole < 1.01e6
    # A rectangle off the lattice lines: within the stated per-pixel bound.
    part = areas.block(13, 71, 100)[:, 7:93].sum()
    expected = ground_area_m2("EPSG:3857", gt, 7, 13, 93, 71)
    assert part == pytest.approx(expected, rel=areas.description["per_pixel_relative_bound"])
    assert "not equal-area" in areas.note and "3.98" in areas.note


@pytest.mark.parametrize("crs, gt, size", [
    ("EPSG:32633", (200_000.0, 10.0, 0, 5_000_000.0, 0, -10.0), (500, 300)),  # UTM
    ("EPSG:3413", (-50_000.0, 100.0, 0, 50_000.0, 0, -100.0), (1000, 1000)),  # the pole
    ("EPSG:2263", (980_000.0, 3.0, 0, 200_000.0, 0, -3.0), (700, 400)),  # US feet
])
def test_projected_pixel_areas_match_geodesic_areas(tmp_path, crs, gt, size):
    width, height = size
    path = write_raster(tmp_path / "p.tif", np.zeros((height, width), np.uint8), gt, crs)
    areas = band_pixel_areas(open_band(path, 1, "REFERENCE"))
    whole = areas.block(0, height, width).sum()
    assert whole == pytest.approx(ground_area_m2(crs, gt, 0, 0, width, height), rel=1e-7)


def test_equal_area_crs_keeps_the_plane_area(tmp_path):
    path = write_raster(tmp_path / "e.tif", np.zeros((2, 2), np.uint8),
                        geotransform=(4_000_000, 10, 0, 3_000_000, 0, -10), crs="EPSG:3035")
    areas = band_pixel_areas(open_band(path, 1, "REFERENCE"))
    assert areas.uniform_m2 == 100.0
    assert areas.note == ""


def test_report_areas_in_web_mercator_are_ground_areas(tmp_path):
    x, y = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform(10, 60)
    gt = (x - 1000, 1000.0, 0, y + 1000, 0, -1000.0)
    labels = np.array([[1, 1], [1, 1]], np.uint8)
    result = run(tmp_path, labels, labels, predicted_raster={"geotransform": gt,
                                                             "crs": "EPSG:3857"},
                 reference_raster={"geotransform": gt, "crs": "EPSG:3857"})
    assert result.areas_m2[0, 0] == pytest.approx(ground_area_m2("EPSG:3857", gt, 0, 0, 2, 2),
                                                  rel=1e-6)
    assert any("not equal-area" in w for w in result.warnings)


def test_class_names_from_category_names_and_file(tmp_path):
    result = run(tmp_path, np.array([0, 1], np.uint8), np.array([0, 1], np.uint8),
                 reference_raster={"categories": ["water", "forest"]})
    assert result.classes.names == ["water", "forest"]
    table = tmp_path / "classes.csv"
    table.write_text("value,name\n0,water\n1,forest\n")
    assert read_class_table(str(table)) == [(0, "water"), (1, "forest")]
    qgis_export = tmp_path / "colours.txt"
    qgis_export.write_text("# QGIS Generated Color Map Export File\nINTERPOLATION:EXACT\n"
                           "3,255,0,0,255,urban\n")
    assert read_class_table(str(qgis_export)) == [(3, "urban")]


def test_agreement_raster_codes(tmp_path):
    out = tmp_path / "agreement.tif"
    run(tmp_path, np.array([0, 1, 255, 1], np.uint8), np.array([0, 0, 1, 9], np.uint8),
        predicted_raster={"nodata": 255}, reference_raster={"nodata": 9},
        agreement_path=str(out))
    values = gdal.Open(str(out)).ReadAsArray().tolist()
    assert values == [[1, 2, 4, 0]]


def test_cancel_removes_the_agreement_raster(tmp_path):
    out = tmp_path / "agreement.tif"

    def cancel(fraction):
        raise EvaluationCanceled("canceled")

    with pytest.raises(EvaluationCanceled):
        run(tmp_path, np.zeros((4, 4), np.uint8), np.zeros((4, 4), np.uint8),
            agreement_path=str(out), progress=cancel)
    assert not out.exists()


def test_report_keys(tmp_path):
    result = run(tmp_path, np.array([0, 1, 0, 1], np.uint8), np.array([0, 1, 0, 0], np.uint8),
                 class_table=[(0, "a"), (1, "b"), (2, "c")])
    report = build_class_map_report(result.classes, result.counts, result.areas_m2, "pixels",
                                    result.alignment, {}, {}, {})
    for key in ("per_class", "miou", "fwiou", "pixel_accuracy", "confusion_matrix", "classes",
                "alignment"):
        assert key in report
    assert set(report["per_class"]["0"]) >= {"iou", "dice", "precision", "recall", "tp", "fp",
                                             "fn", "areas"}
    assert report["per_class"]["2"]["iou"] is None
    assert report["per_class"]["0"]["tp"] == 2
    assert report["per_class"]["0"]["areas"]["tp_m2"] == 2.0  # 1 m pixels
    assert report["confusion_matrix"]["orientation"] == "rows = prediction, columns = reference"
    assert [c["value"] for c in report["absent_classes"]] == ["2"]
    json.dumps(report)


def test_memory_stays_bounded_on_a_large_raster(tmp_path):
    # 4,000 × 4,000 pixels (16 million) per raster: whole, their valid masks, indices and
    # int64 keys alone would take some 600 MB; streamed in blocks of 2 million pixels, the
    # peak of the process that evaluates grows by a block's temporaries (bench/README.md has
    # 20,000 × 20,000 measured). The rasters are written here, evaluated in a fresh process;
    # its peak since start (imports included) against its resident set before the run is
    # an upper bound of what the run adds.
    n = 4000
    for name, seed in (("p", 1), ("r", 2)):
        dataset = gdal.GetDriverByName("GTiff").Create(
            str(tmp_path / f"big_{name}.tif"), n, n, 1, gdal.GDT_Byte,
            ["TILED=YES", "COMPRESS=DEFLATE"])
        dataset.SetGeoTransform((0, 10, 0, 0, 0, -10))
        band = dataset.GetRasterBand(1)
        rows = np.random.default_rng(seed).integers(0, 5, (500, n), dtype=np.uint8)
        for r0 in range(0, n, 500):
            band.WriteArray(rows, 0, r0)
        dataset = None
    from conftest import plugin_script

    script = plugin_script(f"""
        import json
        from iou_evaluation.core.classmaps.rasters import open_band, raster_confusion
        p = open_band({str(tmp_path / "big_p.tif")!r}, 1, "PREDICTED")
        r = open_band({str(tmp_path / "big_r.tif")!r}, 1, "REFERENCE")
        # VmHWM is the resident high-water mark since exec (ru_maxrss would also count the
        # pytest process this one was forked from); VmRSS the resident set now.
        def status(key):
            with open("/proc/self/status") as lines:
                return next(int(line.split()[1]) for line in lines if line.startswith(key))
        before = status("VmRSS")
        result = raster_confusion(p, r)
        after = status("VmHWM")
        print(json.dumps({{"before_kib": before, "after_kib": after,
                          "pixels": int(result.counts.sum())}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["pixels"] == n * n
    grown_mib = (measured["after_kib"] - measured["before_kib"]) / 1024
    print(f"peak RSS grew by {grown_mib:.0f} MiB over {measured}")
    assert grown_mib < 150, measured


def test_a_continuous_band_stops_with_a_message(tmp_path, monkeypatch):
    import iou_evaluation.core.classmaps.rasters as module

    monkeypatch.setattr(module, "MAX_CLASSES", 10)
    values = np.arange(40, dtype=np.float32).reshape(4, 10) / 3
    with pytest.raises(ValueError, match="do not look like class rasters"):
        run(tmp_path, values, values)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 600), st.sampled_from([1, 16, 128, 256, 512, 4096]))
def test_blocks_cover_every_line_once_within_file_blocks(height, rows_per_block, tile_rows):
    from iou_evaluation.core.classmaps.rasters import _blocks

    blocks = list(_blocks(height, rows_per_block, tile_rows))
    assert blocks[0][0] == 0 and blocks[-1][1] == height and blocks[-1][2]
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert all(r1 > r0 for r0, r1, _ in blocks)
    assert max(r1 - r0 for r0, r1, _ in blocks) <= max(rows_per_block, tile_rows)
    if rows_per_block < tile_rows <= 4 * rows_per_block:  # thin blocks inside one tile row
        assert all(r0 // tile_rows == (r1 - 1) // tile_rows for r0, r1, _ in blocks)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_streamed_matrix_equals_the_matrix_of_the_whole_arrays(data):
    # Blocks of 5 pixels (one line at a time here) against one confusion_matrix call on the
    # arrays with void left out, nodata as NO PREDICTION and unknown codes as OTHER.
    from iou_evaluation.core.classmaps.confusion import ClassTable, confusion_matrix

    shape = (data.draw(st.integers(1, 6)), data.draw(st.integers(1, 7)))
    codes = st.integers(0, 6)
    reference = np.array(data.draw(st.lists(codes, min_size=shape[0] * shape[1],
                                            max_size=shape[0] * shape[1])),
                         np.uint8).reshape(shape)
    predicted = np.array(data.draw(st.lists(codes, min_size=reference.size,
                                            max_size=reference.size)),
                         np.uint8).reshape(shape)
    ignore = data.draw(st.sampled_from([[], [6]]))
    fixed = data.draw(st.booleans())
    table = [(v, f"c{v}") for v in range(6)] if fixed else None
    p = open_band(write_raster("/vsimem/p.tif", predicted, nodata=5), 1, "P")
    r = open_band(write_raster("/vsimem/r.tif", reference, nodata=4), 1, "R")
    result = raster_confusion(p, r, ignore, class_table=table, block_pixels=5)
    valid = (reference != 4) & ~np.isin(reference, ignore)
    classes = ClassTable([v for v, _ in table], fixed=True) if fixed else ClassTable()
    if fixed:
        classes.add(sorted(set(reference[valid].tolist()) - {v for v, _ in table}))
    else:
        classes.add(sorted(set(reference[valid].tolist())
                           | set(predicted[valid & (predicted != 5)].tolist()) - set(ignore)))
        classes.fixed = True  # as the stream ends: every code known
    pred = predicted[valid].astype(float)
    pred[np.isin(pred, ignore)] = 99  # a void prediction is not a class: OTHER
    expected = confusion_matrix(pred, reference[valid], classes,
                                predicted_valid=predicted[valid] != 5)
    order = [result.classes.position(v) for v in classes.values]
    rows = order + [classes.k, classes.k + 1]
    assert sorted(result.classes.values) == sorted(classes.values)
    assert (result.counts[np.ix_(rows, order)] == expected).all()


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_byte_histogram_path_equals_the_pixel_path(data):
    # Byte blocks wholly on the predicted grid are tallied from a histogram of code pairs;
    # with an agreement raster every pixel goes through the pixel path: same result.
    shape = (data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8)))
    cells = shape[0] * shape[1]
    codes = st.integers(0, 7)
    reference = np.array(data.draw(st.lists(codes, min_size=cells, max_size=cells)),
                         np.uint8).reshape(shape)
    predicted = np.array(data.draw(st.lists(codes, min_size=cells, max_size=cells)),
                         np.uint8).reshape(shape)
    ignore = data.draw(st.sampled_from([[], [6], [0, 7]]))
    table = data.draw(st.sampled_from([None, [(1, "a"), (2, "b"), (3, "c")]]))
    p = open_band(write_raster("/vsimem/hp.tif", predicted, nodata=5), 1, "P")
    r = open_band(write_raster("/vsimem/hr.tif", reference, nodata=4), 1, "R")
    fast = raster_confusion(p, r, ignore, class_table=table, block_pixels=7)
    slow = raster_confusion(p, r, ignore, class_table=table, block_pixels=7,
                            agreement_path="/vsimem/agreement.tif")
    assert fast.classes.values == slow.classes.values
    assert (fast.counts == slow.counts).all()
    assert fast.areas_m2 == pytest.approx(slow.areas_m2)
    for key in ("reference_void_pixels", "scored_pixels", "no_prediction_pixels",
                "other_pixels", "reference_valid_outside_prediction"):
        assert fast.alignment[key] == slow.alignment[key], key
    assert fast.warnings == slow.warnings


def test_agreement_raster_format_follows_the_extension(tmp_path):
    out = tmp_path / "agreement.img"  # Erdas Imagine (HFA)
    run(tmp_path, np.array([0, 1], np.uint8), np.array([0, 0], np.uint8),
        agreement_path=str(out))
    dataset = gdal.Open(str(out))
    assert dataset.GetDriver().ShortName == "HFA"
    assert dataset.ReadAsArray().tolist() == [[1, 2]]


def test_large_footprints_read_in_strips_give_the_same_matrix(tmp_path, monkeypatch):
    import iou_evaluation.core.classmaps.rasters as module

    rng = np.random.default_rng(4)
    reference = rng.integers(0, 3, (30, 40)).astype(np.uint8)
    predicted = rng.integers(0, 3, (90, 120)).astype(np.uint8)
    options = dict(
        predicted_raster={"geotransform": (500_000, 1 / 3, 0, 4_000_000, 0, -1 / 3),
                          "crs": "EPSG:32633"},
        reference_raster={"geotransform": (500_000, 1, 0.001, 4_000_000, 0, -1),
                          "crs": "EPSG:32633"},  # rotated: the general path
    )
    whole = run(tmp_path, predicted, reference, **options)
    monkeypatch.setattr(module, "SOURCE_WINDOW_PIXELS", 200)
    strips = run(tmp_path, predicted, reference, **options)
    assert (whole.counts == strips.counts).all()
    assert whole.counts.sum() == 30 * 40


def test_class_table_that_is_not_utf8_is_a_message_naming_the_parameter(tmp_path):
    path = tmp_path / "classes.csv"
    path.write_text("0,background\n1,building\n", encoding="utf-16")  # a BOM, then UTF-16
    with pytest.raises(ValueError, match=r"CLASS_NAMES: .* is not UTF-8 text"):
        read_class_table(str(path))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_class_table_value_that_is_not_finite_is_refused(tmp_path, value):
    path = tmp_path / "classes.csv"
    path.write_text(f"0,background\n{value},odd\n")
    with pytest.raises(ValueError, match=r"CLASS_NAMES: .* line 2: .* is not a class value"):
        read_class_table(str(path))


def test_class_table_skips_one_header_row_only(tmp_path):
    # "forest" and "crop" are not values: the first line is a header, the second a mistake
    # that would otherwise drop a class silently.
    path = tmp_path / "classes.csv"
    path.write_text("value,name\nforest,1\n2,crop\n")
    with pytest.raises(ValueError, match=r"line 2: 'forest' is not a class value"):
        read_class_table(str(path))
    path.write_text("value,name\n1,forest\n2,crop\n")
    assert read_class_table(str(path)) == [(1, "forest"), (2, "crop")]


def test_rasters_that_do_not_overlap_warn_that_nothing_is_scored(tmp_path):
    # The prediction lies 100 pixels east of the reference: all 4 valid reference pixels
    # are outside it, none is scored.
    result = run(tmp_path, [0, 1, 0, 1], [0, 1, 0, 0],
                 predicted_raster={"geotransform": (100, 1, 0, 0, 0, -1)})
    assert result.counts.sum() == 0
    assert result.alignment["share_reference_outside_prediction"] == 1.0
    assert any("nothing is scored: none of the 4 valid reference pixels" in w
               for w in result.warnings)


def test_reference_all_void_warns_that_nothing_is_scored(tmp_path):
    result = run(tmp_path, [0, 1, 0, 1], [3, 3, 5, 5], ignore_values=[3],
                 reference_raster={"nodata": 5})
    assert result.counts.sum() == 0
    assert any("all 4 reference pixels are nodata or void" in w for w in result.warnings)


def test_a_mask_band_is_nodata_on_either_side(tmp_path):
    # A per-dataset mask (gdalwarp -dstalpha, JPEG/WebP compression) and no nodata value:
    # GDAL's mask is the nodata. Reference [0, 1, 0, 1] with its first pixel masked; the
    # prediction [0, 1, 1, 1] with its third pixel masked, nodata set on neither band.
    def masked(name, values, mask):
        path = write_raster(tmp_path / name, values)
        dataset = gdal.Open(path, gdal.GA_Update)
        dataset.CreateMaskBand(gdal.GMF_PER_DATASET)
        dataset.GetRasterBand(1).GetMaskBand().WriteArray(np.array([mask], np.uint8))
        dataset = None
        return path

    reference = open_band(masked("r.tif", [0, 1, 0, 1], [0, 255, 255, 255]), 1, "REFERENCE")
    predicted = open_band(masked("p.tif", [0, 1, 1, 1], [255, 255, 0, 255]), 1, "PREDICTED")
    assert (reference.mask, predicted.mask) == ("mask band", "mask band")
    result = raster_confusion(predicted, reference)
    # Scored: pixel 2 (reference 1, predicted 1), pixel 3 (reference 0, prediction masked:
    # NO_PREDICTION), pixel 4 (1, 1); pixel 1 is reference nodata.
    assert result.alignment["reference_void_pixels"] == 1
    assert result.alignment["no_prediction_pixels"] == 1
    assert result.classes.values == [0, 1]
    # rows: predicted 0, predicted 1, OTHER, NO_PREDICTION; columns: reference 0, 1.
    assert result.counts.tolist() == [[0, 0], [0, 2], [0, 0], [1, 0]]
    assert any(w.startswith("REFERENCE: the raster has a GDAL mask band: the pixels it masks "
                            "are left out") for w in result.warnings)
    plain = open_band(write_raster(tmp_path / "nd.tif", [0, 1, 0, 1], nodata=0), 1, "R")
    assert plain.mask is None  # a nodata value is GDAL's mask too: read as nodata already
