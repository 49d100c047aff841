"""The JSON and HTML reports of a spatial match (``core.text.spatial_match``)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from . import figures
from ..util.wording import count_of, plural
from .html import Alert, Definition, Section, render_report
from ..text.spatial_match import ACCURACY_THRESHOLDS, SpatialMatch

TITLE = "Spatial match (text)"
ALGORITHM_ID = "ioueval:spatialmatch"

DEFINITIONS = (
    Definition("best_iou", "Per row: the highest IoU of any answered polygon against any "
               "expected polygon; 0 when the answer yields no polygon",
               "max_ij |A_i ∩ E_j| / |A_i ∪ E_j|", "Galtea spatial match"),
    Definition("pass_rate", "Share of scored rows whose best IoU reaches the threshold "
               "(relative tolerance 1e-9); a row expecting nothing passes when nothing is "
               "answered", "count_pass / count_scored", "Galtea spatial match"),
    Definition("iou_mean, iou_median, iou_p10", "Mean, median and 10th percentile of the best "
               "IoU over scored rows", "", "Spatial IoU guide for LLM-generated geometries"),
    Definition("acc_at_τ", "Share of scored rows whose best IoU is at least τ",
               "count(best_iou ≥ τ) / count_scored"),
    Definition("cumulative_iou", "Sum of intersections over sum of unions over scored rows, "
               "the cumulative IoU of referring-expression benchmarks: a row without an "
               "answer adds its expected area to the unions, and a row that expects nothing "
               "adds the area answered there (a correct rejection adds nothing). One "
               "difference: where a row has several answered or expected geometries, its "
               "intersection and union are those of its best pair, where the benchmark "
               "takes the union of each side's masks",
               "Σ |A ∩ E| / Σ |A ∪ E|",
               "GRES: Generalized Referring Expression Segmentation (gRefCOCO's cIoU)"),
    Definition("dice_mean, giou_mean", "Means of the best pair's Dice and GIoU (enclosing "
               "shape: the smallest axis-aligned box); no answer polygon: Dice 0, GIoU -1",
               "Dice = 2 IoU / (1 + IoU); GIoU = IoU − |C \\ (A ∪ E)| / |C|",
               "IoU article (Jaccard index for boxes, masks and label maps)"),
    Definition("centre_hit_rate", "Share of scored rows whose best pair's expected centroid "
               "lies in its answered polygon"),
    Definition("parse_failure_rate", "Share of scored rows whose answer could not be read "
               "(status unparseable or non_finite: no usable geometry)"),
    Definition("hallucination_rate", "Share of scored rows with at least one answered "
               "geometry outside the image or its coordinate grid (status out_of_bounds)"),
    Definition("empty_answer_rate, count_empty_answers", "Share and count of scored rows "
               "answered with no geometry (an empty list, \"none found\"); those expecting "
               "nothing are correct rejections (count_true_negative)"),
    Definition("point_hit_rate, point_distance_median", "Rows with point answers: share where "
               "a point lies in an expected polygon; median distance from the nearest point "
               "to the nearest expected centre, in the row's units (pixels, fractions of the "
               "image or map units)"),
    Definition("count_expected_unreadable", "Rows whose expected geometry could not be read: "
               "listed in the output, not scored"),
)


#: At most this many failed rows are listed in the report (all are in the scored rows).
FAILED_ROWS_LISTED = 100


#: The phrase of model_text.image_size_problem's message, to tell it from convention warnings.
_SIZE_PROBLEM = "not usable (two numbers > 0 are needed)"

def build_report(result: SpatialMatch, inputs: dict, provenance: dict,
                 reproduce: dict | None = None, row_ids=None) -> dict:
    """The JSON-ready report: metrics, per_group, answer_status_counts, failed_rows (the
    first ``FAILED_ROWS_LISTED`` rows that fail or are not scored: row_id, group,
    answer_status, best_iou, reason), parameters, inputs, provenance, reproduce, warnings.
    ``row_ids``: one per row (default: positions 0, 1, ...)."""
    rows = result.rows
    n = len(rows["passed"])
    row_ids = list(range(n)) if row_ids is None else list(row_ids)
    failed_rows = [
        {"row_id": _plain_id(row_ids[k]), "group": rows["group"][k],
         "answer_status": rows["answer_status"][k], "best_iou": rows["best_iou"][k],
         "reason": rows["reason"][k]}
        for k in range(n) if not rows["passed"][k]
    ][:FAILED_ROWS_LISTED]
    statuses = Counter(s for s, scored in zip(result.rows["answer_status"],
                                              result.rows["scored"]) if scored)
    warnings = []
    if not result.metrics["count_rows"]:
        warnings.append("the table has no rows: every rate is undefined (null)")
    elif not result.metrics["count_scored"]:
        warnings.append("no row could be scored (no expected geometry could be read): every "
                        "rate is undefined (null)")
    n_unreadable = result.metrics["count_expected_unreadable"]
    if n_unreadable:
        warnings.append(f"{_rows(n_unreadable)} with an expected geometry that could not be "
                        f"read: not scored")
    n_no_group = sum(g is None for g in rows["group"])
    if result.per_group and n_no_group:
        warnings.append(f"{_rows(n_no_group)} without a group (NULL group field): "
                        f"counted in the totals, in no group")
    frames = {f for f in result.rows["frame"] if f}
    if any("," in f for f in frames):
        warnings.append("some rows compare pixels with fractions of the image: give the image "
                        "width and height fields")
    bad_size = sum(1 for w in result.rows["warning"] if _SIZE_PROBLEM in (w or ""))
    if bad_size:
        warnings.append(f"{_rows(bad_size)} with image width / height fields that are not two "
                        f"numbers > 0: read without the image size (see the warning column)")
    ambiguous = sum(1 for w in result.rows["warning"]
                    if any(part and _SIZE_PROBLEM not in part for part in (w or "").split("; ")))
    if ambiguous:
        warnings.append(f"{_rows(ambiguous)} read with an ambiguous coordinate convention "
                        f"(see the warning column of the output; set COORDINATE_FORMAT to "
                        f"decide)")
    return {
        "metrics": result.metrics,
        "per_group": result.per_group,
        "answer_status_counts": dict(sorted(statuses.items())),
        "failed_rows": failed_rows,
        "parameters": result.parameters,
        "inputs": inputs,
        "provenance": provenance,
        "reproduce": reproduce or {},
        "warnings": warnings,
    }


def _rows(n: int) -> str:
    return count_of(n, "row")


def _plain_id(value):
    """A row id JSON can hold (numbers and text as they are, anything else as text)."""
    return value if value is None or isinstance(value, (int, float, str)) else str(value)


def render_html(report: dict, best_iou) -> str:
    """The HTML report; ``best_iou``: the best IoU of each scored row (for the histogram)."""
    metrics = report["metrics"]
    threshold = report["parameters"]["iou_threshold"]
    keys = [f"acc_at_{tau:g}" for tau in ACCURACY_THRESHOLDS]
    fig_iou = figures.histogram({"best IoU": np.asarray(best_iou, dtype=float)},
                                xlabel="Best IoU (–)", ylabel="Rows", bins=20, range_=(0, 1),
                                vlines={"threshold": threshold})
    fig_accuracy = figures.line_chart(list(ACCURACY_THRESHOLDS),
                                      {"Acc@τ": [metrics[k] for k in keys]},
                                      xlabel="IoU threshold τ (–)", ylabel="Share of rows (–)",
                                      ylim=(0, 1.02), xlim=(0, 1))
    sections = [Section("summary", "Summary", template="spatialmatch/summary.html.j2",
                        context={"accuracy_keys": keys, "fig_iou": fig_iou,
                                 "fig_accuracy": fig_accuracy})]
    if report["per_group"]:
        sections.append(Section("groups", "By group", template="spatialmatch/groups.html.j2"))
    if report["failed_rows"]:
        sections.append(Section("failed", "Rows that fail",
                                template="spatialmatch/failed.html.j2",
                                context={"limit": FAILED_ROWS_LISTED}))
    pass_rate = metrics["pass_rate"]
    summary = (
        f"{metrics['count_pass']} of {count_of(metrics['count_scored'], 'answer')} "
        f"{plural(metrics['count_pass'] or metrics['count_scored'], 'passes', 'pass')} "
        f"(best IoU ≥ {threshold:g}); mean best IoU "
        f"{metrics['iou_mean']:.3f}; {count_of(metrics['count_parse_failures'], 'answer')} "
        f"could not be read." if pass_rate == pass_rate else "No row could be scored."
    )
    return render_report(report, title=TITLE, algorithm_id=ALGORITHM_ID, sections=sections,
                         summary=summary, alerts=[Alert(w) for w in report["warnings"]],
                         definitions=DEFINITIONS)
