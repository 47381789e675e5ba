"""Migration 11 ("looked-up-audit-tokens"): a plain write's audit row leaves the token index.

A realm is written with the schema of every step but 11 (the store opened with that migration list):
remembers, an update, a forget, a quarantined agent write released by a review, an erase. Opened with
today's steps, it is migrated in place, and every read answers exactly as before: recall, the scope's
listing, the histories (the erased record's is read through its erase's token), the review's replay
(read through the review's token), the panel's listing, the audit rows. New plain writes add no entry to
the token index; the lookups by token still search it; the hot reads of a write, a recall and a listing
are planned on their indexes, with and without planner statistics.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.history import record_history
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store import schema
from meta_memory.agent_memory.store.panel_reads import RecordFilters
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.clock import ManualClock
from meta_memory.recall import fts
from meta_memory.review.model import Reviewer
from meta_memory.review.quarantine import decide

R = "default"
ANA = "ana:main"
BEN = "ben:main"
START_MS = 1_750_000_000_000


class _Quarantining:
    """The write gate of a tainted session: every agent-authored write lands quarantined."""

    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list[Any], *, realm: str) -> str | None:
        return "session tainted by web tool 'web_search'" if author.kind.value == "agent" else None


def _token_index_entries(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COALESCE(SUM(ncell), 0) FROM dbstat WHERE name = 'audit_token_idx' "
                                "AND pagetype = 'leaf'").fetchone()[0])


def _write_history(store: SqliteAgentMemoryStore, clock: ManualClock) -> dict[str, str]:
    """Every kind of write the token lookups and the reads below care about; returns the ids to read."""
    ids: dict[str, str] = {}

    def remember(identity: str, title: str, body: str) -> str:
        clock.advance(1000)
        return record_writes.remember(store, R, identity, title, body)[0].memory_id

    ids["trip"] = remember(ANA, "Trip notes", "zebra sighting at the river crossing")
    ids["island"] = remember(ANA, "Island", "quokka on the island, very friendly")
    ids["kettle"] = remember(ANA, "Kitchen", "the kettle is broken, buy a new kettle")
    ids["passport"] = remember(ANA, "Passport", "renew the passport before the zebra safari")
    ids["garden"] = remember(ANA, "Garden", "water the tomatoes every morning")
    remember(BEN, "Zebra facts", "every zebra has its own stripes")
    clock.advance(1000)
    ids["island v2"] = record_writes.update(store, R, ANA, ids["island"], body="quokka and a zebra on the island")[0].memory_id
    clock.advance(1000)
    assert record_writes.forget(store, R, Scope.identity(R, ANA), ids["kettle"], Author.application())
    clock.advance(1000)
    held, _ = record_writes.remember_authored(
        store, R, Scope.identity(R, ANA),
        NewMemoryRecord(title="Reader", body="the reader prefers zebra summaries weekly",
                        provenance=Provenance(Author.agent(ANA))),
        Author.agent(ANA), gate=_Quarantining())
    assert held.status.kind.value == "quarantined"
    ids["held"] = held.id
    clock.advance(1000)
    released = decide(store, R, ANA, held.id, "release", held.content_hash, None, Reviewer.operator("op"), clock=clock)
    assert released.successor is not None
    ids["released"] = released.successor["memory_id"]
    clock.advance(1000)
    store.erase(R, Scope.identity(R, ANA), ids["garden"], erased_by="operator")
    return ids


def _answers(store: SqliteAgentMemoryStore, clock: ManualClock, ids: dict[str, str]) -> dict[str, Any]:
    """What the public reads answer about the realm (ids, order, content, the audit trail)."""
    scope = Scope.identity(R, ANA)
    out: dict[str, Any] = {}
    for query in ("zebra", "quokka", "kettle", "tomatoes", "zebra quokka summaries"):
        expr = fts.match_expression(query)
        assert expr is not None
        hits = store.search(R, scope, expr, 10)
        out[f"recall {query}"] = [(rec.id, rec.title, rec.body, round(score, 9)) for rec, score in hits]
    out["listing"] = [(key, rec.id, rec.title) for key, rec in store.list_active(R, scope, limit=50)]
    with store.snapshot(R) as tx:
        for name in ("island", "island v2", "kettle", "held", "released", "garden"):
            out[f"history {name}"] = record_history(tx, scope, ids[name], clock.now_ms())
        rows, more = tx.panel.records_page(RecordFilters(), None, 50)
        out["panel"] = ([(r.memory_id, r.status, r.updated_at_ms) for r in rows], more)
        out["audit"] = [(r.audit_id, r.stage_token, r.op_index, r.op_kind, r.memory_id, r.detail)
                        for r in tx.audit.of_records(list(ids.values()))]
        review_token = next(r.stage_token for r in tx.audit.of_records([ids["held"]]) if r.op_kind == "tombstone")
        out["review op 0"] = tx.audit.at(review_token, 0)
        direct_token = next(r.stage_token for r in tx.audit.of_records([ids["trip"]]))
        out["plain write op 0"] = tx.audit.at(direct_token, 0)
        out["erasure"] = tx.audit.erasure_of(ids["garden"])
    assert out["review op 0"] is not None and out["review op 0"].memory_id == ids["released"]
    assert out["plain write op 0"] is not None and out["plain write op 0"].memory_id == ids["trip"]
    assert [r.memory_id for r in out["erasure"]] == [ids["garden"]]
    assert out["history garden"] is not None and out["history released"] is not None
    return out


def test_a_realm_of_the_previous_schema_is_migrated_and_reads_the_same(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "am"
    clock = ManualClock(START_MS)
    previous = [step for step in schema.MIGRATIONS if step[0] != 11]  # the register the erase writes today
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", previous)
        with SqliteAgentMemoryStore(root, clock) as store:
            ids = _write_history(store, clock)
            before = _answers(store, clock, ids)
    path = realm_db_path(root, R)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'audit_token_idx'").fetchone()[0] == (
            "CREATE INDEX audit_token_idx ON audit(stage_token)")
        assert 11 not in {v for (v,) in conn.execute("SELECT version FROM schema_migrations WHERE domain = ?",
                                                       (schema.SCHEMA_DOMAIN,))}
        audit_rows = conn.execute("SELECT count(*) FROM audit").fetchone()[0]
    assert _token_index_entries(path) == audit_rows  # every row, the plain writes' too

    with SqliteAgentMemoryStore(root, clock) as store:
        after = _answers(store, clock, ids)
        assert after == before
        with sqlite3.connect(path) as conn:
            assert "WHERE stage_token NOT GLOB 'direct-*'" in conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'audit_token_idx'").fetchone()[0]
            looked_up = conn.execute("SELECT count(*) FROM audit WHERE stage_token NOT LIKE 'direct-%'").fetchone()[0]
        assert 0 < _token_index_entries(path) == looked_up  # the review's and the erase's rows only
        for i in range(20):  # plain writes add no entry
            clock.advance(1000)
            record_writes.remember(store, R, ANA, f"after {i}", f"a zebra note written after the upgrade ({i})")
        assert _token_index_entries(path) == looked_up
        assert _answers(store, clock, ids)["review op 0"] == before["review op 0"]


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A realm of several thousand plain writes with a review and an erase among them, the statements its
    reads ran (captured on the store's connections), and two copies: without statistics and analysed."""
    root = tmp_path_factory.mktemp("token-plans") / "am"
    clock = ManualClock(START_MS)
    sql: list[str] = []
    with SqliteAgentMemoryStore(root, clock) as store:
        ids = _write_history(store, clock)
        for i in range(3000):
            clock.advance(10)
            record_writes.remember(store, R, ANA if i % 3 else BEN, f"bulk {i}", f"note {i} about term{i % 97}")
        original = store._connect

        def connect(path: Path) -> sqlite3.Connection:
            conn = original(path)
            conn.set_trace_callback(sql.append)
            return conn

        store._connect = connect  # type: ignore[method-assign]
        db = store._db(R)
        for conn in (db.writer, *db.idle):
            conn.set_trace_callback(sql.append)
        _answers(store, clock, ids)
        record_writes.remember(store, R, ANA, "fresh", "a fresh zebra note")
        with store.snapshot(R) as tx:
            assert [r.memory_id for r in tx.panel.claimants(ids["island"], 10)] == [ids["island v2"]]
        with store.transaction(R) as wtx:
            assert wtx.expired(10) == []  # the expiry sweep's read
        path = store._db(R).path
    copies = {}
    for variant in ("no-stats", "analysed"):
        dest = root.parent / f"{variant}.sqlite3"
        with sqlite3.connect(path) as source, sqlite3.connect(dest) as conn:
            source.backup(conn)
            if variant == "no-stats":
                conn.execute("DROP TABLE IF EXISTS sqlite_stat1")
            else:
                conn.execute("ANALYZE")
        copies[variant] = dest
    return {"sql": list(dict.fromkeys(sql)), "copies": copies}


# (what, a pattern selecting captured statements, what their plans must show)
TOKEN_QUERIES = [
    ("the review's first op, by its token", r"FROM audit WHERE stage_token = '(?!direct-)[^']*' AND stage_token NOT GLOB",
     lambda plan: any("audit_token_idx" in p for p in plan) and not any(p.startswith("SCAN audit") for p in plan)),
    ("the erase's rows, by its token", r"FROM audit WHERE stage_token = '[^']*' AND stage_token NOT GLOB .* op_kind = 'erase'",
     lambda plan: any("audit_token_idx" in p for p in plan) and not any(p.startswith("SCAN audit") for p in plan)),
    ("an audit trail, by record", r"FROM audit WHERE memory_id IN",
     lambda plan: any("audit_memory_idx" in p for p in plan)),
    ("exact-duplicate check", r"^SELECT .* FROM records WHERE .*status_kind = 'active' .*AND content_hash = ",
     lambda plan: any("records_scope_status_hash_idx" in p for p in plan)
     and not any(re.match(r"SCAN (r|records)\b", p) for p in plan)),
    ("the panel's listing", r"FROM records (?!WHERE scope_kind = ).*ORDER BY updated_at_ms DESC, memory_id DESC LIMIT",
     lambda plan: any("records_updated_idx" in p for p in plan) and not any("TEMP B-TREE" in p for p in plan)),
    # ties of one update time are put in memory_id order by a sort of that tie alone (the index's right part)
    ("the scope's listing", r"FROM records WHERE scope_kind = .*status_kind = 'active' .*"
     r"ORDER BY updated_at_ms DESC, memory_id DESC",
     lambda plan: any("records_scope_updated_idx" in p for p in plan)
     and not any("TEMP B-TREE FOR ORDER BY" in p for p in plan)
     and not any(re.match(r"SCAN (r|records)\b", p) for p in plan)),
    ("the lineage: who supersedes a record", r"FROM records WHERE supersedes = ",
     lambda plan: any("records_supersedes_idx" in p for p in plan)),
    ("the expiry sweep", r"FROM records WHERE status_kind = 'active' AND expires_at_ms <= ",
     lambda plan: all("records_expiry_idx" in p for p in plan)),
    ("full-text candidates", r"records_fts MATCH",
     lambda plan: not any(re.match(r"SCAN (r|records)\b(?! VIRTUAL)", p) for p in plan)),
]


@pytest.mark.parametrize("variant", ["no-stats", "analysed"])
@pytest.mark.parametrize("what,pattern,good", TOKEN_QUERIES, ids=[q[0] for q in TOKEN_QUERIES])
def test_hot_reads_stay_on_their_indexes(planned: dict[str, Any], variant: str, what: str, pattern: str,
                                          good: Any) -> None:
    found = [s for s in planned["sql"] if re.search(pattern, s, re.S)]
    assert found, f"no captured statement matches {pattern!r}"
    with sqlite3.connect(planned["copies"][variant]) as conn:
        for sql in found:
            plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert good(plan), f"{what} ({variant}): {sql[:200]} planned as {plan}"


def test_the_token_lookups_use_the_index_when_it_was_analysed_empty(tmp_path: Path) -> None:
    """A realm of plain writes only leaves the partial token index empty, and ``ANALYZE`` then gives it no
    statistics row; the first review's or erase's lookup by token still searches the index."""
    root = tmp_path / "am"
    clock = ManualClock(START_MS)
    with SqliteAgentMemoryStore(root, clock) as store:
        for i in range(300):
            clock.advance(10)
            record_writes.remember(store, R, ANA, f"plain {i}", f"a plain note {i}")
    with sqlite3.connect(realm_db_path(root, R)) as conn:
        conn.execute("ANALYZE")
        assert conn.execute("SELECT 1 FROM sqlite_stat1 WHERE idx = 'audit_token_idx'").fetchone() is None
        conn.execute("INSERT INTO audit(stage_token, op_index, op_kind, memory_id, detail, applied_at_ms) "
                     "VALUES ('review-1', 0, 'create', 'mem-1', '{}', 1)")
        for sql in (
            "SELECT * FROM audit WHERE stage_token = 'review-1' AND stage_token NOT GLOB 'direct-*' AND op_index = 0 "
            "ORDER BY audit_id LIMIT 1",
            "SELECT * FROM audit WHERE stage_token = 'erase-1' AND stage_token NOT GLOB 'direct-*' "
            "AND op_kind = 'erase' ORDER BY op_index",
        ):
            plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert any("audit_token_idx" in p for p in plan), (sql, plan)
