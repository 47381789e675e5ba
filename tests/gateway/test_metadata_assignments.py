"""A credential split into a metadata key and its value (``{"password": "hunter2x"}``) is refused like
the same assignment in a body: on ``remember`` and on the ledger's ``meta/memory/index``, over a real
socket, naming the field and the class, with nothing written; ordinary metadata is kept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory.secrets import MAX_PAIRED_VALUES, json_strings, scan_values
from support import GatewayProcess, module_gateway

pytestmark = pytest.mark.gateway

IDENTITY = "lead:main"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the tests whose every write is refused: each checks that nothing landed, from it or
    from any test before it (a write that got through fails the test that made it, and those after)."""
    yield from module_gateway(tmp_path_factory, "refusing")


SPLIT = [
    ({"password": "hunter2x"}, "password-assignment"),
    ({"db": {"PGPASSWORD": "s3cr3t-value"}}, "password-assignment"),
    ({"api_key": "abcd1234efgh5678ijkl"}, "credential-assignment"),
    ({"client_secret": "Zq81kLm02pQr77vXy"}, "credential-assignment"),
    ({"pin_password": 48213971}, "password-assignment"),
]


@pytest.mark.parametrize("metadata,secret_class", SPLIT)
def test_remember_refuses_a_split_assignment_in_metadata(refusing: GatewayProcess,
                                                         metadata: Any, secret_class: str) -> None:
    err = refusing.error("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": "DB config", "body": "staging", "metadata": metadata})
    assert err["data"]["reason"] == "secret_detected" and err["data"]["secret_class"] == secret_class
    assert "hunter2x" not in err["message"] and "abcd1234" not in err["message"]
    listed = refusing.result("meta/agent_memory/list", {"identity": IDENTITY})
    assert listed["records"] == []  # nothing written


@pytest.mark.parametrize("metadata,secret_class", SPLIT)
def test_the_ledger_refuses_a_split_assignment_in_metadata(refusing: GatewayProcess,
                                                           metadata: Any, secret_class: str) -> None:
    err = refusing.error("meta/memory/index",
                         {"entity": "identity:ops", "topic": "db", "fact": "staging", "metadata": metadata})
    assert err["code"] == -32602 and err["data"]["field"] == "metadata"
    assert secret_class in err["message"]
    assert refusing.result("meta/memory/query", {})["assertions"] == []


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


# A value inside arrays or objects under a credential key is still that key's value.
NESTED = [
    ({"password": ["hunter2x"]}, "password-assignment"),
    ({"password": {"value": "hunter2x"}}, "password-assignment"),
    ({"aws_secret_access_key": {"v": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}}, "credential-assignment"),
    ({"password": ["hunter2x"], "api_key": {"v": "a1b2c3d4e5f6g7h8i9j0k1"}}, "password-assignment"),
    ({"db": {"password": [{"primary": "hunter2x"}]}}, "password-assignment"),
    ({"password ": "hunter2x"}, "password-assignment"),  # white space around the key
    ({" api_key": ["a1b2c3d4e5f6g7h8i9j0k1"]}, "credential-assignment"),
    ({"password:": "hunter2x"}, "password-assignment"),  # a separator ending the key
    ({"pin_password": [1, 48213971]}, "password-assignment"),
]


@pytest.mark.parametrize("metadata,secret_class", NESTED)
def test_remember_refuses_a_credential_nested_under_its_key(refusing: GatewayProcess,
                                                            metadata: Any, secret_class: str) -> None:
    err = refusing.error("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": "DB config", "body": "staging", "metadata": metadata})
    assert err["data"]["reason"] == "secret_detected" and err["data"]["secret_class"] == secret_class
    assert "hunter2x" not in err["message"] and "a1b2c3d4" not in err["message"]
    assert refusing.result("meta/agent_memory/list", {"identity": IDENTITY})["records"] == []


@pytest.mark.parametrize("metadata,secret_class", NESTED)
def test_the_ledger_refuses_a_credential_nested_under_its_key(refusing: GatewayProcess,
                                                              metadata: Any, secret_class: str) -> None:
    err = refusing.error("meta/memory/index",
                         {"entity": "identity:ops", "topic": "db", "fact": "staging", "metadata": metadata})
    assert err["code"] == -32602 and err["data"]["field"] == "metadata"
    assert secret_class in err["message"] and "hunter2x" not in err["message"]
    assert refusing.result("meta/memory/query", {})["assertions"] == []


def test_a_short_number_under_a_password_key_does_not_run_on_into_the_next_key() -> None:
    # ``{"password": 12}`` then ``note``: read apart, not as the value ``12}note``
    assert scan_values({"metadata": {"password": 12, "note": "ask the admin"}}) is None
    assert scan_values({"metadata": {"pin_password": [7, 12], "hint": "abc"}}) is None


def test_ordinary_nested_metadata_is_kept(gateway: Any) -> None:
    metadata = {"password_policy": {"rules": ["rotate yearly", "12 characters"]}, "token_count": [412, 9000],
                "password": {"min_length": 12}, "keys": {"primary": "the blue one"}, "tokens": {"used": 1234}}
    out = gateway.result("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": "Policy", "body": "noted", "metadata": metadata})
    listed = gateway.result("meta/agent_memory/list", {"identity": IDENTITY})["records"]
    assert [r["metadata"] for r in listed if r["memory_id"] == out["memory_id"]] == [metadata]
    assert gateway.result("meta/memory/index", {"entity": "identity:ops", "topic": "policy", "fact": "noted",
                                                "metadata": metadata})


_containers = st.lists(st.sampled_from(["list", "object"]), max_size=5)
_pad = st.sampled_from(["", " ", "\t", "  "])


def _wrap(value: Any, shape: list[str], filler: Any) -> Any:
    for kind in reversed(shape):
        value = [filler, value] if kind == "list" else {"note": filler, "v": value}
    return value


@settings(max_examples=150, deadline=None)
@given(key=_keys, shape=_containers, path=_names, before=_pad, after=_pad,
       value=st.sampled_from(["Xy7pQ2rT9wLm4nB8kZ3v", 9007199254740991]))
def test_any_nesting_between_a_credential_key_and_its_value_is_refused(
        key: str, shape: list[str], path: list[str], before: str, after: str, value: Any) -> None:
    metadata: Any = {before + key + after: _wrap(value, shape, "ok")}
    for name in reversed(path):
        metadata = {name: metadata}
    assert scan_values({"metadata": metadata}) is not None


_prose = st.sampled_from(["rotate yearly", "at least 12 characters", "ask the admin", "see the wiki page"])


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(["password_policy", "token_count", "api_key_rotation_days", "passwords_reset",
                            "secret_santa", "keynote", "tokens_used"]),
       shape=_containers, value=st.one_of(_prose, st.integers(0, 10**6)))
def test_ordinary_metadata_at_any_nesting_is_accepted(key: str, shape: list[str], value: Any) -> None:
    assert scan_values({"metadata": {key: _wrap(value, shape, "n/a"), "source": "chat", "turn": 3}}) is None


def test_pairing_is_bounded_at_the_metadata_cap(refusing: GatewayProcess) -> None:
    # about the most values 8 KiB of canonical JSON holds, under as many nested credential keys as fit
    values = list(range(100, 100 + 1600))
    metadata = {"password": {"secret": {"api_key": values}}}
    pairs = json_strings(metadata)
    assert sum(s.count("\n") for s in pairs) == 3 * len(values)  # each value paired with each key above it
    deep: Any = {"password": [[[[[[[["hunter2x"]]]]]]]]}  # deeper than a stored value can nest: not paired
    assert not any("hunter2x" in s and "password" in s for s in json_strings(deep))
    many = {"password": [str(i) for i in range(10_000)]}
    assert max(s.count("\n") for s in json_strings(many)) == MAX_PAIRED_VALUES
    err = refusing.error("meta/agent_memory/remember",
                         {"identity": IDENTITY, "title": "t", "body": "b", "metadata": metadata})
    assert err["data"]["reason"] == "secret_detected", err
