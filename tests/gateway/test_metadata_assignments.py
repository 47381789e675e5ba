"""A credential split into a metadata key and its value (``{"password": "hunter2x"}``) is refused like
the same assignment in a body: on ``remember`` and on the ledger's ``meta/memory/index``, over a real
socket, naming the field and the class, with nothing written; ordinary metadata is kept."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.secrets import json_strings, scan_values

pytestmark = pytest.mark.gateway

IDENTITY = "lead:main"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

SPLIT = [
    ({"password": "hunter2x"}, "password-assignment"),
    ({"db": {"PGPASSWORD": "s3cr3t-value"}}, "password-assignment"),
    ({"api_key": "abcd1234efgh5678ijkl"}, "credential-assignment"),
    ({"client_secret": "Zq81kLm02pQr77vXy"}, "credential-assignment"),
    ({"pin_password": 48213971}, "password-assignment"),
]


@pytest.mark.parametrize("metadata,secret_class", SPLIT)
def test_remember_refuses_a_split_assignment_in_metadata(gateway: Any, metadata: Any, secret_class: str) -> None:
    err = gateway.error("meta/agent_memory/remember",
                        {"identity": IDENTITY, "title": "DB config", "body": "staging", "metadata": metadata})
    assert err["data"]["reason"] == "secret_detected" and err["data"]["secret_class"] == secret_class
    assert "hunter2x" not in err["message"] and "abcd1234" not in err["message"]
    listed = gateway.result("meta/agent_memory/list", {"identity": IDENTITY})
    assert listed["records"] == []  # nothing written


@pytest.mark.parametrize("metadata,secret_class", SPLIT)
def test_the_ledger_refuses_a_split_assignment_in_metadata(gateway: Any, metadata: Any, secret_class: str) -> None:
    err = gateway.error("meta/memory/index",
                        {"entity": "identity:ops", "topic": "db", "fact": "staging", "metadata": metadata})
    assert err["code"] == -32602 and err["data"]["field"] == "metadata"
    assert secret_class in err["message"]
    assert gateway.result("meta/memory/query", {})["assertions"] == []


def test_ordinary_metadata_is_kept(gateway: Any) -> None:
    metadata = {"source": "chat", "turn": 3, "password_policy": "rotate yearly", "token_count": 412,
                "speaker": "Caroline", "nested": {"key": "value"}}
    out = gateway.result("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": "Policy", "body": "noted", "metadata": metadata})
    listed = gateway.result("meta/agent_memory/list", {"identity": IDENTITY})["records"]
    assert [r["metadata"] for r in listed if r["memory_id"] == out["memory_id"]] == [metadata]


_keys = st.sampled_from(["password", "db_password", "PGPASSWORD", "api_key", "secret_key", "auth_token"])
_names = st.lists(st.sampled_from(["a", "cfg", "db", "env"]), max_size=3)


@settings(max_examples=60, deadline=None)
@given(key=_keys, path=_names)
def test_an_assignment_is_found_at_any_depth(key: str, path: list[str]) -> None:
    value: Any = {key: "Xy7pQ2rT9wLm4nB8kZ3v"}
    for name in reversed(path):
        value = {name: value}
    assert scan_values({"metadata": value}) is not None
    assert any(key in s and "Xy7pQ2rT9wLm4nB8kZ3v" in s for s in json_strings(value))


def test_a_token_in_a_value_is_still_found_alone() -> None:
    assert scan_values({"metadata": {"note": GITHUB}}) == ("metadata", "github-token")
