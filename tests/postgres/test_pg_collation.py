"""Orders do not depend on the PostgreSQL server's locale.

SQLite compares text by code point (``BINARY``); the panel cursor
(``<updated_at_ms>:<memory_id>``) is defined in that order. A PostgreSQL
database created with a linguistic collation (ICU ``en``: ``a < B``) must still
list records, promotions and harvests in code point order (``B < a``), or a
cursor would skip or repeat rows and the two backends would disagree.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest

from extras import require_extra

psycopg = require_extra("postgres", "psycopg")  # before the modules that import it
conninfo = require_extra("postgres", "psycopg.conninfo")

from contract.pgsupport import DSN, require_postgres
from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore
from meta_memory.agent_memory.store.tables import PromotionRow
from meta_memory.clock import ManualClock
from meta_memory.panel.cursor import Cursor
from meta_memory.panel.store import PostgresPanelStore, RecordFilters

pytestmark = pytest.mark.postgres

REALM = "default"
IDS = ["mem-a", "mem-B", "mem-b", "mem-A", "mem-\u00e9", "mem-e", "mem-Z"]


@pytest.fixture
def icu_dsn() -> Iterator[str]:
    """A throw-away database whose default collation is ICU English."""
    require_postgres()
    name = f"mm_icu_{secrets.token_hex(4)}"
    with psycopg.connect(DSN, autocommit=True) as conn:
        try:
            conn.execute(
                f'CREATE DATABASE "{name}" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE \'en\' LOCALE \'C.UTF-8\''
            )
        except psycopg.Error as exc:
            pytest.skip(f"this PostgreSQL server cannot create an ICU database: {exc}")
    try:
        yield conninfo.make_conninfo(DSN, dbname=name)
    finally:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_listings_use_code_point_order_under_a_linguistic_collation(icu_dsn: str) -> None:
    with psycopg.connect(icu_dsn) as conn:
        assert conn.execute("SELECT 'a' < 'B'").fetchone()[0] is True  # the server's own order differs
    with PostgresAgentMemoryStore(icu_dsn, ManualClock(1_000), pool_size=2) as store:

        with store.transaction(REALM) as tx:
            for mid in IDS:
                tx._sql.run((
                    "INSERT INTO records(memory_id, scope_kind, scope_key, kind, title, body, provenance, trust, "
                    "status_kind, content_hash, created_at_ms, updated_at_ms) "
                    "VALUES (?, 'identity', 'lead:main', 'fact', ?, 'b', ?, 'agent_observed', 'active', ?, 7, 7)"
                ), (mid, mid, json.dumps({"evidence": [], "author": {"author": "application"}}), content_hash(mid, "b")))
            for pid in ("gate-a", "gate-B"):
                tx._sql.run("INSERT INTO stage(token, batch, created_at_ms) VALUES (?, '{}', 5)", (f"st-{pid}",))
                tx.promotions.insert(PromotionRow(REALM, pid, f"st-{pid}", "mem-a", "mob", "team", None, "pending", 5, None))
            for ident in ("a:main", "B:main"):
                tx.harvests.insert(ident, None, "retired", 9)
        panel = PostgresPanelStore(store)
        expected = sorted(IDS, reverse=True)  # code point order, newest first
        seen: list[str] = []
        after: Cursor | None = None
        while True:
            page = panel.records_page(REALM, RecordFilters(), after, 2)
            seen += [r.memory_id for r in page.rows]
            if page.next_cursor is None:
                break
            after = page.next_cursor
        assert seen == expected
        assert [p.pending_id for p in panel.pending_promotions(REALM, 10)] == ["gate-a", "gate-B"]
        assert [h.identity for h in panel.harvests(REALM, 10)] == ["a:main", "B:main"]
        # The review side reads the same rows oldest first: ties broken by code point, ascending.
        with store.snapshot(REALM) as snap:
            promos = snap.promotions.expired(10)
            harvests = snap.harvests.pending(10)
        assert [p.pending_id for p in promos] == ["gate-B", "gate-a"]
        assert [h.identity for h in harvests] == ["B:main", "a:main"]
