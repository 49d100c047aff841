"""Spatial match of model answers against expected geometries, row by row (Galtea's rule:
the best IoU of any answered geometry against the expected one(s), pass at IoU >= 0.5), with
Dice, GIoU, centre hit and point hits, and the summary rates of a table of answers.

Decisions (each documented in the algorithm's help too):

- a row whose answer yields no geometry (empty, unparseable, non-finite) scores IoU 0 and
  fails; the parse-failure rate says how many of those could not be read;
- a row whose expected geometry cannot be read is not scored (it is a fault of the table,
  not of the model): it is kept with its reason and counted in ``count_expected_unreadable``;
- a row that expects nothing (an empty list, "none found") passes when the answer holds no
  geometry either (a correct rejection, IoU 1 by the "both agree there is nothing" rule) and
  fails with IoU 0 when it holds any;
- a row without an answer polygon has Dice 0 and GIoU -1 (``pair_metrics``' values for area
  on one side only);
- GIoU uses the smallest enclosing axis-aligned box (the detection definition); Dice and
  GIoU are those of the best pair (highest IoU, then highest GIoU);
- centre hit: the centroid of the best pair's expected geometry lies in its answer geometry;
- point answers: hit when a point lies in (or on) an expected polygon; distance from the
  nearest point to the nearest expected centroid, in the row's frame units (pixels, fractions
  of the image, or map units);
- an expected point (a pointing task) against answered polygons: IoU is undefined (0 in the
  means); the row passes when an answered polygon contains the point (point_hit), and
  point_distance is from the nearest answered centroid;
- answer and expected geometries in different frames (pixels against fractions of the image,
  when the image size is unknown) cannot be compared: the row fails with that reason.

Sources: the Galtea spatial_match documentation; the spatial IoU guide for LLM-generated
geometries (report the distribution: median and 10th percentile); "GRES: Generalized
Referring Expression Segmentation" (the cumulative IoU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely

from ..util.checks import is_missing
from ..util.wording import count_of
from ..matching.rules import at_or_above
from .model_text import (
    EMPTY,
    NON_FINITE,
    OUT_OF_BOUNDS,
    UNPARSEABLE,
    image_size_problem,
    parse_answer,
)
from ..pairs.pair_metrics import pair_metrics

#: IoU thresholds of the Acc@τ summary (share of rows whose best IoU is at least τ).
ACCURACY_THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 0.9)


@dataclass
class SpatialMatch:
    """Scored rows and their summary.

    Attributes:
        rows: dict of column name -> list (n_rows,) of plain values (see ``ROW_COLUMNS``).
        metrics: the summary over scored rows (see ``summarise``).
        per_group: group label -> summary of that group's rows (empty without groups; a
            row whose group is NULL is in none).
        parameters: the options used.
    """

    rows: dict
    metrics: dict
    per_group: dict
    parameters: dict


#: Columns of the scored rows, in order: (name, type) with type "str", "int", "float", "bool".
ROW_COLUMNS = (
    ("group", "str"),
    ("answer_status", "str"),
    ("expected_status", "str"),
    ("n_answer_geometries", "int"),
    ("n_answer_points", "int"),
    ("n_answer_failures", "int"),
    ("n_out_of_bounds", "int"),
    ("scored", "bool"),
    ("best_iou", "float"),
    ("dice", "float"),
    ("giou", "float"),
    ("passed", "bool"),
    ("centre_hit", "bool"),
    ("point_hit", "bool"),
    ("point_distance", "float"),
    ("frame", "str"),
    ("convention", "str"),
    ("warning", "str"),
    ("reason", "str"),
)


def spatial_match(
    answers,
    expected,
    *,
    coordinate_format: str = "auto",
    image_widths=None,
    image_heights=None,
    iou_threshold: float = 0.5,
    groups=None,
    progress=None,
    padded_square: bool = False,
) -> SpatialMatch:
    """Score each answer against its expected geometry.

    Args:
        answers, expected: sequences of text (or None), shape (n,): model answers and expected
            geometries in any format ``model_text.parse_answer`` reads.
        coordinate_format: a ``model_text.COORDINATE_FORMATS`` value, for both columns.
        image_widths, image_heights: sequences (n,) of image sizes in pixels (None / NaN /
            non-positive where unknown), or None.
        iou_threshold: pass when the best IoU >= it (relative tolerance 1e-9), in (0, 1].
        groups: sequence (n,) of group values (model, prompt, class) or None.
        progress: optional callable(fraction done in [0, 1]); may raise to cancel.
        padded_square: the answers are fractions of the image padded to a square (LLaVA-1.5,
            Shikra): ``parse_answer``'s option, for the answer column only (the expected
            geometries are the table's own).

    Returns:
        SpatialMatch.

    Raises:
        ValueError: a threshold outside (0, 1], an unknown coordinate format, or columns of
            different lengths.
    """
    if not (isinstance(iou_threshold, (int, float)) and 0 < iou_threshold <= 1):
        raise ValueError(f"iou_threshold must be in (0, 1], got {iou_threshold!r}")
    answers, expected = list(answers), list(expected)
    n = len(answers)
    widths = _column(image_widths, n, "image_widths")
    heights = _column(image_heights, n, "image_heights")
    group_values = _column(groups, n, "groups")
    if len(expected) != n:
        raise ValueError(f"answers and expected differ in length: {n} and {len(expected)}")

    rows = {name: [] for name, _ in ROW_COLUMNS}
    pairs = []  # (row, answer geometry, expected geometry)
    expected_geoms, false_alarms = [], []
    for i in range(n):
        if progress is not None and i % 200 == 0:
            progress(0.8 * i / max(n, 1))
        size = _size(widths[i], heights[i])
        answer = parse_answer(answers[i], coordinate_format, *size,
                              padded_square=padded_square)
        truth = parse_answer(expected[i], coordinate_format, *size)
        row = _row(answer, truth, group_values[i])
        size_problem = image_size_problem(widths[i], heights[i])
        if size_problem:
            row["warning"] = "; ".join(filter(None, [row["warning"], size_problem]))
        for name, _ in ROW_COLUMNS:
            rows[name].append(row[name])
        expected_geoms.append(row.pop("_expected_polygons"))
        false_alarms.append(row.pop("_false_alarm_area"))
        for a in row.pop("_answer_polygons"):
            for b in expected_geoms[-1]:
                pairs.append((i, a, b))
    intersections, unions = _score_pairs(rows, pairs, expected_geoms, iou_threshold)
    unions = unions + np.asarray(false_alarms, dtype=float)
    if progress is not None:
        progress(0.95)
    metrics = summarise(rows, intersections, unions, iou_threshold)
    per_group = {}
    if groups is not None:
        # A row without a group (NULL) counts in the totals and in no group, as a
        # field without a stratum in ``evaluate``.
        labels = np.asarray(rows["group"], dtype=object)
        for label in sorted(set(labels.tolist()) - {None}):
            members = np.flatnonzero(labels == label)
            sub = {name: [rows[name][k] for k in members] for name in rows}
            per_group[label] = summarise(sub, intersections[members], unions[members],
                                         iou_threshold)
    parameters = {"coordinate_format": coordinate_format, "iou_threshold": iou_threshold,
                  "padded_square": bool(padded_square),
                  "giou_enclosing": "box", "accuracy_thresholds": list(ACCURACY_THRESHOLDS)}
    return SpatialMatch(rows, metrics, per_group, parameters)


def _column(values, n, name) -> list:
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {count_of(len(values), 'value')} for "
                         f"{count_of(n, 'row')}")
    return values


def _size(width, height):
    try:
        width, height = float(width), float(height)
    except (TypeError, ValueError):
        return None, None
    if math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0:
        return width, height
    return None, None


def _polygonal(records):
    return [r for r in records if r.geometry.geom_type in ("Polygon", "MultiPolygon")
            and r.geometry.area > 0]


def _points(records):
    return [r for r in records if r.geometry.geom_type in ("Point", "MultiPoint")]


def _row(answer, truth, group) -> dict:
    """One row's parse results and the geometries to pair (scores come later)."""
    answer_polygons, answer_points = _polygonal(answer.usable), _points(answer.usable)
    truth_polygons, truth_points = _polygonal(truth.usable), _points(truth.usable)
    frames = {r.frame for r in answer.usable + truth.usable}
    warnings = [f"{side}: {w}" for side, parsed in (("answer", answer), ("expected", truth))
                for w in sorted({r.warning for r in parsed.records if r.warning})]
    conventions = sorted({r.convention for r in answer.usable})
    row = {
        "group": None if is_missing(group) else str(group),  # NULL: in no group
        "answer_status": answer.status,
        "expected_status": truth.status,
        "n_answer_geometries": len(answer_polygons),
        "n_answer_points": len(answer_points),
        "n_answer_failures": len(answer.failures),
        "n_out_of_bounds": sum(r.status == OUT_OF_BOUNDS for r in answer.records),
        "scored": True,
        "best_iou": 0.0,
        "dice": 0.0,
        "giou": -1.0,
        "passed": False,
        "centre_hit": False,
        "point_hit": None,
        "point_distance": None,
        "frame": ", ".join(sorted(f for f in frames if f)),
        "convention": ", ".join(conventions),
        "warning": "; ".join(warnings),
        "reason": "",
        "_answer_polygons": [],
        "_expected_polygons": [],
        "_false_alarm_area": 0.0,
    }
    if truth.status not in ("parsed", EMPTY) or (truth.usable and not truth_polygons
                                                 and not truth_points):
        row.update(scored=False, best_iou=None, dice=None, giou=None,
                   reason=f"expected geometry unreadable: {truth.reason}")
        return row
    # the expected area counts in the cumulative IoU's union even when nothing can be paired
    row["_expected_polygons"] = [r.geometry for r in truth_polygons]
    if len(frames) > 1:
        row["reason"] = ("answer and expected are in different frames (" + row["frame"] +
                         "): give the image width and height")
        return row
    if answer_points and (truth_polygons or truth_points):
        row["point_hit"], row["point_distance"] = _point_scores(answer_points, truth_polygons,
                                                                truth_points)
    if truth.status == EMPTY:
        if answer.usable:
            row["reason"] = "geometry answered where none is expected"
            if answer_polygons and len(frames) <= 1:
                # the field's cumulative IoU: an answered area on a row that expects nothing
                # adds to the union (and nothing to the intersection)
                row["_false_alarm_area"] = float(shapely.union_all(
                    [r.geometry for r in answer_polygons]).area)
        elif answer.status == EMPTY:
            row.update(best_iou=1.0, dice=1.0, giou=1.0, passed=True,
                       reason="correct rejection: nothing expected, nothing answered")
        else:
            row["reason"] = f"answer unreadable: {answer.reason}"
        return row
    if not answer_polygons:
        if answer.status == EMPTY:
            row["reason"] = "the answer holds no geometry"
        elif answer_points and not truth_polygons:  # point against point: no hit is defined
            row["reason"] = "answer and expected are points only (see point_distance)"
        elif answer_points:
            row["reason"] = "the answer holds points only (see point_hit)"
        else:
            row["reason"] = f"answer unreadable: {answer.reason or 'no polygon'}"
        return row
    if not truth_polygons:  # a pointing task: the expected geometry is a point
        hit = any(shapely.covers(a.geometry, t.geometry) for a in answer_polygons
                  for t in truth_points)
        distance = min(float(shapely.distance(a.geometry.centroid, t.geometry))
                       for a in answer_polygons for t in truth_points)
        if row["point_hit"] is None or (hit and not row["point_hit"]):
            row["point_hit"] = hit
        row["point_distance"] = min(distance, row["point_distance"] or math.inf)
        row["passed"] = bool(row["point_hit"])
        row["reason"] = ("the expected geometry is a point: IoU is undefined; the row passes "
                         "when an answered polygon contains it")
        return row
    row["_answer_polygons"] = [r.geometry for r in answer_polygons]
    return row


def _point_scores(points, truth_polygons, truth_points):
    """(hit, distance) of the answer's points against the expected geometries."""
    xy = [p.geometry for p in points]
    hit = any(shapely.covers(t.geometry, p) for t in truth_polygons for p in xy) \
        if truth_polygons else None
    centres = [t.geometry.centroid for t in truth_polygons] + [t.geometry for t in truth_points]
    distance = min(float(shapely.distance(p, c)) for p in xy for c in centres)
    return hit, distance


def _score_pairs(rows, pairs, expected_geoms, iou_threshold):
    """Fill best_iou, dice, giou, passed, centre_hit; return per-row (intersection, union)
    of the best pair (union = the expected area when the answer has no polygon)."""
    n = len(rows["best_iou"])
    intersections, unions = np.zeros(n), np.zeros(n)
    for i in range(n):
        if rows["scored"][i] and expected_geoms[i]:
            unions[i] = float(shapely.union_all(expected_geoms[i]).area)
    if not pairs:
        return intersections, unions
    row_of = np.array([p[0] for p in pairs])
    a = np.array([p[1] for p in pairs], dtype=object)
    b = np.array([p[2] for p in pairs], dtype=object)
    m = pair_metrics(a, b, enclosing="box")
    order = np.lexsort((-m.giou, -m.iou, row_of))  # per row: highest IoU, then GIoU first
    first = order[np.r_[True, row_of[order][1:] != row_of[order][:-1]]]
    for k in first.tolist():
        i = int(row_of[k])
        rows["best_iou"][i] = float(m.iou[k])
        rows["dice"][i] = float(m.dice[k])
        rows["giou"][i] = float(m.giou[k])
        passed = bool(at_or_above(np.array([m.iou[k]]), iou_threshold)[0])
        rows["passed"][i] = passed
        rows["centre_hit"][i] = bool(shapely.covers(a[k], shapely.centroid(b[k])))
        intersections[i], unions[i] = float(m.intersection[k]), float(m.union[k])
        if not rows["reason"][i] and not passed:
            rows["reason"][i] = f"best IoU {m.iou[k]:.4f} below the threshold {iou_threshold:g}"
            if rows["n_out_of_bounds"][i]:
                rows["reason"][i] += "; an answered geometry is out of bounds (hallucinated)"
    return intersections, unions


def summarise(rows: dict, intersections, unions, iou_threshold: float) -> dict:
    """Summary of scored rows.

    Keys: count_rows, count_scored, count_expected_unreadable, count_pass, pass_rate,
    iou_mean, iou_median, iou_p10 (over scored rows; a row without an answer geometry counts
    0), acc_at_0.1 … acc_at_0.9 (share of scored rows with best IoU >= τ), cumulative_iou
    (Σ intersection / Σ union over scored rows, the cumulative IoU as "GRES: Generalized
    Referring Expression Segmentation" defines gRefCOCO's cIoU: each row adds its best pair's
    intersection and union; a row without an answer polygon adds its expected area to the
    union; a row that expects nothing adds the area answered there), dice_mean, giou_mean (a
    row without an answer polygon counts Dice 0 and GIoU -1, as ``pair_metrics`` scores area
    on one side only), centre_hit_rate (over scored
    rows), parse_failure_rate (answers that could not be read: unparseable or non-finite),
    empty_answer_rate, count_empty_answers, hallucination_rate (answers with a geometry out of
    bounds),
    count_true_negative, count_point_answers, point_hit_rate, point_distance_median.
    Rates over no rows are NaN (written as null).
    """
    scored = np.asarray(rows["scored"], dtype=bool)
    n_scored = int(scored.sum())
    iou = np.array([v if v is not None else 0.0 for v in rows["best_iou"]], dtype=float)[scored]
    status = np.asarray(rows["answer_status"], dtype=object)[scored]

    def rate(mask) -> float:
        return float(np.sum(mask)) / n_scored if n_scored else math.nan

    def values(name):
        return np.array([v for v, s in zip(rows[name], scored) if s and v is not None],
                        dtype=float)

    giou = values("giou")
    dice = values("dice")
    point_hits = values("point_hit")
    distances = values("point_distance")
    inter = np.asarray(intersections, dtype=float)[scored]
    union = np.asarray(unions, dtype=float)[scored]
    metrics = {
        "count_rows": len(rows["scored"]),
        "count_scored": n_scored,
        "count_expected_unreadable": int((~scored).sum()),
        "count_pass": int(np.sum(np.asarray(rows["passed"], dtype=bool)[scored])),
        "pass_rate": rate(np.asarray(rows["passed"], dtype=bool)[scored]),
        "iou_mean": float(iou.mean()) if n_scored else math.nan,
        "iou_median": float(np.median(iou)) if n_scored else math.nan,
        "iou_p10": float(np.percentile(iou, 10)) if n_scored else math.nan,
    }
    for tau in ACCURACY_THRESHOLDS:
        metrics[f"acc_at_{tau:g}"] = rate(at_or_above(iou, tau))
    total_union = float(union.sum())
    metrics.update({
        "cumulative_iou": float(inter.sum()) / total_union if total_union > 0 else math.nan,
        "dice_mean": float(dice.mean()) if len(dice) else math.nan,
        "giou_mean": float(giou.mean()) if len(giou) else math.nan,
        "centre_hit_rate": rate(np.asarray(rows["centre_hit"], dtype=bool)[scored]),
        "parse_failure_rate": rate(np.isin(status, (UNPARSEABLE, NON_FINITE))),
        "count_parse_failures": int(np.isin(status, (UNPARSEABLE, NON_FINITE)).sum()),
        "empty_answer_rate": rate(status == EMPTY),
        "count_empty_answers": int((status == EMPTY).sum()),
        "hallucination_rate": rate(np.asarray(rows["n_out_of_bounds"])[scored] > 0),
        "count_hallucinated": int((np.asarray(rows["n_out_of_bounds"])[scored] > 0).sum()),
        "count_true_negative": int(np.sum(
            (np.asarray(rows["expected_status"], dtype=object)[scored] == EMPTY)
            & np.asarray(rows["passed"], dtype=bool)[scored])),
        "count_point_answers": len(distances),
        "point_hit_rate": float(point_hits.mean()) if len(point_hits) else math.nan,
        "point_distance_median": float(np.median(distances)) if len(distances) else math.nan,
    })
    return metrics
