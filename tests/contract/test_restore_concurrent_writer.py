"""A restore never lands a second active copy of content written while it runs, on SQLite and PostgreSQL.

An import plans its lines (present, conflicting, duplicate, fresh) and lands them a batch at a time; each
batch is read again by the same rules in the transaction that writes it. A writer remembering, while the
import runs, the content of a line not yet landed therefore leaves that content one active record: the
line is skipped as a duplicate (or, linked to by other lines, landed tombstoned) and the report names it.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.limits import MAX_BATCH_OPS
from meta_memory.portability import export_jsonl, import_jsonl
from meta_memory.portability.signing import ExportKey, LineSigner
from meta_memory.sdk import Meta, MetaBuilder

from .pgsupport import dsn_with_schema, throwaway_schema

ID = "lead:main"


@pytest.fixture
def builder(backend: str, tmp_path: Path) -> Iterator[Callable[[str], MetaBuilder]]:
    """An embedded runtime on the parametrised backend; ``state`` names the installation (each its own
    state directory and, on PostgreSQL, its own schema)."""
    schemas: dict[str, str] = {}

    def make(state: str) -> MetaBuilder:
        b = Meta.builder().persistent_state(tmp_path / state)
        if backend == "postgres":
            return b.agent_memory(store="postgres", dsn=dsn_with_schema(schemas[state]))
        return b

    if backend == "sqlite":
        yield make
        return
    with throwaway_schema() as a, throwaway_schema() as b:
        schemas.update(source=a, target=b)
        yield make


def _active(h: Any) -> list[tuple[str, str]]:
    """Every active record of ``ID`` as ``meta/agent_memory/list`` pages them: ``(memory_id, body)``."""
    rows: list[tuple[str, str]] = []
    params: dict[str, Any] = {"identity": ID, "limit": 500}
    while True:
        page = h.call("meta/agent_memory/list", params)
        rows += [(r["memory_id"], r["body"]) for r in page["records"]]
        if not page.get("next_cursor"):
            return rows
        params["cursor"] = page["next_cursor"]


def test_a_record_remembered_while_the_import_runs_is_not_duplicated(
        builder: Callable[[str], MetaBuilder]) -> None:
    key = ExportKey.new("test")
    with builder("source").build() as src:
        me = src.agent(ID)
        me.remember_batch([(f"Filler {i}", f"filler note number {i}") for i in range(MAX_BATCH_OPS)])
        late = me.remember("Late", "the spare key is under the mat").memory_id  # in the second batch
        head = me.remember("Head", "the boiler is serviced in march").memory_id
        head = src.agent(ID).update(head, body="the boiler is serviced in april").memory_id  # a chain's head
        buf = io.StringIO()
        export_jsonl(src.runtime, buf, signer=LineSigner(key), ledger=False)
    lines = buf.getvalue().splitlines()

    with builder("target").build() as dst:
        written: list[str] = []

        def remember_meanwhile(n: int) -> None:
            if written:
                return
            # another writer (its own thread and connection) while the import runs, after its first batch
            def write() -> None:
                agent = dst.agent(ID)
                written.append(agent.remember("Late", "the spare key is under the mat").memory_id)
                written.append(agent.remember("Head", "the boiler is serviced in april").memory_id)
            t = threading.Thread(target=write)
            t.start()
            t.join()

        summary = import_jsonl(dst.runtime, lines, keys=[key], progress=remember_meanwhile)
        assert len(written) == 2
        active = _active(dst)
        for body in ("the spare key is under the mat", "the boiler is serviced in april"):
            assert [mid for mid, b in active if b == body] == [written[0] if "key" in body else written[1]], body
        assert len(active) == MAX_BATCH_OPS + 2
        outcomes = {(d.memory_id, d.duplicate_of, d.landed) for d in summary.duplicates}
        assert outcomes == {(late, written[0], False), (head, written[1], True)}, summary.duplicates
        assert summary.skipped_present == 1 and summary.created == {"default": MAX_BATCH_OPS + 2}, summary
        store = dst.runtime.agent_memory.store
        assert store.get("default", head).status.kind.value == "tombstoned"  # the chain landed whole
