""":class:`~meta_memory.tool.recorder.RecorderOps` over an agent-memory store.

:class:`StoreRecorderOps` adapts an
:class:`~meta_memory.agent_memory.store.base.AgentMemoryStore` to the recorder
tool. Every operation acts in the realm of the calling session
(:class:`~meta_memory.session_ref.SessionRef`): scope ``identity{realm, identity}``
for every write, the firewall's write gate bound to that session (its realm,
identity and key), and ``propose`` into ``mob{realm, mob}`` with the gate's verdict
recorded as the proposal's taint. A ``forget`` the gate would
quarantine is held for review instead of applied
(:func:`meta_memory.review.forgets.request_forget`): the record stays active.

Recall is injected (``recall``): a host passes its recall provider's selection.
Without one, ``always`` lists the newest active records and ``contextual``
runs the store's full-text search over the quoted query terms. ``recall_with_mob``
adds the records of ``mob{realm, mob}``, read that way, interleaving them with the
identity's (:func:`interleave`); a host whose ``recall`` reads through its recall
provider overrides it to read the mob through the provider too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.expiry import expiry_from_ttl
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
from meta_memory.agent_memory.writes import KEEP_EXPIRY
from meta_memory.firewall.gate import LlmWriteGate
from meta_memory.limits import MAX_TTL_S
from meta_memory.recall.fts import match_expression
from meta_memory.review.forgets import ForgetRequest, request_forget
from meta_memory.session_ref import SessionRef
from meta_memory.tool.args import RecordDraft

__all__ = ["RecallFn", "StoreRecorderOps", "interleave", "new_memory_record"]

#: ``recall(session, query_text, selection, max_entries)`` -> rows or records of the session's identity scope.
RecallFn = Callable[[SessionRef, "str | None", str, int], Sequence[Any]]

_FRESH_WRITE = "fresh_write"

T = TypeVar("T")


def interleave(own: Sequence[T], shared: Sequence[T], limit: int) -> list[T]:
    """``own`` and ``shared`` taken in turn, ``own`` first, each in its order, until ``limit`` (what a
    recall over the identity's scope and a mob's answers: each scope ranked apart, neither crowding the
    other out). The rest of the longer list follows once the shorter one runs out."""
    out: list[T] = []
    for i in range(max(len(own), len(shared))):
        out.extend(rows[i] for rows in (own, shared) if i < len(rows))
    return out[: max(0, limit)]


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
    """The write gate as the store calls it, bound to the calling session: the store names the realm of
    the batch it applies (the session's realm, where every tool write lands)."""

    def __init__(self, gate: LlmWriteGate, session: SessionRef) -> None:
        self._gate = gate
        self._session = session

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return self._gate.quarantine_reason(author, batch_kind, evidence, realm=realm,
                                            session_key=self._session.session_key,
                                            shares_key_with=self._session.shares_key_with)


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


def _fields(row: Any) -> dict[str, Any]:
    """The recall fields of one row (a mapping, or a record or view read by attribute)."""
    if isinstance(row, Mapping):
        return dict(row)
    return {name: getattr(row, name, None) for name in ("memory_id", "title", "body", "tags", "updated_at_ms")}


class StoreRecorderOps:
    """Adapts an agent-memory store to :class:`RecorderOps`; each call acts in its session's realm.

    Args:
        store: the agent-memory store.
        gate: the firewall's :class:`LlmWriteGate`; ``None`` leaves gating to the
            store's default gate.
        recall: optional recall selection (module docstring).
    """

    def __init__(
        self,
        store: AgentMemoryStore,
        gate: LlmWriteGate | None,
        recall: RecallFn | None = None,
    ) -> None:
        self._store = store
        self._gate = gate
        self._recall = recall

    @staticmethod
    def _scope(session: SessionRef) -> Scope:
        return Scope.identity(session.realm, session.identity)

    def _bound_gate(self, session: SessionRef) -> _SessionGate | None:
        return _SessionGate(self._gate, session) if self._gate is not None else None

    def remember_authored(self, session: SessionRef, record: RecordDraft, author: Author) -> tuple[str, str | None]:
        memory_id, reason, _created = self.remember_authored_created(session, record, author)
        return memory_id, reason

    def remember_authored_created(
        self, session: SessionRef, record: RecordDraft, author: Any
    ) -> tuple[str, str | None, bool]:
        """:meth:`remember_authored` and whether a record was created (``False``: an active record of
        the same content was returned)."""
        stored, created = record_writes.remember_authored(
            self._store,
            session.realm,
            self._scope(session),
            replace(new_memory_record(record, author), expires_at_ms=self._expiry(record)),
            author,
            gate=self._bound_gate(session),
        )
        return stored.id, _quarantine_of(stored), created

    def _expiry(self, record: RecordDraft) -> int | None:
        """``expires_at_ms`` of the draft's ``ttl_s`` (checked against the tool's cap by the recorder)."""
        return expiry_from_ttl(record.ttl_s, self._store.clock.now_ms(), MAX_TTL_S)

    def supersede_authored(
        self, session: SessionRef, prior_id: str, record: RecordDraft, author: Author
    ) -> tuple[str, str | None]:
        stored = record_writes.supersede(
            self._store,
            session.realm,
            self._scope(session),
            prior_id,
            new_memory_record(record, author),
            author,
            gate=self._bound_gate(session),
            expiry=KEEP_EXPIRY if record.ttl_s is None else self._expiry(record),
        )
        return stored.id, _quarantine_of(stored)

    def forget_authored(self, session: SessionRef, memory_id: str, author: Author) -> ForgetRequest:
        reason = (self._gate.forget_hold_reason(author, realm=session.realm, session_key=session.session_key,
                                                shares_key_with=session.shares_key_with)
                  if self._gate is not None else None)
        if reason is None:
            found = record_writes.forget(self._store, session.realm, self._scope(session), memory_id, author)
            return ForgetRequest("forgotten" if found else "not_found", memory_id.strip())
        return request_forget(
            self._store, self._scope(session), memory_id, author, reason, session_key=session.session_key,
            clock=self._store.clock,
        )

    def recall(
        self, session: SessionRef, query_text: str | None, selection: str, max_entries: int
    ) -> Sequence[Mapping[str, Any]]:
        if self._recall is not None:
            return [_row(r) for r in self._recall(session, query_text, selection, max_entries)]
        return self._scope_rows(session.realm, self._scope(session), query_text, selection, max_entries)

    def recall_with_mob(
        self, session: SessionRef, mob: str, query_text: str | None, selection: str, max_entries: int
    ) -> Sequence[Mapping[str, Any]]:
        """The identity's records (:meth:`recall`) and those of ``mob{session.realm, mob}`` (each carrying
        ``mob``; active records, searched as the store path of :meth:`recall` searches the identity's),
        interleaved, at most ``max_entries``."""
        own = [_fields(r) for r in self.recall(session, query_text, selection, max_entries)]
        shared = [{**_fields(r), "mob": mob} for r in self._scope_rows(
            session.realm, Scope.mob(session.realm, mob), query_text, selection, max_entries)]
        return interleave(own, shared, max_entries)

    def _scope_rows(self, realm: str, scope: Scope, query_text: str | None, selection: str,
                    max_entries: int) -> list[Any]:
        """Active records of ``scope``: the full-text search of ``query_text`` (contextual) or the newest."""
        if selection == "contextual":
            expression = match_expression(query_text)
            if expression is None:
                return []
            return [_row(r) for r, _score in self._store.search(realm, scope, expression, max_entries)]
        records = sorted(
            self._store.active_records(realm, scope), key=lambda r: (r.updated_at_ms, r.created_at_ms),
            reverse=True,
        )
        return [_row(r) for r in records[:max_entries]]

    def mark_recalled(self, session: SessionRef, memory_ids: Sequence[str]) -> None:
        self._store.mark_usage(session.realm, memory_ids, UsageEvent.EXPLICIT_RECALL)

    def propose(self, session: SessionRef, mob: str, record: RecordDraft, author: Author) -> str:
        taint = (
            self._gate.quarantine_reason(author, _FRESH_WRITE, [], realm=session.realm,
                                         session_key=session.session_key,
                                         shares_key_with=session.shares_key_with)
            if self._gate is not None
            else None
        )
        return record_writes.propose(
            self._store, session.realm, Scope.mob(session.realm, mob), new_memory_record(record, author), author, taint
        )
