"""The layering of docs/architecture.md holds: the import-linter contracts of ``pyproject.toml``
(``[tool.importlinter]``) are kept by the source, and each contract breaks on the import it forbids."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO_ROOT

PYPROJECT = REPO_ROOT / "pyproject.toml"
PACKAGE = REPO_ROOT / "src" / "meta_memory"


def _lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the package found in ``src``, with the repository's contracts."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code, "--no-cache", str(PYPROJECT)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_source_keeps_every_contract() -> None:
    result = _lint_imports(PACKAGE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout, result.stdout


@pytest.mark.parametrize(("module", "line", "refusal"), [
    # a domain package reaching up into the services
    ("recall/text.py", "from meta_memory.services import access",
     "meta_memory.recall is not allowed to import meta_memory.services"),
    # the services reaching up into the method table
    ("services/agent_memory.py", "from meta_memory.rpc import dispatch",
     "meta_memory.services is not allowed to import meta_memory.rpc"),
    # the method table reaching up into a transport
    ("rpc/params.py", "from meta_memory.server import gateway",
     "meta_memory.rpc is not allowed to import meta_memory.server"),
    # the store reaching a domain package above it
    ("agent_memory/store/tables.py", "from meta_memory.firewall import gate",
     "meta_memory.agent_memory.store is not allowed to import meta_memory.firewall"),
    # the store reaching recall beyond the table contract it is allowed today
    ("agent_memory/store/tables.py", "from meta_memory.recall import lexical",
     "meta_memory.agent_memory.store is not allowed to import meta_memory.recall"),
    # the write planner reaching past the transaction handle into the store's modules
    ("agent_memory/writes.py", "from meta_memory.agent_memory.store import common",
     "meta_memory.agent_memory.writes is not allowed to import meta_memory.agent_memory.store"),
    # the SDK reaching past the public surfaces
    ("sdk/methods.py", "from meta_memory.agent_memory import model",
     "meta_memory.sdk is not allowed to import meta_memory.agent_memory"),
])
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, line: str, refusal: str) -> None:
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "meta_memory", ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    target = src / "meta_memory" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    result = _lint_imports(src)
    assert result.returncode == 1, result.stdout + result.stderr
    out = " ".join(result.stdout.split())  # the report wraps long lines
    assert refusal in out, result.stdout
