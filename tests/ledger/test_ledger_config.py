"""Decoding of the [memory] table (seed: Architecture; spec README: the elephant kind is refused)."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from meta_memory.errors import ConfigError, StartupError
from meta_memory.ledger.config import LedgerConfig, parse_memory_section


def test_local_json_without_endpoint() -> None:
    assert parse_memory_section({"kind": "local_json"}) == LedgerConfig(kind="local_json")


def test_local_json_with_endpoint_from_toml() -> None:
    raw = tomllib.loads('[memory]\nkind = "local_json"\nhealth_check_endpoint = " https://ops.example:8443/ "\n')
    config = parse_memory_section(raw["memory"])
    assert config.health_check_endpoint == "https://ops.example:8443/"
    with pytest.raises(ValidationError, match="frozen"):
        config.kind = "other"  # type: ignore[misc]  # frozen


def test_elephant_kind_is_refused_naming_local_json_and_the_move() -> None:
    with pytest.raises(ConfigError) as info:
        parse_memory_section({"kind": "elephant", "endpoint": "http://localhost:3000"})
    message = str(info.value)
    assert "local_json" in message
    assert "endpoint" in message and "health_check_endpoint" in message
    assert 'health_check_endpoint = "http://localhost:3000"' in message
    assert isinstance(info.value, StartupError)


@pytest.mark.parametrize("key", ["stores", "space_id", "collection"])
def test_predecessor_fields_are_unsupported(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"memory\.{key} is unsupported"):
        parse_memory_section({"kind": "local_json", key: ["x"]})


def test_unknown_key_is_named() -> None:
    with pytest.raises(ConfigError, match=r"memory\.colour is an unknown key"):
        parse_memory_section({"kind": "local_json", "colour": "blue"})


def test_state_path_and_endpoint_are_refused() -> None:
    with pytest.raises(ConfigError, match="state_path is unsupported"):
        parse_memory_section({"kind": "local_json", "state_path": "x.json"})
    with pytest.raises(ConfigError, match="rename it to health_check_endpoint"):
        parse_memory_section({"kind": "local_json", "endpoint": "http://x"})


def test_kind_is_required_and_checked() -> None:
    with pytest.raises(ConfigError, match="kind is required"):
        parse_memory_section({})
    with pytest.raises(ConfigError, match="unsupported"):
        parse_memory_section({"kind": "s3"})


@pytest.mark.parametrize("value", ["", "   ", "\t\n"])
def test_blank_endpoint_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_memory_section({"kind": "local_json", "health_check_endpoint": value})
    assert str(info.value) == "memory backend health_check_endpoint must not be empty when provided"


@pytest.mark.parametrize("value", ["localhost:3000", "ftp://host", "tcp://host:1", "http://", "http://:80", 42])
def test_endpoint_must_be_an_http_url(value: object) -> None:
    with pytest.raises(ConfigError, match="health_check_endpoint"):
        parse_memory_section({"kind": "local_json", "health_check_endpoint": value})


@given(st.text())
def test_any_endpoint_either_decodes_to_http_or_is_refused(value: str) -> None:
    try:
        config = parse_memory_section({"kind": "local_json", "health_check_endpoint": value})
    except ConfigError:
        return
    assert config.health_check_endpoint is not None
    assert config.health_check_endpoint.startswith(("http://", "https://"))
