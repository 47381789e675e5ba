"""Bearer-token authentication."""

from __future__ import annotations

import pytest

from meta_memory.access.config import hash_token, parse_access_section
from meta_memory.access.principal import ANONYMOUS, AuthenticationFailed, authenticate

TOKENS = [
    {"sha256": hash_token("alice-secret"), "principal": "alice", "roles": ["reviewer"], "labels": ["blue"]},
    {"sha256": hash_token("bob-secret"), "principal": "bob"},
]


def cfg(enabled: bool = True, tokens: list | None = None):
    return parse_access_section({"enabled": enabled, "tokens": TOKENS if tokens is None else tokens})


def test_valid_token_names_the_principal_with_roles_and_labels() -> None:
    p = authenticate("Bearer alice-secret", cfg())
    assert p.name == "alice" and not p.anonymous
    assert p.roles == frozenset({"reviewer"}) and p.labels == frozenset({"blue"})
    assert p.reviewer() == {"kind": "operator", "principal": "alice"}
    assert authenticate("bearer   bob-secret ", cfg()).name == "bob"


def test_no_tokens_configured_means_no_principal_known() -> None:
    for header in (None, "", "Bearer whatever", "garbage"):
        p = authenticate(header, cfg(tokens=[]))
        assert p is ANONYMOUS
    assert authenticate("Bearer x", None) is ANONYMOUS
    assert ANONYMOUS.display == "no principal known"
    assert ANONYMOUS.reviewer() == {"kind": "operator", "principal": None}


@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer alice-secretX", "Bearer ALICE-SECRET"])
def test_unknown_token_is_refused(header: str) -> None:
    with pytest.raises(AuthenticationFailed) as info:
        authenticate(header, cfg())
    assert info.value.status == 401 and info.value.reason == "unknown_token"
    assert header.split()[1] not in str(info.value)  # the presented token is never echoed


@pytest.mark.parametrize("header", ["Basic YWxpY2U6eA==", "Bearer", "Bearer ", "alice-secret", "Bearer a b", "Token alice-secret"])
def test_malformed_header_is_refused(header: str) -> None:
    with pytest.raises(AuthenticationFailed) as info:
        authenticate(header, cfg())
    assert info.value.reason == "malformed_header"
    assert info.value.www_authenticate.startswith("Bearer")


def test_missing_header_is_anonymous_under_access_control() -> None:
    assert authenticate(None, cfg(enabled=True)) is ANONYMOUS
    assert authenticate("   ", cfg(enabled=True)) is ANONYMOUS


def test_missing_header_refused_when_tokens_are_the_only_guard() -> None:
    with pytest.raises(AuthenticationFailed) as info:
        authenticate(None, cfg(enabled=False))
    assert info.value.reason == "missing_token"
    assert authenticate("Bearer bob-secret", cfg(enabled=False)).name == "bob"
