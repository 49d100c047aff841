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


def build_report(
    evaluation: Evaluation,
    inputs: dict,
    provenance: dict,
    *,
    metrics: dict | None = None,
    parameters: dict | None = None,
    warnings=(),
    extras: dict | None = None,
    reproduce: dict | None = None,
) -> dict:
    """The report as a JSON-ready dict: metrics, parameters, inputs, provenance, warnings,
    then ``extras`` and ``reproduce``.

    Args:
        evaluation: the result of ``evaluate`` (not modified).
        inputs: what was read, e.g. {"reference": {"source": ..., "feature_count": ...}, ...}.
        provenance: versions known only to the caller (plugin, QGIS); library versions are added.
        metrics: the caller's own metrics (a study area's counts), after the evaluation's.
        parameters: the caller's own parameters (the field names it read), after the
            evaluation's.
        warnings: the caller's own warnings (curved geometries, the same layer twice), after
            the evaluation's.
        extras: further top-level sections (``reports.evaluate.report_extras``).
        reproduce: {"algorithm", "parameters"} that rerun it (``reports.reproduce``), or None.
    """
    report = {
        "metrics": {**evaluation.metrics, **(metrics or {})},
        "parameters": {**evaluation.parameters, **(parameters or {})},
        "inputs": inputs,
        "provenance": {**provenance, **library_versions()},
        "warnings": list(evaluation.warnings) + list(warnings),
        **(extras or {}),
    }
    if reproduce is not None:
        report["reproduce"] = reproduce
    return report


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
