"""Injection options come from the decoded ``agent_memory`` config: one decoding, one set of rules."""

from __future__ import annotations

import pytest

from meta_memory.agent_memory.config import AgentMemoryConfig, parse_agent_memory_section
from meta_memory.errors import ConfigError
from meta_memory.injection import InjectionOptions


def options(**raw: object) -> InjectionOptions:
    return InjectionOptions.from_config(parse_agent_memory_section(dict(raw)))


def test_defaults() -> None:
    for o in (InjectionOptions(), options()):
        assert (o.realm, o.header, o.per_turn_injection, o.defang_inbound) == ("default", "Agent memory", "budgeted", True)
        assert (o.selection, o.max_entries, o.recall_timeout_ms, o.recall_failure_policy) == ("contextual", 8, 500, "skip")


def test_normalisation() -> None:
    assert options(max_entries=0).max_entries == 8
    assert options(max_entries=64).max_entries == 64
    assert options(recall_timeout_ms=0).recall_timeout_ms == 500
    assert options(recall_timeout_ms=30_000).recall_timeout_ms == 30_000
    assert options(realm="  ").realm == "default"
    assert options(selection=" ALWAYS ").selection == "always"
    assert options(instruction_header="   ").header == "Agent memory"
    assert options(instruction_header=" Team\nnotes ").header == "Team notes"


@pytest.mark.parametrize(
    "field,value",
    [
        ("selection", "sometimes"),
        ("per_turn_injection", "on"),
        ("recall_failure_policy", "retry"),
        ("operator_scope", "on"),
        ("max_entries", -1),
        ("max_entries", 65),
        ("recall_timeout_ms", True),
        ("recall_timeout_ms", 90_000),
        ("defang_inbound", "yes"),
    ],
)
def test_bad_values_are_refused_naming_the_key(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^agent_memory.{field}: "):
        options(**{field: value})


def test_from_the_agent_memory_config_model() -> None:
    cfg = AgentMemoryConfig(selection="always", instruction_header="Notes", per_turn_injection="off",
                            max_entries=3, recall_failure_policy="fail")
    o = InjectionOptions.from_config(cfg)
    assert (o.selection, o.header, o.per_turn_injection, o.max_entries, o.recall_failure_policy) == (
        "always", "Notes", "off", 3, "fail")
