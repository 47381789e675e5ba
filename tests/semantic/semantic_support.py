"""Shared helpers of the semantic recall tests: a synonym-aware fake embedder and a store fixture helper."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from meta_memory.recall.semantic.embedder import normalise
from meta_memory.recall.semantic.vectors import VECTOR_TABLE

#: word -> concept; words of one concept embed to the same axis (what a real model does for synonyms).
CONCEPTS = {
    "car": "vehicle", "cars": "vehicle", "automobile": "vehicle", "sedan": "vehicle", "vehicle": "vehicle",
    "bought": "purchase", "buy": "purchase", "purchase": "purchase", "purchased": "purchase",
    "dog": "pet", "puppy": "pet", "pet": "pet", "cat": "pet",
    "paris": "city", "london": "city", "city": "city",
    "holiday": "trip", "vacation": "trip", "trip": "trip", "travel": "trip",
}
AXES = sorted(set(CONCEPTS.values()))


class ConceptEmbedder:
    """Deterministic fake embedder: one axis per concept of :data:`CONCEPTS`, plus one spare axis
    for every other word (so unrelated texts are orthogonal-ish but not zero)."""

    model_id = "concepts-test"
    ready = True

    def __init__(self) -> None:
        self.dim = len(AXES) + 1
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            vec = [0.0] * self.dim
            for word in re.findall(r"\w+", text.casefold()):
                concept = CONCEPTS.get(word)
                vec[AXES.index(concept) if concept else -1] += 1.0 if concept else 0.05
            out.append(normalise(vec))
        return out


def vector_rows(root: Path, realm: str = "default") -> dict[str, str]:
    """memory_id -> model of every stored vector in ``realm``'s database (read directly from the file)."""
    from meta_memory.agent_memory.store.sqlite import realm_db_path

    conn = sqlite3.connect(realm_db_path(root, realm))
    try:
        rows = conn.execute(
            f"SELECT r.memory_id, v.model FROM {VECTOR_TABLE} v JOIN records r ON r.rid = v.rid"
        ).fetchall()
    finally:
        conn.close()
    return dict(rows)


#: Word that makes :class:`StallingEmbedder` stall and :class:`FailingEmbedder` raise (never in a record).
STALL = "stall"


class StallingEmbedder(ConceptEmbedder):
    """:class:`ConceptEmbedder`, except that a text containing the word ``stall`` is embedded only once
    :data:`RELEASE` is set (in a gateway subprocess: never): the slow query embedding of a loaded machine,
    made deterministic. Records (which never contain the word) are embedded at once, so the scope has
    vectors. Loaded by a configuration as ``[agent_memory] embedder = "semantic.semantic_support:StallingEmbedder"``
    with ``tests/`` on ``PYTHONPATH``."""

    model_id = "concepts-stalling-test"
    RELEASE = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any(STALL in re.findall(r"\w+", t.casefold()) for t in texts):
            StallingEmbedder.RELEASE.wait(120)
        return super().embed(texts)


class FailingEmbedder(ConceptEmbedder):
    """:class:`ConceptEmbedder`, except that embedding a text containing ``stall`` raises (a broken model)."""

    model_id = "concepts-failing-test"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any(STALL in re.findall(r"\w+", t.casefold()) for t in texts):
            raise RuntimeError("the model crashed")
        return super().embed(texts)
