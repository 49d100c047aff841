"""Figures of the HTML reports: matplotlib charts returned as embedded data-URI images.

Every report of every algorithm draws its figures here, so they look alike: labelled axes
with units, a colour-blind-safe palette (Okabe–Ito) that stays readable in grey print (each
series also differs by line style, marker or hatch), no pyplot (QGIS's own matplotlib
backend is left alone), no file written, no network.

A figure is built with ``new_figure`` (or one of the chart helpers) and turned into an
``<img src=...>`` value with ``to_data_uri``; the report template embeds it with the
``figure`` macro of ``resources/templates/base.html.j2``.
"""

from __future__ import annotations

import base64
import io
import math
import threading
from collections.abc import Mapping, Sequence

import numpy as np

#: Okabe–Ito colours of the outcome classes, as in the QML styles of the layer outputs.
COLORS = {
    "tp": "#0072b2",  # blue: true positives (matched predictions)
    "fp": "#e69f00",  # orange: false positives (unmatched predictions)
    "fn": "#cc79a7",  # reddish purple: false negatives (unmatched references)
    "reference": "#000000",
    "neutral": "#555555",
}
#: Colours, line styles, markers and hatches cycled through series, in this order.
SERIES_COLORS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000")
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)), (0, (8, 2)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
HATCHES = ("", "///", "...", "xx", "\\\\", "oo", "--")

DEFAULT_SIZE_IN = (6.4, 3.4)
#: Held while a figure is saved under its own matplotlib settings (``to_data_uri``).
_SAVE_LOCK = threading.Lock()


def new_figure(width_in: float = DEFAULT_SIZE_IN[0], height_in: float = DEFAULT_SIZE_IN[1],
               nrows: int = 1, ncols: int = 1, **subplot_kw):
    """A matplotlib Figure (no pyplot) and its axes: one Axes, or an array (nrows, ncols).

    Sizes in inches. Fonts and grid are set for print (9 pt, light grid).
    """
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in))
    axes = figure.subplots(nrows, ncols, squeeze=True, subplot_kw=subplot_kw or None)
    for ax in np.atleast_1d(axes).ravel():
        _style_axes(ax)
    return figure, axes


def to_data_uri(figure, fmt: str = "svg", dpi: int = 110, tight: bool = True) -> str:
    """The figure as a ``data:`` URI (SVG by default, or "png"), for ``<img src=...>``.

    SVG keeps lines sharp in print and is small for charts; PNG is smaller for figures
    with many thousands of shapes. The figure is closed afterwards. ``tight``: lay it out
    with ``tight_layout`` first (False: the caller has laid it out, e.g. around a legend).

    Raises ValueError for another format.
    """
    if fmt not in ("svg", "png"):
        raise ValueError(f"fmt must be 'svg' or 'png', got {fmt!r}")
    import matplotlib

    if tight:
        figure.tight_layout()
    buffer = io.BytesIO()
    # metadata Date None: the same figure gives the same bytes (reports diff cleanly).
    metadata = {"Date": None} if fmt == "svg" else {}
    # SVG text stays text (smaller, searchable, printed in the page's font). rcParams are
    # the process's: the lock keeps two threads' settings from undoing each other's (two
    # reports drawn at once, say by two algorithms running in the background in QGIS).
    with _SAVE_LOCK, matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ioueval"}):
        figure.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata)
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def series_style(k: int) -> dict:
    """Colour, line style and marker of the k-th series (k >= 0), cycling."""
    return {
        "color": SERIES_COLORS[k % len(SERIES_COLORS)],
        "linestyle": LINE_STYLES[k % len(LINE_STYLES)],
        "marker": MARKERS[k % len(MARKERS)],
    }


def line_chart(x: Sequence[float], series: Mapping[str, Sequence[float]], *, xlabel: str,
               ylabel: str, vlines: Mapping[str, float] | None = None,
               ylim: tuple[float, float] | None = None, xlim: tuple[float, float] | None = None,
               markers: bool = True, size_in=DEFAULT_SIZE_IN) -> str:
    """Lines of y against x, one per series, with optional labelled vertical lines.

    Args:
        x: float array (n,).
        series: {label: float array (n,)}; NaN or None leave a gap.
        xlabel, ylabel: axis labels with units, e.g. "IoU threshold (–)".
        vlines: {label: x} drawn as dashed grey lines (e.g. the chosen threshold).
    Returns the figure as a data URI (SVG).
    """
    figure, ax = new_figure(*size_in)
    x = np.asarray(x, dtype=float)
    for k, (label, y) in enumerate(series.items()):
        style = series_style(k)
        if not markers:
            style.pop("marker")
        ax.plot(x, _floats(y), label=label, markersize=3.5, linewidth=1.4, **style)
    _vlines(ax, vlines)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if xlim:
        ax.set_xlim(*xlim)
    if ylim:
        ax.set_ylim(*ylim)
    if len(series) > 1 or vlines:
        _legend_above(ax)
    return to_data_uri(figure)


def histogram(samples: Mapping[str, Sequence[float]], *, xlabel: str, ylabel: str = "Count",
              bins: int | Sequence[float] = 20, range_: tuple[float, float] | None = None,
              vlines: Mapping[str, float] | None = None, size_in=DEFAULT_SIZE_IN) -> str:
    """Step histograms of one or more samples on shared bins, with optional vertical lines.

    Args:
        samples: {label: float array}; NaN values are left out.
        xlabel: label with unit, e.g. "Hausdorff distance (m)".
        bins: a count or the bin edges.
        range_: (low, high) of the bins when ``bins`` is a count.
    Returns the figure as a data URI (SVG).
    """
    figure, ax = new_figure(*size_in)
    if range_ is None and np.ndim(bins) == 0:
        ends = [(float(a.min()), float(a.max())) for a in map(_finite, samples.values())
                if a.size]
        range_ = (min(e[0] for e in ends), max(e[1] for e in ends)) if ends else (0, 1)
        if range_[0] == range_[1]:
            range_ = (range_[0] - 0.5, range_[1] + 0.5)
    edges = np.histogram_bin_edges(np.zeros(0), bins=bins, range=range_)
    for k, (label, values) in enumerate(samples.items()):
        # Counted here, one sample at a time, and drawn as one weighted value per bin (the
        # same bars): matplotlib's hist would hold copies of a national layer's values.
        values = _finite(values)
        n, (counts, _) = values.size, np.histogram(values, bins=edges)
        del values
        style = series_style(k)
        ax.hist(edges[:-1], bins=edges, weights=counts, histtype="step", linewidth=1.6,
                color=style["color"], linestyle=style["linestyle"], label=f"{label} (n = {n:,})")
        if k == 0:  # a light fill under the first sample only: the others stay visible
            ax.hist(edges[:-1], bins=edges, weights=counts, histtype="stepfilled",
                    color=style["color"], alpha=0.15)
    _vlines(ax, vlines)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    _legend_above(ax)
    return to_data_uri(figure)


def bar_chart(categories: Sequence[str], series: Mapping[str, Sequence[float]], *,
              ylabel: str, xlabel: str = "",
              intervals: Mapping[str, Sequence[tuple[float, float] | None]] | None = None,
              ylim: tuple[float, float] | None = None, size_in=DEFAULT_SIZE_IN) -> str:
    """Grouped bars: one group per category, one bar per series, optional error bars.

    Args:
        categories: labels (n,) along x.
        series: {label: float array (n,)} (NaN or None: no bar).
        intervals: {label: [(low, high) or None] * n}, drawn as error bars (e.g. 95 % bootstrap).
    Returns the figure as a data URI (SVG).
    """
    figure, ax = new_figure(*size_in)
    n_series = max(len(series), 1)
    width = 0.8 / n_series
    positions = np.arange(len(categories), dtype=float)
    for k, (label, values) in enumerate(series.items()):
        values = _floats(values)
        offset = positions + (k - (n_series - 1) / 2) * width
        style = series_style(k)
        ax.bar(offset, np.nan_to_num(values), width=width, label=label, color=style["color"],
               alpha=0.85, hatch=HATCHES[k % len(HATCHES)], edgecolor="black", linewidth=0.5)
        bounds = (intervals or {}).get(label)
        if bounds:
            low = np.array([np.nan if b is None or b[0] is None else b[0] for b in bounds])
            high = np.array([np.nan if b is None or b[1] is None else b[1] for b in bounds])
            has = np.isfinite(low) & np.isfinite(high) & np.isfinite(values)
            if has.any():
                # Drawn from its own bounds: a percentile interval need not contain the
                # value (the bar), so yerr relative to the bar could be negative.
                ax.errorbar(offset[has], (low[has] + high[has]) / 2,
                            yerr=(high[has] - low[has]) / 2,
                            fmt="none", ecolor="black", capsize=2.5, linewidth=0.9)
    ax.set_xticks(positions)
    ax.set_xticklabels([str(c) for c in categories], rotation=30 if len(categories) > 6 else 0,
                       ha="right" if len(categories) > 6 else "center", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    if len(series) > 1:
        _legend_above(ax)
    return to_data_uri(figure)


def panel_square(extent) -> tuple[float, float, float, float]:
    """The square a small map of ``polygon_panels`` shows around ``extent`` (xmin, ymin,
    xmax, ymax): centred on it, its longer side plus 5 % on each side."""
    xmin, ymin, xmax, ymax = extent
    pad = 0.05 * max(xmax - xmin, ymax - ymin, 1e-9)
    side = max(xmax - xmin, ymax - ymin) / 2 + pad
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2
    return cx - side, cy - side, cx + side, cy + side


def polygon_panels(panels: Sequence[Mapping], *, ncols: int = 4, panel_in: float = 1.6,
                   scale_unit: str = "m", legend: Sequence = ()) -> str:
    """Small maps, one panel per item, each with its own extent and a scale note.

    Args:
        panels: dicts with "title" (str), "layers": list of (geometries, style) where
            geometries is a sequence of shapely polygons in a metric CRS and style a dict
            with "edgecolor", "facecolor", "linewidth", "linestyle", "hatch" (optional),
            and optional "extent" (xmin, ymin, xmax, ymax; the map shows
            ``panel_square(extent)``).
        scale_unit: unit of the coordinates, written under each panel with its width.
        legend: (label, style) pairs, drawn as a legend above the panels (style as in
            "layers").
    Returns the figure as a data URI (SVG).
    """
    from matplotlib.patches import Patch, PathPatch
    from matplotlib.path import Path as MplPath

    n = max(len(panels), 1)
    nrows = math.ceil(n / ncols)
    legend_in = 0.3 * math.ceil(len(legend) / ncols) + 0.1 if legend else 0.0
    height = (panel_in + 0.5) * nrows + legend_in
    figure, axes = new_figure(panel_in * ncols, height, nrows, ncols)
    axes = np.atleast_1d(axes).ravel()
    for ax in axes[len(panels):]:
        ax.set_axis_off()
    for ax, panel in zip(axes, panels):
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        for spine in ax.spines.values():
            spine.set_visible(False)
        for geometries, style in panel["layers"]:
            for geometry in geometries:
                path = _polygon_path(geometry, MplPath)
                if path is not None:
                    ax.add_patch(PathPatch(path, **{"facecolor": "none", **style}))
        extent = panel.get("extent")
        if extent is not None:
            xmin, ymin, xmax, ymax = panel_square(extent)
            ax.set_xlim(xmin, xmax)
            ax.set_ylim(ymin, ymax)
            ax.set_xlabel(f"{xmax - xmin:,.0f} {scale_unit} across", fontsize=7)
        ax.set_title(panel.get("title", ""), fontsize=7.5)
    if not legend:
        return to_data_uri(figure)
    handles = [Patch(label=label, **{"facecolor": "none", **style}) for label, style in legend]
    figure.legend(handles=handles, loc="upper center", ncol=min(len(handles), ncols),
                  fontsize=7.5, frameon=False, borderaxespad=0.2, handlelength=2.2,
                  handleheight=1.2)
    figure.tight_layout(rect=(0, 0, 1, 1 - legend_in / height))
    return to_data_uri(figure, tight=False)


def _polygon_path(geometry, path_class):
    """A matplotlib Path of a (multi)polygon with holes (even-odd), or None if empty."""
    if geometry is None or geometry.is_empty:
        return None
    parts = getattr(geometry, "geoms", [geometry])
    vertices, codes = [], []
    for part in parts:
        if part.geom_type != "Polygon":
            continue
        for ring in (part.exterior, *part.interiors):
            coords = np.asarray(ring.coords)[:, :2]
            if len(coords) < 3:
                continue
            vertices.append(coords)
            ring_codes = np.full(len(coords), path_class.LINETO, dtype=np.uint8)
            ring_codes[0] = path_class.MOVETO
            ring_codes[-1] = path_class.CLOSEPOLY
            codes.append(ring_codes)
    if not vertices:
        return None
    return path_class(np.concatenate(vertices), np.concatenate(codes))


def _style_axes(ax) -> None:
    ax.tick_params(labelsize=8)
    ax.xaxis.label.set_size(9)
    ax.yaxis.label.set_size(9)
    ax.grid(True, color="#cccccc", linewidth=0.5)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _legend_above(ax) -> None:
    """The legend in one row above the axes, clear of the data."""
    handles, labels = ax.get_legend_handles_labels()
    # One row when short; long labels in rows of two or one, so the axes keep their width.
    width = sum(len(label) for label in labels)
    ncol = min(len(labels), 4) if width <= 60 else (2 if max(map(len, labels)) <= 40 else 1)
    ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0.0, 1.01),
              ncol=max(ncol, 1), fontsize=8, frameon=False, borderaxespad=0.0)


def _vlines(ax, vlines) -> None:
    for k, (label, x) in enumerate((vlines or {}).items()):
        if x is None or not math.isfinite(x):
            continue
        ax.axvline(x, color="#444444", linestyle=("--", ":", "-.")[k % 3], linewidth=1.0,
                   label=label)


def _floats(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _finite(values) -> np.ndarray:
    array = _floats(values)
    return array[np.isfinite(array)]
