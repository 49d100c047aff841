"""The STUDY_AREA and STUDY_AREA_RULE parameters of ioueval:evaluatepolygons: their
declarations, their check, and the selection of both layers' rows (core.pairs.study_area)."""

from __future__ import annotations

import dataclasses

from qgis.core import QgsProcessingParameterEnum, QgsProcessingParameterFeatureSource

from ..core.geometry.stored import StoredGeometries
from ..core.pairs.study_area import (
    STUDY_AREA_RULES,
    select_in_study_area,
    select_stored_in_study_area,
    study_area_footprint,
)
from ..core.util.wording import count_of
from .compat import VECTOR_POLYGON
from .layers import read_source
from .parameters import with_help
from .validation import polygon_source_error

STUDY_AREA = "STUDY_AREA"
STUDY_AREA_RULE = "STUDY_AREA_RULE"
RULE_LABELS = (
    "Intersects the study area (default)",
    "Centroid within the study area",
    "Clip to the study area",
)


def study_area_parameters(tr):
    """The optional study area layer and its selection rule."""
    return [
        with_help(
            QgsProcessingParameterFeatureSource(
                STUDY_AREA, tr("Study area (optional: evaluate only inside it)"),
                [VECTOR_POLYGON], optional=True,
            ),
            tr("Polygons outlining the area to evaluate (all its features, dissolved). The same "
               "rule selects the rows of both layers, so a field crossing the outline is kept "
               "or dropped on both sides alike; the report counts the rows left out."),
        ),
        with_help(
            QgsProcessingParameterEnum(
                STUDY_AREA_RULE, tr("Study area rule"),
                options=[tr(label) for label in RULE_LABELS], defaultValue=0,
            ),
            tr("0: keep features that intersect the study area; 1: keep features whose "
               "centroid is inside it (or on its outline); 2: keep the parts inside it "
               "(features cut at the outline, areas measured inside only)."),
        ),
    ]


def study_area_error(algorithm, parameters, context) -> str | None:
    """A message when the study area is given but cannot be read or holds no polygons."""
    if parameters.get(STUDY_AREA) in (None, ""):
        return None
    source = algorithm.parameterAsSource(parameters, STUDY_AREA, context)
    if source is None:
        return f"{STUDY_AREA}: the layer could not be read"
    return polygon_source_error(source, STUDY_AREA)


def apply_study_area(algorithm, parameters, context, feedback, predicted, reference,
                     progress_range=(0.0, 100.0)):
    """Keep the rows of both layers (layers.SourceFeatures) the study area selects.

    Returns (predicted, reference, metrics): the selected SourceFeatures and the report keys
    study_area_rule, count_{reference,predicted}_outside_study_area and (clip rule)
    count_{reference,predicted}_clipped; unchanged layers and {} without a study area, None
    for the layers when the user canceled.

    The study area is read (its geometries only) within ``progress_range`` % of the
    algorithm's progress bar.

    Raises ValueError (naming STUDY_AREA) when the study area and the layers disagree on
    having a CRS or it cannot be transformed to theirs.
    """
    if parameters.get(STUDY_AREA) in (None, ""):
        return predicted, reference, {}
    source = algorithm.parameterAsSource(parameters, STUDY_AREA, context)
    features = read_source(source, feedback, progress_range, [])
    if features is None:
        return None, None, {}
    rule = STUDY_AREA_RULES[algorithm.parameterAsEnum(parameters, STUDY_AREA_RULE, context)]
    area, area_crs = study_area_footprint(features.geometries, features.crs_wkt)
    metrics = {"study_area_rule": rule}
    selected = []
    for name, layer in (("predicted", predicted), ("reference", reference)):
        select = (select_stored_in_study_area if isinstance(layer.geometries, StoredGeometries)
                  else select_in_study_area)
        try:
            selection = select(layer.geometries, layer.crs_wkt, area, area_crs, rule)
        except ValueError as exc:
            raise ValueError(f"{STUDY_AREA}: {exc}") from None
        selected.append(
            dataclasses.replace(
                layer,
                geometries=selection.geometries,
                feature_ids=layer.feature_ids[selection.keep],
                attributes=layer.attributes.take(selection.keep),
            )
        )
        metrics[f"count_{name}_outside_study_area"] = selection.n_outside
        if rule == "clip":
            metrics[f"count_{name}_clipped"] = selection.n_clipped
        feedback.pushInfo(
            f"Study area ({rule}): {selection.n_outside} of "
            f"{count_of(len(layer.feature_ids), f'{name} feature')} left out"
            + (f", {selection.n_clipped} clipped" if rule == "clip" else "")
        )
    return selected[0], selected[1], metrics
