"""The full-text path of a realm of one identity (the recall index cold, evicted or refused for its size),
through the embedded SDK's method table: each realm ranks by its own word counts, and an answer that path
could not prove the best is counted (``approximate_ranking`` in ``meta_memory_recall_degraded_total``) while
holding only the identity's own records, and named to no caller."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from meta_memory import deadline
from meta_memory.recall import fts_top
from meta_memory.recall.lexical_index import MIN_ROWS
from meta_memory.sdk import Meta

ME = "lead:twin"
REALMS = ("alpha", "beta")


def _items(realm: str, n: int) -> list[dict[str, str]]:
    """``n`` records whose words are the same in both realms but for ``harbour``: in every record of
    ``alpha``, in one record of twenty of ``beta`` (a common word in one, a rarer one in the other)."""
    rng = random.Random(11)
    common = [f"co{i}" for i in range(5)]
    middle = [f"mi{i}" for i in range(50)]
    rare = [f"ra{i}" for i in range(500)]

    def text(k: int) -> str:
        return " ".join(rng.choice(common if r < 0.5 else middle if r < 0.85 else rare)
                        for r in (rng.random() for _ in range(k)))

    out = []
    for i in range(n):
        harbour = realm == "alpha" or i % 20 == 0
        out.append({"title": text(rng.randint(2, 5)) + (" harbour" if harbour else ""),
                    "body": text(rng.randint(8, 30)) + f" {realm}{i}x"})
    return out


def _load(h: Any, realm: str, items: list[dict[str, str]]) -> None:
    for start in range(0, len(items), 500):
        h.call("meta/agent_memory/remember_batch", {"identity": ME, "realm": realm, "records": items[start:start + 500]})


def _recall(h: Any, realm: str, query: str) -> dict[str, Any]:
    out: dict[str, Any] = h.call("meta/agent_memory/recall",
                                 {"identity": ME, "realm": realm, "query_text": query, "max_entries": 8})
    return out


def _ids(out: dict[str, Any]) -> list[str]:
    return [r["memory_id"] for r in out["records"]]


QUERIES = [f"harbour {a} {b}" for a, b in (("co0", "mi3"), ("mi7", "ra40"), ("co2", "co3"), ("mi1", "mi2"),
                                          ("ra3", "co4"), ("mi9", "co1"))]


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    """Both realms, written the same way (same sizes, same change-log heads), and each one's index answers."""
    path = tmp_path / "state"
    with Meta.builder().persistent_state(path).build() as h:
        for realm in REALMS:
            _load(h, realm, _items(realm, MIN_ROWS + 600))
    yield path


def test_each_realm_ranks_by_its_own_word_counts_on_the_fts5_path(state: Path) -> None:
    """``harbour`` is in every record of ``alpha`` (its idf at the floor) and in a twentieth of ``beta``'s.
    With the index refused, FTS5 answers both realms, alternating, with ``alpha`` counted first each time:
    each realm returns what its own index returns, so neither reused the other's kept count."""
    # a budget a loaded machine cannot run out of: this test is about the ranking, not the time it takes
    with Meta.builder().persistent_state(state).agent_memory(recall_timeout_ms=5_000).build() as h:
        store = h.runtime.agent_memory.service.store
        indexed = {}
        for realm in REALMS:
            assert store.lexical_index.warm(realm)
            indexed[realm] = [_ids(_recall(h, realm, q)) for q in QUERIES]
    with Meta.builder().persistent_state(state).agent_memory(recall_index_mb=1, recall_timeout_ms=5_000).build() as h:
        store = h.runtime.agent_memory.service.store
        assert not any(store.lexical_index.warm(realm) for realm in REALMS)  # refused: bigger than the budget
        fts5: dict[str, list[list[str]]] = {realm: [] for realm in REALMS}
        for q in QUERIES:
            for realm in REALMS:
                out = _recall(h, realm, q)
                assert "degraded_reason" not in out, (realm, q)
                fts5[realm].append(_ids(out))
    assert fts5 == indexed
    assert indexed["alpha"] != indexed["beta"]
    assert all(len(ids) == 8 for ids in indexed["beta"])


def test_an_answer_the_fts5_path_could_not_prove_is_counted_and_tells_the_caller_nothing(
        state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the budget were nearly spent whenever the bounded phase starts: the answer is the best of the rows
    scored so far, counted for the operator (``approximate_ranking``) and still only the identity's own records
    of the realm asked. The result does not name it: only a realm of one identity takes this path, so a label
    would tell the caller whether another identity holds records there. Another identity's record, which
    takes the realm off that path, leaves the shape of the answer as it was."""
    monkeypatch.setattr(fts_top, "READ_ROWS", 50)
    monkeypatch.setattr(fts_top, "RESERVE_MS", 10_000_000)
    monkeypatch.setattr(deadline, "RESERVE_SHARE", 1.0)  # the whole budget kept back
    # the bounded phase stops at once whatever the budget (all of it is kept back); a budget longer than the
    # default keeps a loaded machine's re-ranking and neighbour reads from timing the recall out
    with Meta.builder().persistent_state(state).agent_memory(recall_index_mb=1, recall_timeout_ms=5_000).build() as h:
        alone = _recall(h, "beta", "harbour co0 co1 mi3")
        assert len(alone["records"]) == 8 and "degraded_reason" not in alone
        bodies = [r["body"] for r in alone["records"]]
        assert all(re.search(r"\bbeta\d+x\b", body) for body in bodies), bodies  # the realm asked, never alpha
        metrics = h.runtime.observability.metrics.render().decode()
        assert re.search(r'^meta_memory_recall_degraded_total\{reason="approximate_ranking"\} 1\.0$', metrics,
                         re.MULTILINE), metrics
        h.call("meta/agent_memory/remember", {"identity": "scout:other", "realm": "beta", "title": "Other",
                                              "body": "unrelated words entirely"})
        shared = _recall(h, "beta", "harbour co0 co1 mi3")
        assert set(shared) == set(alone) and len(shared["records"]) == 8
