"""Review: ``meta/memory/quarantine/decide``, gating, the steward's dream, harvests and proposals.

Seed: "Reviewing quarantined records", "Conflict detection". The reviewer of a
decision is the authenticated principal of the call (``ctx.principal``), never
a caller-supplied name (a ``reviewer`` param is refused as an unknown field).
Each method's params are one model here, with the reference's messages (§6 "Params"); the handlers hand
the parsed values to :class:`~meta_memory.review.service.ReviewService`, which never parses params.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from ...access.requirements import Requirement, anywhere, identity_resource, on_identity, requires, unscoped
from ...access.resources import Resources
from ...agent_memory.fields import content_hash_ref, memory_id_ref
from ...agent_memory.secrets import scan_text, secret_rule
from ...errors import echo as echo_name
from ...identity import parse_identity
from ...ledger.normalise import name_rule as ledger_name_rule
from ...ledger.normalise import trim as ledger_trim
from ...limits import MAX_REASON_BYTES
from ...review.authority import ReviewAuthority
from .. import results_review as R
from ..params import Params, RealmDefaulted, required_text
from ..registry import CallContext, MethodTable
from ..session_params import SessionParams
from .agent_memory import agent_memory_off, caller_manages

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime import Runtime

#: ``meta/memory/proposals/list``'s ``limit``: the default, and the most one page holds (a larger
#: ``limit`` is lowered to it).
DEFAULT_PROPOSALS_LIMIT = 50
MAX_PROPOSALS_LIMIT = 200
#: the statuses ``meta/memory/proposals/list`` filters on
_PROPOSAL_STATUSES = ("pending", "held", "accepted", "rejected")


def _reason(value: Any, name: str) -> str | None:
    """An optional reason (``rationale``): a string when provided, trimmed (blank means none), at most
    :data:`~meta_memory.limits.MAX_REASON_BYTES` bytes, and no credential: a decision's rationale is durable
    (its audit row, and every replay's answer repeats it), so it meets the one secret scanner every stored
    text meets (refused naming the secret class, never the text)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string when provided")
    text = value.strip() or None
    if text is not None and len(text.encode("utf-8", "surrogatepass")) > MAX_REASON_BYTES:
        raise ValueError(f"{name} must be at most {MAX_REASON_BYTES} bytes")
    if text is not None and (secret_class := scan_text(text)) is not None:
        raise ValueError(secret_rule(name, secret_class))
    return text


def _text(value: Any, rule: str) -> str:
    """A required non-blank string, trimmed; ``rule`` is the refusal's message."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(rule)
    return value.strip()


def _choice(value: Any, choices: tuple[str, ...], rule: str, *, echo: bool = False) -> str:
    """One of ``choices`` after trimming; ``echo`` adds the refused string to the rule (``(got '<v>')``)."""
    if not isinstance(value, str):
        raise ValueError(rule)
    choice = value.strip()
    if choice not in choices:
        raise ValueError(f"{rule} (got '{echo_name(choice)}')" if echo else rule)
    return choice


class _Rationale(Params):
    """``rationale?``: why, at most :data:`~meta_memory.limits.MAX_REASON_BYTES` bytes (blank means none)."""

    rationale: Any = Field(default=None, json_schema_extra={"type": "string"},
                           description=f"at most {MAX_REASON_BYTES} bytes")

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, value: Any) -> str | None:
        return _reason(value, "rationale")


class DecideParams(RealmDefaulted, _Rationale):
    """``meta/memory/quarantine/decide``: ``{realm?, identity, memory_id, verdict, expected_content_hash,
    rationale?}`` (reference §6 "Params"). There is no ``reviewer`` member: the reviewer is the
    authenticated principal, never a caller-supplied name (a ``reviewer`` is an unknown field)."""

    identity: Any = required_text(description="the identity whose record is reviewed")
    memory_id: Any = required_text()
    # reference §6 words these two refusals, a missing member's too
    verdict: Any = required_text(enum=["release", "tombstone"], missing="verdict must be 'release' or 'tombstone'")
    expected_content_hash: Any = required_text(
        missing="expected_content_hash must be the non-empty content_hash of the reviewed record",
        description="the content_hash of the record as reviewed: 64 lowercase hexadecimal characters")

    @field_validator("identity", mode="before")
    @classmethod
    def _identity(cls, value: Any) -> str:
        return parse_identity(value)

    @field_validator("memory_id", mode="before")
    @classmethod
    def _memory_id(cls, value: Any) -> str:
        return memory_id_ref(_text(value, "memory_id must not be empty"))

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: Any) -> str:
        return _choice(value, ("release", "tombstone"), "verdict must be 'release' or 'tombstone'", echo=True)

    @field_validator("expected_content_hash", mode="before")
    @classmethod
    def _expected(cls, value: Any) -> str:
        return content_hash_ref(_text(value, "expected_content_hash must be the non-empty content_hash of the "
                                         "reviewed record"))


class GatingDecideParams(RealmDefaulted):
    """``meta/gating/decide``: ``{realm?, pending_id, decision: approve|deny}``."""

    pending_id: Any = required_text()
    decision: Any = required_text(enum=["approve", "deny"])

    @field_validator("pending_id", mode="before")
    @classmethod
    def _pending_id(cls, value: Any) -> str:
        return _text(value, "pending_id must not be empty")

    @field_validator("decision", mode="before")
    @classmethod
    def _decision(cls, value: Any) -> str:
        return _choice(value, ("approve", "deny"), "decision must be 'approve' or 'deny'")


class GatingCheckParams(Params):
    """``meta/gating/check``: ``{entity, topic, store?}`` (trimmed; a blank ``store`` means none)."""

    entity: Any = required_text()
    topic: Any = required_text()
    store: Any = Field(default=None, json_schema_extra={"type": "string"})

    @field_validator("entity", "topic", mode="before")
    @classmethod
    def _name(cls, value: Any, info: Any) -> str:
        name = _text(value, f"{info.field_name} must be a non-empty string")
        rule = ledger_name_rule(info.field_name, ledger_trim(name))  # the index's rule: one spelling per name
        if rule is not None:
            raise ValueError(rule)
        return name

    @field_validator("store", mode="before")
    @classmethod
    def _store(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("store must be a string when provided")
        return value.strip() or None


class DreamParams(RealmDefaulted):
    """``meta/memory/steward/dream``: ``{realm?}``."""


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


class ProposalListParams(RealmDefaulted):
    """``meta/memory/proposals/list``: ``{realm?, status?, limit?}`` (``limit`` 1.., default
    :data:`DEFAULT_PROPOSALS_LIMIT`, lowered to :data:`MAX_PROPOSALS_LIMIT`)."""

    status: Any = Field(default=None, json_schema_extra={"type": "string",
                                                         "enum": list(_PROPOSAL_STATUSES)})
    limit: Any = Field(default=DEFAULT_PROPOSALS_LIMIT, json_schema_extra={"type": "integer"})

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("status must be a string when provided")
        status = value.strip() or None
        if status is not None and status not in _PROPOSAL_STATUSES:
            raise ValueError(f"unknown status '{echo_name(str(status))}' (one of: {', '.join(_PROPOSAL_STATUSES)}; "
                             "omit it for any)")
        return status

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: Any) -> int:
        if value is None:
            return DEFAULT_PROPOSALS_LIMIT
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError("limit must be a positive integer when provided")
        return min(value, MAX_PROPOSALS_LIMIT)


class ProposalDecideParams(RealmDefaulted, _Rationale):
    """``meta/memory/proposals/decide``: ``{realm?, proposal_id, action: accept|hold|reject, rationale?}``."""

    proposal_id: Any = required_text()
    action: Any = required_text(enum=["accept", "hold", "reject"])

    @field_validator("proposal_id", mode="before")
    @classmethod
    def _proposal_id(cls, value: Any) -> str:
        return _text(value, "proposal_id must not be empty")

    @field_validator("action", mode="before")
    @classmethod
    def _action(cls, value: Any) -> str:
        return _choice(value, ("accept", "hold", "reject"), "action must be 'accept', 'hold' or 'reject'")


@requires("memory.quarantine.review + agent.view + agent.memory.read, then agent.memory.write (release) "
          "or agent.memory.delete (tombstone), on the identity",
          entry=[["memory.quarantine.review"], ["agent.view"], ["agent.memory.read"],
                 ["agent.memory.write", "agent.memory.delete"]])
def _decide_requires(p: DecideParams, resources: Resources) -> list[Requirement]:
    res = identity_resource(p, resources)
    last = "agent.memory.write" if p.verdict == "release" else "agent.memory.delete"
    return [Requirement(a, res) for a in ("memory.quarantine.review", "agent.view", "agent.memory.read", last)]


def _review_enabled(runtime: "Runtime") -> bool:
    return runtime.review is not None


def _principal(ctx: CallContext) -> str | None:
    return getattr(ctx.principal, "name", None)


def _authority(runtime: "Runtime", ctx: CallContext) -> ReviewAuthority:
    return ReviewAuthority.of(runtime.access, ctx.principal)


def register(table: MethodTable) -> None:
    on = _review_enabled

    @table.method("meta/memory/quarantine/decide", DecideParams, requires=_decide_requires,
                  mutating=True, available=on, unavailable_hint=agent_memory_off, result=R.DecideResult)
    def decide(runtime: "Runtime", ctx: CallContext, p: DecideParams) -> dict[str, Any]:
        """Release or tombstone a quarantined record (one transaction; -32043 on refusal)."""
        return runtime.need_review().decide(p.realm, p.identity, p.memory_id, p.verdict, p.expected_content_hash,
                                     p.rationale, principal=_principal(ctx))

    @table.method("meta/gating/decide", GatingDecideParams,
                  requires=anywhere("memory.quarantine.review"), mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=R.GatingDecideResult)
    def gating_decide(runtime: "Runtime", ctx: CallContext, p: GatingDecideParams) -> dict[str, Any]:
        """Approve (publish the staged batch) or deny (discard it) a gated promotion."""
        return runtime.need_review().gating_decide(p.realm, p.pending_id, p.decision, _authority(runtime, ctx))

    @table.method("meta/gating/check", GatingCheckParams, requires=unscoped("ledger.read"), mutating=False,
                  result=R.GatingCheckResult)
    def gating_check(runtime: "Runtime", ctx: CallContext, p: GatingCheckParams) -> dict[str, Any]:
        """``{allowed, reason?, conflict?}``: refused while a conflict signal is active in the ledger."""
        from ...review import promotions

        return promotions.gating_check(runtime.ledger, p.entity, p.topic, p.store).to_dict()

    @table.method("meta/memory/steward/dream", DreamParams,
                  requires=anywhere("memory.quarantine.review"), mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=R.DreamResult)
    def dream(runtime: "Runtime", ctx: CallContext, p: DreamParams) -> dict[str, Any]:
        """Run one steward dream over a realm now."""
        return runtime.need_review().dream(p.realm, _authority(runtime, ctx), caller_manages(runtime, ctx))

    @table.method("meta/session/retire", RetireParams, requires=on_identity("agent.session.manage"),
                  mutating=True, available=on, unavailable_hint=agent_memory_off,
                  result=R.RetireResult)
    def retire(runtime: "Runtime", ctx: CallContext, p: RetireParams) -> dict[str, Any]:
        """Record an exit-interview harvest of the session for the next dream, in the call's realm
        (``[agent_memory] realm`` when it names none)."""
        realm = runtime.default_realm
        return runtime.need_review().retire(p.session_ref(realm, lambda: runtime.access.digest_secret), p.cause)

    @table.method("meta/memory/proposals/list", ProposalListParams,
                  requires=unscoped("agent.memory.read"), mutating=False, available=on,
                  unavailable_hint=agent_memory_off,
                  result=R.ProposalsListResult)
    def proposals(runtime: "Runtime", ctx: CallContext, p: ProposalListParams) -> dict[str, Any]:
        """Proposals (body-free) by status."""
        return runtime.need_review().proposals(p.realm, p.status, p.limit, runtime.access.visibility(ctx.principal))

    @table.method("meta/memory/proposals/decide", ProposalDecideParams,
                  requires=anywhere("mob.memory.commit"), mutating=True, available=on,
                  unavailable_hint=agent_memory_off,
                  result=R.ProposalDecideResult)
    def proposals_decide(runtime: "Runtime", ctx: CallContext, p: ProposalDecideParams) -> dict[str, Any]:
        """Accept (commit into mob scope), hold or reject a proposal."""
        return runtime.need_review().decide_proposal(p.realm, p.proposal_id, p.action, p.rationale,
                                              principal=_principal(ctx), authority=_authority(runtime, ctx))
