"""Array params are capped in their params models: ``meta/turn/defang`` ``blocks``, ``meta/turn/inject`` ``mobs``,
``meta/agent_memory/recall`` ``query_terms``."""

from __future__ import annotations

from support import GatewayProcess

IDENT = "agent:arrays"


def test_defang_blocks_are_capped(gateway: GatewayProcess) -> None:
    ok = gateway.result("meta/turn/defang", {"blocks": [{"type": "text", "text": "hello"}] * 1024})
    assert len(ok["blocks"]) == 1024
    err = gateway.error("meta/turn/defang", {"blocks": ["x"] * 1025})
    assert err["code"] == -32602 and err["data"]["field"] == "blocks" and "1024" in err["message"]
    err = gateway.error("meta/turn/defang", {"blocks": ["y" * 600_000, {"type": "text", "text": "z" * 600_000}]})
    assert err["code"] == -32602 and err["data"]["field"] == "blocks" and "1048576 bytes" in err["message"]
    err = gateway.error("meta/turn/defang", {"blocks": [7]})
    assert err["code"] == -32602 and err["data"]["field"] == "blocks"
    err = gateway.error("meta/turn/defang", {"text": "t" * 1_048_577})
    assert err["code"] == -32602 and err["data"]["field"] == "text"


def test_inject_mobs_are_capped(gateway: GatewayProcess) -> None:
    err = gateway.error("meta/turn/inject", {"identity": IDENT, "surface": "build", "mobs": [f"m{i}" for i in range(65)]})
    assert err["code"] == -32602 and err["data"]["field"] == "mobs"


def test_recall_query_terms_are_capped(gateway: GatewayProcess) -> None:
    err = gateway.error("meta/agent_memory/recall", {"identity": IDENT, "query_terms": ["t"] * 257})
    assert err["code"] == -32602 and err["data"]["field"] == "query_terms"
