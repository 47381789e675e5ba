"""A single application remember holds its payload to the field rules and the secret scan once, as a bulk
item is: the record :func:`~meta_memory.agent_memory.writes.app_record` built and the planner scanned is
handed to the validator as vetted, by object identity. Any other record (a tool's or the distiller's
write, a tag merge's new version) is still checked in full by the validator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes, validator
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError

R = "default"
ID = "lead:main"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every record the secret scan is run on (the validator's one scan function)."""
    seen: list[Any] = []
    real = validator.scan_record

    def counting(record: Any, *more: str) -> str | None:
        seen.append(record)
        return real(record, *more)

    monkeypatch.setattr(validator, "scan_record", counting)
    return seen


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SqliteAgentMemoryStore(tmp_path / "am", ManualClock(1_700_000_000_000)) as s:
        yield s


def test_a_single_remember_scans_its_record_once(store: Any, scans: list[Any]) -> None:
    rec, created, _ = record_writes.remember_record(store, R, ID, "  Deploy   notes ", " restart the worker ", ["b"])
    assert created and (rec.title, rec.body, rec.tags) == ("Deploy notes", "restart the worker", ("b",))
    assert len(scans) == 1


def test_a_secret_in_a_single_remember_is_still_refused(store: Any, scans: list[Any]) -> None:
    with pytest.raises(AgentMemoryError) as info:
        record_writes.remember_record(store, R, ID, "keys", f"the key is {AWS}")
    assert info.value.reason == "secret_detected"
    assert store.list_active(R, Scope.identity(R, ID)) == []


def test_a_tag_merge_version_is_checked_in_full(store: Any, scans: list[Any]) -> None:
    record_writes.remember_record(store, R, ID, "Deploy notes", "restart the worker", ["a"])
    scans.clear()
    rec, created, merge = record_writes.remember_record(store, R, ID, "Deploy notes", "restart the worker", ["b"])
    assert not created and merge is not None and rec.tags == ("a", "b")
    assert len(scans) == 2  # the item, then the validator's check of the new version it supersedes with


def test_an_authored_write_is_still_held_to_the_field_rules_by_the_validator(store: Any, scans: list[Any]) -> None:
    # past the title cap (authored_record does not check the fields)
    record = NewMemoryRecord(title="t" * 201, body="a body", provenance=Provenance(Author.application()))
    with pytest.raises(AgentMemoryError) as info:
        record_writes.remember_authored(store, R, Scope.identity(R, ID), record, Author.application())
    assert info.value.reason == "invalid_record" and "title" in info.value.detail
