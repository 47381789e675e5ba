"""``meta/agent_memory/update`` of an id that names no record of the identity answers as ``history`` and
``erase`` do, the spec's unknown memory record: ``-32001`` ``unknown memory record '<id>'``,
``data: {kind: "not_found", memory_id}`` (docs/rpc.md's error table), not a store refusal (-32040). An
unknown id, another identity's record, another realm's and an erased one are told alike (no existence
oracle); the SDK raises ``RecordNotFound`` for it."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory import Meta
from meta_memory.errors import RecordNotFound

pytestmark = pytest.mark.gateway

ME = "agent:updater"


def test_update_of_an_id_no_record_of_the_identity_holds_is_not_found(gateway: Any) -> None:
    mine = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Mine", "body": "kept"})
    theirs = gateway.result("meta/agent_memory/remember", {"identity": "agent:other", "title": "Theirs",
                                                           "body": "not mine"})
    elsewhere = gateway.result("meta/agent_memory/remember", {"identity": ME, "realm": "ops", "title": "Ops",
                                                              "body": "another realm"})
    erased = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Gone", "body": "erased"})
    gateway.result("meta/agent_memory/erase", {"identity": ME, "memory_id": erased["memory_id"]})

    for memory_id in ("mem-does-not-exist", theirs["memory_id"], elsewhere["memory_id"], erased["memory_id"]):
        refused = gateway.error("meta/agent_memory/update", {"identity": ME, "memory_id": memory_id,
                                                             "title": "Changed"})
        assert refused == {"code": -32001, "message": f"unknown memory record '{memory_id}'",
                           "data": {"kind": "not_found", "memory_id": memory_id}}, refused
        if memory_id != erased["memory_id"]:  # history still lists an erased version (content withheld)
            assert gateway.error("meta/agent_memory/history", {"identity": ME, "memory_id": memory_id}) == refused
    # nothing was written anywhere
    assert [r["title"] for r in gateway.result("meta/agent_memory/list", {"identity": ME})["records"]] == ["Mine"]
    assert [r["title"] for r in gateway.result("meta/agent_memory/list",
                                               {"identity": "agent:other"})["records"]] == ["Theirs"]
    assert gateway.result("meta/agent_memory/list", {"identity": ME})["records"][0]["memory_id"] == mine["memory_id"]

    with Meta.connect(gateway.url) as meta, pytest.raises(RecordNotFound) as caught:
        meta.update_agent_memory(ME, "mem-does-not-exist", title="Changed")
    assert caught.value.memory_id == "mem-does-not-exist"


def test_update_of_a_superseded_version_stays_a_store_refusal(gateway: Any) -> None:
    """A version that exists but is no longer current is no unknown record: -32040 naming the current one."""
    first = gateway.result("meta/agent_memory/remember", {"identity": ME, "title": "Plan", "body": "one"})
    second = gateway.result("meta/agent_memory/update", {"identity": ME, "memory_id": first["memory_id"],
                                                         "body": "two"})
    refused = gateway.error("meta/agent_memory/update", {"identity": ME, "memory_id": first["memory_id"],
                                                         "body": "three"})
    assert refused["code"] == -32040 and refused["data"]["reason"] == "invalid_record"
    assert second["memory_id"] in refused["message"]
