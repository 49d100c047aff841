"""The algorithm inside a graphical model: its F1 output feeds another algorithm."""

import pytest
from qgis.core import (
    QgsFeature,
    QgsGeometry,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProcessingModelAlgorithm,
    QgsProcessingModelChildAlgorithm,
    QgsProcessingModelChildParameterSource,
    QgsProcessingModelOutput,
    QgsProcessingModelParameter,
    QgsProcessingParameterFeatureSource,
    QgsProject,
    QgsVectorLayer,
)


def square_layer(x0, side, crs="EPSG:3857"):
    layer = QgsVectorLayer(f"Polygon?crs={crs}", "l", "memory")
    feature = QgsFeature()
    feature.setGeometry(QgsGeometry.fromRect(QgsGeometry.fromWkt(
        f"POLYGON(({x0} 0,{x0 + side} 0,{x0 + side} {side},{x0} {side},{x0} 0))"
    ).boundingBox()))
    layer.dataProvider().addFeatures([feature])
    return layer


def test_model_buffers_by_the_f1_of_the_evaluation(ioueval_provider):
    import processing

    model = QgsProcessingModelAlgorithm("f1 model", "tests")
    for name in ("predicted", "reference"):
        model.addModelParameter(
            QgsProcessingParameterFeatureSource(name, name), QgsProcessingModelParameter(name)
        )
    evaluate = QgsProcessingModelChildAlgorithm("ioueval:evaluatepolygons")
    evaluate.setChildId("evaluate")
    evaluate.addParameterSources(
        "PREDICTED", [QgsProcessingModelChildParameterSource.fromModelParameter("predicted")]
    )
    evaluate.addParameterSources(
        "REFERENCE", [QgsProcessingModelChildParameterSource.fromModelParameter("reference")]
    )
    model.addChildAlgorithm(evaluate)

    buffer = QgsProcessingModelChildAlgorithm("native:buffer")
    buffer.setChildId("buffer")
    buffer.addParameterSources(
        "INPUT", [QgsProcessingModelChildParameterSource.fromModelParameter("reference")]
    )
    buffer.addParameterSources(
        "DISTANCE", [QgsProcessingModelChildParameterSource.fromChildOutput("evaluate", "F1")]
    )
    buffer.addParameterSources("JOIN_STYLE", [QgsProcessingModelChildParameterSource.fromStaticValue(1)])
    buffer.addParameterSources("MITER_LIMIT", [QgsProcessingModelChildParameterSource.fromStaticValue(10)])
    output = QgsProcessingModelOutput("buffered", "buffered")
    output.setChildOutputName("OUTPUT")
    buffer.setModelOutputs({"buffered": output})
    model.addChildAlgorithm(buffer)

    # reference: one 10 x 10 square; predictions: the square itself and a spurious one far
    # away, so TP 1, FP 1, FN 0 and F1 = 2/3; a mitred buffer by d gives (10 + 2d)².
    reference = square_layer(0, 10)
    predicted = QgsVectorLayer("Polygon?crs=EPSG:3857", "p", "memory")
    predicted.dataProvider().addFeatures(
        list(square_layer(0, 10).getFeatures()) + list(square_layer(1000, 10).getFeatures())
    )
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    # The model's destination parameter: "buffer:buffered" (child id, output name) on QGIS
    # 3.22, the output's own name "buffered" on 3.40 and 3.44 (measured).
    (destination,) = [p.name() for p in model.destinationParameterDefinitions()]
    assert destination in ("buffer:buffered", "buffered")
    result = processing.run(
        model,
        {"predicted": predicted, "reference": reference, destination: "TEMPORARY_OUTPUT"},
        context=context,
        feedback=QgsProcessingFeedback(),
    )
    buffered = result[destination]
    if isinstance(buffered, str):
        buffered = context.getMapLayer(buffered) or QgsVectorLayer(buffered, "b", "ogr")
    area = next(buffered.getFeatures()).geometry().area()
    assert area == pytest.approx((10 + 2 * 2 / 3) ** 2, rel=1e-9)
