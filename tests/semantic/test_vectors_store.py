"""Vectors live beside the records: filled in the background, removed in the same transaction as the record."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory import record_writes
from meta_memory.agent_memory.model import Author, NewMemoryRecord, Provenance, Scope
from meta_memory.agent_memory.store.sqlite import SqliteAgentMemoryStore, realm_db_path
from meta_memory.recall.semantic.indexer import VectorIndexer
from meta_memory.recall.semantic.vectors import decode_vector, embedding_text, encode_vector

from .semantic_support import ConceptEmbedder, vector_rows

pytestmark = pytest.mark.semantic

R = "default"
ID = "lead:main"
ME = Scope.identity(R, ID)


class QuarantineAll:
    def quarantine_reason(self, author: Author, batch_kind: str, evidence: list, *, realm: str) -> str | None:
        return "session tainted by web tool 'web_search'" if author.is_llm else None


@given(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), max_size=64))
def test_vector_blob_roundtrip(values: list[float]) -> None:
    blob = encode_vector(values)
    assert len(blob) == 4 * len(values)
    assert decode_vector(blob) == values


def test_decode_rejects_a_torn_blob() -> None:
    with pytest.raises(ValueError):
        decode_vector(b"\x00\x00\x80")


def test_embedding_text_joins_the_fields_and_skips_empty_ones() -> None:
    assert embedding_text("Title", "", "Body text", ["a", "b"]) == "Title\nBody text\na b"
    assert len(embedding_text("t", "", "x" * 10_000, [])) == 2000


def test_indexer_fills_vectors_of_active_records_only(store: SqliteAgentMemoryStore) -> None:
    a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    b, _ = record_writes.remember(store, R, ID, "Dog", "The puppy sleeps", [])
    q, _ = record_writes.remember_authored(store,
        R, ME, NewMemoryRecord(title="Web", body="found on a page", provenance=Provenance(Author.agent(ID))),
        Author.agent(ID), gate=QuarantineAll(),
    )
    assert not q.status.is_active
    assert vector_rows(store.root) == {}  # a write never waits for the embedder
    indexer = VectorIndexer(store, ConceptEmbedder())
    assert indexer.drain() == 2
    assert vector_rows(store.root) == {a.memory_id: "concepts-test", b.memory_id: "concepts-test"}
    assert indexer.drain() == 0  # nothing left to do


def test_forget_removes_the_vector_in_the_same_transaction(store: SqliteAgentMemoryStore) -> None:
    a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    b, _ = record_writes.remember(store, R, ID, "Dog", "The puppy sleeps", [])
    VectorIndexer(store, ConceptEmbedder()).drain()
    assert record_writes.forget(store, R, ME, a.memory_id, Author.application())
    assert vector_rows(store.root) == {b.memory_id: "concepts-test"}
    assert [m for m, _ in store.scope_vectors(R, ME, "concepts-test")] == [b.memory_id]


def test_supersede_moves_the_vector_to_the_new_version(store: SqliteAgentMemoryStore) -> None:
    a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    indexer = VectorIndexer(store, ConceptEmbedder())
    indexer.drain()
    new, prior = record_writes.update(store, R, ID, a.memory_id, "Car", "I bought a red sedan", [])
    assert prior == a.memory_id
    assert vector_rows(store.root) == {}  # the old version's vector left with it
    indexer.drain()
    assert vector_rows(store.root) == {new.memory_id: "concepts-test"}


def test_put_vectors_refuses_a_record_that_left_active_meanwhile(store: SqliteAgentMemoryStore) -> None:
    a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    jobs = store.missing_vectors(R, "concepts-test", 10)
    assert [j.memory_id for j in jobs] == [a.memory_id]
    record_writes.forget(store, R, ME, a.memory_id, Author.application())  # forgotten while the embedder was busy
    assert store.put_vectors(R, "concepts-test", [(jobs[0].rid, encode_vector([1.0, 0.0]))]) == 0
    assert vector_rows(store.root) == {}


def test_changing_the_model_re_embeds_every_record(store: SqliteAgentMemoryStore) -> None:
    a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    VectorIndexer(store, ConceptEmbedder()).drain()

    class Other(ConceptEmbedder):
        model_id = "other-model"

    assert VectorIndexer(store, Other()).drain() == 1
    assert vector_rows(store.root) == {a.memory_id: "other-model"}
    assert store.scope_vectors(R, ME, "concepts-test") == []


def test_signature_changes_on_every_insert_and_delete(store: SqliteAgentMemoryStore) -> None:
    indexer = VectorIndexer(store, ConceptEmbedder())
    s0 = store.vector_signature(R, ME, "concepts-test")
    a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    indexer.drain()
    s1 = store.vector_signature(R, ME, "concepts-test")
    record_writes.forget(store, R, ME, a.memory_id, Author.application())
    b, _ = record_writes.remember(store, R, ID, "Dog", "The puppy sleeps", [])
    indexer.drain()
    s2 = store.vector_signature(R, ME, "concepts-test")
    assert len({s0, s1, s2}) == 3 and s1[0] == s2[0] == 1


def test_background_thread_fills_vectors_after_a_write(store: SqliteAgentMemoryStore) -> None:
    indexer = VectorIndexer(store, ConceptEmbedder(), poll_s=0.05)
    indexer.start()
    try:
        a, _ = record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
        assert indexer.wait_idle(10.0)
        assert a.memory_id in vector_rows(store.root)
    finally:
        indexer.stop()


def test_the_vector_table_is_a_recorded_migration(store: SqliteAgentMemoryStore) -> None:
    record_writes.remember(store, R, ID, "Car", "I bought a sedan", [])
    conn = sqlite3.connect(realm_db_path(store.root, R))
    names = [n for (n,) in conn.execute("SELECT name FROM schema_migrations WHERE domain = 'meta-memory'")]
    conn.close()
    assert "record-vectors" in names
