"""What a graph (or the model steering it) puts into the LangGraph store is bounded before any work
grows with it: a namespace deeper than a record can index is refused before its labels are hashed (at
once, whatever its depth), and a refusal repeats a key, namespace or label in at most a few dozen
characters, never the megabytes it was given."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from extras import require_extra

require_extra("langgraph", "langgraph")

from meta_memory.cli import build_runtime  # noqa: E402
from meta_memory.errors import InvalidParams  # noqa: E402
from meta_memory.integrations.langgraph import MetaMemoryStore  # noqa: E402
from meta_memory.sdk.handle import MetaHandle  # noqa: E402
from meta_memory.sdk.transport import EmbeddedTransport  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402

pytestmark = pytest.mark.langgraph


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[MetaMemoryStore]:
    handle = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", None))))
    yield MetaMemoryStore(handle)
    handle.close()


def test_a_namespace_too_deep_is_refused_before_its_prefixes_are_hashed(store: MetaMemoryStore) -> None:
    deep = tuple(f"label-{i}" for i in range(20_000))
    started = time.monotonic()
    with pytest.raises(ValueError, match="deeper than 30 labels cannot be stored .* 20000 labels"):
        store.put(deep, "k", {"a": 1})
    assert time.monotonic() - started < 1.0  # quadratic hashing of 20,000 prefixes took tens of seconds
    assert store.search(("label-0",)) == []


def test_a_refusal_repeats_a_huge_key_or_namespace_in_a_few_dozen_characters(store: MetaMemoryStore) -> None:
    huge = "n" * 1_000_000
    for namespace, key in (((huge,), "k"), (("users",), huge)):
        with pytest.raises(InvalidParams) as refused:
            store.put(namespace, key, {"a": 1})
        assert "too large" in str(refused.value) and len(str(refused.value)) < 1000


def test_a_huge_label_refused_as_an_identity_is_not_repeated_whole(tmp_path: Path) -> None:
    handle = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", None))))
    try:
        store = MetaMemoryStore(handle, identity_segment=1)
        with pytest.raises(ValueError, match="identity_segment") as refused:
            store.put(("users", " " + "b" * 1_000_000), "k", {"a": 1})
        assert len(str(refused.value)) < 2000
    finally:
        handle.close()
