"""The LangGraph store over meta-memory: LangGraph's own API, a compiled graph, SQLite, PostgreSQL, HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from extras import require_extra

require_extra("langgraph", "langgraph")


from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema  # noqa: E402
from meta_memory.access.config import hash_token  # noqa: E402
from meta_memory.cli import build_runtime  # noqa: E402
from meta_memory.errors import AccessDenied, InvalidParams  # noqa: E402
from meta_memory.integrations.langgraph import MetaMemoryStore  # noqa: E402
from meta_memory.integrations.langgraph_items import key_tag  # noqa: E402
from meta_memory.sdk import Meta  # noqa: E402
from meta_memory.sdk.handle import MetaHandle  # noqa: E402
from meta_memory.sdk.transport import EmbeddedTransport  # noqa: E402
from meta_memory.server.gateway import Gateway  # noqa: E402
from support import load_example, write_config  # noqa: E402

pytestmark = pytest.mark.langgraph


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def handle(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetaHandle]:
    config = None
    if request.param == "postgres":
        require_postgres()
        with throwaway_schema() as schema:
            config = write_config(tmp_path / "pg.toml",
                                  f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')
            h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", config))))
            yield h
            h.close()
        return
    h = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(tmp_path / "state", None))))
    yield h
    h.close()


@pytest.fixture
def store(handle: MetaHandle) -> MetaMemoryStore:
    return MetaMemoryStore(handle)


def test_put_get_update_delete(store: MetaMemoryStore, handle: MetaHandle) -> None:
    ns = ("users", "u1", "prefs")
    assert store.get(ns, "tea") is None
    store.put(ns, "tea", {"kind": "green", "cups": 2})
    first = store.get(ns, "tea")
    assert first is not None and first.value == {"kind": "green", "cups": 2} and first.namespace == ns
    store.put(ns, "tea", {"kind": "jasmine", "cups": 3})
    second = store.get(ns, "tea")
    assert second is not None and second.value["kind"] == "jasmine"
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    # one active record per item: the update superseded the first version
    assert len(handle.list_agent_memory("langgraph", tags=["lg:item"]).records) == 1
    store.delete(ns, "tea")
    assert store.get(ns, "tea") is None
    assert store.search(("users",)) == []


def test_prefixes_match_whole_labels_only(store: MetaMemoryStore) -> None:
    store.put(("tenant", "acme"), "a", {"v": 1})
    store.put(("tenant", "acme-corp"), "b", {"v": 2})
    store.put(("tenant", "acme", "sub"), "c", {"v": 3})
    assert sorted(i.key for i in store.search(("tenant", "acme"))) == ["a", "c"]
    assert [i.key for i in store.search(("tenant", "acme-corp"))] == ["b"]
    assert store.search(("tenant", "acm")) == []
    assert sorted(i.key for i in store.search(("tenant",))) == ["a", "b", "c"]
    # the same key under two namespaces is two items
    store.put(("tenant", "acme-corp"), "a", {"v": 4})
    assert store.get(("tenant", "acme"), "a").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(("tenant", "acme-corp"), "a").value == {"v": 4}  # type: ignore[union-attr]


def test_a_record_nested_too_deep_for_the_reader_is_not_an_item(store: MetaMemoryStore, handle: MetaHandle) -> None:
    # the store's identity also holds what its agents remember (the memory tool): a body of a thousand
    # brackets around a query's word is recalled with the items, and is skipped as not an item
    ns = ("docs",)
    store.put(ns, "passport", {"text": "The passport is in the top drawer"})
    handle.remember_agent_memory("langgraph", title="note", body="[" * 5_000 + '"passport"' + "]" * 5_000)
    assert [h.key for h in store.search(ns, query="passport")] == ["passport"]
    assert store.get(ns, "passport") is not None


def test_search_by_query_uses_recall_and_filters_and_pages(store: MetaMemoryStore) -> None:
    ns = ("docs",)
    store.put(ns, "passport", {"text": "The passport is in the top drawer of the desk", "year": 2024})
    store.put(ns, "garden", {"text": "Water the tomatoes in the garden on Fridays", "year": 2023})
    store.put(("other",), "passport2", {"text": "Another passport note elsewhere", "year": 2024})
    hits = store.search(ns, query="where is my passport?")
    assert [h.key for h in hits] == ["passport"] and hits[0].score == 1.0
    assert [h.key for h in store.search(ns, filter={"year": {"$gte": 2024}})] == ["passport"]
    assert [h.key for h in store.search(ns, filter={"year": 2023})] == ["garden"]
    assert len(store.search(ns, limit=1)) == 1 and len(store.search(ns, limit=1, offset=1)) == 1
    assert {h.key for h in store.search(ns, limit=1)} | {h.key for h in store.search(ns, limit=1, offset=1)} == {
        "passport", "garden"}
    with pytest.raises(ValueError, match=r"filter operator \"\$regex\" is not supported"):
        store.search(ns, filter={"year": {"$regex": "x"}})


def test_a_filtered_search_ranks_among_matching_items_with_the_gateways_filter(
        store: MetaMemoryStore, handle: MetaHandle) -> None:
    ns = ("notes",)
    for i in range(70):  # more better-ranked items than one recall returns, none of them matching
        store.put(ns, f"loud{i}", {"text": "coffee coffee coffee coffee", "team": "red", "n": i})
    store.put(ns, "quiet", {"text": "a note that mentions coffee once among many other words", "team": "blue",
                            "who": {"name": "ann"}})
    store.put(ns, "big", {"text": "coffee " + "x" * 9000, "team": "blue"})  # too big for metadata: checked here
    hits = store.search(ns, query="coffee", filter={"team": "blue"})
    assert sorted(h.key for h in hits) == ["big", "quiet"]
    assert [h.key for h in store.search(ns, filter={"who.name": "ann"})] == ["quiet"]
    assert [h.key for h in store.search(ns, filter={"n": {"$gt": 68}})] == ["loud69"]  # numbers as numbers
    # a missing key reads as null, as on LangGraph's own stores: $ne matches it
    assert sorted(h.key for h in store.search(ns, filter={"n": {"$ne": 1}}, limit=100))[:2] == ["big", "loud0"]
    rec = handle.list_agent_memory("langgraph", tags=["lg:item"], filter={"who.name": "ann"}).records[0]
    assert rec.metadata == {"team": "blue", "text": rec.metadata["text"], "who": {"name": "ann"}}


def test_list_namespaces(store: MetaMemoryStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("b",)) == [("z", "b")]
    assert store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "x")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("z", "b")]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "b", "d")]


def test_async_twins(store: MetaMemoryStore) -> None:
    async def run() -> Any:
        await store.aput(("n",), "k", {"text": "async value about apricots"})
        got = await store.aget(("n",), "k")
        found = await store.asearch(("n",), query="apricots")
        names = await store.alist_namespaces()
        await store.adelete(("n",), "k")
        return got, found, names, await store.aget(("n",), "k")

    got, found, names, gone = asyncio.run(run())
    assert got.value == {"text": "async value about apricots"}
    assert [f.key for f in found] == ["k"] and names == [("n",)] and gone is None


def test_values_must_be_json_and_fit_a_record(store: MetaMemoryStore) -> None:
    with pytest.raises(ValueError, match="JSON"):
        store.put(("n",), "k", {"when": object()})
    for odd in (float("nan"), float("inf"), -float("inf")):  # not JSON: a strict reader refuses the body
        with pytest.raises(ValueError, match="JSON"):
            store.put(("n",), "k", {"score": odd})
    assert store.get(("n",), "k") is None
    with pytest.raises(InvalidParams) as too_big:
        store.put(("users", "alice"), "big", {"text": "x" * 70_000})
    # told in the store's terms: the item's value, its key and namespace, the cap
    assert too_big.value.field == "value"
    assert "value of item 'big' in namespace ('users', 'alice')" in too_big.value.rule
    assert "at most 65536 bytes" in too_big.value.rule and "body must" not in too_big.value.rule
    assert store.get(("users", "alice"), "big") is None
    fits = {"text": "x" * 65_000}  # the envelope's few bytes still fit under the cap
    store.put(("n",), "near", fits)
    near = store.get(("n",), "near")
    assert near is not None and near.value == fits


@pytest.mark.parametrize("value", [[1, 2], "text", 3, ("a", "b")])
def test_a_value_that_is_not_a_dict_is_refused(store: MetaMemoryStore, value: Any) -> None:
    """``BaseStore.put`` takes a mapping; anything else is refused, not stored and handed back later."""
    with pytest.raises(ValueError, match="must be a dict"):
        store.put(("n",), "k", value)
    assert store.get(("n",), "k") is None and store.search(("n",)) == []


def test_an_empty_key_is_refused_and_deleting_it_is_a_no_op(store: MetaMemoryStore) -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        store.put(("n",), "", {"x": 1})
    assert store.get(("n",), "") is None and store.search(("n",)) == []
    store.delete(("n",), "")  # nothing to delete


def test_a_negative_limit_or_offset_is_refused(store: MetaMemoryStore) -> None:
    for i in range(3):
        store.put(("n",), f"k{i}", {"i": i})
    for kwargs in ({"limit": -1}, {"offset": -1}):
        with pytest.raises(ValueError, match="at least 0"):
            store.search(("n",), **kwargs)
        with pytest.raises(ValueError, match="at least 0"):
            store.list_namespaces(**kwargs)
    with pytest.raises(ValueError, match="max_depth"):
        store.list_namespaces(max_depth=0)
    assert [i.key for i in store.search(("n",), limit=1, offset=2)] == ["k0"]


def test_index_is_ignored(store: MetaMemoryStore) -> None:
    """``index`` changes nothing: every record is full-text indexed."""
    store.put(("n",), "k", {"text": "kept"}, index=False)
    assert store.get(("n",), "k").value == {"text": "kept"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def timed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MetaHandle, Any]]:
    """An embedded handle on a manual clock (both backends), and the clock."""
    from meta_memory.clock import ManualClock

    clock = ManualClock(1_700_000_000_000)
    builder = Meta.builder().persistent_state(tmp_path / "state").clock(clock)
    if request.param == "postgres":
        require_postgres()
        with throwaway_schema() as schema:
            with builder.agent_memory(store="postgres", dsn=dsn_with_schema(schema)).build() as h:
                yield h, clock
        return
    with builder.build() as h:
        yield h, clock


def test_a_ttl_in_minutes_becomes_record_expiry(timed: tuple[MetaHandle, Any]) -> None:
    """``put(ttl=minutes)`` expires the item then (LangGraph's ttl is in minutes); ``ttl=None`` on a later
    put makes it permanent; a ttl over the gateway's cap or that is no positive number is refused."""
    handle, clock = timed
    store = MetaMemoryStore(handle)
    assert store.supports_ttl
    store.put(("n",), "t", {"text": "expiring"}, ttl=0.5)
    rec = handle.list_agent_memory("langgraph").records[0]
    assert rec.expires_at_ms == 1_700_000_000_000 + 30_000
    clock.advance(29_999)
    assert store.get(("n",), "t", refresh_ttl=False).value == {"text": "expiring"}
    clock.advance(1)
    assert store.get(("n",), "t") is None
    assert store.search(("n",)) == [] and store.search(("n",), query="expiring") == []
    assert store.list_namespaces() == []

    store.put(("n",), "p", {"text": "kept"}, ttl=1)
    store.put(("n",), "p", {"text": "kept"}, ttl=None)  # the same value, now without a ttl
    clock.advance(120_000)
    assert store.get(("n",), "p").value == {"text": "kept"}
    assert handle.list_agent_memory("langgraph").records[0].expires_at_ms is None
    for bad in (0, -1, float("nan"), float("inf"), "5"):
        with pytest.raises(ValueError, match="ttl"):
            store.put(("n",), "x", {"v": 1}, ttl=bad)
    with pytest.raises(InvalidParams, match="ttl_s"):
        store.put(("n",), "x", {"v": 1}, ttl=10.0**12)
    assert store.get(("n",), "x") is None


def test_the_ttl_config_gives_a_default_ttl_refreshed_on_read(timed: tuple[MetaHandle, Any]) -> None:
    """``TTLConfig``: ``default_ttl`` for puts naming none; a read re-arms the ttl from now unless
    ``refresh_on_read`` is false or the read says ``refresh_ttl=False``."""
    handle, clock = timed
    store = MetaMemoryStore(handle, ttl={"default_ttl": 1, "refresh_on_read": True})
    store.put(("n",), "a", {"text": "alpha note"})
    store.put(("n",), "b", {"text": "beta note"})
    clock.advance(50_000)
    assert store.get(("n",), "a").value == {"text": "alpha note"}  # re-armed: 60 s from now
    assert [i.key for i in store.search(("n",), query="beta", refresh_ttl=False)] == ["b"]  # not re-armed
    clock.advance(50_000)  # 100 s after the puts: b expired, a was refreshed 50 s ago
    assert store.get(("n",), "b", refresh_ttl=False) is None
    assert store.get(("n",), "a", refresh_ttl=False).value == {"text": "alpha note"}
    assert [i.key for i in store.search(("n",))] == ["a"]  # a search re-arms too
    clock.advance(59_000)
    assert store.get(("n",), "a").value == {"text": "alpha note"}

    quiet = MetaMemoryStore(handle, ttl={"default_ttl": 1, "refresh_on_read": False}, identity="quiet")
    quiet.put(("q",), "k", {"v": 1})
    clock.advance(30_000)
    assert quiet.get(("q",), "k").value == {"v": 1}
    clock.advance(30_000)
    assert quiet.get(("q",), "k") is None


def test_concurrent_puts_of_one_key_leave_one_item(store: MetaMemoryStore) -> None:
    """Parallel nodes (or ``abatch`` threads) writing one key: every put succeeds, and the key is one
    item holding one of the values, never two items or a refused update."""
    async def run() -> None:
        await asyncio.gather(*(store.aput(("c",), "same", {"i": i}) for i in range(8)))

    asyncio.run(run())
    found = store.search(("c",))
    assert [f.key for f in found] == ["same"]
    got = store.get(("c",), "same")
    assert got is not None and got.value == found[0].value and got.value["i"] in range(8)


def test_the_example_graph_reads_and_writes_through_the_store(store: MetaMemoryStore) -> None:
    app = load_example("langgraph_store").build_graph(store)
    app.invoke({"user": "alice", "message": "I keep my bicycle in the garage", "recalled": []})
    app.invoke({"user": "bob", "message": "my bicycle is red", "recalled": []})
    out = app.invoke({"user": "alice", "message": "where is the bicycle garage", "recalled": []})
    assert "I keep my bicycle in the garage" in out["recalled"]
    assert all("red" not in t for t in out["recalled"])  # bob's memory stays in bob's namespace
    # the turn's own message was stored before recall ran
    assert "where is the bicycle garage" in [i.value["text"] for i in store.search(("memories", "alice"))]


def test_identity_segment_puts_each_user_under_their_identity_and_access_control_holds(
    tmp_path: Path, gateway_factory: Any
) -> None:
    token = "tok-alice-0123456789"
    cfg = write_config(tmp_path / "access.toml", "\n".join([
        "[access]", "enabled = true", "",
        "[[access.tokens]]", f'sha256 = "{hash_token(token)}"', 'principal = "alice-app"', "",
        *[line for action in ("agent.memory.write", "agent.memory.read", "agent.view", "agent.memory.delete")
          for line in ("[[access.grants]]", f'action = "{action}"', 'who = { principal = "alice-app" }',
                       'on = { identity = "alice" }', "")],
    ]))
    gw = gateway_factory(tmp_path / "state", config=cfg)
    remote = MetaMemoryStore(Meta.connect(gw.url, token=token), identity_segment=0)
    remote.put(("alice", "notes"), "n1", {"text": "alice's note over HTTP"})
    assert remote.get(("alice", "notes"), "n1").value == {"text": "alice's note over HTTP"}  # type: ignore[union-attr]
    page = gw.rpc("meta/agent_memory/list", {"identity": "alice"}, token=token)["result"]
    assert len(page["records"]) == 1  # stored under the identity the namespace names
    with pytest.raises(AccessDenied):
        remote.put(("bob", "notes"), "n1", {"text": "written into bob's memory"})
    with pytest.raises(AccessDenied):
        remote.search(("bob",))
    with pytest.raises(ValueError, match="identity"):
        remote.search(())


def test_a_store_in_a_realm_keeps_every_item_there_and_is_judged_there(tmp_path: Path, gateway_factory: Any) -> None:
    token = "tok-ops-app-0123456789"
    cfg = write_config(tmp_path / "access.toml", "\n".join([
        "[access]", "enabled = true", "",
        "[[access.tokens]]", f'sha256 = "{hash_token(token)}"', 'principal = "ops-app"', "",
        *[line for action in ("agent.memory.write", "agent.memory.read", "agent.view", "agent.memory.delete")
          for line in ("[[access.grants]]", f'action = "{action}"', 'who = { principal = "ops-app" }',
                       'on = { identity = "langgraph", realm = "ops" }', "")],
    ]))
    gw = gateway_factory(tmp_path / "state", config=cfg)
    handle = Meta.connect(gw.url, token=token)
    in_ops = MetaMemoryStore(handle, realm="ops")
    in_ops.put(("notes",), "n1", {"text": "kept in ops"})
    assert in_ops.get(("notes",), "n1").value == {"text": "kept in ops"}  # type: ignore[union-attr]
    assert [i.key for i in in_ops.search(("notes",), query="kept ops")] == ["n1"]
    in_ops.delete(("notes",), "n1")
    assert in_ops.get(("notes",), "n1") is None
    # the grant names ops: the same identity's store in the default realm is refused, not written
    home = MetaMemoryStore(handle)
    with pytest.raises(AccessDenied):
        home.put(("notes",), "n1", {"text": "into the default realm"})
    with pytest.raises(AccessDenied):
        home.search(("notes",))
    handle.close()


def test_a_put_of_the_value_an_item_holds_writes_nothing_and_keeps_updated_at(timed: tuple[MetaHandle, Any]) -> None:
    """LangGraph's own stores set ``updated_at`` to now on every put, of the same value too (its
    ``InMemoryStore`` here); this store writes no new version of a record for a put that changes nothing,
    so the item keeps its record and its ``updated_at`` (the documented difference). A put that changes the
    value, or names a ttl, writes a new version and moves it."""
    import time

    from langgraph.store.memory import InMemoryStore

    theirs = InMemoryStore()
    theirs.put(("n",), "k", {"v": 1})
    their_first = theirs.get(("n",), "k")
    time.sleep(0.01)
    theirs.put(("n",), "k", {"v": 1})
    their_second = theirs.get(("n",), "k")
    assert their_first is not None and their_second is not None
    assert their_second.updated_at > their_first.updated_at  # LangGraph's own: every put moves it

    handle, clock = timed
    store = MetaMemoryStore(handle)
    store.put(("n",), "k", {"v": 1})
    clock.advance(1_000)
    store.put(("n",), "other", {"v": 2})
    first = store.get(("n",), "k")
    [before] = handle.list_agent_memory("langgraph", tags=[key_tag(("n",), "k")]).records
    clock.advance(60_000)
    store.put(("n",), "k", {"v": 1})
    again = store.get(("n",), "k")
    assert first is not None and again is not None
    assert again.updated_at == first.updated_at and again.created_at == first.created_at
    [after] = handle.list_agent_memory("langgraph", tags=[key_tag(("n",), "k")]).records
    assert after.memory_id == before.memory_id  # no new version written
    assert [i.key for i in store.search(("n",))] == ["other", "k"]  # newest updated first: k did not move

    store.put(("n",), "k", {"v": 3})  # a change: a new version, updated now
    changed = store.get(("n",), "k")
    assert changed is not None and changed.updated_at.timestamp() == (1_700_000_000_000 + 61_000) / 1000
    assert changed.created_at == first.created_at
    assert [i.key for i in store.search(("n",))] == ["k", "other"]
    clock.advance(60_000)
    store.put(("n",), "k", {"v": 3}, ttl=5)  # the same value with a ttl: the expiry is re-armed, a new version
    timed_put = store.get(("n",), "k", refresh_ttl=False)
    assert timed_put is not None and timed_put.updated_at.timestamp() == (1_700_000_000_000 + 121_000) / 1000
