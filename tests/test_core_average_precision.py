"""COCO-style average precision: the COCO reference run, cases scored by hand, and agreement
with a transcription of pycocotools' COCOeval on random boxes."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from iou_evaluation.core.matching.average_precision import average_precision
from iou_evaluation.core.matching.labels import ancestors_from_taxonomy

box = shapely.box
COCO_DATA = Path(__file__).resolve().parent / "data" / "coco_val2014_100"
SUMMARY_KEYS = (
    "ap", "ap50", "ap75", "ap_small", "ap_medium", "ap_large",
    "ar_1", "ar_10", "ar", "ar_small", "ar_medium", "ar_large",
)
#: pycocotools 2.0.11 bbox summary (COCOeval.stats) on the 100-image subset, in COCO's order,
#: from coco_val2014_100/REFERENCE_VALUES.md.
COCO_BBOX_STATS = (
    0.5045806987249628, 0.6969727247299577, 0.5729816669904824, 0.5856257209410443,
    0.5193996948036719, 0.5013978986347466, 0.38681277964578054, 0.5936795762842003,
    0.595352982877607, 0.6398109626113442, 0.5664205978994309, 0.5642905982905982,
)


def xywh_boxes(bboxes):
    b = np.asarray(bboxes, dtype=float).reshape(-1, 4)
    return shapely.box(b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3])


def scored(*pairs):
    """(geometry, score) pairs -> object array of geometries, float array of scores."""
    geoms = np.empty(len(pairs), dtype=object)
    geoms[:] = [g for g, _ in pairs]
    return geoms, np.array([s for _, s in pairs], dtype=float)


# --- the COCO reference run -----------------------------------------------------------------


def test_reproduces_cocoeval_bbox_summary_on_the_coco_subset():
    gt = json.loads((COCO_DATA / "instances_val2014_100.json").read_text())
    dt = json.loads((COCO_DATA / "instances_val2014_fakebbox100_results.json").read_text())
    anns = gt["annotations"]
    result = average_precision(
        xywh_boxes([d["bbox"] for d in dt]),
        [d["score"] for d in dt],
        xywh_boxes([a["bbox"] for a in anns]),
        predicted_class=[d["category_id"] for d in dt],
        reference_class=[a["category_id"] for a in anns],
        predicted_group=[d["image_id"] for d in dt],
        reference_group=[a["image_id"] for a in anns],
        reference_ignore=[a["iscrowd"] for a in anns],
        reference_area=[a["area"] for a in anns],
    )
    # The requirement is 1e-4; the evaluation is COCO's to rounding, so pin it tighter.
    assert [result[k] for k in SUMMARY_KEYS] == pytest.approx(COCO_BBOX_STATS, abs=1e-12)
    # COCOeval counts a category only where it has non-crowd ground truth.
    with_reference = [c for c in result["per_class"].values() if c["count_reference"] > 0]
    assert result["ap"] == pytest.approx(np.mean([c["ap"] for c in with_reference]))
    assert result["count_reference"] == len(anns) - sum(a["iscrowd"] for a in anns)


# --- scored by hand -------------------------------------------------------------------------

# Two references 10 x 10; three detections: an exact hit (0.9), a miss (0.8), and a box
# shifted by 2 on the second reference (0.7): IoU 80/120 = 2/3, a TP at 0.50-0.65 only.
A, B = box(0, 0, 10, 10), box(100, 0, 110, 10)
HIT, MISS, SHIFTED = box(0, 0, 10, 10), box(50, 50, 60, 60), box(102, 0, 112, 10)
# TP, FP, TP: precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1; its envelope 1, 2/3, 2/3.
# 51 recall levels (0 .. 0.50) read 1, the other 50 read 2/3: AP = (51 + 50 * 2/3) / 101.
AP_TP_FP_TP = 253 / 303
# TP, FP, FP: levels 0 .. 0.50 read 1, recall never passes 1/2: AP = 51 / 101.
AP_TP_FP_FP = 51 / 101


def test_three_detections_on_two_references_by_hand():
    predicted, scores = scored((HIT, 0.9), (MISS, 0.8), (SHIFTED, 0.7))
    result = average_precision(predicted, scores, [A, B])
    assert result["ap50"] == pytest.approx(AP_TP_FP_TP)
    assert result["ap75"] == pytest.approx(AP_TP_FP_FP)
    # 4 thresholds (0.50-0.65) see TP, FP, TP; 6 see TP, FP, FP.
    assert result["ap"] == pytest.approx((4 * AP_TP_FP_TP + 6 * AP_TP_FP_FP) / 10)
    assert result["ar"] == pytest.approx((4 * 1.0 + 6 * 0.5) / 10)
    assert result["ar_10"] == pytest.approx(0.7)
    assert result["ar_1"] == pytest.approx(0.5)  # only the 0.9 detection is kept
    # all areas are 100 <= 32²: everything is "small", nothing is medium or large
    assert result["ap_small"] == pytest.approx(result["ap"])
    assert result["ar_small"] == pytest.approx(0.7)
    assert math.isnan(result["ap_medium"]) and math.isnan(result["ar_large"])
    assert result["per_class"] == {}


def test_precision_recall_curves_by_hand():
    predicted, scores = scored((HIT, 0.9), (MISS, 0.8), (SHIFTED, 0.7))
    result = average_precision(predicted, scores, [A, B])
    curve_50, curve = result["pr_curve_50"], result["pr_curve"]
    assert len(curve_50) == len(curve) == 101
    assert [p["recall"] for p in curve_50] == pytest.approx([k / 100 for k in range(101)])
    assert [p["precision"] for p in curve_50] == pytest.approx([1.0] * 51 + [2 / 3] * 50)
    # averaged over thresholds: above recall 1/2 only 4 of 10 thresholds read 2/3
    assert [p["precision"] for p in curve] == pytest.approx([1.0] * 51 + [4 / 15] * 50)


def test_equal_scores_keep_input_order_and_nan_scores_rank_last():
    # TP (0.5), FP (0.1), then the NaN-scored exact hit: TP, FP, TP at every threshold.
    predicted, scores = scored((B, math.nan), (MISS, 0.1), (A, 0.5))
    result = average_precision(predicted, scores, [A, B])
    assert result["ap"] == pytest.approx(AP_TP_FP_TP)
    assert result["count_predicted_nan_score"] == 1
    # equal scores: the first in input order ranks first (FP, TP, TP -> envelope 2/3 ...)
    predicted, scores = scored((MISS, 0.5), (A, 0.5), (B, 0.5))
    assert average_precision(predicted, scores, [A, B])["ap"] == pytest.approx(2 / 3)


def test_an_ignore_region_absorbs_detections_and_is_never_a_false_negative():
    crowd = box(20, 0, 60, 40)
    inside = box(30, 10, 40, 20)  # IoU with the region 100/1600, but |p ∩ r| / |p| = 1
    predicted, scores = scored((inside, 0.95), (inside, 0.9), (A, 0.8))
    result = average_precision(predicted, scores, [A, crowd], reference_ignore=[False, True])
    # The two detections in the region are neither TP nor FP; the region is not a FN.
    assert result["ap"] == pytest.approx(1.0)
    assert result["ar"] == pytest.approx(1.0)
    assert (result["count_reference"], result["count_reference_ignored"]) == (1, 1)
    # as a plain reference the region makes them FP, FP, TP with 1 of 2 references found
    plain = average_precision(predicted, scores, [A, crowd])
    assert plain["ap50"] == pytest.approx(51 / 101 * 1 / 3)


def test_a_reference_is_preferred_to_an_ignore_region_of_higher_iou():
    reference, region = box(0, 0, 10, 10), box(0, 0, 10, 20)
    # IoU 80/100 = 0.8 with the reference, |p ∩ r| / |p| = 1 with the region
    predicted, scores = scored((box(0, 0, 10, 8), 0.9))
    result = average_precision(
        predicted, scores, [reference, region], reference_ignore=[0, 1]
    )
    # TP at the 7 thresholds 0.50-0.80; at 0.85-0.95 it falls to the region: ignored, and
    # the reference is missed.
    assert result["ap50"] == result["ap75"] == pytest.approx(1.0)
    assert result["ap"] == pytest.approx(0.7)
    assert result["ar"] == pytest.approx(0.7)


def test_an_iou_tie_goes_to_the_later_reference_as_in_cocoeval():
    first, second = box(0, 0, 10, 10), box(4, 0, 14, 10)
    # between them: IoU 80/120 with each; then an exact hit on the first (IoU 60/140 with
    # the second, too low for it)
    predicted, scores = scored((box(2, 0, 12, 10), 0.9), (first, 0.8))
    result = average_precision(predicted, scores, [first, second])
    # the tie goes to `second`, leaving `first` to the exact hit: TP, TP at 0.50-0.65
    assert result["ap50"] == 1.0
    # from 0.70 the tied detection is a FP: FP, TP, precision 1/2 up to recall 1/2
    assert result["ap75"] == pytest.approx(51 / 101 / 2)


def test_no_predictions_give_zero_and_no_references_give_nan():
    nothing = average_precision([], [], [A, B])
    assert (nothing["ap"], nothing["ap50"], nothing["ar"], nothing["ar_1"]) == (0.0,) * 4
    assert [p["precision"] for p in nothing["pr_curve_50"]] == [0.0] * 101
    predicted, scores = scored((A, 0.9))
    for result in (
        average_precision(predicted, scores, []),
        average_precision([], [], []),
        # only ignore regions: nothing can be found, nothing is missed
        average_precision(predicted, scores, [A], reference_ignore=[True]),
    ):
        assert all(math.isnan(result[k]) for k in SUMMARY_KEYS)
        assert all(math.isnan(p["precision"]) for p in result["pr_curve"])
        assert result["count_reference"] == 0


def test_ap_is_the_mean_over_classes_that_have_references():
    predicted, scores = scored((A, 0.9), (MISS, 0.8))
    result = average_precision(
        predicted, scores, [A, B],
        predicted_class=["a", "c"], reference_class=["a", "b"],
    )
    per_class = result["per_class"]
    assert per_class["a"]["ap"] == 1.0 and per_class["b"]["ap"] == 0.0
    assert math.isnan(per_class["c"]["ap"])  # a class without references: undefined
    assert [per_class[k]["count_reference"] for k in "abc"] == [1, 1, 0]
    assert [per_class[k]["count_predicted"] for k in "abc"] == [1, 0, 1]
    assert result["ap"] == pytest.approx(0.5)
    assert result["count_class_with_reference"] == 2


def test_class_names_compare_case_insensitively():
    predicted, scores = scored((A, 0.9))
    result = average_precision(
        predicted, scores, [A], predicted_class=["BUILDING"], reference_class=["Building"]
    )
    assert result["ap"] == 1.0
    assert list(result["per_class"]) == ["BUILDING"]  # first spelling seen


def test_a_child_class_prediction_matches_a_parent_class_reference():
    taxonomy = ancestors_from_taxonomy({"Chapel": "church", "church": "Building"})
    predicted, scores = scored((A, 0.9))
    for child in ("church", "chapel"):
        result = average_precision(
            predicted, scores, [A], predicted_class=[child], reference_class=["building"],
            class_ancestors=taxonomy,
        )
        assert result["ap"] == 1.0
        assert math.isnan(result["per_class"][child]["ap"])
    without = average_precision(
        predicted, scores, [A], predicted_class=["church"], reference_class=["building"]
    )
    assert without["ap"] == 0.0


def test_a_parent_class_prediction_does_not_match_a_child_class_reference():
    predicted, scores = scored((A, 0.9))
    result = average_precision(
        predicted, scores, [A], predicted_class=["building"], reference_class=["church"],
        class_ancestors={"church": {"building"}},
    )
    assert result["ap"] == 0.0


def test_a_child_prediction_matched_to_a_parent_reference_is_not_a_false_positive_of_the_child():
    # building at A, church at B; church predictions on both: each is a TP of the class it
    # matched, so both classes score 1 (not church AP 1/2 with the A prediction as its FP).
    predicted, scores = scored((A, 0.9), (B, 0.8))
    result = average_precision(
        predicted, scores, [A, B],
        predicted_class=["church", "church"], reference_class=["building", "church"],
        class_ancestors={"church": ["building"]},
    )
    assert result["per_class"]["building"]["ap"] == 1.0
    assert result["per_class"]["church"]["ap"] == 1.0
    assert result["ap"] == 1.0


def test_identical_boxes_in_different_groups_never_match():
    predicted, scores = scored((A, 0.9))
    other = average_precision(
        predicted, scores, [A], predicted_group=["img2"], reference_group=["img1"]
    )
    same = average_precision(
        predicted, scores, [A], predicted_group=["img1"], reference_group=["img1"]
    )
    assert (other["ap"], other["ar"]) == (0.0, 0.0)
    assert same["ap"] == 1.0
    # the same box in three images, each matched in its own image only
    predicted, scores = scored((A, 0.9), (A, 0.8), (A, 0.7))
    result = average_precision(
        predicted, scores, [A, A, A], predicted_group=[3, 1, 2], reference_group=[1, 2, 3]
    )
    assert result["ap"] == 1.0


def test_max_detections_applies_per_group_and_class():
    references = [box(20 * k, 0, 20 * k + 10, 10) for k in range(3)]
    predicted, scores = scored(*zip(references, (0.9, 0.8, 0.7)))
    result = average_precision(predicted, scores, references, max_detections=2)
    # precision 1 up to recall 2/3: recall levels 0 .. 0.66 (67 of 101)
    assert result["ap"] == pytest.approx(67 / 101)
    assert result["ar"] == pytest.approx(2 / 3)
    assert result["ar_1"] == pytest.approx(1 / 3)
    assert result["count_predicted_beyond_max_detections"] == 1
    assert average_precision(predicted, scores, references, max_detections=None)["ap"] == 1.0
    # one detection per group: nothing is cut
    grouped = average_precision(
        predicted, scores, references, predicted_group=[0, 1, 2], reference_group=[0, 1, 2],
        max_detections=1,
    )
    assert grouped["ap"] == 1.0


def test_area_ranges_use_the_given_reference_area():
    predicted, scores = scored((A, 0.9))
    result = average_precision(
        predicted, scores, [A], reference_area=[5000.0], area_ranges={"field": (4000, 6000)}
    )
    # the reference counts as a "field" by its given area; the detection (area 100) is
    # matched to it, so it is not ignored for being outside the range
    assert result["ap_field"] == 1.0
    assert "ap_small" not in result


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"scores": [0.5, 0.6]}, "scores"),
        ({"predicted_class": ["a"]}, "given together"),
        ({"predicted_group": ["a"], "reference_group": ["a", "b"]}, "reference_group"),
        ({"max_detections": 0}, "max_detections"),
        ({"area_ranges": {"small": (10, 1)}}, "area_ranges"),
        ({"area_ranges": {"all": (0, 1)}}, "area_ranges"),
        ({"class_ancestors": {"church": "building"}}, "class_ancestors"),
        ({"reference_ignore": [True, False]}, "reference_ignore"),
    ],
)
def test_programmer_errors_raise_value_error_naming_the_parameter(kwargs, message):
    arguments = {"predicted": [A], "scores": [0.5], "reference": [A], **kwargs}
    with pytest.raises(ValueError, match=message):
        average_precision(
            arguments.pop("predicted"), arguments.pop("scores"), arguments.pop("reference"),
            **arguments,
        )


def test_a_taxonomy_with_a_cycle_is_rejected():
    with pytest.raises(ValueError, match="cycle"):
        ancestors_from_taxonomy({"a": "b", "b": "a"})


def test_null_geometries_and_null_labels_do_not_crash():
    predicted, scores = scored((None, 0.9), (A, None), (shapely.Polygon(), 0.5))
    result = average_precision(
        predicted, scores, [A, None], predicted_class=["x", None, "x"],
        reference_class=[None, "x"],
    )
    # the null-class prediction matches the null-class reference; it is NaN-scored. The
    # missing class is spelled "" as in evaluate's per_class (labels.MISSING).
    assert result["per_class"][""]["ap"] == 1.0
    assert result["per_class"]["x"]["ap"] == 0.0
    assert result["count_predicted_nan_score"] == 1


# --- agreement with COCOeval on random boxes ------------------------------------------------


def _cocoeval_stats(gts, dts, max_dets):
    """The 12 COCOeval bbox stats; a transcription of pycocotools' evaluateImg, accumulate
    and summarize. gts: (image, category, [x, y, w, h], iscrowd); dts: (image, category,
    [x, y, w, h], score). -1 where COCO writes -1."""
    iou_thrs = np.linspace(0.5, 0.95, 10)
    rec_thrs = np.linspace(0.0, 1.0, 101)
    area_rngs = [(0, 1e10), (0, 32**2), (32**2, 96**2), (96**2, 1e10)]
    max_dets = [1, 10, max_dets]
    images = sorted({g[0] for g in gts} | {d[0] for d in dts})
    cats = sorted({g[1] for g in gts} | {d[1] for d in dts})

    def iou(d, g, crowd):
        iw = min(d[0] + d[2], g[0] + g[2]) - max(d[0], g[0])
        ih = min(d[1] + d[3], g[1] + g[3]) - max(d[1], g[1])
        if iw <= 0 or ih <= 0:
            return 0.0
        return iw * ih / (d[2] * d[3] if crowd else d[2] * d[3] + g[2] * g[3] - iw * ih)

    def evaluate_img(img, cat, rng):
        gt = [g for g in gts if g[:2] == (img, cat)]
        dt = [d for d in dts if d[:2] == (img, cat)]
        if not gt and not dt:
            return None
        g_ig = [int(g[3] or g[2][2] * g[2][3] < rng[0] or g[2][2] * g[2][3] > rng[1]) for g in gt]
        gt = [gt[i] for i in np.argsort(g_ig, kind="mergesort")]
        g_ig = sorted(g_ig)
        dt = [dt[i] for i in np.argsort([-d[3] for d in dt], kind="mergesort")][: max_dets[-1]]
        dtm = np.zeros((10, len(dt)))
        dt_ig = np.zeros((10, len(dt)))
        for t, thr in enumerate(iou_thrs):
            gtm = np.zeros(len(gt))
            for di, d in enumerate(dt):
                best, m = min(thr, 1 - 1e-10), -1
                for gi, g in enumerate(gt):
                    if gtm[gi] and not g[3]:
                        continue
                    if m > -1 and g_ig[m] == 0 and g_ig[gi] == 1:
                        break
                    value = iou(d[2], g[2], g[3])
                    if value < best:
                        continue
                    best, m = value, gi
                if m > -1:
                    dt_ig[t, di], dtm[t, di], gtm[m] = g_ig[m], 1, 1
        outside = np.array([not rng[0] <= d[2][2] * d[2][3] <= rng[1] for d in dt], dtype=bool)
        dt_ig = np.logical_or(dt_ig, (dtm == 0) & outside)
        return [d[3] for d in dt], dtm, dt_ig, np.array(g_ig)

    precision = -np.ones((10, 101, len(cats), 4, 3))
    recall = -np.ones((10, len(cats), 4, 3))
    for k, cat in enumerate(cats):
        for a, rng in enumerate(area_rngs):
            evals = [e for e in (evaluate_img(i, cat, rng) for i in images) if e is not None]
            for m, md in enumerate(max_dets):
                if not evals:
                    continue
                scores = np.concatenate([e[0][:md] for e in evals])
                order = np.argsort(-scores, kind="mergesort")
                dtm = np.concatenate([e[1][:, :md] for e in evals], axis=1)[:, order]
                dt_ig = np.concatenate([e[2][:, :md] for e in evals], axis=1)[:, order]
                npig = np.count_nonzero(np.concatenate([e[3] for e in evals]) == 0)
                if npig == 0:
                    continue
                tp_sum = np.cumsum(np.logical_and(dtm, ~dt_ig), axis=1).astype(float)
                fp_sum = np.cumsum(np.logical_and(dtm == 0, ~dt_ig), axis=1).astype(float)
                for t in range(10):
                    tp, fp = tp_sum[t], fp_sum[t]
                    rc = tp / npig
                    pr = list(tp / (fp + tp + np.spacing(1)))
                    recall[t, k, a, m] = rc[-1] if len(tp) else 0
                    for i in range(len(tp) - 1, 0, -1):
                        pr[i - 1] = max(pr[i - 1], pr[i])
                    q = np.zeros(101)
                    for ri, pi in enumerate(np.searchsorted(rc, rec_thrs, side="left")):
                        if pi >= len(pr):
                            break
                        q[ri] = pr[pi]
                    precision[t, :, k, a, m] = q

    def mean(s):
        return float(np.mean(s[s > -1])) if np.any(s > -1) else -1.0

    p, r = precision, recall
    return [
        mean(p[..., 0, 2]), mean(p[0, ..., 0, 2]), mean(p[5, ..., 0, 2]),
        mean(p[..., 1, 2]), mean(p[..., 2, 2]), mean(p[..., 3, 2]),
        mean(r[..., 0, 0]), mean(r[..., 0, 1]), mean(r[..., 0, 2]),
        mean(r[..., 1, 2]), mean(r[..., 2, 2]), mean(r[..., 3, 2]),
    ]


@st.composite
def scenes(draw):
    """Integer boxes in a few images and categories (exact IoUs, many ties), crowd regions,
    detections near references or anywhere, scores from a coarse set (many equal)."""
    coordinate, size = st.integers(0, 60), st.integers(1, 120)
    image, category = st.integers(1, 3), st.integers(1, 2)
    crowd = st.sampled_from([0, 0, 0, 1])
    gts = draw(st.lists(
        st.tuples(image, category, st.tuples(coordinate, coordinate, size, size), crowd),
        max_size=12,
    ))
    gts = [(i, c, list(xywh), iscrowd) for i, c, xywh, iscrowd in gts]
    dts = []
    for _ in range(draw(st.integers(0, 24))):
        if gts and draw(st.booleans()):
            i, c, (x, y, w, h), _ = draw(st.sampled_from(gts))
            jitter = st.integers(-4, 4)
            bbox = [x + draw(jitter), y + draw(jitter), max(1, w + draw(jitter)),
                    max(1, h + draw(jitter))]
            c = draw(st.sampled_from([c, c, c, 3 - c]))
        else:
            i, c = draw(image), draw(category)
            bbox = [draw(coordinate), draw(coordinate), draw(size), draw(size)]
        dts.append((i, c, bbox, draw(st.sampled_from([0.2, 0.4, 0.6, 0.8]))))
    return gts, dts, draw(st.sampled_from([10, 12, 100]))


@settings(max_examples=150, deadline=None)
@given(scenes())
def test_agrees_with_a_transcription_of_cocoeval_on_random_boxes(scene):
    gts, dts, max_dets = scene
    expected = _cocoeval_stats(gts, dts, max_dets)
    result = average_precision(
        xywh_boxes([d[2] for d in dts]), [d[3] for d in dts], xywh_boxes([g[2] for g in gts]),
        predicted_class=[d[1] for d in dts], reference_class=[g[1] for g in gts],
        predicted_group=[d[0] for d in dts], reference_group=[g[0] for g in gts],
        reference_ignore=[g[3] for g in gts], max_detections=max_dets,
    )
    got = [-1.0 if math.isnan(result[k]) else result[k] for k in SUMMARY_KEYS]
    assert got == pytest.approx(expected, abs=1e-12)
