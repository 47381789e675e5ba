"""A recall past its time budget is cancelled, and one identity's slow recalls cannot take the pool.

The stores stop a time-boxed statement once its budget is spent (SQLite progress handler, PostgreSQL
``statement_timeout``): the worker ends with a ``timeout`` refusal instead of running on. No timing is
asserted: a statement that would never end must end.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory import deadline
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.errors import AgentMemoryError
from meta_memory.injection.timebox import ProviderSaturated, ProviderTimeout, TimeBox
from support import GatewayProcess, raw_rows

IDENT = "agent:patient"
ENDLESS_SQLITE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
ENDLESS_PG = "SELECT pg_sleep(600)"


def _endless_read(store: Any, realm: str, sql: str) -> Any:
    return raw_rows(store, realm, sql)


def _assert_cancelled(store: Any, realm: str, sql: str) -> None:
    box = TimeBox()
    # 1. the waiter gives up (its wait is shorter than the work's own budget): the call is cancelled
    pending = box.start(lambda: _endless_read(store, realm, sql), timeout_ms=600_000)
    with pytest.raises(ProviderTimeout):
        pending.wait(0.1, 100)
    _assert_stopped(pending)
    # 2. nobody waits: the work's own budget runs out
    pending = box.start(lambda: _endless_read(store, realm, sql), timeout_ms=100)
    _assert_stopped(pending)
    assert box.running == 0


def _assert_stopped(pending: Any) -> None:
    # The statement would never end by itself; cancelled, the worker finishes with a timeout refusal.
    assert pending._done.wait(60), "the timed-out statement kept running"
    assert isinstance(pending._error, AgentMemoryError) and pending._error.reason == "timeout", pending._error


@pytest.fixture
def pg_store() -> Iterator[Any]:
    require_postgres()
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as schema:
        store = PostgresAgentMemoryStore(DSN, schema=schema)
        try:
            yield store
        finally:
            store.close()


def test_sqlite_statement_past_the_budget_is_interrupted(tmp_path: Path) -> None:
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, "default", IDENT, "Title", "body")
        _assert_cancelled(store, "default", ENDLESS_SQLITE)
        # the pooled connection is healthy afterwards, outside any time box
        assert store.get("default", "mem-none") is None


def test_inline_call_past_the_budget_stops_its_statement_and_times_out(tmp_path: Path) -> None:
    # a recall run on the caller's thread: the store stops the statement at the deadline, nothing waits for it
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, "default", IDENT, "Title", "body")
        box = TimeBox()
        with pytest.raises(ProviderTimeout):
            box.call(lambda: _endless_read(store, "default", ENDLESS_SQLITE), 100, key=("default", IDENT), inline=True)
        assert box.running == 0 and deadline.current() is None
        assert store.get("default", "mem-none") is None


def test_inline_call_runs_under_its_deadline_and_answers() -> None:
    box = TimeBox()
    left = box.call(deadline.remaining_ms, 5_000, key=("default", IDENT), inline=True)
    assert left is not None and 0 < left <= 5_000
    assert box.running == 0 and deadline.current() is None


def test_postgres_statement_past_the_budget_is_cancelled(pg_store: Any) -> None:
    record_writes.remember(pg_store, "default", IDENT, "Title", "body")
    _assert_cancelled(pg_store, "default", ENDLESS_PG)


def test_no_deadline_outside_a_time_box() -> None:
    assert deadline.current() is None and not deadline.expired() and deadline.remaining_ms() is None
    deadline.check()


def test_per_identity_cap_leaves_slots_for_others() -> None:
    release = threading.Event()
    box = TimeBox(max_in_flight=16, max_per_key=4)
    held = [box.start(release.wait, key=("default", "agent:hostile")) for _ in range(4)]
    with pytest.raises(ProviderSaturated) as info:
        box.start(release.wait, key=("default", "agent:hostile"))
    assert info.value.per_key
    other = box.start(lambda: "answered", key=("default", "agent:other"))
    assert other.wait(30, 30_000) == "answered"
    release.set()
    for p in held:
        p.wait(30, 30_000)
    assert box.running == 0


def test_hostile_tool_recalls_leave_other_identities_answered_and_sigterm_exits(gateway: GatewayProcess) -> None:
    gateway.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Dentist",
                                                  "body": "dentist appointment on tuesday"})
    huge = "appointment tuesday dentist " * (256 * 1024 // 28)

    def hostile(i: int) -> dict[str, Any]:
        return gateway.result("meta/agent_memory/tool", {"identity": f"agent:hostile-{i % 2}", "session_key": f"h{i}",
                                                         "arguments": {"action": "recall", "query_text": huge}},
                              timeout=120)

    def patient(_: int) -> tuple[Any, Any]:
        recall = gateway.rpc("meta/agent_memory/recall", {"identity": IDENT, "query_text": "dentist tuesday"},
                             timeout=120)
        inject = gateway.rpc("meta/turn/inject", {"identity": IDENT, "query_text": "when is the dentist?"},
                             timeout=120)
        return recall, inject

    with ThreadPoolExecutor(max_workers=24) as pool:
        hostile_calls = [pool.submit(hostile, i) for i in range(16)]
        patient_calls = [pool.submit(patient, i) for i in range(4)]
        answers = [f.result() for f in patient_calls]
        for f in hostile_calls:
            assert f.result()["is_error"] is True
    for recall, inject in answers:
        assert "error" not in recall, recall
        assert [r["title"] for r in recall["result"]["records"]] == ["Dentist"]
        assert "error" not in inject, inject
        assert inject["result"]["included_ids"], inject
    gateway.proc.terminate()
    assert gateway.proc.wait(timeout=30) is not None
