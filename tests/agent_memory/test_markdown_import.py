from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.markdown import parse_markdown
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.storage.layout import decode_path_segment, encode_path_segment


def block(title: str, memory_id: str, body: str, tags=(), created=1000, updated=2000, marker="mobkit-agent-memory") -> str:
    meta = json.dumps({"memory_id": memory_id, "tags": list(tags), "created_at_ms": created, "updated_at_ms": updated})
    return f"## {title}\n<!-- {marker} {meta} -->\n{body}\n<!-- /{marker} -->\n"


def test_parser_reads_both_markers_and_unescapes() -> None:
    text = (
        "# Memory for lead\n\n"
        + block("Passport", "mem-1", "In the drawer\n\\<!-- /mobkit-agent-memory -->\nsecond line", ("travel",))
        + "\n"
        + block("Meta", "mem-2", "ours", marker="meta-agent-memory")
    )
    parsed = parse_markdown(text)
    assert [(r.memory_id, r.title, r.body, r.tags) for r in parsed.records] == [
        ("mem-1", "Passport", "In the drawer\n<!-- /mobkit-agent-memory -->\nsecond line", ("travel",)),
        ("mem-2", "Meta", "ours", ()),
    ]
    assert parsed.records[0].created_at_ms == 1000 and parsed.records[0].updated_at_ms == 2000
    assert parsed.warnings == []


def test_parser_drops_malformed_records() -> None:
    text = (
        "## No metadata\njust text\n"
        "## Bad json\n<!-- mobkit-agent-memory {not json} -->\nbody\n<!-- /mobkit-agent-memory -->\n"
        + block("Empty", "mem-e", "   ")
        + "## Missing id\n<!-- mobkit-agent-memory {\"created_at_ms\": 1, \"updated_at_ms\": 1} -->\nb\n<!-- /mobkit-agent-memory -->\n"
        + block("Good", "mem-g", "good body")
        + "## Unterminated\n<!-- mobkit-agent-memory {\"memory_id\": \"mem-u\", \"created_at_ms\": 1, \"updated_at_ms\": 1} -->\nrest of file"
    )
    parsed = parse_markdown(text)
    assert [r.memory_id for r in parsed.records] == ["mem-g", "mem-u"]
    assert parsed.records[1].body == "rest of file"
    assert len(parsed.warnings) == 4


@given(st.text(max_size=500))
def test_parser_never_crashes(text: str) -> None:
    parsed = parse_markdown(text)
    assert all(r.body.strip() and r.title for r in parsed.records)


@given(st.text(min_size=1, max_size=40))
def test_path_segment_round_trips(value: str) -> None:
    encoded = encode_path_segment(value)
    assert all(c.isascii() and (c.isalnum() or c in "-_%") for c in encoded)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return  # lone surrogates are not file names
    assert decode_path_segment(encoded) == value


def _legacy(root: Path, realm: str, identity: str, text: str) -> Path:
    folder = root / encode_path_segment(realm)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{encode_path_segment(identity)}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_import_at_first_open(tmp_path: Path) -> None:
    root = tmp_path / "am"
    clock = ManualClock()
    good = _legacy(
        root,
        "default",
        "lead:main",
        block("Passport", "mem-1", "In the drawer", ("Travel",))
        + block("Passport", "mem-1", "duplicate id")
        + block("Leak", "mem-2", "aws AKIAIOSFODNN7EXAMPLE")
        + block("Huge", "mem-3", "x" * 70_000)
        + "## Broken\nno metadata\n",
    )
    bad_name = _legacy(root, "default", "", block("T", "mem-9", "b"))
    bad_name = bad_name.rename(bad_name.with_name("%00.md"))
    with SqliteAgentMemoryStore(root, clock) as store:
        me = Scope.identity("default", "lead:main")
        records = store.active_records("default", me)
        assert [(r.id, r.title, r.body, r.tags) for r in records] == [("mem-1", "Passport", "In the drawer", ("travel",))]
        rec = records[0]
        assert (rec.created_at_ms, rec.updated_at_ms) == (1000, 2000)
        assert rec.provenance.author == Author.agent("lead:main")
        assert store.audit_rows("default", "mem-1")[0]["detail"]["rationale"] == "markdown import"
        summaries = [a for a in store.audit_rows("default") if a["op_kind"] == "import_summary"]
        by_file = {a["detail"]["file"]: a["detail"] for a in summaries}
        detail = by_file["lead%3Amain.md"]
        assert (detail["op"], detail["imported"], detail["skipped"]) == ("markdown_import", 1, 4)
        reasons = " | ".join(detail["skip_reasons"])
        assert "duplicate memory id 'mem-1'" in reasons
        assert "matches the 'aws-access-key-id' secret pattern class" in reasons
        assert "AKIAIOSFODNN7EXAMPLE" not in reasons
        assert "body must be at most 65536 bytes" in reasons
        assert by_file["%00.md"]["imported"] == 0 and by_file["%00.md"]["skipped"] == 1
    assert not good.exists() and good.with_name(good.name + ".imported").exists()
    assert not bad_name.exists() and bad_name.with_name(bad_name.name + ".import-failed").exists()
    # A second open imports nothing again.
    with SqliteAgentMemoryStore(root, clock) as store:
        assert len(store.active_records("default", Scope.identity("default", "lead:main"))) == 1
        assert len([a for a in store.audit_rows("default") if a["op_kind"] == "import_summary"]) == 2


def test_import_is_per_realm_and_lazy(tmp_path: Path) -> None:
    root = tmp_path / "am"
    path = _legacy(root, "acme-corp", "rt:identity:worker:2", block("Note", "mem-a", "acme body"))
    with SqliteAgentMemoryStore(root, ManualClock()) as store:
        record_writes.remember(store, "default", "x:y", "Other realm", "does not import acme")
        assert path.exists()  # not touched until its realm opens
        records = store.active_records("acme-corp", Scope.identity("acme-corp", "identity:worker"))
        assert [r.id for r in records] == ["mem-a"]
    assert path.with_name(path.name + ".imported").exists()
