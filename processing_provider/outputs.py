"""The rows of ioueval:evaluatepolygons' layer outputs, built column-wise from an evaluation:
matched predictions (TP), unmatched predictions (FP), unmatched references (FN) and the
per-field table."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from qgis.core import QgsCoordinateTransform, QgsField, QgsFields, QgsProcessingUtils

from .compat import FIELD_BOOL, FIELD_DOUBLE, FIELD_LONG, FIELD_STRING, MULTI_POLYGON, NO_GEOMETRY
from ..core.geometry.stored import rows_of
from .layers import LookupColumn, qgis_values

TRUE_POSITIVES = "TRUE_POSITIVES"
FALSE_POSITIVES = "FALSE_POSITIVES"
FALSE_NEGATIVES = "FALSE_NEGATIVES"
PER_FIELD = "PER_FIELD"
#: The layer outputs, in the order they are written.
LAYER_OUTPUTS = (TRUE_POSITIVES, FALSE_POSITIVES, FALSE_NEGATIVES, PER_FIELD)
#: QML style (resources/styles) of each layer output that has one.
STYLES = {
    TRUE_POSITIVES: "true_positives",
    FALSE_POSITIVES: "false_positives",
    FALSE_NEGATIVES: "false_negatives",
}


@dataclass
class OutputRows:
    """The n rows of one layer output, column-wise (the shape layers.feature_batches takes).

    Attributes:
        geometries: object array (n,) of the evaluated (repaired, 2D) shapely geometries in
            their input layer's CRS, or the same on disk (``StoredGeometries``); None for the
            per-field table.
        own: the input features' attribute values (attributes.AttributeTable of n rows); None for
            the per-field table.
        columns: the evaluation's columns, one per extra field: lists (n,) of plain values,
            or arrays (n,) (``layers.feature_batches`` makes them plain batch by batch).
        transform: to the reference layer's CRS, for predicted geometries in another CRS.
    """

    geometries: np.ndarray | None
    own: object | None
    columns: list
    transform: QgsCoordinateTransform | None = None


class EvaluationOutputs:
    """Fields and rows of the layer outputs of one evaluation; rows are built on demand.

    Args:
        evaluation: core.Evaluation; row k of its prepared layers is input row ``keep[k]``.
        predicted, reference: layers.SourceFeatures as read (attributes are needed only for
            the outputs that copy them: TP and FP for predicted, FN for reference).
        predicted_fields, reference_fields: the sources' QgsFields.
        ref_ids: list (n_reference_input,) of the reference id of every input row (the id
            field's values, or feature ids).
        id_field: QgsField of the per-field table's key column (the id field or ``ref_fid``).
        transform: QgsCoordinateTransform from the predicted to the reference layer's CRS, or
            None when they are the same.
        pred_ids: list (n_predicted_input,) of the predicted id field's value of every input
            row (PREDICTED_ID_FIELD), or None: then predictions are named by feature id only.
        pred_id_field: the QgsField of that id field (its type), with ``pred_ids``.

    Every output names predictions by their input feature id (``pred_fid``, and
    ``max_overlap_pred_fid``: a written layer numbers its features anew) and, with
    ``pred_ids``, by their own id too (``pred_id``, ``max_overlap_pred_id``), so the TP and FP
    layers, the FN layer and the per-field table join to each other and to the predicted
    layer.
    """

    def __init__(self, evaluation, predicted, reference, predicted_fields, reference_fields,
                 ref_ids, id_field, transform, pred_ids=None, pred_id_field=None):
        self.evaluation, self.predicted, self.reference = evaluation, predicted, reference
        self.predicted_fields, self.reference_fields = predicted_fields, reference_fields
        self.ref_ids, self.id_field, self.transform = ref_ids, id_field, transform
        self.pred_ids, self.pred_id_field = pred_ids, pred_id_field
        pred_matched = np.asarray(evaluation.per_predicted["matched"], dtype=bool)
        # Predictions on ignore regions are neither TP nor FP (as in the report).
        pred_ignored = np.asarray(evaluation.per_predicted["ignored"], dtype=bool)
        ref_matched = np.asarray(evaluation.per_reference["matched"], dtype=bool)
        #: Rows of the prepared layers in each output.
        self.table_rows = {
            TRUE_POSITIVES: np.flatnonzero(pred_matched),
            FALSE_POSITIVES: np.flatnonzero(~pred_matched & ~pred_ignored),
            FALSE_NEGATIVES: np.flatnonzero(~ref_matched),
            PER_FIELD: np.arange(evaluation.reference.n),
        }

    def row_count(self, name: str) -> int:
        return len(self.table_rows[name])

    def wkb_type(self, name: str):
        return NO_GEOMETRY if name == PER_FIELD else MULTI_POLYGON

    def fields(self, name: str) -> QgsFields:
        """The output's fields: the input layer's own fields, then the evaluation's."""
        if name == TRUE_POSITIVES:
            ref_id = QgsField(self.id_field)
            ref_id.setName("ref_id")
            return QgsProcessingUtils.combineFields(self.predicted_fields, _fields(
                ref_id, ("iou", FIELD_DOUBLE), ("pred_area_m2", FIELD_DOUBLE),
                ("ref_area_m2", FIELD_DOUBLE), *self._prediction_fields("pred"),
            ))
        if name == FALSE_POSITIVES:
            return QgsProcessingUtils.combineFields(self.predicted_fields, _fields(
                ("best_iou", FIELD_DOUBLE), ("pred_area_m2", FIELD_DOUBLE),
                ("overlaps_reference", FIELD_BOOL), *self._prediction_fields("pred"),
            ))
        if name == FALSE_NEGATIVES:
            return QgsProcessingUtils.combineFields(self.reference_fields, _fields(
                ("best_iou", FIELD_DOUBLE), ("ref_area_m2", FIELD_DOUBLE),
                *self._prediction_fields("max_overlap_pred"),
            ))
        return _fields(self.id_field, *(
            self._id_field(key) if variant_type is None else QgsField(key, variant_type)
            for key, variant_type, _ in self._per_field_columns
        ))

    def _prediction_fields(self, prefix: str) -> list:
        """The columns naming a prediction: ``<prefix>_fid``, and ``<prefix>_id`` with
        PREDICTED_ID_FIELD."""
        specs = [(f"{prefix}_fid", FIELD_LONG)]
        if self.pred_ids is not None:
            specs.append(self._id_field(f"{prefix}_id"))
        return specs

    def _id_field(self, name: str) -> QgsField:
        """A column of predicted ids: PREDICTED_ID_FIELD's type, under ``name``."""
        field = QgsField(self.pred_id_field)
        field.setName(name)
        return field

    def rows(self, name: str) -> OutputRows:
        """The output's rows, in prepared-layer order (so in input order)."""
        evaluation = self.evaluation
        k = self.table_rows[name]
        per_pred, per_ref = evaluation.per_predicted, evaluation.per_reference
        if name == PER_FIELD:
            ids = LookupColumn(evaluation.reference.keep, self.ref_ids)
            columns = [ids] + [values for _, _, values in self._per_field_columns]
            return OutputRows(None, None, columns)
        if name == FALSE_NEGATIVES:
            return OutputRows(
                rows_of(evaluation.reference.source, k),
                _own(self.reference, evaluation.reference, k),
                [
                    np.asarray(per_ref["best_iou"])[k],
                    np.asarray(per_ref["area_m2"])[k],
                    *self._prediction_columns(np.asarray(per_ref["max_overlap_pred_index"])[k]),
                ],
            )
        if name == TRUE_POSITIVES:
            ref_index = np.asarray(per_pred["ref_index"])[k]
            keys = ("iou", "area_m2", "ref_area_m2")
            columns = [LookupColumn(ref_index, self.ref_ids)]
        else:
            keys = ("best_iou", "area_m2", "overlaps_reference")
            columns = []
        columns += [np.asarray(per_pred[key])[k] for key in keys]
        columns += self._prediction_columns(evaluation.predicted.keep[k])
        return OutputRows(
            rows_of(evaluation.predicted.source, k),
            _own(self.predicted, evaluation.predicted, k),
            columns,
            self.transform,
        )

    @functools.cached_property
    def _per_field_columns(self) -> list:
        """(name, compat.FIELD_* type, plain values) of every per-reference column; columns of
        predicted input positions (``*_index``) become predicted feature ids (``*_fid``)."""
        columns = []
        for key, values in self.evaluation.per_reference.items():
            if key.endswith("_index"):
                fids = self._predicted_ids(values)
                columns.append((key[: -len("_index")] + "_fid", FIELD_LONG, fids))
                if self.pred_ids is not None:  # its own id beside: None as type, see fields
                    columns.append((key[: -len("_index")] + "_id", None,
                                    self._predicted_ids(values, self.pred_ids)))
            else:
                columns.append((key, _variant_type(values), _column(values)))
        return columns

    def _predicted_ids(self, input_positions, ids=None) -> LookupColumn:
        """Predicted feature ids (int) at input positions (int array), None where -1; or,
        with ``ids`` (list (n_predicted_input,)), those ids."""
        return LookupColumn(input_positions,
                            self.predicted.feature_ids if ids is None else ids)

    def _prediction_columns(self, input_positions) -> list:
        """The values of ``_prediction_fields`` at predicted input positions (-1: none)."""
        columns = [self._predicted_ids(input_positions)]
        if self.pred_ids is not None:
            columns.append(self._predicted_ids(input_positions, self.pred_ids))
        return columns


def _column(values):
    """A per-reference column for ``layers.feature_batches``: a numeric array as it is (made
    plain values batch by batch, so that a million rows are never all Python objects at
    once), anything else as plain values."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values
    return qgis_values(values)


def _own(features, layer, k):
    """The attribute values of prepared rows k (input rows layer.keep[k]), an AttributeTable."""
    return features.attributes.take(layer.keep[k])


def _fields(*specs) -> QgsFields:
    fields = QgsFields()
    for spec in specs:
        fields.append(spec if isinstance(spec, QgsField) else QgsField(spec[0], spec[1]))
    return fields


def _variant_type(values):
    """Field type (compat.FIELD_*) of a per-reference column (numpy dtype or object of str)."""
    dtype = np.asarray(values).dtype
    if dtype == bool:
        return FIELD_BOOL
    if np.issubdtype(dtype, np.integer):
        return FIELD_LONG
    if np.issubdtype(dtype, np.floating):
        return FIELD_DOUBLE
    if all(v is None or isinstance(v, (int, np.integer)) for v in values):
        return FIELD_LONG
    return FIELD_STRING
