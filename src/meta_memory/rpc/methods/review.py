"""Review: ``meta/memory/quarantine/decide``, gating, the steward's dream, harvests and proposals.

Seed: "Reviewing quarantined records", "Conflict detection". The reviewer of a
decision is the authenticated principal of the call (``ctx.principal``), never
a caller-supplied name (a ``reviewer`` param is refused as an unknown field).
Params are parsed by :mod:`meta_memory.review.params` with the reference's rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from ...access.requirements import Requirement, anywhere, identity_resource, on_identity, requires, unscoped
from ...access.resources import Resources
from ...agent_memory.secrets import scan_text, secret_rule
from ...limits import MAX_REASON_BYTES
from ...review import params as rp
from ...review.authority import ReviewAuthority
from .. import results_review as R
from ..params import Params, required_text
from ..registry import CallContext, MethodTable
from ..session_params import SessionParams

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime


@dataclass(frozen=True)
class Parsed:
    """Params parsed by :mod:`meta_memory.review.params` (``typed``, judged by access control)
    alongside the request's ``raw`` params (handed to the review service, which owns them)."""

    typed: Any
    raw: Any
    parse: Callable[[Any], Any]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.typed, name)

    def in_realm(self, default_realm: str) -> Parsed:
        """These params with ``default_realm`` as their ``realm`` when the call named none (the
        :class:`~meta_memory.rpc.params.DefaultsRealm` rule: the gateway's ``[agent_memory] realm``, as
        for every other method); params without a realm member are returned as they are."""
        raw = {} if self.raw is None else self.raw
        if not hasattr(self.typed, "realm") or not isinstance(raw, dict) or raw.get("realm") is not None:
            return self
        filled = {**raw, "realm": default_realm}
        return Parsed(self.parse(filled), filled, self.parse)


def _parsed(parse: Callable[[Any], Any]) -> Callable[[Any], Parsed]:
    return lambda raw: Parsed(parse(raw), raw, parse)


@requires("memory.quarantine.review + agent.view + agent.memory.read, then agent.memory.write (release) "
          "or agent.memory.delete (tombstone), on the identity")
def _decide_requires(p: Parsed, resources: Resources) -> list[Requirement]:
    res = identity_resource(p, resources)
    last = "agent.memory.write" if p.verdict == "release" else "agent.memory.delete"
    return [Requirement(a, res) for a in ("memory.quarantine.review", "agent.view", "agent.memory.read", last)]


# The shapes of the params below document the methods (``rpc.discover``); the rules are applied by
# :mod:`meta_memory.review.params`, and a test checks both accept exactly the same member names.


class _Realm(Params):
    realm: str | None = None


class DecideDoc(_Realm):
    identity: str = required_text()
    memory_id: str = required_text()
    verdict: Literal["release", "tombstone"]
    expected_content_hash: str = required_text(description="the content_hash of the record as reviewed")
    rationale: str | None = Field(default=None, description=f"at most {MAX_REASON_BYTES} bytes")


class GatingDecideDoc(_Realm):
    pending_id: str = required_text()
    decision: Literal["approve", "deny"]


class GatingCheckDoc(Params):
    entity: str = required_text()
    topic: str = required_text()
    store: str | None = None


class RetireParams(SessionParams):
    """``meta/session/retire``: ``{identity, realm?, session_key?, cause}`` (``cause`` at most 400 bytes,
    no secret: it is copied into the rationale of every record a harvest promotes)."""

    cause: Any = required_text(description=f"at most {MAX_REASON_BYTES} bytes")

    @field_validator("cause", mode="before")
    @classmethod
    def _cause(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("cause must be a non-empty string")
        cause = value.strip()
        if len(cause.encode("utf-8", "surrogatepass")) > MAX_REASON_BYTES:
            raise ValueError(f"cause must be at most {MAX_REASON_BYTES} bytes")
        secret_class = scan_text(cause)  # the one scanner for every write
        if secret_class is not None:
            raise ValueError(secret_rule("cause", secret_class))
        return cause


class ProposalListDoc(_Realm):
    status: Literal["pending", "held", "accepted", "rejected"] | None = None
    limit: int | None = None


class ProposalDecideDoc(_Realm):
    proposal_id: str = required_text()
    action: Literal["accept", "hold", "reject"]
    rationale: str | None = None


def _review_enabled(runtime: "Runtime") -> bool:
    return runtime.review is not None


def _principal(ctx: CallContext) -> str | None:
    return getattr(ctx.principal, "name", None)


def _authority(runtime: "Runtime", ctx: CallContext) -> ReviewAuthority:
    return ReviewAuthority.of(runtime.access, ctx.principal)


def register(table: MethodTable) -> None:
    on = _review_enabled

    @table.method("meta/memory/quarantine/decide", _parsed(rp.parse_decide_params), requires=_decide_requires,
                  mutating=True, available=on,
                  result=R.DecideResult, params_model=DecideDoc)
    def decide(runtime: "Runtime", ctx: CallContext, p: Parsed) -> dict[str, Any]:
        """Release or tombstone a quarantined record (one transaction; -32043 on refusal)."""
        return runtime.review.decide(p.raw, principal=_principal(ctx))

    @table.method("meta/gating/decide", _parsed(rp.parse_gating_decide_params),
                  requires=anywhere("memory.quarantine.review"), mutating=True, available=on,
                  result=R.GatingDecideResult, params_model=GatingDecideDoc)
    def gating_decide(runtime: "Runtime", ctx: CallContext, p: Parsed) -> dict[str, Any]:
        """Approve (publish the staged batch) or deny (discard it) a gated promotion."""
        return runtime.review.gating_decide(p.raw, _authority(runtime, ctx))

    @table.method("meta/gating/check", rp.parse_gating_check_params, requires=unscoped("ledger.read"), mutating=False,
                  result=R.GatingCheckResult, params_model=GatingCheckDoc)
    def gating_check(runtime: "Runtime", ctx: CallContext, p: rp.GatingCheckParams) -> dict[str, Any]:
        """``{allowed, reason?, conflict?}``: refused while a conflict signal is active in the ledger."""
        from ...review import promotions

        return promotions.gating_check(runtime.ledger, p.entity, p.topic, p.store).to_dict()

    @table.method("meta/memory/steward/dream", _parsed(rp.parse_dream_params),
                  requires=anywhere("memory.quarantine.review"), mutating=True, available=on,
                  result=R.DreamResult, params_model=_Realm)
    def dream(runtime: "Runtime", ctx: CallContext, p: Parsed) -> dict[str, Any]:
        """Run one steward dream over a realm now."""
        return runtime.review.dream(p.raw, _authority(runtime, ctx))

    @table.method("meta/session/retire", RetireParams, requires=on_identity("agent.session.manage"),
                  mutating=True, available=on,
                  result=R.RetireResult)
    def retire(runtime: "Runtime", ctx: CallContext, p: RetireParams) -> dict[str, Any]:
        """Record an exit-interview harvest of the session for the next dream, in the call's realm
        (``[agent_memory] realm`` when it names none)."""
        realm = runtime.default_realm
        return runtime.review.retire(p.session_ref(realm), p.cause)

    @table.method("meta/memory/proposals/list", _parsed(rp.parse_proposal_list_params),
                  requires=unscoped("agent.memory.read"), mutating=False, available=on,
                  result=R.ProposalsListResult, params_model=ProposalListDoc)
    def proposals(runtime: "Runtime", ctx: CallContext, p: Parsed) -> dict[str, Any]:
        """Proposals (body-free) by status."""
        return runtime.review.proposals(p.raw, runtime.access.visibility(ctx.principal))

    @table.method("meta/memory/proposals/decide", _parsed(rp.parse_proposal_action_params),
                  requires=anywhere("mob.memory.commit"), mutating=True, available=on,
                  result=R.ProposalDecideResult, params_model=ProposalDecideDoc)
    def proposals_decide(runtime: "Runtime", ctx: CallContext, p: Parsed) -> dict[str, Any]:
        """Accept (commit into mob scope), hold or reject a proposal."""
        return runtime.review.decide_proposal(p.raw, principal=_principal(ctx), authority=_authority(runtime, ctx))
