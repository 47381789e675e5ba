"""Who may create a realm (docs/access.md, "Realms: who creates one"), through a real gateway.

A grant that reaches a realm only through ``realm = "*"`` writes into realms that exist and creates
none: otherwise one identity's wildcard grant could invent realms until ``[agent_memory] max_realms``
refuses everyone's next new realm, and multiply every per (realm, identity) bound by the realms it
invents. An unscoped grant, a grant naming the realm, the gateway's default realm and a realm of the
``[agent_memory] realms`` allow-list may create. Concurrent attempts are each judged before the realm
exists. The ``max_realms`` refusal tells the realm count only to a caller holding the write unscoped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import GatewayProcess, RpcClient, access_toml, realm_db, run_together, start_gateway, write_config

ME = "alice:main"
SIGHT = ("agent.memory.read", "agent.view")
WRITE = (*SIGHT, "agent.memory.write")
TOOL = (*WRITE, "agent.session.manage")
EVERYWHERE = {"identity": ME, "realm": "*"}
GRANTS = [
    *(("admin", a) for a in (*TOOL, "operator.status")),
    *(("wild", a, EVERYWHERE) for a in TOOL),
    *(("named", a, {"identity": ME, "realm": "hr"}) for a in WRITE),
    *(("realmwide", a, {"realm": "ops"}) for a in WRITE),
    *(("racer", a, {"identity": ME, "realm": "race-mixed"}) for a in WRITE),
    *(("racer", a, EVERYWHERE) for a in WRITE),
]
PRINCIPALS = ("admin", "wild", "named", "realmwide", "racer")


def tok(who: str) -> str:
    return f"tok-{who}-realm-creation"


def remember(client: RpcClient, realm: str | None, body: str, identity: str = ME) -> dict[str, Any]:
    params: dict[str, Any] = {"identity": identity, "title": "t", "body": body}
    if realm is not None:
        params["realm"] = realm
    return client.rpc("meta/agent_memory/remember", params)


def assert_creation_refused(answer: dict[str, Any], realm: str) -> None:
    err = answer.get("error")
    assert err is not None, answer
    assert err["code"] == -32030 and err["data"]["kind"] == "access_denied", err
    assert err["data"]["action"] == "agent.memory.write" and err["data"]["resource"] == f"realm:{realm}", err


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, dict[str, RpcClient]]]:
    root: Path = tmp_path_factory.mktemp("realm_creation")
    toml = access_toml({tok(w): w for w in PRINCIPALS}, GRANTS)
    proc = start_gateway(root / "state", config=write_config(root / "meta.toml", toml))
    clients = {who: RpcClient(proc, tok(who)) for who in PRINCIPALS}
    try:
        yield proc, clients
    finally:
        for c in clients.values():
            c.close()
        proc.discard()


def test_a_wildcard_grant_writes_into_an_existing_realm_but_creates_none(gw: Any) -> None:
    proc, c = gw
    assert "error" not in remember(c["admin"], "shared", "made by the admin", identity="bob:main")
    assert "error" not in remember(c["wild"], "shared", "alice writes where the realm exists")
    for i in range(3):
        assert_creation_refused(remember(c["wild"], f"junk{i}", f"junk {i}"), f"junk{i}")
        assert not realm_db(proc.state_dir, f"junk{i}").exists()
    # every write path that would create the realm is judged the same way
    batch = c["wild"].rpc("meta/agent_memory/remember_batch", {
        "identity": ME, "realm": "junk-batch", "records": [{"title": "t", "body": "b"}]})
    assert_creation_refused(batch, "junk-batch")
    tool = c["wild"].result("meta/agent_memory/tool", {"identity": ME, "realm": "junk-tool", "arguments": {
        "action": "remember", "title": "t", "body": "from the tool"}})
    assert tool["is_error"] is True and "access denied: agent.memory.write" in tool["text"]
    for realm in ("junk-batch", "junk-tool"):
        assert not realm_db(proc.state_dir, realm).exists()
    # the admin's realm list holds none of the refused realms
    realms = c["admin"].result("meta/status")["agent_memory"]["realms"]
    assert not any(r.startswith("junk") for r in realms)


def test_an_unscoped_or_a_realm_naming_grant_creates(gw: Any) -> None:
    proc, c = gw
    assert "error" not in remember(c["named"], "hr", "alice in hr")
    assert "error" not in remember(c["realmwide"], "ops", "alice in ops")
    assert "error" not in remember(c["admin"], "fresh", "the admin's new realm")
    for realm in ("hr", "ops", "fresh"):
        assert realm_db(proc.state_dir, realm).exists()
    # once it exists, the wildcard grant writes there too
    assert "error" not in remember(c["wild"], "fresh", "alice in the admin's realm")


def test_concurrent_wildcard_attempts_create_nothing(gw: Any) -> None:
    proc, c = gw
    answers = run_together(lambda i: remember(c["wild"], "race-wild", f"attempt {i}"), 6)
    for answer in answers:
        assert_creation_refused(answer, "race-wild")
    assert not realm_db(proc.state_dir, "race-wild").exists()


def test_concurrent_attempts_are_each_judged_before_the_realm_exists(gw: Any) -> None:
    proc, c = gw
    # racer names race-mixed (may create) and holds "*" too; wild holds "*" alone
    answers = run_together(lambda i: remember(c["racer"] if i == 0 else c["wild"], "race-mixed", f"attempt {i}"), 6)
    assert "error" not in answers[0], answers[0]
    stored = 1
    for answer in answers[1:]:
        if "error" in answer:  # judged before racer's write created the realm
            assert_creation_refused(answer, "race-mixed")
        else:  # judged after: the realm existed
            stored += 1
    assert realm_db(proc.state_dir, "race-mixed").exists()
    listed = c["admin"].result("meta/agent_memory/list", {"identity": ME, "realm": "race-mixed", "limit": 50})
    assert len(listed["records"]) == stored


def test_the_default_realm_and_listed_realms_are_created_by_a_wildcard_grant(tmp_path: Path) -> None:
    toml = access_toml({tok("wild"): "wild"}, [g for g in GRANTS if g[0] == "wild"])
    toml += '\n[agent_memory]\nrealm = "home"\nrealms = ["home", "listed", "other"]\n'
    proc = start_gateway(tmp_path / "state", config=write_config(tmp_path / "meta.toml", toml))
    client = RpcClient(proc, tok("wild"))
    try:
        assert not realm_db(proc.state_dir, "home").exists()
        assert "error" not in remember(client, None, "into the gateway's own realm")
        assert "error" not in remember(client, "listed", "into a listed realm")
        assert realm_db(proc.state_dir, "home").exists() and realm_db(proc.state_dir, "listed").exists()
    finally:
        client.close()
        proc.discard()


def test_the_realm_cap_refusal_tells_the_count_to_an_unscoped_writer_only(tmp_path: Path) -> None:
    toml = access_toml({tok(w): w for w in PRINCIPALS}, GRANTS)
    toml += "\n[agent_memory]\nmax_realms = 3\n"
    proc = start_gateway(tmp_path / "state", config=write_config(tmp_path / "meta.toml", toml))
    c = {who: RpcClient(proc, tok(who)) for who in ("admin", "named", "wild")}
    try:
        for realm in ("default", "a1", "a2"):
            assert "error" not in remember(c["admin"], realm, f"fill {realm}")
        admin = remember(c["admin"], "a3", "one too many")["error"]
        assert admin["code"] == -32040 and admin["data"]["reason"] == "limit"
        assert "3 realm databases exist" in admin["message"] and "max_realms = 3" in admin["message"]
        named = remember(c["named"], "hr", "alice's first write in hr")["error"]
        assert named["code"] == -32040 and named["data"]["reason"] == "limit"
        assert "agent_memory.max_realms" in named["message"]
        assert not re.search(r"\d", named["message"].replace("agent_memory.max_realms", "")), named["message"]
        # a wildcard grant is refused for its grant first: it learns nothing of the cap
        assert_creation_refused(remember(c["wild"], "a4", "junk"), "a4")
        assert any("cannot create realm 'hr': 3 realm databases exist" in line for line in proc.proc.log_tail)
    finally:
        for client in c.values():
            client.close()
        proc.discard()
