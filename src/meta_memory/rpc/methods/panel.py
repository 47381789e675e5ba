"""``meta/memory/panel/*``: the console Memory panel's ten read methods (seed: Console Memory panel).

==================================  =====================================================  ==================
method                              params                                                 limit (default/max)
==================================  =====================================================  ==================
``records``                         realm?, scope?, identity?, scope_key?, status?,        50 / 200
                                    query?, limit?, cursor?
``record``                          memory_id, realm?                                      —
``quarantine``                      realm?, limit?, cursor?                                50 / 200
``dreams``, ``dream_runs``          realm?, limit?                                         20 / 100
``audit_verdicts``, ``proposals``,  realm?, limit?                                         50 / 200
``injections``, ``harvests``
``overview``                        realm?                                                 —
==================================  =====================================================  ==================

Advertised only when a panel-capable store is wired (``runtime.memory_panel_store``,
set by the bundled SQLite store or by ``runtime.set_memory_panel_store``). Each
registration declares its entry gate (``requires=``); rows are judged by
:class:`~meta_memory.panel.service.PanelService`. ``limit`` is clamped to
``[1, max]``. Every panel method is a read (``mutating=False``).

``records.query`` is an addition beyond the seed (docs/rpc.md): a text search over
title, description, body and tags, applied before the page is cut, so rows the
caller may not read are never returned and never counted.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import field_validator, model_validator

from ...access.requirements import Requirement, Requires, anywhere, requires, rows_judged, unscoped
from ...access.resources import Resource, Resources
from ...agent_memory.fields import memory_id_ref
from ...errors import echo
from ...identity import parse_identity, parse_realm
from ...panel.cursor import parse_cursor
from ...panel.paging import DEFAULT_LIMIT, MAX_LIMIT, parse_limit
from ...panel.service import DREAMS_DEFAULT_LIMIT, DREAMS_MAX_LIMIT, PanelService
from .. import results_review as R
from ..params import MembersRule, Params
from ..registry import CallContext, MethodTable
from .agent_memory import agent_memory_off

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime

__all__ = [
    "PanelListParams",
    "PanelQuarantineParams",
    "PanelRealmParams",
    "PanelRecordParams",
    "PanelRecordsParams",
    "panel_enabled",
    "register",
]

SCOPES = ("identity", "mob", "operator", "realm")
#: ``records.query`` bounds: characters after trimming, and whitespace-separated terms.
QUERY_MAX_CHARS = 200
QUERY_MAX_TERMS = 8
STATUSES = ("active", "quarantined", "superseded", "tombstoned")


def _one_of(value: str | None, allowed: tuple[str, ...], field: str) -> str | None:
    """``value`` trimmed when it is one of ``allowed``; ``None`` stays ``None``.

    Raises ``ValueError("unknown <field> '<value>' (one of: <allowed>; omit it for any)")`` otherwise.
    """
    if value is None:
        return None
    if value.strip() not in allowed:
        raise ValueError(f"unknown {field} '{echo(str(value))}' (one of: {', '.join(allowed)}; omit it for any)")
    return value.strip()


def _realm(value: str | None) -> str | None:
    if value is None:
        return None
    return parse_realm(value)


class PanelRealmParams(Params):
    """``{realm?}``: a non-empty trimmed realm; absent = every realm."""

    realm: str | None = None

    @field_validator("realm")
    @classmethod
    def _realm(cls, value: str | None) -> str | None:
        return _realm(value)


class PanelListParams(PanelRealmParams):
    """``{realm?, limit?}`` (``limit`` an integer, clamped per method)."""

    limit: int | None = None


class PanelRecordsParams(PanelListParams):
    """``meta/memory/panel/records`` params.

    ``scope`` is ``identity|mob|operator|realm`` (``unknown scope '<s>' (one of: ...)``);
    ``identity`` implies ``scope = "identity"`` and ``scope_key = identity``
    when ``scope_key`` is absent; a ``scope_key`` of the identity scope (given or implied) must be an
    identity by the name rule (``scope_key: identity must ...``, field ``scope_key``); ``status`` is
    ``active|quarantined|superseded|tombstoned`` (``unknown status '<s>' (one of: ...)``);
    ``cursor`` is ``"<updated_at_ms>:<memory_id>"`` (``malformed cursor``).

    ``query`` (beyond the seed) is free text: trimmed, at most :data:`QUERY_MAX_CHARS`
    characters and :data:`QUERY_MAX_TERMS` whitespace-separated terms, no control
    characters; blank is refused. A row matches when every term occurs, case-insensitively,
    in its title, description, body or tags. A cursor continues the listing it came from:
    send it with the same filters and query.
    """

    scope: str | None = None
    identity: str | None = None
    scope_key: str | None = None
    status: str | None = None
    query: str | None = None
    cursor: str | None = None

    @field_validator("query")
    @classmethod
    def _query(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = value.strip()
        if not text:
            raise ValueError("query must be a non-empty string when provided")
        if len(text) > QUERY_MAX_CHARS:
            raise ValueError(f"query is longer than {QUERY_MAX_CHARS} characters")
        if any(unicodedata.category(ch) in ("Cc", "Cs") and not ch.isspace() for ch in text):
            raise ValueError("query must not contain control characters")
        if len(text.split()) > QUERY_MAX_TERMS:
            raise ValueError(f"query has more than {QUERY_MAX_TERMS} terms")
        return text

    def terms(self) -> tuple[str, ...]:
        """The query's distinct lowercased terms, in order (``()`` without a query)."""
        if self.query is None:
            return ()
        return tuple(dict.fromkeys(term.lower() for term in self.query.split()))

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return _one_of(value, SCOPES, "scope")

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        return _one_of(value, STATUSES, "status")

    @field_validator("identity")
    @classmethod
    def _identity(cls, value: str | None) -> str | None:
        return None if value is None else parse_identity(value)

    @field_validator("scope_key")
    @classmethod
    def _scope_key(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("scope_key must be a non-empty string when provided")
        return value.strip()

    @model_validator(mode="after")
    def _identity_key(self) -> "PanelRecordsParams":
        # a scope_key that names an identity (scope "identity", given or implied by identity) follows the
        # identity name rule, refused here naming scope_key rather than failing in filters()
        scope = self.scope or ("identity" if self.identity is not None else None)
        if scope == "identity" and self.scope_key is not None:
            try:
                parse_identity(self.scope_key)
            except ValueError as exc:
                raise MembersRule(f"scope_key: {exc}", "scope_key") from None
        return self

    def filters(self) -> tuple[str | None, str | None]:
        """The effective ``(scope_kind, scope_key)`` filter (an identity key as :func:`parse_identity`
        reads it; the params validator has already refused one it cannot read)."""
        scope, key = self.scope, self.scope_key
        if self.identity is not None:
            scope = scope or "identity"
            if key is None:
                key = self.identity
        if scope == "identity" and key is not None:
            key = parse_identity(key)
        if scope == "realm":
            key = None
        return scope, key


class PanelQuarantineParams(PanelListParams):
    """``meta/memory/panel/quarantine`` params: ``{realm?, limit?, cursor?}``; ``cursor`` is the
    ``next_cursor`` of the page before, ``"<created_at_ms>:<memory_id>"`` (``malformed cursor``)."""

    cursor: str | None = None


class PanelRecordParams(PanelRealmParams):
    """``meta/memory/panel/record`` params: ``memory_id`` (required, non-empty), ``realm?``."""

    memory_id: str

    @field_validator("memory_id")
    @classmethod
    def _memory_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("memory_id is required")
        return memory_id_ref(value)


@requires("scope=identity (or identity given) with realm: agent.memory.read + agent.view on it; scope=mob with "
          "realm: mob.memory.read on it; scope=operator: operator.memory.read; scope=realm: agent.memory.read "
          "(on the realm given, else unscoped); otherwise none at entry (every row is judged)", entry=[])
def _records_requires(p: PanelRecordsParams, resources: Resources) -> list[Requirement]:
    scope, key = p.filters()
    realm = p.realm
    if scope == "operator":
        res = resources.operator(realm, key or "") if realm is not None else Resource.unscoped()
        return [Requirement("operator.memory.read", res)]
    if scope == "realm":
        return [Requirement("agent.memory.read", resources.realm(realm) if realm is not None else Resource.unscoped())]
    if scope is None or key is None or realm is None:
        return []  # rows across realms are judged one by one under their realm-qualified names
    if scope == "mob":
        return [Requirement("mob.memory.read", resources.mob(realm, key))]
    res = resources.identity(realm, key)
    return [Requirement("agent.memory.read", res), Requirement("agent.view", res)]


def panel_enabled(runtime: "Runtime") -> bool:
    """Panel methods are advertised only when a panel-capable store is wired."""
    return runtime.memory_panel_store is not None


def panel_off(runtime: "Runtime") -> str:
    """Why the panel methods are not advertised on ``runtime``: agent memory is off
    (:func:`~meta_memory.rpc.methods.agent_memory.agent_memory_off`), or its store offers no panel reads."""
    if runtime.agent_memory is None:
        return agent_memory_off(runtime)
    return "the agent-memory store in use offers no panel reads"


def _service(runtime: "Runtime", ctx: CallContext) -> PanelService:
    return PanelService(runtime.need_panel_store(), runtime.access.visibility(ctx.principal))


def register(table: MethodTable) -> None:
    on = panel_enabled
    base = "meta/memory/panel/"
    realm_read: Requires = unscoped("agent.memory.read")

    @table.method(base + "records", PanelRecordsParams, requires=_records_requires, mutating=False, available=on,
                  unavailable_hint=panel_off,
                  result=R.PanelRecordsResult)
    def records(runtime: "Runtime", ctx: CallContext, p: PanelRecordsParams) -> dict[str, Any]:
        """Records newest-updated first, body-free, keyset-paged across realms, optionally
        narrowed by ``query``: ``{records, next_cursor, realms}``."""
        scope, key = p.filters()
        return _service(runtime, ctx).records(
            realm=p.realm,
            scope_kind=scope,
            scope_key=key,
            status=p.status,
            terms=p.terms(),
            limit=parse_limit(p.limit, DEFAULT_LIMIT, MAX_LIMIT),
            cursor=parse_cursor(p.cursor),
        )

    @table.method(base + "record", PanelRecordParams, requires=rows_judged(), mutating=False, available=on,
                  unavailable_hint=panel_off,
                  result=R.PanelRecordResult)
    def record(runtime: "Runtime", ctx: CallContext, p: PanelRecordParams) -> dict[str, Any]:
        """One record with body and content hash, its supersede chain and injection usage."""
        return _service(runtime, ctx).record(memory_id=p.memory_id, realm=p.realm)

    @table.method(base + "quarantine", PanelQuarantineParams, requires=anywhere("memory.quarantine.review"), mutating=False,
                  available=on, unavailable_hint=panel_off,
                  result=R.PanelQuarantineResult)
    def quarantine(runtime: "Runtime", ctx: CallContext, p: PanelQuarantineParams) -> dict[str, Any]:
        """The quarantine queue (keyset-paged, newest created first), pending gated promotions and held
        forgets: ``{records, next_cursor, pending_promotions, pending_forgets, realms}``."""
        return _service(runtime, ctx).quarantine(
            realm=p.realm, limit=parse_limit(p.limit), cursor=parse_cursor(p.cursor)
        )

    @table.method(base + "dreams", PanelListParams, requires=realm_read, mutating=False, available=on,
                  unavailable_hint=panel_off,
                  result=R.PanelDreamsResult)
    def dreams(runtime: "Runtime", ctx: CallContext, p: PanelListParams) -> dict[str, Any]:
        """Steward dream summaries from the audit rows: ``{runs, realms, withheld_by_access}``."""
        limit = parse_limit(p.limit, DREAMS_DEFAULT_LIMIT, DREAMS_MAX_LIMIT)
        return _service(runtime, ctx).dreams(realm=p.realm, limit=limit)

    @table.method(base + "dream_runs", PanelListParams, requires=realm_read, mutating=False, available=on,
                  unavailable_hint=panel_off,
                  result=R.PanelDreamRunsResult)
    def dream_runs(runtime: "Runtime", ctx: CallContext, p: PanelListParams) -> dict[str, Any]:
        """Durable dream-run rows: ``{runs, realms, withheld_by_access}``."""
        limit = parse_limit(p.limit, DREAMS_DEFAULT_LIMIT, DREAMS_MAX_LIMIT)
        return _service(runtime, ctx).dream_runs(realm=p.realm, limit=limit)

    @table.method(base + "overview", PanelRealmParams, requires=realm_read, mutating=False, available=on,
                  unavailable_hint=panel_off,
                  result=R.PanelOverviewResult)
    def overview(runtime: "Runtime", ctx: CallContext, p: PanelRealmParams) -> dict[str, Any]:
        """Per-scope status counts and body bytes with floors and pressure: ``{scopes, totals, floors, realms}``."""
        return _service(runtime, ctx).overview(realm=p.realm)

    # Realm listings that take only ``{realm?, limit?}`` (default page size).
    for listing, result, summary in (
        ("audit_verdicts", R.PanelAuditVerdictsResult, "Open usage-audit verdicts: ``{verdicts, realms}``."),
        ("proposals", R.PanelProposalsResult,
         "Pending mob/operator proposals (metadata and taint flag, no bodies): ``{proposals, realms}``."),
        ("injections", R.PanelInjectionsResult, "Recent injection-ledger rows, newest first: ``{injections, realms}``."),
        ("harvests", R.PanelHarvestsResult, "Pending exit-interview harvests: ``{harvests, realms}``."),
    ):
        table.method(base + listing, PanelListParams, requires=realm_read, mutating=False, available=on,
                     unavailable_hint=panel_off,
                     result=result, summary=summary)(_realm_listing(listing))


def _realm_listing(listing: str) -> Callable[["Runtime", CallContext, PanelListParams], dict[str, Any]]:
    """The handler of ``meta/memory/panel/<listing>``: :class:`PanelService`'s ``<listing>(realm=, limit=)``."""

    def handler(runtime: "Runtime", ctx: CallContext, p: PanelListParams) -> dict[str, Any]:
        result: dict[str, Any] = getattr(_service(runtime, ctx), listing)(realm=p.realm, limit=parse_limit(p.limit))
        return result

    return handler
