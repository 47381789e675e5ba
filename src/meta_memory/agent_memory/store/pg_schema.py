"""PostgreSQL schema of the agent-memory store, applied as versioned migrations at start.

Layout (one PostgreSQL schema, default ``meta_memory``; realms are rows):

- The SQLite tables of :mod:`.schema` (``records``, ``proposals``, ``audit``,
  ``stage``, ``injections``, ``pending_harvests``, ``pending_promotions``,
  ``dream_runs``, ``dream_audit_verdicts``), each with a leading ``realm``
  column that is part of every key and every index, plus ``realms`` (the
  realm list).
- The full-text index, kept in step with the records exactly like the FTS5
  table (a record has an index row iff it is active):

  * ``records_fts``: one row per active record: ``doc`` (a ``tsvector`` of the
    record's distinct tokens from :func:`meta_memory.recall.fts.document`, GIN
    indexed, matched with a ``tsquery`` of the query's terms), ``tf`` (jsonb
    ``token -> bm25-weighted term frequency``) and ``ntok`` (token count);
  * ``fts_stats``: per realm and scope, active row count and total token count
    (a row gone once the scope has no active record);
  * ``fts_terms``: per realm, scope and token, how many of the scope's active
    records hold it (a row gone at zero).

  These are the statistics bm25 reads (:mod:`meta_memory.recall.bm25`), each
  the scope's own, so the PostgreSQL score is the SQLite score and no other
  scope's records move it (see :mod:`.postgres`).
- A second schema ``<schema>_realm`` with one view per table, named like
  the table, without the ``realm`` column and filtered on the transaction's
  realm (``current_setting('meta_memory.realm')``), ``WITH CHECK OPTION``.
  Inside a store transaction or snapshot (``transaction(realm)`` /
  ``snapshot(realm)``) the search path puts these views first, so SQL written
  for one SQLite realm file (``SELECT ... FROM records WHERE memory_id = %s``)
  sees only that realm and inserts land in it.

Why the index is not ``to_tsvector('simple', text)``: PostgreSQL's parser
would split our tokens again (``multi-agent`` -> ``multi-agent``, ``multi``,
``agent``; ``a_b`` -> ``a``, ``b``) and its idea of a letter depends on the
server locale. The tokens come from :mod:`meta_memory.recall.text` (the one
normalisation) and go into the ``tsvector`` as they are (``array_to_tsvector``),
which is what the ``simple`` configuration would do with pre-split words.

Every applied migration is a row of ``schema_migrations`` (domain, version,
name, applied_at_ms); migrations run under a transaction-level advisory lock,
so gateways starting together apply them once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from meta_memory.agent_memory.store import shared_ddl as ddl
from meta_memory.agent_memory.store.migration_steps import Work, canonical_content_hashes
from meta_memory.recall import fts

__all__ = [
    "SCHEMA_DOMAIN",
    "FTS_DOMAIN",
    "REALM_SETTING",
    "TABLES",
    "MIGRATIONS",
    "fts_fingerprint",
    "lexeme",
    "fts_row",
    "tsquery_literal",
    "quote_ident",
    "SESSION_STATE_DOMAIN",
    "session_state_migrations",
]

SCHEMA_DOMAIN = "meta-memory"
FTS_DOMAIN = "records-fts"

#: The transaction-local setting naming the realm of the realm views and column defaults.
REALM_SETTING = "meta_memory.realm"

#: Layout version of the PostgreSQL full-text rows (bump when :func:`fts_row` changes).
FTS_LAYOUT_VERSION = 2

#: Lexemes longer than this (UTF-8 bytes) are indexed by a digest (PostgreSQL caps lexemes at 2 KiB).
MAX_LEXEME_BYTES = 1000

_REALM_COL = "realm TEXT NOT NULL DEFAULT current_setting('meta_memory.realm') CHECK (realm <> '')"


def _realm_keyed_table(table: str, key: str, fragment: str) -> str:
    """``CREATE TABLE`` for ``table``: the realm column, the text ``key``, the shared
    :mod:`.shared_ddl` ``fragment``, keyed by ``(realm, key)``."""
    return f"""CREATE TABLE IF NOT EXISTS {table} (
        {_REALM_COL},
        {key} TEXT NOT NULL,
        {ddl.columns(fragment, "BIGINT")},
        PRIMARY KEY (realm, {key})
    )"""


#: table -> its columns other than ``realm``, in order (the realm views expose exactly these).
TABLES: dict[str, tuple[str, ...]] = {
    "records": (
        "rid", "memory_id", "scope_kind", "scope_key", "kind", "title", "description", "body", "tags",
        "provenance", "trust", "status_kind", "status_detail", "supersedes", "derived_from", "working_set_rank",
        "rank_set_at_ms", "content_hash", "created_at_ms", "updated_at_ms", "usage_stats", "tombstoned_at_ms",
        "ever_quarantined",
    ),
    "proposals": ("proposal_id", "scope_kind", "scope_key", "record", "author", "status", "created_at_ms", "taint"),
    "audit": ("audit_id", "stage_token", "op_index", "op_kind", "memory_id", "detail", "applied_at_ms"),
    "stage": ("token", "batch", "created_at_ms"),
    "injections": ("injection_id", "record_id", "identity", "session_key", "surface", "at_ms"),
    "pending_harvests": ("identity", "session_key", "cause", "retired_at_ms", "status"),
    "pending_promotions": (
        "pending_id", "stage_token", "record_id", "scope_kind", "scope_key", "rationale", "status",
        "created_at_ms", "resolved_at_ms",
    ),
    "dream_runs": ("run_id", "partition_label", "started_at_ms", "completed_at_ms", "ops_committed", "detail"),
    "dream_audit_verdicts": (
        "run_id", "record_id", "verdict", "rationale", "created_at_ms", "resolved_at_ms", "resolution",
    ),
    "pending_forgets": (
        "forget_id", "memory_id", "scope_kind", "scope_key", "content_hash", "author", "reason", "session_key",
        "status", "created_at_ms", "resolved_at_ms", "decision",
    ),
    "erasures": ("memory_id", "scope_kind", "scope_key", "content_hash", "erased_at_ms"),
    "erasure_texts": ("hash", "scope_kind", "scope_key", "memory_id", "erased_at_ms"),
}

#: Tables added after the first release, with the migration that creates them (and their realm view).
_LATER_TABLES: frozenset[str] = frozenset({"pending_forgets", "erasures", "erasure_texts"})

_BASE = [
    """CREATE TABLE IF NOT EXISTS realms (
        realm TEXT PRIMARY KEY CHECK (realm <> ''),
        created_at_ms BIGINT NOT NULL
    )""",
    f"""CREATE TABLE IF NOT EXISTS records (
        {_REALM_COL},
        rid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        memory_id TEXT NOT NULL,
        {ddl.columns(ddl.RECORD_COLUMNS, "BIGINT")},
        UNIQUE (realm, memory_id)
    )""",
    "CREATE INDEX IF NOT EXISTS records_scope_updated_idx ON records"
    "(realm, scope_kind, scope_key, status_kind, updated_at_ms DESC, created_at_ms DESC, rid DESC)",
    "CREATE INDEX IF NOT EXISTS records_scope_created_idx ON records"
    "(realm, scope_kind, scope_key, status_kind, created_at_ms)",
    "CREATE INDEX IF NOT EXISTS records_scope_hash_idx ON records(realm, scope_kind, scope_key, content_hash)",
    "CREATE INDEX IF NOT EXISTS records_supersedes_idx ON records(realm, supersedes)",
    "CREATE INDEX IF NOT EXISTS records_status_idx ON records(realm, status_kind, created_at_ms)",
    _realm_keyed_table("proposals", "proposal_id", ddl.PROPOSAL_COLUMNS),
    f"""CREATE TABLE IF NOT EXISTS audit (
        {_REALM_COL},
        audit_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        {ddl.columns(ddl.AUDIT_COLUMNS, "BIGINT")}
    )""",
    "CREATE INDEX IF NOT EXISTS audit_realm_idx ON audit(realm, audit_id)",
    "CREATE INDEX IF NOT EXISTS audit_memory_idx ON audit(realm, memory_id, audit_id)",
    "CREATE INDEX IF NOT EXISTS audit_token_idx ON audit(realm, stage_token)",
    f"""CREATE TABLE IF NOT EXISTS stage (
        {_REALM_COL},
        token TEXT NOT NULL,
        batch TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        PRIMARY KEY (realm, token)
    )""",
    f"""CREATE TABLE IF NOT EXISTS injections (
        {_REALM_COL},
        injection_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        record_id TEXT NOT NULL,
        identity TEXT NOT NULL,
        session_key TEXT,
        surface TEXT NOT NULL CHECK (surface IN ('build', 'turn')),
        at_ms BIGINT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS injections_record_idx ON injections(realm, record_id, at_ms)",
    f"""CREATE TABLE IF NOT EXISTS pending_harvests (
        {_REALM_COL},
        identity TEXT NOT NULL,
        session_key TEXT,
        cause TEXT NOT NULL,
        retired_at_ms BIGINT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        PRIMARY KEY (realm, identity, retired_at_ms)
    )""",
    _realm_keyed_table("pending_promotions", "pending_id", ddl.PENDING_PROMOTION_COLUMNS),
    "CREATE INDEX IF NOT EXISTS pending_promotions_record_idx ON pending_promotions(realm, record_id, status)",
    f"""CREATE TABLE IF NOT EXISTS dream_runs (
        {_REALM_COL},
        run_id TEXT NOT NULL,
        partition_label TEXT NOT NULL DEFAULT 'realm',
        started_at_ms BIGINT NOT NULL,
        completed_at_ms BIGINT NOT NULL,
        ops_committed INTEGER NOT NULL,
        detail TEXT NOT NULL,
        PRIMARY KEY (realm, run_id)
    )""",
    "CREATE INDEX IF NOT EXISTS dream_runs_completed ON dream_runs(realm, completed_at_ms DESC)",
    f"""CREATE TABLE IF NOT EXISTS dream_audit_verdicts (
        {_REALM_COL},
        run_id TEXT NOT NULL,
        record_id TEXT NOT NULL,
        verdict TEXT NOT NULL,
        rationale TEXT,
        created_at_ms BIGINT NOT NULL,
        resolved_at_ms BIGINT,
        resolution TEXT,
        PRIMARY KEY (realm, run_id, record_id)
    )""",
    "CREATE INDEX IF NOT EXISTS dream_audit_verdicts_record_idx "
    "ON dream_audit_verdicts(realm, record_id, resolved_at_ms)",
    """CREATE TABLE IF NOT EXISTS records_fts (
        rid BIGINT PRIMARY KEY REFERENCES records(rid) ON DELETE CASCADE,
        realm TEXT NOT NULL,
        scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        doc tsvector NOT NULL,
        tf jsonb NOT NULL,
        ntok INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS records_fts_doc_idx ON records_fts USING gin (doc)",
    "CREATE INDEX IF NOT EXISTS records_fts_scope_idx ON records_fts(realm, scope_kind, scope_key)",
    """CREATE TABLE IF NOT EXISTS fts_stats (
        realm TEXT PRIMARY KEY,
        n_rows BIGINT NOT NULL,
        n_tokens BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS fts_terms (
        realm TEXT NOT NULL,
        term TEXT NOT NULL,
        df BIGINT NOT NULL,
        PRIMARY KEY (realm, term)
    )""",
]


_SCOPE_STATISTICS = [
    "DROP TABLE IF EXISTS fts_stats",
    "DROP TABLE IF EXISTS fts_terms",
    """CREATE TABLE fts_stats (
        realm TEXT NOT NULL,
        scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        n_rows BIGINT NOT NULL,
        n_tokens BIGINT NOT NULL,
        PRIMARY KEY (realm, scope_kind, scope_key)
    )""",
    """CREATE TABLE fts_terms (
        realm TEXT NOT NULL,
        scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        term TEXT NOT NULL,
        df BIGINT NOT NULL,
        PRIMARY KEY (realm, scope_kind, scope_key, term)
    )""",
]


def _realm_view(schema: str, table: str) -> str:
    base, views = quote_ident(schema), quote_ident(schema + "_realm")
    col_list = ", ".join(_view_columns(table))
    return (
        f"CREATE OR REPLACE VIEW {views}.{table} AS SELECT {col_list} FROM {base}.{table} "
        f"WHERE realm = current_setting('{REALM_SETTING}') WITH CASCADED CHECK OPTION"
    )


#: Columns added to a table after its view was first created, with the migration adding them: a view
#: created by an earlier migration lists the table's first columns only, and the migration adding a
#: column replaces the view with every column (``CREATE OR REPLACE VIEW`` may append columns).
_LATER_COLUMNS: dict[str, tuple[tuple[int, str], ...]] = {
    "records": ((8, "metadata"), (9, "expires_at_ms")),
    "erasures": ((12, "folded_hash"), (15, "casefolded_hash"), (22, "skeleton_hash")),
}


def _view_columns(table: str, upto: int = 0) -> tuple[str, ...]:
    """The columns of ``table``'s realm view once migration ``upto`` ran (``0``: the first columns only)."""
    later = tuple(col for version, col in _LATER_COLUMNS.get(table, ()) if version <= upto)
    return (*TABLES[table], *later)


def _record_metadata(schema: str) -> list[str]:
    """A record's ``metadata`` JSON object (canonical JSON text; ``{}`` for every record written before)."""
    base, views = quote_ident(schema), quote_ident(schema + "_realm")
    return [
        "ALTER TABLE records ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}'",
        f"CREATE OR REPLACE VIEW {views}.records AS SELECT {', '.join(_view_columns('records', 8))} "
        f"FROM {base}.records WHERE realm = current_setting('{REALM_SETTING}') WITH CASCADED CHECK OPTION",
    ]


def _realm_views(schema: str) -> list[str]:
    views = quote_ident(schema + "_realm")
    out = [f"CREATE SCHEMA IF NOT EXISTS {views}"]
    out.extend(_realm_view(schema, table) for table in TABLES if table not in _LATER_TABLES)
    return out


def _pending_forgets(schema: str) -> list[str]:
    """A forget held for review (the record stays active until a reviewer decides)."""
    return [
        _realm_keyed_table("pending_forgets", "forget_id", ddl.PENDING_FORGET_COLUMNS),
        "CREATE INDEX IF NOT EXISTS pending_forgets_record_idx ON pending_forgets(realm, memory_id, status)",
        "CREATE INDEX IF NOT EXISTS pending_forgets_status_idx ON pending_forgets(realm, status, created_at_ms DESC)",
        _realm_view(schema, "pending_forgets"),
    ]


def _erasures(schema: str) -> list[str]:
    """The erasure register (ids, scopes and content hashes of erased content, never content) and the
    installation's keys (the export signing key: one database is one installation, whichever gateway
    or state directory reaches it)."""
    return [
        _realm_keyed_table("erasures", "memory_id", ddl.ERASURE_COLUMNS),
        "CREATE INDEX IF NOT EXISTS erasures_hash_idx ON erasures(realm, content_hash, scope_kind, scope_key)",
        _realm_view(schema, "erasures"),
        """CREATE TABLE IF NOT EXISTS installation_keys (
            name TEXT PRIMARY KEY,
            secret TEXT NOT NULL,
            created_at_ms BIGINT NOT NULL
        )""",
    ]


def _erasure_texts(schema: str) -> list[str]:
    """The field-level erasure register (as SQLite's step 23: hashes of an erased record's body and
    description each on its own, the scope, the id; never the text), keyed by the whole row, hash first
    after the realm (a write's lookup), and its realm view."""
    return [
        f"""CREATE TABLE IF NOT EXISTS erasure_texts (
        {_REALM_COL},
        {ddl.columns(ddl.ERASURE_TEXT_COLUMNS, "BIGINT")},
        PRIMARY KEY (realm, hash, scope_kind, scope_key, memory_id)
    )""",
        _realm_view(schema, "erasure_texts"),
    ]


def _record_expiry(schema: str) -> list[str]:
    """``records.expires_at_ms`` (epoch ms, ``NULL`` = never), the realm view showing it, and the index of
    active records that may expire, in expiry order (the sweep's and recall's lookup of due records)."""
    base, views = quote_ident(schema), quote_ident(schema + "_realm")
    return [
        "ALTER TABLE records ADD COLUMN IF NOT EXISTS expires_at_ms BIGINT",
        f"CREATE OR REPLACE VIEW {views}.records AS SELECT {', '.join(_view_columns('records', 9))} FROM {base}.records "
        f"WHERE realm = current_setting('{REALM_SETTING}') WITH CASCADED CHECK OPTION",
        "CREATE INDEX IF NOT EXISTS records_expiry_idx ON records(realm, expires_at_ms) "
        "WHERE status_kind = 'active' AND expires_at_ms IS NOT NULL",
    ]


def _erasures_view(schema: str, step: int) -> str:
    """The realm view of ``erasures`` with the columns it has after ``step`` (each step adding a hash
    column shows it in the view)."""
    base, views = quote_ident(schema), quote_ident(schema + "_realm")
    return (f"CREATE OR REPLACE VIEW {views}.erasures AS SELECT {', '.join(_view_columns('erasures', step))} "
            f"FROM {base}.erasures WHERE realm = current_setting('{REALM_SETTING}') WITH CASCADED CHECK OPTION")


def _erasure_folded_hashes(schema: str) -> list[str]:
    """``erasures.folded_hash`` (as SQLite's step 12: the content hash over the whitespace-folded title and
    body; ``NULL`` for an erasure registered before), the realm view showing it, and the index of the
    lookup of a write's hashes (``shared_ddl.ERASURE_MATCH_HASH``)."""
    return [
        "ALTER TABLE erasures ADD COLUMN IF NOT EXISTS folded_hash TEXT",
        _erasures_view(schema, 12),
        f"CREATE INDEX IF NOT EXISTS erasures_match_idx ON erasures(realm, ({ddl.ERASURE_MATCH_HASH}), scope_kind, scope_key)",
    ]


def _erasure_casefolded_hashes(schema: str) -> list[str]:
    """``erasures.casefolded_hash`` (as SQLite's step 15: the content hash over the title and body folded
    also for compatibility forms and case, fold 2; ``NULL`` for an erasure registered before), the realm
    view showing it, and the index of the lookup of a write's hashes (``shared_ddl.ERASURE_LOOKUP_HASH``)."""
    return [
        "ALTER TABLE erasures ADD COLUMN IF NOT EXISTS casefolded_hash TEXT",
        _erasures_view(schema, 15),
        f"CREATE INDEX IF NOT EXISTS erasures_lookup_idx ON erasures(realm, ({ddl.ERASURE_LOOKUP_HASH}), "
        "scope_kind, scope_key)",
    ]


def _erasure_skeleton_hashes(schema: str) -> list[str]:
    """``erasures.skeleton_hash`` (as SQLite's step 22: the content hash over the title and body with
    look-alike letters read as Latin ones, fold 3; ``NULL`` for an erasure registered before), the realm
    view showing it, and the index a write's hashes are also looked up by (``shared_ddl.ERASURE_SKELETON_HASH``)."""
    return [
        "ALTER TABLE erasures ADD COLUMN IF NOT EXISTS skeleton_hash TEXT",
        _erasures_view(schema, 22),
        f"CREATE INDEX IF NOT EXISTS erasures_skeleton_idx ON erasures(realm, {ddl.ERASURE_SKELETON_HASH}, "
        "scope_kind, scope_key)",
    ]


def _scope_rows(schema: str) -> list[str]:
    """Rows per (realm, scope), any status, kept in the writing transaction by statement-level triggers over
    the statement's transition table (one upsert per scope a statement touched, not per row), and filled from
    the rows already stored: the count ``[agent_memory] identity_record_limit`` bounds. A stored record's scope
    never changes (updates write its state only), so no update trigger. The functions name the table with
    its schema: they run under whatever search path the writing connection has."""
    table = f"{quote_ident(schema)}.scope_rows"
    return [
        """CREATE TABLE IF NOT EXISTS scope_rows (
            realm TEXT NOT NULL,
            scope_kind TEXT NOT NULL,
            scope_key TEXT NOT NULL,
            n BIGINT NOT NULL,
            PRIMARY KEY (realm, scope_kind, scope_key)
        )""",
        f"""CREATE OR REPLACE FUNCTION scope_rows_added() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO {table} AS s (realm, scope_kind, scope_key, n)
            SELECT realm, scope_kind, scope_key, count(*) FROM added GROUP BY realm, scope_kind, scope_key
            ON CONFLICT (realm, scope_kind, scope_key) DO UPDATE SET n = s.n + EXCLUDED.n;
            RETURN NULL;
        END $$""",
        f"""CREATE OR REPLACE FUNCTION scope_rows_removed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE {table} AS s SET n = s.n - d.c
            FROM (SELECT realm, scope_kind, scope_key, count(*) AS c FROM removed
                  GROUP BY realm, scope_kind, scope_key) AS d
            WHERE s.realm = d.realm AND s.scope_kind = d.scope_kind AND s.scope_key = d.scope_key;
            RETURN NULL;
        END $$""",
        "DROP TRIGGER IF EXISTS scope_rows_insert ON records",
        "CREATE TRIGGER scope_rows_insert AFTER INSERT ON records REFERENCING NEW TABLE AS added "
        "FOR EACH STATEMENT EXECUTE FUNCTION scope_rows_added()",
        "DROP TRIGGER IF EXISTS scope_rows_delete ON records",
        "CREATE TRIGGER scope_rows_delete AFTER DELETE ON records REFERENCING OLD TABLE AS removed "
        "FOR EACH STATEMENT EXECUTE FUNCTION scope_rows_removed()",
        # filled once the triggers hold the table's write lock: no write lands between the count and them
        "DELETE FROM scope_rows",
        "INSERT INTO scope_rows(realm, scope_kind, scope_key, n) SELECT realm, scope_kind, scope_key, count(*) "
        "FROM records GROUP BY realm, scope_kind, scope_key",
    ]


def _proposal_scope_rows(schema: str) -> list[str]:
    """An identity's open proposals (pending or held, whatever scope they target) counted in its identity
    scope's ``scope_rows`` (step 14), so ``[agent_memory] identity_record_limit`` bounds them too: statement
    triggers on ``proposals`` move the proposer's count by the open rows a statement added and removed (an
    update's old rows out, its new rows in: a decision that closes a proposal gives its row back). The proposer
    is the author's ``identity`` when the author is an agent (``proposal_proposer``; ``NULL`` otherwise and
    for an unreadable author, never an error). Refilled from the records and open proposals stored."""
    q = quote_ident(schema)
    table, proposer = f"{q}.scope_rows", f"{q}.proposal_proposer"

    def moved(sources: list[tuple[str, int]]) -> str:
        parts = " UNION ALL ".join(
            f"SELECT realm, {proposer}(author) AS who, {step} AS d FROM {name} WHERE status IN ('pending', 'held')"
            for name, step in sources)
        return f"""CREATE OR REPLACE FUNCTION scope_rows_proposals_{"_".join(n for n, _ in sources)}() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO {table} AS s (realm, scope_kind, scope_key, n)
            SELECT realm, 'identity', who, sum(d) FROM ({parts}) AS m WHERE who IS NOT NULL
            GROUP BY realm, who HAVING sum(d) <> 0
            ON CONFLICT (realm, scope_kind, scope_key) DO UPDATE SET n = s.n + EXCLUDED.n;
            RETURN NULL;
        END $$"""

    return [
        """CREATE OR REPLACE FUNCTION proposal_proposer(author TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
        DECLARE j jsonb;
        BEGIN
            j := author::jsonb;
            IF jsonb_typeof(j) = 'object' AND j->>'author' = 'agent' AND jsonb_typeof(j->'identity') = 'string' THEN
                RETURN j->>'identity';
            END IF;
            RETURN NULL;
        EXCEPTION WHEN others THEN
            RETURN NULL;
        END $$""",
        moved([("added", 1)]),
        moved([("removed", -1)]),
        moved([("removed", -1), ("added", 1)]),
        "DROP TRIGGER IF EXISTS scope_rows_proposal_insert ON proposals",
        "CREATE TRIGGER scope_rows_proposal_insert AFTER INSERT ON proposals REFERENCING NEW TABLE AS added "
        "FOR EACH STATEMENT EXECUTE FUNCTION scope_rows_proposals_added()",
        "DROP TRIGGER IF EXISTS scope_rows_proposal_delete ON proposals",
        "CREATE TRIGGER scope_rows_proposal_delete AFTER DELETE ON proposals REFERENCING OLD TABLE AS removed "
        "FOR EACH STATEMENT EXECUTE FUNCTION scope_rows_proposals_removed()",
        "DROP TRIGGER IF EXISTS scope_rows_proposal_update ON proposals",
        "CREATE TRIGGER scope_rows_proposal_update AFTER UPDATE ON proposals REFERENCING OLD TABLE AS removed "
        "NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION scope_rows_proposals_removed_added()",
        # refilled once the triggers hold both tables' write locks: no write lands between the count and them
        "LOCK TABLE records IN SHARE ROW EXCLUSIVE MODE",
        "DELETE FROM scope_rows",
        "INSERT INTO scope_rows(realm, scope_kind, scope_key, n) SELECT realm, scope_kind, scope_key, sum(n) FROM ("
        "SELECT realm, scope_kind, scope_key, count(*) AS n FROM records GROUP BY realm, scope_kind, scope_key "
        "UNION ALL SELECT realm, 'identity', proposal_proposer(author), count(*) FROM proposals "
        "WHERE status IN ('pending', 'held') AND proposal_proposer(author) IS NOT NULL "
        "GROUP BY realm, proposal_proposer(author)) AS c GROUP BY realm, scope_kind, scope_key",
    ]


def migrations(schema: str) -> list[tuple[int, str, Sequence[str | Work]]]:
    """``(version, name, statements)`` of domain :data:`SCHEMA_DOMAIN` for ``schema``, applied in order.

    Statements use unqualified table names (run with ``search_path`` = ``schema``).
    """
    return [
        (1, "base-schema", list(_BASE)),
        (2, "realm-views", _realm_views(schema)),
        (3, "panel-listing-indexes", [
            'CREATE INDEX IF NOT EXISTS records_realm_updated_idx '
            'ON records (realm, updated_at_ms DESC, memory_id COLLATE "C" DESC)',
            'CREATE INDEX IF NOT EXISTS records_realm_status_created_idx '
            'ON records (realm, status_kind, created_at_ms DESC, memory_id COLLATE "C" DESC)',
            "CREATE INDEX IF NOT EXISTS injections_realm_at_idx ON injections (realm, at_ms DESC, injection_id DESC)",
        ]),
        (4, "pending-forgets", _pending_forgets(schema)),
        # The duplicate check, recreation window and review's duplicate lookup name realm, scope, status
        # and hash by equality and read the oldest first: this index answers them with every equality
        # column and the order, so no statistics can make a scope walk look cheaper (the plans are
        # asserted in the tests). The ranked half of the working-set manifest gets its own partial index.
        (5, "hot-query-indexes", [
            "CREATE INDEX IF NOT EXISTS records_scope_status_hash_idx ON records"
            "(realm, scope_kind, scope_key, status_kind, content_hash, created_at_ms, rid)",
            "CREATE INDEX IF NOT EXISTS records_scope_ranked_idx ON records"
            "(realm, scope_kind, scope_key, working_set_rank, updated_at_ms DESC, rid DESC) "
            "WHERE status_kind = 'active' AND working_set_rank IS NOT NULL",
            "DROP INDEX IF EXISTS records_scope_hash_idx",
        ]),
        (6, "erasure-register", _erasures(schema)),
        # bm25's statistics per scope (the ranking of one scope's recall reads nothing of another's):
        # the realm-keyed tables of the base schema are replaced, and refilled by the full-text rebuild the
        # new layout version triggers.
        (7, "scope-ranking-statistics", list(_SCOPE_STATISTICS)),
        (8, "record-metadata", _record_metadata(schema)),
        # Version 8 is "record-metadata"; steps are applied by version, so either may arrive first.
        (9, "record-expiry", _record_expiry(schema)),
        # Recall's write-order neighbours seek (created_at_ms, rid) past an anchor: records of one batch
        # share their creation time, and without rid in the index every anchor walked its whole batch
        # (measured: 3 ms an anchor at 100,000 records, 0.1 ms with it). The index it replaces is its prefix.
        (10, "neighbour-seek-index", [
            "CREATE INDEX IF NOT EXISTS records_scope_created_rid_idx ON records"
            "(realm, scope_kind, scope_key, status_kind, created_at_ms, rid)",
            "DROP INDEX IF EXISTS records_scope_created_idx",
        ]),
        # No step 11 here: SQLite's step 11 makes its audit token index partial; PostgreSQL keeps the whole
        # index, since its planner was seen to prefer a walk of the primary key over the partial index for a
        # review's token lookup (ORDER BY audit_id LIMIT 1), a scan of the whole audit table.
        (12, "erasure-folded-hashes", _erasure_folded_hashes(schema)),
        # No step 13 here: SQLite's step 13 is its records generation (recall's view cache, SQLite only).
        (14, "scope-rows", _scope_rows(schema)),
        (15, "erasure-casefolded-hashes", _erasure_casefolded_hashes(schema)),
        # No step 16 here: SQLite's step 16 widens its records generation's trigger (SQLite only, as step 13).
        (17, "proposal-scope-rows", _proposal_scope_rows(schema)),
        (18, "injection-identity-index", [
            "CREATE INDEX IF NOT EXISTS injections_identity_idx ON injections (realm, identity, injection_id)",
        ]),
        # Content hashes read text in NFC (``hashing.content_hash``): the rows whose title or body is not in
        # NFC are hashed again, so a canonically equivalent write finds them as its duplicate.
        (19, "canonical-content-hashes", [canonical_content_hashes]),
        # No steps 20 and 21 here: SQLite's scope generations (recall's view cache, SQLite only, as step 13).
        (22, "erasure-skeleton-hashes", _erasure_skeleton_hashes(schema)),
        (23, "erasure-texts", _erasure_texts(schema)),
    ]


MIGRATIONS = migrations
"""Alias of :func:`migrations` (the versions are the same for every schema name)."""

#: Domain of the session-state tables shared by every gateway on one database (taint, budgets, nonces).
SESSION_STATE_DOMAIN = "session-state"


def session_state_migrations() -> list[tuple[int, str, list[str]]]:
    """``(version, name, statements)`` of domain :data:`SESSION_STATE_DOMAIN`: the tables of
    :func:`meta_memory.agent_memory.store.schema.session_state_statements` with ``BIGINT`` times
    (unqualified names; applied with ``search_path`` = the store's schema)."""
    from meta_memory.agent_memory.store.schema import (
        session_state_identity_index,
        session_state_statements,
        session_state_unreported,
    )

    return [(1, "session-state-tables", session_state_statements(bigint="BIGINT")),
            (2, "session-state-unreported", session_state_unreported(bigint="BIGINT")),
            (3, "session-state-identity-index", session_state_identity_index())]


def quote_ident(name: str) -> str:
    """A PostgreSQL quoted identifier (``"`` doubled). Raises ``ValueError`` for an empty name or a NUL."""
    if not name or "\x00" in name:
        raise ValueError("identifier must be a non-empty string without NUL")
    return '"' + name.replace('"', '""') + '"'


def fts_fingerprint() -> str:
    """A short hash of what the full-text rows hold: recall's index version, column weights and our layout."""
    text = json.dumps([fts.INDEX_VERSION, list(fts.COLUMNS), list(fts.BM25_WEIGHTS), FTS_LAYOUT_VERSION])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def lexeme(token: str) -> str:
    """The index lexeme of one token: the token itself, or ``#`` + a digest when it exceeds
    :data:`MAX_LEXEME_BYTES` (tokens never contain ``#``, so the two cannot collide)."""
    raw = token.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_LEXEME_BYTES:
        return token
    return "#" + hashlib.sha256(raw).hexdigest()


def fts_row(title: str, description: str, body: str, tags: Sequence[str]) -> tuple[list[str], dict[str, float], int]:
    """The full-text row of one record: ``(distinct lexemes, {lexeme: weighted frequency}, token count)``.

    The weighted frequency is FTS5's bm25 ``aFreq``: each occurrence counts the
    weight of its column (:data:`meta_memory.recall.fts.BM25_WEIGHTS`). The
    token count is FTS5's ``xColumnSize(-1)``: all tokens of all columns.
    """
    doc = fts.document(title, description, body, list(tags))
    freq: dict[str, float] = {}
    ntok = 0
    for column, weight in zip(fts.COLUMNS, fts.BM25_WEIGHTS, strict=True):
        text = doc[column]
        if not text:
            continue
        for token in text.split(" "):
            if not token:
                continue
            ntok += 1
            lex = lexeme(token)
            freq[lex] = freq.get(lex, 0.0) + weight
    return sorted(freq), freq, ntok


def tsquery_literal(lexemes: Sequence[str]) -> str:
    """A ``tsquery`` input string: every lexeme quoted (``'`` and ``\\`` doubled), joined by ``|``.

    The text is cast with ``::tsquery``, which does not run a parser, so no query
    text is ever read as tsquery syntax (``&``, ``!``, ``:*``, ``<->``).
    """
    return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)
