"""The agent-memory record model (reference §2B "Record model").

Domain values are frozen dataclasses with explicit JSON encodings that match
the persisted/wire shapes exactly (internally tagged unions: ``scope``,
``status``, ``author``). The two wire projections returned by RPC methods,
:class:`AgentMemoryRecord` and :class:`RecordMeta`, are pydantic v2 models.

All timestamps are UTC epoch milliseconds (``int``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from meta_memory.agent_memory.fields import MAX_IMPORTED_SOURCE_ID_CHARS, MAX_IMPORTED_SYSTEM_CHARS, normalize_metadata
from meta_memory.agent_memory.secrets import json_strings
from meta_memory.errors import echo
from meta_memory.identity import logical_identity
from meta_memory.limits import DAY_MS

__all__ = [
    "DAY_MS",
    "Candidates",
    "is_expired",
    "ScopeKind",
    "Scope",
    "Kind",
    "TrustTier",
    "StatusKind",
    "Status",
    "AuthorKind",
    "Author",
    "EvidenceRef",
    "CalibrationRef",
    "VerificationClaim",
    "ImportedFrom",
    "Provenance",
    "UsageEvent",
    "UsageStats",
    "NewMemoryRecord",
    "MemoryRecord",
    "AgentMemoryRecord",
    "RecordMeta",
    "age_days",
]


_E = TypeVar("_E", bound=StrEnum)


def age_days(updated_at_ms: int, now_ms: int) -> int:
    """Whole days between ``updated_at_ms`` and ``now_ms`` (saturating at 0)."""
    return max(0, now_ms - updated_at_ms) // DAY_MS


def _tag(data: Any, what: str, enum: type[_E], label: str) -> _E:
    """The ``enum`` member a JSON object names in its ``what`` key (``{"scope": "identity", ...}``).

    Raises ``ValueError("<what> must be an object")`` or ``ValueError("unknown <label> '<value>'")``.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be an object")
    raw = data.get(what)
    if isinstance(raw, str):
        try:
            return enum(raw)
        except ValueError:
            pass
    raise ValueError(f"unknown {label} '{echo(str(raw))}'")


def _req_str(data: dict[str, Any], key: str, what: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{what}.{key} must be a string")
    return value


#: The largest integer a stored record's integer columns hold (a signed 64-bit ``INTEGER`` / ``BIGINT``).
MAX_STORED_INT = 2**63 - 1


def _opt_int(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -MAX_STORED_INT <= value <= MAX_STORED_INT:
        raise ValueError(f"{key} must be an integer within +-{MAX_STORED_INT}")
    return value


# --------------------------------------------------------------------------- scope


class ScopeKind(StrEnum):
    """Storage ``scope_kind`` values."""

    IDENTITY = "identity"
    MOB = "mob"
    OPERATOR = "operator"
    REALM = "realm"


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a record lives: ``identity{realm, identity}``, ``mob{realm, mob}``,
    ``operator{realm, operator}`` or ``realm{realm}``.

    ``key`` is the identity / mob / operator name ("" for realm scope). Identity
    keys are always logical identities (respawn generations stripped).
    JSON: ``{"scope": "identity", "realm": "default", "identity": "lead:main"}``.
    Storage: ``(scope_kind, scope_key)``; the realm is implied by the database.
    """

    kind: ScopeKind
    realm: str
    key: str = ""

    def __post_init__(self) -> None:
        if self.kind is ScopeKind.REALM and self.key:
            raise ValueError("realm scope carries no key")
        if self.kind is ScopeKind.IDENTITY:
            object.__setattr__(self, "key", logical_identity(self.key))

    @classmethod
    def identity(cls, realm: str, identity: str) -> Scope:
        return cls(ScopeKind.IDENTITY, realm, identity)

    @classmethod
    def mob(cls, realm: str, mob: str) -> Scope:
        return cls(ScopeKind.MOB, realm, mob)

    @classmethod
    def operator(cls, realm: str, operator: str) -> Scope:
        return cls(ScopeKind.OPERATOR, realm, operator)

    @classmethod
    def realm_scope(cls, realm: str) -> Scope:
        return cls(ScopeKind.REALM, realm, "")

    def storage(self) -> tuple[str, str]:
        """``(scope_kind, scope_key)`` as stored in the ``records`` table."""
        # the member's value attribute itself: ``.value`` is a property, two Python calls at every read
        return self.kind._value_, self.key

    @classmethod
    def from_storage(cls, realm: str, scope_kind: str, scope_key: str) -> Scope:
        """Decode a stored scope. Raises ``ValueError("unknown scope kind '<k>'")``."""
        try:
            kind = ScopeKind(scope_kind)
        except ValueError:
            raise ValueError(f"unknown scope kind '{echo(str(scope_kind))}'") from None
        return cls(kind, realm, "" if kind is ScopeKind.REALM else scope_key)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scope": self.kind.value, "realm": self.realm}
        if self.kind is not ScopeKind.REALM:
            out[self.kind.value] = self.key
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Scope:
        """Decode ``{"scope": kind, "realm": ..., <kind>: key}``; raises ``ValueError``."""
        kind = _tag(data, "scope", ScopeKind, "scope kind")
        realm = _req_str(data, "realm", "scope")
        key = "" if kind is ScopeKind.REALM else _req_str(data, kind.value, "scope")
        return cls(kind, realm, key)

    def describe(self) -> str:
        """Human label, e.g. ``identity scope 'lead:main'``."""
        if self.kind is ScopeKind.REALM:
            return f"realm scope '{self.realm}'"
        return f"{self.kind.value} scope '{self.key}'"


# --------------------------------------------------------------------------- enums


class Kind(StrEnum):
    """Record kinds."""

    PREFERENCE = "preference"
    FACT = "fact"
    GOTCHA = "gotcha"
    PROCEDURE = "procedure"
    RELATIONSHIP = "relationship"
    OPEN_LOOP = "open_loop"
    REFERENCE = "reference"


_TIER_ORDER = ["untrusted", "agent_observed", "agent_verified", "application", "operator"]


class TrustTier(StrEnum):
    """Trust lattice, lowest to highest:
    ``untrusted < agent_observed < agent_verified < application < operator``.

    Comparison operators follow the lattice, not the alphabet.
    """

    UNTRUSTED = "untrusted"
    AGENT_OBSERVED = "agent_observed"
    AGENT_VERIFIED = "agent_verified"
    APPLICATION = "application"
    OPERATOR = "operator"

    @property
    def level(self) -> int:
        return _TIER_ORDER.index(self._value_)  # not ``.value``: a property, two Python calls at every read

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TrustTier):
            return NotImplemented
        return self.level < other.level

    def __le__(self, other: object) -> bool:
        if not isinstance(other, TrustTier):
            return NotImplemented
        return self.level <= other.level

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, TrustTier):
            return NotImplemented
        return self.level > other.level

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, TrustTier):
            return NotImplemented
        return self.level >= other.level



# --------------------------------------------------------------------------- status


class StatusKind(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    QUARANTINED = "quarantined"
    TOMBSTONED = "tombstoned"


@dataclass(frozen=True, slots=True)
class Status:
    """Record status: ``active`` | ``superseded{by}`` | ``quarantined{reason}`` | ``tombstoned``.

    ``detail`` is the successor id (superseded) or the reason (quarantined),
    else ``None`` — exactly the ``status_detail`` column.
    JSON: ``{"status": "superseded", "by": "mem-..."}``.
    """

    kind: StatusKind
    detail: str | None = None

    @classmethod
    def active(cls) -> Status:
        return cls(StatusKind.ACTIVE)

    @classmethod
    def superseded(cls, by: str) -> Status:
        return cls(StatusKind.SUPERSEDED, by)

    @classmethod
    def quarantined(cls, reason: str) -> Status:
        return cls(StatusKind.QUARANTINED, reason)

    @classmethod
    def tombstoned(cls) -> Status:
        return cls(StatusKind.TOMBSTONED)

    @property
    def is_active(self) -> bool:
        return self.kind is StatusKind.ACTIVE

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.kind.value}
        if self.kind is StatusKind.SUPERSEDED:
            out["by"] = self.detail
        elif self.kind is StatusKind.QUARANTINED:
            out["reason"] = self.detail
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Status:
        kind = _tag(data, "status", StatusKind, "status")
        if kind is StatusKind.SUPERSEDED:
            return cls(kind, _req_str(data, "by", "status"))
        if kind is StatusKind.QUARANTINED:
            return cls(kind, _req_str(data, "reason", "status"))
        return cls(kind)

    @classmethod
    def from_storage(cls, status_kind: str, status_detail: str | None) -> Status:
        kind = StatusKind(status_kind)
        if kind in (StatusKind.SUPERSEDED, StatusKind.QUARANTINED):
            return cls(kind, status_detail or "")
        return cls(kind)

    def describe(self) -> str:
        return self.kind.value


# --------------------------------------------------------------------------- author


class AuthorKind(StrEnum):
    OPERATOR = "operator"
    APPLICATION = "application"
    AGENT = "agent"
    STEWARD = "steward"
    DISTILLER = "distiller"


_LLM_AUTHORS = {AuthorKind.AGENT, AuthorKind.STEWARD, AuthorKind.DISTILLER}


@dataclass(frozen=True, slots=True)
class Author:
    """Who wrote: ``operator{principal?}`` | ``application`` | ``agent{identity}`` |
    ``steward{run_id}`` | ``distiller{run_id}``.

    ``is_llm`` is true for agent, steward and distiller authors.
    JSON: ``{"author": "agent", "identity": "lead:main"}``.
    """

    kind: AuthorKind
    identity: str | None = None
    run_id: str | None = None
    principal: str | None = None

    def __post_init__(self) -> None:
        if self.kind is AuthorKind.AGENT:
            if not self.identity:
                raise ValueError("agent author needs an identity")
            object.__setattr__(self, "identity", logical_identity(self.identity))
        if self.kind in (AuthorKind.STEWARD, AuthorKind.DISTILLER) and self.run_id is None:
            raise ValueError(f"{self.kind.value} author needs a run_id")

    @classmethod
    def operator(cls, principal: str | None = None) -> Author:
        return cls(AuthorKind.OPERATOR, principal=principal)

    @classmethod
    def application(cls) -> Author:
        return cls(AuthorKind.APPLICATION)

    @classmethod
    def agent(cls, identity: str) -> Author:
        return cls(AuthorKind.AGENT, identity=identity)

    @classmethod
    def steward(cls, run_id: str) -> Author:
        return cls(AuthorKind.STEWARD, run_id=run_id)

    @classmethod
    def distiller(cls, run_id: str) -> Author:
        return cls(AuthorKind.DISTILLER, run_id=run_id)

    @property
    def is_llm(self) -> bool:
        return self.kind in _LLM_AUTHORS

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"author": self.kind.value}
        if self.kind is AuthorKind.AGENT:
            out["identity"] = self.identity
        elif self.kind in (AuthorKind.STEWARD, AuthorKind.DISTILLER):
            out["run_id"] = self.run_id
        elif self.kind is AuthorKind.OPERATOR and self.principal is not None:
            out["principal"] = self.principal
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Author:
        kind = _tag(data, "author", AuthorKind, "author")
        if kind is AuthorKind.AGENT:
            return cls(kind, identity=_req_str(data, "identity", "author"))
        if kind in (AuthorKind.STEWARD, AuthorKind.DISTILLER):
            return cls(kind, run_id=_req_str(data, "run_id", "author"))
        if kind is AuthorKind.OPERATOR:
            principal = data.get("principal")
            return cls(kind, principal=principal if isinstance(principal, str) else None)
        return cls(kind)

    def strings(self) -> tuple[str, ...]:
        """Every string the author stores: its identity, run id and principal (those it has)."""
        return tuple(v for v in (self.identity, self.run_id, self.principal) if v)

    def describe(self) -> str:
        """A short label for events and logs, e.g. ``Agent { identity: "lead:main" }``."""
        if self.kind is AuthorKind.AGENT:
            return f'Agent {{ identity: "{self.identity}" }}'
        if self.kind in (AuthorKind.STEWARD, AuthorKind.DISTILLER):
            return f'{self.kind.value.capitalize()} {{ run_id: "{self.run_id}" }}'
        if self.kind is AuthorKind.OPERATOR:
            return f'Operator {{ principal: {self.principal!r} }}' if self.principal else "Operator { principal: None }"
        return "Application"


# --------------------------------------------------------------------------- provenance


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    """A pointer into a session transcript: ``{session_id, generation, revision?, range?: [start, end]}``."""

    session_id: str
    generation: int = 0
    revision: int | None = None
    range: tuple[int, int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session_id": self.session_id, "generation": self.generation}
        if self.revision is not None:
            out["revision"] = self.revision
        if self.range is not None:
            out["range"] = [self.range[0], self.range[1]]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvidenceRef:
        if not isinstance(data, dict):
            raise ValueError("evidence ref must be an object")
        rng = data.get("range")
        range_value: tuple[int, int] | None = None
        if rng is not None:
            if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int) for x in rng)):
                raise ValueError("evidence range must be [start, end]")
            range_value = (rng[0], rng[1])
        return cls(
            session_id=_req_str(data, "session_id", "evidence"),
            generation=_opt_int(data, "generation") or 0,
            revision=_opt_int(data, "revision"),
            range=range_value,
        )


@dataclass(frozen=True, slots=True)
class CalibrationRef:
    """The prompt bundle that produced an LLM-authored record: ``{stage, bundle, version, model}``."""

    stage: str
    bundle: str
    version: str
    model: str

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "bundle": self.bundle, "version": self.version, "model": self.model}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CalibrationRef:
        return cls(*(_req_str(data, k, "profile") for k in ("stage", "bundle", "version", "model")))


@dataclass(frozen=True, slots=True)
class VerificationClaim:
    """An agent's claim that it verified a fact: ``{checked, evidence: [EvidenceRef]}``."""

    checked: str
    evidence: tuple[EvidenceRef, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "evidence": [e.to_json() for e in self.evidence]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerificationClaim:
        return cls(
            checked=_req_str(data, "checked", "verification"),
            evidence=tuple(EvidenceRef.from_json(e) for e in data.get("evidence") or []),
        )


@dataclass(frozen=True, slots=True)
class ImportedFrom:
    """The outside memory system a record was imported from and the record's id there:
    ``{"system": "mem0", "source_id": "<mem0 memory id>"}`` (``meta-memory import --from``). ``system``
    is 1..32 characters, ``source_id`` 1..1024; ``ValueError`` otherwise."""

    system: str
    source_id: str

    def __post_init__(self) -> None:
        if not 0 < len(self.system) <= MAX_IMPORTED_SYSTEM_CHARS or not 0 < len(self.source_id) <= MAX_IMPORTED_SOURCE_ID_CHARS:
            raise ValueError(f"imported_from needs a system of 1..{MAX_IMPORTED_SYSTEM_CHARS} characters and a "
                             f"source_id of 1..{MAX_IMPORTED_SOURCE_ID_CHARS}")

    def to_json(self) -> dict[str, Any]:
        return {"system": self.system, "source_id": self.source_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ImportedFrom:
        if not isinstance(data, dict):
            raise ValueError("imported_from must be an object")
        return cls(system=_req_str(data, "system", "imported_from"), source_id=_req_str(data, "source_id", "imported_from"))


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a record came from: ``{evidence: [...], author, profile?, verification?, imported_from?}``."""

    author: Author
    evidence: tuple[EvidenceRef, ...] = ()
    profile: CalibrationRef | None = None
    verification: VerificationClaim | None = None
    imported_from: ImportedFrom | None = None

    def strings(self) -> tuple[str, ...]:
        """Every string the provenance stores, free text first (a key split between a record's body and
        its verification is found where they meet): the verification's ``checked`` text and its evidence
        ``session_id`` s, each evidence ``session_id``, the profile's ``stage``, ``bundle``, ``version``
        and ``model``, the imported-from system and source id, then the author's (:meth:`Author.strings`).
        The secret scanner reads them all (:meth:`NewMemoryRecord.scanned_strings`)."""
        out: list[str] = []
        if self.verification is not None:
            out.append(self.verification.checked)
            out += (e.session_id for e in self.verification.evidence)
        out += (e.session_id for e in self.evidence)
        if self.profile is not None:
            out += (self.profile.stage, self.profile.bundle, self.profile.version, self.profile.model)
        if self.imported_from is not None:
            out += (self.imported_from.system, self.imported_from.source_id)
        out += self.author.strings()
        return tuple(s for s in out if s)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"evidence": [e.to_json() for e in self.evidence], "author": self.author.to_json()}
        if self.profile is not None:
            out["profile"] = self.profile.to_json()
        if self.verification is not None:
            out["verification"] = self.verification.to_json()
        if self.imported_from is not None:
            out["imported_from"] = self.imported_from.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Provenance:
        if not isinstance(data, dict):
            raise ValueError("provenance must be an object")
        profile = data.get("profile")
        verification = data.get("verification")
        imported = data.get("imported_from")
        return cls(
            author=Author.from_json(data.get("author")),  # type: ignore[arg-type]
            evidence=tuple(EvidenceRef.from_json(e) for e in data.get("evidence") or []),
            profile=CalibrationRef.from_json(profile) if profile else None,
            verification=VerificationClaim.from_json(verification) if verification else None,
            imported_from=ImportedFrom.from_json(imported) if imported else None,
        )


# --------------------------------------------------------------------------- usage


class UsageEvent(StrEnum):
    """What :meth:`mark_usage` counts."""

    INJECTED = "injected"
    EXPLICIT_RECALL = "explicit_recall"
    JUDGED_USEFUL = "judged_useful"

    @property
    def stat_fields(self) -> tuple[str, str]:
        """The :class:`UsageStats` fields this event counts in and stamps: ``(count, last_at_ms)``
        (the JSON keys of the ``usage_stats`` column too)."""
        return _USAGE_FIELDS[self]


_USAGE_FIELDS: dict[UsageEvent, tuple[str, str]] = {
    UsageEvent.INJECTED: ("injected_count", "last_injected_at_ms"),
    UsageEvent.EXPLICIT_RECALL: ("explicit_recall_count", "last_recalled_at_ms"),
    UsageEvent.JUDGED_USEFUL: ("judged_useful_count", "last_useful_at_ms"),
}


@dataclass(frozen=True, slots=True)
class UsageStats:
    """Usage counters. JSON omits the ``last_*`` timestamps when ``None``."""

    injected_count: int = 0
    last_injected_at_ms: int | None = None
    explicit_recall_count: int = 0
    last_recalled_at_ms: int | None = None
    judged_useful_count: int = 0
    last_useful_at_ms: int | None = None

    def bump(self, event: UsageEvent, at_ms: int) -> UsageStats:
        """A copy with ``event`` counted at ``at_ms``."""
        count, last = UsageEvent(event).stat_fields
        changed: dict[str, int] = {count: getattr(self, count) + 1, last: at_ms}
        return replace(self, **changed)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in (
            "injected_count",
            "last_injected_at_ms",
            "explicit_recall_count",
            "last_recalled_at_ms",
            "judged_useful_count",
            "last_useful_at_ms",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> UsageStats:
        data = data or {}
        return cls(
            injected_count=_opt_int(data, "injected_count") or 0,
            last_injected_at_ms=_opt_int(data, "last_injected_at_ms"),
            explicit_recall_count=_opt_int(data, "explicit_recall_count") or 0,
            last_recalled_at_ms=_opt_int(data, "last_recalled_at_ms"),
            judged_useful_count=_opt_int(data, "judged_useful_count") or 0,
            last_useful_at_ms=_opt_int(data, "last_useful_at_ms"),
        )


# --------------------------------------------------------------------------- expiry


def is_expired(expires_at_ms: int | None, now_ms: int) -> bool:
    """The one expiry rule: a record whose ``expires_at_ms`` is at or before ``now_ms`` is
    no longer active. The stores' SQL form of the same rule is
    :func:`meta_memory.agent_memory.store.dialect.unexpired`."""
    return expires_at_ms is not None and expires_at_ms <= now_ms


def _opt_expiry(data: dict[str, Any]) -> int | None:
    value = data.get("expires_at_ms")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STORED_INT:
        raise ValueError(f"record.expires_at_ms must be an integer (epoch ms) from 0 to {MAX_STORED_INT}, or null")
    return value


# --------------------------------------------------------------------------- records


def metadata_strings(value: Any) -> list[str]:
    """What the secret scanner reads of a metadata value (:func:`~meta_memory.agent_memory.secrets.json_strings`:
    every key and string, and each key with every string or number under it as ``{"key": value}`` lines)."""
    return json_strings(value)


def _metadata_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metadata`` member of a record's JSON, checked (``{}`` when absent); ``ValueError`` when broken."""
    return normalize_metadata(data.get("metadata"), "record.metadata")


def _stored_metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``metadata`` member of a record's JSON as this store wrote it (``{}`` when absent): an object with
    string keys, its values as stored. The release that wrote it checked it by its own rules; today's are not
    applied again on reading (a later, stricter key rule would make the row unreadable). ``ValueError`` when it
    is not such an object."""
    value = data.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError("record.metadata must be an object")
    return dict(value)


@dataclass(frozen=True, slots=True)
class NewMemoryRecord:
    """A record payload before it has an id, scope, tier or status.

    JSON: ``{kind, title, description, body, tags, provenance, metadata?}`` (``metadata`` only when not empty).
    ``metadata``: the caller's JSON object (:func:`~meta_memory.agent_memory.fields.normalize_metadata`),
    stored and returned, never interpreted; not part of the content hash.
    """

    title: str
    body: str
    provenance: Provenance
    kind: Kind = Kind.FACT
    description: str = ""
    tags: tuple[str, ...] = ()
    #: When the record stops being active (epoch ms, UTC; ``None`` = never).
    expires_at_ms: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def scanned_strings(self) -> tuple[str, ...]:
        """Every string the payload stores besides ``title``, ``description``, ``body`` and ``tags``
        (which :func:`~meta_memory.agent_memory.secrets.scan` takes by name): its provenance's
        (:meth:`Provenance.strings`), then every key and string value of its ``metadata``. The one list
        of the payload's fields the secret scanner reads after the four named ones
        (:func:`~meta_memory.agent_memory.secrets.scan_record`)."""
        return (*self.provenance.strings(), *metadata_strings(self.metadata))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "title": self.title,
            "description": self.description,
            "body": self.body,
            "tags": list(self.tags),
            "provenance": self.provenance.to_json(),
            **({"metadata": dict(self.metadata)} if self.metadata else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], *, stored: bool = False) -> NewMemoryRecord:
        """The payload of ``data`` (its JSON form above); ``ValueError`` when a member is broken. ``stored``:
        ``data`` is a row this store wrote (a proposal), read as it was stored: its metadata keeps the keys the
        release that wrote it accepted (:func:`_stored_metadata`); a write of the payload is checked by
        today's rules again (the validator's :func:`~meta_memory.agent_memory.validator.normalize_record`)."""
        if not isinstance(data, dict):
            raise ValueError("record must be an object")
        tags = data.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("record.tags must be an array of strings")
        return cls(
            kind=Kind(data.get("kind", "fact")),
            title=_req_str(data, "title", "record"),
            description=data.get("description") or "",
            body=_req_str(data, "body", "record"),
            tags=tuple(tags),
            provenance=Provenance.from_json(data.get("provenance")),  # type: ignore[arg-type]
            metadata=_stored_metadata(data) if stored else _metadata_of(data),
        )


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A stored record (reference §2B).

    ``rank_set_at_ms`` mirrors the storage column used by the working-set
    manifest; it is not part of the JSON encoding.
    """

    id: str
    scope: Scope
    kind: Kind
    title: str
    body: str
    provenance: Provenance
    trust: TrustTier
    status: Status
    created_at_ms: int
    updated_at_ms: int
    description: str = ""
    tags: tuple[str, ...] = ()
    supersedes: str | None = None
    derived_from: tuple[str, ...] = ()
    working_set_rank: int | None = None
    usage: UsageStats = field(default_factory=UsageStats)
    ever_quarantined: bool = False
    rank_set_at_ms: int | None = None
    tombstoned_at_ms: int | None = None
    #: When the record stops being active (epoch ms, UTC; ``None`` = never). An active record past it
    #: reads as not active everywhere (:func:`is_expired`) until the expiry sweep tombstones it.
    expires_at_ms: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def memory_id(self) -> str:
        """Alias of :attr:`id` (the name the wire and the recall providers use)."""
        return self.id

    @property
    def content_hash(self) -> str:
        from meta_memory.agent_memory.hashing import content_hash

        return content_hash(self.title, self.body)

    @property
    def author(self) -> Author:
        return self.provenance.author

    def scanned_strings(self) -> tuple[str, ...]:
        """Every string the record stores besides ``title``, ``description``, ``body`` and ``tags``: its
        provenance's (:meth:`Provenance.strings`), then its ``id``, scope key, status detail (successor
        id or quarantine reason), ``supersedes`` and each ``derived_from`` id. What the secret
        scanner reads after the four named fields when the record comes whole from outside (an import)
        or is checked again (quarantine release, the steward's dream)."""
        links = (self.id, self.scope.key, self.status.detail, self.supersedes, *self.derived_from)
        return (*self.provenance.strings(), *(s for s in links if s), *metadata_strings(self.metadata))

    def to_json(self) -> dict[str, Any]:
        """The persisted/panel encoding (serde field names)."""
        out: dict[str, Any] = {
            "id": self.id,
            "scope": self.scope.to_json(),
            "kind": self.kind.value,
            "title": self.title,
            "description": self.description,
            "body": self.body,
            "tags": list(self.tags),
            "provenance": self.provenance.to_json(),
            "trust": self.trust.value,
            "status": self.status.to_json(),
        }
        if self.supersedes is not None:
            out["supersedes"] = self.supersedes
        out["derived_from"] = list(self.derived_from)
        if self.working_set_rank is not None:
            out["working_set_rank"] = self.working_set_rank
        out["created_at_ms"] = self.created_at_ms
        out["updated_at_ms"] = self.updated_at_ms
        out["usage"] = self.usage.to_json()
        out["ever_quarantined"] = self.ever_quarantined
        if self.expires_at_ms is not None:
            out["expires_at_ms"] = self.expires_at_ms
        out["metadata"] = dict(self.metadata)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryRecord:
        if not isinstance(data, dict):
            raise ValueError("record must be an object")
        rank = data.get("working_set_rank")
        return cls(
            id=_req_str(data, "id", "record"),
            scope=Scope.from_json(data.get("scope")),  # type: ignore[arg-type]
            kind=Kind(_req_str(data, "kind", "record")),
            title=_req_str(data, "title", "record"),
            description=data.get("description") or "",
            body=_req_str(data, "body", "record"),
            tags=tuple(data.get("tags") or ()),
            provenance=Provenance.from_json(data.get("provenance")),  # type: ignore[arg-type]
            trust=TrustTier(_req_str(data, "trust", "record")),
            status=Status.from_json(data.get("status")),  # type: ignore[arg-type]
            supersedes=data.get("supersedes"),
            derived_from=tuple(data.get("derived_from") or ()),
            working_set_rank=rank if isinstance(rank, int) else None,
            created_at_ms=int(data.get("created_at_ms", 0)),
            updated_at_ms=int(data.get("updated_at_ms", 0)),
            usage=UsageStats.from_json(data.get("usage")),
            ever_quarantined=bool(data.get("ever_quarantined", False)),
            expires_at_ms=_opt_expiry(data),
            metadata=_metadata_of(data),
        )

    def is_live(self, now_ms: int) -> bool:
        """Whether the record is active and not past its expiry at ``now_ms`` (:func:`is_expired`)."""
        return self.status.is_active and not is_expired(self.expires_at_ms, now_ms)

    def settled(self, now_ms: int) -> MemoryRecord:
        """The record as the expiry sweep leaves it: an active record past its expiry at ``now_ms`` is
        the tombstone it becomes (tombstoned at its ``expires_at_ms``); any other record is itself.
        What export writes and import lands, so an expired record never travels as active."""
        if not self.status.is_active or not is_expired(self.expires_at_ms, now_ms):
            return self
        at = self.expires_at_ms if self.expires_at_ms is not None else now_ms
        return replace(self, status=Status.tombstoned(), tombstoned_at_ms=at, updated_at_ms=max(self.updated_at_ms, at))

    def project(self) -> AgentMemoryRecord:
        """The wire projection returned by remember/recall/update."""
        return AgentMemoryRecord(
            memory_id=self.id,
            title=self.title,
            body=self.body,
            tags=list(self.tags),
            metadata=dict(self.metadata),
            created_at_ms=self.created_at_ms,
            updated_at_ms=self.updated_at_ms,
            expires_at_ms=self.expires_at_ms,
        )

    def wire(self) -> dict[str, Any]:
        """:meth:`project` as JSON data (``project().model_dump(mode="json")``), built without the model: for
        answers the method table holds to their result model anyway (recall), so it is validated once."""
        return {"memory_id": self.id, "title": self.title, "body": self.body, "tags": list(self.tags),
                "metadata": copy.deepcopy(dict(self.metadata)) if self.metadata else {}, "created_at_ms": self.created_at_ms,
                "updated_at_ms": self.updated_at_ms, "expires_at_ms": self.expires_at_ms}

    def meta(self, now_ms: int) -> RecordMeta:
        """The body-free manifest row (``age_days`` from ``updated_at_ms``)."""
        return RecordMeta(
            id=self.id,
            kind=self.kind.value,
            title=self.title,
            description=self.description,
            age_days=age_days(self.updated_at_ms, now_ms),
            rank=self.working_set_rank,
        )


@dataclass(frozen=True, slots=True)
class RecordView:
    """The fields recall reads, without decoding provenance, usage or lineage: what the store's
    ``search`` and ``neighbours`` return for ranking. The runtime re-reads the full
    :class:`MemoryRecord` of every record it keeps (``services.recall_reader.guarded_recall``).

    ``term_fields``: for each query term the record holds, the full-text columns holding it (bit ``i`` =
    :data:`meta_memory.recall.fts.COLUMNS` ``[i]``), so re-ranking need not tokenise the record, when
    whoever built the view knew them; else ``None``. The SQLite store gives them beside its candidate list
    (:class:`Candidates`), keeping their views shared. Not part of equality."""

    id: str
    title: str
    description: str
    body: str
    tags: tuple[str, ...]
    created_at_ms: int
    updated_at_ms: int
    term_fields: Mapping[str, int] | None = field(default=None, compare=False, repr=False)

    @property
    def memory_id(self) -> str:
        return self.id


class Candidates(list[tuple[RecordView, float]]):
    """A store's full-text candidates ``(view, bm25)``, best first, carrying which full-text columns of each
    candidate's row hold each query term (bit ``i`` = :data:`meta_memory.recall.fts.COLUMNS` ``[i]``), so
    re-ranking need not tokenise the records: ``table`` and ``columns`` (the in-process index's term table,
    whose ``row(column)`` is a ``term -> bits`` mapping and whose ``bits[term row, column]`` hold the same,
    and each candidate's column in it), or ``fields`` (a mapping per candidate), or neither (unknown).

    ``degraded_reason``: ``None``, or why these may not be the scope's best candidates (a ``degraded_reason``
    label the recall's result carries, e.g. ``approximate_ranking``: the PostgreSQL store's later ranking
    rounds stopped short of the budget).

    A list like any other (slicing or copying it gives a plain list without the columns)."""

    __slots__ = ("table", "columns", "fields", "degraded_reason")

    def __init__(self, items: Any = (), *, table: Any = None, columns: list[int] | None = None,
                 fields: list[Mapping[str, int]] | None = None, degraded_reason: str | None = None) -> None:
        super().__init__(items)
        self.table = table
        self.columns = columns
        self.fields = fields
        self.degraded_reason = degraded_reason

    def term_fields(self, i: int) -> Mapping[str, int] | None:
        """Candidate ``i``'s ``term -> bits`` for the query terms its row holds (``None``: unknown)."""
        if self.table is not None and self.columns is not None:
            row: Mapping[str, int] = self.table.row(self.columns[i])
            return row
        return None if self.fields is None else self.fields[i]


class AgentMemoryRecord(BaseModel):
    """Wire projection of a record: ``{memory_id, title, body, tags, metadata, created_at_ms, updated_at_ms,
    expires_at_ms}`` (``metadata``: the record's JSON object, ``{}`` when it has none; ``expires_at_ms``:
    epoch ms, ``null`` when the record never expires)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_id: str
    title: str
    body: str
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    created_at_ms: int
    updated_at_ms: int
    expires_at_ms: int | None = None


class RecordMeta(BaseModel):
    """Manifest row: ``{id, kind, title, description, age_days, rank}`` (no body)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: str
    title: str
    description: str = ""
    age_days: int
    rank: int | None = None
