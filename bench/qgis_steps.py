"""Where qgis_process spends its time around the core: one ``ioueval:evaluatepolygons`` run
(defaults, every layer output as a GeoPackage, the JSON and HTML reports), timed step by step
from inside the process.

A ``sitecustomize`` module (written to a temporary folder put first on PYTHONPATH; nothing
in the repository changes) wraps the algorithm's functions as the plugin is imported and
records, for each step, its wall time, its own thread's CPU time, and the scheduler's
run-queue delay of the algorithm's thread (``/proc/thread-self/schedstat``: time it was
ready to run but waited for a core, which other jobs on the machine cause). The process's
start-up is the time until ``processAlgorithm`` begins, its exit the time after it returns.

With several ``--root`` (plugin folders: this checkout, or an older commit unpacked with
``git archive``) the runs take turns, root after root, ``--repeat`` times::

    mkdir -p /tmp/before && git archive 33d4cb8 | tar -x -C /tmp/before
    .venv/bin/python bench/qgis_steps.py bench/data/shared_50k_seed0.gpkg \\
        --root /tmp/before --root . --repeat 3

Every run's steps are printed; the last lines give each root's medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import run as runner  # noqa: E402  (bench/run.py: the qgis_process environment)

#: The hook: wraps functions of the plugin's modules as they are imported.
HOOK = r'''
import functools, importlib.abc, json, os, sys, time

LOG = os.environ["IOU_STEPS_LOG"]
records = []  # [step, start (epoch s), wall s, thread CPU s]
marks = {"python": time.time()}


def _schedstat():
    """(CPU s, run-queue delay s) of the calling thread."""
    try:
        cpu, delay, _ = open("/proc/thread-self/schedstat").read().split()
        return int(cpu) / 1e9, int(delay) / 1e9
    except OSError:
        return 0.0, 0.0


def timed(step, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start, cpu = time.time(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            records.append([step, start, time.time() - start, time.thread_time() - cpu])
    return wrapper


def timed_batches(function):
    """feature_batches: building each batch, and the caller's time with it (addFeatures)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        batches = function(*args, **kwargs)
        while True:
            start, cpu = time.time(), time.thread_time()
            try:
                batch = next(batches)
            except StopIteration:
                return
            finally:
                records.append(["build features", start, time.time() - start,
                                time.thread_time() - cpu])
            start, cpu = time.time(), time.thread_time()
            yield batch
            records.append(["addFeatures", start, time.time() - start, time.thread_time() - cpu])
    return wrapper


def patch(module):
    name = module.__name__
    if not name.endswith("processing_provider.evaluate_polygons"):
        return
    for function, step in (("read_source", "read layers"), ("evaluate", "evaluate (core)"),
                           ("render_evaluation_html", "draw HTML report"),
                           ("write_reports", "write report files")):
        if hasattr(module, function):
            setattr(module, function, timed(step, getattr(module, function)))
    module.feature_batches = timed_batches(module.feature_batches)
    writer = module._OutputWriter
    writer.write_all = timed("write layer outputs", writer.write_all)
    writer._style = timed("store styles", writer._style)
    algorithm = module.EvaluatePolygonsAlgorithm
    process = algorithm.processAlgorithm
    evaluate = module.evaluate

    def evaluate_marked(*args, **kwargs):
        try:
            return evaluate(*args, **kwargs)
        finally:
            marks["evaluated"] = time.time()
            marks["sched_evaluated"] = _schedstat()

    module.evaluate = evaluate_marked

    def process_marked(*args, **kwargs):
        marks["algorithm"] = time.time()
        marks["sched_algorithm"] = _schedstat()
        try:
            return process(*args, **kwargs)
        finally:
            marks["returned"] = time.time()
            marks["sched_returned"] = _schedstat()
            with open(LOG, "w") as handle:
                json.dump({"records": records, "marks": marks}, handle)

    algorithm.processAlgorithm = process_marked


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("iou_evaluation"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                execute = spec.loader.exec_module

                def exec_module(module, execute=execute):
                    execute(module)
                    patch(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


sys.meta_path.insert(0, Finder())
'''

#: Steps in the order printed.
STEPS = ("start-up", "read layers", "evaluate (core)", "after the core", "write layer outputs",
         "build features", "addFeatures", "store styles", "draw HTML report",
         "write report files", "exit")


def run_once(root: Path, dataset: Path, work: Path) -> dict:
    """One qgis_process run with ``root`` as the plugin; {step: (wall s, thread CPU s)} plus
    "wall", "cpu" (the process's user + system CPU) and "run delay after the core"."""
    runner.ROOT = root
    work.mkdir(parents=True, exist_ok=True)
    enable = runner.subprocess.run

    def lenient(command, **kwargs):  # "plugins enable" fails when it is enabled already
        if "enable" in command:
            kwargs["check"] = False
        return enable(command, **kwargs)

    runner.subprocess.run = lenient
    try:
        qgis = runner.QgisProcess(work)
    finally:
        runner.subprocess.run = enable
    hook_dir = Path(tempfile.mkdtemp(prefix="qgis_steps_"))
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    log = work / "steps.json"
    log.unlink(missing_ok=True)
    env = {**qgis.env, "PYTHONPATH": f"{hook_dir}{os.pathsep}{qgis.env['PYTHONPATH']}",
           "IOU_STEPS_LOG": str(log)}
    out = work / "outputs"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    arguments = [f"PREDICTED={dataset}|layername=predicted",
                 f"REFERENCE={dataset}|layername=reference", "REFERENCE_ID_FIELD=field_id"]
    arguments += [f"{name}={path}" for name, path in qgis.outputs(out).items()]
    start = time.time()
    with open(work / "stdout.json", "w") as stdout, open(work / "stderr.txt", "w") as stderr:
        process = subprocess.Popen([runner.QGIS_PROCESS, "run", runner.ALGORITHM, "--json", "--"]
                                   + arguments, env=env, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
    end = time.time()
    shutil.rmtree(hook_dir, ignore_errors=True)
    if status != 0 or not log.exists():
        raise SystemExit(f"qgis_process failed ({status}): see {work / 'stderr.txt'}")
    data = json.loads(log.read_text())
    marks, steps = data["marks"], {}
    for step, _, wall, cpu in data["records"]:
        total = steps.setdefault(step, [0.0, 0.0])
        total[0] += wall
        total[1] += cpu
    steps["start-up"] = [marks["algorithm"] - start, None]
    steps["after the core"] = [marks["returned"] - marks["evaluated"],
                               marks["sched_returned"][0] - marks["sched_evaluated"][0]]
    steps["exit"] = [end - marks["returned"], None]
    steps["wall"] = [end - start, None]
    steps["cpu"] = [usage.ru_utime + usage.ru_stime, None]
    steps["run delay after the core"] = [
        marks["sched_returned"][1] - marks["sched_evaluated"][1], None]
    shutil.rmtree(out, ignore_errors=True)
    return steps


def _fmt(value):
    return "–" if value is None else f"{value:.2f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, nargs="?",
                        default=BENCH / "data" / "shared_50k_seed0.gpkg")
    parser.add_argument("--root", type=Path, action="append",
                        help="plugin folder (repeatable; default: this checkout)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--work", type=Path, default=BENCH / "results" / "qgis_steps")
    args = parser.parse_args(argv)
    roots = [root.resolve() for root in (args.root or [BENCH.parent])]
    runs = {root: [] for root in roots}
    for _ in range(args.repeat):
        for k, root in enumerate(roots):
            steps = run_once(root, args.dataset.resolve(), args.work / f"root{k}")
            runs[root].append(steps)
            load = os.getloadavg()[0]
            print(f"{root}: wall {steps['wall'][0]:.2f} s, CPU {steps['cpu'][0]:.2f} s, "
                  f"load {load:.1f}; " + ", ".join(
                      f"{step} {_fmt(steps.get(step, [None])[0])}"
                      + (f" (CPU {steps[step][1]:.2f})" if steps.get(step, [0, None])[1]
                         is not None else "")
                      for step in STEPS) + "; run delay after the core "
                  f"{steps['run delay after the core'][0]:.2f}", flush=True)
    print("\nmedians, wall s (thread CPU s):")
    print("| step | " + " | ".join(str(root) for root in roots) + " |")
    print("|---|" + "---:|" * len(roots))
    for step in STEPS + ("run delay after the core", "wall", "cpu"):
        cells = []
        for root in roots:
            walls = [r[step][0] for r in runs[root] if step in r]
            cpus = [r[step][1] for r in runs[root] if step in r and r[step][1] is not None]
            cell = _fmt(statistics.median(walls)) if walls else "–"
            if cpus:
                cell += f" ({statistics.median(cpus):.2f})"
            cells.append(cell)
        print(f"| {step} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
