"""One place for each rule: an application write's fields are normalised and checked by the write planner
(its refusal names the field, for the RPC surface's ``-32602``, and is ``invalid_record`` to the store's
callers), and a request's ``filter`` is parsed once by its params model."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meta_memory.agent_memory import writes
from meta_memory.agent_memory.fields import FieldError, check_text_field, compact_whitespace
from meta_memory.agent_memory.filters import parse_filter
from meta_memory.errors import AgentMemoryError, ValueRuleBroken
from meta_memory.rpc.methods import agent_memory_params
from meta_memory.rpc.methods.agent_memory_params import ListParams, RecallParams
from meta_memory.rpc.params import parse_params

TEXT = st.text(alphabet=st.sampled_from(["a", "é", " ", "\t", "\n", "\u2003", "\x00", "🍵"]), max_size=120)


def _first_rule(title: str, body: str) -> FieldError | None:
    for name, value in (("title", compact_whitespace(title)), ("body", body.strip())):
        try:
            check_text_field(name, value)
        except FieldError as exc:
            return exc
    return None


@given(title=TEXT, body=TEXT)
def test_app_record_checks_title_then_body_once(title: str, body: str) -> None:
    expected = _first_rule(title, body)
    try:
        record = writes.app_record(title, body, ["B", "a "])
    except writes.RecordFieldRefused as exc:
        assert expected is not None
        assert (exc.field, exc.rule) == (expected.field, expected.rule)
        assert isinstance(exc, AgentMemoryError) and exc.reason == "invalid_record" and exc.detail == exc.rule
        assert isinstance(exc, ValueRuleBroken)
    else:
        assert expected is None
        assert (record.title, record.body, record.tags) == (compact_whitespace(title), body.strip(), ("a", "b"))


@pytest.mark.parametrize(("tags", "metadata", "field"), [
    ([f"t{i}" for i in range(33)], None, "tags"),
    (["x" * 65], None, "tags.0"),  # the tag at fault, by its index
    ([], {"$k": 1}, "metadata.$k"),  # the key at fault, by its path
    ([], [1], "metadata"),
])
def test_app_record_names_tags_and_metadata(tags: list[str], metadata: Any, field: str) -> None:
    with pytest.raises(writes.RecordFieldRefused) as info:
        writes.app_record("T", "B", tags, metadata=metadata)
    assert info.value.field == field


def test_revision_checks_the_given_fields_before_the_prior() -> None:
    with pytest.raises(writes.RecordFieldRefused) as info:
        writes.revision(None, " ", None, None, writes.KEEP_EXPIRY)
    assert (info.value.field, info.value.rule) == ("body", "body must not be empty")


FILTERS = [{"k": {"$eq": 1}}, {"$and": [{"a": {"$in": [1, 2]}}, {"$not": {"b": {"$gte": 2}}}]}, {}, None]


@pytest.mark.parametrize("model", [RecallParams, ListParams])
@pytest.mark.parametrize("wire", FILTERS)
def test_filter_is_parsed_once(monkeypatch: pytest.MonkeyPatch, model: type[RecallParams | ListParams],
                               wire: dict[str, Any] | None) -> None:
    calls: list[object] = []

    def counting(value: object) -> Any:
        calls.append(value)
        return parse_filter(value)

    monkeypatch.setattr(agent_memory_params, "parse_filter", counting)
    params = {"identity": "a:b"} if wire is None else {"identity": "a:b", "filter": wire}
    p = parse_params(model, params)
    assert len(calls) == (0 if wire is None else 1)  # an absent filter is not parsed at all
    assert p.filter == wire and p.where == parse_filter(wire)
    assert p.in_realm("r").where == p.where
    assert p.model_dump()["filter"] == wire
