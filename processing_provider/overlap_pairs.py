"""Processing algorithm ioueval:overlappairs: every overlapping pair with its areas and
scores, an adapter over core.pairs.pair_table."""

from __future__ import annotations

from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsField,
    QgsFields,
    QgsProcessingException,
    QgsProcessingOutputNumber,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterField,
)

from ..core.geometry.crs import DEFAULT_EQUAL_AREA_CRS
from ..core.pairs.pair_table import overlap_pair_table
from ..core.util.wording import count_of
from .base import IoUEvaluationAlgorithm
from .compat import (
    FIELD_DOUBLE,
    FIELD_LONG,
    MULTI_POLYGON,
    NO_GEOMETRY,
    VECTOR_POLYGON,
)
from .layers import qgis_values, read_source
from .parameters import (
    equal_area_crs_parameter,
    equal_area_crs_value,
    predicted_and_reference,
    requested,
    table_sink,
    with_help,
)
from .progress import FeedbackProgress
from .validation import equal_area_crs_error, polygon_sources

HELP = """
<p>Lists every pair of a predicted and a reference polygon whose intersection has positive
area (pairs that only touch are left out), with both layers' feature ids (and id fields when
given), both areas, the intersection and union areas in m² in the equal-area CRS (default
EPSG:6933), and</p>
<ul>
<li><b>IoU</b> = |P ∩ R| / |P ∪ R|; <b>Dice</b> = 2 |P ∩ R| / (|P| + |R|);</li>
<li><b>GIoU</b> = IoU − |C \\ (P ∪ R)| / |C|, C the convex hull of the pair
(Rezatofighi et al. 2019);</li>
<li><b>DIoU</b> = IoU − ρ² / c², ρ the distance between the centroids, c the diagonal of the
box enclosing the pair (Zheng et al. 2020).</li>
</ul>
<p><b>GIoU below IoU.</b> C is the convex hull (not the bounding box), so GIoU equals IoU only
when the union is convex: a perfect match of a non-convex field (an L shape, a notch) has
IoU = 1 but GIoU = 1 − |C \\ R| / |C| &lt; 1, and a pair of thin, crooked or many-part
polygons far less. GIoU measures how far apart the shapes are as much as how much they
overlap; Spatial IoU uses the same C.</p>
<p>No matching is done: a polygon appears in as many rows as it overlaps polygons of the
other layer (use Evaluate polygons for one-to-one matching). Invalid geometries are repaired
first (make_valid, structure method), then reprojected; null, empty, non-polygonal and
zero-area features are dropped and counted in the log. Optionally the intersection
geometries, in the equal-area CRS.</p>
"""

#: Table columns after the ids: name → PairMetrics attribute.
METRIC_COLUMNS = {
    "pred_area_m2": "area_a",
    "ref_area_m2": "area_b",
    "intersection_m2": "intersection",
    "union_m2": "union",
    "iou": "iou",
    "dice": "dice",
    "giou": "giou",
    "diou": "diou",
}


class OverlapPairsAlgorithm(IoUEvaluationAlgorithm):
    NAME = "overlappairs"
    DISPLAY_NAME = "Overlap pairs"
    SHORT_HELP = "Every overlapping predicted/reference pair with areas, IoU, Dice, GIoU and DIoU."
    GROUP = "Footprints and pairs"
    GROUP_ID = "footprints"
    HELP = HELP
    PREDICTED = "PREDICTED"
    REFERENCE = "REFERENCE"
    PREDICTED_ID_FIELD = "PREDICTED_ID_FIELD"
    REFERENCE_ID_FIELD = "REFERENCE_ID_FIELD"
    EQUAL_AREA_CRS = "EQUAL_AREA_CRS"
    OUTPUT = "OUTPUT"
    INTERSECTIONS = "INTERSECTIONS"
    ID_FIELDS = {PREDICTED_ID_FIELD: PREDICTED, REFERENCE_ID_FIELD: REFERENCE}

    def initAlgorithm(self, config=None):  # noqa: N802
        for parameter in predicted_and_reference(self.tr):
            self.addParameter(parameter)
        for name, parent in self.ID_FIELDS.items():
            layer = parent.lower()
            self.addParameter(
                with_help(
                    QgsProcessingParameterField(
                        name,
                        self.tr("Id field of the {layer} layer (default: feature id only)")
                        .format(layer=layer),
                        parentLayerParameterName=parent,
                        optional=True,
                    ),
                    self.tr("Written as {prefix}_id beside the feature id {prefix}_fid.")
                    .format(prefix=layer[:4]),
                )
            )
        self.addParameter(equal_area_crs_parameter(self.tr))
        self.addParameter(
            table_sink(
                self.OUTPUT, "Overlapping pairs", self.tr,
                "One row per overlapping pair: pred_fid, ref_fid (and ids), both areas, "
                "intersection and union in m², IoU, Dice, GIoU, DIoU.",
            )
        )
        self.addParameter(
            with_help(
                QgsProcessingParameterFeatureSink(
                    self.INTERSECTIONS,
                    self.tr("Intersections (in the equal-area CRS)"),
                    VECTOR_POLYGON,
                    optional=True,
                    createByDefault=False,
                ),
                self.tr("The intersection of each pair as a polygon, with the same columns."),
            )
        )
        self.addOutput(QgsProcessingOutputNumber("COUNT_PAIRS", self.tr("Overlapping pairs")))

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        _, error = polygon_sources(self, parameters, context)
        error = error or equal_area_crs_error(self, parameters, context)
        return (False, error) if error else (True, "")

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        sources, features, id_index = {}, {}, {}
        for (id_name, name), span in zip(self.ID_FIELDS.items(), ((0, 15), (15, 30))):
            sources[name] = self.parameterAsSource(parameters, name, context)
            if sources[name] is None:
                raise QgsProcessingException(self.invalidSourceError(parameters, name))
            field = self.parameterAsString(parameters, id_name, context)
            id_index[name] = sources[name].fields().lookupField(field) if field else -1
            features[name] = read_source(
                sources[name], feedback, span, [id_index[name]] if id_index[name] >= 0 else []
            )
            if features[name] is None:
                return {}
        predicted, reference = features[self.PREDICTED], features[self.REFERENCE]
        table = self.run_core(
            feedback, overlap_pair_table, predicted.geometries, reference.geometries,
            predicted_crs=predicted.crs_wkt,
            reference_crs=reference.crs_wkt,
            equal_area_crs=equal_area_crs_value(self, parameters, context),
            with_intersections=requested(parameters, self.INTERSECTIONS),
            progress=FeedbackProgress(feedback, 30, 80),
        )
        if table is None:
            return {}
        feedback.pushInfo(f"{count_of(table.n, 'overlapping pair')} ({table.equal_area_crs})")
        fields, columns = self._columns(table, sources, features, id_index)
        results = {"COUNT_PAIRS": table.n}
        for k, (name, wkb_type, crs, geometries) in enumerate(
            self._outputs(parameters, context, table, sources, reference)
        ):
            dest_id = self.write_features(parameters, name, context, fields, columns,
                                          geometries, wkb_type, crs, feedback,
                                          (80 + 10 * k, 90 + 10 * k))
            if dest_id is None:
                return {}
            results[name] = dest_id
        feedback.setProgress(100)
        return results

    def _columns(self, table, sources, features, id_index):
        """(fields, columns) of the pair table: pred_fid, pred_id, ref_fid, ref_id (ids when
        their fields are given) and the metrics."""
        fields = QgsFields()
        columns = []
        for name, prefix in ((self.PREDICTED, "pred"), (self.REFERENCE, "ref")):
            rows = table.predicted_index if name == self.PREDICTED else table.reference_index
            fields.append(QgsField(f"{prefix}_fid", FIELD_LONG))
            columns.append(qgis_values(features[name].feature_ids[rows]))
            if id_index[name] >= 0:
                id_field = QgsField(sources[name].fields().at(id_index[name]))
                id_field.setName(f"{prefix}_id")
                fields.append(id_field)
                ids = features[name].attributes.column(id_index[name])
                columns.append([ids[k] for k in rows.tolist()])
        for name, attribute in METRIC_COLUMNS.items():
            fields.append(QgsField(name, FIELD_DOUBLE))
            columns.append(qgis_values(getattr(table.metrics, attribute)))
        return fields, columns

    def _outputs(self, parameters, context, table, sources, reference) -> list:
        """(output name, geometry type, CRS, geometries) of the table and, when asked for,
        the intersections (in the CRS the areas are measured in; none when the layers have
        none)."""
        outputs = [(self.OUTPUT, NO_GEOMETRY, sources[self.REFERENCE].sourceCrs(), None)]
        if table.intersections is not None:
            crs = self.parameterAsCrs(parameters, self.EQUAL_AREA_CRS, context)
            out_crs = crs if crs.isValid() else QgsCoordinateReferenceSystem(DEFAULT_EQUAL_AREA_CRS)
            if reference.crs_wkt is None:
                out_crs = QgsCoordinateReferenceSystem()
            outputs.append((self.INTERSECTIONS, MULTI_POLYGON, out_crs, table.intersections))
        return outputs
