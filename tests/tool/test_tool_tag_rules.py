"""The ``memory`` tool holds a model's tags to the rule the RPC holds an application's to (one rule,
:func:`meta_memory.agent_memory.fields.check_given_tags`): a blank tag is refused naming it, ``tags.<i>``,
never dropped unseen; and every rule of one tag names the tag by its place in the list the model sent, not
in the list left once repeats were dropped. Driven over a real gateway (``meta/agent_memory/tool``)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gateway

ID = "agent:tagger"


def _tool(gateway: Any, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = gateway.result("meta/agent_memory/tool", {"identity": ID, "session_key": "s1",
                                                                      "arguments": arguments})
    return result


@pytest.mark.parametrize(("tags", "field"), [
    (["ops", ""], "tags.1"),
    (["ops", "   "], "tags.1"),
    (["\t", "ops"], "tags.0"),
    (["ops", "ops", "x" * 65], "tags.2"),  # named where the model put it, repeats and all
    (["ops", "ops", "\u200b"], "tags.2"),
])
def test_a_tag_the_rpc_refuses_the_tool_refuses_alike(gateway: Any, tags: list[str], field: str) -> None:
    rpc = gateway.error("meta/agent_memory/remember", {"identity": ID, "title": "Deploys", "body": "on tuesdays",
                                                       "tags": tags})
    assert rpc["data"]["field"] == field, rpc
    rule = rpc["message"].removeprefix("Invalid params: ")
    assert rule.startswith(f"{field} ")

    said = _tool(gateway, action="remember", title="Deploys", body="on tuesdays", tags=tags)
    assert said["is_error"] is True and said["text"] == rule, said
    made = _tool(gateway, action="remember", title="Kept", body="the record to update", tags=["ops"])
    assert made["is_error"] is False, made
    kept = gateway.result("meta/agent_memory/list", {"identity": ID})["records"]
    assert [r["title"] for r in kept] == ["Kept"]  # the refused remember wrote nothing
    updated = _tool(gateway, action="update", memory_id=kept[0]["memory_id"], title="Kept", body="changed",
                    tags=tags)
    assert updated["is_error"] is True and updated["text"] == rule, updated
    after = gateway.result("meta/agent_memory/list", {"identity": ID})["records"]
    assert [(r["memory_id"], r["body"]) for r in after] == [(kept[0]["memory_id"], "the record to update")]


def test_a_blank_tag_in_a_listing_filter_is_named_as_a_writes_is(gateway: Any) -> None:
    refused = gateway.error("meta/agent_memory/list", {"identity": ID, "tags": ["ops", " "]})
    assert refused["data"]["field"] == "tags.1" and refused["message"] == "Invalid params: tags.1 must not be empty"
