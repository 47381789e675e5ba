"""Schema steps apply by version, not by position: a step numbered below one already applied (two
changes developed side by side, such as "record-metadata" (8) arriving after "record-expiry" (9)) still
applies once, and nothing applies twice."""

from __future__ import annotations

import sqlite3

from meta_memory.agent_memory.store.dialect import SQLITE
from meta_memory.agent_memory.store.migration_steps import apply_domain_steps
from meta_memory.agent_memory.store.schema import MIGRATIONS


def test_a_lower_version_arriving_later_applies_once() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE schema_migrations (domain TEXT, version INTEGER, name TEXT, applied_at_ms INTEGER, "
                 "PRIMARY KEY (domain, version))")
    conn.execute("CREATE TABLE records (rid INTEGER PRIMARY KEY, status_kind TEXT)")
    nine = (9, "record-expiry", ["ALTER TABLE records ADD COLUMN expires_at_ms INTEGER"])
    eight = (8, "record-metadata", ["ALTER TABLE records ADD COLUMN metadata TEXT"])
    assert apply_domain_steps(conn.execute, SQLITE, "d", [nine], 1) == ["record-expiry"]
    assert apply_domain_steps(conn.execute, SQLITE, "d", [eight, nine], 2) == ["record-metadata"]
    assert apply_domain_steps(conn.execute, SQLITE, "d", [eight, nine], 3) == []
    cols = {r[1] for r in conn.execute("PRAGMA table_info(records)")}
    assert {"expires_at_ms", "metadata"} <= cols


def test_record_expiry_is_version_nine_on_both_backends() -> None:
    from meta_memory.agent_memory.store.pg_schema import migrations

    assert (9, "record-expiry") in {(v, n) for v, n, _ in MIGRATIONS}
    assert (9, "record-expiry") in {(v, n) for v, n, _ in migrations("s")}
