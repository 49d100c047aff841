"""The HTML report of ioueval:comparepredictions on the shared skeleton (reports/html.py):
the layers side by side, the paired bootstrap differences against the first, definitions."""

from __future__ import annotations

import math

from . import figures
from ..evaluation.compare import COMPARED_KEYS
from .definitions import DEFINITIONS
from .html import Definition, Section, render_report

ALGORITHM_ID = "ioueval:comparepredictions"
TITLE = "Compare predictions"
#: Metrics drawn per layer (with each layer's own 95 % interval).
CHART_METRICS = (("precision", "Precision"), ("recall", "Recall"), ("f1", "F1"))
#: Differences drawn (and listed first).
DIFFERENCE_METRICS = ("precision", "recall", "f1", "iou_mean", "best_iou_mean",
                      "area_weighted_f1")
#: Their labels on the chart's x axis.
DIFFERENCE_LABELS = ("Precision", "Recall", "F1", "Mean IoU", "Best IoU", "Area-w. F1")

COMPARISON_DEFINITIONS = (
    Definition("per_layer", "Every metric of each predicted layer, each evaluated exactly as "
               "Evaluate polygons does (see that algorithm's definitions).", "",
               "this plugin (README)"),
    Definition("side_by_side", "The compared metrics, one value per layer in layer order.",
               "", "this plugin (README)"),
    Definition("differences.<layer>.<metric>.difference",
               "The layer's metric minus the first layer's.", "metric(layer) − metric(first)",
               "this plugin (README)"),
    Definition("differences.<layer>.<metric>.ci",
               "95 % paired bootstrap interval of the difference: every resample draws the "
               "reference fields with replacement (within strata) and the same draw scores "
               "every layer.", "2.5th and 97.5th percentiles of the resampled differences",
               "Efron & Tibshirani 1993, ch. 13 and 16"),
    Definition("differences.<layer>.<metric>.significant",
               "The interval excludes 0: the difference is significant at 95 %.",
               "ci_low > 0 or ci_high < 0", "Efron & Tibshirani 1993"),
    Definition("intervals.<layer>.<metric>", "95 % percentile bootstrap interval of the "
               "layer's own metric, from the same resamples.", "", "agribound 1.0 bootstrap"),
)


def render_comparison_html(report: dict) -> str:
    """The comparison report (``compare.comparison_report``, plus ``reproduce``) as HTML.

    Raises KeyError when the report lacks a key the page shows.
    """
    metrics = report["metrics"]
    names = list(report["layers"])
    f1 = metrics["side_by_side"]["f1"]
    best = max(range(len(names)), key=lambda k: _number(f1[k]))
    keys = [k for k in COMPARED_KEYS if k in metrics["side_by_side"]]
    differences = metrics["differences"]
    n_significant = sum(
        bool(d["significant"]) for layer in differences.values() for d in layer.values()
    )
    has_ci = bool(report["bootstrap"]["n_resamples"])
    layer_chart = figures.bar_chart(
        names,
        {label: [metrics["per_layer"][n][key] for n in names] for key, label in CHART_METRICS},
        ylabel="Precision, recall, F1 (–)", xlabel="Predicted layer", ylim=(0, 1.05),
        intervals={label: [metrics["intervals"][n].get(key) for n in names]
                   for key, label in CHART_METRICS} if has_ci else None,
    )
    others = names[1:]
    difference_chart = figures.bar_chart(
        list(DIFFERENCE_LABELS),
        {n: [differences[n][key]["difference"] for key in DIFFERENCE_METRICS] for n in others},
        ylabel=f"Difference against {names[0]} (–)", xlabel="Metric",
        intervals={n: [differences[n][key]["ci"] for key in DIFFERENCE_METRICS]
                   for n in others} if has_ci else None,
    )
    sections = [
        Section("side-by-side", "Side by side", "comparepredictions/side_by_side.html.j2",
                {"names": names, "keys": keys, "fig_layers": layer_chart, "has_ci": has_ci},
                lead=True),
        Section("differences", f"Differences against {names[0]}",
                "comparepredictions/differences.html.j2",
                {"names": names, "keys": _difference_keys(differences), "has_ci": has_ci,
                 "fig_differences": difference_chart}),
    ]
    definitions = [d for d in DEFINITIONS if d.key in keys] + list(COMPARISON_DEFINITIONS)
    return render_report(
        report,
        title=TITLE,
        algorithm_id=ALGORITHM_ID,
        sections=sections,
        alerts=list(report.get("warnings") or []),
        definitions=definitions,
        summary_template="comparepredictions/summary.html.j2",
        summary_context={"names": names, "best": best, "n_significant": n_significant,
                         "has_ci": has_ci},
    )


def _difference_keys(differences: dict) -> list[str]:
    """The metrics with differences, those drawn first."""
    present = list(next(iter(differences.values()), {}))
    return [k for k in DIFFERENCE_METRICS if k in present] + [
        k for k in present if k not in DIFFERENCE_METRICS
    ]


def _number(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return -math.inf
    return value if math.isfinite(value) else -math.inf
