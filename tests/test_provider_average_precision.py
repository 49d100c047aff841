"""COCO-style AP through ioueval:evaluatepolygons: the COCO subset as two planar layers."""

import json
from pathlib import Path

import pytest
from qgis.core import QgsCoordinateReferenceSystem, QgsFeature, QgsGeometry, QgsVectorLayer
from test_provider import run

COCO = Path(__file__).resolve().parent / "data" / "coco_val2014_100"
# pycocotools 2.0.11 on these files (REFERENCE_VALUES.md): AP, AP50, AP75, AR_100
COCO_BBOX = {"ap": 0.5045806987249628, "ap50": 0.6969727247299577,
             "ap75": 0.5729816669904824, "ar": 0.595352982877607}


def box_layer(name, fields, rows):
    layer = QgsVectorLayer(f"Polygon?{fields}", name, "memory")
    layer.setCrs(QgsCoordinateReferenceSystem())  # pixel space: no CRS on either layer
    features = []
    for (x, y, w, h), attributes in rows:
        feature = QgsFeature(layer.fields())
        feature.setGeometry(QgsGeometry.fromWkt(
            f"POLYGON(({x} {y},{x + w} {y},{x + w} {y + h},{x} {y + h},{x} {y}))"
        ))
        feature.setAttributes(attributes)
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def test_coco_subset_reproduces_cocoeval_ap(ioueval_provider):
    truth = json.loads((COCO / "instances_val2014_100.json").read_text(encoding="utf-8"))
    detections = json.loads(
        (COCO / "instances_val2014_fakebbox100_results.json").read_text(encoding="utf-8")
    )
    image_ids = {image["id"] for image in truth["images"]}
    reference = box_layer(
        "gt", "field=image:integer&field=category:integer&field=crowd:integer",
        [(a["bbox"], [a["image_id"], a["category_id"], a["iscrowd"]])
         for a in truth["annotations"] if a["image_id"] in image_ids],
    )
    predicted = box_layer(
        "dt", "field=image:integer&field=category:integer&field=score:double",
        [(d["bbox"], [d["image_id"], d["category_id"], d["score"]])
         for d in detections if d["image_id"] in image_ids],
    )
    result = run(
        {
            "PREDICTED": predicted,
            "REFERENCE": reference,
            "SCORE_FIELD": "score",
            "PREDICTED_CLASS_FIELD": "category",
            "REFERENCE_CLASS_FIELD": "category",
            "PREDICTED_GROUP_FIELD": "image",
            "REFERENCE_GROUP_FIELD": "image",
            "REFERENCE_IGNORE_FIELD": "crowd",
        }
    )
    report = json.loads(open(result["REPORT_JSON"], encoding="utf-8").read())
    ap = report["metrics"]["average_precision"]
    for key, expected in COCO_BBOX.items():
        assert ap[key] == pytest.approx(expected, abs=1e-4), key
    html = open(result["REPORT_HTML"], encoding="utf-8").read()
    assert "Average precision" in html and 'id="fig-precision-recall"' in html
    assert "data:image/svg+xml;base64," in html
