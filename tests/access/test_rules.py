"""The per-RPC requirement table and authorize()."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy, ReadOnlyConsole
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.resources import IdentityAttributes, Resource, Resources, shared_naming
from meta_memory.access.rules import PANEL_METHODS, RULES, UNGATED_METHODS, authorize, required_actions
from meta_memory.errors import AccessDenied, InvalidParams

ALICE = Principal("alice")


def acts(method: str, params: Any, resources: Resources | None = None) -> list[tuple[str, str]]:
    return [(r.action, r.resource.label) for r in required_actions(method, params, resources)]


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("meta/agent_memory/remember", [("agent.memory.write", "identity:lead:main")]),
        ("meta/agent_memory/update", [("agent.memory.write", "identity:lead:main")]),
        ("meta/agent_memory/forget", [("agent.memory.delete", "identity:lead:main")]),
        ("meta/agent_memory/recall", [("agent.memory.read", "identity:lead:main"), ("agent.view", "identity:lead:main")]),
        ("meta/agent_memory/manifest", [("agent.memory.read", "identity:lead:main"), ("agent.view", "identity:lead:main")]),
        ("meta/turn/inject", [("agent.memory.read", "identity:lead:main"), ("agent.view", "identity:lead:main")]),
    ],
)
def test_agent_memory_methods(method: str, expected: list) -> None:
    assert acts(method, {"identity": " lead:main ", "realm": "r1"}) == expected


def test_identity_is_logical_and_named_the_console_way() -> None:
    shared = Resources(naming=shared_naming)
    assert acts("meta/agent_memory/remember", {"identity": "rt:lead:main:3", "realm": "r1"}, shared) == [
        ("agent.memory.write", "identity:r1/lead:main")
    ]
    assert acts("meta/agent_memory/forget", {"identity": "x"}, shared) == [("agent.memory.delete", "identity:default/x")]


def test_identity_attributes_come_from_the_directory() -> None:
    attrs = IdentityAttributes(frozenset({"support"}))
    res = Resources(directory=lambda realm, ident: attrs if ident == "known" else None)
    assert required_actions("meta/agent_memory/remember", {"identity": "known"}, res)[0].resource.attributes == attrs
    assert required_actions("meta/agent_memory/remember", {"identity": "other"}, res)[0].resource.attributes is None


@pytest.mark.parametrize(
    ("verdict", "last"), [("release", "agent.memory.write"), (" tombstone ", "agent.memory.delete")]
)
def test_quarantine_decide(verdict: str, last: str) -> None:
    got = acts("meta/memory/quarantine/decide", {"identity": "lead:main", "verdict": verdict})
    assert [a for a, _ in got] == ["memory.quarantine.review", "agent.view", "agent.memory.read", last]
    assert {r for _, r in got} == {"identity:lead:main"}


@pytest.mark.parametrize(("verdict", "msg"), [("hold", "(got 'hold')"), (1, "must be 'release' or 'tombstone'"), (None, "must be")])
def test_quarantine_decide_bad_verdict(verdict: Any, msg: str) -> None:
    with pytest.raises(InvalidParams) as info:
        required_actions("meta/memory/quarantine/decide", {"identity": "a", "verdict": verdict})
    assert msg in info.value.message and info.value.field == "verdict"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"action": "remember"}, ["agent.memory.write"]),
        ({"action": "update"}, ["agent.memory.write"]),
        ({"action": "propose_to_mob"}, ["agent.memory.write"]),
        ({"action": "forget"}, ["agent.memory.delete"]),
        ({"action": "recall"}, ["agent.memory.read", "agent.view"]),
        ({"action": "dance"}, ["agent.memory.write"]),
        (None, ["agent.memory.write"]),
    ],
)
def test_recorder_tool(args: Any, expected: list[str]) -> None:
    got = acts("meta/agent_memory/tool", {"identity": "a", "session_key": "s", "arguments": args})
    assert [a for a, _ in got] == expected


def test_invalid_identity_and_realm_refused() -> None:
    with pytest.raises(InvalidParams, match="identity must be a valid non-empty string"):
        required_actions("meta/agent_memory/recall", {"identity": "  "})
    with pytest.raises(InvalidParams, match="realm must be a non-empty string"):
        required_actions("meta/agent_memory/recall", {"identity": "a", "realm": ""})
    with pytest.raises(InvalidParams, match="params must be an object"):
        required_actions("meta/agent_memory/recall", ["a"])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, []),
        ({"status": "quarantined"}, []),
        ({"identity": "a"}, [("agent.memory.read", "identity:a"), ("agent.view", "identity:a")]),
        ({"scope": "identity", "scope_key": "a"}, [("agent.memory.read", "identity:a"), ("agent.view", "identity:a")]),
        ({"scope": "identity"}, []),
        ({"scope": "mob", "scope_key": "m"}, [("mob.memory.read", "mob:m")]),
        ({"scope": "mob"}, []),
        ({"scope": "operator"}, [("operator.memory.read", "operator:")]),
        ({"scope": "realm", "realm": "r"}, [("agent.memory.read", "realm:r")]),
    ],
)
def test_panel_records_gates(params: dict, expected: list) -> None:
    assert acts("meta/memory/panel/records", params) == expected


def test_panel_records_gate_skipped_without_realm_on_shared_console() -> None:
    shared = Resources(naming=shared_naming)
    assert acts("meta/memory/panel/records", {"identity": "a"}, shared) == []
    assert acts("meta/memory/panel/records", {"identity": "a", "realm": "r"}, shared) == [
        ("agent.memory.read", "identity:r/a"),
        ("agent.view", "identity:r/a"),
    ]


def test_panel_records_unknown_scope() -> None:
    with pytest.raises(InvalidParams, match="unknown scope 'team'"):
        required_actions("meta/memory/panel/records", {"scope": "team"})


def test_panel_realm_level_reads_need_unscoped_read() -> None:
    for name in ("dreams", "dream_runs", "audit_verdicts", "overview", "proposals", "injections", "harvests"):
        assert acts(f"meta/memory/panel/{name}", {"realm": "x"}) == [("agent.memory.read", "*")]
    assert required_actions("meta/memory/panel/quarantine", None)[0] == ("memory.quarantine.review", Resource.anywhere())
    assert required_actions("meta/memory/panel/record", {"memory_id": "m"}) == []
    assert set(PANEL_METHODS) <= set(RULES)


def test_unknown_methods_fail_closed() -> None:
    with pytest.raises(KeyError):
        required_actions("meta/memory/panel/secret", {})
    for method in UNGATED_METHODS:
        assert required_actions(method, {}) == []


def _policy(**kw: Any) -> AccessPolicy:
    return AccessPolicy(parse_access_section({"enabled": True, **kw}))


def test_authorize_reports_the_first_missing_grant() -> None:
    p = _policy(grants=[{"action": "memory.quarantine.review", "who": {"principal": "alice"}, "on": {"identity": "a"}},
                        {"action": "agent.view", "who": {"anyone": True}}])
    params = {"identity": "a", "verdict": "release", "memory_id": "m", "expected_content_hash": "h"}
    with pytest.raises(AccessDenied) as info:
        authorize(p, ALICE, "meta/memory/quarantine/decide", params)
    assert info.value.action == "agent.memory.read" and info.value.resource == "identity:a"
    with pytest.raises(AccessDenied) as info:
        authorize(p, ANONYMOUS, "meta/memory/quarantine/decide", params)
    assert info.value.action == "memory.quarantine.review"


def test_authorize_allows_a_fully_granted_decision() -> None:
    grants = [{"action": a, "who": {"principal": "alice"}, "on": {"identity": "a"}}
              for a in ("memory.quarantine.review", "agent.view", "agent.memory.read", "agent.memory.delete")]
    p = _policy(grants=grants)
    authorize(p, ALICE, "meta/memory/quarantine/decide", {"identity": "a", "verdict": "tombstone"})
    with pytest.raises(AccessDenied, match="agent.memory.write"):
        authorize(p, ALICE, "meta/memory/quarantine/decide", {"identity": "a", "verdict": "release"})


def test_read_only_console_refuses_mutations_whatever_the_grants() -> None:
    for p in (_policy(read_only=True, grants=[{"action": "agent.memory.write", "who": {"anyone": True}}]),
              AccessPolicy(parse_access_section({"enabled": False, "read_only": True}))):
        with pytest.raises(ReadOnlyConsole):
            authorize(p, ALICE, "meta/agent_memory/remember", {"identity": "a"})
        with pytest.raises(ReadOnlyConsole) as info:
            authorize(p, ALICE, "meta/memory/quarantine/decide", {"identity": "a", "verdict": "release"})
        assert info.value.action == "memory.quarantine.review"
    ro = _policy(read_only=True, grants=[{"action": "agent.memory.read", "who": {"anyone": True}}, {"action": "agent.view", "who": {"anyone": True}}])
    authorize(ro, ALICE, "meta/agent_memory/recall", {"identity": "a"})
    authorize(ro, ALICE, "meta/memory/panel/overview", {})


def test_access_off_authorizes_everything() -> None:
    p = AccessPolicy()
    for method in RULES:
        params = {"identity": "a", "verdict": "release", "scope": "realm"}
        authorize(p, ANONYMOUS, method, params)
