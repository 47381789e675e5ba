"""The every-realm overview keeps each realm's scope counts between calls, but a record that expires moves
from "active" to "expired" with no write to the realm's files: the kept counts serve only until the soonest
expiry of an active record, then the realm is read again."""

from __future__ import annotations

import time
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.clock import ManualClock
from meta_memory.panel.realm_memo import QUIET_NS
from meta_memory.panel.store import SqlitePanelStore


def test_kept_scope_counts_follow_an_expiry(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    with SqliteAgentMemoryStore(tmp_path / "am", clock) as store:
        record_writes.remember_merging(store, "r1", "lead:main", "soon gone", "expires in a minute",
                                       expires_at_ms=clock.now_ms() + 60_000)
        record_writes.remember_merging(store, "r1", "lead:main", "stays", "no expiry")
        panel = SqlitePanelStore(store)
        panel.scope_overview("r1")  # opens the realm: its files are written
        time.sleep(QUIET_NS / 1e9 + 0.5)
        assert panel.scope_overview("r1")[0].counts == {"active": 2}  # read with quiet files: kept
        assert panel.scope_overview("r1")[0].counts == {"active": 2}
        clock.advance(120_000)
        fresh = SqlitePanelStore(store).scope_overview("r1")[0].counts
        assert fresh == {"active": 1, "expired": 1}
        assert panel.scope_overview("r1")[0].counts == fresh
