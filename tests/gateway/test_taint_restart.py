"""Session taint survives a gateway restart: a restart is not a fresh-context boundary for the host."""

from __future__ import annotations


def _remember(gw, session: str, title: str) -> str:
    out = gw.result("meta/agent_memory/tool", {"identity": "lead:main", "session_key": session,
                                               "arguments": {"action": "remember", "title": title, "body": f"{title} body"}})
    return out["text"]


def test_taint_survives_restart_and_only_a_reset_clears_it(gateway_factory, tmp_path):
    state = tmp_path / "s"
    gw = gateway_factory(state)
    verdict = gw.result("meta/turn/tool_result", {"identity": "lead:main", "session_key": "web1", "tool_name": "web_fetch"})
    assert verdict["session_tainted"] is True
    assert "QUARANTINED" in _remember(gw, "web1", "before restart")
    assert gw.stop() == 0

    gw = gateway_factory(state)
    assert gw.result("meta/session/note", {"identity": "lead:main", "session_key": "web1"})["tainted"] is True
    assert "QUARANTINED" in _remember(gw, "web1", "after restart")
    gw.proc.kill()  # even a crash keeps it: the transition was saved before tool_result answered
    gw.proc.wait()

    gw = gateway_factory(state)
    assert gw.result("meta/session/note", {"identity": "lead:main", "session_key": "web1"})["tainted"] is True
    gw.result("meta/session/reset", {"identity": "lead:main", "session_key": "web1"})
    assert "QUARANTINED" not in _remember(gw, "web2", "clean after reset")
    assert gw.stop() == 0

    gw = gateway_factory(state)  # the reset is durable too
    assert gw.result("meta/session/note", {"identity": "lead:main", "session_key": "web2"})["tainted"] is False


def test_taint_file_of_an_earlier_version_is_adopted_not_dropped(gateway_factory, tmp_path):
    import json

    state = tmp_path / "legacy"
    state.mkdir()
    (state / "firewall-taint.json").write_text(json.dumps({
        "tainted": {"old-s": [1_700_000_000_000, "web tool 'web_fetch'"]},
        "pending": {"lead:main": [1_700_000_000_000, "web tool 'web_search'"]},
        "boundaries": {},
    }))
    gw = gateway_factory(state)
    assert not (state / "firewall-taint.json").exists() and (state / "firewall-taint.json.imported").exists()
    # the pending taint lands on the identity's next session; the old session key stays tainted for anyone
    assert gw.result("meta/session/note", {"identity": "lead:main", "session_key": "new-s"})["tainted"] is True
    out = gw.result("meta/agent_memory/tool", {"identity": "other:1", "session_key": "old-s", "arguments": {
        "action": "remember", "title": "legacy", "body": "legacy body"}})
    assert "QUARANTINED" in out["text"] and "web_fetch" in out["text"]
