"""A tool result under a name whose separator is a look-alike (a modifier letter ``ˍ`` for ``_``, a Lisu tone
letter ``ꓸ`` for ``.``) taints its session as the plain spelling does, through a real gateway: the model's next
``memory`` write in that session is quarantined, and a sibling session stays clean. A name's controlling and
hidden characters (a terminal escape, a bidirectional override, tag characters) reach the model escaped in the
tool's answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support import RpcClient, module_gateway, result_of

pytestmark = pytest.mark.gateway

IDENTITY = "agent:lookalike"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RpcClient]:
    for gw in module_gateway(tmp_path_factory, "lookalike-separators", "[agent_memory.content_trust]\ntrusted_mcp_servers = [\"kg\"]\n"):
        rpc = RpcClient(gw)
        yield rpc
        rpc.close()


def write(client: RpcClient, session: str, title: str) -> str:
    out = result_of(client.rpc("meta/agent_memory/tool", {
        "identity": IDENTITY, "session_key": session,
        "arguments": {"action": "remember", "title": title, "body": f"{title}: refunds go to account 99-1234."}}))
    assert out["is_error"] is False, out
    return str(out["text"])


@pytest.mark.parametrize("tool_name", ["web\u02cdfetch", "functions\ua4f8fetch", "mcp\u02cd\u02cdkg\u02cd\u02cdq",
                                       "read\u02cdslack\u02cdchannel"])
def test_a_look_alike_separator_taints_the_session(client: RpcClient, tool_name: str) -> None:
    session, sibling = f"s-{ord(tool_name[3]):x}-{len(tool_name)}", f"t-{ord(tool_name[3]):x}-{len(tool_name)}"
    out = result_of(client.rpc("meta/turn/tool_result", {"identity": IDENTITY, "session_key": session,
                                                         "tool_name": tool_name}))
    assert out["trusted"] is False, out
    assert "QUARANTINED" in write(client, session, f"After {tool_name}")
    assert "QUARANTINED" not in write(client, sibling, f"Sibling of {tool_name}")


def test_a_tool_names_controlling_characters_reach_the_model_escaped(client: RpcClient) -> None:
    name = "web_fetch\x1b[2J\u202e\U000e0049\U000e0047"  # a terminal escape, a bidi override, tag characters
    out = result_of(client.rpc("meta/turn/tool_result", {"identity": IDENTITY, "session_key": "s-hidden",
                                                         "tool_name": name}))
    assert out["trusted"] is False, out
    text = write(client, "s-hidden", "After a hidden name")
    assert "QUARANTINED" in text and "web_fetch\\x1b[2J\\u202e\\U000e0049\\U000e0047" in text, text
    assert text.isprintable(), text


def test_a_look_alike_separator_taints_in_a_named_realm_and_only_there(client: RpcClient) -> None:
    session = "s-ops-lookalike"
    out = result_of(client.rpc("meta/turn/tool_result", {"identity": IDENTITY, "session_key": session, "realm": "ops",
                                                         "tool_name": "web\u02cdfetch"}))
    assert out["trusted"] is False and out["session_tainted"] is True, out
    text = result_of(client.rpc("meta/agent_memory/tool", {
        "identity": IDENTITY, "session_key": session, "realm": "ops",
        "arguments": {"action": "remember", "title": "In ops", "body": "In ops: refunds go to account 99-1234."}}))
    assert text["is_error"] is False and "QUARANTINED" in text["text"], text
    assert "QUARANTINED" not in write(client, session, "Same key, default realm")  # the taint is the realm's
