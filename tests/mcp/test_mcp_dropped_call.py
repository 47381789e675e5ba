"""``meta-memory mcp --url`` when its gateway stops or restarts in the middle of a ``memory`` call: the call
may have been applied, and the tool error the model reads says so (and how to check) rather than that the
service is merely unavailable, which would invite a blind retry."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from support import REPO_ROOT, DroppingFront, start_gateway

SERVER_ENV = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}


def test_a_tool_call_dropped_mid_call_says_it_may_have_been_applied(tmp_path: Path) -> None:
    with start_gateway(tmp_path / "state") as gw:
        front = DroppingFront(gw.url, method="meta/agent_memory/tool")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "meta_memory.cli", "mcp", "--identity", "agent:ide", "--url", front.url],
            env=SERVER_ENV,
        )

        async def main() -> tuple[bool, str]:
            with anyio.fail_after(60):
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        first = await session.call_tool("memory", {"action": "remember", "title": "Kept",
                                                                   "body": "answered in full"})
                        assert not first.is_error, first
                        front.drop = True
                        out = await session.call_tool("memory", {"action": "remember", "title": "Dropped",
                                                                 "body": "applied, then the connection closed"})
                        return bool(out.is_error), out.content[0].text

        try:
            is_error, text = anyio.run(main)
        finally:
            front.close()
        assert is_error
        assert "may or may not have been applied" in text and "recall" in text, text
        assert "unavailable" not in text, text
        titles = sorted(r["title"] for r in gw.result("meta/memory/panel/records", {})["records"])
        assert titles == ["Dropped", "Kept"]
