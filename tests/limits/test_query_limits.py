"""One query-size rule on every recall path: RPC recall, ``meta/turn/inject``, the memory tool (RPC and MCP)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from meta_memory.recall import fts, text
from meta_memory.recall.query_limits import (
    MAX_QUERY_BYTES,
    MAX_QUERY_TERMS,
    bounded_terms,
    query_size_error,
    truncate_query_text,
)
from support import GatewayProcess

IDENT = "agent:asker"
HUGE = "lorem ipsum dolor " * (256 * 1024 // 18)  # ~256 KiB of query text
WORDS = [f"zork{chr(98 + i // 20)}{chr(98 + i % 20)}t" for i in range(100)]  # 100 distinct searchable terms


# ---------------------------------------------------------------- the rule itself

@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600), st.lists(st.text(max_size=40), max_size=20))
def test_bounded_terms_is_a_capped_subset_of_the_full_terms(query: str, extra: list[str]) -> None:
    full = set(text.query_terms(query, extra))
    bounded = bounded_terms(query, extra)
    assert bounded == sorted(set(bounded)) and set(bounded) <= full
    assert len(bounded) == min(len(full), MAX_QUERY_TERMS)


def test_terms_past_the_cap_are_the_ignored_ones() -> None:
    terms = bounded_terms(" ".join(WORDS))
    assert terms == sorted(WORDS[:MAX_QUERY_TERMS])
    expression = fts.match_expression(" ".join(WORDS))
    assert expression is not None and expression.count(" OR ") == MAX_QUERY_TERMS - 1


@given(st.text(max_size=MAX_QUERY_BYTES // 2))
def test_truncation_keeps_short_text_and_cuts_at_a_character_boundary(value: str) -> None:
    assert truncate_query_text(value) == value
    long = value + "é" * MAX_QUERY_BYTES
    cut = truncate_query_text(long)
    assert len(cut.encode("utf-8")) <= MAX_QUERY_BYTES and long.startswith(cut)


def test_size_error_names_the_field() -> None:
    assert query_size_error("x" * MAX_QUERY_BYTES) is None
    assert query_size_error("x" * (MAX_QUERY_BYTES + 1))[0] == "query_text"  # type: ignore[index]
    assert query_size_error("x" * 10_000, ["y" * 1000] * 7)[0] == "query_terms"  # type: ignore[index]


# ---------------------------------------------------------------- through the gateway

def _remember(gw: GatewayProcess, title: str, body: str) -> str:
    return gw.result("meta/agent_memory/remember", {"identity": IDENT, "title": title, "body": body})["memory_id"]


def test_rpc_recall_refuses_an_oversized_query_naming_the_field(gateway: GatewayProcess) -> None:
    err = gateway.error("meta/agent_memory/recall", {"identity": IDENT, "query_text": HUGE})
    assert err["code"] == -32602 and err["data"]["field"] == "query_text"
    assert f"at most {MAX_QUERY_BYTES} bytes" in err["message"]
    err = gateway.error("meta/agent_memory/recall", {"identity": IDENT, "query_text": "a" * 9000,
                                                     "query_terms": ["b" * 1000] * 8})
    assert err["code"] == -32602 and err["data"]["field"] == "query_terms"
    ok = gateway.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": "x " * (MAX_QUERY_BYTES // 2)})
    assert ok["records"] == []


def test_recall_searches_the_first_64_distinct_terms(gateway: GatewayProcess) -> None:
    early = _remember(gateway, "Early", f"note about {WORDS[0]}")
    _remember(gateway, "Late", f"note about {WORDS[-1]}")
    out = gateway.result("meta/agent_memory/recall", {"identity": IDENT, "query_text": " ".join(WORDS)})
    assert [r["memory_id"] for r in out["records"]] == [early]


def _tool(gw: GatewayProcess, ident: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return gw.result("meta/agent_memory/tool", {"identity": ident, "session_key": "s1", "arguments": arguments})


def test_tool_recall_refuses_an_oversized_query(gateway: GatewayProcess) -> None:
    out = _tool(gateway, IDENT, {"action": "recall", "query_text": HUGE})
    assert out["is_error"] is True and f"at most {MAX_QUERY_BYTES} bytes" in out["text"]
    assert "query_text" in out["text"]


def test_inject_searches_with_the_first_16_kib_of_a_long_turn(gateway: GatewayProcess) -> None:
    mid = _remember(gateway, "Harbour", "the harbour ferry leaves at nine")
    turn = "harbour ferry? " + "filler " * (300 * 1024 // 7)  # the turn is ~300 KiB; the question comes first
    out = gateway.result("meta/turn/inject", {"identity": IDENT, "query_text": turn})
    assert mid in out["included_ids"]
    late = "filler " * (300 * 1024 // 7) + " harbour ferry?"  # the question is past the first 16 KiB
    out = gateway.result("meta/turn/inject", {"identity": IDENT, "query_text": late})
    assert mid not in (out.get("included_ids") or [])


def test_mcp_recall_refuses_an_oversized_query(tmp_path: Any) -> None:
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "mcp"))
    from test_mcp_server import run_mcp
    from test_mcp_server import text as tool_text

    async def scenario(session: Any) -> tuple[Any, Any]:
        big = await session.call_tool("memory", {"action": "recall", "query_text": HUGE})
        small = await session.call_tool("memory", {"action": "recall", "query_text": "anything at all"})
        return big, small

    big, small = run_mcp(tmp_path / "state", scenario)
    assert big.is_error is True and f"at most {MAX_QUERY_BYTES} bytes" in tool_text(big)
    assert small.is_error is False
