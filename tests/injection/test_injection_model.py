"""Adapters from stored records to injection value types."""

from __future__ import annotations

from enum import StrEnum
from types import SimpleNamespace

from meta_memory.injection import IndexRow, InjectableRecord


class _Kind(StrEnum):
    IDENTITY = "identity"
    GOTCHA = "gotcha"
    OBSERVED = "agent_observed"


def _stored() -> SimpleNamespace:
    return SimpleNamespace(
        id="mem-9",
        title="T",
        body="B",
        description="hook",
        kind=_Kind.GOTCHA,
        created_at_ms=42,
        scope=SimpleNamespace(kind=_Kind.IDENTITY),
        trust=_Kind.OBSERVED,
    )


def test_injectable_from_stored_record() -> None:
    rec = InjectableRecord.from_stored(_stored())
    assert rec == InjectableRecord("mem-9", "T", "B", 42, "identity", "agent_observed", True)
    bare = InjectableRecord.from_stored(_stored(), with_provenance=False)
    assert (bare.scope_kind, bare.trust, bare.has_provenance) == (None, None, False)
    legacy = InjectableRecord.from_stored(SimpleNamespace(memory_id="m", title="t", body="b"))
    assert legacy == InjectableRecord("m", "t", "b")


def test_index_row_from_stored_record() -> None:
    day = 86_400_000
    assert IndexRow.from_stored(_stored()) == IndexRow("mem-9", "gotcha", "T", "hook", None)
    assert IndexRow.from_stored(_stored(), now_ms=42 + 3 * day).age_days == 3
    updated = _stored()
    updated.updated_at_ms = 42 + day
    assert IndexRow.from_stored(updated, now_ms=42 + 3 * day).age_days == 2
    meta = SimpleNamespace(id="mem-1", kind="fact", title="t", description="", age_days=5, rank=None)
    assert IndexRow.from_stored(meta, now_ms=10**13) == IndexRow("mem-1", "fact", "t", "", 5)
