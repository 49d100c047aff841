"""Utilities every stage uses: checks of caller-supplied numbers, progress and cancellation,
threads over both cores, memory checks, the allocator, the words of messages.
"""

from .checks import (  # noqa: F401
    check_positive,
    check_non_negative_int,
    check_threshold,
    is_missing,
)
from .progress import (  # noqa: F401
    EvaluationCanceled,
    Progress,
)
from .parallel import (  # noqa: F401
    WORKERS,
    ProgressCallback,
    run_chunks,
    run_beside,
    split,
    split_weighted,
)
from .memory import (  # noqa: F401
    MEMORY_LIMIT_ENV,
    InsufficientMemoryError,
    available_bytes,
    check_memory,
)
from .wording import (  # noqa: F401
    count_of,
    plural,
)
from .allocator import (  # noqa: F401
    MMAP_THRESHOLD,
    TRIM_THRESHOLD,
    TOP_PAD,
    DEFAULT_TOP_PAD,
    enter,
    leave,
    active,
    tuned,
)

__all__ = [
    "DEFAULT_TOP_PAD",
    "EvaluationCanceled",
    "InsufficientMemoryError",
    "MEMORY_LIMIT_ENV",
    "MMAP_THRESHOLD",
    "Progress",
    "ProgressCallback",
    "TOP_PAD",
    "TRIM_THRESHOLD",
    "WORKERS",
    "active",
    "available_bytes",
    "check_memory",
    "check_non_negative_int",
    "check_positive",
    "check_threshold",
    "count_of",
    "enter",
    "is_missing",
    "leave",
    "plural",
    "run_beside",
    "run_chunks",
    "split",
    "split_weighted",
    "tuned",
]
