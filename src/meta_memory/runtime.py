"""The runtime: one object that owns every authority, built from one validated config.

It holds the assertion ledger, the agent-memory stores, the firewall's taint
tracker, the injection coordinator, the event bus and the access policy.
Surfaces never touch these directly: they call the method table
(:mod:`meta_memory.rpc.methods`), whose handlers call the runtime.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from .clock import Clock, SystemClock
from .config import MetaConfig

__all__ = ["Runtime"]

log = logging.getLogger("meta_memory.runtime")


class Runtime:
    """The composed memory runtime.

    Args:
        config: the validated configuration. ``config.memory is None`` keeps the
            assertion ledger in memory only.
        state_dir: the persistent state directory (``None``: nothing on disk;
            agent memory then needs an explicit store).
        clock: time source (UTC epoch ms); the system clock by default.
        start_background: start background work (the steward's dream schedule, when enabled).

    Raises:
        StartupError: a predecessor ledger file or file-name twins under the
            state dir, a malformed ledger file, a failed startup health check,
            or a configuration refused at gateway init.
    """

    def __init__(self, config: MetaConfig | None = None, state_dir: Path | str | None = None, *, clock: Clock | None = None,
                 start_background: bool = True) -> None:
        self.config = config or MetaConfig()
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.clock: Clock = clock or SystemClock()
        self._lock = threading.RLock()
        self._closed = False
        self.start_background = start_background

        from .services.access import AccessService
        from .storage.layout import StorageLayout

        am = self.config.agent_memory
        self.access = AccessService(self.config.access, default_realm=am.realm if am is not None else "default")
        self.layout = StorageLayout(self.state_dir) if self.state_dir is not None else None
        self._state_lock = None
        if self.layout is not None:
            self.layout.check_startup()
            from .storage.lock import StateDirLock

            self._state_lock = StateDirLock(self.layout.state_dir)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        from .events.bus import EventBus
        from .ledger.ledger import AssertionLedger

        self.events = EventBus(self.clock, path=(self.state_dir / "events.sqlite3") if self.state_dir else None,
                               retention=self.config.gateway.events_retention)

        self.ledger = AssertionLedger.from_config(self.config.memory, self.state_dir, self.clock)
        self.ledger.on_eviction_started = self._ledger_eviction_started
        self.ledger.announce_pending_eviction()
        self._init_features()

    def _ledger_eviction_started(self, evicted: int, max_retained: int) -> None:
        """Timeline signal: the ledger reached its cap and has started evicting its oldest assertions."""
        self.events.emit("memory.ledger.eviction_started", {"evicted": evicted, "max_retained": max_retained})

    # Feature wiring lives in one place so the order of construction is explicit.
    def _init_features(self) -> None:
        from .features import wire_features

        wire_features(self)

    def status(self) -> dict[str, Any]:
        """``meta/status`` payload: version, advertised features, and the storage census.

        With agent memory on, ``agent_memory.vector_backlog`` says whether hybrid ranking is
        complete: ``pending`` active records still without a vector (per realm under ``realms``;
        ``0`` with a ``reason`` when recall is lexical). See docs/rpc.md (meta/status)."""
        from . import __version__

        slots = self.layout.slots() if self.layout is not None else []
        feature = getattr(self, "agent_memory", None)
        agent_memory: dict[str, Any] = {"enabled": feature is not None}
        if feature is not None:
            agent_memory.update({
                "store": feature.config.store,
                "realm": feature.config.realm,
                "realms": feature.store.list_realms(),
                "taint_tracker": feature.firewall.tracker.stats(),
                "injection_sessions": feature.injection.sessions.stats(),
                "recorder_tool": feature.tool is not None,
            })
            if feature.recall is not None:
                agent_memory["vector_backlog"] = feature.recall.backlog()
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

    def set_memory_panel_store(self, store: Any) -> None:
        """Wire the console Memory panel's read models (seed: Console Memory panel).

        ``store`` is any :class:`~meta_memory.panel.store.MemoryPanelStore` (inherit
        :class:`~meta_memory.panel.store.PanelStoreDefaults` for the conservative
        defaults), or ``None`` to leave the ten ``meta/memory/panel/*`` methods
        unadvertised. Raises ``TypeError`` for an object without the protocol's methods.
        """
        if store is not None:
            from .panel.store import MemoryPanelStore

            if not isinstance(store, MemoryPanelStore):
                raise TypeError("the memory panel store must implement MemoryPanelStore")
        self.memory_panel_store = store

    def close(self) -> None:
        """Release stores, pools and threads. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for closer in getattr(self, "_closers", []):
            try:
                closer()
            except Exception:  # noqa: BLE001 - best effort on shutdown
                log.exception("error while closing the runtime")
        if getattr(self, "ledger", None) is not None:
            self.ledger.close()
        if getattr(self, "events", None) is not None:
            self.events.close()
        if self._state_lock is not None:
            self._state_lock.release()

    def add_closer(self, fn: Any) -> None:
        if not hasattr(self, "_closers"):
            self._closers = []
        self._closers.append(fn)

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
