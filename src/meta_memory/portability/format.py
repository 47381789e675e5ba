"""The export file: JSON Lines, one object per line, each tagged by ``type``.

- ``{"type": "header", "format": "meta-memory-export", "version": 2, "exported_at_ms", "realms": [...],
  "identity": str | null, "export_id", "key_id", "skipped_realms"?: [{realm, reason}]}`` — always the first
  line; ``skipped_realms`` only when an identity's export left out realms that could not be read;
- ``{"type": "record", "realm", "record": {...}, "tombstoned_at_ms", "rank_set_at_ms"}`` — one agent-memory
  record as stored (``record`` is the persisted encoding: id, scope, kind, title, description, body, tags,
  provenance, trust, status, supersedes, derived_from, working_set_rank, created_at_ms, updated_at_ms,
  usage, ever_quarantined); a supersede chain is written oldest first;
- ``{"type": "assertion", "entity", "topic", "store", "fact", "metadata", "indexed_at_ms"}`` and
  ``{"type": "conflict", "entity", "topic", "store", "reason", "updated_at_ms"}`` — the assertion ledger;
- ``{"type": "end", "lines": N}`` — always the last line: how many lines precede it.

Every line of a version 2 file ends with its ``mac`` member (:mod:`.signing`). Version 1 files (no
``export_id``, ``key_id``, ``mac`` or closing line) are still read: as unverified files.

Lines are validated with pydantic (unknown keys refused) so a damaged file is refused by line number
before anything is written. A record line's ``record`` is held to the same rule: a member the record
encoding does not define, at any depth (``record.provenance.author.team``), refuses the line naming
that member (:func:`unknown_record_member`), rather than being dropped silently; only ``metadata``, the
application's own object, holds keys of its choosing. Every name a line carries (realms, the scope's
identity, mob or operator, an agent author's identity, the session keys of evidence references) is held
to the name rule RPC params are held to (:func:`refused_name`): a look-alike name (``"alice:main\u200b"``,
``" alice:main"``) would land records that show as another scope's and that no erase can name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..agent_memory.model import MemoryRecord
from ..agent_memory.secrets import scan_text
from ..errors import echo
from ..identity import parse_identity, parse_mob, parse_operator, parse_realm
from ..session_ref import check_session_key

FORMAT = "meta-memory-export"
VERSION = 2
#: The longest line an import reads (bytes): a record's fields are capped far below this.
MAX_LINE_BYTES = 1 << 20

__all__ = ["FORMAT", "VERSION", "MAX_LINE_BYTES", "Header", "RecordLine", "AssertionLine", "ConflictLine", "EndLine",
           "parse_line", "record_line", "refused_name", "unknown_record_member"]

_STRICT = ConfigDict(extra="forbid")


class SkippedRealm(BaseModel):
    model_config = _STRICT
    realm: str
    reason: str


class Header(BaseModel):
    model_config = _STRICT
    type: Literal["header"]
    format: Literal["meta-memory-export"]
    version: Literal[1, 2]
    exported_at_ms: int = Field(ge=0)
    realms: list[str]
    identity: str | None = None
    #: (version 2) the export's random id and the id of the key that signed it
    export_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}$")
    key_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")
    #: realms an identity's export left out because they could not be read (present only then)
    skipped_realms: list[SkippedRealm] | None = None

    @model_validator(mode="after")
    def _signed(self) -> "Header":
        if self.version == 2 and (self.export_id is None or self.key_id is None):
            raise ValueError("a version 2 header names its export_id and key_id")
        return self


class RecordLine(BaseModel):
    model_config = _STRICT
    type: Literal["record"]
    realm: str = Field(min_length=1)
    record: dict[str, Any]
    tombstoned_at_ms: int | None = None
    rank_set_at_ms: int | None = None

    def to_record(self) -> MemoryRecord:
        """The stored record this line describes; raises ``ValueError`` when its encoding is broken or
        holds a member it does not define (``unknown member 'record.usage.shared'``)."""
        unknown = unknown_record_member(self.record)
        if unknown is not None:
            # the name comes from the file: shown escaped and cut short, and never when it holds a secret
            shown = "whose name holds a secret" if scan_text(unknown) else json.dumps(echo(unknown))
            raise ValueError(f"unknown member {shown} (a record holds only the members an export writes)")
        try:
            rec = MemoryRecord.from_json(self.record)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"record encoding: {exc}") from None
        if rec.scope.realm != self.realm:
            raise ValueError(f"record scope realm '{rec.scope.realm}' differs from the line's realm '{self.realm}'")
        return replace(rec, tombstoned_at_ms=self.tombstoned_at_ms, rank_set_at_ms=self.rank_set_at_ms)


#: The members of a record's encoding (:meth:`MemoryRecord.to_json`), and of the objects inside it.
_RECORD_MEMBERS = frozenset({
    "id", "scope", "kind", "title", "description", "body", "tags", "provenance", "trust", "status", "supersedes",
    "derived_from", "working_set_rank", "created_at_ms", "updated_at_ms", "usage", "ever_quarantined",
    "expires_at_ms", "metadata"})
_PROVENANCE_MEMBERS = frozenset({"evidence", "author", "profile", "verification", "imported_from"})
_AUTHOR_MEMBERS = frozenset({"author", "identity", "run_id", "principal"})
_EVIDENCE_MEMBERS = frozenset({"session_id", "generation", "revision", "range"})
_PROFILE_MEMBERS = frozenset({"stage", "bundle", "version", "model"})
_VERIFICATION_MEMBERS = frozenset({"checked", "evidence"})
_IMPORTED_FROM_MEMBERS = frozenset({"system", "source_id"})
_USAGE_MEMBERS = frozenset({"injected_count", "last_injected_at_ms", "explicit_recall_count", "last_recalled_at_ms",
                            "judged_useful_count", "last_useful_at_ms"})
#: a scope holds ``scope``, ``realm`` and the key of its own kind; a status its kind's detail
_SCOPE_KEY = {"identity": "identity", "mob": "mob", "operator": "operator"}
_STATUS_DETAIL = {"superseded": "by", "quarantined": "reason"}


def unknown_record_member(record: dict[str, Any]) -> str | None:
    """The dotted path of the first member of ``record`` (a record line's ``record`` object) that its
    encoding does not define, or ``None``: ``record.owner``, ``record.scope.mob`` on an identity scope,
    ``record.provenance.evidence.0.note``. ``metadata`` is the application's and is not looked into.
    Objects of the wrong type are left to the decoder, which names them."""

    def extra(obj: Any, allowed: frozenset[str] | set[str], path: str) -> str | None:
        if not isinstance(obj, dict):
            return None
        return next((f"{path}.{key}" for key in obj if key not in allowed), None)

    def first(*found: str | None) -> str | None:
        return next((f for f in found if f is not None), None)

    def evidence(items: Any, path: str) -> str | None:
        if not isinstance(items, list):
            return None
        return first(*(extra(e, _EVIDENCE_MEMBERS, f"{path}.{i}") for i, e in enumerate(items)))

    scope, status, prov = record.get("scope"), record.get("status"), record.get("provenance")
    found = extra(record, _RECORD_MEMBERS, "record")
    if isinstance(scope, dict):
        key = _SCOPE_KEY.get(str(scope.get("scope")))
        found = first(found, extra(scope, {"scope", "realm", *([key] if key else [])}, "record.scope"))
    if isinstance(status, dict):
        detail = _STATUS_DETAIL.get(str(status.get("status")))
        found = first(found, extra(status, {"status", *([detail] if detail else [])}, "record.status"))
    found = first(found, extra(record.get("usage"), _USAGE_MEMBERS, "record.usage"))
    if isinstance(prov, dict):
        verification = prov.get("verification")
        found = first(
            found, extra(prov, _PROVENANCE_MEMBERS, "record.provenance"),
            extra(prov.get("author"), _AUTHOR_MEMBERS, "record.provenance.author"),
            evidence(prov.get("evidence"), "record.provenance.evidence"),
            extra(prov.get("profile"), _PROFILE_MEMBERS, "record.provenance.profile"),
            extra(verification, _VERIFICATION_MEMBERS, "record.provenance.verification"),
            evidence(verification.get("evidence") if isinstance(verification, dict) else None,
                     "record.provenance.verification.evidence"),
            extra(prov.get("imported_from"), _IMPORTED_FROM_MEMBERS, "record.provenance.imported_from"),
        )
    return found


def _session_key(value: object) -> str:
    return check_session_key(value, required=True) or ""


#: The rule each kind of scope key is held to (the parser an RPC param of that name goes through).
_SCOPE_KEY_RULE: dict[str, Callable[[object], str]] = {
    "identity": parse_identity, "mob": parse_mob, "operator": parse_operator}


def _names(line: Header | RecordLine) -> Iterator[tuple[str, object, Callable[[object], str]]]:
    """``(field path, value, rule)`` of every name ``line`` carries."""
    if isinstance(line, Header):
        if line.identity is not None:
            yield "identity", line.identity, parse_identity
        for i, realm in enumerate(line.realms):
            yield f"realms.{i}", realm, parse_realm
        return
    yield "realm", line.realm, parse_realm
    rec = line.record
    scope = rec.get("scope")
    if isinstance(scope, dict):
        yield "record.scope.realm", scope.get("realm"), parse_realm
        kind = scope.get("scope")
        rule = _SCOPE_KEY_RULE.get(kind) if isinstance(kind, str) else None
        if rule is not None:
            yield f"record.scope.{kind}", scope.get(kind), rule
    prov = rec.get("provenance")
    if not isinstance(prov, dict):
        return
    author = prov.get("author")
    if isinstance(author, dict) and author.get("author") == "agent":
        yield "record.provenance.author.identity", author.get("identity"), parse_identity
    verification = prov.get("verification")
    for path, items in (("record.provenance.evidence", prov.get("evidence")),
                        ("record.provenance.verification.evidence",
                         verification.get("evidence") if isinstance(verification, dict) else None)):
        for i, ref in enumerate(items if isinstance(items, list) else ()):
            if isinstance(ref, dict):
                yield f"{path}.{i}.session_id", ref.get("session_id"), _session_key


def refused_name(line: Header | RecordLine) -> str | None:
    """``"<field path>: <rule>"`` for the first name ``line`` carries that breaks the rule an RPC param
    of that kind is held to, or ``None``: realms (:func:`~meta_memory.identity.parse_realm`: the header's
    ``realms.<i>``, a record line's ``realm`` and ``record.scope.realm``), identities
    (:func:`~meta_memory.identity.parse_identity`: the header's ``identity``, ``record.scope.identity``,
    ``record.provenance.author.identity`` of an agent author), ``record.scope.mob``
    (:func:`~meta_memory.identity.parse_mob`), ``record.scope.operator``
    (:func:`~meta_memory.identity.parse_operator`) and the ``session_id`` of every evidence reference,
    the verification's too (:func:`~meta_memory.session_ref.check_session_key`, the rule of
    ``derived_from_sessions``). A name is taken as given, never trimmed: ``" alice:main"``,
    ``"alice:main\n"`` and ``"alice:main\u200b"`` are refused, ``"alice:main"`` is not. Meant for a line
    whose shape decoded (:meth:`RecordLine.to_record`); a value of the wrong type is refused too."""
    for path, value, rule in _names(line):
        try:
            rule(value)
        except ValueError as exc:
            return f"{path}: {exc}"
    return None


class AssertionLine(BaseModel):
    model_config = _STRICT
    type: Literal["assertion"]
    entity: str
    topic: str
    store: str
    fact: str
    metadata: dict[str, Any] | None = None
    indexed_at_ms: int | None = None


class ConflictLine(BaseModel):
    model_config = _STRICT
    type: Literal["conflict"]
    entity: str
    topic: str
    store: str
    reason: str | None = None
    updated_at_ms: int | None = None


class EndLine(BaseModel):
    """The closing line of a version 2 file: ``lines`` is how many lines precede it."""

    model_config = _STRICT
    type: Literal["end"]
    lines: int = Field(ge=1)


Line = Header | RecordLine | AssertionLine | ConflictLine | EndLine
_BY_TYPE: dict[str, type[BaseModel]] = {
    "header": Header, "record": RecordLine, "assertion": AssertionLine, "conflict": ConflictLine, "end": EndLine,
}


def parse_line(data: Any) -> Line:
    """One decoded JSON line to its model (its ``mac`` member, the integrity check's, set aside);
    raises ``ValueError`` naming the rule."""
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object")
    model = _BY_TYPE.get(data.get("type"))  # type: ignore[arg-type]
    if model is None:
        raise ValueError(f"type must be one of {sorted(_BY_TYPE)}")
    if "mac" in data:
        data = {k: v for k, v in data.items() if k != "mac"}
    return model.model_validate(data)  # type: ignore[return-value]


def record_line(rec: MemoryRecord) -> dict[str, Any]:
    """The export line of one stored record."""
    return {"type": "record", "realm": rec.scope.realm, "record": rec.to_json(),
            "tombstoned_at_ms": rec.tombstoned_at_ms, "rank_set_at_ms": rec.rank_set_at_ms}
