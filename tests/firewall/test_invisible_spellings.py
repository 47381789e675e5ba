"""Spellings a reader cannot see: controls, combining marks, variation selectors, blank-looking letters,
namespaced names. Each one is caught by classification, the marker neutraliser and the secret scan."""

from __future__ import annotations

from typing import Any

import pytest

from meta_memory.agent_memory.secrets import scan
from meta_memory.firewall.classify import ContentTrustPolicy, classify_tool_result
from meta_memory.injection.defang import defang

TOOL_NAMES = ["web_fetch\u0000", "web_fetch\u007f", "fetch\u0000", "web_search\u0001", "web\u034ffetch",
              "web_fetch\u0301", "web_fetch\ufe0f", "web\u3164fetch", "web\u115ffetch", "functions.web_fetch",
              "web_fetch.v2", "tools/http_request",
              # whitespace is in no tool catalogue's names: its words are read as segments; a version
              # suffix does not hide the tool it versions
              "web_fetch x", "web_fetch\nx", "x\u2028web_fetch", "web_fetch_v2", "WebSearch20250305", "fetch-2"]
MARKERS = ["[mem\u3164token: x]", "[mem\u0000token: x]", "[mem\u007ftoken: x]", "[mem\u2800token: x]",
           "<meta\u3164memory\u0000observation>"]
KEYS = ["AKIAIOSF\nODNN7EXAMPLE", "AKIAIOSF\tODNN7EXAMPLE", "AKIA-IOSF-ODNN-7EXA-MPLE",
        "AKIA\u0301IOSFODNN7EXAMPLE", "AKIA\u00a0IOSFODNN7EXAMPLE"]


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_hidden_spellings_of_web_tools_are_untrusted(name: str) -> None:
    assert classify_tool_result(name, None, ContentTrustPolicy()).trusted is False


@pytest.mark.parametrize("name", ["calculator", "prefetch_cache", "fetcher_of_dates", "functions.calculator",
                                  "calc_v2", "get_weather_v3", "sum 2"])
def test_ordinary_names_stay_trusted(name: str) -> None:
    assert classify_tool_result(name, None, ContentTrustPolicy()).trusted is True


@pytest.mark.parametrize("text", MARKERS)
def test_hidden_markers_are_neutralised(text: str) -> None:
    out, hits = defang(text)
    assert hits == 1 and "defanged" in out


@pytest.mark.parametrize("body", KEYS)
def test_split_and_marked_aws_key_ids_are_secrets(body: str) -> None:
    assert scan("notes", "", body, ()) == "aws-access-key-id"


@pytest.mark.gateway
@pytest.mark.parametrize("name", ["web_fetch\u0000", "web_fetch\nx", "web_fetch_v2"])
def test_a_control_character_in_the_reported_name_still_taints(gateway: Any, name: str) -> None:
    gateway.result("meta/session/note", {"identity": "a:main", "session_key": "t7"})
    verdict = gateway.result("meta/turn/tool_result", {"identity": "a:main", "session_key": "t7",
                                                        "tool_name": name})
    assert verdict["trusted"] is False and verdict["session_tainted"] is True
    out = gateway.result("meta/agent_memory/tool", {"identity": "a:main", "session_key": "t7",
                                                    "arguments": {"action": "remember", "title": "x", "body": "y"}})
    assert "quarantine" in out["text"].lower()
