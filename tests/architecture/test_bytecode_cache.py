"""The processes the suite starts (gateways, commands) cache their bytecode outside the source tree when the
environment forbids writing it beside the sources (``PYTHONDONTWRITEBYTECODE``), instead of compiling the
package again in each of them; an environment that already names a cache directory is left as it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import REPO_ROOT, cache_bytecode_outside_the_tree


def test_no_bytecode_beside_the_sources_means_a_cache_under_the_run(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    assert cache_bytecode_outside_the_tree(env, lambda: tmp_path / "pycache") is True
    assert env == {"PATH": os.environ.get("PATH", ""), "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    assert (tmp_path / "pycache").is_dir()
    # a process started with it writes the package's bytecode there
    src = REPO_ROOT / "src"
    out = subprocess.run([sys.executable, "-c", "import meta_memory.textfold"], capture_output=True, text=True,
                         timeout=120, env={**env, "PYTHONPATH": str(src)})
    assert out.returncode == 0, out.stderr
    cached = list((tmp_path / "pycache").rglob("textfold*.pyc"))
    assert cached and all(Path(src.resolve().as_posix().lstrip("/")).as_posix() in c.as_posix() for c in cached), cached


def test_an_environment_that_names_a_cache_or_allows_bytecode_is_kept(tmp_path: Path) -> None:
    named = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/elsewhere"}
    allowed = {"PATH": "/bin"}
    for env in (named, allowed):
        before = dict(env)
        assert cache_bytecode_outside_the_tree(env, lambda: tmp_path / "never") is False
        assert env == before
    assert not (tmp_path / "never").exists()
