"""A record's history on both backends (the store contract): the same versions, in the same
order, with the same change kinds, read from the records' links and the audit rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import RetierOp, SetRankOp, StagedBatch
from meta_memory.agent_memory.history import MAX_HISTORY_VERSIONS
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope, TrustTier
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import RecordNotFound
from meta_memory.events.bus import EventBus
from meta_memory.review.forgets import request_forget
from meta_memory.review.model import Reviewer
from meta_memory.review.promotions import gating_decide, promote_pending_gate
from meta_memory.review.quarantine import decide

R, ID, OTHER = "default", "lead:main", "lead:other"
ME = Scope.identity(R, ID)
TAINT = "session tainted by web tool 'web_search'"


class AgentGate:
    """Quarantines agent-authored writes while ``reason`` is set."""

    reason: str | None = TAINT

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return self.reason if author.kind.value == "agent" else None


def changes(version: dict[str, Any]) -> list[str]:
    return [c["change"] for c in version["changes"]]


def test_update_tag_merge_and_forget_oldest_first(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    v1 = record_writes.remember(agent_store, R, ID, "Standup", "Standup is on Monday.", ["team"])[0].memory_id
    clock.advance(1_000)
    v2 = record_writes.update(agent_store, R, ID, v1, "Standup", "Standup moved to Tuesday.")[0].memory_id
    clock.advance(1_000)
    v3, created = record_writes.remember(agent_store, R, ID, "Standup", "Standup moved to Tuesday.", ["team", "ritual"])
    assert not created
    clock.advance(1_000)
    assert record_writes.forget(agent_store, R, ME, v3.memory_id, Author.application())

    for asked in (v1, v2, v3.memory_id):  # any version answers the whole history
        out = agent_store.history(R, ME, asked)
        assert out["memory_id"] == asked and out["order"] == "oldest_first" and not out["truncated"]
        vs = out["versions"]
        assert [v["memory_id"] for v in vs] == [v1, v2, v3.memory_id]
        assert [v["reason"] for v in vs] == ["created", "update", "tag_merge"]
        assert [v["status"] for v in vs] == ["superseded", "superseded", "tombstoned"]
        assert [v["superseded_by"] for v in vs] == [v2, v3.memory_id, None]
        assert changes(vs[2]) == ["tag_merge", "forget"]
        assert vs[2]["changes"][1]["at_ms"] == 1_700_000_003_000
        assert [v["body"] for v in vs] == ["Standup is on Monday.", "Standup moved to Tuesday.",
                                           "Standup moved to Tuesday."]
        assert sorted(vs[2]["tags"]) == ["ritual", "team"] and vs[0]["author"] == {"author": "application"}
        assert all(v["withheld"] is None and v["trust"] for v in vs)


def test_another_scope_another_realm_and_unknown_ids_are_refused_alike(agent_store: AgentMemoryStore) -> None:
    theirs = record_writes.remember(agent_store, R, OTHER, "Theirs", "not mine")[0].memory_id
    record_writes.remember(agent_store, R, ID, "Mine", "a record so the realm exists")
    record_writes.remember(agent_store, "elsewhere", ID, "Elsewhere", "another realm")
    elsewhere = agent_store.list_active("elsewhere", Scope.identity("elsewhere", ID), tags=[], limit=5)[0][1].id
    refusals = []
    for realm, scope, mid in ((R, ME, theirs), (R, ME, elsewhere), (R, ME, "mem-unknown"), (R, ME, "mem-\x00nul"), ("nobody", Scope.identity("nobody", ID), theirs)):
        with pytest.raises(RecordNotFound) as info:
            agent_store.history(realm, scope, mid)
        refusals.append(str(info.value).replace(mid, "<id>"))
    assert len(set(refusals)) == 1
    assert "nobody" not in agent_store.list_realms()  # a read never creates a realm


def test_quarantined_release_and_promotion_withhold_quarantined_text(open_store: Callable[..., AgentMemoryStore],
                                                                       clock: ManualClock) -> None:
    gate = AgentGate()
    store: Any = open_store(gate)
    events = EventBus(clock)
    try:
        prior = record_writes.remember(store, R, ID, "Meeting day", "Standup is on Monday.")[0].memory_id
        poisoned = record_writes.supersede(store, R, ME, prior, NewMemoryRecord(
            title="Meeting day", body="Standup moved to Tuesday.", provenance=Provenance(Author.agent(ID))),
            Author.agent(ID))
        assert poisoned.status.kind.value == "quarantined"
        out = store.history(R, ME, poisoned.id)["versions"]
        assert [v["memory_id"] for v in out] == [prior, poisoned.id]
        q = out[1]
        assert q["status"] == "quarantined" and q["withheld"] == "quarantined"
        assert q["title"] is None and q["body"] is None and q["tags"] is None
        assert q["author"] == {"author": "agent", "identity": ID} and q["reason"] == "update"

        clock.advance(5_000)
        decide(store, R, ID, poisoned.id, "release", poisoned.content_hash, None, Reviewer.operator("ana"),
               clock=clock, events=events)
        succ = f"{poisoned.id}-released"
        vs = store.history(R, ME, prior)["versions"]
        assert [v["memory_id"] for v in vs] == [prior, poisoned.id, succ]
        assert [v["status"] for v in vs] == ["superseded", "tombstoned", "active"]
        assert changes(vs[1]) == ["update", "release"] and vs[1]["withheld"] == "quarantined"
        assert vs[2]["reason"] == "release" and vs[2]["body"] == "Standup moved to Tuesday."
        assert vs[2]["changes"][0]["by"]["author"] == "operator" and vs[2]["derived_from"] == [poisoned.id]

        # A quarantined record promoted into its own scope: the copy is a version, the source tombstoned.
        origin, _ = record_writes.remember_authored(store, R, ME, NewMemoryRecord(
            title="Reader preference", body="The reader prefers weekly summaries.",
            provenance=Provenance(Author.agent(ID))), Author.agent(ID))
        staged = promote_pending_gate(store, R, origin.id, run_id="d", clock=clock)
        done = gating_decide(store, R, staged.pending_id, "approve", clock=clock, events=events)
        vs = store.history(R, ME, origin.id)["versions"]
        assert [v["memory_id"] for v in vs] == [origin.id, done.promoted_id]
        assert changes(vs[0]) == ["created", "promotion"] and vs[0]["withheld"] == "quarantined"
        assert vs[1]["reason"] == "promotion" and vs[1]["withheld"] is None
    finally:
        events.close()


def test_an_erased_chain_shows_only_that_it_was_erased(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    v1 = record_writes.remember(agent_store, R, ID, "Plan", "the key is under the mat", ["home"])[0].memory_id
    clock.advance(1_000)
    v2 = record_writes.update(agent_store, R, ID, v1, "Plan", "the key is in the shed")[0].memory_id
    clock.advance(1_000)
    agent_store.erase(R, ME, v2, erased_by="dpo", reason="request")
    for asked in (v1, v2):
        out = agent_store.history(R, ME, asked)
        vs = out["versions"]
        assert [v["memory_id"] for v in vs] == [v1, v2]
        assert [v["status"] for v in vs] == ["erased", "erased"]
        assert [v["status_before_erase"] for v in vs] == ["superseded", "active"]
        assert changes(vs[0]) == ["created", "erase"] and changes(vs[1]) == ["update", "erase"]
        for v in vs:
            assert v["withheld"] == "erased"
            assert (v["title"], v["body"], v["tags"], v["author"], v["trust"]) == (None,) * 5
            assert all(c["by"] is None for c in v["changes"])
            assert "key" not in repr(v) and "home" not in repr(v)
    with pytest.raises(RecordNotFound):  # another identity cannot learn of the erased ids either
        agent_store.history(R, Scope.identity(R, OTHER), v1)


def test_held_forgets_approved_and_released_and_a_retier(open_store: Callable[..., AgentMemoryStore],
                                                         clock: ManualClock) -> None:
    store: Any = open_store()
    events = EventBus(clock)
    try:
        keep = record_writes.remember(store, R, ID, "Deploy window", "Tuesdays after 14:00 UTC.")[0].memory_id
        drop = record_writes.remember(store, R, ID, "Build host", "ci-7 builds the release.")[0].memory_id
        for mid in (keep, drop):
            held = request_forget(store, ME, mid, Author.agent(ID), TAINT, session_key="s1", clock=clock, events=events)
            assert held.outcome == "held"
        for mid, verdict in ((drop, "tombstone"), (keep, "release")):
            rec = store.get(R, mid)
            decide(store, R, ID, mid, verdict, rec.content_hash, None, Reviewer.operator("ana"), clock=clock,
                   events=events)
        assert changes(store.history(R, ME, drop)["versions"][0]) == ["created", "forget"]
        assert changes(store.history(R, ME, keep)["versions"][0]) == ["created", "forget_released"]

        record_writes.apply_batch(store, StagedBatch(realm=R, author=Author.operator(), ops=(
            RetierOp(id=keep, trust=TrustTier.AGENT_VERIFIED), SetRankOp(id=keep, rank=1))))
        (v,) = store.history(R, ME, keep)["versions"]
        assert changes(v) == ["created", "forget_released", "retier", "rank"]
        assert v["trust"] == "agent_verified" and v["changes"][2]["by"] == {"author": "operator"}
    finally:
        events.close()


def test_a_chain_longer_than_the_cap_is_truncated(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    ids = [record_writes.remember(agent_store, R, ID, "Counter", "count 0")[0].memory_id]
    for n in range(1, MAX_HISTORY_VERSIONS + 5):
        clock.advance(1)
        ids.append(record_writes.update(agent_store, R, ID, ids[-1], body=f"count {n}")[0].memory_id)
    out = agent_store.history(R, ME, ids[-1])
    assert out["truncated"] is True and len(out["versions"]) == MAX_HISTORY_VERSIONS
    # the versions nearest the one asked for, oldest first
    assert [v["memory_id"] for v in out["versions"]] == ids[-MAX_HISTORY_VERSIONS:]
    assert agent_store.history(R, ME, ids[5])["truncated"] is True
    short = agent_store.history(R, ME, ids[0])
    assert [v["memory_id"] for v in short["versions"]] == ids[:MAX_HISTORY_VERSIONS]


def test_a_copy_promoted_into_a_mob_is_not_a_version(agent_store: AgentMemoryStore, clock: ManualClock) -> None:
    events = EventBus(clock)
    try:
        team = Scope.mob(R, "team")
        mine = record_writes.remember(agent_store, R, ID, "Deploys", "Deploys happen on Thursdays.")[0].memory_id
        copies = []
        for _ in range(2):  # two copies in the mob, both derived from my record: neither joins my history
            staged = promote_pending_gate(agent_store, R, mine, run_id="d", clock=clock, target_scope=team)
            copies.append(gating_decide(agent_store, R, staged.pending_id, "approve", clock=clock, events=events).promoted_id)
        v2 = record_writes.update(agent_store, R, ID, mine, body="Deploys happen on Fridays.")[0].memory_id
        out = agent_store.history(R, ME, v2)
        assert [v["memory_id"] for v in out["versions"]] == [mine, v2] and not out["truncated"]
        for copy in copies:
            with pytest.raises(RecordNotFound):
                agent_store.history(R, ME, copy)
        assert [v["memory_id"] for v in agent_store.history(R, team, copies[0])["versions"]] == [copies[0]]
    finally:
        events.close()
