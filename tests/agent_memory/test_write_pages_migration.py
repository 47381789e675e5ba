"""Migration 10 ("fewer-pages-per-write") upgrades a realm written by the release before it.

``data/realm-schema-9.sqlite3`` was written by that release through the public SDK: ``ana`` remembered
five records (two "Trip notes" on a zebra and a quokka, a kitchen note she then forgot, a passport note
naming a zebra, a garden note) and ``ben`` two (a zebra, a quokka). Its full-text change log is keyed by
``rid`` with an index on ``seq``, its audit log takes ids through ``AUTOINCREMENT``, and its records carry
a realm-wide ``(status, created)`` index. Opened now, the migration converts all three in place — the
full-text rows are not refilled — and every public read answers as before; new writes continue the same
sequences.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.recall import fts
from meta_memory.sdk import Meta
from support import realm_db

DATA = Path(__file__).parent / "data"
A, B = "ana", "ben"


def _shape(path: Path) -> dict[str, object]:
    with sqlite3.connect(path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        audit_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'audit'").fetchone()[0]
        sequence = conn.execute("SELECT name FROM sqlite_sequence").fetchall() if "sqlite_sequence" in names else []
        log_table = fts.CHANGES_TABLE if fts.CHANGES_TABLE in names else "records_fts_changes"
        return {
            "names": names,
            "autoincrement": "AUTOINCREMENT" in audit_sql.upper(),
            "sequence": {r[0] for r in sequence},
            "log": sorted(conn.execute(f"SELECT seq, rid FROM {log_table}").fetchall()),
            "audit": conn.execute("SELECT audit_id, op_kind, memory_id FROM audit ORDER BY audit_id").fetchall(),
            "fts_rows": conn.execute(f"SELECT rowid, * FROM {fts.FTS_TABLE} ORDER BY rowid").fetchall(),
            "fts_versions": conn.execute(
                "SELECT name FROM schema_migrations WHERE domain = 'records-fts' ORDER BY version").fetchall(),
        }


def _titles(hits: list[object]) -> list[tuple[str, str]]:
    return [(h.title, h.body) for h in hits]  # type: ignore[attr-defined]


def test_a_realm_of_the_previous_schema_is_converted_in_place_and_reads_the_same(tmp_path: Path) -> None:
    state = tmp_path / "state"
    target = realm_db(state)
    target.parent.mkdir(parents=True)
    shutil.copy(DATA / "realm-schema-9.sqlite3", target)
    before = _shape(target)
    # what the previous release left
    assert "records_fts_changes" in before["names"] and "records_fts_changes_seq_idx" in before["names"]
    assert before["autoincrement"] and "audit" in before["sequence"]  # type: ignore[operator]
    assert "records_status_created_idx" in before["names"]  # type: ignore[operator]
    assert len(before["fts_versions"]) == 1  # type: ignore[arg-type]

    for index in (False, True):  # recall from FTS5, then from the in-process index built from the same rows
        with Meta.builder().persistent_state(state).build() as handle:
            lexical = handle.runtime.agent_memory.service.store.lexical_index
            if index:
                lexical.min_rows = 0
                assert lexical.warm("default")
            else:
                lexical.max_bytes = 0
            ana, ben = handle.agent(A), handle.agent(B)
            zebra = _titles(ana.recall("zebra", k=8))
            assert sorted(zebra) == [("Passport", "renew the passport before the zebra safari"),
                                     ("Trip notes", "zebra sighting at the river crossing")]
            assert _titles(ana.recall("quokka", k=8)) == [("Trip notes", "quokka on the island, very friendly")]
            assert ana.recall("kettle", k=8) == []  # forgotten before the upgrade: still out of recall
            assert _titles(ben.recall("zebra quokka", k=8)) and all(
                t in {"Zebra facts", "Zoo"} for t, _ in _titles(ben.recall("zebra quokka", k=8)))

    after = _shape(target)
    assert "records_fts_changes" not in after["names"] and "records_fts_changes_seq_idx" not in after["names"]
    assert after["log"] == before["log"]  # the same positions: an index built before stays current
    assert not after["autoincrement"] and "audit" not in after["sequence"]  # type: ignore[operator]
    assert after["audit"] == before["audit"]
    assert "records_status_created_idx" not in after["names"]  # type: ignore[operator]
    assert "records_quarantined_idx" in after["names"]  # type: ignore[operator]
    assert after["fts_rows"] == before["fts_rows"]  # converted, not refilled
    assert len(after["fts_versions"]) == 2  # type: ignore[arg-type]

    # new writes continue both sequences; a forget and an erase still reach the full-text table
    with Meta.builder().persistent_state(state).build() as handle:
        ana = handle.agent(A)
        fresh = ana.remember(title="Boat", body="the zebra ferry leaves at noon").memory_id
        assert ("Boat", "the zebra ferry leaves at noon") in _titles(ana.recall("ferry", k=8))
        passport = next(h for h in ana.recall("passport", k=8) if h.title == "Passport")
        ana.forget(passport.memory_id)
        assert ana.recall("passport", k=8) == []
        assert ana.erase(fresh).count == 1
        assert ana.recall("ferry", k=8) == []
    final = _shape(target)
    last_seq = max(s for s, _ in before["log"])  # type: ignore[union-attr]
    assert [s for s, _ in final["log"]][-3:] == [last_seq + 1, last_seq + 2, last_seq + 3]  # type: ignore[union-attr]
    last_audit = before["audit"][-1][0]  # type: ignore[index]
    assert [r[0] for r in final["audit"]][len(before["audit"]):] == list(  # type: ignore[arg-type, union-attr]
        range(last_audit + 1, last_audit + 1 + len(final["audit"]) - len(before["audit"])))  # type: ignore[arg-type]
    assert "audit" not in final["sequence"]  # type: ignore[operator]
    with sqlite3.connect(target) as conn:
        text = " ".join(" ".join(str(c) for c in row) for row in conn.execute(f"SELECT * FROM {fts.FTS_TABLE}"))
        assert "ferry" not in text and "noon" not in text and "passport" not in text


#: The quarantine queue's reads (``tables.py`` review queue, ``panel_reads.py`` listing), realm-wide.
QUARANTINE_QUEUE = [
    "SELECT memory_id FROM records WHERE status_kind = 'quarantined' ORDER BY created_at_ms, rid LIMIT 50",
    "SELECT memory_id FROM records WHERE status_kind = 'quarantined' ORDER BY created_at_ms DESC, memory_id DESC "
    "LIMIT 50",
]


def test_the_quarantine_queue_reads_its_partial_index_when_no_record_is_quarantined(tmp_path: Path) -> None:
    """``ANALYZE`` leaves an empty partial index without statistics, and SQLite then plans the queue as a walk
    of a whole recency index of the realm; the store gives such an index the statistics of a one-row index
    (at every refresh and when it closes), and counts statistics without them as stale."""
    from meta_memory.agent_memory.store import planner
    from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path

    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root) as store:
        for i in range(300):
            record_writes.remember(store, "default", A if i % 2 else B, f"note {i}", f"body {i} of the queue test")
    path = realm_db_path(root, "default")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'records_quarantined_idx'").fetchone() == ("1 1 1",)
        for sql in QUARANTINE_QUEUE:
            plan = [r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert any("records_quarantined_idx" in p for p in plan), (sql, plan)
        # statistics taken without that row (as by a release before the index) are stale: the next open
        # analyses again and writes it
        conn.execute("DELETE FROM sqlite_stat1 WHERE idx = 'records_quarantined_idx'")
        assert planner.stale(conn)
        planner.refresh(conn)
        assert not planner.stale(conn)
        assert conn.execute("SELECT stat FROM sqlite_stat1 WHERE idx = 'records_quarantined_idx'").fetchone() == ("1 1 1",)
