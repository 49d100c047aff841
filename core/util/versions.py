"""Versions of Python and of the libraries that decide the scores, for reports' provenance."""

from __future__ import annotations

import importlib
import platform

import numpy as np
import pyproj
import shapely


def library_versions() -> dict[str, str]:
    """Versions of Python and of the libraries that decide the scores: {name: version}, str
    values; the optional libraries (scipy, matplotlib, jinja2) "not installed" when missing.
    (Asking imports an optional library that is installed: call it when writing a report.)"""
    return {
        "python": platform.python_version(),
        "shapely": shapely.__version__,
        "geos": shapely.geos_version_string,
        "pyproj": pyproj.__version__,
        "proj": pyproj.proj_version_str,
        "numpy": np.__version__,
        **_optional_versions(("scipy", "matplotlib", "jinja2")),
    }


def _optional_versions(names) -> dict[str, str]:
    """Versions of optional libraries, "not installed" for those missing."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.import_module(name).__version__
        except ImportError:
            versions[name] = "not installed"
    return versions
