"""A tainted MCP session cannot destroy memory: its ``forget`` through ``meta-memory mcp --url`` is
held for review and the record stays active (driven by the official MCP SDK client)."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from support import REPO_ROOT, start_gateway

SERVER_ENV = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
IDENTITY, SESSION = "agent:mcp-forget", "ide-forget-1"


def _text(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return str(result.content[0].text)


def test_a_tainted_mcp_forget_is_held_and_the_record_stays(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "gw-state")
    try:
        def rpc(method: str, params: dict[str, Any]) -> Any:
            body = httpx.post(gw.url + "/rpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                              timeout=30).json()
            return body["result"]

        async def scenario(s: ClientSession) -> tuple[str, str]:
            stored = _text(await s.call_tool("memory", {"action": "remember", "title": "Release train",
                                                        "body": "The release train leaves on Thursdays."}))
            await anyio.to_thread.run_sync(lambda: rpc("meta/turn/tool_result", {
                "identity": IDENTITY, "session_key": SESSION, "tool_name": "web_fetch"}))
            mid = stored.split("memory ", 1)[1].split(" ", 1)[0].rstrip(".")
            forgot = await s.call_tool("memory", {"action": "forget", "memory_id": mid})
            assert forgot.is_error is False
            return mid, _text(forgot)

        params = StdioServerParameters(
            command=sys.executable,
            # the host reports this session's tool results (the web_fetch above), so the normal posture applies
            args=["-m", "meta_memory.cli", "mcp", "--url", gw.url, "--identity", IDENTITY, "--session-key", SESSION,
                  "--session-taint", "reported"],
            env=SERVER_ENV,
        )

        async def main() -> tuple[str, str]:
            with anyio.fail_after(60):
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        return await scenario(session)

        mid, forgot = anyio.run(main)
        assert "HELD pending review (session tainted by web tool 'web_fetch')" in forgot
        conn = sqlite3.connect(gw.state_dir / "agent-memory" / "default.sqlite3")
        try:
            assert conn.execute("SELECT status_kind FROM records WHERE memory_id = ?", (mid,)).fetchone()[0] == "active"
            assert conn.execute("SELECT status FROM pending_forgets WHERE memory_id = ?", (mid,)).fetchone()[0] == "pending"
        finally:
            conn.close()
        queue = rpc("meta/memory/panel/quarantine", {})["pending_forgets"]
        assert [f["memory_id"] for f in queue] == [mid]
    finally:
        gw.stop()
