"""The Python packages the plugin needs, checked when QGIS loads it, so that a missing or
too old one gives a message naming it and how to install it (not a traceback).

No QGIS and no package of the list is imported at module level.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

#: pip needs the GEOS that QGIS uses: shapely built from source against it.
_SHAPELY_PIP = '--no-binary shapely "shapely>=2.1,<2.2"'

#: How to install packages (``{pip}``: pip's arguments) into the Python QGIS runs. Debian 12
#: and Ubuntu refuse ``pip install --user`` (externally-managed-environment): a venv that sees
#: the system's packages, put on QGIS's PYTHONPATH, as the README and scripts/setup.sh do.
_HOW_TO_INSTALL = (
    "From a clone of the plugin: bash scripts/setup.sh, then source scripts/env.sh before "
    "starting qgis or qgis_process (see the README, Python dependencies). Otherwise on "
    "Debian/Ubuntu: python3 -m venv --system-site-packages ~/iou-venv && "
    "~/iou-venv/bin/python -m pip install {pip}, then start QGIS with "
    "PYTHONPATH=$(echo ~/iou-venv/lib/python3*/site-packages). On Windows, in the OSGeo4W "
    "Shell: python3 -m pip install {pip}. Then restart QGIS."
)


@dataclass(frozen=True)
class Dependency:
    """A package: its import name, the oldest version that works, what it is needed for
    (``required``: for anything at all), and pip's arguments that install it."""

    module: str
    minimum: str
    needed_for: str
    install: str
    required: bool = True


DEPENDENCIES = (
    Dependency("numpy", "1.21", "every algorithm", '"numpy>=1.21,<2"'),
    Dependency("shapely", "2.1", "every algorithm (geometry repair needs 2.1)", _SHAPELY_PIP),
    Dependency("pyproj", "3.0", "every algorithm (reprojection)", '"pyproj>=3.0"'),
    Dependency("scipy", "1.6", "the optimal matching rule", '"scipy>=1.6"', required=False),
    Dependency("matplotlib", "3.4", "the figures of the HTML reports", '"matplotlib>=3.4"',
               required=False),
    Dependency("jinja2", "2.11", "the HTML reports", '"jinja2>=2.11"', required=False),
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
        return (f"IoU Evaluation needs the Python package {d.module} >= {d.minimum} for "
                f"{d.needed_for}; the package {d.module} {state}. "
                + _HOW_TO_INSTALL.format(pip=d.install))


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
