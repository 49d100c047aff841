"""Write resources/example_release_gate.model3: fix geometries → evaluate → check thresholds.

Run once with the project's environment (source scripts/env.sh; .venv/bin/python
scripts/make_example_model.py) after changing the model; the .model3 is committed.
"""

from pathlib import Path

from qgis.core import (
    QgsApplication,
    QgsProcessingModelAlgorithm,
    QgsProcessingModelChildAlgorithm,
    QgsProcessingModelChildParameterSource as Source,
    QgsProcessingModelOutput,
    QgsProcessingModelParameter,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterString,
)

TARGET = Path(__file__).resolve().parent.parent / "resources" / "example_release_gate.model3"
POLYGON = 2  # QgsProcessing.TypeVectorPolygon (3.22) / Qgis.ProcessingSourceType.VectorPolygon


def child(algorithm_id, child_id, description, sources, outputs=()):
    algorithm = QgsProcessingModelChildAlgorithm(algorithm_id)
    algorithm.setChildId(child_id)
    algorithm.setDescription(description)
    for name, source in sources.items():
        algorithm.addParameterSources(name, [source])
    model_outputs = {}
    for output_name, model_name, description in outputs:
        output = QgsProcessingModelOutput(model_name, description)
        output.setChildOutputName(output_name)
        output.setChildId(child_id)
        model_outputs[model_name] = output
    algorithm.setModelOutputs(model_outputs)
    return algorithm


def build() -> QgsProcessingModelAlgorithm:
    model = QgsProcessingModelAlgorithm(
        "Release gate: fix, evaluate, check thresholds", "IoU Evaluation examples"
    )
    model.setHelpContent({
        "ALG_DESC": "Repairs the predicted layer with Fix geometries, evaluates it against the "
        "reference with Evaluate polygons, then fails when the report misses the release "
        "conditions (Check release thresholds).",
    })
    for parameter in (
        QgsProcessingParameterFeatureSource("predicted", "Predicted polygons", [POLYGON]),
        QgsProcessingParameterFeatureSource("reference", "Reference polygons", [POLYGON]),
        QgsProcessingParameterString(
            "conditions", "Release conditions", "f1 >= 0.8; recall >= 0.8", multiLine=True
        ),
    ):
        model.addModelParameter(parameter, QgsProcessingModelParameter(parameter.name()))
    model.addChildAlgorithm(child(
        "native:fixgeometries", "fix", "Fix geometries",
        {"INPUT": Source.fromModelParameter("predicted")},
    ))
    model.addChildAlgorithm(child(
        "ioueval:evaluatepolygons", "evaluate", "Evaluate polygons",
        {
            "PREDICTED": Source.fromChildOutput("fix", "OUTPUT"),
            "REFERENCE": Source.fromModelParameter("reference"),
            "IOU_THRESHOLD": Source.fromStaticValue(0.5),
        },
        [("REPORT_JSON", "report", "Evaluation report (JSON)")],
    ))
    model.addChildAlgorithm(child(
        "ioueval:checkthresholds", "check", "Check release thresholds",
        {
            "REPORT": Source.fromChildOutput("evaluate", "REPORT_JSON"),
            "CONDITIONS": Source.fromModelParameter("conditions"),
        },
        [("OUTPUT", "checks", "Threshold checks")],
    ))
    return model


if __name__ == "__main__":
    app = QgsApplication([], False)
    app.initQgis()
    model = build()
    if not model.toFile(str(TARGET)):
        raise SystemExit(f"could not write {TARGET}")
    print(TARGET)
