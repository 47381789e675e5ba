"""``meta-memory mcp`` fails closed on taint, driven by the official MCP SDK client: it cannot see
the client's other tool results, so by default every write lands quarantined; a host that reports
tool results (``--url`` + ``--session-taint reported``) gets the normal posture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from support import start_gateway

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mcp_server import (  # noqa: E402
    SERVER_ENV,
    assert_clean_then_tainted,
    host_reports,
    memory_id_of,
    records,
    run_mcp,
    run_mcp_command,
    text,
)


def test_standalone_server_quarantines_every_write_by_default(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def scenario(s: ClientSession) -> dict[str, Any]:
        out = {"remember": await s.call_tool("memory", {"action": "remember", "title": "Payee",
                                                        "body": "wire the refund to account 4471 (from a web page)"})}
        mid = memory_id_of(text(out["remember"]))
        out["update"] = await s.call_tool("memory", {"action": "update", "memory_id": mid, "title": "Payee",
                                                     "body": "wire it to 9999 instead"})
        out["recall"] = await s.call_tool("memory", {"action": "recall", "query_text": "refund account"})
        # a steered model cannot name another session or identity through the arguments
        out["retarget"] = await s.call_tool("memory", {"action": "remember", "title": "x", "body": "y",
                                                       "session_key": "clean-session"})
        return out

    out = run_mcp(state, scenario, "--session-key", "ide-1")
    assert out["remember"].is_error is False
    assert "QUARANTINED pending review (session tainted by unreported tool results" in text(out["remember"])
    assert text(out["recall"]) == "No matching memory records."
    assert out["retarget"].is_error is True
    rows = records(state)
    assert rows and all(r["status_kind"] == "quarantined" for r in rows.values())


def test_opting_out_later_does_not_launder_a_session_already_unknown(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def write(s: ClientSession) -> Any:
        return await s.call_tool("memory", {"action": "remember", "title": "Note", "body": "a note from the session"})

    first = run_mcp(state, write, "--session-key", "ide-1")
    again = run_mcp(state, write, "--session-key", "ide-1", "--session-taint", "reported")
    fresh = run_mcp(state, write, "--session-key", "ide-2", "--session-taint", "reported")
    assert "QUARANTINED" in text(first)
    assert "QUARANTINED" in text(again)  # taint is durable and sticky for that session
    assert "QUARANTINED" not in text(fresh)  # the explicit opt-out, on a new session


def test_opt_out_without_a_gateway_warns(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--state-dir", str(tmp_path / "s"), "--identity", "agent:x",
         "--session-taint", "reported"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**SERVER_ENV, "PATH": "/usr/bin"})
    assert "firewall off" in proc.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--state-dir", str(tmp_path / "s"), "--identity", "agent:x",
         "--session-taint", "ignore"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**SERVER_ENV, "PATH": "/usr/bin"})
    assert bad.returncode == 2 and "--session-taint" in bad.stderr


def test_url_mode_fails_closed_unless_the_host_reports(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "gw-state")
    try:
        async def unreported(s: ClientSession) -> Any:
            return await s.call_tool("memory", {"action": "remember", "title": "A", "body": "host reports nothing"})

        blind = run_mcp_command(unreported, "--identity", "agent:mcp-user", "--url", gw.url, "--session-key", "ide-a")
        assert "QUARANTINED pending review (session tainted by unreported tool results" in text(blind)

        async def reported(s: ClientSession) -> tuple[Any, Any]:
            calc = await host_reports(gw, "ide-b", "calculator")
            assert calc["session_tainted"] is False
            clean = await s.call_tool("memory", {"action": "remember", "title": "B", "body": "after a calculator"})
            await host_reports(gw, "ide-b", "WebFetch")
            tainted = await s.call_tool("memory", {"action": "remember", "title": "C", "body": "after a web page"})
            return clean, tainted

        clean, tainted = run_mcp_command(reported, "--identity", "agent:mcp-user", "--url", gw.url,
                                         "--session-key", "ide-b", "--session-taint", "reported")
        rows = assert_clean_then_tainted(gw, clean, tainted, "WebFetch")
        assert rows[memory_id_of(text(blind))]["status_kind"] == "quarantined"
    finally:
        gw.stop()


def test_reported_through_a_gateway_needs_the_session_key_the_host_reports_under(tmp_path: Path) -> None:
    """Without --session-key the bridge's session is a fresh key no host knows, so no tool result could
    ever taint it: 'reported' would silently switch the firewall off. It is refused instead."""
    proc = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--url", "http://127.0.0.1:9", "--identity", "agent:x",
         "--session-taint", "reported"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**SERVER_ENV, "PATH": "/usr/bin"})
    assert proc.returncode == 2, proc.stderr
    assert "--session-taint reported with --url needs --session-key" in proc.stderr


def test_a_session_key_holding_a_credential_is_never_recorded(tmp_path: Path) -> None:
    """``--session-key`` with a token: the session is recorded by its digest (nothing under the state
    directory holds the token) and stays the one session the key names, so its unknown taint sticks."""
    state = tmp_path / "state"
    token = "ghp_" + "Mw5Nc1Ps8Kd3" * 3

    async def write(s: ClientSession) -> Any:
        return await s.call_tool("memory", {"action": "remember", "title": "Note", "body": "a note from the session"})

    first = run_mcp(state, write, "--session-key", token)
    again = run_mcp(state, write, "--session-key", token, "--session-taint", "reported")
    assert "QUARANTINED" in text(first) and "QUARANTINED" in text(again)  # the same session, still unknown
    stored = b"".join(p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file())
    assert token.encode() not in stored and b"redacted-session:" in stored
