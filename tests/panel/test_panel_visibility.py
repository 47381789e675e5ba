"""Row visibility of the console Memory panel, rule by rule (seed: Console Memory panel)."""

from __future__ import annotations

from enum import StrEnum
from types import SimpleNamespace
from typing import Any

import pytest

from meta_memory.access.config import parse_access_section
from meta_memory.access.policy import AccessPolicy
from meta_memory.access.principal import ANONYMOUS, Principal
from meta_memory.access.resources import IdentityAttributes, Resources
from meta_memory.panel.visibility import (
    RealmFacts,
    RecordFacts,
    Visibility,
    holds_quarantined_content,
    record_facts,
)

ALICE = Principal("alice")
READ, VIEW, REVIEW = "agent.memory.read", "agent.view", "memory.quarantine.review"


def grant(action: str, on: dict[str, str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"action": action, "who": {"principal": "alice"}}
    if on:
        rule["on"] = on
    return rule


def vis(grants: list[dict[str, Any]], denies: list[dict[str, Any]] = (), resources: Resources | None = None,
        principal: Principal = ALICE) -> Visibility:
    # "r" plays the gateway's default realm: a rule without ``realm`` is a grant there only
    cfg = parse_access_section({"enabled": True, "grants": grants, "denies": list(denies)})
    return Visibility(AccessPolicy(cfg, "r"), principal, resources or Resources(default_realm="r"))


def rec(kind: str = "identity", key: str = "lead", status: str = "active", ever: bool = False) -> RecordFacts:
    return RecordFacts(kind, key, status, ever)


ON_LEAD = {"identity": "lead"}


def test_access_off_shows_everything() -> None:
    v = Visibility(AccessPolicy(), ANONYMOUS)
    assert v.record("r", rec(status="quarantined"))
    assert v.record("r", rec("realm", "", "tombstoned", True))
    assert v.audit_verdict("r", None) and v.injection("r", None, "x") and v.promotion("r", "mob", "m", None)
    listing = v.dream_listing({"r": RealmFacts(frozenset({("operator", "o")}), True)})
    assert listing.realms == ("r",) and not listing.withheld_by_access


def test_identity_rows_need_read_and_view_on_the_identity() -> None:
    assert vis([grant(READ, ON_LEAD), grant(VIEW, ON_LEAD)]).record("r", rec())
    assert vis([grant(READ, ON_LEAD)]).record_denial("r", rec()) == VIEW
    assert vis([grant(VIEW, ON_LEAD)]).record_denial("r", rec()) == READ
    assert not vis([grant(READ, ON_LEAD), grant(VIEW, ON_LEAD)]).record("r", rec(key="other"))


def test_mob_operator_and_realm_rows() -> None:
    v = vis([grant("mob.memory.read", {"mob": "m1"})])
    assert v.record("r", rec("mob", "m1")) and not v.record("r", rec("mob", "m2"))
    assert v.record_denial("r", rec("operator", "ops")) == "operator.memory.read"
    assert vis([grant("operator.memory.read")]).record("r", rec("operator", "ops"))
    scoped_read = vis([grant(READ, ON_LEAD), grant(VIEW, ON_LEAD)])
    assert scoped_read.record_denial("r", rec("realm", "")) == READ  # realm rows need an unscoped grant
    assert vis([grant(READ)]).record("r", rec("realm", ""))


@pytest.mark.parametrize(
    ("status", "ever", "needs_review"),
    [
        ("quarantined", True, True),
        ("quarantined", False, True),
        ("tombstoned", True, True),  # a released/tombstoned original, or a quarantined write forgotten
        ("tombstoned", False, False),  # a plain forget
        ("active", True, False),  # a released successor is ordinary memory
        ("superseded", True, False),
        ("active", False, False),
    ],
)
def test_quarantined_content_needs_review(status: str, ever: bool, needs_review: bool) -> None:
    row = rec(status=status, ever=ever)
    assert holds_quarantined_content(row) is needs_review
    base = [grant(READ), grant(VIEW)]
    assert vis(base).record("r", row) is not needs_review
    if needs_review:
        assert vis(base).record_denial("r", row) == REVIEW
    assert vis(base + [grant(REVIEW, ON_LEAD)]).record("r", row)
    assert not vis([grant(REVIEW)]).record("r", row)  # review alone does not open the scope


def test_identities_are_judged_under_their_realm_qualified_name() -> None:
    in_r1 = {"identity": "lead", "realm": "r1"}
    v = vis([grant(READ, in_r1), grant(VIEW, in_r1)])
    assert v.record("r1", rec()) and not v.record("r2", rec()) and not v.record("r", rec())
    plain = vis([grant(READ, ON_LEAD), grant(VIEW, ON_LEAD)])  # no realm: the default realm only
    assert plain.record("r", rec()) and not plain.record("r1", rec())
    every = {"identity": "lead", "realm": "*"}
    assert vis([grant(READ, every), grant(VIEW, every)]).record("r2", rec())
    deny = {"action": VIEW, "who": {"anyone": True}, "on": ON_LEAD}  # a deny without realm: every realm
    assert not vis([grant(READ, every), grant(VIEW, every)], [deny]).record("r2", rec())


def test_unknown_identity_withheld_under_a_scoped_deny() -> None:
    known = {"lead": IdentityAttributes(frozenset({"support"}), frozenset())}
    res = Resources(directory=lambda realm, ident: known.get(ident))
    grants = [grant(READ), grant(VIEW)]
    deny = {"action": VIEW, "who": {"anyone": True}, "on": {"role": "finance"}}
    v = vis(grants, [deny], res)
    assert v.record("r", rec(key="lead"))  # known, not in finance
    assert not v.record("r", rec(key="ghost"))  # nobody holds the name: could be finance
    assert vis(grants, [], res).record("r", rec(key="ghost"))  # no deny, nothing withheld
    other_agent = {"action": READ, "who": {"anyone": True}, "on": {"identity": "lead"}}
    assert not vis(grants, [other_agent], res).record("r", rec(key="ghost"))
    assert not vis(grants, [other_agent], res).record("r", rec(key="lead"))


def test_realm_level_rows() -> None:
    v = vis([grant(READ, ON_LEAD), grant(VIEW, ON_LEAD), grant("mob.memory.read", {"mob": "m"})])
    assert v.proposal("r", "mob", "m") and not v.proposal("r", "mob", "n")
    assert v.overview_row("r", "identity", "lead") and not v.overview_row("r", "realm", "")
    assert v.harvest("r", "lead") and not v.harvest("r", "other")
    assert v.audit_verdict("r", rec()) and not v.audit_verdict("r", rec(key="x"))
    assert not v.audit_verdict("r", None)
    assert not v.audit_verdict("r", rec(status="quarantined"))


def test_injection_rows_need_the_record_and_the_identity() -> None:
    v = vis([grant(READ, ON_LEAD), grant(VIEW, ON_LEAD), grant("mob.memory.read", {"mob": "m"})])
    assert v.injection("r", rec(), "lead")
    assert not v.injection("r", rec(), "other")  # the identity it went into is hidden
    assert v.injection("r", rec("mob", "m"), "lead")
    assert not v.injection("r", rec("mob", "n"), "lead")
    assert not v.injection("r", None, "lead")


def test_gated_promotions_need_target_and_sources() -> None:
    v = vis([grant("mob.memory.read", {"mob": "m"}), grant(READ, ON_LEAD), grant(VIEW, ON_LEAD)])
    assert v.promotion("r", "mob", "m", [("identity", "lead")])
    assert not v.promotion("r", "mob", "m", [("identity", "other")])
    assert not v.promotion("r", "mob", "n", [("identity", "lead")])
    assert not v.promotion("r", "mob", "m", None)  # source unresolved: listed to no one


def test_dream_history() -> None:
    scopes = frozenset({("identity", "lead"), ("mob", "m")})
    clean, dirty = RealmFacts(scopes, False), RealmFacts(scopes, True)
    full = [grant(READ), grant(VIEW), grant("mob.memory.read")]
    assert vis(full).dream_history("r", clean)
    assert not vis(full).dream_history("r", dirty)
    assert vis(full + [grant(REVIEW)]).dream_history("r", dirty)
    assert not vis(full + [grant(REVIEW, ON_LEAD)]).dream_history("r", dirty)  # review must be unscoped
    no_mob = [grant(READ), grant(VIEW)]
    assert not vis(no_mob).dream_history("r", clean)  # cannot read every scope the realm names
    scoped = [grant(READ, ON_LEAD), grant(VIEW, ON_LEAD), grant("mob.memory.read")]
    assert not vis(scoped).dream_history("r", clean)  # needs the unscoped read grant
    empty = RealmFacts(frozenset(), False)
    listing = vis(no_mob).dream_listing({"a": clean, "b": empty, "c": dirty})
    assert listing.realms == ("b",) and listing.withheld_by_access
    assert vis(full + [grant(REVIEW)]).dream_listing({"a": clean, "c": dirty}).withheld_by_access is False


class _Kind(StrEnum):
    IDENTITY = "identity"
    QUARANTINED = "quarantined"


def test_record_facts_reads_store_records_and_panel_rows() -> None:
    obj = SimpleNamespace(scope=SimpleNamespace(kind=_Kind.IDENTITY, key="lead", realm="r"),
                          status=SimpleNamespace(kind=_Kind.QUARANTINED, detail="tainted"), ever_quarantined=True)
    assert record_facts(obj) == RecordFacts("identity", "lead", "quarantined", True)
    row = {"scope": {"scope": "mob", "realm": "r", "mob": "m"}, "status": {"status": "tombstoned"}, "ever_quarantined": False}
    assert record_facts(row) == RecordFacts("mob", "m", "tombstoned", False)
    realm_row = {"scope": {"scope": "realm", "realm": "r"}, "status": "active"}
    assert record_facts(realm_row) == RecordFacts("realm", "", "active", False)
    flat = {"scope_kind": "operator", "scope_key": "o", "status": "active", "ever_quarantined": 1}
    assert record_facts(flat) == RecordFacts("operator", "o", "active", True)
    with pytest.raises(ValueError):
        record_facts({"title": "no scope"})


def test_unknown_scope_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown scope kind 'team'"):
        vis([]).record("r", rec("team", "x"))
