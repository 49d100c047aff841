"""Reading GeoPackage layers directly with GDAL gives what the QGIS feature iterator gives, and
is used only where it does."""

from __future__ import annotations

import math

import pytest
import shapely
from osgeo import ogr, osr
from qgis.core import (
    QgsFeatureRequest,
    QgsProcessingContext,
    QgsProcessingFeatureSource,
    QgsProcessingFeatureSourceDefinition,
    QgsProcessingFeedback,
    QgsVectorLayer,
)

from iou_evaluation.processing_provider.geopackage import direct_location, read_geopackage
from iou_evaluation.processing_provider.layers import read_source

ROWS = [
    # (wkt or None, i, i64, r, s)
    ("POLYGON ((0 0, 10 0, 10 10, 0 10, 0 0))", 1, 2**40, 0.5, "Socorro"),
    ("POLYGON ((0 0, 10 10, 10 0, 0 10, 0 0))", None, None, None, None),  # bow tie
    (None, -7, -(2**40), -1e300, ""),  # null geometry, empty text
    ("POLYGON Z ((0 0 1, 5 0 2, 5 5 3, 0 0 1))", 3, 4, 2.25, "Peñasco «ü» 田"),
    ("MULTIPOLYGON (((20 0, 30 0, 30 10, 20 0)), ((40 0, 50 0, 50 10, 40 0)))", 0, 0, 0.0,
     "x" * 300),
    ("POLYGON EMPTY", 5, 6, 1.0 / 3.0, "last"),
]
BOOLEANS = [True, None, False, None, True, False]


def _write_geopackage(path, extra_fields=()):
    """The layer "fields" (ROWS and ROWS[0] again, the row with fid 3 deleted so fids have a
    gap), a second layer "other", in EPSG:32613; extra_fields: (name, OGR type, OGR subtype)
    with BOOLEANS as values (when boolean) or empty."""
    dataset = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32613)
    for name in ("fields", "other"):
        layer = dataset.CreateLayer(name, srs, ogr.wkbUnknown)
        for field_name, kind, subtype in (
            ("i", ogr.OFTInteger, ogr.OFSTNone), ("i64", ogr.OFTInteger64, ogr.OFSTNone),
            ("r", ogr.OFTReal, ogr.OFSTNone), ("s", ogr.OFTString, ogr.OFSTNone), *extra_fields,
        ):
            field = ogr.FieldDefn(field_name, kind)
            field.SetSubType(subtype)
            layer.CreateField(field)
        for wkt, *values in ROWS + [ROWS[0]]:
            feature = ogr.Feature(layer.GetLayerDefn())
            for field_name, value in zip(("i", "i64", "r", "s"), values):
                if value is not None:
                    feature[field_name] = value
            for field_name, _, subtype in extra_fields:
                flag = (BOOLEANS + BOOLEANS)[feature_count(layer)]
                if subtype == ogr.OFSTBoolean and flag is not None:
                    feature[field_name] = flag
            if wkt is not None:
                feature.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
            layer.CreateFeature(feature)
        layer.DeleteFeature(3)
    dataset = None


def feature_count(layer):
    return layer.GetFeatureCount()


def _plain(value):
    """QGIS NULL as None."""
    return None if value is None or (hasattr(value, "isNull") and value.isNull()) else value


_CONTEXT = QgsProcessingContext()  # outlives the sources made with it


def _source(layer):
    return QgsProcessingFeatureSource(layer, _CONTEXT)


@pytest.fixture
def geopackage(qgis_app, tmp_path):
    path = tmp_path / "fields.gpkg"
    _write_geopackage(path)
    return path


@pytest.mark.parametrize("attribute_indices", [None, [2, 4], []])
def test_a_direct_read_gives_what_the_qgis_iterator_gives(geopackage, attribute_indices):
    layer = QgsVectorLayer(f"{geopackage}|layername=fields", "fields", "ogr")
    location = direct_location(str(geopackage) + "|layername=fields", layer)
    assert location == (str(geopackage), "fields")
    feedback = QgsProcessingFeedback()
    direct = read_source(_source(layer), feedback, attribute_indices=attribute_indices,
                         geopackage=location)
    by_qgis = read_source(_source(layer), feedback, attribute_indices=attribute_indices)
    assert direct.feature_ids.tolist() == by_qgis.feature_ids.tolist() == [1, 2, 4, 5, 6, 7]
    assert len(direct.geometries) == len(by_qgis.geometries) == 6
    for mine, theirs in zip(direct.geometries, by_qgis.geometries):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert shapely.to_wkb(mine) == shapely.to_wkb(theirs)
    assert [[_plain(v) for v in row] for row in direct.attributes] == [
        [_plain(v) for v in row] for row in by_qgis.attributes
    ]
    assert direct.crs_wkt == by_qgis.crs_wkt
    if attribute_indices is None:  # spot checks against the values written
        assert direct.attributes[2][1:] == [3, 4, 2.25, "Peñasco «ü» 田"]
        assert direct.attributes[1][1:] == [None] * 4


def test_only_whole_geopackage_layers_of_plain_types_are_read_directly(geopackage, tmp_path):
    uri = f"{geopackage}|layername=fields"
    layer = QgsVectorLayer(uri, "fields", "ogr")
    assert direct_location(uri, layer) is not None
    selected = QgsProcessingFeatureSourceDefinition(uri, True)
    assert direct_location(selected, layer) is None
    limited = QgsProcessingFeatureSourceDefinition(uri, False, 3)
    assert direct_location(limited, layer) is None
    assert direct_location(QgsProcessingFeatureSourceDefinition(uri, False), layer) is not None

    subset = QgsVectorLayer(f'{uri}|subset="i" > 0', "subset", "ogr")
    assert subset.featureCount() == 4
    assert direct_location(subset.source(), subset) is None
    layer.startEditing()
    assert direct_location(uri, layer) is None
    layer.rollBack()

    shapefile = tmp_path / "fields.shp"
    dataset = ogr.GetDriverByName("ESRI Shapefile").CreateDataSource(str(shapefile))
    dataset.CreateLayer("fields", None, ogr.wkbPolygon)
    dataset = None
    shp_layer = QgsVectorLayer(str(shapefile), "shp", "ogr")
    assert shp_layer.isValid() and direct_location(str(shapefile), shp_layer) is None
    memory = QgsVectorLayer("Polygon?crs=EPSG:32613", "memory", "memory")
    assert direct_location(memory, memory) is None


@pytest.mark.parametrize(
    "kind, subtype", [(ogr.OFTDate, ogr.OFSTNone), (ogr.OFTInteger, ogr.OFSTBoolean)],
    ids=["date", "boolean"],
)
def test_a_layer_with_a_date_or_boolean_field_is_read_by_qgis_unless_it_is_not_needed(
    qgis_app, tmp_path, kind, subtype
):
    path = tmp_path / "extra.gpkg"
    _write_geopackage(path, extra_fields=(("extra", kind, subtype),))
    layer = QgsVectorLayer(f"{path}|layername=fields", "fields", "ogr")
    extra = layer.fields().indexOf("extra")
    location = direct_location(f"{path}|layername=fields", layer)
    assert read_geopackage(location, layer.fields(), None, lambda: False) is None
    assert read_geopackage(location, layer.fields(), [extra], lambda: False) is None
    geometries, ids, table, _ = read_geopackage(location, layer.fields(), [1], lambda: False)
    assert ids.tolist() == [1, 2, 4, 5, 6, 7]
    assert table.column(1) == [1, None, 3, 0, 5, 1]
    assert table.column(extra) == [None] * 6  # not read: NULL
    if subtype == ogr.OFSTBoolean:  # what QGIS reads (fid 3 deleted)
        flags = [_plain(f.attributes()[extra]) for f in layer.getFeatures()]
        assert flags == [True, None, None, True, False, True]


def test_a_canceled_direct_read_returns_nothing(geopackage):
    layer = QgsVectorLayer(f"{geopackage}|layername=fields", "fields", "ogr")
    feedback = QgsProcessingFeedback()
    feedback.cancel()
    location = direct_location(f"{geopackage}|layername=fields", layer)
    assert read_source(_source(layer), feedback, geopackage=location) is None


def test_the_qgis_iterator_sees_the_rows_a_direct_read_sees(geopackage):
    # The premise of the direct path: QGIS feature ids of a GeoPackage are its fids.
    layer = QgsVectorLayer(f"{geopackage}|layername=fields", "fields", "ogr")
    ids = [f.id() for f in layer.getFeatures(QgsFeatureRequest())]
    assert ids == [f.attributes()[0] for f in layer.getFeatures()] == [1, 2, 4, 5, 6, 7]


CURVED = [
    # (wkt, area of its straight-segment version); 1° chords: a unit circle becomes a
    # 360-gon of area 180·sin(1°), a half disc 180 triangles plus nothing: 90·sin(1°).
    ("CURVEPOLYGON (CIRCULARSTRING (0 0, 1 1, 2 0, 1 -1, 0 0))", 180),
    ("MULTISURFACE (CURVEPOLYGON (CIRCULARSTRING (0 0, 1 1, 2 0, 1 -1, 0 0)))", 180),
    ("GEOMETRYCOLLECTION (CURVEPOLYGON (CIRCULARSTRING (0 0, 1 1, 2 0, 1 -1, 0 0)))", 180),
    ("CURVEPOLYGON (COMPOUNDCURVE (CIRCULARSTRING (0 0, 1 1, 2 0), (2 0, 0 0)))", 90),
]


def test_arcs_are_cut_into_straight_segments_by_both_readers(qgis_app, tmp_path):
    path = tmp_path / "curves.gpkg"
    dataset = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    layer = dataset.CreateLayer("curves", None, ogr.wkbUnknown)
    for wkt in [w for w, _ in CURVED] + ["POLYGON ((0 0, 1 0, 1 1, 0 0))"]:
        feature = ogr.Feature(layer.GetLayerDefn())
        feature.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
        layer.CreateFeature(feature)
    dataset = None
    layer = QgsVectorLayer(f"{path}|layername=curves", "curves", "ogr")
    location = direct_location(f"{path}|layername=curves", layer)
    feedback = QgsProcessingFeedback()
    direct = read_source(_source(layer), feedback, geopackage=location)
    by_qgis = read_source(_source(layer), feedback)
    for read in (direct, by_qgis):
        assert read.n_curved == len(CURVED)
        areas = [shapely.area(g) for g in read.geometries]
        expected = [k * math.sin(math.radians(1)) for _, k in CURVED] + [0.5]
        assert areas == pytest.approx(expected, rel=1e-12)
    assert shapely.to_wkb(direct.geometries).tolist() == shapely.to_wkb(by_qgis.geometries).tolist()


def test_geometries_from_wkb_reads_nulls_garbage_and_arcs(qgis_app):
    from iou_evaluation.processing_provider.wkb import geometries_from_wkb

    square = shapely.to_wkb(shapely.box(0, 0, 2, 2))
    arc = bytes(ogr.CreateGeometryFromWkt(CURVED[0][0]).ExportToIsoWkb())
    empty_arc = bytes(ogr.CreateGeometryFromWkt("CURVEPOLYGON EMPTY").ExportToIsoWkb())
    geometries, n_curved = geometries_from_wkb(
        [square, None, b"", b"\x01\x03garbage", "?", arc, empty_arc]
    )
    assert n_curved == 1
    assert [g is None for g in geometries] == [False, True, True, True, True, False, False]
    assert shapely.is_empty(geometries[6])
    assert shapely.area(geometries[0]) == 4.0
    assert shapely.area(geometries[5]) == pytest.approx(180 * math.sin(math.radians(1)), rel=1e-12)


def test_a_direct_read_gives_none_for_a_null_geometry(qgis_app, tmp_path):
    # GDAL gives a masked column when a batch holds a null geometry; its default fill value
    # for objects is "?", not None.
    path = tmp_path / "nulls.gpkg"
    dataset = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
    layer = dataset.CreateLayer("nulls", None, ogr.wkbPolygon)
    for wkt in ("POLYGON ((0 0, 1 0, 1 1, 0 0))", None, "POLYGON ((0 0, 2 0, 2 2, 0 0))"):
        feature = ogr.Feature(layer.GetLayerDefn())
        if wkt is not None:
            feature.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
        layer.CreateFeature(feature)
    dataset = None
    layer = QgsVectorLayer(f"{path}|layername=nulls", "nulls", "ogr")
    geometries, ids, _, n_curved = read_geopackage((str(path), "nulls"), layer.fields(), [],
                                                   lambda: False)
    assert ids.tolist() == [1, 2, 3] and n_curved == 0
    assert [None if g is None else shapely.area(g) for g in geometries] == [0.5, None, 2.0]


@pytest.mark.parametrize(
    "wkt, area",
    [
        ("CURVEPOLYGON ((0 0, 2 0, 2 2, 0 2, 0 0))", 4.0),
        ("MULTISURFACE (((0 0, 2 0, 2 2, 0 2, 0 0)), ((5 5, 6 5, 6 6, 5 5)))", 4.5),
        ("CURVEPOLYGON (COMPOUNDCURVE ((0 0, 2 0, 2 2), (2 2, 0 2, 0 0)))", 4.0),
        ("TRIANGLE ((0 0, 2 0, 2 2, 0 0))", 2.0),
    ],
)
def test_curve_types_without_arcs_are_read_as_polygons_and_not_counted(qgis_app, wkt, area):
    from iou_evaluation.processing_provider.wkb import geometries_from_wkb

    wkb = bytes(ogr.CreateGeometryFromWkt(wkt).ExportToIsoWkb())
    geometries, n_curved = geometries_from_wkb([wkb])
    assert n_curved == 0
    assert shapely.get_type_id(geometries[0]) in (3, 6)  # Polygon, MultiPolygon
    assert shapely.area(geometries[0]) == area
