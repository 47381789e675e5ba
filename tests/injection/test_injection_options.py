"""Decoding injection options from ``agent_memory`` config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from meta_memory.errors import ConfigError
from meta_memory.injection import InjectionOptions


def test_defaults() -> None:
    o = InjectionOptions()
    assert (o.realm, o.header, o.per_turn_injection, o.defang_inbound) == ("default", "Agent memory", "budgeted", True)
    assert (o.selection, o.max_entries, o.recall_timeout_ms, o.recall_failure_policy) == ("contextual", 8, 500, "skip")


def test_normalisation() -> None:
    assert InjectionOptions(max_entries=0).max_entries == 8
    assert InjectionOptions(max_entries=65).max_entries == 64
    assert InjectionOptions(recall_timeout_ms=0).recall_timeout_ms == 500
    assert InjectionOptions(recall_timeout_ms=90_000).recall_timeout_ms == 30_000
    assert InjectionOptions(realm="  ").realm == "default"
    assert InjectionOptions(instruction_header="   ").header == "Agent memory"
    assert InjectionOptions(instruction_header=" Team\nnotes ").header == "Team notes"


@pytest.mark.parametrize(
    "field,value",
    [
        ("selection", "sometimes"),
        ("per_turn_injection", "on"),
        ("recall_failure_policy", "retry"),
        ("operator_scope", "on"),
        ("max_entries", -1),
        ("recall_timeout_ms", True),
        ("defang_inbound", "yes"),
    ],
)
def test_bad_values_are_refused_naming_the_key(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"agent_memory.{field}"):
        InjectionOptions(**{field: value})  # type: ignore[arg-type]


def test_from_config_mapping_and_object() -> None:
    assert InjectionOptions.from_config({"selection": "always", "unrelated": 1}).selection == "always"
    cfg = SimpleNamespace(max_entries=3, recall_failure_policy="fail", store="sqlite")
    o = InjectionOptions.from_config(cfg)
    assert (o.max_entries, o.recall_failure_policy, o.selection) == (3, "fail", "contextual")


def test_from_the_agent_memory_config_model() -> None:
    from meta_memory.agent_memory.config import AgentMemoryConfig

    cfg = AgentMemoryConfig(selection="always", instruction_header="Notes", per_turn_injection="off")
    o = InjectionOptions.from_config(cfg)
    assert (o.selection, o.header, o.per_turn_injection) == ("always", "Notes", "off")
