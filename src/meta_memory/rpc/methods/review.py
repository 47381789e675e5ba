"""Review: ``meta/memory/quarantine/decide``, gating, the steward's dream, harvests and proposals.

Seed: "Reviewing quarantined records", "Conflict detection". The reviewer of a
decision is the authenticated principal of the call (``ctx.principal``), never
a caller-supplied name (a ``reviewer`` param is refused as an unknown field).
Params are parsed by :mod:`meta_memory.review.params` with the reference's rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..registry import CallContext, MethodTable

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime


def _raw(params: Any) -> Any:
    return params


def _review_enabled(runtime: "Runtime") -> bool:
    return getattr(runtime, "review", None) is not None


def _principal(ctx: CallContext) -> str | None:
    return getattr(ctx.principal, "name", None)


def _authority(runtime: "Runtime", ctx: CallContext) -> Any:
    from ...review.authority import ReviewAuthority

    return ReviewAuthority.of(getattr(runtime, "access", None), ctx.principal)


def register(table: MethodTable) -> None:
    on = _review_enabled

    @table.method("meta/memory/quarantine/decide", _raw, available=on)
    def decide(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """Release or tombstone a quarantined record (one transaction; -32043 on refusal)."""
        return runtime.review.decide(raw, principal=_principal(ctx))

    @table.method("meta/gating/decide", _raw, available=on)
    def gating_decide(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """Approve (publish the staged batch) or deny (discard it) a gated promotion."""
        return runtime.review.gating_decide(raw, _authority(runtime, ctx))

    @table.method("meta/gating/check", _raw)
    def gating_check(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """``{allowed, reason?, conflict?}``: refused while a conflict signal is active in the ledger."""
        from ...review import params as review_params
        from ...review import promotions

        p = review_params.parse_gating_check_params(raw)
        return promotions.gating_check(runtime.ledger, p.entity, p.topic, p.store).to_dict()

    @table.method("meta/memory/steward/dream", _raw, available=on)
    def dream(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """Run one steward dream over a realm now."""
        return runtime.review.dream(raw, _authority(runtime, ctx))

    @table.method("meta/session/retire", _raw, available=on)
    def retire(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """Record an exit-interview harvest for the next dream."""
        return runtime.review.retire(raw)

    @table.method("meta/memory/proposals/list", _raw, available=on)
    def proposals(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """Proposals (body-free) by status."""
        return runtime.review.proposals(raw, runtime.access.visibility(ctx.principal))

    @table.method("meta/memory/proposals/decide", _raw, available=on)
    def proposals_decide(runtime: "Runtime", ctx: CallContext, raw: Any) -> dict[str, Any]:
        """Accept (commit into mob scope), hold or reject a proposal."""
        return runtime.review.decide_proposal(raw, principal=_principal(ctx), authority=_authority(runtime, ctx))
