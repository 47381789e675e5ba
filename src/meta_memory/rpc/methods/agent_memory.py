"""``meta/agent_memory/remember|recall|forget|update|manifest`` (seed: Agent memory injection), and
beyond the seed ``meta/agent_memory/remember_batch`` (the bulk write for hosts that replay or import),
``meta/agent_memory/list`` (an identity's active records by tag, paged), ``meta/agent_memory/history``
(a record's versions and why each changed; see ``agent_memory/history.py``) and
``meta/agent_memory/erase|erase_identity`` (content removed for good; see ``agent_memory/erase.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...access.requirements import (
    Requirement,
    identity_needs,
    identity_resource,
    identity_write,
    on_identity,
    requires,
)
from ...access.resources import Resources
from ...agent_memory.model import Scope
from ..registry import CallContext, FreshJson, MethodTable
from ..results import (
    EraseResult,
    ForgetResult,
    HistoryResult,
    ListResult,
    ManifestResult,
    RecallResult,
    RememberBatchResult,
    RememberResult,
    UpdateResult,
)
from .agent_memory_params import (
    DerivedParams,
    EraseIdentityParams,
    EraseParams,
    ForgetParams,
    HistoryParams,
    ListParams,
    ManifestParams,
    RecallParams,
    RememberBatchParams,
    RememberParams,
    UpdateParams,
)

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime


def agent_memory_enabled(runtime: "Runtime") -> bool:
    """Agent-memory methods are advertised only when agent memory is wired."""
    return runtime.agent_memory is not None


def caller_manages(runtime: "Runtime", ctx: CallContext) -> Callable[[str, str], bool] | None:
    """Whose taint of a session key counts for the writes the caller drives, another identity's than the
    writer's: ``None`` (every identity's) unless ``[agent_memory] shared_key_taint = "managed"`` under access
    control; then ``manages(realm, identity)``, whether the caller holds ``agent.session.manage`` on that
    identity, so an identity of another principal can neither hold these writes for review by tainting the
    same key nor learn through them whether it did (``docs/security.md``, "A write carries the taint of the
    session it comes from"). The one rule of the ``memory`` tool's writes, a write derived from sessions
    (``derived_from_sessions``) and a dream's harvests."""
    access = runtime.access
    config = getattr(getattr(runtime, "agent_memory", None), "config", None)
    if not access.enabled or getattr(config, "shared_key_taint", None) != "managed":
        return None
    return lambda realm, ident: access.holds_on_identity(ctx.principal, "agent.session.manage", realm, ident)


def agent_memory_off(runtime: "Runtime") -> str:
    """Why an agent-memory method is not advertised on ``runtime`` and what turns agent memory on, the
    hint of its ``-32601``: ``[agent_memory] enabled = false`` in the configuration, or no state directory
    (an embedded handle built without ``persistent_state``)."""
    cfg = runtime.config.agent_memory
    if cfg is not None and not cfg.enabled:
        return "agent memory is off: the configuration sets [agent_memory] enabled = false"
    return ("agent memory is off: it needs a state directory; build the handle with "
            "Meta.builder().persistent_state(path), or run meta-memory serve --state-dir DIR")


@requires("agent.memory.write + agent.memory.read + agent.view on the identity (the answer tells what it "
          "holds); with derived_from_sessions also agent.session.manage on it (the outcome tells whether a named "
          "session is tainted)", entry=[[a] for a in identity_needs("agent.memory.write")])
def derived_write(p: DerivedParams, resources: Resources) -> list[Requirement]:
    """The requirement of a remember that may name the sessions it was derived from."""
    res = identity_resource(p, resources)
    needs = [Requirement(a, res) for a in identity_needs("agent.memory.write")]
    if p.derived_from_sessions:
        needs.append(Requirement("agent.session.manage", res))
    return needs


def register(table: MethodTable) -> None:
    on = agent_memory_enabled
    read = on_identity("agent.memory.read", "agent.view")
    write = identity_write("agent.memory.write")

    @table.method("meta/agent_memory/remember", RememberParams, requires=derived_write, mutating=True,
                  available=on, unavailable_hint=agent_memory_off, result=RememberResult)
    def remember(runtime: "Runtime", ctx: CallContext, p: RememberParams) -> dict[str, Any]:
        """Store a record in the identity's scope (application author; exact-content dedup). Never quarantined,
        unless it names ``derived_from_sessions`` and one of them is tainted (another identity's session of
        a named key counting as for the caller's ``memory`` tool writes: :func:`caller_manages`)."""
        return runtime.need_agent_memory().service.remember(p.realm, p.identity, p.title, p.body, p.tags or [],
                                                     p.derived_sessions(lambda: runtime.access.digest_secret),
                                                     ttl_s=p.ttl_s,
                                                     metadata=p.metadata, manages=caller_manages(runtime, ctx))

    @table.method("meta/agent_memory/remember_batch", RememberBatchParams, requires=derived_write, mutating=True,
                  available=on, unavailable_hint=agent_memory_off,
                  result=RememberBatchResult)
    def remember_batch(runtime: "Runtime", ctx: CallContext, p: RememberBatchParams) -> dict[str, Any]:
        """Store many records in the identity's scope in one transaction: a result per item, in order."""
        return runtime.need_agent_memory().service.remember_batch(
            p.realm, p.identity, [(r.title, r.body, r.tags or [], r.ttl_s, r.metadata) for r in p.records],
            p.derived_sessions(lambda: runtime.access.digest_secret), manages=caller_manages(runtime, ctx)
        )

    @table.method("meta/agent_memory/recall", RecallParams, requires=read, mutating=False, available=on,
                  unavailable_hint=agent_memory_off,
                  result=RecallResult)
    def recall(runtime: "Runtime", ctx: CallContext, p: RecallParams) -> FreshJson:
        """Recall the identity's active records: ``{records, skip_reason}`` (built for this call alone: each
        record by :meth:`~meta_memory.agent_memory.model.MemoryRecord.wire`, its tags and metadata copies)."""
        return FreshJson(runtime.need_agent_memory().service.recall(
            p.realm, p.identity, selection=p.selection, query_text=p.query_text, query_terms=p.query_terms,
            max_entries=p.max_entries, where=p.where,
        ))

    @table.method("meta/agent_memory/forget", ForgetParams, requires=identity_write("agent.memory.delete"), mutating=True,
                  available=on, unavailable_hint=agent_memory_off,
                  result=ForgetResult)
    def forget(runtime: "Runtime", ctx: CallContext, p: ForgetParams) -> dict[str, Any]:
        """Tombstone a record of the identity: ``{memory_id, deleted}``."""
        return runtime.need_agent_memory().service.forget(p.realm, p.identity, p.memory_id)

    @table.method("meta/agent_memory/update", UpdateParams, requires=write, mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=UpdateResult)
    def update(runtime: "Runtime", ctx: CallContext, p: UpdateParams) -> dict[str, Any]:
        """Supersede a record with a new version (omitted fields kept): ``{memory_id, supersedes, record}``."""
        return runtime.need_agent_memory().service.update(p.realm, p.identity, p.memory_id, p.title, p.body, p.tags,
                                                   ttl_s=p.ttl_s, clear_expiry=p.clear_expiry,
                                                   metadata=p.metadata)

    @table.method("meta/agent_memory/manifest", ManifestParams, requires=read, mutating=False, available=on,
                  unavailable_hint=agent_memory_off,
                  result=ManifestResult)
    def manifest(runtime: "Runtime", ctx: CallContext, p: ManifestParams) -> dict[str, Any]:
        """Body-free metadata of the identity's active records: ``{records: [RecordMeta]}``."""
        return runtime.need_agent_memory().service.manifest(p.realm, p.identity, p.tier, p.k)

    @table.method("meta/agent_memory/list", ListParams, requires=read, mutating=False, available=on,
                  unavailable_hint=agent_memory_off,
                  result=ListResult)
    def list_records(runtime: "Runtime", ctx: CallContext, p: ListParams) -> dict[str, Any]:
        """The identity's active records holding every tag, newest updated first: ``{records, next_cursor}``."""
        return runtime.need_agent_memory().service.list_records(p.realm, p.identity, tags=p.tags or [], limit=p.limit,
                                                         cursor=p.cursor, where=p.where)

    @table.method("meta/agent_memory/history", HistoryParams, requires=read, mutating=False, available=on,
                  unavailable_hint=agent_memory_off,
                  result=HistoryResult)
    def history(runtime: "Runtime", ctx: CallContext, p: HistoryParams) -> dict[str, Any]:
        """The versions of one of the identity's records, oldest first, each with its author, trust tier,
        status, times and the reason it changed: ``{memory_id, order, versions, truncated}``. Quarantined
        content is withheld, erased versions show only that they were erased. Another identity's or realm's
        record and an unknown id are refused alike (``not_found``)."""
        return runtime.need_agent_memory().service.history(p.realm, p.identity, p.memory_id)

    _register_erase(table)


def _erase(runtime: "Runtime", ctx: CallContext, realm: str, identity: str, memory_id: str | None,
           dry_run: bool, reason: str | None) -> dict[str, Any]:
    # every scope the content closure reaches needs the erase grant, judged by the service on each
    access = runtime.access
    result = runtime.need_agent_memory().service.erase(
        realm, identity, memory_id, erased_by=access.actor(ctx.principal), reason=reason, dry_run=dry_run,
        may_erase=access.scope_check(ctx.principal, "agent.memory.erase"))
    # a record's content hash is shown only to a caller who may read its scope: to an eraser alone, the unsalted
    # hash of a short secret (a door code) would give the secret back to a guess
    may_read = access.scope_check(ctx.principal, "agent.memory.read")
    for rec in result["records"]:
        if not may_read(Scope.from_json(rec["scope"])):
            rec["content_hash"] = None
    return result


def _register_erase(table: MethodTable) -> None:
    on = agent_memory_enabled
    erase_grant = on_identity("agent.memory.erase")
    writes = lambda p: not p.dry_run  # noqa: E731 - a dry run changes nothing

    @table.method("meta/agent_memory/erase", EraseParams, requires=erase_grant, mutating=writes, available=on,
                  unavailable_hint=agent_memory_off,
                  result=EraseResult)
    def erase(runtime: "Runtime", ctx: CallContext, p: EraseParams) -> dict[str, Any]:
        """Erase a record and its content closure for good: ``{dry_run, erased_at_ms, count, scopes, records}``."""
        return _erase(runtime, ctx, p.realm, p.identity, p.memory_id, p.dry_run, p.reason)

    @table.method("meta/agent_memory/erase_identity", EraseIdentityParams, requires=erase_grant, mutating=writes,
                  available=on, unavailable_hint=agent_memory_off,
                  result=EraseResult)
    def erase_identity(runtime: "Runtime", ctx: CallContext, p: EraseIdentityParams) -> dict[str, Any]:
        """Erase every record of the identity (and their content closures); ``dry_run`` counts what would go."""
        return _erase(runtime, ctx, p.realm, p.identity, None, p.dry_run, p.reason)
