"""A tainted MCP session cannot destroy memory: its ``forget`` through ``meta-memory mcp --url`` is
held for review and the record stays active (driven by the official MCP SDK client)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession

from support import memory_id_of, realm_db, start_gateway

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mcp_server import host_reports, run_mcp_command  # noqa: E402

IDENTITY, SESSION = "agent:mcp-forget", "ide-forget-1"


def _text(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return str(result.content[0].text)


def test_a_tainted_mcp_forget_is_held_and_the_record_stays(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "gw-state")
    try:
        async def scenario(s: ClientSession) -> tuple[str, str]:
            stored = _text(await s.call_tool("memory", {"action": "remember", "title": "Release train",
                                                        "body": "The release train leaves on Thursdays."}))
            await host_reports(gw, SESSION, "web_fetch", IDENTITY)
            mid = memory_id_of(stored)
            forgot = await s.call_tool("memory", {"action": "forget", "memory_id": mid})
            assert forgot.is_error is False
            return mid, _text(forgot)

        # the host reports this session's tool results (the web_fetch above), so the normal posture applies
        mid, forgot = run_mcp_command(scenario, "--url", gw.url, "--identity", IDENTITY, "--session-key", SESSION,
                                      "--session-taint", "reported")
        assert "HELD pending review (session tainted by web tool 'web_fetch')" in forgot
        conn = sqlite3.connect(realm_db(gw.state_dir))
        try:
            assert conn.execute("SELECT status_kind FROM records WHERE memory_id = ?", (mid,)).fetchone()[0] == "active"
            assert conn.execute("SELECT status FROM pending_forgets WHERE memory_id = ?", (mid,)).fetchone()[0] == "pending"
        finally:
            conn.close()
        queue = gw.result("meta/memory/panel/quarantine", {})["pending_forgets"]
        assert [f["memory_id"] for f in queue] == [mid]
    finally:
        gw.stop()
