"""Model answer formats of 2025-2026 (issue 25): each from an answer string as its public source
writes it, the coordinates worked out by hand from the convention the source documents."""

import base64
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import plugin_script
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core.text.model_text import REGISTRY, parse_answer
from iou_evaluation.core.text.spatial_match import spatial_match


def boxes(answer):
    return [tuple(round(v, 6) for v in r.geometry.bounds) for r in answer.usable]


def corners(record):
    return np.asarray(record.geometry.exterior.coords)[:4]


# --- Formats not read before ---------------------------------------------------------------

def test_molmo2_points_coords():
    # allenai/molmo2 tests/preprocessing/test_point_formatter.py (test_extract_points): on a
    # 100 × 50 image this answer is the points (90, 35) and (90, 40): "image 1, point 1 at
    # (900, 700), point 2 at (900, 800)", x / 1000 · 100, y / 1000 · 50
    answer = parse_answer('<points coords="1 1 900 700 2 900 800">tmp</points>', "auto", 100, 50)
    assert [tuple(r.geometry.coords[0]) for r in answer.usable] == [(90, 35), (90, 40)]
    assert {r.label for r in answer.usable} == {"tmp"}
    assert {r.convention_source for r in answer.usable} == {"syntax"}


def test_cogvlm_boxes_zero_padded_and_split_by_semicolons():
    # THUDM/CogVLM README ("Format of coordination": relative × 1000, three digits, origin top
    # left): "Grounded Operation:[combobox] Search -> TYPE: CogVLM at the box [[212,498,787,564]]"
    text = "Grounded Operation:[combobox] Search -> TYPE: CogVLM at the box [[212,498,787,564]]"
    answer = parse_answer(text, "auto", 1000, 800)
    # x · 1000 / 1000, y · 800 / 1000
    assert boxes(answer) == [(212, 398.4, 787, 451.2)]
    # the README's "[[086,540,400,760]]" (zero-padded: not JSON), two boxes split by ";"
    answer = parse_answer("children in blue T-shirts[[086,540,400,760;500,100,700,300]]",
                          "auto", 500, 500)
    assert boxes(answer) == [(43, 270, 200, 380), (250, 50, 350, 150)]


def test_minicpm_v_space_separated_box_point_and_quad():
    # MiniCPM-V's grounding answers: <box>x1 y1 x2 y2</box> on a 0–1000 grid (as a public
    # parser's test quotes it: "noise <box>100 200 300 400</box>"), <point>x y</point>,
    # <quad>x1 y1 … x4 y4</quad>
    answer = parse_answer("noise <box>100 200 300 400</box>", "auto", 2000, 1000)
    assert boxes(answer) == [(200, 200, 600, 400)]
    answer = parse_answer("<ref>logo</ref><point>250 500</point>", "auto", 2000, 1000)
    assert tuple(answer.usable[0].geometry.coords[0]) == (500, 500)
    assert answer.usable[0].label == "logo"
    answer = parse_answer("<quad>100 100 300 100 300 200 100 200</quad>", "auto", 1000, 1000)
    assert answer.usable[0].kind == "polygon" and answer.usable[0].geometry.area == 200 * 100


def test_internvl_box_lists_and_quads():
    # InternVL's refcoco evaluation (internvl_chat/eval/refcoco/evaluate_grounding.py):
    # [[x1, y1, x2, y2]] / 1000 · image size
    answer = parse_answer("<ref>the man</ref><box>[[190, 68, 484, 734]]</box>", "auto",
                          500, 1000)
    assert boxes(answer) == [(95, 68, 242, 734)] and answer.usable[0].label == "the man"
    answer = parse_answer("<quad>(100,100),(300,100),(300,200),(100,200)</quad>", "auto",
                          1000, 1000)
    assert answer.usable[0].geometry.area == pytest.approx(200 * 100)


def test_shikra_box_of_the_padded_square():
    # Shikra's PlainBoxFormatter (mllm/dataset/process_function/box_process_function.py):
    # "[x1,y1,x2,y2]" with three decimals, fractions of the image padded to a square
    # (expand2square: side 640 for 640 × 480, the image pasted at y (640 - 480) // 2 = 80)
    answer = parse_answer("A dog[0.102,0.250,0.604,0.800] is running.", "auto", 640, 480)
    # x · 640; y · 640 - 80
    assert boxes(answer) == [(65.28, 80, 386.56, 432)]
    assert "padding" in answer.usable[0].reason
    # without the image size the padding cannot be undone: unparseable, not a guess
    answer = parse_answer("A dog[0.102,0.250,0.604,0.800]")
    assert answer.status == "unparseable" and "padded to a square" in answer.reason


def test_llava_15_fractions_of_the_padded_square():
    # LLaVA-1.5 pads to a square as Shikra does (llava/mm_utils.py, expand2square) and answers
    # a referring expression with "[0.23, 0.31, 0.55, 0.78]": on 800 × 600 the square is 800,
    # the image at y (800 - 600) // 2 = 100
    answer = parse_answer("[0.23, 0.31, 0.55, 0.78]", "auto", 800, 600, padded_square=True)
    # x · 800; y · 800 - 100
    assert boxes(answer) == [(184, 148, 440, 524)]
    # a portrait 600 × 800: the image at x 100
    answer = parse_answer("[0.23, 0.31, 0.55, 0.78]", "auto", 600, 800, padded_square=True)
    assert boxes(answer) == [(84, 248, 340, 624)]


def test_earthdial_rotated_boxes_on_a_0_100_grid():
    # hiyamdebary/EarthDial src/earthdial/eval/rs_detection/results/GeoChat.jsonl, answers
    # "[[83, 58, 87, 62, 37]]" and "[[88, 33, 96, 41, 57]][[53, 18, 57, 22, 57]]…": percent,
    # the angle in degrees (eval.py, get_rotated_box_vertices)
    answer = parse_answer("[[83, 58, 87, 62, 37]]", "auto", 200, 100)
    record = answer.usable[0]
    # centre (85 %, 60 %) → (170, 60); 4 % · 200 = 8 by 4 % · 100 = 4
    assert record.kind == "oriented_box"
    assert (record.geometry.centroid.x, record.geometry.centroid.y) == pytest.approx((170, 60))
    assert record.geometry.area == pytest.approx(8 * 4)
    answer = parse_answer("[[88, 33, 96, 41, 57]][[53, 18, 57, 22, 57]][[55, 18, 59, 22, 57]]",
                          "auto", 100, 100)
    assert len(answer.usable) == 3


def test_skysensegpt_rbox_centre_size_angle():
    # Luo-Z13/SkySenseGPT Tools/process_data_RS_Object_Detection.py writes its answers as
    # "There is 1 ship in the image: " + "<rbox>(" + "{<%.2f><%.2f><%.2f><%.2f>|<%d>}" + ")</rbox>"
    # with cx, cy, w, h in percent (RBOX_NORM = 100) and mmrotate's "oc" angle in degrees
    text = "There is 1 ship in the image: <rbox>({<45.12><60.33><10.50><3.20>|<35>})</rbox>"
    answer = parse_answer(text, "auto", 200, 200)
    record = answer.usable[0]
    assert record.label == "ship"
    # centre (90.24, 120.66), 21 × 6.4 pixels, turned 35° clockwise on screen: the width axis
    # points along (cos 35°, sin 35°) with y downwards (obb2poly_np_oc in
    # Eval_scripts/batch_geochat_complex_compre.py)
    c, s = math.cos(math.radians(35)), math.sin(math.radians(35))
    cx, cy, w, h = 90.24, 120.66, 21.0, 6.4
    expected = [(cx - w / 2 * c + h / 2 * s, cy - w / 2 * s - h / 2 * c),
                (cx + w / 2 * c + h / 2 * s, cy + w / 2 * s - h / 2 * c),
                (cx + w / 2 * c - h / 2 * s, cy + w / 2 * s + h / 2 * c),
                (cx - w / 2 * c - h / 2 * s, cy - w / 2 * s + h / 2 * c)]
    assert corners(record) == pytest.approx(np.array(expected))
    # the generator's answer for a category that is absent
    empty = parse_answer("I'm sorry, I cannot answer as the given image does not contain any "
                         "given objects.")
    assert empty.status == "empty"


def test_glm_begin_of_box_holds_a_box_or_a_plain_answer():
    # zai-org/GLM-V README ("Grounding"): boxes [x1, y1, x2, y2] normalised by the image size
    # × 1000, marked by <|begin_of_box|> <|end_of_box|>, bracket style varying
    for text in ("<|begin_of_box|>[[206, 162, 838, 172]]<|end_of_box|>",
                 "<|begin_of_box|>(206, 162, 838, 172)<|end_of_box|>"):
        answer = parse_answer(text, "auto", 1000, 500)
        assert boxes(answer) == [(206, 81, 838, 86)]
    # the same tokens around a plain-text answer: no geometry there, and no failure record
    answer = parse_answer("The answer is <|begin_of_box|>B<|end_of_box|>")
    assert answer.records == [] and answer.status == "unparseable"


def test_qwen3_vl_xml_points_on_a_0_1000_grid():
    # Qwen3-VL-30B-A3B's pointing answer, as a public evaluation script quotes it measured
    # ("x=885 on a 640 px image, so not pixels"):
    text = '<points x1="115" y1="150" x2="885" y2="104" alt="background">background</points>'
    answer = parse_answer(text, "auto", 640, 480)
    # values above 100: Qwen3-VL's 0–1000 grid, not Molmo's percent; x · 0.64, y · 0.48
    assert [tuple(r.geometry.coords[0]) for r in answer.usable] == [
        pytest.approx((73.6, 72.0)), pytest.approx((566.4, 49.92))]
    assert all(r.warning for r in answer.usable)
    # Molmo's own answer stays percent (Molmo README: <point x="52.3" y="61.0" …>)
    molmo = parse_answer('<point x="52.3" y="61.0" alt="dog">dog</point>', "auto", 200, 100)
    assert tuple(molmo.usable[0].geometry.coords[0]) == pytest.approx((104.6, 61.0))


def test_moondream_objects():
    # vikhyat/moondream finetune README: {'objects': [{'x_min': …, 'y_min': …, 'x_max': …,
    # 'y_max': …}]}, fractions of the image (eval/coco_map.py multiplies by the width)
    text = "{'objects': [{'x_min': 0.25, 'y_min': 0.1, 'x_max': 0.75, 'y_max': 0.6}]}"
    answer = parse_answer(text, "auto", 400, 200)
    assert boxes(answer) == [(100, 20, 300, 120)]


def test_falcon_bin_tokens():
    # lzd19981105/Falcon (remote sensing): regions as <box><855><297><891><355></box> and
    # <quad><703><420><703><292><571><292><571><420></quad> (README; eval/src/detection_obb.py
    # reads answers the same way), 1000 bins read at the bin's centre (inference.py,
    # CoordinatesQuantizer "floor": (N + 0.5) · size / 1000)
    answer = parse_answer("<box><855><297><891><355></box>", "auto", 1000, 500)
    assert boxes(answer) == [(855.5, 148.75, 891.5, 177.75)]
    answer = parse_answer("<quad><703><420><703><292><571><292><571><420></quad>", "auto",
                          1000, 1000)
    assert answer.usable[0].geometry.area == pytest.approx((703.5 - 571.5) * (420.5 - 292.5))
    # bare tokens, and polygons in <poly>…</poly> split by <sep> (extract_polygons)
    assert boxes(parse_answer("harbor <99><199><299><399>", "auto", 1000, 500)) == [
        (99.5, 99.75, 299.5, 199.75)]
    answer = parse_answer("<poly><100><100><300><100><300><300><sep><10><10><20><10><20><20>"
                          "</poly>", "auto", 1000, 1000)
    assert [r.geometry.area for r in answer.usable] == [pytest.approx(200 * 200 / 2),
                                                        pytest.approx(10 * 10 / 2)]


# --- A geometry present, the answer marked failed ---------------------------------------------

def test_nested_deepseek_det_keeps_its_complete_box():
    # deepseek-ai/DeepSeek-VL2 issue 96: "it returns nested list (For example:
    # [245,[234,543,542,244]]"; the complete box is kept, the stray 245 is reported
    answer = parse_answer("<|ref|>helmet<|/ref|><|det|>[245,[234,543,542,244]]<|/det|>",
                          "auto", 999, 999)
    assert boxes(answer) == [(234, 244, 542, 543)]  # / 999 · 999, corners reordered
    assert answer.usable[0].label == "helmet"
    assert [r.status for r in answer.failures] == ["unparseable"]
    assert "245" in answer.failures[0].reason


def test_deepseek_readme_answer():
    # deepseek-ai/DeepSeek-VL2 README: "<|ref|>The giraffe at the back.<|/ref|><|det|>[[580,
    # 270, 999, 900]]<|/det|>", x / 999 (serve/app_modules/utils.py)
    answer = parse_answer("<|ref|>The giraffe at the back.<|/ref|><|det|>[[580, 270, 999, 900]]"
                          "<|/det|>", "auto", 1998, 999)
    assert boxes(answer) == [(1160, 270, 1998, 900)]
    assert answer.usable[0].label == "The giraffe at the back."


def _png(values):
    from osgeo import gdal

    rows, cols = values.shape
    mem = gdal.GetDriverByName("MEM").Create("", cols, rows, 1, gdal.GDT_Byte)
    mem.GetRasterBand(1).WriteArray(values)
    gdal.GetDriverByName("PNG").CreateCopy("/vsimem/empty_mask.png", mem)
    handle = gdal.VSIFOpenL("/vsimem/empty_mask.png", "rb")
    gdal.VSIFSeekL(handle, 0, 2)
    size = gdal.VSIFTellL(handle)
    gdal.VSIFSeekL(handle, 0, 0)
    data = gdal.VSIFReadL(1, size, handle)
    gdal.VSIFCloseL(handle)
    gdal.Unlink("/vsimem/empty_mask.png")
    return base64.b64encode(data).decode()


def test_gemini_box_with_an_empty_mask_keeps_the_box_with_a_note():
    mask = _png(np.zeros((4, 4), dtype=np.uint8))  # no pixel above 127
    text = ('[{"box_2d": [100, 200, 300, 400], "mask": "data:image/png;base64,' + mask +
            '", "label": "cat"}]')
    answer = parse_answer(text, "auto", 1000, 1000)
    assert answer.status == "parsed"
    assert boxes(answer) == [(200, 100, 400, 300)]  # y first, / 1000 · 1000
    assert "mask is empty" in answer.usable[0].reason and answer.usable[0].status == "repaired"


def test_florence2_polygon_tokens_in_pairs_are_a_polygon():
    # Florence-2's segmentation answers are <loc_x><loc_y> pairs (<sep> between polygons);
    # these eight tokens taken four at a time look like two ordered boxes, yet their ring is
    # a simple quadrilateral: a polygon, with a warning
    text = "car<loc_100><loc_100><loc_300><loc_100><loc_300><loc_300><loc_310><loc_400>"
    answer = parse_answer(text, "auto", 1000, 1000)
    assert [r.kind for r in answer.usable] == ["polygon"]
    # bin centres (b + 0.5): the ring (100.5, 100.5) (300.5, 100.5) (300.5, 300.5)
    # (310.5, 400.5), shoelace area (-20000 + 60000 + 27000 - 9000) / 2
    assert answer.usable[0].geometry.area == pytest.approx(29000)
    assert "could also be 2 boxes" in answer.usable[0].warning
    # with <sep>: two polygons
    text = ("road<loc_0><loc_0><loc_9><loc_0><loc_9><loc_9><sep>"
            "<loc_20><loc_20><loc_29><loc_20><loc_29><loc_29>")
    answer = parse_answer(text, "auto", 1000, 1000)
    assert [r.kind for r in answer.usable] == ["polygon", "polygon"]


# --- Conventions ------------------------------------------------------------------------------

def test_explicit_coordinate_format_wins_over_the_syntax():
    text = '<points x1="50" y1="80" alt="cup">cup</points>'
    # auto: Molmo's percent; normalized_1000 given: Qwen3-VL's grid, as the user said
    assert tuple(parse_answer(text, "auto", 1000, 1000).usable[0].geometry.coords[0]) == (
        500, 800)
    given = parse_answer(text, "normalized_1000", 1000, 1000).usable[0]
    assert tuple(given.geometry.coords[0]) == (50, 80)
    assert given.convention_source == "given" and given.status == "parsed"
    # the model's vocabulary fixes Florence-2's bins: not replaced, and said so
    florence = parse_answer("car<loc_52><loc_333><loc_932><loc_774>", "pixel_xyxy", 1000, 1000)
    assert florence.usable[0].convention == "florence2_loc_1000"
    assert "not applied" in florence.usable[0].warning
    # Gemini's box_2d is y first on 0–1000 by its API: normalized_1000 (x first) is not applied
    gemini = parse_answer('{"box_2d": [100, 200, 300, 400]}', "normalized_1000", 1000, 1000)
    assert boxes(gemini) == [(200, 100, 400, 300)] and "not applied" in gemini.usable[0].warning


# --- Numbers in prose -------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "The coordinates are in the range [0, 1000].",
    "The image is [1920, 1080] pixels.",
    "All values in [0, 1] are fractions.",
])
def test_prose_numbers_are_no_geometry_under_auto(text):
    answer = parse_answer(text)
    assert answer.usable == [] and answer.status == "unparseable"
    assert "prose" in answer.reason


def test_prose_numbers_are_read_where_the_format_says_so():
    assert boxes(parse_answer("The box is [10, 10, 20, 20].", "pixel_xyxy")) == [
        (10, 10, 20, 20)]
    # a list standing alone (its line, a fence, between tags) is the answer
    assert boxes(parse_answer("Here it is:\n[10, 10, 20, 20]\n")) == [(10, 10, 20, 20)]
    assert boxes(parse_answer("<answer>[10, 10, 20, 20]</answer>")) == [(10, 10, 20, 20)]


def test_a_correct_nothing_there_with_prose_numbers_is_a_correct_rejection():
    result = spatial_match(["There are no planes; the image is [1920, 1080]."], ["[]"])
    assert result.rows["passed"] == [True]
    assert result.metrics["count_true_negative"] == 1


_WORDS = st.sampled_from(["the", "image", "range", "values", "size", "is", "are", "in", "at",
                          "about", "roughly", "between", "and", "box", "car", "coordinates"])
_NUMBERS = st.one_of(st.integers(-5000, 5000).map(str),
                     st.floats(-2, 2000, allow_nan=False).map(lambda v: f"{v:.3g}"))
_PUNCT = st.sampled_from([" ", ", ", " [", "] ", "(", ") ", ". ", ": ", "; ", " - "])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_WORDS, _NUMBERS, _PUNCT), min_size=1, max_size=40))
def test_random_prose_with_numbers_yields_no_geometry(parts):
    # every line starts with a word, so no bracketed list stands alone; no syntax's tag
    text = "The " + " ".join(parts)
    answer = parse_answer(text)
    assert answer.usable == [], (text, [r.kind for r in answer.usable])


# --- Labels -----------------------------------------------------------------------------------

def test_labels_kept():
    # the second box after one <ref> (Qwen-VL writes one ref before several boxes)
    answer = parse_answer("<ref>cars</ref><box>(10,20),(30,40)</box><box>(50,60),(70,80)</box>",
                          "auto", 1000, 1000)
    assert [r.label for r in answer.usable] == ["cars", "cars"]
    # GeoChat's <p>…</p> phrase (geochat_demo.py, extract_substrings: '<p>(.*?)\}(?!<)')
    answer = parse_answer("<p>white airplane</p> {<40><40><60><50>|<30>}", "auto", 100, 100)
    assert answer.usable[0].label == "white airplane"
    # JSON stored inside a JSON string
    answer = parse_answer('{"answer": "[{\\"bbox_2d\\": [10, 20, 30, 40], \\"label\\": '
                          '\\"car\\"}]"}', "pixel_xyxy")
    assert boxes(answer) == [(10, 20, 30, 40)] and answer.usable[0].label == "car"
    # a Python-style dict whose label holds an apostrophe (repr puts it in double quotes)
    answer = parse_answer("[{'bbox_2d': [10, 20, 30, 40], 'label': \"driver's seat\"}]",
                          "pixel_xyxy")
    assert answer.usable[0].label == "driver's seat"


# --- Repairs, rotation, degenerate output -------------------------------------------------------

def test_negative_width_in_centre_form_is_repaired():
    answer = parse_answer('{"cx": 50, "cy": 40, "w": -20, "h": 10, "angle": 0}', "pixel_xyxy")
    record = answer.usable[0]
    assert record.status == "repaired" and "negative width" in record.reason
    assert boxes(answer) == [(40, 35, 60, 45)]


def test_geochat_angle_turns_counter_clockwise_as_its_demo_draws():
    # geochat_demo.py, rotate_bbox: cv2.getRotationMatrix2D(center, angle, 1), whose matrix is
    # [[cos, sin, …], [-sin, cos, …]]: a positive angle turns counter-clockwise on screen.
    # The box {<40><40><60><50>|<30>} on 100 × 100: centre (50, 45), 20 × 10, turned by hand
    answer = parse_answer("{<40><40><60><50>|<30>}", "auto", 100, 100)
    c, s = math.cos(math.radians(30)), math.sin(math.radians(30))
    expected = [(50 + dx * c + dy * s, 45 - dx * s + dy * c)
                for dx, dy in ((-10, -5), (10, -5), (10, 5), (-10, 5))]
    assert corners(answer.usable[0]) == pytest.approx(np.array(expected))
    # the top edge rises to the right: (-10, -5) → (38.84, 45.67), (10, -5) → (56.16, 35.67)
    assert expected[0] == pytest.approx((38.8397, 45.6699), abs=1e-4)


@pytest.mark.parametrize("text", [
    "<|det|>[[2, 311, 99999, 98]]<|/det|>",
    "<|box_start|>(2,311),(99999,98)<|box_end|>",
    "<ref>x</ref><box>[[2, 311, 99999, 98]]</box>",
])
def test_out_of_range_is_out_of_bounds_never_clipped(text):
    answer = parse_answer(text, "auto", 1000, 1000)
    record = answer.records[0]
    assert record.status == "out_of_bounds" and "range" in record.reason
    assert record.geometry.bounds[2] > 1000  # as written, not clipped to the image


@pytest.mark.parametrize("text", [
    "<|det|>[[470,]]<|/det|>",
    "<|box_start|>(470,)<|box_end|>",
    "<box>470</box>",
    "<|begin_of_box|>[470, 12, 9]<|end_of_box|>",
])
def test_wrong_arity_is_unparseable_with_its_reason(text):
    answer = parse_answer(text, "auto", 1000, 1000)
    assert answer.status == "unparseable" and answer.usable == []
    assert "number" in answer.reason


def test_unclosed_tag_with_a_complete_box_is_read_and_repaired():
    answer = parse_answer("<|ref|>car<|/ref|><|det|>[[100, 200, 300, 400], [5, 6", "auto",
                          999, 999)
    assert boxes(answer) == [(100, 200, 300, 400)]
    assert "unclosed" in answer.usable[0].reason


def test_every_reader_names_its_source():
    assert len({r.name for r in REGISTRY}) == len(REGISTRY)
    assert all(r.source and r.models and r.convention for r in REGISTRY)


# --- Cost -------------------------------------------------------------------------------------

#: One answer unit per syntax (and unclosed tags): the text is the unit repeated.
UNITS = {
    "json": '{"bbox_2d": [10, 20, 30, 40], "label": "car"}, ',
    "json_list": "[10, 20, 30, 40], ",
    "qwen2vl": "<|object_ref_start|>car<|object_ref_end|><|box_start|>(10,20),(30,40)<|box_end|>",
    "ref_box": "<ref>car</ref><box>(10,20),(30,40)</box> ",
    "deepseek": "<|ref|>car<|/ref|><|det|>[[10, 20, 30, 40]]<|/det|> ",
    "geochat": "<p>car</p> {<10><20><30><40>|<30>} ",
    "florence": "car<loc_10><loc_20><loc_30><loc_40>",
    "paligemma": "<loc0010><loc0020><loc0030><loc0040> car ; ",
    "kosmos2": "<phrase> a car</phrase><object><patch_index_0044><patch_index_0863></object> ",
    "unclosed_kosmos2": "<phrase> a car<object><patch_index_0044>",
    "molmo": '<point x="10" y="20" alt="car">car</point> ',
    "molmo2": '<points coords="1 1 100 200 2 300 400">car</points> ',
    "cogvlm": "car[[100,200,300,400]] ",
    "earthdial": "[[10, 20, 30, 40, 5]] ",
    "skysense": "<rbox>({<10.00><20.00><5.00><3.00>|<30>})</rbox> ",
    "glm": "<|begin_of_box|>[100,200,300,400]<|end_of_box|> ",
    "shikra": "car[0.100,0.200,0.300,0.400] ",
    "falcon": "harbor <box><855><297><891><355></box> <99><199><299><399> ",
    "wkt": "POINT (1 2) ",
    "prose": "the image is [1920, 1080] and values in [0, 1] ",
    "unclosed_box_start": "<|box_start|>x 12 ",
    "unclosed_box": "<box>x 12 ",
    "unclosed_ref": "<ref>x 12 ",
    "unclosed_det_ref": "<|ref|>x 12 ",
    "unclosed_point": "<point x 12 ",
    "unclosed_points": '<points coords="x 12 ',
    "unclosed_begin_of_box": "<|begin_of_box|>x 12 ",
    "unclosed_json": "[[1, 2 x ",
    # objects never closed, so nested ever deeper: the truncation repair kept a string of the
    # open brackets per cut (1 MB: 9 s, 411 MB)
    "unclosed_objects": '{"bbox_2d": [1, 2, 3, 4], "label": "a", ',
    "unclosed_bins": "<12><34>x ",
}

_COST_SCRIPT = """
import gc, json, resource, sys, time
from iou_evaluation.core.text.model_text import parse_answer
units = json.loads(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = {}
for name, unit in units.items():
    row = {}
    for n in (100_000, 1_000_000):
        text = (unit * (n // len(unit) + 1))[:n]
        t = time.process_time()
        answer = parse_answer(text, "auto", 1000, 1000)
        row[n] = time.process_time() - t
    row["records"] = len(answer.records)
    row["span_chars"] = sum(len(r.span) for r in answer.records)
    del answer, text
    gc.collect()
    # the process's peak resident memory above its start, after every shape so far
    row["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    out[name] = row
print(json.dumps(out))
"""


def test_time_and_memory_stay_linear_from_100_kb_to_1_mb_for_each_syntax():
    # CPU time of 10× the text within 30× (quadratic would be 100×; unclosed tags were 16×
    # for 4×), memory and output bounded: the process's peak resident memory at most 200 MB
    # above its start (a 500 KB JSON list needed 5.3 GB), the spans kept at most twice the
    # text. Ratios and bounds, not wall-clock limits (a loaded machine).
    import json

    done = subprocess.run([sys.executable, "-c", plugin_script(_COST_SCRIPT), json.dumps(UNITS)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for name, row in result.items():
        small, large = max(row["100000"], 1e-3), row["1000000"]
        assert large / small < 30, (name, row)
        assert row["peak"] < 200e6, (name, row)
        assert row["span_chars"] <= 2 * 1_000_000, (name, row)


def test_an_unclosed_tag_does_not_swallow_the_syntaxes_after_it():
    # its body is the numbers that follow it; the DeepSeek-VL2 box after the prose is read
    answer = parse_answer("<box>oops <|ref|>car<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>", "auto",
                          999, 999)
    assert boxes(answer) == [(1, 2, 3, 4)] and answer.usable[0].label == "car"
    assert "unclosed <box>" in answer.failures[0].reason
