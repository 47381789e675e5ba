"""SQLite schema of one realm database, applied as recorded migrations (reference §2B "Tables").

Every applied migration is a row of ``schema_migrations`` (domain, version,
name, applied_at_ms) in the database file itself, so a file always says which
schema it holds. Domains:

- ``meta-memory``: the record tables (:data:`MIGRATIONS`).
- ``records-fts``: the full-text index owned by :mod:`meta_memory.recall.fts`.
  Its row name carries a fingerprint of ``create_statements()``; when recall
  changes its index definition, the index is dropped, recreated and refilled
  from the active records at the next open, its per-scope statistics too
  (unless the earlier definition is one of :data:`_SAME_INDEX_FINGERPRINTS`, whose
  rows are today's: then only the new fingerprint is recorded).

Deviation from the predecessor, on purpose: ``records`` has an explicit
``rid INTEGER PRIMARY KEY`` (the stable rowid the FTS row points at; a plain
rowid may be renumbered by ``VACUUM``) and ``memory_id`` is ``UNIQUE``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from meta_memory.agent_memory.store import multirow, planner
from meta_memory.agent_memory.store import shared_ddl as ddl
from meta_memory.agent_memory.store.dialect import SQLITE, Dialect
from meta_memory.agent_memory.store.migration_steps import Work, apply_domain_steps, canonical_content_hashes
from meta_memory.recall import fts
from meta_memory.recall.semantic import vectors as vector_index

__all__ = [
    "SCHEMA_DOMAIN",
    "FTS_DOMAIN",
    "MIGRATIONS",
    "migrate",
    "is_current",
    "fts_fingerprint",
    "insert_fts",
    "insert_fts_many",
    "delete_fts",
    "delete_vector",
    "SESSION_STATE_DOMAIN",
    "SESSION_STATE_MIGRATIONS",
    "session_state_identity_index",
    "session_state_statements",
    "migrate_session_state",
]

SCHEMA_DOMAIN = "meta-memory"
FTS_DOMAIN = "records-fts"

#: The audit table's columns, by name (copied whole by migration 10).
_AUDIT_COLUMN_NAMES = "audit_id, stage_token, op_index, op_kind, memory_id, detail, applied_at_ms"
#: The full-text change log's table before migration 10 (keyed by ``rid``, ``seq`` indexed).
_LEGACY_CHANGES_TABLE = "records_fts_changes"
#: Fingerprints of earlier full-text definitions whose index rows and statistics are exactly today's: only
#: the change log's DDL differed (migration 10 converts the log), so a realm holding one is not refilled.
_SAME_INDEX_FINGERPRINTS = frozenset({"fts-aa693b5a09e4c99b"})

_BASE_SCHEMA = [
    f"""CREATE TABLE IF NOT EXISTS records (
        rid INTEGER PRIMARY KEY,
        memory_id TEXT NOT NULL UNIQUE,
        {ddl.columns(ddl.RECORD_COLUMNS, "INTEGER")}
    )""",
    "CREATE INDEX IF NOT EXISTS records_scope_idx ON records(scope_kind, scope_key, status_kind)",
    "CREATE INDEX IF NOT EXISTS records_scope_hash_idx ON records(scope_kind, scope_key, content_hash)",
    "CREATE INDEX IF NOT EXISTS records_updated_idx ON records(updated_at_ms DESC, memory_id DESC)",
    "CREATE INDEX IF NOT EXISTS records_supersedes_idx ON records(supersedes)",
    f"""CREATE TABLE IF NOT EXISTS proposals (
        proposal_id TEXT PRIMARY KEY,
        {ddl.columns(ddl.PROPOSAL_COLUMNS, "INTEGER")}
    )""",
    f"""CREATE TABLE IF NOT EXISTS audit (
        audit_id INTEGER PRIMARY KEY AUTOINCREMENT,
        {ddl.columns(ddl.AUDIT_COLUMNS, "INTEGER")}
    )""",
    "CREATE INDEX IF NOT EXISTS audit_memory_idx ON audit(memory_id, audit_id)",
    "CREATE INDEX IF NOT EXISTS audit_token_idx ON audit(stage_token)",
    """CREATE TABLE IF NOT EXISTS stage (
        token TEXT PRIMARY KEY,
        batch TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS injections (
        injection_id INTEGER PRIMARY KEY AUTOINCREMENT,
        record_id TEXT NOT NULL,
        identity TEXT NOT NULL,
        session_key TEXT,
        surface TEXT NOT NULL CHECK (surface IN ('build', 'turn')),
        at_ms INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS injections_record_idx ON injections(record_id, at_ms)",
    """CREATE TABLE IF NOT EXISTS pending_harvests (
        identity TEXT NOT NULL,
        session_key TEXT,
        cause TEXT NOT NULL,
        retired_at_ms INTEGER NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        PRIMARY KEY (identity, retired_at_ms)
    )""",
    f"""CREATE TABLE IF NOT EXISTS pending_promotions (
        pending_id TEXT PRIMARY KEY,
        {ddl.columns(ddl.PENDING_PROMOTION_COLUMNS, "INTEGER")}
    )""",
    "CREATE INDEX IF NOT EXISTS pending_promotions_record_idx ON pending_promotions(record_id, status)",
    """CREATE TABLE IF NOT EXISTS dream_runs (
        run_id TEXT PRIMARY KEY,
        partition_label TEXT NOT NULL DEFAULT 'realm',
        started_at_ms INTEGER NOT NULL,
        completed_at_ms INTEGER NOT NULL,
        ops_committed INTEGER NOT NULL,
        detail TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS dream_runs_completed ON dream_runs(completed_at_ms DESC)",
    """CREATE TABLE IF NOT EXISTS dream_audit_verdicts (
        run_id TEXT NOT NULL,
        record_id TEXT NOT NULL,
        verdict TEXT NOT NULL,
        rationale TEXT,
        created_at_ms INTEGER NOT NULL,
        resolved_at_ms INTEGER,
        resolution TEXT,
        PRIMARY KEY (run_id, record_id)
    )""",
    "CREATE INDEX IF NOT EXISTS dream_audit_verdicts_record_idx ON dream_audit_verdicts(record_id, resolved_at_ms)",
]

_RECALL_INDEXES = [
    "CREATE INDEX IF NOT EXISTS records_scope_updated_idx "
    "ON records(scope_kind, scope_key, status_kind, updated_at_ms DESC, created_at_ms DESC)",
    "CREATE INDEX IF NOT EXISTS records_scope_created_idx "
    "ON records(scope_kind, scope_key, status_kind, created_at_ms)",
]

_PANEL_INDEXES = [
    "CREATE INDEX IF NOT EXISTS records_status_created_idx ON records(status_kind, created_at_ms DESC, memory_id DESC)",
    "CREATE INDEX IF NOT EXISTS injections_at_idx ON injections(at_ms DESC, injection_id DESC)",
]

# A forget held for review: the record stays active until a reviewer approves the tombstone
# (``meta/memory/quarantine/decide``) or releases the record from the hold.
_PENDING_FORGETS = [
    f"""CREATE TABLE IF NOT EXISTS pending_forgets (
        forget_id TEXT PRIMARY KEY,
        {ddl.columns(ddl.PENDING_FORGET_COLUMNS, "INTEGER")}
    )""",
    "CREATE INDEX IF NOT EXISTS pending_forgets_record_idx ON pending_forgets(memory_id, status)",
    "CREATE INDEX IF NOT EXISTS pending_forgets_status_idx ON pending_forgets(status, created_at_ms DESC)",
]

# The per-write lookups by content (exact-duplicate check, recreation window, review's duplicate
# lookup) name scope, status and hash by equality and read the oldest first. This index answers
# them with four equality columns and the order already in the index, so it dominates every other
# index for those queries with or without planner statistics (tests assert the plans). It makes
# the older scope and scope+hash indexes redundant (both are prefixes of an index kept here or
# above), and every index dropped is one less b-tree write per record.
_HOT_QUERY_INDEXES = [
    "CREATE INDEX IF NOT EXISTS records_scope_status_hash_idx "
    "ON records(scope_kind, scope_key, status_kind, content_hash, created_at_ms)",
    # The working-set manifest's ranked half: only ranked active rows, already in rank order.
    "CREATE INDEX IF NOT EXISTS records_scope_ranked_idx "
    "ON records(scope_kind, scope_key, working_set_rank, updated_at_ms DESC) "
    "WHERE status_kind = 'active' AND working_set_rank IS NOT NULL",
    "DROP INDEX IF EXISTS records_scope_idx",
    "DROP INDEX IF EXISTS records_scope_hash_idx",
    # Newest-first reads scan these ascending indexes backwards (same plans), while a new record now
    # lands at an index's right edge, where SQLite appends to full pages instead of splitting pages
    # at the left edge of a descending index: fewer pages written per record.
    "DROP INDEX IF EXISTS records_updated_idx",
    "CREATE INDEX records_updated_idx ON records(updated_at_ms, memory_id)",
    "DROP INDEX IF EXISTS records_status_created_idx",
    "CREATE INDEX records_status_created_idx ON records(status_kind, created_at_ms, memory_id)",
    "DROP INDEX IF EXISTS records_scope_updated_idx",
    "CREATE INDEX records_scope_updated_idx ON records(scope_kind, scope_key, status_kind, updated_at_ms, created_at_ms)",
    # Only versions have a prior: the lineage lookups name one, so first versions need no entry.
    "DROP INDEX IF EXISTS records_supersedes_idx",
    "CREATE INDEX records_supersedes_idx ON records(supersedes) WHERE supersedes IS NOT NULL",
    *planner.TABLE_STATEMENTS,
]

# The erasure register: what an erase removed (ids, scopes, content hashes; never content), consulted by
# every write so erased content cannot come back (``agent_memory/erase.py``). Lookups name ids or hashes.
_ERASURES = [
    f"""CREATE TABLE IF NOT EXISTS erasures (
        memory_id TEXT PRIMARY KEY,
        {ddl.columns(ddl.ERASURE_COLUMNS, "INTEGER")}
    )""",
    "CREATE INDEX IF NOT EXISTS erasures_hash_idx ON erasures(content_hash, scope_kind, scope_key)",
]

# Fewer pages written per record (each b-tree a write touches is at least one more WAL frame per commit):
_FEWER_PAGES_PER_WRITE = [
    # The audit log without AUTOINCREMENT: its ids are the same (the largest plus one; no audit row is ever
    # deleted), and an append no longer rewrites the sqlite_sequence page. Rebuilt, since SQLite cannot
    # drop AUTOINCREMENT in place; dropping the old table drops its sqlite_sequence row.
    f"""CREATE TABLE audit_rebuilt (
        audit_id INTEGER PRIMARY KEY,
        {ddl.columns(ddl.AUDIT_COLUMNS, "INTEGER")}
    )""",
    f"INSERT INTO audit_rebuilt({_AUDIT_COLUMN_NAMES}) SELECT {_AUDIT_COLUMN_NAMES} FROM audit ORDER BY audit_id",
    "DROP TABLE audit",
    "ALTER TABLE audit_rebuilt RENAME TO audit",
    "CREATE INDEX audit_memory_idx ON audit(memory_id, audit_id)",
    "CREATE INDEX audit_token_idx ON audit(stage_token)",
    # The full-text change log keyed by its position alone (one b-tree, appended at its right edge) instead of
    # by rid with an index on the position (two b-trees, one page each per write). Same positions, so an
    # in-process index built before the change stays current; a fresh database converts an empty log.
    f"CREATE TABLE IF NOT EXISTS {_LEGACY_CHANGES_TABLE} (rid INTEGER PRIMARY KEY, seq INTEGER NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {fts.CHANGES_TABLE} (seq INTEGER PRIMARY KEY, rid INTEGER NOT NULL)",
    f"INSERT INTO {fts.CHANGES_TABLE}(seq, rid) SELECT seq, rid FROM {_LEGACY_CHANGES_TABLE} ORDER BY seq",
    f"DROP TABLE {_LEGACY_CHANGES_TABLE}",
    # Only the quarantine queue lists records realm-wide by status and creation time, so only quarantined
    # rows are indexed for it: a record written active (nearly every write) adds no entry.
    "DROP INDEX IF EXISTS records_status_created_idx",
    "CREATE INDEX IF NOT EXISTS records_quarantined_idx ON records(created_at_ms, memory_id) "
    "WHERE status_kind = 'quarantined'",
]

# One b-tree fewer written by each plain write: its audit row (token ``direct-...``) is read by record id (history,
# tombstones, erasures) and never by token; the token lookups are a review's replay (``AuditReads.at``) and an
# erase's other rows (``AuditReads.erasure_of``), of ``review-`` and ``erase-`` tokens. The token index keeps
# only the rows of the batches that are not plain writes (reviews, erases, staged commits, imports, harvests).
_LOOKED_UP_AUDIT_TOKENS = [
    "DROP INDEX IF EXISTS audit_token_idx",
    f"CREATE INDEX audit_token_idx ON audit(stage_token) WHERE {ddl.AUDIT_TOKEN_INDEXED}",
]

# The erasure register's second hash: the content hash over the whitespace-folded title and body
# (``hashing.folded_content_hash``), so content that differs from erased content only in whitespace stays
# out too. An erasure registered before keeps ``NULL`` (its content is gone: nothing to compute it from).
# A write looks up both its hashes by the row's folded hash, else its content hash (``ddl.ERASURE_MATCH_HASH``):
# one index seek per hash, as before.
_ERASURE_FOLDED_HASHES = [
    "ALTER TABLE erasures ADD COLUMN folded_hash TEXT",
    f"CREATE INDEX IF NOT EXISTS erasures_match_idx ON erasures({ddl.ERASURE_MATCH_HASH}, scope_kind, scope_key)",
]

# The erasure register's fold-2 hash: the content hash over the title and body folded also for compatibility
# forms (NFKC: full-width letters...) and case (``hashing.casefolded_content_hash``), so content that differs
# from erased content only in case or width stays out too. An erasure registered before keeps ``NULL`` and
# matches by its fold-1 or content hash, as before (its content is gone: nothing to compute it from). A
# write looks up its three hashes by ``ddl.ERASURE_LOOKUP_HASH``: one index seek per hash.
_ERASURE_CASEFOLDED_HASHES = [
    "ALTER TABLE erasures ADD COLUMN casefolded_hash TEXT",
    f"CREATE INDEX IF NOT EXISTS erasures_lookup_idx ON erasures({ddl.ERASURE_LOOKUP_HASH}, scope_kind, scope_key)",
]

# The erasure register's fold-3 hash: the content hash over the title and body with look-alike letters of
# other scripts read as the Latin letters they look like (``hashing.skeleton_content_hash``: Cyrillic "а" as
# "a"), so content that differs from erased content only in such letters stays out too. An erasure
# registered before keeps ``NULL`` and matches by its other hashes, as before (its content is gone). A write
# looks up its four hashes by ``ddl.ERASURE_LOOKUP_HASH`` and by this column: one index seek per hash each.
_ERASURE_SKELETON_HASHES = [
    "ALTER TABLE erasures ADD COLUMN skeleton_hash TEXT",
    f"CREATE INDEX IF NOT EXISTS erasures_skeleton_idx ON erasures({ddl.ERASURE_SKELETON_HASH}, scope_kind, scope_key)",
]

# The field-level erasure register: the hashes of an erased record's body and description each on its own
# (``erase.field_hashes``), so the erased text written into another field (a description, a tag, a metadata
# string, another title) stays out too. Keyed by (hash, scope, id): a write seeks its fields' hashes. An
# erasure registered before this step has no row here (its content is gone: nothing to hash).
_ERASURE_TEXTS = [
    f"""CREATE TABLE IF NOT EXISTS erasure_texts (
        {ddl.columns(ddl.ERASURE_TEXT_COLUMNS, "INTEGER")},
        PRIMARY KEY (hash, scope_kind, scope_key, memory_id)
    ) WITHOUT ROWID""",
]

#: What a cached recall view and its liveness rest on (:mod:`.view_cache`): a row's identity, the text a view
#: holds, its timestamps, scope, status and expiry (step 13's trigger).
GENERATION_COLUMNS = ("rid", "memory_id", "content_hash", "title", "description", "body", "tags", "created_at_ms",
                      "updated_at_ms", "scope_kind", "scope_key", "status_kind", "expires_at_ms")
#: Every column of ``records`` but ``usage_stats`` (which every recall's usage marks move): step 16's trigger moves
#: the generation with any of them, so a whole record kept at a generation (:meth:`.view_cache.ViewCache.records`)
#: differs from its row by its usage counters alone.
RECORD_GENERATION_COLUMNS = (*GENERATION_COLUMNS, "kind", "provenance", "trust", "status_detail", "supersedes",
                             "derived_from", "working_set_rank", "rank_set_at_ms", "tombstoned_at_ms",
                             "ever_quarantined", "metadata")

# A counter every change of a record that recall could see moves, in the writing transaction itself (triggers:
# whatever code or process writes the file, an insert, a delete or an update of a GENERATION_COLUMNS column moves
# it). A reader that finds it where it was when it checked rows' liveness knows they are unchanged. Replaced by the
# scope generations of step 20 and dropped by step 21.
_RECORDS_GENERATION = [
    "CREATE TABLE IF NOT EXISTS records_generation (id INTEGER PRIMARY KEY CHECK (id = 0), n INTEGER NOT NULL)",
    # a start of its own per file: a reader's generation from one file never matches another file's
    "INSERT OR IGNORE INTO records_generation(id, n) VALUES (0, abs(random() >> 2))",
    "CREATE TRIGGER IF NOT EXISTS records_generation_insert AFTER INSERT ON records "
    "BEGIN UPDATE records_generation SET n = n + 1 WHERE id = 0; END",
    "CREATE TRIGGER IF NOT EXISTS records_generation_delete AFTER DELETE ON records "
    "BEGIN UPDATE records_generation SET n = n + 1 WHERE id = 0; END",
    "CREATE TRIGGER IF NOT EXISTS records_generation_update AFTER UPDATE ON records WHEN "
    + " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in GENERATION_COLUMNS)
    + " BEGIN UPDATE records_generation SET n = n + 1 WHERE id = 0; END",
]

# Rows per scope, any status, kept in the writing transaction by triggers (whatever writes the file): the count
# ``[agent_memory] identity_record_limit`` bounds, read with one seek. Filled from the rows a file already holds.
# A stored record's scope never changes (updates write its state only), so no update trigger.
_SCOPE_ROWS = [
    "CREATE TABLE IF NOT EXISTS scope_rows (scope_kind TEXT NOT NULL, scope_key TEXT NOT NULL, n INTEGER NOT NULL, "
    "PRIMARY KEY (scope_kind, scope_key)) WITHOUT ROWID",
    "DELETE FROM scope_rows",
    "INSERT INTO scope_rows(scope_kind, scope_key, n) SELECT scope_kind, scope_key, count(*) FROM records "
    "GROUP BY scope_kind, scope_key",
    "CREATE TRIGGER IF NOT EXISTS scope_rows_insert AFTER INSERT ON records BEGIN "
    "INSERT INTO scope_rows(scope_kind, scope_key, n) VALUES (NEW.scope_kind, NEW.scope_key, 1) "
    "ON CONFLICT(scope_kind, scope_key) DO UPDATE SET n = n + 1; END",
    "CREATE TRIGGER IF NOT EXISTS scope_rows_delete AFTER DELETE ON records BEGIN "
    "UPDATE scope_rows SET n = n - 1 WHERE scope_kind = OLD.scope_kind AND scope_key = OLD.scope_key; END",
]

# The update trigger of step 13, widened to every column but ``usage_stats``: the re-check of a recall's answer
# keeps whole records under the generation (``view_cache``), and a state update (trust, working-set rank, a
# quarantine's detail) or any other process's write of a column must move it too.
_RECORDS_GENERATION_ALL_COLUMNS = [
    "DROP TRIGGER IF EXISTS records_generation_update",
    "CREATE TRIGGER IF NOT EXISTS records_generation_update AFTER UPDATE ON records WHEN "
    + " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in RECORD_GENERATION_COLUMNS)
    + " BEGIN UPDATE records_generation SET n = n + 1 WHERE id = 0; END",
]


def _proposer(row: str) -> str:
    """The proposing identity of proposal row ``row`` (``NEW`` / ``OLD`` / a table): its author's ``identity``
    when the author is an agent, else ``NULL`` (an unreadable author too: never an error in a trigger)."""
    return (f"(CASE WHEN json_valid({row}.author) THEN (CASE WHEN json_extract({row}.author, '$.author') = 'agent' "
            f"AND json_type({row}.author, '$.identity') = 'text' THEN json_extract({row}.author, '$.identity') END) END)")


def _open_proposal(row: str) -> str:
    """Whether proposal row ``row`` is open (pending or held) and was made by an agent identity."""
    return f"{row}.status IN ('pending', 'held') AND {_proposer(row)} IS NOT NULL"


def _proposal_rows(row: str, step: str, *, fresh: bool = False) -> str:
    """The statement moving the identity scope count of ``row``'s proposer by ``step`` (``+ 1`` / ``- 1``);
    ``fresh``: a row it creates gets a fresh scope generation (step 20)."""
    if fresh:
        return (f"INSERT INTO scope_rows(scope_kind, scope_key, n, g) VALUES ('identity', {_proposer(row)}, 0 {step}, "
                f"{_FRESH_GENERATION}) ON CONFLICT(scope_kind, scope_key) DO UPDATE SET n = n {step}")
    return (f"INSERT INTO scope_rows(scope_kind, scope_key, n) VALUES ('identity', {_proposer(row)}, 0 {step}) "
            f"ON CONFLICT(scope_kind, scope_key) DO UPDATE SET n = n {step}")


# An identity's open proposals (pending or held, in whatever scope they target) count toward its identity scope's
# rows: what ``[agent_memory] identity_record_limit`` bounds, so proposals cannot fill the disk past the limit
# either. Kept by triggers as step 14's record counts are; a proposal leaving the open states (accepted,
# rejected) or erased gives its row back. Refilled from the records and open proposals a file holds.
_PROPOSAL_SCOPE_ROWS = [
    "DELETE FROM scope_rows",
    "INSERT INTO scope_rows(scope_kind, scope_key, n) SELECT scope_kind, scope_key, sum(n) FROM ("
    "SELECT scope_kind, scope_key, count(*) AS n FROM records GROUP BY scope_kind, scope_key UNION ALL "
    f"SELECT 'identity' AS scope_kind, {_proposer('proposals')} AS scope_key, count(*) AS n FROM proposals "
    f"WHERE {_open_proposal('proposals')} GROUP BY 2) GROUP BY scope_kind, scope_key",
    f"CREATE TRIGGER IF NOT EXISTS scope_rows_proposal_insert AFTER INSERT ON proposals WHEN {_open_proposal('NEW')} "
    f"BEGIN {_proposal_rows('NEW', '+ 1')}; END",
    f"CREATE TRIGGER IF NOT EXISTS scope_rows_proposal_delete AFTER DELETE ON proposals WHEN {_open_proposal('OLD')} "
    f"BEGIN {_proposal_rows('OLD', '- 1')}; END",
    f"CREATE TRIGGER IF NOT EXISTS scope_rows_proposal_closed AFTER UPDATE ON proposals WHEN {_open_proposal('OLD')} "
    f"BEGIN {_proposal_rows('OLD', '- 1')}; END",
    f"CREATE TRIGGER IF NOT EXISTS scope_rows_proposal_opened AFTER UPDATE ON proposals WHEN {_open_proposal('NEW')} "
    f"BEGIN {_proposal_rows('NEW', '+ 1')}; END",
]

#: A fresh scope generation: a start of its own, so a reader's generation of a scope in one file (or an earlier file
#: of the same realm) never matches another's.
_FRESH_GENERATION = "abs(random() >> 2)"

# A generation per scope beside its row count (``scope_rows.g``), moved in the writing transaction by the same
# triggers as ``records_generation`` (an insert, a delete, an update of any column but ``usage_stats``), but only
# for the scope of the row written: a reader that finds its scope's generation where it was when it kept that
# scope's rows knows they are unchanged, whatever was written to the realm's other scopes (:mod:`.view_cache`). It
# lives in the row each insert and delete already writes, so a remember writes no page more.
def _scope_generation_column(execute: Callable[..., Any], dialect: Dialect) -> None:
    """Step 20's column, added unless the file has it (a step applied again after a file was taken back by hand)."""
    del dialect
    if not any(row[1] == "g" for row in execute("PRAGMA table_info(scope_rows)")):
        execute("ALTER TABLE scope_rows ADD COLUMN g INTEGER NOT NULL DEFAULT 0")


_SCOPE_GENERATIONS: list[str | Work] = [
    _scope_generation_column,
    f"UPDATE scope_rows SET g = {_FRESH_GENERATION}",
    "DROP TRIGGER IF EXISTS scope_rows_insert",
    "CREATE TRIGGER IF NOT EXISTS scope_rows_insert AFTER INSERT ON records BEGIN "
    f"INSERT INTO scope_rows(scope_kind, scope_key, n, g) VALUES (NEW.scope_kind, NEW.scope_key, 1, {_FRESH_GENERATION}) "
    "ON CONFLICT(scope_kind, scope_key) DO UPDATE SET n = n + 1, g = g + 1; END",
    "DROP TRIGGER IF EXISTS scope_rows_delete",
    "CREATE TRIGGER IF NOT EXISTS scope_rows_delete AFTER DELETE ON records BEGIN "
    "UPDATE scope_rows SET n = n - 1, g = g + 1 WHERE scope_kind = OLD.scope_kind AND scope_key = OLD.scope_key; END",
    "CREATE TRIGGER IF NOT EXISTS scope_generation_update AFTER UPDATE ON records WHEN "
    + " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in RECORD_GENERATION_COLUMNS)
    + " BEGIN UPDATE scope_rows SET g = g + 1 WHERE scope_kind = OLD.scope_kind AND scope_key = OLD.scope_key; "
    f"INSERT INTO scope_rows(scope_kind, scope_key, n, g) VALUES (NEW.scope_kind, NEW.scope_key, 0, {_FRESH_GENERATION}) "
    "ON CONFLICT(scope_kind, scope_key) DO UPDATE SET g = g + 1; END",
    # a scope row a proposal creates starts fresh too (its proposer's identity scope may hold no record yet)
    "DROP TRIGGER IF EXISTS scope_rows_proposal_insert",
    f"CREATE TRIGGER IF NOT EXISTS scope_rows_proposal_insert AFTER INSERT ON proposals WHEN {_open_proposal('NEW')} "
    f"BEGIN {_proposal_rows('NEW', '+ 1', fresh=True)}; END",
    "DROP TRIGGER IF EXISTS scope_rows_proposal_opened",
    f"CREATE TRIGGER IF NOT EXISTS scope_rows_proposal_opened AFTER UPDATE ON proposals WHEN {_open_proposal('NEW')} "
    f"BEGIN {_proposal_rows('NEW', '+ 1', fresh=True)}; END",
]

# The realm-wide counter of step 13 has had no reader since step 20: kept views and records rest on their scope's
# generation (``scope_rows.g``, moved by the same changes in the same transaction). Its triggers wrote its page on
# every insert, delete and update of a record, one more b-tree in each write's commit; they go, and the table with
# them. The scope generations and row counts keep their own triggers.
_NO_REALM_GENERATION = [
    "DROP TRIGGER IF EXISTS records_generation_insert",
    "DROP TRIGGER IF EXISTS records_generation_delete",
    "DROP TRIGGER IF EXISTS records_generation_update",
    "DROP TABLE IF EXISTS records_generation",
]

MIGRATIONS: list[tuple[int, str, Sequence[str | Work]]] = [
    (1, "base-schema", _BASE_SCHEMA),
    (2, "recall-recency-indexes", _RECALL_INDEXES),
    (3, "panel-listing-indexes", _PANEL_INDEXES),
    # Vectors of the semantic recall extra (a row only while its record is active; filled in the background).
    (4, "record-vectors", vector_index.create_statements()),
    (5, "pending-forgets", _PENDING_FORGETS),
    (6, "hot-query-indexes", _HOT_QUERY_INDEXES),
    (7, "erasure-register", _ERASURES),
    # A record's metadata JSON object (canonical JSON text; "{}" for the records written before).
    (8, "record-metadata", ["ALTER TABLE records ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'"]),
    # Version 8 is "record-metadata"; steps are applied by version, so either may arrive first.
    (9, "record-expiry", [
        "ALTER TABLE records ADD COLUMN expires_at_ms INTEGER",
        # The expiry sweep's (and recall's) lookup of active records past their expiry: only rows that
        # may expire, in expiry order.
        "CREATE INDEX IF NOT EXISTS records_expiry_idx ON records(expires_at_ms) "
        "WHERE status_kind = 'active' AND expires_at_ms IS NOT NULL",
    ]),
    (10, "fewer-pages-per-write", _FEWER_PAGES_PER_WRITE),
    (11, "looked-up-audit-tokens", _LOOKED_UP_AUDIT_TOKENS),
    (12, "erasure-folded-hashes", _ERASURE_FOLDED_HASHES),
    (13, "records-generation", _RECORDS_GENERATION),
    (14, "scope-rows", _SCOPE_ROWS),
    (15, "erasure-casefolded-hashes", _ERASURE_CASEFOLDED_HASHES),
    (16, "records-generation-all-columns", _RECORDS_GENERATION_ALL_COLUMNS),
    (17, "proposal-scope-rows", _PROPOSAL_SCOPE_ROWS),
    # The injection ledger's per-identity prune (newest rows kept) seeks an identity's rows by id.
    (18, "injection-identity-index", [
        "CREATE INDEX IF NOT EXISTS injections_identity_idx ON injections(identity, injection_id)",
    ]),
    # Content hashes read text in NFC (``hashing.content_hash``): the rows whose title or body is not in NFC
    # are hashed again, so a canonically equivalent write finds them as its duplicate.
    (19, "canonical-content-hashes", [canonical_content_hashes]),
    (20, "scope-generations", _SCOPE_GENERATIONS),
    (21, "no-realm-generation", _NO_REALM_GENERATION),
    (22, "erasure-skeleton-hashes", _ERASURE_SKELETON_HASHES),
    (23, "erasure-texts", _ERASURE_TEXTS),
]
"""``(version, name, statements)`` of domain :data:`SCHEMA_DOMAIN`, applied in order."""

#: Domain of the session-state tables (taint, reset boundaries, injection budgets, nonces); in SQLite they
#: live in the gateway's own ``<state-dir>/session-state.db`` (one gateway per state dir).
SESSION_STATE_DOMAIN = "session-state"


def session_state_statements(prefix: str = "", *, bigint: str = "INTEGER") -> list[str]:
    """The session-state tables (see :mod:`meta_memory.session_state.store`); ``prefix`` qualifies table
    names (``""`` in SQLite, ``"<schema>".`` in PostgreSQL) and ``bigint`` is the 64-bit integer type."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {prefix}session_identities (
            realm TEXT NOT NULL,
            identity TEXT NOT NULL,
            current_session TEXT,
            pending_at_ms {bigint},
            pending_source TEXT,
            nonce TEXT,
            nonce_session TEXT,
            touched_ms {bigint} NOT NULL,
            PRIMARY KEY (realm, identity)
        )""",
        f"""CREATE TABLE IF NOT EXISTS {prefix}session_states (
            realm TEXT NOT NULL,
            identity TEXT NOT NULL,
            session_key TEXT NOT NULL,
            tainted_at_ms {bigint},
            taint_source TEXT,
            boundary_at_ms {bigint},
            prior_at_ms {bigint},
            prior_source TEXT,
            injected_bytes {bigint} NOT NULL DEFAULT 0,
            touched_ms {bigint} NOT NULL,
            PRIMARY KEY (realm, identity, session_key)
        )""",
        f"CREATE INDEX IF NOT EXISTS session_states_key_idx ON {prefix}session_states (realm, session_key)",
        f"CREATE INDEX IF NOT EXISTS session_states_touched_idx ON {prefix}session_states (touched_ms)",
        f"CREATE INDEX IF NOT EXISTS session_identities_touched_idx ON {prefix}session_identities (touched_ms)",
        f"""CREATE TABLE IF NOT EXISTS {prefix}session_injected (
            realm TEXT NOT NULL,
            identity TEXT NOT NULL,
            session_key TEXT NOT NULL,
            record_id TEXT NOT NULL,
            PRIMARY KEY (realm, identity, session_key, record_id)
        )""",
    ]


def session_state_unreported(bigint: str = "INTEGER") -> list[str]:
    """Version 2 of the session-state tables: ``session_states.unreported_at_ms``, when the session was
    declared to have its tool results unreported (a property of the session a reset does not clear)."""
    return [f"ALTER TABLE session_states ADD COLUMN unreported_at_ms {bigint}"]


def session_state_identity_index() -> list[str]:
    """Version 3 of the session-state tables: an index of each table by identity alone, for the count of an
    identity's rows in every realm (``SessionStateStore._identity_full``) and the reads of another agent's
    taint in every realm (``agent_taint``)."""
    return ["CREATE INDEX IF NOT EXISTS session_states_identity_idx ON session_states (identity)",
            "CREATE INDEX IF NOT EXISTS session_identities_identity_idx ON session_identities (identity)"]


SESSION_STATE_MIGRATIONS: list[tuple[int, str, Sequence[str | Work]]] = [
    (1, "session-state-tables", session_state_statements()),
    (2, "session-state-unreported", session_state_unreported()),
    (3, "session-state-identity-index", session_state_identity_index()),
]
"""``(version, name, statements)`` of domain :data:`SESSION_STATE_DOMAIN` (SQLite), applied in order."""

_LEDGER = """CREATE TABLE IF NOT EXISTS schema_migrations (
    domain TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    applied_at_ms INTEGER NOT NULL,
    PRIMARY KEY (domain, version)
)"""


def fts_fingerprint() -> str:
    """A short hash of the current full-text index DDL."""
    text = f"index-version {getattr(fts, 'INDEX_VERSION', 0)}\n" + "\n".join(fts.create_statements())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_current(conn: sqlite3.Connection) -> bool:
    """Whether every migration (and the current FTS definition) is already applied. Read-only."""
    try:
        rows = conn.execute("SELECT domain, version, name FROM schema_migrations").fetchall()
    except sqlite3.OperationalError:
        return False
    versions = {v for d, v, _ in rows if d == SCHEMA_DOMAIN}
    if any(version not in versions for version, _, _ in MIGRATIONS):
        return False
    fts_rows = sorted((v, n) for d, v, n in rows if d == FTS_DOMAIN)
    return bool(fts_rows) and fts_rows[-1][1] == f"fts-{fts_fingerprint()}"


def _apply_domain(conn: sqlite3.Connection, domain: str, steps: Sequence[tuple[int, str, Sequence[str | Work]]],
                  now_ms: int) -> list[str]:
    """Apply the missing ``(version, name, statements)`` of ``domain``, recording each in the ledger table."""
    conn.execute(_LEDGER)
    return apply_domain_steps(conn.execute, SQLITE, domain, steps, now_ms)


def migrate_session_state(conn: sqlite3.Connection, now_ms: int) -> list[str]:
    """Apply missing :data:`SESSION_STATE_MIGRATIONS` inside the caller's open write transaction."""
    return _apply_domain(conn, SESSION_STATE_DOMAIN, SESSION_STATE_MIGRATIONS, now_ms)


def migrate(conn: sqlite3.Connection, now_ms: int) -> list[str]:
    """Apply missing migrations inside the caller's open write transaction.

    Returns the names applied (empty when the file was current). Rebuilds the
    full-text index when its fingerprint changed (or on first creation), except from
    a definition whose rows are today's (:data:`_SAME_INDEX_FINGERPRINTS`).
    """
    applied = _apply_domain(conn, SCHEMA_DOMAIN, MIGRATIONS, now_ms)

    fingerprint = f"fts-{fts_fingerprint()}"
    row = conn.execute(
        "SELECT version, name FROM schema_migrations WHERE domain = ? ORDER BY version DESC LIMIT 1", (FTS_DOMAIN,)
    ).fetchone()
    if row is not None and row[1] != fingerprint and row[1] in _SAME_INDEX_FINGERPRINTS:
        conn.execute(
            "INSERT INTO schema_migrations(domain, version, name, applied_at_ms) VALUES (?, ?, ?, ?)",
            (FTS_DOMAIN, row[0] + 1, fingerprint, now_ms),
        )
        applied.append(fingerprint)
    elif row is None or row[1] != fingerprint:
        conn.execute(f"DROP TABLE IF EXISTS {fts.FTS_TABLE}")
        conn.execute(f"DROP TABLE IF EXISTS {fts.SCOPES_TABLE}")  # rebuilt below with the rows
        for stmt in fts.create_statements():
            conn.execute(stmt)
        for rid, kind, key, title, description, body, tags_json in conn.execute(
            "SELECT rid, scope_kind, scope_key, title, description, body, tags FROM records "
            "WHERE status_kind = 'active' ORDER BY rid"
        ).fetchall():
            insert_fts(conn, rid, (kind, key), title, description, body, _json_tags(tags_json))
        conn.execute(
            "INSERT INTO schema_migrations(domain, version, name, applied_at_ms) VALUES (?, ?, ?, ?)",
            (FTS_DOMAIN, (row[0] + 1) if row else 1, fingerprint, now_ms),
        )
        applied.append(fingerprint)
    return applied


def _json_tags(text: str) -> list[str]:
    import json

    value = json.loads(text or "[]")
    return [t for t in value if isinstance(t, str)]


def insert_fts(
    conn: sqlite3.Connection, rid: int, scope: tuple[str, str], title: str, description: str, body: str,
    tags: list[str] | tuple[str, ...],
) -> None:
    """Index one active record (``rowid`` = the record's ``rid``, ``scope`` its ``(scope_kind, scope_key)``)
    with :func:`meta_memory.recall.fts.document`: the row, its change-log entry and its scope's statistics."""
    doc = fts.document(title, description, body, list(tags))
    conn.execute(_insert_fts_sql(tuple(doc)), (rid, *doc.values()))
    fts.note_change(conn, rid)
    fts.note_scope(conn, scope[0], scope[1], 1, fts.document_size(doc.values()))


def insert_fts_many(
    conn: sqlite3.Connection,
    rows: Sequence[tuple[int, tuple[str, str], str, str, str, Sequence[str]]],
) -> None:
    """:func:`insert_fts` for many active records at once: ``rows`` of ``(rid, scope, title, description,
    body, tags)``. The same full-text rows and change-log entries, in the order given, written by a few
    multi-row statements (:mod:`.multirow`); each scope's statistics move once, by the rows' sum."""
    if not rows:
        return
    docs: list[tuple[Any, ...]] = []
    scopes: dict[tuple[str, str], list[int]] = {}
    columns: tuple[str, ...] | None = None
    for rid, scope, title, description, body, tags in rows:
        doc = fts.document(title, description, body, list(tags))
        if columns is None:
            columns = tuple(doc)
        docs.append((rid, *doc.values()))
        total = scopes.setdefault(scope, [0, 0])
        total[0] += 1
        total[1] += fts.document_size(doc.values())
    assert columns is not None
    multirow.insert_many(conn, _fts_head(columns), docs)
    multirow.insert_many(conn, f"INSERT INTO {fts.CHANGES_TABLE}(rid)", [(row[0],) for row in rows])
    for (kind, key), (n_rows, n_tokens) in scopes.items():
        fts.note_scope(conn, kind, key, n_rows, n_tokens)


@lru_cache(maxsize=4)
def _fts_head(columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {fts.FTS_TABLE}(rowid, {', '.join(columns)})"


@lru_cache(maxsize=4)
def _insert_fts_sql(columns: tuple[str, ...]) -> str:
    """The full-text row insert for these columns (written once, not per row)."""
    return f"INSERT INTO {fts.FTS_TABLE}(rowid, {', '.join(columns)}) VALUES (?, {', '.join('?' for _ in columns)})"


_INDEXED_ROW = (f"SELECT r.scope_kind, r.scope_key, {', '.join(f'f.{c}' for c in fts.COLUMNS)} "
                f"FROM {fts.FTS_TABLE} f LEFT JOIN records r ON r.rid = f.rowid WHERE f.rowid = ?")


def delete_fts(conn: sqlite3.Connection, rid: int) -> None:
    """Remove a record's full-text row (when it leaves ``active``), with its scope's statistics."""
    row = conn.execute(_INDEXED_ROW, (rid,)).fetchone()
    if row is None:
        return
    conn.execute(f"DELETE FROM {fts.FTS_TABLE} WHERE rowid = ?", (rid,))
    fts.note_change(conn, rid)
    if row[0] is not None:
        fts.note_scope(conn, row[0], row[1], -1, -fts.document_size(row[2:]))


def delete_vector(conn: sqlite3.Connection, rid: int) -> None:
    """Remove a record's vector, if any (when it leaves ``active``; same transaction)."""
    vector_index.delete_vector(conn, rid)
