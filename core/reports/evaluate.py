"""The HTML report of ioueval:evaluatepolygons: its sections (headline, IoU, where it fails,
boundaries, average precision), their figures, and the report data only the HTML needs
(the worst reference fields, the areas of TP, FP and FN), on the shared skeleton of
reports/html.py."""

from __future__ import annotations

import numpy as np
import shapely

from . import figures
from ..boundary.distances import simplified_in_runs
from ..boundary.zones import utm_crs
from ..geometry.crs import transformer
from ..geometry.stored import StoredGeometries, outward_float32, take
from ..evaluation.evaluate import Evaluation
from ..matching.labels import MISSING
from .definitions import DEFINITIONS
from .html import Section, render_report

ALGORITHM_ID = "ioueval:evaluatepolygons"
TITLE = "Evaluate polygons (IoU matching)"
#: Reference fields drawn as small maps in "Where it fails".
N_WORST = 12
#: A best IoU at or above this shows as 1.00 (two decimals): such a field is never listed
#: among the worst, however few fields the layer has.
SHOWN_AS_ONE = 0.995
#: Neighbouring reference fields drawn in one small map at most (the nearest first).
MAX_NEIGHBOURS = 200
#: The small maps' styles: reference field, its neighbours, matched and unmatched
#: predictions. A false positive is hatched without fill, so where it lies over a true
#: positive the blue stays blue (no blended colour) and the hatching shows through.
WORST_STYLES = {
    "reference": {"facecolor": "none", "edgecolor": figures.COLORS["reference"],
                  "linewidth": 1.4},
    "neighbour": {"facecolor": "none", "edgecolor": "#8c8c8c", "linewidth": 0.7},
    "tp": {"facecolor": (0.0, 0.447, 0.698, 0.4), "edgecolor": figures.COLORS["tp"],
           "linewidth": 0.8},
    # hatch lines take the edge colour: darker than the orange of the layer style, so they
    # show on white and on blue
    "fp": {"facecolor": "none", "edgecolor": "#8c5a00", "linewidth": 0.9, "hatch": "////"},
}
#: The legend above the small maps: (label, style key).
WORST_LEGEND = (("reference field", "reference"), ("other reference fields", "neighbour"),
                ("matched prediction (TP)", "tp"), ("unmatched prediction (FP)", "fp"))

#: The headline cards: (key, label, one-line meaning, card class).
HEADLINE = (
    ("precision", "Precision", "share of predictions that match a reference field", ""),
    ("recall", "Recall", "share of reference fields that were found", ""),
    ("f1", "F1", "harmonic mean of precision and recall", ""),
    ("iou_mean", "Mean IoU", "mean overlap (IoU) of the matched pairs", ""),
    ("count_tp", "True positives", "reference fields matched by a prediction", "tp"),
    ("count_fp", "False positives", "predictions that match no reference field", "fp"),
    ("count_fn", "False negatives", "reference fields no prediction matched", "fn"),
    ("precision_among_overlapping", "Precision among overlapping",
     "without predictions that overlap no reference field (for a reference that covers "
     "only some fields)", ""),
)
#: Size (inches) of the two figures side by side at the top of the page (IoU histogram,
#: threshold sweep): a little flatter than the others, so both fit in the first screen.
TOP_FIGURE_IN = (6.4, 2.8)


def undefined_cards(metrics: dict) -> dict:
    """{headline card key: why it is undefined} for the rates whose denominator is 0 in
    ``metrics`` (a report's "metrics"). The JSON keeps agribound 1.0's empty-denominator
    value there (0, or 1 when both layers are empty); the page shows "n/a" and the reason
    instead of a number that reads as measured. Source: agribound 1.0 evaluation ("Empty
    denominators")."""
    tp, fp, fn = metrics["count_tp"], metrics["count_fp"], metrics["count_fn"]
    overlapping = tp + fp - metrics.get("count_fp_unassigned", 0)
    reasons = (
        ("precision", tp + fp == 0, "no prediction was evaluated"),
        ("recall", tp + fn == 0, "no reference field was evaluated"),
        ("f1", tp + fp + fn == 0, "no prediction and no reference field were evaluated"),
        ("iou_mean", tp == 0, "no pair matched: there is no matched pair to average"),
        ("precision_among_overlapping", overlapping == 0,
         "no prediction overlaps a reference field"),
    )
    return {key: f"{why} ({metrics[key]:g} in the JSON by convention)"
            for key, undefined, why in reasons
            if undefined and isinstance(metrics.get(key), (int, float))}


#: Metrics of the per-stratum and per-size-class charts.
GROUP_METRICS = (("precision", "Precision"), ("recall", "Recall"), ("f1", "F1"))


def report_extras(evaluation: Evaluation, reference_ids=None, n_worst: int = N_WORST) -> dict:
    """Report data the HTML shows beyond the metrics, JSON-ready.

    Args:
        evaluation: the result of ``evaluate``.
        reference_ids: id of each input reference row (list (n_reference_input,)), e.g. the
            id field's values; None: the input position.
    Returns {"worst_reference_fields": [{"id", "best_iou", "iou", "area_ha",
    "n_overlapping_pred"}] (up to ``n_worst``, lowest best IoU first, ties larger area
    first; a field whose best IoU shows as 1.00, at least ``SHOWN_AS_ONE``, is not listed),
    "outcome_areas_ha": {"tp_reference", "tp_predicted", "fp", "fn"}}.
    """
    r, p = evaluation.per_reference, evaluation.per_predicted
    order = _worst_rows(evaluation, n_worst)
    keep = evaluation.reference.keep
    worst = []
    for k in order.tolist():
        row = int(keep[k])
        worst.append({
            "id": reference_ids[row] if reference_ids is not None else row,
            "best_iou": float(r["best_iou"][k]),
            "iou": float(r["iou"][k]),
            "area_ha": float(r["area_ha"][k]),
            "n_overlapping_pred": int(r["n_overlapping_pred"][k]),
        })
    matched_ref = np.asarray(r["matched"], dtype=bool)
    matched_pred = np.asarray(p["matched"], dtype=bool)
    counted = ~np.asarray(p["ignored"], dtype=bool)
    ref_area, pred_area = np.asarray(r["area_m2"]), np.asarray(p["area_m2"])
    return {
        "worst_reference_fields": worst,
        "outcome_areas_ha": {
            "tp_reference": float(ref_area[matched_ref].sum() / 1e4),
            "tp_predicted": float(pred_area[matched_pred].sum() / 1e4),
            "fp": float(pred_area[~matched_pred & counted].sum() / 1e4),
            "fn": float(ref_area[~matched_ref].sum() / 1e4),
        },
    }


def render_evaluation_html(report: dict, evaluation: Evaluation) -> str:
    """The HTML report of one evaluation.

    Args:
        report: the JSON report (core.reports.data.build_report, plus ``report_extras``,
            ``inputs``, ``provenance``, ``reproduce``); every number shown comes from it.
        evaluation: the same evaluation, for the distributions and maps drawn.
    Raises KeyError when the report lacks a key the page shows.
    """
    metrics = report["metrics"]
    units = report_units(metrics)
    sections = [
        Section("headline", "Headline", "evaluatepolygons/headline.html.j2",
                {"cards": HEADLINE, "ci": (metrics.get("bootstrap") or {}).get("ci", {}),
                 "undefined": undefined_cards(metrics)},
                lead=True),
        Section("iou", "IoU", "evaluatepolygons/iou.html.j2", _iou_context(metrics, evaluation)),
        Section("failures", "Where it fails", "evaluatepolygons/failures.html.j2",
                _failure_context(report, evaluation, units)),
        Section("boundaries", "Boundaries", "evaluatepolygons/boundaries.html.j2",
                _boundary_context(metrics, evaluation, units)),
    ]
    if metrics.get("average_precision"):
        sections.append(Section("average-precision", "Average precision",
                                "evaluatepolygons/average_precision.html.j2",
                                _average_precision_context(metrics["average_precision"])))
    for section in sections:
        section.context["units"] = units
    return render_report(
        report,
        title=TITLE,
        algorithm_id=ALGORITHM_ID,
        sections=sections,
        alerts=list(report.get("warnings") or []),
        definitions=DEFINITIONS,
        summary_template="evaluatepolygons/summary.html.j2",
    )


def report_units(metrics: dict) -> dict:
    """The units the page names: metres, m² and ha with a CRS; with both layers without one
    (``equal_area_crs`` "none (planar units)", e.g. pixels) the layers' own planar units,
    "units²" for areas and "10⁴ units²" where the JSON key says ha (it is Σ area / 10⁴)."""
    if str(metrics.get("equal_area_crs", "")).startswith("none"):
        return {"planar": True, "length": "units", "length_words": "the layers' planar units",
                "area": "units²", "area_ha": "10⁴ units²",
                "areas_in": "the layers' own planar units (both layers have no CRS)",
                "distances_in": "the layers' planar coordinates (both layers have no CRS)"}
    return {"planar": False, "length": "m", "length_words": "metres", "area": "m²",
            "area_ha": "ha", "areas_in": str(metrics.get("equal_area_crs")),
            "distances_in": "the WGS 84 / UTM zone of its reference field"}


def worst_panel_title(identifier, best_iou: float, width: int = 22) -> str:
    """The title of a small map: the id on one line (long ids shortened in the middle with
    "…" to ``width`` characters, so neighbouring titles do not overlap), the best IoU on the
    next, e.g. "id 351623000000096\nbest IoU 0.00"."""
    text = f"id {identifier}"
    if len(text) > width:
        keep = width - 1
        text = text[: keep - keep // 2] + "…" + text[len(text) - keep // 2:]
    return f"{text}\nbest IoU {best_iou:.2f}"


def _worst_rows(evaluation: Evaluation, n: int) -> np.ndarray:
    """Evaluated reference rows of the worst fields: lowest best IoU first (ties: larger
    area first), at most ``n``, none whose best IoU shows as 1.00."""
    r = evaluation.per_reference
    best = np.asarray(r["best_iou"], dtype=float)
    area = np.asarray(r["area_m2"], dtype=float)
    order = np.lexsort((-area, best))
    return order[~(best[order] >= SHOWN_AS_ONE)][:n]


def _iou_context(metrics: dict, evaluation: Evaluation) -> dict:
    r = evaluation.per_reference
    matched = np.asarray(r["matched"], dtype=bool)
    threshold = metrics["iou_threshold"]
    sweep = metrics["threshold_sweep"]
    return {
        "fig_hist": figures.histogram(
            {"IoU of matched pairs": np.asarray(r["iou"])[matched],
             "Best IoU of each reference field": r["best_iou"]},
            xlabel="IoU (–)", ylabel="Reference fields", bins=20, range_=(0.0, 1.0),
            vlines={f"threshold {threshold:g}": threshold}, size_in=TOP_FIGURE_IN,
        ),
        "fig_sweep": figures.line_chart(
            sweep["iou_threshold"],
            {"Precision": sweep["precision"], "Recall": sweep["recall"], "F1": sweep["f1"]},
            xlabel="IoU threshold (–)", ylabel="Precision, recall, F1 (–)", ylim=(0, 1.02),
            xlim=(0, 1), vlines={f"chosen {threshold:g}": threshold}, size_in=TOP_FIGURE_IN,
        ),
        "n_sweep": len(sweep["iou_threshold"]),
    }


def _failure_context(report: dict, evaluation: Evaluation, units: dict) -> dict:
    metrics = report["metrics"]
    context = {"groups": [], "worst_map": None, "labels": []}
    for kind, title, xlabel in (("per_size_class", "Size class",
                                 f"Reference field area ({units['area_ha']})"),
                                ("per_stratum", "Stratum", metrics.get("strata_column")
                                 or "Stratum")):
        groups = metrics.get(kind)
        if not groups:
            continue
        keys = list(groups)
        intervals = {
            label: [(groups[k].get("ci") or {}).get(key) for k in keys]
            for key, label in GROUP_METRICS
        }
        context["groups"].append({
            "kind": kind,
            "title": title,
            "keys": keys,
            "figure": figures.bar_chart(
                keys, {label: [groups[k][key] for k in keys] for key, label in GROUP_METRICS},
                xlabel=xlabel, ylabel="Precision, recall, F1 (–)", ylim=(0, 1.05),
                intervals=intervals if metrics.get("bootstrap") else None,
            ),
            "has_ci": bool(metrics.get("bootstrap")),
        })
    for kind, title in (("per_class", "Class"), ("per_group", "Group (image or tile)")):
        if metrics.get(kind):
            context["labels"].append({"kind": kind, "title": title,
                                      "missing": MISSING})
    worst = report.get("worst_reference_fields") or []
    if worst:
        context["worst_map"] = figures.polygon_panels(
            _worst_panels(evaluation, worst), ncols=4, panel_in=1.75,
            scale_unit=units["length"],
            legend=[(label, WORST_STYLES[key]) for label, key in WORST_LEGEND],
        )
    context["n_worst_max"] = N_WORST
    return context


def _worst_panels(evaluation: Evaluation, worst: list) -> list[dict]:
    """Small maps of the worst reference fields: the field's outline (black), the other
    reference fields in the map (grey outlines, at most ``MAX_NEIGHBOURS``, the nearest
    first), the predictions overlapping it as in the TP (blue fill) and FP (orange
    hatching) layers (``WORST_STYLES``), each field in its own UTM zone (metres), or in
    planar units."""
    rows = _worst_rows(evaluation, len(worst))
    ref, pred = evaluation.reference, evaluation.predicted
    pairs = evaluation.pairs
    matched_pred = np.asarray(evaluation.per_predicted["matched"], dtype=bool)
    zones = evaluation.per_reference.get("utm_epsg")
    tree = _reference_index(ref.source)
    panels = []
    for entry, k in zip(worst, rows.tolist()):
        others = pairs.predicted[pairs.reference == k] if pairs is not None else np.zeros(0, int)
        field = take(ref.source, [k])[0]
        predicted = take(pred.source, others)
        epsg = int(zones[k]) if zones is not None and ref.crs is not None else 0
        if epsg:
            field = _to_crs(field, ref.crs, epsg)
            predicted = np.array([_to_crs(g, pred.crs, epsg) for g in predicted], dtype=object)
        square = figures.panel_square(shapely.total_bounds(
            np.r_[np.array([field], dtype=object), predicted]))
        neighbours = _neighbours(tree, ref, k, square, epsg)
        # Drawn on a panel under 2 inches wide: detail below a thousandth of its extent is
        # below a pixel, and a staircase outline of a million vertices would cost seconds
        # and hundreds of MB to draw.
        box = shapely.total_bounds(np.r_[np.array([field], dtype=object), predicted])
        detail = max(box[2] - box[0], box[3] - box[1]) / 1000.0
        if np.isfinite(detail) and detail > 0:
            field = _drawn(np.array([field], dtype=object), detail)[0]
            predicted = _drawn(predicted, detail)
            neighbours = _drawn(neighbours, detail)
        layers = [
            (neighbours, WORST_STYLES["neighbour"]),
            (predicted[matched_pred[others]], WORST_STYLES["tp"]),
            (predicted[~matched_pred[others]], WORST_STYLES["fp"]),
            ([field], WORST_STYLES["reference"]),
        ]
        panels.append({
            "title": worst_panel_title(entry["id"], entry["best_iou"]),
            "layers": layers,
            "extent": tuple(shapely.total_bounds(np.r_[np.array([field], dtype=object),
                                                       predicted])),
        })
    return panels


class _BoxIndex:
    """``STRtree.query(geometry, predicate="intersects")`` over a stored layer: envelopes
    from memory, then the rows whose envelope meets the geometry's are read and tested."""

    def __init__(self, stored):
        self.stored = stored
        self.bounds = stored.float32_bounds  # once: a view's are a new array at each call

    def query(self, geometry, predicate="intersects"):
        # Both boxes rounded outwards to float32: the filter keeps every row that may meet.
        xmin, ymin, xmax, ymax = outward_float32(shapely.bounds(geometry))[0]
        b = self.bounds
        with np.errstate(invalid="ignore"):
            near = np.flatnonzero((b[:, 0] <= xmax) & (b[:, 2] >= xmin)
                                  & (b[:, 1] <= ymax) & (b[:, 3] >= ymin))
        return near[shapely.intersects(geometry, self.stored.take(near))]


def _reference_index(source):
    """A spatial index of the reference fields' source geometries (array or stored)."""
    if isinstance(source, StoredGeometries):
        return _BoxIndex(source)
    return shapely.STRtree(source)


def _neighbours(tree, ref, k: int, square, epsg: int) -> np.ndarray:
    """The other evaluated reference fields that reach into a small map's ``square``
    (xmin, ymin, xmax, ymax in the map's coordinates: UTM zone ``epsg``, or the layer's
    planar units when 0), at most ``MAX_NEIGHBOURS`` (the nearest to field k); in the
    map's coordinates, cut just outside the square (object array, in row order)."""
    xmin, ymin, xmax, ymax = square
    window = shapely.segmentize(shapely.box(xmin, ymin, xmax, ymax), (xmax - xmin) / 16)
    if epsg:  # the square in the reference layer's CRS, for the tree
        back = transformer(utm_crs(epsg), ref.crs)
        window = shapely.transform(window, lambda xy: np.column_stack(
            back.transform(xy[:, 0], xy[:, 1])))
    found = tree.query(window, predicate="intersects")
    found = found[found != k]
    if len(found) > MAX_NEIGHBOURS:
        gap = shapely.distance(take(ref.source, found), take(ref.source, [k])[0])
        found = found[np.argsort(gap, kind="stable")[:MAX_NEIGHBOURS]]
    found = np.sort(found)
    geoms = take(ref.source, found)
    if epsg:
        geoms = np.array([_to_crs(g, ref.crs, epsg) for g in geoms], dtype=object)
    if not len(geoms):
        return geoms
    # cut a little outside the map, so the cuts' straight edges are not drawn in it
    margin = 0.02 * (xmax - xmin)
    return shapely.clip_by_rect(geoms, xmin - margin, ymin - margin, xmax + margin,
                                ymax + margin)


def _drawn(geometries, detail: float) -> np.ndarray:
    """Polygonal geometries (object array, shape (n,)) with every ring simplified within
    ``detail`` for drawing: Douglas-Peucker in runs (``boundary.simplified_in_runs``), the
    rings put back as they were (topology is not kept: a figure only). GEOS's own
    simplification recurses once per kept vertex: a comb-like outline of 8,000 vertices
    overflowed a 512 kB thread stack, which takes the whole process (QGIS) down. A ring
    left with fewer than 4 vertices is drawn whole; anything but polygons is drawn as it is.
    """
    geoms = np.asarray(geometries, dtype=object).reshape(-1)
    parts, owner = shapely.get_parts(geoms, return_index=True)
    as_is = np.zeros(len(geoms), dtype=bool)
    as_is[owner[shapely.get_type_id(parts) != shapely.GeometryType.POLYGON]] = True
    parts, owner = parts[~as_is[owner]], owner[~as_is[owner]]
    if len(parts) == 0:
        return geoms
    rings, ring_part = shapely.get_rings(parts, return_index=True)
    coords, ring = shapely.get_coordinates(rings, return_index=True)
    simple = simplified_in_runs(coords, ring, np.full(len(rings), float(detail)))
    whole = shapely.get_num_coordinates(simple) < 4
    simple[whole] = rings[whole]
    xy, at = shapely.get_coordinates(simple, return_index=True)
    with_rings, ring_part = np.unique(ring_part, return_inverse=True)  # not empty parts
    drawn_parts = shapely.polygons(shapely.linearrings(xy, indices=at), indices=ring_part)
    out = geoms.copy()
    present, part_owner = np.unique(owner[with_rings], return_inverse=True)
    out[present] = shapely.multipolygons(drawn_parts, indices=part_owner)
    return out


def _to_crs(geometry, crs, epsg: int):
    to_zone = transformer(crs, utm_crs(epsg))
    return shapely.transform(geometry, lambda xy: np.column_stack(
        to_zone.transform(xy[:, 0], xy[:, 1])))


def _boundary_context(metrics: dict, evaluation: Evaluation, units: dict) -> dict:
    r = evaluation.per_reference
    context = {"fig_distances": None, "fig_curve": None}
    hausdorff = np.asarray(r.get("hausdorff_m", []), dtype=float)
    mean_distance = np.asarray(r.get("boundary_mean_distance_m", []), dtype=float)
    if np.isfinite(hausdorff).any():
        finite = np.r_[hausdorff[np.isfinite(hausdorff)], mean_distance[np.isfinite(mean_distance)]]
        top = float(np.percentile(finite, 98)) if finite.size else 1.0
        length = units["length"]
        # all distances (about) 0, e.g. identical boundaries: a plain 0-1 axis, no clipping
        clipped = top >= 0.05
        context["fig_distances"] = figures.histogram(
            {"Hausdorff distance": np.minimum(hausdorff, top),
             "Mean boundary distance": np.minimum(mean_distance, top)},
            xlabel=(f"Distance ({length}; values above {top:,.1f} {length} in the last bin)"
                    if clipped else f"Distance ({length})"),
            ylabel="Matched pairs", bins=30, range_=(0.0, top if clipped else 1.0),
        )
    curve = metrics.get("boundary_by_tolerance")
    tolerance = metrics.get("boundary_tolerance_m")
    if curve:
        context["fig_curve"] = figures.line_chart(
            curve["tolerance_m"],
            {"Boundary precision": curve["boundary_precision"],
             "Boundary recall": curve["boundary_recall"], "Boundary F1": curve["boundary_f1"]},
            xlabel=f"Boundary tolerance ({units['length']})",
            ylabel="Boundary precision, recall, F1 (–)",
            ylim=(0, 1.02),
            vlines={f"chosen {tolerance:g} {units['length']}": tolerance},
        )
    return context


def _average_precision_context(ap: dict) -> dict:
    series = {}
    recall = None
    for key, label in (("pr_curve_50", "IoU 0.50"), ("pr_curve", "IoU 0.50:0.95 (mean)")):
        points = ap.get(key) or []
        if points:
            recall = [point["recall"] for point in points]
            series[label] = [point["precision"] for point in points]
    return {
        "fig_pr": figures.line_chart(recall, series, xlabel="Recall (–)",
                                     ylabel="Precision (–)", ylim=(0, 1.02), xlim=(0, 1),
                                     markers=False) if series else None,
        "size_keys": [k for k in ("ap_small", "ap_medium", "ap_large") if k in ap],
        "missing": MISSING,
    }
