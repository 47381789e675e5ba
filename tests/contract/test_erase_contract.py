"""Erase and tombstone retention on both backends (the store contract)."""

from __future__ import annotations

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, RestoreOp, StagedBatch
from meta_memory.agent_memory.import_plan import keep_out_erased
from meta_memory.agent_memory.model import Author, MemoryRecord, NewMemoryRecord, Provenance, Scope, StatusKind
from meta_memory.agent_memory.retention import DAY_MS, TombstoneRetention
from meta_memory.agent_memory.store.base import AgentMemoryStore, InjectionRow
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError, RecordNotFound

from .conftest import FakeGate

R, ID, OTHER = "default", "lead:main", "lead:other"
ME = Scope.identity(R, ID)


def _chain(store: AgentMemoryStore) -> tuple[str, str]:
    v1 = record_writes.remember(store, R, ID, "Plan", "the key is under the mat")[0].memory_id
    v2 = record_writes.update(store, R, ID, v1, "Plan", "the key is in the shed")[0].memory_id
    return v1, v2


def test_erase_takes_the_whole_chain_and_its_side_rows(agent_store: AgentMemoryStore) -> None:
    v1, v2 = _chain(agent_store)
    other = record_writes.remember(agent_store, R, ID, "Other", "unrelated")[0].memory_id
    agent_store.log_injections(R, [InjectionRow(v2, ID, "turn", 1, session_key="s1")])
    report = agent_store.erase(R, ME, v1, erased_by="dpo", reason="request")
    assert {r.memory_id for r in report.records} == {v1, v2} and not report.dry_run
    assert agent_store.get(R, v1) is None and agent_store.get(R, v2) is None
    assert [r.id for r in agent_store.active_records(R, ME)] == [other]
    with pytest.raises(RecordNotFound):
        agent_store.erase(R, ME, v1, erased_by="dpo")


def test_dry_run_changes_nothing(agent_store: AgentMemoryStore) -> None:
    v1, v2 = _chain(agent_store)
    report = agent_store.erase(R, ME, v2, erased_by="dpo", dry_run=True)
    assert report.dry_run and report.erased_at_ms is None and len(report.records) == 2
    assert agent_store.get(R, v2) is not None and agent_store.get(R, v1) is not None


def test_another_scopes_record_is_not_found_in_mine(agent_store: AgentMemoryStore) -> None:
    theirs = record_writes.remember(agent_store, R, OTHER, "Theirs", "their content")[0].memory_id
    with pytest.raises(RecordNotFound):
        agent_store.erase(R, ME, theirs, erased_by="dpo")
    assert agent_store.get(R, theirs) is not None


def test_a_derived_copy_in_another_scope_needs_that_scope(agent_store: AgentMemoryStore) -> None:
    src = record_writes.remember(agent_store, R, ID, "Fact", "shared fact")[0].memory_id
    mob = Scope.mob(R, "team")
    record_writes.apply_batch(agent_store, StagedBatch(R, Author.operator("op"), (CreateOp(
        scope=mob, record=NewMemoryRecord(title="Fact", body="shared fact (team copy)",
                                            provenance=Provenance(Author.operator("op"))), derived_from=(src,)),)))
    with pytest.raises(AgentMemoryError) as exc:
        agent_store.erase(R, ME, src, erased_by="dpo", may_erase=lambda scope: scope == ME)
    assert exc.value.data["reason"] == "scope_not_writable"
    assert agent_store.get(R, src) is not None
    report = agent_store.erase(R, ME, src, erased_by="dpo", may_erase=lambda scope: True)
    assert {r.scope for r in report.records} == {ME, mob}


def test_quarantined_content_is_erased_without_waiting_for_review(open_store: object, clock: ManualClock) -> None:
    from meta_memory.review.promotions import promote_pending_gate

    store = open_store(gate=FakeGate("session tainted"))  # type: ignore[operator]
    rec, _ = record_writes.remember_authored(store, R, ME, NewMemoryRecord(title="Web", body="claim from a page",
                                                                    provenance=Provenance(Author.agent(ID))), Author.agent(ID))
    assert rec.status.kind is StatusKind.QUARANTINED
    active = record_writes.remember(store, R, ID, "Web", "claim from a page")[0].memory_id  # the app's own copy
    report = store.erase(R, ME, active, erased_by="dpo", reason="privacy request")
    assert {(r.memory_id, r.status) for r in report.records} == {(rec.id, "quarantined"), (active, "active")}
    assert store.get(R, rec.id) is None and store.get(R, active) is None
    audit = {row["memory_id"]: row["detail"] for row in store.audit_rows(R) if row["op_kind"] == "erase"}
    assert audit[rec.id]["quarantine"] == "erased" and audit[rec.id]["status"] == "quarantined"
    assert "quarantine" not in audit[active]
    # erase-by-identity takes quarantined records too
    again, _ = record_writes.remember_authored(store, R, ME, NewMemoryRecord(title="Other", body="another claim",
                                                                      provenance=Provenance(Author.agent(ID))), Author.agent(ID))
    assert [r.memory_id for r in store.erase(R, ME, None, erased_by="dpo").records] == [again.id]
    # a pending gated promotion is a decision in flight: the erase waits for it, and changes nothing
    src = record_writes.remember(store, R, ID, "Fact", "the vault is in room nine")[0].memory_id
    promote_pending_gate(store, R, src, run_id="dream-1", clock=clock, target_scope=Scope.mob(R, "team"))
    with pytest.raises(AgentMemoryError) as exc:
        store.erase(R, ME, None, erased_by="dpo")
    assert exc.value.data["reason"] == "review_pending" and "pending gated promotion" in exc.value.detail
    assert store.get(R, src) is not None


def test_retention_erases_dead_chains_older_than_the_setting(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    v1, v2 = _chain(agent_store)
    record_writes.forget(agent_store, R, ME, v2, Author.application())  # the whole chain is now out of use
    live = record_writes.remember(agent_store, R, ID, "Live", "still in use")[0].memory_id
    recent = record_writes.remember(agent_store, R, ID, "Recent", "forgotten just now")[0].memory_id
    sweeper = TombstoneRetention(agent_store, 3, clock)
    clock.advance(2 * DAY_MS)
    record_writes.forget(agent_store, R, ME, recent, Author.application())
    assert sweeper.sweep() == 0  # nothing is older than 3 days yet
    clock.advance(2 * DAY_MS)
    assert sweeper.sweep() == 2
    assert agent_store.get(R, v1) is None and agent_store.get(R, v2) is None
    assert agent_store.get(R, recent) is not None and agent_store.get(R, live) is not None
    clock.advance(2 * DAY_MS)
    assert sweeper.sweep() == 1 and agent_store.get(R, recent) is None


def test_a_swept_body_leaves_every_read_path_and_the_database_file(tmp_path: object, clock: ManualClock) -> None:
    from pathlib import Path

    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore

    root = Path(str(tmp_path)) / "agent-memory"
    store = SqliteAgentMemoryStore(root, clock)
    try:
        mark = "quokkazanzibar"
        gone = record_writes.remember(store, R, ID, "Old address", f"{mark} lives at 12 Elm Street")[0].memory_id
        keep = record_writes.remember(store, R, ID, "Other", "unrelated note")[0].memory_id
        record_writes.forget(store, R, ME, gone, Author.application())
        clock.advance(31 * DAY_MS)
        assert TombstoneRetention(store, 30, clock).sweep() == 1
        assert store.get(R, gone) is None
        assert [r.id for _, r in store.records_page(R)] == [keep]  # not even as a tombstone
        assert [r.id for _, r in store.list_active(R, ME)] == [keep]
    finally:
        store.close()
    on_disk = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
    assert mark.encode() not in on_disk


# --------------------------------------------------------------------------- the erasure register


def _restore(store: AgentMemoryStore, rec: MemoryRecord) -> None:
    record_writes.apply_batch(store, StagedBatch(R, Author.operator("import"), (RestoreOp(record=rec),)))


def test_the_register_keeps_erased_ids_and_content_out(agent_store: AgentMemoryStore) -> None:
    mid = record_writes.remember(agent_store, R, ID, "Diagnosis", "quokkazanzibar syndrome")[0].memory_id
    exported = agent_store.get(R, mid)
    assert exported is not None
    agent_store.erase(R, ME, mid, erased_by="dpo")
    with pytest.raises(AgentMemoryError) as by_id:
        _restore(agent_store, exported)  # an older export handed back
    assert by_id.value.data["reason"] == "erased" and mid in by_id.value.message
    with pytest.raises(AgentMemoryError) as by_content:
        record_writes.remember(agent_store, R, ID, " Diagnosis ", "quokkazanzibar syndrome\n")
    assert by_content.value.data["reason"] == "erased" and "quokkazanzibar" not in by_content.value.message
    outcomes = record_writes.remember_many(agent_store, R, ID, [RememberItem("Diagnosis", "quokkazanzibar syndrome"),
                                                  RememberItem("Other", "fine")])
    assert outcomes[0].error is not None and outcomes[0].error.reason == "erased" and outcomes[1].created
    assert record_writes.remember(agent_store, R, OTHER, "Diagnosis", "quokkazanzibar syndrome")[1]  # not another identity's
    with agent_store.snapshot(R) as tx:
        (row,) = tx.erased([mid], [])
    assert (row.scope_kind, row.scope_key, row.content_hash) == ("identity", ID, exported.content_hash)


def test_an_erase_takes_older_copies_of_the_same_content(agent_store: AgentMemoryStore) -> None:
    old = record_writes.remember(agent_store, R, ID, "Address", "12 Elm Street")[0].memory_id
    record_writes.forget(agent_store, R, ME, old, Author.application())
    new = record_writes.remember(agent_store, R, ID, "Address", "12 Elm Street")[0].memory_id
    report = agent_store.erase(R, ME, new, erased_by="dpo")
    assert {r.memory_id for r in report.records} == {old, new}
    assert agent_store.get(R, old) is None


def test_erased_content_cannot_come_back_through_a_proposal_or_a_promotion(agent_store: AgentMemoryStore,
                                                                           clock: ManualClock) -> None:
    from meta_memory.review.promotions import promote_pending_gate

    mob = Scope.mob(R, "team")
    src = record_writes.remember(agent_store, R, ID, "Fact", "the vault is in room nine")[0].memory_id
    record_writes.apply_batch(agent_store, StagedBatch(R, Author.operator("op"), (CreateOp(
        scope=mob, record=NewMemoryRecord(title="Fact", body="the vault is in room nine",
                                            provenance=Provenance(Author.operator("op"))), derived_from=(src,)),)))
    theirs = record_writes.remember(agent_store, R, OTHER, "Fact", "the vault is in room nine")[0].memory_id
    waiting = record_writes.propose(agent_store, R, mob, NewMemoryRecord(title="Fact", body="the vault is in room nine",
                                                            provenance=Provenance(Author.agent(OTHER))),
                                    Author.agent(OTHER))
    report = agent_store.erase(R, ME, src, erased_by="dpo", may_erase=lambda scope: True)
    assert {r.scope for r in report.records} == {ME, mob} and report.proposals == (waiting,)
    with pytest.raises(AgentMemoryError) as proposed:
        record_writes.propose(agent_store, R, mob, NewMemoryRecord(title="Fact", body="the vault is in room nine",
                                                      provenance=Provenance(Author.agent(OTHER))), Author.agent(OTHER))
    assert proposed.value.data["reason"] == "erased"
    with pytest.raises(AgentMemoryError) as promoted:
        promote_pending_gate(agent_store, R, theirs, run_id="dream-1", clock=clock, target_scope=mob)
    assert promoted.value.data["reason"] == "erased"
    assert agent_store.get(R, theirs) is not None  # the other identity's own record stays


def test_retention_keeps_swept_ids_out_but_lets_content_be_learned_again(agent_store: AgentMemoryStore,
                                                                          clock: ManualClock) -> None:
    mid = record_writes.remember(agent_store, R, ID, "Tea", "prefers green tea")[0].memory_id
    swept = agent_store.get(R, mid)
    assert swept is not None
    record_writes.forget(agent_store, R, ME, mid, Author.application())
    relearned = record_writes.remember(agent_store, R, ID, "Tea", "prefers green tea")[0].memory_id  # the same words, in use again
    clock.advance(4 * DAY_MS)
    assert TombstoneRetention(agent_store, 3, clock).sweep() == 1
    assert agent_store.get(R, mid) is None and agent_store.get(R, relearned) is not None
    record_writes.forget(agent_store, R, ME, relearned, Author.application())
    assert record_writes.remember(agent_store, R, ID, "Tea", "prefers green tea")[1]
    with pytest.raises(AgentMemoryError) as exc:
        _restore(agent_store, swept)
    assert exc.value.data["reason"] == "erased"


def test_erased_content_differing_only_in_whitespace_stays_out(agent_store: AgentMemoryStore,
                                                                clock: ManualClock) -> None:
    """A body re-spaced inside (a doubled space, a tab, a no-break space, a line break) is the erased
    content: refused by remember, a batch, an update, a restore under a new id, a proposal, a promotion
    and an import's check; another identity's own memory and other words are not."""
    from dataclasses import replace

    from meta_memory.review.promotions import promote_pending_gate

    mob = Scope.mob(R, "team")
    body = "the vault  is in\troom nine"
    src = record_writes.remember(agent_store, R, ID, "Fact", body)[0].memory_id
    record_writes.apply_batch(agent_store, StagedBatch(R, Author.operator("op"), (CreateOp(
        scope=mob, record=NewMemoryRecord(title="Fact", body=body, provenance=Provenance(Author.operator("op"))),
        derived_from=(src,)),)))
    respaced = ["the vault is in room nine", "the vault\u00a0is in room\nnine", "the  vault  is  in  room  nine"]
    theirs = record_writes.remember(agent_store, R, OTHER, "Fact", respaced[1])[0].memory_id
    exported = agent_store.get(R, theirs)
    assert exported is not None
    agent_store.erase(R, ME, src, erased_by="dpo", may_erase=lambda scope: True)
    keep = record_writes.remember(agent_store, R, ID, "Other", "unrelated")[0].memory_id

    def refused(call: object) -> None:
        with pytest.raises(AgentMemoryError) as exc:
            call()  # type: ignore[operator]
        assert exc.value.data["reason"] == "erased" and "vault" not in exc.value.message

    for text in respaced:
        refused(lambda: record_writes.remember(agent_store, R, ID, "Fact", text))
        outcomes = record_writes.remember_many(agent_store, R, ID, [RememberItem("Fact", text), RememberItem("Ok", "fine")])
        assert outcomes[0].error is not None and outcomes[0].error.reason == "erased"
        refused(lambda: record_writes.update(agent_store, R, ID, keep, "Fact", text))
        refused(lambda: record_writes.propose(agent_store, R, mob, NewMemoryRecord(
            title="Fact", body=text, provenance=Provenance(Author.agent(OTHER))), Author.agent(OTHER)))
        refused(lambda: _restore(agent_store, replace(exported, id=f"mem-restored-{len(text)}", scope=ME, body=text)))
    refused(lambda: promote_pending_gate(agent_store, R, theirs, run_id="dream-1", clock=clock, target_scope=mob))
    # an import's check before its batches (an export line of another id holding the content re-spaced)
    lines = [(n, replace(exported, id=f"mem-imported-{n}", scope=ME, body=text)) for n, text in enumerate(respaced)]
    kept, out = keep_out_erased(agent_store, R, lines)
    assert kept == [] and [r[2] for r in out] == [f"erased: its content was erased from {ME.describe()}"] * 3
    assert record_writes.remember(agent_store, R, OTHER, "Fact", respaced[0])[1]  # another identity's own
    assert record_writes.remember(agent_store, R, ID, "Fact", "the vault is in room ten")[1]  # other words
    with agent_store.snapshot(R) as tx:
        (row,) = tx.erased([src], [])
    assert row.folded_hash is not None and row.folded_hash != row.content_hash


def test_retention_skips_a_realm_that_fails_part_way_and_sweeps_the_others(agent_store: AgentMemoryStore,
                                                                          clock: ManualClock) -> None:
    """A realm whose read fails past its header (``corrupt`` part-way, as a damaged page does) is logged and
    left for the operator; the realms after it are still swept."""
    first = record_writes.remember(agent_store, "aaa", ID, "Old", "out of use")[0].memory_id
    second = record_writes.remember(agent_store, "zzz", ID, "Old", "out of use too")[0].memory_id
    record_writes.forget(agent_store, "aaa", Scope.identity("aaa", ID), first, Author.application())
    record_writes.forget(agent_store, "zzz", Scope.identity("zzz", ID), second, Author.application())
    clock.advance(4 * DAY_MS)
    real = agent_store.tombstoned_closures_before

    def damaged(realm: str, cutoff_ms: int, limit: int = 1000) -> list[str]:
        if realm == "aaa":
            raise AgentMemoryError("corrupt", "database disk image is malformed")
        return real(realm, cutoff_ms, limit)

    agent_store.tombstoned_closures_before = damaged  # type: ignore[method-assign]
    assert TombstoneRetention(agent_store, 3, clock).sweep() == 1
    assert agent_store.get("zzz", second) is None and agent_store.get("aaa", first) is not None


def test_a_swept_closure_is_told_only_to_its_scopes_readers(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    """The sweep's ``memory.record.erased`` events carry record ids: each is an event of the erased records'
    identity, or names their mob scope; none is a system event every unscoped reader is shown."""
    from meta_memory.events.bus import SYSTEM_IDENTITY, EventBus

    mine = record_writes.remember(agent_store, R, ID, "Mine", "an old note of mine")[0].memory_id
    record_writes.forget(agent_store, R, ME, mine, Author.application())
    mob = Scope.mob(R, "team")
    shared = record_writes.apply_batch(agent_store, StagedBatch(R, Author.operator("op"), (CreateOp(
        scope=mob, record=NewMemoryRecord(title="Team", body="an old team note",
                                          provenance=Provenance(Author.operator("op")))),))).results[0].memory_id
    record_writes.forget(agent_store, R, mob, shared, Author.operator("op"))
    bus = EventBus(clock)
    clock.advance(4 * DAY_MS)
    assert TombstoneRetention(agent_store, 3, clock, events=bus).sweep() == 2
    erased = [e for e in bus.list(limit=100) if e.event_type == "memory.record.erased"]
    assert sorted((e.identity, e.data["memory_ids"][0]) for e in erased) == sorted([(ID, mine), (SYSTEM_IDENTITY, shared)])
    told = next(e for e in erased if e.identity == SYSTEM_IDENTITY)
    assert (told.data["scope_kind"], told.data["scope_key"]) == mob.storage()
