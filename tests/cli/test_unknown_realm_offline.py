"""A realm that holds nothing, named by an operator on its own state directory.

``export --realm`` refuses it naming the realms there, at most the first 20 and then how many more (an
installation with hundreds of realms printed them all on one line). ``list`` and ``recall`` on
``--state-dir`` refuse it alike (exit 1) instead of answering "0 records" from a mistyped name; the
realm a call naming none reads is never refused. Over RPC a memory read of an absent realm keeps its empty
answer: under access control, a refusal would tell a caller which realms exist."""

from __future__ import annotations

import json
from pathlib import Path

from meta_memory.cli import build_runtime
from meta_memory.sdk.handle import MetaHandle
from meta_memory.sdk.transport import EmbeddedTransport
from meta_memory.server.gateway import Gateway
from support import GatewayProcess, access_toml, meta_memory_cli, start_gateway, write_config

ID = "lead:main"


def seed(state: Path, realms: list[str]) -> None:
    handle = MetaHandle(EmbeddedTransport(Gateway.for_runtime(build_runtime(state, None, one_shot=True))))
    try:
        for realm in realms:
            handle.remember_agent_memory(ID, title=f"in {realm}", body="b", realm=realm)
    finally:
        handle.close()


def said(proc: object) -> str:
    return " ".join(proc.stderr.decode().split())  # type: ignore[attr-defined]


def test_export_of_an_unknown_realm_names_at_most_twenty_realms(tmp_path: Path) -> None:
    state = tmp_path / "s"
    realms = [f"r{i:02d}" for i in range(45)]
    seed(state, realms)
    out = meta_memory_cli("export", "--state-dir", str(state), "--realm", "nosuch", "-o", "-")
    assert out.returncode == 1 and out.stdout == b""
    text = said(out)
    assert "realm 'nosuch' holds no agent memory here (realms: " in text, text
    named = text.split("(realms: ", 1)[1].rsplit(")", 1)[0]
    shown, _, more = named.partition(" and ")
    assert len(shown.split(", ")) == 20 and more == "25 more", named
    assert set(shown.split(", ")) <= set(realms)


def test_export_of_an_unknown_realm_names_every_realm_when_few(tmp_path: Path) -> None:
    state = tmp_path / "s"
    seed(state, ["default", "ops"])
    out = meta_memory_cli("export", "--state-dir", str(state), "--realm", "nosuch", "-o", "-")
    assert out.returncode == 1
    assert "holds no agent memory here (realms: default, ops)" in said(out), said(out)


def test_list_and_recall_on_a_state_dir_refuse_a_realm_that_holds_nothing(tmp_path: Path) -> None:
    state = tmp_path / "s"
    seed(state, ["default", "ops"])
    for command in (["list"], ["recall", "anything"]):
        out = meta_memory_cli(*command, "--identity", ID, "--realm", "nosuch", "--state-dir", str(state))
        assert out.returncode == 1, (command, out.stdout, out.stderr)
        assert "'nosuch' holds no agent memory here (realms: default, ops)" in said(out), said(out)
        assert b"0 records" not in out.stdout
        as_json = meta_memory_cli(*command, "--identity", ID, "--realm", "nosuch", "--state-dir", str(state), "--json")
        error = json.loads(as_json.stdout)["error"]
        assert as_json.returncode == 1 and error["code"] == -32602 and error["data"]["field"] == "realm", error
    assert not (state / "agent-memory" / "nosuch.sqlite3").exists()  # the read created nothing
    # a realm that exists, and the gateway's own realm named outright, are read as before
    ok = meta_memory_cli("list", "--identity", ID, "--realm", "ops", "--state-dir", str(state), "--json")
    assert ok.returncode == 0 and [r["title"] for r in json.loads(ok.stdout)] == ["in ops"]
    fresh = tmp_path / "fresh"
    seed(fresh, ["ops"])
    own = meta_memory_cli("list", "--identity", ID, "--realm", "default", "--state-dir", str(fresh), "--json")
    assert own.returncode == 0 and json.loads(own.stdout) == [], own.stderr


def test_a_read_over_rpc_keeps_its_empty_answer_for_an_absent_realm(tmp_path: Path) -> None:
    """Under access control an absent realm must read as an empty one: a refusal would be an existence oracle."""
    reader = "reader-token"
    cfg = write_config(tmp_path / "c.toml", access_toml(
        {reader: "reader"}, [("reader", a) for a in ("agent.memory.read", "agent.memory.write", "agent.view")]))
    gw: GatewayProcess = start_gateway(tmp_path / "state", config=cfg)
    try:
        gw.rpc("meta/agent_memory/remember", {"identity": ID, "title": "t", "body": "b", "realm": "ops"}, token=reader)
        for realm in ("ops", "nosuch"):
            result = gw.result("meta/agent_memory/list", {"identity": ID, "realm": realm}, token=reader)
            assert "records" in result
        out = meta_memory_cli("list", "--identity", ID, "--realm", "nosuch", "--url", gw.url, "--token", reader)
        assert out.returncode == 0, out.stderr
    finally:
        gw.stop()
