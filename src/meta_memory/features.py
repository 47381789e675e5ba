"""Wires agent memory (store, recall, firewall, injection, recorder tool) onto a runtime.

Agent memory is on by default whenever the runtime has a state directory
(``[agent_memory] enabled = false`` turns it off); the bundled store is one
SQLite database per realm under ``<state-dir>/agent-memory/``. Everything is
constructed here, once, in dependency order:

    events -> firewall (taint tracker, write gate) -> store (gated) -> session state (taint, budgets, nonces
    in the store's database) -> recall provider
    (``[agent_memory] recall_provider``: lexical, or hybrid with its background vector indexer)
    -> AgentMemoryService -> InjectionCoordinator -> recorder tool -> HostService
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import StartupError

if TYPE_CHECKING:  # pragma: no cover
    from .runtime import Runtime

__all__ = ["wire_features", "AgentMemoryFeature"]

log = logging.getLogger("meta_memory.features")


@dataclass
class AgentMemoryFeature:
    """The agent-memory services a runtime holds when agent memory is enabled."""

    config: Any
    store: Any
    firewall: Any
    service: Any
    injection: Any
    tool: Any
    host: Any
    recall: Any = None  # the RecallSetup: provider and (hybrid) vector indexer


def _agent_memory_config(runtime: "Runtime") -> Any:
    from .agent_memory.config import AgentMemoryConfig

    cfg = runtime.config.agent_memory
    if cfg is None:
        return AgentMemoryConfig() if runtime.state_dir is not None else None
    return cfg if cfg.enabled else None


def _open_store(runtime: "Runtime", cfg: Any, gate: Any) -> Any:
    if cfg.store == "postgres":
        try:
            from .agent_memory.store.postgres import PostgresAgentMemoryStore
        except ImportError as exc:  # pragma: no cover - optional extra
            raise StartupError(f"agent_memory.store = \"postgres\" needs the postgres extra: {exc}") from None
        if not cfg.dsn:
            raise StartupError("agent_memory.store = \"postgres\" needs agent_memory.dsn")
        return PostgresAgentMemoryStore(cfg.dsn, runtime.clock, gate=gate, max_realms=cfg.max_realms)
    if runtime.layout is None:
        raise StartupError("agent memory with the sqlite store needs a persistent state directory")
    from .agent_memory.store.sqlite import SqliteAgentMemoryStore

    return SqliteAgentMemoryStore(runtime.layout.ensure_agent_memory_root(), runtime.clock, gate=gate,
                                  max_realms=cfg.max_realms, max_open_realms=cfg.max_open_realms)


def _open_session_state(runtime: "Runtime", cfg: Any, store: Any) -> Any:
    """Taint, reset marks, injection budgets and nonces: in the PostgreSQL store's schema (shared by every
    gateway on the database) or in ``<state-dir>/session-state.db``."""
    from .session_state import open_session_state

    root = runtime.layout.state_dir if runtime.layout is not None else None
    return open_session_state(store, root, runtime.clock, expiry_ms=cfg.session_state_expiry_days * 86_400_000,
                              limit=cfg.session_state_limit)


def wire_features(runtime: "Runtime") -> None:
    """Attach ``runtime.agent_memory`` (an :class:`AgentMemoryFeature` or ``None``) and
    ``runtime.memory_panel_store`` (the console Memory panel's read models, or ``None``)."""
    runtime.agent_memory = None
    runtime.memory_panel_store = None
    cfg = _agent_memory_config(runtime)
    if cfg is None:
        return
    from .agent_memory.model import Scope, ScopeKind
    from .agent_memory.store.base import InjectionRow
    from .firewall.service import Firewall
    from .injection import InjectionCoordinator, InjectionOptions, InjectionSessions
    from .injection.timebox import TimeBox
    from .recall.semantic.setup import build_recall_provider
    from .services.agent_memory import AgentMemoryService
    from .services.host import HostService, QuarantineEventOps
    from .tool.recorder import RecorderTool

    def emit(event_type: str, identity: str | None, data: dict[str, Any]) -> None:
        runtime.events.emit(event_type, data, identity=identity)

    provider_kind = getattr(cfg, "recall_provider", "lexical")
    if provider_kind == "hybrid" and cfg.store == "postgres":
        raise StartupError('agent_memory.recall_provider = "hybrid" is not supported on the postgres store; '
                           'use store = "sqlite" or recall_provider = "lexical"')
    firewall = Firewall(cfg.content_trust, runtime.clock, on_event=emit, llm_writes=cfg.llm_writes,
                        realm=cfg.realm)
    store = _open_store(runtime, cfg, firewall.gate)
    try:
        session_state = _open_session_state(runtime, cfg, store)
    except BaseException:
        store.close()
        raise
    runtime.add_closer(session_state.close)
    firewall.attach_state(session_state,
                          legacy_state_path=runtime.layout.state_dir / "firewall-taint.json" if runtime.layout else None)
    try:
        recall = build_recall_provider(provider_kind, store, start=False)
    except BaseException:
        store.close()
        raise
    runtime.add_closer(recall.close)  # the vector indexer stops before the store closes
    runtime.add_closer(store.close)
    recall.start()
    timebox = TimeBox()
    service = AgentMemoryService(
        store, cfg, recall.provider, timebox, emit,
        emit_many=lambda events: runtime.events.emit_many([(t, d, i) for t, i, d in events]),
    )

    def manifest_fn(scope_ref: Any, k: int = 24) -> Any:
        scope = Scope.from_storage(scope_ref.realm, scope_ref.kind, scope_ref.key)
        return store.manifest(scope_ref.realm, scope, "working_set", k)

    def log_injections_fn(realm: str, rows: Any) -> None:
        store.log_injections(realm, [InjectionRow(r.record_id, r.identity, r.surface, r.at_ms, r.session_key)
                                     for r in rows])

    injection = InjectionCoordinator(
        InjectionOptions.from_config(cfg),
        recall_fn=service.recall_for_injection,
        manifest_fn=manifest_fn,
        log_injections_fn=log_injections_fn,
        mark_usage_fn=store.mark_usage,
        clock=runtime.clock,
        sessions=InjectionSessions(session_state),
        timebox=timebox,
    )
    tool = None
    if cfg.recorder_tool:
        ops = QuarantineEventOps(store, cfg.realm, firewall.gate, service, emit)
        tool = RecorderTool(ops, max_entries=cfg.max_entries)
    host = HostService(cfg, firewall, injection, tool, store)
    del ScopeKind
    runtime.agent_memory = AgentMemoryFeature(cfg, store, firewall, service, injection, tool, host, recall)

    from .review.service import ReviewService

    runtime.review = ReviewService(store, runtime.clock, events=runtime.events, ledger=runtime.ledger,
                                   steward_config=cfg.steward)
    if runtime.start_background:
        runtime.review.start_schedule()
        runtime.add_closer(runtime.review.stop_schedule)
    runtime.retention = None
    if cfg.erase_tombstoned_after_days is not None:
        from .agent_memory.retention import SWEEP_INTERVAL_MS, TombstoneRetention
        from .review.scheduler import DreamScheduler

        runtime.retention = TombstoneRetention(store, cfg.erase_tombstoned_after_days, runtime.clock,
                                               emit=runtime.events.emit)
        if runtime.start_background:
            runtime.retention.sweep()
            sweeper = DreamScheduler(runtime.retention.sweep, SWEEP_INTERVAL_MS, runtime.clock, tick_s=5.0,
                                     name="tombstone retention")
            sweeper.start()
            runtime.add_closer(sweeper.stop)
    _wire_memory_panel(runtime, store)


def _wire_memory_panel(runtime: "Runtime", store: Any) -> None:
    """The bundled stores serve the console Memory panel (seed: Console Memory panel):
    SQLite through :class:`~meta_memory.panel.store.SqlitePanelStore`, PostgreSQL through
    :class:`~meta_memory.panel.store.PostgresPanelStore`. Other backends leave the panel
    methods unadvertised until an embedder calls ``runtime.set_memory_panel_store(store)``."""
    from .agent_memory.store.sqlite import SqliteAgentMemoryStore
    from .panel.store import PostgresPanelStore, SqlitePanelStore

    if isinstance(store, SqliteAgentMemoryStore):
        runtime.set_memory_panel_store(SqlitePanelStore(store))
        return
    try:
        from .agent_memory.store.postgres import PostgresAgentMemoryStore
    except ImportError:  # pragma: no cover - psycopg is optional
        return
    if isinstance(store, PostgresAgentMemoryStore):
        runtime.set_memory_panel_store(PostgresPanelStore(store))
