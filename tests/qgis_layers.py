"""Small QGIS layers and a processing.run wrapper for the provider tests of the toolbox
algorithms (spatial IoU, overlap pairs, thresholds, comparison, study area)."""

from __future__ import annotations

from qgis.core import (
    QgsFeature,
    QgsGeometry,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)


def box_wkt(x0, y0, x1, y1) -> str:
    return f"POLYGON(({x0} {y0},{x1} {y0},{x1} {y1},{x0} {y1},{x0} {y0}))"


def memory_layer(wkts, crs="EPSG:6933", ids=None, id_type="string", name="layer"):
    """A polygon memory layer, one feature per WKT (None: null geometry), with an ``id``
    field holding ``ids`` (default none set) and a ``name`` field."""
    layer = QgsVectorLayer(
        f"MultiPolygon?crs={crs}&field=id:{id_type}&field=name:string", name, "memory"
    )
    features = []
    for k, wkt in enumerate(wkts):
        feature = QgsFeature(layer.fields())
        if wkt is not None:
            feature.setGeometry(QgsGeometry.fromWkt(wkt))
        feature.setAttributes([ids[k] if ids is not None else None, f"{name}{k}"])
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def run(algorithm, parameters, feedback=None):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(
        algorithm, parameters, context=context, feedback=feedback or QgsProcessingFeedback()
    )


def rows_of(value):
    """The features of an output layer (a layer or a path) as dicts."""
    layer = value if isinstance(value, QgsVectorLayer) else QgsVectorLayer(value, "out", "ogr")
    names = layer.fields().names()
    return [dict(zip(names, f.attributes())) for f in layer.getFeatures()]
