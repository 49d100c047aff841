"""ioueval:evaluatepolygons on layers read to disk and evaluated in work units (large layers,
or IOU_EVALUATION_WORK_UNITS): every output row and every report key as the one-piece run."""

import json

import pytest
from conftest import SAMPLE_PREDICTED, SAMPLE_REFERENCE
from qgis.core import (
    QgsProcessingContext,
    QgsProcessingException,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)

from iou_evaluation.processing_provider.evaluate_polygons import (
    STORED_ABOVE_FEATURES,
    WORK_UNITS_ENV,
    work_unit_rows,
)

ALGORITHM = "ioueval:evaluatepolygons"
LAYER_OUTPUTS = ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD")


def run(parameters, tmp_path, name):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    report = tmp_path / f"{name}.json"
    outputs = {key: str(tmp_path / f"{name}_{key.lower()}.gpkg") for key in LAYER_OUTPUTS}
    processing.run(ALGORITHM, {**outputs, "REPORT_JSON": str(report),
                               "REPORT_HTML": str(tmp_path / f"{name}.html"), **parameters},
                   context=context, feedback=QgsProcessingFeedback())
    rows = {}
    for key, path in outputs.items():
        layer = QgsVectorLayer(path, key, "ogr")
        rows[key] = [(f.attributes()[1:], f.geometry().asWkb().data())
                     for f in layer.getFeatures()]  # [1:]: the fid written
    return rows, json.loads(report.read_text())


@pytest.mark.parametrize("units", ["7", "1"])
def test_work_units_on_disk_give_every_output_row_and_report_key_of_one_piece(
        ioueval_provider, tmp_path, monkeypatch, units):
    parameters = {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": SAMPLE_REFERENCE,
                  "REFERENCE_ID_FIELD": "CSBID", "BOOTSTRAP": 20, "SIZE_BINS": "auto",
                  "STUDY_AREA": SAMPLE_REFERENCE}
    monkeypatch.setenv(WORK_UNITS_ENV, "0")
    one_rows, one_report = run(parameters, tmp_path, "one")
    monkeypatch.setenv(WORK_UNITS_ENV, units)
    unit_rows, unit_report = run(parameters, tmp_path, "units")
    for key in ("metrics", "parameters", "warnings"):
        assert unit_report.get(key) == one_report.get(key), key
    assert len(one_rows["PER_FIELD"]) == 100
    for key in LAYER_OUTPUTS:
        assert unit_rows[key] == one_rows[key], key


def test_a_memory_layer_on_disk_gives_the_one_piece_rows(ioueval_provider, tmp_path,
                                                         monkeypatch):
    reference = QgsVectorLayer(SAMPLE_REFERENCE, "reference", "ogr")
    memory = QgsVectorLayer(f"MultiPolygon?crs={reference.crs().authid()}", "drawn", "memory")
    memory.dataProvider().addAttributes(reference.fields().toList())
    memory.updateFields()
    memory.dataProvider().addFeatures(list(reference.getFeatures()))
    assert memory.featureCount() == 100  # a memory layer: read by the QGIS iterator
    parameters = {"PREDICTED": SAMPLE_PREDICTED, "REFERENCE": memory}
    monkeypatch.setenv(WORK_UNITS_ENV, "0")
    one_rows, one_report = run(parameters, tmp_path, "one")
    monkeypatch.setenv(WORK_UNITS_ENV, "25")
    unit_rows, unit_report = run(parameters, tmp_path, "units")
    assert unit_report["metrics"] == one_report["metrics"]
    assert unit_rows == one_rows


def test_the_choice_of_work_units_follows_the_size_unless_the_variable_says(monkeypatch):
    monkeypatch.delenv(WORK_UNITS_ENV, raising=False)
    assert work_unit_rows(STORED_ABOVE_FEATURES) is None
    assert work_unit_rows(STORED_ABOVE_FEATURES + 1) == 20_000
    monkeypatch.setenv(WORK_UNITS_ENV, "0")
    assert work_unit_rows(10 ** 9) is None
    monkeypatch.setenv(WORK_UNITS_ENV, " 500 ")
    assert work_unit_rows(10) == 500
    for bad in ("-3", "many", "2.5"):
        monkeypatch.setenv(WORK_UNITS_ENV, bad)
        with pytest.raises(QgsProcessingException, match=f"{WORK_UNITS_ENV} must be 0"):
            work_unit_rows(10)


def test_a_lookup_column_gives_plain_values_batch_by_batch():
    import numpy as np

    from iou_evaluation.processing_provider.layers import LookupColumn

    fids = LookupColumn(np.array([2, -1, 0, 2]), np.array([10, 11, 12], dtype=np.int64))
    assert len(fids) == 4
    assert fids[0:4] == [12, None, 10, 12] and fids[1:3] == [None, 10]
    assert all(type(v) is int for v in fids[0:4] if v is not None)  # not numpy scalars
    ids = LookupColumn([1, -1], ["a", np.float64("nan")])
    assert ids[0:2] == [None, None]
    assert LookupColumn([0, 1], [np.int32(7), "b"])[0:2] == [7, "b"]
    assert LookupColumn(np.zeros(0, np.int64), [])[0:5] == []


@pytest.mark.parametrize("units", ["0", "7"])
def test_date_fields_name_fields_and_strata_in_iso_8601(ioueval_provider, tmp_path,
                                                        monkeypatch, units):
    # A Date id field: the report's worst_reference_fields carried the QDate itself, and
    # to_json_text raised "Object of type QDate is not JSON serializable" after the layers
    # were written (one piece and work units alike); a Date stratum was named
    # "PyQt5.QtCore.QDate(2020, 1, 1)".
    from qgis.core import QgsFeature, QgsField, QgsGeometry
    from qgis.PyQt.QtCore import QDate

    from iou_evaluation.processing_provider.compat import FIELD_DATE

    layers = []
    for name, shift in (("reference", 0.0), ("predicted", 1.0)):
        layer = QgsVectorLayer("MultiPolygon?crs=EPSG:5070", name, "memory")
        layer.dataProvider().addAttributes([QgsField("sown", FIELD_DATE),
                                            QgsField("season", FIELD_DATE)])
        layer.updateFields()
        features = []
        for i in range(20):
            feature = QgsFeature(layer.fields())
            x = i * 15.0 + shift
            feature.setGeometry(QgsGeometry.fromWkt(
                f"POLYGON(({x} {shift},{x + 10} {shift},{x + 10} {shift + 10},"
                f"{x} {shift + 10},{x} {shift}))"))
            feature.setAttributes([QDate(2020, 1, 1 + i), QDate(2020 + i % 2, 6, 1)])
            features.append(feature)
        layer.dataProvider().addFeatures(features)
        layers.append(layer)
    monkeypatch.setenv(WORK_UNITS_ENV, units)
    rows, report = run({"REFERENCE": layers[0], "PREDICTED": layers[1],
                        "REFERENCE_ID_FIELD": "sown", "STRATA_FIELD": "season"},
                       tmp_path, f"date_{units}")
    assert report["metrics"]["count_tp"] == 20  # each 10 m square shifted by 1 m
    assert len(rows["PER_FIELD"]) == 20
    worst = report["worst_reference_fields"]
    assert worst and all(w["id"] in {f"2020-01-{d:02d}" for d in range(1, 21)} for w in worst)
    assert sorted(report["metrics"]["per_stratum"]) == ["2020-06-01", "2021-06-01"]


def test_label_values_are_iso_8601_text_hex_or_as_they_are():
    import datetime

    from qgis.core import NULL
    from qgis.PyQt.QtCore import QByteArray, QDate, QDateTime, QTime

    from iou_evaluation.processing_provider.attributes import AttributeTable, label_value

    assert label_value(QDate(2020, 2, 29)) == "2020-02-29"
    assert label_value(QDateTime(QDate(2021, 3, 4), QTime(5, 6, 7))) == "2021-03-04T05:06:07"
    assert label_value(QTime(23, 59, 1)) == "23:59:01"
    assert label_value(datetime.date(1999, 12, 31)) == "1999-12-31"
    assert label_value(QDate()) is None and label_value(NULL) is None
    assert label_value(QByteArray(b"\x00\xff")) == "00ff" and label_value(b"\x01") == "01"
    assert [label_value(v) for v in (7, 2.5, "Mais", None, True)] == [7, 2.5, "Mais", None, True]
    table = AttributeTable.from_columns([[QDate(2020, 1, 1), None], [1, 2]], 2)
    assert table.labels(0) == ["2020-01-01", None] and table.labels(1) == [1, 2]
