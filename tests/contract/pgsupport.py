"""PostgreSQL for tests: the DSN, an availability probe and throw-away schemas.

The server is ``META_MEMORY_TEST_DSN`` (default: the local trust-auth server,
database ``test``). When it cannot be reached, PostgreSQL cases FAIL if the
``CI`` environment variable is set and are skipped (with the reason) otherwise.
Without the ``postgres`` extra (psycopg) they are skipped with its install hint.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING

import pytest

from extras import require_extra

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

DSN = os.environ.get("META_MEMORY_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """``None`` when the test server answers, else why not."""
    import psycopg

    try:
        with psycopg.connect(DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at {DSN} is unreachable: {str(exc).strip()}"
    return None


def require_postgres() -> None:
    """Skip without the ``postgres`` extra; fail (under ``CI``) or skip when the test server is unreachable."""
    require_extra("postgres", "psycopg")
    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the PostgreSQL contract cases must run)")
    pytest.skip(reason)


def new_schema_name() -> str:
    """A fresh schema name, unique per call (tests can run concurrently)."""
    return f"mm_test_{secrets.token_hex(6)}"


@contextmanager
def throwaway_schema() -> Iterator[str]:
    """A schema name that is dropped (with its realm views) on exit."""
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    name = new_schema_name()
    try:
        yield name
    finally:
        PostgresAgentMemoryStore.drop_schema(DSN, name)


@contextmanager
def throwaway_store() -> Iterator[PostgresAgentMemoryStore]:
    """A PostgreSQL store in a fresh schema (skipped, or failed under CI, without a server), closed and its
    schema dropped on exit."""
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

    require_postgres()
    with throwaway_schema() as name:
        store = PostgresAgentMemoryStore(DSN, schema=name)
        try:
            yield store
        finally:
            store.close()


def dsn_with_schema(schema: str) -> str:
    """``DSN`` plus ``options=-c search_path=<schema>``: how a gateway config names the schema."""
    sep = "&" if "?" in DSN else "?"
    return f"{DSN}{sep}options=-c%20search_path%3D{schema}"
