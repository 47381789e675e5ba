from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory.model import (
    Author,
    EvidenceRef,
    Kind,
    MemoryRecord,
    Provenance,
    Scope,
    ScopeKind,
    Status,
    TrustTier,
    UsageEvent,
    UsageStats,
    VerificationClaim,
    age_days,
)


def test_every_scope_kind_round_trips_through_the_persisted_encoding() -> None:
    scopes = [
        Scope.identity("default", "lead:main"),
        Scope.mob("default", "mob-1"),
        Scope.operator("acme", "ops@acme"),
        Scope.realm_scope("acme"),
    ]
    for scope in scopes:
        assert Scope.from_json(json.loads(json.dumps(scope.to_json()))) == scope
        kind, key = scope.storage()
        assert Scope.from_storage(scope.realm, kind, key) == scope
    assert Scope.identity("default", "lead:main").to_json() == {
        "scope": "identity",
        "realm": "default",
        "identity": "lead:main",
    }
    assert Scope.realm_scope("r").to_json() == {"scope": "realm", "realm": "r"}
    assert Scope.realm_scope("r").storage() == ("realm", "")
    assert Scope.mob("r", "m").storage() == ("mob", "m")


def test_unknown_scope_kind_is_a_parse_error() -> None:
    with pytest.raises(ValueError, match="unknown scope kind 'team'"):
        Scope.from_storage("default", "team", "x")
    with pytest.raises(ValueError, match="unknown scope kind 'team'"):
        Scope.from_json({"scope": "team", "realm": "default"})


def test_identity_scope_keys_are_logical_across_respawn_generations() -> None:
    assert Scope.identity("d", "rt:identity:parent-1:0") == Scope.identity("d", "identity:parent-1")
    assert Scope.identity("d", "rt:identity:parent-1:1").key == "identity:parent-1"
    assert Author.agent("rt:identity:parent-1:3").identity == "identity:parent-1"


def test_trust_tier_order_matches_lattice_authority() -> None:
    order = ["untrusted", "agent_observed", "agent_verified", "application", "operator"]
    tiers = [TrustTier(t) for t in order]
    for i, low in enumerate(tiers):
        for high in tiers[i + 1 :]:
            assert low < high and high > low and low <= high and not high <= low
    assert sorted(reversed(tiers)) == tiers
    assert max(tiers) is TrustTier.OPERATOR
    # Alphabetical order would put 'application' first; the lattice does not.
    assert TrustTier.APPLICATION > TrustTier.AGENT_VERIFIED


def test_status_encodings() -> None:
    assert Status.active().to_json() == {"status": "active"}
    assert Status.superseded("mem-2").to_json() == {"status": "superseded", "by": "mem-2"}
    assert Status.quarantined("llm_writes=quarantined policy").to_json() == {
        "status": "quarantined",
        "reason": "llm_writes=quarantined policy",
    }
    assert Status.tombstoned().to_json() == {"status": "tombstoned"}
    for s in (Status.active(), Status.superseded("x"), Status.quarantined("r"), Status.tombstoned()):
        assert Status.from_json(s.to_json()) == s


def test_author_encodings_and_llm_flag() -> None:
    cases = {
        Author.operator(): ({"author": "operator"}, False),
        Author.operator("alice"): ({"author": "operator", "principal": "alice"}, False),
        Author.application(): ({"author": "application"}, False),
        Author.agent("lead:main"): ({"author": "agent", "identity": "lead:main"}, True),
        Author.steward("run-1"): ({"author": "steward", "run_id": "run-1"}, True),
        Author.distiller("run-2"): ({"author": "distiller", "run_id": "run-2"}, True),
    }
    for author, (wire, is_llm) in cases.items():
        assert author.to_json() == wire
        assert Author.from_json(wire) == author
        assert author.is_llm is is_llm


def _record(**over) -> MemoryRecord:
    base = dict(
        id="mem-1",
        scope=Scope.identity("default", "lead:main"),
        kind=Kind.GOTCHA,
        title="Deploy gotcha",
        description="when deploying",
        body="Run migrations first.",
        tags=("deploy",),
        provenance=Provenance(
            author=Author.agent("lead:main"),
            evidence=(EvidenceRef("sess-1", 2, revision=3, range=(4, 9)),),
            verification=VerificationClaim("ran the migration in staging"),
        ),
        trust=TrustTier.AGENT_OBSERVED,
        status=Status.quarantined("session tainted by web tool 'web_search'"),
        supersedes="mem-0",
        derived_from=("mem-a", "mem-b"),
        working_set_rank=3,
        created_at_ms=10,
        updated_at_ms=20,
        usage=UsageStats().bump(UsageEvent.INJECTED, 15),
        ever_quarantined=True,
    )
    base.update(over)
    return MemoryRecord(**base)


def test_record_serde_round_trips() -> None:
    rec = _record()
    wire = json.loads(json.dumps(rec.to_json()))
    assert wire["scope"] == {"scope": "identity", "realm": "default", "identity": "lead:main"}
    assert wire["status"] == {"status": "quarantined", "reason": "session tainted by web tool 'web_search'"}
    assert wire["provenance"]["evidence"] == [{"session_id": "sess-1", "generation": 2, "revision": 3, "range": [4, 9]}]
    assert wire["usage"] == {
        "injected_count": 1,
        "last_injected_at_ms": 15,
        "explicit_recall_count": 0,
        "judged_useful_count": 0,
    }
    assert MemoryRecord.from_json(wire) == rec
    plain = _record(supersedes=None, working_set_rank=None)
    assert "supersedes" not in plain.to_json() and "working_set_rank" not in plain.to_json()


def test_projection_and_meta() -> None:
    rec = _record(updated_at_ms=0)
    assert rec.project().model_dump() == {
        "memory_id": "mem-1",
        "title": "Deploy gotcha",
        "body": "Run migrations first.",
        "tags": ["deploy"],
        "created_at_ms": 10,
        "updated_at_ms": 0,
        "expires_at_ms": None,
    }
    meta = rec.meta(now_ms=3 * 86_400_000 + 5)
    assert meta.model_dump() == {
        "id": "mem-1",
        "kind": "gotcha",
        "title": "Deploy gotcha",
        "description": "when deploying",
        "age_days": 3,
        "rank": 3,
    }


@given(st.integers(min_value=0, max_value=2**50), st.integers(min_value=0, max_value=2**50))
def test_age_days_saturates(updated: int, now: int) -> None:
    days = age_days(updated, now)
    assert days >= 0
    if now >= updated:
        assert days == (now - updated) // 86_400_000
    else:
        assert days == 0


def test_scope_kind_values() -> None:
    assert [k.value for k in ScopeKind] == ["identity", "mob", "operator", "realm"]
    assert [k.value for k in Kind] == [
        "preference",
        "fact",
        "gotcha",
        "procedure",
        "relationship",
        "open_loop",
        "reference",
    ]
