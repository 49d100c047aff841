"""What both benchmark workers share (standard library only: worker_core.py runs in the
project venv, worker_agribound.py in agribound's own Python 3.12 venv; each imports this from
bench/, the folder of the script it runs)."""

from __future__ import annotations

import re
import resource
from pathlib import Path

#: Summary keys copied into a worker's result (when the tool reports them).
REPORTED_KEYS = (
    "count_reference", "count_predicted", "count_tp", "count_fp", "count_fn",
    "count_fp_unassigned", "count_reference_dropped", "count_predicted_dropped",
    "count_reference_repaired", "count_predicted_repaired",
    "precision", "recall", "f1", "iou_mean", "best_iou_mean", "area_weighted_f1",
    "oversegmentation_mean", "undersegmentation_mean",
    "hausdorff_mean_m", "boundary_distance_mean_m",
    "boundary_precision", "boundary_recall", "boundary_f1", "coverage_within_tolerance",
)


def peak_rss_mib():
    """This process's peak resident memory (MiB): VmHWM of its own address space, which
    (unlike ru_maxrss) does not include the high-water mark of the process that started it."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(re.search(r"^VmHWM:\s+(\d+) kB", status, re.M).group(1)) / 1024
    except (OSError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
