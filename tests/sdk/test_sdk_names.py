"""A padded identity or realm is refused on every handle, naming the field and the rule; it is never
trimmed into the name of another scope, so nothing lands under ``lead:main`` or ``hr``."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory.errors import InvalidParams


@pytest.mark.parametrize("identity,realm,field", [
    (" lead:main ", "hr", "identity"),
    ("lead:main\n", "hr", "identity"),
    ("lead:main", " hr ", "realm"),
    ("lead:main", "hr\t", "realm"),
])
def test_a_padded_name_is_refused_not_trimmed(handle: Any, identity: str, realm: str, field: str) -> None:
    agent = handle.agent(identity, realm=realm)
    with pytest.raises(InvalidParams) as info:
        agent.remember("Trip", "Flight to Lisbon")
    assert info.value.field == field
    assert f"{field} must not begin or end with whitespace" in info.value.message
    with pytest.raises(InvalidParams):
        agent.recall("Lisbon")
    assert handle.agent("lead:main", realm="hr").list().records == []


@pytest.mark.parametrize("key,rule", [
    (" s1", "session_key must not begin or end with whitespace"),
    ("s1\t", "session_key must not begin or end with whitespace"),
    ("s\u200b1", "session_key must not contain invisible or direction-changing characters"),
])
def test_a_padded_or_hidden_session_key_is_refused_not_trimmed(handle: Any, key: str, rule: str) -> None:
    agent = handle.agent("lead:main", realm="hr")
    agent.session("s1").note()
    session = agent.session(key)
    for call in (session.note, session.reset, session.compacted, lambda: session.tool_result("web_fetch"),
                 lambda: session.inject("refunds"),
                 lambda: session.tool({"action": "remember", "title": "Trip", "body": "Flight to Lisbon"})):
        with pytest.raises(InvalidParams) as info:
            call()
        assert info.value.field == "session_key" and rule in info.value.message
    assert agent.session("s1").note().tainted is False
    assert agent.list().records == []
