"""Session state on PostgreSQL: the same keyed, durable, fail-closed rules, shared by separate stores
(each standing for one gateway with its own connection pool)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it

from contract.pgsupport import DSN, require_postgres, throwaway_schema
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.errors import AgentMemoryError
from meta_memory.events.bus import EventBus
from meta_memory.firewall.classify import Classification
from meta_memory.firewall.taint import TaintTracker
from meta_memory.injection import InjectionSessions
from meta_memory.session_ref import SessionRef
from meta_memory.session_state import PostgresSessionBackend, SessionStateStore

pytestmark = pytest.mark.postgres

WEB = Classification(False, "web tool 'web_fetch'")


@pytest.fixture
def stores() -> Iterator[tuple[PostgresAgentMemoryStore, PostgresAgentMemoryStore]]:
    require_postgres()
    with throwaway_schema() as schema:
        a = PostgresAgentMemoryStore(DSN, schema=schema, pool_size=4)
        b = PostgresAgentMemoryStore(DSN, schema=schema, pool_size=4)
        try:
            yield a, b
        finally:
            a.close()
            b.close()


def state_of(store: PostgresAgentMemoryStore, clock: ManualClock, **kw: int) -> SessionStateStore:
    return SessionStateStore(PostgresSessionBackend(store), clock, **kw)


def test_taint_is_shared_keyed_and_cleared_only_by_its_owner(stores) -> None:
    clock = ManualClock()
    on_a, on_b = (TaintTracker(clock, state=state_of(s, clock)) for s in stores)
    on_a.observe(SessionRef("default", "x:1", "s1"), WEB)
    assert on_b.identity_taint("x:1", realm="default") is not None
    assert on_b.session_taint(SessionRef("default", "x:1", "s1")) is not None
    on_b.reset(SessionRef("default", "y:1", "s1"))
    assert on_a.session_taint(SessionRef("default", "x:1", "s1")) is not None
    assert on_a.identity_taint("x:1", realm="other") is None
    on_b.reset(SessionRef("default", "x:1", "s1"))
    assert on_a.session_taint(SessionRef("default", "x:1", "s1")) is None
    assert on_a.evidence_reason("s1", realm="default") is not None  # the reset mark keeps the evidence rule


def test_concurrent_gateways_taint_once_and_count_every_injection(stores) -> None:
    clock = ManualClock()
    a, b = (state_of(s, clock) for s in stores)
    events: list[str] = []
    lock = threading.Lock()

    class Sink(EventBus):
        def emit(self, event_type: str, data: dict, *, identity: str | None = None) -> None:  # type: ignore[override]
            with lock:
                events.append(data["kind"])

    sink = Sink(clock)

    def work(state: SessionStateStore, tag: str) -> None:
        tracker = TaintTracker(clock, sink, state=state)
        inj = InjectionSessions(state)
        for i in range(40):
            tracker.observe(SessionRef("default", "x:1", "shared"), WEB)
            inj.commit("default", "x:1", "shared", [f"{tag}-{i}"], 10)

    threads = [threading.Thread(target=work, args=(st, t)) for st, t in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert events.count("tainted") == 1  # first taint wins across gateways
    used, ids = a.injection_state("default", "x:1", "shared")
    assert used == 800 and len(ids) == 80
    assert b.nonce_for("default", "x:1", "shared") == a.nonce_for("default", "x:1", "shared")


def test_cap_and_expiry_on_postgres(stores) -> None:
    clock = ManualClock()
    day = 86_400_000
    state = state_of(stores[0], clock, limit=3, expiry_ms=2 * day)
    tracker = TaintTracker(clock, state=state)
    tracker.observe(SessionRef("default", "x:1", "s1"), WEB)
    tracker.note_session(SessionRef("default", "y:1", "s2"))
    with pytest.raises(AgentMemoryError) as err:
        tracker.note_session(SessionRef("default", "z:1", "s3"))
    assert err.value.reason == "session_limit" and tracker.at_capacity()
    assert tracker.observe(SessionRef("default", "w:1", "s4"), WEB) is not None  # taint still lands
    clock.advance(3 * day)
    state.sweep()
    assert not tracker.at_capacity() and tracker.session_taint(SessionRef("default", "x:1", "s1")) is None
    tracker.note_session(SessionRef("default", "z:1", "s3"))
