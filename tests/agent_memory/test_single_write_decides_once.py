"""A remember decides each thing once and carries the answer to the write: the write gate's verdict asked
while its dedup is planned is the one its batch is applied under, and the content hash the planner
computed is the one the validator's recreation and erasure rules use. The outcomes are those of asking
again: a write the gate quarantines lands quarantined, a repeat of held content answers the held record,
and erased content (or a spelling of it that differs in whitespace or case) is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes, validator
from meta_memory.agent_memory.model import Author, Scope, StatusKind
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.identity import parse_realm

R = "default"
ID = "lead:main"


class CountingGate:
    """A write gate answering ``reason`` for every batch, counting the questions."""

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason
        self.asked = 0

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        self.asked += 1
        return self.reason


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000)) as s:
        yield s


def test_a_remember_asks_the_gate_once_and_lands_as_it_answered(store: Any) -> None:
    gate = CountingGate()
    rec, created, _ = record_writes.remember_record(store, R, ID, "Deploy notes", "restart the worker", gate=gate)
    assert created and rec.status.kind is StatusKind.ACTIVE
    assert gate.asked == 1

    held = CountingGate("session tainted by a test")
    rec, created, _ = record_writes.remember_record(store, R, ID, "Other notes", "drain the queue", gate=held)
    assert created and rec.status.kind is StatusKind.QUARANTINED and rec.status.detail == "session tainted by a test"
    assert held.asked == 1

    # the same content again from a tainted session: answered with the held record, nothing new is written
    again, created, _ = record_writes.remember_record(store, R, ID, "Other notes", "drain the queue", gate=held)
    assert not created and again.id == rec.id
    assert held.asked == 2
    assert [r.title for _, r in store.list_active(R, Scope.identity(R, ID))] == ["Deploy notes"]


def test_a_batch_asks_the_gate_once_per_pass(store: Any) -> None:
    gate = CountingGate()
    items = [RememberItem("First", "one body", ()), RememberItem("Second", "two body", ())]
    outcomes = record_writes.remember_many(store, R, ID, items, gate=gate)
    assert [o.created for o in outcomes] == [True, True]
    assert gate.asked == 1


def test_the_validator_reuses_the_single_remembers_content_hash(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[tuple[str, str]] = []
    real = validator.content_hash

    def counting(title: str, body: str) -> str:
        computed.append((title, body))
        return real(title, body)

    monkeypatch.setattr(validator, "content_hash", counting)
    record_writes.remember_record(store, R, ID, "Deploy notes", "restart the worker")
    assert computed == []  # the planner's hash of this very record went with it


def test_erased_content_is_still_refused_to_a_single_remember(store: Any) -> None:
    scope = Scope.identity(R, ID)
    rec, _, _ = record_writes.remember_record(store, R, ID, "Door code", "the code is on the card")
    store.erase(R, scope, rec.id, erased_by="test")
    for title, body in (("Door code", "the code is on the card"), ("door  CODE", "The code is on the card ")):
        with pytest.raises(AgentMemoryError) as info:
            record_writes.remember_record(store, R, ID, title, body)
        assert info.value.reason == "erased"
    assert store.list_active(R, scope) == []


def test_a_realm_name_refused_stays_refused_after_many_accepted() -> None:
    for i in range(3000):  # more names than are remembered: the memory of accepted names is bounded
        assert parse_realm(f"team-{i}") == f"team-{i}"
    for bad in (" team-1", "team-1 ", "tea\u200bm", "caf\u0065\u0301", ""):
        with pytest.raises(ValueError):
            parse_realm(bad)
    assert parse_realm("team-1") == "team-1" and parse_realm(None) == "default"
