"""The limits of the SQLite store's FTS5 path: its time budget and the memory of its kept word counts.

A recall whose budget runs out while SQLite answers it from FTS5 is refused as a ``timeout``: the store
stops the statement (SQLite's progress handler), and that stop must read as what it is, the budget spent,
not as a storage failure (``io``): callers degrade a timed-out read (the hybrid recall answers lexically,
the time box reports an overrun) but fail an ``io`` one. The word counts a one-scope realm keeps between
recalls (:class:`meta_memory.recall.fts_top.TermCounts`) stay bounded whatever words recalls name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_memory import deadline
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store import sqlite as sqlite_store
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.errors import AgentMemoryError
from meta_memory.recall import fts_top
from support import raw_rows

REALM = "default"
IDENT = "agent:ana"
MATCH = '"common" OR "alpha" OR "body"'


class _Budget(deadline.Deadline):
    """A budget that runs out at a moment the test picks (``spent``), not on a clock."""

    def __init__(self) -> None:
        super().__init__(None)
        self.spent = False

    @property
    def expired(self) -> bool:
        return self.spent


@pytest.mark.parametrize("filtered", [False, True])
def test_a_full_text_statement_stopped_at_the_budget_is_a_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   filtered: bool) -> None:
    budget = _Budget()
    stop = sqlite_store._stop_when_expired

    def budget_runs_out_mid_statement() -> int:
        if deadline.current() is budget:
            budget.spent = True
        return stop()

    monkeypatch.setattr(sqlite_store, "_stop_when_expired", budget_runs_out_mid_statement)
    # no in-process index: the realm's one scope is answered from FTS5 (meta_memory.recall.fts_top)
    with sqlite_store.SqliteAgentMemoryStore(tmp_path / "am", recall_index_bytes=0) as store:
        for batch in range(2):
            record_writes.remember_many(store, REALM, IDENT, [
                RememberItem(f"note {batch} {i}", f"common filler words body {i} alpha beta") for i in range(1000)])
        scope = Scope.identity(REALM, IDENT)
        only = frozenset(range(1, 2001)) if filtered else None
        assert len(store.search(REALM, scope, MATCH, 10, only)) == 10  # no budget: answered
        with deadline.bound(budget), pytest.raises(AgentMemoryError) as refused:
            store.search(REALM, scope, MATCH, 10, only)
        assert budget.spent
        assert refused.value.reason == "timeout", refused.value


def test_a_small_realm_keeps_a_bounded_number_of_word_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a small realm every word of its text is common enough to have its count kept; recalls naming ever
    new words keep at most ``MAX_PHRASES`` of them (the most recently counted), not one per word asked."""
    monkeypatch.setattr(fts_top, "MAX_PHRASES", 50, raising=False)
    words = [f"k{i:04d}w" for i in range(200)]
    with sqlite_store.SqliteAgentMemoryStore(tmp_path / "am") as store:
        record_writes.remember(store, REALM, IDENT, "glossary", " ".join(words))
        scope = Scope.identity(REALM, IDENT)
        for at in range(0, len(words), 50):
            assert len(store.search(REALM, scope, " OR ".join(f'"{w}"' for w in words[at:at + 50]), 5)) == 1
        head = int(raw_rows(store, REALM, "SELECT max(seq) FROM records_fts_log")[0][0])
        kept = [w for w in words if store.term_counts.get(REALM, w, head, 1) is not None]
    assert kept == words[-50:]
