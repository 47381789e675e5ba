"""A realm whose database is damaged (overwritten, or pages deep in its records table) no longer stops hybrid
recall's background indexer: the realms after it still get their vectors, ``meta/status`` still answers and
names the realm under ``vector_backlog.skipped_realms``, and ``wait_for_vectors`` says which realm it could not
read. Driven through the embedded SDK handle with the deterministic test embedder.

Before: the indexer's pass raised at the damaged realm (``alpha``, listed first), so ``beta``'s records were
never embedded, and ``meta/status`` failed ``corrupt`` for the whole gateway.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from extras import require_extra
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.errors import AgentMemoryError
from meta_memory.recall.semantic import indexer as indexer_module
from meta_memory.recall.semantic.indexer import VectorIndexer
from meta_memory.sdk import Meta
from support import corrupt_table_pages, realm_db

from .semantic_support import ConceptEmbedder, vector_rows

pytestmark = pytest.mark.semantic
require_extra("semantic", "numpy")

ID = "lead:main"
EMBEDDER = "semantic.semantic_support:ConceptEmbedder"


def _handle(state: Path, **options: Any) -> Any:
    return Meta.builder().persistent_state(state).agent_memory(**options).build()


def _written(state: Path) -> list[str]:
    """Records in ``alpha`` (listed first) and ``beta``, written under lexical recall: no vector yet."""
    with _handle(state) as handle:
        for realm in ("alpha", "beta"):
            agent = handle.agent(ID, realm=realm)
            for i in range(40):
                agent.remember(f"{realm} note {i}", f"bought a car in {realm}, note {i} " + "x" * 400)
        beta = [r.memory_id for r in handle.agent(ID, realm="beta").list(limit=100).records]
    assert len(beta) == 40
    return beta


def _damage(db: Path, how: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if how == "overwritten":
        db.write_bytes(os.urandom(db.stat().st_size))
        for side in ("-wal", "-shm"):
            Path(f"{db}{side}").unlink(missing_ok=True)
    else:
        assert corrupt_table_pages(db, "records") > 2


@pytest.mark.parametrize("how", ["overwritten", "records_pages"])
def test_a_damaged_realm_leaves_the_next_realm_embedded(tmp_path: Path, how: str) -> None:
    state = tmp_path / "state"
    beta = _written(state)
    _damage(realm_db(state, "alpha"), how)
    with _handle(state, recall_provider="hybrid", embedder=EMBEDDER) as handle:
        deadline = time.monotonic() + 30
        while (backlog := handle.status()["agent_memory"]["vector_backlog"])["embedded"] < len(beta):
            assert time.monotonic() < deadline, backlog
            time.sleep(0.1)
        assert sorted(vector_rows(state / "agent-memory", "beta")) == sorted(beta)
        assert [(s["realm"], s["reason"]) for s in backlog["skipped_realms"]] == [("alpha", "corrupt")]
        assert "alpha.sqlite3" in backlog["skipped_realms"][0]["message"]
        assert {"realm": "beta", "pending": 0} in backlog["realms"]
        if how == "overwritten":  # nothing of alpha can be read: no figure for it
            assert backlog["realms"] == [{"realm": "beta", "pending": 0}] and backlog["pending"] == 0
        assert backlog["complete"] is False and backlog["embedded"] == len(beta)
        assert backlog["indexing"] is True and "alpha" in (backlog["last_error"] or "")
        with pytest.raises(TimeoutError) as waited:
            handle.wait_for_vectors(timeout_s=0.3)
        assert "realms that cannot be read: alpha (corrupt)" in str(waited.value)
        # the healthy realm recalls with its vectors: a synonym no word of the query shares
        found = handle.agent(ID, realm="beta").recall("automobile purchase")
        assert found and all(r.title.startswith("beta note") for r in found)


class _Flaky:
    """The store, with ``missing_vectors`` of realm ``alpha`` refused ``reason`` while ``broken`` is set."""

    def __init__(self, inner: Any, reason: str) -> None:
        self.inner, self.reason, self.broken, self.tries = inner, reason, True, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def missing_vectors(self, realm: str, model: str, limit: int) -> Any:
        if realm == "alpha":
            self.tries += 1
            if self.broken:
                raise AgentMemoryError(self.reason, "realm database 'alpha.sqlite3' cannot be read (malformed)")
        return self.inner.missing_vectors(realm, model, limit)


def test_a_realm_left_out_is_tried_again_after_the_backoff_and_other_failures_fail_the_pass(
    store: SqliteAgentMemoryStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(indexer_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    for realm in ("alpha", "beta"):
        record_writes.remember(store, realm, ID, "Car", f"bought a sedan in {realm}", [])
    flaky = _Flaky(store, "corrupt")
    indexer = VectorIndexer(flaky, ConceptEmbedder(), error_backoff_s=60)
    assert indexer.drain() == 1  # beta's record; alpha left out
    assert list(vector_rows(store.root, "beta")) and vector_rows(store.root, "alpha") == {}
    now[0] += 59
    assert indexer.drain() == 0
    assert flaky.tries == 1  # not tried again within the backoff, however many passes run
    assert [s["realm"] for s in indexer.backlog()["skipped_realms"]] == ["alpha"]
    now[0] += 2
    assert indexer.drain() == 0 and flaky.tries == 2  # tried again once the backoff passed: still refused
    flaky.broken = False
    now[0] += 61
    assert indexer.drain() == 1 and list(vector_rows(store.root, "alpha"))
    report = indexer.backlog()
    assert "skipped_realms" not in report and report["complete"] is True
    # a refusal that is not about one realm still fails the pass, as before
    record_writes.remember(store, "alpha", ID, "Dog", "the puppy sleeps", [])
    other = VectorIndexer(_Flaky(store, "unsupported"), ConceptEmbedder())
    with pytest.raises(AgentMemoryError):
        other.run_once()
