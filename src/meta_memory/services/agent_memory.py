"""App-facing agent memory: ``meta/agent_memory/remember|remember_batch|recall|forget|update|manifest``.

Seed: "Agent memory injection". Application writes carry the ``application``
author and are never quarantined. Explicit recall runs the configured recall
provider under ``recall_timeout_ms`` and always returns provider errors
(there is no "skip" for an explicit call); automatic recall for injection
goes through :meth:`AgentMemoryService.recall_for_injection`, whose failures
the injection coordinator handles under ``recall_failure_policy``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..agent_memory import record_writes
from ..agent_memory.expiry import expiry_from_ttl
from ..agent_memory.filters import FilterNode
from ..agent_memory.list_cursor import decode_cursor, encode_cursor
from ..agent_memory.model import Author, EvidenceRef, MemoryRecord, Scope, StatusKind, UsageEvent
from ..agent_memory.writes import KEEP_EXPIRY, KeepExpiry, PriorNotFound, RememberItem
from ..deadline import Deadline, bound
from ..errors import AgentMemoryError, InvalidParams, MetaError, RecordNotFound, ValueRuleBroken
from ..events.bus import EventSink
from ..firewall.gate import DerivedWriteGate
from ..injection.timebox import ProviderSaturated, ProviderTimeout, TimeBox
from ..recall.provider import RecallOutcome, RecallProvider, RecallRequest
from ..tool.store_ops import interleave
from .recall_reader import guarded_recall

if TYPE_CHECKING:  # pragma: no cover
    from ..agent_memory.config import AgentMemoryConfig
    from ..agent_memory.store.base import AgentMemoryStore
    from ..firewall.gate import LlmWriteGate

__all__ = ["AgentMemoryService"]


def _item_error(op_index: int, error: AgentMemoryError | None) -> dict[str, Any] | None:
    """The JSON-RPC error of a refused ``remember_batch`` item: the one that record alone would get
    (a field rule: ``-32602`` naming ``records.<i>.<field>``; otherwise ``-32040``), with ``data.op_index``."""
    if error is None:
        return None
    if isinstance(error, ValueRuleBroken):
        wire = InvalidParams(error.rule, error.field).to_jsonrpc()
        wire["data"]["op_index"] = op_index
        return wire
    return error.to_jsonrpc()


def _quarantine_reason(record: MemoryRecord) -> str | None:
    """The reason ``record`` waits in quarantine, or ``None`` when it is not quarantined."""
    if record.status.kind is StatusKind.QUARANTINED:
        return record.status.detail or "quarantined"
    return None


def _quarantined_event(realm: str, record_id: str, reason: str) -> dict[str, Any]:
    """``memory.write.quarantined`` data of an application write derived from a tainted session."""
    return {"realm": realm, "record_id": record_id, "author": "application", "reason": reason}


class AgentMemoryService:
    """Remember / recall / forget / update / manifest for applications and the injection path.

    Args:
        store: an :class:`~meta_memory.agent_memory.store.base.AgentMemoryStore`.
        config: the ``[agent_memory]`` config (defaults: selection, max_entries, timeouts).
        provider: the recall provider (lexical by default).
        timebox: shared deadline runner for provider calls.
        events: where timeline events are published (the runtime's
            :class:`~meta_memory.events.bus.EventBus`; none when ``None``).
        gate: the firewall's write gate, which judges writes derived from sessions
            (``derived_from_sessions``); ``None``: such writes are refused (``unsupported``).
        on_erased: ``on_erased(realm, ids)`` after an erase committed (the session state forgets the ids).

    Every write that changes a record emits one ``memory.record.*`` timeline event about the
    identity, after its transaction commits: ``memory.record.created`` ``{realm, record_id}``,
    ``memory.record.updated`` ``{realm, record_id, supersedes, tags_merged?}`` (an update, or a
    duplicate remember that merged that many tags) and ``memory.record.forgotten`` ``{realm, record_id}``.
    A write derived from sessions that the gate quarantined emits ``memory.write.quarantined``
    ``{realm, record_id, author: "application", reason}`` instead of ``memory.record.created``.
    Events name ids, never titles or bodies.
    """

    def __init__(self, store: AgentMemoryStore, config: AgentMemoryConfig, provider: RecallProvider, timebox: TimeBox,
                 events: EventSink | None = None,
                 gate: LlmWriteGate | None = None,
                 on_erased: Callable[[str, Sequence[str]], object] | None = None,
                 usage_marks: bool = True) -> None:
        self.store = store
        self._usage_marks = usage_marks
        self.gate = gate
        self._on_erased = on_erased
        self.config = config
        self.provider = provider
        self.timebox = timebox
        self._sink = events

    def _event(self, event_type: str, identity: str, data: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink.emit(event_type, data, identity=identity)

    def _events(self, events: list[tuple[str, dict[str, Any], str | None]]) -> None:
        """Publish ``(event_type, data, identity)`` events in order, at once."""
        if self._sink is not None:
            self._sink.emit_many(events)

    # -- writes ---------------------------------------------------------------------------------
    def _derived(self, realm: str, identity: str, sessions: Sequence[str],
                 manages: Callable[[str, str], bool] | None,
                 ) -> tuple[tuple[EvidenceRef, ...], DerivedWriteGate | None]:
        """The evidence refs and bound gate of a write derived from ``sessions`` (none: ``((), None)``);
        ``manages(realm, identity)`` narrows whose taint of a named key counts besides ``identity``'s own
        (``None``: every identity's), the rule of the caller's ``memory`` tool writes."""
        if not sessions:
            return (), None
        if self.gate is None:
            raise AgentMemoryError("unsupported", "derived_from_sessions needs the firewall's write gate")
        keys = tuple(dict.fromkeys(sessions))
        shares = None if manages is None else (lambda other: manages(realm, other))
        return (tuple(EvidenceRef(session_id=k) for k in keys),
                DerivedWriteGate(self.gate, identity, keys, realm, shares))

    def _expiry(self, ttl_s: int | None, field: str = "ttl_s") -> int | None:
        """``expires_at_ms`` of a caller's ``ttl_s`` (seconds from now, at most ``agent_memory.max_ttl_s``;
        a longer one is refused naming ``field`` and the cap)."""
        return expiry_from_ttl(ttl_s, self.store.clock.now_ms(), self.config.max_ttl_s, field=field)

    def remember(self, realm: str, identity: str, title: str, body: str, tags: Sequence[str],
                 derived_from_sessions: Sequence[str] = (), ttl_s: int | None = None, *,
                 metadata: Mapping[str, Any] | None = None,
                 manages: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
        """Store one record in ``identity``'s scope. Output: the wire record plus ``created``
        (``False`` when an active record with the same content was found instead), ``supersedes``
        and ``tags_added``: when that record lacked some of the given tags they were merged into a
        new version (``supersedes`` = the old id, ``tags_added`` = the merged tags); otherwise
        ``supersedes`` is ``None`` and ``tags_added`` empty.

        ``derived_from_sessions`` names sessions of ``identity`` in ``realm`` the content was derived
        from (a host's own summary or notes of them): they are kept as the record's provenance
        evidence, and when one is tainted, or was tainted when a reset closed it, or another identity's
        session of one of those keys in ``realm`` is tainted and counts, the record lands quarantined and
        the output carries ``quarantined`` (the reason). Another identity's taint counts as it does for a
        ``memory`` tool write from the key: every identity's when ``manages`` is ``None``, else only an
        identity ``manages(realm, identity)`` admits (the caller manages its sessions, under
        ``[agent_memory] shared_key_taint = "managed"``); its reason reads "another identity's session of
        this key", never that identity's source.

        ``ttl_s`` (seconds, 1..``agent_memory.max_ttl_s``) sets the new record's ``expires_at_ms``; a
        duplicate found instead keeps its own expiry (the output's ``expires_at_ms`` says which).
        ``metadata``: the record's JSON object (not part of the content hash, so a duplicate
        keeps the stored record's metadata: change it with :meth:`update`)."""
        expires = self._expiry(ttl_s)
        evidence, gate = self._derived(realm, identity, derived_from_sessions, manages)
        stored, created, merge = record_writes.remember_record(
            self.store, realm, identity, title, body, tags, evidence=evidence, gate=gate, expires_at_ms=expires,
            metadata=metadata)
        reason = _quarantine_reason(stored)
        if reason is not None:
            if created or merge is not None:
                self._event("memory.write.quarantined", identity, _quarantined_event(realm, stored.id, reason))
        else:
            event = self._record_event(realm, record_id=stored.id, created=created, merge=merge)
            if event is not None:
                self._event(event[0], identity, event[1])
        out = {**stored.wire(), "created": created,
               "supersedes": merge.supersedes if merge else None,
               "tags_added": list(merge.tags_added) if merge else []}
        if reason is not None:
            out["quarantined"] = reason
        return out

    def remember_batch(self, realm: str, identity: str,
                       records: Sequence[tuple[str, str, Sequence[str], int | None, Mapping[str, Any] | None]],
                       derived_from_sessions: Sequence[str] = (), *,
                       manages: Callable[[str, str], bool] | None = None) -> dict[str, Any]:
        """Store ``records`` (``(title, body, tags, ttl_s, metadata)`` each, ``ttl_s`` and ``metadata``
        ``None`` for none) in ``identity``'s scope in one transaction. A ``ttl_s`` over
        ``agent_memory.max_ttl_s`` refuses the whole call naming ``records.<i>.ttl_s``; each result carries
        its record's ``expires_at_ms``.

        Output ``{results, created, existing, refused}``: ``results[i]`` is
        ``{op_index, memory_id, created, supersedes, tags_added}`` for a stored or deduplicated record
        (as :meth:`remember` answers it: a duplicate bringing new tags merges them into a new version),
        or ``{op_index, error: {code, message, data}}`` (the JSON-RPC error that record alone would
        get, with ``data.op_index``: ``-32602`` naming ``data.field`` ``records.<i>.<field>`` for a field
        rule, ``-32040`` with ``data.reason`` ``secret_detected`` or ``invalid_record`` otherwise); the
        counts sum to ``len(records)``. Refusals are per item: a refused record writes nothing,
        the others commit. After the commit, each item emits the event :meth:`remember` would, in
        order. See :func:`~meta_memory.agent_memory.record_writes.remember_many`. ``derived_from_sessions``
        and ``manages`` apply to every record as in :meth:`remember` (one verdict for the batch; a quarantined item carries
        ``quarantined`` and emits ``memory.write.quarantined``)."""
        items = [RememberItem(title, body, tuple(tags), metadata=metadata,
                              expires_at_ms=self._expiry(ttl_s, f"records.{i}.ttl_s"))
                 for i, (title, body, tags, ttl_s, metadata) in enumerate(records)]
        evidence, gate = self._derived(realm, identity, derived_from_sessions, manages)
        outcomes = record_writes.remember_many(self.store, realm, identity, items, evidence=evidence, gate=gate)
        results: list[dict[str, Any]] = []
        events: list[tuple[str, dict[str, Any], str | None]] = []
        counts = {"created": 0, "existing": 0, "refused": 0}
        for o in outcomes:
            if o.error is not None or o.record is None:  # an outcome holds its refusal or its record
                counts["refused"] += 1
                results.append({"op_index": o.op_index, "error": _item_error(o.op_index, o.error)})
                continue
            counts["created" if o.created else "existing"] += 1
            merge = o.merge
            item: dict[str, Any] = {"op_index": o.op_index, "memory_id": o.record.id, "created": o.created,
                                    "supersedes": merge.supersedes if merge else None,
                                    "tags_added": list(merge.tags_added) if merge else [],
                                    "expires_at_ms": o.record.expires_at_ms}
            reason = _quarantine_reason(o.record)
            if reason is not None:
                item["quarantined"] = reason
                if o.created or merge is not None:
                    events.append(("memory.write.quarantined", _quarantined_event(realm, o.record.id, reason),
                                   identity))
            else:
                event = self._record_event(realm, record_id=o.record.id, created=o.created, merge=merge)
                if event is not None:
                    events.append((event[0], event[1], identity))
            results.append(item)
        if events:
            self._events(events)
        return {"results": results, **counts}

    @staticmethod
    def _record_event(realm: str, *, record_id: str, created: bool, merge: Any) -> tuple[str, dict[str, Any]] | None:
        """The event of one remember: ``memory.record.created``, or ``memory.record.updated`` for a tag
        merge; ``None`` for a plain duplicate (it changes nothing)."""
        if created:
            return "memory.record.created", {"realm": realm, "record_id": record_id}
        if merge is not None:
            # how many tags, never which: tags are the record's content, and an erase does not reach the timeline
            return "memory.record.updated", {"realm": realm, "record_id": record_id, "supersedes": merge.supersedes,
                                             "tags_merged": len(merge.tags_added)}
        return None

    def update(self, realm: str, identity: str, memory_id: str, title: str | None, body: str | None,
               tags: Sequence[str] | None, *, ttl_s: int | None = None, clear_expiry: bool = False,
               metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Supersede ``memory_id`` in ``identity``'s scope; omitted (``None``) fields keep the prior's
        values (a ``metadata`` object replaces the prior's whole). Expiry: ``ttl_s`` (seconds from now,
        1..``agent_memory.max_ttl_s``) sets the new version's ``expires_at_ms``; ``clear_expiry`` removes it
        (the version never expires); neither keeps the prior's. Output ``{memory_id, supersedes, record}``;
        an update that changes nothing (the same title, body, tags, metadata, expiry and trust tier as the
        current version) writes nothing and emits no event: ``memory_id`` and ``record`` are the current
        version's, ``supersedes`` is ``None``.
        Raises ``RecordNotFound`` (-32001, ``unknown memory record '<id>'``) when ``memory_id`` names no
        record of the identity in ``realm`` (an unknown id, another identity's or realm's record, an erased
        one: told alike, as ``history`` and ``erase`` tell them), ``AgentMemoryError`` (-32040) when the
        record is not active (superseded, forgotten, expired), or when nothing is given."""
        expiry: int | None | KeepExpiry = KEEP_EXPIRY
        if ttl_s is not None:
            expiry = self._expiry(ttl_s)
        elif clear_expiry:
            expiry = None
        try:
            record, prior = record_writes.update(self.store, realm, identity, memory_id, title, body, tags,
                                                 expiry=expiry, metadata=metadata)
        except PriorNotFound as exc:
            raise RecordNotFound(exc.memory_id) from None
        if prior is not None:
            self._event("memory.record.updated", identity,
                        {"realm": realm, "record_id": record.memory_id, "supersedes": prior})
        return {"memory_id": record.memory_id, "supersedes": prior, "record": record.model_dump(mode="json")}

    def forget(self, realm: str, identity: str, memory_id: str) -> dict[str, Any]:
        """Tombstone ``memory_id`` if it is in ``identity``'s scope: ``{memory_id, deleted}``."""
        deleted = record_writes.forget(self.store, realm, Scope.identity(realm, identity), memory_id,
                                       Author.application())
        if deleted:
            self._event("memory.record.forgotten", identity, {"realm": realm, "record_id": memory_id})
        return {"memory_id": memory_id, "deleted": deleted}

    # -- reads ----------------------------------------------------------------------------------
    def _recall_stops_at_deadline(self) -> bool:
        """Whether a recall ends by itself at its deadline, so it may run on the calling thread: the
        provider's own work is bounded and the store stops every statement past the deadline (both
        declare ``stops_at_deadline``). Otherwise the time box runs it on a worker thread."""
        return bool(getattr(self.provider, "stops_at_deadline", False)) and bool(
            getattr(self.store, "stops_at_deadline", False))

    def _run_provider(self, request: RecallRequest, mob: str | None = None) -> list[RecallOutcome[Any]]:
        """The provider's outcome over the identity's scope, then, with ``mob``, over that mob's scope of the
        realm: one time box call, so both share the one ``recall_timeout_ms`` budget and recall slot."""
        scopes = [Scope.identity(request.realm, request.identity)]
        if mob is not None:
            scopes.append(Scope.mob(request.realm, mob))
        timeout = int(self.config.recall_timeout_ms)
        try:
            return self.timebox.call(lambda: [self._guarded_recall(request, scope) for scope in scopes], timeout,
                                     key=(request.realm, request.identity), inline=self._recall_stops_at_deadline())
        except ProviderTimeout:
            raise AgentMemoryError("timeout", f"recall exceeded {timeout} ms") from None
        except ProviderSaturated as exc:
            raise exc.refusal("recall") from None

    def recall(self, realm: str, identity: str, *, selection: str | None, query_text: str | None,
               query_terms: Sequence[str] | None, max_entries: int | None,
               where: FilterNode | None = None, mob: str | None = None) -> dict[str, Any]:
        """Explicit recall. Output ``{records: [wire record...], skip_reason, degraded_reason?}``;
        ``skip_reason`` says why a contextual recall found nothing to search for (e.g. only stopwords);
        ``degraded_reason`` (present only then) why the provider answered with its fallback ranking, e.g.
        hybrid recall answering lexically when the query's embedding did not finish within its share of
        the budget (labels: :data:`~meta_memory.recall.provider.DEGRADED_REASONS`).
        Raises the provider's error, ``AgentMemoryError`` (reason ``timeout``) past the time budget, or
        ``CapacityExceeded`` (-32005, ``retry_after_ms``) when the identity's (or every) recall slot stayed
        taken for the whole budget. ``where``: a parsed metadata filter; the records are the provider's
        best among the identity's records passing it (never the best, then filtered).

        ``mob``: also search that mob's scope of ``realm`` (the ``memory`` tool's recall for a member
        of the mob; the caller has judged that it may read the mob). The same provider ranks each scope
        apart, under the same rules (active records only: quarantined, forgotten, superseded and expired
        ones never), and the records come interleaved, the identity's first, at most ``max_entries`` in
        all; each of the mob's carries ``mob`` (its name). Only the records returned are marked recalled."""
        request = RecallRequest(
            identity=identity,
            realm=realm,
            query_text=query_text,
            query_terms=tuple(query_terms or ()),
            selection=selection or self.config.selection,  # type: ignore[arg-type]
            max_entries=max_entries or self.config.max_entries,
            where=where,
        )
        try:
            outcomes = self._run_provider(request, mob)
        except MetaError:
            raise
        except Exception as exc:  # a provider bug is still the provider's error, not ours
            raise AgentMemoryError("io", f"recall provider failed: {type(exc).__name__}") from exc
        outcome = outcomes[0]
        if mob is None:
            records = [s.record.wire() for s in outcome.records]
        else:
            shared = [{**s.record.wire(), "mob": mob} for s in outcomes[1].records]
            records = interleave([s.record.wire() for s in outcome.records], shared, request.max_entries)
        self.mark_recalled(realm, [r["memory_id"] for r in records])
        out: dict[str, Any] = {"records": records, "skip_reason": outcome.skip_reason}
        degraded = next((o.degraded_reason for o in outcomes if o.degraded_reason is not None), None)
        if degraded is not None:
            out["degraded_reason"] = degraded
        return out

    def mark_recalled(self, realm: str, ids: Sequence[str]) -> None:
        """Count an explicit recall of ``ids`` (``explicit_recall_count``, ``last_recalled_at_ms``: queued
        usage marks), unless the gateway is read-only (``[access] read_only``: a read changes no state,
        the steward's usage figures included)."""
        if ids and self._usage_marks:
            self.store.mark_usage(realm, ids, UsageEvent("explicit_recall"))

    def recall_for_injection(self, request: Any) -> list[MemoryRecord]:
        """The injection coordinator's ``recall_fn``: records only (the coordinator times it)."""
        req = RecallRequest(
            identity=request.identity,
            realm=request.realm,
            query_text=request.query_text,
            query_terms=tuple(request.query_terms or ()),
            selection=request.selection,
            max_entries=request.max_entries,
        )
        scope = Scope.identity(req.realm, req.identity)
        return [s.record for s in self._guarded_recall(req, scope).records]

    def _guarded_recall(self, request: RecallRequest, scope: Scope) -> RecallOutcome[Any]:
        """The provider under the scope guard, its reads marked as a recall's: they leave the usage marks
        queued by earlier recalls to the store's background writer (:meth:`AgentMemoryStore.recall_reads`)."""
        with self.store.recall_reads():
            return guarded_recall(self.provider, self.store, request, scope)

    def erase(self, realm: str, identity: str, memory_id: str | None, *, erased_by: str, reason: str | None,
              dry_run: bool, may_erase: Callable[[Scope], bool] | None = None) -> dict[str, Any]:
        """Erase one record (``memory_id``) or every record of ``identity`` (``None``) with its content
        closure; ``may_erase(scope)`` judges each scope the closure reaches (``None``: every scope), and
        ``erased_by`` is who the erasure register names. Output:
        :meth:`~meta_memory.agent_memory.erase.EraseReport.to_json`. Raises ``RecordNotFound`` or
        ``AgentMemoryError`` (``review_pending``, ``scope_not_writable``). After a real erase committed,
        the session state forgets the ids and one ``memory.record.erased`` event
        ``{realm, identity, count, memory_ids (at most 100), quarantined}`` is published about the identity
        (``quarantined``: how many of the records awaited quarantine review), then, for each of those (at
        most 100), a ``memory.quarantine.verdict`` event ``{realm, record_id, verdict: "erased",
        successor_id: None}``: their review is closed."""
        report = self.store.erase(realm, Scope.identity(realm, identity), memory_id, erased_by=erased_by,
                                  reason=reason, dry_run=dry_run, may_erase=may_erase)
        if not report.dry_run and report.records:
            ids = [r.memory_id for r in report.records]
            if self._on_erased is not None:
                self._on_erased(realm, ids)
            # ids only, at most 100 of them: the count says how many went
            held = [r.memory_id for r in report.records if r.quarantined]
            self._events([
                ("memory.record.erased", {"realm": realm, "identity": identity, "count": len(ids),
                                          "memory_ids": ids[:100], "quarantined": len(held)}, identity),
                *(("memory.quarantine.verdict",
                   {"realm": realm, "record_id": record_id, "verdict": "erased", "successor_id": None}, identity)
                  for record_id in held[:100]),
            ])
        return report.to_json()

    def list_records(self, realm: str, identity: str, *, tags: Sequence[str], limit: int,
                     cursor: str | None, where: FilterNode | None = None) -> dict[str, Any]:
        """Active records of ``identity`` holding every tag (and passing the metadata filter ``where``),
        newest updated first, one page:
        ``{records: [wire record...], next_cursor: str | None}`` (``next_cursor`` exactly when more follow: an
        opaque position, :mod:`meta_memory.agent_memory.list_cursor`, carrying no realm-wide counter).
        No usage marks: listing is not recall. A filtered list may scan the whole scope, so it runs under
        the recall time budget (``recall_timeout_ms``; the stores stop their statements at it): past it,
        ``AgentMemoryError`` (reason ``timeout``)."""
        before = decode_cursor(cursor) if cursor else None
        budget = (bound(Deadline.after_ms(int(self.config.recall_timeout_ms))) if where is not None
                  else contextlib.nullcontext())
        with budget:
            rows = self.store.list_active(realm, Scope.identity(realm, identity), tags=tags, limit=limit + 1,
                                          before=before, where=where)
        page = rows[:limit]
        more = len(rows) > limit
        return {"records": [rec.project().model_dump(mode="json") for _, rec in page],
                "next_cursor": encode_cursor(*page[-1][0]) if more else None}

    def history(self, realm: str, identity: str, memory_id: str) -> dict[str, Any]:
        """The versions of ``identity``'s record ``memory_id``, oldest first (``HistoryResult``'s shape;
        :mod:`meta_memory.agent_memory.history`). No usage marks. Raises ``RecordNotFound`` for a record
        outside the identity's scope or realm and for an unknown id alike."""
        return self.store.history(realm, Scope.identity(realm, identity), memory_id)

    def manifest(self, realm: str, identity: str, tier: str | None, k: int | None) -> dict[str, Any]:
        """Body-free rows of ``identity``'s active records: ``{records: [{id, kind, title, description, age_days, rank}]}``."""
        rows = self.store.manifest(realm, Scope.identity(realm, identity), tier or "working_set", k or 32)
        return {"records": [r.model_dump(mode="json") for r in rows]}
