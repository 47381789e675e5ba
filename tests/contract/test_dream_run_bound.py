"""Dream runs are bounded per realm, on SQLite and PostgreSQL, through the embedded SDK handle.

Recording a dream's run keeps the realm's newest ``MAX_DREAM_RUNS_PER_REALM`` runs (newest completed first,
the order ``meta/memory/panel/dream_runs`` lists them in) and deletes the older ones in the same transaction;
another realm's runs are not touched. The bound is made small here so a few dreams cross it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory.agent_memory.store import tables
from meta_memory.clock import ManualClock
from meta_memory.limits import MAX_DREAM_RUNS_PER_REALM
from meta_memory.panel.service import DREAMS_MAX_LIMIT
from meta_memory.review.dream import ESCALATION_MEMORY_RUNS
from meta_memory.sdk import Meta

from .pgsupport import dsn_with_schema, throwaway_schema

ID = "lead:main"
BOUND = 3


@pytest.fixture
def handle(backend: str, tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An embedded handle on the parametrised backend, on ``clock``, the dream-run bound ``BOUND``."""
    monkeypatch.setattr(tables, "MAX_DREAM_RUNS_PER_REALM", BOUND)
    builder = Meta.builder().persistent_state(tmp_path / "state").clock(clock)
    if backend == "sqlite":
        with builder.build() as h:
            yield h
        return
    with throwaway_schema() as schema, builder.agent_memory(store="postgres", dsn=dsn_with_schema(schema)).build() as h:
        yield h


def _dream(handle: Any, clock: ManualClock, realm: str, n: int) -> str:
    """Give ``realm`` work (a retired session's harvest), dream over it; the completed run's id."""
    handle.agent(ID, realm=realm).session(f"s-{n}").retire(f"done {n}")
    run = handle.memory_steward_dream(realm=realm)
    assert run.status == "completed" and run.run_id
    clock.advance(1000)
    return str(run.run_id)


def _listed(handle: Any, realm: str) -> list[str]:
    return [r.run_id for r in handle.memory_panel_dream_runs(realm=realm, limit=DREAMS_MAX_LIMIT).runs]


def test_a_realm_keeps_its_newest_runs_and_another_realms_are_untouched(handle: Any, clock: ManualClock) -> None:
    north = _dream(handle, clock, "north", 0)
    runs: list[str] = []
    for n in range(BOUND + 3):
        runs.append(_dream(handle, clock, "default", n))
        assert _listed(handle, "default") == runs[::-1][:BOUND]
    assert _listed(handle, "north") == [north]
    # every realm's listing holds the newest of each realm
    every = handle.memory_panel_dream_runs(limit=DREAMS_MAX_LIMIT).runs
    assert sorted(r.run_id for r in every) == sorted([north, *runs[-BOUND:]])


def test_the_bound_keeps_what_the_panel_lists_and_what_a_dream_reads_back() -> None:
    # the panel lists at most DREAMS_MAX_LIMIT runs of a realm, and a dream skips the open loops the newest
    # ESCALATION_MEMORY_RUNS runs escalated: the bound must keep both
    assert MAX_DREAM_RUNS_PER_REALM >= max(DREAMS_MAX_LIMIT, ESCALATION_MEMORY_RUNS)


def test_the_verdicts_of_pruned_runs_go_with_them_and_a_run_in_progress_keeps_its_own(
        agent_store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Usage-audit verdicts are bounded as the runs are: recording a run that prunes older runs deletes, in
    the same transaction, the verdicts of every run not kept (written at or before the oldest kept run's
    completion). The verdicts a run in progress wrote before its own row stay, as do another realm's."""
    monkeypatch.setattr(tables, "MAX_DREAM_RUNS_PER_REALM", BOUND)

    def run(realm: str, n: int, *, recorded: bool = True) -> str:
        run_id = f"dream-{n:03d}"
        with agent_store.transaction(realm) as tx:  # a run writes its verdicts first, then (once done) its row
            for r in range(2):
                tx.verdicts.upsert(run_id, f"mem-{n}-{r}", "dead_weight", "never injected", 1000 * n + 1)
        if recorded:
            with agent_store.transaction(realm) as tx:
                tx.dream_runs.upsert(run_id, "realm", 1000 * n, 1000 * n + 2, 0, {})
        return run_id

    def open_runs(realm: str) -> set[str]:
        with agent_store.snapshot(realm) as tx:
            return {v.run_id for v in tx.verdicts.open(10_000)}

    other = run("north", 0)
    runs = [run("default", n) for n in range(1, BOUND + 1)]
    assert open_runs("default") == set(runs)  # at the bound: nothing pruned yet
    runs += [run("default", n) for n in range(BOUND + 1, BOUND + 4)]
    in_progress = run("default", BOUND + 4, recorded=False)  # verdicts written, its row not yet
    assert open_runs("default") == set(runs[-BOUND:]) | {in_progress}
    runs.append(run("default", BOUND + 5))
    assert open_runs("default") == set(runs[-BOUND:]) | {in_progress}
    assert open_runs("north") == {other}
    with agent_store.snapshot("default") as tx:
        assert len(tx.verdicts.open(10_000)) == 2 * (BOUND + 1)
