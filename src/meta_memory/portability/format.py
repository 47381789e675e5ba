"""The export file: JSON Lines, one object per line, each tagged by ``type``.

- ``{"type": "header", "format": "meta-memory-export", "version": 1, "exported_at_ms", "realms": [...],
  "identity": str | null}`` — always the first line;
- ``{"type": "record", "realm", "record": {...}, "tombstoned_at_ms", "rank_set_at_ms"}`` — one agent-memory
  record as stored (``record`` is the persisted encoding: id, scope, kind, title, description, body, tags,
  provenance, trust, status, supersedes, derived_from, working_set_rank, created_at_ms, updated_at_ms,
  usage, ever_quarantined); a supersede chain is written oldest first;
- ``{"type": "assertion", "entity", "topic", "store", "fact", "metadata", "indexed_at_ms"}`` and
  ``{"type": "conflict", "entity", "topic", "store", "reason", "updated_at_ms"}`` — the assertion ledger.

Lines are validated with pydantic (unknown keys refused) so a damaged file is refused by line number
before anything is written.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..agent_memory.model import MemoryRecord

FORMAT = "meta-memory-export"
VERSION = 1
#: The longest line an import reads (bytes): a record's fields are capped far below this.
MAX_LINE_BYTES = 1 << 20

__all__ = ["FORMAT", "VERSION", "MAX_LINE_BYTES", "Header", "RecordLine", "AssertionLine", "ConflictLine",
           "parse_line", "record_line"]

_STRICT = ConfigDict(extra="forbid")


class Header(BaseModel):
    model_config = _STRICT
    type: Literal["header"]
    format: Literal["meta-memory-export"]
    version: Literal[1]
    exported_at_ms: int = Field(ge=0)
    realms: list[str]
    identity: str | None = None


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


Line = Header | RecordLine | AssertionLine | ConflictLine
_BY_TYPE: dict[str, type[BaseModel]] = {
    "header": Header, "record": RecordLine, "assertion": AssertionLine, "conflict": ConflictLine,
}


def parse_line(data: Any) -> Line:
    """One decoded JSON line to its model; raises ``ValueError`` naming the rule."""
    if not isinstance(data, dict):
        raise ValueError("a line must be a JSON object")
    model = _BY_TYPE.get(data.get("type"))  # type: ignore[arg-type]
    if model is None:
        raise ValueError(f"type must be one of {sorted(_BY_TYPE)}")
    return model.model_validate(data)  # type: ignore[return-value]


def record_line(rec: MemoryRecord) -> dict[str, Any]:
    """The export line of one stored record."""
    return {"type": "record", "realm": rec.scope.realm, "record": rec.to_json(),
            "tombstoned_at_ms": rec.tombstoned_at_ms, "rank_set_at_ms": rec.rank_set_at_ms}
