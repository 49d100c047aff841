"""Model answers as users, model cards and tutorials printed them (issue 25, second round):
each defect found by feeding real answers through ``parse_answer``, with the answer string
quoted with its source and the coordinates worked out by hand from the documented
convention."""

from iou_evaluation.core.text.model_text import parse_answer
from iou_evaluation.core.text.spatial_match import spatial_match


def boxes(answer):
    return [tuple(round(v, 6) for v in r.geometry.bounds) for r in answer.usable]


# --- Labels in a list parallel to the geometries ----------------------------------------------

def test_florence2_post_processed_od_keeps_each_label():
    # Florence-2's post_process_generation for <OD> on the model card's car.jpg (640 × 480), as
    # a Florence-2 tutorial printed it (format per the microsoft/Florence-2-large model card:
    # "{'<OD>': {'bboxes': [[x1, y1, x2, y2], ...], 'labels': ['label1', 'label2', ...]} }");
    # pixel coordinates of the image, so each box is its four numbers as written
    text = ("{'<OD>': {'bboxes': [[34.23999786376953, 160.0800018310547, 597.4400024414062, "
            "371.7599792480469], [272.32000732421875, 242.1599884033203, 303.67999267578125, "
            "246.95999145507812], [454.0799865722656, 276.7200012207031, 553.9199829101562, "
            "370.79998779296875], [96.31999969482422, 280.55999755859375, 198.0800018310547, "
            "371.2799987792969]], 'labels': ['car', 'door handle', 'wheel', 'wheel']}}")
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert [r.label for r in answer.usable] == ["car", "door handle", "wheel", "wheel"]
    assert answer.usable[0].geometry.bounds == (34.23999786376953, 160.0800018310547,
                                                 597.4400024414062, 371.7599792480469)
    assert answer.usable[3].geometry.bounds == (96.31999969482422, 280.55999755859375,
                                                 198.0800018310547, 371.2799987792969)


def test_florence2_open_vocabulary_and_grounding_labels():
    # IDEA-Research Grounded-SAM-2, grounded_sam2_florence2_image_demo.py ("Florence-2
    # Open-Vocabulary Detection Output Format"): the label list is "bboxes_labels"
    text = ("{'<OPEN_VOCABULARY_DETECTION>': {'bboxes': [[34.23999786376953, 159.1199951171875, "
            "582.0800170898438, 374.6399841308594]], 'bboxes_labels': ['A green car'], "
            "'polygons': [], 'polygons_labels': []}}")
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert [r.label for r in answer.usable] == ["A green car"]
    assert boxes(answer) == [(34.239998, 159.119995, 582.080017, 374.639984)]
    # <CAPTION_TO_PHRASE_GROUNDING>, from the same tutorial's printout: one phrase per box
    text = ("{'<CAPTION_TO_PHRASE_GROUNDING>': {'bboxes': [[34.880001068115234, "
            "158.63999938964844, 583.3599853515625, 374.6399841308594], [0.3199999928474426, "
            "4.079999923706055, 639.0399780273438, 305.03997802734375]], 'labels': ['A green "
            "car', 'a yellow building']}}")
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert [r.label for r in answer.usable] == ["A green car", "a yellow building"]


def test_florence2_region_proposal_empty_labels_are_no_labels_not_the_task_token():
    # <REGION_PROPOSAL> writes empty labels (model card: "'labels': ['', '', ...]"); the task
    # token "<REGION_PROPOSAL>" is the answer's wrapper, not an object's label
    text = "{'<REGION_PROPOSAL>': {'bboxes': [[10.0, 20.0, 30.0, 40.0]], 'labels': ['']}}"
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert boxes(answer) == [(10, 20, 30, 40)]
    assert answer.usable[0].label is None


def test_florence2_ocr_with_region_quad_boxes_are_quadrilaterals_with_their_text():
    # <OCR_WITH_REGION> (model card format: {'quad_boxes': [[x1, y1, x2, y2, x3, y3, x4, y4],
    # ...], 'labels': ['text1', ...]}): the four corners in pixels, clockwise from top-left
    text = ("{'<OCR_WITH_REGION>': {'quad_boxes': [[167.0, 50.25, 375.0, 50.25, 375.0, 114.25, "
            "167.0, 114.25]], 'labels': ['CUDA']}}")
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    (record,) = answer.usable
    assert record.label == "CUDA" and record.kind == "polygon"
    assert record.geometry.area == (375.0 - 167.0) * (114.25 - 50.25)


def test_grounding_dino_boxes_with_phrases():
    # Grounding DINO's callers return boxes with a parallel list of phrases (groundingdino
    # util/inference.py predict: boxes, logits, phrases), an agent passing them on as JSON
    text = ('{"boxes": [[100, 200, 300, 400], [10, 20, 30, 40]], "phrases": ["car", "dog"], '
            '"logits": [0.5, 0.4]}')
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert [(r.label, tuple(r.geometry.bounds)) for r in answer.usable] == [
        ("car", (100, 200, 300, 400)), ("dog", (10, 20, 30, 40))]


# --- JSON slips: comments, Python literals -----------------------------------------------------

def test_json_with_line_and_block_comments_is_read_and_repaired():
    # GPT-4o-style answers annotate their JSON ("// the red car"); a comment inside an
    # object made the whole object unreadable, and its box was then dropped as prose numbers
    text = '```json\n{\n  "bbox_2d": [100, 200, 300, 400], // the red car\n  "label": "car"\n}\n```'
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert boxes(answer) == [(100, 200, 300, 400)]
    assert answer.usable[0].label == "car"
    assert answer.usable[0].status == "repaired" and "comments" in answer.usable[0].reason
    text = '[{"bbox_2d": [100, 200, 300, 400], "label": "car" /* main */}]'
    answer = parse_answer(text, "pixel_xyxy", 640, 480)
    assert boxes(answer) == [(100, 200, 300, 400)] and answer.usable[0].status == "repaired"


def test_python_repr_nan_is_read_and_words_inside_labels_are_kept():
    # str() of a Python dict writes nan for a missing score; the box is still there
    answer = parse_answer("{'label': 'car', 'bbox_2d': [100, 200, 300, 400], 'score': nan}",
                          "pixel_xyxy", 640, 480)
    assert boxes(answer) == [(100, 200, 300, 400)] and answer.usable[0].status == "repaired"
    # Python's True / None are JSON's true / null outside strings only: a label is as written
    # (it was "true north arrow")
    answer = parse_answer("[{'bbox_2d': [100, 200, 300, 400], 'label': 'True north arrow', "
                          "'occluded': None}]", "pixel_xyxy", 640, 480)
    assert [r.label for r in answer.usable] == ["True north arrow"]


# --- A geometry present, the answer marked failed -------------------------------------------

def test_qwen2_vl_box_tag_around_one_pair_is_a_point():
    # ms-swift's custom dataset docs, as quoted in modelscope/ms-swift issue 3511: a Qwen2-VL
    # GUI answer "Action: click(start_box='<|box_start|>(246,113)<|box_end|>')" (0–1000):
    # on a 2000 × 1000 screenshot the click is at (246 · 2, 113 · 1) = (492, 113)
    answer = parse_answer("Action: click(start_box='<|box_start|>(246,113)<|box_end|>')",
                          "auto", 2000, 1000)
    (record,) = answer.usable
    assert record.kind == "point" and tuple(record.geometry.coords[0]) == (492, 113)
    assert record.status == "parsed"
    # cut off after one pair, it may be a box cut short: still a failure with its reason
    answer = parse_answer("<|box_start|>(764,25)", "auto", 1000, 1000)
    assert answer.usable == [] and "unclosed" in answer.reason


def test_json_nested_past_the_recursion_limit_is_a_counted_failure():
    # 10^5 brackets deep (adversarial): no RecursionError escapes, and the answer says why it
    # failed rather than "no geometry found in the text"
    answer = parse_answer("[" * 100000 + "]" * 100000, "auto", 100, 100)
    assert answer.status == "unparseable" and "nested too deeply" in answer.reason
    # a readable box beside it is still read
    text = "Here: " + "[" * 5000 + "1" + "]" * 5000 + ' and {"bbox_2d": [1, 2, 3, 4]}'
    answer = parse_answer(text, "pixel_xyxy", 100, 100)
    assert boxes(answer) == [(1, 2, 3, 4)]
    assert [r.status for r in answer.failures] == ["unparseable"]


# --- Formats not read -------------------------------------------------------------------------

def test_kosmos2_patch_index_boxes():
    # transformers' Kosmos-2 docs (processing_kosmos2.py docstring): the raw generation
    text = ("<grounding> An image of<phrase> a snowman</phrase><object><patch_index_0044>"
            "<patch_index_0863></object> warming himself by<phrase> a fire</phrase><object>"
            "<patch_index_0005><patch_index_0911></object>.")
    # 44 = row 1 · 32 + column 12, 863 = 26 · 32 + 31: corners in different rows and columns,
    # so cell centres: x (12.5 / 32, 31.5 / 32), y (1.5 / 32, 26.5 / 32) -- the docs' entity
    # (0.390625, 0.046875, 0.984375, 0.828125); 5 = 0 · 32 + 5, 911 = 28 · 32 + 15: (0.171875,
    # 0.015625, 0.484375, 0.890625). On a 640 × 480 image: x · 640, y · 480
    answer = parse_answer(text, "auto", 640, 480)
    assert [r.label for r in answer.usable] == ["a snowman", "a fire"]
    assert boxes(answer) == [(250, 22.5, 630, 397.5), (110, 7.5, 310, 427.5)]
    assert {r.convention_source for r in answer.usable} == {"syntax"}


def test_kosmos2_boxes_of_one_phrase_and_corners_in_one_row():
    # two boxes of one phrase split by </delimiter_of_multi_objects/>; 0 and 31 share row 0:
    # cell edges, x 0 .. 32 / 32, y 0 .. 1 / 32; one cell (100 = 3 · 32 + 4) is that cell,
    # x 4 / 32 .. 5 / 32, y 3 / 32 .. 4 / 32. On a 320 × 320 image: · 320
    text = ("<phrase>two dogs</phrase><object><patch_index_0000><patch_index_0031>"
            "</delimiter_of_multi_objects/><patch_index_0100><patch_index_0100></object>")
    answer = parse_answer(text, "auto", 320, 320)
    assert boxes(answer) == [(0, 0, 320, 10), (40, 30, 50, 40)]
    assert [r.label for r in answer.usable] == ["two dogs", "two dogs"]


def test_geochat_boxes_chained_after_one_phrase_keep_its_label():
    # mbzuai-oryx/GeoChat geochat_demo.py, visualize_all_bbox_together: after "<p>obj</p>" a
    # run of boxes "{…}{…}" is split at "}{" and every box is an entity of obj
    text = "<p>small vehicles</p> {<17><50><20><56>|<-45>}{<25><48><28><54>|<-45>}"
    answer = parse_answer(text, "auto", 200, 100)
    assert [r.label for r in answer.usable] == ["small vehicles", "small vehicles"]
    # the second box: corners (25, 48), (28, 54) in percent of 200 × 100 -> (50, 48), (56,
    # 54): centre (53, 51), 6 × 6 pixels whatever the turn
    second = answer.usable[1].geometry
    assert (round(second.centroid.x, 9), round(second.centroid.y, 9)) == (53, 51)
    assert round(second.area, 9) == 36
    # a box after prose is not part of the chain
    answer = parse_answer("<p>car</p> {<10><20><30><40>|<0>}. Then {<5><6><7><8>|<0>}",
                          "auto", 100, 100)
    assert [r.label for r in answer.usable] == ["car", None]


# --- Wrong coordinates --------------------------------------------------------------------------

def test_a_unicode_minus_sign_is_a_minus_not_dropped():
    # a model (or a spreadsheet it went through) writes U+2212 MINUS SIGN: "(−10,20)" is x =
    # −10, outside the 0–1000 grid, out_of_bounds as written; it was read as (10, 20), parsed
    answer = parse_answer("<ref>car</ref><box>(\u221210,20),(30,40)</box>", "auto", 1000, 1000)
    (record,) = answer.records
    assert record.status == "out_of_bounds"
    assert record.geometry.bounds == (-10, 20, 30, 40)
    # in JSON the whole answer was unreadable; now read, repaired, and out of bounds
    answer = parse_answer('[{"bbox_2d": [\u221210, 20, 30, 40], "label": "x"}]', "pixel_xyxy",
                          100, 100)
    (record,) = answer.records
    assert record.status == "out_of_bounds" and record.geometry.bounds == (-10, 20, 30, 40)
    assert "minus" in record.reason
    # a minus sign inside a label is the label's
    answer = parse_answer('[{"bbox_2d": [10, 20, 30, 40], "label": "a\u2212b"}]', "pixel_xyxy",
                          100, 100)
    assert answer.usable[0].label == "a\u2212b"


# --- Gemini masks that are not PNGs -----------------------------------------------------------

#: google-gemini/cookbook issue 798: Gemini 2.5 answered the segmentation prompt of
#: quickstarts/Spatial_understanding.ipynb with seg tokens where a base64 PNG was asked for
SEG_TOKENS = ("<start_of_mask><seg_35><seg_65><seg_4><seg_66><seg_3><seg_94><seg_77><seg_34>"
              "<seg_42><seg_51><seg_27><seg_3><seg_73><seg_50><seg_42><seg_22>")


def test_gemini_unquoted_seg_token_mask_keeps_the_box_and_its_label():
    # as the issue shows it, unquoted ('"mask": <start_of_mask>…<seg_22>"'): the JSON is
    # broken from the mask on; the complete part before it holds the box and the label.
    # box_2d [y1, x1, y2, x2] / 1000 on a 1000 × 500 image: x 200..400, y 50..150
    text = ('```json\n[\n  {"box_2d": [100, 200, 300, 400], "label": "cat", "mask": '
            + SEG_TOKENS + '"}\n]\n```')
    answer = parse_answer(text, "auto", 1000, 500)
    (record,) = answer.usable
    assert record.geometry.bounds == (200, 50, 400, 150)
    assert record.label == "cat" and record.status == "repaired"


def test_a_truncated_object_is_cut_after_its_last_complete_label_not_inside_numbers():
    # a box cut short never becomes a point: '{"bbox_2d": [10, 20, 3' is no geometry, and the
    # x, y of a cut-off x, y, width, height object are not a point
    assert parse_answer('{"bbox_2d": [10, 20, 3', "auto", 100, 100).usable == []
    assert parse_answer('[{"x": 10, "y": 20, "label": "a", "wid', "auto", 100, 100).usable == []
    text = '[{"bbox_2d": [10, 20, 30, 40], "label": "a", "score": 0.9, "mask": "data:ima'
    (record,) = parse_answer(text, "pixel_xyxy", 100, 100).usable
    assert record.label == "a" and record.geometry.bounds == (10, 20, 30, 40)


def test_gemini_mask_that_is_not_a_png_is_said_not_dropped_silently():
    # the same answer with the mask quoted: valid JSON, the mask a string of seg tokens this
    # tool cannot decode: the box is kept, repaired, and the reason says so (it was "parsed")
    text = ('[{"box_2d": [100, 200, 300, 400], "label": "cat", "mask": "' + SEG_TOKENS
            + '"}]')
    (record,) = parse_answer(text, "auto", 1000, 500).usable
    assert record.geometry.bounds == (200, 50, 400, 150)
    assert record.status == "repaired" and "not a base64 PNG" in record.reason


# --- PaliGemma segment answers ------------------------------------------------------------------

#: big_vision's PaliGemma demo (huggingface.co/spaces/big-vision/paligemma, the parser's
#: EXAMPLE_STRING): boxes with 16 <seg> mask tokens, objects split by " ; "
PALIGEMMA_SEGMENT = (
    "<loc0000><loc0000><loc0930><loc1012> <seg114><seg074><seg106><seg044><seg030><seg027>"
    "<seg119><seg119><seg120><seg117><seg082><seg082><seg051><seg005><seg125><seg097> wall ; "
    "<loc0722><loc0047><loc0895><loc0378> <seg068><seg114><seg014><seg037><seg029><seg063>"
    "<seg048><seg104><seg010><seg056><seg021><seg056><seg019><seg017><seg102><seg121> car ; "
    "<loc0180><loc0596><loc0782><loc0961> <seg026><seg028><seg028><seg026><seg104><seg026>"
    "<seg029><seg022><seg000><seg068><seg092><seg125><seg003><seg127><seg121><seg043> "
    "david bowie")


def test_paligemma_mask_tokens_are_said_not_dropped_silently():
    # the <seg> tokens (a 64 × 64 mask through big_vision's VQ-VAE) are not decoded here: the
    # box is kept, repaired, and the reason says so (it was "parsed")
    text = "<loc0256><loc0256><loc0768><loc0768><seg063><seg012><seg099> cat"
    (record,) = parse_answer(text, "auto", 1024, 1024).usable
    assert record.geometry.bounds == (256, 256, 768, 768)
    assert record.status == "repaired" and "<seg>" in record.reason


def test_paligemma_segment_answer_as_big_vision_writes_it_keeps_its_labels():
    # a blank between the loc and the seg tokens cut the label off (it was None for all);
    # big_vision's parser: y1, x1, y2, x2 = loc / 1024, times the height and width. On a
    # 100 × 200 image: wall x 0 .. 1012 / 1024 · 100, y 0 .. 930 / 1024 · 200; car (722, 47,
    # 895, 378): x 47 / 1024 · 100 .. 378 / 1024 · 100, y 722 / 1024 · 200 .. 895 / 1024 · 200
    answer = parse_answer(PALIGEMMA_SEGMENT, "auto", 100, 200)
    assert [r.label for r in answer.usable] == ["wall", "car", "david bowie"]
    assert answer.usable[0].geometry.bounds == (0, 0, 1012 / 1024 * 100, 930 / 1024 * 200)
    assert answer.usable[1].geometry.bounds == (47 / 1024 * 100, 722 / 1024 * 200,
                                                378 / 1024 * 100, 895 / 1024 * 200)
    assert {r.status for r in answer.usable} == {"repaired"}  # the masks, not decoded


# --- Numbers in prose ---------------------------------------------------------------------------

def test_one_number_alone_on_its_line_is_no_failed_geometry():
    # a correct "nothing there" with a footnote or a score on its own line was unparseable
    # ("1 number [1.0]: neither a box …"), so spatialmatch failed a correct rejection
    for text in ("There are no airplanes in this image.\n[1]",
                 "There is no car in the image.\nConfidence:\n[0.95]"):
        assert parse_answer(text, "auto", 640, 480).status == "empty"
    result = spatial_match(["There are no airplanes in this image.\n[1]"], ["[]"])
    assert result.rows["passed"] == [True]
    assert result.metrics["count_true_negative"] == 1
    # a chosen format still reads it, and says why it is no geometry
    answer = parse_answer("[1]", "pixel_xyxy", 640, 480)
    assert answer.status == "unparseable" and "1 number" in answer.reason


def test_short_and_singular_nothing_there_answers_are_empty_not_unparseable():
    # Visual-RFT's detection prompt (as quoted in Liuziyu77/Visual-RFT issue 119): "If no
    # object belonging to the category ... return 'No Objects'", with the answer in <answer>
    # tags; "No airplane is visible" (one object, singular); a JSON null
    for text in ("<think> ... </think> <answer>No Objects</answer>", "No Objects",
                 "No airplane is visible in the image.", "null"):
        assert parse_answer(text, "auto", 640, 480).status == "empty", text
    result = spatial_match(["<answer>No Objects</answer>"], ["[]"])
    assert result.rows["passed"] == [True]
    # a refusal and prose that goes on are not "nothing there" (nor is "I cannot see any
    # coordinates to give", as tests/test_provider_model_text.py has it)
    for text in ("Sorry, I can't help with identifying that.", "Nothing here but a car",
                 "I cannot see any coordinates to give."):
        assert parse_answer(text, "auto", 640, 480).status == "unparseable", text


def test_auto_reason_on_a_1000_square_image_says_why():
    # values within 0–1000 on a 1000 × 1000 image: the reason said "above 1000"
    (record,) = parse_answer('{"point_2d": [256, 512]}', "auto", 1000, 1000).usable
    assert tuple(record.geometry.coords[0]) == (256, 512)
    assert "above 1000" not in record.reason and "agree" in record.reason


def test_a_class_number_as_label_is_kept():
    # {"label": 3} (a class index, as detection fine-tunes write it) was dropped: None; a
    # GeoJSON Feature's properties kept any type already
    (record,) = parse_answer('[{"bbox_2d": [120, 45, 380, 290], "label": 3}]', "pixel_xyxy",
                             640, 480).usable
    assert record.label == "3"
    (record,) = parse_answer('[{"bbox_2d": [120, 45, 380, 290], "label": true}]', "pixel_xyxy",
                             640, 480).usable
    assert record.label is None


def test_a_point_answered_for_an_expected_point_names_the_distance_not_a_missing_hit():
    # the Qwen2-VL click above against the expected click: point_hit is undefined (None), so
    # the reason pointed at an empty column; the distance is the score (0 pixels here: the
    # click (246, 113) on the 0–1000 grid of a 1000 × 1000 screen is (246, 113))
    result = spatial_match(["Action: click(start_box='<|box_start|>(246,113)<|box_end|>')"],
                           ['{"point_2d": [246, 113]}'], image_widths=[1000],
                           image_heights=[1000])
    assert result.rows["point_hit"] == [None]
    assert result.rows["point_distance"] == [0.0]
    assert "point_distance" in result.rows["reason"][0]
