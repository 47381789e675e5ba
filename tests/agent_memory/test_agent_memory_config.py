from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from meta_memory.agent_memory.config import (
    AgentMemoryConfig,
    ContentTrustConfig,
    parse_agent_memory_section,
    parse_content_trust,
)
from meta_memory.errors import ConfigError


def test_defaults() -> None:
    cfg = parse_agent_memory_section({})
    assert cfg == parse_agent_memory_section(None) == parse_agent_memory_section(True)
    dumped = cfg.model_dump()
    assert dumped.pop("steward")["enabled"] is False
    assert dumped == {
        "enabled": True,
        "realm": "default",
        "selection": "contextual",
        "max_entries": 8,
        "recall_timeout_ms": 500,
        "recall_failure_policy": "skip",
        "instruction_header": None,
        "per_turn_injection": "budgeted",
        "defang_inbound": True,
        "llm_writes": "observed",
        "shared_key_taint": "any",
        "recorder_tool": True,
        "operator_scope": "off",
        "content_trust": {"trusted_mcp_servers": (), "untrusted_tools": (), "trusted_tools": (), "default": "trusted",
                          "default_untrusted_tools": None},
        "store": "sqlite",
        "dsn": None,
        "recall_provider": "lexical",
        "embedder": None,
        "erase_tombstoned_after_days": None,
        "session_state_expiry_days": 30,
        "session_state_limit": 1_000_000,
        "session_state_identity_limit": 0,
        "max_realms": 4096,
        "identity_record_limit": 2_000_000,
        "max_open_realms": 32,
        "recall_index_mb": 256,
        "sqlite_cache_mb": 128,
        "view_cache_mb": 32,
        "vector_cache_mb": 256,
        "max_ttl_s": 3_153_600_000,
        "tool_max_ttl_s": 2_592_000,
        "expiry_sweep_s": 60,
        "realms": None,
    }
    assert cfg.header == "Agent memory"
    assert parse_agent_memory_section(False).enabled is False


def test_defaults_and_normalisation() -> None:
    cfg = parse_agent_memory_section(
        {"realm": "  ", "max_entries": 0, "recall_timeout_ms": 0, "selection": " Always ", "instruction_header": "Remember"}
    )
    assert (cfg.realm, cfg.max_entries, cfg.recall_timeout_ms, cfg.selection) == ("default", 8, 500, "always")
    assert cfg.header == "Remember"
    cfg = parse_agent_memory_section({"realm": "family", "max_entries": 64, "recall_timeout_ms": 30_000})
    assert (cfg.realm, cfg.max_entries, cfg.recall_timeout_ms) == ("family", 64, 30_000)
    # a realm name is taken as given: a padded one is refused, naming the key and the rule, never trimmed
    for padded in (" family ", "family\n", "\u00a0family"):
        with pytest.raises(ConfigError, match="agent_memory.realm: must not begin or end with whitespace"):
            parse_agent_memory_section({"realm": padded})
    assert parse_agent_memory_section({"recall_index_mb": 0}).recall_index_mb == 256
    assert parse_agent_memory_section({"max_ttl_s": 0}).max_ttl_s == 3_153_600_000
    assert parse_agent_memory_section({"max_ttl_s": 3600, "tool_max_ttl_s": 60}).tool_max_ttl_s == 60
    assert parse_agent_memory_section({"max_ttl_s": 3600}).tool_max_ttl_s == 3600  # the default follows the cap
    with pytest.raises(ConfigError, match="tool_max_ttl_s: must not exceed max_ttl_s"):
        parse_agent_memory_section({"max_ttl_s": 3600, "tool_max_ttl_s": 3601})
    for bad in (-1, True, 1.5, "60", 10**12):
        with pytest.raises(ConfigError, match="max_ttl_s"):
            parse_agent_memory_section({"max_ttl_s": bad})
    with pytest.raises(ConfigError, match="expiry_sweep_s"):
        parse_agent_memory_section({"expiry_sweep_s": 86_401})
    assert parse_agent_memory_section({"recall_index_mb": 16}).recall_index_mb == 16
    with pytest.raises(ConfigError, match="recall_index_mb"):
        parse_agent_memory_section({"recall_index_mb": 70_000})


@pytest.mark.parametrize("key,value,needle", [
    ("max_entries", 1000, "agent_memory.max_entries: must be an integer between 1 and 64"),
    ("max_entries", 65, "agent_memory.max_entries: must be an integer between 1 and 64"),
    ("max_entries", -1, "agent_memory.max_entries: must be an integer between 1 and 64"),
    ("recall_timeout_ms", 999_999, "agent_memory.recall_timeout_ms: must be an integer between 1 and 30000"),
    ("recall_timeout_ms", 30_001, "agent_memory.recall_timeout_ms: must be an integer between 1 and 30000"),
])
def test_out_of_range_numbers_are_refused_naming_key_and_range(key: str, value: int, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_agent_memory_section({key: value})
    assert needle in str(info.value) and repr(value) in str(info.value)


def test_config_is_frozen() -> None:
    cfg = parse_agent_memory_section({})
    with pytest.raises(ValidationError, match="frozen"):
        cfg.realm = "x"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        AgentMemoryConfig(unknown=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"maxEntries": 3}, "'maxEntries'"),
        ({"steward": {"cadence": "sometimes"}}, "agent_memory.steward.cadence"),
        ({"selector": "off", "realm": "x"}, "'selector'"),
        ({"max_entries": -1}, "agent_memory.max_entries"),
        ({"max_entries": True}, "agent_memory.max_entries"),
        ({"max_entries": "8"}, "agent_memory.max_entries"),
        ({"selection": "semantic"}, "agent_memory.selection"),
        ({"recall_failure_policy": "retry"}, "agent_memory.recall_failure_policy"),
        ({"per_turn_injection": "always"}, "agent_memory.per_turn_injection"),
        ({"llm_writes": "never"}, "agent_memory.llm_writes"),
        ({"shared_key_taint": "none"}, "agent_memory.shared_key_taint"),
        ({"shared_key_taint": ["any"]}, "agent_memory.shared_key_taint"),
        ({"operator_scope": "on"}, "agent_memory.operator_scope"),
        ({"defang_inbound": "yes"}, "agent_memory.defang_inbound"),
        ({"realm": 3}, "agent_memory.realm"),
        ({"instruction_header": 3}, "agent_memory.instruction_header"),
        ({"store": "redis"}, "agent_memory.store"),
        ({"store": "postgres"}, "agent_memory.dsn"),
        ({"dsn": "postgresql://x"}, "agent_memory.dsn"),
        ({"content_trust": []}, "content_trust must be an object"),
    ],
)
def test_refusals_name_the_key(raw: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_agent_memory_section(raw)
    assert needle in str(info.value)


def test_markdown_store_is_refused() -> None:
    with pytest.raises(ConfigError, match="markdown"):
        parse_agent_memory_section({"store": "markdown"})
    with pytest.raises(ConfigError, match='llm_writes require store = "sqlite"'):
        parse_agent_memory_section({"store": "markdown", "llm_writes": "observed"})
    with pytest.raises(ConfigError, match="content_trust require"):
        parse_agent_memory_section({"store": "markdown", "content_trust": {}})


def test_postgres_with_dsn() -> None:
    cfg = parse_agent_memory_section({"store": "postgres", "dsn": " postgresql://localhost/meta "})
    assert (cfg.store, cfg.dsn) == ("postgres", "postgresql://localhost/meta")


def test_content_trust_strict_messages() -> None:
    assert parse_content_trust({"trusted_mcp_servers": [" knowledge_graph "], "untrusted_tools": ["scrape_page"]}) == (
        ContentTrustConfig(trusted_mcp_servers=("knowledge_graph",), untrusted_tools=("scrape_page",))
    )
    with pytest.raises(ConfigError, match="^content_trust must be an object$"):
        parse_content_trust("x")
    with pytest.raises(ConfigError, match="^unsupported content_trust fields: a, b$"):
        parse_content_trust({"b": [], "a": [], "trusted_tools": []})
    with pytest.raises(ConfigError, match=r"^content_trust.trusted_tools must be an array$"):
        parse_content_trust({"trusted_tools": "x"})
    with pytest.raises(ConfigError, match=r"^content_trust.untrusted_tools entries must be non-empty strings$"):
        parse_content_trust({"untrusted_tools": ["ok", " "]})
    with pytest.raises(ConfigError, match=r"agent_memory.unsupported content_trust fields: x"):
        parse_agent_memory_section({"content_trust": {"x": []}})


@given(st.integers(min_value=-10, max_value=10**9), st.integers(min_value=-10, max_value=10**9))
def test_numeric_range_property(max_entries: int, timeout: int) -> None:
    raw = {"max_entries": max_entries, "recall_timeout_ms": timeout}
    if 0 <= max_entries <= 64 and 0 <= timeout <= 30_000:
        cfg = parse_agent_memory_section(raw)
        assert cfg.max_entries == (max_entries or 8) and cfg.recall_timeout_ms == (timeout or 500)
    else:
        with pytest.raises(ConfigError, match="between 1 and"):
            parse_agent_memory_section(raw)


@pytest.mark.parametrize("value", [0, -1, 36_501, "30", True, 1.5])
def test_tombstone_retention_days_out_of_range_are_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="erase_tombstoned_after_days"):
        parse_agent_memory_section({"erase_tombstoned_after_days": value})


def test_tombstone_retention_days() -> None:
    assert parse_agent_memory_section({"erase_tombstoned_after_days": 30}).erase_tombstoned_after_days == 30
