"""Exact-content duplicates stay one active record through review, and decided harvests are bounded, on
SQLite and PostgreSQL.

- A quarantine release whose content an active record of the scope already holds merges into it (the
  origin tombstoned, ``duplicate_of`` named, no ``-released`` record); a quarantined update merged so leaves
  its prior standing; a repeat is a replay.
- A gated promotion approved into a scope already holding the content commits as that record.
- Decided harvests: at most ``MAX_DECIDED_HARVESTS_PER_IDENTITY`` per identity survive a flood; pending ones
  are never pruned, and the identity stays among the realm's scopes (dream-history visibility).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.clock import ManualClock
from meta_memory.limits import MAX_DECIDED_HARVESTS_PER_IDENTITY, MAX_OPEN_HARVESTS_PER_IDENTITY
from meta_memory.review.harvest import decide_harvest, list_harvests, record_harvest
from meta_memory.review.model import Reviewer
from meta_memory.review.promotions import gating_decide, promote_pending_gate
from meta_memory.review.quarantine import decide

from .conftest import IDENTITY, REALM, Env

OPERATOR = Reviewer.operator("ana")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def env2(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[Env]:
    e = Env(tmp_path / "agent-memory", clock)
    try:
        if request.param == "sqlite":
            yield e
            e.store.close()
            return
        from contract.pgsupport import DSN, require_postgres, throwaway_schema

        require_postgres()  # skips without the postgres extra, before its store is imported
        from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

        e.store.close()
        with throwaway_schema() as schema:
            e.store = PostgresAgentMemoryStore(DSN, clock, schema=schema, gate=e.gate)
            try:
                yield e
            finally:
                e.store.close()
    finally:
        e.events.close()


def _release(env: Env, rec: Any) -> Any:
    return decide(env.store, REALM, IDENTITY, rec.id, "release", rec.content_hash, None, OPERATOR,
                  clock=env.clock, events=env.events)


def _active(env: Env, scope: Scope) -> list[str]:
    return sorted(r.id for r in env.store.active_records(REALM, scope))


def test_release_merges_into_the_active_duplicate(env2: Env) -> None:
    origin = env2.poisoned()
    trusted = env2.clean(origin.title, origin.body)
    assert trusted.content_hash == origin.content_hash
    out = _release(env2, origin)
    assert (out.outcome, out.duplicate_of, out.successor_id) == ("released", trusted.id, trusted.id)
    assert out.to_dict()["duplicate_of"] == trusted.id
    assert env2.store.get(REALM, origin.id).status.kind.value == "tombstoned"
    assert env2.store.get(REALM, f"{origin.id}-released") is None
    assert _active(env2, env2.scope()) == [trusted.id]
    rows = [r for r in env2.audit(origin.id) if r["op_kind"] == "tombstone"]
    assert len(rows) == 1 and rows[0]["detail"]["review"]["duplicate_of"] == trusted.id
    [event] = env2.events_of("memory.quarantine.verdict")
    assert event["data"]["duplicate_of"] == trusted.id and event["data"]["successor_id"] == trusted.id
    again = _release(env2, origin)
    assert (again.outcome, again.applied, again.duplicate_of) == ("already_released", False, trusted.id)
    assert again.decision == out.decision
    assert len(env2.events_of("memory.quarantine.verdict")) == 1


def test_a_quarantined_update_merged_leaves_its_prior_standing(env2: Env) -> None:
    prior = env2.clean("Meeting day", "Standup is on Monday.")
    update = record_writes.supersede(
        env2.store, REALM, env2.scope(), prior.id,
        NewMemoryRecord(title="Meeting day", body="Standup moved to Tuesday.",
                        provenance=Provenance(Author.agent(IDENTITY))),
        Author.agent(IDENTITY),
    )
    assert update.status.kind.value == "quarantined"
    same = env2.clean("Meeting day", "Standup moved to Tuesday.")
    out = _release(env2, update)
    assert out.duplicate_of == same.id and out.superseded_prior is None
    assert _active(env2, env2.scope()) == sorted([prior.id, same.id])


def test_gated_promotion_into_a_scope_holding_the_content_commits_as_that_record(env2: Env) -> None:
    origin = env2.poisoned()
    mob = Scope.mob(REALM, "team")
    staged = promote_pending_gate(env2.store, REALM, origin.id, run_id="dream-p", clock=env2.clock,
                                  target_scope=mob, events=env2.events)
    existing, _ = record_writes.remember_authored(
        env2.store, REALM, mob, NewMemoryRecord(title=origin.title, body=origin.body,
                                                provenance=Provenance(Author.application())), Author.application())
    out = gating_decide(env2.store, REALM, staged.pending_id, "approve", clock=env2.clock, events=env2.events)
    assert (out.status, out.changed, out.promoted_id) == ("committed", True, existing.memory_id)
    assert _active(env2, mob) == [existing.memory_id]
    assert env2.store.get(REALM, origin.id).status.kind.value == "tombstoned"  # the source's tombstone applied


def test_an_active_record_promoted_where_its_content_stands_writes_nothing(env2: Env) -> None:
    mob = Scope.mob(REALM, "team")
    rec = env2.clean()
    staged = promote_pending_gate(env2.store, REALM, rec.id, run_id="dream-p", clock=env2.clock, target_scope=mob)
    existing, _ = record_writes.remember_authored(
        env2.store, REALM, mob, NewMemoryRecord(title=rec.title, body=rec.body, provenance=Provenance(Author.application())),
        Author.application())
    out = gating_decide(env2.store, REALM, staged.pending_id, "approve", clock=env2.clock)
    assert out.promoted_id == existing.memory_id
    assert _active(env2, mob) == [existing.memory_id] and _active(env2, env2.scope()) == [rec.id]


def _counts(env: Env, identity: str) -> dict[str, int]:
    with env.store.snapshot(REALM) as tx:
        return tx.harvests.counts(identity)


def _scopes(env: Env) -> frozenset[tuple[str, str]]:
    with env.store.snapshot(REALM) as tx:
        return tx.panel.realm_scopes()


def test_decided_harvests_are_bounded_per_identity_and_pending_ones_kept(env2: Env) -> None:
    flooder, other = "agent:flood", "agent:quiet"
    record_harvest(env2.store, REALM, other, None, "retired", clock=env2.clock)
    env2.clock.advance(1)
    quiet = list_harvests(env2.store, REALM)
    decide_harvest(env2.store, REALM, _row(env2, quiet[0]), "keep", run_id="d0", clock=env2.clock)
    rounds = MAX_DECIDED_HARVESTS_PER_IDENTITY * 3
    for i in range(rounds):
        record_harvest(env2.store, REALM, flooder, None, f"retire {i}", clock=env2.clock)
        env2.clock.advance(1)
        [pending] = [h for h in list_harvests(env2.store, REALM) if h["identity"] == flooder]
        decide_harvest(env2.store, REALM, _row(env2, pending), "keep", run_id=f"d{i}", clock=env2.clock)
        assert _counts(env2, flooder).get("harvested", 0) <= MAX_DECIDED_HARVESTS_PER_IDENTITY
    assert _counts(env2, flooder) == {"harvested": MAX_DECIDED_HARVESTS_PER_IDENTITY}
    # the other identity's decided harvest is untouched, and both stay among the realm's scopes
    assert _counts(env2, other) == {"harvested": 1}
    assert {("identity", flooder), ("identity", other)} <= _scopes(env2)
    # pending harvests are never pruned: fill the pending bound, decide more of the rest, every pending stays
    for _ in range(MAX_OPEN_HARVESTS_PER_IDENTITY):
        record_harvest(env2.store, REALM, flooder, None, "later", clock=env2.clock)
        env2.clock.advance(1)
    assert _counts(env2, flooder)["pending"] == MAX_OPEN_HARVESTS_PER_IDENTITY
    oldest = [h for h in list_harvests(env2.store, REALM, limit=200) if h["identity"] == flooder][:5]
    for h in oldest:
        decide_harvest(env2.store, REALM, _row(env2, h), "keep", run_id="late", clock=env2.clock)
    counts = _counts(env2, flooder)
    assert counts == {"pending": MAX_OPEN_HARVESTS_PER_IDENTITY - 5, "harvested": MAX_DECIDED_HARVESTS_PER_IDENTITY}
    # the newest decided rows are the ones kept
    with env2.store.snapshot(REALM) as tx:
        assert tx.harvests.counts(flooder) == counts


def _row(env: Env, harvest: dict[str, Any]) -> Any:
    from meta_memory.agent_memory.store.tables import HarvestRow

    return HarvestRow(REALM, harvest["identity"], harvest["session_key"], harvest["cause"],
                      harvest["retired_at_ms"], harvest["status"])
