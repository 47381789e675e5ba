"""A record's fields are normalised and held to their rules once, by the write planner, and the refusal
still reaches the caller of ``remember`` and ``update`` as ``-32602`` naming the field with the rule's
text; a ``remember_batch`` item gets the same error, naming ``records.<i>.<field>`` and ``op_index``. Over a
real gateway socket."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from meta_memory.agent_memory.fields import (
    MAX_BODY_BYTES,
    MAX_MEMORY_TAG_BYTES,
    MAX_MEMORY_TAGS,
    MAX_METADATA_DEPTH,
    MAX_TITLE_BYTES,
    METADATA_KEY_RULE,
    hidden_selectors_rule,
    hidden_tags_rule,
    private_use_rule,
)
from support import GatewayProcess, module_gateway

ME = "writer:main"
SHOWS_NOTHING = "must show a visible character (it holds only invisible, control and white-space characters)"


def _nest(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"k": value}
    return value


# (fields brought, the field named, the rule)
BROKEN: list[tuple[dict[str, Any], str, str]] = [
    ({"title": " \t\n "}, "title", "title must not be empty"),
    ({"title": "é" * (MAX_TITLE_BYTES // 2) + "x"}, "title", f"title must be at most {MAX_TITLE_BYTES} bytes"),
    ({"title": "\u202e\u200b"}, "title", f"title {SHOWS_NOTHING}"),
    ({"title": "\x1b \u2066\ufe0f"}, "title", f"title {SHOWS_NOTHING}"),
    ({"body": "\u3164\u200d\x07"}, "body", f"body {SHOWS_NOTHING}"),
    ({"title": "a\x00b"}, "title", "title must not contain NUL characters"),
    ({"body": "   "}, "body", "body must not be empty"),
    ({"body": "b" * (MAX_BODY_BYTES + 1)}, "body", f"body must be at most {MAX_BODY_BYTES} bytes"),
    ({"tags": [f"t{i}" for i in range(MAX_MEMORY_TAGS + 1)]}, "tags",
     f"tags must contain at most {MAX_MEMORY_TAGS} entries"),
    ({"tags": ["ok", "x" * (MAX_MEMORY_TAG_BYTES + 1)]}, "tags.1", f"tags.1 must be at most {MAX_MEMORY_TAG_BYTES} bytes"),
    ({"tags": ["ok", "  "]}, "tags.1", "tags.1 must not be empty"),
    ({"tags": ["ok", "\u200b"]}, "tags.1", f"tags.1 {SHOWS_NOTHING}"),
    ({"tags": ["ok", "policy\U000e0041"]}, "tags.1", hidden_tags_rule("tags.1")),
    ({"tags": ["ok", "x\ufe00\ufe01"]}, "tags.1", hidden_selectors_rule("tags.1")),
    ({"tags": ["ok", "\ue000x"]}, "tags.1", private_use_rule("tags.1")),
    ({"tags": ["\u202e\u3164", "ok"]}, "tags.0", f"tags.0 {SHOWS_NOTHING}"),
    ({"metadata": {"$k": 1}}, "metadata.$k", f'metadata.$k: {METADATA_KEY_RULE} (got the key "$k" in metadata)'),
    ({"metadata": {"ok": [{"a.b": 1}]}}, 'metadata.ok.0["a.b"]',
     f'metadata.ok.0["a.b"]: {METADATA_KEY_RULE} (got the key "a.b" in metadata["ok"][0])'),
    ({"metadata": {"source\u200b": 1}}, "metadata.source\\u200b",
     f'metadata.source\\u200b: {METADATA_KEY_RULE} (got the key "source\\u200b" in metadata)'),
    ({"metadata": _nest(MAX_METADATA_DEPTH + 1)}, "metadata",
     f"metadata must nest at most {MAX_METADATA_DEPTH} levels deep"),
]


def _records(gw: GatewayProcess, identity: str = ME) -> list[dict[str, Any]]:
    return list(gw.result("meta/agent_memory/list", {"identity": identity})["records"])


_CASES = itertools.count(1)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module's cases of one rule each: every case writes as an identity of its own (``me``)."""
    yield from module_gateway(tmp_path_factory, "field-rules")


@pytest.fixture
def me() -> str:
    """An identity no other case of the module writes as (``writer:case<n>``)."""
    return f"writer:case{next(_CASES)}"


@pytest.mark.parametrize(("fields", "field", "rule"), BROKEN, ids=[f"{f}-{r[:24]}" for _, f, r in BROKEN])
def test_remember_and_update_refusals_name_the_field(shared: GatewayProcess, me: str, fields: dict[str, Any],
                                                      field: str, rule: str) -> None:
    err = shared.error("meta/agent_memory/remember", {"identity": me, "title": "T", "body": "B", **fields})
    assert err == {"code": -32602, "message": f"Invalid params: {rule}",
                   "data": {"kind": "invalid_params", "field": field}}
    assert _records(shared, me) == []
    stored = shared.result("meta/agent_memory/remember", {"identity": me, "title": "Kept", "body": "kept body"})
    err = shared.error("meta/agent_memory/update", {"identity": me, "memory_id": stored["memory_id"], **fields})
    assert err == {"code": -32602, "message": f"Invalid params: {rule}",
                   "data": {"kind": "invalid_params", "field": field}}
    assert [r["memory_id"] for r in _records(shared, me)] == [stored["memory_id"]]


def test_update_field_refusal_comes_before_the_prior_is_read(gateway: GatewayProcess) -> None:
    err = gateway.error("meta/agent_memory/update", {"identity": ME, "memory_id": "mem-nosuchrecord", "title": " "})
    assert (err["code"], err["data"].get("field")) == (-32602, "title"), err


def test_fields_are_normalised_on_remember_and_update(gateway: GatewayProcess) -> None:
    got = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "  Trip \t to\nLisbon ",
                                                        "body": "\n seat 12A \n", "tags": ["Travel", " b ", "travel"],
                                                        "metadata": {"z": 1, "a": [True, None]}})
    assert (got["title"], got["body"], got["tags"]) == ("Trip to Lisbon", "seat 12A", ["b", "travel"])
    assert got["metadata"] == {"a": [True, None], "z": 1}
    up = gateway.result("meta/agent_memory/update", {"identity": ME, "memory_id": got["memory_id"],
                                                     "title": " New\u2003title ", "tags": ["Z", "z", "A"]})
    rec = up["record"]
    assert (rec["title"], rec["body"], rec["tags"]) == ("New title", "seat 12A", ["a", "z"])
    assert rec["metadata"] == {"a": [True, None], "z": 1}


@pytest.mark.parametrize(("fields", "field", "rule"), BROKEN, ids=[f"{f}-{r[:24]}" for _, f, r in BROKEN])
def test_a_batch_item_gets_the_error_that_record_alone_would_get(shared: GatewayProcess, me: str,
                                                                 fields: dict[str, Any], field: str, rule: str) -> None:
    """The item's error is a single ``remember``'s (``-32602``, ``invalid_params``), naming the field by its
    path in the call (``records.<i>.<field>``, as the call's shape refusals do) and the item (``op_index``);
    the item writes nothing, the others commit."""
    records = [{"title": "One", "body": "first"}, {"title": "T", "body": "B", **fields}]
    out = shared.result("meta/agent_memory/remember_batch", {"identity": me, "records": records})
    assert (out["created"], out["refused"]) == (1, 1)
    alone = shared.error("meta/agent_memory/remember", {"identity": me, "title": "T", "body": "B", **fields})
    path = f"records.1.{field}"
    assert out["results"][1] == {"op_index": 1, "error": {
        "code": alone["code"], "message": "Invalid params: " + path + rule[len(field):],
        "data": {"kind": alone["data"]["kind"], "field": path, "op_index": 1}}}
    assert [r["title"] for r in _records(shared, me)] == ["One"]


def test_a_tag_over_the_cap_is_named_by_its_index_in_a_batch_and_a_list(gateway: GatewayProcess) -> None:
    long_tag = "x" * (MAX_MEMORY_TAG_BYTES + 1)
    done = gateway.result("meta/agent_memory/remember_batch", {"identity": ME, "records": [
        {"title": "Fine", "body": "a fine record"}, {"title": "Tagged", "body": "b", "tags": ["ok", long_tag]}]})
    refused = done["results"][1]["error"]
    assert refused["data"]["field"] == "records.1.tags.1", refused
    assert refused["message"] == f"Invalid params: records.1.tags.1 must be at most {MAX_MEMORY_TAG_BYTES} bytes"
    err = gateway.error("meta/agent_memory/list", {"identity": ME, "tags": [long_tag]})
    assert (err["data"]["field"], err["message"]) == (
        "tags.0", f"Invalid params: tags.0 must be at most {MAX_MEMORY_TAG_BYTES} bytes")
