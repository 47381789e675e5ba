"""``HybridConfig(fusion="weighted")``: min-max normalised lexical and dense scores summed with one weight."""

from __future__ import annotations

import pytest

from extras import require_extra
from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore
from meta_memory.recall.lexical import LexicalRecallProvider
from meta_memory.recall.provider import RecallRequest
from meta_memory.recall.semantic.hybrid import HybridConfig, HybridRecallProvider
from meta_memory.recall.semantic.indexer import VectorIndexer
from meta_memory.services.recall_reader import guarded_recall

from .semantic_support import ConceptEmbedder

pytestmark = pytest.mark.semantic
require_extra("semantic", "numpy")

R, ID, OTHER = "default", "lead:main", "lead:other"


def _seed(store: SqliteAgentMemoryStore) -> ConceptEmbedder:
    record_writes.remember(store, R, ID, "Garage", "Last spring I bought an automobile, a blue sedan", [])
    record_writes.remember(store, R, ID, "Budget", "The car insurance renewal is due in June", [])
    record_writes.remember(store, R, ID, "Kitchen", "The new oven arrived on Tuesday", [])
    record_writes.remember(store, R, OTHER, "Foreign", "Someone else's automobile purchase", [])
    embedder = ConceptEmbedder()
    VectorIndexer(store, embedder).drain()
    return embedder


def _titles(provider: object, store: SqliteAgentMemoryStore, text: str) -> list[str]:
    req = RecallRequest(identity=ID, realm=R, query_text=text, max_entries=8)
    return [s.record.title for s in guarded_recall(provider, store, req, Scope.identity(R, ID)).records]  # type: ignore[arg-type]


def test_the_weight_moves_the_ranking_from_lexical_to_dense(store: SqliteAgentMemoryStore) -> None:
    embedder = _seed(store)
    query = "car insurance: when did I purchase the vehicle"
    lexical = _titles(LexicalRecallProvider(), store, query)
    only_lexical = _titles(HybridRecallProvider(embedder, HybridConfig(fusion="weighted", fusion_weight=0.0)),
                           store, query)
    only_dense = _titles(HybridRecallProvider(embedder, HybridConfig(fusion="weighted", fusion_weight=1.0)),
                         store, query)
    assert lexical == ["Budget"] and only_lexical[0] == "Budget"
    assert only_dense[0] == "Garage"  # purchase + vehicle: the nearest record shares no word with the query
    for titles in (only_lexical, only_dense):
        assert "Foreign" not in titles and "Kitchen" not in titles  # other scope; below the cosine floor


@pytest.mark.parametrize("kwargs", [{"fusion": "rrf"}, {"fusion_weight": 1.5}, {"fusion_weight": -0.1},
                                    {"dense_budget_share": 0.0}, {"max_pending_embeddings": 0}])
def test_bad_tuning_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        HybridConfig(**kwargs)  # type: ignore[arg-type]
