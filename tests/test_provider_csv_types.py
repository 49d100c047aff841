"""Every CSV table output gets a .csvt (shared in IoUEvaluationAlgorithm.parameterAsSink),
so QGIS reads its numbers as numbers, not text."""

import pytest
from qgis.core import QgsVectorLayer
from qgis_layers import box_wkt, memory_layer, run


def _read_back(path):
    assert path.with_suffix(".csvt").is_file()
    layer = QgsVectorLayer(str(path), "csv", "ogr")
    assert layer.isValid()
    return layer


def test_overlappairs_csv_output_has_numeric_fields(ioueval_provider, tmp_path):
    path = tmp_path / "pairs.csv"
    run("ioueval:overlappairs", {
        "PREDICTED": memory_layer([box_wkt(1, 0, 3, 2)]),
        "REFERENCE": memory_layer([box_wkt(0, 0, 2, 2)]),
        "OUTPUT": str(path),
    })
    layer = _read_back(path)
    fields = layer.fields()
    for name in ("pred_fid", "iou", "intersection_m2", "union_m2", "dice"):
        assert fields.field(name).isNumeric(), (name, fields.field(name).typeName())
    (feature,) = layer.getFeatures()
    assert feature["iou"] == pytest.approx(1 / 3)  # overlap 2 of union 6, as a number


def test_spatialiou_csv_output_has_numeric_fields(ioueval_provider, tmp_path):
    path = tmp_path / "spatial.csv"
    run("ioueval:spatialiou", {
        "PREDICTED": memory_layer([box_wkt(0, 0, 10, 5)]),
        "REFERENCE": memory_layer([box_wkt(0, 0, 10, 10)]),
        "OUTPUT": str(path),
    })
    layer = _read_back(path)
    assert layer.fields().field("iou").isNumeric()
    (feature,) = layer.getFeatures()
    assert feature["iou"] == pytest.approx(0.5)  # 50 / 100
    assert feature["status"] == "all"
