"""``meta-memory import --from langgraph``: items the real LangGraph ``SqliteStore`` and ``PostgresStore``
wrote land as the records ``MetaMemoryStore`` writes, so LangGraph's own store API over meta-memory
answers the same items afterwards; on SQLite and PostgreSQL targets, through the command."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra

require_extra("importers", "langgraph.store.sqlite")

from contract.pgsupport import DSN, dsn_with_schema, require_postgres, throwaway_schema  # noqa: E402
from meta_memory.integrations.langgraph import MetaMemoryStore  # noqa: E402
from meta_memory.portability.from_langgraph import redact_dsn  # noqa: E402
from portability.test_round_trip import config_args, handle_on  # noqa: E402
from support import meta_memory_cli as mm  # noqa: E402

pytestmark = pytest.mark.importers

ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("users", "alice", "prefs"), "tea", {"drink": "green tea", "cups": 2}),
    (("users", "alice", "prefs"), "music", {"genre": "jazz", "tags": ["late", "calm"]}),
    (("users", "alice"), "profile", {"name": "Alice", "city": "Lyon", "nested": {"a": [1, 2, {"b": None}]}}),
    (("users", "bob"), "garden", {"task": "water the tomatoes", "day": "Sunday"}),
]


@contextmanager
def lg_source(kind: str, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """The real LangGraph store of ``kind`` (set up, empty) and the SOURCE the importer is given."""
    if kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        path = tmp_path / "lg.sqlite"
        with SqliteStore.from_conn_string(str(path)) as store:
            store.setup()
            yield store, str(path)
        return
    require_postgres()
    require_extra("importers", "langgraph.store.postgres")
    import psycopg
    from langgraph.store.postgres import PostgresStore

    with throwaway_schema() as schema:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        dsn = dsn_with_schema(schema)
        with PostgresStore.from_conn_string(dsn) as store:
            store.setup()
            # trust authentication ignores the password: it is here to be hidden from every message
            yield store, dsn.replace("postgresql://postgres@", "postgresql://postgres:Sw0rdfish-pw@")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def source_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def utc(at: datetime) -> datetime:
    """SqliteStore answers naive UTC times, PostgresStore aware ones."""
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def fill(store: Any) -> None:
    for ns, key, value in ITEMS:
        store.put(ns, key, {"old": True})
    time.sleep(1.1)  # SQLite's timestamps have whole seconds: the update is visibly later
    for ns, key, value in ITEMS:
        store.put(ns, key, value)
    store.put(("users", "alice"), "gone", {"x": 1})
    store.delete(("users", "alice"), "gone")


def test_items_read_back_through_metamemorystore_after_import(tmp_path: Path, configs: Any, source_kind: str) -> None:
    _, target = configs
    state = tmp_path / "state"
    with lg_source(source_kind, tmp_path) as (lg, source):
        fill(lg)
        expected = {(tuple(i.namespace), i.key): i for i in lg.search(("users",), limit=100)}
        done = mm("import", "--from", "langgraph", source, "--state-dir", str(state), *config_args(target),
                  "--identity-segment", "1")
        again = mm("import", "--from", "langgraph", source, "--state-dir", str(state), *config_args(target),
                   "--identity-segment", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert b"imported 4 records from langgraph" in done.stdout
    assert b"Sw0rdfish-pw" not in done.stdout + done.stderr + again.stdout + again.stderr
    assert json.loads(again.stdout)["already_present"] == 4 and json.loads(again.stdout)["created"] == 0
    assert len(expected) == 4
    with handle_on(state, target) as h:
        store = MetaMemoryStore(h, identity_segment=1)
        for (ns, key), item in expected.items():
            got = store.get(ns, key)
            assert got is not None, (ns, key)
            assert (got.namespace, got.key, got.value) == (item.namespace, item.key, item.value)
            # meta-memory keeps epoch milliseconds
            assert abs((got.created_at - utc(item.created_at)).total_seconds()) < 0.001
            assert abs((got.updated_at - utc(item.updated_at)).total_seconds()) < 0.001
        assert store.get(("users", "alice"), "gone") is None
        assert [i.key for i in store.search(("users", "alice"), query="green tea")][:1] == ["tea"]
        assert sorted(i.key for i in store.search(("users", "alice", "prefs"))) == ["music", "tea"]
        assert store.list_namespaces(prefix=("users", "alice")) == [("users", "alice"), ("users", "alice", "prefs")]
        assert [i.key for i in store.search(("users", "bob"))] == ["garden"]
        # the items stay LangGraph's to change: a put supersedes the imported record
        store.put(("users", "bob"), "garden", {"task": "pick the tomatoes"})
        assert store.get(("users", "bob"), "garden").value == {"task": "pick the tomatoes"}  # type: ignore[union-attr]
        assert len(h.list_agent_memory("bob", tags=["lg:item"]).records) == 1
        row = h.call("meta/memory/panel/record", {"realm": "default",
                                                  "memory_id": h.list_agent_memory("alice", tags=["lg:item"]).records[0].memory_id})
        assert row["record"]["provenance"]["imported_from"]["system"] == "langgraph"
        assert row["record"]["provenance"]["author"] == {"author": "application"}


def test_fixed_identity_dry_run_and_expired_items(tmp_path: Path, source_kind: str) -> None:
    state = tmp_path / "state"
    with lg_source(source_kind, tmp_path) as (lg, source):
        lg.put(("notes",), "keep", {"text": "the cache restarts nightly"})
        lg.put(("notes",), "later", {"text": "expires next week"}, ttl=7 * 24 * 60)
        lg.put(("notes",), "brief", {"text": "expires at once"}, ttl=0.001)
        lg.put(("notes",), "leak", {"text": "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"})
        time.sleep(0.2)
        dry = mm("import", "--from", "langgraph", source, "--state-dir", str(state), "--dry-run", "--json")
        assert dry.returncode == 1 and not state.exists()  # a dry run on a new state creates nothing
        assert json.loads(dry.stdout)["created"] == 2
        done = mm("import", "--from", "langgraph", source, "--state-dir", str(state), "--identity", "ops", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1
    assert report["created"] == 2 and report["not_carried"] == {}
    assert [n["reason"] for n in report["skipped"]] == ["expired in LangGraph"]
    assert [n["reason"].split(":")[0] for n in report["refused"]] == ["secret_detected"]
    assert b"ghp_" not in done.stdout + done.stderr
    with handle_on(state, None) as h:
        store = MetaMemoryStore(h, identity="ops")
        assert store.get(("notes",), "keep").value == {"text": "the cache restarts nightly"}  # type: ignore[union-attr]
        later = store.get(("notes",), "later")
        assert later is not None and later.value == {"text": "expires next week"}
        expiring = [r for r in h.list_agent_memory("ops").records if "expires next week" in r.body]
        assert len(expiring) == 1 and expiring[0].expires_at_ms is not None  # LangGraph's expires_at
        assert json.loads(expiring[0].body)["ttl_minutes"] == 7 * 24 * 60  # as MetaMemoryStore writes it
        assert store.get(("notes",), "brief") is None and store.get(("notes",), "leak") is None


def test_a_key_already_stored_with_another_value_is_kept(tmp_path: Path) -> None:
    from langgraph.store.sqlite import SqliteStore

    state = tmp_path / "state"
    with handle_on(state, None) as h:
        MetaMemoryStore(h).put(("a",), "k", {"v": "mine"})
    with SqliteStore.from_conn_string(str(tmp_path / "lg.sqlite")) as lg:
        lg.setup()
        lg.put(("a",), "k", {"v": "theirs"})
    done = mm("import", "--from", "langgraph", str(tmp_path / "lg.sqlite"), "--state-dir", str(state), "--json")
    assert done.returncode == 0, done.stderr
    assert [n["reason"] for n in json.loads(done.stdout)["conflicts"]] == [
        "this key is already stored with another value; kept as it was"]
    with handle_on(state, None) as h:
        assert MetaMemoryStore(h).get(("a",), "k").value == {"v": "mine"}  # type: ignore[union-attr]


def test_sources_that_are_not_langgraph_stores_are_refused_whole(tmp_path: Path) -> None:
    import sqlite3

    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE store (a TEXT)").connection.commit()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    for path, words in ((other, b"not a LangGraph store"), (junk, b"not a readable SQLite database"),
                        (tmp_path / "missing.sqlite", b"no such LangGraph SqliteStore")):
        done = mm("import", "--from", "langgraph", str(path), "--state-dir", str(tmp_path / "s"))
        assert done.returncode == 1 and words in done.stderr, done.stderr
        assert b"Traceback" not in done.stderr
    assert not (tmp_path / "s").exists()
    dsn = "postgresql://mallory:Sw0rdfish-pw@127.0.0.1:1/none"
    done = mm("import", "--from", "langgraph", dsn, "--state-dir", str(tmp_path / "s"))
    assert done.returncode == 1 and b"Sw0rdfish-pw" not in done.stdout + done.stderr
    assert b"postgresql://mallory:***@127.0.0.1:1/none" in done.stderr


def test_redact_dsn_hides_every_password_form() -> None:
    assert redact_dsn("postgresql://u:p%40ss@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_dsn("host=h password=hunter2 dbname=x") == "host=h password=*** dbname=x"
    assert redact_dsn("host=h password='a b c' dbname=x") == "host=h password=*** dbname=x"
    assert redact_dsn("postgresql://h/db?password=hunter2&sslmode=require") == "postgresql://h/db?password=***&sslmode=require"
    assert "hunter2" not in redact_dsn("failed for hunter2", "host=h password=hunter2")


def test_hostile_rows_are_refused_by_line(tmp_path: Path) -> None:
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    db = tmp_path / "lg.sqlite"
    with SqliteStore.from_conn_string(str(db)) as lg:
        lg.setup()
        lg.put(("a",), "fine", {"v": 1})
    conn = sqlite3.connect(db)
    rows = [("a", "deep", "[" * 20_000 + "]" * 20_000), ("a", "huge", json.dumps({"v": "x" * 70_000})),
            ("a", "list", "[1, 2]"), ("a", "bad", "{not json"), ("a'; DROP TABLE store; --", "k", '{"v": 2}')]
    conn.executemany("INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    done = mm("import", "--from", "langgraph", str(db), "--state-dir", str(tmp_path / "s"), "--json")
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["created"] == 2  # "fine" and the SQL-ish namespace label, stored as text
    refused = {json.loads(n["source_id"])[-1]: n["reason"] for n in report["refused"]}
    assert set(refused) == {"deep", "huge", "list", "bad"}
    assert "nested too deep" in refused["deep"] and "body" in refused["huge"] and "dict" in refused["list"]
    with handle_on(tmp_path / "s", None) as h:
        assert MetaMemoryStore(h).get(("a'; DROP TABLE store; --",), "k").value == {"v": 2}  # type: ignore[union-attr]


@pytest.mark.postgres
def test_hostile_rows_of_a_postgres_store_are_refused_by_line(tmp_path: Path) -> None:
    """A ``jsonb`` value arrives decoded (no text to measure first): a deep or huge one is still refused by
    line, never a traceback that stops the import."""
    with lg_source("postgres", tmp_path) as (lg, dsn):
        lg.put(("a",), "fine", {"v": 1})
        import psycopg

        with psycopg.connect(dsn.replace(":Sw0rdfish-pw", ""), autocommit=True) as conn:
            conn.execute("INSERT INTO store (prefix, key, value) VALUES ('a', 'deep', %s::jsonb)",
                         ('{"v": ' + "[" * 5_000 + "]" * 5_000 + "}",))
            conn.execute("INSERT INTO store (prefix, key, value) VALUES ('a', 'huge', %s::jsonb)",
                         (json.dumps({"v": "x" * 70_000}),))
        done = mm("import", "--from", "langgraph", dsn, "--state-dir", str(tmp_path / "s"), "--json")
    assert b"Traceback" not in done.stderr, done.stderr[-2000:]
    assert b"Sw0rdfish" not in done.stdout + done.stderr
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["created"] == 1
    refused = {json.loads(n["source_id"])[-1]: n["reason"] for n in report["refused"]}
    assert set(refused) == {"deep", "huge"}, refused


def test_an_item_expiring_past_the_targets_max_ttl_is_refused_by_line(tmp_path: Path) -> None:
    """A LangGraph item may carry any ``expires_at``; the target's ``agent_memory.max_ttl_s`` is the
    longest a record may live there, so an item expiring later is refused by line (never shortened),
    in the dry run as in the import."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    db = tmp_path / "lg.sqlite"
    with SqliteStore.from_conn_string(str(db)) as lg:
        lg.setup()
        lg.put(("a",), "soon", {"v": 1}, ttl=30)  # 30 minutes: inside the cap
        lg.put(("a",), "decades", {"v": 2}, ttl=30)
        lg.put(("a",), "never", {"v": 3})
    conn = sqlite3.connect(db)
    conn.execute("UPDATE store SET expires_at = '2200-01-01 00:00:00+00:00' WHERE key = 'decades'")
    conn.commit()
    conn.close()
    cfg = tmp_path / "cap.toml"
    cfg.write_text("[agent_memory]\nmax_ttl_s = 3600\n")
    for dry in (["--dry-run"], []):
        done = mm("import", "--from", "langgraph", str(db), "--state-dir", str(tmp_path / "s"), "--config", str(cfg),
                  "--json", *dry)
        report = json.loads(done.stdout)
        assert report["created"] == 2, report
        ((note,),) = [[n for n in report["refused"]]]
        assert json.loads(note["source_id"])[-1] == "decades"
        assert "expires_at_ms is later than now + agent_memory.max_ttl_s (3600 s)" in note["reason"]
    with handle_on(tmp_path / "s", cfg) as h:
        store = MetaMemoryStore(h)
        assert store.get(("a",), "decades") is None and store.get(("a",), "soon") is not None


def test_a_huge_row_is_refused_by_line_without_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database measures each field first: a value (or key) past the record body is refused by line and
    never fetched whole, so one row of a gigabyte cannot exhaust the importer's memory."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    from meta_memory.portability.from_langgraph import LangGraphSource

    db = tmp_path / "lg.sqlite"
    with SqliteStore.from_conn_string(str(db)) as lg:
        lg.setup()
        lg.put(("a",), "fine", {"v": 1})
    conn = sqlite3.connect(db)
    conn.execute("""INSERT INTO store (prefix, key, value)
                    VALUES ('a', 'huge', '{"v": "' || hex(zeroblob(4000000)) || '"}')""")
    conn.execute("INSERT INTO store (prefix, key, value) VALUES ('a', ?, '{}')", ("k" * 70_000,))
    conn.commit()
    conn.close()
    with LangGraphSource(str(db)) as source:
        fetched = {str(row[1])[:10]: row[2] for row in source.rows()}
    assert fetched["huge"] is None and fetched["k" * 10] is None and fetched["fine"] is not None
    done = mm("import", "--from", "langgraph", str(db), "--state-dir", str(tmp_path / "s"), "--json")
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["created"] == 1
    reasons = [n["reason"] for n in report["refused"]]
    assert len(reasons) == 2 and all("not read" in r for r in reasons), reasons
