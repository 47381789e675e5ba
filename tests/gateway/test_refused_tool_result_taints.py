"""A refused tool-result report still taints its session (fail closed), through a real gateway.

A malicious MCP server names its tool with 600 bytes, or the host sends a provenance or flag of the
wrong shape: ``meta/turn/tool_result`` answers ``-32602`` naming the field, and a host that shows the
content to its model anyway must not leave the session clean. The session the refused params name is
tainted (``tool result refused: <rule>``) when its members are valid and the caller may report for
that identity; a caller without a token, or one granted another identity only, taints nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from support import GatewayProcess, RpcClient, access_toml, error_of, module_gateway, result_of

pytestmark = pytest.mark.gateway

VICTIM, INTRUDER = "victim:main", "intruder:1"
HOST = ("agent.memory.read", "agent.view", "agent.memory.write", "agent.session.manage")
GRANTS = [
    *(("host", a, {"identity": VICTIM}) for a in HOST),
    *(("intruder", a, {"identity": INTRUDER}) for a in HOST),
]
TOKENS = {"tok-host-refused": "host", "tok-intruder-refused": "intruder"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from module_gateway(tmp_path_factory, "refused", access_toml(TOKENS, GRANTS))


@pytest.fixture(scope="module")
def host(gateway: GatewayProcess) -> Iterator[RpcClient]:
    client = RpcClient(gateway, "tok-host-refused")
    yield client
    client.close()


@pytest.fixture(scope="module")
def intruder(gateway: GatewayProcess) -> Iterator[RpcClient]:
    client = RpcClient(gateway, "tok-intruder-refused")
    yield client
    client.close()


def remember(client: RpcClient, identity: str, session: str, title: str) -> str:
    params = {"identity": identity, "session_key": session,
              "arguments": {"action": "remember", "title": title, "body": f"{title}: the office moved to pier 9."}}
    out = result_of(client.rpc("meta/agent_memory/tool", params))
    assert out["is_error"] is False, out
    return str(out["text"])


BAD_MEMBERS: list[tuple[dict[str, Any], str]] = [
    ({"tool_name": "x" * 600}, "tool_name"),
    ({"tool_name": "   "}, "tool_name"),
    ({"tool_name": 7}, "tool_name"),
    ({"tool_name": "fetch", "provenance": {"kind": "agent", "source_id": "a" * 100_000}}, "provenance.source_id"),
    ({"tool_name": "fetch", "provenance": {"kind": "mcp", "source_id": "s" * 600}}, "provenance.source_id"),
    ({"tool_name": "fetch", "provenance": {"kind": "agent", "source_id": "bob\n"}}, "provenance.source_id"),
    ({"tool_name": "fetch", "provenance": {"kind": ""}}, "provenance.kind"),
    ({"tool_name": "fetch", "provenance": "mcp"}, "provenance"),
    ({"tool_name": "read_file", "provenance": {"kind": "mcp_server", "source_id": "fetch"}}, "provenance.kind"),
    ({"tool_name": "read_file", "provenance": {"kind": "tool"}}, "provenance.kind"),
    ({"tool_name": "fetch", "provenance": {"kind": "mcp", "source_id": "kg", "extra\u202e" * 50: 1}}, "provenance"),
    ({"tool_name": "fetch", "server_tool": "yes"}, "server_tool"),
    ({"tool_name": "fetch", "is_error": 1}, "is_error"),
    ({"tool_name": "fetch", "shown_to_model": True}, "shown_to_model"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_MEMBERS, ids=[f for _, f in BAD_MEMBERS])
def test_a_refused_report_taints_the_session_it_names(host: RpcClient, bad: dict[str, Any], field: str) -> None:
    session = f"s-{abs(hash(repr(bad)))}"
    assert "QUARANTINED" not in remember(host, VICTIM, session, "before")  # clean before the report
    err = error_of(host.rpc("meta/turn/tool_result", {"identity": VICTIM, "session_key": session, **bad}))
    assert err["code"] == -32602 and err["data"]["field"].startswith(field), err
    text = remember(host, VICTIM, session, "after")
    assert "QUARANTINED" in text and "tool result refused:" in text, text
    note = result_of(host.rpc("meta/session/note", {"identity": VICTIM, "session_key": session}))
    assert note["tainted"] is True


def test_the_taint_source_is_short_and_escaped(host: RpcClient) -> None:
    session = "s-escaped"
    bad = {"tool_name": "fetch", "provenance": {"kind": "mcp", "source_id": "kg", "\u202eevil\u200b" * 40: 1}}
    error_of(host.rpc("meta/turn/tool_result", {"identity": VICTIM, "session_key": session, **bad}))
    text = remember(host, VICTIM, session, "escaped")
    reason = text.split("tool result refused:", 1)[1]
    assert "\u202e" not in reason and "\u200b" not in reason, text
    assert len(text) < 1_000, text


def test_invalid_session_members_taint_nothing(host: RpcClient) -> None:
    """The refusal names the session member itself: there is no session to taint, and no other one is."""
    for bad in ({"session_key": " s-pad "}, {"session_key": "s\u200bx"}, {"realm": "bad realm\n"}):
        params = {"identity": VICTIM, "session_key": "s-pad", "tool_name": "x" * 600, **bad}
        err = error_of(host.rpc("meta/turn/tool_result", params))
        assert err["code"] == -32602 and err["data"]["field"] in ("session_key", "realm"), err
    assert "QUARANTINED" not in remember(host, VICTIM, "s-pad", "clean")


def test_another_identitys_caller_taints_nothing_of_the_victim(host: RpcClient, intruder: RpcClient) -> None:
    session = "s-victim-shared"
    for bad, _ in BAD_MEMBERS:
        err = error_of(intruder.rpc("meta/turn/tool_result", {"identity": VICTIM, "session_key": session, **bad}))
        # the members are judged before the grant (-32602), the provenance's rules after it (-32030)
        assert err["code"] in (-32602, -32030), err
    assert "QUARANTINED" not in remember(host, VICTIM, session, "victim clean")
    # the intruder's own sessions are its own to taint
    error_of(intruder.rpc("meta/turn/tool_result", {"identity": INTRUDER, "session_key": "s-intruder",
                                                     "tool_name": "x" * 600}))
    assert "QUARANTINED" in remember(intruder, INTRUDER, "s-intruder", "intruder tainted")
    assert "QUARANTINED" not in remember(host, VICTIM, session, "victim still clean")


def test_a_caller_without_a_token_taints_nothing(gateway: GatewayProcess, host: RpcClient) -> None:
    session = "s-anonymous"
    err = gateway.error("meta/turn/tool_result", {"identity": VICTIM, "session_key": session, "tool_name": "x" * 600})
    assert err["code"] == -32030, err
    assert "QUARANTINED" not in remember(host, VICTIM, session, "still clean")


def test_a_valid_report_is_answered_as_before(host: RpcClient) -> None:
    out = result_of(host.rpc("meta/turn/tool_result", {"identity": VICTIM, "session_key": "s-ok",
                                                        "tool_name": "calculator"}))
    assert out == {"trusted": True, "session_tainted": False}


def test_an_unknown_provenance_kind_is_refused_not_read_as_none(host: RpcClient) -> None:
    """An owner kind the firewall does not know (``mcp_server``) is a ``-32602`` naming ``provenance.kind``
    and listing the accepted kinds, and it taints (docs/security.md, "A refused report taints"): read as
    "no provenance" it was trusted, and the model's next write landed active. The accepted kinds are
    read in any case (``MCP``)."""
    session = "s-unknown-kind"
    params = {"identity": VICTIM, "session_key": session, "tool_name": "read_file",
              "provenance": {"kind": "mcp_server", "source_id": "fetch"}}
    err = error_of(host.rpc("meta/turn/tool_result", params))
    assert err["code"] == -32602 and err["data"]["field"] == "provenance.kind", err
    for kind in ("mcp", "agent", "builtin", "function", "memory"):
        assert kind in err["message"], err
    text = remember(host, VICTIM, session, "after unknown kind")
    assert "QUARANTINED" in text and "tool result refused:" in text, text
    for kind in ("MCP", " Builtin ", "function", "memory"):
        out = result_of(host.rpc("meta/turn/tool_result", {
            "identity": VICTIM, "session_key": f"s-kind-{kind.strip()}", "tool_name": "read_file",
            "provenance": {"kind": kind, "source_id": "kg"}}))
        assert out["trusted"] is (kind.strip().lower() != "mcp"), (kind, out)
