"""bench/tile_fields.py: the GeoPackage written copy by copy (one tile in memory) holds the rows
of the one made with every copy in memory, in the same order, with the same types and CRS."""

from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT


def _load_tile_fields():
    sys.path.insert(0, str(ROOT / "bench"))  # tile_fields imports generate
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_tile_fields", ROOT / "bench" / "tile_fields.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def _rows(path):
    """{layer: (CRS WKT, [(OGR type name, ...)], [(fid, attributes, WKB), ...])}."""
    from osgeo import ogr

    ogr.UseExceptions()
    dataset = ogr.Open(str(path))
    layers = {}
    for name in ("reference", "predicted"):
        layer = dataset.GetLayerByName(name)
        definition = layer.GetLayerDefn()
        types = [(definition.GetFieldDefn(i).GetName(), definition.GetFieldDefn(i).GetTypeName())
                 for i in range(definition.GetFieldCount())]
        rows = []
        for feature in layer:
            geometry = feature.GetGeometryRef()
            rows.append((feature.GetFID(),
                         [feature.GetField(i) for i in range(definition.GetFieldCount())],
                         None if geometry is None else bytes(geometry.ExportToIsoWkb())))
        layers[name] = (layer.GetSpatialRef().ExportToWkt(), layer.GetGeomType(), types, rows)
    return layers


def test_written_copy_by_copy_equals_made_in_memory(tmp_path):
    tile_fields = _load_tile_fields()
    # 5 copies on a 3 x 3 grid: vertical and horizontal seams, and a row not filled.
    tile, copies = 300, 5
    streamed, in_memory = tmp_path / "streamed.gpkg", tmp_path / "in_memory.gpkg"
    counts = tile_fields.write_tiled(streamed, tile, copies, seed=2)
    layers = tile_fields.tiled_fields(tile, copies, seed=2)
    tile_fields.write_geopackage(in_memory, *layers)
    assert counts == (len(layers[0]), len(layers[2]))
    a, b = _rows(streamed), _rows(in_memory)
    assert a == b
    # The seam polygons are there: more predicted rows than copies of the tile's.
    one_tile = tile_fields.generate_fields(tile, 2)
    assert len(a["predicted"][3]) > copies * len(one_tile[2])
    assert len(a["reference"][3]) == copies * len(one_tile[0])
