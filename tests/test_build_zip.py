"""The installable zip: built by scripts/build_zip.py, installed into a throw-away QGIS
profile, and an algorithm run from it under qgis_process."""

import configparser
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import shapely
from conftest import ROOT, SAMPLE_PREDICTED, SAMPLE_REFERENCE

QGIS_PROCESS = "/usr/bin/qgis_process.bin"


@pytest.fixture(scope="module")
def plugin_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_zip.py"), "--output", str(out)],
        capture_output=True, text=True, check=True, timeout=120,
    )
    return Path(done.stdout.strip())


def test_the_zip_holds_the_plugin_folder_only(plugin_zip):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "metadata.txt", encoding="utf-8")
    version = parser.get("general", "version")
    assert plugin_zip.name == f"iou_evaluation-{version}.zip"
    names = zipfile.ZipFile(plugin_zip).namelist()
    assert all(name.startswith("iou_evaluation/") for name in names)
    top = {name.split("/")[1] for name in names}
    assert {"__init__.py", "metadata.txt", "core", "processing_provider", "plugin",
            "resources", "CHANGELOG.md", "LICENSE"} <= top
    assert not top & {"tests", "bench", "scripts", ".venv", ".build", "pyproject.toml",
                      ".gitignore"}
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert "iou_evaluation/resources/icons/spatialiou.svg" in names


def _metadata(text: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser["general"]


def test_the_zips_metadata_lists_every_release_of_the_changelog(plugin_zip):
    archive = zipfile.ZipFile(plugin_zip)
    changelog = _metadata(archive.read("iou_evaluation/metadata.txt").decode("utf-8"))["changelog"]
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d[^\]]*)\] - (\S+)$", text, re.M)
    assert released and released[0] == (_metadata(
        (ROOT / "metadata.txt").read_text(encoding="utf-8"))["version"], released[0][1])
    headings = [line for line in changelog.splitlines() if line and not line.startswith("-")]
    assert headings == [f"{version} ({date})" for version, date in released]
    # every entry of the newest release, by its first words
    newest = text.split(f"## [{released[0][0]}]", 1)[1].split("\n## ", 1)[0]
    entries = [line[2:] for line in newest.splitlines() if line.startswith("- ")]
    listed = changelog.split(f"{released[1][0]} (", 1)[0] if len(released) > 1 else changelog
    assert all(f"- {entry.split()[0]}" in listed for entry in entries)
    assert "Unreleased" not in changelog
    license_text = archive.read("iou_evaluation/LICENSE").decode("utf-8")
    assert "GNU GENERAL PUBLIC LICENSE" in license_text and "Version 2, June 1991" in license_text


def test_metadata_is_complete_and_true():
    text = (ROOT / "metadata.txt").read_text(encoding="utf-8")
    general = _metadata(text)
    for key in ("name", "qgisMinimumVersion", "qgisMaximumVersion", "description", "about",
                "version", "author", "category", "tags", "icon", "changelog"):
        assert general.get(key, "").strip(), key
    assert (ROOT / general["icon"]).is_file()
    # no made-up addresses: the keys that need the publisher's own (the repository's page,
    # issue tracker, source repository, contact address) are left out, and the README says so
    assert not re.search(r"\.example\b|example\.(com|org|net)", text)
    for key in ("email", "homepage", "tracker", "repository"):
        assert key not in general
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "email, homepage, tracker and repository" in readme
    # what the about text says the plugin needs is what plugin/dependencies.py checks
    from iou_evaluation.plugin.dependencies import DEPENDENCIES

    assert all(d.module in general["about"] for d in DEPENDENCIES)
    assert "GPL-2.0-or-later" in general["about"]


@pytest.mark.skipif(sys.platform != "linux", reason="qgis_process.bin is Debian's layout")
def test_installed_zip_runs_under_qgis_process(plugin_zip, tmp_path):
    config = tmp_path / "config"
    plugins = config / "profiles" / "default" / "python" / "plugins"
    plugins.mkdir(parents=True)
    zipfile.ZipFile(plugin_zip).extractall(plugins)
    site_packages = str(Path(shapely.__file__).resolve().parent.parent)
    # QGIS_PLUGINPATH unset: the only copy of the plugin QGIS can find is the unpacked zip.
    env = {k: v for k, v in os.environ.items() if k not in ("QGIS_PLUGINPATH", "PYTHONPATH")}
    env.update(
        QT_QPA_PLATFORM="offscreen",
        QGIS_CUSTOM_CONFIG_PATH=str(config),
        PROJ_DATA=os.environ.get("PROJ_DATA", "/usr/share/proj"),
        PYTHONPATH=site_packages,  # shapely built against QGIS's GEOS; not the checkout
    )
    subprocess.run(
        [QGIS_PROCESS, "plugins", "enable", "iou_evaluation"],
        env=env, capture_output=True, timeout=120,
    )
    done = subprocess.run(
        [QGIS_PROCESS, "run", "ioueval:spatialiou", "--json", "--",
         f"PREDICTED={SAMPLE_PREDICTED}", f"REFERENCE={SAMPLE_REFERENCE}",
         f"OUTPUT={tmp_path / 'scores.csv'}"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    assert 0.0 < results["IOU"] < 1.0
    assert results["DICE"] == pytest.approx(2 * results["IOU"] / (1 + results["IOU"]))
    assert (tmp_path / "scores.csv").is_file()
