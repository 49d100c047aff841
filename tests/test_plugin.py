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
        "import core.evaluation.evaluate, core.reports.data, core.boundary.distances, core.matching.average_precision\n"
        "import core.reports.html, core.reports.evaluate, core.reports.figures, core.matching.threshold_sweep\n"
        "assert not any(name.startswith('qgis') for name in sys.modules), 'qgis imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_missing_and_old_packages_are_named_with_an_install_command():
    from iou_evaluation.plugin.dependencies import dependency_problems

    versions = {"numpy": "1.26.4", "pyproj": "3.4.1", "scipy": "1.2.0", "matplotlib": "3.6.3",
                "jinja2": "3.1.2"}

    def fake_import(name):
        if name not in versions:
            raise ImportError(f"No module named {name!r}")
        return type("Module", (), {"__version__": versions[name]})

    problems = dependency_problems(import_module=fake_import)
    assert [p.dependency.module for p in problems] == ["shapely", "scipy"]
    shapely_problem, scipy_problem = problems
    assert shapely_problem.dependency.required and not scipy_problem.dependency.required
    assert "shapely is not installed" in shapely_problem.message
    assert "pip install" in shapely_problem.message and "shapely>=2.1" in shapely_problem.message
    assert "scipy 1.2.0 is too old" in scipy_problem.message
    assert "optimal matching" in scipy_problem.message
    # Debian 12 refuses pip install --user: the venv the README describes, or setup.sh
    assert "--user" not in shapely_problem.message
    assert "--system-site-packages" in shapely_problem.message
    assert "scripts/setup.sh" in shapely_problem.message
    assert "needs the Python package shapely >= 2.1 for every algorithm" in shapely_problem.message


def test_a_missing_required_package_still_loads_and_says_so(qgis_app, qgis_iface, monkeypatch,
                                                            capsys):
    from qgis.core import Qgis
    from iou_evaluation.plugin import dependencies

    missing = dependencies.Dependency("no_such_package_iou", "1.0", "everything",
                                      "no_such_package_iou")
    monkeypatch.setattr(dependencies, "DEPENDENCIES", dependencies.DEPENDENCIES + (missing,))
    monkeypatch.setattr(dependencies.dependency_problems, "__defaults__",
                        (dependencies.DEPENDENCIES, dependencies.importlib.import_module))
    logged = []
    log = QgsApplication.messageLog()
    log.messageReceived[str, str, Qgis.MessageLevel].connect(
        lambda text, tag, level: logged.append((tag, text)))
    import iou_evaluation

    plugin = iou_evaluation.classFactory(qgis_iface)  # no traceback
    plugin.initGui()
    plugin.unload()
    assert plugin.provider is None
    bar = qgis_iface.messageBar().get_messages(Qgis.Critical)
    assert any("no_such_package_iou is not installed" in m and "pip install" in m for m in bar)
    assert any(tag == "IoU Evaluation" and "no_such_package_iou" in text for tag, text in logged)
    # qgis_process shows neither the message bar nor the log: standard error it does show
    assert "no_such_package_iou is not installed" in capsys.readouterr().err
