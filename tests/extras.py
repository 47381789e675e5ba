"""Optional extras for tests: the install hint a skipped test names.

The README's test command installs only ``.[test]``; tests that need an
optional extra skip with the command that brings it, and ``.ci/run`` installs
the extras afterwards and runs those tests (``-m "semantic or postgres or langgraph or otel or openai_agents
or llamaindex or importers"``, and ``-m crewai`` in an environment of its own: crewai pins ``openai<3``, which the
Agents SDK outgrew).
"""

from __future__ import annotations

from types import ModuleType

import pytest

INSTALL_HINT = {
    "semantic": "pip install torch==2.13.0 && pip install -e '.[test,semantic]'",
    "postgres": "pip install -e '.[test,postgres]'",
    "langgraph": "pip install -e '.[test,langgraph]'",
    "openai-agents": "pip install -e '.[test,openai-agents]'",
    "crewai": "pip install -e '.[test,crewai]'",
    "llamaindex": "pip install -e '.[test,llamaindex]'",
    "otel": "pip install -e '.[test,otel]'",
    "importers": "pip install -e '.[test,importers]'",
}


def require_extra(extra: str, module: str) -> ModuleType:
    """Import ``module`` or skip the calling test module with the extra's install hint."""
    return pytest.importorskip(module, reason=f"needs the {extra!r} extra ({module} is missing): {INSTALL_HINT[extra]}")
