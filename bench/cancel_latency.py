"""Cancellation latency of core.evaluate: how long a run takes to stop once cancel is asked.

A run is started on a generated GeoPackage (bench/generate.py; bench/run.py makes them) with a
Progress whose ``is_canceled`` turns true at a chosen moment; the latency is the time from that
moment to EvaluationCanceled. Moments are spread over the whole run (every ``--step-s``
seconds from the start until a run finishes without being stopped), so every stage is hit:

    .venv/bin/python bench/cancel_latency.py bench/data/fields_50k_seed0.gpkg
    .venv/bin/python bench/cancel_latency.py bench/data/fields_50k_seed0.gpkg --tolerance 10

Prints one line per moment (the stage that was running, the latency) and the largest latency.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from worker_core import import_plugin_package, read_layer  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="GeoPackage with layers reference, predicted")
    parser.add_argument("--tolerance", type=float, default=None, help="boundary tolerance, m")
    parser.add_argument("--step-s", type=float, default=1.0, help="seconds between moments")
    args = parser.parse_args(argv)

    import_plugin_package()
    from iou_evaluation.core import evaluate
    from iou_evaluation.core.util.progress import EvaluationCanceled, Progress

    class CancelAt(Progress):
        """Asks to cancel ``after_s`` seconds after it was made; records the stage then."""

        def __init__(self, after_s: float):
            self.start = time.perf_counter()
            self.deadline = self.start + after_s
            self.stage = ""
            self.asked = None

        def report(self, percent: float, message: str = "") -> None:
            if message:
                self.stage = message

        def is_canceled(self) -> bool:
            now = time.perf_counter()
            if now >= self.deadline and self.asked is None:
                # The cancel button is pressed at the deadline; this poll sees it now.
                self.asked = (self.deadline, self.stage)
            return now >= self.deadline

    reference, _, reference_crs = read_layer(args.data, "reference")
    predicted, _, predicted_crs = read_layer(args.data, "predicted")
    kwargs = {"boundary_tolerance_m": args.tolerance}
    worst = 0.0
    after = args.step_s
    while True:
        progress = CancelAt(after)
        try:
            evaluate(predicted, reference, predicted_crs=predicted_crs,
                     reference_crs=reference_crs, progress=progress, **kwargs)
        except EvaluationCanceled:
            latency = time.perf_counter() - progress.deadline
            worst = max(worst, latency)
            print(f"cancel at {after:5.1f} s ({progress.asked[1]}): stopped after "
                  f"{latency:.2f} s", flush=True)
            after += args.step_s
            continue
        print(f"a run not cancelled takes {time.perf_counter() - progress.start:.1f} s")
        break
    print(f"largest latency: {worst:.2f} s")


if __name__ == "__main__":
    main()
