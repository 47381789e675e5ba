"""Strict parsing of the memory tool's arguments, with its exact error texts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.tool.args import (
    ForgetAction,
    ProposeToMobAction,
    RecallAction,
    RecordDraft,
    RememberAction,
    ToolArgumentError,
    UpdateAction,
    parse_arguments,
)
from meta_memory.tool.schema import ALLOWED_FIELDS


def error(args: Any) -> str:
    with pytest.raises(ToolArgumentError) as info:
        parse_arguments(args)
    return info.value.message


def test_remember_normalises_title_body_and_description() -> None:
    got = parse_arguments(
        {"action": "remember", "title": "  Deploy\n  rule ", "body": "\n Needs approval. \n",
         "description": " when   deploying ", "tags": [" ops ", "ops", "prod"]}
    )
    assert isinstance(got, RememberAction)
    assert got.record == RecordDraft(title="Deploy rule", body="Needs approval.", description="when deploying",
                                     tags=("ops", "prod"))
    assert got.record.kind == "fact" and got.record.trust == "agent_observed" and got.record.verification is None


@pytest.mark.parametrize("action", ["remember", "propose_to_mob"])
def test_title_and_body_are_required(action: str) -> None:
    assert error({"action": action, "body": "b"}) == f'`title` is required for action "{action}"'
    assert error({"action": action, "title": " \t ", "body": "b"}) == "title must not be empty"
    assert error({"action": action, "title": "t"}) == f'`body` is required for action "{action}"'
    assert error({"action": action, "title": "t", "body": "  "}) == "body must not be empty"


def test_update_requires_memory_id_then_title_and_body() -> None:
    assert error({"action": "update", "title": "t", "body": "b"}) == '`memory_id` is required for action "update"'
    assert error({"action": "update", "memory_id": " "}) == '`memory_id` is required for action "update"'
    assert error({"action": "update", "memory_id": "m1", "body": "b"}) == '`title` is required for action "update"'
    got = parse_arguments({"action": "update", "memory_id": " m1 ", "title": "t", "body": "b", "kind": "gotcha"})
    assert isinstance(got, UpdateAction) and got.memory_id == "m1"
    assert got.record == RecordDraft(title="t", body="b", kind="gotcha")


def test_forget_requires_memory_id() -> None:
    assert error({"action": "forget"}) == '`memory_id` is required for action "forget"'
    assert error({"action": "forget", "memory_id": None}) == '`memory_id` is required for action "forget"'
    assert parse_arguments({"action": "forget", "memory_id": "mem-1"}) == ForgetAction(memory_id="mem-1")


def test_unknown_kind_and_epistemic() -> None:
    base = {"action": "remember", "title": "t", "body": "b"}
    assert error({**base, "kind": "rumour"}) == "unknown record kind 'rumour'"
    assert error({**base, "epistemic": "guessed"}) == "unknown epistemic status 'guessed'"


def test_operator_said_adds_the_epistemic_tag_once() -> None:
    got = parse_arguments({"action": "remember", "title": "t", "body": "b", "epistemic": "operator_said",
                           "tags": ["epistemic:operator_said", "x"]})
    assert got.record.tags == ("epistemic:operator_said", "x")
    got = parse_arguments({"action": "remember", "title": "t", "body": "b", "epistemic": "operator_said"})
    assert got.record.tags == ("epistemic:operator_said",)
    assert got.record.trust == "agent_observed" and got.record.verification is None


def test_a_blank_tag_is_refused_naming_it_as_the_rpc_does() -> None:
    """A blank tag is no tag the model meant: refused by the RPC's rule, in its words, never dropped unseen."""
    for blank in ("", "  ", "\t"):
        assert error({"action": "remember", "title": "t", "body": "b", "tags": ["ops", blank]}) == (
            "tags.1 must not be empty")
    assert error({"action": "update", "memory_id": "mem-1", "title": "t", "body": "b", "tags": [""]}) == (
        "tags.0 must not be empty")


@pytest.mark.timeout(20)
def test_a_flood_of_distinct_tags_is_read_in_one_pass() -> None:
    """Repeats are dropped in order in time linear in the count, so a model sending 200,000 distinct tags (some
    2 MB, under the request cap) is refused by the count rule within the bound (pairwise checks took minutes)."""
    got = parse_arguments({"action": "remember", "title": "t", "body": "b", "tags": [" a", "b", "a ", "b", "c"]})
    assert got.record.tags == ("a", "b", "c")
    flood = {"action": "remember", "title": "t", "body": "b", "tags": [f"t{i}" for i in range(200_000)]}
    assert error(flood) == "tags must contain at most 32 entries"  # the RPC's count rule, before any tag is read


def test_verified_claim_needs_evidence_and_becomes_a_provenance_claim() -> None:
    base = {"action": "remember", "title": "t", "body": "b", "epistemic": "verified_claim"}
    message = '`verification_evidence` is required with epistemic="verified_claim": describe what you checked'
    assert error(base) == message
    assert error({**base, "verification_evidence": "   "}) == message
    got = parse_arguments({**base, "verification_evidence": " ran the test suite "})
    assert got.record.verification == {"checked": "ran the test suite", "evidence": []}
    assert got.record.trust == "agent_observed" and got.record.tags == ()
    assert got.record.to_json()["verification"] == {"checked": "ran the test suite", "evidence": []}


def test_unknown_action() -> None:
    expected = "unknown action 'delete' (expected remember, update, forget, recall, or propose_to_mob)"
    assert error({"action": "delete"}) == expected
    assert error({}) == "`action` is required (expected remember, update, forget, recall, or propose_to_mob)"
    assert error({"action": 3}).startswith("`action` must be a string")


def test_unknown_fields_are_refused_by_name() -> None:
    msg = error({"action": "remember", "title": "t", "body": "b", "identity": "boss:1"})
    assert msg.startswith("unknown field 'identity' (the memory tool accepts: action, title, body,")
    msg = error({"action": "recall", "scope": "mob", "realm": "x"})
    assert msg.startswith("unknown fields 'scope', 'realm' (")


def test_types_are_checked() -> None:
    assert error({"action": "remember", "title": 5, "body": "b"}) == "`title` must be a string"
    assert error({"action": "remember", "title": "t", "body": "b", "tags": "x"}) == "`tags` must be an array of strings"
    assert error({"action": "remember", "title": "t", "body": "b", "tags": [1]}) == "`tags` must be an array of strings"
    for bad in (0, -1, True, 2.0, "3"):
        assert error({"action": "recall", "max_entries": bad}) == "`max_entries` must be an integer of at least 1"


def test_recall_arguments() -> None:
    assert parse_arguments({"action": "recall"}) == RecallAction()
    assert parse_arguments({"action": "recall", "query_text": "   "}).selection == "always"
    got = parse_arguments({"action": "recall", "query_text": " passport ", "max_entries": 500})
    assert isinstance(got, RecallAction) and (got.query_text, got.max_entries) == ("passport", 64)
    assert got.selection == "contextual"


def test_nulls_count_as_absent() -> None:
    got = parse_arguments({"action": "remember", "title": "t", "body": "b", "kind": None, "epistemic": None,
                           "tags": None, "memory_id": None})
    assert isinstance(got, RememberAction) and got.record == RecordDraft(title="t", body="b")


def test_json_text_and_non_objects() -> None:
    assert parse_arguments(json.dumps({"action": "forget", "memory_id": "m"})) == ForgetAction(memory_id="m")
    for bad in ("not json", "[1]", [], 3, None):
        assert error(bad) == "memory tool arguments must be a JSON object"


def test_propose_parses_a_record() -> None:
    got = parse_arguments({"action": "propose_to_mob", "title": "t", "body": "b", "kind": "procedure"})
    assert isinstance(got, ProposeToMobAction) and got.record == RecordDraft(title="t", body="b", kind="procedure")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
field_names = st.sampled_from(list(ALLOWED_FIELDS)) | st.text(max_size=12)
actions = st.sampled_from(["remember", "update", "forget", "recall", "propose_to_mob", "nope", ""])


@settings(max_examples=250)
@given(st.dictionaries(field_names, json_values, max_size=8), actions, st.booleans())
def test_random_arguments_only_ever_raise_tool_errors(args: dict[str, Any], action: str, set_action: bool) -> None:
    if set_action:
        args["action"] = action
    try:
        got = parse_arguments(args)
    except ToolArgumentError as exc:
        assert exc.message and isinstance(exc.message, str)
        return
    assert got.action == args["action"]
    assert set(args) <= set(ALLOWED_FIELDS)
    record = getattr(got, "record", None)
    if record is not None:
        assert record.title and record.title == " ".join(record.title.split())
        assert record.body == record.body.strip() and record.body
        assert record.trust == "agent_observed"


@given(st.text(max_size=40), st.text(max_size=200))
def test_valid_title_and_body_always_parse(title: str, body: str) -> None:
    args = {"action": "remember", "title": title, "body": body}
    if not title.split() or not body.strip():  # sent blank: the record's own rule, title first
        assert error(args) == ("title" if not title.split() else "body") + " must not be empty"
    else:
        got = parse_arguments(args)
        assert got.record.title == " ".join(title.split()) and got.record.body == body.strip()


def test_every_action_type_checks_every_member_first_in_schema_order() -> None:
    """Each action's model holds all the schema's members to their types before its own rules, in the
    order the texts name them: a member the action ignores is still refused by its type."""
    assert error({"action": "forget", "memory_id": "m", "title": 5}) == "`title` must be a string"
    assert error({"action": "recall", "tags": "x", "title": 5}) == "`title` must be a string"
    assert error({"action": "update", "body": 1, "tags": [2]}) == "`body` must be a string"
    assert error({"action": "remember", "tags": [2], "max_entries": 0}) == "`tags` must be an array of strings"
    assert error({"action": "remember", "ttl_s": 0, "max_entries": "x"}) == "`max_entries` must be an integer of at least 1"
    assert error({"action": "remember", "title": "t", "body": "b", "ttl_s": 1.5}).startswith("`ttl_s` must be an integer")
    # the type rule comes before the action's required members
    assert error({"action": "update", "query_text": 3}) == "`query_text` must be a string"


def test_propose_refuses_ttl_before_its_record_rules() -> None:
    assert error({"action": "propose_to_mob", "ttl_s": 60}) == '`ttl_s` applies to actions "remember" and "update" only'
    assert error({"action": "propose_to_mob", "title": "t"}) == '`body` is required for action "propose_to_mob"'


def test_memory_id_longer_than_any_record_id_is_refused_without_echo() -> None:
    msg = error({"action": "forget", "memory_id": "m" * 5000})
    assert msg.startswith("`memory_id`: memory_id must be at most ") and "mmmm" not in msg
