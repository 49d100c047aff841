"""A Dask scheduler and worker processes started the way the README says (``dask scheduler``,
``dask worker``), each a process of its own that imports the plugin as the tests do
(``iou_evaluation`` on its path): for the tests that run an evaluation on a cluster."""

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def dask_scheduler(tmp_path: Path, n_workers: int = 2):
    """Yields the scheduler's address once ``n_workers`` single-threaded workers are
    connected; stops them all after."""
    import distributed

    (tmp_path / "path").mkdir(exist_ok=True)
    link = tmp_path / "path" / "iou_evaluation"
    if not link.exists():
        os.symlink(ROOT, link)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(link.parent)] + sys.path))
    scheduler_file = tmp_path / "scheduler.json"
    processes = []
    try:
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0",
             "--dashboard-address", ":0", "--scheduler-file", str(scheduler_file)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(600):
            if scheduler_file.exists() and scheduler_file.stat().st_size:
                break
            time.sleep(0.1)
        for _ in range(n_workers):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                 str(scheduler_file), "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(n_workers, timeout=120)
            address = client.scheduler.address
        yield address
    finally:
        for process in processes[::-1]:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
