"""Review and panel listings read a snapshot: they complete while a write transaction holds the
realm's write lock (SQLite ``BEGIN IMMEDIATE`` and the per-realm writer lock; PostgreSQL the realm's
advisory lock), and they do not see its uncommitted rows. A write started meanwhile waits, which
shows the lock is really held.

Runs on SQLite and PostgreSQL (``backend`` is parametrised in ``conftest.py``), through the same
store object and through a second store object on the same backing (a second gateway).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.panel.store import RecordFilters, SqlPanelStore
from meta_memory.review.forgets import list_held_forgets, request_forget
from meta_memory.review.harvest import list_harvests, record_harvest
from meta_memory.review.promotions import list_pending_promotions, promote_pending_gate, promotion_scopes
from meta_memory.review.proposals import get_proposal, list_proposals

R = "default"
LEAD = "lead:main"
WAIT_S = 5.0


class HeldWrite:
    """A write transaction of ``R`` held open in its own thread (it records one harvest, uncommitted)."""

    def __init__(self, store: AgentMemoryStore, now_ms: int) -> None:
        self.store = store
        self.now_ms = now_ms
        self.holding = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            with self.store.transaction(R) as tx:
                tx.harvests.insert("worker:uncommitted", None, "retired", self.now_ms)
                self.holding.set()
                self.release.wait(4 * WAIT_S)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread, which asserts there was none
            self.error = exc
            self.holding.set()

    def __enter__(self) -> HeldWrite:
        self.thread.start()
        assert self.holding.wait(WAIT_S) and self.error is None
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(WAIT_S)


def finishes(fn: Callable[[], Any], timeout_s: float = WAIT_S) -> tuple[bool, Any]:
    """Run ``fn`` in a thread: ``(finished within timeout_s, its result)``."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the calling thread
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout_s)
    if errors:
        raise errors[0]
    return (not t.is_alive(), out[0] if out else None)


@pytest.fixture
def seeded(open_store: Callable[..., AgentMemoryStore], clock: ManualClock) -> Iterator[tuple[AgentMemoryStore, dict[str, str]]]:
    store = open_store()
    ids: dict[str, str] = {}
    rec, _ = record_writes.remember(store, R, LEAD, "Standup", "Standup is at nine.")
    ids["record"] = rec.memory_id
    ids["proposal"] = record_writes.propose(store,
        R, Scope.mob(R, "team"),
        NewMemoryRecord(title="Team note", body="Retro on Fridays.", provenance=Provenance(Author.agent(LEAD))),
        Author.agent(LEAD),
    )
    ids["pending"] = promote_pending_gate(store, R, rec.memory_id, run_id="dream-1", clock=clock,
                                          target_scope=Scope.mob(R, "team")).pending_id
    other, _ = record_writes.remember(store, R, LEAD, "Parking", "Visitors park behind the library.")
    held = request_forget(store, Scope.identity(R, LEAD), other.memory_id, Author.agent(LEAD), "tainted session",
                          session_key="s-1", clock=clock)
    assert held.held
    record_harvest(store, R, LEAD, "s-1", "retired", clock=clock)
    yield store, ids


def listings(store: AgentMemoryStore, ids: dict[str, str]) -> dict[str, Callable[[], Any]]:
    panel = SqlPanelStore(store)
    return {
        "review promotions": lambda: [p["pending_id"] for p in list_pending_promotions(store, R)],
        "review promotion scopes": lambda: promotion_scopes(store, R, ids["pending"]),
        "review proposals": lambda: [p.proposal_id for p in list_proposals(store, R)],
        "review proposal": lambda: get_proposal(store, R, ids["proposal"]) is not None,
        "review harvests": lambda: [h["identity"] for h in list_harvests(store, R)],
        "review held forgets": lambda: len(list_held_forgets(store, R)),
        "panel records": lambda: len(panel.records_page(R, RecordFilters(), None, 50).rows),
        "panel record": lambda: panel.record(R, ids["record"]) is not None,
        "panel counts": lambda: sum(sum(r.counts.values()) for r in panel.scope_overview(R)),
        "panel promotions": lambda: len(panel.pending_promotions(R, 10)),
        "panel proposals": lambda: len(panel.proposals(R, 10)),
        "panel harvests": lambda: [h.identity for h in panel.harvests(R, 10)],
        "panel held forgets": lambda: len(panel.held_forgets(R, 10)),
        "panel realm scopes": lambda: len(panel.realm_scopes(R)),
    }


@pytest.mark.parametrize("reader", ["same store", "second store"])
def test_listings_complete_while_a_write_transaction_is_open(
    seeded: tuple[AgentMemoryStore, dict[str, str]], open_store: Callable[..., AgentMemoryStore],
    clock: ManualClock, reader: str,
) -> None:
    store, ids = seeded
    reading = store if reader == "same store" else open_store()
    before = {name: fn() for name, fn in listings(reading, ids).items()}
    with HeldWrite(store, clock.now_ms()):
        for name, fn in listings(reading, ids).items():
            done, result = finishes(fn)
            assert done, f"{name} waited for the write lock"
            assert result == before[name], f"{name} saw an uncommitted row"
        # The lock is really held: a write through the store waits for it.
        late = threading.Thread(target=lambda: record_harvest(reading, R, "worker:late", None, "retired", clock=clock))
        late.start()
        late.join(0.5)
        assert late.is_alive()
    late.join(WAIT_S)
    assert not late.is_alive()
    assert before["review harvests"] == [LEAD]
    assert [h["identity"] for h in list_harvests(reading, R)] == [LEAD, "worker:late", "worker:uncommitted"]
