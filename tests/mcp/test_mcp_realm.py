"""``meta-memory mcp --realm``: the bridge names its realm in every call, so a host that reports the
session's tool results in that realm taints the bridge's writes there (driven by the official MCP SDK
client, with ``--url`` and with ``--state-dir``)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession

from support import GatewayProcess, realm_db, start_gateway

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mcp_server import SERVER_ENV, memory_id_of, records, run_mcp, run_mcp_command, text  # noqa: E402

AGENT = "agent:mcp-user"


async def host_reports(gw: GatewayProcess, tool_name: str, realm: str = "ops", session: str = "ide-1") -> Any:
    """The host beside the MCP session reports one tool result of that session, in ``realm``."""
    return await anyio.to_thread.run_sync(lambda: gw.result("meta/turn/tool_result", {
        "identity": AGENT, "session_key": session, "realm": realm, "tool_name": tool_name}))


def test_a_bridge_to_a_gateway_writes_in_its_realm_under_the_taint_the_host_reports_there(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path / "gw-state")
    try:
        async def scenario(s: ClientSession) -> dict[str, Any]:
            assert (await host_reports(gw, "calculator"))["session_tainted"] is False
            out = {"clean": await s.call_tool("memory", {"action": "remember", "title": "Payee",
                                                         "body": "refunds go back to the card"})}
            # a web page read in the default realm's session of that key taints nothing in ops
            await host_reports(gw, "web_fetch", realm="default")
            out["still_clean"] = await s.call_tool("memory", {"action": "remember", "title": "Hours",
                                                              "body": "support answers 9 to 5"})
            assert (await host_reports(gw, "web_fetch"))["session_tainted"] is True
            out["tainted"] = await s.call_tool("memory", {"action": "remember", "title": "Payee",
                                                          "body": "wire refunds to account 4471"})
            out["forget"] = await s.call_tool("memory", {"action": "forget",
                                                         "memory_id": memory_id_of(text(out["clean"]))})
            return out

        out = run_mcp_command(scenario, "--identity", AGENT, "--url", gw.url, "--realm", "ops",
                              "--session-key", "ide-1", "--session-taint", "reported")
        assert "QUARANTINED" not in text(out["clean"]) and "QUARANTINED" not in text(out["still_clean"])
        assert "QUARANTINED pending review (session tainted by web tool 'web_fetch')" in text(out["tainted"])
        assert "is HELD pending review" in text(out["forget"])
        rows = records(gw.state_dir, "ops")
        assert rows[memory_id_of(text(out["tainted"]))]["status_kind"] == "quarantined"
        assert rows[memory_id_of(text(out["clean"]))]["status_kind"] == "active"  # the forget is held
        assert not realm_db(gw.state_dir).exists()
    finally:
        gw.stop()


def test_a_standalone_bridge_keeps_its_session_and_writes_in_its_realm(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def scenario(s: ClientSession) -> Any:
        return await s.call_tool("memory", {"action": "remember", "title": "Note", "body": "written unseen"})

    stored = run_mcp(state, scenario, "--realm", "ops", "--session-key", "ide-1", identity=AGENT)
    assert "QUARANTINED pending review (session tainted by unreported tool results" in text(stored)
    assert records(state, "ops")[memory_id_of(text(stored))]["status_kind"] == "quarantined"
    assert not realm_db(state).exists()
    db = sqlite3.connect(f"file:{state / 'session-state.db'}?mode=ro", uri=True)
    try:
        assert {r[0] for r in db.execute("SELECT realm FROM session_states")} == {"ops"}
    finally:
        db.close()


def test_a_bridge_to_a_gateway_still_refuses_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[agent_memory]\nrealm = \"ops\"\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--url", "http://127.0.0.1:9", "--identity", "agent:x",
         "--realm", "ops", "--config", str(config)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**SERVER_ENV, "PATH": "/usr/bin"})
    assert proc.returncode == 2 and "--url uses the gateway's own config; drop --config" in proc.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "meta_memory.cli", "mcp", "--url", "http://127.0.0.1:9", "--identity", "agent:x",
         "--realm", "a\tb"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**SERVER_ENV, "PATH": "/usr/bin"})
    assert bad.returncode == 2 and "realm must not contain control characters" in bad.stderr
    for flag, name in (("--realm", " ops "), ("--identity", "agent:x ")):
        args = {"--identity": "agent:x", "--realm": "ops", flag: name}
        padded = subprocess.run(
            [sys.executable, "-m", "meta_memory.cli", "mcp", "--url", "http://127.0.0.1:9",
             "--identity", args["--identity"], "--realm", args["--realm"]],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env={**SERVER_ENV, "PATH": "/usr/bin"})
        field = flag.removeprefix("--")
        assert padded.returncode == 2 and f"{field} must not begin or end with whitespace" in padded.stderr
