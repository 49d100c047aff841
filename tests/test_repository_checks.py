"""The scans the QGIS plugin repository (plugins.qgis.org) runs on every uploaded zip, run the
way it runs them, on the zip scripts/build_zip.py builds: Bandit and detect-secrets (a finding
blocks the upload), Flake8, executable files, hidden or binary files, obfuscated-looking lines
(reported on the plugin's page). Commands, options and enabled rules are those of the QGIS
Plugins Website's scanner (qgis-app/plugins/security_scanner.py and the rule data in
qgis-app/plugins/management/commands/data/, as of July 2026); see
https://plugins.qgis.org/docs/security-scanning."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT
from test_build_zip import plugin_zip  # noqa: F401 (fixture)

IN_CHROOT = bool(os.environ.get("IOU_CHROOT_SUITE"))
pytestmark = pytest.mark.skipif(IN_CHROOT, reason="the scans run on the host (scripts/test.sh)")

#: Bandit tests the repository enables (all but B109, B404, B410 and B411).
BANDIT_TESTS = (
    "B101,B102,B103,B104,B105,B106,B107,B108,B110,B111,B112,B113,B201,B202,B301,B302,B303,"
    "B304,B305,B306,B307,B308,B310,B311,B312,B313,B314,B315,B316,B317,B318,B319,B320,B321,"
    "B323,B324,B401,B402,B403,B405,B406,B407,B408,B409,B412,B413,B501,B502,B503,B504,B505,"
    "B506,B507,B508,B509,B601,B602,B603,B604,B605,B606,B607,B608,B609,B610,B611,B612,B613,"
    "B614,B615,B701,B702,B703,B704"
)
#: detect-secrets plugins the repository disables (it enables the 26 others).
SECRETS_DISABLED = ("IPPublicDetector",)
#: Flake8 codes the repository selects (26 of the 96 it knows), at 120 columns.
FLAKE8_CODES = (
    "E101,E711,E712,E713,E714,E721,E722,E731,E741,E742,E743,E901,E902,E999,W605,F402,F403,"
    "F404,F405,F811,F821,F822,F823,F831,F901,C901"
)
#: What the repository reports as an executable or binary file.
SUSPICIOUS_EXTENSIONS = (".exe", ".dll", ".so", ".dylib", ".bat", ".sh", ".ps1", ".cmd")
HIDDEN_ALLOWED = (".gitignore", ".gitattributes", ".bandit", ".secrets.baseline", ".flake8")


@pytest.fixture(scope="module")
def unpacked(plugin_zip, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("unpacked")
    zipfile.ZipFile(plugin_zip).extractall(folder)
    return folder


def test_bandit_finds_nothing(unpacked):
    done = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", str(unpacked), "-f", "json", "--quiet",
         "-t", BANDIT_TESTS],
        capture_output=True, text=True, timeout=300,
    )
    results = json.loads(done.stdout)["results"]
    assert [(r["test_id"], r["filename"], r["line_number"]) for r in results] == []


def test_detect_secrets_finds_nothing(unpacked):
    disable = [arg for plugin in SECRETS_DISABLED for arg in ("--disable-plugin", plugin)]
    done = subprocess.run(
        [sys.executable, "-m", "detect_secrets", "scan", "--all-files",
         "--exclude-files", r"metadata\.txt", "--exclude-files", r"\.secrets\.baseline",
         *disable, "."],
        cwd=unpacked, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"] == {}


def test_flake8_as_the_repository_runs_it_finds_nothing(unpacked):
    python_files = sorted(str(path) for path in unpacked.rglob("*.py"))
    assert len(python_files) > 50
    done = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--max-line-length=120",
         "--select", FLAKE8_CODES, *python_files],
        capture_output=True, text=True, timeout=300,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_no_executable_hidden_binary_or_obfuscated_file(plugin_zip):  # noqa: F811
    archive = zipfile.ZipFile(plugin_zip)
    executable, hidden, suspicious, long_lines = [], [], [], []
    for info in archive.infolist():
        name = info.filename.rsplit("/", 1)[-1]
        if (info.external_attr >> 16) & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
            executable.append(info.filename)
        if name.startswith(".") and name not in HIDDEN_ALLOWED:
            hidden.append(info.filename)
        if info.filename.lower().endswith(SUSPICIOUS_EXTENSIONS):
            suspicious.append(info.filename)
        if info.filename.endswith(".py"):
            lines = archive.read(info).decode("utf-8").splitlines()
            long_lines += [f"{info.filename}:{k}" for k, line in enumerate(lines, 1)
                           if len(line) > 500]
    assert (executable, hidden, suspicious, long_lines) == ([], [], [], [])
    assert os.path.getsize(plugin_zip) < 25 * 1024 * 1024  # the repository's size limit


def test_the_scans_catch_what_they_are_for(tmp_path):
    # The same commands on a plugin with a hard-coded password, eval and a private key
    plugin = tmp_path / "bad"
    plugin.mkdir()
    (plugin / "bad.py").write_text(
        'password = "hunter2hunter2"\n'
        "def run(text):\n    return eval(text)\n"
    )
    key_header = "-----BEGIN " + "RSA PRIVATE KEY-----"  # not a key in this file
    (plugin / "key.txt").write_text(key_header + "\nMIIEpAIBAAKCAQEA\n")
    bandit = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", str(plugin), "-f", "json", "--quiet",
         "-t", BANDIT_TESTS], capture_output=True, text=True, timeout=300,
    )
    assert {r["test_id"] for r in json.loads(bandit.stdout)["results"]} == {"B105", "B307"}
    secrets = subprocess.run(
        [sys.executable, "-m", "detect_secrets", "scan", "--all-files", "."],
        cwd=plugin, capture_output=True, text=True, timeout=300,
    )
    types = {s["type"] for found in json.loads(secrets.stdout)["results"].values()
             for s in found}
    assert "Private Key" in types
