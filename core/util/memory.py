"""Memory checks: stop a stage with a clear message, before it allocates, when it would need
more memory than the machine has available (inside QGIS, running out of memory takes the
whole desktop session down).

``available_bytes`` reads MemAvailable from /proc/meminfo (Linux); elsewhere it returns None
and nothing is checked. The environment variable ``IOU_EVALUATION_MEMORY_LIMIT_MB`` caps it
(for tests, and for an analyst who wants to keep memory free for other work).
"""

from __future__ import annotations

import os

#: Environment variable capping the memory a stage may count on, in MiB.
MEMORY_LIMIT_ENV = "IOU_EVALUATION_MEMORY_LIMIT_MB"

_MEMINFO = "/proc/meminfo"


class InsufficientMemoryError(MemoryError):
    """A stage would need more memory than is available; raised before it allocates.

    Attributes:
        stage: name of the stage ("boundary distances", ...).
        needed_bytes, available_bytes: the estimate and what was available, bytes.
        what: the features concerned, as text (e.g. "reference row 3 / predicted row 7").
    """

    def __init__(self, stage: str, needed_bytes: int, available_bytes: int, what: str):
        self.stage = stage
        self.needed_bytes = int(needed_bytes)
        self.available_bytes = int(available_bytes)
        self.what = what
        super().__init__(
            f"{stage}: {what} would need about {_mib(needed_bytes)} MB of memory, but only "
            f"{_mib(available_bytes)} MB are available; stopped before allocating it. Free "
            f"memory, or leave these features out (or simplify them) and run again."
        )


def _mib(n: int) -> str:
    return f"{int(n) / 2**20:,.1f}"


def available_bytes() -> int | None:
    """Memory available to this process now, bytes: MemAvailable of /proc/meminfo, capped by
    ``IOU_EVALUATION_MEMORY_LIMIT_MB`` when set; None when neither is known.

    Raises:
        ValueError: the environment variable is set but not a positive number.
    """
    limit = os.environ.get(MEMORY_LIMIT_ENV)
    cap = None
    if limit:
        try:
            cap = int(float(limit) * 2**20)
        except ValueError:
            cap = -1
        if cap <= 0:
            raise ValueError(f"{MEMORY_LIMIT_ENV} must be a positive number of MiB, got {limit!r}")
    found = None
    try:
        with open(_MEMINFO, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if cap is None:
        return found
    return cap if found is None else min(cap, found)


def check_memory(stage: str, needed_bytes: float, what) -> None:
    """Raise InsufficientMemoryError when ``needed_bytes`` exceeds ``available_bytes()``.

    Args:
        stage: name of the stage, for the message.
        needed_bytes: estimate of the stage's peak memory beyond what is allocated now.
        what: text naming the features concerned, or a callable returning it (called only
            when the check fails).
    """
    available = available_bytes()
    if available is None or needed_bytes <= available:
        return
    raise InsufficientMemoryError(stage, int(needed_bytes), available,
                                  what() if callable(what) else str(what))
