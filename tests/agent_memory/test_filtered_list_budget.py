"""A filtered list is held to the recall time budget (``recall_timeout_ms``): a filter of many conditions
that no record passes scans the identity's whole scope, and without a budget it holds a worker and a
reader for as long as the scope is large."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.errors import AgentMemoryError
from meta_memory.sdk import Meta

ID = "lister:main"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_options(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    if request.param == "sqlite":
        yield {}
        return
    from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema

    require_postgres()
    with throwaway_schema() as schema:
        yield {"store": "postgres", "dsn": dsn_with_schema(schema)}


def test_a_filtered_list_past_the_budget_stops_with_a_timeout(tmp_path: Path, store_options: dict[str, Any]) -> None:
    with Meta.builder().persistent_state(tmp_path / "s").agent_memory(recall_timeout_ms=20,
                                                                      **store_options).build() as h:
        for b in range(12):
            h.call("meta/agent_memory/remember_batch", {"identity": ID, "records": [
                {"title": f"note {b} {i}", "body": f"a note numbered {b * 500 + i}",
                 "metadata": {f"k{j}": f"v{(i + j) % 300}" for j in range(20)}} for i in range(500)]})
        nothing = {"$or": [{f"k{i % 20}": {"$in": [f"x{i}-{j}" for j in range(256)]}} for i in range(64)]}
        started = time.monotonic()
        with pytest.raises(AgentMemoryError) as exc:
            h.call("meta/agent_memory/list", {"identity": ID, "filter": nothing, "limit": 10})
        assert exc.value.reason == "timeout"
        assert time.monotonic() - started < 2.0
        # an unfiltered page, and a filter the index answers at once, are unaffected
        assert len(h.call("meta/agent_memory/list", {"identity": ID, "limit": 10})["records"]) == 10
