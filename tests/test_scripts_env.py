"""scripts/env.sh can be sourced anywhere, a subshell included."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_env_sh_sourced_in_a_subshell_runs_the_rest_of_it():
    # With `mkdir ... && chmod ...` as its last line, Debian 12's bash 5.2.15 skipped the
    # rest of the subshell: only the exit status 0 was left.
    done = subprocess.run(
        ["bash", "-c", "( source scripts/env.sh; echo ran )"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran"


def _clone_layout(tmp_path):
    """A folder laid out as a clone after scripts/setup.sh (scripts/env.sh, .venv,
    .build/plugins/iou_evaluation) whose plugin is this checkout, so that env.sh's own
    profile goes in tmp_path/.build, not in the checkout."""
    (tmp_path / "scripts").mkdir(parents=True)
    (tmp_path / "scripts" / "env.sh").write_bytes((ROOT / "scripts" / "env.sh").read_bytes())
    (tmp_path / ".venv").symlink_to((ROOT / ".venv").resolve())
    (tmp_path / ".build" / "plugins").mkdir(parents=True)
    (tmp_path / ".build" / "plugins" / "iou_evaluation").symlink_to(ROOT)
    return tmp_path


def test_the_documented_qgis_process_help_works_after_sourcing_env_sh(tmp_path):
    # Before, qgis_process answered "Algorithm ioueval:checkthresholds not found!" unless
    # the profile in which the plugin had been enabled was exported by hand.
    clone = _clone_layout(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("QGIS_CUSTOM_CONFIG_PATH", "PYTHONPATH", "QGIS_PLUGINPATH")}
    done = subprocess.run(
        ["bash", "-c", "source scripts/env.sh; echo \"$QGIS_CUSTOM_CONFIG_PATH\"; "
                       "qgis_process.bin help ioueval:checkthresholds"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == str(clone / ".build" / "profile")
    assert "Check release thresholds (ioueval:checkthresholds)" in done.stdout, done.stdout
    # plain text in a terminal: no tags, entities decoded, list items as "- "
    assert "<p>" not in done.stdout and "<code>" not in done.stdout and "&gt;" not in done.stdout
    assert "operators >= > <= < == !=" in " ".join(done.stdout.split())
    assert "\n- Keys are looked up" in done.stdout


def test_env_sh_leaves_a_profile_given_by_the_user_alone(tmp_path):
    clone = _clone_layout(tmp_path / "clone")
    mine = tmp_path / "mine"
    done = subprocess.run(
        ["bash", "-c", "source scripts/env.sh; echo \"$QGIS_CUSTOM_CONFIG_PATH\""],
        cwd=clone, env={**os.environ, "QGIS_CUSTOM_CONFIG_PATH": str(mine)},
        capture_output=True, text=True, timeout=60,
    )
    assert done.stdout.strip() == str(mine)
    assert not mine.exists() and not (clone / ".build" / "profile").exists()


def test_env_sh_enables_the_plugin_beside_settings_already_in_its_profile(tmp_path):
    clone = _clone_layout(tmp_path)
    ini = clone / ".build" / "profile" / "profiles" / "default" / "QGIS" / "QGIS3.ini"
    ini.parent.mkdir(parents=True)
    ini.write_text("[PythonPlugins]\nother=true\niou_evaluation=false\n\n[qgis]\nx=1\n")
    env = {k: v for k, v in os.environ.items() if k != "QGIS_CUSTOM_CONFIG_PATH"}
    for _ in range(2):  # a second source changes nothing
        subprocess.run(["bash", "-c", "source scripts/env.sh"], cwd=clone, env=env,
                       check=True, timeout=60)
    assert ini.read_text() == ("[PythonPlugins]\niou_evaluation=true\nother=true\n\n"
                               "[qgis]\nx=1\n")
