"""The HTML report of a class-map comparison (``ioueval:rasteriou``, ``ioueval:classmapiou``)
on the shared report skeleton (core.reports.html): coverage or alignment, per-class table,
confusion heatmaps (counts, row- and column-normalised), per-class IoU bars, absent classes
and how other tools would average, then reproduce, provenance and definitions."""

from __future__ import annotations

import numpy as np

from ..classmaps import confusion
from . import figures
from ..util.wording import count_of, plural
from .html import Alert, Definition, Section, render_report

#: Matrices larger than this many classes are drawn without numbers in the cells.
_ANNOTATE_MAX_CLASSES = 14
#: ... and without class labels on the axes beyond this many.
_LABEL_MAX_CLASSES = 40
#: The source the formulas are cited from (by name: the source files are not shipped).
_IOU_ARTICLE = "IoU article (Jaccard index for boxes, masks and label maps)"

DEFINITIONS = (
    Definition("per_class.<value>.iou", "Intersection over union of one class",
               "TP / (TP + FP + FN)", "Everingham et al. 2010 (PASCAL VOC); " + _IOU_ARTICLE),
    Definition("per_class.<value>.dice", "Dice coefficient (F1 of the class)",
               "2 TP / (2 TP + FP + FN) = 2 IoU / (1 + IoU)", "Dice 1945; " + _IOU_ARTICLE),
    Definition("per_class.<value>.precision", "Precision (user's accuracy)", "TP / (TP + FP)",
               "Story & Congalton 1986"),
    Definition("per_class.<value>.recall", "Recall (producer's accuracy)", "TP / (TP + FN)",
               "Story & Congalton 1986"),
    Definition("per_class.<value>.tp / fp / fn",
               "True positives: predicted and reference both the class; false positives: "
               "predicted the class, reference another; false negatives: reference the "
               "class, predicted another class, a value that is not a class (other) or "
               "nothing (no prediction). Pixels for rasters, m² for polygons.",
               "TP = M[k,k], FP = row sum − TP, FN = column sum − TP"),
    Definition("per_class.<value>.areas", "The class's TP, FP and FN, and its reference and "
               "predicted totals (column and row sums), in m² (geographic rasters: each row's "
               "cell area on the ellipsoid; polygons: the equal-area CRS)",
               "tp_m2, fp_m2, fn_m2, reference_m2, predicted_m2"),
    Definition("per_class.<value>.status", "present in both, reference only, prediction only, "
               "or absent from both (all its ratios are 0/0, shown as –)"),
    Definition("classes", "Every class, in matrix order: value (as text), name, status"),
    Definition("absent_classes", "The classes missing from the reference, from the "
               "prediction, or from both"),
    Definition("unit", "Unit of tp, fp, fn and of confusion_matrix.counts: pixels (rasters) "
               "or m2 (polygons)"),
    Definition("alignment", "Rasters: both grids (CRS, pixel size, origin), the sub-pixel "
               "shift, valid reference pixels not covered by the prediction (not scored), no "
               "prediction and other counts. Polygons: the area compared, areas without a "
               "prediction, rows dropped and overlaps inside each layer"),
    Definition("miou", "Mean IoU over the classes present in either map; a class absent from "
               "both (0/0) is reported as absent and left out", "mean over present k of IoU_k",
               "Everingham et al. 2010; " + _IOU_ARTICLE),
    Definition("fwiou", "Frequency-weighted IoU: IoU weighted by each class's share of the "
               "reference", "Σ_k (reference_k / Σ reference) · IoU_k",
               "Long, Shelhamer & Darrell 2015 (FCN)"),
    Definition("pixel_accuracy", "Share of scored pixels (or area) whose predicted class is "
               "the reference class; dominated by large classes", "Σ TP / Σ M",
               "Long, Shelhamer & Darrell 2015"),
    Definition("confusion_matrix", "Counts (or m²) of every (predicted, reference) pair: rows "
               "= prediction (the classes, then other and no prediction), columns = "
               "reference", confusion.ORIENTATION),
    Definition("conventions", "mIoU under scikit-learn's jaccard_score(labels=all classes, "
               "average='macro') and torchmetrics' MeanIoU: classes absent from both count 0",
               "Σ present IoU / K"),
)


def render_class_map_html(report: dict, *, title: str, algorithm_id: str) -> str:
    """The HTML page of a report built by ``class_map_report.build_class_map_report``.

    Raises KeyError when the report lacks a key a section shows.
    """
    matrix = report["confusion_matrix"]
    counts = np.array(matrix["counts"], dtype=float)
    rows, columns = matrix["rows"], matrix["columns"]
    per_class = report["per_class"]
    labels = [_label(value, per_class[value]["name"]) for value in columns]
    unit = "pixels" if report["unit"] == "pixels" else "m²"
    sections = [
        Section("coverage", "Alignment and area covered", "classmaps/coverage.html.j2",
                {"unit": unit}),
        Section("classes", "Per class", "classmaps/classes.html.j2", {
            "unit": unit,
            "fig_iou": _iou_bars(labels, [per_class[v]["iou"] for v in columns]),
        }),
        Section("confusion", "Confusion matrix", "classmaps/confusion.html.j2", {
            "unit": unit,
            "fig_counts": _heatmap(counts, rows, columns, f"Count ({unit})", None),
            "fig_rows": _heatmap(confusion.normalised(counts, 1), rows, columns,
                                 "Share of the predicted row (–)", 1),
            "fig_columns": _heatmap(confusion.normalised(counts, 0), rows, columns,
                                    "Share of the reference column (–)", 0),
        }),
        Section("absent", "Absent classes and other conventions", "classmaps/absent.html.j2"),
    ]
    n_mean = report["conventions"]["n_classes_in_mean"]
    summary = (
        f"Mean IoU {_text(report['miou'])} over {n_mean} of "
        f"{count_of(len(columns), 'class', 'classes')} present "
        f"in either map; pixel accuracy {_text(report['pixel_accuracy'])}, frequency-weighted "
        f"IoU {_text(report['fwiou'])}."
    )
    alerts = [Alert(text) for text in report.get("warnings", [])]
    absent_both = [c for c in report["absent_classes"] if c["status"] == "absent from both"]
    if absent_both:
        n = len(absent_both)
        alerts.append(Alert(f"{count_of(n, 'class', 'classes')} {plural(n, 'is', 'are')} "
                            f"absent from both maps and left out of the mean", "info"))
    share = report["alignment"].get("share_reference_outside_prediction")
    if share:
        alerts.append(Alert(f"{100 * share:.1f} % of the valid reference is not covered by the "
                            "prediction and is not scored"))
    return render_report(report, title=title, algorithm_id=algorithm_id, sections=sections,
                         summary=summary, alerts=alerts, definitions=DEFINITIONS)


def _label(value: str, name: str) -> str:
    return f"{value} {name}".strip() if name else value


def _text(value) -> str:
    return "–" if value is None else f"{value:.4f}"


#: Longest class label drawn beside a bar (longer ones end in "…"; the table has them whole).
IOU_LABEL_MAX_CHARS = 40


def _iou_bars(labels, ious) -> str:
    """Per-class IoU bars as an SVG data URI (see ``iou_bars_figure``)."""
    return figures.to_data_uri(iou_bars_figure(labels, ious))


def iou_bars_figure(labels, ious):
    """Per-class IoU as horizontal bars, one row per class in matrix order (labels, ious:
    (K,), None for a class absent from both maps): the class labels are read horizontally
    beside their bar, so that 20 classes with long names stay apart (labels longer than
    ``IOU_LABEL_MAX_CHARS`` are shortened with "…"). The height grows with K (0.28 in a
    class). A class with IoU 0 (e.g. present in one map only) has no visible bar: it is
    marked "0"; a class absent from both maps is marked "absent" (its IoU is 0/0).
    Returns the matplotlib Figure, laid out (``tight_layout``)."""
    values = np.array([np.nan if v is None else float(v) for v in ious])
    n = len(labels)
    figure, ax = figures.new_figure(7.2, max(2.0, 0.28 * n + 1.0))
    positions = np.arange(n, dtype=float)
    style = figures.series_style(0)
    ax.barh(positions, np.nan_to_num(values), height=0.7, color=style["color"], alpha=0.85,
            edgecolor="black", linewidth=0.5)
    for y, value in zip(positions, values):
        if np.isnan(value):
            ax.text(0.01, y, "absent", ha="left", va="center", fontsize=7, color="0.4")
        elif value == 0:
            ax.plot([0, 0], [y - 0.35, y + 0.35], color="black", linewidth=2.0)
            ax.text(0.01, y, "0", ha="left", va="center", fontsize=8)
    ax.set_yticks(positions)
    ax.set_yticklabels([_short(str(c), IOU_LABEL_MAX_CHARS) for c in labels], fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)  # the first class on top, as in the table
    ax.grid(False, axis="y")
    ax.set_xlim(0, 1)
    ax.set_xlabel("IoU (–)")
    ax.set_ylabel("Class")
    figure.tight_layout()
    return figure


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _heatmap(values: np.ndarray, rows, columns, bar_label: str, axis) -> str:
    """A confusion heatmap: rows = prediction (y), columns = reference (x)."""
    n_rows, n_cols = values.shape
    size = min(12.0, max(4.2, 0.5 * n_cols + 2.5))
    figure, ax = figures.new_figure(size, min(12.0, max(3.4, 0.42 * n_rows + 1.6)))
    ax.grid(False)
    shown = np.ma.masked_invalid(values)
    image = ax.imshow(shown, cmap="Blues", aspect="auto",
                      vmin=0, vmax=1 if axis is not None else None)
    bar = figure.colorbar(image, ax=ax)
    bar.set_label(bar_label)
    if n_cols <= _LABEL_MAX_CLASSES:
        ax.set_xticks(range(n_cols), [str(c) for c in columns], rotation=45, ha="right")
        ax.set_yticks(range(n_rows), [str(r) for r in rows])
    ax.set_xlabel("Reference class (columns)")
    ax.set_ylabel("Predicted class (rows)")
    if n_cols <= _ANNOTATE_MAX_CLASSES:
        top = np.nanmax(values) if np.isfinite(values).any() else 1.0
        for i in range(n_rows):
            for j in range(n_cols):
                v = values[i, j]
                if not np.isfinite(v):
                    continue
                text = f"{v:.2f}" if axis is not None else _compact(v)
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="white" if top and v > 0.6 * top else "black")
    figure.tight_layout()
    return figures.to_data_uri(figure)


def _compact(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    return f"{value:.0f}"
