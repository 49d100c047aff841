"""Report data (metrics, parameters, inputs, provenance), its JSON text, and atomic file writes
(the HTML reports: reports/html.py and each algorithm's report module)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..evaluation.evaluate import Evaluation
from ..util.versions import library_versions
from .html import json_safe


def build_report(evaluation: Evaluation, inputs: dict, provenance: dict) -> dict:
    """The report as a JSON-ready dict: metrics, parameters, inputs, provenance.

    Args:
        evaluation: the result of ``evaluate``.
        inputs: what was read, e.g. {"reference": {"source": ..., "feature_count": ...}, ...}.
        provenance: versions known only to the caller (plugin, QGIS); library versions are added.
    """
    return {
        "metrics": evaluation.metrics,
        "parameters": evaluation.parameters,
        "inputs": inputs,
        "provenance": {**provenance, **library_versions()},
        "warnings": list(evaluation.warnings),
    }


def to_json_text(report: dict) -> str:
    """JSON text with NaN and infinities written as null (they are not valid JSON)."""
    return json.dumps(json_safe(report), indent=2, ensure_ascii=False, allow_nan=False)


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """Write text to a temporary file beside ``path`` and rename it into place.

    Raises OSError if the folder cannot be written.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~_current_umask())  # mkstemp makes it private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
