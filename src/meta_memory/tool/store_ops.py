""":class:`~meta_memory.tool.recorder.RecorderOps` over an agent-memory store.

:class:`StoreRecorderOps` binds one realm of an
:class:`~meta_memory.agent_memory.store.base.AgentMemoryStore` to the recorder
tool: scope ``identity{realm, identity}`` for every write, the firewall's write
gate bound to the calling session and realm, and ``propose`` into ``mob{realm, mob}`` with
the gate's verdict recorded as the proposal's taint. A ``forget`` the gate would
quarantine is held for review instead of applied
(:func:`meta_memory.review.forgets.request_forget`): the record stays active.

Recall is injected (``recall``): a host passes its recall provider's selection.
Without one, ``always`` lists the newest active records and ``contextual``
runs the store's full-text search over the quoted query terms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from meta_memory.agent_memory.model import (
    Author,
    Kind,
    MemoryRecord,
    NewMemoryRecord,
    Provenance,
    Scope,
    StatusKind,
    UsageEvent,
    VerificationClaim,
)
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.firewall.gate import LlmWriteGate
from meta_memory.recall.fts import match_expression
from meta_memory.review.forgets import ForgetRequest, request_forget
from meta_memory.tool.args import RecordDraft

__all__ = ["RecallFn", "StoreRecorderOps", "new_memory_record"]

#: ``recall(identity, query_text, selection, max_entries)`` -> rows or records.
RecallFn = Callable[[str, "str | None", str, int], Sequence[Any]]

_FRESH_WRITE = "fresh_write"


def new_memory_record(draft: RecordDraft, author: Author) -> NewMemoryRecord:
    """The store payload for a tool draft: kind, title, description, body, tags and a
    provenance carrying ``author`` and, for ``verified_claim``, the verification claim."""
    verification = (
        VerificationClaim(checked=draft.verification["checked"]) if draft.verification is not None else None
    )
    return NewMemoryRecord(
        title=draft.title,
        body=draft.body,
        provenance=Provenance(author=author, verification=verification),
        kind=Kind(draft.kind),
        description=draft.description,
        tags=draft.tags,
    )


class _SessionGate:
    """The write gate as the store calls it, bound to the calling session."""

    def __init__(self, gate: LlmWriteGate, session_key: str | None, realm: str) -> None:
        self._gate = gate
        self._session_key = session_key
        self._realm = realm

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any]) -> str | None:
        return self._gate.quarantine_reason(author, batch_kind, evidence, session_key=self._session_key,
                                            realm=self._realm)


def _quarantine_of(record: MemoryRecord) -> str | None:
    if record.status.kind is StatusKind.QUARANTINED:
        return record.status.detail or "quarantined"
    return None


def _row(record: Any) -> Any:
    if isinstance(record, MemoryRecord):
        return record.project().model_dump()
    if hasattr(record, "model_dump"):
        return record.model_dump()
    return record


class StoreRecorderOps:
    """Adapts one realm of an agent-memory store to :class:`RecorderOps`.

    Args:
        store: the agent-memory store.
        realm: the configured realm (``agent_memory.realm``).
        gate: the firewall's :class:`LlmWriteGate`; ``None`` leaves gating to the
            store's default gate.
        recall: optional recall selection (module docstring).
    """

    def __init__(
        self,
        store: AgentMemoryStore,
        realm: str,
        gate: LlmWriteGate | None,
        recall: RecallFn | None = None,
    ) -> None:
        self._store = store
        self._realm = realm
        self._gate = gate
        self._recall = recall

    def _scope(self, identity: str) -> Scope:
        return Scope.identity(self._realm, identity)

    def _bound_gate(self, session_key: str | None) -> _SessionGate | None:
        return _SessionGate(self._gate, session_key, self._realm) if self._gate is not None else None

    def remember_authored(
        self, identity: str, record: RecordDraft, author: Author, session_key: str | None
    ) -> tuple[str, str | None]:
        memory_id, reason, _created = self.remember_authored_created(identity, record, author, session_key)
        return memory_id, reason

    def remember_authored_created(
        self, identity: str, record: RecordDraft, author: Any, session_key: str | None
    ) -> tuple[str, str | None, bool]:
        """:meth:`remember_authored` and whether a record was created (``False``: an active record of
        the same content was returned)."""
        stored, created = self._store.remember_authored(
            self._realm,
            self._scope(identity),
            new_memory_record(record, author),
            author,
            gate=self._bound_gate(session_key),
        )
        return stored.id, _quarantine_of(stored), created

    def supersede_authored(
        self, identity: str, prior_id: str, record: RecordDraft, author: Author, session_key: str | None
    ) -> tuple[str, str | None]:
        stored = self._store.supersede(
            self._realm,
            self._scope(identity),
            prior_id,
            new_memory_record(record, author),
            author,
            gate=self._bound_gate(session_key),
        )
        return stored.id, _quarantine_of(stored)

    def forget_authored(
        self, identity: str, memory_id: str, author: Author, session_key: str | None
    ) -> ForgetRequest:
        reason = (self._gate.forget_hold_reason(author, session_key=session_key, realm=self._realm)
                  if self._gate is not None else None)
        if reason is None:
            found = self._store.forget(self._realm, self._scope(identity), memory_id, author)
            return ForgetRequest("forgotten" if found else "not_found", memory_id.strip())
        return request_forget(
            self._store, self._scope(identity), memory_id, author, reason, session_key=session_key,
            clock=self._store.clock,
        )

    def recall(
        self, identity: str, query_text: str | None, selection: str, max_entries: int
    ) -> Sequence[Mapping[str, Any]]:
        if self._recall is not None:
            return [_row(r) for r in self._recall(identity, query_text, selection, max_entries)]
        scope = self._scope(identity)
        if selection == "contextual":
            expression = match_expression(query_text)
            if expression is None:
                return []
            return [_row(r) for r, _score in self._store.search(self._realm, scope, expression, max_entries)]
        records = sorted(
            self._store.active_records(self._realm, scope), key=lambda r: (r.updated_at_ms, r.created_at_ms),
            reverse=True,
        )
        return [_row(r) for r in records[:max_entries]]

    def mark_recalled(self, identity: str, memory_ids: Sequence[str]) -> None:
        self._store.mark_usage(self._realm, memory_ids, UsageEvent.EXPLICIT_RECALL)

    def propose(self, identity: str, mob: str, record: RecordDraft, author: Author, session_key: str | None) -> str:
        taint = (
            self._gate.quarantine_reason(author, _FRESH_WRITE, [], session_key=session_key, realm=self._realm)
            if self._gate is not None
            else None
        )
        return self._store.propose(
            self._realm, Scope.mob(self._realm, mob), new_memory_record(record, author), author, taint
        )
