"""Several gateways, one PostgreSQL store.

Two ``meta-memory serve`` processes with their own state directories share
one PostgreSQL schema: a write acknowledged by one is read by the other, and
SIGKILL of one mid-write loses no acknowledged write while the other keeps
serving. Session state (taint, reset marks, injection dedup and budgets,
nonces) lives in the shared database too, so a host that fails over or
load-balances a session between gateways cannot launder its taint.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from support import GatewayProcess, raw_rows, start_gateway

pytestmark = [pytest.mark.gateway, pytest.mark.postgres]

ID = "lead:main"


def remember(gw: GatewayProcess, title: str, body: str, identity: str = ID) -> str:
    return gw.result("meta/agent_memory/remember", {"identity": identity, "title": title, "body": body})["memory_id"]


def recall_titles(gw: GatewayProcess, query: str, identity: str = ID) -> list[str]:
    result = gw.result("meta/agent_memory/recall", {"identity": identity, "query_text": query})
    return [r["title"] for r in result["records"]]


def test_a_write_on_one_gateway_is_read_on_the_other(two_gateways: Any) -> None:
    a, b, _ = two_gateways
    mid = remember(a, "Kiwi", "the kiwi lives in the greenhouse")
    assert recall_titles(b, "kiwi greenhouse") == ["Kiwi"]
    # Dedup is decided in the shared database: the same content through b is not a second record.
    again = b.result("meta/agent_memory/remember", {"identity": ID, "title": "Kiwi", "body": "the kiwi lives in the greenhouse"})
    assert again["memory_id"] == mid and again["created"] is False
    b.result("meta/agent_memory/forget", {"identity": ID, "memory_id": mid})
    assert recall_titles(a, "kiwi") == []


def test_killing_one_gateway_mid_write_loses_no_acknowledged_write(two_gateways: Any, schema: str) -> None:
    a, b, config = two_gateways
    acknowledged: dict[str, str] = {}  # memory_id -> unique word
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def writer(gw: GatewayProcess, prefix: str) -> None:
        i = 0
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                word = f"{prefix}word{i:05d}"
                payload = {
                    "jsonrpc": "2.0", "id": i, "method": "meta/agent_memory/remember",
                    "params": {"identity": ID, "title": f"Note {word}", "body": f"body of {word}"},
                }
                try:
                    body = client.post(gw.url + "/rpc", json=payload).json()
                except (httpx.HTTPError, ValueError):
                    return  # the gateway died: this write was never acknowledged
                if "result" in body:
                    with lock:
                        acknowledged[body["result"]["memory_id"]] = word
                else:
                    errors.append(str(body))
                i += 1

    threads = [threading.Thread(target=writer, args=(gw, p)) for gw, p in ((a, "alpha"), (a, "apple"), (b, "bravo"))]
    for t in threads:
        t.start()
    time.sleep(1.5)
    a.stop(signal.SIGKILL)  # mid-write: two clients are writing through it
    time.sleep(1.0)  # b keeps writing after the kill
    stop.set()
    for t in threads:
        t.join(timeout=15)
    assert errors == []
    from_a = [w for w in acknowledged.values() if not w.startswith("bravo")]
    after_kill = [w for w in acknowledged.values() if w.startswith("bravo")]
    assert len(from_a) > 5 and len(after_kill) > 5

    # The survivor serves every acknowledged write, including a's.
    for word in [*from_a[-5:], *after_kill[-3:]]:
        assert recall_titles(b, word) == [f"Note {word}"]
    with PostgresAgentMemoryStore(DSN, schema=schema) as store:
        for memory_id, word in acknowledged.items():
            rec = store.get("default", memory_id)
            assert rec is not None and rec.title == f"Note {word}" and rec.status.is_active
        # A killed transaction leaves no half-written record: every record has its audit row.
        audited = {row["memory_id"] for row in store.audit_rows("default")}
        ids = {r[0] for r in raw_rows(store, "default", "SELECT memory_id FROM records")}
        assert ids == audited

    # A restarted gateway on the same schema joins without migrating again.
    c = start_gateway(a.state_dir.parent / "state-c", config=config)
    try:
        assert recall_titles(c, after_kill[-1]) == [f"Note {after_kill[-1]}"]
    finally:
        c.stop()


def _llm_remember(gw: GatewayProcess, session: str, title: str, identity: str = ID) -> str:
    out = gw.result(
        "meta/agent_memory/tool",
        {"identity": identity, "session_key": session,
         "arguments": {"action": "remember", "title": title, "body": f"{title} body"}},
    )
    return out["text"]


def test_taint_recorded_on_one_gateway_quarantines_writes_through_the_other(two_gateways: Any) -> None:
    a, b, _ = two_gateways
    session = "sess-taint-1"
    verdict = a.result("meta/turn/tool_result", {"identity": ID, "session_key": session, "tool_name": "web_search"})
    assert verdict["session_tainted"] is True
    assert "QUARANTINED" in _llm_remember(a, session, "Tainted on a")
    # Failed over to the other gateway, the same session is still tainted there.
    assert b.result("meta/session/note", {"identity": ID, "session_key": session})["tainted"] is True
    assert "QUARANTINED" in _llm_remember(b, session, "Written via b")
    assert recall_titles(a, "written") == [] and recall_titles(b, "tainted") == []
    # Another identity resetting that session key on b clears nothing of ours.
    b.result("meta/session/reset", {"identity": "intruder:1", "session_key": session})
    assert "QUARANTINED" in _llm_remember(a, session, "Still tainted")
    # Our own reset on b is seen by a: the host's next session there starts clean.
    b.result("meta/session/reset", {"identity": ID, "session_key": session})
    a.result("meta/session/note", {"identity": ID, "session_key": "sess-clean-2"})
    assert "QUARANTINED" not in _llm_remember(a, "sess-clean-2", "Clean after reset")
    assert recall_titles(b, "clean reset") == ["Clean after reset"]


def test_taint_recorded_in_a_realm_on_one_gateway_quarantines_that_realms_writes_through_the_other(
        two_gateways: Any, schema: str) -> None:
    a, b, _ = two_gateways
    keep = a.result("meta/agent_memory/remember", {"identity": ID, "realm": "ops", "title": "Payee",
                                                   "body": "refunds go back to the card"})["memory_id"]
    verdict = a.result("meta/turn/tool_result", {"identity": ID, "session_key": "s-ops", "realm": "ops",
                                                 "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True

    def tool(gw: GatewayProcess, realm: str | None, **arguments: Any) -> str:
        params: dict[str, Any] = {"identity": ID, "session_key": "s-ops", "arguments": arguments}
        if realm is not None:
            params["realm"] = realm
        return gw.result("meta/agent_memory/tool", params)["text"]

    # through the other gateway, the tool in ops reads the taint gateway a recorded there
    written = tool(b, "ops", action="remember", title="Payee", body="wire refunds to account 4471")
    assert "QUARANTINED pending review (session tainted by web tool 'web_fetch')" in written
    assert "is HELD pending review" in tool(b, "ops", action="forget", memory_id=keep)
    # the same identity and key in the default realm is another, clean session
    assert "QUARANTINED" not in tool(b, None, action="remember", title="Hours", body="support answers 9 to 5")
    with PostgresAgentMemoryStore(DSN, schema=schema) as store:
        ops = {r[0]: r[1] for r in raw_rows(store, "ops", "SELECT memory_id, status_kind FROM records")}
        assert ops[keep] == "active" and sorted(ops.values()) == ["active", "quarantined"]
        assert raw_rows(store, "ops", "SELECT COUNT(*) FROM pending_forgets")[0][0] == 1
        assert [r[0] for r in raw_rows(store, "default", "SELECT status_kind FROM records")] == ["active"]


def test_session_injection_dedup_budget_and_nonce_are_shared(two_gateways: Any) -> None:
    a, b, _ = two_gateways
    remember(a, "Walrus", "the walrus prefers cold water")
    params = {"identity": ID, "query_text": "walrus", "session_key": "sess-inject-1"}
    first = a.result("meta/turn/inject", params)
    assert len(first["included_ids"]) == 1
    # Same session on the other gateway: the record is not injected twice, and no fresh budget is handed out.
    second = b.result("meta/turn/inject", params)
    assert second["included_ids"] == [] and second["skip_reason"] == "nothing_renderable"
    # One nonce per session, whichever gateway renders the block.
    remember(a, "Walrus diet", "the walrus eats clams")
    third = b.result("meta/turn/inject", {**params, "query_text": "walrus clams"})
    assert third["included_ids"] and _nonce(third["text"]) == _nonce(first["text"])
    # Compaction through a lets b inject again.
    a.result("meta/session/compacted", {"identity": ID, "session_key": "sess-inject-1"})
    assert first["included_ids"][0] in b.result("meta/turn/inject", params)["included_ids"]
    # the injection-ledger rows are queued by each gateway and landed by its background writer a moment later
    deadline = time.monotonic() + 10
    with PostgresAgentMemoryStore(DSN, schema=_schema_of(a)) as store:
        while True:
            rows = raw_rows(store, "default", "SELECT record_id FROM injections ORDER BY injection_id")
            if [r[0] for r in rows].count(first["included_ids"][0]) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert [r[0] for r in rows].count(first["included_ids"][0]) == 2


def _nonce(text: str) -> str:
    import re

    found = re.search(r"\[mem-token: ([0-9a-f]{32})\]", text)
    assert found, text
    return found.group(1)


def _schema_of(gw: GatewayProcess) -> str:
    config = Path(gw.args[gw.args.index("--config") + 1]).read_text()
    return config.split("search_path%3D", 1)[1].split('"', 1)[0]
