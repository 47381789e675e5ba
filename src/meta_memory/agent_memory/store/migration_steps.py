"""Applying a domain's numbered schema migrations, the same on both store backends.

Each backend keeps a ``schema_migrations(domain, version, name, applied_at_ms)``
table; a domain's steps are ``(version, name, statements)`` triples, and a step
is applied once: its statements run and its row is recorded, inside the
caller's migration transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from meta_memory.agent_memory.store.dialect import Dialect

__all__ = ["apply_domain_steps"]


def apply_domain_steps(
    execute: Callable[..., Any],
    dialect: Dialect,
    domain: str,
    steps: Sequence[tuple[int, str, Sequence[str]]],
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
            execute(stmt)
        execute(
            dialect.sql("INSERT INTO schema_migrations(domain, version, name, applied_at_ms) VALUES (?, ?, ?, ?)"),
            (domain, version, name, now_ms),
        )
        applied.append(name)
    return applied
