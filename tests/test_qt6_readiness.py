"""QGIS 4 (Qt 6) readiness without a QGIS 4 to run: the checks the QGIS project publishes for
the move (flake8-qgis's QGS4xx rules, and those of QGIS's scripts/pyqt5_to_pyqt6: Qt through
qgis.PyQt only, exec() not exec_(), scoped enums), and every Qt name the plugin uses looked up
in PyQt6 itself (installed from PyPI into .build/pyqt6 by scripts/setup.sh)."""

from __future__ import annotations

import ast
import enum
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

#: The plugin's own code, as the zip ships it.
PLUGIN_CODE = [ROOT / "__init__.py"] + sorted(
    path for folder in ("core", "plugin", "processing_provider")
    for path in (ROOT / folder).rglob("*.py")
)
#: The Python of the PyQt6 virtual environment scripts/setup.sh makes.
PYQT6_PYTHON = ROOT / ".build" / "pyqt6" / "bin" / "python"
#: Inside the Debian chroots (scripts/debian_chroot.sh) the linters and PyQt6 are not
#: installed: these checks read the source, which is the same there, and run on the host.
IN_CHROOT = bool(os.environ.get("IOU_CHROOT_SUITE"))
host_only = pytest.mark.skipif(IN_CHROOT, reason="source checks run on the host (scripts/test.sh)")


@host_only
def test_flake8_qgis_finds_nothing_to_port_to_qt6():
    # QGS4xx: the Qt 6 rules (QVariant types, removed enums and classes, qApp, QRegExp,
    # QDesktopWidget, QFontMetrics.width, activated[str], compiled resources, QDateTime
    # forms, QVariant() as NULL); QGS103/QGS104: PyQt5 imported directly instead of through
    # qgis.PyQt; QGS107: exec_() instead of exec(). The checks pyqt5_to_pyqt6 makes, but for
    # its enum table (test_every_enum_member_is_written_with_its_enum).
    pytest.importorskip("flake8_qgis")
    folders = [str(ROOT / name) for name in ("__init__.py", "core", "plugin",
                                              "processing_provider", "tests", "bench", "scripts")]
    done = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=QGS4,QGS103,QGS104,QGS107",
         *folders], capture_output=True, text=True, cwd=ROOT,
    )
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_flake8_qgis_rules_fire_on_qt5_code(tmp_path):
    # The check above can fail: the same run on Qt 5-only spellings reports each of them.
    if IN_CHROOT:
        pytest.skip("source checks run on the host (scripts/test.sh)")
    pytest.importorskip("flake8_qgis")
    sample = tmp_path / "qt5.py"
    sample.write_text(
        "from PyQt5.QtCore import QVariant\n"
        "from qgis.PyQt.QtWidgets import QDialog\n"
        "kind = QVariant.Int\n"
        "QDialog().exec_()\n"
    )
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated",
                           "--select=QGS4,QGS103,QGS104,QGS107", str(sample)],
                          capture_output=True, text=True)
    codes = sorted(line.split()[1] for line in done.stdout.splitlines())
    assert codes == ["QGS103", "QGS107", "QGS402"], done.stdout + done.stderr


def _qgis_names(path: Path) -> dict:
    """Local name -> (module, name) of everything ``path`` imports from qgis.* modules."""
    names = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("qgis"):
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def _is_enum_member(value) -> bool:
    if isinstance(value, type):
        return False
    if isinstance(value, enum.Enum):
        return True
    # PyQt5's enums: int subclasses named after their enum
    return isinstance(value, int) and type(value) not in (int, bool)


def unscoped_enum_members(paths, root: Path = ROOT) -> list[str]:
    """Every ``Class.member`` in ``paths`` (Class imported from qgis.*) whose value is an enum
    member, i.e. not written ``Class.Enum.member``: Qt 6 and QGIS 4 have no unscoped members.
    Looked up in the running QGIS, as pyqt5_to_pyqt6 looks its enum table up in QGIS's."""
    found = []
    for path in paths:
        imported = _qgis_names(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in imported):
                continue
            module, name = imported[node.value.id]
            try:
                value = getattr(getattr(importlib.import_module(module), name), node.attr)
            except (AttributeError, ImportError):
                continue  # a name of another QGIS release (compat.py tries both)
            if _is_enum_member(value):
                found.append(f"{path.relative_to(root)}:{node.lineno}: "
                             f"{node.value.id}.{node.attr} ({type(value).__name__})")
    return found


def test_every_enum_member_is_written_with_its_enum(qgis_app):
    assert unscoped_enum_members(PLUGIN_CODE + sorted((ROOT / "tests").glob("*.py"))) == []


def test_the_enum_check_finds_unscoped_members(qgis_app, tmp_path):
    sample = tmp_path / "unscoped.py"
    sample.write_text("from qgis.core import Qgis\nlevel = Qgis.Critical\n"
                      "scoped = Qgis.MessageLevel.Critical\n")
    assert unscoped_enum_members([sample], root=tmp_path) == [
        "unscoped.py:2: Qgis.Critical (MessageLevel)"]


def qt_names(paths) -> list[str]:
    """Every Qt name the code uses: ``PyQt6.<module>:<dotted name>`` for each name imported
    from qgis.PyQt.<module> and each attribute chain read on it (QMetaType.Type.Int, say)."""
    names = set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {}
        for node in ast.walk(tree):
            if (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("qgis.PyQt.")):
                for alias in node.names:
                    module = "PyQt6." + node.module.split(".", 2)[2]
                    imported[alias.asname or alias.name] = (module, alias.name)
                    names.add(f"{module}:{alias.name}")
        parents = {child: parent for parent in ast.walk(tree)
                   for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in imported:
                chain, outer = [imported[node.id][1]], node
                while isinstance(parents.get(outer), ast.Attribute):
                    outer = parents[outer]
                    chain.append(outer.attr)
                names.add(f"{imported[node.id][0]}:{'.'.join(chain)}")
    return sorted(names)


RESOLVE = """
import importlib, json, sys
missing = []
for entry in json.loads(sys.stdin.read()):
    module, dotted = entry.split(":")
    value = importlib.import_module(module)
    try:
        for part in dotted.split("."):
            value = getattr(value, part)
    except AttributeError:
        missing.append(entry)
print(json.dumps(missing))
"""


@host_only
def test_every_qt_name_the_plugin_uses_exists_in_pyqt6():
    if not PYQT6_PYTHON.exists():
        pytest.fail(f"{PYQT6_PYTHON} is missing: run bash scripts/setup.sh")
    names = qt_names(PLUGIN_CODE)
    assert "PyQt6.QtCore:QMetaType.Type.QString" in names  # the field types of compat.py
    done = subprocess.run([str(PYQT6_PYTHON), "-c", RESOLVE], input=json.dumps(names),
                          capture_output=True, text=True,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@host_only
def test_a_qt5_only_name_is_reported_missing_in_pyqt6(tmp_path):
    if not PYQT6_PYTHON.exists():
        pytest.fail(f"{PYQT6_PYTHON} is missing: run bash scripts/setup.sh")
    sample = tmp_path / "qt5.py"
    sample.write_text("from qgis.PyQt.QtCore import QVariant, QRegExp\nkind = QVariant.Int\n")
    names = qt_names([sample])
    assert names == ["PyQt6.QtCore:QRegExp", "PyQt6.QtCore:QVariant", "PyQt6.QtCore:QVariant.Int"]
    done = subprocess.run([str(PYQT6_PYTHON), "-c", RESOLVE], input=json.dumps(names),
                          capture_output=True, text=True,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": ""})
    assert json.loads(done.stdout) == ["PyQt6.QtCore:QRegExp", "PyQt6.QtCore:QVariant.Int"]


def test_metadata_offers_the_plugin_to_qgis_4():
    import configparser

    metadata = configparser.ConfigParser(interpolation=None)
    metadata.read(ROOT / "metadata.txt", encoding="utf-8")
    assert metadata.get("general", "qgisMaximumVersion") == "4.99"
    assert metadata.get("general", "qgisMinimumVersion") == "3.22"
