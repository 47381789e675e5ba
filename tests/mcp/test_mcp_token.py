"""``meta-memory mcp --url`` against a gateway whose bearer tokens are its only guard: the token
comes from ``--token`` or ``META_MEMORY_TOKEN``, reaches the gateway in the header, and is never echoed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from meta_memory.access.config import hash_token
from support import REPO_ROOT, start_gateway, write_config

TOKEN = "mcp-bridge-token-0001"
CONFIG = f'[access]\nenabled = false\n\n[[access.tokens]]\nsha256 = "{hash_token(TOKEN)}"\nprincipal = "ide"\n'
SERVER_ENV = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}


def run_bridge(url: str, *args: str, env: dict[str, str] | None = None) -> tuple[list[str], str, str]:
    """Spawn the bridge, list tools and remember once; returns (tool names, call text, bridge stderr)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "meta_memory.cli", "mcp", "--identity", "agent:ide", "--url", url, *args],
        env={**SERVER_ENV, **(env or {})},
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async def main() -> tuple[list[str], str]:
            with anyio.fail_after(60):
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        tools = [t.name for t in (await session.list_tools()).tools]
                        out = await session.call_tool("memory", {"action": "remember", "title": "From the IDE",
                                                                 "body": "remember the build flags"})
                        return tools, out.content[0].text

        tools, text = anyio.run(main)
        errlog.seek(0)
        return tools, text, errlog.read()


@pytest.mark.parametrize("how", ["option", "environment"])
def test_bridge_sends_the_token_and_never_echoes_it(tmp_path: Path, how: str) -> None:
    gw = start_gateway(tmp_path / "state", config=write_config(tmp_path / "tokens.toml", CONFIG))
    try:
        args, env = (["--token", TOKEN], None) if how == "option" else ([], {"META_MEMORY_TOKEN": TOKEN})
        tools, text, stderr = run_bridge(gw.url, *args, env=env)
        assert tools == ["memory"]
        assert text.startswith("Stored memory mem-"), text
        titles = [r["title"] for r in gw.result("meta/memory/panel/records", {}, token=TOKEN)["records"]]
        assert titles == ["From the IDE"]
        assert TOKEN not in stderr
        assert not any(TOKEN in line for line in gw.proc.log_tail)
    finally:
        gw.stop()


@pytest.mark.parametrize("token", ["", "not-the-token"])
def test_bridge_without_the_right_token_refuses_to_start_in_one_line(tmp_path: Path, token: str) -> None:
    gw = start_gateway(tmp_path / "state", config=write_config(tmp_path / "tokens.toml", CONFIG))
    try:
        proc = subprocess.run([sys.executable, "-m", "meta_memory.cli", "mcp", "--identity", "agent:ide",
                               "--url", gw.url], input="", capture_output=True, text=True, timeout=60,
                              env={**os.environ, **SERVER_ENV, "META_MEMORY_TOKEN": token})
        assert proc.returncode == 1
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "refused the bridge: authentication failed" in lines[0], proc.stderr
        assert token == "" or token not in proc.stderr
        assert gw.result("meta/memory/panel/records", {}, token=TOKEN)["records"] == []
    finally:
        gw.stop()
