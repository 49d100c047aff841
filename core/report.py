"""Report data (metrics, parameters, inputs, provenance) and its JSON and HTML files."""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
from pathlib import Path

import numpy as np
import pyproj
import shapely

from .evaluate import Evaluation

#: Headline metrics shown first in the HTML report, with their labels.
HEADLINE = (
    ("precision", "Precision"),
    ("recall", "Recall"),
    ("f1", "F1"),
    ("iou_mean", "Mean IoU of matched pairs"),
    ("count_tp", "True positives"),
    ("count_fp", "False positives"),
    ("count_fn", "False negatives"),
)


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries that decide the scores."""
    return {
        "python": platform.python_version(),
        "shapely": shapely.__version__,
        "geos": shapely.geos_version_string,
        "pyproj": pyproj.__version__,
        "proj": pyproj.proj_version_str,
        "numpy": np.__version__,
        **_optional_versions(("scipy", "matplotlib", "jinja2")),
    }


def _optional_versions(names) -> dict[str, str]:
    """Versions of optional libraries, "not installed" for those missing."""
    import importlib

    versions = {}
    for name in names:
        try:
            versions[name] = importlib.import_module(name).__version__
        except ImportError:
            versions[name] = "not installed"
    return versions


def build_report(evaluation: Evaluation, inputs: dict, provenance: dict) -> dict:
    """The report as a JSON-ready dict: metrics, parameters, inputs, provenance.

    Args:
        evaluation: the result of ``evaluate``.
        inputs: what was read, e.g. {"reference": {"source": ..., "feature_count": ...}, ...}.
        provenance: versions known only to the caller (plugin, QGIS); library versions are added.
    """
    return {
        "metrics": evaluation.metrics,
        "parameters": evaluation.parameters,
        "inputs": inputs,
        "provenance": {**provenance, **library_versions()},
        "warnings": list(evaluation.warnings),
    }


def to_json_text(report: dict) -> str:
    """JSON text with NaN and infinities written as null (they are not valid JSON)."""
    return json.dumps(_json_safe(report), indent=2, ensure_ascii=False, allow_nan=False)


def render_html(report: dict, template_path: str | os.PathLike) -> str:
    """Render the report with a Jinja2 template (autoescaped)."""
    import jinja2

    template_path = Path(template_path)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_path.parent),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["number"] = _format_number
    figures = {}
    average_precision = report.get("metrics", {}).get("average_precision")
    if average_precision:
        figures["precision_recall"] = precision_recall_svg(average_precision)
    return env.get_template(template_path.name).render(
        report=_json_safe(report), headline=HEADLINE, figures=figures
    )


def precision_recall_svg(average_precision: dict) -> str:
    """The precision-recall curves (IoU 0.50 and averaged over 0.50:0.95) as inline SVG."""
    import io

    from matplotlib.figure import Figure  # no pyplot: leaves QGIS's matplotlib backend alone

    figure = Figure(figsize=(5, 3.6))
    axes = figure.add_subplot()
    for key, label in (("pr_curve_50", "IoU 0.50"), ("pr_curve", "IoU 0.50:0.95")):
        points = average_precision.get(key) or []
        axes.plot(
            [p["recall"] for p in points],
            [np.nan if p["precision"] is None else p["precision"] for p in points],
            label=label,
        )
    axes.set_xlabel("Recall")
    axes.set_ylabel("Precision")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left")
    figure.tight_layout()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Write text to a temporary file beside ``path`` and rename it into place.

    Raises OSError if the folder cannot be written.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_current_umask())  # mkstemp makes it private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _json_safe(value):
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def _format_number(value) -> str:
    if isinstance(value, bool) or value is None:
        return "–" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:,.4f}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)
