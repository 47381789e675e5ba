"""RPC param rules of meta/memory/index|query|stores (reference §1.7, §1.12)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.ledger.errors import LedgerValidationError
from meta_memory.ledger.model import (
    IndexRequest,
    QueryRequest,
    parse_index_params,
    parse_query_params,
    parse_stores_params,
)
from meta_memory.ledger.normalise import WHITESPACE, canonical_token, name_rule
from meta_memory.rpc.params import rule_to_invalid_params

BASE = {"entity": "identity:ops", "topic": "deployment", "fact": "Production deploys require approval."}


def refusal(fn: Any, params: object) -> LedgerValidationError:
    with pytest.raises(LedgerValidationError) as info:
        fn(params)
    answer = rule_to_invalid_params(info.value).to_jsonrpc()
    assert answer["code"] == -32602
    assert answer["message"] == f"Invalid params: {info.value.rule}"
    assert answer["data"] == {"kind": "invalid_params", **({"field": info.value.field} if info.value.field else {})}
    return info.value


@pytest.mark.parametrize("params", [None, [], "x", 3])
def test_index_params_must_be_an_object(params: object) -> None:
    assert refusal(parse_index_params, params).rule == "params must be a JSON object"


@pytest.mark.parametrize(
    ("change", "rule", "field"),
    [
        ({"entity": None}, "entity must be a non-empty string", "entity"),
        ({"entity": "  "}, "entity must be a non-empty string", "entity"),
        ({"entity": 7}, "entity must be a non-empty string", "entity"),
        ({"topic": ""}, "topic must be a non-empty string", "topic"),
        ({"topic": ["t"]}, "topic must be a non-empty string", "topic"),
        ({"store": ""}, "store must be a non-empty string when provided", "store"),
        ({"store": 1}, "store must be a non-empty string when provided", "store"),
        (
            {"store": " Graph "},
            "store 'graph' is unsupported (allowed: knowledge_graph, vector, timeline, todo, top_of_mind)",
            "store",
        ),
        ({"fact": "   "}, "fact must be a non-empty string when provided", "fact"),
        ({"fact": 5}, "fact must be a non-empty string when provided", "fact"),
        ({"metadata": [1]}, "metadata must be a JSON object when provided", "metadata"),
        ({"metadata": "source"}, "metadata must be a JSON object when provided", "metadata"),
        ({"conflict": "true"}, "conflict must be a boolean when provided", "conflict"),
        ({"conflict": 1}, "conflict must be a boolean when provided", "conflict"),
        ({"conflict_reason": 3}, "conflict_reason must be a string when provided", "conflict_reason"),
        ({"fact": None}, "fact is required unless conflict=true", "fact"),
        ({"fact": None, "conflict": False}, "fact is required unless conflict=true", "fact"),
        ({"colour": "blue"}, "unknown field 'colour'", "colour"),
    ],
)
def test_index_param_rules(change: dict[str, Any], rule: str, field: str) -> None:
    params = {**BASE, **change}
    if change.get("entity", 0) is None:
        del params["entity"]
    err = refusal(parse_index_params, params)
    assert err.rule == rule
    assert rule_to_invalid_params(err).to_jsonrpc()["data"] == {"kind": "invalid_params", "field": field}


def test_index_params_accept_the_full_shape_and_nulls_as_absent() -> None:
    req = parse_index_params(
        {
            **BASE,
            "store": "Vector",
            "metadata": {"source": "runbook"},
            "conflict": True,
            "conflict_reason": "two runbooks disagree",
        }
    )
    assert req == IndexRequest(
        entity="identity:ops",
        topic="deployment",
        store="Vector",
        fact="Production deploys require approval.",
        metadata={"source": "runbook"},
        conflict=True,
        conflict_reason="two runbooks disagree",
    )
    conflict_only = parse_index_params(
        {"entity": "e", "topic": "t", "fact": None, "store": None, "metadata": None, "conflict": True}
    )
    assert conflict_only.fact is None and conflict_only.conflict is True


def test_query_params() -> None:
    assert parse_query_params(None) == QueryRequest()
    assert parse_query_params({}) == QueryRequest()
    assert parse_query_params({"query": "recipient consent", "store": "todo"}) == QueryRequest(
        query="recipient consent", store="todo"
    )
    # Empty and unsupported store filters are absent filters, not refusals (seed: Querying).
    assert parse_query_params({"store": "nonsense", "entity": " "}).store == "nonsense"


@pytest.mark.parametrize(
    ("params", "rule"),
    [
        ({"query": 42}, "query filter must be a string"),
        ({"entity": 1}, "entity filter must be a string"),
        ({"topic": True}, "topic filter must be a string"),
        ({"store": ["todo"]}, "store filter must be a string"),
        ({"fact": "x"}, "unknown field 'fact'"),
        ([1], "params must be a JSON object"),
    ],
)
def test_query_param_rules(params: object, rule: str) -> None:
    assert refusal(parse_query_params, params).rule == rule


def test_stores_params() -> None:
    parse_stores_params(None)
    parse_stores_params({})
    assert refusal(parse_stores_params, {"store": "todo"}).rule == "unknown field 'store'"
    assert refusal(parse_stores_params, "x").rule == "params must be a JSON object"


#: Every ASCII control character, Unicode whitespace beyond ASCII, and a few printable characters (few
#: enough that no text drawn from them looks like a credential, which the ledger refuses on its own).
_TOKEN_TEXT = st.text(st.sampled_from([chr(c) for c in range(0x20)] + ["\x7f", "\x85", "\u2028", "\u3000", "\xa0",
                                                                      "a", "Z", "é", ":", "-", " ", "7"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(["entity", "topic"]), value=_TOKEN_TEXT)
def test_entity_and_topic_refuse_control_characters_as_identities_do(field: str, value: str) -> None:
    """The field rule: a non-blank token is refused naming the field when a control character (U+0000..U+001F,
    U+007F) is left after trimming, with that rule; else when it breaks the name rule identities follow (a C1
    control, a space other than U+0020, a line separator: it would read as another name), with that rule;
    leading or trailing whitespace (tab, newline) is trimmed first, never refused."""
    params = {**BASE, field: value}
    trimmed = value.strip(WHITESPACE)
    if not trimmed:
        assert refusal(parse_index_params, params).rule == f"{field} must be a non-empty string"
    elif any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in trimmed):
        err = refusal(parse_index_params, params)
        assert (err.field, err.rule) == (field, f"{field} must not contain control characters (tab, newline, NUL, ...)")
    elif any(ch in "\x85\u2028\u3000\xa0" for ch in trimmed):
        err = refusal(parse_index_params, params)
        assert err.field == field and err.rule == name_rule(field, canonical_token(value) or "") and err.rule.startswith(f"{field} must")
    else:
        assert getattr(parse_index_params(params), field) == value
