"""A secret refusal speaks to the user: the class and what to do instead, no section number of a
document the user does not have, and never the secret itself."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gateway

KEY = "AKIAIOSFODNN7EXAMPLE"


def test_a_remembered_secret_is_refused_in_plain_words(gateway: Any) -> None:
    error = gateway.rpc("meta/agent_memory/remember", {"identity": "lead:main", "title": "Keys",
                                                        "body": f"the deploy key is {KEY}"})["error"]
    assert error["data"]["reason"] == "secret_detected" and error["data"]["secret_class"] == "aws-access-key-id"
    assert "'aws-access-key-id' secret pattern class" in error["message"]
    assert "store a reference to where the credential lives" in error["message"]
    assert "§" not in error["message"] and KEY not in error["message"]
