"""The one session-key rule (``session_ref.check_session_key``), as every session method's params apply it.

A session key is taken exactly as given: one with whitespace at either end, or holding an invisible,
direction-changing or control character, is refused naming ``session_key`` and the rule, never trimmed
or cleaned into the key of another session (``" s1"`` and ``"s1"`` must not silently be one session).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from meta_memory.errors import InvalidParams
from meta_memory.limits import MAX_SESSION_KEY_BYTES
from meta_memory.rpc.methods import build_method_table
from meta_memory.rpc.session_params import SessionParams
from meta_memory.session_ref import SessionRef, check_session_key
from meta_memory.textfold import is_invisible

SPECS = {s.name: s for s in build_method_table().specs()}
SESSION_METHODS = sorted(n for n, s in SPECS.items()
                         if s.params_model is not None and issubclass(s.params_model, SessionParams))

#: characters that pad or hide: ASCII and Unicode whitespace, zero-width and bidirectional format
#: characters, a variation selector, fillers
HIDING = [" ", "\t", "\n", "\r", "\u00a0", "\u2003", "\u3000", "\u200b", "\u200d", "\u2060", "\ufeff",
          "\u202e", "\u2067", "\u00ad", "\ufe0f", "\u3164", "\u2800", "\U000e0041"]
keys = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40),
    st.builds(lambda a, h, b: a + h + b, st.text("abc-1", max_size=6), st.sampled_from(HIDING),
              st.text("abc-1", max_size=6)),
)


def _breaks_the_visible_rule(key: str) -> bool:
    """The oracle of the rule's core, written without the validator: padding, or a hidden character anywhere."""
    return key != key.strip() or any(is_invisible(ch) for ch in key)


@settings(max_examples=500, deadline=None)
@given(key=keys)
@example(key=" s1")
@example(key="s1 ")
@example(key="s\u200b1")
@example(key="\u202es1")
@example(key="s1")
def test_a_session_key_is_kept_as_given_or_refused_naming_the_field_and_rule(key: str) -> None:
    try:
        out = check_session_key(key, required=True)
    except ValueError as exc:
        assert str(exc).startswith("session_key must"), exc
        if key.strip() and key != key.strip():
            assert "must not begin or end with whitespace" in str(exc) and "never trimmed" in str(exc)
        return
    assert out == key  # never trimmed, never cleaned
    assert not _breaks_the_visible_rule(key), repr(key)
    assert key.strip() and len(key.encode("utf-8")) <= MAX_SESSION_KEY_BYTES
    assert SessionRef("default", "lead:main", key).session_key == key


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(SESSION_METHODS), pad=st.sampled_from(HIDING), at=st.sampled_from(["start", "end", "inside"]))
def test_every_session_method_refuses_a_padded_or_hidden_key(name: str, pad: str, at: str) -> None:
    key = {"start": pad + "s1", "end": "s1" + pad, "inside": "s" + pad + "1"}[at]
    if at == "inside" and pad == " ":
        return  # a plain space inside a key is allowed (as inside a name)
    params: dict[str, Any] = {"identity": "lead:main", "session_key": key, "tool_name": "web_fetch",
                              "query_text": "q", "cause": "done", "arguments": {"action": "recall"}}
    fields = SPECS[name].params_model.model_fields  # type: ignore[union-attr]
    with pytest.raises(InvalidParams) as info:
        SPECS[name].parse({k: v for k, v in params.items() if k in fields})
    assert info.value.data.get("field") == "session_key", (name, key, info.value)
    assert "session_key must not" in info.value.message


@pytest.mark.parametrize("key,rule", [
    (" s1", "must not begin or end with whitespace"),
    ("s1\u200b", "must not contain invisible or direction-changing characters"),
    ("s\u00a01", "must not contain U+00A0"),
    ("s1\x00x", "must not contain control characters"),
])
def test_a_derived_session_is_held_to_the_same_rule(key: str, rule: str) -> None:
    with pytest.raises(InvalidParams) as info:
        SPECS["meta/agent_memory/remember"].parse({"identity": "lead:main", "title": "t", "body": "b",
                                                   "derived_from_sessions": ["ok", key]})
    assert info.value.data.get("field") == "derived_from_sessions"
    assert f"derived_from_sessions[1] {rule}" in info.value.message


@pytest.mark.parametrize("key", ["\n", " ", "\t\r\n", "\u3000"])
def test_a_blank_key_is_refused_naming_the_rule_it_breaks(key: str) -> None:
    """A key of whitespace or control characters alone names that rule, not only "non-empty", on every
    session method; the empty key keeps the plain rule."""
    for name in SESSION_METHODS:
        fields = SPECS[name].params_model.model_fields  # type: ignore[union-attr]
        params: dict[str, Any] = {"identity": "lead:main", "session_key": key, "tool_name": "web_fetch",
                                  "query_text": "q", "cause": "done", "arguments": {"action": "recall"}}
        with pytest.raises(InvalidParams) as info:
            SPECS[name].parse({k: v for k, v in params.items() if k in fields})
        assert info.value.data.get("field") == "session_key", (name, info.value)
        assert "not only whitespace or control characters" in info.value.message, (name, info.value.message)
    with pytest.raises(ValueError, match=r"^session_key must be a non-empty string$"):
        check_session_key("", required=True)
