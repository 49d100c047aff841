"""Second field generator: neighbouring fields that share their edges (no roads between them),
predicted with noisy outlines of about 50 vertices.

Unlike generate.py's layout (blocks separated by roads, predictions inset from the field
edges), every prediction here crosses the edges it shares with its neighbours, so it overlaps
them too: at 50k fields about four intersecting candidate pairs per prediction, the case where
the overlay, not the box search, costs the time.

Reference: a grid of quadrilateral fields about 200 m × 180 m (3.6 ha) whose corners are
jittered by up to 35 m and shared by the four fields that meet there, in EPSG:32613 (UTM 13N),
columns ``field_id``. Predicted (``pred_id``, ``score``, ``kind``), in random order:

- ``noisy`` (93 %): the field's outline resampled to 48 vertices, each moved by a field-wide
  co-registration shift (σ 1.5 m), a wobble of 1.5 m along the outline and 0.5 m of noise;
- ``merge`` (4 % of fields): a field and its eastern neighbour as one noisy polygon;
- (miss, 3 %): no prediction.

With ``--rotate DEG`` both layers are turned by DEG degrees (counter-clockwise) about the
grid's origin: the same fields with edges in every direction (boxes then overlap more
neighbours).

Command (project venv)::

    .venv/bin/python bench/generate_shared.py --n 50000 --out bench/data/shared_50k_seed0.gpkg
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import shapely
from generate import ORIGIN_E_M, ORIGIN_N_M, write_geopackage

CRS = "EPSG:32613"
CELL_M = (200.0, 180.0)
JITTER_M = 35.0
OUTLINE_VERTICES = 48


def generate_shared_fields(n_reference: int, seed: int = 0):
    """(reference_geoms, reference_attrs, predicted_geoms, predicted_attrs, crs), as
    generate.generate_fields returns them; ``n_reference`` >= 4 fields."""
    if n_reference < 4:
        raise ValueError(f"n_reference must be >= 4, got {n_reference!r}")
    rng = np.random.default_rng(seed)
    nx = math.ceil(math.sqrt(n_reference * CELL_M[1] / CELL_M[0]))
    ny = math.ceil(n_reference / nx)
    gx = ORIGIN_E_M + CELL_M[0] * np.arange(nx + 1)[None, :] + rng.uniform(
        -JITTER_M, JITTER_M, (ny + 1, nx + 1))
    gy = ORIGIN_N_M + CELL_M[1] * np.arange(ny + 1)[:, None] + rng.uniform(
        -JITTER_M, JITTER_M, (ny + 1, nx + 1))
    cell = np.arange(n_reference)
    r, c = cell // nx, cell % nx
    corners = [(r, c), (r, c + 1), (r + 1, c + 1), (r + 1, c), (r, c)]
    ring = np.stack([np.stack([gx[i, j], gy[i, j]], axis=-1) for i, j in corners], axis=1)
    reference = shapely.polygons(np.round(ring, 2))

    outcome = rng.choice(3, size=n_reference, p=[0.93, 0.04, 0.03])  # noisy, merge, miss
    merge = (outcome == 1) & (c < nx - 1) & (cell + 1 < n_reference)
    merged_away = np.zeros(n_reference, dtype=bool)
    merged_away[cell[merge] + 1] = True
    noisy = (outcome == 0) & ~merged_away
    merge &= ~merged_away
    shapes = np.concatenate([
        reference[noisy],
        shapely.union(reference[merge], reference[np.flatnonzero(merge) + 1], grid_size=0.01),
    ])
    kind = np.array(["noisy"] * int(noisy.sum()) + ["merge"] * int(merge.sum()), dtype=object)
    predicted = _noisy_outlines(shapes, rng)
    order = rng.permutation(len(predicted))
    score = np.round(np.clip(rng.normal(0.8, 0.1, len(predicted)), 0.01, 0.999), 3)
    reference_attrs = {"field_id": np.arange(1, n_reference + 1, dtype=np.int64)}
    predicted_attrs = {
        "pred_id": np.arange(1, len(predicted) + 1, dtype=np.int64),
        "score": score,
        "kind": kind[order],
    }
    return reference, reference_attrs, predicted[order], predicted_attrs, CRS


def _noisy_outlines(shapes: np.ndarray, rng) -> np.ndarray:
    """Each polygon's exterior resampled to OUTLINE_VERTICES points and moved (see module)."""
    exteriors = shapely.get_exterior_ring(shapes)
    t = np.arange(OUTLINE_VERTICES) / OUTLINE_VERTICES
    lengths = shapely.length(exteriors)
    points = shapely.line_interpolate_point(
        np.repeat(exteriors, OUTLINE_VERTICES), np.tile(t, len(shapes)) * np.repeat(lengths, OUTLINE_VERTICES)
    )
    xy = shapely.get_coordinates(points).reshape(len(shapes), OUTLINE_VERTICES, 2)
    shift = rng.normal(0.0, 1.5, (len(shapes), 1, 2))
    phase = rng.uniform(0, 2 * np.pi, (len(shapes), 1, 2))
    waves = rng.integers(3, 7, (len(shapes), 1, 1))
    wobble = 1.5 * np.sin(2 * np.pi * waves * t[None, :, None] + phase)
    xy = xy + shift + wobble + rng.normal(0.0, 0.5, xy.shape)
    xy = np.concatenate([xy, xy[:, :1]], axis=1)
    out = shapely.polygons(np.round(xy, 2))
    bad = ~shapely.is_valid(out)
    out[bad] = shapely.make_valid(out[bad])
    return out


def _rotated(geometries: np.ndarray, degrees: float) -> np.ndarray:
    """The geometries turned by ``degrees`` about (ORIGIN_E_M, ORIGIN_N_M), to 0.01 m."""
    a = math.radians(degrees)
    xy = shapely.get_coordinates(geometries) - (ORIGIN_E_M, ORIGIN_N_M)
    turned = xy @ np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    out = shapely.set_coordinates(geometries.copy(), np.round(turned + (ORIGIN_E_M, ORIGIN_N_M), 2))
    bad = ~shapely.is_valid(out)
    out[bad] = shapely.make_valid(out[bad])
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, required=True, help="number of reference fields")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", type=Path)
    parser.add_argument("--rotate", type=float, default=0.0,
                        help="turn both layers by this many degrees about the grid's origin")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    layers = generate_shared_fields(args.n, args.seed)
    if args.rotate:
        layers = (_rotated(layers[0], args.rotate), layers[1], _rotated(layers[2], args.rotate),
                  *layers[3:])
    write_geopackage(args.out, *layers)
    if args.summary:
        args.summary.write_text(json.dumps({
            "n": args.n, "seed": args.seed, "rotate_degrees": args.rotate,
            "n_reference": len(layers[0]),
            "n_predicted": len(layers[2]), "crs": layers[4],
        }, indent=2))
    print(f"{args.out}: {len(layers[0])} reference, {len(layers[2])} predicted rows "
          f"in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
