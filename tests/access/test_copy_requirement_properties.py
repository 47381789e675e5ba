"""Properties of the requirement of an operator's copy (``copy_of``, ``Resource.every``): a copy is
allowed only when every scope it could hold is itself allowed (no deny bypassed, unlisted identities
included), and a caller with an unscoped grant that no deny reaches copies anything."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access_strategies import IDENTITIES, LABELS, MOBS, ROLES, principals, rule_dict, whos
from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy, CopyDenied, _who_matches
from meta_memory.access.principal import Principal
from meta_memory.access.requirements import authorize, copy_of
from meta_memory.access.resources import IdentityAttributes, Resource, Resources
from meta_memory.errors import AccessDenied

BACKUP = "operator.backup"
REALMS = ["default", "hr", "ops"]
#: i1 listed in default, i2 in hr, i3 nowhere, "zz" an identity no rule or roster names.
ROSTER = {("default", "i1"): IdentityAttributes(frozenset({"r1"}), frozenset({"l1"})),
          ("hr", "i2"): IdentityAttributes(frozenset({"r2"}), frozenset({"l2"}))}
RESOURCES = Resources(lambda realm, ident: ROSTER.get((realm, ident)), "default")
SPEC = SimpleNamespace(name="meta/storage/export", requires=copy_of(BACKUP), is_mutating=lambda p: False)

realm_part = st.one_of(st.just({}), st.sampled_from([*REALMS, "*"]).map(lambda r: {"realm": r}))
selector = st.one_of(
    st.none(),
    st.just({}),  # realm alone (with a realm drawn) or dropped
    st.sampled_from(IDENTITIES).map(lambda v: {"identity": v}),
    st.sampled_from(MOBS).map(lambda v: {"mob": v}),
    st.sampled_from(ROLES).map(lambda v: {"role": v}),
    st.sampled_from(LABELS).map(lambda v: {"label": v}),
)


@st.composite
def scoped(draw: st.DrawFn) -> dict[str, Any] | None:
    sel = draw(selector)
    if sel is None:
        return None
    on = sel | draw(realm_part)
    return on or None


rules = st.lists(st.builds(rule_dict, st.just(BACKUP), whos, scoped()), max_size=5)
params = st.builds(lambda r, i: SimpleNamespace(export_id=None, realm=r, identity=i),
                   st.sampled_from([None, *REALMS]), st.sampled_from([None, *IDENTITIES, "zz"]))


def copied(p: Any) -> list[Resource]:
    """Every scope the copy named by ``p`` could hold."""
    realms = [p.realm] if p.realm is not None else REALMS
    out: list[Resource] = []
    for realm in realms:
        if p.identity is not None:
            out.append(RESOURCES.identity(realm, p.identity))
            continue
        out += [RESOURCES.identity(realm, i) for i in [*IDENTITIES, "zz"]]
        out += [RESOURCES.mob(realm, m) for m in MOBS]
        out += [RESOURCES.operator(realm, "op"), RESOURCES.realm(realm)]
    return out


def allowed(policy: AccessPolicy, principal: Any, p: Any) -> bool:
    try:
        authorize(policy, principal, SPEC, p, RESOURCES)
    except AccessDenied:
        return False
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grants=rules, denies=rules, principal=principals, p=params)
def test_a_copy_is_allowed_only_when_every_scope_it_holds_is(grants: list, denies: list, principal: Any,
                                                             p: Any) -> None:
    policy = AccessPolicy(parse_access_section({"enabled": True, "grants": grants, "denies": denies}), "default")
    if allowed(policy, principal, p):
        assert policy.check(principal, BACKUP, Resource.unscoped())
        for res in copied(p):
            assert policy.check(principal, BACKUP, res), res


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grants=rules, denies=rules, principal=principals, p=params)
def test_an_unscoped_grant_no_deny_reaches_copies_anything(grants: list, denies: list, principal: Any,
                                                           p: Any) -> None:
    policy = AccessPolicy(parse_access_section({"enabled": True, "grants": grants, "denies": denies}), "default")
    if not any(_who_matches(rule.who, principal) for rule in policy.config.denies):
        assert allowed(policy, principal, p) == policy.check(principal, BACKUP, Resource.unscoped())


@pytest.mark.parametrize("p, hint", [
    (SimpleNamespace(export_id=None, realm=None, identity=None), "name its realm and identity"),
    (SimpleNamespace(export_id=None, realm="hr", identity=None), "export one identity: name it as well"),
    (SimpleNamespace(export_id=None, realm=None, identity="i1"), "name its realm too"),
])
def test_the_refusal_of_a_copy_says_what_to_name(p: Any, hint: str) -> None:
    policy = AccessPolicy(parse_access_section({
        "enabled": True, "grants": [rule_dict(BACKUP, {"principal": "alice"}, None)],
        "denies": [rule_dict(BACKUP, {"principal": "alice"}, {"label": "l1"})]}), "default")
    with pytest.raises(CopyDenied) as caught:
        authorize(policy, Principal("alice"), SPEC, p, RESOURCES)
    assert hint in caught.value.message and caught.value.data["scoped_deny"] is True
    assert caught.value.code == -32030
