"""AccessPolicy: grants, denies (deny wins), anonymous callers, unknown identity attributes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from access_strategies import configs, principals, resources, rule_dict, whos
from meta_memory.access.config import ACTIONS, AccessConfig, parse_access_section
from meta_memory.access.policy import AccessPolicy, ReadOnlyConsole
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.resources import IdentityAttributes, Resource
from meta_memory.errors import AccessControlNotConfigured, AccessDenied

ALICE = Principal("alice", frozenset({"reviewer"}), frozenset({"blue"}))
BOB = Principal("bob")
KNOWN_I1 = Resource("identity", "i1", IdentityAttributes(frozenset({"support"}), frozenset({"secret"})))
KNOWN_I2 = Resource("identity", "i2", IdentityAttributes())
UNKNOWN_I9 = Resource("identity", "i9", None)
MOB = Resource("mob", "m1")
OPERATOR = Resource("operator", "ops")
REALM = Resource("realm", "default")
UNSCOPED = Resource.unscoped()
ALL = [KNOWN_I1, KNOWN_I2, UNKNOWN_I9, MOB, Resource("mob", "m2"), OPERATOR, REALM, UNSCOPED]


def policy(grants: list[dict[str, Any]] = (), denies: list[dict[str, Any]] = (), **kw: Any) -> AccessPolicy:
    return AccessPolicy(parse_access_section({"enabled": True, "grants": list(grants), "denies": list(denies), **kw}))


def g(action: str, who: dict[str, Any] | None = None, on: dict[str, Any] | None = None) -> dict[str, Any]:
    return rule_dict(action, who or {"anyone": True}, on)


def allowed(p: AccessPolicy, principal: Principal, action: str) -> list[Resource]:
    return [r for r in ALL if p.check(principal, action, r)]


def test_access_off_allows_everything_even_with_denies() -> None:
    p = AccessPolicy(parse_access_section({"enabled": False, "denies": [g("agent.view")]}))
    assert all(p.check(ANONYMOUS, a, r) for a in ACTIONS for r in ALL)
    assert AccessPolicy().check(BOB, "agent.memory.write", KNOWN_I1)


def test_access_on_without_rules_refuses_everything() -> None:
    p = policy()
    assert not any(p.check(ALICE, a, r) for a in ACTIONS for r in ALL)


def test_unscoped_grant_covers_every_resource() -> None:
    p = policy([g("agent.memory.read", {"principal": "alice"})])
    assert allowed(p, ALICE, "agent.memory.read") == ALL
    assert allowed(p, BOB, "agent.memory.read") == []
    assert allowed(p, ALICE, "agent.view") == []


def test_identity_grant_covers_only_that_identity() -> None:
    p = policy([g("agent.memory.read", on={"identity": "i1"})])
    assert allowed(p, BOB, "agent.memory.read") == [KNOWN_I1]


def test_mob_grant_covers_only_that_mob() -> None:
    p = policy([g("mob.memory.read", on={"mob": "m1"})])
    assert allowed(p, BOB, "mob.memory.read") == [MOB]


def test_role_and_label_scopes_match_known_identity_attributes_only() -> None:
    p = policy([g("agent.view", on={"role": "support"}), g("agent.memory.read", on={"label": "secret"})])
    assert allowed(p, BOB, "agent.view") == [KNOWN_I1]
    assert allowed(p, BOB, "agent.memory.read") == [KNOWN_I1]


def test_operator_and_realm_rows_need_unscoped_grants() -> None:
    scoped = policy([g("agent.memory.read", on=on) for on in ({"identity": "i1"}, {"mob": "m1"}, {"role": "support"}, {"label": "secret"})])
    assert not scoped.check(ALICE, "agent.memory.read", REALM)
    assert not scoped.check(ALICE, "agent.memory.read", UNSCOPED)
    assert not policy([g("operator.memory.read", on={"identity": "ops"})]).check(ALICE, "operator.memory.read", OPERATOR)
    assert policy([g("operator.memory.read")]).check(ALICE, "operator.memory.read", OPERATOR)


@pytest.mark.parametrize(
    ("who", "matches"),
    [
        ({"principal": "alice"}, {"alice"}),
        ({"role": "reviewer"}, {"alice"}),
        ({"label": "blue"}, {"alice"}),
        ({"anyone": True}, {"alice", "bob", None}),
    ],
)
def test_who_selectors(who: dict[str, Any], matches: set[str | None]) -> None:
    p = policy([g("agent.view", who)])
    got = {pr.name for pr in (ALICE, BOB, ANONYMOUS) if p.check(pr, "agent.view", KNOWN_I2)}
    assert got == matches


def test_anonymous_never_matches_named_selectors_even_if_names_collide() -> None:
    ghost = Principal(None, frozenset({"reviewer"}), frozenset({"blue"}), anonymous=True)
    p = policy([g("agent.view", {"role": "reviewer"}), g("agent.view", {"label": "blue"})])
    assert not p.check(ghost, "agent.view", KNOWN_I2)
    assert p.check(ALICE, "agent.view", KNOWN_I2)


def test_deny_wins_over_grants() -> None:
    p = policy(
        [g("agent.memory.read", {"principal": "alice"}), g("agent.memory.read", {"principal": "alice"}, {"identity": "i1"})],
        [g("agent.memory.read", {"role": "reviewer"}, {"identity": "i1"})],
    )
    assert not p.check(ALICE, "agent.memory.read", KNOWN_I1)
    assert p.check(ALICE, "agent.memory.read", KNOWN_I2)
    assert p.check(ALICE, "agent.memory.read", REALM)


def test_deny_for_someone_else_does_not_apply() -> None:
    p = policy([g("agent.memory.read")], [g("agent.memory.read", {"principal": "bob"})])
    assert p.check(ALICE, "agent.memory.read", KNOWN_I1)
    assert not p.check(BOB, "agent.memory.read", KNOWN_I1)


@pytest.mark.parametrize("on", [{"role": "support"}, {"label": "secret"}, {"identity": "i1"}])
@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_unknown_identity_withheld_under_scoped_deny_for_every_action(on: dict[str, str], action: str) -> None:
    p = policy([g(action)], [g(action, {"principal": "alice"}, on)])
    assert not p.check(ALICE, action, UNKNOWN_I9)
    assert p.check(BOB, action, UNKNOWN_I9)  # the deny does not apply to bob
    assert p.check(ALICE, action, KNOWN_I2)  # known attributes: the deny does not match i2


def test_unknown_identity_not_withheld_by_unscoped_realm_or_mob_denies_or_other_actions() -> None:
    p = policy(
        [g("agent.memory.write"), g("agent.memory.read")],
        [g("agent.memory.write", on={"role": "support"}), g("agent.memory.read", on={"mob": "m1"}),
         g("agent.memory.read", on={"realm": "hr"})],
    )
    assert not p.check(ALICE, "agent.memory.write", UNKNOWN_I9)
    assert not p.check(ALICE, "agent.memory.write", KNOWN_I1)
    assert p.check(ALICE, "agent.memory.write", KNOWN_I2)
    assert p.check(ALICE, "agent.memory.read", UNKNOWN_I9)  # a mob deny, a deny on another realm
    assert not p.check(ALICE, "agent.memory.write", Resource("identity", "i9", None, "hr"))


def test_anywhere_gate() -> None:
    p = policy([g("memory.quarantine.review", {"principal": "alice"}, {"identity": "i1"})])
    assert p.check(ALICE, "memory.quarantine.review", Resource.anywhere())
    assert not p.check(BOB, "memory.quarantine.review", Resource.anywhere())
    scoped_deny = policy([g("memory.quarantine.review")], [g("memory.quarantine.review", on={"identity": "i1"})])
    assert scoped_deny.check(ALICE, "memory.quarantine.review", Resource.anywhere())
    unscoped_deny = policy([g("memory.quarantine.review")], [g("memory.quarantine.review", {"principal": "alice"})])
    assert not unscoped_deny.check(ALICE, "memory.quarantine.review", Resource.anywhere())


def test_require_raises_access_denied_with_action_and_resource() -> None:
    p = policy([g("agent.view")])
    p.require(BOB, "agent.view", KNOWN_I1)
    with pytest.raises(AccessDenied) as info:
        p.require(BOB, "agent.memory.read", KNOWN_I1)
    err = info.value.to_jsonrpc()
    assert err["code"] == -32030 and err["message"] == "access denied: agent.memory.read"
    assert err["data"] == {"kind": "access_denied", "action": "agent.memory.read", "resource": "identity:i1"}
    with pytest.raises(AccessDenied) as info:
        p.require(BOB, "agent.memory.read", KNOWN_I1, resource_name="mem-1")
    assert info.value.resource == "mem-1"
    with pytest.raises(AccessDenied, match="agent.memory.write"):
        p.require_all(BOB, [("agent.view", KNOWN_I1), ("agent.memory.write", KNOWN_I1)])
    assert p.first_denied(BOB, [("agent.view", KNOWN_I1), ("agent.memory.read", KNOWN_I1)]) == "agent.memory.read"


def test_read_only_error_shape() -> None:
    err = ReadOnlyConsole("agent.memory.write", "identity:i1").to_jsonrpc()
    assert err["code"] == -32030 and err["message"] == "access denied: console is read-only"
    assert err["data"]["read_only"] is True and err["data"]["action"] == "agent.memory.write"


def test_requires_access_control() -> None:
    with pytest.raises(AccessControlNotConfigured) as info:
        AccessPolicy(AccessConfig()).requires_access_control()
    assert info.value.to_jsonrpc()["code"] == -32004
    policy().requires_access_control()


def test_can_read_memory_drives_the_nav_entry() -> None:
    assert AccessPolicy().can_read_memory(ANONYMOUS)
    assert not policy([g("agent.memory.write")]).can_read_memory(ALICE)
    assert policy([g("mob.memory.read", {"principal": "alice"}, {"mob": "m1"})]).can_read_memory(ALICE)
    assert not policy([g("mob.memory.read", {"principal": "alice"})]).can_read_memory(BOB)


def test_unknown_action_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        policy().check(ALICE, "agent.memory.eat", KNOWN_I1)


# ---------------------------------------------------------------- properties


@given(configs(), principals, st.sampled_from(sorted(ACTIONS)), resources)
def test_access_off_is_always_allowed(cfg: AccessConfig, principal: Principal, action: str, res: Resource) -> None:
    off = AccessPolicy(cfg.model_copy(update={"enabled": False}))
    assert off.check(principal, action, res)


@given(configs(enabled=True), principals, st.sampled_from(sorted(ACTIONS)), resources, whos)
def test_deny_always_wins(cfg: AccessConfig, principal: Principal, action: str, res: Resource, who: dict) -> None:
    """An unscoped deny that applies to the caller refuses even beside an unscoped grant to anyone;
    one that does not apply changes nothing."""
    with_grant = cfg.model_copy(update={"grants": cfg.grants + parse_access_section(
        {"grants": [rule_dict(action, {"anyone": True}, None)]}).grants})
    deny = parse_access_section({"denies": [rule_dict(action, who, None)]}).denies
    with_deny = with_grant.model_copy(update={"denies": with_grant.denies + deny})
    who_applies = "anyone" in who or (not principal.anonymous and (
        who.get("principal") == principal.name or who.get("role") in principal.roles or who.get("label") in principal.labels
    ))
    got = AccessPolicy(with_deny).check(principal, action, res)
    if who_applies:
        assert got is False
    else:
        assert got == AccessPolicy(with_grant).check(principal, action, res)


def _spec(cfg: AccessConfig, principal: Principal, action: str, res: Resource) -> bool:
    """The seed's rules restated rule by rule, as an oracle."""
    if not cfg.enabled:
        return True

    def who(rule) -> bool:
        w = rule.who
        if w.anyone:
            return True
        return not principal.anonymous and (
            w.principal == principal.name or w.role in principal.roles or w.label in principal.labels
        )

    def on(rule) -> bool:
        if rule.on is None:
            return True
        kind, value = rule.on.kind, rule.on.value
        if res.kind == "identity":
            attrs = res.attributes
            return (kind == "identity" and value == res.name) or (
                attrs is not None and ((kind == "role" and value in attrs.roles) or (kind == "label" and value in attrs.labels))
            )
        return res.kind == "mob" and kind == "mob" and value == res.name

    def withholds_unknown(rule) -> bool:
        return (res.kind == "identity" and res.attributes is None
                and rule.on is not None and rule.on.kind in ("role", "label", "identity"))

    if any(r.action == action and who(r) and (on(r) or withholds_unknown(r)) for r in cfg.denies):
        return False
    return any(r.action == action and who(r) and on(r) for r in cfg.grants)


@given(configs(), principals, st.sampled_from(sorted(ACTIONS)), resources)
def test_policy_matches_the_rules_as_written(cfg: AccessConfig, principal: Principal, action: str, res: Resource) -> None:
    assert AccessPolicy(cfg).check(principal, action, res) == _spec(cfg, principal, action, res)


@given(configs(enabled=True), st.sampled_from(sorted(ACTIONS)), resources)
def test_anonymous_sees_only_anyone_rules(cfg: AccessConfig, action: str, res: Resource) -> None:
    only_anyone = cfg.model_copy(
        update={
            "grants": tuple(r for r in cfg.grants if r.who.anyone),
            "denies": tuple(r for r in cfg.denies if r.who.anyone),
        }
    )
    assert AccessPolicy(cfg).check(ANONYMOUS, action, res) == AccessPolicy(only_anyone).check(ANONYMOUS, action, res)


@given(configs(enabled=True), configs(enabled=True), principals, st.sampled_from(sorted(ACTIONS)), resources)
def test_grants_only_widen_and_denies_only_narrow(a: AccessConfig, b: AccessConfig, principal: Principal, action: str, res: Resource) -> None:
    base = AccessPolicy(a).check(principal, action, res)
    more_grants = AccessPolicy(a.model_copy(update={"grants": a.grants + b.grants}))
    more_denies = AccessPolicy(a.model_copy(update={"denies": a.denies + b.denies}))
    if base:
        assert more_grants.check(principal, action, res)
    else:
        assert not more_denies.check(principal, action, res)


@given(configs(enabled=True), principals, st.sampled_from(sorted(ACTIONS)), resources)
def test_no_grant_no_access(cfg: AccessConfig, principal: Principal, action: str, res: Resource) -> None:
    assert not AccessPolicy(cfg.model_copy(update={"grants": ()})).check(principal, action, res)


_REALMS = st.sampled_from(["default", "hr", "ops"])
_SCOPED_ON = st.one_of(
    st.builds(lambda i: {"identity": i}, st.sampled_from(["i1", "i2"])),
    st.builds(lambda m: {"mob": m}, st.sampled_from(["m1", "m2"])),
    st.just({"label": "secret"}),
)


@given(on=_SCOPED_ON, rule_realm=st.one_of(st.none(), _REALMS), realm=_REALMS, kind=st.sampled_from(["identity", "mob"]),
       name=st.sampled_from(["i1", "i2", "m1", "m2"]))
def test_a_scoped_grant_never_reaches_past_its_realm_and_a_scoped_deny_never_misses_one(
        on: dict[str, str], rule_realm: str | None, realm: str, kind: str, name: str) -> None:
    scoped = {**on, **({"realm": rule_realm} if rule_realm else {})}
    attrs = IdentityAttributes(frozenset(), frozenset({"secret"})) if kind == "identity" else None
    res = Resource(kind, name, attrs, realm)  # type: ignore[arg-type]
    grant = policy([g("agent.view", {"principal": "bob"}, scoped)])
    if grant.check(BOB, "agent.view", res):
        assert realm == (rule_realm or "default")
    deny = policy([g("agent.view", {"principal": "bob"})], [g("agent.view", {"principal": "bob"}, scoped)])
    same_target = policy([g("agent.view", {"principal": "bob"}, {**on, "realm": "*"})]).check(BOB, "agent.view", res)
    if same_target and (rule_realm is None or rule_realm == realm):
        assert not deny.check(BOB, "agent.view", res)
