"""Size caps on the remaining write paths: the legacy markdown import (an over-cap record is
skipped and the skip is audited), quarantine and release (an over-cap write never reaches the
quarantine, so a release can never exceed the caps), and the MCP server as a real stdio process."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from caps_support import (
    BODY,
    DESCRIPTION,
    TAG_BYTES,
    TAG_COUNT,
    TITLE,
    Raw,
    fill,
    memory_id_of,
    uniq,
)
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from support import (
    GatewayProcess,
    legacy_markdown_file,
    markdown_record,
    raw_rows,
    realm_db,
    serving,
    start_gateway,
    write_config,
)

AT_CAP_TAGS = [fill(TAG_BYTES, "é", prefix=f"{i:02d}") for i in range(TAG_COUNT)]


def test_markdown_import_skips_over_cap_records_and_audits_the_skips(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ident = "agent:legacy"
    at_cap_body = fill(BODY, "€", prefix="legacy body ")
    legacy = legacy_markdown_file(state, ident)
    legacy.write_text(
        markdown_record("mem-legacy-title-at-cap", "é" * 100, "title at the cap", tags=AT_CAP_TAGS)
        + markdown_record("mem-legacy-body-at-cap", "Body at the cap", at_cap_body)
        + markdown_record("mem-legacy-title-over", "é" * 101, "title one byte over")
        + markdown_record("mem-legacy-body-over", "Body over the cap", fill(BODY + 1, prefix="over "))
        + markdown_record("mem-legacy-many-tags", "Too many tags", "33 tags", tags=[f"t{i}" for i in range(TAG_COUNT + 1)])
        + markdown_record("mem-legacy-long-tag", "Tag over", "a tag of 65 bytes", tags=[fill(TAG_BYTES + 1, "t")]),
        encoding="utf-8")
    # the first recall of the identity runs the legacy import inside its time box: give it room on a loaded machine
    gw = start_gateway(state, config=write_config(tmp_path / "config.toml", "[agent_memory]\nrecall_timeout_ms = 10000\n"))
    client = Raw(gw)
    try:
        ids = [r["memory_id"] for r in client.result("meta/agent_memory/recall", {
            "identity": ident, "selection": "always", "max_entries": 64})["records"]]
        assert sorted(ids) == ["mem-legacy-body-at-cap", "mem-legacy-title-at-cap"]
        rec = client.result("meta/memory/panel/record", {"memory_id": "mem-legacy-title-at-cap"})["record"]
        assert rec["title"] == "é" * 100 and rec["tags"] == sorted(AT_CAP_TAGS)
        assert rec["trust"] == "agent_observed" and rec["created_at_ms"] == 1_700_000_000_000
        body = client.result("meta/memory/panel/record", {"memory_id": "mem-legacy-body-at-cap"})["record"]["body"]
        assert body == at_cap_body and len(body.encode()) == BODY
        for skipped in ("mem-legacy-title-over", "mem-legacy-body-over", "mem-legacy-many-tags", "mem-legacy-long-tag"):
            assert client.rpc("meta/memory/panel/record", {"memory_id": skipped})["error"]["code"] == -32001
    finally:
        client.close()
        gw.stop()
    assert not legacy.exists() and legacy.with_name(legacy.name + ".imported").exists()
    conn = sqlite3.connect(realm_db(state))
    try:
        rows = [json.loads(r[0]) for r in conn.execute("SELECT detail FROM audit WHERE op_kind = 'import_summary'")]
    finally:
        conn.close()
    assert len(rows) == 1
    summary = rows[0]
    assert summary["op"] == "markdown_import" and summary["file"] == legacy.name
    assert (summary["imported"], summary["skipped"]) == (2, 4)
    assert summary["skip_reasons"] == [
        f"record 'mem-legacy-title-over': title must be at most {TITLE} bytes",
        f"record 'mem-legacy-body-over': body must be at most {BODY} bytes",
        f"record 'mem-legacy-many-tags': tags must contain at most {TAG_COUNT} entries",
        f"record 'mem-legacy-long-tag': tags.0 must be at most {TAG_BYTES} bytes",
    ]


# ----------------------------------------------------------------------------- quarantine and release


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Raw]:
    """A gateway under the strict posture: every LLM-authored write lands quarantined."""
    root = tmp_path_factory.mktemp("strict")
    config = write_config(root / "config.toml", '[agent_memory]\nllm_writes = "quarantined"\n')
    with serving(root / "state", Raw, config=config) as client:
        yield client


def _tool(client: Raw, ident: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return client.result("meta/agent_memory/tool", {"identity": ident, "session_key": "s", "arguments": arguments})


def test_an_at_cap_quarantined_write_releases_byte_for_byte(strict: Raw) -> None:
    ident = f"agent:rel-{uniq()}"
    fields = {"title": "😀" * 50, "description": fill(DESCRIPTION, "é"), "body": fill(BODY, "€", prefix=uniq()),
              "tags": AT_CAP_TAGS}
    out = _tool(strict, ident, {"action": "remember", **fields})
    assert "QUARANTINED" in out["text"], out
    mid = memory_id_of(out["text"])
    origin = strict.result("meta/memory/panel/record", {"memory_id": mid})["record"]
    decided = strict.result("meta/memory/quarantine/decide", {
        "identity": ident, "memory_id": mid, "verdict": "release", "expected_content_hash": origin["content_hash"]})
    succ = strict.result("meta/memory/panel/record", {"memory_id": decided["successor"]["memory_id"]})["record"]
    for key, cap in (("title", TITLE), ("description", DESCRIPTION), ("body", BODY)):
        assert succ[key] == origin[key] == fields[key]
        assert len(succ[key].encode()) == cap
    assert succ["tags"] == origin["tags"] == sorted(AT_CAP_TAGS)
    assert succ["status"] == {"status": "active"}


@pytest.mark.parametrize(("field", "value", "rule"), [
    ("title", "😀" * 50 + "a", f"title must be at most {TITLE} bytes"),
    ("description", fill(DESCRIPTION, "é") + "a", f"description must be at most {DESCRIPTION} bytes"),
    ("body", fill(BODY + 1, "😀"), f"body must be at most {BODY} bytes"),
    ("tags", AT_CAP_TAGS + ["one-more"], f"tags must contain at most {TAG_COUNT} entries"),
    ("tags", ["é" * 33], f"tags.0 must be at most {TAG_BYTES} bytes"),
])
def test_an_over_cap_write_never_reaches_the_quarantine(strict: Raw, field: str, value: Any, rule: str) -> None:
    ident = f"agent:rel-{uniq()}"
    before = strict.result("meta/memory/panel/quarantine", {"limit": 200})["records"]
    args = {"action": "remember", "title": "Capped", "body": f"body {uniq()}", field: value}
    out = _tool(strict, ident, args)
    assert out["is_error"] is True and rule in out["text"], out
    assert strict.result("meta/memory/panel/quarantine", {"limit": 200})["records"] == before
    assert strict.result("meta/memory/panel/records", {"scope": "identity", "identity": ident})["records"] == []


class _QuarantineEverything:
    def quarantine_reason(self, author: Author, batch_kind: Any, evidence: Any, *, realm: str) -> str | None:
        return "strict posture" if author.kind.value == "agent" else None


def test_the_store_validator_refuses_an_over_cap_quarantined_write(tmp_path: Path) -> None:
    store = SqliteAgentMemoryStore(tmp_path / "agent-memory", ManualClock(), gate=_QuarantineEverything())
    try:
        scope, author = Scope.identity("default", "agent:x"), Author.agent("agent:x")
        ok, _ = record_writes.remember_authored(store, "default", scope, NewMemoryRecord(
            title="é" * 100, body="at the cap", provenance=Provenance(author)), author)
        assert ok.status.kind.value == "quarantined"
        for record, rule in (
            (NewMemoryRecord(title="é" * 101, body="over", provenance=Provenance(author)), "title must be at most 200"),
            (NewMemoryRecord(title="t", body=fill(BODY + 1), provenance=Provenance(author)), "body must be at most 65536"),
            (NewMemoryRecord(title="t", body="b", description=fill(DESCRIPTION + 1), provenance=Provenance(author)),
             "description must be at most 400"),
        ):
            with pytest.raises(AgentMemoryError) as info:
                record_writes.remember_authored(store, "default", scope, record, author)
            assert info.value.reason == "invalid_record" and rule in info.value.message
        rows = raw_rows(store, "default", "SELECT memory_id, status_kind FROM records")
        assert [tuple(r) for r in rows] == [(ok.id, "quarantined")]
    finally:
        store.close()


# ----------------------------------------------------------------------------- MCP over stdio


def test_the_mcp_server_process_enforces_the_caps(gateway_proc: GatewayProcess) -> None:
    ident = f"agent:mcp-{uniq()}"
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                   args=["-m", "meta_memory.cli", "mcp", "--url", gateway_proc.url, "--identity", ident])
    at_cap = {"action": "remember", "title": "é" * 100, "description": fill(DESCRIPTION), "body": f"b {uniq()}"}
    over = {"action": "remember", "title": "é" * 101, "body": f"b {uniq()}"}

    async def scenario() -> tuple[Any, Any]:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return (await session.call_tool("memory", at_cap), await session.call_tool("memory", over))

    ok, refused = anyio.run(scenario)
    assert ok.is_error is False, ok.content[0].text
    raw = Raw(gateway_proc)
    try:
        rec = raw.result("meta/memory/panel/record", {"memory_id": memory_id_of(ok.content[0].text)})["record"]
        assert rec["title"] == "é" * 100 and rec["description"] == fill(DESCRIPTION)
        assert refused.is_error is True
        assert "title must be at most 200 bytes" in refused.content[0].text
        ids = [r["id"] for r in raw.result("meta/memory/panel/records", {"scope": "identity", "identity": ident})["records"]]
        assert ids == [rec["id"]]
    finally:
        raw.close()
