"""A restricted principal's record search over a real gateway, among many rows it may not read.

``alice`` reads ``alice:main`` only (and reviews its quarantined content); ``carol`` reads every identity
without review. Bob's rows share alice's search words and sit between hers in the listing order: alice's
walk, page by page with the cursor, holds exactly her matching rows, newest first, once each; a word only
bob's rows hold finds nothing and no cursor; carol never sees quarantined content.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Kind, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

P = "meta/memory/panel/records"
ALICE, BOB = "alice:main", "bob:main"
TOKENS = {"readable-alice-0001": "alice", "readable-carol-0002": "carol"}
CONFIG = access_toml(TOKENS, [
    ("alice", "agent.memory.read", {"identity": ALICE}), ("alice", "agent.view", {"identity": ALICE}),
    ("alice", "memory.quarantine.review", {"identity": ALICE}),
    ("carol", "agent.memory.read"), ("carol", "agent.view"),
])


class _Gate:
    """Quarantines agent-authored writes."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return "tainted" if author.kind.value == "agent" else None


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, dict[str, list[str]]]]:
    root = tmp_path_factory.mktemp("panel-search-readable")
    state = root / "state"
    state.mkdir()
    clock = ManualClock(1_765_000_000_000)
    ids: dict[str, list[str]] = {"alice_walnut": [], "bob_walnut": [], "alice_quarantined": []}
    with SqliteAgentMemoryStore(state / "agent-memory", clock, gate=_Gate()) as store:
        for i in range(40):
            clock.advance(1000)
            if i % 5 == 0:
                rec = record_writes.remember(store, "default", ALICE, f"Alice walnut note {i}", "walnut bread")[0]
                ids["alice_walnut"].append(rec.memory_id)
            else:
                rec = record_writes.remember(store, "default", BOB, f"Bob walnut note {i}", "walnut and hazelnut")[0]
                ids["bob_walnut"].append(rec.memory_id)
        clock.advance(1000)
        rec, _ = record_writes.remember_authored(store, "default", Scope.identity("default", ALICE), NewMemoryRecord(
            title="Alice walnut rumour", body="walnut", kind=Kind.FACT, provenance=Provenance(Author.agent(ALICE))),
            Author.agent(ALICE))
        assert rec.status.kind.value == "quarantined"
        ids["alice_quarantined"].append(rec.id)
    gw = start_gateway(state, config=write_config(root / "meta.toml", CONFIG))
    try:
        yield gw, ids
    finally:
        gw.stop()


def walk(gw: GatewayProcess, who: str, query: str, limit: int) -> list[str]:
    token = next(t for t, name in TOKENS.items() if name == who)
    out: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"query": query, "limit": limit}
        if cursor:
            params["cursor"] = cursor
        body = gw.rpc(P, params, token=token)
        assert "error" not in body, body
        res = body["result"]
        assert len(res["records"]) <= limit
        out += [r["id"] for r in res["records"]]
        cursor = res["next_cursor"]
        if cursor is None:
            return out
        assert cursor.endswith(":" + out[-1])


@pytest.mark.parametrize("limit", [1, 2, 3, 50])
def test_a_restricted_walk_holds_exactly_the_readable_matches(world: Any, limit: int) -> None:
    gw, ids = world
    alice = [*ids["alice_quarantined"], *reversed(ids["alice_walnut"])]  # newest first
    assert walk(gw, "alice", "walnut", limit) == alice
    walked = walk(gw, "carol", "walnut", limit)
    assert set(walked) == set(ids["alice_walnut"]) | set(ids["bob_walnut"]) and len(walked) == len(set(walked))
    assert not set(walked) & set(ids["alice_quarantined"])  # carol does not review alice's scope


def test_a_word_only_unreadable_rows_hold_finds_nothing(world: Any) -> None:
    gw, ids = world
    for limit in (1, 10):
        assert walk(gw, "alice", "hazelnut", limit) == []
    assert len(walk(gw, "carol", "hazelnut", 10)) == len(ids["bob_walnut"])
