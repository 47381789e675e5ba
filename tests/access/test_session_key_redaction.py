"""A session key is shown in clear only to a caller who may manage the session.

Session keys are bearer-like within a realm: whoever presents one acts in that session (its taint, its
injection dedup, its harvest). Every read surface that returns one (a record's injection rows, the
injection ledger, pending harvests, the timeline's taint transitions, over ``meta/events/list`` and
``GET /events``, a record's provenance evidence on the panel's record reads) shows a reader holding only
read grants a stable digest ``key:<8 hex>`` instead (an HMAC-SHA256 under the installation's
session-digest secret, so a weak key is not recovered by hashing guesses), and the key itself to a holder
of ``agent.session.manage`` on the identity. Reasons (a quarantined record's status, its
``memory.write.quarantined`` event) never name a session. Driven over a real gateway.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support import GatewayProcess, access_toml, start_gateway, write_config

pytestmark = pytest.mark.gateway

ID = "a:main"
KEY = "host-session-7f3c9a1e-unguessable"
#: a clean session a record is derived from (the record lands active)
CLEAN = "clean-session-5be1d0c2-unguessable"
HOST, READER, AUDITOR = "session-key-host-0001", "session-key-reader-0001", "session-key-auditor-0001"
REVIEWER = "session-key-reviewer-0001"
READ = ("agent.memory.read", "agent.view")
# the host manages the identity's sessions (and reads the whole realm, as the panel's listings need); the
# reader reads the identity; the auditor reads the whole realm; the reviewer reads and reviews quarantined
# content; none of them but the host may manage a session
GRANTS = [("host", a, {"identity": ID}) for a in ("agent.memory.write", "agent.session.manage")]
GRANTS += [(who, a) for who in ("host", "auditor", "reviewer") for a in READ]
GRANTS += [("reader", a, {"identity": ID}) for a in READ]
GRANTS += [("reviewer", "memory.quarantine.review")]
TOKENS = {HOST: "host", READER: "reader", AUDITOR: "auditor", REVIEWER: "reviewer"}


def digest(state: Path, key: str) -> str:
    """The digest a reader is shown: HMAC-SHA256 under the state directory's session-digest secret."""
    secret = bytes.fromhex((state / "session-digest.key").read_text().strip())
    return "key:" + hmac.new(secret, key.encode(), hashlib.sha256).hexdigest()[:8]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, str]]:
    root = tmp_path_factory.mktemp("session-keys")
    config = write_config(root / "config.toml", access_toml(TOKENS, GRANTS))
    gw = start_gateway(root / "state", config=config)
    gw.state = root / "state"  # type: ignore[attr-defined]
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
        gw.result("meta/session/note", {"identity": ID, "session_key": CLEAN}, token=HOST)
        for title, key in (("Standup", CLEAN), ("Talk", KEY)):
            gw.result("meta/agent_memory/remember", {"identity": ID, "title": title, "body": f"summary of the {title}",
                                                     "derived_from_sessions": [key]}, token=HOST)
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
        keys = (KEY, CLEAN) if surface == "events" else (KEY,)  # the timeline also tells of the clean session
        assert {row["session_key"] for row in rows} == {digest(gw.state, k) for k in keys}, surface  # type: ignore[attr-defined]
    assert KEY not in json.dumps(reads) and CLEAN not in json.dumps(reads)


def test_the_session_manager_sees_the_key(world: tuple[GatewayProcess, str]) -> None:
    gw, memory_id = world
    for surface, rows in _reads(gw, memory_id, HOST).items():
        assert rows and {row["session_key"] for row in rows} == ({KEY, CLEAN} if surface == "events" else {KEY}), surface


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
    assert seen and seen[0]["session_key"] == digest(gw.state, KEY)  # type: ignore[attr-defined]


def _evidence(gw: GatewayProcess, title: str, token: str) -> dict[str, list[str]]:
    """The provenance evidence session ids of the record titled ``title``, per panel read."""
    rows = [r for r in gw.result("meta/memory/panel/records", {}, token=token)["records"] if r["title"] == title]
    assert len(rows) == 1
    detail = gw.result("meta/memory/panel/record", {"memory_id": rows[0]["id"]}, token=token)
    chain = [c for c in detail["chain"] if c["chain_role"] == "self"]
    return {surface: [e["session_id"] for e in row["provenance"]["evidence"]]
            for surface, row in (("records", rows[0]), ("record", detail["record"]), ("chain", chain[0]))}


@pytest.mark.parametrize("token", [READER, AUDITOR])
def test_record_provenance_shows_a_reader_the_digest_of_the_session_it_was_derived_from(
        world: tuple[GatewayProcess, str], token: str) -> None:
    gw, _ = world
    assert _evidence(gw, "Standup", token) == {s: [digest(gw.state, CLEAN)]  # type: ignore[attr-defined]
                                               for s in ("records", "record", "chain")}
    assert _evidence(gw, "Standup", HOST) == {s: [CLEAN] for s in ("records", "record", "chain")}


def test_a_reviewer_of_a_quarantined_derived_record_sees_neither_key_nor_keyed_reason(
        world: tuple[GatewayProcess, str]) -> None:
    gw, _ = world
    queue = gw.result("meta/memory/panel/quarantine", {}, token=REVIEWER)["records"]
    talk = [r for r in queue if r["title"] == "Talk"]
    assert talk and talk[0]["status"]["reason"].startswith("derived from a session tainted by web tool")
    assert _evidence(gw, "Talk", REVIEWER)["record"] == [digest(gw.state, KEY)]  # type: ignore[attr-defined]
    assert KEY not in json.dumps([queue, gw.result("meta/memory/panel/record", {"memory_id": talk[0]["id"]},
                                                   token=REVIEWER)])


@pytest.mark.parametrize("token", [READER, AUDITOR, HOST])
def test_the_quarantine_event_reason_names_no_session(world: tuple[GatewayProcess, str], token: str) -> None:
    gw, _ = world
    events = [e for e in gw.result("meta/events/list", {}, token=token)["events"]
              if e["event_type"] == "memory.write.quarantined"]
    assert events and events[0]["data"]["reason"].startswith("derived from a session tainted by web tool")
    assert KEY not in json.dumps(events)
    with httpx.stream("GET", gw.url + "/events?after=0", headers={"Authorization": f"Bearer {token}"},
                      timeout=10) as resp:
        deadline = time.monotonic() + 10
        for line in resp.iter_lines():
            if line.startswith("data: ") and '"memory.write.quarantined"' in line:
                assert KEY not in line and "derived from a session tainted by" in line
                break
            assert time.monotonic() < deadline, "the stream never sent the quarantine event"


def test_the_digest_is_keyed_by_the_installation_and_survives_a_restart(tmp_path: Path) -> None:
    weak = "session-1"
    config = write_config(tmp_path / "config.toml", access_toml(TOKENS, GRANTS))
    shown = []
    for _ in range(2):
        with start_gateway(tmp_path / "state", config=config) as gw:
            if not shown:
                gw.result("meta/session/note", {"identity": ID, "session_key": weak}, token=HOST)
                gw.result("meta/agent_memory/remember", {"identity": ID, "title": "Notes", "body": "notes",
                                                         "derived_from_sessions": [weak]}, token=HOST)
            shown.append(_evidence(gw, "Notes", READER)["record"])
    assert shown[0] == shown[1] == [digest(tmp_path / "state", weak)]
    # not the unkeyed hash, which anyone can compute from a guessed key
    assert hashlib.sha256(weak.encode()).hexdigest()[:8] not in shown[0][0]
