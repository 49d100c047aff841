"""Real-layer benchmark cases from public layers that npm packages ship (Natural Earth, US Census).

Two cases, each a GeoPackage with layers ``reference`` and ``predicted`` (column ``ref_id`` /
``pred_id``, ``name``) written to bench/data/ (git-ignored), fetched and built by one command:

- ``world``: Natural Earth admin-0 countries at 1:10m (255 polygons, 544,862 vertices; Russia,
  Fiji, Antarctica and the USA span more than 150° of longitude, some across the antimeridian)
  against the same countries at 1:50m (241 polygons, 99,539 vertices), EPSG:4326, from the npm
  package ``world-atlas`` 2.0.2 (TopoJSON, read by GDAL's TopoJSON driver): the issue's "two map
  scales" layer pair.
- ``counties``: US counties from the npm package ``us-atlas`` 3.0.1 (Census cartographic
  boundaries, 3,231 polygons, 68,225 vertices) as the predicted layer, against a national layer
  of the same counties with ~8 times the vertices as the reference (about 510k: every edge
  that is not a meridian or a parallel gets 8 vertices on a smooth wiggle of up to 9 % of its
  length, a function of the edge's end points, so neighbouring counties still share their
  edges exactly; meridians and parallels, the straight state and county lines of the West,
  stay straight), in EPSG:4269 (NAD83, geographic): the issue's "two Census vintages" pair.

Command (project venv; needs ``npm`` and GDAL's ``ogr2ogr``, both Debian packages)::

    .venv/bin/python bench/realdata.py world counties     # prints the files and their sizes

``npm pack`` fetches each package tarball once into bench/data/npm/; the GeoPackages are
rebuilt only when missing or when this file changes (sidecar JSON with its digest).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import shapely

BENCH = Path(__file__).resolve().parent
DATA_DIR = BENCH / "data"
NPM_DIR = DATA_DIR / "npm"

PACKAGES = {"world-atlas": "2.0.2", "us-atlas": "3.0.1"}
CASES = ("world", "counties")

#: New vertices per refined county edge, and the wiggle's largest offset over its length.
_COUNTY_EDGE_POINTS = 8
_COUNTY_WIGGLE = 0.05


def _digest() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def npm_file(package: str, member: str) -> Path:
    """Path of ``member`` of the npm package (fetched with ``npm pack`` on first use)."""
    version = PACKAGES[package]
    folder = NPM_DIR / f"{package}-{version}"
    if not (folder / member).exists():
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        tarball = NPM_DIR / f"{package}-{version}.tgz"
        if not tarball.exists():
            subprocess.run(["npm", "pack", f"{package}@{version}", "--silent"], cwd=NPM_DIR,
                           check=True, capture_output=True)
        with tarfile.open(tarball) as archive:
            for item in archive.getmembers():
                if item.isfile() and item.name.startswith("package/"):
                    item.name = item.name[len("package/"):]
                    archive.extract(item, folder)
    return folder / member


def read_topojson(path: Path, layer: str):
    """(geometries, names) of one object of a TopoJSON file, through GDAL's TopoJSON driver.

    The TopoJSON files carry no CRS: they are longitude/latitude in degrees."""
    from osgeo import ogr

    ogr.UseExceptions()
    dataset = ogr.Open(str(path))
    source = dataset.GetLayerByName(layer)
    geoms, names = [], []
    for feature in source:
        geometry = feature.GetGeometryRef()
        geoms.append(None if geometry is None else shapely.from_wkb(bytes(geometry.ExportToWkb())))
        index = feature.GetFieldIndex("name")
        names.append(feature.GetField(index) if index >= 0 else None)
    return np.array(geoms, dtype=object), np.array(names, dtype=object)


def wiggle_edges(geoms: np.ndarray, points: int = _COUNTY_EDGE_POINTS,
                 amplitude: float = _COUNTY_WIGGLE) -> np.ndarray:
    """Give every edge that is neither a meridian nor a parallel ``points`` new vertices on a
    smooth wiggle (three sine harmonics, largest offset about ``1.8·amplitude`` of the edge's
    length) drawn from its two end points alone, so that an edge two polygons share gets the
    same new vertices in both. A polygon that comes out invalid keeps its edges.

    ``geoms``: object array (n,) of polygonal geometries in degrees. Returns a new array."""
    parts, part_row = shapely.get_parts(geoms, return_index=True)
    rings, ring_part = shapely.get_rings(parts, return_index=True)
    coords, ring = shapely.get_coordinates(rings, return_index=True)
    same = np.flatnonzero(ring[1:] == ring[:-1])
    p, q = coords[same], coords[same + 1]
    bent = (np.abs(q[:, 0] - p[:, 0]) > 1e-9) & (np.abs(q[:, 1] - p[:, 1]) > 1e-9)
    edge = same[bent]
    p, q = p[bent], q[bent]
    # The same edge in both directions: work from its lexicographically smaller end.
    flip = (p[:, 0] > q[:, 0]) | ((p[:, 0] == q[:, 0]) & (p[:, 1] > q[:, 1]))
    a, b = np.where(flip[:, None], q, p), np.where(flip[:, None], p, q)
    seed = (a[:, 0] * 12.9898 + a[:, 1] * 78.233 + b[:, 0] * 37.719 + b[:, 1] * 4.581)
    weights = np.stack([np.sin(seed * k * 1.618) * 43758.5453 % 1.0 * 2 - 1 for k in (1, 2, 3)],
                       axis=1)  # in [-1, 1), a function of the edge alone
    t = np.arange(1, points + 1) / (points + 1)
    harmonics = np.sin(np.pi * np.arange(1, 4)[:, None] * t[None, :]) / np.arange(1, 4)[:, None]
    offset = amplitude * (weights @ harmonics)  # (n_edges, points), in edge lengths
    d = b - a
    normal = np.column_stack([-d[:, 1], d[:, 0]])
    new = a[:, None, :] + t[None, :, None] * d[:, None, :] + offset[:, :, None] * normal[:, None, :]
    new = np.where(flip[:, None, None], new[:, ::-1, :], new)  # back to the edge's direction
    at = np.repeat(edge + 1, points)
    coords2 = np.insert(coords, at, np.round(new.reshape(-1, 2), 7), axis=0)
    ring2 = np.insert(ring, at, ring[at - 1])
    polygons = shapely.polygons(shapely.linearrings(coords2, indices=ring2), indices=ring_part)
    out = shapely.multipolygons(polygons, indices=part_row)
    single = shapely.get_type_id(geoms) == 3
    out[single] = shapely.get_geometry(out[single], 0)
    keep = ~shapely.is_valid(out) & shapely.is_valid(geoms)
    out[keep] = geoms[keep]
    return out


def build(case: str) -> Path:
    """The case's GeoPackage in bench/data/, built unless present and current."""
    sys.path.insert(0, str(BENCH))
    from generate import write_geopackage

    path = DATA_DIR / f"real_{case}.gpkg"
    sidecar = path.with_suffix(".json")
    if path.exists() and sidecar.exists():
        info = json.loads(sidecar.read_text())
        if info.get("builder_sha256_16") == _digest():
            return path
    if case == "world":
        reference, ref_names = read_topojson(npm_file("world-atlas", "countries-10m.json"),
                                             "countries")
        predicted, pred_names = read_topojson(npm_file("world-atlas", "countries-50m.json"),
                                              "countries")
        crs = "EPSG:4326"
    elif case == "counties":
        predicted, pred_names = read_topojson(npm_file("us-atlas", "counties-10m.json"),
                                              "counties")
        present = ~shapely.is_missing(predicted) & ~shapely.is_empty(predicted)
        reference = np.array(predicted, dtype=object, copy=True)
        reference[present] = wiggle_edges(predicted[present])
        ref_names = pred_names.copy()
        crs = "EPSG:4269"
    else:
        raise ValueError(f"unknown case {case!r}: one of {CASES}")
    ref_attrs = {"ref_id": np.arange(1, len(reference) + 1, dtype=np.int64), "name": ref_names}
    pred_attrs = {"pred_id": np.arange(1, len(predicted) + 1, dtype=np.int64),
                  "name": pred_names}
    write_geopackage(path, reference, ref_attrs, predicted, pred_attrs, crs)
    info = {
        "case": case, "crs": crs, "builder_sha256_16": _digest(),
        "n_reference": int(len(reference)), "n_predicted": int(len(predicted)),
        "reference_vertices": int(shapely.get_num_coordinates(reference).sum()),
        "predicted_vertices": int(shapely.get_num_coordinates(predicted).sum()),
        "packages": {k: v for k, v in PACKAGES.items()},
    }
    sidecar.write_text(json.dumps(info, indent=2))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", choices=CASES)
    args = parser.parse_args(argv)
    for case in args.cases:
        path = build(case)
        print(path, json.loads(path.with_suffix(".json").read_text()))


if __name__ == "__main__":
    main()
