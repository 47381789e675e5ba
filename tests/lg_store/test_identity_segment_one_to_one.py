"""``identity_segment`` maps namespace labels onto identities one-to-one: a label the gateway would read
as another identity (surrounding white space, the ``rt:<name>:<generation>`` respawn form) is refused
with a ``ValueError`` naming the label and the rule, so one user's namespace never reads or writes
another's memory. Through LangGraph's own store API, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extras import require_extra

require_extra("langgraph", "langgraph")

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema  # noqa: E402
from meta_memory.cli import build_runtime  # noqa: E402
from meta_memory.integrations.langgraph import MetaMemoryStore  # noqa: E402
from meta_memory.sdk.handle import MetaHandle  # noqa: E402
from meta_memory.sdk.transport import EmbeddedTransport  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from support import write_config  # noqa: E402

pytestmark = pytest.mark.langgraph


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def handle(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetaHandle]:
    if request.param == "sqlite":
        h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", None))))
        yield h
        h.close()
        return
    require_postgres()
    with throwaway_schema() as schema:
        config = write_config(tmp_path / "pg.toml",
                              f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
        h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", config))))
        yield h
        h.close()


ALIASES_OF_BOB = [" bob ", "bob ", " bob", "rt:bob:9", "rt:bob:0", "\tbob", "bob\n"]


@pytest.mark.parametrize("label", ALIASES_OF_BOB)
def test_a_label_naming_another_identity_is_refused_and_bob_keeps_his_memory(handle: MetaHandle,
                                                                             label: str) -> None:
    store = MetaMemoryStore(handle, identity_segment=1)
    store.put(("users", "bob", "prefs"), "tea", {"kind": "green"})
    with pytest.raises(ValueError) as refused:
        store.put(("users", label, "prefs"), "tea", {"kind": "poisoned"})
    assert repr(label) in str(refused.value) and "identity_segment" in str(refused.value)
    for attempt in (lambda: store.get(("users", label, "prefs"), "tea"),
                    lambda: store.search(("users", label)),
                    lambda: store.delete(("users", label, "prefs"), "tea"),
                    lambda: store.list_namespaces(prefix=("users", label))):
        with pytest.raises(ValueError):
            attempt()
    item = store.get(("users", "bob", "prefs"), "tea")
    assert item is not None and item.value == {"kind": "green"}
    assert [r.title for r in handle.list_agent_memory("bob").records] == ["tea"]


def test_distinct_canonical_labels_stay_apart(handle: MetaHandle) -> None:
    store = MetaMemoryStore(handle, identity_segment=0)
    store.put(("bob",), "k", {"v": 1})
    store.put(("bob:9",), "k", {"v": 2})  # not a respawn form: its own identity
    store.put(("Bob",), "k", {"v": 3})
    assert store.get(("bob",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(("bob:9",), "k").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(("Bob",), "k").value == {"v": 3}  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=24), st.text(max_size=24))
def test_the_mapping_is_one_to_one(a: str, b: str) -> None:
    """Two labels the store accepts name the same identity only when they are the same label."""
    from meta_memory.integrations.langgraph import identity_label

    try:
        ia, ib = identity_label(a), identity_label(b)
    except ValueError:
        return
    assert (ia == ib) == (a == b)
    assert ia == a


@pytest.mark.parametrize("label", ["", "   ", "a\x00b", "x" * 600])
def test_labels_that_cannot_name_an_identity_are_refused(label: str) -> None:
    from meta_memory.integrations.langgraph import identity_label

    with pytest.raises(ValueError, match="identity_segment"):
        identity_label(label)
