#!/usr/bin/env python3
"""Build the installable plugin zip (Plugins → Manage and Install Plugins → Install from ZIP).

    python3 scripts/build_zip.py [--output DIR]

writes DIR/iou_evaluation-VERSION.zip (default DIR: dist/) holding one folder, iou_evaluation/,
with the plugin's files as git tracks them (the working tree's content): metadata.txt,
__init__.py, README.md, CHANGELOG.md, LICENSE, core/, plugin/, processing_provider/ and
resources/. Tests, bench, scripts and development files are left out. VERSION is
metadata.txt's. The zip's metadata.txt has its ``changelog`` made from CHANGELOG.md: each
released version with the first line of each entry (what the plugin manager shows; the
repository's own metadata.txt keeps a pointer). Prints the zip's path.

Why not qgis-plugin-ci (2.10, measured): it expects the plugin in a subfolder of the
repository. With this repository's root as its plugin_path it wrote "..0.2.0.zip" with no
top-level folder (QGIS and the plugin repository need iou_evaluation/), looked for
CHANGELOG.md in the checkout's parent folder and so wrote empty version sections, and
packed scripts/ and pyproject.toml.
"""

from __future__ import annotations

import argparse
import configparser
import re
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


def changelog_entries(changelog: str) -> list[tuple[str, str, list[str]]]:
    """(version, date, headline of each entry) of every released version of a Keep a
    Changelog text, newest first ("## [Unreleased]" is left out)."""
    releases = []
    for match in re.finditer(r"^## \[(\d[^\]]*)\](?: - (\S+))?\n(.*?)(?=^## |\Z)", changelog,
                             re.M | re.S):
        entries = []
        for line in match.group(3).splitlines():
            if line.startswith("- "):
                entries.append(line[2:].strip())
            elif line.startswith("  ") and entries:
                entries[-1] += " " + line.strip()
        releases.append((match.group(1), match.group(2) or "", [_headline(e) for e in entries]))
    return releases


def _headline(entry: str, width: int = 110) -> str:
    """An entry's first sentence, cut at a word to ``width`` characters (with "…")."""
    sentence = re.split(r"(?<=\.)\s", entry, maxsplit=1)[0]
    if len(sentence) <= width:
        return sentence
    return sentence[:width].rsplit(" ", 1)[0] + " …"


def metadata_with_changelog(metadata: str, changelog: str) -> str:
    """metadata.txt with its ``changelog`` key (one line or continued) replaced by the
    released versions of CHANGELOG.md, as indented continuation lines."""
    lines = ["changelog="]
    for version, date, entries in changelog_entries(changelog):
        lines.append(f"    {version} ({date})" if date else f"    {version}")
        lines.extend(f"    - {entry}" for entry in entries)
    block = "\n".join(lines) + "\n"
    pattern = re.compile(r"^changelog=.*\n(?:[ \t]+.*\n)*", re.M)
    if pattern.search(metadata):
        return pattern.sub(lambda _: block, metadata, count=1)
    return metadata.rstrip("\n") + "\n" + block


def build_zip(output_dir: Path, root: Path = ROOT) -> Path:
    """Write the zip into ``output_dir`` (created if needed); returns its path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / f"{PLUGIN_FOLDER}-{plugin_version(root)}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in plugin_files(root):
            if name == "metadata.txt" and (root / "CHANGELOG.md").is_file():
                archive.writestr(f"{PLUGIN_FOLDER}/{name}", metadata_with_changelog(
                    (root / name).read_text(encoding="utf-8"),
                    (root / "CHANGELOG.md").read_text(encoding="utf-8"),
                ))
                continue
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
