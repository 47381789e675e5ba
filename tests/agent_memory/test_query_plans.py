"""The hot queries of a write and a recall use the right index by construction (SQLite).

Every statement the store runs during a public ``remember`` (application and agent authors),
a recall, an injection and a manifest is captured on the store's own connections and explained
(``EXPLAIN QUERY PLAN``) on copies of the realm database, one without planner statistics and
one after ``ANALYZE``, on a realm with enough rows (several thousand in the identity, other
identities, tombstones, ranked rows) that a plan walking the scope would show. A second test
counts SQLite virtual-machine steps of one ``remember`` at two store sizes: the cost of a write
must not grow with the identity's record count.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.batch import CreateOp, SetRankOp, StagedBatch, TombstoneOp
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store import planner
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.config import parse_config
from meta_memory.rpc.registry import CallContext
from meta_memory.runtime import Runtime
from meta_memory.server.gateway import Gateway

R = "default"
ME = "lead:main"
OTHER = "scout:main"


def _words(i: int) -> str:
    return " ".join(f"term{(i * 7 + k * 13) % 997}" for k in range(12))


def _load(store: SqliteAgentMemoryStore, identity: str, n: int, start: int = 0) -> list[str]:
    scope = Scope.identity(R, identity)
    ids: list[str] = []
    for first in range(start, start + n, 1000):
        ops = tuple(
            CreateOp(
                scope=scope,
                record=NewMemoryRecord(title=f"note {i} {identity}", body=_words(i),
                                       provenance=Provenance(Author.application())),
                created_at_ms=1_700_000_000_000 + i * 60_000,
            )
            for i in range(first, min(start + n, first + 1000))
        )
        receipt = record_writes.apply_batch(store, StagedBatch(R, Author.application(), ops))
        ids.extend(r.memory_id for r in receipt.results)
    return ids


class Captured:
    """Every statement run on the store's connections (SQL with its values bound), and the VM steps the
    creating thread runs on them (the store's background upkeep, which merges the full-text index on the
    writer a moment after commits, is not counted: it would land on whichever write it overlaps)."""

    def __init__(self, store: SqliteAgentMemoryStore) -> None:
        self.sql: list[str] = []
        self.steps = 0
        self._thread = threading.get_ident()
        self._store = store
        original = store._connect

        def connect(path: Path) -> sqlite3.Connection:
            conn = original(path)
            self.attach(conn)
            return conn

        store._connect = connect  # type: ignore[method-assign]
        for db in store._realms.values():
            for conn in (db.writer, *db.idle):
                self.attach(conn)

    def attach(self, conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(self.sql.append)

        def step() -> int:
            if threading.get_ident() == self._thread:
                self.steps += 1
            return 0

        conn.set_progress_handler(step, 1)


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("plans")
    runtime = Runtime(parse_config({"agent_memory": {"recall_timeout_ms": 30_000}}), tmp / "state")
    store: SqliteAgentMemoryStore = runtime.agent_memory.store
    mine = _load(store, ME, 6000)
    _load(store, OTHER, 1500, start=10_000)
    scope = Scope.identity(R, ME)
    record_writes.apply_batch(store, StagedBatch(R, Author.application(), tuple(TombstoneOp(id=i) for i in mine[:300])))
    record_writes.apply_batch(store, StagedBatch(R, Author.application(),
                                          tuple(SetRankOp(id=i, rank=n) for n, i in enumerate(mine[300:340]))))
    captured = Captured(store)
    gateway = Gateway.for_runtime(runtime)
    ctx = CallContext(transport="embedded")
    runtime.agent_memory.service.remember(R, ME, "fresh title", "a new body about term5 and term9", [])
    runtime.agent_memory.service.remember(R, ME, "fresh title", "a new body about term5 and term9", [])  # duplicate
    record_writes.remember_authored(store, R, scope, NewMemoryRecord(title="agent note", body="seen term3 today",
                                                              provenance=Provenance(Author.agent(ME))), Author.agent(ME))
    gateway.call("meta/agent_memory/recall", {"identity": ME, "query_text": "term5 term9 term12"}, ctx)
    gateway.call("meta/turn/inject", {"identity": ME, "query_text": "term7 term20"}, ctx)
    gateway.call("meta/agent_memory/recall", {"identity": ME, "selection": "always"}, ctx)
    gateway.call("meta/agent_memory/manifest", {"identity": ME}, ctx)
    newer = gateway.call("meta/agent_memory/update", {"identity": ME, "memory_id": mine[400], "body": "term8"}, ctx)
    gateway.call("meta/agent_memory/history", {"identity": ME, "memory_id": newer["memory_id"]}, ctx)
    db_path = store._db(R).path
    copies = {}
    for variant in ("no-stats", "analysed"):
        dest = tmp / f"{variant}.sqlite3"
        # a consistent copy through SQLite's backup API (the WAL included), on a connection of its own: the
        # store's writer may be busy with its background upkeep at this moment
        source, conn = sqlite3.connect(db_path), sqlite3.connect(dest)
        source.backup(conn)
        source.close()
        if variant == "no-stats":
            conn.execute("DROP TABLE IF EXISTS sqlite_stat1")
        else:
            conn.execute("ANALYZE")
        conn.commit()
        conn.close()
        copies[variant] = sqlite3.connect(dest)
    yield {"sql": list(dict.fromkeys(captured.sql)), "copies": copies}
    for conn in copies.values():
        conn.close()
    runtime.close()


def _plan(conn: sqlite3.Connection, sql: str) -> list[str]:
    return [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]


def _matching(sqls: list[str], pattern: str) -> list[str]:
    found = [s for s in sqls if re.search(pattern, s, re.S)]
    assert found, f"no captured statement matches {pattern!r}"
    return found


#: The expiry predicate every active read carries after ``status_kind = 'active'`` (its time inlined).
UNEXPIRED = r"(?:AND COALESCE\(expires_at_ms, \d+\) > \S+ )?"

# (what, a pattern selecting the captured statements, what every line set of their plans must show)
HOT_QUERIES: list[tuple[str, str, Callable[[list[str]], bool]]] = [
    (
        "exact-duplicate check",
        r"^SELECT .* FROM records WHERE .*status_kind = 'active' " + UNEXPIRED + r"AND content_hash = ",
        # every equality column from the index; with statistics and the expiry filter SQLite may sort what
        # that search finds (one scope's active records of one content hash: a handful), never a scope walk
        lambda plan: any("records_scope_status_hash_idx" in p and "content_hash=?" in p for p in plan)
        and not any(re.match(r"SCAN (r|records)\b", p) for p in plan),
    ),
    (
        "recreation window (agent author)",
        r"^SELECT 1 FROM records WHERE .*content_hash = .*status_kind = 'tombstoned'",
        lambda plan: any("records_scope_status_hash_idx" in p and "content_hash=?" in p for p in plan),
    ),
    (
        "record by id",
        r"^SELECT [^()]* FROM records WHERE memory_id = '[^']*'$",
        lambda plan: all("(memory_id=?)" in p for p in plan),
    ),
    (
        "full-text candidates",
        r"JOIN records r ON r\.rowid = \w+\.rowid WHERE \w+ MATCH ",
        lambda plan: any("SEARCH r USING INTEGER PRIMARY KEY" in p for p in plan)
        and not any(re.match(r"SCAN (r|records)\b", p) for p in plan),
    ),
    (
        "write-order neighbours",
        r"FROM records r WHERE .*status_kind = 'active' " + UNEXPIRED + r"AND created_at_ms [<=>]",
        # each range bounded on both sides: the anchor's millisecond by rowid, the others by the window
        lambda plan: bool(searches := [p for p in plan if p.startswith("SEARCH r")])
        and all("records_scope_created_idx" in p and (
            ("created_at_ms=?" in p and "rowid" in p) or ("created_at_ms>?" in p and "created_at_ms<?" in p))
            for p in searches)
        and not any(re.match(r"SCAN (r|records)\b", p) for p in plan),
    ),
    (
        "newest records",
        r"status_kind = 'active' " + UNEXPIRED + r"ORDER BY updated_at_ms DESC, created_at_ms DESC, rid DESC LIMIT",
        lambda plan: any("records_scope_updated_idx" in p for p in plan)
        and not any("USE TEMP B-TREE FOR ORDER BY" in p for p in plan),
    ),
    (
        "manifest, ranked half",
        r"AND working_set_rank IS NOT NULL ORDER BY working_set_rank",
        lambda plan: any("records_scope_ranked_idx" in p for p in plan)
        and not any("USE TEMP B-TREE FOR ORDER BY" in p for p in plan),
    ),
    (
        "expired records of the scope (a recall asks for that many more candidates)",
        r"^SELECT COUNT\(\*\) FROM records .*expires_at_ms <= ",
        # the due rows only: walking the scope's index to test each expiry took 2-4 s at a million records
        lambda plan: all("records_expiry_idx" in p for p in plan),
    ),
    (
        "usage mark",
        r"^UPDATE records SET usage_stats = .* WHERE memory_id = ",
        lambda plan: any("(memory_id=?)" in p for p in plan),
    ),
]


@pytest.mark.parametrize("variant", ["no-stats", "analysed"])
@pytest.mark.parametrize("what,pattern,good", HOT_QUERIES, ids=[q[0] for q in HOT_QUERIES])
def test_hot_query_plan(realm: dict[str, Any], variant: str, what: str, pattern: str,
                        good: Callable[[list[str]], bool]) -> None:
    conn = realm["copies"][variant]
    for sql in _matching(realm["sql"], pattern):
        plan = _plan(conn, sql)
        assert good(plan), f"{what} ({variant}): {sql[:160]}... planned as {plan}"


@pytest.mark.parametrize("variant", ["no-stats", "analysed"])
def test_no_captured_statement_scans_the_records_table(realm: dict[str, Any], variant: str) -> None:
    conn = realm["copies"][variant]
    for sql in realm["sql"]:
        if not re.match(r"^(SELECT|UPDATE|DELETE)\b", sql):
            continue
        if re.search(r"ORDER BY r\.rid DESC LIMIT (?:\?|\d+)$", sql):
            # a realm kept resident once its index is built (ViewCache.warm, off the recall's path, when the build
            # finishes inside the capture): the newest rows walked in rowid order, stopped at its LIMIT (the trace
            # gives statements with their parameters bound: the LIMIT is a number there)
            assert not any("TEMP B-TREE" in line for line in _plan(conn, sql)), sql[:160]
            continue
        for line in _plan(conn, sql):
            assert not re.match(r"SCAN (records|r)\b(?! VIRTUAL)", line), f"{sql[:160]} planned as {line}"


def _remember_steps(tmp: Path, size: int) -> int:
    with SqliteAgentMemoryStore(tmp / f"steps-{size}") as store:
        _load(store, ME, size)
        _load(store, OTHER, 200, start=50_000)
        record_writes.remember(store, R, ME, "first write", "the retention-floor check runs on a scope's first write")
        fewest = None
        for i in range(3):  # the fewest of three: a commit that met a full-text crisis merge is not the norm
            captured = Captured(store)
            record_writes.remember(store, R, ME, f"measured write {i}", f"its body mentions term42 once ({i})")
            fewest = captured.steps if fewest is None else min(fewest, captured.steps)
        assert fewest is not None
        return fewest


def test_remember_cost_does_not_grow_with_the_identity(tmp_path: Path) -> None:
    """VM steps of one public remember (dedup check, validator reads, record, full-text and audit rows)
    with 500 and with 8,000 records in the identity: a scope walk would multiply them by ~16."""
    small = _remember_steps(tmp_path, 500)
    large = _remember_steps(tmp_path, 8000)
    assert large <= small * 1.3, (small, large)


def test_statistics_are_taken_when_missing_and_refreshed_as_the_realm_grows(tmp_path: Path) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root) as store:
        _load(store, ME, 2500)
    conn = sqlite3.connect(realm_db_path(root, "default"))
    conn.execute("DROP TABLE IF EXISTS sqlite_stat1")
    conn.commit()
    conn.close()
    with SqliteAgentMemoryStore(root) as store:
        record_writes.remember(store, R, ME, "after reopen", "statistics were missing at open")
        writer = store._db(R).writer
        assert planner.analysed_rows(writer) == 2500  # taken at open, before this write
        _load(store, ME, 3000, start=10_000)
        for i in range(planner.CHECK_EVERY_WRITES):
            record_writes.remember(store, R, ME, f"grow {i}", f"body {i}")
        assert planner.analysed_rows(writer) >= 5500
        assert not planner.stale(writer)


def test_retention_floor_check_is_bounded_and_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The floor check reads at most floor + 1 rows and stops once a scope was reported above it."""
    from meta_memory.agent_memory.store.base import DEFAULT_SCOPE_FLOOR_RECORDS

    with SqliteAgentMemoryStore(tmp_path / "floor") as store:
        _load(store, ME, DEFAULT_SCOPE_FLOOR_RECORDS + 500)
        captured = Captured(store)
        with caplog.at_level("WARNING"):
            for i in range(store.FLOOR_CHECK_EVERY + 2):
                record_writes.remember(store, R, ME, f"write {i}", f"body {i}")
        warnings = [r for r in caplog.records if "above the retention floor" in r.getMessage()]
        assert len(warnings) == 1 and f"more than {DEFAULT_SCOPE_FLOOR_RECORDS} records" in warnings[0].getMessage()
        footprints = [s for s in captured.sql if "LENGTH(CAST(title AS BLOB))" in s]
        assert len(footprints) == 1 and f"LIMIT {DEFAULT_SCOPE_FLOOR_RECORDS + 1}" in footprints[0]
