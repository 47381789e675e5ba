"""The default provider over the real SQLite record store, through StoreReader."""

from __future__ import annotations

from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.recall.guard import enforce_scope
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.recall.store_reader import StoreReader


def test_passport_and_cjk_over_the_real_store(tmp_path: Path) -> None:
    clock = ManualClock()
    store = SqliteAgentMemoryStore(tmp_path / "agent-memory", clock)
    record_writes.remember(store, "default", "identity:luka", "Daily notes", "Went for a walk", [])
    clock.advance(1000)
    record_writes.remember(store, "default", "identity:luka", "Passport location", "Top drawer", ["travel"])
    record_writes.remember(store, "default", "identity:luka", "Drinks", "我喜欢喝绿茶", [])
    record_writes.remember(store, "default", "identity:other", "Passport location", "Their drawer", ["travel"])
    scope = Scope.identity("default", "identity:luka")
    reader = StoreReader(store, "default", scope)
    provider = LexicalRecallProvider()

    def ask(query: str) -> list[str]:
        out = provider.recall(RecallRequest("identity:luka", "default", query), reader)
        allowed = {r.id: r for r in store.active_records("default", scope)}
        return [s.record.title for s in enforce_scope(out.records, allowed)]

    assert ask("I need the passport for travel") == ["Passport location"]
    assert ask("绿茶") == ["Drinks"]
    assert ask("where did I put the") == []
