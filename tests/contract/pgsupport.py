"""PostgreSQL for tests: the DSN, an availability probe and throw-away schemas.

The server is ``META_MEMORY_TEST_DSN`` (default: the local trust-auth server,
database ``test``). When it cannot be reached, PostgreSQL cases FAIL if the
``CI`` environment variable is set and are skipped (with the reason) otherwise.
Without the ``postgres`` extra (psycopg) they are skipped with its install hint.

The tests' connections do not wait for the server to flush each commit to disk (``synchronous_commit=off``
for their sessions, the server's setting unchanged): a commit is still atomic and seen at once by every
other connection, and a gateway or client killed mid-test loses nothing acknowledged; only a crash of the
server itself, which no test causes, could lose the last commits.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import pytest

from extras import require_extra

if TYPE_CHECKING:
    from meta_memory.agent_memory.store.postgres import PostgresAgentMemoryStore

#: The session settings every test connection carries in its DSN's ``options``.
SESSION_OPTIONS = "-c synchronous_commit=off"


def with_options(dsn: str, options: str) -> str:
    """``dsn`` with ``options`` (``-c name=value`` settings) added after those it already has, in the form it
    was written in (a ``postgresql://`` URL stays one: tests put a password into it to see it hidden)."""
    if dsn.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(dsn)
        query = parse_qsl(parts.query, keep_blank_values=True)
        present = " ".join(value for key, value in query if key == "options")
        query = [(key, value) for key, value in query if key != "options"]
        query.append(("options", f"{present} {options}" if present else options))
        return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))
    if re.search(r"\boptions\s*=", dsn) is None:
        return f"{dsn} options='{options}'"
    present_kv = re.search(r"\boptions\s*=\s*'((?:[^'\\]|\\.)*)'", dsn)
    if present_kv is None:  # an unquoted value (one word): quoted, with ``options`` after it
        bare = re.search(r"\boptions\s*=\s*([^\s']+)", dsn)
        if bare is None:
            raise ValueError("the test DSN's options value is neither quoted nor one word")
        return f"{dsn[:bare.start(1)]}'{bare.group(1)} {options}'{dsn[bare.end(1):]}"
    return f"{dsn[:present_kv.start(1)]}{present_kv.group(1)} {options}{dsn[present_kv.end(1):]}"


#: The test server's DSN, as the tests' stores, gateways and direct connections use it.
DSN = with_options(os.environ.get("META_MEMORY_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/test"),
                   SESSION_OPTIONS)


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
    """``DSN`` plus ``-c search_path=<schema>`` in its ``options``: how a gateway config names the schema."""
    return with_options(DSN, f"-c search_path={schema}")
