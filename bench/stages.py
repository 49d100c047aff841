"""Stage times of one core.evaluate run on a bench GeoPackage, as JSON on stdout.

    .venv/bin/python bench/stages.py bench/data/real_world.gpkg [--kwargs '{...}'] [--root DIR]

``--root`` evaluates another checkout's core (a folder with the plugin's files: ``git archive
COMMIT | tar -x -C DIR``), reading the layers as ``worker_core.py`` does. Stages are the
``Progress`` messages of ``core.evaluate`` (Preparing geometries, Computing overlaps,
Boundary distances, ...), in wall seconds and in CPU seconds of all threads (which other jobs
on the cores change least); also TP/FP/FN, the overlapping pairs and how many of them kept a
bound instead of an overlay, mean IoU, the vertices of the prepared (equal-area) layers and
the peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import shapely

BENCH = Path(__file__).resolve().parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--kwargs", default="{}")
    parser.add_argument("--root", type=Path, default=BENCH.parent)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(BENCH))
    import worker_core

    worker_core.ROOT = args.root.resolve()
    worker_core.import_plugin_package()
    from iou_evaluation.core import Progress, evaluate

    reference, _, reference_crs = worker_core.read_layer(args.data, "reference")
    predicted, _, predicted_crs = worker_core.read_layer(args.data, "predicted")
    marks, cpu = [], []

    class Stages(Progress):
        def report(self, percent, message=""):
            if message:
                marks.append((time.perf_counter(), message))
                cpu.append(time.process_time())

    start = time.perf_counter()
    evaluation = evaluate(predicted, reference, predicted_crs=predicted_crs,
                          reference_crs=reference_crs, progress=Stages(),
                          **json.loads(args.kwargs))
    end = time.perf_counter()
    marks.append((end, "end"))
    cpu.append(time.process_time())
    metrics = evaluation.metrics
    print(json.dumps({
        "root": str(args.root), "data": str(args.data), "evaluate_s": round(end - start, 2),
        "stages_s": {m: round(marks[k + 1][0] - t, 2) for k, (t, m) in enumerate(marks[:-1])},
        "stages_cpu_s": {m: round(cpu[k + 1] - c, 2) for k, (c, (_, m)) in
                         enumerate(zip(cpu[:-1], marks[:-1]))},
        "tp_fp_fn": [metrics["count_tp"], metrics["count_fp"], metrics["count_fn"]],
        # Overlapping pairs, and those of them left with a bound (not overlaid).
        "pairs": [evaluation.pairs.n, int(np.sum(evaluation.pairs.bounded))
                  if evaluation.pairs.bounded is not None else 0],
        "iou_mean": metrics["iou_mean"],
        "vertices_equal_area": [
            int(shapely.get_num_coordinates(evaluation.reference.geometries).sum()),
            int(shapely.get_num_coordinates(evaluation.predicted.geometries).sum()),
        ],
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }))


if __name__ == "__main__":
    main()
