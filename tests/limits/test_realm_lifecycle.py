"""Realms and their connections under a greedy client, through a real gateway.

Reads never create a realm; a write past ``[agent_memory] max_realms`` is refused naming the key;
open realm connections stay bounded by ``max_open_realms`` however many realms are touched, and an
evicted realm reopens on demand.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.errors import AgentMemoryError
from support import GatewayProcess, realm_db, write_config

IDENT = "agent:greedy"


def _fds(gw: GatewayProcess) -> int:
    return len(os.listdir(f"/proc/{gw.proc.pid}/fd"))


def _db_files(gw: GatewayProcess) -> list[str]:
    root = gw.state_dir / "agent-memory"
    return sorted(p.name for p in root.glob("*.sqlite3")) if root.is_dir() else []


def _gateway(gateway_factory: Any, tmp_path: Path, body: str) -> GatewayProcess:
    return gateway_factory(config=write_config(tmp_path / "meta.toml", "[agent_memory]\n" + body))


def test_reads_on_new_realms_create_nothing(gateway: GatewayProcess) -> None:
    before = _db_files(gateway)
    for i in range(40):
        realm = f"ghost-{i}"
        out = gateway.result("meta/agent_memory/recall", {"identity": IDENT, "realm": realm, "query_text": "deploy"})
        assert out["records"] == []
        assert gateway.result("meta/agent_memory/recall",
                              {"identity": IDENT, "realm": realm, "selection": "always"})["records"] == []
        assert gateway.result("meta/agent_memory/manifest", {"identity": IDENT, "realm": realm})["records"] == []
        gateway.result("meta/turn/inject", {"identity": IDENT, "realm": realm, "query_text": "deploy the thing"})
    assert _db_files(gateway) == before
    assert not any(r.startswith("ghost-") for r in gateway.result("meta/status")["agent_memory"]["realms"])


def test_forget_and_update_on_a_missing_realm_create_nothing(gateway: GatewayProcess) -> None:
    forget = gateway.rpc("meta/agent_memory/forget", {"identity": IDENT, "realm": "nowhere", "memory_id": "mem-x"})
    update = gateway.rpc("meta/agent_memory/update", {"identity": IDENT, "realm": "nowhere", "memory_id": "mem-x",
                                                      "title": "t", "body": "b"})
    assert "error" in update or "result" in update
    assert "error" in forget or forget["result"]["deleted"] is False
    assert realm_db(gateway.state_dir, "nowhere").name not in _db_files(gateway)


def test_realm_cap_refuses_the_write_naming_the_key(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _gateway(gateway_factory, tmp_path, "max_realms = 3\n")
    for i in range(3):
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "realm": f"r{i}", "title": "t", "body": f"b{i}"})
    err = gw.error("meta/agent_memory/remember", {"identity": IDENT, "realm": "r3", "title": "t", "body": "b"})
    assert err["code"] == -32040 and err["data"]["reason"] == "limit"
    assert "max_realms = 3" in err["message"]
    assert realm_db(gw.state_dir, "r3").name not in _db_files(gw)
    # existing realms keep taking writes, and reads of the refused realm still answer (empty)
    gw.result("meta/agent_memory/remember", {"identity": IDENT, "realm": "r1", "title": "t2", "body": "more"})
    assert gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": "r3", "query_text": "b"})["records"] == []


def test_open_connections_stay_bounded_and_evicted_realms_reopen(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _gateway(gateway_factory, tmp_path, "max_open_realms = 4\n")
    for i in range(4):
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "realm": f"w{i}", "title": "Kettle",
                                                 "body": f"kettle descaling note {i}"})
        gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": f"w{i}", "query_text": "kettle"})
    baseline = _fds(gw)
    for i in range(4, 60):
        gw.result("meta/agent_memory/remember", {"identity": IDENT, "realm": f"w{i}", "title": "Kettle",
                                                 "body": f"kettle descaling note {i}"})
        gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": f"w{i}", "query_text": "kettle"})
    # Without the pool every realm kept a writer and readers open: 56 more realms, 150+ more descriptors.
    assert _fds(gw) <= baseline + 24
    out = gw.result("meta/agent_memory/recall", {"identity": IDENT, "realm": "w0", "query_text": "kettle"})
    assert [r["body"] for r in out["records"]] == ["kettle descaling note 0"]


def test_store_pool_closes_least_recently_used_realm(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am", max_open_realms=2) as store:
        for realm in ("a", "b", "c"):
            record_writes.remember(store, realm, IDENT, "Title", f"body in {realm}")
        assert store.open_realms == 2
        assert [r.body for r, _ in store.search("a", _scope("a"), '"body"', 5)] == ["body in a"]
        assert store.open_realms == 2
        assert store.get("zzz", "mem-none") is None
        assert not realm_db_path(tmp_path / "am", "zzz").exists()


def test_store_realm_cap(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am", max_realms=1) as store:
        record_writes.remember(store, "one", IDENT, "Title", "body")
        with pytest.raises(AgentMemoryError) as info:
            record_writes.remember(store, "two", IDENT, "Title", "body")
        assert info.value.reason == "limit" and "max_realms = 1" in str(info.value)
        record_writes.remember(store, "one", IDENT, "Title", "another body")


def _scope(realm: str) -> Any:
    from meta_memory.agent_memory.model import Scope

    return Scope.identity(realm, IDENT)


def test_concurrent_creations_cannot_overshoot_the_cap(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with SqliteAgentMemoryStore(tmp_path / "am", max_realms=3) as store:
        def create(i: int) -> bool:
            try:
                record_writes.remember(store, f"c{i}", IDENT, "Title", "body")
                return True
            except AgentMemoryError as exc:
                assert exc.reason == "limit"
                return False

        with ThreadPoolExecutor(8) as pool:
            created = sum(pool.map(create, range(16)))
        assert created == 3 and len(list((tmp_path / "am").glob("*.sqlite3"))) == 3


def test_postgres_reads_register_nothing_and_the_cap_holds() -> None:
    from contract.pgsupport import DSN, require_postgres, throwaway_schema

    require_postgres()
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as schema:
        store = PostgresAgentMemoryStore(DSN, schema=schema, max_realms=2)
        try:
            for i in range(5):
                assert store.get(f"ghost{i}", "mem-x") is None
                assert store.search(f"ghost{i}", _scope(f"ghost{i}"), '"x"', 5) == []
                assert record_writes.forget(store, f"ghost{i}", _scope(f"ghost{i}"), "mem-x", _app()) is False
            assert store.list_realms() == []
            record_writes.remember(store, "a", IDENT, "Title", "body")
            record_writes.remember(store, "b", IDENT, "Title", "body")
            with pytest.raises(AgentMemoryError) as info:
                record_writes.remember(store, "c", IDENT, "Title", "body")
            assert info.value.reason == "limit" and "max_realms = 2" in str(info.value)
            assert store.list_realms() == ["a", "b"]
        finally:
            store.close()


def _app() -> Any:
    from meta_memory.agent_memory.model import Author

    return Author.application()
