"""Session-sticky content taint (seed: "Content trust and session taint"; reference notes §5).

Once a session ingests untrusted tool content, the session is *tainted*, and
every LLM-authored memory write from it is quarantined by
:class:`meta_memory.firewall.gate.LlmWriteGate`. The tracker holds:

* identity -> the session the identity currently speaks from;
* session -> :class:`TaintState` (first taint wins; sticky; kept after the
  identity rotates to another session, because "that session was tainted"
  stays true and evidence checks read it);
* identity -> *pending* taint, for untrusted content seen before the identity's
  session is known; it lands on the next session noted for the identity;
* session -> :class:`ResetBoundary`, the sessions closed by a fresh-context
  reset (writes citing them as evidence quarantine).

Lifecycle:

* :meth:`TaintTracker.note_session` -- the identity now speaks from a session.
  Moving away from a tainted session to a clean one emits ``rotated_clean``.
* :meth:`TaintTracker.reset` -- a fresh-context boundary (reset, respawn,
  fresh spawn): clears the identity's current session and pending taint, marks
  the session's reset boundary and emits ``reset_boundary``. The closed
  session's taint is moved onto its boundary mark, so a host that keeps using
  the same session key after a reset starts clean, while writes that cite the
  closed session as evidence still quarantine.
* :meth:`TaintTracker.compacted` -- compaction never clears taint (the summary
  is derived from the tainted context).
* :meth:`TaintTracker.observe` -- record one classified tool result; the first
  taint of a session (or of a pending identity) emits ``tainted``.

Identities are keyed by their *logical* identity
(:func:`meta_memory.identity.logical_identity`), the same key the record store
uses for an agent author, so respawn generations share one attribution.

Each map is bounded at :data:`MAX_TRACKED_ENTRIES` entries; the oldest entry is
evicted first. All state changes happen under one lock and are complete when the
call returns: a classification recorded by :meth:`observe` is visible to the
very next gate call from any thread. Events are delivered after the lock is
released, through ``on_event(event_type, identity, data)`` with ``event_type``
``"memory.taint.transition"`` and ``data`` ``{identity, session_key, kind,
source}`` (``kind`` one of ``tainted``, ``rotated_clean``, ``reset_boundary``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from meta_memory.clock import Clock
from meta_memory.firewall.classify import Classification
from meta_memory.identity import logical_identity

__all__ = [
    "MAX_TRACKED_ENTRIES",
    "TAINT_EVENT",
    "EventSink",
    "ResetBoundary",
    "TaintState",
    "TaintTracker",
    "evidence_tainted_reason",
    "RESET_BOUNDARY_REASON",
]

_log = logging.getLogger(__name__)

#: Bound of every tracker map (identities, tainted sessions, pending, boundaries).
MAX_TRACKED_ENTRIES = 4096

#: The timeline event type of every taint transition.
TAINT_EVENT = "memory.taint.transition"

#: Gate reason for a write citing a session closed by a reset.
RESET_BOUNDARY_REASON = (
    "evidence session closed at a reset boundary; distillates quarantine pending steward review (§8.4)"
)

#: ``on_event(event_type, identity, data)``; ``identity`` is ``"_system"`` when none applies.
EventSink = Callable[[str, str, dict[str, Any]], None]

_ROTATED_SOURCE = "rotated away from a tainted session; the new session starts clean"
_RESET_SOURCE = "fresh-context reset boundary"

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class TaintState:
    """Why and when a session became tainted.

    Attributes:
        tainted_at_ms: UTC epoch milliseconds of the first untrusted ingestion.
        source: the classification source, e.g. ``"web tool 'web_search'"``.
    """

    tainted_at_ms: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        """Wire shape ``{tainted_at_ms, source}``."""
        return {"tainted_at_ms": self.tainted_at_ms, "source": self.source}


@dataclass(frozen=True, slots=True)
class ResetBoundary:
    """A session closed by a fresh-context reset.

    Attributes:
        marked_at_ms: when the reset was recorded (UTC epoch ms).
        prior_taint: the session's taint at the reset, if it was tainted.
    """

    marked_at_ms: int
    prior_taint: TaintState | None


def evidence_tainted_reason(source: str) -> str:
    """Gate reason for a write citing a tainted session as evidence."""
    return f"evidence session tainted by {source} (session-tainted ⇒ range-tainted)"


def _put_bounded(table: OrderedDict[K, V], key: K, value: V, limit: int) -> None:
    """Insert or refresh ``key`` as the newest entry, evicting the oldest past ``limit``."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > limit:
        table.popitem(last=False)


def _key(identity: str) -> str:
    return logical_identity(identity.strip())


class TaintTracker:
    """Session-sticky taint state shared by the turn surface and the write gate.

    Args:
        clock: source of ``tainted_at_ms`` / ``marked_at_ms``.
        on_event: optional sink for ``memory.taint.transition`` envelopes;
            exceptions it raises are logged and never reach the caller.
        max_entries: bound of each map (default 4,096).

    Thread-safe; see the module docstring for the ordering guarantee.
    """

    def __init__(
        self,
        clock: Clock,
        on_event: EventSink | None = None,
        *,
        max_entries: int = MAX_TRACKED_ENTRIES,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._clock = clock
        self._on_event = on_event
        self._limit = max_entries
        self._lock = threading.Lock()
        self._current: OrderedDict[str, str] = OrderedDict()
        self._tainted: OrderedDict[str, TaintState] = OrderedDict()
        self._pending: OrderedDict[str, TaintState] = OrderedDict()
        self._boundaries: OrderedDict[str, ResetBoundary] = OrderedDict()

    # ------------------------------------------------------------------ lifecycle

    def note_session(self, identity: str, session_key: str) -> None:
        """Record that ``identity`` now speaks from ``session_key``.

        A pending taint of the identity lands on this session (``tainted`` event
        if the session was clean). Moving from a tainted session to a session
        that is clean afterwards emits ``rotated_clean``; the old session keeps
        its taint.
        """
        events: list[tuple[str, dict[str, Any]]] = []
        with self._lock:
            self._note_locked(_key(identity), session_key, events)
        self._emit(events)

    def reset(self, identity: str, session_key: str | None = None) -> None:
        """A fresh-context boundary for ``identity`` (reset, respawn, fresh spawn).

        ``session_key`` names the session being closed; ``None`` means the
        identity's current session (if any). Clears the identity's current
        session and pending taint, marks the closed session's reset boundary
        (keeping its taint on the mark for evidence checks) and emits
        ``reset_boundary`` when anything changed.
        """
        ident = _key(identity)
        events: list[tuple[str, dict[str, Any]]] = []
        with self._lock:
            session = session_key if session_key is not None else self._current.get(ident)
            pending = self._pending.pop(ident, None)
            self._current.pop(ident, None)
            if session is None:
                if pending is not None:
                    events.append((ident, self._event(ident, None, "reset_boundary", pending.source)))
            else:
                live = self._tainted.pop(session, None)
                prior = live or pending
                marked = self._boundaries.get(session)
                if marked is None or prior is not None:
                    keep = prior or (marked.prior_taint if marked else None)
                    _put_bounded(
                        self._boundaries,
                        session,
                        ResetBoundary(self._clock.now_ms(), keep),
                        self._limit,
                    )
                    source = prior.source if prior else _RESET_SOURCE
                    events.append((ident, self._event(ident, session, "reset_boundary", source)))
        self._emit(events)

    def compacted(self, session_key: str) -> TaintState | None:
        """Compaction of ``session_key``: taint is NOT cleared. Returns the session's taint."""
        return self.session_taint(session_key)

    def observe(
        self,
        identity: str,
        session_key: str | None,
        classification: Classification,
    ) -> TaintState | None:
        """Record one classified tool result ingested by ``identity``.

        When ``session_key`` is given it is noted first (see
        :meth:`note_session`). Untrusted content taints the identity's current
        session (first taint wins) or, when no session is known yet, becomes the
        identity's pending taint. Returns the identity's effective taint after
        the call (``None`` when clean). The state is updated before returning.
        """
        ident = _key(identity)
        events: list[tuple[str, dict[str, Any]]] = []
        with self._lock:
            if session_key is not None:
                self._note_locked(ident, session_key, events)
            if not classification.trusted:
                state = TaintState(self._clock.now_ms(), classification.source or "untrusted content")
                current = self._current.get(ident)
                if current is not None:
                    self._taint_locked(ident, current, state, events)
                elif ident not in self._pending:
                    _put_bounded(self._pending, ident, state, self._limit)
                    events.append((ident, self._event(ident, None, "tainted", state.source)))
            result = self._identity_taint_locked(ident)
        self._emit(events)
        return result

    def observe_peer_content(
        self,
        identity: str,
        session_key: str | None,
        sender: str,
        *,
        declared_tainted: bool = False,
    ) -> TaintState | None:
        """Record a peer message from ``sender`` ingested by ``identity``.

        The receiver is tainted when the sender declared its content tainted, or
        when the sender's own effective taint (pending or current session) is
        set at delivery time; a message from oneself never taints. Sources read
        ``peer content declared tainted by sender '<sender>'`` or ``peer message
        from tainted sender '<sender>' (sender session tainted by <source>)``.
        Returns the receiver's effective taint afterwards.
        """
        ident, peer = _key(identity), _key(sender)
        source: str | None = None
        if declared_tainted:
            source = f"peer content declared tainted by sender '{peer}'"
        elif peer != ident:
            with self._lock:
                sender_taint = self._identity_taint_locked(peer)
            if sender_taint is not None:
                source = f"peer message from tainted sender '{peer}' (sender session tainted by {sender_taint.source})"
        verdict = Classification(True) if source is None else Classification(False, source)
        return self.observe(identity, session_key, verdict)

    # ------------------------------------------------------------------ queries

    def identity_taint(self, identity: str) -> TaintState | None:
        """The identity's pending taint, else its current session's taint, else ``None``."""
        with self._lock:
            return self._identity_taint_locked(_key(identity))

    def session_taint(self, session_key: str) -> TaintState | None:
        """The live taint of ``session_key`` (``None`` when clean or reset)."""
        with self._lock:
            return self._tainted.get(session_key)

    def current_session(self, identity: str) -> str | None:
        """The session ``identity`` currently speaks from, if known."""
        with self._lock:
            return self._current.get(_key(identity))

    def reset_boundary(self, session_key: str) -> ResetBoundary | None:
        """The reset-boundary mark of ``session_key``, if it was closed by a reset."""
        with self._lock:
            return self._boundaries.get(session_key)

    def evidence_reason(self, session_key: str) -> str | None:
        """Why a write citing ``session_key`` as evidence must quarantine, if it must.

        A tainted session (live, or tainted when it was reset) gives
        ``evidence session tainted by <source> (session-tainted ⇒ range-tainted)``;
        a clean session closed by a reset gives :data:`RESET_BOUNDARY_REASON`.
        """
        with self._lock:
            live = self._tainted.get(session_key)
            if live is not None:
                return evidence_tainted_reason(live.source)
            boundary = self._boundaries.get(session_key)
        if boundary is None:
            return None
        if boundary.prior_taint is not None:
            return evidence_tainted_reason(boundary.prior_taint.source)
        return RESET_BOUNDARY_REASON

    def stats(self) -> dict[str, int]:
        """Counts for status pages: ``{identities, tainted_sessions, pending, reset_boundaries}``."""
        with self._lock:
            return {
                "identities": len(self._current),
                "tainted_sessions": len(self._tainted),
                "pending": len(self._pending),
                "reset_boundaries": len(self._boundaries),
            }

    # ------------------------------------------------------------------ persistence

    def export_state(self) -> dict[str, Any]:
        """The durable part of the state (tainted sessions, pending taints, reset marks), as JSON data:
        ``{tainted: {session: [at_ms, source]}, pending: {identity: [at_ms, source]},
        boundaries: {session: [marked_at_ms, prior_at_ms | null, prior_source | null]}}``, oldest first.
        Which session an identity speaks from is not kept: the host notes it again on its next turn."""
        with self._lock:
            return {
                "tainted": {k: [v.tainted_at_ms, v.source] for k, v in self._tainted.items()},
                "pending": {k: [v.tainted_at_ms, v.source] for k, v in self._pending.items()},
                "boundaries": {
                    k: [b.marked_at_ms, b.prior_taint.tainted_at_ms if b.prior_taint else None,
                        b.prior_taint.source if b.prior_taint else None]
                    for k, b in self._boundaries.items()
                },
            }

    def import_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`export_state` returned (after a restart). Malformed entries are skipped."""
        def pairs(name: str) -> list[tuple[str, list[Any]]]:
            table = state.get(name)
            return [(k, v) for k, v in table.items() if isinstance(k, str) and isinstance(v, list)] \
                if isinstance(table, dict) else []

        with self._lock:
            for key, (at, source) in ((k, v[:2]) for k, v in pairs("tainted") if len(v) >= 2):
                if isinstance(at, int) and isinstance(source, str):
                    _put_bounded(self._tainted, key, TaintState(at, source), self._limit)
            for key, (at, source) in ((k, v[:2]) for k, v in pairs("pending") if len(v) >= 2):
                if isinstance(at, int) and isinstance(source, str):
                    _put_bounded(self._pending, key, TaintState(at, source), self._limit)
            for key, v in pairs("boundaries"):
                if len(v) >= 3 and isinstance(v[0], int):
                    prior = TaintState(v[1], v[2]) if isinstance(v[1], int) and isinstance(v[2], str) else None
                    _put_bounded(self._boundaries, key, ResetBoundary(v[0], prior), self._limit)

    # ------------------------------------------------------------------ internals

    def _identity_taint_locked(self, ident: str) -> TaintState | None:
        pending = self._pending.get(ident)
        if pending is not None:
            return pending
        current = self._current.get(ident)
        return self._tainted.get(current) if current is not None else None

    def _note_locked(self, ident: str, session_key: str, events: list[tuple[str, dict[str, Any]]]) -> None:
        previous = self._current.get(ident)
        _put_bounded(self._current, ident, session_key, self._limit)
        pending = self._pending.pop(ident, None)
        if pending is not None:
            self._taint_locked(ident, session_key, pending, events)
        if (
            previous is not None
            and previous != session_key
            and previous in self._tainted
            and session_key not in self._tainted
        ):
            events.append((ident, self._event(ident, session_key, "rotated_clean", _ROTATED_SOURCE)))

    def _taint_locked(
        self,
        ident: str,
        session_key: str,
        state: TaintState,
        events: list[tuple[str, dict[str, Any]]],
    ) -> None:
        if session_key in self._tainted:
            return
        _put_bounded(self._tainted, session_key, state, self._limit)
        events.append((ident, self._event(ident, session_key, "tainted", state.source)))

    @staticmethod
    def _event(ident: str, session_key: str | None, kind: str, source: str) -> dict[str, Any]:
        return {"identity": ident, "session_key": session_key, "kind": kind, "source": source}

    def _emit(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        if self._on_event is None:
            return
        for identity, data in events:
            try:
                self._on_event(TAINT_EVENT, identity, data)
            except Exception:  # noqa: BLE001 - an event sink must never break taint tracking
                _log.exception("taint event sink failed for %s", data.get("kind"))
