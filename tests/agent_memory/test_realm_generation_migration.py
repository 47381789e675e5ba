"""Migration 21 ("no-realm-generation") drops the realm-wide record counter of step 13 and its triggers: since step
20 the kept views and records rest on each scope's own generation, and nothing read the counter.

A realm written with the steps before 21 (and the release-9 realm of ``data/realm-schema-9.sqlite3``, which meets
steps 10 to 21 at once) is opened through the SDK: the counter and its triggers are gone, every public read answers
as before, and writes after the upgrade (remember, update, forget) are served fresh, because the scope's generation
moves with each of them.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from meta_memory.agent_memory.store import schema
from meta_memory.sdk import Meta
from support import realm_db

DATA = Path(__file__).parent / "data"
A, B = "ana", "ben"
_GONE = {"records_generation", "records_generation_insert", "records_generation_delete", "records_generation_update"}


def _names(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {str(n) for (n,) in conn.execute("SELECT name FROM sqlite_master")}


def _scope_generations(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return {str(k): int(g) for k, g in conn.execute("SELECT scope_key, g FROM scope_rows")}


def _titles(hits: list[object]) -> list[str]:
    return sorted(h.title for h in hits)  # type: ignore[attr-defined]


def test_a_realm_of_the_steps_before_21_loses_the_counter_and_answers_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] < 21])
        with Meta.builder().persistent_state(state).build() as handle:
            ana = handle.agent(A)
            kept = ana.remember("Harbour", "the harbour ferry leaves at noon").memory_id
            gone = ana.remember("Kettle", "descale the kettle on sunday").memory_id
            handle.agent(B).remember("Harbour", "ben's harbour map")
            assert _titles(ana.recall("harbour", k=8)) == ["Harbour"]
    path = realm_db(state)
    assert _GONE <= _names(path)  # what the steps before 21 leave
    with sqlite3.connect(path) as conn:
        assert 21 not in {v for (v,) in conn.execute("SELECT version FROM schema_migrations")}

    with Meta.builder().persistent_state(state).build() as handle:
        ana, ben = handle.agent(A), handle.agent(B)
        assert not _GONE & _names(path)
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT name FROM schema_migrations WHERE domain = 'meta-memory' AND version = 21"
                                ).fetchone() == ("no-realm-generation",)
        assert _titles(ana.recall("harbour", k=8)) == ["Harbour"]  # read before the writes below: views kept
        assert _titles(ben.recall("harbour", k=8)) == ["Harbour"]
        before = _scope_generations(path)
        ana.remember("Harbour walk", "a walk along the harbour wall")
        ana.update(kept, body="the harbour ferry leaves at one")
        ana.forget(gone)
        after = _scope_generations(path)
        moved = {k for k in after if after[k] != before.get(k)}
        assert len(moved) == 1 and moved <= set(before)  # ana's scope alone, ben's untouched
        hits = ana.recall("harbour", k=8)
        assert _titles(hits) == ["Harbour", "Harbour walk"]
        assert {h.body for h in hits} == {"the harbour ferry leaves at one", "a walk along the harbour wall"}
        assert ana.recall("kettle", k=8) == []
        assert [h.body for h in ben.recall("harbour", k=8)] == ["ben's harbour map"]


def test_the_release_9_realm_meets_step_21_with_the_others(tmp_path: Path) -> None:
    state = tmp_path / "state"
    target = realm_db(state)
    target.parent.mkdir(parents=True)
    shutil.copy(DATA / "realm-schema-9.sqlite3", target)
    with Meta.builder().persistent_state(state).build() as handle:
        ana = handle.agent(A)
        assert sorted(h.body for h in ana.recall("zebra", k=8)) == [
            "renew the passport before the zebra safari", "zebra sighting at the river crossing"]
        ana.remember("Zebra crossing", "the zebra crossing by the school")
        assert len(ana.recall("zebra", k=8)) == 3
        assert ana.recall("kettle", k=8) == []
    assert not _GONE & _names(target)
    with sqlite3.connect(target) as conn:
        versions = {v for (v,) in conn.execute("SELECT version FROM schema_migrations WHERE domain = 'meta-memory'")}
    assert set(range(1, 22)) <= versions
