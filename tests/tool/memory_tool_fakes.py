"""An in-memory store implementing RecorderOps, gated by the real firewall (test helper)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from meta_memory.agent_memory.writes import PriorNotFound
from meta_memory.clock import ManualClock
from meta_memory.firewall import Firewall
from meta_memory.firewall.gate import author_identity
from meta_memory.session_ref import SessionRef
from meta_memory.tool.args import RecordDraft


@dataclass
class Row:
    memory_id: str
    identity: str
    record: RecordDraft
    author: Any
    status: str = "active"
    quarantine_reason: str | None = None
    supersedes: str | None = None
    updated_at_ms: int = 0
    recalls: int = 0
    realm: str = "default"


@dataclass
class FakeStore:
    """Identity-scoped records with exact-content dedup, supersede and tombstone; every call names its
    session (the realm is recorded on each row and proposal)."""

    firewall: Firewall
    clock: ManualClock
    rows: dict[str, Row] = field(default_factory=dict)
    proposals: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_with: Exception | None = None
    seq: int = 0

    def _id(self, prefix: str = "mem") -> str:
        self.seq += 1
        return f"{prefix}-{self.seq}"

    def _gate(self, author: Any, session: SessionRef) -> str | None:
        assert author_identity(author) == session.identity
        return self.firewall.gate.quarantine_reason(author, "fresh_write", (), realm=session.realm,
                                                    session_key=session.session_key)

    def remember_authored(self, session: SessionRef, record: RecordDraft, author: Any):
        identity = session.identity
        if self.fail_with is not None:
            raise self.fail_with
        for row in self.rows.values():
            if row.identity == identity and row.status == "active" and (row.record.title, row.record.body) == (
                record.title,
                record.body,
            ):
                return row.memory_id, None
        reason = self._gate(author, session)
        memory_id = self._id()
        self.clock.advance(1)
        self.rows[memory_id] = Row(
            memory_id, identity, record, author, "quarantined" if reason else "active", reason,
            updated_at_ms=self.clock.now_ms(), realm=session.realm,
        )
        return memory_id, reason

    def supersede_authored(self, session: SessionRef, prior_id, record, author):
        identity = session.identity
        prior = self.rows.get(prior_id)
        if prior is None or prior.identity != identity:
            raise PriorNotFound(prior_id)  # as the store answers: another scope's id is not told apart
        reason = self._gate(author, session)
        memory_id = self._id()
        self.clock.advance(1)
        self.rows[memory_id] = Row(
            memory_id, identity, record, author, "quarantined" if reason else "active", reason,
            supersedes=prior_id, updated_at_ms=self.clock.now_ms(), realm=session.realm,
        )
        if not reason:
            prior.status = "superseded"
        return memory_id, reason

    def forget_authored(self, session: SessionRef, memory_id, author) -> bool:
        row = self.rows.get(memory_id)
        if row is None or row.identity != session.identity or row.status == "tombstoned":
            return False
        row.status = "tombstoned"
        return True

    def recall(self, session: SessionRef, query_text, selection, max_entries) -> Sequence[Mapping[str, Any]]:
        rows = [r for r in self.rows.values()
                if (r.realm, r.identity) == (session.realm, session.identity) and r.status == "active"]
        if selection == "contextual":
            terms = (query_text or "").lower().split()
            rows = [r for r in rows if any(t in (r.record.title + " " + r.record.body).lower() for t in terms)]
        rows.sort(key=lambda r: -r.updated_at_ms)
        return [
            {
                "memory_id": r.memory_id,
                "title": r.record.title,
                "body": r.record.body,
                "tags": list(r.record.tags),
                "updated_at_ms": r.updated_at_ms,
                "kind": r.record.kind,  # extra columns must not leak into the tool result
            }
            for r in rows[:max_entries]
        ]

    def mark_recalled(self, session: SessionRef, memory_ids) -> None:
        for memory_id in memory_ids:
            self.rows[memory_id].recalls += 1

    def propose(self, session: SessionRef, mob, record, author) -> str:
        proposal_id = self._id("prop")
        self.proposals[proposal_id] = {
            "realm": session.realm,
            "mob": mob,
            "record": record,
            "author": author,
            "taint": self._gate(author, session),
        }
        return proposal_id
