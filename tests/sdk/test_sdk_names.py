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
