"""Typed results of the console panel reads ``meta/memory/panel/*`` (seed: "Console Memory panel";
docs/rpc.md, "Console panel methods"). List rows are body-free (``body_bytes`` stands in);
``realms`` lists the realms the panel knows."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._base import OpenModel

__all__ = ["PanelPendingForget", "PanelAuditVerdict", "PanelProposal", "PanelHarvest", "PanelRecord", "PanelRecordPage", "PanelRecordDetail", "PanelQuarantine", "PanelDreamSummary",
           "PanelDreams", "PanelDreamRun", "PanelDreamRuns", "PanelAuditVerdicts", "PanelScope", "PanelOverview",
           "PanelProposals", "PanelInjection", "PanelInjections", "PanelHarvests"]


class _PanelRow(OpenModel):
    """A row of a panel listing: ``realm`` names the realm it was read from."""

    realm: str | None = None


class _PanelListing(OpenModel):
    """A panel listing: its rows, and ``realms``, the realms the panel knows."""

    realms: list[str] = Field(default_factory=list)


class PanelPendingForget(_PanelRow):
    """A held forget awaiting review: ``{realm, forget_id, memory_id, scope_kind, scope_key, title,
    record_status, content_hash, requested_by, reason, created_at_ms}``."""

    forget_id: str
    memory_id: str
    scope_kind: str | None = None
    scope_key: str | None = None
    title: str | None = None
    record_status: str | None = None
    content_hash: str | None = None
    requested_by: Any = None
    reason: str | None = None
    created_at_ms: int | None = None


class PanelAuditVerdict(_PanelRow):
    """An open usage-audit verdict: ``{realm, run_id, record_id, verdict, rationale, created_at_ms}``."""

    record_id: str
    run_id: str | None = None
    verdict: str | None = None
    rationale: str | None = None
    created_at_ms: int | None = None


class PanelProposal(_PanelRow):
    """A pending proposal row (no body): ``{realm, proposal_id, scope_kind, scope_key, title, status,
    tainted, created_at_ms}``."""

    proposal_id: str
    scope_kind: str | None = None
    scope_key: str | None = None
    title: str | None = None
    status: str | None = None
    tainted: bool | None = None
    created_at_ms: int | None = None


class PanelHarvest(_PanelRow):
    """A pending exit-interview harvest: ``{realm, identity, session_key, cause, retired_at_ms, status}``."""

    identity: str
    session_key: str | None = None
    cause: str | None = None
    retired_at_ms: int | None = None
    status: str | None = None


class PanelRecord(_PanelRow):
    """A record row: ``{id, scope, kind, title, description, tags, provenance, trust, status: {status, reason?},
    derived_from, created_at_ms, updated_at_ms, usage, ever_quarantined, body_bytes}`` (plus ``realm`` in
    listings; ``body`` and ``content_hash`` in ``record``; ``chain_role`` in a chain)."""

    id: str
    scope: dict[str, Any] = Field(default_factory=dict)
    kind: str | None = None
    title: str = ""
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    trust: str | None = None
    status: dict[str, Any] = Field(default_factory=dict)
    created_at_ms: int | None = None
    updated_at_ms: int | None = None
    #: When the record stops being active (epoch ms; ``None``: never).
    expires_at_ms: int | None = None
    body_bytes: int | None = None
    body: str | None = None
    content_hash: str | None = None

    @property
    def state(self) -> str | None:
        """The status name (``active``, ``quarantined``, ``superseded``, ``tombstoned``)."""
        return self.status.get("status")


class PanelRecordPage(_PanelListing):
    """``records``: newest updated first; pass ``next_cursor`` back as ``cursor`` (``None`` at the end)."""

    records: list[PanelRecord] = Field(default_factory=list)
    next_cursor: str | None = None


class PanelRecordDetail(OpenModel):
    """``record``: the record with body and content hash, its supersede ``chain`` and ``injections``."""

    realm: str
    record: PanelRecord
    chain: list[PanelRecord] = Field(default_factory=list)
    injections: list["PanelInjection"] = Field(default_factory=list)


class PanelQuarantine(_PanelListing):
    """``quarantine``: quarantined rows, pending gated promotions and held forgets."""

    records: list[PanelRecord] = Field(default_factory=list)
    pending_promotions: list[dict[str, Any]] = Field(default_factory=list)
    pending_forgets: list[PanelPendingForget] = Field(default_factory=list)


class PanelDreamSummary(_PanelRow):
    """One dream summarised from its audit rows."""

    run_id: str
    ops: int | None = None


class PanelDreams(_PanelListing):
    """``dreams``: ``{runs, withheld_by_access, realms}``."""

    runs: list[PanelDreamSummary] = Field(default_factory=list)
    withheld_by_access: bool = False


class PanelDreamRun(_PanelRow):
    """One durable dream-run row."""

    run_id: str
    started_at_ms: int | None = None
    completed_at_ms: int | None = None
    ops_committed: int | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class PanelDreamRuns(_PanelListing):
    """``dream_runs``: ``{runs, withheld_by_access, realms}``."""

    runs: list[PanelDreamRun] = Field(default_factory=list)
    withheld_by_access: bool = False


class PanelAuditVerdicts(_PanelListing):
    """``audit_verdicts``: open usage-audit verdicts ``{realm, run_id, record_id, verdict, rationale, created_at_ms}``."""

    verdicts: list[PanelAuditVerdict] = Field(default_factory=list)


class PanelScope(OpenModel):
    """One scope of the overview: counts by status, body bytes, floors and pressure."""

    realm: str
    scope_kind: str
    scope_key: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    records: int = 0
    body_bytes: int = 0
    pressure: dict[str, Any] = Field(default_factory=dict)


class PanelOverview(_PanelListing):
    """``overview``: ``{scopes, totals, floors, realms}``."""

    scopes: list[PanelScope] = Field(default_factory=list)
    totals: dict[str, Any] = Field(default_factory=dict)
    floors: dict[str, Any] = Field(default_factory=dict)


class PanelProposals(_PanelListing):
    """``proposals``: pending mob/operator proposals, bodies withheld."""

    proposals: list[PanelProposal] = Field(default_factory=list)


class PanelInjection(_PanelRow):
    """One injection-ledger row: ``{realm, injection_id, record_id, identity, session_key, surface, at_ms}``."""

    record_id: str
    identity: str | None = None
    session_key: str | None = None
    surface: str | None = None
    at_ms: int | None = None


class PanelInjections(_PanelListing):
    """``injections``: newest first."""

    injections: list[PanelInjection] = Field(default_factory=list)


class PanelHarvests(_PanelListing):
    """``harvests``: pending exit-interview harvests ``{realm, identity, session_key, cause, retired_at_ms, status}``."""

    harvests: list[PanelHarvest] = Field(default_factory=list)
