"""The Python packages the plugin needs, checked when QGIS loads it, so that a missing or
unusable one gives a message naming it and how to install it on this platform (not a
traceback).

shapely is checked by what the plugin needs of it (``make_valid`` with ``method="structure"``:
shapely 2.1 on GEOS 3.10 or later), not by its version text: Debian's python3-shapely 2.2
reports its version as "0+unknown". The other packages are checked by version where the
version text is a number, else accepted (the import worked).

No QGIS and no package of the list is imported at module level.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass
from typing import Callable, Optional


def _shapely_repair_problem(shapely) -> str | None:
    """What is missing for the plugin's geometry repair, or None when it works: a bow-tie
    repaired with ``make_valid(method="structure")`` must become its two triangles (area 2)."""
    try:
        bow_tie = shapely.Polygon([(0, 0), (2, 2), (2, 0), (0, 2), (0, 0)])
        repaired = shapely.make_valid(bow_tie, method="structure", keep_collapsed=False)
    except TypeError:
        return "its make_valid has no method argument (shapely 2.1 added it)"
    except Exception:  # noqa: BLE001 (shapely raises ValueError on GEOS < 3.10)
        geos = getattr(shapely, "geos_version_string", "?")
        return f"its make_valid(method='structure') needs GEOS 3.10 or later (it has {geos})"
    if abs(float(shapely.area(repaired)) - 2.0) > 1e-9:
        return "its make_valid(method='structure') repairs a bow-tie wrongly"
    return None


def _platform() -> str:
    """'windows', 'macos' or 'linux' (any other system is advised like Linux)."""
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    return "linux"


#: How to install packages (``{pip}``: pip's arguments for a PyPI wheel, ``{apt}``: Debian
#: package names) into the Python QGIS runs, per platform. The wheel's own GEOS is safe on
#: Windows and macOS (a DLL or dylib bound by name to the module that loads it) but not on
#: Linux, where the GEOS that QGIS loaded takes over the wheel's symbols: measured on Debian
#: 12 with QGIS 3.22, a shapely 2.1.2 wheel failed with "WKB output dimension must be 2 or 3"
#: and crashed the process. On Linux shapely comes from the distribution or is built against
#: the system's GEOS.
_HOW_TO_INSTALL = {
    "windows": (
        "On Windows, open the OSGeo4W Shell (Start menu, in the QGIS folder; installed by the "
        "OSGeo4W installer and by the standalone installer), as administrator when QGIS is "
        "installed for all users, and run: python -m pip install --upgrade {pip}. "
        "Then restart QGIS."
    ),
    "macos": (
        "On macOS, in Terminal: /Applications/QGIS.app/Contents/MacOS/bin/python3 -m pip "
        "install --user --upgrade {pip} (QGIS 3.44 packages name it python3.12 in the same "
        "folder). Then restart QGIS."
    ),
    "linux": (
        "On Debian 13 or later: sudo apt install {apt}. Elsewhere (Debian 12, Ubuntu) from a "
        "clone of the plugin: bash scripts/setup.sh, then source scripts/env.sh before starting "
        "qgis or qgis_process; or python3 -m venv --system-site-packages ~/iou-venv && "
        "~/iou-venv/bin/python -m pip install {source_pip} and start QGIS with "
        "PYTHONPATH=$(echo ~/iou-venv/lib/python3*/site-packages) (see the README, Installing). "
        "Then restart QGIS."
    ),
}


@dataclass(frozen=True)
class Dependency:
    """A package: its import name, the oldest version that works, what it is needed for
    (``required``: for anything at all), pip's arguments that install it from a wheel
    (``install``), from source on Linux (``source_install``, default ``install``), its
    Debian package (``apt``), and a check of what the plugin needs of it (``capability``:
    module -> None when usable, else what is missing; then the version is not compared)."""

    module: str
    minimum: str
    needed_for: str
    install: str
    required: bool = True
    apt: str = ""
    source_install: str = ""
    capability: Optional[Callable] = None


DEPENDENCIES = (
    Dependency("numpy", "1.21", "every algorithm", '"numpy>=1.21"', apt="python3-numpy"),
    Dependency("shapely", "2.1", "every algorithm (geometry repair needs 2.1)",
               '"shapely>=2.1"', apt="python3-shapely",
               source_install='--no-binary shapely "shapely>=2.1"',
               capability=_shapely_repair_problem),
    Dependency("pyproj", "3.0", "every algorithm (reprojection)", '"pyproj>=3.0"',
               apt="python3-pyproj"),
    Dependency("scipy", "1.6", "the optimal matching rule", '"scipy>=1.6"', required=False,
               apt="python3-scipy"),
    Dependency("matplotlib", "3.4", "the figures of the HTML reports", '"matplotlib>=3.4"',
               required=False, apt="python3-matplotlib"),
    Dependency("jinja2", "2.11", "the HTML reports", '"jinja2>=2.11"', required=False,
               apt="python3-jinja2"),
)


@dataclass(frozen=True)
class Problem:
    """A dependency that is missing (``found`` None), older than its minimum, or lacking
    what the plugin needs of it (``reason``)."""

    dependency: Dependency
    found: str | None
    reason: str = ""
    platform: str = ""

    @property
    def message(self) -> str:
        d = self.dependency
        if self.found is None:
            state = "is not installed"
        elif self.reason:
            state = f"{self.found} is installed but {self.reason}"
        else:
            state = f"{self.found} is too old"
        advice = _HOW_TO_INSTALL[self.platform or _platform()].format(
            pip=d.install, apt=d.apt or f"python3-{d.module}",
            source_pip=d.source_install or d.install,
        )
        return (f"IoU Evaluation needs the Python package {d.module} >= {d.minimum} for "
                f"{d.needed_for}; the package {d.module} {state}. " + advice)


def dependency_problems(dependencies=DEPENDENCIES, import_module=importlib.import_module,
                        platform=None):
    """Problems of the dependencies, in their order: [] when all are there and usable.
    ``platform`` ('windows', 'macos', 'linux'; default: this one) chooses the install
    advice of the messages."""
    problems = []
    for dependency in dependencies:
        try:
            module = import_module(dependency.module)
        except Exception:  # noqa: BLE001 (a broken install fails in many ways)
            problems.append(Problem(dependency, None, platform=platform or ""))
            continue
        found = str(getattr(module, "__version__", "") or "unknown")
        if dependency.capability is not None:
            reason = dependency.capability(module)
            if reason:
                problems.append(Problem(dependency, found, reason, platform=platform or ""))
            continue
        version = _version(found)
        if version is not None and version < _version(dependency.minimum):
            problems.append(Problem(dependency, found, platform=platform or ""))
    return problems


def _version(text: str) -> tuple[int, ...] | None:
    """(major, minor, patch) of a version text such as "2.1.0rc1" or "1.10"; None when the
    text says nothing ("0+unknown", as a package built without its git metadata reports)."""
    public = text.split("+")[0]
    numbers = [int(n) for n in re.findall(r"\d+", public)[:3]]
    if not numbers or numbers == [0]:
        return None
    return tuple(numbers + [0] * (3 - len(numbers)))
