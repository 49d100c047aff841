"""Shared fixtures. The repository root is the plugin package; it is imported as
``iou_evaluation`` whatever the checkout folder is called, as QGIS would import it."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_GPKG = ROOT / "resources" / "csb_fields" / "csb_fields.gpkg"
SAMPLE_REFERENCE = f"{SAMPLE_GPKG}|layername=csb_2016_2023"
SAMPLE_PREDICTED = f"{SAMPLE_GPKG}|layername=csb_2017_2024"


def _import_plugin_package():
    if "iou_evaluation" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        "iou_evaluation", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["iou_evaluation"] = module
    spec.loader.exec_module(module)


_import_plugin_package()


def plugin_script(body: str) -> str:
    """Python source for a fresh process (``python -c``): the plugin imported as
    ``iou_evaluation`` the way this file does it, then ``body`` (dedented). For what must be
    measured or may crash in a process of its own (peak memory, a stack overflow)."""
    return textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location(
            "iou_evaluation", {str(ROOT / "__init__.py")!r},
            submodule_search_locations=[{str(ROOT)!r}])
        module = importlib.util.module_from_spec(spec)
        sys.modules["iou_evaluation"] = module
        spec.loader.exec_module(module)
    """) + textwrap.dedent(body)


@pytest.fixture(scope="session")
def ioueval_provider(qgis_processing):
    """The plugin's provider, registered once the way the plugin class does it."""
    from iou_evaluation.plugin.plugin import IoUEvaluationPlugin

    plugin = IoUEvaluationPlugin(None)
    plugin.initProcessing()
    plugin.initProcessing()  # a second call must not register a second provider
    yield plugin.provider
    plugin.unload()
