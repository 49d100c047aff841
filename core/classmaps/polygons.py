"""Categorised polygon layers (two land-cover maps, a crop map against a parcel registry):
the class-map confusion matrix from exact overlay areas in an equal-area CRS, with no
rasterisation and no resampling error.

The layers are prepared by core.geometry.prepare (repair, reprojection: the one implementation), cut to
the area compared (the overlap of the two layers' extents, or a study area), dissolved per
class, and overlaid with core.pairs.overlap's candidate machinery. Cell M[p, r] of the matrix is the
area in m² where the prediction says class p and the reference says class r; the NO_PREDICTION
row holds the reference area of each class that no predicted polygon covers. Predicted ground
where no reference polygon lies is not scored (as reference nodata in a label raster): the
reference says nothing there.

Two polygons of different classes on the same ground in one layer count once per class (the
ground is in both classes' areas) and are reported; polygons of one class that overlap count
once (the class is dissolved). Rows without a class value are dropped and counted: they
move nothing, not even the extent of the area compared.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import shapely

from . import confusion
from ..geometry.crs import check_equal_area, crs_label, evaluation_crs, resolve_crs
from ..matching.labels import MISSING, normalise_labels
from ..pairs.overlap import intersection_area, overlap_pairs
from ..util.parallel import ProgressCallback
from ..util.wording import count_of, plural
from ..geometry.prepare import prepare_layer
from ..geometry.exact_area import lonlat_area_for

logger = logging.getLogger(__name__)


@dataclass
class PolygonClassConfusion:
    """Result of ``polygon_class_confusion``.

    Attributes:
        classes: confusion.ClassTable, one class per class key (``labels.class_key``:
            matching is caseless), in natural order of the keys; each class's value is the
            class as the data spells it: its first spelling in the reference, else in the
            prediction ("Forest" and "forest" are one class, shown "Forest" when the
            reference says so first). Names are "".
        areas_m2: float64 (K + 2, K): rows = prediction (classes, OTHER (always 0 here),
            NO_PREDICTION), columns = reference, in m² of the equal-area CRS.
        alignment: JSON-ready dict: the area compared, coverage, drops, overlaps within
            each layer.
        warnings: messages for the report and the log.
    """

    classes: confusion.ClassTable
    areas_m2: np.ndarray
    alignment: dict
    warnings: list


def polygon_class_confusion(
    predicted,
    predicted_classes,
    reference,
    reference_classes,
    predicted_crs=None,
    reference_crs=None,
    equal_area_crs=None,
    study_area=None,
    study_area_crs=None,
    progress: ProgressCallback | None = None,
) -> PolygonClassConfusion:
    """Exact class-map confusion of two categorised polygon layers.

    Args:
        predicted, reference: sequences of shapely geometries (or None), shapes (n_pred,),
            (n_ref,), in their CRSs.
        predicted_classes, reference_classes: sequences of class values of the same lengths
            (numbers or text, compared by ``labels.class_key``: 3, 3.0 and "3" are one class,
            "Forest" and "forest " too, and "Forêt" in NFC and NFD; None/NaN/NULL/blank: no
            class).
        predicted_crs, reference_crs: anything pyproj reads, or None for both (planar units).
        equal_area_crs: CRS of the areas (default EPSG:6933; ignored in planar units).
        study_area: optional sequence of polygons: the area compared (default: the overlap
            of the two layers' extents, as bounding boxes in the equal-area CRS, of their
            rows with a class: a row without one is not scored and moves nothing).
        study_area_crs: its CRS; None only when the layers have none either (a study area
            without a CRS is never taken to be in the layers' CRS).
        progress: optional callable(fraction done); may raise to cancel.

    Returns a PolygonClassConfusion.

    Raises ValueError when the class lists do not match their layers, exactly one layer has
    a CRS, the study area has a CRS and the layers none or the reverse, or the equal-area
    CRS is not projected in metres.
    """
    for geoms, values, name in ((predicted, predicted_classes, "predicted"),
                                (reference, reference_classes, "reference")):
        if len(values) != len(geoms):
            raise ValueError(f"{name}_classes has {count_of(len(values), 'value')} for "
                             f"{count_of(len(geoms), 'row')}")
    ref_crs = resolve_crs(reference_crs, "reference_crs")
    pred_crs = resolve_crs(predicted_crs, "predicted_crs")
    ea_crs = evaluation_crs(ref_crs, pred_crs, equal_area_crs)
    step = _steps(progress)

    # Geographic layers (and study area) in a cylindrical equal-area CRS are overlaid in
    # longitude/latitude with exact areas, as evaluate does: no densified copies.
    crs_list = [ref_crs, pred_crs]
    if study_area is not None:
        crs_list.append(resolve_crs(study_area_crs, "study_area_crs"))
    lonlat = lonlat_area_for(crs_list, ea_crs) if ea_crs is not None else None
    ref = prepare_layer(reference, ref_crs, ea_crs, "reference", step(0.0, 0.3), lonlat)
    pred = prepare_layer(predicted, pred_crs, ea_crs, "predicted", step(0.3, 0.6), lonlat)
    area = ref.area_of
    warnings = check_equal_area(ea_crs, [ref.overlay, pred.overlay], lonlat)
    ref_values = [reference_classes[i] for i in ref.keep.tolist()]
    pred_values = [predicted_classes[i] for i in pred.keep.tolist()]
    ref_labels = normalise_labels(ref_values, case_insensitive=True)
    pred_labels = normalise_labels(pred_values, case_insensitive=True)
    extent, extent_kind = _area_compared(ref.overlay[ref_labels != MISSING],
                                         pred.overlay[pred_labels != MISSING],
                                         study_area, study_area_crs, ref_crs, ea_crs, lonlat)
    ref_parts = _dissolve_by_class(ref.overlay, ref_labels, extent, area)
    pred_parts = _dissolve_by_class(pred.overlay, pred_labels, extent, area)
    step(0.6, 0.7)(1.0)

    keys = _natural_order(set(ref_parts.labels) | set(pred_parts.labels))
    spelling = _spellings(ref_labels, ref_values, pred_labels, pred_values)
    classes = confusion.ClassTable([spelling[key] for key in keys])
    areas = _area_matrix(ref_parts, pred_parts, keys, step, area)
    alignment = _alignment(ea_crs, extent, extent_kind, (ref, ref_labels, ref_parts),
                           (pred, pred_labels, pred_parts), areas, area)
    warnings += _class_warnings((ref_labels, ref_parts), (pred_labels, pred_parts))
    nothing = _nothing_compared(ref, pred, extent, extent_kind, float(areas.sum()),
                                (ref_labels, pred_labels))
    if nothing:
        warnings.append(nothing)
    for message in warnings:
        logger.warning(message)
    return PolygonClassConfusion(classes, areas, alignment, warnings)


def _area_matrix(ref_parts, pred_parts, keys, step, area=shapely.area) -> np.ndarray:
    """The (K + 2, K) matrix of areas in m² (rows = prediction classes, OTHER, NO_PREDICTION;
    columns = reference classes, in the order of ``keys``) from the class parts of both
    layers: their overlaps, and the reference ground no predicted polygon covers (``area``:
    the area function of the parts' space, ``PreparedLayer.area_of``)."""
    k = len(keys)
    areas = confusion.new_matrix(k, np.float64)
    position = {key: i for i, key in enumerate(keys)}
    r_pos = np.array([position[c] for c in ref_parts.labels], dtype=np.int64)
    p_pos = np.array([position[c] for c in pred_parts.labels], dtype=np.int64)
    pairs = overlap_pairs(ref_parts.geometries, ref_parts.area_m2, pred_parts.geometries,
                          pred_parts.area_m2, step(0.7, 0.95), area=area)
    np.add.at(areas, (p_pos[pairs.predicted], r_pos[pairs.reference]), pairs.intersection_m2)
    # Reference ground of each class that no predicted polygon covers.
    predicted_union = shapely.union_all(pred_parts.geometries) if len(pred_parts.labels) else None
    if predicted_union is None or predicted_union.is_empty:
        covered = np.zeros(len(ref_parts.labels))
    else:
        covered = intersection_area(
            ref_parts.geometries, np.full(len(ref_parts.labels), predicted_union, dtype=object),
            area,
        )
    areas[k + 1, r_pos] = np.maximum(ref_parts.area_m2 - covered, 0.0)
    step(0.95, 1.0)(1.0)
    return areas


def _alignment(ea_crs, extent, extent_kind: str, reference, predicted, areas,
               area=shapely.area) -> dict:
    """The report's "alignment": the CRS and area compared, each layer's area, rows and
    overlaps (``reference``, ``predicted``: (prepared layer, labels, class parts))."""
    (ref, ref_labels, ref_parts), (pred, pred_labels, pred_parts) = reference, predicted
    k = areas.shape[1]
    return {
        "equal_area_crs": crs_label(ea_crs),
        "extent": extent_kind,
        "area_compared_m2": float(area(np.array([extent], dtype=object))[0])
        if extent is not None else 0.0,
        "reference_area_m2": float(ref_parts.union_area_m2),
        "predicted_area_m2": float(pred_parts.union_area_m2),
        "reference_outside_prediction_m2": float(areas[k + 1].sum()),
        "share_reference_outside_prediction_area": float(areas[k + 1].sum() / areas.sum())
        if areas.sum() > 0 else None,
        "reference_rows": _rows(ref, ref_labels),
        "predicted_rows": _rows(pred, pred_labels),
        "reference_overlaps": ref_parts.overlaps(),
        "predicted_overlaps": pred_parts.overlaps(),
    }


def _class_warnings(reference, predicted) -> list:
    """Warnings about the classes of each layer (``reference``, ``predicted``: (labels, class
    parts)): ground of several classes, polygons without a class."""
    warnings = []
    for name, (_, parts) in (("reference", reference), ("predicted", predicted)):
        between = parts.overlaps()["between_classes_m2"]
        if between > 0:
            warnings.append(
                f"the {name} layer has polygons of different classes on the same ground "
                f"({between:.1f} m²): that ground counts once in each of its classes"
            )
    for name, (labels, _) in (("reference", reference), ("predicted", predicted)):
        missing = int(np.count_nonzero(labels == MISSING))
        if missing:
            warnings.append(f"{count_of(missing, f'{name} polygon')} "
                            f"{plural(missing, 'has', 'have')} no class value and "
                            f"{plural(missing, 'is', 'are')} not scored")
    return warnings


def _nothing_compared(ref, pred, extent, extent_kind: str, total_m2: float,
                      labels=None) -> str | None:
    """Why the matrix is empty (None when it is not): an empty layer, a layer none of whose
    polygons has a class (``labels``: the reference's and the prediction's normalised labels),
    an empty area compared, or no classed reference ground inside it."""
    if total_m2 > 0:
        return None
    for name, layer in (("reference", ref), ("predicted", pred)):
        if layer.n == 0:
            return (f"the {name} layer has no polygon to score "
                    f"({count_of(layer.n_input, 'row')} read, "
                    f"{layer.n_dropped} dropped): nothing is compared")
    for name, layer_labels in zip(("reference", "predicted"), labels or ()):
        if not np.any(layer_labels != MISSING):
            which = (f"the {name} layer's only polygon has no class value"
                     if len(layer_labels) == 1 else
                     f"none of the {count_of(len(layer_labels), f'{name} polygon')} has a "
                     f"class value")
            return f"{which}: nothing is compared"
    if extent is None or extent.is_empty:
        if extent_kind.startswith("study area"):
            return "the study area has no polygon: nothing is compared"
        return "the layers' extents do not overlap: nothing is compared"
    return (f"no reference polygon with a class lies in the area compared ({extent_kind}): "
            f"nothing is compared")


def _steps(progress):
    """step(start, end) -> callable(fraction) forwarding to ``progress`` (or a no-op)."""

    def step(start, end):
        def advance(fraction):
            if progress is not None:
                progress(start + (end - start) * fraction)

        return advance

    return step


def _area_compared(ref_geoms, pred_geoms, study_area, study_area_crs, ref_crs, ea_crs,
                   lonlat=None):
    """(polygon or None, description): the study area prepared like the layers, or the
    intersection of the bounding boxes, in the layers' overlay space (the equal-area CRS, or
    longitude/latitude with ``lonlat``), of the two layers' rows that have a class
    (``ref_geoms``, ``pred_geoms``: the rows that are scored; a row without a class moves
    nothing)."""
    if study_area is not None:
        crs = resolve_crs(study_area_crs, "study_area_crs")
        if (crs is None) != (ref_crs is None):
            raise ValueError(
                "STUDY_AREA: the study area has no CRS but the layers have one; assign it its "
                "CRS" if crs is None else
                "STUDY_AREA: the study area has a CRS but the layers have none; remove it or "
                "assign the layers theirs"
            )
        layer = prepare_layer(study_area, crs, ea_crs, "study area", lonlat_area=lonlat)
        if layer.n == 0:
            return None, "study area (empty)"
        return shapely.union_all(layer.overlay), "study area"
    if len(ref_geoms) == 0 or len(pred_geoms) == 0:
        return None, "overlap of the layers' extents (empty)"
    a = shapely.total_bounds(ref_geoms)
    b = shapely.total_bounds(pred_geoms)
    box = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    if box[0] >= box[2] or box[1] >= box[3]:
        return None, "overlap of the layers' extents (empty)"
    return shapely.box(*box), "overlap of the layers' extents"


#: Relative rounding of a sum of overlay areas against their union's area (GEOS's overlays
#: are exact to about 1e-15 relative per vertex; 1e-9 of the layer's area leaves every
#: overlap a map can hold, a square metre of a 1,000 km² layer included).
_OVERLAY_ROUNDING = 1e-9


def _beyond_rounding(value: float, scale: float) -> float:
    """``value`` (m²), or 0.0 when it is within ``scale`` of 0."""
    return float(value) if value > scale else 0.0


@dataclass
class _Dissolved:
    """One layer cut to the area compared and dissolved per class (classes with area)."""

    labels: list
    geometries: np.ndarray
    area_m2: np.ndarray
    sum_of_rows_m2: float
    union_area_m2: float
    pair_overlaps: list

    def overlaps(self) -> dict:
        """Ground covered more than once in this layer, in m²: differences of sums of areas
        and of their union, so a difference within ``_OVERLAY_ROUNDING`` of the layer's area
        (the rounding of the overlays: a tiling of classes gives ±1e-9 m² on 100 fields) is
        0, never a negative area or an overlap that is not there."""
        classes_m2 = float(self.area_m2.sum())
        scale = _OVERLAY_ROUNDING * max(self.sum_of_rows_m2, classes_m2, 0.0)
        return {
            "between_classes_m2": _beyond_rounding(classes_m2 - self.union_area_m2, scale),
            "within_classes_m2": _beyond_rounding(self.sum_of_rows_m2 - classes_m2, scale),
            "class_pairs": [
                {"classes": [a, b], "area_m2": area} for a, b, area in self.pair_overlaps
            ],
        }


def _dissolve_by_class(geoms: np.ndarray, labels: np.ndarray, extent,
                       area=shapely.area) -> _Dissolved:
    """Cut each row to ``extent`` and merge each class's rows into one geometry.

    The loop runs over classes (few), not rows; each union is one vectorised GEOS call.
    """
    has_class = labels != MISSING
    if extent is None or extent.is_empty:
        geoms = np.array([], dtype=object)
        labels = np.array([], dtype=object)
    else:
        geoms = shapely.intersection(geoms[has_class], extent)
        labels = labels[has_class]
    rows_area = area(geoms) if len(geoms) else np.zeros(0)
    out_labels = _natural_order(set(labels.tolist()))
    merged = np.array([_polygonal(shapely.union_all(geoms[labels == label]))
                       for label in out_labels], dtype=object)
    with_geometry = np.flatnonzero([g is not None for g in merged])
    merged_area = np.zeros(len(merged))
    merged_area[with_geometry] = area(merged[with_geometry]) if len(with_geometry) else []
    kept = merged_area > 0  # each class's area measured once, then kept as its area
    out_labels = [label for label, keep in zip(out_labels, kept) if keep]
    dissolved, areas = merged[kept], merged_area[kept]
    union = float(area(np.array([shapely.union_all(dissolved)], dtype=object))[0]) \
        if len(dissolved) else 0.0
    pair_overlaps = []
    if len(dissolved) > 1:
        pairs = overlap_pairs(dissolved, areas, dissolved, areas, area=area)
        for i, j, inter in zip(pairs.reference.tolist(), pairs.predicted.tolist(),
                               pairs.intersection_m2.tolist()):
            if i < j:
                pair_overlaps.append((out_labels[i], out_labels[j], inter))
    return _Dissolved(out_labels, dissolved, areas, float(rows_area.sum()), union, pair_overlaps)


def _polygonal(geometry):
    """The polygonal part of an overlay result (lines and points of touching edges dropped)."""
    if geometry is None or geometry.is_empty:
        return None
    if geometry.geom_type in ("Polygon", "MultiPolygon"):
        return geometry
    parts = [g for g in shapely.get_parts(geometry) if g.geom_type in ("Polygon", "MultiPolygon")]
    return shapely.union_all(parts) if parts else None


def _spellings(*labels_and_values) -> dict:
    """{class key: the class as the data spells it}: the first spelling met, reference rows
    first, then predicted ones; stripped, numbers as text (3.0 -> "3"), case kept ("Forest"
    for the key "forest" when the reference says "Forest" and the prediction "forest")."""
    first = {}
    for labels, values in zip(labels_and_values[::2], labels_and_values[1::2]):
        spelt = normalise_labels(values, case_insensitive=False)
        for label, text in zip(labels.tolist(), spelt.tolist()):
            if label != MISSING and label not in first:
                first[label] = text
    return first


def _natural_order(labels) -> list:
    """Class labels sorted as numbers where they are numbers ("2" before "10"), then text."""

    def key(label):
        try:
            return (0, float(label), label)
        except ValueError:
            return (1, 0.0, label)

    return sorted(labels, key=key)


def _rows(layer, labels) -> dict:
    """Rows read, scored and dropped (by reason) of one layer."""
    return {
        "input": layer.n_input,
        "scored": int(np.count_nonzero(labels != MISSING)),
        "dropped_geometry": layer.n_dropped,
        "dropped_no_class": int(np.count_nonzero(labels == MISSING)),
        "repaired": layer.n_repaired,
    }

