"""Time and memory of ``parse_answer`` on long answers, one shape per model syntax (and
unclosed tags), at 100 KB and 1 MB: CPU seconds, records, kept span characters and the
process's peak resident memory above its start. Prints a Markdown table.

    source scripts/env.sh && nice .venv/bin/python bench/model_text_cost.py
"""

from __future__ import annotations

import gc
import importlib.util
import pathlib
import resource
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("iou_evaluation", ROOT / "__init__.py",
                                              submodule_search_locations=[str(ROOT)])
module = importlib.util.module_from_spec(spec)
sys.modules["iou_evaluation"] = module
spec.loader.exec_module(module)
sys.path.insert(0, str(ROOT / "tests"))

from iou_evaluation.core.text.model_text import parse_answer  # noqa: E402
from test_core_model_formats import UNITS  # noqa: E402


def main():
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("| shape | 100 KB CPU s | 1 MB CPU s | ratio | records | spans MB | peak RSS + MB |")
    print("|---|---|---|---|---|---|---|")
    for name, unit in UNITS.items():
        seconds = {}
        for n in (100_000, 1_000_000):
            text = (unit * (n // len(unit) + 1))[:n]
            start = time.process_time()
            answer = parse_answer(text, "auto", 1000, 1000)
            seconds[n] = time.process_time() - start
        spans = sum(len(r.span) for r in answer.records) / 1e6
        records = len(answer.records)
        del answer, text
        gc.collect()
        peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base) / 1e6
        ratio = seconds[1_000_000] / max(seconds[100_000], 1e-3)
        print(f"| {name} | {seconds[100_000]:.3f} | {seconds[1_000_000]:.3f} | {ratio:.1f} "
              f"| {records} | {spans:.2f} | {peak:.0f} |")


if __name__ == "__main__":
    main()
