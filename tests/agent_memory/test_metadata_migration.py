"""Migration 8 ("record-metadata") upgrades a realm written before it: its records read ``metadata`` as ``{}``
and new writes carry theirs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path


def test_a_realm_from_before_record_metadata_is_upgraded(tmp_path: Path) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root) as store:
        old, _ = record_writes.remember(store, "default", "ana", "Old record", "written before metadata")
    # the realm as a release without migration 8 left it (nor migrations 16 and 20, whose triggers read the column,
    # nor 21, which drops step 16's trigger again)
    with sqlite3.connect(realm_db_path(root, "default")) as conn:
        conn.execute("DROP TRIGGER scope_generation_update")
        conn.execute("ALTER TABLE records DROP COLUMN metadata")
        conn.execute("DELETE FROM schema_migrations WHERE domain = 'meta-memory' AND version IN (8, 16, 20, 21)")
    with SqliteAgentMemoryStore(root) as store:
        new, _, _ = record_writes.remember_record(store, "default", "ana", "New record", "written after", metadata={"v": 1})
        assert store.get("default", old.memory_id).metadata == {}  # type: ignore[union-attr]
        assert store.get("default", new.id).metadata == {"v": 1}  # type: ignore[union-attr]
    with sqlite3.connect(realm_db_path(root, "default")) as conn:
        assert conn.execute("SELECT name FROM schema_migrations WHERE domain = 'meta-memory' AND version = 8"
                            ).fetchone() == ("record-metadata",)
