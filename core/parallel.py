"""Both cores for vectorised work: shapely's and numpy's array functions release the GIL,
so threads (which work inside QGIS, where spawning processes is fragile) run them in parallel."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Threads used for chunked work (the machines we target have 2 cores).
WORKERS = max(1, min(2, os.cpu_count() or 1))


def run_chunks(run, chunks) -> list:
    """``[run(chunk) for chunk in chunks]``, on ``WORKERS`` threads when there are several."""
    chunks = list(chunks)
    if len(chunks) > 1 and WORKERS > 1:
        with ThreadPoolExecutor(WORKERS) as pool:
            return list(pool.map(run, chunks))
    return [run(chunk) for chunk in chunks]


def split(n: int, min_chunk: int) -> list[slice]:
    """At most WORKERS slices covering range(n), none shorter than ``min_chunk`` (but one)."""
    parts = max(1, min(WORKERS, n // max(min_chunk, 1)))
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]


def run_both(first, second) -> tuple:
    """Run two independent calls at once; returns (first(), second())."""
    if WORKERS == 1:
        return first(), second()
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(first), pool.submit(second)
        return a.result(), b.result()
