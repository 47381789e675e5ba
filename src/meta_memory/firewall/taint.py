"""Session-sticky content taint (seed: "Content trust and session taint"; reference notes §5).

Once a session ingests untrusted tool content, the session is *tainted*, and
every LLM-authored memory write from it is quarantined by
:class:`meta_memory.firewall.gate.LlmWriteGate`. Every piece of state is keyed
by **realm, logical identity and session key** and kept in the durable
:class:`~meta_memory.session_state.store.SessionStateStore` (SQLite for one
gateway, PostgreSQL for several, so a taint recorded on one gateway holds on
every other):

* (realm, identity) -> the session the identity currently speaks from, and its
  *pending* taint (untrusted content seen before the identity's session is
  known; it lands on the next session noted for the identity);
* (realm, identity, session) -> taint (first taint wins; sticky; kept after the
  identity rotates to another session, because "that session was tainted"
  stays true and evidence checks read it) and the reset-boundary mark.

Every call names its session as one :class:`~meta_memory.session_ref.SessionRef`
(realm, identity, key): the realm is never defaulted here. A write from a named
session carries that session's taint (:meth:`TaintTracker.write_taint`), whatever
session the identity noted last: a sibling session of a tainted one is judged on
its own, in either order of opening.

Lifecycle:

* :meth:`TaintTracker.note_session` -- the identity now speaks from a session.
  Moving away from a tainted session to a clean one emits ``rotated_clean``.
* :meth:`TaintTracker.reset` -- a fresh-context boundary of the *calling*
  identity's session (reset, respawn, fresh spawn): clears its current session
  and pending taint, marks the session's reset boundary and emits
  ``reset_boundary``. The closed session's taint is moved onto its boundary
  mark, so a host that keeps using the same session key after a reset starts
  clean, while writes that cite the closed session as evidence still
  quarantine. Another identity naming the same session key changes nothing of
  this identity's state.
* :meth:`TaintTracker.compacted` -- compaction never clears taint.
* :meth:`TaintTracker.observe` -- record one classified tool result; the first
  taint of a session (or of a pending identity) emits ``tainted``.

Capacity never clears taint: state expires only by age
(``agent_memory.session_state_expiry_days``), and at the row cap the store
refuses new permissive state while :meth:`TaintTracker.at_capacity` makes the
gate quarantine every LLM write (fail closed).

Identities are keyed by their *logical* identity
(:func:`meta_memory.identity.logical_identity`), the same key the record store
uses for an agent author, so respawn generations share one attribution. A
state change is committed before the call returns: a classification recorded
by :meth:`observe` is visible to the very next gate call on any gateway sharing
the store. Events are delivered after the commit, through ``events.emit(event_type,
data, identity=)`` (the one :class:`~meta_memory.events.bus.EventSink`) with ``event_type`` ``"memory.taint.transition"`` and ``data``
``{realm, identity, session_key, kind, source}`` (``kind`` one of ``tainted``,
``rotated_clean``, ``reset_boundary``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from meta_memory.clock import Clock
from meta_memory.events.bus import EventSink
from meta_memory.firewall.classify import Classification
from meta_memory.identity import logical_identity
from meta_memory.session_ref import SessionRef
from meta_memory.session_state import ResetBoundary, SessionStateStore, TaintState, memory_session_state

__all__ = [
    "TAINT_EVENT",
    "CAPACITY_REASON",
    "ResetBoundary",
    "TaintState",
    "TaintTracker",
    "evidence_tainted_reason",
    "RESET_BOUNDARY_REASON",
]

_log = logging.getLogger(__name__)

#: The timeline event type of every taint transition.
TAINT_EVENT = "memory.taint.transition"

#: Gate reason for a write citing a session closed by a reset.
RESET_BOUNDARY_REASON = (
    "evidence session closed at a reset boundary; distillates quarantine pending steward review (§8.4)"
)

#: Gate reason for every LLM write while the session state is at its row cap (fail closed).
CAPACITY_REASON = "session state at capacity; session taint cannot be tracked for new sessions (fail closed)"



def evidence_tainted_reason(source: str) -> str:
    """Gate reason for a write citing a tainted session as evidence."""
    return f"evidence session tainted by {source} (session-tainted ⇒ range-tainted)"


def _key(identity: str) -> str:
    return logical_identity(identity)


class TaintTracker:
    """Session-sticky taint state shared by the turn surface and the write gate.

    Every call names the session it concerns as a :class:`~meta_memory.session_ref.SessionRef`
    (realm, logical identity, session key) or, for the identity-wide queries, the realm
    explicitly: nothing here falls back to a default realm.

    Args:
        clock: source of ``tainted_at_ms`` / ``marked_at_ms``.
        events: optional sink for ``memory.taint.transition`` events;
            exceptions it raises are logged and never reach the caller.
        state: the durable session state (default: a process-local in-memory one).
        realm: the realm taint adopted from a legacy ``firewall-taint.json`` (which named no realm)
            is recorded under (``agent_memory.realm``).

    Thread-safe. Raises what the store raises: ``AgentMemoryError("io")`` on a
    database failure, ``AgentMemoryError("session_limit")`` for a new identity
    or reset mark at capacity; ``ValueError`` naming ``session_key`` when a call that needs
    one is given a session without it.
    """

    def __init__(
        self,
        clock: Clock,
        events: EventSink | None = None,
        *,
        state: SessionStateStore | None = None,
        realm: str = "default",
    ) -> None:
        self._clock = clock
        self._events = events
        self.state = state if state is not None else memory_session_state(clock)
        self.realm = realm

    # ------------------------------------------------------------------ lifecycle

    def note_session(self, session: SessionRef) -> TaintState | None:
        """Record that the identity now speaks from ``session`` (its key is required); returns the
        session's taint afterwards.

        A pending taint of the identity lands on this session (``tainted`` event
        if the session was clean). Moving from a tainted session to a session
        that is clean afterwards emits ``rotated_clean``; the old session keeps
        its taint.
        """
        taint, events = self.state.note_session(session.realm, session.identity, session.keyed())
        self._emit(session, events)
        return taint

    def reset(self, session: SessionRef) -> None:
        """A fresh-context boundary for the identity of ``session`` (reset, respawn, fresh spawn).

        ``session.session_key`` names the session being closed; ``None`` means the
        identity's current session (if any). Clears the identity's current
        session, pending taint and nonce, marks the closed session's reset
        boundary (keeping its taint on the mark for evidence checks) and emits
        ``reset_boundary`` when anything changed.
        """
        self._emit(session, self.state.reset(session.realm, session.identity, session.session_key))

    def compacted(self, session: SessionRef) -> TaintState | None:
        """Compaction of ``session`` (key required): taint is NOT cleared. Returns the session's taint."""
        return self.session_taint(SessionRef(session.realm, session.identity, session.keyed()))

    def observe(self, session: SessionRef, classification: Classification, *,
                unreported: bool = False) -> TaintState | None:
        """Record one classified tool result ingested by the identity of ``session``.

        When ``session.session_key`` is given it is noted first (see
        :meth:`note_session`). Untrusted content taints the identity's current
        session (first taint wins) or, when no session is known yet, becomes the
        identity's pending taint. Returns the identity's effective taint after
        the call (``None`` when clean). The state is committed before returning. ``unreported`` marks
        the session's tool results as never reported: a reset does not clear that (the session is tainted
        again at once).
        """
        source = None if classification.trusted else (classification.source or "untrusted content")
        taint, events = self.state.observe(session.realm, session.identity, session.session_key, source,
                                           unreported=unreported)
        self._emit(session, events)
        return taint

    def agent_output_source(self, sender: str, realm: str, may_read: Callable[[str], bool] | None = None,
                            session_key: str | None = None) -> str | None:
        """The taint source another agent's output carries: ``None`` when ``sender`` (an identity; its
        logical identity is judged) has session state and no live taint in the realms judged, else
        ``output of agent '<sender>' (its session tainted by <source>)``, or, for an identity no session
        state there knows (its tool results were never reported), ``output of agent '<sender>' of unknown
        taint (no session of it is known)``.

        ``may_read(realm)``: whether the caller may read ``sender``'s session taint in ``realm`` (its
        ``agent.session.manage`` there, under ``[access]``; ``None``: every realm, access off). The output
        of an agent whose taint the caller may not read in the reporting session's realm is untrusted
        whatever that agent's state (``output of agent '<sender>' whose taint this caller may not read``).
        Otherwise the agent is judged on the realms the caller may read, and on no other: the same name in
        a realm the caller may not read is another identity, whose state (known or not, clean or tainted)
        changes nothing of the answer. ``realm``: the reporting session's realm. ``session_key``: the
        agent's session the output came from (``None``: any of its sessions); a session reset while tainted
        keeps carrying that taint (:meth:`SessionStateStore.agent_taint`), and a session no state of a
        realm judged knows is of unknown taint."""
        peer = _key(sender)
        if may_read is not None and not may_read(realm):
            return f"output of agent '{peer}' whose taint this caller may not read"
        known, taint = self.state.agent_taint(peer, session_key, may_read)
        if taint is not None:
            return f"output of agent '{peer}' (its session tainted by {taint.source})"
        if not known:
            what = "no session of it is known" if session_key is None else "that session of it is not known"
            return f"output of agent '{peer}' of unknown taint ({what})"
        return None

    # ------------------------------------------------------------------ queries

    def identity_taint(self, identity: str, *, realm: str) -> TaintState | None:
        """The identity's pending taint in ``realm``, else its current session's taint, else ``None``."""
        return self.state.identity_taint(realm, _key(identity))

    def session_taint(self, session: SessionRef) -> TaintState | None:
        """The live taint of ``session`` (``None`` when clean or reset); a session without a key is the
        identity's current one (:meth:`identity_taint`)."""
        if session.session_key is None:
            return self.state.identity_taint(session.realm, session.identity)
        return self.state.session_taint(session.realm, session.identity, session.session_key)

    def write_taint(self, session: SessionRef) -> TaintState | None:
        """The taint an LLM write from ``session`` carries (``docs/security.md``, "Firewall: session
        taint"): the identity's pending taint, then that session's own taint (when ``session_key`` is
        ``None``: its current session's, else any of its sessions' in the realm), then another identity's live taint of that key in the realm,
        of an identity ``session.shares_key_with`` admits (every one when ``None``)."""
        return self.state.write_taint(session.realm, session.identity, session.session_key,
                                      session.shares_key_with)

    def derived_taint(self, session: SessionRef) -> tuple[TaintState, bool] | None:
        """The taint content derived from ``session`` (key required) carries: ``(taint, reset)`` where
        ``reset`` says the session was tainted when a reset closed it (its taint lives on the reset mark),
        or ``None`` when the session is clean, was reset clean, or is unknown, and no other identity's
        session of the key that counts is tainted.

        That identity's own session in that realm first (its live taint, then its reset mark); then
        another identity's taint of the key in the realm, live or carried by the reset mark that closed it
        (the rule of evidence citing the key, :meth:`evidence_reason`): every identity's, or under
        ``[agent_memory] shared_key_taint = "managed"`` those ``session.shares_key_with`` admits, its source
        read as "another identity's session of this key" (a host's summary of a context agents share carries
        what any of them read there, and another agent's reset of its copy of the key clears none of it).
        The identity's other sessions and its pending taint never count."""
        live = self.state.session_taint(session.realm, session.identity, session.keyed())
        if live is not None:
            return live, False
        boundary = self.reset_boundary(session)
        if boundary is not None and boundary.prior_taint is not None:
            return boundary.prior_taint, True
        shared, mark = self.state.evidence_state(session.realm, session.keyed(), session.identity,
                                                 session.shares_key_with)
        if shared is not None:
            return shared, False
        if mark is not None and mark.prior_taint is not None:
            return mark.prior_taint, True
        return None

    def current_session(self, identity: str, *, realm: str) -> str | None:
        """The session ``identity`` currently speaks from in ``realm``, if known."""
        return self.state.current_session(realm, _key(identity))

    def reset_boundary(self, session: SessionRef) -> ResetBoundary | None:
        """The reset-boundary mark of ``session`` (key required), if it was closed by a reset."""
        return self.state.reset_boundary(session.realm, session.identity, session.keyed())

    def evidence_reason(self, session_key: str, *, realm: str, writer: str | None = None,
                        counts: Callable[[str], bool] | None = None) -> str | None:
        """Why a write in ``realm`` citing ``session_key`` as evidence must quarantine, if it must.

        Evidence refs name a session, not its identity, so every identity's state
        for that key in the realm counts (fail closed) unless ``counts`` narrows it: then the
        writer's own, a legacy row's, and another identity's that ``counts`` admits (the writing
        session's :attr:`~meta_memory.session_ref.SessionRef.shares_key_with`, set only under
        ``[agent_memory] shared_key_taint = "managed"``). A tainted session (live,
        or tainted when it was reset) gives ``evidence session tainted by
        <source> (session-tainted ⇒ range-tainted)``; a clean session closed by
        a reset gives :data:`RESET_BOUNDARY_REASON`.
        """
        live, boundary = self.state.evidence_state(realm, session_key, _key(writer) if writer else None, counts)
        if live is not None:
            return evidence_tainted_reason(live.source)
        if boundary is None:
            return None
        if boundary.prior_taint is not None:
            return evidence_tainted_reason(boundary.prior_taint.source)
        return RESET_BOUNDARY_REASON

    def at_capacity(self) -> bool:
        """Whether the session state is at its row cap (the gate then quarantines every LLM write)."""
        return self.state.at_capacity()

    def stats(self) -> dict[str, int]:
        """Counts for status pages: ``{identities, tainted_sessions, pending, reset_boundaries, sessions, ...}``."""
        return self.state.stats()

    # ------------------------------------------------------------------ internals

    def _emit(self, session: SessionRef, transitions: list[tuple[str, str | None, str]]) -> None:
        """Deliver ``transitions`` of ``session``'s identity; the realm is part of every event, so the
        timeline's access filter judges it as ``<realm>/<identity>`` (never as the default realm's)."""
        if self._events is None:
            return
        for kind, session_key, source in transitions:
            data = {"realm": session.realm, "identity": session.identity, "session_key": session_key, "kind": kind,
                    "source": source}
            try:
                self._events.emit(TAINT_EVENT, data, identity=session.identity)
            except Exception:  # noqa: BLE001 - an event sink must never break taint tracking
                _log.exception("taint event sink failed for %s", kind)
