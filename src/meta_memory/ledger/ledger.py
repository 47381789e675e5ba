"""The runtime-owned assertion ledger (seed: Architecture, Indexing, Querying,
Conflict detection, Health checks, Memory store info; reference §1.3–1.9).

The in-memory state is the authority. The state file is read once, by
:meth:`AssertionLedger.load` at bootstrap; every :meth:`AssertionLedger.index`
rewrites the whole file atomically. Concurrent callers are serialised by one
lock around mutate-and-persist, so no acknowledged write is lost. The health
check a write needs runs before that lock is taken: an endpoint slow to answer
(up to its timeout per phase) delays the write that asked, never a query or a
gating check; a write whose check passed is still refused when another caller's
check failed after its own began, so nothing persists after a failed check.
When the health check or the persist fails, nothing changes (a
failed persist rolls the in-memory change back) and
:class:`~meta_memory.errors.MemoryBackendUnavailable` is raised.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from meta_memory.clock import Clock
from meta_memory.errors import ConfigError, MemoryBackendUnavailable, StartupError
from meta_memory.ledger import persistence
from meta_memory.ledger.config import DEFAULT_MAX_STATE_BYTES, MIN_MAX_STATE_BYTES, LedgerConfig
from meta_memory.ledger.errors import LedgerValidationError
from meta_memory.ledger.health import HEALTHCHECK_TIMEOUT_S, HealthChecker, HealthCheckFailed
from meta_memory.ledger.model import (
    IndexRequest,
    MemoryAssertion,
    MemoryConflictSignal,
    MemoryIndexResult,
    MemoryQueryResult,
    MemoryResolveResult,
    MemoryStoreInfo,
    QueryRequest,
    ResolveRequest,
    canonical_index,
    canonical_resolve,
)
from meta_memory.ledger.normalise import SUPPORTED_STORES, canonical_store, canonical_token, trim

__all__ = ["ASSERTION_ID_PREFIX", "LEDGER_FILE_NAME", "AssertionLedger", "format_assertion_id"]

#: Prefix of every assertion id; the suffix is a sequence number of at least six digits.
ASSERTION_ID_PREFIX: str = "memory-assert-"

#: The ledger file's name under the persistent state directory.
LEDGER_FILE_NAME: str = "memory-ledger-state.json"

_ConflictKey = tuple[str, str, str]


def format_assertion_id(sequence: int) -> str:
    """``memory-assert-`` plus ``sequence`` zero-padded to six digits (``memory-assert-000042``)."""
    return f"{ASSERTION_ID_PREFIX}{sequence:06d}"


def _file_signature(path: Path) -> tuple[int, int, int] | None:
    """Size, modification time and inode of ``path`` (``None`` when it does not exist)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


#: The longest id suffix read as a sequence number: 20 digits hold every 64-bit number. A longer one (an
#: edited file) is not one of the counter's ids, and Python refuses to read past 4,300 digits at all.
_MAX_SEQUENCE_DIGITS = 20


def _sequence_after(assertions: list[MemoryAssertion]) -> int:
    """Bootstrap counter: highest parsed id suffix + 1; when no id parses, the number of assertions. A
    suffix of more than :data:`_MAX_SEQUENCE_DIGITS` digits does not parse."""
    highest = -1
    for assertion in assertions:
        suffix = assertion.assertion_id.removeprefix(ASSERTION_ID_PREFIX)
        if (suffix != assertion.assertion_id and suffix.isascii() and suffix.isdigit()
                and len(suffix) <= _MAX_SEQUENCE_DIGITS):
            highest = max(highest, int(suffix))
    return highest + 1 if highest >= 0 else len(assertions)


class AssertionLedger:
    """Assertions and conflict signals, held in memory and persisted as one JSON file.

    Args:
        state_path: the ledger file (``<persistent_state>/memory-ledger-state.json``),
            or ``None`` for an in-memory ledger that never persists (SDK builder
            without ``.memory(...)``).
        health_check_endpoint: HTTP(S) base URL checked (``GET /v1/health``, 2 s)
            at :meth:`load` and before every persist; ``None`` disables it.
        clock: source of ``indexed_at_ms`` / ``updated_at_ms`` (UTC epoch ms).
        health_timeout_s: per-phase health-check timeout in seconds (2 by default).

    Call :meth:`load` once before use. All methods are thread-safe.
    """

    def __init__(
        self,
        state_path: Path | None,
        health_check_endpoint: str | None,
        clock: Clock,
        *,
        health_timeout_s: float = HEALTHCHECK_TIMEOUT_S,
        max_state_bytes: int = DEFAULT_MAX_STATE_BYTES,
    ) -> None:
        if max_state_bytes < MIN_MAX_STATE_BYTES:
            raise ValueError(f"max_state_bytes must be at least {MIN_MAX_STATE_BYTES}")
        self.max_state_bytes = max_state_bytes
        self.state_path = Path(state_path) if state_path is not None else None
        self.health_check_endpoint = health_check_endpoint
        self._clock = clock
        self._checker = (
            HealthChecker(health_check_endpoint, health_timeout_s) if health_check_endpoint else None
        )
        self._lock = threading.Lock()
        # Failed health checks so far and the latest one's reason, both changed under the lock: a write
        # whose own check passed is refused if another caller's check failed after it began.
        self._health_failures = 0
        self._health_failure = ""
        self._loaded = False
        self._file_signature: tuple[int, int, int] | None = None  # the file as this ledger loaded or wrote it
        self._assertions: deque[MemoryAssertion] = deque()
        self._fragments: deque[bytes] = deque()  # parallel to _assertions
        # The assertions section of the file, kept as one buffer: appends at the end, evictions from the
        # front (cheap for a bytearray), so a persist writes a few contiguous pieces instead of joining
        # 4,096 fragments. ``None`` = rebuild from ``_fragments`` before the next persist.
        self._section: bytearray | None = None
        self._conflicts: dict[_ConflictKey, tuple[MemoryConflictSignal, bytes]] = {}
        self._conflict_keys: list[_ConflictKey] = []  # sorted
        self._sequence = 0
        # Serialised bytes of the assertions and of the conflict signals (their file fragments).
        self._assertion_bytes = 0
        self._conflict_bytes = 0
        self._evicted = 0  # assertions evicted since this process loaded the ledger (load included)
        #: ``on_eviction_started(evicted, max_retained)``: called once, at the first eviction of this process.
        self.on_eviction_started: Callable[[int, int], None] | None = None

    # ------------------------------------------------------------------ bootstrap

    @classmethod
    def from_config(cls, config: LedgerConfig | None, state_dir: Path | None, clock: Clock) -> AssertionLedger:
        """Build and :meth:`load` the ledger the runtime should use.

        ``config`` is the decoded ``[memory]`` table (``None`` when absent):
        absent => an in-memory ledger; present => persisted at
        ``<state_dir>/memory-ledger-state.json``.

        Raises:
            ConfigError: memory is configured without a persistent state directory.
            StartupError: from :meth:`load`.
        """
        if config is None:
            ledger = cls(None, None, clock)
        else:
            if state_dir is None:
                raise ConfigError("[memory] needs a persistent state directory (persistent_state)")
            ledger = cls(Path(state_dir) / LEDGER_FILE_NAME, config.health_check_endpoint, clock,
                         max_state_bytes=config.max_state_bytes)
        ledger.load()
        return ledger

    def load(self) -> None:
        """Read the state file, once, at bootstrap (health check first when configured).

        Raises:
            StartupError: health check failed, or the file is unreadable or
                malformed (the message names the path).
            RuntimeError: called twice.
        """
        with self._lock:
            if self._loaded:
                raise RuntimeError("the assertion ledger is loaded once, at bootstrap")
            if self.state_path is not None:
                if self._checker is not None:
                    try:
                        self._checker.check()
                    except HealthCheckFailed as exc:
                        raise StartupError(
                            f"memory ledger health check failed at startup: {exc.reason}"
                        ) from None
                assertions, conflicts, self._evicted = persistence.load_counted(self.state_path)
                for assertion in assertions:
                    self._assertions.append(assertion)
                    self._fragments.append(persistence.assertion_fragment(assertion))
                    self._assertion_bytes += len(self._fragments[-1])
                for signal in conflicts:
                    key = (signal.entity, signal.topic, signal.store)
                    self._conflicts[key] = (signal, persistence.conflict_fragment(signal))
                    self._conflict_bytes += len(self._conflicts[key][1])
                self._conflict_keys = sorted(self._conflicts)
                self._sequence = _sequence_after(assertions)
                self._file_signature = _file_signature(self.state_path)
            self._loaded = True

    def stats(self) -> dict[str, Any]:
        """``{assertions, max_retained, evicted}``: how many assertions are held, the cap (4,096), and
        how many the cap has evicted since this process loaded the ledger (the load included)."""
        with self._lock:
            return {"assertions": len(self._assertions), "max_retained": persistence.MAX_RETAINED,
                    "evicted": self._evicted}

    def file_snapshot(self) -> bytes | None:
        """The ledger file's bytes as of now (``None`` for an in-memory ledger or before the first
        persist): read under the ledger's lock, so it holds every acknowledged write and no half of one
        (a backup copies it this way). Raises ``OSError`` when the file cannot be read."""
        with self._lock:
            if self.state_path is None or not self.state_path.exists():
                return None
            return self.state_path.read_bytes()

    def announce_pending_eviction(self) -> None:
        """Report an eviction done at load (the file held more than the cap) to ``on_eviction_started``."""
        with self._lock:
            if self._evicted:
                self._announce_eviction()

    def _announce_eviction(self) -> None:
        if self.on_eviction_started is None or getattr(self, "_announced", False):
            return
        self._announced = True
        try:
            self.on_eviction_started(self._evicted, persistence.MAX_RETAINED)
        except Exception:  # noqa: BLE001 - a signal must never fail a write
            logging.getLogger(__name__).exception("could not report the ledger eviction")

    def close(self) -> None:
        """Release the health checker's HTTP client."""
        if self._checker is not None:
            self._checker.close()

    # ------------------------------------------------------------------ writes

    def index(self, req: IndexRequest) -> MemoryIndexResult:
        """Record an assertion and/or a conflict signal, then persist (``meta/memory/index``).

        With a ``fact``: appends ``memory-assert-NNNNNN`` (``indexed_at_ms`` = now)
        and evicts the oldest beyond 4,096, or while the serialised assertions and
        conflict signals together exceed ``max_state_bytes`` (``[memory] max_state_bytes``,
        default 64 MiB; a conflict-only write evicts old assertions the same way, down to none).
        With ``conflict=true``: upserts the signal for
        ``(entity, topic, store)`` (reason, ``updated_at_ms`` = now). Both when both are given.
        Conflict signals are never evicted: a write whose conflict signal, or whose
        assertion beside the conflict signals, cannot fit in ``max_state_bytes`` is refused
        with :class:`MemoryBackendUnavailable` ("memory ledger is full ...") and changes nothing.

        Returns:
            canonical entity/topic/store, the new ``assertion_id`` (``None`` for a
            conflict-only write) and ``conflict_active`` (a signal exists for this
            entity and topic in any store).

        Raises:
            LedgerValidationError: the request breaks a rule (see :func:`canonical_index`),
                or ``metadata`` cannot be encoded as JSON.
            MemoryBackendUnavailable: the health check (this write's, or another caller's begun
                after it) or the file write failed; memory and file are unchanged.
        """
        c = canonical_index(req)
        checked = self._check_health()  # outside the lock: a slow endpoint holds up this write alone, never the reads
        with self._lock:
            self._require_loaded()
            self._refuse_after_failed_check(checked)
            now = self._clock.now_ms()
            new_assertion: tuple[MemoryAssertion, bytes] | None = None
            if c.fact is not None:
                assertion = MemoryAssertion(
                    assertion_id=format_assertion_id(self._sequence),
                    entity=c.entity,
                    topic=c.topic,
                    store=c.store,
                    fact=c.fact,
                    metadata=c.metadata,
                    indexed_at_ms=now,
                )
                try:
                    new_assertion = (assertion, persistence.assertion_fragment(assertion))
                except (TypeError, ValueError):
                    raise LedgerValidationError("metadata must be a JSON object when provided", "metadata") from None
            new_conflict: tuple[MemoryConflictSignal, bytes] | None = None
            key = (c.entity, c.topic, c.store)
            if c.conflict:
                signal = MemoryConflictSignal(
                    entity=c.entity, topic=c.topic, store=c.store, reason=c.conflict_reason, updated_at_ms=now
                )
                new_conflict = (signal, persistence.conflict_fragment(signal))

            # The byte bound (checked before anything changes): conflict signals are never evicted (they
            # gate actions), so they and the new assertion must fit; older assertions make room below.
            previous_conflict = self._conflicts.get(key)
            conflict_bytes = self._conflict_bytes
            if new_conflict is not None:
                conflict_bytes += len(new_conflict[1]) - (len(previous_conflict[1]) if previous_conflict else 0)
            new_bytes = len(new_assertion[1]) if new_assertion is not None else 0
            if conflict_bytes + new_bytes > self.max_state_bytes:
                raise MemoryBackendUnavailable(
                    f"memory ledger is full: this write needs {new_bytes + max(0, conflict_bytes - self._conflict_bytes)} "
                    f"bytes and conflict signals hold {self._conflict_bytes} of "
                    f"[memory] max_state_bytes = {self.max_state_bytes}"
                )

            # Mutate, remembering how to undo.
            previous_sequence = self._sequence
            previous_bytes = (self._assertion_bytes, self._conflict_bytes)
            evicted: list[tuple[MemoryAssertion, bytes]] = []
            if new_assertion is not None:
                self._sequence += 1
                self._assertions.append(new_assertion[0])
                self._fragments.append(new_assertion[1])
                self._assertion_bytes += new_bytes
                self._section_append(new_assertion[1])
            # older assertions make room for the new one and for a new or larger conflict signal alike
            kept = 1 if new_assertion is not None else 0
            while len(self._assertions) > persistence.MAX_RETAINED or (
                self._assertion_bytes + conflict_bytes > self.max_state_bytes and len(self._assertions) > kept
            ):
                evicted.append((self._assertions.popleft(), self._fragments.popleft()))
                self._assertion_bytes -= len(evicted[-1][1])
                self._section_drop_front(len(evicted[-1][1]))
            if new_conflict is not None:
                self._conflicts[key] = new_conflict
                self._conflict_bytes = conflict_bytes
                if previous_conflict is None:
                    bisect.insort(self._conflict_keys, key)
            try:
                self._persist()
            except BaseException as exc:
                self._section = None  # rebuilt from the restored fragments on the next persist
                if new_assertion is not None:
                    self._assertions.pop()
                    self._fragments.pop()
                for assertion, fragment in reversed(evicted):
                    self._assertions.appendleft(assertion)
                    self._fragments.appendleft(fragment)
                self._sequence = previous_sequence
                self._assertion_bytes, self._conflict_bytes = previous_bytes
                if new_conflict is not None:
                    if previous_conflict is None:
                        del self._conflicts[key]
                        self._conflict_keys.remove(key)
                    else:
                        self._conflicts[key] = previous_conflict
                if isinstance(exc, OSError):
                    raise MemoryBackendUnavailable(self._persist_failure(exc)) from None
                raise
            if evicted:
                first = self._evicted == 0
                self._evicted += len(evicted)
                if first:
                    self._announce_eviction()
            return MemoryIndexResult(
                entity=c.entity,
                topic=c.topic,
                store=c.store,
                assertion_id=new_assertion[0].assertion_id if new_assertion is not None else None,
                conflict_active=self._first_conflict(c.entity, c.topic) is not None,
            )

    def resolve(self, req: ResolveRequest) -> MemoryResolveResult:
        """Resolve conflict signals, then persist (``meta/memory/resolve``).

        Removes the signal of ``(entity, topic, store)``, or, with no ``store``, the signal of every
        store for that entity and topic (the ones :meth:`conflict_for_reference`, and so
        ``meta/gating/check``, reads). The whole state is persisted as an index does (health check,
        atomic replace); a persist failure puts the signals back and is refused with
        :class:`MemoryBackendUnavailable`. With no signal to remove nothing changes and nothing is
        written (a repeated resolve is answered ``resolved: []``).

        Raises:
            LedgerValidationError: the request breaks a rule (:func:`canonical_resolve`).
            MemoryBackendUnavailable: the health check or the file write failed; memory and file
                are unchanged.
        """
        entity, topic, store = canonical_resolve(req)
        checked: int | None = None  # a resolve that removes nothing writes nothing, and needs no health check
        while True:
            with self._lock:
                self._require_loaded()
                keys = [k for k in self._conflict_keys
                        if k[0] == entity and k[1] == topic and (store is None or k[2] == store)]
                if not keys or checked is not None or not self._needs_health_check():
                    if keys and checked is not None:
                        self._refuse_after_failed_check(checked)
                    return self._remove_conflicts(entity, topic, store, keys)
            # Outside the lock, then the signals are looked up again under it: whatever that look removes,
            # its persist follows a check this call ran, as an index's does (a resolve that found nothing
            # returned above, with no check and no write).
            checked = self._check_health()

    def _remove_conflicts(self, entity: str, topic: str, store: str | None,
                          keys: list[_ConflictKey]) -> MemoryResolveResult:
        """:meth:`resolve`'s change, under the lock: remove the signals of ``keys`` and persist."""
        removed = [(key, self._conflicts[key]) for key in keys]
        if removed:
            previous_keys, previous_bytes = list(self._conflict_keys), self._conflict_bytes
            for key, (_, fragment) in removed:
                del self._conflicts[key]
                self._conflict_bytes -= len(fragment)
            self._conflict_keys = [k for k in self._conflict_keys if k in self._conflicts]
            try:
                self._persist()
            except BaseException as exc:
                for key, entry in removed:
                    self._conflicts[key] = entry
                self._conflict_keys, self._conflict_bytes = previous_keys, previous_bytes
                if isinstance(exc, OSError):
                    raise MemoryBackendUnavailable(self._persist_failure(exc)) from None
                raise
        return MemoryResolveResult(
            entity=entity, topic=topic, store=store, resolved=[signal for _, (signal, _) in removed],
            conflict_active=self._first_conflict(entity, topic) is not None,
        )

    def _section_append(self, fragment: bytes) -> None:
        if self._section is None:
            return
        if self._section:
            self._section += b",\n"
        self._section += fragment

    def _section_drop_front(self, fragment_len: int) -> None:
        if self._section is None:
            return
        if len(self._section) <= fragment_len:
            self._section.clear()
        else:
            del self._section[: fragment_len + 2]  # the fragment and its ",\n"

    def _persist_failure(self, exc: OSError) -> str:
        """The reason of a failed persist: what was not written, that the ledger is unchanged, what to do
        (a full disk named by its mount point and free space, as agent memory's ``disk_full`` does)."""
        from meta_memory.storage.disk import disk_space, is_disk_full

        path = self.state_path
        name = path.name if path is not None else "the ledger file"
        kept = (f"nothing was written: the write is rolled back and {name} is unchanged (it holds every "
                "assertion acknowledged before). Reads keep working")
        if is_disk_full(exc) and path is not None:
            space = disk_space(path)
            disk = space.describe() if space is not None else f"the disk holding {name}"
            return f"memory ledger persist failed: no space left on {disk}; {kept}; free space on that disk, then retry"
        detail = exc.strerror or str(exc)
        return f"memory ledger persist failed: {detail}; {kept}; fix the cause, then retry"

    def _needs_health_check(self) -> bool:
        """Whether a persist needs a health check first: an endpoint is configured and there is a file."""
        return self.state_path is not None and self._checker is not None

    def _check_health(self) -> int:
        """The health check a write runs before it takes the lock (none without an endpoint or a file).

        Returns:
            the number of failed checks counted before this one began, for
            :meth:`_refuse_after_failed_check` under the lock.

        Raises:
            MemoryBackendUnavailable: the endpoint did not answer 2xx in time; nothing was changed.
        """
        seen = self._health_failures
        checker = self._checker
        if checker is None or not self._needs_health_check():
            return seen
        try:
            checker.check()
        except HealthCheckFailed as exc:
            with self._lock:
                self._health_failures += 1
                self._health_failure = exc.reason
            raise MemoryBackendUnavailable(exc.reason) from None
        return seen

    def _refuse_after_failed_check(self, seen: int) -> None:
        """Under the lock, before a write changes anything: refuse it when another caller's health check
        failed after this write's own began (``seen``, from :meth:`_check_health`), so no write persists
        after a check that failed, as none did while checks ran under the lock.

        Raises:
            MemoryBackendUnavailable: that check's reason; nothing was changed.
        """
        if self._health_failures != seen:
            raise MemoryBackendUnavailable(self._health_failure)

    def _persist(self) -> None:
        if self.state_path is None:
            return
        if self._section is None:
            self._section = bytearray(b",\n".join(self._fragments))
        parts = persistence.assemble_section_parts(
            self._section, [self._conflicts[key][1] for key in self._conflict_keys]
        )
        persistence.write_atomic(self.state_path, parts)
        self._file_signature = _file_signature(self.state_path)

    def readiness_problem(self) -> str | None:
        """What is wrong with the ledger file, for ``GET /v1/ready`` (``None``: fine, or no file is kept).

        Cheap: the file is re-read only when it is not the one this ledger loaded or last wrote (its size,
        modification time and inode differ), i.e. something else changed it; then it must still decode as
        the bootstrap load would, else it is reported malformed (the next start would refuse it)."""
        if self.state_path is None:
            return None
        with self._lock:
            known = self._file_signature
        current = _file_signature(self.state_path)
        if current is None:
            return None if known is None else (
                f"the ledger file {self.state_path.name} was removed while the gateway runs; it is written "
                "again from memory at the next ledger write")
        if current == known:
            return None
        try:
            persistence.load(self.state_path)
        except StartupError as exc:
            return f"{exc}; the next start refuses it"
        with self._lock:
            self._file_signature = current
        return None

    # ------------------------------------------------------------------ reads

    def query(self, req: QueryRequest | None = None) -> MemoryQueryResult:
        """Filter assertions and conflict signals (``meta/memory/query``).

        ``entity``, ``topic``, ``store`` are exact matches on canonical tokens;
        a filter that is empty after trimming, or an unsupported store, is
        absent. ``query`` then keeps entries whose entity, topic or fact
        (reason, for signals) contains it, case-insensitively (Unicode
        casefold on both sides).

        Returns:
            assertions oldest first, conflicts in (entity, topic, store) order.
        """
        req = req or QueryRequest()
        entity = canonical_token(req.entity)
        topic = canonical_token(req.topic)
        store = canonical_store(req.store)
        needle = trim(req.query).casefold() if req.query is not None else ""

        def keep(e: str, t: str, s: str, text: str | None) -> bool:
            if entity is not None and e != entity:
                return False
            if topic is not None and t != topic:
                return False
            if store is not None and s != store:
                return False
            if not needle:
                return True
            return (
                needle in e.casefold()
                or needle in t.casefold()
                or (text is not None and needle in text.casefold())
            )

        with self._lock:  # a snapshot of the entries (frozen models): filtered outside the lock
            self._require_loaded()
            held = list(self._assertions)
            signals = [self._conflicts[key][0] for key in self._conflict_keys]
        assertions = [
            a.model_copy(deep=True) if a.metadata is not None else a
            for a in held
            if keep(a.entity, a.topic, a.store, a.fact)
        ]
        conflicts = [signal for signal in signals if keep(signal.entity, signal.topic, signal.store, signal.reason)]
        return MemoryQueryResult(assertions=assertions, conflicts=conflicts)

    def stores(self) -> list[MemoryStoreInfo]:
        """One entry per supported store, in fixed order: assertions plus conflict signals in it."""
        counts = dict.fromkeys(SUPPORTED_STORES, 0)
        with self._lock:
            self._require_loaded()
            for assertion in self._assertions:
                counts[assertion.store] += 1
            for _, _, store in self._conflict_keys:
                counts[store] += 1
        return [MemoryStoreInfo(store=store, record_count=count) for store, count in counts.items()]

    def conflict_for_reference(
        self, entity: str | None = None, topic: str | None = None
    ) -> MemoryConflictSignal | None:
        """The conflict signal gating should honour, or ``None`` (reference §1.6).

        Both given: the first signal (key order) with that entity and topic, in
        any store; only ``entity``: the first with that entity; only ``topic``:
        the first with that topic; neither (or both empty): ``None``.
        """
        e = canonical_token(entity)
        t = canonical_token(topic)
        if e is None and t is None:
            return None
        with self._lock:
            return self._first_conflict(e, t)

    def _first_conflict(self, entity: str | None, topic: str | None) -> MemoryConflictSignal | None:
        for key in self._conflict_keys:
            if (entity is None or key[0] == entity) and (topic is None or key[1] == topic):
                return self._conflicts[key][0]
        return None

    @property
    def assertion_count(self) -> int:
        """Number of assertions held."""
        return len(self._assertions)

    def _require_loaded(self) -> None:
        if not self._loaded:
            raise RuntimeError("AssertionLedger.load() must run once before use")
