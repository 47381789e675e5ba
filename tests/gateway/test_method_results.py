"""The method table holds every answer to its method's result model (``MethodSpec.answer``): a service's
dict is validated and sent member for member as it was, a model instance is dumped, and an answer that
does not fit is refused as ``-32603`` without reaching the caller."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from meta_memory.access.requirements import PUBLIC
from meta_memory.errors import InternalError
from meta_memory.rpc.registry import FreshJson, MethodSpec, MethodTable
from meta_memory.rpc.results import ForgetResult, RecallResult, RememberResult


def _spec(result: Any) -> MethodSpec:
    return MethodSpec(name="meta/x", parse=lambda raw: raw, handler=lambda rt, ctx, p: None, requires=PUBLIC,
                      mutating=False, result=result)


RECORD = {"memory_id": "mem-1", "title": "t", "body": "b", "tags": [], "metadata": {}, "created_at_ms": 1,
          "updated_at_ms": 2, "expires_at_ms": None}


def test_a_services_dict_is_sent_unchanged_members_present_only_then_stay_absent() -> None:
    recall = {"records": [RECORD], "skip_reason": None}  # no degraded_reason: present only when degraded
    assert _spec(RecallResult).answer(recall) == recall
    remembered = {**RECORD, "created": True, "supersedes": None, "tags_added": []}  # no quarantined
    sent = _spec(RememberResult).answer(remembered)
    assert sent == remembered and list(sent) == list(remembered)


def test_a_model_instance_is_dumped() -> None:
    assert _spec(ForgetResult).answer(ForgetResult(memory_id="m", deleted=True)) == {"memory_id": "m", "deleted": True}


@pytest.mark.parametrize("bad", [
    {"memory_id": "m"},  # a member missing
    {"memory_id": "m", "deleted": True, "secret": "x"},  # a member the model does not have
    {"memory_id": 5, "deleted": True},  # a member of the wrong type
    ["m", True],
])
def test_an_answer_outside_the_model_is_refused_as_internal_and_logged(bad: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="meta_memory.rpc.registry"), pytest.raises(InternalError) as err:
        _spec(ForgetResult).answer(bad)
    assert err.value.to_jsonrpc() == {"code": -32603, "message": "Internal error", "data": {"kind": "internal"}}
    assert "meta/x answered outside its result model" in caplog.text


def test_a_plain_result_type_is_validated_too() -> None:
    spec = _spec(dict[str, Any])
    assert spec.answer({"openrpc": "1.3.2"}) == {"openrpc": "1.3.2"}
    with pytest.raises(InternalError):
        spec.answer(["not", "an", "object"])


def test_every_method_declares_its_result() -> None:
    with pytest.raises(TypeError, match="must declare result="):
        MethodTable().method("x/y", requires=PUBLIC, mutating=False)(lambda rt, ctx, p: None)


def test_a_fresh_answer_is_validated_then_sent_as_built() -> None:
    recall = {"records": [dict(RECORD, tags=["a"], metadata={"k": [1]})], "skip_reason": None}
    assert _spec(RecallResult).answer(FreshJson(recall)) is recall  # not copied
    with pytest.raises(InternalError):
        _spec(RecallResult).answer(FreshJson({"records": [{"memory_id": "m"}], "skip_reason": None}))


def test_a_recall_answer_is_the_callers_own(tmp_path: Any) -> None:
    from pathlib import Path

    from meta_memory.sdk import Meta

    with Meta.builder().persistent_state(Path(tmp_path) / "state").build() as h:
        h.call("meta/agent_memory/remember", {"identity": "lead:main", "title": "Elm", "body": "The elm shades the porch.",
                                              "tags": ["tree"], "metadata": {"where": {"side": ["north"]}}})
        ask = {"identity": "lead:main", "query_text": "elm porch"}
        first = h.call("meta/agent_memory/recall", ask)
        assert RecallResult.model_validate(first).model_dump(mode="json", exclude_unset=True) == first
        record = first["records"][0]
        record["tags"].append("changed")
        record["metadata"]["where"]["side"].append("south")
        record["title"] = "changed"
        again = h.call("meta/agent_memory/recall", ask)["records"][0]
        assert (again["title"], again["tags"], again["metadata"]) == ("Elm", ["tree"], {"where": {"side": ["north"]}})
