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

    problems = dependency_problems(import_module=fake_import, platform="linux")
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


class _Shapely:
    """A stand-in for a shapely module: the real functions, a chosen version text, and a
    make_valid as shapely 2.0 has it (no method argument) when ``old``."""

    def __init__(self, version, old=False):
        import shapely

        self.__version__, self.Polygon, self.area = version, shapely.Polygon, shapely.area
        self.geos_version_string = shapely.geos_version_string
        self.make_valid = (lambda geometry: shapely.make_valid(geometry)) if old else (
            shapely.make_valid)


def test_shapely_is_judged_by_what_it_can_do_not_by_its_version_text():
    from iou_evaluation.plugin.dependencies import DEPENDENCIES, dependency_problems

    shapely_dependency = [d for d in DEPENDENCIES if d.module == "shapely"]
    # Debian sid's python3-shapely 2.2.0 reports "0+unknown": usable all the same
    assert dependency_problems(shapely_dependency,
                               import_module=lambda name: _Shapely("0+unknown")) == []
    # shapely 2.0's make_valid has no method argument: refused, whatever its version says
    for version in ("2.0.7", "0+unknown", "2.1.0"):
        (problem,) = dependency_problems(shapely_dependency, platform="linux",
                                         import_module=lambda name: _Shapely(version, old=True))
        assert f"shapely {version} is installed but its make_valid has no method argument" in (
            problem.message)


def test_unreadable_version_texts_are_not_read_as_too_old():
    from iou_evaluation.plugin.dependencies import DEPENDENCIES, dependency_problems

    for version in ("0+unknown", "", "unknown"):
        module = type("Module", (), {"__version__": version})
        others = [d for d in DEPENDENCIES if d.module != "shapely"]
        assert dependency_problems(others, import_module=lambda name: module) == []


def test_the_install_advice_is_the_platforms():
    from iou_evaluation.plugin.dependencies import DEPENDENCIES, dependency_problems

    def missing(name):
        raise ImportError(name)

    messages = {
        platform: dependency_problems(DEPENDENCIES[:2], import_module=missing,
                                      platform=platform)[1].message
        for platform in ("windows", "macos", "linux")
    }
    # A wheel on Windows and macOS (its GEOS is its own there), never a build from source
    assert "OSGeo4W Shell" in messages["windows"]
    assert 'python -m pip install --upgrade "shapely>=2.1"' in messages["windows"]
    assert "/Applications/QGIS.app/Contents/MacOS/bin/python3 -m pip install" in (
        messages["macos"])
    for platform in ("windows", "macos"):
        assert "--no-binary" not in messages[platform]
    # On Linux Debian's package, or shapely built against the system's GEOS
    assert "sudo apt install python3-shapely" in messages["linux"]
    assert '--no-binary shapely "shapely>=2.1"' in messages["linux"]
    # numpy 2 is fine (Debian 13 has 2.2, sid 2.4)
    numpy_message = dependency_problems(DEPENDENCIES[:1], import_module=missing,
                                        platform="windows")[0].message
    assert '"numpy>=1.21"' in numpy_message and "<2" not in numpy_message


def test_a_missing_required_package_still_loads_and_says_so(qgis_app, qgis_iface, monkeypatch,
                                                            capsys):
    from qgis.core import Qgis
    from iou_evaluation.plugin import dependencies

    missing = dependencies.Dependency("no_such_package_iou", "1.0", "everything",
                                      "no_such_package_iou")
    monkeypatch.setattr(dependencies, "DEPENDENCIES", dependencies.DEPENDENCIES + (missing,))
    monkeypatch.setattr(dependencies.dependency_problems, "__defaults__",
                        (dependencies.DEPENDENCIES, dependencies.importlib.import_module, None))
    logged = []
    log = QgsApplication.messageLog()
    log.messageReceived[str, str, Qgis.MessageLevel].connect(
        lambda text, tag, level: logged.append((tag, text)))
    import iou_evaluation

    plugin = iou_evaluation.classFactory(qgis_iface)  # no traceback
    plugin.initGui()
    plugin.unload()
    assert plugin.provider is None
    bar = qgis_iface.messageBar().get_messages(Qgis.MessageLevel.Critical)
    assert any("no_such_package_iou is not installed" in m and "pip install" in m for m in bar)
    assert any(tag == "IoU Evaluation" and "no_such_package_iou" in text for tag, text in logged)
    # qgis_process shows neither the message bar nor the log: standard error it does show
    assert "no_such_package_iou is not installed" in capsys.readouterr().err
