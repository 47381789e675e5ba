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
