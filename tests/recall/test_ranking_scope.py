"""Ranking reveals nothing about other identities: what identity A's recall and injection answer depends
only on records A can read.

Property: two stores hold the same records of A (same content, same times, same write order); one also
holds B's records, written interleaved with A's (some of them forgotten again). Every recall and every
injected block of A is the same in both: the same records in the same order (A's records are named by
their place in A's history, since ids differ between stores) and the same rendered text (its per-block
nonce aside). Run through the embedded SDK's bound agent and session, on SQLite with every candidate
query answered by FTS5, on SQLite with the in-process index warm, and on PostgreSQL.

Plus the oracle of ``benchmarks/ranking_oracle.py``, and the migration of a realm file written before
ranking statistics were kept per scope.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_memory.clock import ManualClock
from meta_memory.recall import fts
from meta_memory.sdk import Meta
from support import load_benchmark, realm_db

REALM = "default"
A = "ana"
B = "ben"
T0 = 1_700_000_000_000
#: the recall time budget here: the property is about order, not speed (a loaded machine must not fail it)
SLOW_MACHINE_MS = 30_000
DATA = Path(__file__).resolve().parent / "data"
WORDS = ["passport", "travel", "drawer", "tea", "green", "river", "kitchen", "budget", "walk", "hiking", "zebra",
         "quokka", "island", "ferry", "harbour", "绿茶", "café", "notes", "when", "meeting"]

Opener = Callable[[ManualClock], AbstractContextManager[Any]]


# ---------------------------------------------------------------------------------------------- the three paths

@contextmanager
def _sqlite(clock: ManualClock, *, index: bool) -> Iterator[Any]:
    with tempfile.TemporaryDirectory() as tmp:
        builder = Meta.builder().persistent_state(Path(tmp) / "state").clock(clock)
        with builder.agent_memory(recall_timeout_ms=SLOW_MACHINE_MS).build() as handle:
            lexical = handle.runtime.agent_memory.service.store.lexical_index
            if index:
                lexical.min_rows = 0  # small test realms are indexed too
                lexical.background = False  # built only when the test warms it, before recalling
            else:
                lexical.max_bytes = 0  # every candidate query runs in FTS5

            def ready() -> None:
                if index:
                    assert lexical.warm(REALM)

            yield handle, ready


@contextmanager
def _postgres(clock: ManualClock) -> Iterator[Any]:
    from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema

    require_postgres()
    with tempfile.TemporaryDirectory() as tmp, throwaway_schema() as schema:
        builder = Meta.builder().persistent_state(Path(tmp) / "state").clock(clock)
        options = {"store": "postgres", "dsn": dsn_with_schema(schema), "recall_timeout_ms": SLOW_MACHINE_MS}
        with builder.agent_memory(**options).build() as handle:
            yield handle, lambda: None


PATHS = {
    "sqlite-fts5": lambda clock: _sqlite(clock, index=False),
    "sqlite-index": lambda clock: _sqlite(clock, index=True),
    "postgres": _postgres,
}
PATH_PARAMS = ["sqlite-fts5", "sqlite-index", pytest.param("postgres", marks=pytest.mark.postgres)]

# ---------------------------------------------------------------------------------------------- the property

_NONCE = re.compile(r"\[mem-token: [0-9a-f]+\]")

words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)
#: one write: (owner is A, title words, body words, tags, a question, ms since A's previous write)
writes = st.tuples(st.booleans(), words, words, st.lists(st.sampled_from(WORDS), max_size=2), st.booleans(),
                   st.sampled_from([0, 1_000, 30_000, 200_000]))
timelines = st.lists(writes, min_size=2, max_size=30).filter(lambda t: any(w[0] for w in t))
queries = st.lists(st.lists(st.sampled_from(WORDS + ["absent"]), min_size=1, max_size=4), min_size=1, max_size=4)


def _transcript(opener: Opener, timeline: list[Any], asks: list[list[str]], with_b: bool) -> list[Any]:
    """What A sees: per query, its recall (labels, in order) and its injected block (labels and text)."""
    clock = ManualClock(T0)
    with opener(clock) as (handle, ready):
        ana, ben = handle.agent(A), handle.agent(B)
        label: dict[str, str] = {}
        ben_ids: list[str] = []
        for i, (mine, title, body, tags, question, gap) in enumerate(timeline):
            text = " ".join(body) + ("?" if question else "")
            if mine:
                clock.advance(gap)
                label[ana.remember(f"{' '.join(title)} a{i}", text, tags=tags).memory_id] = f"a{i}"
            elif with_b:  # B writes at A's current time: A's records keep the same times in both stores
                ben_ids.append(ben.remember(f"{' '.join(title)} b{i}", text, tags=tags).memory_id)
                if i % 3 == 0:
                    ben.forget(ben_ids.pop(0))
        ready()
        session = ana.session("turns")
        seen: list[Any] = []
        for ask in asks:
            query = " ".join(ask)
            seen.append([label[r.memory_id] for r in ana.recall(query, k=8)])
            block = session.inject(query)
            seen.append(([label[i] for i in block.included_ids], _NONCE.sub("[mem-token]", block.text or "")))
        return seen


@pytest.mark.parametrize("path", PATH_PARAMS)
def test_a_recall_and_injection_never_depend_on_another_identitys_records(path: str) -> None:
    opener = PATHS[path]

    @settings(max_examples=12 if path == "postgres" else 25, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(timeline=timelines, asks=queries)
    def same_with_and_without_b(timeline: list[Any], asks: list[list[str]]) -> None:
        assert _transcript(opener, timeline, asks, True) == _transcript(opener, timeline, asks, False)

    same_with_and_without_b()


@pytest.mark.parametrize("path", PATH_PARAMS)
def test_bs_words_leave_as_ranking_signal_in_the_example_of_the_issue(path: str) -> None:
    """A concrete case of the property: B holding ``zebra`` in many records used to push A's record on
    zebra below A's record on quokka (zebra was common realm-wide); with A's own statistics they tie on
    rarity and the shorter one wins, with or without B."""
    timeline = [(True, ["trip"], ["zebra", "stripes"], [], False, 600_000)]
    timeline += [(False, ["safari"], ["zebra", "herd", "zebra"], [], False, 0)] * 6
    timeline += [(True, ["trip"], ["quokka", "sighting", "on", "the", "sunny", "island"], [], False, 600_000)]
    with_b = _transcript(PATHS[path], timeline, [["zebra", "quokka"]], True)
    assert with_b == _transcript(PATHS[path], timeline, [["zebra", "quokka"]], False)
    assert with_b[0] == ["a0", "a7"]


# ---------------------------------------------------------------------------------------------- the oracle

def test_the_ranking_oracle_yields_nothing() -> None:
    """``benchmarks/ranking_oracle.py``: one batch write and a few recalls used to tell A exactly which
    probed words B's records hold (every held word, no false positive); now no verdict depends on B."""
    oracle = load_benchmark("ranking_oracle", "ranking_oracle_bench")
    rows = oracle.run(oracle.argparse.Namespace(probes=63, held=8, victim_records=120, seed=3, dsn=None))
    assert [r["path"] for r in rows] == ["sqlite, FTS5", "sqlite, in-process index"]
    for row in rows:
        assert row["verdicts_that_depend_on_victim"] == 0, row
        assert row["true_positives"] == 0, row


@pytest.mark.postgres
def test_the_ranking_oracle_yields_nothing_on_postgres() -> None:
    from contract.pgsupport import DSN, require_postgres

    require_postgres()
    oracle = load_benchmark("ranking_oracle", "ranking_oracle_bench")
    rows = oracle.run(oracle.argparse.Namespace(probes=63, held=8, victim_records=120, seed=3, dsn=DSN))
    assert rows[-1]["path"] == "postgresql"
    assert rows[-1]["verdicts_that_depend_on_victim"] == 0 and rows[-1]["true_positives"] == 0


# ---------------------------------------------------------------------------------------------- migration

def test_a_realm_written_before_per_scope_statistics_is_ranked_by_its_scopes_at_open(tmp_path: Path) -> None:
    """``data/realm-index-v3.sqlite3`` was written by the previous release (full-text index version 3,
    realm-wide statistics): ``ana`` holds five active records, a short one on zebra and a longer one on
    quokka among them (and a forgotten one on quokka), ``ben`` nine, eight of them on zebra and one on
    quokka. Opened now, the realm's index is rebuilt with per-scope statistics, and ``ana``'s recall ranks
    as in a realm of her records alone: zebra and quokka are equally rare among them, so the shorter zebra
    record comes first, where realm-wide statistics (zebra common in ``ben``'s records) put quokka first."""
    state = tmp_path / "state"
    target = realm_db(state, REALM)
    target.parent.mkdir(parents=True)
    shutil.copy(DATA / "realm-index-v3.sqlite3", target)
    with sqlite3.connect(target) as conn:  # what the old release left: its index definition, no scope statistics
        assert len(conn.execute("SELECT 1 FROM schema_migrations WHERE domain = 'records-fts'").fetchall()) == 1
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name LIKE 'records_fts_scope%'").fetchall()
    for index in (False, True):
        with Meta.builder().persistent_state(state).build() as handle:
            lexical = handle.runtime.agent_memory.service.store.lexical_index
            if index:
                lexical.min_rows = 0
                assert lexical.warm(REALM)
            else:
                lexical.max_bytes = 0
            titles = [(r.title, r.body.split()[0]) for r in handle.agent(A).recall("zebra quokka", k=8)]
            assert titles[:2] == [("Trip notes", "zebra"), ("Trip notes", "quokka")]
    with sqlite3.connect(target) as conn:
        stats = dict(((k, key), (n, t)) for k, key, n, t in conn.execute(f"SELECT * FROM {fts.SCOPES_TABLE}"))
        active = dict(((k, key), n) for k, key, n in conn.execute(
            "SELECT scope_kind, scope_key, count(*) FROM records WHERE status_kind = 'active' GROUP BY 1, 2"))
        assert {scope: n for scope, (n, _) in stats.items()} == active == {("identity", A): 5, ("identity", B): 9}
        versions = [name for (name,) in conn.execute(
            "SELECT name FROM schema_migrations WHERE domain = 'records-fts' ORDER BY version")]
        assert len(versions) == 2  # the old index definition, then the rebuild under the new one
