"""Column definitions that the SQLite and PostgreSQL schemas share, written once.

Each is a fragment of a ``CREATE TABLE`` body (no leading or trailing comma) with
``{int}`` where the backend's wide integer type goes: ``INTEGER`` on SQLite
(64-bit already), ``BIGINT`` on PostgreSQL. Keys and the PostgreSQL realm column
stay with each backend's schema (:mod:`.schema`, :mod:`.pg_schema`).
"""

from __future__ import annotations

__all__ = [
    "RECORD_COLUMNS",
    "PROPOSAL_COLUMNS",
    "AUDIT_COLUMNS",
    "PENDING_FORGET_COLUMNS",
    "PENDING_PROMOTION_COLUMNS",
    "ERASURE_COLUMNS",
    "ERASURE_TEXT_COLUMNS",
    "columns",
]

#: ``records`` after ``rid`` and ``memory_id``.
RECORD_COLUMNS = """scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        body TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        provenance TEXT NOT NULL,
        trust TEXT NOT NULL,
        status_kind TEXT NOT NULL,
        status_detail TEXT,
        supersedes TEXT,
        derived_from TEXT NOT NULL DEFAULT '[]',
        working_set_rank {int},
        rank_set_at_ms {int},
        content_hash TEXT NOT NULL,
        created_at_ms {int} NOT NULL,
        updated_at_ms {int} NOT NULL,
        usage_stats TEXT NOT NULL DEFAULT '{{}}',
        tombstoned_at_ms {int},
        ever_quarantined INTEGER NOT NULL DEFAULT 0"""

#: ``proposals`` after ``proposal_id``.
PROPOSAL_COLUMNS = """scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        record TEXT NOT NULL,
        author TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        created_at_ms {int} NOT NULL,
        taint TEXT"""

#: ``audit`` after ``audit_id``.
AUDIT_COLUMNS = """stage_token TEXT NOT NULL,
        op_index INTEGER NOT NULL,
        op_kind TEXT NOT NULL,
        memory_id TEXT,
        detail TEXT NOT NULL,
        applied_at_ms {int} NOT NULL"""

#: The audit rows SQLite's token index holds (``audit_token_idx``, a partial index since migration 11): those
#: of every batch but a plain write (a remember, an update, a forget, a batch applied whole: token
#: ``direct-...``), whose rows are read by record id and never by token. A lookup by a token that index may
#: hold names this predicate beside ``stage_token = ?``, so that SQLite may use it (``GLOB`` is case-sensitive
#: whatever ``PRAGMA case_sensitive_like`` says: a row matches it iff its token does not start ``direct-``).
AUDIT_TOKEN_INDEXED = "stage_token NOT GLOB 'direct-*'"


#: ``pending_forgets`` after ``forget_id``.
PENDING_FORGET_COLUMNS = """memory_id TEXT NOT NULL,
        scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        author TEXT NOT NULL,
        reason TEXT NOT NULL,
        session_key TEXT,
        status TEXT NOT NULL DEFAULT 'pending',
        created_at_ms {int} NOT NULL,
        resolved_at_ms {int},
        decision TEXT"""


#: ``pending_promotions`` after ``pending_id``.
PENDING_PROMOTION_COLUMNS = """stage_token TEXT NOT NULL,
        record_id TEXT NOT NULL,
        scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        rationale TEXT,
        status TEXT NOT NULL DEFAULT 'pending',
        created_at_ms {int} NOT NULL,
        resolved_at_ms {int}"""


#: ``erasures`` (the erasure register) after ``memory_id`` (a record's id, or an erased proposal's
#: ``prop-...`` id): the scope the content lived in and its content hash, never the content. Migration 12
#: (both backends) adds ``folded_hash TEXT`` (the hash of the whitespace-folded content, fold 1; ``NULL``
#: before), migration 15 ``casefolded_hash TEXT`` (the hash of the content folded also for compatibility
#: forms and case, fold 2; ``NULL`` before, and for a row an earlier release registers), migration 22
#: ``skeleton_hash TEXT`` (the hash of the content with look-alike letters read as Latin ones, fold 3;
#: ``NULL`` likewise).

#: What a write's hashes are looked up by in the erasure register (both backends index this expression):
#: a row's folded hash, or its content hash when it has none (registered before migration 12, or by a
#: gateway of an earlier release sharing the database).
ERASURE_MATCH_HASH = "COALESCE(folded_hash, content_hash)"
#: What a write's hashes are looked up by since migration 15 (both backends index it): a row's fold-2 hash,
#: else its fold-1 hash, else its content hash. A write sends its hashes (``hashing.erasure_hashes``);
#: content the row's finest fold matches has that fold's hash equal to the row's, so one seek per hash finds
#: every row :meth:`~meta_memory.agent_memory.erase.Erasure.matches` may match by those folds. The index
#: of :data:`ERASURE_MATCH_HASH` stays, for an earlier release sharing the database.
ERASURE_LOOKUP_HASH = "COALESCE(casefolded_hash, folded_hash, content_hash)"
#: Since migration 22 a write's hashes are also looked up by a row's fold-3 hash (both backends index the
#: column): fold 3 is not a function of fold 2's text (it reads capitals before case folding), so a row is
#: found by its fold-2 lookup hash or by its fold-3 hash, two index seeks per hash.
ERASURE_SKELETON_HASH = "skeleton_hash"
ERASURE_COLUMNS = """scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        erased_at_ms {int} NOT NULL"""


#: ``erasure_texts`` (the field-level erasure register, migration 22 on both backends): one row per hash of
#: an erased record's body or description on its own (``erase.field_hashes``: exact and each fold), the
#: scope it was erased from and the erased id; never the text. Keyed by the whole row (``hash`` first: a
#: write's lookup seeks its fields' hashes).
ERASURE_TEXT_COLUMNS = """hash TEXT NOT NULL,
        scope_kind TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        erased_at_ms {int} NOT NULL"""


def columns(fragment: str, integer: str) -> str:
    """``fragment`` with ``integer`` (``"INTEGER"`` or ``"BIGINT"``) as its wide integer type."""
    return fragment.format(int=integer)
