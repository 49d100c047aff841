"""Geometries from model answers: every format and convention with a hand-worked value."""

import base64
import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from iou_evaluation.core.text.model_text import (
    COORDINATE_FORMATS,
    decode_png,
    mask_to_polygons,
    parse_answer,
)


def boxes(answer):
    """(minx, miny, maxx, maxy) of each usable record, rounded to 1e-9."""
    return [tuple(round(v, 9) for v in r.geometry.bounds) for r in answer.usable]


def test_coordinate_format_enum_order_is_the_contract():
    assert COORDINATE_FORMATS == (
        "auto", "pixel_xyxy", "normalized_1", "normalized_1000", "pixel_yxyx",
        "normalized_1000_yxyx", "map", "normalized_100", "normalized_1024_yxyx",
    )


# --- The literal examples ---------------------------------------------------------

def test_prose_and_fenced_bboxes_give_exactly_the_two_boxes():
    text = ('Sure! I found 2 buildings:\n```json\n'
            '{"bboxes": [[10, 20, 110, 220], [50.5, 60, 70, 80.25]]}\n```')
    answer = parse_answer(text)
    assert answer.status == "parsed"
    assert boxes(answer) == [(10, 20, 110, 220), (50.5, 60, 70, 80.25)]
    assert [r.index for r in answer.records] == [0, 1]
    assert all(r.status == "parsed" and r.kind == "box" for r in answer.records)
    assert answer.records[0].span.startswith('{"bboxes"')


def test_empty_bboxes_list_is_an_empty_answer_not_a_failure():
    answer = parse_answer('{"bboxes": []}')
    assert answer.status == "empty"
    assert answer.records == []


def test_non_finite_boxes_are_counted_and_the_finite_one_kept():
    answer = parse_answer("[[10, 10, 50, 40], [10, NaN, 50, 40], [12, 10, Infinity, 40]]")
    assert boxes(answer) == [(10, 10, 50, 40)]
    assert [r.status for r in answer.records] == ["parsed", "non_finite", "non_finite"]
    assert answer.records[1].geometry is None


def test_backwards_corners_are_reordered_and_marked_repaired():
    answer = parse_answer("[50, 40, 10, 10]")
    assert boxes(answer) == [(10, 10, 50, 40)]
    assert answer.records[0].status == "repaired"
    assert "corners reordered" in answer.records[0].reason


# --- JSON keys -----------------------------------------------------------------------------

def test_bbox_and_list_of_boxes_forms():
    assert boxes(parse_answer('{"bbox": [10, 10, 50, 50]}')) == [(10, 10, 50, 50)]
    assert boxes(parse_answer("[[10, 10, 50, 50], [100, 100, 120, 120]]")) == [
        (10, 10, 50, 50), (100, 100, 120, 120)]


def test_qwen25_bbox_2d_list_with_labels_uses_the_given_convention():
    text = ('```json\n[{"bbox_2d": [100, 50, 300, 150], "label": "car"},\n'
            ' {"bbox_2d": [400, 200, 500, 260], "label": "bus"}]\n```')
    answer = parse_answer(text, "normalized_1000", 2000, 1000)
    # x · 2000 / 1000, y · 1000 / 1000
    assert boxes(answer) == [(200, 50, 600, 150), (800, 200, 1000, 260)]
    assert [r.label for r in answer.records] == ["car", "bus"]
    assert {(r.convention, r.convention_source) for r in answer.records} == {
        ("normalized_1000", "given")}


def test_gemini_box_2d_is_y_first_on_a_0_1000_grid():
    answer = parse_answer('[{"box_2d": [100, 200, 300, 400], "label": "cat"}]', "auto", 640, 480)
    # ymin 100 → 48, xmin 200 → 128, ymax 300 → 144, xmax 400 → 256
    assert boxes(answer) == [(128, 48, 256, 144)]
    record = answer.records[0]
    assert (record.convention, record.convention_source) == ("normalized_1000_yxyx", "syntax")


def test_gemini_point_is_y_first_and_point_2d_is_x_first():
    gemini = parse_answer('[{"point": [500, 250], "label": "dog"}]', "auto", 800, 600)
    assert gemini.usable[0].geometry.equals(shapely.Point(200, 300))  # x 250·0.8, y 500·0.6
    qwen = parse_answer('{"point_2d": [120, 80], "label": "dog"}', "pixel_xyxy")
    assert qwen.usable[0].geometry.equals(shapely.Point(120, 80))
    assert qwen.usable[0].kind == "point"


def test_truncated_json_keeps_the_complete_boxes_as_repaired():
    answer = parse_answer('{"bboxes": [[10, 20, 110, 220], [50, 60, 70')
    assert boxes(answer) == [(10, 20, 110, 220)]
    assert answer.records[0].status == "repaired"
    assert "truncated" in answer.records[0].reason


def test_truncated_qwen_list_cut_inside_a_label():
    answer = parse_answer('[{"bbox_2d": [1, 2, 30, 40], "label": "car"}, {"bbox_2d": [5, 6, 7')
    assert boxes(answer) == [(1, 2, 30, 40)]
    assert answer.records[0].label == "car"


# --- Token syntaxes --------------------------------------------------------------------------

def test_qwen2vl_box_tokens_are_0_1000():
    text = "<|object_ref_start|>car<|object_ref_end|><|box_start|>(69,306),(250,988)<|box_end|>"
    answer = parse_answer(text, "auto", 1000, 500)
    # x: 69, 250 (·1000/1000); y: 306·0.5 = 153, 988·0.5 = 494
    assert boxes(answer) == [(69, 153, 250, 494)]
    assert answer.records[0].label == "car"
    assert answer.records[0].convention_source == "syntax"


def test_florence2_loc_tokens_use_the_bin_centre():
    answer = parse_answer("car<loc_52><loc_333><loc_932><loc_774>", "auto", 2000, 1000)
    # (b + 0.5) / 1000 · size: x 52.5·2 = 105, 932.5·2 = 1865; y 333.5, 774.5
    assert boxes(answer) == [(105, 333.5, 1865, 774.5)]
    assert answer.records[0].label == "car"


def test_florence2_polygon_tokens():
    answer = parse_answer("<loc_0><loc_0><loc_9><loc_0><loc_9><loc_9>", "auto", 1000, 1000)
    # vertices (0.5, 0.5), (9.5, 0.5), (9.5, 9.5): a right triangle of legs 9
    assert answer.usable[0].kind == "polygon"
    assert answer.usable[0].geometry.area == pytest.approx(40.5)


def test_paligemma_loc_tokens_are_y_first_1024_bins_separated_by_semicolons():
    text = "<loc0393><loc0109><loc0859><loc0811> bird ; <loc0000><loc0512><loc0256><loc1023> cat"
    answer = parse_answer(text, "auto", 2048, 1024)
    # y = b/1024·1024, x = b/1024·2048
    assert boxes(answer) == [(218, 393, 1622, 859), (1024, 0, 2046, 256)]
    assert [r.label for r in answer.records] == ["bird", "cat"]
    assert answer.records[0].convention == "normalized_1024_yxyx"


def test_deepseek_vl2_det_is_0_999():
    answer = parse_answer("<|ref|>the dog<|/ref|><|det|>[[580, 270, 999, 904]]<|/det|>",
                          "auto", 1998, 999)
    # x · 1998/999 = 2x; y · 999/999
    assert boxes(answer) == [(1160, 270, 1998, 904)]
    assert answer.records[0].label == "the dog"


def test_geochat_rotated_box_in_percent():
    answer = parse_answer("{<40><89><56><100>|<57>}", "auto", 200, 100)
    record = answer.usable[0]
    assert record.kind == "oriented_box"
    # centre (48 %, 94.5 %) → (96, 94.5); size 16 % · 200 = 32 by 11 % · 100 = 11
    assert record.geometry.centroid.x == pytest.approx(96)
    assert record.geometry.centroid.y == pytest.approx(94.5)
    assert record.geometry.area == pytest.approx(32 * 11)
    # first edge turned by 57° counter-clockwise on screen (y downwards: atan2 gives -57°),
    # as GeoChat's demo draws it (geochat_demo.py, rotate_bbox: cv2.getRotationMatrix2D)
    x0, y0 = record.geometry.exterior.coords[0]
    x1, y1 = record.geometry.exterior.coords[1]
    assert math.degrees(math.atan2(y1 - y0, x1 - x0)) == pytest.approx(-57)


def test_geochat_obb_to_hbb_recovery():
    answer = parse_answer("{<40><40><60><50>|<90>}", "auto", 100, 100, obb_to_hbb=True)
    # 20 × 10 box turned 90° about (50, 45): 10 wide, 20 high
    assert boxes(answer) == [(45, 35, 55, 55)]
    assert answer.usable[0].status == "repaired"


def test_molmo_point_in_percent():
    answer = parse_answer('<point x="52.3" y="61.0" alt="dog">dog</point>', "auto", 200, 100)
    assert answer.usable[0].geometry.equals(shapely.Point(104.6, 61.0))
    assert answer.usable[0].label == "dog"


def test_molmo_multiple_points():
    text = '<points x1="10" y1="20" x2="30" y2="40" alt="cars">cars</points>'
    answer = parse_answer(text, "auto", 100, 100)
    assert [r.geometry.coords[0] for r in answer.usable] == [(10, 20), (30, 40)]


# --- Polygons, oriented boxes, masks ------------------------------------------------------------

def test_flat_list_of_2n_numbers_is_a_polygon_ring():
    answer = parse_answer("[0, 0, 10, 0, 10, 10, 0, 10]", "pixel_xyxy")
    assert answer.usable[0].kind == "polygon"
    assert answer.usable[0].geometry.area == 100


def test_list_of_pairs_is_a_polygon_ring_in_the_row_convention():
    answer = parse_answer('{"polygon": [[0, 0], [500, 0], [500, 500]]}', "normalized_1000",
                          200, 100)
    assert answer.usable[0].geometry.area == pytest.approx(0.5 * 100 * 50)


def test_corner_pairs_under_a_box_key():
    two = parse_answer('{"bbox": [[10, 20], [30, 40]]}', "pixel_xyxy")
    assert boxes(two) == [(10, 20, 30, 40)] and two.usable[0].kind == "box"
    four = parse_answer('{"bbox": [[0, 0], [10, 0], [10, 5], [0, 5]]}', "pixel_xyxy")
    assert four.usable[0].kind == "polygon" and four.usable[0].geometry.area == 50


def test_self_intersecting_polygon_is_made_valid_and_marked_repaired():
    answer = parse_answer("[0, 0, 2, 2, 2, 0, 0, 2]", "pixel_xyxy")
    record = answer.usable[0]
    assert record.status == "repaired"
    assert record.geometry.is_valid
    assert record.geometry.area == pytest.approx(2.0)  # two triangles of area 1


def test_oriented_box_as_four_corners_and_as_centre_size_angle():
    corners = parse_answer('{"obb": [[10, 0], [20, 10], [10, 20], [0, 10]]}', "pixel_xyxy")
    assert corners.usable[0].geometry.area == pytest.approx(200)  # a square of side √200
    centre = parse_answer('{"cx": 50, "cy": 40, "w": 20, "h": 10, "angle": 90}', "pixel_xyxy")
    assert boxes(centre) == [(45, 30, 55, 50)]


def _png(array: np.ndarray) -> str:
    from osgeo import gdal

    path = "/vsimem/test_mask.png"
    mem = gdal.GetDriverByName("MEM").Create("", array.shape[1], array.shape[0], 1, gdal.GDT_Byte)
    mem.GetRasterBand(1).WriteArray(array)
    gdal.GetDriverByName("PNG").CreateCopy(path, mem)
    handle = gdal.VSIFOpenL(path, "rb")
    gdal.VSIFSeekL(handle, 0, 2)
    size = gdal.VSIFTellL(handle)
    gdal.VSIFSeekL(handle, 0, 0)
    data = gdal.VSIFReadL(1, size, handle)
    gdal.VSIFCloseL(handle)
    gdal.Unlink(path)
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_gemini_mask_is_vectorised_inside_its_box():
    mask = np.zeros((4, 4), dtype=np.uint8)
    mask[:2, :2] = 255  # the top-left quarter of the box
    mask[3, 3] = 200
    text = f'[{{"box_2d": [0, 0, 500, 500], "mask": "{_png(mask)}", "label": "roof"}}]'
    answer = parse_answer(text, "auto", 800, 800)
    record = answer.usable[0]
    assert record.kind == "mask"
    # box 400 × 400 px, cells 100 px: the 2 × 2 block (40,000 px²) plus one cell (10,000 px²)
    assert record.geometry.area == pytest.approx(50_000)
    assert record.geometry.bounds == (0, 0, 400, 400)


def test_mask_to_polygons_merges_runs():
    inside = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=bool)
    geometry = mask_to_polygons(inside)
    assert geometry.area == 5
    assert geometry.geom_type == "MultiPolygon"


def test_decode_png_rejects_non_png():
    with pytest.raises(ValueError):
        decode_png(b"not a png")


# --- WKT and GeoJSON ---------------------------------------------------------------------------

def test_wkt_in_prose_any_case_ignores_the_confidence_number():
    text = "The parcel is polygon ((0 0, 10 0, 10 10, 0 10, 0 0)) with confidence 0.93."
    answer = parse_answer(text, "pixel_xyxy")
    assert len(answer.usable) == 1
    assert answer.usable[0].geometry.area == 100
    assert answer.usable[0].span == "polygon ((0 0, 10 0, 10 10, 0 10, 0 0))"


def test_lines_and_zero_area_polygons_are_unparseable_with_a_reason():
    line = parse_answer("LINESTRING (0 0, 10 10)", "pixel_xyxy")
    assert line.status == "unparseable" and "LineString" in line.reason
    flat = parse_answer("[0, 0, 5, 5, 10, 10]", "pixel_xyxy")
    assert flat.status == "unparseable" and "zero area" in flat.reason
    mixed = parse_answer("GEOMETRYCOLLECTION (POINT (1 1), POLYGON ((0 0, 4 0, 4 4, 0 0)))",
                         "pixel_xyxy")
    assert mixed.usable[0].geometry.area == 8


def test_geojson_geometry_feature_and_collection():
    geometry = parse_answer('{"type": "Polygon", "coordinates": [[[0,0],[4,0],[4,3],[0,0]]]}')
    assert geometry.usable[0].geometry.area == 6
    assert geometry.usable[0].frame == "map"
    collection = parse_answer(
        '{"type": "FeatureCollection", "features": ['
        '{"type": "Feature", "properties": {"label": "a"}, '
        '"geometry": {"type": "Point", "coordinates": [1, 2]}},'
        '{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", '
        '"coordinates": [[[0,0],[2,0],[2,2],[0,2],[0,0]]]}}]}')
    assert [r.geometry.geom_type for r in collection.usable] == ["Point", "Polygon"]
    assert collection.usable[0].label == "a"


# --- Conventions, bounds, georeferencing -------------------------------------------------------

@pytest.mark.parametrize("fmt, size, expected", [
    ("pixel_xyxy", (100, 100), (10, 20, 30, 40)),
    ("pixel_yxyx", (100, 100), (20, 10, 40, 30)),
    ("normalized_1", None, (10, 20, 30, 40)),
    ("normalized_1000", (1000, 500), (10, 10, 30, 20)),
    ("normalized_1000_yxyx", (1000, 500), (20, 5, 40, 15)),
    ("normalized_100", (100, 50), (10, 10, 30, 20)),
    ("normalized_1024_yxyx", (2048, 1024), (40, 10, 80, 30)),
    ("map", None, (10, 20, 30, 40)),
])
def test_each_given_format_on_the_box_10_20_30_40(fmt, size, expected):
    text = "[0.1, 0.2, 0.3, 0.4]" if fmt == "normalized_1" else "[10, 20, 30, 40]"
    answer = parse_answer(text, fmt, *(size or (None, None)))
    if fmt == "normalized_1":
        assert boxes(answer) == [(0.1, 0.2, 0.3, 0.4)]  # no image size: fractions
        assert answer.usable[0].frame == "fraction"
    else:
        assert boxes(answer) == [expected]
    assert answer.usable[0].convention_source == "given"


def test_auto_reads_values_in_0_1_as_fractions():
    answer = parse_answer("[0.1, 0.2, 0.3, 0.4]", "auto", 200, 100)
    assert boxes(answer) == [(20, 20, 60, 40)]
    assert answer.usable[0].convention == "normalized_1"


def test_auto_warns_when_pixels_and_0_1000_both_fit():
    answer = parse_answer("[10, 20, 30, 40]", "auto", 640, 480)
    assert answer.usable[0].convention == "pixel_xyxy"
    assert "0–1000" in answer.usable[0].warning


def test_auto_reads_values_beyond_the_image_but_within_1000_as_0_1000():
    answer = parse_answer("[100, 600, 200, 900]", "auto", 640, 480)
    assert answer.usable[0].convention == "normalized_1000"
    assert boxes(answer) == [(64, 288, 128, 432)]


def test_a_box_outside_the_image_is_out_of_bounds_but_kept():
    answer = parse_answer("[600, 10, 700, 50]", "pixel_xyxy", 640, 480)
    record = answer.records[0]
    assert record.status == "out_of_bounds"
    assert record.geometry is not None
    assert answer.status == "parsed"


def test_a_value_beyond_the_grid_is_out_of_bounds():
    answer = parse_answer("[100, 100, 1200, 300]", "normalized_1000")
    assert answer.records[0].status == "out_of_bounds"


def test_pixels_become_map_coordinates_through_a_north_up_geotransform():
    gt = (500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0)
    answer = parse_answer("[0, 0, 10, 5]", "pixel_xyxy", 100, 100, geotransform=gt)
    assert boxes(answer) == [(500000, 3999950, 500100, 4000000)]
    assert answer.usable[0].frame == "map"


def test_pixels_become_map_coordinates_through_a_rotated_geotransform():
    gt = (1000.0, 0.0, 2.0, 2000.0, 2.0, 0.0)  # x → +Y, y → +X (a 90° rotation), 2 m pixels
    answer = parse_answer('{"point_2d": [3, 4]}', "pixel_xyxy", geotransform=gt)
    assert answer.usable[0].geometry.equals(shapely.Point(1008, 2006))


# --- Empty, failures, think blocks ---------------------------------------------------------------

@pytest.mark.parametrize("text", ["[]", "No buildings found.", "None.", '{"bbox_2d": []}',
                                  '{"count": 0, "objects": []}', '{"bbox": null}'])
def test_empty_answers(text):
    assert parse_answer(text).status == "empty"


@pytest.mark.parametrize("text, reason", [
    ("I cannot help with that.", "no geometry"),
    ("[1, 2, 3]", "3 numbers"),
    ('{"bbox": [1, 2, 3, 4', "truncated"),
    (None, "null"),
    # blank text is no answer, as NULL is (QGIS reads an empty CSV cell as NULL): never
    # "nothing there", which would make a blank expected cell a correct rejection
    ("", "blank"),
    ("  \n ", "blank"),
    # JSON with content but no geometry is not an empty answer
    ('{"label": "car"}', "JSON without a geometry"),
    ('["car", "dog"]', "JSON without a geometry"),
    ('{"answer": "yes", "count": 3}', "JSON without a geometry"),
    ('{"x": 10, "y": 20, "width": 30, "height": 40}', "centre or the top-left corner"),
    ('{"polygon": [[10, 20], [30, 20]]}', "at least 3 points"),
])
def test_failures_name_their_reason(text, reason):
    answer = parse_answer(text)
    if reason == "truncated":  # a cut inside the only box leaves nothing complete
        assert answer.status == "unparseable"
        return
    assert answer.status == "unparseable"
    assert reason in answer.reason


def test_think_block_is_skipped_when_the_answer_has_geometry():
    answer = parse_answer("<think>maybe [1, 2, 3, 4]?</think> The box is [10, 10, 20, 20].",
                          "pixel_xyxy")
    assert boxes(answer) == [(10, 10, 20, 20)]


def test_think_block_is_not_read_when_the_answer_says_none_found():
    # the final answer is "nothing": a box the model considered while reasoning is not it
    answer = parse_answer("<think>maybe [10, 10, 20, 20]?</think>\nNo cars found.",
                          "pixel_xyxy")
    assert answer.status == "empty" and answer.records == []
    answer = parse_answer("<think>maybe [10, 10, 20, 20]?</think> []", "pixel_xyxy")
    assert answer.status == "empty" and answer.records == []


@pytest.mark.parametrize("text", [
    '{"x1": 10, "y1": 20, "x2": 30, "y2": 40}',
    '{"xmin": 10, "ymin": 20, "xmax": 30, "ymax": 40, "label": "car"}',
    '{"x_min": 30, "y_min": 40, "x_max": 10, "y_max": 20}',
    '{"left": 10, "top": 20, "right": 30, "bottom": 40}',
    '{"bbox": {"x1": "10", "y1": "20", "x2": "30", "y2": "40"}}',
])
def test_boxes_given_by_corner_keys(text):
    answer = parse_answer(text, "pixel_xyxy")
    assert boxes(answer) == [(10, 20, 30, 40)]


def test_a_point_given_by_x_and_y_keys():
    answer = parse_answer('{"x": 0.25, "y": 0.5}', "normalized_1", 200, 100)
    assert answer.usable[0].geometry.equals(shapely.Point(50, 50))


def test_numbers_as_strings_in_any_list():
    # all strings at the top level, and strings mixed with numbers: read, status repaired
    for text in ('["10", "20", "30", "40"]', '{"bbox": ["10", 20, "30", 40]}'):
        answer = parse_answer(text, "pixel_xyxy")
        assert boxes(answer) == [(10, 20, 30, 40)]
        assert answer.usable[0].status == "repaired"
    # "NaN" as a string is a non-finite coordinate, not a list of words
    answer = parse_answer('[[10, 10, 50, 40], [10, "NaN", 50, 40]]', "pixel_xyxy")
    assert boxes(answer) == [(10, 10, 50, 40)]
    assert [r.status for r in answer.failures] == ["non_finite"]


def test_think_block_is_read_when_the_answer_has_none():
    answer = parse_answer("<think>the car is at [10, 10, 20, 20]</think> Done.", "pixel_xyxy")
    assert boxes(answer) == [(10, 10, 20, 20)]
    assert "think" in answer.reason


def test_unknown_format_and_bad_image_size_are_programmer_errors():
    with pytest.raises(ValueError, match="coordinate_format"):
        parse_answer("[1, 2, 3, 4]", "xyxy")
    with pytest.raises(ValueError, match="image size"):
        parse_answer("[1, 2, 3, 4]", "pixel_xyxy", 0, 10)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_the_parser_never_raises_on_arbitrary_text(text):
    answer = parse_answer(text)
    assert answer.status in ("parsed", "empty", "unparseable", "non_finite")
    assert not answer.reason.startswith("the answer could not be read")  # no internal error


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet='[]{}<>|",:0123456789.-eNaIfinty _boxlc()PLYGONMUT', max_size=80))
def test_the_parser_never_raises_on_bracket_soup(text):
    answer = parse_answer(text, "normalized_1000", 640, 480)
    assert not answer.reason.startswith("the answer could not be read")  # no internal error
    for record in answer.usable:
        assert record.geometry is not None and not record.geometry.is_empty


def test_map_coordinates_outside_the_raster_are_out_of_bounds():
    gt = (500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0)  # 100 × 100 px of 10 m
    inside = parse_answer("[500100, 3999100, 500200, 3999200]", "map", 100, 100,
                          geotransform=gt)
    assert inside.records[0].status == "parsed"
    outside = parse_answer("[501100, 3999100, 501200, 3999200]", "map", 100, 100,
                           geotransform=gt)
    assert outside.records[0].status == "out_of_bounds"


def test_common_json_slips_are_repaired():
    trailing = parse_answer("[1, 2, 30, 40,]", "pixel_xyxy")
    assert boxes(trailing) == [(1, 2, 30, 40)]
    assert trailing.records[0].status == "repaired"
    python = parse_answer("[{'bbox_2d': [1, 2, 30, 40], 'label': 'car', 'score': None}]",
                          "pixel_xyxy")
    assert boxes(python) == [(1, 2, 30, 40)]
    assert python.records[0].label == "car"


def test_numbers_given_as_strings_are_read_and_marked_repaired():
    answer = parse_answer('{"bbox": ["10", "20", "30", "40"]}', "pixel_xyxy")
    assert boxes(answer) == [(10, 20, 30, 40)]
    assert answer.records[0].status == "repaired"


def test_qwen_vl_v1_ref_box_tokens_are_0_1000():
    answer = parse_answer("<ref>car</ref><box>(100,200),(300,400)</box>", "auto", 500, 500)
    assert boxes(answer) == [(50, 100, 150, 200)]
    assert answer.records[0].label == "car"


_FRAGMENTS = [
    "[", "]", "{", "}", ",", " ", "0", "12", "999", "1e400", "-3.5", "NaN", "Infinity", '"',
    '"bbox": ', '"bbox_2d": ', '"box_2d": ', '"point": ', '"polygon": ', '"obb": ',
    '"mask": "data:image/png;base64,iVBOR"', '"angle": 30', '"cx": 5', '"type": "Polygon"',
    '"coordinates": ', '"type": "Feature"', '"geometry": null', "<loc_", "<loc0", ">",
    "<|box_start|>", "<|box_end|>", "(", ")", "<|det|>", "<|/det|>", "{<", "><", "|<",
    "<point x=\"", "\" y=\"", "</point>", "POLYGON((", "point (", "<think>", "</think>",
    " ; ", "none found", "```json\n", "\n```",
]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30).map("".join),
       st.sampled_from(COORDINATE_FORMATS), st.booleans())
def test_the_parser_never_fails_inside_on_format_fragments(text, fmt, with_size):
    size = (640, 480) if with_size else (None, None)
    answer = parse_answer(text, fmt, *size, obb_to_hbb=with_size)
    assert not answer.reason.startswith("the answer could not be read"), answer.reason
    for record in answer.usable:
        assert record.geometry is not None and not record.geometry.is_empty
        assert np.all(np.isfinite(shapely.get_coordinates(record.geometry)))


def test_unusable_image_sizes_are_counted_and_warned():
    from iou_evaluation.core.text.model_text import answer_tables

    # width 0, a negative width, text that is not a number, one side missing: each row is
    # read without the size (fractions stay fractions) and says why; "640" is a number
    tables = answer_tables(["[0.1, 0.2, 0.3, 0.4]"] * 6, [1, 2, 3, 4, 5, 6],
                           image_widths=[0, -5, "abc", 640, "640", None],
                           image_heights=[100, 100, "100", None, "480", None])
    assert tables.counts["count_rows_bad_image_size"] == 4
    assert tables.polygons["frame"] == ["fraction"] * 4 + ["pixel", "fraction"]
    assert ["not usable" in w for w in tables.polygons["warning"]] == [True] * 4 + [False] * 2
    # 0.1 · 640 = 64, 0.2 · 480 = 96, 0.3 · 640 = 192, 0.4 · 480 = 192
    assert tables.polygons["geometry"][4].bounds == (64, 96, 192, 192)


def test_florence2_several_boxes_of_one_phrase():
    # phrase grounding: every 4 loc tokens a box (Florence-2's post-processor), bin b → b + 0.5
    # pixels on a 1000-pixel image
    answer = parse_answer("A green car<loc_100><loc_200><loc_299><loc_399>"
                          "<loc_500><loc_600><loc_699><loc_799>", "auto", 1000, 1000)
    assert boxes(answer) == [(100.5, 200.5, 299.5, 399.5), (500.5, 600.5, 699.5, 799.5)]
    assert [r.label for r in answer.usable] == ["A green car"] * 2
    # an OCR quad (8 tokens, corners in ring order) is not two boxes: one polygon
    answer = parse_answer("text<loc_100><loc_200><loc_300><loc_200><loc_300><loc_400>"
                          "<loc_100><loc_400>", "auto", 1000, 1000)
    assert [r.kind for r in answer.usable] == ["polygon"]
    assert answer.usable[0].geometry.area == pytest.approx(200 * 200)


def test_internvl_several_boxes_in_one_box_tag():
    answer = parse_answer("<ref>car</ref><box>[[100, 200, 300, 400], [500, 600, 700, 800]]</box>",
                          "auto", 500, 1000)
    # 0–1000: x · 500 / 1000, y · 1000 / 1000
    assert boxes(answer) == [(50, 200, 150, 400), (250, 600, 350, 800)]


def test_brackets_nested_past_the_stack_do_not_hide_a_later_box():
    # 5000 levels: json raises RecursionError; the run is skipped, not the whole answer
    answer = parse_answer("[" * 5000 + "]" * 5000 + " The box: [10, 20, 30, 40]", "pixel_xyxy")
    assert boxes(answer) == [(10, 20, 30, 40)]
    answer = parse_answer("<|det|>" + "[" * 3000 + "]" * 3000 + "<|/det|> [10, 20, 30, 40]",
                          "pixel_xyxy")
    assert boxes(answer) == [(10, 20, 30, 40)]


def test_text_full_of_brackets_is_read_in_one_pass():
    # each failed decode used to count the lines before it (json's error message), and each
    # span lookup compared with every span read: both quadratic; values stay the same
    answer = parse_answer("{" * 200_000 + " [10, 20, 30, 40]", "pixel_xyxy")
    assert boxes(answer) == [(10, 20, 30, 40)]
    answer = parse_answer("[1 " * 100_000, "pixel_xyxy")
    assert answer.status == "unparseable"
    answer = parse_answer("POINT (1 2) " * 5000, "pixel_xyxy")
    assert len(answer.usable) == 5000
    # a value longer than the first decoding window (4096 characters) is read whole
    many = "[" + ", ".join(f"[{k}, {k}, {k + 1}, {k + 1}]" for k in range(2000)) + "]"
    assert len(many) > 8 * 4096
    answer = parse_answer(many, "pixel_xyxy")
    assert boxes(answer)[-1] == (1999, 1999, 2000, 2000) and len(answer.usable) == 2000


def test_a_json_field_value_and_other_types():
    # QGIS reads a GeoPackage JSON field as a dict or list: read as its JSON text
    assert boxes(parse_answer({"bbox": [10, 20, 30, 40]}, "pixel_xyxy")) == [(10, 20, 30, 40)]
    assert boxes(parse_answer([[10, 20, 30, 40]], "pixel_xyxy")) == [(10, 20, 30, 40)]
    answer = parse_answer(42, "pixel_xyxy")
    assert answer.status == "unparseable" and "not text (int)" in answer.reason


@pytest.mark.parametrize("text", [
    "There is no doubt: the car is at the top left.",
    "The car, none other than a taxi, is at the top left.",
])
def test_figures_of_speech_are_not_none_found(text):
    # no geometry and no "nothing there": a failure to read, not a correct rejection
    assert parse_answer(text).status == "unparseable"


def test_there_are_no_cars_is_still_empty():
    assert parse_answer("There are no cars in this image.").status == "empty"
