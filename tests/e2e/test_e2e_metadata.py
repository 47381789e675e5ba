"""Record metadata and metadata filters through the real gateway, on SQLite and PostgreSQL:
remember, remember_batch and update carry ``metadata``; recall and list take ``filter``; bad input is a
``-32602`` naming the field and the rule (the operator by name); secrets in metadata are refused; an
attacker's filter keys are data, and another identity's records never come back through a filter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema
from e2e_support import Rpc, uid


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rpc]:
    from support import start_gateway, write_config

    tmp = tmp_path_factory.mktemp(f"gw-{request.param}")

    def start(toml: str) -> Iterator[Rpc]:
        gw = start_gateway(tmp / "state", config=write_config(tmp / "config.toml", toml))
        client = Rpc(gw)
        try:
            yield client
        finally:
            client.close()
            gw.stop()

    if request.param == "sqlite":
        yield from start("")
        return
    require_postgres()
    with throwaway_schema() as schema:
        yield from start(f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n')


def _key_nots(levels: int) -> dict[str, Any]:
    """``{"$not": {"$not": ... {"$eq": 1}}}``: ``levels`` key-level ``$not`` around one comparison."""
    inner: dict[str, Any] = {"$eq": 1}
    for _ in range(levels):
        inner = {"$not": inner}
    return inner


def _listed(gw: Rpc, ident: str, flt: Any, **extra: Any) -> list[str]:
    out = gw.result("meta/agent_memory/list", {"identity": ident, "filter": flt, **extra})
    return [r["title"] for r in out["records"]]


def test_metadata_round_trips_on_every_record_shape(gateway: Rpc) -> None:
    ident = uid()
    out = gateway.remember(ident, "Coffee", "Black, no sugar", metadata={"source": "chat", "score": 7,
                                                                            "nested": {"ok": True, "xs": [1, 2]}})
    meta = {"nested": {"ok": True, "xs": [1, 2]}, "score": 7, "source": "chat"}
    assert out["metadata"] == meta
    assert gateway.recall(ident, "coffee")["records"][0]["metadata"] == meta
    listed = gateway.result("meta/agent_memory/list", {"identity": ident})["records"]
    assert listed[0]["metadata"] == meta
    plain = gateway.remember(ident, "Tea", "Green tea in the morning")
    assert plain["metadata"] == {}
    upd = gateway.result("meta/agent_memory/update", {"identity": ident, "memory_id": out["memory_id"],
                                                      "metadata": {"score": 8}})
    assert upd["record"]["metadata"] == {"score": 8}  # replaced, not merged
    batch = gateway.result("meta/agent_memory/remember_batch", {"identity": ident, "records": [
        {"title": "One", "body": "first of the batch", "metadata": {"n": 1}},
        {"title": "Two", "body": "second of the batch", "metadata": {"n": "two", "bad key.": 1}},
    ]})
    assert batch["created"] == 1 and batch["refused"] == 1
    assert batch["results"][1]["error"]["data"]["field"] == 'records.1.metadata["bad key."]'


def test_filters_on_recall_and_list(gateway: Rpc) -> None:
    ident = uid()
    gateway.result("meta/agent_memory/remember_batch", {"identity": ident, "records": [
        {"title": f"Coffee note {i}", "body": f"coffee tasting number {i}",
         "metadata": {"n": i, "kind": "even" if i % 2 == 0 else "odd", "who": {"name": f"u{i}"}}}
        for i in range(12)
    ]})
    assert _listed(gateway, ident, {"n": {"$gt": 9}}) == ["Coffee note 11", "Coffee note 10"]  # 10 > 9 as numbers
    assert _listed(gateway, ident, {"who.name": "u3"}) == ["Coffee note 3"]
    assert _listed(gateway, ident, {"$or": [{"n": 1}, {"kind": "even", "n": {"$lt": 2}}]}) == [
        "Coffee note 1", "Coffee note 0"]
    assert len(_listed(gateway, ident, {"n": {"$nin": [1, 2, 3]}})) == 9
    titles = [r["title"] for r in gateway.recall(ident, "coffee tasting", filter={"kind": "odd"},
                                                 max_entries=20)["records"]]
    assert len(titles) == 6 and all(int(t.split()[-1]) % 2 == 1 for t in titles)
    # paging a filtered list
    page = gateway.result("meta/agent_memory/list", {"identity": ident, "filter": {"kind": "even"}, "limit": 4})
    rest = gateway.result("meta/agent_memory/list", {"identity": ident, "filter": {"kind": "even"}, "limit": 4,
                                                     "cursor": page["next_cursor"]})
    assert len(page["records"]) == 4 and len(rest["records"]) == 2 and rest["next_cursor"] is None


@pytest.mark.parametrize(("params", "fragment"), [
    ({"filter": {"n": {"$regex": "a.*"}}}, '"$regex" is not supported'),
    ({"filter": {"$where": "1"}}, '"$where" is not supported'),
    ({"filter": {'a"] OR 1=1 --': 1}}, "is not a key path"),
    ({"filter": {"a..b": 1}}, "is not a key path"),
    ({"filter": {"n": {"$in": list(range(257))}}}, "at most 256 values"),
    ({"filter": {"n": {"$gt": True}}}, "$gt takes a number or a string"),
    ({"filter": {"n": {"$in": [[1]]}}}, "$in values must be"),
    ({"filter": [1]}, "filter"),
    ({"filter": {"n": {"$gt": "a\x00b"}}}, "must not contain NUL"),
    ({"filter": {"n": 2**53}}, "integers must be within"),
    ({"filter": {"a" * 65: 1}}, "is not a key path"),
    ({"filter": {"$and": [{"$and": [{"$and": [{"$and": [{"$and": [{"$and": [{"$and": [{"$and": [{"n": 1}]}]}]}]}]}]}]}]}},
     "nest at most 8"),
    # ``$not`` on a key nests like ``$not`` on a filter: nine deep is past the cap, fifty deep would
    # overflow SQLite's parser (an ``io`` error) were it not refused as a cap first
    ({"filter": {"n": _key_nots(9)}}, "nest at most 8"),
    ({"filter": {"n": _key_nots(50)}}, "nest at most 8"),
    # an empty filter inside a logical operator is refused by name, not compiled to broken SQL (an io error)
    ({"filter": {"$and": [{}]}}, "must not be empty"),
    ({"filter": {"$or": [{"n": 1}, {}]}}, "must not be empty"),
    ({"filter": {"$not": {}}}, "must not be empty"),
    ({"filter": {"$not": {"$and": [{}]}}}, "must not be empty"),
])
def test_bad_filters_are_refused_naming_the_rule(gateway: Rpc, params: dict[str, Any], fragment: str) -> None:
    ident = uid()
    for method in ("meta/agent_memory/list", "meta/agent_memory/recall"):
        err = gateway.error(method, {"identity": ident, **params})
        assert err["code"] == -32602, err
        assert "filter" in err["message"] and fragment in err["message"], err
        assert err["data"].get("field") == "filter", err  # a client reads which field broke the rule


@pytest.mark.parametrize(("metadata", "fragment"), [
    ({"$op": 1}, "must not start with '$'"),
    ({"a.b": 1}, "must not contain '.'"),
    ({"a": {"b": {"c": {"d": {"e": {}}}}}}, "nest at most 5"),
    ({f"k{i}": i for i in range(129)}, "at most 128 keys"),
    ({"big": "x" * 9000}, "at most 8192 bytes"),
    ({"n": 2**60}, "integers must be within"),
    ([1, 2], "metadata"),
])
def test_bad_metadata_is_refused_naming_the_field(gateway: Rpc, metadata: Any, fragment: str) -> None:
    ident = uid()
    err = gateway.error("meta/agent_memory/remember", {"identity": ident, "title": "T", "body": "B",
                                                       "metadata": metadata})
    assert err["code"] == -32602 and "metadata" in err["message"] and fragment in err["message"], err
    assert gateway.result("meta/agent_memory/list", {"identity": ident})["records"] == []


def test_a_secret_in_metadata_is_refused_and_not_echoed(gateway: Rpc) -> None:
    ident = uid()
    err = gateway.error("meta/agent_memory/remember", {"identity": ident, "title": "Deploy", "body": "keys rotated",
                                                       "metadata": {"note": {"aws": "AKIAIOSFODNN7EXAMPLE"}}})
    assert "IOSFODNN7" not in str(err)
    err = gateway.error("meta/agent_memory/remember", {"identity": ident, "title": "Deploy", "body": "keys rotated",
                                                       "metadata": {"ghp_" + "a" * 36: 1}})
    assert "aaaa" not in str(err)
    assert gateway.result("meta/agent_memory/list", {"identity": ident})["records"] == []


def test_filter_keys_are_data_and_other_identities_never_leak(gateway: Rpc) -> None:
    mine, theirs = uid(), uid()
    gateway.remember(theirs, "Their secret plan", "coffee for the other team", metadata={"team": "red"})
    gateway.remember(mine, "My plan", "coffee for my team", metadata={"team": "blue", "a') OR 1=1 --": "x"})
    assert _listed(gateway, mine, {"team": "red"}) == []
    assert _listed(gateway, mine, {"a') OR 1=1 --": "x"}) == ["My plan"]
    assert _listed(gateway, mine, {"$or": [{"team": "red"}, {"team": {"$ne": "red"}}]}) == ["My plan"]
    assert [r["title"] for r in gateway.recall(mine, "coffee team", filter={"team": "red"})["records"]] == []
    assert [r["title"] for r in gateway.recall(mine, "coffee team", filter={"team": {"$ne": "x"}})["records"]] == [
        "My plan"]
