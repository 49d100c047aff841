"""National scale through qgis_process: ``ioueval:evaluatepolygons`` end to end on tiled field
layers (bench/tile_fields.py) of 50k to 16M fields, one piece, unit by unit, or on a local Dask
cluster; wall time, peak RSS of every process, and a digest of the report's metrics.

Each run is one ``qgis_process.bin run ioueval:evaluatepolygons --json`` with the algorithm's
defaults and the outputs of issue 23's table: TRUE_POSITIVES, FALSE_POSITIVES,
FALSE_NEGATIVES and PER_FIELD as GeoPackages, REPORT_JSON and REPORT_HTML (in a temporary
folder, deleted after the run unless ``--keep-outputs``). QGIS gets the environment of
scripts/env.sh: QT_QPA_PLATFORM=offscreen, the project venv on PYTHONPATH, the plugin through
QGIS_PLUGINPATH and a throw-away QGIS_CUSTOM_CONFIG_PATH profile with the plugin enabled
(``run.QgisProcess``).

Modes:

- ``one``: one piece whatever the size (``IOU_EVALUATION_WORK_UNITS=0``: above 250,000
  features the provider would choose work units itself);
- ``units``: the same with ``IOU_EVALUATION_WORK_UNITS=<--unit-rows>`` in qgis_process's
  environment: layers read to disk and evaluated in work units (``--unit-rows``: rows per
  work unit, default the core's ``UNIT_FEATURES``); ``n_units`` is the number N of the last
  "N work units" in the run's messages (None when no message says so);
- ``dask``: a ``dask scheduler`` and ``--workers`` ``dask worker`` processes (``--threads``
  threads each) started by this script, OUTSIDE qgis_process, with the plugin's core
  importable as ``iou_evaluation.core`` (a folder holding an ``iou_evaluation`` link to this
  checkout on their PYTHONPATH, as tests/dask_cluster.py does); the algorithm gets
  ``DASK_SCHEDULER=tcp://127.0.0.1:<port>``. The cluster is started afresh for every run and
  stopped after it.

Memory: ``peak_rss_mib`` is qgis_process's own maximum resident set (GNU time's %M: exact, not
sampled); ``peak_rss_sampled_mib`` the largest sum of RSS over qgis_process and any children,
sampled every 0.2 s. With Dask, for the scheduler and each worker (its nanny and the worker
process): ``*_hwm_mib`` the largest VmHWM (high-water mark) of its processes, read at every
sample and just before the cluster is stopped, and ``*_sampled_mib`` the largest sampled sum
of its processes' RSS; ``worker_peak_rss_mib`` lists the workers' VmHWM, with their sum (an
upper bound of what they held at once) and max; ``all_peak_rss_sampled_mib`` is the largest
sampled sum over qgis_process, the scheduler and the workers together (what the machine held).

Prints one JSON line per run and appends it to ``--results`` (default
bench/results/national.jsonl; bench/results/ is git-ignored): mode, workers, layer, n_reference,
n_predicted, wall_s, cpu_s (qgis_process's user + system), per_field_us (wall time per
reference field), the memory figures above, load_before / load_after (1-, 5- and 15-minute
load averages), TP/FP/FN and F1, and ``metrics_digest``: sha256 of the JSON report's
``metrics`` object as ``to_json_text`` writes it (the digest of bench/units.py), so runs can be
compared; the metrics themselves are kept beside the log in bench/results/national/ for a
diff when two digests differ.

    .venv/bin/python bench/tile_fields.py --tile 50000 --copies 1  --out bench/data/tiled_1x50k.gpkg
    nice -n 10 .venv/bin/python bench/national.py 50k --mode one dask --workers 1
    .venv/bin/python bench/national.py 50k 1M --mode one units dask --workers 1 2

A layer is a size (50k, 200k, 1M, 4M, 16M: ``tiled_<n / 50k>x50k.gpkg`` in ``--data-dir``,
default bench/data, the naming of bench/README.md) or the path of a GeoPackage with layers
``reference`` (with ``field_id``) and ``predicted``. Runs go layer by layer, and for each
layer mode by mode, ``--repeat`` times in turns.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import (  # noqa: E402  (bench/run.py: the same qgis_process set-up as its runs)
    ALGORITHM,
    GNU_TIME,
    QGIS_PROCESS,
    QgisProcess,
    core_env,
    machine_info,
    source_state,
    vm_hwm_kib,
)
from units import digest  # noqa: E402  (bench/units.py's: a report's and core.evaluate's compare)

DATA_DIR = BENCH / "data"
RESULTS_DIR = BENCH / "results"
#: Reference fields of one tile of bench/tile_fields.py as the sizes below are made.
TILE = 50_000
SIZES = {"50k": 50_000, "200k": 200_000, "1M": 1_000_000, "4M": 4_000_000, "16M": 16_000_000}
#: The outputs of issue 23's bench table (layers as GeoPackages, then the two reports).
LAYER_OUTPUTS = ("TRUE_POSITIVES", "FALSE_POSITIVES", "FALSE_NEGATIVES", "PER_FIELD")
FILE_OUTPUTS = {"REPORT_JSON": "report.json", "REPORT_HTML": "report.html"}
WORK_UNITS_ENV = "IOU_EVALUATION_WORK_UNITS"
SAMPLE_S = 0.2
MIB = 2**20


# ---------------------------------------------------------------------------------------------
# The plugin's core, imported as iou_evaluation (for the digest and UNIT_FEATURES)
# ---------------------------------------------------------------------------------------------


def plugin_path_dir(workdir: Path) -> Path:
    """A folder holding ``iou_evaluation`` -> this checkout: on a PYTHONPATH, the plugin's
    core imports as ``iou_evaluation.core`` (without QGIS)."""
    folder = workdir / "path"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "iou_evaluation"
    if not link.exists():
        link.symlink_to(ROOT)
    return folder


# ---------------------------------------------------------------------------------------------
# Memory of process trees
# ---------------------------------------------------------------------------------------------


class TreeSampler:
    """Every SAMPLE_S seconds, for each named root process: the sum of RSS over the root
    (unless ``include_self`` is False: GNU time's own process) and its descendants, and the
    VmHWM of each of them; the peaks per name and of the sum over all names."""

    def __init__(self):
        self.roots = {}  # name -> (psutil.Process, include_self)
        self.sampled = {}  # name -> peak of the summed RSS (bytes)
        self.hwm = {}  # name -> largest VmHWM of one of its processes (KiB)
        self.all_sampled = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def add(self, name: str, pid: int, include_self: bool = True):
        import psutil

        with self._lock:
            self.roots[name] = (psutil.Process(pid), include_self)
            self.sampled.setdefault(name, 0)
            self.hwm.setdefault(name, 0)

    def start(self):
        self._thread.start()
        return self

    def sample(self):
        import psutil

        total = 0
        with self._lock:
            roots = dict(self.roots)
        for name, (root, include_self) in roots.items():
            try:
                processes = ([root] if include_self else []) + root.children(recursive=True)
            except psutil.Error:
                continue
            rss = 0
            for process in processes:
                try:
                    rss += process.memory_info().rss
                except psutil.Error:
                    continue
                self.hwm[name] = max(self.hwm[name], vm_hwm_kib(process.pid))
            self.sampled[name] = max(self.sampled[name], rss)
            total += rss
        self.all_sampled = max(self.all_sampled, total)

    def _loop(self):
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.sample()

    def mib(self, name: str) -> tuple[float | None, float | None]:
        """(VmHWM MiB, sampled RSS MiB) of ``name``."""
        hwm, sampled = self.hwm.get(name), self.sampled.get(name)
        return (round(hwm / 1024, 1) if hwm else None,
                round(sampled / MIB, 1) if sampled else None)


# ---------------------------------------------------------------------------------------------
# A local Dask cluster, outside qgis_process
# ---------------------------------------------------------------------------------------------


class DaskCluster:
    """``dask scheduler`` on 127.0.0.1 and ``workers`` ``dask worker`` processes (``threads``
    threads each), started the way the README says, with the plugin's core importable; each
    process's output goes to ``log_dir``. A context manager: stopped (workers first) after."""

    def __init__(self, workdir: Path, log_dir: Path, workers: int, threads: int,
                 sampler: TreeSampler):
        self.workdir, self.log_dir = workdir, log_dir
        self.workers, self.threads, self.sampler = workers, threads, sampler
        self.processes = []
        self.address = None

    def env(self) -> dict:
        env = core_env()
        python_path = [str(plugin_path_dir(self.workdir))]
        python_path += [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        return {**env, "PYTHONPATH": os.pathsep.join(python_path)}

    def _start(self, name: str, arguments: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "w")
        process = subprocess.Popen([sys.executable, "-m", *arguments], env=self.env(),
                                   stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        log.close()
        self.processes.append(process)
        self.sampler.add(name, process.pid)
        return process

    def __enter__(self):
        import distributed

        scheduler_file = self.workdir / "scheduler.json"
        try:
            self._start("scheduler", [
                "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                "--dashboard-address", ":0", "--scheduler-file", str(scheduler_file)])
            for _ in range(600):
                if scheduler_file.exists() and scheduler_file.stat().st_size:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError(f"the Dask scheduler did not start: {self.log_dir}")
            for k in range(self.workers):
                self._start(f"worker{k + 1}", [
                    "distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file),
                    "--nworkers", "1", "--nthreads", str(self.threads), "--no-dashboard"])
            with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as client:
                client.wait_for_workers(self.workers, timeout=120)
                self.address = client.scheduler.address
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        self.sampler.sample()  # the high-water marks just before the processes stop
        # Workers first, each to its end, then the scheduler: a worker whose scheduler is
        # gone waits ~8 s before its nanny kills it.
        for process in self.processes[::-1]:
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------


def layer_path(layer: str, data_dir: Path = DATA_DIR) -> Path:
    """The GeoPackage of a size label (50k ... 16M) in ``data_dir``, or a path."""
    if layer in SIZES:
        copies = SIZES[layer] // TILE
        path = data_dir / f"tiled_{copies}x50k.gpkg"
        if not path.exists():
            sys.exit(f"{path} is missing; make it with\n    .venv/bin/python bench/tile_fields.py "
                     f"--tile {TILE} --copies {copies} --out {path}")
        return path.resolve()
    path = Path(layer).resolve()
    if not path.exists():
        sys.exit(f"{layer}: neither a size ({', '.join(SIZES)}) nor a GeoPackage")
    return path


def feature_counts(path: Path) -> tuple[int, int]:
    from osgeo import ogr

    ogr.UseExceptions()
    dataset = ogr.Open(str(path))
    return tuple(dataset.GetLayerByName(name).GetFeatureCount()
                 for name in ("reference", "predicted"))


def _gnu_time(path: Path):
    """(peak RSS KiB, user + system s) from GNU time's ``-f "%M %U %S"`` file."""
    if not path.exists():
        return None, None
    lines = path.read_text().strip().splitlines()[-1:] or [""]
    match = re.fullmatch(r"(\d+) ([\d.]+) ([\d.]+)", lines[0])
    if not match:
        return None, None
    return int(match.group(1)), float(match.group(2)) + float(match.group(3))


def run_once(qgis: QgisProcess, gpkg: Path, mode: str, workers: int | None, args,
             log_stem: Path) -> dict:
    """One qgis_process run (with its Dask cluster in mode ``dask``); the JSON line's dict."""
    n_reference, n_predicted = feature_counts(gpkg)
    workdir = Path(tempfile.mkdtemp(prefix="ioueval-national-", dir=args.work_dir))
    out_dir = workdir / "outputs"
    out_dir.mkdir()
    log_stem.parent.mkdir(parents=True, exist_ok=True)
    env = dict(qgis.env)
    env.pop(WORK_UNITS_ENV, None)
    parameters = [f"PREDICTED={gpkg}|layername=predicted",
                  f"REFERENCE={gpkg}|layername=reference", "REFERENCE_ID_FIELD=field_id"]
    parameters += [f"{name}={out_dir / (name.lower() + '.gpkg')}" for name in LAYER_OUTPUTS]
    parameters += [f"{name}={out_dir / file}" for name, file in FILE_OUTPUTS.items()]
    if mode == "units":
        env[WORK_UNITS_ENV] = str(args.unit_rows)
    elif mode == "one":  # one piece whatever the size (the provider's own choice aside)
        env[WORK_UNITS_ENV] = "0"
    sampler = TreeSampler().start()
    cluster = None
    row = {"bench": "national", "started": datetime.datetime.now(datetime.timezone.utc)
           .isoformat(timespec="seconds"), "layer": gpkg.name, "mode": mode,
           "workers": workers, "threads_per_worker": args.threads if mode == "dask" else None,
           "unit_rows": args.unit_rows if mode == "units" else None,
           "n_reference": n_reference, "n_predicted": n_predicted}
    try:
        if mode == "dask":
            cluster = DaskCluster(workdir, log_stem.parent / f"{log_stem.name}.dask",
                                  workers, args.threads, sampler)
            cluster.log_dir.mkdir(parents=True, exist_ok=True)
            cluster.__enter__()
            parameters.append(f"DASK_SCHEDULER={cluster.address}")
            row["dask_scheduler"] = cluster.address
        time_path = workdir / "time.txt"
        stdout_path = out_dir / "qgis_process.json"
        command = [GNU_TIME, "-f", "%M %U %S", "-o", str(time_path),
                   QGIS_PROCESS, "run", ALGORITHM, "--json", "--", *parameters]
        row["load_before"] = [round(v, 2) for v in os.getloadavg()]
        row["disk_free_gb_before"] = round(shutil.disk_usage(out_dir).free / 1e9, 1)
        with open(stdout_path, "w") as out, open(f"{log_stem}.log", "w") as log:
            start = time.perf_counter()
            process = subprocess.Popen(command, env=env, stdout=out, stderr=log,
                                       start_new_session=True)
            sampler.add("qgis_process", process.pid, include_self=False)
            try:
                process.wait(timeout=args.timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                timed_out = True
            wall_s = time.perf_counter() - start
        row["load_after"] = [round(v, 2) for v in os.getloadavg()]
    finally:
        if cluster is not None:
            cluster.__exit__(None, None, None)
        sampler.stop()
    peak_kib, cpu_s = _gnu_time(time_path)
    row.update(
        status="timeout" if timed_out else ("ok" if process.returncode == 0 else "failed"),
        returncode=process.returncode, wall_s=round(wall_s, 2),
        cpu_s=None if cpu_s is None else round(cpu_s, 1),
        per_field_us=round(wall_s / n_reference * 1e6, 1) if n_reference else None,
        peak_rss_mib=round(peak_kib / 1024, 1) if peak_kib else None,
        peak_rss_sampled_mib=sampler.mib("qgis_process")[1],
    )
    if mode == "dask":
        scheduler_hwm, scheduler_sampled = sampler.mib("scheduler")
        worker_hwm = [sampler.mib(f"worker{k + 1}")[0] for k in range(workers)]
        known = [v for v in worker_hwm if v is not None]
        row.update(
            scheduler_peak_rss_mib=scheduler_hwm, scheduler_peak_rss_sampled_mib=scheduler_sampled,
            worker_peak_rss_mib=worker_hwm,
            worker_peak_rss_sampled_mib=[sampler.mib(f"worker{k + 1}")[1]
                                         for k in range(workers)],
            worker_peak_rss_sum_mib=round(sum(known), 1) if known else None,
            worker_peak_rss_max_mib=max(known) if known else None,
        )
    row["all_peak_rss_sampled_mib"] = round(sampler.all_sampled / MIB, 1)
    log_text = Path(f"{log_stem}.log").read_text(errors="replace")
    # qgis_process's JSON log holds the messages (pushInfo, warnings), not the progress text.
    announced = re.findall(r"([\d,]+) work units", log_text + stdout_path.read_text(
        errors="replace"))
    row["n_units"] = int(announced[-1].replace(",", "")) if announced else None
    report_path = out_dir / FILE_OUTPUTS["REPORT_JSON"]
    if row["status"] == "ok" and report_path.exists():
        metrics = json.loads(report_path.read_text())["metrics"]
        row.update({key: metrics.get(key) for key in ("count_tp", "count_fp", "count_fn", "f1")})
        row["metrics_digest"] = digest(metrics)
        Path(f"{log_stem}.metrics.json").write_text(json.dumps(metrics, indent=2))
    row["outputs_mb"] = {path.name: round(path.stat().st_size / 1e6, 1)
                         for path in sorted(out_dir.iterdir()) if path.is_file()}
    row["log"] = str(Path(f"{log_stem}.log").relative_to(ROOT)) if Path(
        f"{log_stem}.log").is_relative_to(ROOT) else f"{log_stem}.log"
    if args.keep_outputs:
        row["outputs_dir"] = str(out_dir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("layers", nargs="+",
                        help=f"sizes ({', '.join(SIZES)}: bench/data/tiled_<n>x50k.gpkg) or "
                             "GeoPackage paths")
    parser.add_argument("--mode", nargs="+", choices=("one", "units", "dask"), default=["one"])
    parser.add_argument("--workers", nargs="+", type=int, default=[2],
                        help="Dask workers (mode dask; several: one run each), default 2")
    parser.add_argument("--threads", type=int, default=1, help="threads per Dask worker")
    parser.add_argument("--unit-rows", type=int, default=None,
                        help=f"mode units: {WORK_UNITS_ENV} (rows per work unit; default the "
                             "core's UNIT_FEATURES)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR,
                        help="where the sizes' tiled_<n>x50k.gpkg are (default bench/data)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, in turns")
    parser.add_argument("--timeout-s", type=float, default=4 * 3600.0)
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "national.jsonl")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the outputs go during a run (default: the system's "
                             "temporary folder; 16M fields write ~15-20 GB)")
    parser.add_argument("--keep-outputs", action="store_true")
    args = parser.parse_args(argv)

    setup_dir = Path(tempfile.mkdtemp(prefix="ioueval-national-setup-"))
    sys.path.insert(0, str(plugin_path_dir(setup_dir)))
    if args.unit_rows is None:
        from iou_evaluation.core.evaluation.units import UNIT_FEATURES

        args.unit_rows = UNIT_FEATURES
    paths = [layer_path(layer, args.data_dir) for layer in args.layers]
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    log_dir = RESULTS_DIR / "national" / stamp
    source = source_state()
    qgis = QgisProcess(setup_dir / "qgis")
    missing = qgis.missing({name: "" for name in (*LAYER_OUTPUTS, *FILE_OUTPUTS)})
    if missing:
        sys.exit(f"{ALGORITHM} has no parameter(s) {', '.join(missing)}")
    runs = [(mode, workers) for mode in args.mode
            for workers in (args.workers if mode == "dask" else [None])]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    try:
        for gpkg in paths:
            for turn in range(args.repeat):
                for mode, workers in runs:
                    name = f"{gpkg.stem}.{mode}{workers or ''}.{turn + 1}"
                    row = run_once(qgis, gpkg, mode, workers, args, log_dir / name)
                    row.update(commit=source["commit"], changed_files=source["changed_files"],
                               nice=os.nice(0), qgis=qgis.qgis_version,
                               machine=machine_info())
                    line = json.dumps(row)
                    print(line, flush=True)
                    with open(args.results, "a") as results:
                        results.write(line + "\n")
    finally:
        shutil.rmtree(setup_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
