"""Shared helpers for the recall tests: a small index and record factory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meta_memory.recall.standalone import IndexedRecord, StandaloneIndex

IDENTITY = "identity:luka"
T0 = 1_700_000_000_000
DAY_MS = 86_400_000


def rec(
    memory_id: str,
    title: str,
    body: str,
    *,
    tags: tuple[str, ...] = (),
    description: str = "",
    at: int = T0,
    updated: int | None = None,
    scope: str = IDENTITY,
    status: str = "active",
) -> IndexedRecord:
    """A record created at ``at`` (updated at ``updated`` or ``at``)."""
    return IndexedRecord(
        memory_id=memory_id,
        title=title,
        body=body,
        description=description,
        tags=tags,
        created_at_ms=at,
        updated_at_ms=at if updated is None else updated,
        scope_key=scope,
        status_kind=status,
    )


@pytest.fixture
def index() -> Iterator[StandaloneIndex]:
    idx = StandaloneIndex()
    yield idx
    idx.close()
