"""Builds agent memory's parts (store, recall, firewall, injection, recorder tool, review, panel) for a runtime.

Agent memory is on by default whenever the runtime has a state directory
(``[agent_memory] enabled = false`` turns it off); the bundled store is one
SQLite database per realm under ``<state-dir>/agent-memory/``. Everything is
constructed here, once, in dependency order:

    events -> firewall (taint tracker, write gate) -> store (gated) -> session state (taint, budgets, nonces
    in the store's database) -> recall provider
    (``[agent_memory] recall_provider``: lexical, hybrid with its background vector indexer, or a
    custom provider: a configured ``"package.module:Class"`` or the builder's object)
    -> AgentMemoryService -> InjectionCoordinator -> recorder tool -> HostService
    -> ReviewService -> tombstone retention -> the console Memory panel's read models

:func:`build_features` returns the parts as a :class:`Features`; the runtime
(:mod:`meta_memory.runtime`) holds them as typed attributes. This module never
imports the runtime: it receives what it needs as a :class:`FeatureContext`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .agent_memory.config import AgentMemoryConfig
from .agent_memory.expiry import ExpirySweep
from .agent_memory.realm_list import unlisted_realm_rule
from .agent_memory.retention import TombstoneRetention
from .agent_memory.store.base import AgentMemoryStore, WriteGate
from .clock import Clock
from .errors import StartupError
from .events.bus import EventBus
from .firewall.service import Firewall
from .injection import InjectionCoordinator
from .injection.model import LedgerRow, ScopeRef
from .ledger.ledger import AssertionLedger
from .panel.store import MemoryPanelStore
from .recall.semantic.setup import RecallSetup
from .review.service import ReviewService
from .services.agent_memory import AgentMemoryService
from .services.host import HostService
from .storage.layout import StorageLayout
from .tool.recorder import RecorderTool

__all__ = ["AgentMemoryFeature", "FeatureContext", "Features", "build_features"]

log = logging.getLogger("meta_memory.features")

#: Registers a function the runtime calls, in order, when it closes.
AddCloser = Callable[[Callable[[], object]], None]


#: The injection surfaces the store's injection ledger records.
_SURFACES: dict[str, Literal["build", "turn"]] = {"build": "build", "turn": "turn"}


@dataclass(frozen=True)
class AgentMemoryFeature:
    """The agent-memory services a runtime holds when agent memory is enabled."""

    config: AgentMemoryConfig
    store: AgentMemoryStore
    firewall: Firewall
    service: AgentMemoryService
    injection: InjectionCoordinator
    tool: RecorderTool | None
    host: HostService
    recall: RecallSetup


@dataclass(frozen=True)
class FeatureContext:
    """What building the features needs from the runtime: its config, storage, clock and authorities."""

    config: AgentMemoryConfig | None
    layout: StorageLayout | None
    clock: Clock
    events: EventBus
    ledger: AssertionLedger
    start_background: bool
    add_closer: AddCloser
    #: A custom recall provider object (``Meta.builder().recall_provider(...)``), or ``None``: then
    #: ``[agent_memory] recall_provider`` names the provider.
    recall_provider: object | None = None
    #: ``[access] read_only``: reads count no usage (a read-only gateway changes no state).
    read_only: bool = False
    #: Told ``(realm, memory ids)`` after every erase that committed (an erase call's, the tombstone
    #: retention's), before the session state forgets the ids: the runtime stops the exports under way.
    on_erased: Callable[[str, Sequence[str]], object] | None = None


@dataclass(frozen=True)
class Features:
    """The optional parts; every field is ``None`` when agent memory is off."""

    agent_memory: AgentMemoryFeature | None = None
    review: ReviewService | None = None
    retention: TombstoneRetention | None = None
    expiry: ExpirySweep | None = None
    memory_panel_store: MemoryPanelStore | None = None


def effective_agent_memory_config(cfg: AgentMemoryConfig | None, has_state_dir: bool) -> AgentMemoryConfig | None:
    """The ``[agent_memory]`` config in force: the defaults when the section is absent and there is a
    state directory, ``None`` when agent memory is off."""
    if cfg is None:
        return AgentMemoryConfig() if has_state_dir else None
    if cfg.enabled and (rule := unlisted_realm_rule(cfg.realms, cfg.realm)) is not None:
        raise StartupError(f"agent_memory.realm: {rule}")  # a realm set after decode (mcp --realm)
    return cfg if cfg.enabled else None


def _open_store(ctx: FeatureContext, cfg: AgentMemoryConfig, gate: WriteGate) -> AgentMemoryStore:
    if cfg.store == "postgres":
        try:
            from .agent_memory.store.postgres import PostgresAgentMemoryStore
        except ImportError as exc:  # pragma: no cover - optional extra
            raise StartupError(f"agent_memory.store = \"postgres\" needs the postgres extra: {exc}") from None
        if not cfg.dsn:
            raise StartupError("agent_memory.store = \"postgres\" needs agent_memory.dsn")
        store: AgentMemoryStore = PostgresAgentMemoryStore(cfg.dsn, ctx.clock, gate=gate, max_realms=cfg.max_realms,
                                                           realms=cfg.realms,
                                                           identity_record_limit=cfg.identity_record_limit)
        return store
    if ctx.layout is None:
        raise StartupError("agent memory with the sqlite store needs a persistent state directory")
    from .agent_memory.store.sqlite import SqliteAgentMemoryStore

    return SqliteAgentMemoryStore(ctx.layout.agent_memory_paths(), ctx.clock, gate=gate,
                                  max_realms=cfg.max_realms, max_open_realms=cfg.max_open_realms,
                                  recall_index_bytes=cfg.recall_index_mb * 1024 * 1024, realms=cfg.realms,
                                  sqlite_cache_bytes=cfg.sqlite_cache_mb * 1024 * 1024,
                                  view_cache_bytes=cfg.view_cache_mb * 1024 * 1024,
                                  identity_record_limit=cfg.identity_record_limit)


def _state_root(ctx: FeatureContext) -> Path | None:
    return ctx.layout.state_dir if ctx.layout is not None else None


def build_features(ctx: FeatureContext) -> Features:
    """Build every optional part in dependency order (see the module doc).

    Closers (indexer, store, session state, schedulers) are registered through ``ctx.add_closer`` in the
    order the runtime must run them. Raises :class:`StartupError` for a configuration the stores refuse
    (postgres without its extra or dsn, hybrid recall on postgres, sqlite without a state directory, a custom
    recall provider that cannot be loaded or is given twice).
    """
    cfg = ctx.config
    if cfg is None:
        return Features()
    from .agent_memory.model import Scope
    from .agent_memory.store.base import InjectionRow
    from .injection import InjectionOptions, InjectionSessions
    from .injection.timebox import TimeBox
    from .recall.semantic.setup import build_recall_provider, load_embedder
    from .services.host import QuarantineEventOps
    from .session_state import open_session_state

    if ctx.recall_provider is not None and "recall_provider" in cfg.model_fields_set:
        raise StartupError(f'agent_memory.recall_provider = "{cfg.recall_provider}" and a provider object '
                           'were both given; configure one recall provider')
    if cfg.recall_provider == "hybrid" and cfg.store == "postgres":
        raise StartupError('agent_memory.recall_provider = "hybrid" is not supported on the postgres store; '
                           'use store = "sqlite" or recall_provider = "lexical"')
    firewall = Firewall(cfg.content_trust, ctx.clock, events=ctx.events, llm_writes=cfg.llm_writes, realm=cfg.realm)
    store = _open_store(ctx, cfg, firewall.gate)
    try:
        # Taint, reset marks, injection budgets and nonces: in the PostgreSQL store's schema (shared by every
        # gateway on the database) or in ``<state-dir>/session-state.db``.
        session_state = open_session_state(store, _state_root(ctx), ctx.clock,
                                           expiry_ms=cfg.session_state_expiry_days * 86_400_000,
                                           limit=cfg.session_state_limit,
                                           identity_limit=cfg.session_state_identity_limit or None)
    except BaseException:
        store.close()
        raise
    ctx.add_closer(session_state.close)
    after_erase = ctx.on_erased

    def on_erased(realm: str, ids: Sequence[str]) -> None:
        """What every committed erase tells: ``ctx.on_erased`` first (the runtime stops the exports under way,
        which cannot fail), then the session state forgets the ids (a database write, which can), so a
        failure of the second never leaves an export handing out the erased content (fail closed)."""
        if after_erase is not None:
            after_erase(realm, ids)
        session_state.forget_records(realm, ids)

    root = _state_root(ctx)
    firewall.attach_state(session_state, legacy_state_path=root / "firewall-taint.json" if root is not None else None)
    try:
        embedder = load_embedder(cfg.embedder) if cfg.embedder is not None and ctx.recall_provider is None else None
        recall = build_recall_provider(cfg.recall_provider, store, embedder=embedder, start=False,
                                       custom=ctx.recall_provider,
                                       vector_cache_bytes=cfg.vector_cache_mb * 1024 * 1024)
    except BaseException:
        store.close()
        raise
    ctx.add_closer(recall.close)  # the vector indexer stops before the store closes
    ctx.add_closer(store.close)
    recall.start()
    timebox = TimeBox()
    service = AgentMemoryService(
        store, cfg, recall.provider, timebox, ctx.events,
        gate=firewall.gate,
        on_erased=on_erased,
        usage_marks=not ctx.read_only,
    )

    def manifest_fn(scope_ref: ScopeRef, k: int = 24) -> Sequence[object]:
        scope = Scope.from_storage(scope_ref.realm, scope_ref.kind, scope_ref.key)
        return store.manifest(scope_ref.realm, scope, "working_set", k)

    def log_injections_fn(realm: str, rows: Sequence[LedgerRow]) -> None:
        store.log_injections(realm, [InjectionRow(r.record_id, r.identity, _SURFACES[r.surface], r.at_ms,
                                                  r.session_key) for r in rows])

    injection = InjectionCoordinator(
        InjectionOptions.from_config(cfg),
        recall_fn=service.recall_for_injection,
        manifest_fn=manifest_fn,
        log_injections_fn=log_injections_fn,
        mark_usage_fn=store.mark_usage,
        clock=ctx.clock,
        sessions=InjectionSessions(session_state),
        timebox=timebox,
    )
    tool = None
    if cfg.recorder_tool:
        ops = QuarantineEventOps(store, firewall.gate, service, ctx.events)
        tool = RecorderTool(ops, max_entries=cfg.max_entries, max_ttl_s=cfg.tool_max_ttl_s)
    host = HostService(cfg, firewall, injection, tool, store)
    agent_memory = AgentMemoryFeature(cfg, store, firewall, service, injection, tool, host, recall)

    # the console's kept realm summaries are written after the store closes (closers run in order)
    panel_store = bundled_panel_store(store, summaries_dir=None if ctx.read_only else root)
    panel_close = getattr(panel_store, "close", None)
    if callable(panel_close):
        ctx.add_closer(panel_close)
    review = ReviewService(store, ctx.clock, events=ctx.events, ledger=ctx.ledger, steward_config=cfg.steward)
    if ctx.start_background:
        review.start_schedule()
        ctx.add_closer(review.stop_schedule)
    return Features(agent_memory=agent_memory, review=review,
                    retention=_retention(ctx, cfg, store, on_erased),
                    expiry=_expiry(ctx, cfg, store),
                    memory_panel_store=panel_store)


def _retention(ctx: FeatureContext, cfg: AgentMemoryConfig, store: AgentMemoryStore,
               on_erased: Callable[[str, Sequence[str]], object]) -> TombstoneRetention | None:
    """The tombstone-retention sweep (``erase_tombstoned_after_days``), run now and hourly in the background."""
    if cfg.erase_tombstoned_after_days is None:
        return None
    from .agent_memory.retention import SWEEP_INTERVAL_MS
    from .review.scheduler import DreamScheduler

    retention = TombstoneRetention(store, cfg.erase_tombstoned_after_days, ctx.clock, events=ctx.events,
                                   on_erased=on_erased)
    if ctx.start_background:
        retention.sweep()
        sweeper = DreamScheduler(retention.sweep, SWEEP_INTERVAL_MS, ctx.clock, tick_s=5.0, name="tombstone retention")
        sweeper.start()
        ctx.add_closer(sweeper.stop)
    return retention


def _expiry(ctx: FeatureContext, cfg: AgentMemoryConfig, store: AgentMemoryStore) -> ExpirySweep:
    """The expiry sweep: run now and every ``expiry_sweep_s`` in the background, on the same
    scheduler as the tombstone retention."""
    from .review.scheduler import DreamScheduler

    sweep = ExpirySweep(store, ctx.clock, events=ctx.events)
    if ctx.start_background:
        sweep.sweep()
        sweeper = DreamScheduler(sweep.sweep, cfg.expiry_sweep_s * 1000, ctx.clock,
                                 tick_s=min(5.0, float(cfg.expiry_sweep_s)), name="expiry sweep")
        sweeper.start()
        ctx.add_closer(sweeper.stop)
    return sweep


def bundled_panel_store(store: AgentMemoryStore, summaries_dir: Path | None = None) -> MemoryPanelStore | None:
    """The bundled stores serve the console Memory panel (seed: Console Memory panel):
    SQLite through :class:`~meta_memory.panel.store.SqlitePanelStore` (with ``summaries_dir``, the state
    directory, keeping its per-realm summaries across restarts in ``panel-summaries.json`` there),
    PostgreSQL through :class:`~meta_memory.panel.store.PostgresPanelStore`. Other backends leave the panel
    methods unadvertised (``None``) until an embedder calls ``runtime.set_memory_panel_store(store)``."""
    from .agent_memory.store.sqlite import SqliteAgentMemoryStore
    from .panel.kept_summaries import FILE_NAME
    from .panel.store import PostgresPanelStore, SqlitePanelStore

    if isinstance(store, SqliteAgentMemoryStore):
        return SqlitePanelStore(store, summaries_file=summaries_dir / FILE_NAME if summaries_dir is not None else None)
    try:
        from .agent_memory.store.postgres import PostgresAgentMemoryStore
    except ImportError:  # pragma: no cover - psycopg is optional
        return None
    if isinstance(store, PostgresAgentMemoryStore):
        return PostgresPanelStore(store)
    return None
