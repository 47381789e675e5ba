"""Durable session state: taint, reset boundaries, injection budgets and nonces (spec README, "The host surface").

Every row is keyed by **realm, logical identity and session key**: one identity
can neither read nor clear another's state, whatever session key it names.

Tables (migrations of domain ``session-state``):

* ``session_identities`` (realm, identity): the session the identity speaks
  from, its *pending* taint (untrusted content seen before any session was
  noted), its block nonce and the session key the nonce was minted for;
* ``session_states`` (realm, identity, session_key): the session's taint (first
  taint wins), its reset-boundary mark (with the taint it had when reset), the
  bytes injected so far, and whether its tool results are *unreported*
  (``unreported_at_ms``: a property of the session, not taint, so a reset keeps
  it and the session is tainted again at once with :data:`UNREPORTED_SOURCE`);
* ``session_injected`` (realm, identity, session_key, record_id): the injection
  dedup set.

Bounds. Nothing is ever evicted for room. Rows expire by **age**: a row not
touched (note, tool result, reset, injection) for ``expiry_ms`` is deleted by a
sweep that runs at most once a minute on the next write. The rows of one
(realm, identity) are capped at ``identity_limit`` (its *quota*, by default a
twentieth of ``limit``), and its rows in every realm together at half of ``limit``
(:func:`identity_total_limit`), so no identity can fill the store for the others, not even
one that may speak in every realm. At its quota an identity fails closed for itself alone:

* a new row that only adds permissive state is refused with
  ``AgentMemoryError(reason="session_limit")`` naming the quota;
* taint that would need a new session row is written instead on the identity's
  one *overflow* row (session key ``""``, which no caller can name): while that
  row is tainted every session of the identity counts as tainted (its writes
  quarantine) until the row expires, ``expiry_ms`` after its last taint; past its rows
  in every realm together, a realm where it has no row yet gets none, and the taint lands on its
  one overflow row of every realm (realm :data:`ALL_REALMS`), which taints all its sessions everywhere.

The number of rows of all identities together is capped at ``limit``; at the
cap the store is *at capacity* and fails closed:

* rows that only add permissive state (a new identity noted or reporting a
  trusted tool result, a nonce or an injection budget for a new session, a
  reset mark for an unknown session) are refused with
  ``AgentMemoryError(reason="session_limit")``;
* taint is always written, with the rows it needs (it only ever makes writes
  stricter), so an untrusted tool result is never refused;
* :meth:`SessionStateStore.at_capacity` is true, and the write gate then
  quarantines every LLM-authored write until expiry frees room.

A taint the database refuses to take (a full disk) is held in memory, enforced
and written at the next chance (:mod:`.unwritten`): recording taint fails closed.

Clean sessions cost nothing: noting a new session only moves the identity's
``current_session``, so a flood of ``meta/session/note`` calls adds no rows.
The cap and the quotas are checked against counts taken at each sweep (an
identity's when it first adds a row after one) plus the rows this process
added since, so several gateways may overshoot them by what they add between
two sweeps.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from meta_memory.clock import Clock, new_nonce
from meta_memory.errors import AgentMemoryError
from meta_memory.limits import DAY_MS, DEFAULT_SESSION_STATE_EXPIRY_DAYS, DEFAULT_SESSION_STATE_LIMIT

from .backends import SessionBackend, Sql
from .unwritten import HeldTaints

__all__ = [
    "DEFAULT_EXPIRY_MS",
    "DEFAULT_LIMIT",
    "SWEEP_INTERVAL_MS",
    "TaintState",
    "ResetBoundary",
    "SessionStateStore",
]

_log = logging.getLogger("meta_memory.session_state")

#: Default age after which an untouched row expires (``agent_memory.session_state_expiry_days``'s default).
DEFAULT_EXPIRY_MS = DEFAULT_SESSION_STATE_EXPIRY_DAYS * DAY_MS
#: Default cap on rows (identities + sessions; ``agent_memory.session_state_limit``'s default).
DEFAULT_LIMIT = DEFAULT_SESSION_STATE_LIMIT
#: The taint source of a session whose tool results are never reported (``tool_results = "unreported"``).
UNREPORTED_SOURCE = "unreported tool results (the session's taint cannot be known)"
#: The session key of an identity's overflow row (taint recorded past its quota); never a valid key.
OVERFLOW_KEY = ""
#: The realm of an identity's overflow row past its quota over every realm (:meth:`SessionStateStore._identity_full`);
#: never a valid realm name, and its taint counts in every realm.
ALL_REALMS = ""
#: The migration ledger's domain recording the one rewrite of session keys holding a credential
#: (:meth:`SessionStateStore.redact_credential_keys`).
REDACTED_KEYS_DOMAIN = "session-state-keys"
#: The source of taint recorded on the overflow row for a session that had no row of its own.
QUOTA_SOURCE_SUFFIX = "; recorded past this identity's session-state quota (agent_memory.session_state_identity_limit)"


def default_identity_limit(limit: int) -> int:
    """The per-identity quota when none is configured: a twentieth of ``limit`` (at least 2, at most ``limit``)."""
    return min(limit, max(2, limit // 20))


def identity_total_limit(limit: int, identity_limit: int) -> int:
    """The rows one identity may hold in every realm together: half of ``limit`` (never below its quota in one
    realm), so an identity that may speak in every realm cannot fill the cap for the others by adding a quota
    in each. Counted by name: one confined to a realm cannot use up this room for a namesake in another
    while ``identity_limit`` is under half of ``limit``; at half or more it can (``docs/security.md``)."""
    return max(identity_limit, limit // 2)
#: The expiry sweep runs at most this often (by the store clock, or by the monotonic clock).
SWEEP_INTERVAL_MS = 60_000
_RECOUNT_INTERVAL_S = 1.0
#: How long :meth:`SessionStateStore.stats` answers from its last count.
STATS_TTL_S = 5.0
#: A note or trusted tool result repeating the identity's current session rewrites nothing when its rows
#: were touched less than this long ago (expiry is counted in days).
TOUCH_INTERVAL_MS = 60_000


#: the source a write carries when the taint of its session key is another identity's (``write_taint``): that
#: identity's own source (a tool name it chose) is neither shown to the writer nor put before the writer's reviewers
OTHER_IDENTITY_TAINT_SOURCE = "another identity's session of this key"
#: the identity an earlier version's taint file is adopted under (:meth:`SessionStateStore.import_legacy`): no
#: identity's, so its source is shown to every writer, as that version showed it
LEGACY = ""


def taint_counts(holder: str, writer: str | None, counts: Callable[[str], bool] | None) -> bool:
    """Whether ``holder``'s taint of a session key counts for a write by ``writer`` citing or coming from that
    key: the writer's own and a legacy row's always; another identity's when ``counts`` admits it (every
    identity's when ``None``: :attr:`~meta_memory.session_ref.SessionRef.shares_key_with`). The one rule of
    the database's rows and the held ones (:mod:`.unwritten`)."""
    return counts is None or holder in (writer, LEGACY) or bool(counts(holder))


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


#: One transition ``(kind, session_key | None, source)``; ``kind`` in tainted | rotated_clean | reset_boundary.
Transition = tuple[str, "str | None", str]

_ROTATED_SOURCE = "rotated away from a tainted session; the new session starts clean"
_RESET_SOURCE = "fresh-context reset boundary"


def _taint(at: Any, source: Any) -> TaintState | None:
    return TaintState(int(at), str(source)) if at is not None and source is not None else None


class SessionStateStore:
    """The one authority over session state (module docstring); thread-safe, shared by gateways on PostgreSQL.

    Args:
        backend: where the tables live (:mod:`.backends`).
        clock: source of ``touched_ms``, taint and boundary times.
        expiry_ms: age (ms since last touched) after which a row is swept.
        limit: row cap (identities + sessions); at it the store fails closed.
        identity_limit: row cap of one (realm, identity) (``None``: :func:`default_identity_limit`);
            at it that identity alone fails closed (module docstring). At most ``limit``.
        nonce_fn: nonce source (32 hex chars by default).

    All methods take an already-normalised realm and logical identity. Raises
    ``AgentMemoryError("io")`` when the database fails and
    ``AgentMemoryError("session_limit")`` at capacity (see the module docstring).
    """

    def __init__(
        self,
        backend: SessionBackend,
        clock: Clock,
        *,
        expiry_ms: int = DEFAULT_EXPIRY_MS,
        limit: int = DEFAULT_LIMIT,
        identity_limit: int | None = None,
        nonce_fn: Callable[[], str] = new_nonce,
    ) -> None:
        if expiry_ms < 1 or limit < 1 or (identity_limit is not None and identity_limit < 1):
            raise ValueError("expiry_ms, limit and identity_limit must be at least 1")
        self._db = backend
        self._clock = clock
        self.expiry_ms = expiry_ms
        self.limit = limit
        self.identity_limit = min(limit, identity_limit if identity_limit is not None else default_identity_limit(limit))
        self.identity_total_limit = identity_total_limit(limit, self.identity_limit)
        #: (realm, identity) -> its row count (counted on its first new row after a sweep, then kept up); the
        #: identity's rows in every realm are kept under (:data:`ALL_REALMS`, identity)
        self._ident_rows: dict[tuple[str, str], int] = {}
        self._nonce_fn = nonce_fn
        self._lock = threading.Lock()
        self._rows: int | None = None
        self._last_sweep_ms = -(2**62)
        self._last_sweep_mono = time.monotonic()
        self._last_recount = 0.0
        self._stats: tuple[float, dict[str, int]] | None = None
        self._held = HeldTaints()

    def close(self) -> None:
        """Close the backend (idempotent)."""
        self._db.close()

    # ------------------------------------------------------------------ capacity and expiry

    def _maintain(self, sql: Sql, now: int) -> None:
        mono = time.monotonic()
        with self._lock:
            rows = self._rows
            due = (rows is None or now - self._last_sweep_ms >= SWEEP_INTERVAL_MS
                   or (mono - self._last_sweep_mono) * 1000 >= SWEEP_INTERVAL_MS)
            recount = due or (rows is not None and rows >= self.limit
                              and mono - self._last_recount >= _RECOUNT_INTERVAL_S)
            if due:
                self._last_sweep_ms, self._last_sweep_mono = now, mono
            if recount:
                self._last_recount = mono
        if due:
            cutoff = now - self.expiry_ms
            sql.run("DELETE FROM {t}session_injected WHERE EXISTS (SELECT 1 FROM {t}session_states s WHERE "
                    "s.realm = {t}session_injected.realm AND s.identity = {t}session_injected.identity AND "
                    "s.session_key = {t}session_injected.session_key AND s.touched_ms < ?)", (cutoff,))
            sql.run("DELETE FROM {t}session_states WHERE touched_ms < ?", (cutoff,))
            sql.run("DELETE FROM {t}session_identities WHERE touched_ms < ?", (cutoff,))
            with self._lock:
                self._ident_rows.clear()
        if recount:
            count = sum(int(sql.rows(f"SELECT COUNT(*) FROM {{t}}{table}")[0][0])
                        for table in ("session_identities", "session_states"))
            with self._lock:
                self._rows = count

    def _added(self, realm: str, ident: str) -> None:
        with self._lock:
            self._rows = (self._rows or 0) + 1
            for key in {(realm, ident), (ALL_REALMS, ident)}:
                if key in self._ident_rows:
                    self._ident_rows[key] += 1

    def _full(self) -> bool:
        with self._lock:
            return self._rows is not None and self._rows >= self.limit

    def _identity_rows(self, sql: Sql, realm: str, ident: str) -> int:
        """The rows of ``ident`` in ``realm`` (in every realm for :data:`ALL_REALMS`), counted once after each
        sweep, then kept up."""
        key = (realm, ident)
        with self._lock:
            count = self._ident_rows.get(key)
        if count is None:
            where, args = ("identity = ?", (ident,)) if realm == ALL_REALMS else (
                "realm = ? AND identity = ?", (realm, ident))
            count = sum(int(sql.rows(f"SELECT COUNT(*) FROM {{t}}{table} WHERE {where}", args)[0][0])
                        for table in ("session_states", "session_identities"))
            with self._lock:
                self._ident_rows[key] = count
        return count

    def _identity_full(self, sql: Sql, realm: str, ident: str) -> bool:
        """Whether ``ident`` holds its quota of rows in ``realm``, or its rows in every realm together their
        bound (:func:`identity_total_limit`): a name granted in every realm adds no quota per realm."""
        return (self._identity_rows(sql, realm, ident) >= self.identity_limit
                or self._identity_rows(sql, ALL_REALMS, ident) >= self.identity_total_limit)

    def _refuse_new(self, what: str, sql: Sql | None = None, realm: str = "", ident: str = "") -> None:
        if self._full():
            raise AgentMemoryError(
                "session_limit",
                f"session state is at its limit of {self.limit} rows; {what} is refused until idle sessions "
                f"expire (agent_memory.session_state_expiry_days); taint is kept and LLM writes quarantine meanwhile",
            )
        if sql is not None and self._identity_full(sql, realm, ident):
            raise AgentMemoryError(
                "session_limit",
                f"the session state of identity {realm}/{ident} is at its quota of {self.identity_limit} rows "
                f"(agent_memory.session_state_identity_limit), or of {self.identity_total_limit} rows in every realm "
                f"together; {what} is refused until its idle sessions expire "
                f"(agent_memory.session_state_expiry_days); its taint is kept",
            )

    def at_capacity(self) -> bool:
        """Whether the row cap is reached (the write gate then quarantines every LLM write)."""
        if self._rows is None:
            self._db.read(lambda sql: self._maintain_read(sql))
        return self._full()

    def _maintain_read(self, sql: Sql) -> None:
        count = sum(int(sql.rows(f"SELECT COUNT(*) FROM {{t}}{table}")[0][0])
                    for table in ("session_identities", "session_states"))
        with self._lock:
            if self._rows is None:
                self._rows = count

    def sweep(self) -> None:
        """Delete expired rows and recount now (normally done at most once a minute on a write)."""
        with self._lock:
            self._rows = None
            self._ident_rows.clear()
        self._db.write(lambda sql: self._maintain(sql, self._clock.now_ms()))

    # ------------------------------------------------------------------ row helpers

    @staticmethod
    def _identity_row(sql: Sql, realm: str, ident: str, lock: bool = False) -> tuple[Any, ...] | None:
        rows = sql.rows("SELECT current_session, pending_at_ms, pending_source, nonce, nonce_session "
                        "FROM {t}session_identities WHERE realm = ? AND identity = ?" + ("{lock}" if lock else ""),
                        (realm, ident))
        return rows[0] if rows else None

    @staticmethod
    def _session_row(sql: Sql, realm: str, ident: str, session: str, lock: bool = False) -> tuple[Any, ...] | None:
        rows = sql.rows("SELECT tainted_at_ms, taint_source, boundary_at_ms, prior_at_ms, prior_source, "
                        "injected_bytes, unreported_at_ms FROM {t}session_states "
                        "WHERE realm = ? AND identity = ? AND session_key = ?"
                        + ("{lock}" if lock else ""), (realm, ident, session))
        return rows[0] if rows else None

    def _touch_identity(self, sql: Sql, realm: str, ident: str, now: int, *, permissive: bool,
                        current: str | None = None) -> tuple[Any, ...] | None:
        """Lock (creating when needed) the identity row and touch it; returns its state before the call.
        With ``current``, the row's current session becomes ``current`` and its pending taint is cleared
        (the returned state still shows both as they were)."""
        row = self._identity_row(sql, realm, ident, lock=True)
        if row is None:
            if permissive:
                self._refuse_new("a new identity", sql, realm, ident)
            sql.run("INSERT INTO {t}session_identities (realm, identity, touched_ms) VALUES (?, ?, ?) "
                    "ON CONFLICT (realm, identity) DO UPDATE SET touched_ms = excluded.touched_ms", (realm, ident, now))
            self._added(realm, ident)
            row = self._identity_row(sql, realm, ident, lock=True)
            assert row is not None
        if current is not None:
            sql.run("UPDATE {t}session_identities SET touched_ms = ?, current_session = ?, pending_at_ms = NULL, "
                    "pending_source = NULL WHERE realm = ? AND identity = ?", (now, current, realm, ident))
        else:
            sql.run("UPDATE {t}session_identities SET touched_ms = ? WHERE realm = ? AND identity = ?",
                    (now, realm, ident))
        return row

    def _touch_session(self, sql: Sql, realm: str, ident: str, session: str, now: int,
                       *, permissive: bool) -> tuple[Any, ...]:
        row = self._session_row(sql, realm, ident, session, lock=True)
        if row is None:
            if permissive:
                self._refuse_new("a new session", sql, realm, ident)
            sql.run("INSERT INTO {t}session_states (realm, identity, session_key, touched_ms) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (realm, identity, session_key) DO UPDATE SET touched_ms = excluded.touched_ms",
                    (realm, ident, session, now))
            self._added(realm, ident)
            row = self._session_row(sql, realm, ident, session, lock=True)
            assert row is not None
            return row
        sql.run("UPDATE {t}session_states SET touched_ms = ? WHERE realm = ? AND identity = ? AND session_key = ?",
                (now, realm, ident, session))
        return row

    def _taint_session(self, sql: Sql, realm: str, ident: str, session: str, state: TaintState, now: int,
                       out: list[Transition], *, bounded: bool = True) -> None:
        if (bounded and self._session_row(sql, realm, ident, session) is None
                and self._identity_full(sql, realm, ident)):
            self._taint_overflow(sql, realm, ident, session, state, now, out)
            return
        row = self._touch_session(sql, realm, ident, session, now, permissive=False)
        if row[0] is not None:
            return
        sql.run("UPDATE {t}session_states SET tainted_at_ms = ?, taint_source = ? "
                "WHERE realm = ? AND identity = ? AND session_key = ?",
                (state.tainted_at_ms, state.source, realm, ident, session))
        out.append(("tainted", session, state.source))

    def _taint_overflow(self, sql: Sql, realm: str, ident: str, session: str | None, state: TaintState, now: int,
                        out: list[Transition]) -> None:
        """``ident`` is at its quota and ``session`` has no row: the taint lands on the identity's overflow
        row (one per identity, created past the quota), which taints every session of the identity; it is
        touched by every taint it takes, so it expires ``expiry_ms`` after the last. Past the identity's rows in
        every realm together, a realm without such a row gets none: the taint lands on the identity's one row of
        :data:`ALL_REALMS`, which taints its sessions in every realm."""
        if (self._session_row(sql, realm, ident, OVERFLOW_KEY) is None
                and self._identity_rows(sql, ALL_REALMS, ident) >= self.identity_total_limit):
            realm = ALL_REALMS
        row = self._touch_session(sql, realm, ident, OVERFLOW_KEY, now, permissive=False)
        if row[0] is None:
            sql.run("UPDATE {t}session_states SET tainted_at_ms = ?, taint_source = ? "
                    "WHERE realm = ? AND identity = ? AND session_key = ?",
                    (state.tainted_at_ms, state.source + QUOTA_SOURCE_SUFFIX, realm, ident, OVERFLOW_KEY))
            if realm == ALL_REALMS:
                _log.warning("session state of %s is at its %d rows in every realm together: further taint of this "
                             "identity is recorded on one row and taints all its sessions in every realm", ident,
                             self.identity_total_limit)
            else:
                _log.warning("session state of %s/%s is at its quota of %d rows: further taint of this identity is "
                             "recorded on one row and taints all its sessions", realm, ident, self.identity_limit)
        out.append(("tainted", session, state.source))

    @staticmethod
    def _overflow_taint(sql: Sql, realm: str, ident: str) -> TaintState | None:
        """The taint of ``ident``'s overflow row in ``realm``, else of its row of :data:`ALL_REALMS`."""
        rows = sql.rows("SELECT tainted_at_ms, taint_source FROM {t}session_states WHERE realm IN (?, ?) "
                        "AND identity = ? AND session_key = ? AND tainted_at_ms IS NOT NULL ORDER BY realm = ?",
                        (realm, ALL_REALMS, ident, OVERFLOW_KEY, ALL_REALMS))
        return _taint(rows[0][0], rows[0][1]) if rows else None

    def _session_tainted(self, sql: Sql, realm: str, ident: str, session: str) -> bool:
        row = self._session_row(sql, realm, ident, session)
        return row is not None and row[0] is not None

    def _note(self, sql: Sql, realm: str, ident: str, session: str, now: int, out: list[Transition],
              *, permissive: bool = True) -> None:
        before = self._touch_identity(sql, realm, ident, now, permissive=permissive, current=session)
        assert before is not None
        previous, pending = before[0], _taint(before[1], before[2])
        if pending is not None:
            self._taint_session(sql, realm, ident, session, pending, now, out)
        else:
            row = self._session_row(sql, realm, ident, session)
            if row is not None:
                sql.run("UPDATE {t}session_states SET touched_ms = ? WHERE realm = ? AND identity = ? "
                        "AND session_key = ?", (now, realm, ident, session))
        if (previous is not None and previous != session and self._session_tainted(sql, realm, ident, previous)
                and not self._session_tainted(sql, realm, ident, session)):
            out.append(("rotated_clean", session, _ROTATED_SOURCE))

    # ------------------------------------------------------------------ taint lifecycle

    def _unchanged(self, realm: str, ident: str, session: str, now: int) -> tuple[bool, TaintState | None]:
        """Read-only fast path: ``(True, taint)`` when ``session`` is already the identity's current session,
        nothing is pending and its rows were touched within :data:`TOUCH_INTERVAL_MS`."""
        rows = self._db.read(lambda sql: sql.rows(
            "SELECT i.current_session, i.pending_at_ms, i.touched_ms, s.touched_ms, s.tainted_at_ms, s.taint_source "
            "FROM {t}session_identities i LEFT JOIN {t}session_states s ON s.realm = i.realm "
            "AND s.identity = i.identity AND s.session_key = i.current_session "
            "WHERE i.realm = ? AND i.identity = ?", (realm, ident)))
        if not rows:
            return False, None
        current, pending, touched, s_touched, s_at, s_source = rows[0]
        fresh = now - int(touched) < TOUCH_INTERVAL_MS and (s_touched is None or now - int(s_touched) < TOUCH_INTERVAL_MS)
        if current != session or pending is not None or not fresh:
            return False, None
        return True, _taint(s_at, s_source)

    def note_session(self, realm: str, ident: str, session: str) -> tuple[TaintState | None, list[Transition]]:
        """``ident`` now speaks from ``session``; a pending taint lands on it. Returns the identity's
        effective taint afterwards and the transitions."""
        now = self._clock.now_ms()
        out: list[Transition] = []

        def fn(sql: Sql) -> TaintState | None:
            self._maintain(sql, now)
            self._note(sql, realm, ident, session, now, out)
            return self._identity_taint(sql, realm, ident)

        self._write_held()
        same, taint = self._unchanged(realm, ident, session, now)
        if not same:
            taint = self._db.write(fn, durable=False)  # a pending taint moved onto the session stays taint if lost
        # a taint the database refused is enforced from memory: the answer reports it as the write gate does
        return taint or self._held.for_write(realm, ident, session), out

    def observe(self, realm: str, ident: str, session: str | None, untrusted_source: str | None, *,
                unreported: bool = False) -> tuple[TaintState | None, list[Transition]]:
        """One classified tool result: ``untrusted_source`` is ``None`` for trusted content.

        Notes ``session`` first when given; untrusted content taints the current
        session (first taint wins) or becomes the identity's pending taint.
        ``unreported`` (with ``session`` and an untrusted source) also marks the session's tool results
        as never reported, which no reset clears (module docstring).
        Returns the identity's effective taint afterwards and the transitions."""
        now = self._clock.now_ms()
        out: list[Transition] = []

        def fn(sql: Sql) -> TaintState | None:
            self._maintain(sql, now)
            if untrusted_source is not None:
                self._record_taint(sql, realm, ident, session, TaintState(now, untrusted_source), now, out)
                if unreported and session is not None:
                    sql.run("UPDATE {t}session_states SET unreported_at_ms = ? WHERE realm = ? AND identity = ? "
                            "AND session_key = ? AND unreported_at_ms IS NULL", (now, realm, ident, session))
            elif session is not None:
                self._note(sql, realm, ident, session, now, out)
            return self._identity_taint(sql, realm, ident)

        self._write_held()
        if untrusted_source is None:
            if session is None:
                return self.identity_taint(realm, ident), out
            same, taint = self._unchanged(realm, ident, session, now)
            if not same:
                taint = self._db.write(fn, durable=False)
            return taint or self._held.for_write(realm, ident, session), out
        try:
            return self._db.write(fn, durable=True), out
        except AgentMemoryError as exc:  # fail closed: the taint is held, enforced and written later
            state = TaintState(now, untrusted_source)
            self._held.hold((realm, ident, session), state)
            _log.warning("session taint of %s/%s could not be recorded (%s); it is held in memory and enforced "
                         "until it is written", realm, ident, exc.reason)
            return state, [("tainted", session, untrusted_source)]

    def _record_taint(self, sql: Sql, realm: str, ident: str, session: str | None, state: TaintState, now: int,
                      out: list[Transition]) -> None:
        """Untrusted content seen by ``ident`` (from ``session``, noted first): taint that session (first taint
        wins), else the identity's current session, else its pending taint. Recorded even at capacity; in a
        realm where the identity has no row yet while it is past its rows in every realm together, on its
        overflow row of every realm (:meth:`_taint_overflow`)."""
        if (self._identity_row(sql, realm, ident) is None
                and self._identity_rows(sql, ALL_REALMS, ident) >= self.identity_total_limit):
            self._taint_overflow(sql, realm, ident, session, state, now, out)
            return
        if session is not None:
            self._note(sql, realm, ident, session, now, out, permissive=False)
            self._taint_session(sql, realm, ident, session, state, now, out)
            return
        row = self._touch_identity(sql, realm, ident, now, permissive=False)
        assert row is not None
        if row[0] is not None:
            self._taint_session(sql, realm, ident, row[0], state, now, out)
        elif row[1] is None:
            sql.run("UPDATE {t}session_identities SET pending_at_ms = ?, pending_source = ? "
                    "WHERE realm = ? AND identity = ?", (now, state.source, realm, ident))
            out.append(("tainted", None, state.source))

    def _write_held(self) -> bool:
        """Write the held taints, oldest first (see :mod:`.unwritten`); True when none is left held."""
        for key, state in self._held.pending():
            realm, ident, session = key
            try:
                self._db.write(lambda sql: self._record_taint(sql, realm, ident, session, state,
                                                              self._clock.now_ms(), []))
            except AgentMemoryError:
                return False
            self._held.written(key)
        return not self._held.pending()

    def readiness_problem(self) -> str | None:
        """What keeps the session state from serving, for ``GET /v1/ready``: its database does not answer a
        read, or taint is held in memory because the database refused it (see :mod:`.unwritten`)."""
        try:
            self._db.read(lambda sql: sql.rows("SELECT count(*) FROM {t}session_identities"))
        except AgentMemoryError as exc:
            return exc.message
        if not self._write_held():
            return (f"{len(self._held.pending())} session taint(s) could not be written (the database refuses writes, e.g. "
                    "a full disk): they are enforced from memory but would be lost by a restart; free space, "
                    "then they are written at once")
        if self._held.overflowed is not None:
            return ("more session taints failed to be written than could be held in memory: every LLM-authored "
                    "write is quarantined until the gateway restarts; review the writes of sessions that saw "
                    "untrusted content meanwhile")
        return None

    def reset(self, realm: str, ident: str, session: str | None) -> list[Transition]:
        """A fresh-context boundary of ``ident``'s ``session`` (``None``: its current session).

        Clears the identity's current session and pending taint, moves the
        session's live taint onto its reset mark and resets its injection state.
        Touches only rows of ``(realm, ident)``."""
        now = self._clock.now_ms()
        out: list[Transition] = []

        def fn(sql: Sql) -> None:
            self._maintain(sql, now)
            row = self._identity_row(sql, realm, ident, lock=True)
            pending = _taint(row[1], row[2]) if row else None
            target = session if session is not None else (row[0] if row else None)
            if row is not None:
                sql.run("UPDATE {t}session_identities SET current_session = NULL, pending_at_ms = NULL, "
                        "pending_source = NULL, nonce = NULL, nonce_session = NULL, touched_ms = ? "
                        "WHERE realm = ? AND identity = ?", (now, realm, ident))
            if target is None:
                if pending is not None:
                    out.append(("reset_boundary", None, pending.source))
                return
            srow = self._session_row(sql, realm, ident, target, lock=True)
            live = _taint(srow[0], srow[1]) if srow else None
            prior = live or pending
            marked = srow is not None and srow[2] is not None
            if srow is None:
                if prior is None:
                    self._refuse_new("a reset mark for a new session", sql, realm, ident)
                elif self._identity_full(sql, realm, ident):
                    self._taint_overflow(sql, realm, ident, target, prior, now, [])
                    out.append(("reset_boundary", target, prior.source))
                    return
                srow = self._touch_session(sql, realm, ident, target, now, permissive=False)
            if not marked or prior is not None:
                keep = prior or _taint(srow[3], srow[4])
                sql.run("UPDATE {t}session_states SET tainted_at_ms = NULL, taint_source = NULL, boundary_at_ms = ?, "
                        "prior_at_ms = ?, prior_source = ?, injected_bytes = 0, touched_ms = ? "
                        "WHERE realm = ? AND identity = ? AND session_key = ?",
                        (now, keep.tainted_at_ms if keep else None, keep.source if keep else None, now,
                         realm, ident, target))
                out.append(("reset_boundary", target, prior.source if prior else _RESET_SOURCE))
                if srow[6] is not None:  # unreported tool results: a fresh context is still unreported
                    sql.run("UPDATE {t}session_states SET tainted_at_ms = ?, taint_source = ? "
                            "WHERE realm = ? AND identity = ? AND session_key = ?",
                            (now, UNREPORTED_SOURCE, realm, ident, target))
                    out.append(("tainted", target, UNREPORTED_SOURCE))
            else:
                sql.run("UPDATE {t}session_states SET injected_bytes = 0, touched_ms = ? "
                        "WHERE realm = ? AND identity = ? AND session_key = ?", (now, realm, ident, target))
            sql.run("DELETE FROM {t}session_injected WHERE realm = ? AND identity = ? AND session_key = ?",
                    (realm, ident, target))

        self._db.write(fn)
        return out

    # ------------------------------------------------------------------ taint queries

    @staticmethod
    def _identity_taint(sql: Sql, realm: str, ident: str) -> TaintState | None:
        rows = sql.rows("SELECT i.pending_at_ms, i.pending_source, s.tainted_at_ms, s.taint_source "
                        "FROM {t}session_identities i LEFT JOIN {t}session_states s ON s.realm = i.realm "
                        "AND s.identity = i.identity AND s.session_key = i.current_session "
                        "WHERE i.realm = ? AND i.identity = ?", (realm, ident))
        if not rows:
            return SessionStateStore._overflow_taint(sql, realm, ident)
        return (_taint(rows[0][0], rows[0][1]) or _taint(rows[0][2], rows[0][3])
                or SessionStateStore._overflow_taint(sql, realm, ident))

    def identity_taint(self, realm: str, ident: str) -> TaintState | None:
        """The identity's pending taint, else its current session's taint, else a taint held unwritten, else
        ``None``."""
        return self._db.read(lambda sql: self._identity_taint(sql, realm, ident)) or (
            self._held.for_write(realm, ident, None) if self._held else None)

    def agent_taint(self, ident: str, session: str | None = None, readable: Callable[[str], bool] | None = None,
                    ) -> tuple[bool, TaintState | None]:
        """What another agent's output carries, judged on the realms ``readable`` admits (every realm when
        ``None``) and on no other: whether ``ident`` (that ``session`` of it, when given) has session state
        there, and a taint of it there. A taint counts in any such realm (a sub-agent may run in another
        realm than the agent it answers). State in a realm ``readable`` refuses is never read: the same
        name there is another identity (``docs/access.md``), and its state, clean or tainted, changes no
        answer.

        The taint counted: the identity's pending taint, its overflow taint, a taint held unwritten (and the
        store's overflow of held taints, which every realm shares), and of ``session`` (any of its sessions
        when ``None``) the live taint **or the taint a reset closed it with** (its reset mark): an output
        reported after the agent's reset may have been written before it, so a reset never launders what
        the agent said while tainted (``docs/security.md``)."""
        def admitted(realm: Any) -> bool:
            return readable is None or readable(str(realm))

        def fn(sql: Sql) -> tuple[bool, TaintState | None]:
            rows = [r for r in sql.rows("SELECT realm, pending_at_ms, pending_source FROM {t}session_identities "
                                        "WHERE identity = ?", (ident,)) if admitted(r[0])]
            keyed = "" if session is None else "AND session_key = ? "
            args: tuple[Any, ...] = (ident,) if session is None else (ident, session)
            if session is None:
                known = bool(rows)
            else:  # that session is known: the identity's current one in a realm, or a row of it there
                known = any(admitted(r[0]) for r in sql.rows(
                    "SELECT realm FROM {t}session_identities WHERE identity = ? AND current_session = ? UNION ALL "
                    "SELECT realm FROM {t}session_states WHERE identity = ? AND session_key = ?", args + args))
            for realm, at_ms, source in rows:
                taint = _taint(at_ms, source)
                if taint is None:
                    found = sql.rows("SELECT tainted_at_ms, taint_source, prior_at_ms, prior_source "
                                     "FROM {t}session_states WHERE realm = ? AND identity = ? " + keyed +
                                     "AND (tainted_at_ms IS NOT NULL OR prior_at_ms IS NOT NULL) LIMIT 1",
                                     (realm, *args))
                    taint = (next((t for t in (_taint(found[0][0], found[0][1]), _taint(found[0][2], found[0][3]))
                                   if t is not None), None) if found else None) or self._overflow_taint(
                        sql, realm, ident)
                if taint is not None:
                    return True, taint
            return known, None

        known, taint = self._db.read(fn)
        if taint is not None:
            return True, taint
        held = self._held.for_identity(ident, readable) if self._held else None
        return known or held is not None, held

    def session_taint(self, realm: str, ident: str, session: str) -> TaintState | None:
        """The live taint of ``ident``'s ``session`` (``None`` when clean or reset; a held one and the
        identity's overflow taint count)."""
        def fn(sql: Sql) -> TaintState | None:
            row = self._session_row(sql, realm, ident, session)
            return (_taint(row[0], row[1]) if row else None) or self._overflow_taint(sql, realm, ident)

        return self._db.read(fn) or (self._held.for_session(realm, ident, session) if self._held else None)

    def write_taint(self, realm: str, ident: str, session: str | None,
                    counts: Callable[[str], bool] | None = None) -> TaintState | None:
        """The taint a write by ``ident`` from ``session`` in ``realm`` carries.

        Without a session: the identity's pending taint, else its current session's, else any of its
        sessions' live taint in ``realm`` (a write that names no session may come from any of its contexts,
        so it fails closed; the held taints agree). With one: the
        identity's pending taint (untrusted content seen before any session was known), else the
        live taint of that ``session`` key in ``realm`` -- the identity's own first, else another
        identity's that ``counts`` admits (every identity's when ``None``; a legacy entry without an
        identity always counts): a key another identity tainted only adds quarantine. The identity's
        *other* sessions never count: taint is per (realm, identity, session), so a clean sibling of a
        tainted session writes active whichever of the two was noted last."""
        def fn(sql: Sql) -> TaintState | None:
            if not session:
                return self._identity_taint(sql, realm, ident) or self._any_session_taint(sql, realm, ident)
            rows = sql.rows("SELECT pending_at_ms, pending_source FROM {t}session_identities "
                            "WHERE realm = ? AND identity = ?", (realm, ident))
            taint = _taint(rows[0][0], rows[0][1]) if rows else None
            if taint is None:
                taint = self._key_taint(sql, realm, ident, session, counts)
            return taint or self._overflow_taint(sql, realm, ident)

        if self._held:  # taint the database refused: written now if it can be, enforced while it cannot
            self._write_held()
            held = self._held.for_write(realm, ident, session, counts)
            if held is not None:
                return held
        return self._db.read(fn)

    @staticmethod
    def _any_session_taint(sql: Sql, realm: str, ident: str) -> TaintState | None:
        """The earliest live taint of any of ``ident``'s sessions in ``realm`` (``None`` when all are clean)."""
        rows = sql.rows("SELECT tainted_at_ms, taint_source FROM {t}session_states WHERE realm = ? AND identity = ? "
                        "AND tainted_at_ms IS NOT NULL ORDER BY tainted_at_ms LIMIT 1", (realm, ident))
        return _taint(rows[0][0], rows[0][1]) if rows else None

    @staticmethod
    def _key_taint(sql: Sql, realm: str, ident: str, session: str,
                   counts: Callable[[str], bool] | None) -> TaintState | None:
        """The live taint of ``session`` in ``realm`` a write by ``ident`` carries: its own, else the first
        other identity's ``counts`` admits (every one's when ``None``; a legacy row always). Another
        identity's source is not this identity's to read (nor is text that identity chose this one's
        reviewers' to see): :data:`OTHER_IDENTITY_TAINT_SOURCE` stands in for it."""
        for at_ms, source, holder in sql.rows(
                "SELECT tainted_at_ms, taint_source, identity FROM {t}session_states WHERE realm = ? "
                "AND session_key = ? AND tainted_at_ms IS NOT NULL ORDER BY identity <> ?", (realm, session, ident)):
            if taint_counts(holder, ident, counts):
                return _taint(at_ms, source if holder in (ident, LEGACY) else OTHER_IDENTITY_TAINT_SOURCE)
        return None

    def current_session(self, realm: str, ident: str) -> str | None:
        """The session ``ident`` currently speaks from, if known."""
        row = self._db.read(lambda sql: self._identity_row(sql, realm, ident))
        return row[0] if row else None

    def reset_boundary(self, realm: str, ident: str, session: str) -> ResetBoundary | None:
        """The reset mark of ``ident``'s ``session``, if it was closed by a reset."""
        row = self._db.read(lambda sql: self._session_row(sql, realm, ident, session))
        if row is None or row[2] is None:
            return None
        return ResetBoundary(int(row[2]), _taint(row[3], row[4]))

    def evidence_state(self, realm: str, session: str, writer: str | None = None,
                       counts: Callable[[str], bool] | None = None,
                       ) -> tuple[TaintState | None, ResetBoundary | None]:
        """For a write citing ``session`` as evidence: any live taint of that key in ``realm`` (the
        writer's own, a legacy row's, and another identity's that ``counts`` admits: every one's when
        ``None``), else any such reset mark (a tainted one first). With ``writer`` (the writing
        identity), another identity's source is replaced by :data:`OTHER_IDENTITY_TAINT_SOURCE`."""
        rows = [r for r in self._db.read(lambda sql: sql.rows(
            "SELECT tainted_at_ms, taint_source, boundary_at_ms, prior_at_ms, prior_source, identity "
            "FROM {t}session_states WHERE realm = ? AND session_key = ? "
            "AND (tainted_at_ms IS NOT NULL OR boundary_at_ms IS NOT NULL) ORDER BY identity <> ?",
            (realm, session, writer or ""))) if taint_counts(r[5], writer, counts)]

        def source(row: Any, text: Any) -> Any:
            return text if writer is None or row[5] in (writer, LEGACY) or text is None else OTHER_IDENTITY_TAINT_SOURCE

        live = next((t for t in (_taint(r[0], source(r, r[1])) for r in rows) if t is not None), None)
        if live is None and self._held:  # a taint the database refused counts as if written
            live = self._held.for_key(realm, session, writer, counts)
        marks = [ResetBoundary(int(r[2]), _taint(r[3], source(r, r[4]))) for r in rows if r[2] is not None]
        marks.sort(key=lambda b: b.prior_taint is None)
        return live, (marks[0] if marks else None)

    def stats(self) -> dict[str, int]:
        """``{identities, tainted_sessions, pending, reset_boundaries, sessions, injection_sessions,
        nonce_identities, limit, identity_limit, expiry_ms, held_taints}`` (``held_taints``: taints the
        database refused, enforced from memory, always current); counted at most once per :data:`STATS_TTL_S` (status pages
        must not turn into table scans on demand)."""
        mono = time.monotonic()
        with self._lock:
            cached = self._stats
            if cached is not None and mono - cached[0] < STATS_TTL_S:
                return {**cached[1], "held_taints": len(self._held)}

        def fn(sql: Sql) -> dict[str, int]:
            def one(query: str) -> int:
                return int(sql.rows(query)[0][0])

            return {
                "identities": one("SELECT COUNT(*) FROM {t}session_identities WHERE current_session IS NOT NULL"),
                "tainted_sessions": one("SELECT COUNT(*) FROM {t}session_states WHERE tainted_at_ms IS NOT NULL"),
                "pending": one("SELECT COUNT(*) FROM {t}session_identities WHERE pending_at_ms IS NOT NULL"),
                "reset_boundaries": one("SELECT COUNT(*) FROM {t}session_states WHERE boundary_at_ms IS NOT NULL"),
                "sessions": one("SELECT COUNT(*) FROM {t}session_states"),
                "injection_sessions": one("SELECT COUNT(*) FROM {t}session_states WHERE injected_bytes > 0"),
                "nonce_identities": one("SELECT COUNT(*) FROM {t}session_identities WHERE nonce IS NOT NULL"),
            }

        out = self._db.read(fn)
        out.update(limit=self.limit, identity_limit=self.identity_limit, expiry_ms=self.expiry_ms)
        with self._lock:
            self._stats = (mono, dict(out))
        # taints the database refused, enforced from memory (not yet among ``tainted_sessions``)
        return {**out, "held_taints": len(self._held)}

    # ------------------------------------------------------------------ injection budgets and nonces

    def nonce_for(self, realm: str, ident: str, session: str | None) -> str:
        """The identity's block nonce for ``session`` (``None`` = build time), minting a fresh one when the
        last was minted for another key. The nonce is never logged or returned elsewhere."""
        now = self._clock.now_ms()

        def fn(sql: Sql) -> str:
            self._maintain(sql, now)
            row = self._touch_identity(sql, realm, ident, now, permissive=True)
            assert row is not None
            if row[3] is not None and row[4] == session:
                return str(row[3])
            nonce = self._nonce_fn()
            sql.run("UPDATE {t}session_identities SET nonce = ?, nonce_session = ? WHERE realm = ? AND identity = ?",
                    (nonce, session, realm, ident))
            return nonce

        return self._db.write(fn, durable=False)

    def injection_state(self, realm: str, ident: str, session: str) -> tuple[int, frozenset[str]]:
        """``(bytes injected so far, record ids already injected)`` in ``ident``'s ``session``."""
        def fn(sql: Sql) -> tuple[int, frozenset[str]]:
            row = self._session_row(sql, realm, ident, session)
            ids = sql.rows("SELECT record_id FROM {t}session_injected WHERE realm = ? AND identity = ? "
                           "AND session_key = ?", (realm, ident, session))
            return (int(row[5]) if row else 0), frozenset(r[0] for r in ids)

        return self._db.read(fn)

    def commit_injection(self, realm: str, ident: str, session: str, record_ids: Iterable[str],
                         rendered_bytes: int) -> None:
        """Add ``rendered_bytes`` to the session's counter and ``record_ids`` to its dedup set."""
        now = self._clock.now_ms()
        ids = sorted(set(record_ids))

        def fn(sql: Sql) -> None:
            self._maintain(sql, now)
            self._touch_session(sql, realm, ident, session, now, permissive=True)
            sql.run("UPDATE {t}session_states SET injected_bytes = injected_bytes + ? "
                    "WHERE realm = ? AND identity = ? AND session_key = ?",
                    (max(0, rendered_bytes), realm, ident, session))
            for rid in ids:
                sql.run("INSERT INTO {t}session_injected (realm, identity, session_key, record_id) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT DO NOTHING", (realm, ident, session, rid))

        self._db.write(fn, durable=False)

    def reset_injection(self, realm: str, ident: str, session: str | None) -> None:
        """Drop ``ident``'s nonce and, when ``session`` is named, that session's dedup set and byte counter."""
        now = self._clock.now_ms()

        def fn(sql: Sql) -> None:
            sql.run("UPDATE {t}session_identities SET nonce = NULL, nonce_session = NULL, touched_ms = ? "
                    "WHERE realm = ? AND identity = ?", (now, realm, ident))
            if session is not None:
                sql.run("UPDATE {t}session_states SET injected_bytes = 0, touched_ms = ? "
                        "WHERE realm = ? AND identity = ? AND session_key = ?", (now, realm, ident, session))
                sql.run("DELETE FROM {t}session_injected WHERE realm = ? AND identity = ? AND session_key = ?",
                        (realm, ident, session))

        self._db.write(fn)

    def forget_records(self, realm: str, record_ids: Iterable[str]) -> None:
        """Drop ``record_ids`` from every session's injection dedup set in ``realm`` (the records were
        erased: no row anywhere names them any more), then let the SQLite file shed the freed bytes."""
        ids = sorted(set(record_ids))
        if not ids:
            return

        def fn(sql: Sql) -> None:
            for first in range(0, len(ids), 500):
                chunk = ids[first:first + 500]
                sql.run(f"DELETE FROM {{t}}session_injected WHERE realm = ? AND record_id IN "
                        f"({', '.join('?' for _ in chunk)})", (realm, *chunk))

        self._db.write(fn)
        truncate = getattr(self._db, "truncate_wal", None)
        if truncate is not None:
            truncate()

    def compacted(self, realm: str, ident: str, session: str) -> TaintState | None:
        """Compaction of ``ident``'s ``session``: taint kept, dedup set and byte counter cleared; returns the taint."""
        now = self._clock.now_ms()

        def fn(sql: Sql) -> TaintState | None:
            row = self._session_row(sql, realm, ident, session, lock=True)
            if row is None:
                return None
            sql.run("UPDATE {t}session_states SET injected_bytes = 0, touched_ms = ? "
                    "WHERE realm = ? AND identity = ? AND session_key = ?", (now, realm, ident, session))
            sql.run("DELETE FROM {t}session_injected WHERE realm = ? AND identity = ? AND session_key = ?",
                    (realm, ident, session))
            return _taint(row[0], row[1])

        return self._db.write(fn)

    # ------------------------------------------------------------------ legacy import

    def redact_credential_keys(self, secret: Callable[[], bytes]) -> int:
        """Rewrite, once, the session keys an earlier version stored in clear though they hold a credential:
        each becomes the key :func:`~meta_memory.session_ref.recorded_session_key` records today
        (``redacted-session:<32 hex>`` under ``secret()``, the installation's session-digest secret, read
        only when such a key is found), in every table (a session's row, its injection set, an identity's
        current and nonce session), so every call naming the key still reaches its state and the credential
        is no longer stored. A row whose digest key has a row already is merged into it, keeping the
        stricter state: the earlier taint (a taint over none), the later reset mark with its prior taint,
        the injected bytes of both, the earlier unreported mark. One write transaction (the keys and their
        digests are worked out before it, so the secret is never read while it holds a connection); the migration
        ledger (``schema_migrations``, domain :data:`REDACTED_KEYS_DOMAIN`) records that it ran, so a later
        open rewrites nothing (gateways opening together: one rewrites, the others wait for its row).
        Returns how many stored keys were rewritten. Raises ``AgentMemoryError("io")`` as the backend does."""
        from meta_memory.session_ref import SECRET_SESSION_KEY_PREFIX, recorded_session_key

        now = self._clock.now_ms()

        def stored_keys(sql: Sql) -> set[str]:
            keys = {str(r[0]) for table in ("session_states", "session_injected")
                    for r in sql.rows(f"SELECT DISTINCT session_key FROM {{t}}{table}")}
            return keys | {str(r[0]) for column in ("current_session", "nonce_session")
                           for r in sql.rows(f"SELECT DISTINCT {column} FROM {{t}}session_identities "
                                             f"WHERE {column} IS NOT NULL")}

        def ran(sql: Sql) -> bool:
            return bool(sql.rows("SELECT 1 FROM {t}schema_migrations WHERE domain = ? AND version = ?",
                                 (REDACTED_KEYS_DOMAIN, 1)))

        if self._db.read(ran):
            return 0
        # the keys to rewrite and their digests, worked out before the write transaction: the secret may take
        # a connection of its own (PostgreSQL's installation keys), never one while this transaction holds one
        rewrites = {key: recorded for key in sorted(self._db.read(stored_keys))
                    if key != OVERFLOW_KEY and not key.startswith(SECRET_SESSION_KEY_PREFIX)
                    and (recorded := recorded_session_key(key, secret)) != key}

        def fn(sql: Sql) -> int:
            if not sql.run("INSERT INTO {t}schema_migrations (domain, version, name, applied_at_ms) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT (domain, version) DO NOTHING",
                           (REDACTED_KEYS_DOMAIN, 1, "session-keys-redacted", now)):
                return 0  # another gateway rewrote them meanwhile
            present = stored_keys(sql)
            moved = 0
            for key, recorded in rewrites.items():
                if key in present:
                    self._rekey(sql, key, recorded)
                    moved += 1
            return moved

        moved = self._db.write(fn)
        if moved:
            truncate = getattr(self._db, "truncate_wal", None)
            if truncate is not None:  # SQLite: the write-ahead log must not keep the pages holding the keys
                truncate()
            _log.info("session state: %d session keys holding a credential rewritten as their digests", moved)
        return moved

    @staticmethod
    def _rekey(sql: Sql, old: str, new: str) -> None:
        """Move every row of session key ``old`` onto ``new`` (see :meth:`redact_credential_keys`)."""
        for realm, ident in sql.rows("SELECT realm, identity FROM {t}session_states WHERE session_key = ?", (old,)):
            rows = {key: sql.rows("SELECT tainted_at_ms, taint_source, boundary_at_ms, prior_at_ms, prior_source, "
                                  "injected_bytes, unreported_at_ms, touched_ms FROM {t}session_states "
                                  "WHERE realm = ? AND identity = ? AND session_key = ?", (realm, ident, key))
                    for key in (old, new)}
            if not rows[new]:
                sql.run("UPDATE {t}session_states SET session_key = ? WHERE realm = ? AND identity = ? "
                        "AND session_key = ?", (new, realm, ident, old))
                continue
            a, b = rows[old][0], rows[new][0]

            def earlier(at_a: Any, src_a: Any, at_b: Any, src_b: Any) -> tuple[Any, Any]:
                if at_a is None or src_a is None:
                    return at_b, src_b
                if at_b is None or src_b is None or at_a < at_b:
                    return at_a, src_a
                return at_b, src_b

            taint = earlier(a[0], a[1], b[0], b[1])
            mark = max((a, b), key=lambda r: -1 if r[2] is None else int(r[2]))
            unreported = min((r[6] for r in (a, b) if r[6] is not None), default=None)
            sql.run("UPDATE {t}session_states SET tainted_at_ms = ?, taint_source = ?, boundary_at_ms = ?, "
                    "prior_at_ms = ?, prior_source = ?, injected_bytes = ?, unreported_at_ms = ?, touched_ms = ? "
                    "WHERE realm = ? AND identity = ? AND session_key = ?",
                    (*taint, mark[2], mark[3], mark[4], int(a[5] or 0) + int(b[5] or 0), unreported,
                     max(int(a[7]), int(b[7])), realm, ident, new))
            sql.run("DELETE FROM {t}session_states WHERE realm = ? AND identity = ? AND session_key = ?",
                    (realm, ident, old))
        sql.run("INSERT INTO {t}session_injected (realm, identity, session_key, record_id) "
                "SELECT realm, identity, ?, record_id FROM {t}session_injected WHERE session_key = ? "
                "ON CONFLICT (realm, identity, session_key, record_id) DO NOTHING", (new, old))
        sql.run("DELETE FROM {t}session_injected WHERE session_key = ?", (old,))
        for column in ("current_session", "nonce_session"):
            sql.run(f"UPDATE {{t}}session_identities SET {column} = ? WHERE {column} = ?", (new, old))

    def import_legacy(self, realm: str, data: dict[str, Any]) -> int:
        """Adopt the former ``firewall-taint.json`` state (keyed by session key alone): each tainted session
        and reset mark is recorded under the identity ``""`` of ``realm`` (so evidence checks still see it) and
        each pending taint under its identity. Returns how many entries were adopted."""
        now = self._clock.now_ms()
        count = 0

        def entries(name: str) -> list[tuple[str, list[Any]]]:
            table = data.get(name)
            return [(k, v) for k, v in table.items() if isinstance(k, str) and isinstance(v, list)] \
                if isinstance(table, dict) else []

        def fn(sql: Sql) -> None:
            nonlocal count
            out: list[Transition] = []
            for key, v in entries("tainted"):
                if len(v) >= 2 and isinstance(v[0], int) and isinstance(v[1], str):
                    self._taint_session(sql, realm, "", key, TaintState(v[0], v[1]), now, out, bounded=False)
                    count += 1
            for ident, v in entries("pending"):
                if len(v) >= 2 and isinstance(v[0], int) and isinstance(v[1], str):
                    self._touch_identity(sql, realm, ident, now, permissive=False)
                    sql.run("UPDATE {t}session_identities SET pending_at_ms = ?, pending_source = ? "
                            "WHERE realm = ? AND identity = ? AND pending_at_ms IS NULL", (v[0], v[1], realm, ident))
                    count += 1
            for key, v in entries("boundaries"):
                if len(v) >= 3 and isinstance(v[0], int):
                    self._touch_session(sql, realm, "", key, now, permissive=False)
                    prior_ok = isinstance(v[1], int) and isinstance(v[2], str)
                    sql.run("UPDATE {t}session_states SET boundary_at_ms = ?, prior_at_ms = ?, prior_source = ? "
                            "WHERE realm = ? AND identity = '' AND session_key = ?",
                            (v[0], v[1] if prior_ok else None, v[2] if prior_ok else None, realm, key))
                    count += 1

        self._db.write(fn)
        return count
