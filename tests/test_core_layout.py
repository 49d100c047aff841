"""The core's layout: its packages import one way, it never imports QGIS, and an evaluation
never loads the report packages (matplotlib, jinja2).

The stated order (``core/__init__`` and LAYOUT): a package imports only packages before it in
``ORDER``. Every ``import`` statement of every module under core/ is read with ``ast``, those
inside functions too (a lazy import still runs against the order when it runs).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import plugin_script

CORE = Path(__file__).resolve().parent.parent / "core"

#: util < geometry < pairs < matching < boundary < evaluation < text < classmaps < reports
ORDER = ("util", "geometry", "pairs", "matching", "boundary", "evaluation", "text",
         "classmaps", "reports")
#: What an evaluation (core/__init__ and the evaluation package) never loads.
NOT_IN_AN_EVALUATION = ("reports", "matplotlib", "jinja2")


def _module_name(path: Path) -> tuple[str, ...]:
    """("core", "evaluation", "compare") for core/evaluation/compare.py; a package's
    __init__ is the package itself."""
    parts = ("core",) + path.relative_to(CORE).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> list[tuple[tuple[str, ...], int]]:
    """(dotted target as a tuple, line) of every import in the file, at any depth. A relative
    import is resolved against the module's package; ``from . import x`` names x."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(tuple(alias.name.split(".")), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = base + tuple(node.module.split(".")) if node.module else base
            else:
                module = tuple(node.module.split("."))
            if node.module is None or module == ("core",):
                found += [(module + (alias.name,), node.lineno) for alias in node.names]
            else:
                found.append((module, node.lineno))
    return found


def _core_files():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 40, "the core's modules were not found"
    return files


def _package(target: tuple[str, ...]) -> str | None:
    """The concept package a resolved target is in (None: outside core or core itself)."""
    if len(target) >= 2 and target[0] == "core":
        return target[1]
    return None


def test_every_core_module_is_in_a_package_of_the_stated_order():
    stray = [
        str(path.relative_to(CORE)) for path in _core_files()
        if path.parent != CORE and path.relative_to(CORE).parts[0] not in ORDER
    ]
    loose = [path.name for path in _core_files() if path.parent == CORE and
             path.name != "__init__.py"]
    assert stray == [] and loose == []


def test_core_packages_import_only_packages_before_them():
    wrong = []
    for path in _core_files():
        own = _module_name(path)
        if len(own) < 2:
            continue  # core/__init__: see the next tests
        rank = ORDER.index(own[1])
        for target, line in _imports(path):
            other = _package(target)
            if other in ORDER and ORDER.index(other) > rank:
                wrong.append(f"{path.relative_to(CORE)}:{line} imports {'.'.join(target)}")
    assert wrong == []


def test_core_never_imports_qgis():
    wrong = [
        f"{path.relative_to(CORE)}:{line} imports {'.'.join(target)}"
        for path in _core_files() for target, line in _imports(path)
        if target[0] in ("qgis", "PyQt5", "PyQt6", "sip")
    ]
    assert wrong == []


def test_the_evaluation_path_never_imports_reports_or_their_libraries():
    # core/__init__ and the evaluation package, and everything they import, transitively.
    by_name = {_module_name(path): path for path in _core_files()}
    todo = [("core",)] + [name for name in by_name if name[:2] == ("core", "evaluation")]
    seen, wrong = set(), []
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        for target, line in _imports(by_name[name]):
            if _package(target) in NOT_IN_AN_EVALUATION or target[0] in NOT_IN_AN_EVALUATION:
                wrong.append(f"{'.'.join(name)}:{line} imports {'.'.join(target)}")
            # The target module, and the package __init__s on the way to it.
            todo += [target[:k] for k in range(2, len(target) + 1)]
    assert len(seen) > 10
    assert wrong == []


def test_an_evaluation_loads_neither_reports_nor_matplotlib_nor_jinja2():
    script = plugin_script("""
        import sys
        from shapely.geometry import box
        from iou_evaluation.core import evaluate
        result = evaluate([box(0, 0, 2, 2)], [box(1, 0, 3, 2)], boundary_tolerance_m=0.5)
        assert result.metrics["count_tp"] == 0  # IoU 2/6 = 1/3, below 0.5
        loaded = [name for name in sys.modules if name.split(".")[0] in ("matplotlib", "jinja2")
                  or name.startswith("iou_evaluation.core.reports")]
        print(sorted(loaded))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
