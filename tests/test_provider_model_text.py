"""ioueval:parsemodeloutput and ioueval:spatialmatch through processing.run."""

import json

import numpy as np
import pytest
from qgis.core import (
    QgsFeature,
    QgsField,
    QgsProcessingContext,
    QgsProcessingFeedback,
    QgsProject,
    QgsVectorLayer,
)
from qgis.PyQt.QtCore import QVariant


def table(rows, fields=("id", "answer", "expected", "width", "height", "model")):
    layer = QgsVectorLayer("None", "answers", "memory")
    types = {"id": QVariant.Int, "width": QVariant.Double, "height": QVariant.Double}
    layer.dataProvider().addAttributes([QgsField(f, types.get(f, QVariant.String))
                                        for f in fields])
    layer.updateFields()
    features = []
    for row in rows:
        feature = QgsFeature(layer.fields())
        feature.setAttributes(list(row))
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    return layer


def run(algorithm, parameters):
    import processing

    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    return processing.run(algorithm, parameters, context=context,
                          feedback=QgsProcessingFeedback())


def test_parsemodeloutput_sorts_geometries_points_and_failures(ioueval_provider):
    layer = table([
        (1, '```json\n{"bboxes": [[10, 20, 110, 220], [50.5, 60, 70, 80.25]]}\n```', None,
         None, None, "a"),
        (2, '{"bboxes": []}', None, None, None, "a"),
        (3, "[[10, 10, 50, 40], [10, NaN, 50, 40], [12, 10, Infinity, 40]]", None, None,
         None, "a"),
        (4, '<point x="50" y="25" alt="dog">dog</point>', None, 200, 100, "b"),
        (5, "I cannot see any coordinates to give.", None, None, None, "b"),
    ])
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "ID_FIELD": "id", "COORDINATE_FORMAT": 1,
        "IMAGE_WIDTH_FIELD": "width", "IMAGE_HEIGHT_FIELD": "height",
        "OUTPUT": "TEMPORARY_OUTPUT", "POINTS": "TEMPORARY_OUTPUT",
        "FAILURES": "TEMPORARY_OUTPUT",
    })
    polygons = list(result["OUTPUT"].getFeatures())
    assert [(f["row_id"], f["index"]) for f in polygons] == [(1, 0), (1, 1), (3, 0)]
    assert [f.geometry().boundingBox().toRectF().getCoords() for f in polygons] == [
        (10, 20, 110, 220), (50.5, 60, 70, 80.25), (10, 10, 50, 40)]
    assert {f["convention"] for f in polygons} == {"pixel_xyxy"}
    assert {f["convention_source"] for f in polygons} == {"given"}
    points = list(result["POINTS"].getFeatures())
    assert [(f["row_id"], f.geometry().asWkt()) for f in points] == [(4, "MultiPoint ((100 25))")]
    failures = {(f["row_id"], f["status"]) for f in result["FAILURES"].getFeatures()}
    assert failures == {(2, "empty"), (3, "non_finite"), (5, "unparseable")}
    assert sum(1 for f in result["FAILURES"].getFeatures() if f["row_id"] == 3) == 2
    assert result["COUNT_ROWS"] == 5
    assert result["COUNT_POLYGONS"] == 3
    assert result["COUNT_ROWS_EMPTY"] == 1
    assert result["COUNT_ROWS_FAILED"] == 1


def test_parsemodeloutput_georeferences_pixels_through_the_raster(ioueval_provider, tmp_path):
    from osgeo import gdal, osr

    path = str(tmp_path / "image.tif")
    dataset = gdal.GetDriverByName("GTiff").Create(path, 200, 100, 1, gdal.GDT_Byte)
    dataset.SetGeoTransform((500000.0, 0.5, 0.0, 4000000.0, 0.0, -0.5))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    dataset.SetProjection(srs.ExportToWkt())
    dataset = None
    layer = table([(1, '{"box_2d": [0, 0, 500, 500]}', None, None, None, "a")])
    result = run("ioueval:parsemodeloutput", {
        "INPUT": layer, "TEXT_FIELD": "answer", "RASTER": path, "OUTPUT": "TEMPORARY_OUTPUT",
    })
    feature = next(result["OUTPUT"].getFeatures())
    # half of 200 × 100 px = 100 × 50 px from the top-left corner; 0.5 m pixels
    assert feature.geometry().boundingBox().toRectF().getCoords() == (
        500000, 3999975, 500050, 4000000)
    assert result["OUTPUT"].crs().authid() == "EPSG:32633"
