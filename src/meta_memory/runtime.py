"""The runtime: one object that owns every authority, built from one validated config.

It holds the assertion ledger, the agent-memory stores, the firewall's taint
tracker, the injection coordinator, the event bus and the access policy.
Surfaces never touch these directly: they call the method table
(:mod:`meta_memory.rpc.methods`), whose handlers call the runtime.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .agent_memory.expiry import ExpirySweep
from .agent_memory.realm_list import refuse_unlisted_realm
from .agent_memory.retention import TombstoneRetention
from .clock import Clock, SystemClock
from .config import MetaConfig
from .events.bus import EventBus
from .features import AgentMemoryFeature, FeatureContext, Features, build_features, effective_agent_memory_config
from .identity import DEFAULT_REALM
from .ledger.ledger import AssertionLedger
from .observability import Observability
from .panel.store import MemoryPanelStore
from .readiness import Readiness
from .review.service import ReviewService
from .services.access import AccessService
from .storage.backup import BackupReport
from .storage.layout import StorageLayout
from .storage.lock import StateDirLock

if TYPE_CHECKING:  # pragma: no cover
    from .portability.remote import ExportStreams

__all__ = ["Runtime", "open_runtime"]

log = logging.getLogger("meta_memory.runtime")


class _UnstableDigestSecret(Exception):
    """The session-digest secret is a random one of this process, not the installation's."""


class Runtime:
    """The composed memory runtime.

    Args:
        config: the validated configuration. ``config.memory is None`` keeps the
            assertion ledger in memory only.
        state_dir: the persistent state directory (``None``: nothing on disk;
            agent memory then needs an explicit store).
        clock: time source (UTC epoch ms); the system clock by default.
        start_background: start background work (the steward's dream schedule, when enabled).
        recall_provider: a custom recall provider object (:mod:`meta_memory.recall.custom`) in place of
            ``[agent_memory] recall_provider`` (which must then be left unset).
        tracer_provider: an OpenTelemetry SDK ``TracerProvider`` to trace calls into (instead of the one
            ``[telemetry] traces`` would build); see :mod:`meta_memory.observability.tracing`.

    Attributes (set once, at construction):
        access: the access policy every call goes through.
        observability: metrics (a Prometheus registry of this runtime's own), traces and request ids.
        exports: the exports under way (``meta/storage/export``).
        layout: the state directory's path authority (``None`` without a state directory).
        events: the timeline bus. ``ledger``: the assertion ledger.
        agent_memory: store, firewall, injection, recorder tool and host services, or ``None``
            when agent memory is off.
        review: quarantine decisions, proposals, promotions and the dream (``None`` when agent
            memory is off).
        retention: the tombstone-retention sweep (``None`` unless ``erase_tombstoned_after_days``).
        expiry: the expiry sweep (``agent_memory/expiry.py``; ``None`` when agent memory is off).
        memory_panel_store: the console Memory panel's read models (``None``: the panel
            methods are unadvertised; see :meth:`set_memory_panel_store`).
        readiness: what ``GET /v1/ready`` answers (:mod:`.readiness`).

    Raises:
        StartupError: a predecessor ledger file or file-name twins under the
            state dir, a malformed ledger file, a failed startup health check,
            or a configuration refused at gateway init.
    """

    access: AccessService
    observability: Observability
    layout: StorageLayout | None
    events: EventBus
    ledger: AssertionLedger
    agent_memory: AgentMemoryFeature | None
    review: ReviewService | None
    retention: TombstoneRetention | None
    expiry: ExpirySweep | None
    memory_panel_store: MemoryPanelStore | None
    readiness: Readiness | None
    exports: ExportStreams

    def __init__(self, config: MetaConfig | None = None, state_dir: Path | str | None = None, *, clock: Clock | None = None,
                 start_background: bool = True, one_shot: bool = False, recall_provider: object | None = None,
                 tracer_provider: Any = None) -> None:
        self.config = config or MetaConfig()
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.clock: Clock = clock or SystemClock()
        self._lock = threading.RLock()
        self._closed = False
        self._closers: list[Callable[[], object]] = []
        self.start_background = start_background
        self._recall_provider = recall_provider
        self._one_shot = one_shot
        self._install(Features())

        self.observability = Observability(self.config.telemetry, tracer_provider=tracer_provider)
        self._backup_lock = threading.Lock()
        am = self.config.agent_memory
        self.access = AccessService(self.config.access, default_realm=self.default_realm,
                                    listed_realms=am.realms if am is not None else None)
        self.layout = StorageLayout(self.state_dir) if self.state_dir is not None else None
        self._state_lock: StateDirLock | None = None
        self._ledger: AssertionLedger | None = None
        self._events: EventBus | None = None
        self.readiness = None
        if self.layout is not None:
            self.layout.check_startup()
            self._state_lock = StateDirLock(self.layout.state_dir, one_shot=one_shot)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _install(self, features: Features) -> None:
        """The one place the optional parts are set."""
        self.agent_memory = features.agent_memory
        self.review = features.review
        self.retention = features.retention
        self.expiry = features.expiry
        self.memory_panel_store = features.memory_panel_store

    def _build(self) -> None:
        self._events = self.events = EventBus(
            self.clock, path=self.layout.events_path if self.layout is not None else None,
            retention=self.config.gateway.events_retention)

        self._ledger = self.ledger = AssertionLedger.from_config(self.config.memory, self.state_dir, self.clock)
        self.ledger.on_eviction_started = self._ledger_eviction_started
        self.ledger.announce_pending_eviction()
        from .portability.remote import ExportStreams  # the exporter imports this module

        self.exports = ExportStreams(self)
        self.add_closer(self.exports.close)
        self._digest_stable = False  # set when the secret is first read
        self.access.bind_digest_secret(self._session_digest_secret)
        self.observability.bind(self)  # counts the timeline from here on; reads the gauges at scrape time
        # Feature construction lives in one place (features.py) so the order of construction is explicit.
        self._install(build_features(FeatureContext(
            config=effective_agent_memory_config(self.config.agent_memory, self.state_dir is not None),
            layout=self.layout, clock=self.clock, events=self.events, ledger=self.ledger,
            start_background=self.start_background, add_closer=self.add_closer,
            recall_provider=self._recall_provider,
            read_only=self.config.access is not None and self.config.access.read_only,
            on_erased=self.exports.stop_for_erase)))
        if self.agent_memory is not None:
            # once per session state: a key an earlier version stored in clear though it holds a credential
            # becomes its digest (the secret read only when one is found: the store is installed by now)
            try:
                self.agent_memory.firewall.state.redact_credential_keys(self._stable_digest_secret)
            except _UnstableDigestSecret:
                # rewritten under a secret of this process, the keys would no longer reach their sessions
                # (their taint) after a restart: left in place, and rewritten at a start that reads the secret
                log.warning("session keys holding a credential are kept as they are until the installation's "
                             "session-digest secret can be read")
        # a one-shot shell command ends long before a background integrity check would begin
        self.readiness = Readiness(self, start_background=self.start_background and not self._one_shot)

    def _session_digest_secret(self) -> bytes:
        """The installation's session-digest secret (:func:`~meta_memory.portability.signing.session_digest_secret`),
        else a random one of this process (``_digest_stable`` tells which)."""
        from .portability.signing import installation_session_digest_secret

        secret = installation_session_digest_secret(self)
        self._digest_stable = secret is not None
        return secret if secret is not None else secrets.token_bytes(32)

    def _stable_digest_secret(self) -> bytes:
        """The session-digest secret this runtime uses, when it is the installation's. Raises
        :class:`_UnstableDigestSecret` when it is a random one of this process."""
        secret = self.access.digest_secret
        if not self._digest_stable:
            raise _UnstableDigestSecret
        return secret

    def _ledger_eviction_started(self, evicted: int, max_retained: int) -> None:
        """Timeline signal: the ledger reached its cap and has started evicting its oldest assertions."""
        self.events.emit("memory.ledger.eviction_started", {"evicted": evicted, "max_retained": max_retained})

    def status(self) -> dict[str, Any]:
        """``meta/status`` payload: version, advertised features, and the storage census.

        With agent memory on, ``agent_memory.vector_backlog`` says whether hybrid ranking is
        complete: ``pending`` active records still without a vector (per realm under ``realms``;
        ``0`` with a ``reason`` when recall is lexical). ``agent_memory.content_trust`` reports the
        classification posture and the tool names trusted only because no rule names them, with a
        ``warning`` when no rule names the host's tools (:meth:`Firewall.content_trust_report`). See
        docs/rpc.md (meta/status)."""
        from . import __version__

        slots = self.layout.slots() if self.layout is not None else []
        feature = self.agent_memory
        agent_memory: dict[str, Any] = {"enabled": feature is not None}
        if feature is not None:
            served = feature.store.list_realms()
            if feature.store.allowed_realms is not None:  # a realm outside the allow-list is not this gateway's
                listed = set(served)
                slots = [s for s in slots if not s["slot"].startswith("realm:") or s["slot"][6:] in listed]
            agent_memory.update({
                "store": feature.config.store,
                "realm": feature.config.realm,
                "realms": served,
                "taint_tracker": feature.firewall.tracker.stats(),
                "content_trust": feature.firewall.content_trust_report(),
                "injection_sessions": feature.injection.sessions.stats(),
                "recorder_tool": feature.tool is not None,
            })
            if feature.recall is not None:
                agent_memory["vector_backlog"] = feature.recall.backlog()
            agent_memory["telemetry"] = feature.store.telemetry_stats()
            agent_memory["memory"] = self.memory_report()
        return {
            "version": __version__,
            "state_dir": str(self.state_dir) if self.state_dir is not None else None,
            "ledger": {"persisted": self.config.memory is not None,
                       "backend": "local_json" if self.config.memory is not None else "in_memory",
                       **self.ledger.stats()},
            "storage": {"slots": slots},
            "agent_memory": agent_memory,
            "events": {"last_event_id": f"console-evt-{self.events.last_seq}" if self.events.last_seq else None},
        }

    def memory_report(self) -> dict[str, Any] | None:
        """The process's memory and agent memory's bounded components beside their bounds
        (:func:`meta_memory.memory_report.memory_report`); ``None`` with agent memory off."""
        feature = self.agent_memory
        if feature is None:
            return None
        from .memory_report import memory_report

        return memory_report(feature.store, feature.service.provider)

    # The optional parts as a method that needs one sees them: the method table advertises such a method
    # only while the part is on (its ``available`` predicate), so these raise only on a call that went
    # around the table.

    def need_agent_memory(self) -> AgentMemoryFeature:
        """Agent memory's parts; raises ``RuntimeError`` when agent memory is off."""
        if self.agent_memory is None:
            raise RuntimeError("agent memory is off on this runtime")
        return self.agent_memory

    def need_review(self) -> ReviewService:
        """The review service; raises ``RuntimeError`` when agent memory is off."""
        if self.review is None:
            raise RuntimeError("review is off on this runtime (agent memory is off)")
        return self.review

    def need_panel_store(self) -> MemoryPanelStore:
        """The Memory panel's read models; raises ``RuntimeError`` when none is wired."""
        if self.memory_panel_store is None:
            raise RuntimeError("the Memory panel has no store on this runtime")
        return self.memory_panel_store

    @property
    def default_realm(self) -> str:
        """The realm a call acts in when it names none: ``[agent_memory] realm`` (``"default"``)."""
        am = self.config.agent_memory
        return am.realm if am is not None else DEFAULT_REALM

    def check_realm(self, realm: object) -> None:
        """Refuse a call whose params name a realm outside ``[agent_memory] realms`` (the allow-list):
        raises ``InvalidParams`` (-32602, field ``realm``). A realm that is not a string (absent: the
        gateway's own) and a gateway without the list pass. See :mod:`.agent_memory.realm_list`."""
        am = self.config.agent_memory
        if am is not None and isinstance(realm, str):
            refuse_unlisted_realm(am.realms, realm)

    def backup(self, dest: Path, *, root: Path | None = None) -> BackupReport:
        """Write a consistent copy of the state directory into the new directory ``dest`` while serving
        (:func:`~meta_memory.storage.backup.backup_state`); ``root``: the directory it must lie in.

        Raises ``BackupError`` (a refused ``dest``: ``-32602`` naming it), ``CapacityExceeded`` while
        another backup runs, ``MemoryBackendUnavailable`` when copying fails (nothing is left at ``dest``)."""
        from .errors import CapacityExceeded, MemoryBackendUnavailable
        from .storage.backup import BackupError, backup_state

        if self.state_dir is None:
            raise BackupError("cannot be written: this runtime keeps no state directory to back up")
        if not self._backup_lock.acquire(blocking=False):
            raise CapacityExceeded("a backup is already running; wait for it to finish", resource="backups", limit=1)
        try:
            feature = self.agent_memory
            elsewhere = ["postgres"] if feature is not None and feature.config.store == "postgres" else []
            self.events.flush()  # the timeline's outbox into its database: the copy has every event published
            try:
                return backup_state(self.state_dir, dest, ledger=self.ledger, root=root, elsewhere=elsewhere)
            except (OSError, sqlite3.Error) as exc:
                log.warning("backup to %s failed: %s", dest, exc)
                raise MemoryBackendUnavailable(f"backup failed: {exc}") from None
        finally:
            self._backup_lock.release()

    def set_memory_panel_store(self, store: MemoryPanelStore | None) -> None:
        """Wire the console Memory panel's read models (seed: Console Memory panel).

        ``store`` is any :class:`~meta_memory.panel.store.MemoryPanelStore` (inherit
        :class:`~meta_memory.panel.store.PanelStoreDefaults` for the conservative
        defaults), or ``None`` to leave the ten ``meta/memory/panel/*`` methods
        unadvertised. Raises ``TypeError`` for an object without the protocol's methods.
        """
        if store is not None and not isinstance(store, MemoryPanelStore):
            raise TypeError("the memory panel store must implement MemoryPanelStore")
        self.memory_panel_store = store

    def close(self) -> None:
        """Release stores, pools and threads. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.readiness is not None:
            self.readiness.close()
        for closer in self._closers:
            try:
                closer()
            except Exception:  # noqa: BLE001 - best effort on shutdown
                log.exception("error while closing the runtime")
        self.observability.close()
        if self._ledger is not None:
            self._ledger.close()
        if self._events is not None:
            self._events.close()
        if self._state_lock is not None:
            self._state_lock.release()

    def state_dir_problem(self) -> str | None:
        """Why the state directory this runtime holds is no longer its own (removed, moved or replaced
        while it ran), or ``None`` (also for a runtime without a state directory). Readiness asks it."""
        return self._state_lock.problem() if self._state_lock is not None else None

    def check_state_dir(self, method: str) -> None:
        """Refuse state-changing ``method`` when the state directory is no longer this runtime's
        (:meth:`state_dir_problem`): what it wrote would land in files no restart sees. Raises
        ``MemoryBackendUnavailable`` (-32010) for the ledger's writes (``meta/memory/index``, ``resolve``), else
        ``AgentMemoryError`` (-32040, reason ``io``); nothing is written."""
        from .errors import AgentMemoryError, MemoryBackendUnavailable

        problem = self.state_dir_problem()
        if problem is None:
            return
        detail = f"{problem}; nothing was written. Stop the gateway and put the directory back, then restart it"
        raise MemoryBackendUnavailable(detail) if method in ("meta/memory/index", "meta/memory/resolve") else AgentMemoryError("io", detail)

    def explain_failed_read(self, exc: Exception) -> Exception:
        """``exc``, the store's ``io`` or ``corrupt`` refusal of a call, restated with its cause when the
        state directory is no longer this runtime's (:meth:`state_dir_problem`): a read that needed one
        of its files (a realm database not opened yet) then fails because the directory is gone, not
        because of the file it names. ``AgentMemoryError`` (-32040, reason ``io``) naming the directory,
        what failed and the way out, as the write refusal does (:meth:`check_state_dir`); any other
        error, or any error while the directory is this runtime's, is returned unchanged."""
        from .errors import AgentMemoryError

        if not isinstance(exc, AgentMemoryError) or exc.reason not in ("io", "corrupt"):
            return exc
        problem = self.state_dir_problem()
        if problem is None:
            return exc
        return AgentMemoryError("io", f"{problem}; the call failed ({exc.detail}). Stop the gateway and put the "
                                      "directory back, then restart it")

    def add_closer(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` when the runtime closes (in registration order; failures are logged)."""
        self._closers.append(fn)

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_runtime(config: MetaConfig, state_dir: Path, *, clock: Clock | None = None, one_shot: bool = False,
                 recall_provider: object | None = None) -> Runtime:
    """``Runtime(config, state_dir, ...)`` for the commands and the SDK's embedded handle, with a state
    directory that cannot be opened (an unreachable PostgreSQL, a permission, a file in the path, a
    read-only mount, a full disk) refused as one line: ``StartupError("cannot start: ...")``, which names a
    read-only directory or a full disk (its mount and free space) as the cause when it is one (SQLite cannot
    create a database's side files there, not even to read it). ``ConfigError`` passes unchanged."""
    from .errors import ConfigError, MetaError, StartupError
    from .storage.disk import full_disk, full_disk_refusal, not_writable, read_only_refusal
    from .terminal import one_line

    refused: StartupError | None = None
    try:
        return Runtime(config, state_dir, clock=clock, one_shot=one_shot, recall_provider=recall_provider)
    except ConfigError:
        raise
    except StartupError as exc:  # e.g. a database that cannot open: reworded below when the disk is why
        refused, detail = exc, one_line(str(exc))
    except MetaError as exc:
        detail = one_line(exc.message)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        detail = one_line(f"{exc.strerror or exc}{where}")
    why = not_writable(state_dir) if state_dir.is_dir() else None
    if why is not None:
        raise StartupError(f"cannot start: {read_only_refusal(state_dir.resolve(), why, detail)}") from None
    if (space := full_disk(state_dir)) is not None:
        raise StartupError(f"cannot start: {full_disk_refusal(state_dir.resolve(), space, detail)}") from None
    if refused is not None:
        raise refused
    raise StartupError(f"cannot start: {detail}") from None
