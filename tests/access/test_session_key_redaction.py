"""A session key is shown in clear only to a caller who may manage the session.

Session keys are bearer-like within a realm: whoever presents one acts in that session (its taint, its
injection dedup, its harvest). Every read surface that returns one (a record's injection rows, the
injection ledger, pending harvests, the timeline's taint transitions, over ``meta/events/list`` and
``GET /events``) shows a reader holding only read grants a stable digest ``sha256:<8 hex>`` instead,
and the key itself to a holder of ``agent.session.manage`` on the identity. Driven over a real gateway.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

ID = "a:main"
KEY = "host-session-7f3c9a1e-unguessable"
DIGEST = "sha256:" + hashlib.sha256(KEY.encode()).hexdigest()[:8]
HOST, READER, AUDITOR = "session-key-host-0001", "session-key-reader-0001", "session-key-auditor-0001"
READ = ("agent.memory.read", "agent.view")
# the host manages the identity's sessions (and reads the whole realm, as the panel's listings need); the
# reader reads the identity; the auditor reads the whole realm; neither of them may manage a session
GRANTS = [("host", a, {"identity": ID}) for a in ("agent.memory.write", "agent.session.manage")]
GRANTS += [(who, a) for who in ("host", "auditor") for a in READ]
GRANTS += [("reader", a, {"identity": ID}) for a in READ]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("session-keys")
    config = write_config(root / "config.toml",
                          access_toml({HOST: "host", READER: "reader", AUDITOR: "auditor"}, GRANTS))
    gw = start_gateway(root / "state", config=config)
    try:
        memory_id = gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Coffee", "body": "espresso"},
                              token=HOST)["memory_id"]
        gw.result("meta/session/note", {"identity": ID, "session_key": KEY}, token=HOST)
        gw.result("meta/turn/inject", {"identity": ID, "session_key": KEY, "query_text": "coffee espresso"},
                  token=HOST)
        gw.result("meta/turn/tool_result", {"identity": ID, "session_key": KEY, "tool_name": "web_fetch"},
                  token=HOST)
        gw.result("meta/session/retire", {"identity": ID, "session_key": KEY, "cause": "done"}, token=HOST)
        deadline = time.monotonic() + 20
        while not gw.result("meta/memory/panel/record", {"memory_id": memory_id}, token=HOST)["injections"]:
            assert time.monotonic() < deadline, "the injection was never logged"
            time.sleep(0.1)
        yield gw, memory_id
    finally:
        gw.stop()


def _reads(gw: GatewayProcess, memory_id: str, token: str, *, realm_wide: bool = True) -> dict[str, Any]:
    reads = {
        "record": gw.result("meta/memory/panel/record", {"memory_id": memory_id}, token=token)["injections"],
        "events": [e["data"] for e in gw.result("meta/events/list", {}, token=token)["events"]
                   if "session_key" in e["data"]],
    }
    if realm_wide:
        reads["injections"] = gw.result("meta/memory/panel/injections", {}, token=token)["injections"]
        reads["harvests"] = gw.result("meta/memory/panel/harvests", {}, token=token)["harvests"]
    return reads


@pytest.mark.parametrize("token,realm_wide", [(READER, False), (AUDITOR, True)])
def test_a_reader_sees_a_digest_of_the_session_key_on_every_read_surface(
        world: tuple[GatewayProcess, str], token: str, realm_wide: bool) -> None:
    gw, memory_id = world
    reads = _reads(gw, memory_id, token, realm_wide=realm_wide)
    for surface, rows in reads.items():
        assert rows, f"{surface} returned no row with a session key"
        assert {row["session_key"] for row in rows} == {DIGEST}, surface
    assert KEY not in json.dumps(reads)


def test_the_session_manager_sees_the_key(world: tuple[GatewayProcess, str]) -> None:
    gw, memory_id = world
    for surface, rows in _reads(gw, memory_id, HOST).items():
        assert rows and {row["session_key"] for row in rows} == {KEY}, surface


def test_the_timeline_stream_shows_a_reader_the_digest(world: tuple[GatewayProcess, str]) -> None:
    gw, _ = world
    seen: list[dict[str, Any]] = []
    with httpx.stream("GET", gw.url + "/events?after=0", headers={"Authorization": f"Bearer {READER}"},
                      timeout=10) as resp:
        assert resp.status_code == 200
        deadline = time.monotonic() + 10
        for line in resp.iter_lines():
            if line.startswith("data: "):
                data = json.loads(line[6:])["data"]
                if "session_key" in data:
                    seen.append(data)
                    break
            if time.monotonic() > deadline:
                break
    assert seen and seen[0]["session_key"] == DIGEST
