"""The coordinator wired to the bundled SQLite store, the way the runtime wires it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import MemoryRecord, RecordMeta, Scope, ScopeKind
from meta_memory.agent_memory.store.base import InjectionRow
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from meta_memory.injection import (
    InjectionCoordinator,
    InjectionOptions,
    LedgerRow,
    RecallRequest,
    ScopeRef,
)

ID = "lead:main"


def test_turn_and_build_against_the_sqlite_store(tmp_path: Path) -> None:
    clock = ManualClock(1_800_000_000_000)
    store = SqliteAgentMemoryStore(tmp_path / "agent-memory", clock)
    try:
        first, _ = record_writes.remember(store, "default", ID, "Passport location", "Top drawer of the <desk>.")
        second, _ = record_writes.remember(store, "default", ID, "Coffee", "Oat milk flat white.")

        def recall(req: RecallRequest) -> list[MemoryRecord]:
            # store records are adapted by the coordinator
            return store.active_records(req.realm, Scope.identity(req.realm, req.identity))[: req.max_entries]

        def manifest(scope: ScopeRef, k: int) -> list[RecordMeta]:
            target = Scope(ScopeKind(scope.kind), scope.realm, scope.key)
            return store.manifest(scope.realm, target, "working_set", k)

        def log_injections(realm: str, rows: Sequence[LedgerRow]) -> None:
            store.log_injections(realm, [InjectionRow(**row.to_dict()) for row in rows])

        coord = InjectionCoordinator(
            InjectionOptions(selection="always"),
            recall_fn=recall,
            manifest_fn=manifest,
            log_injections_fn=log_injections,
            mark_usage_fn=store.mark_usage,
            clock=clock,
        )
        turn = coord.inject_for_turn(ID, "default", "s1", "where is my passport")
        assert set(turn.included_ids) == {first.memory_id, second.memory_id}
        assert "Top drawer of the &lt;desk&gt;." in turn.text
        assert 'scope="identity" trust=' in turn.text  # stored records carry provenance

        build = coord.assemble_build(ID, "default", "identity lead:main")
        assert "Identity records:" in build.text and f'<meta_memory_observation id="{first.memory_id}" kind="' in build.text

        # usage marks and injection rows are queued and land a moment later (a read while the writer is busy
        # with another write goes on without them): write them now, then read them back
        assert store.telemetry_stats() == {"dropped": 0}
        got = store.get("default", first.memory_id)
        assert got is not None and got.usage.injected_count == 2
        conn = sqlite3.connect(realm_db_path(tmp_path / "agent-memory", "default"))
        rows = conn.execute("SELECT surface, session_key FROM injections ORDER BY rowid").fetchall()
        conn.close()
        assert rows == [("turn", "s1"), ("turn", "s1"), ("build", None), ("build", None)]
    finally:
        store.close()
