"""Property tests of :class:`~meta_memory.review.authority.ReviewAuthority` over random grant sets:
what a dream, a gating decision or a proposal decision may touch, scope by scope."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from access_strategies import IDENTITIES, MOBS, configs, principals
from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.resources import Resources
from meta_memory.agent_memory.model import Scope
from meta_memory.review.authority import ReviewAuthority, scope_needs
from meta_memory.rpc.methods import build_method_table

DECIDE = next(s for s in build_method_table().specs() if s.name == "meta/memory/quarantine/decide")


def required_actions(params: dict) -> list:
    """What ``meta/memory/quarantine/decide`` declares for ``params`` (parsed as the gateway parses them)."""
    full = {"memory_id": "m", "expected_content_hash": "ab" * 32, **params}
    return DECIDE.requires(DECIDE.parse(full), Resources())

REALM = "default"
SCOPES = (
    [Scope.identity(REALM, i) for i in IDENTITIES]
    + [Scope.mob(REALM, m) for m in MOBS]
    + [Scope.operator(REALM, "op"), Scope.realm_scope(REALM)]
)
REVIEW_ACTIONS = sorted({a for kind in ("identity", "mob", "operator") for a in scope_needs(kind)})


@settings(max_examples=300, deadline=None)
@given(configs(REVIEW_ACTIONS, enabled=True), principals)
def test_acting_on_an_identity_implies_deciding_its_quarantine_either_way(config, principal) -> None:
    policy = AccessPolicy(config)
    authority = ReviewAuthority(policy, principal)
    for ident in IDENTITIES:
        if not authority.may_act(Scope.identity(REALM, ident)):
            continue
        for verdict in ("release", "tombstone"):
            needs = required_actions({"identity": ident, "verdict": verdict})
            assert policy.check_all(principal, needs), (ident, verdict)


@settings(max_examples=300, deadline=None)
@given(configs(REVIEW_ACTIONS, enabled=True), principals, st.sampled_from(REVIEW_ACTIONS),
       st.sampled_from(SCOPES))
def test_a_deny_never_widens_what_a_caller_may_act_on(config, principal, action, scope) -> None:
    before = ReviewAuthority(AccessPolicy(config), principal)
    kind, key = scope.storage()
    on = {"identity": key} if kind == "identity" else {"mob": key} if kind == "mob" else None
    deny = {"action": action, "who": {"anyone": True}, **({"on": on} if on else {})}
    raw = {"enabled": True, "grants": [r.model_dump(exclude_none=True) for r in config.grants],
           "denies": [r.model_dump(exclude_none=True) for r in config.denies] + [deny]}
    after = ReviewAuthority(AccessPolicy(parse_access_section(raw)), principal)
    for s in SCOPES:
        assert not after.may_act(s) or before.may_act(s)
    if action in scope_needs(kind):
        assert not after.may_act(scope)


@given(principals, st.sampled_from(SCOPES))
def test_access_off_allows_every_scope(principal, scope) -> None:
    assert ReviewAuthority(AccessPolicy(parse_access_section({"enabled": False})), principal).may_act(scope)
    assert ReviewAuthority().may_act(scope)
