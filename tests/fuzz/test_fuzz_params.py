"""Fuzzed parameters: wrong types for every parameter of every method, unknown fields, random
envelopes. Every answer is a well-formed JSON-RPC response; a
refused parameter is -32602 with ``data.field`` naming it; the gateway never dies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_support import METHODS, Fuzzed, check_response, kind_of, valid_params
from meta_memory.errors import echo

pytestmark = pytest.mark.gateway

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

json_scalars = st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def test_every_advertised_method_is_covered(fz: Fuzzed) -> None:
    advertised = set(fz.call("meta/capabilities")["result"]["methods"])
    assert advertised == set(METHODS), (advertised ^ set(METHODS))


@pytest.mark.parametrize("method", sorted(METHODS))
def test_valid_shapes_are_never_refused_as_params(fz: Fuzzed, method: str) -> None:
    """The base requests are type-correct: they succeed or get a domain refusal, never -32602/-32603."""
    out = fz.call(method, valid_params(method))
    if "error" in out:
        assert out["error"]["code"] in (-32001, -32040, -32043), (method, out)


def _wrong(field_types: set[str], nullable: bool) -> st.SearchStrategy[Any]:
    def bad(v: Any) -> bool:
        kind = kind_of(v)
        if kind == "null":
            return not nullable
        if kind == "num" and "int" in field_types:
            return v != int(v) or True  # 1.0 is not an integer either
        return kind not in field_types

    return json_values.filter(bad)


@st.composite
def wrong_typed_call(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    method = draw(st.sampled_from(sorted(m for m in METHODS if METHODS[m])))
    field = draw(st.sampled_from(sorted(METHODS[method])))
    types, nullable, _ = METHODS[method][field]
    params = valid_params(method)
    params[field] = draw(_wrong(types, nullable))
    return method, field, params


@SETTINGS
@given(case=wrong_typed_call())
def test_wrong_type_for_any_parameter_is_refused_naming_it(fz: Fuzzed, case: tuple[str, str, dict[str, Any]]) -> None:
    method, field, params = case
    out = fz.call(method, params)
    assert "error" in out, (method, field, params, out)
    err = out["error"]
    assert err["code"] == -32602, (method, field, params, err)
    named = err["data"].get("field")
    assert named == field or (named or "").startswith(field + "."), (method, field, params, err)
    assert err["message"].startswith("Invalid params: "), err


@SETTINGS
@given(method=st.sampled_from(sorted(METHODS)), name=st.text(min_size=1, max_size=12), value=json_values)
def test_unknown_fields_are_refused_naming_them(fz: Fuzzed, method: str, name: str, value: Any) -> None:
    if name in METHODS[method] or (method == "meta/turn/defang" and name == "blocks"):
        return
    params = {**valid_params(method), name: value}
    err = fz.call(method, params)["error"]
    # named as a refusal repeats a caller's name: invisible and controlling characters escaped (errors.echo)
    assert err["code"] == -32602 and err["data"].get("field") == echo(name), (method, name, err)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_an_unknown_field_with_hidden_characters_is_named_escaped(fz: Fuzzed, method: str) -> None:
    """Every method names an unknown member as every refusal repeats a caller's name: the unit separator and
    a direction override come back as escapes, in the message and in ``data.field``."""
    name = "x\x1fy\u202ez"
    err = fz.call(method, {**valid_params(method), name: 1})["error"]
    assert err["code"] == -32602 and err["data"].get("field") == "x\\x1fy\\u202ez", (method, err)
    assert "\x1f" not in err["message"] and "\u202e" not in err["message"], (method, err)


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("params", [[], [1, "a"], "x", 7, True], ids=["empty-array", "array", "string", "int", "bool"])
def test_params_that_are_not_an_object(fz: Fuzzed, method: str, params: Any) -> None:
    """Arrays are valid JSON-RPC params (refused -32602 by every method: named params only);
    scalars are not (-32600). Both name ``params``."""
    out = fz.call(method, params)
    err = out["error"]
    want = -32602 if isinstance(params, list) else -32600
    assert err["code"] == want, (method, params, err)
    assert err["data"].get("field") == "params", (method, params, err)


envelopes = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0, None]) | json_values,
    "method": st.sampled_from(sorted(METHODS) + ["", "nope", "meta/"]) | json_values,
    "params": json_values,
    "id": json_values,
    "extra": json_values,
})


@SETTINGS
@given(message=envelopes | json_values)
def test_random_envelopes_get_well_formed_answers(fz: Fuzzed, message: Any) -> None:
    body = json.dumps(message).encode()
    resp = fz.post(body)
    if resp.status_code == 204:  # a notification (no id): no response body
        assert isinstance(message, dict) and "id" not in message
        return
    assert resp.status_code == 200, resp
    out = resp.json()
    if isinstance(message, list) and message:
        if out is None:
            return
        if isinstance(out, dict):  # the whole batch was refused
            check_response(out, None)
        else:
            for one in out:
                check_response(one)
        return
    check_response(out)
    if isinstance(message, dict) and "error" in out and out["error"]["code"] in (-32600, -32602):
        assert out["error"]["data"].get("field"), out


@SETTINGS
@given(batch=st.lists(envelopes, min_size=1, max_size=20))
def test_random_batches_answer_every_call_in_order(fz: Fuzzed, batch: list[Any]) -> None:
    for i, m in enumerate(batch):
        m["id"] = i % 3  # duplicate ids on purpose
    resp = fz.post(json.dumps(batch).encode())
    assert resp.status_code == 200
    out = resp.json()
    assert isinstance(out, list) and len(out) == len(batch)
    for i, one in enumerate(out):
        check_response(one, i % 3)
    fz.alive()
