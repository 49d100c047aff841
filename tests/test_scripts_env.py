"""scripts/env.sh can be sourced anywhere, a subshell included."""

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
