"""Parameter declarations and readers shared by the algorithms: the two polygon layers, the
equal-area CRS, the matching parameters of the main evaluation, report destinations.

Each helper returns parameter objects (the algorithm adds them, so it keeps the order and can
mark some advanced); labels pass through the algorithm's ``tr``; every parameter carries a
help string (its long help in the toolbox's parameter tooltip).
"""

from __future__ import annotations

from qgis.core import (
    QgsProcessingParameterCrs,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterNumber,
    QgsProcessingParameterString,
)

from ..core.geometry.crs import DEFAULT_EQUAL_AREA_CRS
from .compat import (
    ADVANCED,
    FIELD_PARAMETER_NUMERIC,
    NUMBER_DOUBLE,
    NUMBER_INTEGER,
    TABLE,
    VECTOR_POLYGON,
)
from .layers import crs_for_pyproj
from .outputs import FALSE_NEGATIVES, FALSE_POSITIVES, PER_FIELD, TRUE_POSITIVES

MATCHING_LABELS = (
    "One-to-one, greedy by descending IoU (default)",
    "Many-to-one (each reference takes its best prediction)",
    "Optimal one-to-one (most matches, then largest total IoU)",
)


def with_help(parameter, text: str):
    """``parameter`` with its help string set (shown as the tooltip in the toolbox)."""
    if hasattr(parameter, "setHelp"):  # QGIS >= 3.16
        parameter.setHelp(text)
    return parameter


def advanced(parameter):
    """``parameter`` marked advanced (folded away in the toolbox dialog)."""
    parameter.setFlags(parameter.flags() | ADVANCED)
    return parameter


def polygon_source(name: str, label: str, tr, help_text: str = ""):
    """A polygon layer input (any CRS, any provider, selection allowed)."""
    return with_help(
        QgsProcessingParameterFeatureSource(name, tr(label), [VECTOR_POLYGON]),
        tr(help_text or "A polygon layer in any CRS; invalid geometries are repaired, null, "
           "empty and zero-area features dropped and counted."),
    )


def predicted_and_reference(tr):
    """The PREDICTED and REFERENCE polygon layers."""
    return [
        polygon_source("PREDICTED", "Predicted polygons", tr,
                       "The polygons to score (model output, extracted boundaries)."),
        polygon_source("REFERENCE", "Reference polygons", tr,
                       "The reference (ground truth) polygons."),
    ]


def equal_area_crs_parameter(tr, name: str = "EQUAL_AREA_CRS"):
    """The CRS areas and IoU are computed in (default EPSG:6933)."""
    return with_help(
        QgsProcessingParameterCrs(
            name,
            tr("Equal-area CRS for areas and IoU (metres)"),
            defaultValue=DEFAULT_EQUAL_AREA_CRS,
            # Optional only so that an omitted value falls back to the default: 3.22
            # rejects a missing CRS value even when the parameter has a default.
            optional=True,
        ),
        tr("A projected CRS in metres that preserves areas, in which areas and IoU are "
           "measured. Longitude/latitude layers in a cylindrical equal-area CRS (such as the "
           "default) are overlaid in longitude/latitude and their areas integrated exactly; "
           "other layers are reprojected with each edge cut only where its image bends away "
           "from the chord (areas within 1e-9 of 50 m pieces). Default EPSG:6933, WGS 84 / "
           "NSIDC EASE-Grid 2.0 Global."),
    )


def equal_area_crs_value(algorithm, parameters, context, name: str = "EQUAL_AREA_CRS"):
    """The equal-area CRS parameter as a pyproj-readable definition (default EPSG:6933)."""
    crs = algorithm.parameterAsCrs(parameters, name, context)
    return crs_for_pyproj(crs) if crs.isValid() else DEFAULT_EQUAL_AREA_CRS


def iou_threshold_parameter(tr, name: str = "IOU_THRESHOLD"):
    """The IoU threshold of a match, in (0, 1], default 0.5."""
    return with_help(
        QgsProcessingParameterNumber(
            name,
            tr("IoU threshold for a match, in (0, 1]"),
            NUMBER_DOUBLE,
            defaultValue=0.5,
            minValue=0.0,
            maxValue=1.0,
        ),
        tr("A predicted and a reference polygon can match when IoU = |P ∩ R| / |P ∪ R| is at "
           "least this (relative tolerance 1e-9). Default 0.5."),
    )


def matching_parameter(tr, name: str = "MATCHING"):
    """The matching rule: an index into core.matching.rules.MATCHING_METHODS (default 0)."""
    return with_help(
        QgsProcessingParameterEnum(
            name,
            tr("Matching rule"),
            options=[tr(label) for label in MATCHING_LABELS],
            defaultValue=0,
        ),
        tr("0: one-to-one, pairs by descending IoU (default); 1: many-to-one (agribound "
           "0.1.x); 2: optimal one-to-one (most matches, then the largest total IoU)."),
    )


def boundary_parameters(tr, tolerance: str = "BOUNDARY_TOLERANCE",
                        spacing: str = "BOUNDARY_SAMPLE_SPACING"):
    """Boundary tolerance (0 = off) and boundary sample spacing (0 = automatic), in m."""
    return [
        with_help(
            QgsProcessingParameterNumber(
                tolerance,
                tr("Boundary tolerance in m for boundary precision/recall (0 = off)"),
                NUMBER_DOUBLE,
                defaultValue=0.0,
                minValue=0.0,
            ),
            tr("Boundary precision/recall/F1: the share of boundary length within this "
               "distance of the other layer's boundaries. 0 switches them off."),
        ),
        with_help(
            QgsProcessingParameterNumber(
                spacing,
                tr("Boundary sample spacing Δ in m (0 = automatic: perimeter / 1000, ≥ 1 m)"),
                NUMBER_DOUBLE,
                defaultValue=1.0,
                minValue=0.0,
            ),
            tr("Hausdorff distances of matched pairs are low by at most Δ/2 and mean boundary "
               "distances within Δ/4 of exact. Default 1 m."),
        ),
    ]


def bootstrap_parameters(tr, default_resamples: int = 0, resamples: str = "BOOTSTRAP",
                         seed: str = "BOOTSTRAP_SEED"):
    """Number of bootstrap resamples (0 = off) and their seed."""
    return [
        with_help(
            QgsProcessingParameterNumber(
                resamples,
                tr("Bootstrap resamples for 95 % intervals (0 = off)"),
                NUMBER_INTEGER,
                defaultValue=default_resamples,
                minValue=0,
            ),
            tr("Percentile intervals at 95 % from this many resamples of the reference "
               "fields with replacement (within strata when a strata field is given)."),
        ),
        with_help(
            QgsProcessingParameterNumber(
                seed,
                tr("Bootstrap seed"),
                NUMBER_INTEGER,
                defaultValue=42,
                minValue=0,
            ),
            tr("Seed of the resampling: the same seed gives the same intervals."),
        ),
    ]


def strata_field_parameter(tr, name: str = "STRATA_FIELD", parent: str = "REFERENCE"):
    """An optional field of the reference layer: metrics per stratum."""
    return with_help(
        QgsProcessingParameterField(
            name,
            tr("Strata field of the reference layer (metrics per stratum)"),
            parentLayerParameterName=parent,
            optional=True,
        ),
        tr("A reference field (county, crop type…): metrics per value, and bootstrap "
           "resampling within each."),
    )


def size_bins_parameter(tr, name: str = "SIZE_BINS"):
    """Size classes in ha (core.matching.grouping.parse_size_bins reads the text)."""
    return with_help(
        QgsProcessingParameterString(
            name,
            tr("Size classes in ha: empty = off, 'auto', or edges such as 0,0.5,1,2,5,inf"),
            defaultValue="",
            optional=True,
        ),
        tr("Empty: off. 'auto': a 1-2-5 series in ha spanning the reference areas. Or "
           "increasing edges in ha such as 0,0.5,1,2,5,inf: metrics per size class "
           "[lower, upper) (per_size_class)."),
    )


def table_sink(name: str, label: str, tr, help_text: str, optional: bool = False):
    """A table output (no geometry)."""
    return with_help(
        QgsProcessingParameterFeatureSink(
            name, tr(label), TABLE, optional=optional, createByDefault=True
        ),
        tr(help_text),
    )


def report_destinations(tr, json_name: str = "REPORT_JSON", html_name: str = "REPORT_HTML",
                        labels=("Report (JSON)", "Report (HTML)"), help_texts=None):
    """Optional JSON and HTML report files (``labels``: their labels; ``help_texts``: their
    help, by default the generic one)."""
    json_help, html_help = help_texts or (
        "Metrics, parameters, inputs and library versions, machine-readable (it feeds "
        "Check release thresholds).",
        "The same report to read: one self-contained HTML file.",
    )
    return [
        with_help(
            QgsProcessingParameterFileDestination(
                json_name, tr(labels[0]), "JSON files (*.json)",
                optional=True, createByDefault=True,
            ),
            tr(json_help),
        ),
        with_help(
            QgsProcessingParameterFileDestination(
                html_name, tr(labels[1]), "HTML files (*.html *.htm)",
                optional=True, createByDefault=True,
            ),
            tr(html_help),
        ),
    ]


def optional_field(name: str, label: str, tr, parent: str, numeric: bool = False,
                   help_text: str | None = None):
    """An optional field of the layer parameter ``parent`` (a number field when ``numeric``);
    without ``help_text`` the algorithm gives its help (``add_missing_help``)."""
    parameter = QgsProcessingParameterField(
        name, tr(label), parentLayerParameterName=parent, optional=True,
        **({"type": FIELD_PARAMETER_NUMERIC} if numeric else {}),
    )
    return with_help(parameter, tr(help_text)) if help_text else parameter


def evaluation_sinks(tr):
    """The outputs of an object-level evaluation, created by default: the true positives
    (matched predictions), false positives, false negatives (polygons) and the per-field
    table; their help comes from the algorithm (``add_missing_help``)."""
    sinks = [
        QgsProcessingParameterFeatureSink(
            name, tr(label), VECTOR_POLYGON, optional=True, createByDefault=True
        )
        for name, label in (
            (TRUE_POSITIVES, "True positives (matched predictions)"),
            (FALSE_POSITIVES, "False positives (unmatched predictions)"),
            (FALSE_NEGATIVES, "False negatives (unmatched references)"),
        )
    ]
    sinks.append(QgsProcessingParameterFeatureSink(
        PER_FIELD, tr("Per-field table (joins to the reference layer)"), TABLE, optional=True,
        createByDefault=True,
    ))
    return sinks


def requested(parameters, name) -> bool:
    """False when an optional output was left out (qgis_process) or skipped (toolbox)."""
    return parameters.get(name) not in (None, "")


def add_missing_help(algorithm, texts: dict) -> None:
    """Give each parameter of ``algorithm`` named in ``texts`` that has no help string yet
    its text (through the algorithm's ``tr``)."""
    for parameter in algorithm.parameterDefinitions():
        if not parameter.help() and parameter.name() in texts:
            parameter.setHelp(algorithm.tr(texts[parameter.name()]))
