"""Staged mutation batches: the one shape every agent-memory write takes (reference §2D).

A batch is ``{realm, author, kind, ops}``; ``kind`` is ``fresh_write`` (the
default) or ``review_verdict``. Ops are internally tagged on ``op``:

- ``create{id?, scope, record, trust, derived_from, rationale?, created_at_ms?, updated_at_ms?}``
- ``supersede{id?, prior, record, trust, derived_from, rationale?}``
- ``tombstone{id, rationale?}``
- ``retier{id, trust, rationale?}``
- ``set_rank{id, rank?}``
- ``restore{record}``: an exported record landed as it was (``meta-memory import``); never raises trust

The op kind strings are also the ``audit.op_kind`` values. A batch is
validated (:mod:`meta_memory.agent_memory.validator`) and applied in one
transaction by a store; :class:`BatchReceipt` reports what happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Union

from meta_memory.agent_memory.model import (
    Author,
    MemoryRecord,
    NewMemoryRecord,
    Scope,
    Status,
    TrustTier,
)

__all__ = [
    "TOMBSTONE_RECREATE_WINDOW_MS",
    "BatchKind",
    "CreateOp",
    "SupersedeOp",
    "TombstoneOp",
    "RetierOp",
    "SetRankOp",
    "RestoreOp",
    "Op",
    "StagedBatch",
    "GateVerdict",
    "OpResult",
    "BatchReceipt",
    "op_from_json",
]

TOMBSTONE_RECREATE_WINDOW_MS = 7 * 24 * 60 * 60 * 1000


class BatchKind(StrEnum):
    FRESH_WRITE = "fresh_write"
    REVIEW_VERDICT = "review_verdict"


@dataclass(frozen=True, slots=True)
class CreateOp:
    """Create a record in ``scope``. ``id`` None mints ``mem-...``; timestamps None mean now.

    ``tainted_source``: the content comes from a tainted session through review (a proposal made from a
    tainted session, accepted or promoted): the record lands with the ``ever_quarantined`` marker, as a
    released quarantined write does, so it stays at ``agent_observed`` for good and its lineage shows."""

    scope: Scope
    record: NewMemoryRecord
    trust: TrustTier = TrustTier.AGENT_OBSERVED
    id: str | None = None
    derived_from: tuple[str, ...] = ()
    rationale: str | None = None
    created_at_ms: int | None = None
    updated_at_ms: int | None = None
    tainted_source: bool = False

    op = "create"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": "create"}
        if self.id is not None:
            out["id"] = self.id
        out.update(
            scope=self.scope.to_json(),
            record=self.record.to_json(),
            trust=self.trust.value,
            derived_from=list(self.derived_from),
            rationale=self.rationale,
        )
        if self.created_at_ms is not None:
            out["created_at_ms"] = self.created_at_ms
        if self.updated_at_ms is not None:
            out["updated_at_ms"] = self.updated_at_ms
        if self.tainted_source:
            out["tainted_source"] = True
        return out


@dataclass(frozen=True, slots=True)
class SupersedeOp:
    """Write a new version of ``prior`` (in the prior's scope); the prior becomes ``superseded{by}``."""

    prior: str
    record: NewMemoryRecord
    trust: TrustTier = TrustTier.AGENT_OBSERVED
    id: str | None = None
    derived_from: tuple[str, ...] = ()
    rationale: str | None = None

    op = "supersede"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": "supersede"}
        if self.id is not None:
            out["id"] = self.id
        out.update(
            prior=self.prior,
            record=self.record.to_json(),
            trust=self.trust.value,
            derived_from=list(self.derived_from),
            rationale=self.rationale,
        )
        return out


@dataclass(frozen=True, slots=True)
class TombstoneOp:
    """Tombstone record ``id`` (never deleted; out of recall and injection)."""

    id: str
    rationale: str | None = None

    op = "tombstone"

    def to_json(self) -> dict[str, Any]:
        return {"op": "tombstone", "id": self.id, "rationale": self.rationale}


@dataclass(frozen=True, slots=True)
class RetierOp:
    """Change the trust tier of record ``id``."""

    id: str
    trust: TrustTier
    rationale: str | None = None

    op = "retier"

    def to_json(self) -> dict[str, Any]:
        return {"op": "retier", "id": self.id, "trust": self.trust.value, "rationale": self.rationale}


@dataclass(frozen=True, slots=True)
class SetRankOp:
    """Set (or clear, with ``rank=None``) the working-set rank of record ``id``."""

    id: str
    rank: int | None = None

    op = "set_rank"

    def to_json(self) -> dict[str, Any]:
        return {"op": "set_rank", "id": self.id, "rank": self.rank}


@dataclass(frozen=True, slots=True)
class RestoreOp:
    """Land an exported ``record`` as it was: same id, scope, status, links and timestamps.

    The import path (``meta-memory import``). The validator checks it like a create (fields,
    secrets, scope, id not taken, links present) and only ever *lowers* its trust: to at most
    ``agent_verified``, and to at most ``agent_observed`` when its chain reaches untrusted or
    quarantined content or a link it cannot follow. Its ``usage`` is kept (recall ranks on it).
    """

    record: MemoryRecord
    rationale: str | None = None

    op = "restore"

    @property
    def id(self) -> str:
        return self.record.id

    def to_json(self) -> dict[str, Any]:
        return {"op": "restore", "record": self.record.to_json(), "rationale": self.rationale,
                "tombstoned_at_ms": self.record.tombstoned_at_ms, "rank_set_at_ms": self.record.rank_set_at_ms}


Op = Union[CreateOp, SupersedeOp, TombstoneOp, RetierOp, SetRankOp, RestoreOp]


def op_from_json(data: dict[str, Any]) -> Op:
    """Decode one op from its ``op``-tagged JSON; raises ``ValueError``."""
    if not isinstance(data, dict):
        raise ValueError("op must be an object")
    kind = data.get("op")
    rationale = data.get("rationale")
    if kind == "create":
        return CreateOp(
            id=data.get("id"),
            scope=Scope.from_json(data["scope"]),
            record=NewMemoryRecord.from_json(data["record"]),
            trust=TrustTier(data.get("trust", "agent_observed")),
            derived_from=tuple(data.get("derived_from") or ()),
            rationale=rationale,
            created_at_ms=data.get("created_at_ms"),
            updated_at_ms=data.get("updated_at_ms"),
            tainted_source=data.get("tainted_source") is True,
        )
    if kind == "supersede":
        return SupersedeOp(
            id=data.get("id"),
            prior=data["prior"],
            record=NewMemoryRecord.from_json(data["record"]),
            trust=TrustTier(data.get("trust", "agent_observed")),
            derived_from=tuple(data.get("derived_from") or ()),
            rationale=rationale,
        )
    if kind == "tombstone":
        return TombstoneOp(id=data["id"], rationale=rationale)
    if kind == "retier":
        return RetierOp(id=data["id"], trust=TrustTier(data["trust"]), rationale=rationale)
    if kind == "set_rank":
        return SetRankOp(id=data["id"], rank=data.get("rank"))
    if kind == "restore":
        from dataclasses import replace

        rec = replace(MemoryRecord.from_json(data["record"]), tombstoned_at_ms=data.get("tombstoned_at_ms"),
                      rank_set_at_ms=data.get("rank_set_at_ms"))
        return RestoreOp(record=rec, rationale=rationale)
    raise ValueError(f"unknown op '{kind}'")


@dataclass(frozen=True, slots=True)
class StagedBatch:
    """A batch of ops by one author for one realm.

    ``review`` (optional) is copied into every op's audit detail as
    ``detail.review`` (quarantine decisions record their review there).
    """

    realm: str
    author: Author
    ops: tuple[Op, ...]
    kind: BatchKind = BatchKind.FRESH_WRITE
    review: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "realm": self.realm,
            "author": self.author.to_json(),
            "kind": self.kind.value,
            "ops": [op.to_json() for op in self.ops],
        }
        if self.review is not None:
            out["review"] = self.review
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StagedBatch:
        return cls(
            realm=data["realm"],
            author=Author.from_json(data["author"]),
            kind=BatchKind(data.get("kind", "fresh_write")),
            ops=tuple(op_from_json(o) for o in data.get("ops") or ()),
            review=data.get("review"),
        )

    def evidence(self) -> list[Any]:
        """Every evidence ref cited by the batch's create/supersede records (for the write gate)."""
        refs: list[Any] = []
        for op in self.ops:
            if isinstance(op, (CreateOp, SupersedeOp)):
                refs.extend(op.record.provenance.evidence)
        return refs

    def quarantine_reason(self, gate: Any) -> str | None:
        """Why the write gate ``gate`` (a store ``WriteGate``, or ``None`` for none) lands this batch
        quarantined, or ``None`` to land it active: the one question a batch is asked, when it is applied
        and when a remember plans its dedup (``writes.plan_remember``)."""
        if gate is None:
            return None
        reason: str | None = gate.quarantine_reason(self.author, self.kind.value, self.evidence(), realm=self.realm)
        return reason


@dataclass(frozen=True, slots=True)
class GateVerdict:
    """The write gate's answer for a batch, already asked (:meth:`StagedBatch.quarantine_reason`): a remember
    asks it while planning its dedup and hands the answer to the apply of that same batch, so the plan and
    the write follow one verdict and the gate is asked once."""

    reason: str | None


@dataclass(frozen=True, slots=True)
class OpResult:
    """What one op did: its index, op kind, the record it wrote or touched, and that record's status after."""

    op_index: int
    op: str
    memory_id: str
    status: Status


@dataclass(frozen=True, slots=True)
class BatchReceipt:
    """The result of an applied batch.

    ``token`` is the stage/audit token; ``quarantined`` is the gate's reason
    (None when the batch was not quarantined); ``records`` holds the final
    state of every record the batch touched, by id.
    """

    token: str
    realm: str
    applied_at_ms: int
    results: tuple[OpResult, ...]
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    quarantined: str | None = None
