"""Typed results of the console panel reads ``meta/memory/panel/*`` (seed: "Console Memory panel";
docs/rpc.md, "Console panel methods"). List rows are body-free (``body_bytes`` stands in);
``realms`` lists the realms the panel knows. Each is the method's result model
(:mod:`meta_memory.rpc.results_review`) opened (:class:`OpenModel`), nested members re-typed to their
opened models."""

from __future__ import annotations

from collections.abc import Sequence

from ...rpc import results_review as wire
from ._base import OPEN, OpenModel
from .agent_memory import ScopeRef, StatusRef

__all__ = ["PanelPendingForget", "PanelPromotion", "PanelAuditVerdict", "PanelProposal", "PanelHarvest",
           "PanelRecord", "PanelRecordBody", "PanelChainRecord", "PanelRecordPage", "PanelRecordDetail",
           "PanelQuarantine", "PanelQuarantineRecord", "PanelDreamSummary", "PanelDreams", "PanelDreamRun", "PanelDreamRuns",
           "PanelAuditVerdicts", "PanelPressure", "PanelScope", "PanelTotals", "PanelFloors", "PanelOverview",
           "PanelProposals", "PanelInjection", "PanelInjections", "PanelHarvests"]


class PanelRecord(wire.RecordRow, OpenModel):
    """A record row: ``{id, scope, kind, title, description, tags, metadata, provenance, trust, status:
    {status, reason?}, derived_from, created_at_ms, updated_at_ms, usage, ever_quarantined, expires_at_ms,
    body_bytes}`` (``scope.realm`` names its realm)."""

    model_config = OPEN
    scope: ScopeRef
    status: StatusRef

    @property
    def state(self) -> str:
        """The status name (``active``, ``quarantined``, ``superseded``, ``tombstoned``)."""
        return self.status.status


class PanelRecordBody(wire.RecordDetail, PanelRecord):
    """``meta/memory/panel/record``'s record: a row with its ``body`` and ``content_hash``."""

    model_config = OPEN


class PanelChainRecord(wire.ChainRow, PanelRecord):
    """A version of the record's supersede chain, with its ``chain_role``."""

    model_config = OPEN


class PanelInjection(wire.InjectionRow, OpenModel):
    """One injection-ledger row: ``{realm, record_id, identity, session_key, surface, at_ms}``."""

    model_config = OPEN


class PanelRecordPage(wire.PanelRecordsResult, OpenModel):
    """``records``: newest updated first; pass ``next_cursor`` back as ``cursor`` (``None`` at the end)."""

    model_config = OPEN
    records: Sequence[PanelRecord]


class PanelRecordDetail(wire.PanelRecordResult, OpenModel):
    """``record``: the record with body and content hash, its supersede ``chain`` and ``injections``."""

    model_config = OPEN
    record: PanelRecordBody
    chain: Sequence[PanelChainRecord]
    injections: Sequence[PanelInjection]


class PanelPromotion(wire.PromotionRow, OpenModel):
    """A pending gated promotion: ``{realm, pending_id, record_id, scope_kind, scope_key, rationale, status,
    created_at_ms}``."""

    model_config = OPEN


class PanelPendingForget(wire.PendingForgetRow, OpenModel):
    """A held forget awaiting review: ``{realm, forget_id, memory_id, scope_kind, scope_key, title,
    record_status, content_hash, requested_by, reason, created_at_ms}``."""

    model_config = OPEN


class PanelQuarantineRecord(wire.QuarantineRow, PanelRecord):
    """A quarantined row: a :class:`PanelRecord` plus ``content_hash``, the value to pass as
    ``memory_quarantine_decide(..., expected_content_hash=...)`` (``None`` from a store that does not
    read it; ``memory_panel_record(id).record.content_hash`` then gives it)."""

    model_config = OPEN


class PanelQuarantine(wire.PanelQuarantineResult, OpenModel):
    """``quarantine``: quarantined rows, pending gated promotions and held forgets."""

    model_config = OPEN
    records: Sequence[PanelQuarantineRecord]
    pending_promotions: Sequence[PanelPromotion]
    pending_forgets: Sequence[PanelPendingForget]


class PanelDreamSummary(wire.DreamSummaryRow, OpenModel):
    """One dream summarised from its audit rows."""

    model_config = OPEN


class PanelDreams(wire.PanelDreamsResult, OpenModel):
    """``dreams``: ``{runs, withheld_by_access, realms}``."""

    model_config = OPEN
    runs: Sequence[PanelDreamSummary]


class PanelDreamRun(wire.DreamRunRow, OpenModel):
    """One durable dream-run row."""

    model_config = OPEN


class PanelDreamRuns(wire.PanelDreamRunsResult, OpenModel):
    """``dream_runs``: ``{runs, withheld_by_access, realms}``."""

    model_config = OPEN
    runs: Sequence[PanelDreamRun]


class PanelAuditVerdict(wire.AuditVerdictRow, OpenModel):
    """An open usage-audit verdict: ``{realm, run_id, record_id, verdict, rationale, created_at_ms}``."""

    model_config = OPEN


class PanelAuditVerdicts(wire.PanelAuditVerdictsResult, OpenModel):
    """``audit_verdicts``: open usage-audit verdicts."""

    model_config = OPEN
    verdicts: Sequence[PanelAuditVerdict]


class PanelPressure(wire.Pressure, OpenModel):
    """A scope's pressure: ``{records, bytes, over_floor}``."""

    model_config = OPEN


class PanelScope(wire.ScopeOverview, OpenModel):
    """One scope of the overview: counts by status, body bytes, floors and pressure."""

    model_config = OPEN
    pressure: PanelPressure


class PanelTotals(wire.Totals, OpenModel):
    """The overview's totals: ``{records, body_bytes, counts, trust?}``."""

    model_config = OPEN


class PanelFloors(wire.Floors, OpenModel):
    """The retention floors: ``{records, bytes}``."""

    model_config = OPEN


class PanelOverview(wire.PanelOverviewResult, OpenModel):
    """``overview``: ``{scopes, totals, floors, realms}``."""

    model_config = OPEN
    scopes: Sequence[PanelScope]
    totals: PanelTotals
    floors: PanelFloors


class PanelProposal(wire.PanelProposalRow, OpenModel):
    """A pending proposal row (no body): ``{realm, proposal_id, scope_kind, scope_key, status, created_at_ms,
    author, kind, title, body_bytes, tainted}``."""

    model_config = OPEN


class PanelProposals(wire.PanelProposalsResult, OpenModel):
    """``proposals``: pending mob/operator proposals, bodies withheld."""

    model_config = OPEN
    proposals: Sequence[PanelProposal]


class PanelInjections(wire.PanelInjectionsResult, OpenModel):
    """``injections``: newest first."""

    model_config = OPEN
    injections: Sequence[PanelInjection]


class PanelHarvest(wire.HarvestRow, OpenModel):
    """A pending exit-interview harvest: ``{realm, identity, session_key, cause, retired_at_ms, status}``."""

    model_config = OPEN


class PanelHarvests(wire.PanelHarvestsResult, OpenModel):
    """``harvests``: pending exit-interview harvests."""

    model_config = OPEN
    harvests: Sequence[PanelHarvest]
