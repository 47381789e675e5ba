"""The gateway's memory is bounded by its configuration and reported.

``[agent_memory]`` ``recall_index_mb`` (the recall index, its builds included), ``sqlite_cache_mb`` (SQLite's
heap: every connection's page cache), ``view_cache_mb`` (decoded record views) and ``vector_cache_mb``
(hybrid recall's matrices): each refused naming the key when out of range, each held by eviction or
refusal, and each reported beside its bound in ``meta/status`` ``agent_memory.memory`` and ``GET /metrics``.
"""

from __future__ import annotations

import itertools
import random
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import STATEMENT_BYTES_PER_REALM, SqliteAgentMemoryStore
from meta_memory.agent_memory.writes import RememberItem
from meta_memory.config import parse_config
from meta_memory.errors import ConfigError
from meta_memory.recall import fts
from meta_memory.storage import sqlite_heap
from support import write_config

IDENT = "lead:mem"
KEYS = ("recall_index_mb", "sqlite_cache_mb", "view_cache_mb", "vector_cache_mb")
MiB = 1024 * 1024


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("bad", [-1, 65537, "64", 1.5, True, None])
def test_a_memory_bound_out_of_range_is_refused_naming_the_key(key: str, bad: Any) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"agent_memory": {key: bad}})
    assert str(err.value).startswith(f"agent_memory.{key}: must be an integer between 1 and 65536"), err.value


@pytest.mark.parametrize(("key", "default"), [("recall_index_mb", 256), ("sqlite_cache_mb", 128),
                                              ("view_cache_mb", 32), ("vector_cache_mb", 256)])
def test_memory_bounds_have_defaults_and_zero_means_the_default(key: str, default: int) -> None:
    cfg = parse_config({"agent_memory": {}}).agent_memory
    assert cfg is not None and getattr(cfg, key) == default
    zero = parse_config({"agent_memory": {key: 0}}).agent_memory
    assert zero is not None and getattr(zero, key) == default
    set_ = parse_config({"agent_memory": {key: 7}}).agent_memory
    assert set_ is not None and getattr(set_, key) == 7


# ---------------------------------------------------------------- the report, over a real socket


def _status_memory(gw: Any) -> dict[str, Any]:
    memory: dict[str, Any] = gw.result("meta/status", {})["agent_memory"]["memory"]
    return memory


def test_the_gateway_reports_its_memory_beside_the_configured_bounds(gateway_factory: Any, tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.toml", "[agent_memory]\nrecall_index_mb = 5\nsqlite_cache_mb = 48\n"
                                               "view_cache_mb = 3\n")
    gw = gateway_factory(config=config)
    gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": "Kettle", "body": "descale monthly"})
    gw.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": "kettle"})
    memory = _status_memory(gw)
    parts = memory["components"]
    assert parts["recall_index"]["limit_bytes"] == 5 * MiB
    assert parts["sqlite"]["limit_bytes"] == 48 * MiB
    assert parts["view_cache"]["limit_bytes"] == 3 * MiB
    assert memory["limit_bytes"] == (5 + 48 + 3) * MiB  # lexical recall: no vector cache
    assert memory["rss_bytes"] > 0 and memory["peak_rss_bytes"] >= memory["rss_bytes"]
    assert 0 < parts["view_cache"]["bytes"] <= 3 * MiB and parts["view_cache"]["views"] == 1
    assert parts["sqlite"]["bytes"] is None or 0 < parts["sqlite"]["bytes"]
    metrics = dict(line.rsplit(" ", 1) for line in httpx.get(gw.url + "/metrics", timeout=10).text.splitlines()
                   if line and not line.startswith("#"))
    assert float(metrics['meta_memory_memory_limit_bytes{component="view_cache"}']) == 3 * MiB
    assert float(metrics['meta_memory_memory_limit_bytes{component="sqlite"}']) == 48 * MiB
    assert float(metrics['meta_memory_memory_limit_bytes{component="recall_index"}']) == 5 * MiB
    assert 0 < float(metrics['meta_memory_memory_bytes{component="view_cache"}']) <= 3 * MiB
    assert float(metrics["meta_memory_process_resident_bytes"]) > 0


def test_the_view_cache_stays_within_view_cache_mb_and_answers_stay_whole(gateway_factory: Any,
                                                                           tmp_path: Path) -> None:
    """Records of 48 KiB bodies, recalled many at a time: the kept views never pass 1 MiB, and every recall
    still returns every record whole (a view not kept is read from the database)."""
    gw = gateway_factory(config=write_config(tmp_path / "c.toml", "[agent_memory]\nview_cache_mb = 1\n"))
    bodies = {}
    for i in range(40):
        body = f"harbour ferry {i} " + "".join(random.Random(i).choice("abcdefgh ") for _ in range(48 * 1024))
        out = gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": f"Harbour {i}", "body": body})
        bodies[out["memory_id"]] = out["body"]
    for _ in range(3):
        for start in range(0, 40, 8):
            query = " ".join(f"{i}" for i in range(start, start + 8))
            found = gw.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": f"harbour {query}",
                                                           "max_entries": 8})["records"]
            assert found and all(r["body"] == bodies[r["memory_id"]] for r in found)
            cache = _status_memory(gw)["components"]["view_cache"]
            assert cache["bytes"] <= 1 * MiB, cache
    assert _status_memory(gw)["components"]["view_cache"]["views"] >= 1


# ---------------------------------------------------------------- SQLite's heap


@pytest.fixture
def heap_limit() -> Iterator[None]:
    before = sqlite_heap.soft_heap_limit()
    yield
    sqlite_heap.set_soft_heap_limit(before)


def test_sqlite_page_caches_stay_within_sqlite_cache_mb_across_realms(tmp_path: Path, heap_limit: None) -> None:
    """Four realms of about 10 MiB each, written and read through (a writer's cache alone may hold 32 MiB):
    SQLite's heap in the process stays within the 8 MiB limit plus what the open realms' prepared statements
    hold, instead of growing with every realm's pages."""
    if sqlite_heap.heap_used() is None:
        pytest.skip("SQLite's heap cannot be read on this build")
    filler = "".join(random.Random(3).choice("abcdefghij ") for _ in range(3000))
    with SqliteAgentMemoryStore(tmp_path / "am", sqlite_cache_bytes=8 * MiB) as store:
        assert sqlite_heap.soft_heap_limit() == 8 * MiB
        for r in range(4):
            items = [RememberItem(f"Note {i}", f"{filler} {r} {i}") for i in range(3000)]
            for k in range(0, len(items), 500):
                record_writes.remember_many(store, f"realm-{r}", IDENT, items[k:k + 500])
            match = fts.match_expression("abcdefghij note")
            assert match is not None
            assert store.search(f"realm-{r}", Scope.identity(f"realm-{r}", IDENT), match, 50)
        sqlite = store.memory_stats()["sqlite"]
        used = sqlite["bytes"]
        assert used is not None and sqlite["limit_bytes"] == 8 * MiB and sqlite["open_realms"] == 4
        assert used <= 8 * MiB + 4 * STATEMENT_BYTES_PER_REALM, used / MiB


# ---------------------------------------------------------------- the recall index


def _rows(n: int, seed: int = 5) -> Iterator[tuple[Any, ...]]:
    """Full-text rows as a build reads them: ``rid, scope_kind, scope_key, created_at_ms, *columns``."""
    rng = random.Random(seed)
    words = [f"w{k}" for k in range(30_000)]
    for rid in range(1, n + 1):
        body = " ".join(rng.choice(words) for _ in range(60))
        yield (rid, "identity", IDENT, rid, f"title {rid}", body, "")  # fts.COLUMNS: title, body, tags


def test_a_realm_too_large_for_the_budget_is_refused_within_the_budget() -> None:
    """The build of a realm that cannot fit holds no more than about the budget before it gives up (a whole
    chunk of up to 50,000 rows' objects, whatever the budget, would pass it many times over)."""
    import numpy  # noqa: F401 - imported by the first build; not the build's memory

    from meta_memory.recall.lexical_index import _RealmIndex

    budget = 4 * MiB
    rows = _rows(20_000)
    first = next(rows)  # the generator's vocabulary exists before the measure starts
    tracemalloc.start()
    try:
        rows = itertools.chain([first], rows)
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        assert _RealmIndex.build(1, rows, budget) is None
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= budget * 1.5, f"a refused build held {peak / MiB:.1f} MiB for a {budget / MiB:.0f} MiB budget"


def test_a_realm_that_fits_is_built_whole_in_chunks_of_the_budget() -> None:
    """A budget that holds the realm: the chunked build gives the same index as one built without a budget."""
    from meta_memory.recall.lexical_index import _RealmIndex

    small = _RealmIndex.build(1, _rows(3000), 64 * MiB)
    whole = _RealmIndex.build(1, _rows(3000), None)
    assert small is not None and whole is not None
    assert small.live == whole.live == 3000 and small.n_postings == whole.n_postings
    hits = small.top(("identity", IDENT), ["w1", "w2", "w3"], 20)
    assert hits and hits == whole.top(("identity", IDENT), ["w1", "w2", "w3"], 20)


def test_an_evicted_realm_is_not_rebuilt_at_once(tmp_path: Path) -> None:
    """Two realms that do not fit together: searching the evicted one does not start a build that would evict
    the other (the two rebuilding each other in turn, each build taking a core from the recalls); FTS5
    answers it, with every record."""
    with SqliteAgentMemoryStore(tmp_path / "am") as store:
        index = store.lexical_index
        index.min_rows = 0
        for realm in ("r1", "r2"):
            for i in range(30):
                record_writes.remember(store, realm, IDENT, f"Note {i}", f"river walk {realm} {i}", [])
        assert index.warm("r1")
        index.max_bytes = int(index.nbytes() * 1.5)
        assert index.warm("r2") and not index.ready("r1")
        match = fts.match_expression("river")
        assert match is not None
        for _ in range(3):
            assert len(store.search("r1", Scope.identity("r1", IDENT), match, 100)) == 30
        time.sleep(0.5)
        assert not index.ready("r1") and index.ready("r2")
        assert index.stats()["evictions"] == 1
