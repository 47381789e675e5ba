"""Shared helpers for the recall tests: records written into a real store, on SQLite and PostgreSQL.

A test taking ``index`` (a :class:`~store_index.StoreIndex` over a fresh store) runs once per search
path of the stores: SQLite with every candidate query answered by FTS5 (``sqlite-fts5``), SQLite with
its in-process index answering (``sqlite-index``: built for any realm size, caught up before each
read), and PostgreSQL (``postgres``). The stores come from the store contract suite's
``backend``/``open_store`` fixtures: the PostgreSQL run is marked ``postgres`` and skipped, or failed
under ``CI``, without a server.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from contract.conftest import clock, open_store
from contract.pgsupport import require_postgres
from meta_memory.agent_memory.store.base import AgentMemoryStore
from meta_memory.clock import ManualClock

from .store_index import Rec, StoreIndex

__all__ = ["DAY_MS", "IDENTITY", "T0", "backend", "clock", "open_store", "rec"]

IDENTITY = "luka"
T0 = 1_700_000_000_000
DAY_MS = 86_400_000


def rec(
    memory_id: str,
    title: str,
    body: str,
    *,
    tags: tuple[str, ...] = (),
    description: str = "",
    at: int = T0,
    updated: int | None = None,
    scope: str = IDENTITY,
    status: str = "active",
) -> Rec:
    """A record of identity ``scope`` created at ``at`` (updated at ``updated`` or ``at``)."""
    return Rec(
        memory_id=memory_id,
        title=title,
        body=body,
        description=description,
        tags=tags,
        created_at_ms=at,
        updated_at_ms=at if updated is None else updated,
        scope=scope,
        status=status,
    )


#: ``(backend, in-process index)`` per search path, by id
SEARCH_PATHS = [
    pytest.param("sqlite", False, id="sqlite-fts5"),
    pytest.param("sqlite", True, id="sqlite-index"),
    pytest.param("postgres", False, id="postgres", marks=pytest.mark.postgres),
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test taking ``index`` once per search path (``SEARCH_PATHS``)."""
    if "index" in metafunc.fixturenames:
        metafunc.parametrize(("backend", "in_process_index"), SEARCH_PATHS, indirect=["backend"])


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The store backend of the test's search path (the contract suite's ``open_store`` reads it)."""
    if request.param == "postgres":
        require_postgres()
    return str(request.param)


@pytest.fixture
def index(open_store: Callable[..., AgentMemoryStore], clock: ManualClock, in_process_index: bool) -> StoreIndex:
    """A fresh store of the parametrised search path, for writing records with given ids and times."""
    return StoreIndex(open_store(), clock, in_process_index=in_process_index)
