"""Both cores for vectorised work: shapely's and numpy's array functions release the GIL,
so threads (which work inside QGIS, where spawning processes is fragile) run them in parallel."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

#: Threads used for chunked work (the machines we target have 2 cores).
WORKERS = max(1, min(2, os.cpu_count() or 1))

#: A progress callback: called with the fraction of the work done, in [0, 1], from the
#: calling thread; it may raise (progress.EvaluationCanceled) to stop the work.
ProgressCallback = Callable[[float], None]


def run_chunks(run, chunks, progress: ProgressCallback | None = None) -> list:
    """``[run(chunk) for chunk in chunks]``, on ``WORKERS`` threads when there are several.

    ``progress`` is called after each finished chunk with the fraction of chunks done; if it
    raises, chunks not yet started are dropped, running ones are waited for, and the exception
    propagates (so cancellation takes at most about one chunk's time).
    """
    chunks = list(chunks)
    n = len(chunks)
    if n <= 1 or WORKERS == 1:
        results = []
        for k, chunk in enumerate(chunks):
            results.append(run(chunk))
            if progress is not None:
                progress((k + 1) / n)
        return results
    results = [None] * n
    with ThreadPoolExecutor(WORKERS) as pool:
        # At most WORKERS chunks in flight: the next starts when one finishes, so a cancel
        # leaves no queue behind and memory holds at most WORKERS chunks' work.
        pending = {}
        position = 0
        done = 0
        try:
            while position < n or pending:
                while position < n and len(pending) < WORKERS:
                    pending[pool.submit(run, chunks[position])] = position
                    position += 1
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    results[pending.pop(future)] = future.result()
                    done += 1
                if progress is not None:
                    progress(done / n)
        finally:
            for future in pending:
                future.cancel()
    return results


def split(n: int, min_chunk: int, max_chunk: int | None = None) -> list[slice]:
    """Slices covering range(n): at least WORKERS of them when each can hold ``min_chunk``
    items, none longer than ``max_chunk`` (when given), all of about the same length."""
    parts = max(1, min(WORKERS, n // max(min_chunk, 1)))
    if max_chunk is not None:
        parts = max(parts, -(-n // max(max_chunk, 1)))
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]

