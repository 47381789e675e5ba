"""Every method declares its requirement in its own registration, judged on the parsed params."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy, ReadOnlyConsole
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.requirements import Requires, authorize
from meta_memory.access.resources import Resources
from meta_memory.errors import AccessDenied
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.registry import MethodTable

TABLE = build_method_table()
SPECS = {s.name: s for s in TABLE.specs()}

#: Valid params per method, enough to parse (identity/realm where the method takes them).
PARAMS: dict[str, Any] = {
    "meta/agent_memory/remember": {"identity": "lead:main", "realm": "hr", "title": "t", "body": "b"},
    "meta/agent_memory/remember_batch": {"identity": "lead:main", "realm": "hr",
                                         "records": [{"title": "t", "body": "b"}]},
    "meta/agent_memory/update": {"identity": "lead:main", "realm": "hr", "memory_id": "m", "title": "t", "body": "b"},
    "meta/agent_memory/forget": {"identity": "lead:main", "realm": "hr", "memory_id": "m"},
    "meta/agent_memory/recall": {"identity": "lead:main", "realm": "hr"},
    "meta/agent_memory/manifest": {"identity": "lead:main", "realm": "hr"},
    "meta/agent_memory/list": {"identity": "lead:main", "realm": "hr"},
    "meta/agent_memory/history": {"identity": "lead:main", "realm": "hr", "memory_id": "m"},
    "meta/agent_memory/erase": {"identity": "lead:main", "memory_id": "m"},
    "meta/agent_memory/erase_identity": {"identity": "lead:main"},
    "meta/agent_memory/tool": {"identity": "lead:main", "arguments": {"action": "recall", "query": "x"}},
    "meta/agent_memory/tool_schema": None,
    "meta/capabilities": None,
    "rpc.discover": None,
    "meta/events/list": {},
    "meta/gating/check": {"entity": "e", "topic": "t"},
    "meta/gating/decide": {"pending_id": "p", "decision": "deny"},
    "meta/memory/index": {"entity": "e", "topic": "t", "fact": "v"},
    "meta/memory/query": {},
    "meta/memory/stores": {},
    "meta/memory/resolve": {"entity": "e", "topic": "t"},
    "meta/memory/proposals/decide": {"proposal_id": "p", "action": "hold"},
    "meta/memory/proposals/list": {},
    "meta/memory/quarantine/decide": {"identity": "lead:main", "memory_id": "m", "verdict": "release",
                                      "expected_content_hash": "ab" * 32},
    "meta/memory/steward/dream": {},
    "meta/session/compacted": {"identity": "lead:main", "session_key": "s"},
    "meta/session/note": {"identity": "lead:main", "session_key": "s"},
    "meta/session/reset": {"identity": "lead:main", "session_key": "s"},
    "meta/session/retire": {"identity": "lead:main", "cause": "done"},
    "meta/status": None,
    "meta/storage/doctor": None,
    "meta/storage/backup": {"dest": "/var/backups/meta/one"},
    "meta/storage/export": {},
    "meta/turn/defang": {"text": "hi"},
    "meta/turn/inject": {"identity": "lead:main", "realm": "hr"},
    "meta/turn/tool_result": {"identity": "lead:main", "session_key": "s", "tool_name": "web_fetch"},
    **{f"meta/memory/panel/{m}": {} for m in (
        "records", "quarantine", "dreams", "dream_runs", "audit_verdicts", "overview", "proposals",
        "injections", "harvests")},
    "meta/memory/panel/record": {"memory_id": "m"},
}
#: Methods that need no grant at all, deliberately. Adding one is a reviewed decision.
PUBLIC = {"meta/capabilities", "rpc.discover"}
#: Methods whose entry is open because the handler judges every row it returns.
ROW_JUDGED = {"meta/memory/panel/record", "meta/memory/panel/records"}


def parsed(name: str) -> Any:
    return SPECS[name].parse(PARAMS[name])


def test_every_registered_method_declares_a_requirement_and_mutating() -> None:
    assert set(SPECS) == set(PARAMS), "give every method a params example here"
    for name, spec in SPECS.items():
        assert isinstance(spec.requires, Requires), name
        assert spec.requires.describe, name
        assert isinstance(spec.mutating, bool) or callable(spec.mutating), name
    assert {n for n, s in SPECS.items() if s.requires.public} == PUBLIC


def test_a_registration_without_a_declaration_is_refused() -> None:
    table = MethodTable()
    with pytest.raises(TypeError):
        table.method("x/y")(lambda rt, ctx, p: None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="requires"):
        table.method("x/y", requires=None, mutating=False)(lambda rt, ctx, p: None)  # type: ignore[arg-type]


def _policy(**section: Any) -> AccessPolicy:
    return AccessPolicy(parse_access_section({"enabled": True, **section}))


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_anonymous_without_grants_is_refused_every_gated_method(name: str) -> None:
    policy, res = _policy(), Resources()
    if name in PUBLIC | ROW_JUDGED:
        authorize(policy, ANONYMOUS, SPECS[name], parsed(name), res)
        return
    with pytest.raises(AccessDenied):
        authorize(policy, ANONYMOUS, SPECS[name], parsed(name), res)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_read_only_refuses_every_state_change_whatever_the_grants(name: str) -> None:
    every = [{"action": a, "who": {"anyone": True}} for a in sorted(__import__("meta_memory.access.config",
                                                                                fromlist=["ACTIONS"]).ACTIONS)]
    policy = _policy(read_only=True, grants=every)
    spec, p = SPECS[name], parsed(name)
    if spec.is_mutating(p):
        with pytest.raises(ReadOnlyConsole):
            authorize(policy, ANONYMOUS, spec, p, Resources())
    else:
        authorize(policy, ANONYMOUS, spec, p, Resources())


def test_state_changing_methods_are_declared_so() -> None:
    writes = {n for n in PARAMS if SPECS[n].is_mutating(parsed(n))}
    assert {"meta/memory/index", "meta/memory/resolve", "meta/session/note", "meta/session/reset", "meta/session/compacted",
            "meta/turn/tool_result", "meta/session/retire", "meta/agent_memory/remember",
            "meta/memory/quarantine/decide", "meta/gating/decide"} <= writes
    assert not writes & {"meta/status", "meta/memory/query", "meta/gating/check", "meta/agent_memory/recall"}
    erase = SPECS["meta/agent_memory/erase_identity"]
    assert erase.is_mutating(erase.parse({"identity": "x"}))
    assert not erase.is_mutating(erase.parse({"identity": "x", "dry_run": True}))
    tool = SPECS["meta/agent_memory/tool"]
    assert tool.is_mutating(tool.parse({"identity": "x", "arguments": {"action": "Remember"}}))
    assert not tool.is_mutating(tool.parse({"identity": "x", "arguments": {"action": " RECALL "}}))


def _needs(name: str, params: Any) -> list[tuple[str, str]]:
    spec = SPECS[name]
    return [(r.action, r.resource.label) for r in spec.requires(spec.parse(params), Resources())]


def test_identity_requirements_are_realm_qualified() -> None:
    assert _needs("meta/agent_memory/recall", {"identity": "rt:lead:main:3", "realm": "hr"}) == [
        ("agent.memory.read", "identity:hr/lead:main"), ("agent.view", "identity:hr/lead:main")]
    x = "identity:default/x"
    sight = [("agent.memory.read", x), ("agent.view", x)]
    # a write's answer tells what the identity holds: it also needs what reading the identity needs
    assert _needs("meta/agent_memory/forget", {"identity": "x", "memory_id": "m"}) == [
        ("agent.memory.delete", x), *sight]
    assert _needs("meta/agent_memory/update", {"identity": "x", "memory_id": "m", "body": "b"}) == [
        ("agent.memory.write", x), *sight]
    assert _needs("meta/agent_memory/remember", {"identity": "x", "title": "t", "body": "b"}) == [
        ("agent.memory.write", x), *sight]
    assert _needs("meta/agent_memory/remember_batch", {"identity": "x", "records": [{"title": "t", "body": "b"}],
                                                       "derived_from_sessions": ["s"]}) == [
        ("agent.memory.write", x), *sight, ("agent.session.manage", x)]
    # a tool write passes the session's write gate, whose verdict its reply tells
    session = ("agent.session.manage", x)
    assert _needs("meta/agent_memory/tool", {"identity": "x", "arguments": {"action": "forget"}}) == [
        ("agent.memory.delete", x), *sight, session]
    assert _needs("meta/agent_memory/tool", {"identity": "x", "arguments": {"action": "nonsense"}}) == [
        ("agent.memory.write", x), *sight, session]
    assert _needs("meta/agent_memory/tool", {"identity": "x", "mob": "research",
                                             "arguments": {"action": "propose_to_mob"}}) == [
        ("agent.memory.write", x), *sight, session, ("mob.memory.propose", "mob:default/research")]
    assert _needs("meta/agent_memory/tool", {"identity": "x", "arguments": {"action": "recall"}}) == sight
    # a recall naming the mob searches its records too: what lets a build list them
    assert _needs("meta/agent_memory/tool", {"identity": "x", "realm": "hr", "mob": "research",
                                             "arguments": {"action": "recall"}}) == [
        ("agent.memory.read", "identity:hr/x"), ("agent.view", "identity:hr/x"),
        ("mob.memory.read", "mob:hr/research")]
    assert _needs("meta/agent_memory/erase", {"identity": "x", "realm": "hr", "memory_id": "m"}) == [
        ("agent.memory.erase", "identity:hr/x")]
    assert [a for a, _ in _needs("meta/memory/quarantine/decide", {**PARAMS["meta/memory/quarantine/decide"],
                                                                   "verdict": " tombstone "})] == [
        "memory.quarantine.review", "agent.view", "agent.memory.read", "agent.memory.delete"]
    assert _needs("meta/memory/panel/records", {"identity": "lead:main", "realm": "hr"}) == [
        ("agent.memory.read", "identity:hr/lead:main"), ("agent.view", "identity:hr/lead:main")]
    assert _needs("meta/memory/panel/records", {"identity": "lead:main"}) == []  # rows judged per realm
    assert _needs("meta/memory/panel/records", {"scope": "realm"}) == [("agent.memory.read", "*")]


def test_a_grant_on_the_identity_does_not_reach_another_realm() -> None:
    bob = Principal("bob")
    grants = [{"action": a, "who": {"principal": "bob"}, "on": {"identity": "lead:main"}}
              for a in ("agent.memory.read", "agent.view")]
    policy, spec = _policy(grants=grants), SPECS["meta/agent_memory/recall"]
    authorize(policy, bob, spec, spec.parse({"identity": "lead:main"}), Resources())
    with pytest.raises(AccessDenied) as info:
        authorize(policy, bob, spec, spec.parse({"identity": "lead:main", "realm": "hr"}), Resources())
    assert info.value.data["resource"] == "identity:hr/lead:main"


def test_the_rpc_docs_list_every_method_with_its_writes_column() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "rpc.md").read_text(encoding="utf-8")
    section = text[text.index("## Access actions"):]
    rows = [line for line in section.splitlines() if line.startswith("| `meta/")]
    for name, spec in SPECS.items():
        row = next((r for r in rows if f"`{name}`" in r), None)
        assert row is not None, f"{name} missing from docs/rpc.md#access-actions"
        writes = row.rstrip(" |").rsplit("|", 1)[1].strip()
        if isinstance(spec.mutating, bool):
            assert writes.startswith("yes" if spec.mutating else "no"), (name, writes)


def test_the_actions_serve_warns_of_scoping_are_the_ones_every_method_judges_unscoped() -> None:
    """``UNSCOPED_ACTIONS`` (a rule with ``on`` never applies to them: ``serve`` warns) are exactly the
    actions every declaration judges on the unscoped resource alone; ``COPY_ACTIONS`` are judged unscoped
    first, then on what is copied."""
    from meta_memory.access.config import COPY_ACTIONS, UNSCOPED_ACTIONS

    kinds: dict[str, set[str]] = {}
    firsts: dict[str, set[str]] = {}
    for name, spec in SPECS.items():
        seen: set[str] = set()
        for need in spec.requires(parsed(name), Resources()):
            kinds.setdefault(need.action, set()).add(need.resource.kind)
            if need.action not in seen:
                firsts.setdefault(need.action, set()).add(need.resource.kind)
                seen.add(need.action)
    assert {a for a, k in kinds.items() if k == {"unscoped"}} == UNSCOPED_ACTIONS
    assert {a for a, k in firsts.items() if k == {"unscoped"}} == UNSCOPED_ACTIONS | COPY_ACTIONS
