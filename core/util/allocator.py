"""glibc's allocator set for the evaluation's numpy temporaries while an evaluation runs.

The boundary and tolerance stages allocate and free many arrays of 0.1–30 MB per chunk. With
glibc's defaults each one is fresh memory from the kernel (mmap, or heap grown and trimmed
back), whose pages fault in on first touch: at 50k fields, ~200k minor page faults and ~1 s
of kernel time in the boundary stage alone. Keeping freed memory for reuse takes that to
~37k faults and ~0.3 s (measured with ``mallopt`` on that stage, two threads, same peak
memory).

While at least one evaluation runs (``tuned``, nested or from several threads): blocks up to
32 MiB come from the heap, freed memory at the top of a heap is kept up to 64 MiB, and a heap
grows 64 MiB at a time. When the last one ends, free memory is handed back to the system
(``malloc_trim``) and the top pad returns to glibc's default; the mmap and trim thresholds
stay at 32 and 64 MiB, the values glibc's own dynamic thresholds move towards after large
blocks are freed (it has no call to read the values they had).

Elsewhere than glibc (macOS, Windows, musl) nothing is changed.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import platform
import threading

logger = logging.getLogger(__name__)

# mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

_MIB = 1 << 20
#: DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc: the most glibc's dynamic threshold reaches.
MMAP_THRESHOLD = 32 * _MIB
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
TOP_PAD = 64 * _MIB
#: glibc's default M_TOP_PAD (mallopt(3)).
DEFAULT_TOP_PAD = 128 * 1024

_lock = threading.Lock()
_active = 0


def _load_libc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        # glibc's soname on every Linux architecture; ctypes.util.find_library would run
        # ldconfig in a subprocess (~20 ms at every plugin load).
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
        return libc
    except (OSError, AttributeError):
        return None


_libc = _load_libc()


def _set(parameter: int, value: int) -> None:
    if _libc.mallopt(parameter, value) != 1:  # mallopt returns 1 on success
        logger.debug("mallopt(%d, %d) was refused", parameter, value)


def enter() -> None:
    """Start one evaluation's use of the tuned allocator (``tuned`` calls it)."""
    global _active
    with _lock:
        _active += 1
        if _active == 1 and _libc is not None:
            _set(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            _set(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
            _set(_M_TOP_PAD, TOP_PAD)


def leave() -> None:
    """End one evaluation's use; the last one to leave hands free memory back.

    Raises RuntimeError without a matching ``enter``.
    """
    global _active
    with _lock:
        if _active == 0:
            raise RuntimeError("allocator.leave() without enter()")
        _active -= 1
        if _active == 0 and _libc is not None:
            _set(_M_TOP_PAD, DEFAULT_TOP_PAD)
            _libc.malloc_trim(0)


def trim() -> None:
    """Hand free heap memory back to the system now (``malloc_trim``), unless an evaluation
    is running (its tuned allocator keeps freed memory for reuse). For a caller that has
    just let go of much memory in many small blocks (a layer read batch by batch), which
    glibc would otherwise keep inside the heap."""
    with _lock:
        if _active == 0 and _libc is not None:
            _libc.malloc_trim(0)


def release() -> None:
    """Hand free heap memory back to the system now (``malloc_trim``), even while an
    evaluation runs. Between two work units: what one unit freed would otherwise stay in the
    heap beside the run's long-lived arrays (measured on 200,000 fields: 200 MiB more at the
    end of the units), and the next unit's first touch of fresh pages costs little beside
    its work."""
    if _libc is not None:
        with _lock:
            _libc.malloc_trim(0)


def active() -> int:
    """How many evaluations are using the tuned allocator now."""
    return _active


def tuned(function):
    """Decorator: run ``function`` with the allocator tuned (``enter`` / ``leave``)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        enter()
        try:
            return function(*args, **kwargs)
        finally:
            leave()

    return wrapper
