"""An identity or realm (or a count) that breaks a rule is refused with that rule named, not a generic
message.

Driven over a real gateway: a caller who sends a 600-byte identity (or a realm with a tab in it)
learns which rule it broke and the cap, with ``data.field`` naming the member; nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support import GatewayProcess, start_gateway

pytestmark = pytest.mark.gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: every call here is refused, and each test checks nothing was written."""
    gw = start_gateway(tmp_path_factory.mktemp("names") / "state")
    try:
        yield gw
    finally:
        gw.stop()


def _remember(gw: Any, **params: Any) -> dict[str, Any]:
    return gw.rpc("meta/agent_memory/remember", {"identity": "lead:main", "title": "t", "body": "b", **params})


@pytest.mark.parametrize("field,value,rule", [
    ("identity", "x" * 600, "identity must be at most 512 bytes (got 600)"),
    ("identity", "é" * 300, "identity must be at most 512 bytes (got 600)"),
    ("identity", "lead\tmain", "identity must not contain control characters"),
    ("identity", "   ", "identity must be a valid non-empty string"),
    ("identity", 7, "identity must be a valid non-empty string"),
    ("realm", "r" * 300, "realm must be at most 239 bytes once encoded as a file name (got 300"),
    # the database file would fit, its -wal/-shm/-journal would not: refused before any file is made
    ("realm", "r" * 245, "realm must be at most 239 bytes once encoded as a file name (got 245"),
    ("realm", "é" * 40, "realm must be at most 239 bytes once encoded as a file name (got 240"),
    ("realm", "hr\nops", "realm must not contain control characters"),
    ("realm", " ", "realm must be a non-empty string when provided"),
    # a name is taken as given: a padded one is refused, never trimmed into another scope's name
    ("realm", " hr ", "realm must not begin or end with whitespace"),
    ("realm", "hr\n", "realm must not begin or end with whitespace"),
    ("realm", "\u00a0hr", "realm must not begin or end with whitespace"),
    ("identity", " lead:main", "identity must not begin or end with whitespace"),
    ("identity", "lead:main ", "identity must not begin or end with whitespace"),
    ("identity", "\tlead:main", "identity must not begin or end with whitespace"),
    # names that display as another name: reordered, hidden, or one name spelled two ways
    ("realm", "\u202ehr", "realm must not contain invisible or direction-changing characters"),
    ("realm", "h\u200br", "realm must not contain invisible or direction-changing characters"),
    ("identity", "lead:\u2067main", "identity must not contain invisible or direction-changing characters"),
    ("identity", "lead\ufeff:main", "identity must not contain invisible or direction-changing characters"),
    ("identity", "lead:\x85main", "identity must not contain invisible or direction-changing characters"),
    # every format character, variation selector and blank filler, wherever it stands
    *[(field, name, f"{field} must not contain invisible or direction-changing characters")
      for field, name in [
          (f, f"lead{ch}:main" if f == "identity" else f"hr{ch}")
          for f in ("identity", "realm")
          for ch in ["\u00ad", "\U000e0041", "\u180e", "\u034f", "\ufff9", "\ufffa", "\ufffb",
                     "\U0001d173", "\U0001d17a", "\u17b4", "\u17b5", "\u115f", "\u1160", "\u3164", "\uffa0",
                     "\u2800", "\ufe0f", "\ufe00", "\U000e0100", "\u180b", "\u0600", "\U000110bd"]]],
    ("realm", "Cafe\u0301", "realm must be in Unicode NFC form"),
    ("identity", "jose\u0301:main", "identity must be in Unicode NFC form"),
])
def test_a_broken_name_rule_is_named(gateway: Any, field: str, value: Any, rule: str) -> None:
    error = _remember(gateway, **{field: value})["error"]
    assert error["code"] == -32602 and error["data"] == {"kind": "invalid_params", "field": field}
    assert rule in error["message"]
    assert gateway.result("meta/agent_memory/list", {"identity": "lead:main"})["records"] == []


def test_the_same_rules_hold_for_reads(gateway: Any) -> None:
    error = gateway.rpc("meta/agent_memory/recall", {"identity": "x" * 513, "query_text": "q"})["error"]
    assert error["data"]["field"] == "identity" and "at most 512 bytes (got 513)" in error["message"]


@pytest.mark.parametrize("value", [0, -3, 2.5, "8", True])
def test_a_count_out_of_range_names_the_range(gateway: Any, value: Any) -> None:
    error = gateway.rpc("meta/agent_memory/recall", {"identity": "lead:main", "query_text": "q",
                                                     "max_entries": value})["error"]
    assert error["data"]["field"] == "max_entries" and "(1 to 64)" in error["message"]


def test_composed_and_other_scripts_names_are_accepted(gateway: Any) -> None:
    """The NFC spelling of an accented name, and names in other scripts, are ordinary names."""
    for identity, realm in (("jos\u00e9:main", "Caf\u00e9"), ("\u65e5\u672c:main", "\u0645\u0631\u062d\u0628\u0627")):
        out = gateway.result("meta/agent_memory/remember", {"identity": identity, "realm": realm, "title": "t",
                                                            "body": "a note"})
        assert out["created"] is True
        listed = gateway.result("meta/agent_memory/list", {"identity": identity, "realm": realm})["records"]
        assert [r["title"] for r in listed] == ["t"]


@pytest.mark.parametrize("mob,rule", [
    ("research\u200b", "mob must not contain invisible or direction-changing characters"),
    ("\u202eresearch", "mob must not contain invisible or direction-changing characters"),
    ("re\x00search", "mob must not contain control characters"),
    ("research\u00a0lab", "mob must not contain U+00A0"),
    (" research", "mob must not begin or end with whitespace"),
    ("research ", "mob must not begin or end with whitespace"),
    ("   ", "mob must be a non-empty string"),
    ("m" * 513, "mob must be at most 512 bytes (got 513)"),
])
def test_a_mob_name_follows_the_name_rules(gateway: Any, mob: str, rule: str) -> None:
    """A mob a proposal writes to, or an injection reads, is a name like an identity or a realm: one that
    would show as another mob in the console (``research`` + a zero-width space) is refused, never trimmed."""
    error = gateway.rpc("meta/agent_memory/tool", {
        "identity": "lead:main", "session_key": "s1", "mob": mob,
        "arguments": {"action": "propose_to_mob", "title": "Standup", "body": "Standup moved to 10:00."}})["error"]
    assert error["code"] == -32602 and error["data"] == {"kind": "invalid_params", "field": "mob"}, error
    assert rule in error["message"]
    error = gateway.rpc("meta/turn/inject", {"identity": "lead:main", "surface": "build",
                                             "mobs": ["research", mob]})["error"]
    assert error["code"] == -32602 and error["data"]["field"] == "mobs", error
    assert rule.replace("mob ", "mobs[1] ", 1) in error["message"]
    assert gateway.result("meta/memory/proposals/list", {})["proposals"] == []
