"""The plugin as QGIS loads it: classFactory, initGui, unload."""

from qgis.core import QgsApplication


def test_class_factory_registers_and_removes_the_provider(qgis_processing, qgis_iface):
    import iou_evaluation

    registry = QgsApplication.processingRegistry()
    already = registry.providerById("ioueval") is not None  # the session fixture's provider
    plugin = iou_evaluation.classFactory(qgis_iface)
    plugin.initGui()
    assert registry.algorithmById("ioueval:evaluatepolygons") is not None
    assert registry.algorithmById("ioueval:pixelsperfield") is not None
    plugin.unload()
    assert (registry.providerById("ioueval") is not None) == already


def test_core_imports_without_qgis():
    import subprocess
    import sys

    from conftest import ROOT

    code = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('core', r'{ROOT}/core/__init__.py',"
        f" submodule_search_locations=[r'{ROOT}/core'])\n"
        "module = importlib.util.module_from_spec(spec); sys.modules['core'] = module\n"
        "spec.loader.exec_module(module)\n"
        "import core.evaluate, core.report, core.boundary, core.average_precision\n"
        "assert not any(name.startswith('qgis') for name in sys.modules), 'qgis imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
