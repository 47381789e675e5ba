"""The embedder interface of the semantic recall extra.

An embedder turns texts into unit-length float32 vectors of a fixed
dimension. It is identified by ``model_id``: vectors stored under one id are
never compared with vectors of another (changing the model re-embeds every
record in the background). Implementations must be safe to call from
several threads at once (the background indexer and recall calls overlap).

Spec: the optional semantic extra (embeddings from a model shipped inside a
PyPI package, on the CPU, offline).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder", "HashingEmbedder", "normalise"]


@runtime_checkable
class Embedder(Protocol):
    """Texts -> unit vectors.

    ``model_id``: stable name of the model (stored beside every vector).
    ``dim``: vector length. ``ready``: ``False`` while the model is still
    loading (recall then ranks lexically rather than wait).
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def ready(self) -> bool: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector (``dim`` floats) per text, in order. May raise on a model failure."""
        ...


def normalise(values: Sequence[float]) -> list[float]:
    """``values`` scaled to unit length (a zero vector stays zero)."""
    norm = math.sqrt(sum(v * v for v in values))
    if norm == 0.0:
        return [0.0 for _ in values]
    return [v / norm for v in values]


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """A small deterministic embedder with no dependency: each lower-cased word (and
    each word bigram) is hashed into one of ``dim`` buckets with a sign, then the
    vector is normalised. Texts sharing words are close; it knows no synonyms.

    For tests and for hosts that want the hybrid code path without the model. Thread-safe.
    """

    def __init__(self, dim: int = 64, model_id: str | None = None) -> None:
        if dim < 2:
            raise ValueError("dim must be >= 2")
        self._dim = dim
        self._model_id = model_id or f"hashing-{dim}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def ready(self) -> bool:
        return True

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self._dim, (1.0 if (value >> 63) & 1 else -1.0)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """See :class:`Embedder`."""
        out: list[list[float]] = []
        for text in texts:
            vec = [0.0] * self._dim
            words = [w.casefold() for w in _WORD.findall(text)]
            features = words + [a + " " + b for a, b in zip(words, words[1:])]
            for feature in features:
                i, sign = self._bucket(feature)
                vec[i] += sign
            out.append(normalise(vec))
        return out
