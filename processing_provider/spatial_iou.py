"""Processing algorithm ioueval:spatialiou: IoU, Dice, GIoU and DIoU of two layers'
footprints, an adapter over core.pairs.footprint."""

from __future__ import annotations

from qgis.core import (
    QgsField,
    QgsFields,
    QgsProcessingException,
    QgsProcessingParameterField,
)

from ..core.pairs.footprint import footprint_iou
from ..core.util.wording import count_of, plural
from .base import IoUEvaluationAlgorithm
from .compat import FIELD_DOUBLE, FIELD_LONG, FIELD_STRING, field_type_id
from .layers import qgis_values, read_source
from .parameters import (
    equal_area_crs_parameter,
    equal_area_crs_value,
    predicted_and_reference,
    table_sink,
    with_help,
)
from .progress import FeedbackProgress
from .validation import equal_area_crs_error, polygon_sources

HELP = """
<p>Scores how well the predicted layer's footprint covers the reference layer's: each layer is
dissolved into one footprint (and, with an id field, one footprint per id), then</p>
<ul>
<li><b>IoU</b> = |A ∩ B| / |A ∪ B|, in [0, 1] (A predicted, B reference);</li>
<li><b>Dice</b> = 2 |A ∩ B| / (|A| + |B|) = 2 IoU / (1 + IoU);</li>
<li><b>GIoU</b> = IoU − |C \\ (A ∪ B)| / |C|, C the convex hull of both, in [−1, 1]
(Rezatofighi et al. 2019);</li>
<li><b>DIoU</b> = IoU − ρ² / c², ρ the distance between the centroids, c the diagonal of the
box enclosing both (Zheng et al. 2020).</li>
</ul>
<p>Areas are in m² in the equal-area CRS (default EPSG:6933). Order of operations, as in the
spatial IoU guide: repair invalid geometries first (make_valid, structure method), then
reproject (layers in longitude/latitude evaluated in a cylindrical equal-area CRS, the default,
stay in longitude/latitude and their areas are computed exactly; in other cases edges are split
at points of a 50 m grid where their image bends), then dissolve and overlay (an overlay GEOS
cannot compute is retried on a 1e-12 precision grid, else scored as no overlap), and clamp the
ratios to their ranges. Null, empty, non-polygonal and zero-area features are dropped and
counted in the log. World layers are read as by every algorithm here: an edge whose longitudes
jump by more than 180° crosses the antimeridian the short way, a ring that then winds round the
world encloses the pole nearer its mean latitude, caps drawn flat are read as drawn, and
longitudes within 1e-4° of ±180° in a polygon drawn across the whole map (Antarctica) are its
edges. Every degenerate case has a value: a footprint with no area on one side
scores IoU = Dice = 0 and GIoU = DIoU = −1; no area on either side scores 0.</p>
<p><b>Id field</b> (optional, a field both layers have): one row per id, the rows of each
layer with that id dissolved; ids found in one layer only are listed with IoU 0 and status
<i>predicted_only</i> or <i>reference_only</i>. Ids match by value (1, 1.0 and "1" are one id);
rows without an id count in the whole-layer row only.</p>
<p><b>GIoU below IoU.</b> C is the convex hull (not the bounding box), so GIoU equals IoU only
when the union is convex: a perfect match of a non-convex footprint has IoU = 1 but
GIoU = 1 − |C \\ B| / |C| &lt; 1, and for footprints of many scattered parts C is much larger
than their union, so GIoU falls far below IoU even for a near-perfect match. GIoU measures how
far apart the footprints are as much as how much they overlap; Overlap pairs uses the same
C.</p>
<p>The table's first row (status <i>all</i>) and the numeric outputs IOU, DICE, GIOU, DIOU,
INTERSECTION_AREA_M2 and UNION_AREA_M2 are the whole layers'.</p>
"""

#: Numeric outputs: name → (PairMetrics attribute, label).
NUMERIC_OUTPUTS = {
    "IOU": ("iou", "IoU of the footprints"),
    "DICE": ("dice", "Dice of the footprints"),
    "GIOU": ("giou", "GIoU of the footprints"),
    "DIOU": ("diou", "DIoU of the footprints"),
    "INTERSECTION_AREA_M2": ("intersection", "Intersection area (m²)"),
    "UNION_AREA_M2": ("union", "Union area (m²)"),
}

#: Table columns after the id and status: name → PairMetrics attribute.
METRIC_COLUMNS = {
    "iou": "iou",
    "dice": "dice",
    "giou": "giou",
    "diou": "diou",
    "intersection_m2": "intersection",
    "union_m2": "union",
    "pred_area_m2": "area_a",
    "ref_area_m2": "area_b",
}


class SpatialIoUAlgorithm(IoUEvaluationAlgorithm):
    NAME = "spatialiou"
    DISPLAY_NAME = "Spatial IoU (footprints)"
    SHORT_HELP = "IoU, Dice, GIoU and DIoU of two layers' dissolved footprints, or per shared id."
    GROUP = "Footprints and pairs"
    GROUP_ID = "footprints"
    HELP = HELP
    NUMERIC_OUTPUTS = NUMERIC_OUTPUTS
    PREDICTED = "PREDICTED"
    REFERENCE = "REFERENCE"
    ID_FIELD = "ID_FIELD"
    EQUAL_AREA_CRS = "EQUAL_AREA_CRS"
    OUTPUT = "OUTPUT"

    def initAlgorithm(self, config=None):  # noqa: N802
        for parameter in predicted_and_reference(self.tr):
            self.addParameter(parameter)
        self.addParameter(
            with_help(
                QgsProcessingParameterField(
                    self.ID_FIELD,
                    self.tr("Id field shared by both layers (one row per id; default: whole "
                            "layers only)"),
                    parentLayerParameterName=self.REFERENCE,
                    optional=True,
                ),
                self.tr("A field of the reference layer that the predicted layer has too: "
                        "rows with the same id are dissolved and scored as one pair."),
            )
        )
        self.addParameter(equal_area_crs_parameter(self.tr))
        self.addParameter(
            table_sink(
                self.OUTPUT, "Footprint scores", self.tr,
                "One row for the whole layers (status all), then one per id: IoU, Dice, GIoU, "
                "DIoU, areas in m², rows per layer.",
            )
        )
        self.add_numeric_outputs()

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        sources, error = polygon_sources(self, parameters, context)
        error = error or equal_area_crs_error(self, parameters, context)
        if error:
            return False, error
        id_field = self.parameterAsString(parameters, self.ID_FIELD, context)
        for name, source in sources.items():
            if id_field and source.fields().lookupField(id_field) < 0:
                return False, self.tr(
                    "ID_FIELD: the {layer} layer has no field {field} (its fields: {fields})"
                ).format(layer=name.lower(), field=repr(id_field),
                         fields=", ".join(source.fields().names()))
        return True, ""

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        sources = {
            name: self.parameterAsSource(parameters, name, context)
            for name in (self.PREDICTED, self.REFERENCE)
        }
        for name, source in sources.items():
            if source is None:
                raise QgsProcessingException(self.invalidSourceError(parameters, name))
        id_field = self.parameterAsString(parameters, self.ID_FIELD, context)
        read = self._read_layers(feedback, sources, id_field)
        if read is None:
            return {}
        (predicted, predicted_ids), (reference, reference_ids) = read
        result = self.run_core(
            feedback, footprint_iou, predicted.geometries, reference.geometries,
            predicted_crs=predicted.crs_wkt,
            reference_crs=reference.crs_wkt,
            equal_area_crs=equal_area_crs_value(self, parameters, context),
            predicted_ids=predicted_ids,
            reference_ids=reference_ids,
            progress=FeedbackProgress(feedback, 40, 90),
        )
        if result is None:
            return {}
        overall = result.overall
        feedback.pushInfo(
            f"IoU {overall.iou[0]:.4f}, Dice {overall.dice[0]:.4f}, GIoU {overall.giou[0]:.4f}, "
            f"DIoU {overall.diou[0]:.4f}; intersection {overall.intersection[0]:.1f} m², union "
            f"{overall.union[0]:.1f} m² ({result.equal_area_crs})"
        )
        for name, count in (
            ("predicted", result.n_predicted_without_id),
            ("reference", result.n_reference_without_id),
        ):
            if count:
                feedback.pushWarning(
                    f"{count_of(count, f'{name} row')} {plural(count, 'has', 'have')} no "
                    f"{id_field}: {plural(count, 'it counts', 'they count')} in the "
                    "whole-layer row only"
                )
        results = self._write_table(parameters, context, feedback, result, sources, id_field)
        if results is None:
            return {}
        results.update(self.numeric_results(
            lambda attribute: float(getattr(overall, attribute)[0])
        ))
        feedback.setProgress(100)
        return results

    def _read_layers(self, feedback, sources, id_field):
        """((predicted, its ids), (reference, its ids)): each layer read with its ID_FIELD
        (ids None without one); None when canceled."""
        read = []
        for source, span in zip(sources.values(), ((0, 20), (20, 40))):
            index = source.fields().lookupField(id_field) if id_field else -1
            features = read_source(source, feedback, span, [index] if index >= 0 else [])
            if features is None:
                return None
            ids = features.attributes.column(index) if id_field else None
            read.append((features, ids))
        return read

    def _write_table(self, parameters, context, feedback, result, sources, id_field):
        """Write OUTPUT: the whole-layer row, then one row per id. None when canceled."""
        fields = QgsFields()
        fields.append(self._id_qfield(sources, id_field))
        fields.append(QgsField("status", FIELD_STRING))
        for name in METRIC_COLUMNS:
            fields.append(QgsField(name, FIELD_DOUBLE))
        fields.append(QgsField("n_predicted", FIELD_LONG))
        fields.append(QgsField("n_reference", FIELD_LONG))
        rows = [[None, "all"]
                + [float(getattr(result.overall, a)[0]) for a in METRIC_COLUMNS.values()]
                + [result.predicted.n_input, result.reference.n_input]]
        if result.ids is not None:
            columns = [qgis_values(getattr(result.by_id, a)) for a in METRIC_COLUMNS.values()]
            id_is_text = field_type_id(fields.at(0).type()) == field_type_id(FIELD_STRING)
            for k, value in enumerate(result.ids):
                rows.append(
                    [str(value) if id_is_text else value, result.status[k]]
                    + [column[k] for column in columns]
                    + [int(result.n_predicted_rows[k]), int(result.n_reference_rows[k])]
                )
        if feedback.isCanceled():
            return None
        return {self.OUTPUT: self.write_table(parameters, self.OUTPUT, context, fields, rows,
                                              sources[self.REFERENCE].sourceCrs())}

    def _id_qfield(self, sources, id_field):
        """The id column: the reference field's definition when both layers' fields have
        the same type, else text (ids then match by value, see core.pairs.footprint.id_key)."""
        if not id_field:
            return QgsField("id", FIELD_STRING)
        reference = sources[self.REFERENCE].fields()
        predicted = sources[self.PREDICTED].fields()
        ref_field = reference.at(reference.lookupField(id_field))
        pred_field = predicted.at(predicted.lookupField(id_field))
        if ref_field.type() == pred_field.type():
            return QgsField(ref_field)
        return QgsField(id_field, FIELD_STRING)
