from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Kind, NewMemoryRecord, Provenance, Scope, VerificationClaim
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.events.bus import EventBus

REALM = "default"
IDENTITY = "lead:main"


class FakeGate:
    """Quarantines agent-authored writes while ``reason`` is set (the real gate exempts stewards' reviews)."""

    def __init__(self, reason: str | None = "session tainted by web tool 'web_search'") -> None:
        self.reason = reason

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        if author.kind.value != "agent":
            return None
        return self.reason


class Env:
    """A store on a tmp dir, a manual clock, an event bus and a poisoning gate."""

    def __init__(self, root: Path, clock: ManualClock) -> None:
        self.root = root
        self.clock = clock
        self.gate = FakeGate()
        self.store = SqliteAgentMemoryStore(root, clock, gate=self.gate)
        self.events = EventBus(clock)

    def scope(self, identity: str = IDENTITY) -> Scope:
        return Scope.identity(REALM, identity)

    def poisoned(
        self,
        title: str = "Reader preference",
        body: str = "The reader prefers weekly summaries.",
        identity: str = IDENTITY,
        *,
        kind: Kind = Kind.FACT,
        verification: str | None = None,
    ) -> Any:
        """An agent write from a tainted session: lands quarantined."""
        prov = Provenance(
            Author.agent(identity),
            verification=VerificationClaim(verification) if verification else None,
        )
        rec, created = record_writes.remember_authored(self.store,
            REALM,
            self.scope(identity),
            NewMemoryRecord(title=title, body=body, kind=kind, provenance=prov),
            Author.agent(identity),
        )
        assert created and rec.status.kind.value == "quarantined"
        return rec

    def clean(self, title: str = "Clean fact", body: str = "Trains leave at nine.", identity: str = IDENTITY) -> Any:
        rec, _ = record_writes.remember(self.store, REALM, identity, title, body)
        return self.store.get(REALM, rec.memory_id)

    def events_of(self, event_type: str) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self.events.list(limit=10_000) if e.event_type == event_type]

    def reopen(self) -> None:
        """A restart: a new store object on the same files."""
        self.store.close()
        self.store = SqliteAgentMemoryStore(self.root, self.clock, gate=self.gate)

    def audit(self, memory_id: str | None = None) -> list[dict[str, Any]]:
        return self.store.audit_rows(REALM, memory_id)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def env(tmp_path: Path, clock: ManualClock) -> Iterator[Env]:
    e = Env(tmp_path / "agent-memory", clock)
    yield e
    e.store.close()
    e.events.close()
