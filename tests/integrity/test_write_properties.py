"""Properties of the write rules behind "no silent data changes": tag merges on duplicate
remembers, updates that keep omitted fields, and the markdown import's timestamp range."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.fields import normalize_tags
from meta_memory.agent_memory.markdown import IMPORT_TIMESTAMP_RANGE_MS, parse_markdown
from meta_memory.agent_memory.model import Scope, StatusKind
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
tag = st.text(alphabet="abcXYZ-_ é", min_size=1, max_size=6).filter(lambda t: t.strip())
tags = st.lists(tag, max_size=20)


@SETTINGS
@given(first=tags, second=tags)
def test_a_duplicate_remember_ends_with_the_union_of_both_tag_lists(tmp_path: Path, first: list[str],
                                                                    second: list[str]) -> None:
    store = SqliteAgentMemoryStore(tmp_path / uuid.uuid4().hex, ManualClock(1))
    try:
        a, created = record_writes.remember(store, "r", "who:me", "Same title", "same body", first)
        assert created
        union = set(normalize_tags(first)) | set(normalize_tags(second))
        try:
            b, created_b, merge = record_writes.remember_merging(store, "r", "who:me", "Same title", "same body", second)
        except AgentMemoryError as exc:
            assert len(union) > 32 and "merged tags" in exc.detail
            [only] = store.active_records("r", Scope.identity("r", "who:me"))
            assert only.id == a.memory_id  # a refused merge changes nothing
            return
        assert not created_b
        assert b.tags == sorted(union)
        added = set(normalize_tags(second)) - set(normalize_tags(first))
        if added:
            assert merge is not None and merge.supersedes == a.memory_id and set(merge.tags_added) == added
            assert store.get("r", a.memory_id).status.kind is StatusKind.SUPERSEDED
        else:
            assert merge is None and b.memory_id == a.memory_id
        assert [r.id for r in store.active_records("r", Scope.identity("r", "who:me"))] == [b.memory_id]
    finally:
        store.close()


@SETTINGS
@given(title=st.none() | st.text(alphabet="abc xyz", min_size=1, max_size=12).filter(str.strip),
       body=st.none() | st.text(alphabet="def uvw", min_size=1, max_size=12).filter(str.strip),
       new_tags=st.none() | tags)
def test_update_changes_exactly_the_given_fields(tmp_path: Path, title: str | None, body: str | None,
                                                 new_tags: list[str] | None) -> None:
    store = SqliteAgentMemoryStore(tmp_path / uuid.uuid4().hex, ManualClock(1))
    try:
        prior, _ = record_writes.remember(store, "r", "who:me", "Old title", "old body", ["old"])
        if title is None and body is None and new_tags is None:
            try:
                record_writes.update(store, "r", "who:me", prior.memory_id)
            except AgentMemoryError as exc:
                assert "at least one of title, body, tags" in exc.detail
                return
            raise AssertionError("an update with nothing to change was accepted")
        new, superseded = record_writes.update(store, "r", "who:me", prior.memory_id, title, body, new_tags)
        assert superseded == prior.memory_id
        assert new.title == (" ".join(title.split()) if title is not None else "Old title")
        assert new.body == (body.strip() if body is not None else "old body")
        assert new.tags == (list(normalize_tags(new_tags)) if new_tags is not None else ["old"])
    finally:
        store.close()


def _md(created: object, updated: object) -> str:
    meta = json.dumps({"memory_id": "mem-x", "tags": [], "created_at_ms": created, "updated_at_ms": updated})
    return f"## Title\n<!-- meta-agent-memory {meta} -->\nbody\n<!-- /meta-agent-memory -->\n"


@settings(max_examples=300, deadline=None)
@given(created=st.integers(-10**19, 10**19), updated=st.integers(-10**19, 10**19))
def test_markdown_timestamps_are_accepted_exactly_within_the_range(created: int, updated: int) -> None:
    low, high = IMPORT_TIMESTAMP_RANGE_MS
    parsed = parse_markdown(_md(created, updated))
    inside = low <= created <= high and low <= updated <= high
    assert (len(parsed.records) == 1) is inside
    if not inside:
        [warning] = parsed.warnings
        assert "outside the accepted range" in warning and ("created_at_ms" in warning or "updated_at_ms" in warning)


def test_markdown_timestamp_edges() -> None:
    low, high = IMPORT_TIMESTAMP_RANGE_MS
    assert len(parse_markdown(_md(low, high)).records) == 1
    assert parse_markdown(_md(high + 1, high + 1)).records == []
    assert parse_markdown(_md(10**18, 10**18)).records == []
    assert parse_markdown(_md(1.5e12, 1.5e12)).records == []  # not an integer
    assert parse_markdown(_md(True, 1)).records == []
