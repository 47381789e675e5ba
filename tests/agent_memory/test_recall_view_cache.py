"""The SQLite store keeps the record views recall read (:mod:`meta_memory.agent_memory.store.view_cache`)
and re-validates each in the reading snapshot: a kept view is never served for a row that changed, left
the scope or the realm, was erased (its rid reused by another identity's record), or was changed by
another store on the same files (another process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.agent_memory.store.view_cache import view_bytes
from meta_memory.clock import ManualClock
from support import raw_rows, raw_write

R = "default"
A, B = "lead:alice", "lead:bob"


def _found(store: SqliteAgentMemoryStore, identity: str, term: str, realm: str = R) -> list[tuple[str, str, str]]:
    """``(memory_id, title, body)`` of the scope's candidates for ``term`` (the read recall makes)."""
    return [(v.id, v.title, v.body) for v, _ in store.search(realm, Scope.identity(realm, identity), f'"{term}"', 10)]


def _store(root: Path) -> SqliteAgentMemoryStore:
    return SqliteAgentMemoryStore(root, clock=ManualClock(1_700_000_000_000))


def test_a_kept_view_is_served_only_to_its_own_scope_and_realm(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, _ = record_writes.remember(store, R, A, "Harbour", "alice keeps the harbour key")
        b, _ = record_writes.remember(store, R, B, "Harbour", "bob keeps the harbour map")
        other, _ = record_writes.remember(store, "elsewhere", A, "Harbour", "alice elsewhere")
        for _ in range(2):  # the second round is served from the kept views
            assert _found(store, A, "harbour") == [(a.memory_id, "Harbour", "alice keeps the harbour key")]
            assert _found(store, B, "harbour") == [(b.memory_id, "Harbour", "bob keeps the harbour map")]
            assert _found(store, A, "harbour", "elsewhere") == [(other.memory_id, "Harbour", "alice elsewhere")]
        assert store._views.hits >= 3


def test_a_forgotten_or_superseded_record_is_not_served_from_the_cache(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, _ = record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        gone, _ = record_writes.remember(store, R, A, "Harbour note", "the harbour closes at nine")
        assert {m for m, _, _ in _found(store, A, "harbour")} == {a.memory_id, gone.memory_id}
        assert record_writes.forget(store, R, Scope.identity(R, A), gone.memory_id, Author.application())
        new, _prior = record_writes.update(store, R, A, a.memory_id, None, "the harbour ferry leaves at one", None)
        assert _found(store, A, "harbour") == [(new.memory_id, "Harbour", "the harbour ferry leaves at one")]


def test_an_erased_record_s_reused_rid_serves_the_new_record(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        record_writes.remember(store, R, B, "Anchor", "an older record keeps the rids below")
        secret, _ = record_writes.remember(store, R, A, "Harbour", "alice's secret harbour code")
        (rid,) = raw_rows(store, R, "SELECT rid FROM records WHERE memory_id = ?", (secret.memory_id,))[0]
        assert _found(store, A, "harbour")[0][2] == "alice's secret harbour code"  # its view is kept
        store.erase(R, Scope.identity(R, A), secret.memory_id, erased_by="operator")
        bob, _ = record_writes.remember(store, R, B, "Harbour", "bob's public harbour notes")
        assert raw_rows(store, R, "SELECT memory_id FROM records WHERE rid = ?", (rid,))[0][0] == bob.memory_id
        assert _found(store, A, "harbour") == []
        assert _found(store, B, "harbour") == [(bob.memory_id, "Harbour", "bob's public harbour notes")]


def test_a_row_changed_in_place_is_read_anew(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, _ = record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        assert _found(store, A, "harbour")
        raw_write(store, R, "UPDATE records SET updated_at_ms = updated_at_ms + 5 WHERE memory_id = ?", (a.memory_id,))
        views = store.search(R, Scope.identity(R, A), '"harbour"', 10)
        assert [v.updated_at_ms for v, _ in views] == [a.updated_at_ms + 5]
        raw_write(store, R, "UPDATE records SET body = 'rewritten harbour', content_hash = 'x' WHERE memory_id = ?",
                  (a.memory_id,))
        assert _found(store, A, "harbour") == [(a.memory_id, "Harbour", "rewritten harbour")]


def test_writes_by_another_store_on_the_same_files_are_seen(tmp_path: Path) -> None:
    with _store(tmp_path) as reader, _store(tmp_path) as writer:
        a, _ = record_writes.remember(writer, R, A, "Harbour", "the harbour ferry leaves at noon")
        assert _found(reader, A, "harbour") == [(a.memory_id, "Harbour", "the harbour ferry leaves at noon")]
        assert record_writes.forget(writer, R, Scope.identity(R, A), a.memory_id, Author.application())
        assert _found(reader, A, "harbour") == []
        b, _ = record_writes.remember(writer, R, A, "Harbour", "the harbour ferry leaves at two")
        assert _found(reader, A, "harbour") == [(b.memory_id, "Harbour", "the harbour ferry leaves at two")]


def test_the_cache_stays_within_its_bound(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        store._views.capacity = 3
        ids = [record_writes.remember(store, R, A, f"Harbour {i}", f"harbour note {i}")[0].memory_id for i in range(6)]
        assert {m for m, _, _ in _found(store, A, "harbour")} == set(ids)
        assert len(store._views._items) <= 3
        assert {m for m, _, _ in _found(store, A, "harbour")} == set(ids)


def test_the_cache_bounds_the_text_it_holds(tmp_path: Path) -> None:
    """Large bodies: the byte bound evicts before the count bound is reached, and answers stay whole."""
    with _store(tmp_path) as store:
        store._views.max_bytes = 25_000
        bodies = {record_writes.remember(store, R, A, f"Harbour {i}", f"harbour {i} " + "x" * 10_000)[0].memory_id
                  for i in range(6)}
        assert {m for m, _, _ in _found(store, A, "harbour")} == bodies
        items = store._views._items
        assert 0 < len(items) <= 2
        assert sum(view_bytes(v) for v in items.values()) <= 25_000
        assert {m for m, _, _ in _found(store, A, "harbour")} == bodies


def test_recall_answers_the_wire_projection_of_each_record(tmp_path: Path) -> None:
    """Recall shapes its records with ``MemoryRecord.wire()``: the same JSON as ``project()`` dumped, the
    metadata a copy the caller may change."""
    from meta_memory.sdk import Meta

    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        h.call("meta/agent_memory/remember", {"identity": A, "title": "Harbour", "body": "the harbour ferry",
                                              "tags": ["boat", "Sea"], "ttl_s": 3600,
                                              "metadata": {"k": [1, {"n": None}], "s": "x"}})
        h.call("meta/agent_memory/remember", {"identity": A, "title": "Harbour map", "body": "a harbour map"})
        out = h.call("meta/agent_memory/recall", {"identity": A, "query_text": "harbour"})["records"]
        store = h.runtime.agent_memory.store
        assert len(out) == 2
        for wire in out:
            record = store.get(R, wire["memory_id"])
            assert record is not None
            assert wire == record.project().model_dump(mode="json") == record.wire()
        record = store.get(R, out[0]["memory_id"])
        assert record is not None
        shaped = record.wire()
        if shaped["metadata"]:
            shaped["metadata"]["k"].append(2)
            assert record.metadata["k"] == [1, {"n": None}]


def _scope_generations(store: SqliteAgentMemoryStore) -> dict[str, int]:
    return {str(key): int(g) for key, g in raw_rows(store, R, "SELECT scope_key, g FROM scope_rows")}


def test_a_scope_s_generation_moves_with_every_change_recall_could_see(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, _ = record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        (key,) = raw_rows(store, R, "SELECT scope_key FROM records")[0]

        def generation(store: SqliteAgentMemoryStore) -> int:
            return _scope_generations(store)[str(key)]

        seen = generation(store)
        store.mark_usage(R, [a.memory_id], "explicit_recall")
        store.telemetry_stats()  # lands the queued marks
        assert raw_rows(store, R, "SELECT usage_stats FROM records WHERE memory_id = ?", (a.memory_id,))[0][0] != "{}"
        assert generation(store) == seen  # a usage mark does not move it
        for sql, params in (("UPDATE records SET updated_at_ms = updated_at_ms + 1", ()),
                            ("UPDATE records SET expires_at_ms = 1", ()), ("UPDATE records SET expires_at_ms = NULL", ()),
                            ("UPDATE records SET tags = '[\"x\"]'", ()), ("UPDATE records SET scope_key = 'elsewhere'", ()),
                            ("UPDATE records SET scope_key = ?", (key,)), ("UPDATE records SET status_kind = 'active'", ())):
            raw_write(store, R, sql, params)
            moved = generation(store)
            assert moved != seen or sql.endswith("'active'"), sql  # a statement that changes nothing moves nothing
            seen = moved
        store.erase(R, Scope.identity(R, A), a.memory_id, erased_by="operator")  # deletes the row
        assert generation(store) != seen
        seen = generation(store)
        record_writes.remember(store, R, A, "Harbour", "a new record")
        assert generation(store) != seen


def test_no_realm_wide_generation_is_written(tmp_path: Path) -> None:
    """The realm-wide counter of step 13 has no reader since the scope generations (step 20): step 21 drops it and
    its triggers, so no write of a record writes its page."""
    with _store(tmp_path) as store:
        record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        names = {str(n) for (n,) in raw_rows(store, R, "SELECT name FROM sqlite_master")}
        assert "records_generation" not in names
        assert not {n for n in names if n.startswith("records_generation_")}
        assert {"scope_rows_insert", "scope_rows_delete", "scope_generation_update"} <= names


def test_a_scope_s_generation_moves_with_every_change_of_its_own_rows_and_no_other_scope_s(tmp_path: Path) -> None:
    """What the kept views and records of a scope rest on (step 20): an insert, a delete, an update of any column but
    the usage counters in the scope, by any connection, moves that scope's generation and no other scope's."""
    from meta_memory.agent_memory.store.schema import RECORD_GENERATION_COLUMNS

    with _store(tmp_path) as store:
        a, _ = record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        record_writes.remember(store, R, B, "Harbour", "bob's harbour")
        columns = {str(r[1]) for r in raw_rows(store, R, "PRAGMA table_info(records)")}
        assert columns - {"usage_stats"} == set(RECORD_GENERATION_COLUMNS)  # no column left out
        (ka,) = raw_rows(store, R, "SELECT scope_key FROM records WHERE memory_id = ?", (a.memory_id,))[0]
        seen = _scope_generations(store)
        record_writes.remember(store, R, A, "Harbour map", "a second harbour note")
        now = _scope_generations(store)
        assert now[ka] != seen[ka] and all(now[k] == seen[k] for k in seen if k != ka)
        for column in RECORD_GENERATION_COLUMNS:
            if column in ("rid", "memory_id", "scope_kind", "scope_key"):
                continue
            seen = _scope_generations(store)
            raw_write(store, R, f"UPDATE records SET {column} = 'x' || COALESCE({column}, '') WHERE memory_id = ?",
                      (a.memory_id,))
            now = _scope_generations(store)
            assert now[ka] != seen[ka] and all(now[k] == seen[k] for k in seen if k != ka), column
        seen = _scope_generations(store)
        raw_write(store, R, "UPDATE records SET usage_stats = '{\"explicit_recall_count\": 7}'")
        assert _scope_generations(store) == seen
        raw_write(store, R, "UPDATE records SET scope_key = 'elsewhere' WHERE memory_id = ?", (a.memory_id,))
        now = _scope_generations(store)
        assert now[ka] != seen[ka] and "elsewhere" in now  # the row left one scope and entered another
        seen = now
        raw_write(store, R, "DELETE FROM records WHERE scope_key = 'elsewhere'")
        now = _scope_generations(store)
        assert now["elsewhere"] != seen["elsewhere"] and all(now[k] == seen[k] for k in seen if k != "elsewhere")


def test_a_write_into_another_scope_leaves_a_scope_s_kept_rows_served(tmp_path: Path) -> None:
    """Another identity's remember in the same realm does not make a scope's kept views and records read again;
    a remember into the scope itself does (a narrow liveness read), and what is served is what the file holds."""
    with _store(tmp_path) as store:
        ids = [record_writes.remember(store, R, A, f"Harbour {i}", f"harbour note {i}")[0].memory_id for i in range(5)]
        assert {m for m, _, _ in _found(store, A, "harbour")} == set(ids)
        store.recall_records(R, ids)
        checked, records = store._views.live_reads, store._views.record_hits
        record_writes.remember(store, R, B, "Harbour", "bob's harbour note")
        assert {m for m, _, _ in _found(store, A, "harbour")} == set(ids)
        assert set(store.recall_records(R, ids)) == set(ids)
        assert store._views.live_reads == checked and store._views.record_hits == records + 5  # served as kept
        record_writes.remember(store, R, A, "Harbour 5", "harbour note 5")
        assert len(_found(store, A, "harbour")) == 6
        store.recall_records(R, ids)
        assert store._views.live_reads >= checked + 5  # the scope moved: its rows' liveness read again
        assert store._views.record_hits == records + 5  # and its records read whole


def _recalled(h: object, identity: str, query: str) -> list[dict[str, object]]:
    return h.call("meta/agent_memory/recall", {"identity": identity, "query_text": query})["records"]  # type: ignore[attr-defined,no-any-return]


def test_a_kept_record_changed_in_place_by_another_connection_is_read_anew(tmp_path: Path) -> None:
    """The re-check serves the records it read whole from memory while the realm's generation holds: a column
    recall answers (metadata) or judges (trust, status detail) changed in place, by any connection, is read
    anew."""
    from meta_memory.sdk import Meta

    with Meta.builder().persistent_state(tmp_path / "state").build() as h:
        h.call("meta/agent_memory/remember", {"identity": A, "title": "Harbour", "body": "the harbour ferry",
                                              "metadata": {"k": 1}})
        store = h.runtime.agent_memory.store
        assert [r["metadata"] for r in _recalled(h, A, "harbour")] == [{"k": 1}]
        assert store._views.record_misses == 1
        assert [r["metadata"] for r in _recalled(h, A, "harbour")] == [{"k": 1}]
        assert store._views.record_hits >= 1  # served from memory
        raw_write(store, R, "UPDATE records SET metadata = '{\"k\": 2}'")
        assert [r["metadata"] for r in _recalled(h, A, "harbour")] == [{"k": 2}]
        assert store._views.record_misses == 2


def test_a_kept_record_s_metadata_is_never_shared_with_a_caller(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        a, _, _ = record_writes.remember_merging(store, R, A, "Harbour", "the harbour ferry", metadata={"k": [1]})
        first = store.recall_records(R, [a.memory_id])[a.memory_id]
        first.metadata["k"].append(2)  # type: ignore[index]
        again = store.recall_records(R, [a.memory_id])[a.memory_id]
        assert store._views.record_hits == 1
        assert again.metadata == {"k": [1]}
        again.metadata["k"].append(3)  # type: ignore[index]
        assert store.recall_records(R, [a.memory_id])[a.memory_id].metadata == {"k": [1]}
        assert store.recall_records(R, [a.memory_id, "missing"]).keys() == {a.memory_id}


def test_kept_records_stay_within_their_bound(tmp_path: Path) -> None:
    from meta_memory.agent_memory.store.view_cache import record_bytes

    with _store(tmp_path) as store:
        store._views.max_bytes = 4 * 25_000  # a quarter of it for whole records
        ids = [record_writes.remember(store, R, A, f"Harbour {i}", f"harbour {i} " + "x" * 10_000)[0].memory_id
               for i in range(6)]
        got = store.recall_records(R, ids)
        assert set(got) == set(ids) and all(got[i].body.startswith("harbour") for i in ids)
        kept = store._views._records
        assert 0 < len(kept) <= 2
        assert sum(record_bytes(r) for _, r in kept.values()) <= 25_000
        assert set(store.recall_records(R, ids)) == set(ids)


def test_a_recall_s_reads_read_its_scope_s_generation_once_per_snapshot(tmp_path: Path) -> None:
    """Inside one recall's reads (one snapshot) the scope's generation is read once, by its candidates' read, and
    the neighbours' and re-check's reads reuse it; the next recall reads it again, so a write between two recalls
    is seen."""
    statements: list[str] = []
    with _store(tmp_path) as store:
        new_reader = store._new_reader

        def traced(db):  # type: ignore[no-untyped-def]
            conn = new_reader(db)
            conn.set_trace_callback(statements.append)
            return conn

        store._new_reader = traced  # type: ignore[method-assign]
        scope = Scope.identity(R, A)
        first, _ = record_writes.remember(store, R, A, "Harbour", "the harbour ferry leaves at noon")
        record_writes.remember(store, R, A, "Weather", "rain over the harbour later")

        def recall() -> list[str]:
            with store.recall_reads():
                found = [v for v, _ in store.search(R, scope, '"harbour"', 10)]
                store.neighbours(R, scope, [store.get(R, first.memory_id)], 2, 120_000)  # type: ignore[list-item]
                store.recall_records(R, [v.id for v in found])
            return sorted(v.body for v in found)

        assert recall() == ["rain over the harbour later", "the harbour ferry leaves at noon"]
        statements.clear()
        assert recall() == ["rain over the harbour later", "the harbour ferry leaves at noon"]
        assert sum("FROM scope_rows" in s for s in statements) == 1, statements
        record_writes.remember(store, R, A, "Harbour", "the harbour office opens at nine")
        assert recall() == ["rain over the harbour later", "the harbour ferry leaves at noon",
                            "the harbour office opens at nine"]


_STEPS = st.lists(st.one_of(st.tuples(st.just("recall"), st.integers(0, 90_000)),
                            st.tuples(st.just("write"), st.sampled_from([A, B])),
                            st.tuples(st.just("forget"), st.integers(0, 11))), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(lives=st.lists(st.one_of(st.none(), st.integers(1, 120)), min_size=2, max_size=12), steps=_STEPS,
       capacity=st.sampled_from([3, 20_000]))
def test_rows_served_by_scope_are_those_a_fresh_read_finds(tmp_path_factory: Any, lives: list[int | None],
                                                           steps: list[tuple[str, Any]], capacity: int) -> None:
    """Whatever expires, is written, forgotten or evicted between recalls, the candidates served from the rows
    kept per scope are those a store with nothing kept reads from the same files at the same time."""
    root = tmp_path_factory.mktemp("served")
    clock = ManualClock(1_700_000_000_000)
    with SqliteAgentMemoryStore(root, clock=clock) as store, SqliteAgentMemoryStore(root, clock=clock) as fresh:
        store._views.capacity = capacity
        ids = []
        for i, life in enumerate(lives):
            rec, _, _ = record_writes.remember_merging(
                store, R, A, f"Harbour {i}", f"harbour note {i}",
                expires_at_ms=None if life is None else clock.now_ms() + life * 1000)
            ids.append(rec.memory_id)
        for kind, value in steps:
            if kind == "recall":
                clock.advance(value)
                for _ in range(2):  # read, then served from what is kept
                    fresh._views.clear()
                    assert _found(store, A, "harbour") == _found(fresh, A, "harbour")
                kept = {id(view) for view in store._views._items.values()}  # the bound holds what is served too
                assert all(id(view) in kept for scopes in store._views._served.values()
                           for served in scopes.values() for view in served.views.values())
            elif kind == "write":
                record_writes.remember(store, R, value, "Harbour", f"harbour written at {clock.now_ms()}")
            elif value < len(ids):
                record_writes.forget(store, R, Scope.identity(R, A), ids[value], Author.application())


def test_the_cache_keeps_the_views_read_last_and_counts_exactly_what_it_keeps(tmp_path: Path) -> None:
    """Oldest out first through many evictions (the cache is a FIFO): the views kept are those of the rows read
    last, and the bytes it counts are its kept views' own, so its bound holds after any number of reads."""
    with _store(tmp_path) as store:
        store._views.capacity = 4
        ids = [record_writes.remember(store, R, A, f"Harbour {i}", f"quay{i} note")[0].memory_id for i in range(40)]
        for i in range(40):
            assert [m for m, _, _ in _found(store, A, f"quay{i}")] == [ids[i]]
        items = store._views._items
        assert [view.id for view in items.values()] == ids[-4:]
        assert store._views.stats()["bytes"] == sum(view_bytes(v) for v in items.values())
