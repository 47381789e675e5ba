"""The injection coordinator: per-turn and build-time memory injection (reference §3B).

It owns no storage. The runtime wires in callables (see :mod:`.model`):
``recall_fn`` (required), ``manifest_fn`` (optional; enables the build index),
``log_injections_fn`` and ``mark_usage_fn`` (optional; ledger and usage), and
``terms_fn`` (recall's tokeniser, for ``query_terms``).

Provider calls run under ``recall_timeout_ms`` on bounded worker threads
(:class:`.timebox.TimeBox`; a call finding the identity's slots taken waits for
one within that budget). On error or timeout, policy ``skip`` delivers the
turn without memory (skip reason ``recall_failed``), policy ``fail`` raises
:class:`~meta_memory.errors.AgentMemoryError` (reason ``timeout`` with
``automatic recall exceeded {ms} ms`` / ``manifest fetch exceeded {ms} ms``),
:class:`~meta_memory.errors.CapacityExceeded` when no slot freed within the
budget; a provider's own :class:`~meta_memory.errors.MetaError` is re-raised as
is; any other exception becomes reason ``io``.

Nothing here logs, raises or records the nonce or the block text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..clock import Clock, SystemClock
from ..errors import AgentMemoryError, MetaError
from ..identity import logical_identity
from ..observability.tracing import span
from ..recall.text import query_terms as recall_query_terms
from .build import build_scope_set
from .constants import (
    BUILD_INDEX_WORKING_SET_K,
    MAX_INJECTED_ASSEMBLY_BYTES,
    MAX_INJECTED_SESSION_BYTES,
    MAX_NOTED_SKIPS,
    MIN_INJECTION_BUDGET_BYTES,
    SURFACE_BUILD,
    SURFACE_TURN,
    USAGE_INJECTED,
)
from .defang import defang_content as _defang_content
from .index import render_index
from .model import (
    SKIP_BUDGET_EXHAUSTED,
    SKIP_EMPTY_QUERY,
    SKIP_NO_RECORDS,
    SKIP_NOTHING_RENDERABLE,
    SKIP_PER_TURN_OFF,
    SKIP_RECALL_FAILED,
    IndexRow,
    InjectableRecord,
    InjectionResult,
    LedgerRow,
    LogInjectionsFn,
    ManifestFn,
    MarkUsageFn,
    RecallFn,
    RecallRequest,
    ScopeRef,
    TermsFn,
)
from .options import InjectionOptions
from .protocol import BUILD_MEMORY_PROTOCOL
from .render import RenderedInjection, render_injection
from .sessions import InjectionSessions
from .text_util import compact_whitespace
from .timebox import Pending, ProviderSaturated, ProviderTimeout, TimeBox

log = logging.getLogger("meta_memory.injection")

T = TypeVar("T")


class _Failed:
    """Marker: a provider call failed under policy ``skip``."""


_FAILED = _Failed()


class _SkipNotes:
    """First skip per (identity, reason) is logged at INFO, later ones at DEBUG (bounded set)."""

    def __init__(self, limit: int = MAX_NOTED_SKIPS) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[str, str]] = set()
        self._limit = limit

    def note(self, identity: str, reason: str, surface: str) -> None:
        key = (identity, reason)
        with self._lock:
            first = key not in self._seen
            if first:
                if len(self._seen) >= self._limit:
                    self._seen.clear()
                self._seen.add(key)
        log.log(
            logging.INFO if first else logging.DEBUG,
            "memory injection skipped: identity=%s surface=%s reason=%s",
            identity,
            surface,
            reason,
        )


class InjectionCoordinator:
    """Per-turn and build-time memory injection for identity-first hosts.

    Args:
        options: :class:`InjectionOptions` (or use :meth:`InjectionOptions.from_config`).
        recall_fn: ``(RecallRequest) -> Sequence[InjectableRecord]``; active records only, best first.
            Other record objects are adapted with :meth:`InjectableRecord.from_stored`
            (scope/trust kept, so labels render when defanging is on).
        manifest_fn: ``(ScopeRef, limit) -> Sequence[IndexRow]``; ``None`` = no build index.
            Other row objects (e.g. the store's ``RecordMeta``) are adapted with
            :meth:`IndexRow.from_stored`.
        log_injections_fn: ``(realm, [LedgerRow]) -> None``; failures are logged, never raised.
        mark_usage_fn: ``(realm, [record_id], "injected") -> None``; failures are logged, never raised.
        terms_fn: ``(query_text) -> terms``; default :func:`meta_memory.recall.text.query_terms`.
        clock: time source for ages and ledger rows (default :class:`SystemClock`).
        sessions: shared :class:`InjectionSessions` (a new one by default; clones share it).
        timebox: shared :class:`TimeBox` bounding provider threads (a new one by default).

    Thread-safe. Two concurrent turns of one session may both include a
    record that neither has committed yet; budgets stay bounded by the
    per-assembly cap.
    """

    def __init__(
        self,
        options: InjectionOptions | None = None,
        *,
        recall_fn: RecallFn,
        manifest_fn: ManifestFn | None = None,
        log_injections_fn: LogInjectionsFn | None = None,
        mark_usage_fn: MarkUsageFn | None = None,
        terms_fn: TermsFn | None = None,
        clock: Clock | None = None,
        sessions: InjectionSessions | None = None,
        timebox: TimeBox | None = None,
    ) -> None:
        self.options = options or InjectionOptions()
        self._recall_fn = recall_fn
        self._manifest_fn = manifest_fn
        self._log_injections_fn = log_injections_fn
        self._mark_usage_fn = mark_usage_fn
        self._terms_fn: TermsFn = terms_fn or recall_query_terms
        self._clock: Clock = clock or SystemClock()
        self.sessions = sessions or InjectionSessions()
        self._timebox = timebox or TimeBox()
        self._skips = _SkipNotes()

    def __repr__(self) -> str:
        return f"InjectionCoordinator(options={self.options!r}, sessions={self.sessions!r})"

    def clone(self, **option_changes: Any) -> InjectionCoordinator:
        """A coordinator with changed options sharing providers, sessions, nonces and threads."""
        twin = InjectionCoordinator(
            replace(self.options, **option_changes),
            recall_fn=self._recall_fn,
            manifest_fn=self._manifest_fn,
            log_injections_fn=self._log_injections_fn,
            mark_usage_fn=self._mark_usage_fn,
            terms_fn=self._terms_fn,
            clock=self._clock,
            sessions=self.sessions,
            timebox=self._timebox,
        )
        twin._skips = self._skips
        return twin

    def _render(self, realm: str, identity: str, session_key: str | None, records: Sequence[InjectableRecord],
                budget_bytes: int, now_ms: int, *, skip_ids: Collection[str] = (),
                extras: Sequence[str] = ()) -> RenderedInjection | None:
        """:func:`render_injection` under these options, with the nonce of ``session_key`` (the
        build's when ``None``): the turn's records less ``skip_ids``, or the build's with ``extras``."""
        with span("inject.render", **{"gen_ai.data_source.id": realm}):
            return self._render_block(realm, identity, session_key, records, budget_bytes, now_ms, skip_ids, extras)

    def _render_block(self, realm: str, identity: str, session_key: str | None, records: Sequence[InjectableRecord],
                      budget_bytes: int, now_ms: int, skip_ids: Collection[str],
                      extras: Sequence[str]) -> RenderedInjection | None:
        return render_injection(
            header=self.options.header,
            identity=identity,
            realm=realm,
            nonce=self.sessions.nonce_for(realm, identity, session_key),
            records=records,
            budget_bytes=budget_bytes,
            now_ms=now_ms,
            defang_inbound=self.options.defang_inbound,
            skip_ids=skip_ids,
            extras=extras,
        )

    def _deliver(self, realm: str, identity: str, session_key: str | None, surface: str,
                 rendered: RenderedInjection | None) -> InjectionResult:
        """The result of an assembly: a skip when nothing rendered; else the block, after charging
        the session's budget and dedup set (when there is a session) and recording the injection."""
        if rendered is None:
            return self._skip(identity, SKIP_NOTHING_RENDERABLE, surface)
        if session_key is not None:
            self.sessions.commit(realm, identity, session_key, rendered.included_ids, rendered.rendered_bytes)
        self._record(realm, identity, session_key, surface, rendered.included_ids)
        return InjectionResult(
            text=rendered.text,
            included_ids=rendered.included_ids,
            rendered_bytes=rendered.rendered_bytes,
            surface=surface,
        )

    # -- session lifecycle ---------------------------------------------------------
    def session_compacted(self, identity: str, session_key: str, realm: str | None = None) -> None:
        """``meta/session/compacted``: clear the identity's session's dedup set and byte counter."""
        self.sessions.compacted(self._realm(realm), logical_identity(identity), session_key)

    def session_reset(self, identity: str, session_key: str | None = None, realm: str | None = None) -> None:
        """``meta/session/reset``: new nonce for the identity; its named session starts afresh."""
        self.sessions.reset(self._realm(realm), logical_identity(identity), session_key)

    def _realm(self, realm: str | None) -> str:
        return (realm or "").strip() or self.options.realm

    # -- inbound defanging -----------------------------------------------------------
    def defang(self, text: str) -> tuple[str, int]:
        """``meta/turn/defang``: :func:`.defang.defang` with the configured header.

        With ``defang_inbound`` off, returns ``(text, 0)`` unchanged. Logs a
        content-free warning when anything was neutralised.
        """
        out, hits = self.defang_content(text)
        return out, hits

    def defang_content(self, content: str | Sequence[Any]) -> tuple[Any, int]:
        """Like :meth:`defang` for a string or a list of content blocks."""
        if not self.options.defang_inbound:
            return content, 0
        out, hits = _defang_content(content, self.options.header)
        if hits:
            log.warning("inbound content carried %d forged memory marker(s); neutralised", hits)
        return out, hits

    # -- per-turn injection ------------------------------------------------------------
    def inject_for_turn(
        self,
        identity: str,
        realm: str | None = None,
        session_key: str | None = None,
        query_text: str | None = "",
    ) -> InjectionResult:
        """The quoted observation block for one turn, or a typed skip (reference §3B, steps 1-7).

        Args:
            identity: the agent identity (roster generations map to the logical identity).
            realm: store realm; ``None`` -> ``options.realm``.
            session_key: the host's session; ``None`` = no session budget or dedup.
            query_text: the raw turn text (whitespace-compacted here).

        Returns :class:`InjectionResult` with ``text`` or one of the skip
        reasons ``per_turn_injection_off``, ``contextual_with_empty_query``,
        ``budget_exhausted``, ``recall_failed``, ``no_records``, ``nothing_renderable``.

        Raises :class:`AgentMemoryError` (or the provider's :class:`MetaError`)
        only under ``recall_failure_policy = "fail"``.
        """
        identity = logical_identity(identity)
        realm = (realm or "").strip() or self.options.realm
        opts = self.options

        if opts.per_turn_injection == "off":
            return self._skip(identity, SKIP_PER_TURN_OFF, SURFACE_TURN)
        text = compact_whitespace(query_text or "")
        if opts.selection == "contextual" and not text:
            return self._skip(identity, SKIP_EMPTY_QUERY, SURFACE_TURN)

        budget = MAX_INJECTED_ASSEMBLY_BYTES
        if session_key is not None:
            budget = min(budget, MAX_INJECTED_SESSION_BYTES - self.sessions.used_bytes(realm, identity, session_key))
        if budget < MIN_INJECTION_BUDGET_BYTES:
            return self._skip(identity, SKIP_BUDGET_EXHAUSTED, SURFACE_TURN)

        request = RecallRequest(
            identity=identity,
            realm=realm,
            query_text=text or None,
            query_terms=self._terms(text),
            selection=opts.selection,
            max_entries=opts.max_entries,
        )
        started = time.monotonic()
        records = self._await(self._start(lambda: self._recall(request), (realm, identity), started), started,
                              "recall")
        if isinstance(records, _Failed):
            return self._skip(identity, SKIP_RECALL_FAILED, SURFACE_TURN)
        if not records:
            return self._skip(identity, SKIP_NO_RECORDS, SURFACE_TURN)

        skip_ids = self.sessions.injected_ids(realm, identity, session_key) if session_key is not None else frozenset()
        rendered = self._render(realm, identity, session_key, records, budget, self._clock.now_ms(),
                                skip_ids=skip_ids)
        return self._deliver(realm, identity, session_key, SURFACE_TURN, rendered)

    # -- build-time assembly -----------------------------------------------------------
    def assemble_build(
        self,
        identity: str,
        realm: str | None = None,
        query_text: str | None = "",
        query_terms: Sequence[str] | None = None,
        scopes: Sequence[ScopeRef] | None = None,
    ) -> InjectionResult:
        """Build-time memory: protocol, per-scope index and record bodies (reference §3B build-time).

        Args:
            identity, realm: as for :meth:`inject_for_turn`.
            query_text: the build query (see :func:`.build.build_query_text`).
            query_terms: normalised terms; ``None`` -> ``terms_fn(query_text)``.
            scopes: the read composition (see :func:`.build.build_scope_set`);
                ``None`` -> identity then realm.

        Recall and every scope's manifest run concurrently under one
        ``recall_timeout_ms`` deadline. With a ``manifest_fn`` and at least one
        index row, the text is header, :data:`BUILD_MEMORY_PROTOCOL`, the index,
        then up to 20,480 bytes of bodies (protocol and index not counted).
        Ledger rows use surface ``"build"`` and ``session_key`` ``None``.
        Skip reasons: ``recall_failed``, ``no_records``, ``nothing_renderable``.
        """
        identity = logical_identity(identity)
        realm = (realm or "").strip() or self.options.realm
        opts = self.options
        scope_list = tuple(scopes) if scopes is not None else build_scope_set(realm, identity)
        text = compact_whitespace(query_text or "")
        terms = tuple(query_terms) if query_terms is not None else self._terms(text)
        request = RecallRequest(
            identity=identity,
            realm=realm,
            query_text=text or None,
            query_terms=terms,
            selection=opts.selection,
            max_entries=opts.max_entries,
            scopes=scope_list,
        )
        started = time.monotonic()
        key = (realm, identity)
        recall_call = self._start(lambda: self._recall(request), key, started)
        manifest_calls: list[Pending[list[IndexRow]] | BaseException] = []
        manifest_fn = self._manifest_fn
        if manifest_fn is not None:
            for scope in scope_list:
                manifest_calls.append(self._start(lambda scope=scope: self._manifest(manifest_fn, scope), key, started))
        records = self._await(recall_call, started, "recall")
        rows_by_scope: dict[int, list[IndexRow]] = {}
        manifest_failed = False
        for i, call in enumerate(manifest_calls):
            rows = self._await(call, started, "manifest")
            if isinstance(rows, _Failed):
                manifest_failed = True
            else:
                rows_by_scope[i] = rows
        now = self._clock.now_ms()
        index = render_index(scope_list, rows_by_scope, header=opts.header) if rows_by_scope else None
        extras = [BUILD_MEMORY_PROTOCOL, index] if index else []

        recall_failed = isinstance(records, _Failed)
        records_list: list[InjectableRecord] = [] if isinstance(records, _Failed) else records
        if not records_list and not extras:
            reason = SKIP_RECALL_FAILED if recall_failed or manifest_failed else SKIP_NO_RECORDS
            return self._skip(identity, reason, SURFACE_BUILD)
        rendered = self._render(realm, identity, None, records_list, MAX_INJECTED_ASSEMBLY_BYTES, now, extras=extras)
        return self._deliver(realm, identity, None, SURFACE_BUILD, rendered)

    # -- internals -------------------------------------------------------------------
    def _recall(self, request: RecallRequest) -> list[InjectableRecord]:
        """Run the recall provider (on a worker thread); store records are adapted on the way."""
        return [
            r if isinstance(r, InjectableRecord) else InjectableRecord.from_stored(r)
            for r in self._recall_fn(request)
        ]

    def _manifest(self, manifest_fn: ManifestFn, scope: ScopeRef) -> list[IndexRow]:
        """Run the manifest provider (on a worker thread); manifest rows are adapted on the way."""
        now = self._clock.now_ms()
        return [
            r if isinstance(r, IndexRow) else IndexRow.from_stored(r, now)
            for r in manifest_fn(scope, BUILD_INDEX_WORKING_SET_K)
        ]

    def _terms(self, text: str) -> tuple[str, ...]:
        if not text:
            return ()
        return tuple(self._terms_fn(text))

    def _skip(self, identity: str, reason: str, surface: str) -> InjectionResult:
        self._skips.note(identity, reason, surface)
        return InjectionResult.skipped(reason, surface)

    def _start(self, fn: Any, key: Any, started: float) -> Pending[Any] | BaseException:
        """Start a provider call for ``key`` (the ``(realm, identity)`` whose calls share the per-identity cap),
        waiting for a free slot within the budget that began at ``started`` (``recall_timeout_ms``, for the
        wait and the work together), or return the saturation error to be judged by policy later."""
        ms = self.options.recall_timeout_ms
        try:
            return self._timebox.start(fn, timeout_ms=ms, key=key, until=started + ms / 1000)
        except ProviderSaturated as exc:
            return exc

    def _await(self, call: Pending[T] | BaseException, started: float, what: str) -> T | _Failed:
        """Wait for ``call`` until ``started + recall_timeout_ms``; apply the failure policy."""
        ms = self.options.recall_timeout_ms
        try:
            if isinstance(call, BaseException):
                raise call
            remaining = ms / 1000 - (time.monotonic() - started)
            return call.wait(remaining, ms)
        except Exception as exc:  # noqa: BLE001 - policy decides
            if self.options.recall_failure_policy == "fail":
                raise self._failure_error(exc, what, ms) from exc
            log.debug("automatic %s failed (policy skip): %s", what, type(exc).__name__)
            return _FAILED

    @staticmethod
    def _failure_error(exc: Exception, what: str, ms: int) -> MetaError:
        label = "automatic recall" if what == "recall" else "manifest fetch"
        if isinstance(exc, ProviderTimeout):
            return AgentMemoryError("timeout", f"{label} exceeded {ms} ms")
        if isinstance(exc, ProviderSaturated):
            return exc.refusal(label)
        if isinstance(exc, MetaError):
            return exc
        return AgentMemoryError("io", f"{label} failed: {exc}")

    def _record(
        self, realm: str, identity: str, session_key: str | None, surface: str, ids: Sequence[str]
    ) -> None:
        """Append one ledger row per included record and mark them used; failures are only logged."""
        if not ids:
            return
        at_ms = self._clock.now_ms()
        if self._log_injections_fn is not None:
            rows = [LedgerRow(rid, identity, session_key, surface, at_ms) for rid in ids]
            try:
                self._log_injections_fn(realm, rows)
            except Exception as exc:  # noqa: BLE001 - ledger is best effort
                log.debug("injection ledger write failed: %s", type(exc).__name__)
        if self._mark_usage_fn is not None:
            try:
                self._mark_usage_fn(realm, list(ids), USAGE_INJECTED)
            except Exception as exc:  # noqa: BLE001 - usage marks are best effort
                log.debug("injection usage mark failed: %s", type(exc).__name__)
