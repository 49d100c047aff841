#!/usr/bin/env python3
"""Build the installable plugin zip (Plugins → Manage and Install Plugins → Install from ZIP).

    python3 scripts/build_zip.py [--output DIR]

writes DIR/iou_evaluation-VERSION.zip (default DIR: dist/) holding one folder, iou_evaluation/,
with the plugin's files as git tracks them (the working tree's content): metadata.txt,
__init__.py, README.md, CHANGELOG.md, core/, plugin/, processing_provider/ and resources/.
Tests, bench, scripts and development files are left out. VERSION is metadata.txt's.
Prints the zip's path.
"""

from __future__ import annotations

import argparse
import configparser
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_FOLDER = "iou_evaluation"
#: What goes into the zip: files, and folders (with a trailing slash) taken whole.
INCLUDE = (
    "__init__.py",
    "metadata.txt",
    "README.md",
    "CHANGELOG.md",
    "LICENSE",
    "core/",
    "plugin/",
    "processing_provider/",
    "resources/",
)


def plugin_version(root: Path = ROOT) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(root / "metadata.txt", encoding="utf-8")
    return parser.get("general", "version")


def plugin_files(root: Path = ROOT) -> list[str]:
    """Paths (relative, POSIX) of the files to ship: tracked by git when the folder is a
    checkout (so stray and generated files stay out), else every file under INCLUDE."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *INCLUDE], cwd=root, check=True,
            capture_output=True,
        ).stdout.decode("utf-8").split("\0")
        files = [name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        files = [
            path.relative_to(root).as_posix()
            for entry in INCLUDE
            for path in ([root / entry] if not entry.endswith("/") else (root / entry).rglob("*"))
            if path.is_file()
        ]
    return sorted(
        name for name in files
        if (root / name).is_file() and "__pycache__" not in name and not name.endswith(".pyc")
    )


def build_zip(output_dir: Path, root: Path = ROOT) -> Path:
    """Write the zip into ``output_dir`` (created if needed); returns its path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / f"{PLUGIN_FOLDER}-{plugin_version(root)}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in plugin_files(root):
            archive.write(root / name, f"{PLUGIN_FOLDER}/{name}")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "dist", help="folder for the zip")
    args = parser.parse_args(argv)
    print(build_zip(args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
