"""How to run an algorithm again: its parameters as a ``processing.run`` call and as a
``qgis_process`` command line, from plain parameter values (no QGIS objects)."""

from __future__ import annotations

import json
import math
import shlex


def processing_run_code(algorithm_id: str, parameters: dict) -> str:
    """Python code that reruns the algorithm from the QGIS Python console or a script.

    Args:
        algorithm_id: e.g. "ioueval:evaluatepolygons".
        parameters: {NAME: plain value} (str, int, float, bool, None, or lists of them);
            None and "" values are left out (the algorithm's defaults apply).
    Returns e.g. ``processing.run("ioueval:x", {\\n    "PREDICTED": "/data/p.gpkg",\\n})``.
    """
    lines = [f"processing.run({json.dumps(algorithm_id)}, {{"]
    for name, value in _given(parameters):
        lines.append(f"    {json.dumps(name)}: {_python_literal(value)},")
    lines.append("})")
    return "\n".join(lines)


#: The command when the report does not say which one ran (reports of older versions).
QGIS_PROCESS = "qgis_process"


def qgis_process_command(algorithm_id: str, parameters: dict,
                         executable: str = QGIS_PROCESS) -> str:
    """A shell command line (POSIX quoting) that reruns the algorithm with ``qgis_process``.

    Args:
        algorithm_id: e.g. "ioueval:evaluatepolygons".
        parameters: {NAME: plain value}, as for ``processing_run_code``; paths are written
            as given (the provider gives them absolute, so the command runs from any folder).
        executable: the qgis_process program that works on the QGIS that ran the algorithm,
            e.g. "qgis_process.bin" (Debian's and Ubuntu's 3.22, whose ``qgis_process``
            wrapper passes a flag 3.22 rejects) or a full path; quoted for the shell.
    Lists become one ``--NAME=value`` argument per item (how qgis_process takes multiple
    layers); booleans are written true/false; None and "" values are left out.
    """
    words = [shlex.quote(executable or QGIS_PROCESS), "run", algorithm_id]
    for name, value in _given(parameters):
        for item in value if isinstance(value, (list, tuple)) else [value]:
            words.append(shlex.quote(f"--{name}={_text(item)}"))
    return " \\\n    ".join([" ".join(words[:3])] + words[3:])


def _given(parameters: dict):
    for name, value in parameters.items():
        if value is None or value == "" or (isinstance(value, (list, tuple)) and not value):
            continue
        yield name, value


def _python_literal(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_python_literal(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, int):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)
