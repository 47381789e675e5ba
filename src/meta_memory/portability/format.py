"""The export file: JSON Lines, one object per line, each tagged by ``type``.

- ``{"type": "header", "format": "meta-memory-export", "version": 2, "exported_at_ms", "realms": [...],
  "identity": str | null, "export_id", "key_id"}`` — always the first line;
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
before anything is written.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..agent_memory.model import MemoryRecord

FORMAT = "meta-memory-export"
VERSION = 2
#: The longest line an import reads (bytes): a record's fields are capped far below this.
MAX_LINE_BYTES = 1 << 20

__all__ = ["FORMAT", "VERSION", "MAX_LINE_BYTES", "Header", "RecordLine", "AssertionLine", "ConflictLine", "EndLine",
           "parse_line", "record_line"]

_STRICT = ConfigDict(extra="forbid")


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
        """The stored record this line describes; raises ``ValueError`` when its encoding is broken."""
        try:
            rec = MemoryRecord.from_json(self.record)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"record encoding: {exc}") from None
        if rec.scope.realm != self.realm:
            raise ValueError(f"record scope realm '{rec.scope.realm}' differs from the line's realm '{self.realm}'")
        return replace(rec, tombstoned_at_ms=self.tombstoned_at_ms, rank_set_at_ms=self.rank_set_at_ms)


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
