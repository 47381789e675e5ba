"""The LoCoMo benchmarks take their data file from the command line (or ``META_MEMORY_LOCOMO``), never
from a path of one machine, and the repository names no such path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO_ROOT

SCRIPTS = ["locomo_recall.py", "hybrid_budget.py", "locomo_fusion.py"]
ENV = "META_MEMORY_LOCOMO"


def run(script: str, *args: str, data_env: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if data_env is not None:
        env[ENV] = data_env
    return subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / script), *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=REPO_ROOT)


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_data_the_benchmark_is_a_usage_error_naming_both_ways(script: str) -> None:
    done = run(script)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "--data locomo-dev.json" in done.stderr and ENV in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_environment_variable_names_the_data_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent-locomo.json"
    done = run("locomo_recall.py", data_env=str(missing))
    assert done.returncode == 2 and f"data file not found: {missing}" in done.stderr, done.stderr
    named = run("locomo_recall.py", "--data", str(tmp_path / "named.json"), data_env=str(missing))
    assert f"data file not found: {tmp_path / 'named.json'}" in named.stderr  # --data wins over the variable


def test_the_repository_names_no_machine_paths() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=REPO_ROOT, check=True).stdout
    # a checkout's sibling directory, spelled as a path or joined in code: a layout of one machine
    siblings = ("../" + "shared/", '"shared" / ' + '"data"', '".." / ' + '"shared"')
    found = []
    for name in tracked.decode().split("\0"):
        path = REPO_ROOT / name
        if not name or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{name}:{n}" for n, line in enumerate(text.splitlines(), 1) if any(s in line for s in siblings)]
    assert found == []
