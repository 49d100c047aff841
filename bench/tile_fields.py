"""Millions of fields quickly: copies of one generated tile (bench/generate.py) on a grid, with
predictions crossing the copies' seams.

One tile of ``--tile`` reference fields is generated once (``generate.generate_fields``), then
copied ``--copies`` times on a square grid, each copy shifted by the tile's extent plus one
road (30 m). At every seam between two neighbouring copies, predicted polygons are added that
straddle it (a strip from the last field column of one copy into the first of the next: a
model that merged fields across a road), so that a work unit boundary drawn along tiles would
cut through pairs. ``field_id`` and ``pred_id`` stay unique; ``stratum`` and ``score`` are
copied.

    .venv/bin/python bench/tile_fields.py --tile 50000 --copies 20 --out bench/data/tiled_1m.gpkg

The copies are identical up to the shift, so per-field figures are those of the tile, and
the run's totals are ``copies`` times a tile's plus the seam polygons' share.

The command writes copy by copy (``write_tiled``: one tile in memory, ~0.45 GB), the same
rows in the same order as ``write_geopackage(path, *tiled_fields(...))``, which holds every
copy at once (2.7 GB at 1M fields: 16M would need ~45 GB).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import shapely

from generate import append_rows, create_layer, generate_fields, new_geopackage, write_geopackage

#: Road between two copies (m).
SEAM_ROAD_M = 30.0
#: Seam-crossing predictions per km of seam.
SEAM_POLYGONS_PER_KM = 2.0


def tiled_fields(tile: int, copies: int, seed: int = 0):
    """(reference_geoms, reference_attrs, predicted_geoms, predicted_attrs, crs) of
    ``copies`` copies of a ``tile``-field layer; see the module docstring."""
    ref, ref_attrs, pred, pred_attrs, crs = generate_fields(tile, seed)
    x0, y0, x1, y1 = shapely.total_bounds(ref[~shapely.is_missing(ref)])
    pitch_x, pitch_y = x1 - x0 + SEAM_ROAD_M, y1 - y0 + SEAM_ROAD_M
    side = math.ceil(math.sqrt(copies))
    refs, preds = [], []
    ref_cols = {k: [] for k in ref_attrs}
    pred_cols = {k: [] for k in pred_attrs}
    for c in range(copies):
        dx, dy = (c % side) * pitch_x, (c // side) * pitch_y
        refs.append(shapely.transform(ref, lambda xy, d=(dx, dy): xy + d))
        preds.append(shapely.transform(pred, lambda xy, d=(dx, dy): xy + d))
        for k, v in ref_attrs.items():
            ref_cols[k].append(v + c * (tile * 2) if k == "field_id" else v)
        for k, v in pred_attrs.items():
            pred_cols[k].append(v)
    seams, seam_scores = _seams((x0, y0, x1, y1), copies, seed)
    reference = np.concatenate(refs)
    predicted = np.concatenate(preds + [seams])
    ref_out = {k: np.concatenate(v) for k, v in ref_cols.items()}
    pred_out = {k: np.concatenate(v) for k, v in pred_cols.items()}
    pred_out["pred_id"] = np.arange(1, len(predicted) + 1, dtype=np.int64)
    pred_out["score"] = np.concatenate([pred_out["score"], seam_scores])
    pred_out["kind"] = np.concatenate([pred_out["kind"],
                                       np.full(len(seams), "seam_merge", dtype=object)])
    return reference, ref_out, predicted, pred_out, crs


def _seams(bounds, copies: int, seed: int):
    """(polygons, scores) of the seam-crossing predictions of ``copies`` copies of a tile
    with ``bounds`` (x0, y0, x1, y1), in the order of the predicted layer's last rows."""
    x0, y0, x1, y1 = bounds
    pitch_x, pitch_y = x1 - x0 + SEAM_ROAD_M, y1 - y0 + SEAM_ROAD_M
    side = math.ceil(math.sqrt(copies))
    rng = np.random.default_rng(seed + 1)
    seams = []
    per_seam = max(1, int(SEAM_POLYGONS_PER_KM * (y1 - y0) / 1000))
    for c in range(copies):
        col, row = c % side, c // side
        if col + 1 < side and c + 1 < copies:  # vertical seam to the right
            x = x1 + col * pitch_x + SEAM_ROAD_M / 2
            ys = y0 + row * pitch_y + rng.uniform(0, y1 - y0, per_seam)
            seams += [shapely.box(x - 150, y, x + 150, y + 120) for y in ys]
        if c + side < copies:  # horizontal seam above
            y = y1 + row * pitch_y + SEAM_ROAD_M / 2
            xs = x0 + col * pitch_x + rng.uniform(0, x1 - x0, per_seam)
            seams += [shapely.box(x, y - 150, x + 120, y + 150) for x in xs]
    return np.array(seams, dtype=object), rng.uniform(0.05, 0.5, len(seams))


def write_tiled(path, tile: int, copies: int, seed: int = 0) -> tuple[int, int]:
    """Write the layers of ``tiled_fields(tile, copies, seed)`` to the GeoPackage ``path``
    (replaced) copy by copy, holding one tile in memory: the same rows, columns, column types
    and CRS as ``generate.write_geopackage(path, *tiled_fields(...))``. Returns the
    (reference, predicted) row counts."""
    from osgeo import ogr

    ref, ref_attrs, pred, pred_attrs, crs = generate_fields(tile, seed)
    x0, y0, x1, y1 = shapely.total_bounds(ref[~shapely.is_missing(ref)])
    pitch_x, pitch_y = x1 - x0 + SEAM_ROAD_M, y1 - y0 + SEAM_ROAD_M
    side = math.ceil(math.sqrt(copies))
    seams, seam_scores = _seams((x0, y0, x1, y1), copies, seed)
    dataset, srs, tmp = new_geopackage(path, crs)
    n_pred = 0
    for name, geoms, attrs, geometry_type in (
        ("reference", ref, ref_attrs, ogr.wkbPolygon),
        ("predicted", pred, pred_attrs, ogr.wkbUnknown),
    ):
        layer = create_layer(dataset, name, srs, geometry_type, attrs)
        for c in range(copies):
            dx, dy = (c % side) * pitch_x, (c // side) * pitch_y
            shifted = shapely.transform(geoms, lambda xy, d=(dx, dy): xy + d)
            values = dict(attrs)
            if name == "reference":
                values["field_id"] = attrs["field_id"] + c * (tile * 2)
            else:
                values["pred_id"] = np.arange(n_pred + 1, n_pred + len(geoms) + 1,
                                              dtype=np.int64)
                n_pred += len(geoms)
            append_rows(dataset, layer, shifted, values)
    if len(seams):
        append_rows(dataset, layer, seams, {
            **{k: np.full(len(seams), None, dtype=object) for k in pred_attrs},
            "pred_id": np.arange(n_pred + 1, n_pred + len(seams) + 1, dtype=np.int64),
            "score": seam_scores,
            "kind": np.full(len(seams), "seam_merge", dtype=object),
        })
    dataset = None  # closed: then it takes the final name
    tmp.replace(path)
    return copies * len(ref), n_pred + len(seams)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tile", type=int, default=50_000, help="reference fields per tile")
    parser.add_argument("--copies", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="GeoPackage to write")
    parser.add_argument("--in-memory", action="store_true",
                        help="make every copy first, then write (the same file; ~2.7 GB per "
                             "million fields)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.in_memory:
        layers = tiled_fields(args.tile, args.copies, args.seed)
        made = time.perf_counter()
        write_geopackage(args.out, *layers)
        print(f"{args.out}: {len(layers[0]):,} reference, {len(layers[2]):,} predicted rows; "
              f"made in {made - start:.1f} s, written in {time.perf_counter() - made:.1f} s")
        return
    n_reference, n_predicted = write_tiled(args.out, args.tile, args.copies, args.seed)
    print(f"{args.out}: {n_reference:,} reference, {n_predicted:,} predicted rows; made and "
          f"written copy by copy in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
