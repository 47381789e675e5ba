"""Plugging in a custom recall provider: the configuration's ``"package.module:Class"`` on a gateway, the
builder's ``recall_provider(...)``, their refusals, and the example provider (``examples/recall_provider.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from meta_memory.agent_memory.config import parse_agent_memory_section
from meta_memory.errors import ConfigError, StartupError
from meta_memory.recall.custom import RecallOutcome
from meta_memory.sdk import Meta
from support import REPO_ROOT, serving, start_gateway, write_config

EXAMPLES = REPO_ROOT / "examples"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("recall_provider_example", EXAMPLES / "recall_provider.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_example_provider_finds_what_lexical_recall_cannot(tmp_path: Path) -> None:
    assert _example().recall_both_ways(str(tmp_path / "state")) == {"lexical": [], "synonyms": ["Parking"]}


@pytest.mark.gateway
def test_a_gateway_loads_the_configured_provider_class(tmp_path: Path) -> None:
    config = write_config(tmp_path / "gw.toml",
                          '[agent_memory]\nrecall_provider = "recall_provider:SynonymRecallProvider"\n')
    with serving(tmp_path / "state", config=config, env={"PYTHONPATH": str(EXAMPLES)}) as rpc:
        rpc.result("meta/agent_memory/remember", {"identity": "agent:valet", "title": "Parking",
                                                  "body": "I parked the automobile on level 3."})
        got = rpc.result("meta/agent_memory/recall", {"identity": "agent:valet", "query_text": "where is my car?"})
        assert [r["title"] for r in got["records"]] == ["Parking"]
        backlog = rpc.result("meta/status")["agent_memory"]["vector_backlog"]
        assert backlog["provider"] == "custom" and "recall_provider:SynonymRecallProvider" in backlog["reason"]


@pytest.mark.gateway
@pytest.mark.parametrize(("reference", "cause"), [
    ("no_such_package.recall:Provider", "cannot import module 'no_such_package.recall'"),
    ("recall_provider:NoSuchClass", "has no attribute 'NoSuchClass'"),
    ("recall_provider:SYNONYMS", "neither a class, a factory nor a provider object"),
])
def test_a_provider_that_cannot_be_loaded_stops_the_gateway_naming_the_key(
        tmp_path: Path, reference: str, cause: str) -> None:
    config = write_config(tmp_path / "gw.toml", f'[agent_memory]\nrecall_provider = "{reference}"\n')
    gw = start_gateway(tmp_path / "state", config=config, env={"PYTHONPATH": str(EXAMPLES)}, expect_failure=True)
    assert gw.proc.returncode != 0
    err = gw.proc.stderr.read() if gw.proc.stderr else ""
    assert "agent_memory.recall_provider" in err and cause in err, err


@pytest.mark.parametrize("value", ["nope", "module:", ":Class", "a b:C", "pkg.mod:Cls;rm", 3, ""])
def test_the_key_takes_a_bundled_name_or_a_class_reference(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"agent_memory\.recall_provider: must be 'lexical', 'hybrid' or a custom"):
        parse_agent_memory_section({"recall_provider": value})
    assert parse_agent_memory_section({"recall_provider": " Lexical "}).recall_provider == "lexical"
    assert parse_agent_memory_section({"recall_provider": "pkg.mod:Outer.Inner"}).recall_provider == "pkg.mod:Outer.Inner"


class _Provider:
    def recall(self, request: Any, reader: Any) -> RecallOutcome[Any]:
        return RecallOutcome([])


def test_the_builder_refuses_what_is_not_a_provider(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a class; give an instance"):
        Meta.builder().recall_provider(_Provider)
    with pytest.raises(ConfigError, match="has no recall"):
        Meta.builder().recall_provider(object())
    both = Meta.builder().persistent_state(tmp_path / "s").agent_memory(recall_provider="hybrid")
    with pytest.raises(StartupError, match="configure one recall provider"):
        both.recall_provider(_Provider()).build()
    named = Meta.builder().persistent_state(tmp_path / "t").agent_memory(recall_provider="lexical")
    with pytest.raises(ConfigError, match="configure one recall provider"):
        named.recall_provider("hybrid").build()
    with Meta.builder().persistent_state(tmp_path / "u").recall_provider("lexical").build() as handle:
        assert handle.status().agent_memory["vector_backlog"]["provider"] == "lexical"
