"""ioueval:evaluatepolygons with DASK_SCHEDULER: the same report from a Dask cluster, and
inputs the workers could not open refused with a message."""

import json

import pytest
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from qgis.core import (
    QgsFeature,
    QgsGeometry,
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)

ALGORITHM = "ioueval:evaluatepolygons"


def run(parameters, tmp_path, name):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    report = tmp_path / f"{name}.json"
    outputs = {key: "TEMPORARY_OUTPUT" for key in
               ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD")}
    result = processing.run(ALGORITHM, {**outputs, "REPORT_JSON": str(report),
                                        "REPORT_HTML": None, **parameters},
                            context=context, feedback=QgsProcessingFeedback())
    return result, json.loads(report.read_text())


def test_a_memory_layer_is_refused_with_a_scheduler_saying_why(ioueval_provider, tmp_path):
    layer = QgsVectorLayer("Polygon?crs=EPSG:32613", "drawn fields", "memory")
    feature = QgsFeature()
    feature.setGeometry(QgsGeometry.fromWkt("POLYGON((0 0, 100 0, 100 100, 0 100, 0 0))"))
    layer.dataProvider().addFeatures([feature])
    with pytest.raises(QgsProcessingException, match="memory.*Save it to a file"):
        run({"PREDICTED": layer, "REFERENCE": SAMPLE_REFERENCE,
             "DASK_SCHEDULER": "tcp://127.0.0.1:9"}, tmp_path, "refused")


def test_the_sample_on_a_dask_cluster_gives_the_same_report(ioueval_provider, tmp_path):
    pytest.importorskip("distributed")
    from dask_cluster import dask_scheduler

    parameters = {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
                  "BOOTSTRAP": 20, "SIZE_BINS": "auto"}
    here, report_here = run(parameters, tmp_path, "here")
    with dask_scheduler(tmp_path, n_workers=2) as address:
        there, report_there = run({**parameters, "DASK_SCHEDULER": address}, tmp_path, "there")
    assert report_there["metrics"] == report_here["metrics"]
    assert report_there["parameters"] == report_here["parameters"]
    for name in ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD"):
        assert there[name].featureCount() == here[name].featureCount()
        rows_here = [f.attributes() for f in here[name].getFeatures()]
        rows_there = [f.attributes() for f in there[name].getFeatures()]
        assert rows_there == rows_here
