"""Cross-process behaviour of one realm database: a writer process and a reader process at once."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.recall.fts import match_expression

RUN_SECONDS = 2.5


def _writer(root: str, stop_at: float, out: mp.Queue) -> None:
    errors: list[str] = []
    n = 0
    with SqliteAgentMemoryStore(Path(root)) as store:
        while time.monotonic() < stop_at:
            try:
                record_writes.remember(store, "shared", "writer:one", f"Note {n}", f"alpha body number {n}")
                n += 1
            except Exception as exc:  # noqa: BLE001 - every failure is reported to the test
                errors.append(repr(exc))
    out.put(("writer", n, errors))


def _reader(root: str, stop_at: float, out: mp.Queue) -> None:
    errors: list[str] = []
    reads = 0
    last = 0
    regress = False
    scope = Scope.identity("shared", "writer:one")
    expr = match_expression("alpha")
    with SqliteAgentMemoryStore(Path(root)) as store:
        while time.monotonic() < stop_at:
            try:
                count = len(store.active_records("shared", scope))
                store.search("shared", scope, expr, 5)
                store.manifest("shared", scope, "working_set", 8)
                if count < last:
                    regress = True
                last = count
                reads += 1
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))
    out.put(("reader", reads, errors + (["count went backwards"] if regress else [])))


def test_reader_and_writer_processes_never_see_database_is_locked(tmp_path: Path) -> None:
    root = tmp_path / "am"
    with SqliteAgentMemoryStore(root) as store:  # create the realm first
        record_writes.remember(store, "shared", "writer:one", "Seed", "alpha seed")
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    stop_at = time.monotonic() + RUN_SECONDS + 2.0  # spawn start-up takes a moment
    procs = [ctx.Process(target=f, args=(str(root), stop_at, out)) for f in (_writer, _reader, _writer)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    by_role: dict[str, list[tuple[int, list[str]]]] = {}
    for role, n, errors in results:
        by_role.setdefault(role, []).append((n, errors))
    all_errors = [e for runs in by_role.values() for _, errs in runs for e in errs]
    assert all_errors == []
    written = sum(n for n, _ in by_role["writer"])
    assert written > 0 and by_role["reader"][0][0] > 0
    with SqliteAgentMemoryStore(root) as store:
        titles = {r.title for r in store.active_records("shared", Scope.identity("shared", "writer:one"))}
    # Both writers used the same titles/bodies: identical content deduplicates.
    assert len(titles) >= max(n for n, _ in by_role["writer"])
    print(f"writes={written} reads={by_role['reader'][0][0]}")
