"""The Python packages the plugin needs, checked when QGIS loads it, so that a missing or
too old one gives a message naming it and how to install it (not a traceback).

No QGIS and no package of the list is imported at module level.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

#: pip needs the GEOS that QGIS uses: shapely built from source against it.
_SHAPELY_PIP = 'python3 -m pip install --user --no-binary shapely "shapely>=2.1,<2.2"'


@dataclass(frozen=True)
class Dependency:
    """A package: its import name, the oldest version that works, what it is needed for
    (``required``: for anything at all), and how to install it into QGIS's Python."""

    module: str
    minimum: str
    needed_for: str
    install: str
    required: bool = True


DEPENDENCIES = (
    Dependency("numpy", "1.21", "everything", 'python3 -m pip install --user "numpy>=1.21,<2"'),
    Dependency("shapely", "2.1", "everything (geometry repair needs shapely 2.1)", _SHAPELY_PIP),
    Dependency("pyproj", "3.0", "everything (reprojection)",
               'python3 -m pip install --user "pyproj>=3.0"'),
    Dependency("scipy", "1.6", "the optimal matching rule",
               'python3 -m pip install --user "scipy>=1.6"', required=False),
    Dependency("matplotlib", "3.4", "the figures of the HTML reports",
               'python3 -m pip install --user "matplotlib>=3.4"', required=False),
    Dependency("jinja2", "2.11", "the HTML reports",
               'python3 -m pip install --user "jinja2>=2.11"', required=False),
)


@dataclass(frozen=True)
class Problem:
    """A dependency that is missing (``found`` None) or older than its minimum."""

    dependency: Dependency
    found: str | None

    @property
    def message(self) -> str:
        d = self.dependency
        state = "is not installed" if self.found is None else f"{self.found} is too old"
        return (f"IoU Evaluation: the Python package {d.module} {state} (needed for "
                f"{d.needed_for}: {d.module} >= {d.minimum}). Install it into the Python "
                f"that QGIS runs (on Windows in the OSGeo4W Shell), then restart QGIS: "
                f"{d.install}")


def dependency_problems(dependencies=DEPENDENCIES, import_module=importlib.import_module):
    """Problems of the dependencies, in their order: [] when all are there and recent."""
    problems = []
    for dependency in dependencies:
        try:
            module = import_module(dependency.module)
        except Exception:  # noqa: BLE001 (a broken install fails in many ways)
            problems.append(Problem(dependency, None))
            continue
        found = str(getattr(module, "__version__", "0"))
        if _version(found) < _version(dependency.minimum):
            problems.append(Problem(dependency, found))
    return problems


def _version(text: str) -> tuple[int, ...]:
    """(major, minor, patch) of a version text such as "2.1.0rc1" or "1.10"."""
    numbers = [int(n) for n in re.findall(r"\d+", text.split("+")[0])[:3]]
    return tuple(numbers + [0] * (3 - len(numbers)))
