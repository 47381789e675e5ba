"""Session taint belongs to one identity's session and never silently disappears (through a real gateway).

An attacker who can call the host surface tries to launder a tainted session: by resetting or
compacting it under another identity, by flooding the gateway with sessions until the taint is
evicted, and by filling the session state to its cap. Each attempt leaves the tainted session's
LLM write quarantined.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from support import GatewayProcess, write_config

pytestmark = pytest.mark.gateway

VICTIM = "victim:main"


def batch(gw: GatewayProcess, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    payload = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(calls)]
    out = httpx.post(gw.url + "/rpc", json=payload, timeout=600).json()
    return sorted(out, key=lambda o: o["id"])


def llm_write(gw: GatewayProcess, identity: str, session: str | None, title: str) -> str:
    params: dict[str, Any] = {"identity": identity,
                              "arguments": {"action": "remember", "title": title, "body": f"{title} body"}}
    if session is not None:
        params["session_key"] = session
    return gw.result("meta/agent_memory/tool", params)["text"]


def taint(gw: GatewayProcess, identity: str, session: str) -> None:
    gw.result("meta/session/note", {"identity": identity, "session_key": session})
    verdict = gw.result("meta/turn/tool_result", {"identity": identity, "session_key": session,
                                                  "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True


def test_another_identity_cannot_reset_or_compact_away_the_taint(gateway: GatewayProcess) -> None:
    taint(gateway, VICTIM, "s1")
    for method in ("meta/session/reset", "meta/session/compacted", "meta/session/note"):
        out = gateway.result(method, {"identity": "intruder:1", "session_key": "s1"})
        # the intruder's own session of that key is clean, but its writes from the key quarantine: it says so
        assert out["tainted"] is True, method
    held = llm_write(gateway, "intruder:1", "s1", "the intruder's note")
    assert "QUARANTINED" in held and "another identity's session of this key" in held and "web_fetch" not in held
    assert gateway.result("meta/session/note", {"identity": VICTIM, "session_key": "s1"})["tainted"] is True
    assert "QUARANTINED" in llm_write(gateway, VICTIM, "s1", "after intruder reset")
    # another realm's state is separate too
    gateway.result("meta/session/reset", {"identity": VICTIM, "session_key": "s1", "realm": "elsewhere"})
    assert "QUARANTINED" in llm_write(gateway, VICTIM, "s1", "after other-realm reset")
    # compaction by the owner keeps taint; only the owner's reset clears it
    out = gateway.result("meta/session/compacted", {"identity": VICTIM, "session_key": "s1"})
    assert out == {"identity": VICTIM, "session_key": "s1", "tainted": True}
    gateway.result("meta/session/reset", {"identity": VICTIM, "session_key": "s1"})
    gateway.result("meta/session/note", {"identity": VICTIM, "session_key": "s2"})
    assert "QUARANTINED" not in llm_write(gateway, VICTIM, "s2", "clean after own reset")


def test_compacted_requires_the_identity(gateway: GatewayProcess) -> None:
    err = gateway.error("meta/session/compacted", {"session_key": "s1"})
    assert err["code"] == -32602 and err["data"] == {"kind": "invalid_params", "field": "identity"}


def test_a_flood_of_notes_and_tainted_sessions_never_launders_a_tainted_session(gateway: GatewayProcess) -> None:
    taint(gateway, VICTIM, "victim-s")
    flood = 12_000
    for start in range(0, flood, 3_000):
        calls: list[tuple[str, dict[str, Any]]] = []
        for i in range(start, start + 3_000):
            calls.append(("meta/session/note", {"identity": f"flood:{i}", "session_key": f"f{i}"}))
            if i % 4 == 0:  # thousands of other tainted sessions, and the victim hopping sessions
                calls.append(("meta/turn/tool_result", {"identity": f"flood:{i}", "session_key": f"f{i}",
                                                        "tool_name": "web_search"}))
                calls.append(("meta/session/note", {"identity": VICTIM, "session_key": f"victim-other-{i}"}))
        assert all("result" in o for o in batch(gateway, calls))
    # the write names the tainted session: quarantined, even though the victim last noted a clean one
    assert "QUARANTINED" in llm_write(gateway, VICTIM, "victim-s", "after the flood")
    # back in the tainted session, every write from it is quarantined
    assert gateway.result("meta/session/note", {"identity": VICTIM, "session_key": "victim-s"})["tainted"] is True
    assert "QUARANTINED" in llm_write(gateway, VICTIM, None, "after the flood, current session")
    assert "QUARANTINED" in llm_write(gateway, "flood:0", "f0", "first flooded tainted session")


def test_at_the_session_state_cap_new_sessions_are_refused_and_writes_quarantine(gateway_factory: Any,
                                                                              tmp_path: Any) -> None:
    config = write_config(tmp_path / "cap.toml", "[agent_memory]\nsession_state_limit = 1000\n")
    gw = gateway_factory(tmp_path / "state-cap", config=config)
    taint(gw, VICTIM, "victim-s")
    gw.result("meta/session/note", {"identity": "known:1", "session_key": "k1"})
    out = batch(gw, [("meta/session/note", {"identity": f"flood:{i}", "session_key": "x"}) for i in range(2_000)])
    refused = [o for o in out if "error" in o]
    assert refused and all(o["error"]["data"] == {"kind": "agent_memory", "reason": "session_limit"} for o in refused)
    assert "session_state_expiry_days" in refused[0]["error"]["message"]
    assert "QUARANTINED" in llm_write(gw, VICTIM, "victim-s", "at the cap")
    # a new identity's untrusted tool result is still recorded (taint is never refused) ...
    verdict = gw.result("meta/turn/tool_result", {"identity": "late:1", "session_key": "l1", "tool_name": "fetch"})
    assert verdict["session_tainted"] is True
    # ... and a clean known session's LLM write quarantines while the state is full (fail closed)
    text = llm_write(gw, "known:1", "k1", "clean but at the cap")
    assert "QUARANTINED" in text and "capacity" in text


def test_a_write_naming_no_session_carries_the_taint_of_any_of_the_identitys_sessions(gateway: GatewayProcess) -> None:
    """A ``memory`` tool write without a ``session_key`` may come from any of the identity's contexts: with
    session A tainted and a clean session B noted after it (B the identity's current session), the unnamed
    write is held, while B's named write lands active. Once A is reset, unnamed writes land active again."""
    ident = "several:1"
    taint(gateway, ident, "tainted-a")
    gateway.result("meta/session/note", {"identity": ident, "session_key": "clean-b"})
    assert "QUARANTINED" not in llm_write(gateway, ident, "clean-b", "from B, named")
    held = llm_write(gateway, ident, None, "from no named session")
    assert "QUARANTINED" in held and "web_fetch" in held, held
    gateway.result("meta/session/reset", {"identity": ident, "session_key": "tainted-a"})
    gateway.result("meta/session/note", {"identity": ident, "session_key": "clean-b"})
    assert "QUARANTINED" not in llm_write(gateway, ident, None, "unnamed, after A's reset")
