"""``python -m meta_memory`` runs the command line, as ``meta-memory`` does (a virtual environment's
scripts directory need not be on ``PATH``). Before, it failed with "No module named meta_memory.__main__"."""

from __future__ import annotations

import subprocess
import sys

from meta_memory import __version__


def test_python_dash_m_meta_memory_is_the_command_line() -> None:
    out = subprocess.run([sys.executable, "-m", "meta_memory", "--version"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert __version__ in out.stdout

    usage = subprocess.run([sys.executable, "-m", "meta_memory", "recall", "--identity", "lead:main"],
                           capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2
    assert "Usage: python -m meta_memory recall" in usage.stderr
    assert "Missing argument 'QUERY'" in usage.stderr
