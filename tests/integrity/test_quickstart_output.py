"""What ``docs/quickstart.md`` shows a new user as a command's output is what a default gateway prints."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from support import REPO_ROOT

pytestmark = pytest.mark.gateway

QUICKSTART = REPO_ROOT / "docs" / "quickstart.md"


def test_the_health_answer_shown_is_the_default_gateways(gateway: Any) -> None:
    shown = re.findall(r'^\{"status":"ok","methods":\d+\}$', QUICKSTART.read_text(encoding="utf-8"), re.M)
    assert shown, "docs/quickstart.md shows no /v1/health answer"
    answer = httpx.get(gateway.url + "/v1/health", timeout=10)
    assert answer.status_code == 200
    assert [json.loads(line) for line in shown] == [answer.json()]


def _shown_result(request_id: int) -> dict[str, Any]:
    """The ``result`` of the JSON-RPC answer with ``id`` ``request_id`` that the quickstart shows."""
    for line in QUICKSTART.read_text(encoding="utf-8").splitlines():
        if line.startswith('{"jsonrpc":"2.0","result":') and line.endswith(f',"id":{request_id}}}'):
            return dict(json.loads(line)["result"])
    raise AssertionError(f"docs/quickstart.md shows no answer with id {request_id}")


def test_the_remember_and_recall_answers_shown_have_every_member_the_gateway_sends(gateway: Any) -> None:
    """The quickstart's remember (id 3) and recall (id 4) answers carry the members a default gateway
    answers with (``metadata`` and ``expires_at_ms`` included), in its order."""
    made = gateway.result("meta/agent_memory/remember", {"identity": "lead:main", "title": "Passport location",
                                                         "body": "Top drawer of the desk.", "tags": ["travel"]})
    shown = _shown_result(3)
    assert list(shown) == list(made)
    assert (shown["metadata"], shown["expires_at_ms"]) == (made["metadata"], made["expires_at_ms"])
    found = gateway.result("meta/agent_memory/recall", {"identity": "lead:main",
                                                        "query_text": "I need the passport for travel"})
    shown = _shown_result(4)
    assert list(shown) == list(found)
    assert list(shown["records"][0]) == list(found["records"][0])


def test_the_session_answers_shown_are_the_gateways(gateway: Any) -> None:
    """Step 5's ``meta/session/note`` (id 7) and ``meta/turn/tool_result`` (id 8) answers are what a default
    gateway answers, member for member."""
    session = {"identity": "lead:quickstart", "session_key": "web1"}
    noted = gateway.result("meta/session/note", session)
    assert noted == {**_shown_result(7), **session}
    assert list(noted) == list(_shown_result(7))
    judged = gateway.result("meta/turn/tool_result", {**session, "tool_name": "web_fetch"})
    assert judged == _shown_result(8)
