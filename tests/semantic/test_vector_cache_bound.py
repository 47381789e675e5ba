"""``[agent_memory] vector_cache_mb``: hybrid recall's kept scope matrices and query vectors stay within their
bound (least recently used out; a matrix larger than the bound serves its recall and is not kept), and the
answers are the same whatever the bound."""

from __future__ import annotations

import pytest

from extras import require_extra
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.config import parse_config
from meta_memory.recall.provider import RecallRequest
from meta_memory.recall.semantic.hybrid import MATRIX_ROW_BYTES, HybridConfig, HybridRecallProvider
from meta_memory.recall.semantic.indexer import VectorIndexer
from meta_memory.recall.semantic.setup import build_recall_provider
from meta_memory.services.recall_reader import guarded_recall

from .semantic_support import ConceptEmbedder

pytestmark = pytest.mark.semantic
require_extra("semantic", "numpy")

R = "default"
PEOPLE = [f"lead:p{i}" for i in range(4)]


def _seed(store: SqliteAgentMemoryStore) -> None:
    for who in PEOPLE:
        record_writes.remember(store, R, who, "Garage", "Last spring I bought an automobile, a blue sedan", [])
        record_writes.remember(store, R, who, "Budget", "The car insurance renewal is due in June", [])
        for i in range(20):
            record_writes.remember(store, R, who, f"Note {i}", f"the oven and the puppy, day {i}", [])


def _ask(provider: HybridRecallProvider, store: SqliteAgentMemoryStore, who: str) -> list[str]:
    req = RecallRequest(identity=who, realm=R, query_text="When did I purchase my car?", max_entries=4)
    return [s.record.title for s in guarded_recall(provider, store, req, Scope.identity(R, who)).records]


def test_the_matrices_kept_stay_within_the_bound_and_answers_do_not_change(store: SqliteAgentMemoryStore) -> None:
    _seed(store)
    embedder = ConceptEmbedder()
    VectorIndexer(store, embedder).drain()
    one_scope = 22 * (embedder.dim * 4 + MATRIX_ROW_BYTES)
    roomy = HybridRecallProvider(embedder)
    tight = HybridRecallProvider(embedder, HybridConfig(cache_bytes=one_scope + one_scope // 2))
    for _ in range(2):
        for who in PEOPLE:
            assert _ask(tight, store, who) == _ask(roomy, store, who)
            assert "Garage" in _ask(tight, store, who)
            stats = tight.memory_stats()
            assert stats["bytes"] <= stats["limit_bytes"] == one_scope + one_scope // 2, stats
            assert stats["scopes"] <= 1
    assert roomy.memory_stats()["scopes"] == len(PEOPLE)


def test_a_matrix_larger_than_the_bound_is_used_and_not_kept(store: SqliteAgentMemoryStore) -> None:
    _seed(store)
    embedder = ConceptEmbedder()
    VectorIndexer(store, embedder).drain()
    tiny = HybridRecallProvider(embedder, HybridConfig(cache_bytes=64))
    assert "Garage" in _ask(tiny, store, PEOPLE[0])  # the dense side still ran: a synonym found
    assert tiny.memory_stats() == {"bytes": 0, "limit_bytes": 64, "scopes": 0, "queries": 0}


def test_vector_cache_mb_sets_the_hybrid_bound(store: SqliteAgentMemoryStore) -> None:
    cfg = parse_config({"agent_memory": {"recall_provider": "hybrid", "vector_cache_mb": 3}}).agent_memory
    assert cfg is not None and cfg.vector_cache_mb == 3
    setup = build_recall_provider("hybrid", store, embedder=ConceptEmbedder(), start=False,
                                  vector_cache_bytes=cfg.vector_cache_mb * 1024 * 1024)
    assert setup.provider.memory_stats()["limit_bytes"] == 3 * 1024 * 1024
    with pytest.raises(ValueError, match="cache_bytes"):
        HybridConfig(cache_bytes=-1)
