"""``[agent_memory] identity_record_limit``: the rows one identity scope may hold, every status counted.

Through a real gateway over HTTP on SQLite and PostgreSQL: writes up to the limit land, the next is refused
(``-32040``, reason ``limit``, naming the key, the scope's count and the limit); a batch that would cross it
writes nothing; an update (a new version row) counts; an erase frees room; another identity is unaffected.
Against the stores: the per-scope counts the triggers keep match ``COUNT(*)`` after every kind of write and
removal, and a database of the previous schema gets its counts filled when it is opened.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.retention import TombstoneRetention
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.errors import AgentMemoryError
from meta_memory.review.model import Reviewer
from meta_memory.review.proposals import accept_proposal, hold_proposal, reject_proposal
from support import GatewayProcess, write_config

IDENT = "agent:hoarder"
OTHER = "agent:neighbour"
LIMIT = 50
DAY_MS = 86_400_000

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

# --------------------------------------------------------------------------- through the gateway


@pytest.fixture(params=BACKENDS)
def limited(request: pytest.FixtureRequest, gateway_factory: Any, tmp_path: Path) -> Iterator[GatewayProcess]:
    """A gateway with ``identity_record_limit = 50`` on the backend of the parameter."""
    body = f"[agent_memory]\nidentity_record_limit = {LIMIT}\n"
    if request.param == "sqlite":
        yield gateway_factory(config=write_config(tmp_path / "meta.toml", body))
        return
    require_postgres()
    with throwaway_schema() as schema:
        body += f'store = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n'
        gw = gateway_factory(config=write_config(tmp_path / "meta.toml", body))
        yield gw
        gw.stop()


def _remember(gw: GatewayProcess, n: int, identity: str = IDENT) -> str:
    return str(gw.result("meta/agent_memory/remember",
                         {"identity": identity, "title": "Note", "body": f"note number {n}"})["memory_id"])


def _batch(first: int, count: int) -> list[dict[str, Any]]:
    return [{"title": "Batch note", "body": f"batched note {first + i}"} for i in range(count)]


def _held(gw: GatewayProcess, identity: str = IDENT) -> int:
    """Rows of ``identity``'s scope, every status, as the panel overview shows them beside the limit."""
    rows = [r for r in gw.result("meta/memory/panel/overview", {})["scopes"]
            if r["scope_kind"] == "identity" and r["scope_key"] == identity]
    assert [r["record_limit"] for r in rows] == [LIMIT]
    return int(rows[0]["records"])


def _refused_at_limit(err: dict[str, Any], held: int) -> None:
    assert err["code"] == -32040 and err["data"]["reason"] == "limit", err
    assert f"agent_memory.identity_record_limit = {LIMIT}" in err["message"]
    assert f"identity scope '{IDENT}'" in err["message"] and f"holds {held} records" in err["message"]


def test_writes_past_the_limit_are_refused_and_erase_frees_room(limited: GatewayProcess) -> None:
    gw = limited
    gw.result("meta/agent_memory/remember_batch", {"identity": IDENT, "records": _batch(0, 45)})
    first = _remember(gw, 0)
    for n in range(1, 4):
        _remember(gw, n)
    assert _held(gw) == 49

    # a batch crossing the limit writes nothing, not even the record that would have fitted
    err = gw.error("meta/agent_memory/remember_batch", {"identity": IDENT, "records": _batch(100, 2)})
    _refused_at_limit(err, 49)
    assert _held(gw) == 49

    last = _remember(gw, 4)  # the 50th row
    _refused_at_limit(gw.error("meta/agent_memory/remember", {"identity": IDENT, "title": "Note",
                                                                "body": "one too many"}), LIMIT)
    # an update writes a new version row: refused too, and the prior version stays active
    _refused_at_limit(gw.error("meta/agent_memory/update", {"identity": IDENT, "memory_id": last,
                                                              "body": "revised note"}), LIMIT)
    assert _held(gw) == LIMIT
    # a forget keeps its row (tombstoned): no room made
    assert gw.result("meta/agent_memory/forget", {"identity": IDENT, "memory_id": last})["deleted"] is True
    _refused_at_limit(gw.error("meta/agent_memory/remember", {"identity": IDENT, "title": "Note",
                                                                "body": "still too many"}), LIMIT)
    assert _held(gw) == LIMIT

    # another identity of the same realm is not affected
    for n in range(5):
        _remember(gw, n, OTHER)
    assert _held(gw, OTHER) == 5

    # erasing frees rows: the tombstoned one and another
    gw.result("meta/agent_memory/erase", {"identity": IDENT, "memory_id": last})
    gw.result("meta/agent_memory/erase", {"identity": IDENT, "memory_id": first})
    assert _held(gw) == LIMIT - 2
    _remember(gw, 7)
    _remember(gw, 8)
    _refused_at_limit(gw.error("meta/agent_memory/remember", {"identity": IDENT, "title": "Note",
                                                                "body": "over again"}), LIMIT)


def _propose(gw: GatewayProcess, n: int, identity: str = IDENT) -> dict[str, Any]:
    """The ``memory`` tool's ``propose_to_mob`` for ``identity`` into mob ``team``: ``{text, is_error}``."""
    return dict(gw.result("meta/agent_memory/tool", {
        "identity": identity, "session_key": "s", "mob": "team",
        "arguments": {"action": "propose_to_mob", "title": "Proposal", "body": f"proposal {n} " + "x" * 4000}}))


def _proposals(gw: GatewayProcess, status: str | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {} if status is None else {"status": status}
    return list(gw.result("meta/memory/proposals/list", params)["proposals"])


def test_open_proposals_count_toward_the_proposers_limit(limited: GatewayProcess) -> None:
    gw = limited
    gw.result("meta/agent_memory/remember_batch", {"identity": IDENT, "records": _batch(0, 47)})
    first = _propose(gw, 0)
    assert not first["is_error"] and "Proposed" in first["text"], first
    second = _propose(gw, 1)
    assert not second["is_error"], second
    assert _held(gw) == 47  # the panel's count is of records; the two proposals are open beside them
    _remember(gw, 47)  # the 50th row: 48 records and 2 open proposals

    # at the limit a proposal is refused by the limit, and nothing is queued
    refused = _propose(gw, 2)
    assert refused["is_error"] and "limit" in refused["text"], refused
    assert f"agent_memory.identity_record_limit = {LIMIT}" in refused["text"]
    assert f"identity scope '{IDENT}'" in refused["text"] and f"holds {LIMIT} records" in refused["text"]
    assert len(_proposals(gw)) == 2
    # and a remember counts the open proposals too
    _refused_at_limit(gw.error("meta/agent_memory/remember", {"identity": IDENT, "title": "Note",
                                                                "body": "one too many"}), LIMIT)
    # holding a proposal keeps it open: still no room
    pid = str(_proposals(gw)[0]["proposal_id"])
    assert gw.result("meta/memory/proposals/decide", {"proposal_id": pid, "action": "hold"})["status"] == "held"
    assert _propose(gw, 3)["is_error"]
    # another identity proposes freely
    assert not _propose(gw, 4, OTHER)["is_error"]

    # a decided proposal leaves the open states and gives its row back
    assert gw.result("meta/memory/proposals/decide", {"proposal_id": pid, "action": "reject"})["status"] == "rejected"
    again = _propose(gw, 5)
    assert not again["is_error"], again
    assert _propose(gw, 6)["is_error"]
    accepted = [p for p in _proposals(gw) if p["author"].get("identity") == IDENT][0]
    gw.result("meta/memory/proposals/decide", {"proposal_id": accepted["proposal_id"], "action": "accept"})
    _remember(gw, 48)  # the accepted record went to the mob's scope: the proposer's row is free
    _refused_at_limit(gw.error("meta/agent_memory/remember", {"identity": IDENT, "title": "Note",
                                                                "body": "full again"}), LIMIT)


def test_the_limit_key_takes_0_as_its_default_and_refuses_bad_values_naming_itself() -> None:
    from meta_memory.agent_memory.config import parse_agent_memory_section
    from meta_memory.errors import ConfigError

    assert parse_agent_memory_section({}).identity_record_limit == 2_000_000
    assert parse_agent_memory_section({"identity_record_limit": 0}).identity_record_limit == 2_000_000
    assert parse_agent_memory_section({"identity_record_limit": LIMIT}).identity_record_limit == LIMIT
    for bad in (-1, "many", 1.5, 10**12, True):
        with pytest.raises(ConfigError, match="agent_memory.identity_record_limit"):
            parse_agent_memory_section({"identity_record_limit": bad})


# --------------------------------------------------------------------------- the kept counts, per backend


class _Clock:
    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def now_ms(self) -> int:
        return self.ms


#: An identity's open proposals, counted per proposer (what the kept counts add to its records).
_OPEN_SQLITE = ("SELECT 'identity', json_extract(author, '$.identity'), count(*) FROM proposals "
                "WHERE status IN ('pending', 'held') GROUP BY 2")
_OPEN_PG = ("SELECT 'identity', author::jsonb->>'identity', count(*) FROM \"{schema}\".proposals "
            "WHERE realm = %s AND status IN ('pending', 'held') GROUP BY 2")


@contextmanager
def _store(backend: str, tmp_path: Path, clock: _Clock) -> Iterator[tuple[AgentMemoryStore, Callable[[], Any]]]:
    """``(store, counts)``: ``counts()`` is ``(kept, actual)``, each ``{(kind, key): rows}`` of realm ``r``."""
    if backend == "sqlite":
        with SqliteAgentMemoryStore(tmp_path / "am", clock) as store:

            def counts() -> Any:
                with sqlite3.connect(realm_db_path(tmp_path / "am", "r")) as conn:
                    return _pair(conn.execute("SELECT scope_kind, scope_key, n FROM scope_rows").fetchall(),
                                 conn.execute(f"SELECT k, s, sum(n) FROM (SELECT scope_kind AS k, scope_key AS s, "
                                              f"count(*) AS n FROM records GROUP BY 1, 2 UNION ALL {_OPEN_SQLITE}) "
                                              "GROUP BY 1, 2").fetchall())

            yield store, counts
        return
    require_postgres()
    import psycopg

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as schema:
        pg = PostgresAgentMemoryStore(DSN, clock, schema=schema)

        def pg_counts() -> Any:
            with psycopg.connect(DSN) as conn:
                return _pair(
                    conn.execute(f'SELECT scope_kind, scope_key, n FROM "{schema}".scope_rows WHERE realm = %s',
                                 ("r",)).fetchall(),
                    conn.execute(f'SELECT k, s, sum(n) FROM (SELECT scope_kind AS k, scope_key AS s, count(*) AS n '
                                 f'FROM "{schema}".records WHERE realm = %s GROUP BY 1, 2 UNION ALL '
                                 f'{_OPEN_PG.format(schema=schema)}) AS c GROUP BY 1, 2', ("r", "r")).fetchall())

        try:
            yield pg, pg_counts
        finally:
            pg.close()


def _pair(kept: list[Any], actual: list[Any]) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    return ({(k, s): int(n) for k, s, n in kept if n}, {(k, s): int(n) for k, s, n in actual})


@pytest.mark.parametrize("backend", BACKENDS)
def test_kept_counts_match_the_rows_after_every_kind_of_change(backend: str, tmp_path: Path) -> None:
    clock = _Clock()
    rnd = random.Random(7)
    with _store(backend, tmp_path, clock) as (store, counts):
        live: dict[str, list[str]] = {IDENT: [], OTHER: []}
        proposals: list[str] = []
        swept = 0
        for step in range(120):
            who = rnd.choice([IDENT, OTHER])
            scope = Scope.identity("r", who)
            op = rnd.choice(["remember", "remember", "batch", "update", "forget", "erase", "sweep", "propose",
                             "decide", "decide"])
            clock.ms += 1000
            if op == "propose":
                record = NewMemoryRecord(title="Proposal", body=f"{who} proposes {step}",
                                         provenance=Provenance(Author.agent(who)))
                proposals.append(record_writes.propose(store, "r", Scope.mob("r", "team"), record,
                                                       Author.agent(who)))
            elif op == "decide" and proposals:
                pid = proposals[rnd.randrange(len(proposals))]
                action = rnd.choice(["hold", "reject", "accept"])
                try:
                    if action == "hold":
                        hold_proposal(store, "r", pid)
                    elif action == "reject":
                        reject_proposal(store, "r", pid)
                    else:
                        accept_proposal(store, "r", pid, Reviewer.operator("test"))
                except AgentMemoryError as exc:  # already decided
                    assert exc.reason == "invalid_record", exc
            elif op == "remember" or not live[who]:
                rec, _ = record_writes.remember(store, "r", who, "Note", f"{who} note {step}")
                live[who].append(rec.memory_id)
            elif op == "batch":
                got = store_batch(store, who, step)
                live[who].extend(got)
            elif op == "update":
                rec, _prior = record_writes.update(store, "r", who, live[who].pop(rnd.randrange(len(live[who]))),
                                                   body=f"{who} revised {step}")
                live[who].append(rec.memory_id)
            elif op == "forget":
                record_writes.forget(store, "r", scope, live[who].pop(rnd.randrange(len(live[who]))),
                                     Author.application())
            elif op == "erase" and step % 4 == 0:  # the whole identity, its proposals with it
                store.erase("r", scope, erased_by="test")
                live[who] = []
            elif op == "erase":
                gone = store.erase("r", scope, live[who][rnd.randrange(len(live[who]))], erased_by="test")
                erased = {r.memory_id for r in gone.records}
                live[who] = [m for m in live[who] if m not in erased]
            else:
                clock.ms += 3 * DAY_MS
                swept += TombstoneRetention(store, 1, clock).sweep()
            kept, actual = counts()
            assert kept == actual, (step, op)
        assert swept > 0 and sum(counts()[1].values()) > 0


def store_batch(store: AgentMemoryStore, identity: str, step: int) -> list[str]:
    items = [RememberItem(f"Batch {step}", f"{identity} batched {step}.{i}") for i in range(3)]
    out = record_writes.remember_many(store, "r", identity, items)
    return [o.record.id for o in out if o.record is not None]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_refuses_a_batch_past_the_limit_whole(backend: str, tmp_path: Path) -> None:
    clock = _Clock()
    with _store(backend, tmp_path, clock) as (store, counts):
        store.identity_record_limit = 4  # type: ignore[attr-defined]
        store_batch(store, IDENT, 0)
        with pytest.raises(AgentMemoryError) as info:
            store_batch(store, IDENT, 1)
        assert info.value.reason == "limit" and "identity_record_limit = 4" in str(info.value)
        kept, actual = counts()
        assert kept == actual == {("identity", IDENT): 3}


# --------------------------------------------------------------------------- a database of the previous schema


def _sqlite_previous(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "DROP TRIGGER scope_rows_insert; DROP TRIGGER scope_rows_delete; DROP TABLE scope_rows; "
            "DELETE FROM schema_migrations WHERE domain = 'meta-memory' AND version = 14;"
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_database_of_the_previous_schema_gets_its_counts(backend: str, tmp_path: Path) -> None:
    clock = _Clock()
    if backend == "sqlite":
        with SqliteAgentMemoryStore(tmp_path / "am", clock) as first:
            _fill(first)
        _sqlite_previous(realm_db_path(tmp_path / "am", "r"))
        with sqlite3.connect(realm_db_path(tmp_path / "am", "r")) as conn:
            assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'scope_rows'").fetchone()[0] == 0
        with _store(backend, tmp_path, clock) as (reopened, counts):
            reopened.list_active("r", Scope.identity("r", IDENT))  # opens (and migrates) the realm
            kept, actual = counts()
            assert kept == actual == {("identity", IDENT): 6, ("identity", OTHER): 2}
            record_writes.remember(reopened, "r", IDENT, "Note", "after the upgrade")
            assert counts()[0][("identity", IDENT)] == 7
        return
    require_postgres()
    import psycopg

    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    with throwaway_schema() as schema:
        previous = PostgresAgentMemoryStore(DSN, clock, schema=schema)
        _fill(previous)
        previous.close()
        q = f'"{schema}"'
        with psycopg.connect(DSN) as conn:
            conn.execute(f"DROP TABLE {q}.scope_rows; DROP TRIGGER scope_rows_insert ON {q}.records; "
                         f"DROP TRIGGER scope_rows_delete ON {q}.records; DROP FUNCTION {q}.scope_rows_added(); "
                         f"DROP FUNCTION {q}.scope_rows_removed(); "
                         f"DELETE FROM {q}.schema_migrations WHERE domain = 'meta-memory' AND version = 14")
        upgraded = PostgresAgentMemoryStore(DSN, clock, schema=schema)
        try:
            with psycopg.connect(DSN) as conn:
                kept = conn.execute(f"SELECT scope_kind, scope_key, n FROM {q}.scope_rows WHERE realm = 'r' "
                                    "ORDER BY scope_key").fetchall()
            assert [tuple(r) for r in kept] == [("identity", IDENT, 6), ("identity", OTHER, 2)]
        finally:
            upgraded.close()


def _fill(store: AgentMemoryStore) -> None:
    ids = [record_writes.remember(store, "r", IDENT, "Note", f"filled {i}")[0].memory_id for i in range(5)]
    record_writes.update(store, "r", IDENT, ids[0], body="filled again")  # a superseded row and its successor
    record_writes.forget(store, "r", Scope.identity("r", IDENT), ids[1], Author.application())  # tombstoned
    for i in range(2):
        record_writes.remember(store, "r", OTHER, "Note", f"other {i}")
    store.erase("r", Scope.identity("r", IDENT), ids[2], erased_by="test")  # gone: not counted
    record_writes.remember(store, "r", IDENT, "Note", "filled last")


def test_a_database_before_proposals_counted_gets_its_open_proposals_counted(tmp_path: Path) -> None:
    clock = _Clock()
    with SqliteAgentMemoryStore(tmp_path / "am", clock) as first:
        _fill(first)
        for i in range(3):
            record = NewMemoryRecord(title="Proposal", body=f"proposed {i}", provenance=Provenance(Author.agent(IDENT)))
            pid = record_writes.propose(first, "r", Scope.mob("r", "team"), record, Author.agent(IDENT))
        reject_proposal(first, "r", pid)  # decided: not counted
    with sqlite3.connect(realm_db_path(tmp_path / "am", "r")) as conn:
        conn.executescript(
            "DROP TRIGGER scope_rows_proposal_insert; DROP TRIGGER scope_rows_proposal_delete; "
            "DROP TRIGGER scope_rows_proposal_closed; DROP TRIGGER scope_rows_proposal_opened; "
            "UPDATE scope_rows SET n = n - 2 WHERE scope_key = 'agent:hoarder'; "
            "DELETE FROM schema_migrations WHERE domain = 'meta-memory' AND version = 17;")
    with _store("sqlite", tmp_path, clock) as (reopened, counts):
        reopened.list_active("r", Scope.identity("r", IDENT))  # opens (and migrates) the realm
        kept, actual = counts()
        assert kept == actual == {("identity", IDENT): 8, ("identity", OTHER): 2}
