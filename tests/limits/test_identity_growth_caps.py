"""Per-identity bounds on the two tables one identity can grow through the RPC surface.

``pending_harvests`` (work items, one per ``meta/session/retire``): at most
``MAX_OPEN_HARVESTS_PER_IDENTITY`` pending per identity and realm; the next retire is refused with
``-32040`` reason ``limit`` naming the cap, and nothing is written; another identity is unaffected.

``injections`` (the injection ledger, telemetry): at most ``MAX_INJECTIONS_PER_IDENTITY`` rows per
identity and realm; writing more prunes that identity's oldest rows in the same transaction, the newest
stay, and other identities' rows are untouched. Both on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.base import AgentMemoryStore, InjectionRow
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.limits import MAX_INJECTIONS_PER_IDENTITY, MAX_OPEN_HARVESTS_PER_IDENTITY
from support import GatewayProcess

IDENT = "agent:retiree"
OTHER = "agent:neighbour"

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]



@pytest.fixture
def gw(backend_gateway: GatewayProcess) -> GatewayProcess:
    """A gateway on each backend (``backend_gateway`` in ``tests/conftest.py``)."""
    return backend_gateway

def _retire_until_recorded(gw: GatewayProcess, identity: str, n: int) -> dict[str, Any]:
    """Retire until a harvest is recorded (two retires in one millisecond record one harvest)."""
    while True:
        body = gw.rpc("meta/session/retire", {"identity": identity, "session_key": f"s{n}", "cause": "done " * 80})
        if "error" in body or body["result"]["recorded"]:
            return body


def _pending(gw: GatewayProcess, identity: str) -> int:
    rows = gw.result("meta/memory/panel/harvests", {"limit": 200})["harvests"]
    return sum(1 for r in rows if r["identity"] == identity and r["status"] == "pending")


def test_open_harvests_are_capped_per_identity(gw: GatewayProcess) -> None:
    for n in range(MAX_OPEN_HARVESTS_PER_IDENTITY):
        assert "result" in _retire_until_recorded(gw, IDENT, n)
    assert _pending(gw, IDENT) == MAX_OPEN_HARVESTS_PER_IDENTITY
    err = _retire_until_recorded(gw, IDENT, 999)["error"]
    assert err["code"] == -32040 and err["data"]["reason"] == "limit", err
    assert f"max_open_harvests_per_identity = {MAX_OPEN_HARVESTS_PER_IDENTITY}" in err["message"]
    assert f"identity '{IDENT}'" in err["message"]
    assert _pending(gw, IDENT) == MAX_OPEN_HARVESTS_PER_IDENTITY  # nothing written
    # another identity keeps its own room
    assert _retire_until_recorded(gw, OTHER, 0)["result"]["recorded"] is True
    assert _pending(gw, OTHER) == 1


# --------------------------------------------------------------------------- the injection ledger


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentMemoryStore]:
    if request.param == "sqlite":
        s: AgentMemoryStore = SqliteAgentMemoryStore(tmp_path / "am")
        yield s
        s.close()
        return
    require_postgres()
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as schema:
        p = PostgresAgentMemoryStore(DSN, schema=schema)
        yield p
        p.close()


def _ledger(store: AgentMemoryStore, identity: str) -> list[str]:
    with store.snapshot("default") as tx:  # lands the queued telemetry first
        rows = tx.panel.injections(10 * MAX_INJECTIONS_PER_IDENTITY)
    return [r.record_id for r in rows if r.identity == identity]


def test_injection_ledger_keeps_each_identity_s_newest_rows(store: AgentMemoryStore) -> None:
    record_writes.remember(store, "default", IDENT, "Note", "a note, so the realm exists")
    store.log_injections("default", [InjectionRow(f"other-{i}", OTHER, "turn", 1) for i in range(3)])
    total = MAX_INJECTIONS_PER_IDENTITY + 100
    for start in range(0, total, 500):
        store.log_injections("default", [InjectionRow(f"rec-{i}", IDENT, "turn", 1_000 + i, "s1")
                                         for i in range(start, min(total, start + 500))])
    kept = _ledger(store, IDENT)
    assert len(kept) == MAX_INJECTIONS_PER_IDENTITY
    assert set(kept) == {f"rec-{i}" for i in range(100, total)}  # the oldest went first
    assert sorted(_ledger(store, OTHER)) == ["other-0", "other-1", "other-2"]


def test_injection_ledger_under_the_cap_keeps_every_row(store: AgentMemoryStore) -> None:
    record_writes.remember(store, "default", IDENT, "Note", "a note, so the realm exists")
    store.log_injections("default", [InjectionRow(f"rec-{i}", IDENT, "build", 1_000 + i) for i in range(50)])
    assert len(_ledger(store, IDENT)) == 50
