"""The neutral foreign record and its one mapping: ``imported_from`` in the provenance (JSON both ways,
read by the secret scanner), the derived id, and a secret in a source's id refused without naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory.model import Author, ImportedFrom, Provenance
from meta_memory.agent_memory.secrets import scan_record
from meta_memory.portability.foreign import ForeignRecord, ForeignSummary, foreign_memory_id, import_foreign, landing_op
from support import meta_memory_cli as mm


def rec(source_id: str = "m1", body: str = "Alice prefers tea", **kw: object) -> ForeignRecord:
    base: dict[str, object] = dict(position=1, system="mem0", source_id=source_id, identity="alice", title="Tea",
                                   body=body, created_at_ms=1_000, updated_at_ms=2_000)
    base.update(kw)
    return ForeignRecord(**base)  # type: ignore[arg-type]


@given(st.text(min_size=1, max_size=1024), st.sampled_from(["mem0", "langgraph"]))
def test_imported_from_round_trips_in_the_provenance(source_id: str, system: str) -> None:
    prov = Provenance(author=Author.application(), imported_from=ImportedFrom(system, source_id))
    assert Provenance.from_json(prov.to_json()) == prov
    assert prov.to_json()["imported_from"] == {"system": system, "source_id": source_id}
    assert source_id in prov.strings()  # the secret scanner reads it


def test_imported_from_caps_and_absence() -> None:
    assert "imported_from" not in Provenance(author=Author.application()).to_json()
    for system, source_id in (("", "x"), ("x" * 33, "x"), ("mem0", ""), ("mem0", "x" * 1025)):
        with pytest.raises(ValueError, match="imported_from"):
            ImportedFrom(system, source_id)
    with pytest.raises(ValueError, match="imported_from.source_id"):
        Provenance.from_json({"author": {"author": "application"}, "imported_from": {"system": "mem0", "source_id": 7}})


def test_the_one_mapping_is_an_application_create_with_the_source_times() -> None:
    op = landing_op(rec(metadata={"topic": "drinks"}, expires_at_ms=9_999), "default")
    assert op.id == foreign_memory_id("mem0", "m1") and op.id.startswith("mem0-")
    assert op.record.provenance.author == Author.application()
    assert op.record.provenance.imported_from == ImportedFrom("mem0", "m1")
    assert (op.created_at_ms, op.updated_at_ms) == (1_000, 2_000)
    assert op.scope.key == "alice" and op.scope.realm == "default"
    assert foreign_memory_id("mem0", "m1") != foreign_memory_id("langgraph", "m1")


def test_a_secret_in_the_source_id_is_refused_and_not_named() -> None:
    leaked = "AKIAIOSFODNN7EXAMPLE"
    assert scan_record(landing_op(rec(source_id=leaked), "default").record) is not None
    summary = import_foreign(None, [rec(source_id=leaked), rec(source_id="ok", body="Bob likes hiking")],
                             ForeignSummary("mem0", "test", "default", dry_run=True))
    assert summary.created == 1 and len(summary.refused) == 1
    assert summary.refused[0].source_id == "" and leaked not in summary.refused[0].why


@pytest.mark.parametrize(("args", "words"), [
    (["x.jsonl", "--identity", "a"], b"--identity applies to --from mem0 or --from langgraph only"),
    (["x.jsonl", "--dry-run"], b"--dry-run applies to --from mem0 or --from langgraph only"),
    (["--from", "mem0", "m", "--identity-segment", "1"], b"--identity-segment applies to --from langgraph"),
    (["--from", "langgraph", "l", "--identity-from", "agent_id"], b"apply to --from mem0"),
    (["--from", "langgraph", "l", "--identity", "a", "--identity-segment", "1"], b"not both"),
    (["--from", "mem0", "m", "--allow-ledger"], b"meta-memory export files only"),
    (["--from", "mem0", "m", "--identity", " "], b"identity"),
    (["--from", "mem0", "m", "--realm", " "], b"realm"),
])
def test_usage_errors_name_the_option(tmp_path: Path, args: list[str], words: bytes) -> None:
    done = mm("import", *args, "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert not (tmp_path / "s").exists()
