"""Both cores for vectorised work: shapely's and numpy's array functions release the GIL,
so threads (which work inside QGIS, where spawning processes is fragile) run them in parallel."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

#: Threads used for chunked work (the machines we target have 2 cores).
WORKERS = max(1, min(2, os.cpu_count() or 1))

#: A progress callback: called with the fraction of the work done, in [0, 1], from the
#: calling thread; it may raise (progress.EvaluationCanceled) to stop the work.
ProgressCallback = Callable[[float], None]

# Chunks of every caller (two stages run side by side by run_beside, two evaluations in one
# QGIS) share WORKERS slots, so the cores are never asked for more than they have.
_slots_lock = threading.Lock()
_slots: dict[int, threading.Semaphore] = {}
_in_chunk = threading.local()


def _run_in_slot(run, chunk):
    """run(chunk) once one of the WORKERS slots is free (at once inside a chunk)."""
    if getattr(_in_chunk, "active", False):
        return run(chunk)
    with _slots_lock:
        slots = _slots.setdefault(WORKERS, threading.Semaphore(WORKERS))
    with slots:
        _in_chunk.active = True
        try:
            return run(chunk)
        finally:
            _in_chunk.active = False


def run_chunks(run, chunks, progress: ProgressCallback | None = None) -> list:
    """``[run(chunk) for chunk in chunks]``, on ``WORKERS`` threads when there are several.

    ``progress`` is called after each finished chunk with the fraction of chunks done; if it
    raises, chunks not yet started are dropped, running ones are waited for, and the exception
    propagates (so cancellation takes at most about one chunk's time). Called from inside a
    chunk, the chunks run one after the other on the calling thread.
    """
    chunks = list(chunks)
    n = len(chunks)
    if n <= 1 or WORKERS == 1 or getattr(_in_chunk, "active", False):
        results = []
        for k, chunk in enumerate(chunks):
            results.append(_run_in_slot(run, chunk))
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
                    pending[pool.submit(_run_in_slot, run, chunks[position])] = position
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


class _Stopped(Exception):
    """Stops one of run_beside's functions after the other failed."""


def run_beside(main, beside, progress: ProgressCallback | None = None, weights=(1.0, 1.0)):
    """``(main(advance), beside(advance))`` at the same time: ``beside`` on a thread of its
    own, ``main`` on the calling one. Each gets a progress callback for its own fraction done;
    their chunks (``run_chunks``) share the WORKERS slots, so when one stage has little left
    to run in parallel the other's chunks keep the cores busy.

    ``progress`` gets the weighted mean of both fractions (``weights``: the relative work of
    main and beside). If it raises, or either function raises, the other function stops at
    its next progress call and the first exception propagates (main's when both failed).
    """
    lock = threading.Lock()
    fractions = [0.0, 0.0]
    failed = threading.Event()
    total = float(weights[0] + weights[1])

    def advance_for(k):
        def advance(fraction: float) -> None:
            with lock:  # one report at a time; none after a failure
                if failed.is_set():
                    raise _Stopped
                fractions[k] = fraction
                if progress is not None:
                    try:
                        progress((weights[0] * fractions[0] + weights[1] * fractions[1]) / total)
                    except BaseException:
                        failed.set()
                        raise

        return advance

    outcome = {}

    def run_beside_thread():
        try:
            outcome["value"] = beside(advance_for(1))
        except BaseException as error:  # handed to the calling thread below
            outcome["error"] = error
            failed.set()

    thread = threading.Thread(target=run_beside_thread, name="run_beside", daemon=True)
    thread.start()
    try:
        main_value = main(advance_for(0))
    except _Stopped:
        thread.join()
        raise outcome["error"] from None
    except BaseException:
        failed.set()
        thread.join()
        raise
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return main_value, outcome["value"]


def split(n: int, min_chunk: int, max_chunk: int | None = None) -> list[slice]:
    """Slices covering range(n): at least WORKERS of them when each can hold ``min_chunk``
    items, none longer than ``max_chunk`` (when given), all of about the same length."""
    parts = max(1, min(WORKERS, n // max(min_chunk, 1)))
    if max_chunk is not None:
        parts = max(parts, -(-n // max(max_chunk, 1)))
    bounds = np.linspace(0, n, parts + 1).astype(int)
    return [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]


def split_weighted(weights: np.ndarray, max_weight: float, max_items: int,
                   share_weight: float) -> list[slice]:
    """Consecutive slices covering the items of ``weights`` (float array, shape (n,), ≥ 0: the
    work of each item, say its vertices): each of at most about ``max_items`` items and
    ``max_weight`` weight (an item heavier than that is a slice of its own), and at least
    WORKERS slices when the total weight is ``share_weight`` or more, so that a few heavy items
    (a national layer's large polygons) still keep every core busy."""
    n = len(weights)
    if n == 0:
        return []
    cumulative = np.cumsum(np.asarray(weights, dtype=float) / max_weight + 1.0 / max_items)
    total = float(cumulative[-1])
    parts = max(int(np.ceil(total)), 1)
    if float(np.sum(weights)) >= share_weight:
        parts = max(parts, min(WORKERS, n))
    cuts = np.searchsorted(cumulative, total * np.arange(1, parts) / parts)
    bounds = np.unique(np.r_[0, cuts, n])
    return [slice(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
