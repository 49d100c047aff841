"""Benchmark runner: our core, agribound 1.0.1 and the full qgis_process run on the same files.

For each size it generates (or reuses) bench/data/fields_<size>_seed<seed>.gpkg with
bench/generate.py, then times, each in a subprocess of its own:

1. our core: bench/worker_core.py in the project venv (OGR read, then core.evaluate; the two
   timed separately);
2. agribound: bench/worker_agribound.py in bench/.venv-agribound (geopandas read, then
   agribound.evaluate.evaluate; evaluate timed alone). agribound's defaults compute boundary
   distances at 1 m sample spacing, and they are left as they are;
3. qgis_process: ``qgis_process.bin run ioueval:evaluatepolygons`` with every layer output as
   a GeoPackage and the JSON and HTML reports, in a throw-away QGIS profile.

for the configurations "defaults" and "tolerance10" (boundary tolerance 10 m). A tool that does
not offer the tolerance yet (core.evaluate without ``boundary_tolerance_m``, the algorithm
without ``BOUNDARY_TOLERANCE``) is recorded as "n/a". Wall time comes from the runner's clock,
peak resident memory from GNU time (``/usr/bin/time -f %M``, Debian package "time").

It prints a markdown table with the ratios agribound evaluate ÷ core evaluate and qgis_process
wall ÷ core evaluate, the scaling 50k ÷ 5k, and the TP/FP/FN each tool found (which must
agree), and writes everything as JSON to bench/results/. Typical use (project venv)::

    .venv/bin/python bench/run.py --sizes 1k 5k 50k
    .venv/bin/python bench/run.py --sizes 5k --configs defaults --skip qgis
    .venv/bin/python bench/run.py --sizes --county 3000     # only the county case
    .venv/bin/python bench/run.py --sizes --shared 50k --real world counties
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA_DIR = BENCH / "data"
RESULTS_DIR = BENCH / "results"
AGRIBOUND_PYTHON = BENCH / ".venv-agribound" / "bin" / "python"
QGIS_PROCESS = "/usr/bin/qgis_process.bin"  # /usr/bin/qgis_process passes a flag 3.22 rejects
ALGORITHM = "ioueval:evaluatepolygons"

#: Keyword arguments of core.evaluate / agribound's evaluate and qgis_process parameters of
#: each configuration.
CONFIGS = {
    "defaults": {"core": {}, "agribound": {}, "qgis": {}},
    "tolerance10": {
        "core": {"boundary_tolerance_m": 10.0},
        "agribound": {"boundary_tolerance_m": 10.0},
        "qgis": {"BOUNDARY_TOLERANCE": "10"},
    },
}
TOOLS = ("core", "agribound", "qgis")


@dataclass
class Dataset:
    """One GeoPackage the three tools evaluate."""

    label: str  # "5k", "county3000"
    path: Path
    id_field: str
    n_reference: int
    n_predicted: int
    crs: str
    is_county: bool = False


@dataclass
class Measurement:
    """One subprocess: wall time (s), peak resident memory (MiB), exit status, its result."""

    wall_s: float | None = None
    cpu_s: float | None = None  # user + system CPU time (GNU time only)
    peak_rss_mib: float | None = None
    returncode: int | None = None
    timed_out: bool = False
    status: str = "ok"  # ok, unsupported, timeout, failed, skipped
    result: dict = field(default_factory=dict)
    log: str | None = None


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def parse_size(text: str) -> int:
    """'1k' -> 1000, '50k' -> 50000, '1200' -> 1200."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kK]?)", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 1k, 5k, 50k, 1200)")
    value = float(match.group(1)) * (1000 if match.group(2) else 1)
    return int(round(value))


def size_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _generator_digest() -> str:
    return hashlib.sha256((BENCH / "generate.py").read_bytes()).hexdigest()[:16]


def ensure_dataset(n: int, seed: int, county: bool = False) -> Dataset:
    """The GeoPackage for (n, seed), generated (in a subprocess, so that the runner stays
    small) unless a file made by the same generator source exists; a sidecar JSON records the
    generator's digest and the row counts."""
    label = f"county{n}" if county else size_label(n)
    stem = f"counties_{n}_seed{seed}" if county else f"fields_{label}_seed{seed}"
    path = DATA_DIR / f"{stem}.gpkg"
    sidecar = path.with_suffix(".json")
    digest = _generator_digest()
    info = json.loads(sidecar.read_text()) if sidecar.exists() and path.exists() else None
    if info is None or info.get("generator_sha256_16") != digest:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, str(BENCH / "generate.py"), "--county" if county else "--n", str(n),
             "--seed", str(seed), "--out", str(path), "--summary", str(sidecar)],
            env=core_env(), check=True,
        )
        info = json.loads(sidecar.read_text())
        info.update(generator_sha256_16=digest, seconds=round(time.perf_counter() - start, 1))
        sidecar.write_text(json.dumps(info, indent=2))
    return Dataset(
        label=label, path=path, id_field="county_id" if county else "field_id",
        n_reference=info["n_reference"], n_predicted=info["n_predicted"], crs=info["crs"],
        is_county=county,
    )


def ensure_shared_dataset(n: int, seed: int) -> Dataset:
    """The GeoPackage of bench/generate_shared.py (fields sharing edges) for (n, seed), made
    unless a file from the same generator source exists."""
    label = f"shared{size_label(n)}"
    path = DATA_DIR / f"shared_{size_label(n)}_seed{seed}.gpkg"
    sidecar = path.with_suffix(".json")
    digest = hashlib.sha256((BENCH / "generate_shared.py").read_bytes()).hexdigest()[:16]
    info = json.loads(sidecar.read_text()) if sidecar.exists() and path.exists() else None
    if info is None or info.get("generator_sha256_16") != digest:
        subprocess.run([sys.executable, str(BENCH / "generate_shared.py"), "--n", str(n),
                        "--seed", str(seed), "--out", str(path), "--summary", str(sidecar)],
                       env=core_env(), check=True)
        info = json.loads(sidecar.read_text())
        info.update(generator_sha256_16=digest)
        sidecar.write_text(json.dumps(info, indent=2))
    return Dataset(label=label, path=path, id_field="field_id", n_reference=info["n_reference"],
                   n_predicted=info["n_predicted"], crs=info["crs"])


def ensure_real_dataset(case: str) -> Dataset:
    """A real-layer case of bench/realdata.py ("world", "counties"), fetched and built on first
    use. agribound gets the county case's time limit there (``is_county``)."""
    subprocess.run([sys.executable, str(BENCH / "realdata.py"), case], env=core_env(),
                   check=True, capture_output=True)
    path = DATA_DIR / f"real_{case}.gpkg"
    info = json.loads(path.with_suffix(".json").read_text())
    return Dataset(label=f"real_{case}", path=path, id_field="ref_id",
                   n_reference=info["n_reference"], n_predicted=info["n_predicted"],
                   crs=info["crs"], is_county=True)


# ---------------------------------------------------------------------------------------------
# Measuring a subprocess
# ---------------------------------------------------------------------------------------------


GNU_TIME = "/usr/bin/time"  # Debian package "time"


def measure(command, *, env, log_path: Path, stdout_path: Path | None = None,
            timeout_s: float | None = None) -> Measurement:
    """Run ``command`` to completion: wall time (s) by the runner's clock, CPU time (s) and
    peak resident memory (MiB) of the command alone. On timeout the whole process group is
    killed.

    The peak comes from GNU time's %M (its child is forked from time's own small process).
    Not from the runner's own ``wait4``: a child started by ``vfork``/``posix_spawn`` inherits
    the starting process's high-water mark, so ru_maxrss would include the runner's memory.
    Without /usr/bin/time, /proc/<pid>/status VmHWM (the exec'd process's own high-water
    mark) is sampled every 20 ms instead.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    usage_path = log_path.with_suffix(".time")
    use_time = os.access(GNU_TIME, os.X_OK)
    if use_time:
        command = [GNU_TIME, "-f", "%M %U %S", "-o", str(usage_path)] + list(command)
    with open(log_path, "w") as log, open(stdout_path or os.devnull, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, env=env, stdout=out if stdout_path else log, stderr=log,
            start_new_session=True,
        )
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, kill) if timeout_s else None
        if timer:
            timer.start()
        peak_kib = 0
        if use_time:
            proc.wait()
        else:
            while proc.poll() is None:
                peak_kib = max(peak_kib, vm_hwm_kib(proc.pid))
                time.sleep(0.02)
        wall_s = time.perf_counter() - start
        if timer:
            timer.cancel()
    cpu_s = None
    if use_time and usage_path.exists():
        # "Command exited with non-zero status N" may precede the "%M %U %S" line.
        last = usage_path.read_text().strip().splitlines()[-1:] or [""]
        match = re.fullmatch(r"(\d+) ([\d.]+) ([\d.]+)", last[0])
        if match:
            peak_kib = int(match.group(1))
            cpu_s = float(match.group(2)) + float(match.group(3))
    m = Measurement(
        wall_s=wall_s, cpu_s=cpu_s, peak_rss_mib=peak_kib / 1024 if peak_kib else None,
        returncode=proc.returncode, timed_out=timed_out.is_set(),
        log=str(log_path.relative_to(ROOT)),
    )
    if m.timed_out:
        m.status = "timeout"
    elif m.returncode != 0:
        m.status = "failed"
    return m


def vm_hwm_kib(pid: int) -> int:
    """A process's peak resident set (VmHWM, KiB); 0 when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) if match else 0


def _median_of(runs: list[Measurement], key) -> Measurement:
    """The run with the median ``key`` (the lower one of an even count) when all succeeded,
    else the first that failed, timed out or was unsupported."""
    not_ok = [r for r in runs if r.status != "ok"]
    if not_ok:
        return not_ok[0]
    return sorted(runs, key=key)[(len(runs) - 1) // 2]


# ---------------------------------------------------------------------------------------------
# The three tools
# ---------------------------------------------------------------------------------------------


#: Compiled modules of every tool's Python go here, outside system folders.
PYCACHE_DIR = RESULTS_DIR / "pycache"


def _with_bytecode_cache(env: dict) -> dict:
    """``env`` with Python's default bytecode caching, as on a user's machine: this machine's
    environment sets PYTHONDONTWRITEBYTECODE=1, under which qgis_process compiles about 250
    modules (~0.3 s) at every start. The cache goes to PYCACHE_DIR (PYTHONPYCACHEPREFIX)."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE_DIR)
    return env


def core_env():
    env = _with_bytecode_cache(os.environ)
    env.setdefault("PROJ_DATA", "/usr/share/proj")  # Debian's pyproj in a venv (scripts/env.sh)
    return env


def agribound_env():
    """A clean environment for the Python 3.12 venv: nothing of the project venv's paths and
    no PROJ data directory of the system's (older) PROJ for the pyproj wheel."""
    return _with_bytecode_cache({
        k: v for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PROJ_DATA", "PROJ_LIB", "VIRTUAL_ENV", "PYTHONHOME")
    })


def run_worker(tool: str, dataset: Dataset, kwargs: dict, out_dir: Path,
               timeout_s: float | None) -> Measurement:
    python = sys.executable if tool == "core" else str(AGRIBOUND_PYTHON)
    script = BENCH / f"worker_{tool}.py"
    result_path = out_dir / f"{tool}.json"
    if result_path.exists():
        result_path.unlink()
    m = measure(
        [python, str(script), str(dataset.path), "--kwargs", json.dumps(kwargs),
         "--out", str(result_path)],
        env=core_env() if tool == "core" else agribound_env(),
        log_path=out_dir / f"{tool}.log", timeout_s=timeout_s,
    )
    if m.status == "ok":
        m.result = json.loads(result_path.read_text())
        if m.result.get("status") == "unsupported":
            m.status = "unsupported"
    return m


class QgisProcess:
    """qgis_process.bin with the plugin found via QGIS_PLUGINPATH in a throw-away profile,
    the environment of scripts/env.sh."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        plugins = workdir / "plugins"
        plugins.mkdir(parents=True, exist_ok=True)
        link = plugins / "iou_evaluation"
        if not link.exists():
            link.symlink_to(ROOT)
        profile = workdir / "profile"
        profile.mkdir(exist_ok=True)
        runtime = Path(os.environ.get("XDG_RUNTIME_DIR", f"/tmp/runtime-{os.getuid()}"))
        runtime.mkdir(mode=0o700, exist_ok=True)
        # The project venv's packages (shapely built against the system GEOS), as env.sh does.
        site_packages = sysconfig.get_path("purelib")
        python_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        self.env = {
            **_with_bytecode_cache(os.environ),
            "QT_QPA_PLATFORM": "offscreen",
            "PROJ_DATA": "/usr/share/proj",
            "PYTHONPATH": os.pathsep.join([site_packages] + python_path),
            "QGIS_PLUGINPATH": str(plugins),
            "QGIS_CUSTOM_CONFIG_PATH": str(profile),
            "XDG_RUNTIME_DIR": str(runtime),
        }
        subprocess.run([QGIS_PROCESS, "plugins", "enable", "iou_evaluation"], env=self.env,
                       check=True, capture_output=True, timeout=300)
        help_text = subprocess.run([QGIS_PROCESS, "help", ALGORITHM], env=self.env, check=True,
                                   capture_output=True, text=True, timeout=300).stdout
        #: parameter name -> argument type ("source", "sink", "fileDestination", ...)
        # Each parameter: "NAME: description", its help lines (tab-indented), then its type.
        self.arguments = dict(re.findall(
            r"^([A-Z0-9_]+): .*\n(?:\t(?!Argument type:).*\n)*\tArgument type:\t(\w+)",
            help_text, re.M,
        ))
        self.qgis_version = self._version()

    def _version(self) -> str:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "qgis"],
                              capture_output=True, text=True)
        return done.stdout.strip() or "unknown"

    def missing(self, parameters: dict) -> list[str]:
        """The parameters the installed algorithm does not have."""
        return sorted(p for p in parameters if p not in self.arguments)

    def outputs(self, out_dir: Path) -> dict[str, str]:
        """Every layer output as a GeoPackage, every file output by its name (JSON, HTML)."""
        paths = {}
        for name, kind in self.arguments.items():
            if kind in ("sink", "vectorDestination"):
                paths[name] = str(out_dir / f"{name.lower()}.gpkg")
            elif kind == "fileDestination":
                suffix = next((s for s in ("json", "html", "csv") if s in name.lower()), "txt")
                paths[name] = str(out_dir / f"{name.lower()}.{suffix}")
        return paths

    def run(self, dataset: Dataset, parameters: dict, out_dir: Path,
            timeout_s: float | None) -> Measurement:
        missing = self.missing(parameters)
        if missing:
            return Measurement(status="unsupported", result={"missing_parameters": missing})
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        args = [
            f"PREDICTED={dataset.path}|layername=predicted",
            f"REFERENCE={dataset.path}|layername=reference",
            f"REFERENCE_ID_FIELD={dataset.id_field}",
        ] + [f"{k}={v}" for k, v in parameters.items()] + [
            f"{k}={v}" for k, v in self.outputs(out_dir).items()
        ]
        stdout = out_dir / "qgis_process.json"
        m = measure([QGIS_PROCESS, "run", ALGORITHM, "--json", "--"] + args, env=self.env,
                    log_path=out_dir.parent / "qgis.log", stdout_path=stdout,
                    timeout_s=timeout_s)
        if m.status == "ok":
            results = json.loads(stdout.read_text())["results"]
            report_path = results.get("REPORT_JSON")
            report = json.loads(Path(report_path).read_text()) if report_path else {}
            metrics = report.get("metrics", {})
            m.result = {
                "results": {k: v for k, v in results.items() if not isinstance(v, str)},
                "metrics": metrics,
                "computes_boundary_distances": "boundary_distance_mean_m" in metrics,
                "output_sizes_mb": {
                    Path(v).name: round(Path(v).stat().st_size / 1e6, 2)
                    for v in results.values() if isinstance(v, str) and Path(v).is_file()
                },
            }
        return m


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _fmt_time(m: Measurement | None, key: str) -> str:
    if m is None or m.status == "skipped":
        return "–"
    if m.status == "unsupported":
        return "n/a"
    if m.status == "timeout":
        return f"> {m.wall_s:.0f} (timeout)"
    if m.status == "failed":
        return f"failed (rc {m.returncode})"
    value = m.wall_s if key == "wall" else m.result.get(key)
    return f"{value:.2f}" if value is not None else "–"


def _fmt_mem(m: Measurement | None) -> str:
    if m is not None and m.status == "unsupported":
        return "n/a"
    if m is None or m.status == "skipped" or m.peak_rss_mib is None:
        return "–"
    return f"{m.peak_rss_mib:.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}×" if a is not None and b else "–"


def _value(m: Measurement | None, key: str):
    if m is None or m.status != "ok":
        return None
    return m.wall_s if key == "wall" else m.result.get(key)


def markdown_table(rows: list[dict]) -> str:
    header = (
        "| size (reference / predicted rows) | config | core read s | core evaluate s "
        "| core process s | core peak MiB | agribound evaluate s | agribound peak MiB "
        "| qgis_process s | qgis_process peak MiB | agribound ÷ core | qgis_process ÷ core |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [header]
    for row in rows:
        core, agri, qgis = (row["runs"].get(t) for t in TOOLS)
        lines.append(
            f"| {row['dataset']} ({row['n_reference']:,} / {row['n_predicted']:,}) "
            f"| {row['config']} | {_fmt_time(core, 'read_s')} | {_fmt_time(core, 'evaluate_s')} "
            f"| {_fmt_time(core, 'wall')} | {_fmt_mem(core)} "
            f"| {_fmt_time(agri, 'evaluate_s')} | {_fmt_mem(agri)} "
            f"| {_fmt_time(qgis, 'wall')} | {_fmt_mem(qgis)} "
            f"| {_ratio(_value(agri, 'evaluate_s'), _value(core, 'evaluate_s'))} "
            f"| {_ratio(_value(qgis, 'wall'), _value(core, 'evaluate_s'))} |"
        )
    return "\n".join(lines)


def agreement_table(rows: list[dict]) -> str:
    """TP/FP/FN of each tool (which must be equal) and the boundary metrics beside them."""
    lines = [
        "| size | config | core TP/FP/FN | agribound TP/FP/FN | qgis_process TP/FP/FN | agree "
        "| mean boundary distance m (core / agribound / qgis_process) "
        "| boundary F1 (core / agribound / qgis_process) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        metrics = {}
        for tool in TOOLS:
            m = row["runs"].get(tool)
            metrics[tool] = m.result.get("metrics", {}) if m and m.status == "ok" else {}
        triples = {
            tool: tuple(found.get(k) for k in ("count_tp", "count_fp", "count_fn"))
            for tool, found in metrics.items() if found
        }
        cells = ["/".join(map(str, triples[t])) if t in triples else "–" for t in TOOLS]
        if len(triples) < 2:
            agree = "–"
        else:
            agree = "yes" if len(set(triples.values())) == 1 else "NO"

        def three(key, digits):
            values = [metrics[t].get(key) for t in TOOLS]
            if all(v is None for v in values):
                return "–"
            return " / ".join("–" if v is None else f"{v:.{digits}f}" for v in values)

        lines.append(
            f"| {row['dataset']} | {row['config']} | " + " | ".join(cells) + f" | {agree} "
            f"| {three('boundary_distance_mean_m', 3)} | {three('boundary_f1', 4)} |"
        )
    return "\n".join(lines)


def scaling_lines(rows: list[dict]) -> list[str]:
    """Evaluate-time ratio 50k ÷ 5k for each tool and configuration present."""
    out = []
    by_key = {(r["dataset"], r["config"]): r for r in rows}
    for config in CONFIGS:
        big, small = by_key.get(("50k", config)), by_key.get(("5k", config))
        if not (big and small):
            continue
        parts = []
        for tool, key in (("core", "evaluate_s"), ("agribound", "evaluate_s"), ("qgis", "wall")):
            a, b = _value(big["runs"].get(tool), key), _value(small["runs"].get(tool), key)
            parts.append(f"{'qgis_process' if tool == 'qgis' else tool} {_ratio(a, b)}")
        out.append(f"- scaling 50k ÷ 5k ({config}): " + ", ".join(parts))
    return out


def source_state() -> dict:
    """The plugin source the run measured: commit and files changed since. Read-only git:
    --no-optional-locks keeps ``status`` from refreshing the index."""
    def git(*args):
        done = subprocess.run(["git", "--no-optional-locks", "-C", str(ROOT), *args],
                              capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    changed = git("status", "--porcelain", "--", "core", "processing_provider", "plugin")
    return {"commit": git("rev-parse", "HEAD"),
            "changed_files": changed.splitlines() if changed else []}


def machine_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    except OSError:
        mem_kb = 0
    return {
        "cpu": cpu, "cpus": os.cpu_count(), "memory_gib": round(mem_kb / 2**20, 1),
        "platform": platform.platform(), "python": platform.python_version(),
    }


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def measure_tools(dataset: Dataset, config: str, out_dir: Path, args,
                  qgis: QgisProcess | None) -> dict[str, Measurement]:
    """Every tool on one dataset and configuration, args.repeat times each; the median run of
    each. The tools take turns (core, agribound, qgis_process, core, ...) rather than running
    their repeats in a row, so that this machine's drift in speed over minutes falls on all
    three alike and not on one tool's block of runs."""
    attempts = {tool: [] for tool in TOOLS if tool not in args.skip}
    for _ in range(args.repeat):
        for tool, runs in attempts.items():
            if runs and runs[-1].status != "ok":
                continue  # a failed or timed-out tool is not run again
            timeout_s = args.timeout_s
            if tool == "agribound" and dataset.is_county:
                timeout_s = args.county_agribound_timeout_s
            if tool == "qgis":
                m = qgis.run(dataset, CONFIGS[config]["qgis"], out_dir / "qgis_outputs",
                             timeout_s)
                shutil.rmtree(out_dir / "qgis_outputs", ignore_errors=True)  # 50 MB at 50k
            else:
                m = run_worker(tool, dataset, CONFIGS[config][tool], out_dir, timeout_s)
            runs.append(m)
    measured = {}
    for tool in TOOLS:
        if tool not in attempts:
            measured[tool] = Measurement(status="skipped")
            continue
        key = (lambda r: r.wall_s) if tool == "qgis" else (lambda r: r.result["evaluate_s"])
        measured[tool] = _median_of(attempts[tool], key)
    return measured


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Time our core, agribound 1.0.1 and qgis_process on the same generated files.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", nargs="*", type=parse_size, default=[1000, 5000],
                        help="reference field counts, e.g. 1k 5k 10k 50k (default: 1k 5k)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--skip", nargs="*", choices=TOOLS, default=[], help="tools not to run")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per measurement; the run with the median time is reported")
    parser.add_argument("--county", type=int, nargs="?", const=3000, default=None, metavar="N",
                        help="also run the county case: N (default 3000) county-sized "
                             "polygons in EPSG:4326")
    parser.add_argument("--shared", nargs="*", type=parse_size, default=[], metavar="SIZE",
                        help="also the fields-sharing-edges generator (generate_shared.py) at "
                             "these sizes, e.g. 50k")
    parser.add_argument("--real", nargs="*", default=[], choices=["world", "counties"],
                        help="also the real-layer cases of realdata.py (npm packages)")
    parser.add_argument("--county-agribound-timeout-s", type=float, default=1500.0,
                        help="agribound's time limit in the county case (default 1500 s)")
    parser.add_argument("--timeout-s", type=float, default=7200.0,
                        help="time limit of any other run (default 7200 s)")
    args = parser.parse_args(argv)

    command = ".venv/bin/python bench/run.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    if "agribound" not in args.skip and not AGRIBOUND_PYTHON.exists():
        parser.error(f"{AGRIBOUND_PYTHON} is missing: run bash bench/setup_agribound.sh "
                     "(or pass --skip agribound)")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    run_dir = RESULTS_DIR / f"run_{stamp}"

    datasets = [ensure_dataset(n, args.seed) for n in args.sizes]
    if args.county:
        datasets.append(ensure_dataset(args.county, args.seed, county=True))
    datasets += [ensure_shared_dataset(n, args.seed) for n in args.shared]
    datasets += [ensure_real_dataset(case) for case in args.real]

    qgis = None
    if "qgis" not in args.skip:
        qgis = QgisProcess(Path(tempfile.mkdtemp(prefix="ioueval-bench-qgis-")))

    source = source_state()
    rows = []
    for dataset in datasets:
        for config in args.configs:
            out_dir = run_dir / f"{dataset.label}_{config}"
            out_dir.mkdir(parents=True, exist_ok=True)
            runs = measure_tools(dataset, config, out_dir, args, qgis)
            for tool, m in runs.items():
                shown = m.wall_s if tool == "qgis" else m.result.get("evaluate_s")
                print(f"{dataset.label:>10} {config:<12} {tool:<10} {m.status:<11} "
                      f"{'' if shown is None else f'{shown:8.2f} s'}  "
                      f"{'' if m.peak_rss_mib is None else f'{m.peak_rss_mib:7.0f} MiB'}",
                      flush=True)
            rows.append({
                "dataset": dataset.label, "config": config,
                "path": str(dataset.path.relative_to(ROOT)),
                "crs": dataset.crs, "n_reference": dataset.n_reference,
                "n_predicted": dataset.n_predicted, "runs": runs,
            })

    core_runs = [r["runs"]["core"] for r in rows if r["runs"]["core"].status == "ok"]
    notes = []
    if core_runs and not any(m.result.get("computes_boundary_distances") for m in core_runs):
        notes.append("- The core does not yet compute boundary distances (Hausdorff, mean "
                     "boundary distance) or tolerance metrics; agribound computes boundary "
                     "distances at 1 m spacing in every configuration, so the comparison is "
                     "not yet like for like.")
    text = "\n".join(
        [f"Command: `{command}` (seed {args.seed}, repeat {args.repeat})", "",
         markdown_table(rows), "", *scaling_lines(rows), *notes, "", agreement_table(rows)]
    )
    print()
    print(text)

    if qgis is not None:
        shutil.rmtree(qgis.workdir, ignore_errors=True)
    versions = {
        tool: next((r["runs"][tool].result["versions"] for r in rows
                    if r["runs"][tool].result.get("versions")), None)
        for tool in ("core", "agribound")
    }
    versions["qgis"] = qgis.qgis_version if qgis is not None else None
    summary = {
        "command": command, "seed": args.seed, "repeat": args.repeat, "started": stamp,
        "machine": machine_info(), "versions": versions, "source": source,
        "rows": [{**r, "runs": {t: m.__dict__ for t, m in r["runs"].items()}} for r in rows],
        "markdown": text,
    }
    result_path = RESULTS_DIR / f"bench_{stamp}.json"
    result_path.write_text(json.dumps(summary, indent=2, default=str))
    print(f"\nresults: {result_path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
