"""Class codes and names of label rasters as GIS tools write them: float codes at the
raster's precision, raster attribute tables (written here through GDAL's own API) and class
table files (the QGIS-written ones are in test_provider_raster_iou.py)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_core_raster_confusion import run, write_raster

from iou_evaluation.core.classmaps.confusion import ClassTable, class_metrics, unique_codes
from iou_evaluation.core.classmaps.rasters import open_band, raster_confusion, read_class_table

gdal = pytest.importorskip("osgeo.gdal")


# --- float class codes -------------------------------------------------------------------

def test_float32_codes_match_the_class_table_at_the_rasters_precision(tmp_path):
    reference = np.array([0.1, 0.2, 0.3, 0.1], np.float32)
    predicted = np.array([0.1, 0.2, 0.1, 0.1], np.float32)
    result = run(tmp_path, predicted, reference,
                 class_table=[(0.1, "a"), (0.2, "b"), (0.3, "c")])
    assert result.classes.values == [0.1, 0.2, 0.3]
    assert not any("not in the class table" in w for w in result.warnings)
    # By hand: 0.1 has TP 2 (pixels 0, 3), FP 1 (pixel 2); 0.2 is exact; 0.3 is missed.
    assert class_metrics(result.counts)["iou"].tolist() == pytest.approx([2 / 3, 1.0, 0.0])


def test_float32_codes_found_in_the_rasters_are_spelt_as_the_raster_stores_them(tmp_path):
    reference = np.array([0.1, 0.2, 0.3, 0.1], np.float32)
    result = run(tmp_path, reference, reference)
    assert result.classes.values == [0.1, 0.2, 0.3]


def test_float32_ignore_value_is_compared_at_the_rasters_precision(tmp_path):
    reference = np.array([0.1, 0.3, 0.3, 0.1], np.float32)
    predicted = np.array([0.1, 0.3, 0.1, 0.3], np.float32)
    result = run(tmp_path, predicted, reference, ignore_values=[0.3])
    assert result.alignment["reference_void_pixels"] == 2
    # The predicted 0.3 on a reference 0.1 is not a class: it counts in OTHER.
    assert result.alignment["other_pixels"] == 1


def test_class_table_values_one_number_at_the_precision_are_refused(tmp_path):
    pixels = np.array([0.1, 0.2], np.float32)
    with pytest.raises(ValueError, match="CLASS_NAMES.*one number in Float32"):
        run(tmp_path, pixels, pixels,
            class_table=[(0.1, "a"), (float(np.float32(0.1)), "b"), (0.2, "c")])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, width=32, allow_subnormal=False), min_size=1,
                max_size=30))
def test_a_table_of_the_spelt_codes_finds_every_float32_pixel(values):
    pixels = np.array(values, np.float32)
    spelt = unique_codes(pixels)
    # The spelling reads back as the stored number, and the table finds every pixel.
    assert [np.float32(v) for v in spelt] == sorted(set(pixels.tolist()))
    table = ClassTable(spelt, fixed=True)
    assert (table.lookup(pixels, -1) >= 0).all()


# --- raster attribute tables (written through GDAL's API) ----------------------------------

def write_rat(path, columns, rows, linear_binning=None):
    """Attach a default RAT to band 1 of ``path``: ``columns`` [(name, GFT_*, GFU_*)],
    ``rows`` lists of values; saved by GDAL (in the .aux.xml beside a GeoTIFF). Returns the
    table as GDAL reads it back."""
    dataset = gdal.Open(str(path), gdal.GA_Update)
    rat = gdal.RasterAttributeTable()
    for name, kind, usage in columns:
        rat.CreateColumn(name, kind, usage)
    rat.SetRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            setter = {gdal.GFT_String: rat.SetValueAsString, gdal.GFT_Integer: rat.SetValueAsInt,
                      gdal.GFT_Real: rat.SetValueAsDouble}[columns[c][1]]
            setter(r, c, value)
    if linear_binning is not None:
        rat.SetLinearBinning(*linear_binning)
    dataset.GetRasterBand(1).SetDefaultRAT(rat)
    dataset = None
    dataset = gdal.Open(str(path))
    saved = dataset.GetRasterBand(1).GetDefaultRAT().Clone()  # outlives the dataset
    dataset = None
    return saved


def names_of(tmp_path, values, dtype, **rat):
    path = write_raster(tmp_path / "r.tif", np.array([values], dtype))
    saved = write_rat(path, **rat)
    band = open_band(path, 1, "REFERENCE")
    result = raster_confusion(band, band)
    return dict(zip(result.classes.values, result.classes.names)), saved, result


def test_rat_with_linear_binning_names_each_value_by_its_bin(tmp_path):
    names, saved, _ = names_of(
        tmp_path, [10, 12, 15, 24], np.uint8,
        columns=[("Class", gdal.GFT_String, gdal.GFU_Name)],
        rows=[["sand"], ["grass"], ["forest"]], linear_binning=(10.0, 5.0))
    # Bins [10, 15), [15, 20), [20, 25): the row index is not the value.
    assert names == {10: "sand", 12: "sand", 15: "grass", 24: "forest"}
    assert [saved.GetRowOfValue(v) for v in (10, 12, 15, 24)] == [0, 0, 1, 2]  # GDAL agrees


def test_rat_minmax_column_of_a_float_raster(tmp_path):
    names, _, _ = names_of(
        tmp_path, [0.1, 0.25], np.float32,
        columns=[("Value", gdal.GFT_Real, gdal.GFU_MinMax),
                 ("Name", gdal.GFT_String, gdal.GFU_Name)],
        rows=[[0.1, "wet"], [0.25, "dry"]])
    assert names == {0.1: "wet", 0.25: "dry"}


def test_rat_min_and_max_columns_include_both_bounds_as_gdal_does(tmp_path):
    names, saved, _ = names_of(
        tmp_path, [0, 9, 10, 19], np.uint8,
        columns=[("Low", gdal.GFT_Integer, gdal.GFU_Min),
                 ("High", gdal.GFT_Integer, gdal.GFU_Max),
                 ("Name", gdal.GFT_String, gdal.GFU_Name)],
        rows=[[0, 9, "low"], [10, 19, "high"]])
    assert names == {0: "low", 9: "low", 10: "high", 19: "high"}
    assert [saved.GetRowOfValue(v) for v in (0, 9, 10, 19)] == [0, 0, 1, 1]


def test_rat_of_generic_columns_is_read_with_qgis_rule(tmp_path):
    # As ArcGIS writes .aux.xml tables: every column of generic usage, the values in
    # "Value" (QgsRasterAttributeTable::guessFieldUsage: a numeric "value" is the class
    # value, a text column the class name). Rows are not in value order.
    names, saved, _ = names_of(
        tmp_path, [3, 7, 5], np.uint8,
        columns=[("Value", gdal.GFT_Integer, gdal.GFU_Generic),
                 ("Count", gdal.GFT_Integer, gdal.GFU_Generic),
                 ("Class_Name", gdal.GFT_String, gdal.GFU_Generic)],
        rows=[[7, 10, "water"], [3, 20, "urban"], [5, 1, "crop"]])
    assert names == {3: "urban", 5: "crop", 7: "water"}
    assert saved.GetRowOfValue(3) == -1  # GDAL alone maps no value to these rows


def test_rat_without_a_value_rule_gives_no_names_and_says_why(tmp_path):
    names, saved, result = names_of(
        tmp_path, [0, 1], np.uint8,
        columns=[("Name", gdal.GFT_String, gdal.GFU_Name)], rows=[["a"], ["b"]])
    assert names == {0: "", 1: ""}
    assert saved.GetRowOfValue(0) == -1
    assert any("no value column" in w for w in result.warnings)


def test_rat_bounds_of_an_integer_band_are_compared_as_gdal_compares_them(tmp_path):
    # GDAL's GetRowOfValue compares a value with the bounds in double: a Byte pixel 1 is
    # below the row [1.5, 2.5] and takes the catch-all row [-1000, 1000]; an Int16 band
    # keeps bounds beyond its range (1e10) as they are.
    names, saved, _ = names_of(
        tmp_path, [1, 2, 3, 200], np.uint8,
        columns=[("Low", gdal.GFT_Real, gdal.GFU_Min), ("High", gdal.GFT_Real, gdal.GFU_Max),
                 ("Name", gdal.GFT_String, gdal.GFU_Name)],
        rows=[[1.5, 2.5, "half"], [-1000, 1000, "all"]])
    assert names == {1: "all", 2: "half", 3: "all", 200: "all"}
    assert [saved.GetRowOfValue(v) for v in (1, 2, 3, 200)] == [1, 0, 1, 1]  # GDAL agrees
    names, saved, _ = names_of(
        tmp_path, [-5, 2, 30000], np.int16,
        columns=[("Low", gdal.GFT_Real, gdal.GFU_Min), ("High", gdal.GFT_Real, gdal.GFU_Max),
                 ("Name", gdal.GFT_String, gdal.GFU_Name)],
        rows=[[-1e10, 0, "negative"], [1, 1e10, "positive"]])
    assert names == {-5: "negative", 2: "positive", 30000: "positive"}


def test_infinite_pixel_values_lie_in_no_linear_bin(tmp_path):
    # A Float32 band whose pixels hold ±inf (not its nodata): those values are classes of
    # their own, in no bin of a linearly binned RAT; the finite ones keep their bins.
    names, _, result = names_of(
        tmp_path, [1.0, 2.0, np.inf, -np.inf], np.float32,
        columns=[("Class", gdal.GFT_String, gdal.GFU_Name)],
        rows=[["a"], ["b"], ["c"], ["d"]], linear_binning=(0.0, 1.0))
    assert names == {-np.inf: "", 1: "b", 2: "c", np.inf: ""}
    assert result.counts.trace() == 4


# --- class table files ---------------------------------------------------------------------

def test_class_table_with_value_name_lines_keeps_commas_after_a_separator(tmp_path):
    path = tmp_path / "classes.csv"
    path.write_text("value;name\n1;forest, dense\n2;crop\n", encoding="utf-8")
    assert read_class_table(str(path)) == [(1, "forest, dense"), (2, "crop")]


def test_class_table_names_are_nfc_text(tmp_path):
    path = tmp_path / "classes.csv"
    path.write_text("1,Fore\u0302t\n", encoding="utf-8")  # NFD: e + combining circumflex
    assert read_class_table(str(path)) == [(1, "For\u00eat")]


def test_colour_map_label_is_everything_after_the_fifth_comma(tmp_path):
    # The layout of QgsRasterRendererUtils::saveColorMapFile (written by QGIS itself in
    # test_provider_raster_iou.py).
    path = tmp_path / "colours.txt"
    path.write_text("# QGIS Generated Color Map Export File\nINTERPOLATION:EXACT\n"
                    "1,255,0,0,255,Forêt, dense\n2.5,0,255,0,128,crop land\n", encoding="utf-8")
    assert read_class_table(str(path)) == [(1, "Forêt, dense"), (2.5, "crop land")]


def test_paletted_renderer_export_lines_separated_by_spaces(tmp_path):
    # The layout of QgsPalettedRasterRenderer::classDataToString: value r g b a label.
    path = tmp_path / "palette.txt"
    path.write_text("1 255 0 0 255 Forêt dense\n2 0 255 0 128 crop\n3 0 0 255 255\n",
                    encoding="utf-8")
    assert read_class_table(str(path)) == [(1, "Forêt dense"), (2, "crop"), (3, "")]


def test_values_whose_names_are_one_label_are_reported(tmp_path):
    pixels = np.array([1, 2, 3], np.uint8)
    result = run(tmp_path, pixels, pixels,
                 class_table=[(1, "For\u00eat"), (2, " fore\u0302t"), (3, "eau")])
    assert result.classes.k == 3  # raster classes are their values
    assert any("1, 2 have one name" in w for w in result.warnings)


def test_a_decimal_comma_is_named_as_written(tmp_path):
    path = tmp_path / "classes.csv"
    path.write_text("value;name\n0,5;half\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2: '0,5' is not a class value"):
        read_class_table(str(path))


def test_a_complex_band_is_refused_naming_it(tmp_path):
    # A CFloat32 band (SAR): 1+5j and 1+0j are different numbers, but numpy's cast to real
    # made both the class 1. Class codes are real numbers.
    path = str(tmp_path / "complex.tif")
    dataset = gdal.GetDriverByName("GTiff").Create(path, 2, 1, 1, gdal.GDT_CFloat32)
    dataset.GetRasterBand(1).WriteArray(np.array([[1 + 5j, 1 + 0j]], np.complex64))
    dataset = None
    with pytest.raises(ValueError, match=r"PREDICTED: band 1 of .* holds complex numbers "
                                         r"\(CFloat32\)"):
        open_band(path, 1, "PREDICTED")


@pytest.mark.parametrize("nodata, dtype", [(1.5, np.int16), (300, np.uint8), (-1, np.uint8)])
def test_a_nodata_value_an_integer_band_cannot_hold_is_reported(tmp_path, nodata, dtype):
    # No Int16 pixel equals 1.5, no Byte pixel 300 or -1: every pixel is valid, and the run
    # says the nodata value is not one the band holds (GDAL's mask would take 1 for 1.5).
    pixels = np.array([0, 1, 2], dtype)
    result = run(tmp_path, pixels, pixels, reference_raster={"nodata": nodata})
    assert result.counts.trace() == 3
    assert result.alignment["reference_void_pixels"] == 0
    assert [w for w in result.warnings if "nodata value" in w] == [
        f"REFERENCE: the band's nodata value {float(nodata)!r} is not a value "
        f"{'an Int16' if dtype is np.int16 else 'a Byte'} band holds: no pixel is taken as nodata "
        f"(GDAL's mask of a fractional value takes its integer part); set the nodata value "
        f"the raster uses"]


def test_an_integral_nodata_value_is_not_reported(tmp_path):
    pixels = np.array([0, 1, 2], np.uint8)
    result = run(tmp_path, pixels, pixels, reference_raster={"nodata": 2})
    assert result.alignment["reference_void_pixels"] == 1
    assert not any("nodata value" in w for w in result.warnings)
