"""Params of the review RPC methods, parsed by hand so the messages are exactly the reference's (§6 "Params").

Every parser takes the raw JSON-RPC ``params`` value and returns a frozen
dataclass, or raises :class:`~meta_memory.errors.InvalidParams` (-32602,
``Invalid params: <rule>``, ``data.field``). Unknown fields are refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from meta_memory.agent_memory.fields import memory_id_ref
from meta_memory.errors import InvalidParams
from meta_memory.identity import parse_identity, parse_realm
from meta_memory.limits import MAX_REASON_BYTES

__all__ = [
    "DecideParams",
    "GatingDecideParams",
    "GatingCheckParams",
    "DreamParams",
    "ProposalActionParams",
    "ProposalListParams",
    "parse_decide_params",
    "parse_gating_decide_params",
    "parse_gating_check_params",
    "parse_dream_params",
    "parse_proposal_action_params",
    "parse_proposal_list_params",
]

MAX_LIST_LIMIT = 200
DEFAULT_LIST_LIMIT = 50


def _object(raw: Any, allowed: Iterable[str]) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("params must be an object", "params")
    allowed_set = set(allowed)
    for key in raw:
        if key not in allowed_set:
            raise InvalidParams(f"unknown field '{key}'", key)
    return raw


def _identity(raw: dict[str, Any], key: str = "identity") -> str:
    try:
        return parse_identity(raw.get(key))
    except ValueError as exc:
        raise InvalidParams(str(exc), key) from None


def _realm(raw: dict[str, Any]) -> str:
    try:
        return parse_realm(raw.get("realm"))
    except ValueError as exc:
        raise InvalidParams(str(exc), "realm") from None


def _required_text(raw: dict[str, Any], key: str, rule: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidParams(rule, key)
    return value.strip()


def _optional_text(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"{key} must be a string when provided", key)
    value = value.strip()
    return value or None


def _limit(raw: dict[str, Any]) -> int:
    value = raw.get("limit")
    if value is None:
        return DEFAULT_LIST_LIMIT
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidParams("limit must be a positive integer when provided", "limit")
    return min(value, MAX_LIST_LIMIT)


# --------------------------------------------------------------------------- decide


@dataclass(frozen=True, slots=True)
class DecideParams:
    """``meta/memory/quarantine/decide`` params after parsing."""

    realm: str
    identity: str
    memory_id: str
    verdict: str
    expected_content_hash: str
    rationale: str | None


def parse_decide_params(raw: Any) -> DecideParams:
    """Parse ``{realm?, identity, memory_id, verdict, expected_content_hash, rationale?}``.

    Rules (messages as in reference §6): identity trimmed and valid; realm
    defaults to ``"default"`` (over RPC the gateway's ``[agent_memory] realm`` is filled in before
    this runs, :class:`~meta_memory.rpc.params.DefaultsRealm`); ``memory_id`` non-empty; ``verdict`` trimmed,
    ``release`` | ``tombstone`` (a non-string: ``verdict must be 'release' or
    'tombstone'``; another string: ``... (got '<v>')``); ``expected_content_hash``
    non-empty; ``rationale`` optional string, trimmed, at most 400 bytes, empty
    means none. There is no ``reviewer`` field: the reviewer is the
    authenticated principal, never a caller-supplied name.
    """
    data = _object(raw, ("realm", "identity", "memory_id", "verdict", "expected_content_hash", "rationale"))
    identity = _identity(data)
    realm = _realm(data)
    memory_id = _required_text(data, "memory_id", "memory_id must not be empty")
    try:
        memory_id = memory_id_ref(memory_id)
    except ValueError as exc:
        raise InvalidParams(str(exc), "memory_id") from None
    verdict_raw = data.get("verdict")
    if not isinstance(verdict_raw, str):
        raise InvalidParams("verdict must be 'release' or 'tombstone'", "verdict")
    verdict = verdict_raw.strip()
    if verdict not in ("release", "tombstone"):
        raise InvalidParams(f"verdict must be 'release' or 'tombstone' (got '{verdict}')", "verdict")
    expected = _required_text(
        data,
        "expected_content_hash",
        "expected_content_hash must be the non-empty content_hash of the reviewed record",
    )
    rationale_raw = data.get("rationale")
    rationale: str | None = None
    if rationale_raw is not None:
        if not isinstance(rationale_raw, str):
            raise InvalidParams("rationale must be a string when provided", "rationale")
        rationale = rationale_raw.strip() or None
        if rationale is not None and len(rationale.encode("utf-8", "surrogatepass")) > MAX_REASON_BYTES:
            raise InvalidParams(f"rationale must be at most {MAX_REASON_BYTES} bytes", "rationale")
    return DecideParams(realm, identity, memory_id, verdict, expected, rationale)


# --------------------------------------------------------------------------- gating


@dataclass(frozen=True, slots=True)
class GatingDecideParams:
    """``meta/gating/decide`` params: ``{realm?, pending_id, decision: approve|deny}``."""

    realm: str
    pending_id: str
    decision: str


def parse_gating_decide_params(raw: Any) -> GatingDecideParams:
    data = _object(raw, ("realm", "pending_id", "decision"))
    realm = _realm(data)
    pending_id = _required_text(data, "pending_id", "pending_id must not be empty")
    decision = data.get("decision")
    if not isinstance(decision, str) or decision.strip() not in ("approve", "deny"):
        raise InvalidParams("decision must be 'approve' or 'deny'", "decision")
    return GatingDecideParams(realm, pending_id, decision.strip())


@dataclass(frozen=True, slots=True)
class GatingCheckParams:
    """``meta/gating/check`` params: ``{entity, topic, store?}``."""

    entity: str
    topic: str
    store: str | None


def parse_gating_check_params(raw: Any) -> GatingCheckParams:
    data = _object(raw, ("entity", "topic", "store"))
    entity = _required_text(data, "entity", "entity must be a non-empty string")
    topic = _required_text(data, "topic", "topic must be a non-empty string")
    return GatingCheckParams(entity, topic, _optional_text(data, "store"))


# --------------------------------------------------------------------------- dream, retire


@dataclass(frozen=True, slots=True)
class DreamParams:
    """``meta/memory/steward/dream`` params: ``{realm?}``."""

    realm: str


def parse_dream_params(raw: Any) -> DreamParams:
    data = _object(raw, ("realm",))
    return DreamParams(_realm(data))


# --------------------------------------------------------------------------- proposals


@dataclass(frozen=True, slots=True)
class ProposalListParams:
    """``meta/memory/proposals/list`` params: ``{realm?, status?, limit?}``."""

    realm: str
    status: str | None
    limit: int


def parse_proposal_list_params(raw: Any) -> ProposalListParams:
    data = _object(raw, ("realm", "status", "limit"))
    status = _optional_text(data, "status")
    if status is not None and status not in ("pending", "held", "accepted", "rejected"):
        raise InvalidParams(f"unknown status '{status}'", "status")
    return ProposalListParams(_realm(data), status, _limit(data))


@dataclass(frozen=True, slots=True)
class ProposalActionParams:
    """``meta/memory/proposals/decide`` params: ``{realm?, proposal_id, action: accept|hold|reject, rationale?}``."""

    realm: str
    proposal_id: str
    action: str
    rationale: str | None


def parse_proposal_action_params(raw: Any) -> ProposalActionParams:
    data = _object(raw, ("realm", "proposal_id", "action", "rationale"))
    realm = _realm(data)
    proposal_id = _required_text(data, "proposal_id", "proposal_id must not be empty")
    action = data.get("action")
    if not isinstance(action, str) or action.strip() not in ("accept", "hold", "reject"):
        raise InvalidParams("action must be 'accept', 'hold' or 'reject'", "action")
    rationale = _optional_text(data, "rationale")
    if rationale is not None and len(rationale.encode("utf-8", "surrogatepass")) > MAX_REASON_BYTES:
        raise InvalidParams(f"rationale must be at most {MAX_REASON_BYTES} bytes", "rationale")
    return ProposalActionParams(realm, proposal_id, action.strip(), rationale)
