"""Applying a domain's numbered schema migrations, the same on both store backends.

Each backend keeps a ``schema_migrations(domain, version, name, applied_at_ms)``
table; a domain's steps are ``(version, name, statements)`` triples, and a step
is applied once: its statements run and its row is recorded, inside the
caller's migration transaction. A statement is SQL text, or a :data:`Work`: a function
given the connection's ``execute`` and the dialect, for a step whose rows need
Python (:func:`canonical_content_hashes`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from meta_memory.agent_memory.hashing import content_hash
from meta_memory.agent_memory.store.dialect import Dialect

__all__ = ["Work", "apply_domain_steps", "canonical_content_hashes"]

#: A step's statement that is Python work: called with the connection's ``execute`` and the dialect.
Work = Callable[[Callable[..., Any], Dialect], None]


def apply_domain_steps(
    execute: Callable[..., Any],
    dialect: Dialect,
    domain: str,
    steps: Sequence[tuple[int, str, Sequence[str | Work]]],
    now_ms: int,
) -> list[str]:
    """Apply the steps of ``domain`` not yet recorded; return their names in order.

    ``execute(sql, params=())`` is the connection's execute (``sqlite3`` or psycopg);
    ``dialect`` spells the placeholders; ``now_ms`` (epoch ms) is recorded as
    ``applied_at_ms``. Errors are the driver's own; the caller's transaction
    decides what is kept.
    """
    done = {r[0] for r in execute(dialect.sql("SELECT version FROM schema_migrations WHERE domain = ?"), (domain,))}
    applied: list[str] = []
    for version, name, statements in steps:
        if version in done:
            continue
        for stmt in statements:
            if isinstance(stmt, str):
                execute(stmt)
            else:
                stmt(execute, dialect)
        execute(
            dialect.sql("INSERT INTO schema_migrations(domain, version, name, applied_at_ms) VALUES (?, ?, ?, ?)"),
            (domain, version, name, now_ms),
        )
        applied.append(name)
    return applied


def canonical_content_hashes(execute: Callable[..., Any], dialect: Dialect) -> None:
    """Schema step 19 (both backends): the ``content_hash`` of every record whose title or body is not in
    Unicode normalisation form C computed again, over their NFC forms
    (:func:`meta_memory.agent_memory.hashing.content_hash` since this step), so a canonically equivalent
    write finds it as its duplicate; a held forget's copy of the record's hash moves with it. Only rows
    holding a non-ASCII character are read (their byte length differs from their character length); the
    text itself is not changed."""
    where = " OR ".join(f"{dialect.octets.format(c)} <> length({c})" for c in ("title", "body"))
    changed: list[tuple[str, str, int]] = []
    for rid, title, body, stored in execute(f"SELECT rid, title, body, content_hash FROM records WHERE {where}"):
        fresh = content_hash(title, body)
        if fresh != stored:
            changed.append((fresh, stored, rid))
    for fresh, stored, rid in changed:
        execute(dialect.sql("UPDATE records SET content_hash = ? WHERE rid = ?"), (fresh, rid))
        execute(dialect.sql("UPDATE pending_forgets SET content_hash = ? WHERE content_hash = ? AND memory_id = "
                            "(SELECT memory_id FROM records WHERE rid = ?)"), (fresh, stored, rid))
