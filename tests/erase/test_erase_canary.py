"""The canary: one unique string written through every path that stores agent-memory content, then
``erase_identity``; afterwards no byte of any file of the state directory, and no text of any column
of any table of the PostgreSQL schema, holds it — on SQLite and on PostgreSQL.

Paths written (each with its own suffix, so a leak names its path): ``remember`` (title, body, tags),
``remember_batch``, the ``memory`` tool's remember and update, a proposal (``propose_to_mob``), a
quarantined write the operator releases with a rationale (a verdict rationale), a quarantined write
the steward tombstones and one it stages for a gated promotion (denied), one left undecided in
quarantine (the erase does not wait for its review), the steward's notes in a
dream run (proposal, harvest and usage-audit rationales, a contradiction's reason), an exit-interview
harvest's cause, an injection (the session state's injected set), ``meta-memory import`` of a file
and (SQLite) the legacy markdown import. The assertion ledger is not agent memory and is not erased.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema
from e2e_review.e2e_review_support import FakeStewardLlm
from support import (
    GatewayProcess,
    legacy_markdown_file,
    markdown_record,
    memory_id_of,
    meta_memory_cli,
    poisoned_write,
    start_gateway,
    write_config,
)

pytestmark = pytest.mark.gateway

ID = "lead:main"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """``None`` for SQLite, else the throw-away PostgreSQL schema the gateway uses."""
    if request.param == "sqlite":
        yield None
        return
    require_postgres()
    with throwaway_schema() as schema:
        yield schema


def _config(path: Path, llm: FakeStewardLlm, schema: str | None) -> Path:
    store = f'store = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n' if schema is not None else ""
    return write_config(path, f'[agent_memory]\n{store}[agent_memory.steward]\nkind = "llm"\n'
                              f'base_url = "{llm.base_url}"\nmodel = "fake-steward"\nllm_release = "direct"\n')


def _state_bytes(state: Path) -> dict[str, bytes]:
    return {str(p.relative_to(state)): p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file()}


def _leaks_in_files(state: Path, canary: str) -> list[str]:
    needle = canary.encode()
    return [name for name, data in _state_bytes(state).items() if needle in data]


def _leaks_in_postgres(schema: str, canary: str) -> list[str]:
    """``table.column`` of every column of every table of the schema whose text holds the canary."""
    import psycopg
    from psycopg import sql

    found: list[str] = []
    with psycopg.connect(DSN) as conn:
        columns = conn.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = %s AND t.table_type = 'BASE TABLE' ORDER BY 1, 2", (schema,)).fetchall()
        assert len({t for t, _ in columns}) >= 10, columns
        for table, column in columns:
            query = sql.SQL("SELECT count(*) FROM {}.{} WHERE {}::text LIKE %s").format(
                sql.Identifier(schema), sql.Identifier(table), sql.Identifier(column))
            (n,) = conn.execute(query, (f"%{canary}%",)).fetchone()  # type: ignore[misc]
            if n:
                found.append(f"{table}.{column}")
    return found


def _import_file(path: Path, canary: str) -> Path:
    """An export file (unsigned: from elsewhere) holding one record of ``ID`` with the canary."""
    header = {"type": "header", "format": "meta-memory-export", "version": 1, "exported_at_ms": 1,
              "realms": ["default"]}
    rec = {"id": f"mem-imported-{uuid.uuid4().hex[:8]}", "scope": {"scope": "identity", "realm": "default", "identity": ID},
           "kind": "fact", "title": "Imported note", "description": "", "body": f"{canary}-import body",
           "tags": [], "provenance": {"evidence": [], "author": {"author": "application"}}, "trust": "agent_observed",
           "status": {"status": "active"}, "derived_from": [], "created_at_ms": 1_700_000_000_000,
           "updated_at_ms": 1_700_000_000_000, "usage": {}, "ever_quarantined": False}
    line = {"type": "record", "realm": "default", "record": rec, "tombstoned_at_ms": None, "rank_set_at_ms": None}
    path.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    return path


def _write_everywhere(gw: GatewayProcess, llm: FakeStewardLlm, canary: str) -> None:
    """Write the canary through every path (the steward answers ``llm``'s dream with notes holding it)."""
    r = gw.result
    remembered = r("meta/agent_memory/remember", {
        "identity": ID, "title": f"Note {canary}-title", "body": f"{canary}-remember body",
        "tags": [f"{canary}-tag"]})["memory_id"]
    batch = r("meta/agent_memory/remember_batch", {"identity": ID, "records": [
        {"title": "Batch one", "body": f"{canary}-batch-1 body"}, {"title": "Batch two", "body": f"{canary}-batch-2"}]})
    assert batch["created"] == 2, batch
    r("meta/session/note", {"identity": ID, "session_key": "clean"})
    out = r("meta/agent_memory/tool", {"identity": ID, "session_key": "clean", "arguments": {
        "action": "remember", "title": "Tool note", "body": f"{canary}-tool-remember"}})
    assert not out["is_error"], out
    tool_id = memory_id_of(out["text"])
    out = r("meta/agent_memory/tool", {"identity": ID, "session_key": "clean", "arguments": {
        "action": "update", "memory_id": tool_id, "title": "Tool note", "body": f"{canary}-tool-update"}})
    assert not out["is_error"], out
    out = r("meta/agent_memory/tool", {"identity": ID, "session_key": "clean", "mob": "team", "arguments": {
        "action": "propose_to_mob", "title": "For the team", "body": f"{canary}-proposal"}})
    assert not out["is_error"], out
    # a quarantined write the operator releases, with a rationale
    q_release = poisoned_write(r, ID, "Web claim", f"{canary}-released claim")
    detail = r("meta/memory/panel/record", {"realm": "default", "memory_id": q_release})
    r("meta/memory/quarantine/decide", {"realm": "default", "identity": ID, "memory_id": q_release,
                                        "verdict": "release", "expected_content_hash": detail["record"]["content_hash"],
                                        "rationale": f"checked {canary}-operator-rationale"})
    q_tombstone = poisoned_write(r, ID, "Web spam", f"{canary}-spam claim")
    q_gate = poisoned_write(r, ID, "Web tip", f"{canary}-gated claim")
    # an injection: the record enters a session's injected set and is counted for the usage audit
    r("meta/session/note", {"identity": ID, "session_key": "inject"})
    injected = r("meta/turn/inject", {"identity": ID, "session_key": "inject", "query_text": f"{canary}-remember"})
    assert canary in json.dumps(injected), injected
    deadline = time.monotonic() + 20
    while r("meta/memory/panel/record", {"realm": "default", "memory_id": remembered})["record"]["usage"].get(
            "injected_count", 0) < 1:
        assert time.monotonic() < deadline, "the injection was never counted"
        time.sleep(0.1)
    r("meta/session/retire", {"identity": ID, "session_key": "clean", "cause": f"{canary}-harvest cause"})

    def decide(payload: dict[str, Any]) -> dict[str, Any]:
        why = f"{canary}-steward-rationale"
        return {
            "quarantine_verdicts": [{"record_id": q["record_id"], "rationale": why,
                                     "verdict": "tombstone" if q["record_id"] == q_tombstone else "promote_pending_gate"}
                                    for q in payload["quarantine"] if q["record_id"] in (q_tombstone, q_gate)],
            "proposal_verdicts": [{"proposal_id": p["proposal_id"], "verdict": "hold", "rationale": why}
                                  for p in payload["proposals"]],
            "harvest_verdicts": [{"harvest_id": h["harvest_id"], "verdict": "keep", "rationale": why}
                                 for h in payload["harvests"]],
            "usage_audit": [{"record_id": a["record_id"], "verdict": "dead_weight", "rationale": why}
                            for a in payload["usage_audit"]],
            "contradictions": [{"record_ids": [remembered], "operational": False, "entity": f"{canary}-entity",
                                "topic": "t", "reason": f"{canary}-contradiction"}],
        }

    llm.decide = decide
    dream = r("meta/memory/steward/dream", {})
    assert dream["status"] == "completed", dream
    notes = json.dumps(dream["detail"])
    for what in ("proposal", "harvest", "usage_audit", "quarantine"):
        assert f'"category": "{what}"' in notes, (what, notes)
    gates = _pending_promotions(gw)
    assert len(gates) == 1, gates
    r("meta/gating/decide", {"realm": "default", "pending_id": gates[0], "decision": "deny"})
    detail = r("meta/memory/panel/record", {"realm": "default", "memory_id": q_gate})  # still quarantined: decide it
    r("meta/memory/quarantine/decide", {"realm": "default", "identity": ID, "memory_id": q_gate,
                                        "verdict": "tombstone", "expected_content_hash": detail["record"]["content_hash"],
                                        "rationale": f"{canary}-discard-rationale"})
    # and one quarantined write nobody decided: the erase does not wait for its review
    poisoned_write(r, ID, "Web rumour", f"{canary}-undecided claim")
    assert r("meta/agent_memory/recall", {"identity": ID, "query_text": f"{canary}-remember"})["records"]


def _pending_promotions(gw: GatewayProcess) -> list[str]:
    events = gw.result("meta/events/list", {"limit": 1000})["events"]
    return [e["data"]["pending_id"] for e in events if e["event_type"] == "memory.promotion.pending_gate"]


def test_nothing_of_an_erased_identity_is_left_anywhere(tmp_path: Path, backend: str | None) -> None:
    canary = f"kqzv{uuid.uuid4().hex[:10]}"
    state = tmp_path / "state"
    llm = FakeStewardLlm()
    try:
        config = _config(tmp_path / "config.toml", llm, backend)
        done = meta_memory_cli("import", str(_import_file(tmp_path / "export.jsonl", canary)), "--state-dir", str(state),
                      "--config", str(config), "--quiet")
        assert done.returncode == 0, done.stderr
        if backend is None:
            legacy_markdown_file(state, ID).write_text(
                markdown_record("mem-legacy-1", "Legacy note", f"{canary}-markdown body"), encoding="utf-8")
        gw = start_gateway(state, config=config)
        try:
            _write_everywhere(gw, llm, canary)
            assert _leaks_in_files(state, canary) or backend is not None  # the canary is really there
            if backend is not None:
                assert _leaks_in_postgres(backend, canary)
            erased = gw.result("meta/agent_memory/erase_identity", {"identity": ID, "reason": "privacy request"})
            assert _leaks_in_files(state, canary) == []  # while serving
            if backend is not None:
                assert _leaks_in_postgres(backend, canary) == []
            assert erased["count"] >= 10 and len(erased["proposals"]) == 1, erased
            # and it stays out: the same content through the same doors is refused
            again = gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": f"Note {canary}-title",
                                                          "body": f"{canary}-remember body"})
            assert again["error"]["code"] == -32040 and again["error"]["data"]["reason"] == "erased", again
            assert canary not in again["error"]["message"]
        finally:
            gw.stop()
        assert _leaks_in_files(state, canary) == []  # and after a clean stop
    finally:
        llm.close()
