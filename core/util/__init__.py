"""Utilities every stage uses: checks of caller-supplied numbers, the zero-division rule of
every metric (rates), progress and cancellation, threads over both cores, memory checks, the
allocator, the words of messages, library versions.
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
from .rates import (  # noqa: F401
    check_zero_division,
    safe_divide,
)
from .versions import (  # noqa: F401
    library_versions,
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
    "check_zero_division",
    "count_of",
    "enter",
    "is_missing",
    "leave",
    "library_versions",
    "plural",
    "run_beside",
    "run_chunks",
    "safe_divide",
    "split",
    "split_weighted",
    "tuned",
]
